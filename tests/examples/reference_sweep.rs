//! Sweeps seeded random worlds through the kernel and the UE-style reference side by side
//! ([`shadowrep_tests::random_world`]) and reports every world where they decide differently,
//! a client refuses a packet, or anything panics.
//!
//! ```text
//! cargo run --release -p shadowrep-tests --example reference_sweep -- \
//!     --seeds 30000..30200 --connections 4 --loss 0.2 --dormancy --threads 2
//! ```
//!
//! One line per world that did not match (`FAIL seed N …: what differed`), per world too tame
//! to count (`weak seed N: …`, with `--verbose`; the tests' strength checks — not a failure),
//! and per world that matched (`ok seed N`, with its full-window frames and reopens, with `--verbose`); then a summary. Exits 1 if any
//! world failed, 2 on bad flags. Every sweep in the project's history found its bugs this way:
//! reproduce a failing world alone with `--seeds N..N+1`, then add it to the tests in
//! `tests/tests/actor_level/reference.rs`.

use shadowrep_tests::random_world::{decide_alike, Spec};
use std::ops::Range;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

const USAGE: &str = "usage: reference_sweep --seeds A..B [--connections N] [--loss F] [--packet-overhead B] [--dormancy] \
[--bags-first] [--sublevels] [--priority-hooks] [--net-groups] [--dynamic-conditions] [--class-defaults] [--net-temporary] \
[--initial-only] [--sub-conditions] [--replicates] [--wide] [--rpcs] [--owner-chains] [--remove-fast-arrays] [--late-feedback] [--interleaved-feedback] [--stale-reopens] [--fresh-calls] [--replayed-feedback] [--lying-feedback] \
[--threads T] \
[--verbose]
  --seeds A..B       the worlds' seeds, B excluded (required)
  --connections N    clients per world, the last a replay connection (default 4, at least 1)
  --loss F           share of packets the link loses, 0 <= F < 1 (default 0)
  --packet-overhead B  bytes each packet costs the budget beyond its payload (default UE's 28)
  --dormancy         the game puts actors to sleep and wakes them
  --bags-first       the sub-objects' class registered before their owners'
  --sublevels        actors in sublevels the clients stream in and out
  --priority-hooks   the classes' own priorities set and taken back as the world runs
  --net-groups       sub-objects and fast arrays under NetGroup conditions, groups changing
  --dynamic-conditions  bags with a Dynamic parent whose per-actor condition changes
  --class-defaults   the bags' class declares class defaults
  --net-temporary    a quarter of the actors temporary (bNetTemporary), coming and going
  --initial-only     some sub-objects initial-only (COND_InitialOnly): with their owner's initial bunch only
  --sub-conditions   some sub-objects under UE's other conditions (SimulatedOrPhysics, SimulatedOnlyNoReplay,
                     SimulatedOrPhysicsNoReplay, InitialOrOwner)
  --replicates       the game switches actors' replication off and on (SetReplicates)
  --wide             the bags' class past 64 leaves (twenty eight-byte ledgers more): masks of leaf groups
  --rpcs             the game calls its actors' remote procedures (reliable and not, multicast and client)
  --owner-chains     owning connections follow owner chains (ActorLevelConfig::owner_chain_connections)
  --remove-fast-arrays  the game removes inventories (fast arrays) from live owners (remove_fast_array)
  --late-feedback    half the clients' feedback arrives after the game's next calls, not right after the tick
  --interleaved-feedback  the same, each held feedback arriving at a point of its own among those calls
  --stale-reopens    now and then a feedback asks again for an actor or array some client held once (late or forged)
  --fresh-calls      now and then a thing spawned and at once made dormant, flushed or torn off (no GUID yet)
  --replayed-feedback  now and then the link delivers a client's earlier feedback again (duplicated or reordered)
  --lying-feedback   now and then a feedback claims a lost packet received (the liar refuses packets, asks again)
  --threads T        worlds run at once (default 1)
  --verbose          also print matching and tame worlds";

struct Args {
    seeds: Range<u64>,
    template: Spec,
    threads: usize,
    verbose: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut seeds = None;
    let mut template = Spec::new(0, 4);
    let (mut threads, mut verbose) = (1, false);
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--seeds" => {
                let v = value("--seeds")?;
                let (a, b) = v.split_once("..").ok_or_else(|| format!("--seeds {v}: expected A..B"))?;
                let parse = |s: &str| s.parse::<u64>().map_err(|e| format!("--seeds {v}: {s}: {e}"));
                let (a, b) = (parse(a)?, parse(b)?);
                if a >= b {
                    return Err(format!("--seeds {v}: an empty range"));
                }
                seeds = Some(a..b);
            }
            "--connections" => {
                let v = value("--connections")?;
                template.connections = v.parse().map_err(|e| format!("--connections {v}: {e}"))?;
                if template.connections == 0 {
                    return Err("--connections 0: a world needs a client".into());
                }
            }
            "--loss" => {
                let v = value("--loss")?;
                let loss: f64 = v.parse().map_err(|e| format!("--loss {v}: {e}"))?;
                if !(0.0..1.0).contains(&loss) {
                    return Err(format!("--loss {v}: expected 0 <= F < 1"));
                }
                template.loss = loss;
            }
            "--packet-overhead" => {
                let v = value("--packet-overhead")?;
                template.packet_overhead = v.parse().map_err(|e| format!("--packet-overhead {v}: {e}"))?;
            }
            "--threads" => {
                let v = value("--threads")?;
                threads = v.parse().map_err(|e| format!("--threads {v}: {e}"))?;
                if threads == 0 {
                    return Err("--threads 0: at least one".into());
                }
            }
            "--dormancy" => template.dormancy = true,
            "--bags-first" => template.bags_first = true,
            "--sublevels" => template.sublevels = true,
            "--priority-hooks" => template.priority_hooks = true,
            "--net-groups" => template.net_groups = true,
            "--dynamic-conditions" => template.dynamic_conditions = true,
            "--class-defaults" => template.class_defaults = true,
            "--net-temporary" => template.net_temporary = true,
            "--initial-only" => template.initial_only = true,
            "--sub-conditions" => template.sub_conditions = true,
            "--replicates" => template.replicates = true,
            "--remove-fast-arrays" => template.remove_fast_arrays = true,
            "--late-feedback" => template.late_feedback = true,
            "--interleaved-feedback" => template = template.interleaved_feedback(),
            "--stale-reopens" => template.stale_reopens = true,
            "--fresh-calls" => template.fresh_calls = true,
            "--replayed-feedback" => template.replayed_feedback = true,
            "--lying-feedback" => template.lying_feedback = true,
            "--wide" => template.wide = true,
            "--rpcs" => template.rpcs = true,
            "--owner-chains" => template.owner_chains = true,
            "--verbose" => verbose = true,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let seeds = seeds.ok_or("--seeds A..B is required")?;
    Ok(Args { seeds, template, threads, verbose })
}

/// What one world came to.
enum Verdict {
    /// With the frames in which a window was full, the packets sent and the reopen requests
    /// honoured (over its connections).
    Matched(u64, u64, u64),
    Tame(String),
    Failed(String),
}

fn run(spec: Spec) -> Verdict {
    match std::panic::catch_unwind(|| decide_alike(spec)) {
        Ok(Ok(exercised)) => match exercised.weakness(&spec) {
            Some(why) => Verdict::Tame(why),
            None => {
                let sum = |f: fn(&shadowrep::net::ConnectionStats) -> u64| exercised.stats.iter().map(f).sum();
                Verdict::Matched(sum(|s| s.window_full_frames), sum(|s| s.packets_sent), sum(|s| s.reopens_honoured))
            }
        },
        Ok(Err(difference)) => Verdict::Failed(difference),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            Verdict::Failed(format!("panicked: {message}"))
        }
    }
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("reference_sweep: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // A world that panics is reported by its line; the default hook would print each panic's
    // message and backtrace again, interleaved between threads.
    std::panic::set_hook(Box::new(|_| {}));
    let next = AtomicU64::new(args.seeds.start);
    let (matched, tame) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let failed = Mutex::new(Vec::new());
    let t = &args.template;
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.threads {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= args.seeds.end {
                    break;
                }
                match run(Spec { seed, ..*t }) {
                    Verdict::Matched(full, packets, reopens) => {
                        matched.fetch_add(1, Ordering::Relaxed);
                        if args.verbose {
                            println!(
                                "ok seed {seed} (window full {full} frames, {packets} packets, {reopens} reopens honoured)"
                            );
                        }
                    }
                    Verdict::Tame(why) => {
                        tame.fetch_add(1, Ordering::Relaxed);
                        if args.verbose {
                            println!("weak {why}");
                        }
                    }
                    Verdict::Failed(what) => {
                        println!(
                            "FAIL seed {seed} connections {} loss {} dormancy {} bags-first {} sublevels {} priority-hooks {} net-groups {} dynamic-conditions {} class-defaults {} net-temporary {} initial-only {} sub-conditions {} replicates {} wide {} rpcs {} owner-chains {} remove-fast-arrays {} late-feedback {} interleaved-feedback {} stale-reopens {} fresh-calls {} replayed-feedback {} lying-feedback {}: {what}",
                            t.connections, t.loss, t.dormancy, t.bags_first, t.sublevels, t.priority_hooks, t.net_groups, t.dynamic_conditions, t.class_defaults, t.net_temporary, t.initial_only, t.sub_conditions, t.replicates, t.wide, t.rpcs, t.owner_chains, t.remove_fast_arrays, t.late_feedback, t.interleaved_feedback, t.stale_reopens, t.fresh_calls, t.replayed_feedback, t.lying_feedback
                        );
                        failed.lock().expect("no panic holds it").push(seed);
                    }
                }
            });
        }
    });
    let mut failed = failed.into_inner().expect("no panic holds it");
    failed.sort_unstable();
    println!(
        "{} worlds in {:.1} s: {} matched, {} too tame to count, {} failed{}",
        args.seeds.end - args.seeds.start,
        started.elapsed().as_secs_f64(),
        matched.into_inner(),
        tame.into_inner(),
        failed.len(),
        if failed.is_empty() { String::new() } else { format!(" (seeds {failed:?})") }
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
