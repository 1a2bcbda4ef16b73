//! Push frames alone (every property push-based, 1 % of the actors marked and changed), each
//! started from a cold cache as the `compare` command's are, beside a plain gather of the same
//! marked lanes' lines: quick to rerun and to profile while tuning `compare::push`.
//!
//! ```text
//! cargo run --release -p shadowrep-benches --example push_probe -- \
//!     [--actors N] [--dirty F] [--frames K] [--full-between 0|1] [--class C] [--hot P,Q]
//! ```
//!
//! `--class` names a sample class (ShooterCharacter by default); `--hot` the properties each
//! change writes (wire names, comma separated; `register_class`), e.g. `--hot Inventory` for a
//! frame whose every change rewrites a dynamic array.
//!
//! `--full-between 1` (the default) runs a full compare into the same change set between push
//! frames, as the `compare` command does (the push frame's reset then clears the whole set);
//! `0` does not. Each frame starts and its gather is timed as the command's
//! (`CompareWorkload::start_push_frame`, `workload::time_gather`).

use shadowrep::compare::{ChangeSet, CompareConfig, PushMode, ShadowState};
use shadowrep_benches::workload::{
    flag_pairs, flag_value, flush_bytes, median, register_class, time_gather, CompareWorkload,
};
use std::time::Instant;

fn main() -> Result<(), String> {
    let (mut actors, mut dirty, mut frames, mut full_between) = (1_000_000usize, 0.01, 31usize, true);
    let (mut class, mut hot) = ("ShooterCharacter".to_string(), String::new());
    for (flag, value) in flag_pairs()? {
        match flag.as_str() {
            "--actors" => actors = flag_value(&flag, &value)?,
            "--dirty" => dirty = flag_value(&flag, &value)?,
            "--frames" => frames = flag_value::<usize>(&flag, &value)?.max(1),
            "--full-between" => {
                full_between = match value.as_str() {
                    "1" => true,
                    "0" => false,
                    _ => return Err(format!("{flag} takes 0 or 1, not `{value}`")),
                }
            }
            "--class" => class = value,
            "--hot" => hot = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if !hot.is_empty() {
        let layout = shadowrep_layouts::layout_by_name(&class).ok_or_else(|| format!("unknown class `{class}`"))?;
        register_class(layout.clone(), &hot.split(',').collect::<Vec<_>>(), &[])?;
    }
    let mut w = CompareWorkload::new(&class, actors, 1, false)?;
    let full = CompareConfig { push: PushMode::Off, parallel: false, ..CompareConfig::default() };
    let push = CompareConfig { push: PushMode::All, ..full };
    let (mut full_shadow, mut push_shadow) = (ShadowState::new(&mut w.store), ShadowState::new(&mut w.store));
    let mut changes = ChangeSet::new();
    w.store.begin_tick();
    full_shadow.compare(&mut w.store, &full, &mut changes).map_err(|e| e.to_string())?;
    push_shadow.compare(&mut w.store, &push, &mut changes).map_err(|e| e.to_string())?;
    let mut flush = vec![0u64; flush_bytes() / 8];
    let (mut pushes, mut gathers) = (Vec::new(), Vec::new());
    for frame in 0..frames + 1 {
        let offsets = w.start_push_frame(&mut flush, dirty);
        let start = Instant::now();
        push_shadow.compare(&mut w.store, &push, &mut changes).map_err(|e| e.to_string())?;
        let t = start.elapsed().as_secs_f64() * 1e3;
        if full_between {
            full_shadow.compare(&mut w.store, &full, &mut changes).map_err(|e| e.to_string())?;
        }
        let g = time_gather(&mut flush, w.store.live().bytes(), push_shadow.pages().bytes(), &offsets) as f64 / 1e6;
        if frame > 0 {
            pushes.push(t);
            gathers.push(g);
        }
    }
    let (p, g) = (median(pushes), median(gathers));
    println!(
        "{actors} {class}, {:.1} % marked, {frames} frames: push {p:.3} ms, gather {g:.3} ms, push / gather {:.2}",
        dirty * 100.0,
        p / g
    );
    Ok(())
}
