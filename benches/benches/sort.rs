//! The send order's key sort: `sort_unstable` against the AVX-512 merge sort
//! (`shadowrep::net::priority::KeySort`) on batches shaped like battle_royale's — a few hundred
//! packed keys, few distinct priorities (the high half), GUID ranks and indices below — side by
//! side in one run. Prints which path the calibration chose.
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench sort
//! ```

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use shadowrep::net::priority::{KeySort, SortPath};
use std::hint::black_box;
use std::time::Duration;

/// `n` packed keys as a connection of battle_royale ranks them: `!priority key` (24 distinct
/// priorities) in the high half, then the GUID rank among ~6 700 due actors, then the index.
fn keys(n: usize, mut x: u64) -> Vec<u64> {
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n).map(|i| (!(next() % 24 * 4096) << 32) | (next() % 6_734) << 10 | i as u64).collect()
}

fn sort(c: &mut Criterion) {
    eprintln!("sort: best path on this CPU {:?} (AVX-512 here: {})", KeySort::best(), SortPath::Avx512.available());
    let paths: Vec<SortPath> = [SortPath::Std, SortPath::Avx512].into_iter().filter(|p| p.available()).collect();
    for n in [64, 256, 316, 600] {
        let mut group = c.benchmark_group(format!("sort/{n}"));
        group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2));
        // A different batch each time, as each connection's is (one input sorted over and over
        // teaches the branch predictor `sort_unstable`'s path through it).
        let inputs: Vec<Vec<u64>> = (0..64).map(|s| keys(n, 0x2545_f491_4f6c_dd1d ^ (n as u64) << 8 ^ s)).collect();
        let mut sorter = KeySort::default();
        for &path in &paths {
            let mut turn = 0;
            group.bench_function(format!("{path:?}"), |b| {
                b.iter_batched_ref(
                    || {
                        turn = (turn + 1) % inputs.len();
                        inputs[turn].clone()
                    },
                    |k| sorter.sort_on(path, black_box(k.as_mut_slice())),
                    BatchSize::SmallInput,
                )
            });
        }
        group.finish();
    }
}

criterion_group!(benches, sort);
criterion_main!(benches);
