//! Remote procedure calls (`shadowrep::net::rpc`): a tick's fan-out of 1 000 multicast calls
//! (a quarter reliable) to 100 connections against the same world's quiet tick, and 100
//! clients' Server calls taken (4 each, half reliable) against their feedback without calls
//! (the worlds: `shadowrep_benches::calls`).
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench rpc
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shadowrep_benches::calls::{FanOut, ServerCalls, CONNECTIONS};
use std::time::Duration;

#[allow(dead_code)]
mod common;
use common::FlamegraphProfiler;

fn rpc(c: &mut Criterion) {
    let mut group = c.benchmark_group("rpc");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let mut fan = FanOut::new();
    for calls in [0usize, 1_000] {
        group.throughput(Throughput::Elements((calls * CONNECTIONS).max(1) as u64));
        // Only the tick is timed; the calls, delivery and feedback around it are not.
        group.bench_function(format!("fan_out/{calls}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| fan.frame(calls).0).sum())
        });
    }
    let mut server = ServerCalls::new();
    for calls in [0usize, 4] {
        group.throughput(Throughput::Elements((calls * CONNECTIONS).max(1) as u64));
        group.bench_function(format!("server_calls/{calls}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| server.frame(calls).0).sum())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(FlamegraphProfiler::new(100));
    targets = rpc
}
criterion_main!(benches);
