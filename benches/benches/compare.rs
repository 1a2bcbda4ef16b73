//! Compare benches: the SIMD kernel vs the UE-style reference vs `memcmp` over the same bytes.
//!
//! `ShooterCharacter` at 10k, 100k and 1M actors, 0.1 %, 1 %, 10 % and 100 % changed, push model
//! off and on, kernel on one thread and on all threads; plus every ISA this CPU has at 100k.
//! Only the compare is timed (`iter_custom`); mutation happens between timings. Before each
//! size's group, a short run of `shadowrep compare`'s workload (3 frames per change rate, every
//! changelist checked against the reference's) prints the command's ratios: speedup vs the
//! reference, fraction of `memcmp` (one and two threads), push at 1 % vs a full compare.
//! `SHADOWREP_BENCH_ACTORS` sets the sizes, and caps `compare_isa`'s 100 000.
//!
//! ```text
//! cargo bench -p shadowrep-benches --bench compare                      # everything (long)
//! SHADOWREP_BENCH_ACTORS=10000 cargo bench -p shadowrep-benches --bench compare
//! cargo bench -p shadowrep-benches --bench compare -- --profile-time 5  # flamegraphs
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shadowrep::compare::{ChangeSet, CompareConfig, Isa, Kernels, PushMode, ShadowState};
use shadowrep::reference::RefChanges;
use shadowrep_benches::phase::NoProbe;
use shadowrep_benches::workload::{run_compare, CompareOptions, CompareWorkload};
use std::hint::black_box;
use std::time::{Duration, Instant};

mod common;
use common::{bench_actors, limited, FlamegraphProfiler};

const CLASS: &str = "ShooterCharacter";
const FRACTIONS: [f64; 4] = [0.001, 0.01, 0.1, 1.0];

fn sizes() -> Vec<usize> {
    bench_actors().unwrap_or_else(|| vec![10_000, 100_000, 1_000_000])
}

/// The command's ratios at `n` actors, from a short measured run of its workload (all threads).
fn print_ratios(n: usize) {
    for f in FRACTIONS {
        let opts = CompareOptions {
            class: CLASS.into(),
            actors: n,
            changed: f,
            threads: rayon::current_num_threads(),
            frames: 3,
            kernels: Kernels::best(),
            seed: 42,
        };
        let r = run_compare(&opts, &mut |_| {}, &mut NoProbe).expect("the compare workload");
        eprintln!(
            "compare/{n} at {:.1} % changed ({} threads, {}; per-frame medians of 3): speedup_vs_reference {:.1}, \
             fraction_of_memcmp {:.2} (two-thread memcmp {:.2}), push 1 % / full compare {:.4}",
            f * 100.0,
            opts.threads,
            opts.kernels.isa.name(),
            r.speedup_vs_reference,
            r.fraction_of_memcmp,
            r.fraction_of_memcmp_2t,
            r.push_ratio
        );
    }
}

fn push_name(p: PushMode) -> &'static str {
    if p == PushMode::Off {
        "push_off"
    } else {
        "push_on"
    }
}

fn compare(c: &mut Criterion) {
    let all_threads = rayon::current_num_threads();
    for n in sizes() {
        print_ratios(n);
        let mut w = CompareWorkload::new(CLASS, n, 42, true).expect("sample class");
        let mut group = c.benchmark_group(format!("compare/{n}"));
        group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        group.throughput(Throughput::Bytes(2 * w.store.live().bytes().len() as u64));
        let mut changes = ChangeSet::new();
        for push in [PushMode::Off, PushMode::All] {
            for threads in [1, all_threads] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
                let cfg =
                    CompareConfig { push, kernels: Kernels::best(), parallel: threads > 1, ..CompareConfig::default() };
                let mut shadow = ShadowState::new(&mut w.store);
                for f in FRACTIONS {
                    let id = BenchmarkId::new(format!("kernel_{threads}t/{}", push_name(push)), f);
                    group.bench_function(id, |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                w.mutate_store(f, push != PushMode::Off);
                                w.store.begin_tick();
                                let t = Instant::now();
                                pool.install(|| shadow.compare(&mut w.store, &cfg, &mut changes)).expect("own store");
                                total += t.elapsed();
                            }
                            total
                        })
                    });
                }
            }
            let mut ref_changes = RefChanges::default();
            for f in FRACTIONS {
                group.bench_function(BenchmarkId::new(format!("reference/{}", push_name(push)), f), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            w.mutate(f, push != PushMode::Off);
                            let world = w.reference.as_mut().expect("built with a reference");
                            let t = Instant::now();
                            world.compare(push, &mut ref_changes);
                            total += t.elapsed();
                        }
                        total
                    })
                });
            }
        }
        // memcmp over equal live and shadow bytes: the bandwidth bound for the same data.
        let mut shadow = ShadowState::new(&mut w.store);
        w.store.begin_tick();
        let cfg = CompareConfig {
            push: PushMode::Off,
            kernels: Kernels::best(),
            parallel: false,
            ..CompareConfig::default()
        };
        shadow.compare(&mut w.store, &cfg, &mut changes).expect("own store");
        assert!(w.store.live().bytes() == shadow.pages().bytes(), "shadow equals live after a full compare");
        group.bench_function("memcmp", |b| {
            b.iter(|| black_box(w.store.live().bytes()) == black_box(shadow.pages().bytes()))
        });
        group.finish();
    }
}

fn isa(c: &mut Criterion) {
    let n = limited(100_000);
    let mut w = CompareWorkload::new(CLASS, n, 7, false).expect("sample class");
    let mut group = c.benchmark_group(format!("compare_isa/{n}"));
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(2 * w.store.live().bytes().len() as u64));
    let mut changes = ChangeSet::new();
    for isa in Isa::ALL {
        // Skips ISAs this CPU lacks.
        let Some(kernels) = Kernels::for_isa(isa) else { continue };
        let cfg = CompareConfig { push: PushMode::Off, kernels, parallel: false, ..CompareConfig::default() };
        let mut shadow = ShadowState::new(&mut w.store);
        group.bench_function(isa.name(), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    w.mutate(0.01, false);
                    w.store.begin_tick();
                    let t = Instant::now();
                    shadow.compare(&mut w.store, &cfg, &mut changes).expect("own store");
                    total += t.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_profiler(FlamegraphProfiler::new(100));
    targets = compare, isa
}
criterion_main!(benches);
