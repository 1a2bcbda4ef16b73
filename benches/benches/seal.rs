//! Sealed sessions (`shadowrep::session::seal`): sealing and opening one datagram of the sizes
//! a server sends — a quiet packet, battle_royale's mean (~2.6 KB per connection and frame, one
//! packet) and the largest (8 KiB) — against copying the same bytes, and a join ticket opened.
//! The cost a sealed server pays per packet, and a client per packet it receives.
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench seal
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shadowrep::session::frame::kind;
use shadowrep::session::{ticket, Sealer, SessionKeys, TicketKey};
use std::hint::black_box;
use std::time::{Duration, SystemTime};

// The shared helpers' world-size caps are for the other benches: a datagram has no world.
#[allow(dead_code)]
mod common;
use common::FlamegraphProfiler;

fn seal(c: &mut Criterion) {
    let keys = SessionKeys::generate().expect("the OS's random source");
    let mut group = c.benchmark_group("seal");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2));
    for bytes in [64usize, 2_626, 8_192] {
        let plain: Vec<u8> = [&[kind::PACKET][..], &7u64.to_le_bytes(), &vec![0x5a; bytes]].concat();
        group.throughput(Throughput::Bytes(bytes as u64));
        let mut server = Sealer::server(&keys);
        group.bench_function(format!("seal/{bytes}"), |b| b.iter(|| black_box(server.seal(black_box(&plain)))));
        // Opening needs fresh counters: a batch sealed ahead, opened once each.
        let mut client = Sealer::client(&keys);
        client.bind(7);
        group.bench_function(format!("open/{bytes}"), |b| {
            b.iter_batched(
                || server.seal(&plain).expect("a sealable datagram"),
                |sealed| black_box(client.open(&sealed)).expect("it opens"),
                criterion::BatchSize::SmallInput,
            )
        });
        group.bench_function(format!("copy/{bytes}"), |b| b.iter(|| black_box(black_box(&plain).to_vec())));
    }
    group.finish();
    let key = TicketKey::from_bytes([1; 32]);
    let t = ticket::issue(&key, 1, 0, u64::MAX, &keys).expect("issued");
    c.bench_function("ticket/open", |b| b.iter(|| black_box(ticket::open(&key, black_box(&t), SystemTime::now()))));
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(FlamegraphProfiler::new(100));
    targets = seal
}
criterion_main!(benches);
