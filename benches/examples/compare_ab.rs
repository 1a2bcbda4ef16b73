//! Two diff tables side by side on the same frames, in one process: each frame changes the
//! world once, then both compares run on it (each with its own shadow), in turns — A first on
//! even frames, B first on odd ones — and a `memcmp` of live against A's shadow beside them.
//! On a host whose load moves the memory's speed from minute to minute, two separate runs cannot
//! tell a 10 % difference; two compares of the same frames a millisecond apart can.
//!
//! ```text
//! cargo run --release -p shadowrep-benches --example compare_ab -- \
//!     --a avx2:whole:prefetch --b avx2:lanes:prefetch [--changed F] [--actors N] [--frames K]
//! ```
//!
//! A table is `isa:scan:next-page` (`compare --isa/--scan/--next-page`'s names). It prints the
//! median of each, the median of the per-frame ratios B / A, and each one's fraction of the
//! `memcmp` (the `compare` command's `fraction_of_memcmp`), all on one thread.

use shadowrep::compare::{ChangeSet, CompareConfig, Isa, Kernels, NextPage, PageScan, PushMode, ShadowState};
use shadowrep_benches::workload::{flag_pairs, flag_value, median, CompareWorkload};
use std::hint::black_box;
use std::time::Instant;

fn table(spec: &str) -> Result<Kernels, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [isa, scan, next] = parts[..] else {
        return Err(format!("table `{spec}`: expected isa:scan:next-page"));
    };
    let isa = Isa::parse(isa).ok_or_else(|| format!("unknown ISA {isa}"))?;
    let scan = PageScan::parse(scan).ok_or_else(|| format!("unknown scan {scan}"))?;
    let next = NextPage::parse(next).ok_or_else(|| format!("unknown next-page rule {next}"))?;
    let k = Kernels::for_isa(isa).ok_or_else(|| format!("this CPU cannot run {}", isa.name()))?;
    Ok(k.with_scan(scan).with_next_page(next))
}

fn main() -> Result<(), String> {
    let (mut changed, mut actors, mut frames) = (0.1, 1_000_000usize, 31usize);
    let (mut a, mut b) = (None, None);
    for (flag, value) in flag_pairs()? {
        match flag.as_str() {
            "--changed" => changed = flag_value(&flag, &value)?,
            "--actors" => actors = flag_value(&flag, &value)?,
            "--frames" => frames = flag_value::<usize>(&flag, &value)?.max(1),
            "--a" => a = Some(table(&value)?),
            "--b" => b = Some(table(&value)?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let (a, b) = (a.ok_or("--a is required")?, b.ok_or("--b is required")?);
    let mut w = CompareWorkload::new("ShooterCharacter", actors, 1, false)?;
    let cfg = |kernels| CompareConfig { push: PushMode::Off, kernels, parallel: false, ..CompareConfig::default() };
    let cfgs = [cfg(a), cfg(b)];
    let mut shadows = [ShadowState::new(&mut w.store), ShadowState::new(&mut w.store)];
    let mut changes = ChangeSet::new();
    let mut times: [Vec<f64>; 3] = Default::default();
    let mut ratios = Vec::new();
    for frame in 0..frames + 5 {
        w.mutate(changed, false);
        w.store.begin_tick();
        let mut t = [0.0; 2];
        for turn in 0..2 {
            let i = if frame % 2 == 0 { turn } else { 1 - turn };
            let start = Instant::now();
            shadows[i].compare(&mut w.store, &cfgs[i], &mut changes).map_err(|e| e.to_string())?;
            t[i] = start.elapsed().as_nanos() as f64;
        }
        let start = Instant::now();
        let equal = black_box(w.store.live().bytes()) == black_box(shadows[0].pages().bytes());
        let m = start.elapsed().as_nanos() as f64;
        if !equal || shadows[1].pages().bytes() != shadows[0].pages().bytes() {
            return Err("live and shadow differ after a compare".into());
        }
        // The first frames copy whole shadows and fault pages in.
        if frame >= 5 {
            times[0].push(t[0]);
            times[1].push(t[1]);
            times[2].push(m);
            ratios.push(t[1] / t[0]);
        }
    }
    let m = median(times[2].clone());
    let (ta, tb) = (median(times[0].clone()), median(times[1].clone()));
    println!(
        "{actors} ShooterCharacter at {:.1} % changed, {frames} frames: A {} {:.3} ms (fraction {:.3}), B {} {:.3} ms (fraction {:.3}), memcmp {:.3} ms; B / A median {:.3}",
        changed * 100.0,
        a.name(),
        ta / 1e6,
        m / ta,
        b.name(),
        tb / 1e6,
        m / tb,
        m / 1e6,
        median(ratios)
    );
    Ok(())
}
