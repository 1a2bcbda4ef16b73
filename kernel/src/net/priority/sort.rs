//! Sorting a connection's chosen candidates: the send order's packed keys (`u64`s whose order is
//! the send order), sorted ascending.
//!
//! ```text
//! Std      sort_unstable — the scalar twin, and the path on CPUs without AVX-512
//! Avx512   a merge sort in registers ([`super::avx512`]): 1.8× std on 64 keys, 1.7× on 256,
//!          1.34× on 316 (battle_royale-like batches, `cargo bench -p shadowrep-benches --bench
//!          sort`; AMD EPYC Zen 5)
//! ```
//!
//! [`KeySort::best`] is measured, not assumed: where the CPU has AVX-512 a short calibration at
//! first use (a few batches of synthetic keys, ~0.1 ms once per process) times both and keeps
//! the faster, so a CPU whose permutes are slow never sorts slower than `sort_unstable`. (It
//! runs inside the first frame that sorts, on a worker: a loaded host can tip a close call
//! either way from one process to the next — speed only, never the order: both paths give the
//! same keys in the same order.)

use std::sync::OnceLock;

/// A way to sort keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortPath {
    /// `sort_unstable`: the reference every other path is tested against.
    Std,
    /// The AVX-512 merge sort.
    Avx512,
}

impl SortPath {
    /// Whether this CPU can run it.
    pub fn available(self) -> bool {
        match self {
            SortPath::Std => true,
            SortPath::Avx512 => avx512_token().is_some(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn avx512_token() -> Option<super::avx512::Avx512> {
    static TOKEN: OnceLock<Option<super::avx512::Avx512>> = OnceLock::new();
    *TOKEN.get_or_init(super::avx512::Avx512::detect)
}

#[cfg(not(target_arch = "x86_64"))]
fn avx512_token() -> Option<()> {
    None
}

/// A sorter of keys with its scratch runs, kept from frame to frame (a frame allocates nothing
/// once they have grown). Public for the benches (`cargo bench -p shadowrep-benches --bench
/// sort`) and for a game that sorts its own keys the same way.
///
/// ```
/// use shadowrep::net::priority::{KeySort, SortPath};
///
/// let mut sorter = KeySort::default();
/// let mut keys = vec![9, u64::MAX, 3, 3, 0, 7];
/// sorter.sort(&mut keys); // the faster path on this CPU
/// assert_eq!(keys, [0, 3, 3, 7, 9, u64::MAX]);
/// let mut again = vec![5, 1, 4];
/// sorter.sort_on(SortPath::Std, &mut again);
/// assert_eq!(again, [1, 4, 5]);
/// ```
#[derive(Default)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct KeySort {
    a: Vec<u64>,
    b: Vec<u64>,
}

impl KeySort {
    /// Sorts `keys` ascending on the fastest path of this CPU ([`Self::best`]).
    pub fn sort(&mut self, keys: &mut [u64]) {
        self.sort_on(Self::best(), keys);
    }

    /// Sorts `keys` ascending on `path` (`sort_unstable` where the CPU cannot run it).
    pub fn sort_on(&mut self, path: SortPath, keys: &mut [u64]) {
        match (path, avx512_token()) {
            #[cfg(target_arch = "x86_64")]
            (SortPath::Avx512, Some(t)) => super::avx512::sort(t, keys, &mut self.a, &mut self.b),
            _ => keys.sort_unstable(),
        }
    }

    /// The faster path on this CPU: timed once per process where there is a choice.
    pub fn best() -> SortPath {
        static BEST: OnceLock<SortPath> = OnceLock::new();
        *BEST.get_or_init(|| if SortPath::Avx512.available() { calibrate() } else { SortPath::Std })
    }
}

/// Times both paths on batches shaped like battle_royale's (a few hundred keys, few distinct
/// priorities); the vector path must win outright.
fn calibrate() -> SortPath {
    const BATCHES: usize = 16;
    const KEYS: usize = 320;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let batches: Vec<Vec<u64>> = (0..BATCHES)
        .map(|_| (0..KEYS).map(|i| (!(next() % 24 * 4096) << 32) | (next() % 8192) << 9 | i as u64).collect())
        .collect();
    let mut sorter = KeySort::default();
    let mut time = |path: SortPath| {
        (0..3)
            .map(|_| {
                let mut work = batches.clone();
                let t = std::time::Instant::now();
                work.iter_mut().for_each(|keys| sorter.sort_on(path, keys));
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let (std, avx512) = (time(SortPath::Std), time(SortPath::Avx512));
    if avx512 < std {
        SortPath::Avx512
    } else {
        SortPath::Std
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Keys of every shape a sort trips on: random, few distinct, all equal, sorted, reversed,
    /// and the largest key (the padding's value) among them.
    fn shapes(rng: &mut impl Rng, len: usize) -> Vec<Vec<u64>> {
        let random: Vec<u64> = (0..len).map(|_| rng.random()).collect();
        let few: Vec<u64> = (0..len).map(|_| rng.random_range(0..4u64) << 40).collect();
        let mut sorted = random.clone();
        sorted.sort_unstable();
        let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
        let with_max: Vec<u64> = (0..len).map(|i| if i % 3 == 0 { u64::MAX } else { rng.random() }).collect();
        let packed: Vec<u64> = (0..len)
            .map(|i| (!(rng.random_range(0..24u64) * 4096) << 32) | rng.random_range(0..8192u64) << 11 | i as u64)
            .collect();
        vec![random, few, vec![7; len], sorted, reversed, with_max, packed]
    }

    /// Catches a vector sort that loses, duplicates or misorders a key — at a length that is not
    /// a whole number of blocks, where a run meets a shorter one, among equal keys, or with keys
    /// equal to the padding (`u64::MAX`): `sort_unstable` is the oracle.
    #[test]
    fn every_path_sorts_as_sort_unstable_does() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut sorter = KeySort::default();
        let paths: Vec<SortPath> = [SortPath::Std, SortPath::Avx512].into_iter().filter(|p| p.available()).collect();
        // Every length up to a few runs of every width, then large ones (the scratch shrinking
        // and growing between calls).
        let lens = (0..300).chain([511, 512, 513, 1000, 1024, 1025, 4097]);
        for len in lens {
            for keys in shapes(&mut rng, len) {
                let mut want = keys.clone();
                want.sort_unstable();
                for &path in &paths {
                    let mut got = keys.clone();
                    sorter.sort_on(path, &mut got);
                    assert_eq!(got, want, "{path:?}, {len} keys");
                }
            }
        }
        // The vector path is tested wherever the CPU has it (this machine: {avx512}).
        let avx512 = SortPath::Avx512.available();
        eprintln!("key sort paths tested: {paths:?} (AVX-512 here: {avx512}, best: {:?})", KeySort::best());
    }

    /// Catches a calibration that names a path this CPU cannot run (`sort_on` would fall back to
    /// `sort_unstable` behind its back, and `best` would report what is not used), and checks the
    /// chosen path sorts.
    #[test]
    fn the_best_path_runs_here() {
        assert!(KeySort::best().available());
        let mut keys = vec![3, 1, 2];
        KeySort::default().sort(&mut keys);
        assert_eq!(keys, [1, 2, 3]);
    }
}
