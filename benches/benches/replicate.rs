//! Replication benches: whole server frames with shared serialization vs per-connection encoding,
//! side by side on the same store and the same changes. Before each group, a short run of
//! `shadowrep replicate`'s workload (5 frames) prints the command's sharing ratio (per-connection
//! frame / shared frame) and bytes per connection. `SHADOWREP_BENCH_ACTORS` caps the actors.
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench replicate
//! cargo bench -p shadowrep-benches --bench replicate -- --profile-time 5   # flamegraphs
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shadowrep::compare::Kernels;
use shadowrep::net::{ConnectionId, DriverConfig, NetDriver};
use shadowrep::wire::feedback::ack_everything;
use shadowrep_benches::phase::NoProbe;
use shadowrep_benches::replicate::{run_replicate, ReplicateOptions};
use shadowrep_benches::workload::CompareWorkload;
use std::time::{Duration, Instant};

mod common;
use common::{limited, FlamegraphProfiler};

/// Acknowledges every packet of the last tick, one feedback per connection.
fn ack_all(driver: &mut NetDriver, conns: &[ConnectionId]) -> usize {
    let mut bytes = 0;
    for &c in conns {
        let mut feedback = None;
        for p in driver.packets(c).expect("connection") {
            bytes += p.len();
            feedback = Some(ack_everything(p).expect("packet header"));
        }
        if let Some(f) = feedback {
            driver.receive_feedback(c, &f).expect("feedback");
        }
    }
    bytes
}

fn frames(c: &mut Criterion) {
    for (class, actors, connections, changed) in [("Counter", 10_000, 16, 0.1), ("ShooterCharacter", 20_000, 50, 0.05)]
    {
        let actors = limited(actors);
        let opts = ReplicateOptions {
            class: class.into(),
            actors,
            connections,
            changed,
            frames: 5,
            mtu: 1024,
            kernels: Kernels::best(),
            seed: 3,
        };
        let r = run_replicate(&opts, &mut |_| {}, &mut NoProbe).expect("the replicate workload");
        eprintln!(
            "replicate/{class}/{actors}x{connections} at {:.0} % changed ({} threads; per-frame medians of 5): \
             shared frame {:.3} ms, per-connection {:.3} ms, sharing_speedup {:.2}, {:.0} B per connection and frame",
            changed * 100.0,
            rayon::current_num_threads(),
            r.frame_ms,
            r.frame_ms_unshared,
            r.sharing_speedup,
            r.bytes_per_connection_frame
        );
        let mut group = c.benchmark_group(format!("replicate/{class}/{actors}x{connections}"));
        group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        for shared in [true, false] {
            let mut w = CompareWorkload::new(class, actors, 3, false).expect("sample class");
            let cfg = DriverConfig { shared_serialization: shared, ..DriverConfig::default() };
            let mut driver = NetDriver::new(cfg).expect("config");
            driver.register_class(&mut w.store).expect("class");
            let conns: Vec<ConnectionId> = (0..connections).map(|_| driver.add_connection(false)).collect();
            // Initial replication until nothing is left over (a connection sends at most 256
            // packets past its last acknowledgement), then one frame so the bytes per frame are
            // representative.
            loop {
                let full = |d: &NetDriver| {
                    conns.iter().map(|&c| d.connection_stats(c).expect("connection").window_full_frames).sum::<u64>()
                };
                let before = full(&driver);
                driver.tick(&mut [&mut w.store]).expect("tick");
                ack_all(&mut driver, &conns);
                if full(&driver) == before {
                    break;
                }
            }
            w.mutate(changed, true);
            driver.tick(&mut [&mut w.store]).expect("tick");
            group.throughput(Throughput::Bytes(ack_all(&mut driver, &conns) as u64));
            let name = if shared { "shared" } else { "per_connection" };
            group.bench_function(BenchmarkId::new(name, changed), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        w.mutate(changed, true);
                        let t = Instant::now();
                        driver.tick(&mut [&mut w.store]).expect("tick");
                        total += t.elapsed();
                        ack_all(&mut driver, &conns);
                    }
                    total
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(FlamegraphProfiler::new(100));
    targets = frames
}
criterion_main!(benches);
