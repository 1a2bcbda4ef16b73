//! FastArray benches: a one-item delta of a 10 000-item inventory (mark, find, encode,
//! acknowledge) vs a full element-wise compare of the same inventory as a plain array against
//! its shadow; and building the inventory plus its first send. Prints the two ratios the `open_world`
//! profile reports once before timing. `SHADOWREP_BENCH_ACTORS` caps the inventory's items too.
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench fastarray
//! cargo bench -p shadowrep-benches --bench fastarray -- --profile-time 5   # flamegraphs
//! ```

use criterion::{criterion_group, criterion_main, Criterion};
use shadowrep_benches::fastarray::{measure_ratios, InventoryWorkload};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::{limited, FlamegraphProfiler};

fn fastarray(c: &mut Criterion) {
    let items = limited(10_000);
    let r = measure_ratios(items, 30);
    eprintln!(
        "fastarray/{items}: fast_array_bytes_ratio {:.3e} ({} of {} bits; item {} bits), \
         fast_array_compare_ratio {:.4} ({:.0} ns vs {:.0} ns; memcmp per row {:.0} ns, of the whole array {:.0} ns)",
        r.fast_array_bytes_ratio,
        r.one_item_delta_bits,
        r.full_array_bits,
        r.item_bits,
        r.fast_array_compare_ratio,
        r.delta_ns,
        r.full_compare_ns,
        r.row_compare_ns,
        r.block_compare_ns
    );
    assert!(r.max_one_item_delta_bits <= r.item_bits + 48, "one-item delta over budget: {r:?}");
    let mut group = c.benchmark_group(format!("fastarray/{items}"));
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let mut w = InventoryWorkload::new(items, 7);
    group.bench_function("one_item_delta", |b| b.iter(|| black_box(w.one_item_delta())));
    group.bench_function("full_compare", |b| b.iter(|| black_box(w.full_compare())));
    group.bench_function("row_compare", |b| b.iter(|| black_box(w.row_compare())));
    group.bench_function("build_and_first_send", |b| {
        b.iter_with_large_drop(|| {
            let w = InventoryWorkload::new(items, 9);
            assert_eq!(w.first_send_updates(), items.div_ceil(2048));
            w
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(FlamegraphProfiler::new(100));
    targets = fastarray
}
criterion_main!(benches);
