//! Push frames against the size of the world (`compare --scaling`), and the cache helpers the
//! compare measures use: a gather of the marked lanes (a push frame's latency floor), a copy of
//! them (its memory work and nothing else) and a buffer streamed between frames so that each
//! starts cold.

use super::{median, ratio, timed, timed_try, CompareWorkload};
use crate::phase::{within, ExtraFrames, Phase, PhaseProbe};
use shadowrep::compare::{prefetch_addr, ChangeSet, CompareConfig, Kernels, PushMode, ShadowState};
use shadowrep::store::{Block, PageArray};
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

/// How many lanes ahead [`copy_floor`] prefetches: the push frame's own distance.
const COPY_PREFETCH: usize = 32;

/// The memory work of a push frame and nothing else: at every offset of `sorted` (ascending, the
/// order a push frame visits its lanes in), the aligned 8-byte word holding it loaded from
/// `live` and from `shadow`, compared, and copied into `shadow`, with the lines of the offset
/// 32 ahead (the push frame's distance) prefetched. Run on page arrays of the world's size and
/// layout of its own (a copy into the real shadow would leave the next push frame nothing to
/// find), as cold as the world's. Where a push frame scales as this floor does, what is left is the memory's.
pub fn copy_floor(live: &[Block], shadow: &mut [Block], sorted: &[usize]) -> u64 {
    let (live_at, shadow_at) = (live.as_ptr() as usize, shadow.as_ptr() as usize);
    let mut acc = 0u64;
    for (i, &o) in sorted.iter().enumerate() {
        if let Some(&ahead) = sorted.get(i + COPY_PREFETCH) {
            prefetch_addr(live_at + ahead);
            prefetch_addr(shadow_at + ahead);
        }
        let (block, at) = (o / 64, (o % 64) & !7);
        let (Some(l), Some(s)) = (live.get(block), shadow.get_mut(block)) else { continue };
        let word = |b: &[u8; 64]| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let l = word(&l.0);
        acc += u64::from(word(&s.0) != l);
        s.0[at..at + 8].copy_from_slice(&l.to_le_bytes());
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
    /// Median [`copy_floor`] of the marked lanes of each world, in frames of its own (as the
    /// gather's).
    pub copy_ns: [u64; 2],
    /// The same ratio for the copy floor.
    pub copy_scaling_ratio: f64,
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
    let mut measure = |n: usize| -> Result<[Vec<u64>; 3], String> {
        progress(&format!("spawning {n} {class} actors"));
        let mut w = CompareWorkload::new(class, n, seed, false)?;
        let mut shadow = ShadowState::new(&mut w.store);
        let mut changes = ChangeSet::new();
        w.store.begin_tick();
        shadow.compare(&mut w.store, &push, &mut changes).map_err(|e| e.to_string())?;
        // The copy floor's own pages, as many as the world's, of its layout.
        let scratch = || {
            let mut pages = PageArray::new(w.store.live().stride());
            (0..w.store.live().len()).for_each(|_| pages.push_zeroed());
            pages
        };
        let (floor_live, mut floor_shadow) = (scratch(), scratch());
        // A buffer twice the last-level cache, streamed between frames so each frame starts cold.
        let mut flush = vec![0u64; flush_bytes() / 8];
        let (mut times, mut gathers, mut copies) = (Vec::new(), Vec::new(), Vec::new());
        // Frames in threes: a timed push frame, then a frame whose gather of its marked lanes is
        // timed, then one whose copy floor is (each followed by its push frame, untimed). Each
        // is the first to touch its frame's lines after the game's writes and the flush: a 64 MB
        // stream does not leave everything cold — on an AMD EPYC a 10M world's gather timed
        // after the push frame and a stream read 0.27 ms, timed first 0.55 ms, and a push frame
        // after a gather ran 20–30 % faster.
        for frame in 0..3 * (frames + 1) {
            let floor = frame % 3;
            progress(&format!("{n} actors: push frame {}/{frames}, {dirty} marked", frame / 3));
            w.mutate(dirty as f64 / n as f64, true);
            let mut offsets = if floor > 0 { w.marked_offsets() } else { Vec::new() };
            if floor == 2 {
                offsets.sort_unstable();
            }
            stream(&mut flush);
            let g = match floor {
                1 => Some(timed(|| {
                    gather(w.store.live().bytes(), shadow.pages().bytes(), &offsets);
                })),
                2 => Some(timed(|| {
                    copy_floor(floor_live.blocks(), floor_shadow.blocks_mut(), &offsets);
                })),
                _ => None,
            };
            w.store.begin_tick();
            let t = within(probe, Phase::Kernel, || timed_try(|| shadow.compare(&mut w.store, &push, &mut changes)))
                .map_err(|e| e.to_string())?;
            if frame >= 3 {
                match (floor, g) {
                    (1, Some(g)) => gathers.push(g),
                    (2, Some(g)) => copies.push(g),
                    _ => times.push(t),
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
        Ok([times, gathers, copies])
    };
    let [small, small_gather, small_copy] = measure(actors)?;
    let [large, large_gather, large_copy] = measure(actors * 10)?;
    let ratios = |s: &[u64], l: &[u64]| median(s.iter().zip(l).map(|(&s, &l)| ratio(l, s)).collect::<Vec<f64>>());
    Ok(ScalingReport {
        actors: [actors, actors * 10],
        dirty,
        scaling_ratio: ratios(&small, &large),
        gather_scaling_ratio: ratios(&small_gather, &large_gather),
        copy_scaling_ratio: ratios(&small_copy, &large_copy),
        push_ns: [median(small), median(large)],
        gather_ns: [median(small_gather), median(large_gather)],
        copy_ns: [median(small_copy), median(large_copy)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_floor_copies_the_words_it_names_and_counts_those_that_differed() {
        let block = |seed: u8| Block(std::array::from_fn(|i| seed.wrapping_add(i as u8)));
        let live: Vec<Block> = (0..4).map(|b| block(b * 3)).collect();
        let mut shadow: Vec<Block> = (0..4).map(|_| block(0)).collect();
        // Block 0 is equal already; 70 and 71 name one word (copied by the first, equal for the
        // second); 255 names the last word; 4096 is past the arrays.
        let sorted = [3, 70, 71, 130, 255, 4096];
        assert_eq!(copy_floor(&live, &mut shadow, &sorted), 3);
        for (b, at) in [(0, 0), (1, 0), (2, 0), (3, 56)] {
            assert_eq!(shadow[b].0[at..at + 8], live[b].0[at..at + 8], "block {b} word {at}");
        }
        assert_eq!(shadow[1].0[8..16], block(0).0[8..16], "a word no offset names is left alone");
    }

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
