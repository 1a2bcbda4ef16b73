//! Push frames against the size of the world (`compare --scaling`), and the cache helpers the
//! compare measures use: a gather of the marked lanes (a push frame's latency floor) and a buffer
//! streamed between frames so that each starts cold.

use super::{median, ratio, timed, timed_try, CompareWorkload};
use crate::phase::{within, ExtraFrames, Phase, PhaseProbe};
use shadowrep::compare::{ChangeSet, CompareConfig, Kernels, PushMode, ShadowState};
use std::hint::black_box;

/// Reads the byte at every offset of `live` and `shadow`: the latency floor of a push compare
/// that touches exactly those lanes (a plain gather of their cache lines, nothing else).
pub fn gather(live: &[u8], shadow: &[u8], offsets: &[usize]) -> u64 {
    let mut acc = 0u64;
    for &o in offsets {
        acc = acc.wrapping_add(u64::from(live[o]) ^ u64::from(shadow[o]) << 8);
    }
    black_box(acc)
}

/// What [`run_push_scaling`] measured: push frames with the same number of marked actors in a
/// world and in one ten times larger (both far beyond the last-level cache).
#[derive(Clone, Debug)]
pub struct ScalingReport {
    /// Actors of the smaller world, and of the larger (ten times as many).
    pub actors: [usize; 2],
    /// Actors marked (and changed) per frame, in both.
    pub dirty: usize,
    /// Median push frame of each world, in nanoseconds.
    pub push_ns: [u64; 2],
    /// Median gather of the marked lanes of each world (see [`CompareReport::push_gather_ns`](super::CompareReport::push_gather_ns)),
    /// in frames of its own, as a push frame sees its marks: the first to touch them after the
    /// game's writes and the flush.
    pub gather_ns: [u64; 2],
    /// Median over frames of large / small push frame, frames paired by index.
    pub scaling_ratio: f64,
    /// The same for the gather: how the floor itself scales between the two worlds.
    pub gather_scaling_ratio: f64,
}

/// The largest data cache this machine reports (Linux sysfs: the highest `cache/index*` level of
/// CPU 0), or `None` where it reports none.
pub fn last_level_cache_bytes() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |entry: &std::path::Path, name: &str| std::fs::read_to_string(entry.join(name)).ok();
    let mut best: Option<(u32, usize)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let entry = entry.path();
        if read(&entry, "type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(level) = read(&entry, "level").and_then(|l| l.trim().parse::<u32>().ok()) else { continue };
        let Some(size) = read(&entry, "size").and_then(|s| parse_cache_size(s.trim())) else { continue };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// A sysfs cache size: `48K`, `2048K`, `32M` or plain bytes.
fn parse_cache_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

/// Bytes to stream between frames so that a frame starts cold: twice the last-level cache (a
/// 480 MB L3 is on some Xeons: a fixed 256 MB buffer left a 1M-actor world warm there), at least
/// 64 MB, at most 2 GB.
pub fn flush_bytes() -> usize {
    (2 * last_level_cache_bytes().unwrap_or(32 << 20)).clamp(64 << 20, 2 << 30)
}

/// Reads and writes every word of `buf` (larger than the cache: what was cached is evicted).
pub(super) fn stream(buf: &mut [u64]) {
    buf.iter_mut().for_each(|b| *b = b.wrapping_add(1));
    black_box(&*buf);
}

/// What [`run_push_scaling`] runs.
#[derive(Clone, Debug)]
pub struct ScalingOptions {
    /// Class name.
    pub class: String,
    /// Actors of the smaller world (the larger holds ten times as many).
    pub actors: usize,
    /// Actors marked (and changed) per push frame.
    pub dirty: usize,
    /// Timed frames per world (the median is reported).
    pub frames: usize,
    /// Diff routines.
    pub kernels: Kernels,
    /// RNG seed.
    pub seed: u64,
}

/// Times push frames (every property push-based, `dirty` actors marked and changed per frame, one
/// thread) in a world of `actors` actors and in one of `10 × actors`: a push frame should cost
/// what its marks cost, not what the world holds.
pub fn run_push_scaling(
    opts: &ScalingOptions,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<ScalingReport, String> {
    let ScalingOptions { ref class, actors, dirty, frames, kernels, seed } = *opts;
    let push = CompareConfig { push: PushMode::All, kernels, parallel: false, ..CompareConfig::default() };
    let mut measure = |n: usize| -> Result<[Vec<u64>; 2], String> {
        progress(&format!("spawning {n} {class} actors"));
        let mut w = CompareWorkload::new(class, n, seed, false)?;
        let mut shadow = ShadowState::new(&mut w.store);
        let mut changes = ChangeSet::new();
        w.store.begin_tick();
        shadow.compare(&mut w.store, &push, &mut changes).map_err(|e| e.to_string())?;
        // A buffer twice the last-level cache, streamed between frames so each frame starts cold.
        let mut flush = vec![0u64; flush_bytes() / 8];
        let (mut times, mut gathers) = (Vec::new(), Vec::new());
        // Frames in pairs: a timed push frame, then a frame whose gather of its marked lanes is
        // timed (its push frame after, untimed). Each is the first to touch its frame's lines
        // after the game's writes and the flush: a 64 MB stream does not leave everything cold —
        // on an AMD EPYC a 10M world's gather timed after the push frame and a stream read 0.27
        // ms, timed first 0.55 ms, and a push frame after a gather ran 20–30 % faster.
        for frame in 0..2 * (frames + 1) {
            let timing_gather = frame % 2 == 1;
            progress(&format!("{n} actors: push frame {}/{frames}, {dirty} marked", frame / 2));
            w.mutate(dirty as f64 / n as f64, true);
            let offsets = if timing_gather { w.marked_offsets() } else { Vec::new() };
            stream(&mut flush);
            let g = timing_gather.then(|| {
                timed(|| {
                    gather(w.store.live().bytes(), shadow.pages().bytes(), &offsets);
                })
            });
            w.store.begin_tick();
            let t = within(probe, Phase::Kernel, || timed_try(|| shadow.compare(&mut w.store, &push, &mut changes)))
                .map_err(|e| e.to_string())?;
            if frame >= 2 {
                match g {
                    Some(g) => gathers.push(g),
                    None => times.push(t),
                }
            }
        }
        // A profiler that wants more push frames of the larger world gets them (untimed).
        let mut extra = ExtraFrames::new();
        while n > actors && extra.another(probe) {
            w.mutate(dirty as f64 / n as f64, true);
            w.store.begin_tick();
            within(probe, Phase::Kernel, || shadow.compare(&mut w.store, &push, &mut changes))
                .map_err(|e| e.to_string())?;
        }
        Ok([times, gathers])
    };
    let [small, small_gather] = measure(actors)?;
    let [large, large_gather] = measure(actors * 10)?;
    let ratios = |s: &[u64], l: &[u64]| median(s.iter().zip(l).map(|(&s, &l)| ratio(l, s)).collect::<Vec<f64>>());
    Ok(ScalingReport {
        actors: [actors, actors * 10],
        dirty,
        scaling_ratio: ratios(&small, &large),
        gather_scaling_ratio: ratios(&small_gather, &large_gather),
        push_ns: [median(small), median(large)],
        gather_ns: [median(small_gather), median(large_gather)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("48K"), Some(48 << 10));
        assert_eq!(parse_cache_size("491520K"), Some(480 << 20));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("1G"), Some(1 << 30));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size(""), None);
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size("12Q"), None);
        let flush = flush_bytes();
        assert!((64 << 20..=2 << 30).contains(&flush));
        if let Some(llc) = last_level_cache_bytes() {
            assert!(flush >= (2 * llc).min(2 << 30));
        }
    }
}
