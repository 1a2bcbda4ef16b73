//! The compare alone, beside `memcmp`, with no reference: quick to rerun while tuning the page
//! walk, and small enough for a world that fits a cache level (the per-page diff cost without
//! memory in the way).
//!
//! ```text
//! cargo run --release -p shadowrep-benches --example compare_probe -- \
//!     [--changed F] [--actors N] [--frames K] [--isa avx2|wide|avx512|scalar|best] \
//!     [--scan first-difference|whole] [--next-page prefetch|hardware] [--write BYTES]
//! ```
//!
//! Each frame changes a fraction `F` of the actors (the `compare` command's workload), compares
//! on the calling thread, then `memcmp`s live against shadow (equal by then); medians of `K` timed
//! frames after 20 untimed ones (with `--isa best`, after the compare's trials of every table). With `--write BYTES`, the `memcmp` becomes a floor of a pass that
//! reads both sides and also writes: page by page, compare, then rewrite the page's first BYTES
//! bytes of a copy of the shadow (a 1M ShooterCharacter page's movement planes are its first
//! 2 304 bytes) — what the shadow write-back costs on this machine.
//! Session 33 (AMD EPYC Zen 3, AVX2 only) used it to find a changed page's diff cost
//! (`--actors 4096`: ~390 ns a page at 10 % in L2) and the write-back's (README, "Session 33").

use shadowrep::compare::{ChangeSet, CompareConfig, Isa, Kernels, NextPage, PageScan, PushMode, ShadowState};
use shadowrep_benches::workload::{flag_pairs, flag_value, median, CompareWorkload};
use std::hint::black_box;
use std::time::Instant;

fn main() -> Result<(), String> {
    let (mut changed, mut actors, mut frames, mut isa, mut scan, mut next_page, mut write) =
        (0.1, 1_000_000usize, 15usize, "best".to_string(), None, None, None);
    for (flag, value) in flag_pairs()? {
        match flag.as_str() {
            "--changed" => changed = flag_value(&flag, &value)?,
            "--actors" => actors = flag_value(&flag, &value)?,
            "--frames" => frames = flag_value::<usize>(&flag, &value)?.max(1),
            "--isa" => isa = value,
            "--scan" => scan = Some(value),
            "--next-page" => next_page = Some(value),
            "--write" => write = Some(flag_value::<usize>(&flag, &value)?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let mut kernels = if isa == "best" {
        Kernels::best()
    } else {
        let parsed = Isa::parse(&isa).ok_or_else(|| format!("unknown ISA {isa}"))?;
        Kernels::for_isa(parsed).ok_or_else(|| format!("this CPU cannot run {isa}"))?
    };
    if let Some(name) = &scan {
        let s = PageScan::parse(name).ok_or_else(|| format!("unknown scan {name}"))?;
        kernels = kernels.with_scan(s);
    }
    if let Some(name) = &next_page {
        let n = NextPage::parse(name).ok_or_else(|| format!("unknown next-page rule {name}"))?;
        kernels = kernels.with_next_page(n);
    }
    let mut w = CompareWorkload::new("ShooterCharacter", actors, 1, false)?;
    let page_bytes = w.layout.page_bytes;
    let cfg = CompareConfig { push: PushMode::Off, kernels, parallel: false, ..CompareConfig::default() };
    let mut shadow = ShadowState::new(&mut w.store);
    let mut changes = ChangeSet::new();
    w.store.begin_tick();
    shadow.compare(&mut w.store, &cfg, &mut changes).map_err(|e| e.to_string())?;
    // The floor's own copies: as cold as the world's after the compare streamed past them, and
    // on huge pages as the store's are (on 4 KiB pages the floor read 17 % slower than `memcmp`
    // of the store: its TLB misses, not its writes — AMD EPYC Zen 3).
    let src = w.store.live().bytes();
    let mut floor_live = shadowrep::memory::zeroed_vec::<u8>(src.len());
    floor_live.copy_from_slice(src);
    let mut floor_shadow = shadowrep::memory::zeroed_vec::<u8>(src.len());
    floor_shadow.copy_from_slice(src);
    let (mut kernel, mut other) = (Vec::new(), Vec::new());
    // Twenty untimed frames, and with `best` on a large world as many more as its trials take.
    let settles = w.tunes(kernels);
    let (mut frame, mut untimed) = (0, 20);
    while kernel.len() < frames {
        if frame == untimed && settles && shadow.tuned_isa().is_none() && frame < 200 {
            untimed += 1;
        }
        frame += 1;
        w.mutate(changed, false);
        w.store.begin_tick();
        let t = Instant::now();
        shadow.compare(&mut w.store, &cfg, &mut changes).map_err(|e| e.to_string())?;
        let k = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        let equal = match write {
            None => black_box(w.store.live().bytes()) == black_box(shadow.pages().bytes()),
            Some(n) => {
                let n = n.min(page_bytes);
                let mut equal = true;
                for (l, s) in floor_live.chunks_exact(page_bytes).zip(floor_shadow.chunks_exact_mut(page_bytes)) {
                    equal &= black_box(l) == black_box(&*s);
                    s[..n].copy_from_slice(&l[..n]);
                }
                equal
            }
        };
        let m = t.elapsed().as_nanos() as f64;
        if !equal {
            return Err("live and shadow differ after a compare".into());
        }
        if frame > untimed {
            kernel.push(k);
            other.push(m);
        }
    }
    let (k, m) = (median(kernel), median(other));
    println!(
        "{actors} ShooterCharacter at {:.1} % changed, table {} scan {} next page {}{}: kernel {:.4} ms ({:.0} ns a page), {} {:.4} ms, fraction {:.2}",
        changed * 100.0,
        shadow.tuned_isa().unwrap_or(kernels.isa).name(),
        shadow.tuned_scan().unwrap_or(kernels.scan).name(),
        shadow.tuned_next_page().unwrap_or(kernels.next_page).name(),
        if kernels.tuned() { " (tuned)" } else { "" },
        k / 1e6,
        k / w.store.live().bytes().len().div_ceil(page_bytes) as f64,
        if write.is_some() { "floor" } else { "memcmp" },
        m / 1e6,
        m / k
    );
    Ok(())
}
