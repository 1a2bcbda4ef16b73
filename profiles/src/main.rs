//! `shadowrep`: run a named replication workload and report what it cost.
//!
//! ```text
//! shadowrep                                   # the main job: battle_royale briefly + compare, one report
//! shadowrep compare --class C --actors N --changed F --threads T [--json] [--flamegraph out.svg]
//! shadowrep replicate --class C --actors N --connections M --changed F [--json]
//! shadowrep run --profile battle_royale|mmo|open_world [--frames N] [--threads T] [--seed S]
//!               [--json] [--flamegraph out.svg] [--dump-frame K FILE.json]
//! shadowrep serve [--profile battle_royale|mmo] --bind 127.0.0.1:PORT [--seconds S] [--scale F]
//! shadowrep bots --connect 127.0.0.1:PORT --count N [--loss F] [--seconds S] [--json]
//! shadowrep sweep [--quick] [--series actors,changed,connections] [--out DIR] [--csv F] [--plot F.svg]
//! ```
//!
//! Every subcommand accepts `--json` (one JSON object on stdout, nothing on stderr) and, built
//! with the `flamegraph` feature, `--flamegraph FILE.svg [--flamegraph-phase kernel|reference|whole]`
//! (a pprof flamegraph of the measured phase: see `shadowrep_benches::flamegraph`). On a terminal, long runs
//! show their progress on stderr.
#![recursion_limit = "256"]
#![forbid(unsafe_code)]

use clap::{Args, Parser, Subcommand};
use serde_json::json;
use shadowrep::compare::{Isa, Kernels};
use shadowrep_benches::flamegraph::PhaseProfiler;
use shadowrep_benches::phase::{Phase, PhaseProbe};
use shadowrep_benches::replicate::{run_replicate, ReplicateOptions};
use shadowrep_benches::workload::{run_compare, run_push_scaling, CompareOptions, ScalingOptions};
use std::fs::File;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod overview;
mod run;
mod sweep;
mod udp;

#[derive(Parser)]
#[command(name = "shadowrep", version, about = "Replication kernel workloads: measure, compare, profile")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Print one JSON object instead of a report (and no progress).
    #[arg(long, global = true)]
    json: bool,
    /// Write a pprof flamegraph of the measured phase to this SVG file (builds with the
    /// `flamegraph` feature only).
    #[arg(long, global = true, value_name = "FILE.svg")]
    flamegraph: Option<PathBuf>,
    /// What the flamegraph samples: kernel (the kernel's timed work: compare, shared frame,
    /// tick), reference (the UE-style reference's; in replicate, the per-connection encoding's)
    /// or whole (the whole run, set-up included). Default: kernel; whole for serve, bots and
    /// sweep. Kernel and reference run extra untimed frames until the profile holds 1000
    /// samples.
    #[arg(long, global = true, value_parser = phase_arg, value_name = "PHASE")]
    flamegraph_phase: Option<Phase>,
}

/// `--flamegraph-phase`'s value.
fn phase_arg(s: &str) -> Result<Phase, String> {
    Phase::parse(s).ok_or_else(|| {
        let known: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
        format!("unknown phase `{s}` (one of {})", known.join(", "))
    })
}

#[derive(Subcommand, Clone)]
enum Command {
    /// Change detection: the SIMD kernel vs the UE-style reference vs memcmp, and the push model.
    Compare(CompareArgs),
    /// Whole server frames (compare, history, send state, serialization, packets) for many
    /// connections, with and without shared serialization.
    Replicate(ReplicateArgs),
    /// A simulated server world at its tick rate through the actor level (UE's
    /// ServerReplicateActors): battle_royale (100 players, 50k actors, a hot drop), mmo (1000
    /// players, 1M actors) or open_world (100 players, 10k awake actors and 990k dormant ones).
    Run(run::RunArgs),
    /// A profile's world at its tick rate over real UDP (a stateless handshake, session tokens),
    /// frozen for its last seconds so clients can check what they hold.
    Serve(udp::ServeArgs),
    /// Headless clients over real UDP: handshake, receive, apply, feedback, a report per
    /// second, and at the end whether every bot holds what the server says it should.
    Bots(udp::BotsArgs),
    /// A scaling series: actors (compare), change rate (compare) and connections (replicate),
    /// written as CSV / JSON and SVG line plots of frame time and ratios.
    Sweep(sweep::SweepArgs),
}

#[derive(Args, Clone)]
struct ReplicateArgs {
    /// Class to instantiate: ShooterCharacter, LootContainer, ExampleActor, Projectile, ShooterWeapon, Pickup, Counter.
    #[arg(long, default_value = "Counter")]
    class: String,
    /// Number of actors.
    #[arg(long, default_value_t = 10_000, value_parser = positive)]
    actors: usize,
    /// Number of connections.
    #[arg(long, default_value_t = 16, value_parser = positive)]
    connections: usize,
    /// Fraction of actors changed per frame (0.1 = 10 %).
    #[arg(long, default_value_t = 0.1)]
    changed: f64,
    /// Timed frames; medians are reported.
    #[arg(long, default_value_t = 10, value_parser = positive)]
    frames: usize,
    /// Largest packet in bytes.
    #[arg(long, default_value_t = 1024)]
    mtu: usize,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = positive)]
    threads: Option<usize>,
    /// Diff routines: best, scalar, wide, avx2, avx512.
    #[arg(long, default_value = "best")]
    isa: String,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Clone)]
struct CompareArgs {
    /// Class to instantiate: ShooterCharacter, LootContainer, ExampleActor, Projectile, ShooterWeapon, Pickup, Counter.
    #[arg(long, default_value = "ShooterCharacter")]
    class: String,
    /// Number of actors.
    #[arg(long, default_value_t = 100_000, value_parser = positive)]
    actors: usize,
    /// Fraction of actors changed per frame (0.01 = 1 %).
    #[arg(long, default_value_t = 0.01)]
    changed: f64,
    /// Kernel threads (default: every core). The reference is single-threaded, as UE's is.
    #[arg(long, value_parser = positive)]
    threads: Option<usize>,
    /// Timed frames; medians are reported.
    #[arg(long, default_value_t = 5, value_parser = positive)]
    frames: usize,
    /// Diff routines: best, scalar, wide, avx2, avx512.
    #[arg(long, default_value = "best")]
    isa: String,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead: push frames with `--dirty` actors marked, in a world of `--actors` actors and in
    /// one ten times larger, one thread; reports `scaling_ratio` (large / small).
    #[arg(long)]
    scaling: bool,
    /// Actors marked (and changed) per push frame with `--scaling`.
    #[arg(long, default_value_t = 10_000, value_parser = positive)]
    dirty: usize,
}

impl Default for CompareArgs {
    fn default() -> Self {
        Self {
            class: "ShooterCharacter".into(),
            actors: 100_000,
            changed: 0.01,
            threads: None,
            frames: 5,
            isa: "best".into(),
            seed: 1,
            scaling: false,
            dirty: 10_000,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let show_progress = !cli.json && std::io::stderr().is_terminal();
    let mut progress = |msg: &str| {
        if show_progress {
            eprint!("\r\x1b[2K{msg}");
        }
    };
    let result = Session::start(&cli).and_then(|mut session| {
        let result = match cli.command.clone() {
            None => overview::main_job(cli.json, &mut progress, &mut session),
            Some(Command::Compare(args)) => compare(&args, cli.json, &mut progress, &mut session),
            Some(Command::Replicate(args)) => replicate(&args, cli.json, &mut progress, &mut session),
            Some(Command::Run(args)) => run::run(&args, cli.json, &mut progress, &mut session),
            Some(Command::Serve(args)) => udp::serve(&args, cli.json, &mut session),
            Some(Command::Bots(args)) => udp::bots(&args, cli.json, &mut session),
            Some(Command::Sweep(args)) => sweep::sweep(&args, cli.json, show_progress, &mut session),
        };
        if show_progress {
            eprint!("\r\x1b[2K");
        }
        // A failed command's partial profile is not written.
        let written = if result.is_ok() { session.finish().map(|_| ()) } else { Ok(()) };
        result.and(written).map(|()| session)
    });
    match result {
        Ok(session) => {
            if let (false, Some((path, phase, samples))) = (cli.json, session.written()) {
                let few = if samples < 1000 { "; fewer than 1000: a longer run gives a steadier profile" } else { "" };
                eprintln!(
                    "flamegraph of the {} phase ({samples} samples{few}) written to {}",
                    phase.name(),
                    path.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            if show_progress {
                eprint!("\r\x1b[2K");
            }
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What one invocation carries besides its arguments: the flamegraph, if asked for, and how
/// the command's JSON goes out.
pub(crate) struct Session {
    flamegraph: Option<Flamegraph>,
    written: Option<(PathBuf, Phase, usize)>,
}

struct Flamegraph {
    profiler: PhaseProfiler,
    path: PathBuf,
    phase: Phase,
}

impl Session {
    /// Checks the flamegraph flags against the command and starts the profiler.
    fn start(cli: &Cli) -> Result<Session, String> {
        let whole_only = matches!(cli.command, Some(Command::Serve(_) | Command::Bots(_) | Command::Sweep(_)));
        let Some(path) = &cli.flamegraph else {
            if cli.flamegraph_phase.is_some() {
                return Err("--flamegraph-phase needs --flamegraph FILE.svg".into());
            }
            return Ok(Session { flamegraph: None, written: None });
        };
        let phase = cli.flamegraph_phase.unwrap_or(if whole_only { Phase::Whole } else { Phase::Kernel });
        if whole_only && phase != Phase::Whole {
            return Err(format!(
                "--flamegraph-phase {}: serve, bots and sweep are profiled whole (--flamegraph-phase whole)",
                phase.name()
            ));
        }
        check_writable(path, true).map_err(|e| format!("--flamegraph: {e}"))?;
        let mut profiler = PhaseProfiler::start(phase)?;
        profiler.enter(Phase::Whole);
        Ok(Session { flamegraph: Some(Flamegraph { profiler, path: path.clone(), phase }), written: None })
    }

    /// Whether a flamegraph of `phase` is being taken.
    pub(crate) fn profiles(&self, phase: Phase) -> bool {
        self.flamegraph.as_ref().is_some_and(|f| f.phase == phase)
    }

    /// Writes the flamegraph, if one was asked for (once); returns its JSON description.
    fn finish(&mut self) -> Result<serde_json::Value, String> {
        if let Some(mut f) = self.flamegraph.take() {
            f.profiler.leave(Phase::Whole);
            let samples = f.profiler.write(&f.path)?;
            self.written = Some((f.path, f.phase, samples));
        }
        Ok(match &self.written {
            Some((path, phase, samples)) => json!({
                "file": path.display().to_string(),
                "phase": phase.name(),
                "samples": samples,
            }),
            None => serde_json::Value::Null,
        })
    }

    /// The flamegraph written: its file, phase and samples.
    fn written(&self) -> Option<(&Path, Phase, usize)> {
        self.written.as_ref().map(|(p, ph, n)| (p.as_path(), *ph, *n))
    }

    /// Prints a command's JSON object, with a `flamegraph` key (null without one), as one line.
    pub(crate) fn emit(&mut self, mut out: serde_json::Value) -> Result<(), String> {
        let flamegraph = self.finish()?;
        if let Some(map) = out.as_object_mut() {
            map.insert("flamegraph".into(), flamegraph);
        }
        println!("{out}");
        Ok(())
    }
}

impl PhaseProbe for Session {
    fn enter(&mut self, phase: Phase) {
        if let Some(f) = self.flamegraph.as_mut() {
            f.profiler.enter(phase);
        }
    }
    fn leave(&mut self, phase: Phase) {
        if let Some(f) = self.flamegraph.as_mut() {
            f.profiler.leave(phase);
        }
    }
    fn wants_more(&self) -> bool {
        self.flamegraph.as_ref().is_some_and(|f| f.profiler.wants_more())
    }
    fn watches(&self, phase: Phase) -> bool {
        self.profiles(phase)
    }
}

/// A count that must be at least 1.
fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// Opens `path` for writing (creating its folder if `mkdir`), so a run that could not write its
/// output is refused before it starts rather than after.
fn check_writable(path: &Path, mkdir: bool) -> Result<File, String> {
    if let Some(dir) = path.parent().filter(|d| mkdir && !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Builds the global rayon pool of `threads` threads with the calling thread as one of them (as
/// an engine's game thread is a worker of its job system): a frame's parallel phases start on
/// this thread at once, and no worker has to wake before the frame can begin. (Called from a
/// thread outside the pool, a long `NetDriver::tick` moves itself onto a worker instead, which
/// costs one wake-up: 0.4 ms on a loaded two-core VM.)
pub(crate) fn build_pool(threads: usize) -> Result<(), String> {
    rayon::ThreadPoolBuilder::new().num_threads(threads).use_current_thread().build_global().map_err(|e| e.to_string())
}

/// Refuses a run whose estimated memory (`bytes`) is more than the machine has available.
fn check_memory(what: &str, bytes: f64) -> Result<(), String> {
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<f64>().ok().map(|kb| kb * 1024.0)
    });
    match available {
        Some(avail) if bytes > avail => {
            Err(format!("{what} needs about {:.1} GB of memory; {:.1} GB is available", bytes / 1e9, avail / 1e9))
        }
        _ => Ok(()),
    }
}

/// Bytes of live state per actor of `class` (its store page share and its record).
fn actor_bytes(class: &str) -> Result<(f64, f64), String> {
    let layout = shadowrep_layouts::layout_by_name(class)
        .ok_or_else(|| format!("unknown class `{class}` (one of {})", shadowrep_layouts::class_names().join(", ")))?;
    Ok((layout.page_bytes as f64 / shadowrep::schema::PAGE_LANES as f64, layout.record_bytes as f64))
}

fn kernels(isa: &str) -> Result<Kernels, String> {
    if isa == "best" {
        return Ok(Kernels::best());
    }
    let parsed = Isa::parse(isa).ok_or_else(|| format!("unknown ISA `{isa}` (best, scalar, wide, avx2, avx512)"))?;
    Kernels::for_isa(parsed).ok_or_else(|| format!("this CPU cannot run {isa}"))
}

fn compare(
    args: &CompareArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    if !(0.0..=1.0).contains(&args.changed) {
        return Err(format!("--changed must be within 0..=1, got {}", args.changed));
    }
    if args.scaling {
        return compare_scaling(args, json, progress, session);
    }
    // Live and shadow pages, and the reference's objects and their shadows.
    let (page, record) = actor_bytes(&args.class)?;
    check_memory("this compare", args.actors as f64 * (2.0 * page + 2.0 * record) * 1.25)?;
    let threads = args.threads.unwrap_or_else(rayon::current_num_threads).max(1);
    let opts = CompareOptions {
        class: args.class.clone(),
        actors: args.actors,
        changed: args.changed,
        threads,
        frames: args.frames.max(1),
        kernels: kernels(&args.isa)?,
        seed: args.seed,
    };
    let r = run_compare(&opts, progress, session)?;
    let gbps = |ns: u64| 2.0 * r.live_bytes as f64 / ns.max(1) as f64;
    if json {
        let out = json!({
            "command": "compare",
            "class": opts.class,
            "actors": opts.actors,
            "changed": opts.changed,
            "threads": threads,
            "isa": opts.kernels.isa.name(),
            "isa_calibration_ns": Kernels::calibration()
                .iter()
                .map(|(isa, ns)| (isa.name().to_string(), json!(ns)))
                .collect::<serde_json::Map<_, _>>(),
            "frames": opts.frames,
            "times": "per-frame medians over the timed frames (one untimed warm-up frame first)",
            "reference": REFERENCE_COMPARE,
            "push_1pct": PUSH_1PCT,
            "kernel_ns": r.kernel_ns,
            "reference_ns": r.reference_ns,
            "memcmp_ns": r.memcmp_ns,
            "memcmp_2t_ns": r.memcmp_2t_ns,
            "speedup_vs_reference": r.speedup_vs_reference,
            "fraction_of_memcmp": r.fraction_of_memcmp,
            "fraction_of_memcmp_2t": r.fraction_of_memcmp_2t,
            "push_1pct_ns": r.push_1pct_ns,
            "push_ratio": r.push_ratio,
            "push_gather_ns": r.push_gather_ns,
            "push_vs_gather": r.push_vs_gather,
            "push_gather": PUSH_GATHER,
            "live_bytes": r.live_bytes,
            "kernel_gb_per_s": gbps(r.kernel_ns),
            "memcmp_gb_per_s": gbps(r.memcmp_ns),
            "memcmp_2t_gb_per_s": gbps(r.memcmp_2t_ns),
            "changed_actors": r.changed_actors,
            "dirty_stats": r.dirty_stats.iter().map(|s| json!({
                "property": s.property,
                "push": s.push,
                "marked": s.marked,
                "changed": s.changed,
            })).collect::<Vec<_>>(),
        });
        session.emit(out)?;
    } else {
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "compare: {} × {} at {:.2} % changed per frame; kernel on {} thread(s), ISA {}; times are per-frame \
             medians of {} timed frames",
            opts.actors,
            opts.class,
            opts.changed * 100.0,
            threads,
            opts.kernels.isa.name(),
            opts.frames
        );
        println!("  kernel      {:>10.3} ms   {:>6.2} GB/s (live + shadow)", ms(r.kernel_ns), gbps(r.kernel_ns));
        println!("  reference   {:>10.3} ms   speedup ×{:.1}", ms(r.reference_ns), r.speedup_vs_reference);
        println!(
            "  memcmp      {:>10.3} ms   kernel runs at {:.2} of memcmp speed",
            ms(r.memcmp_ns),
            r.fraction_of_memcmp
        );
        println!(
            "  memcmp, 2t  {:>10.3} ms   kernel runs at {:.2} of a two-thread memcmp",
            ms(r.memcmp_2t_ns),
            r.fraction_of_memcmp_2t
        );
        println!("  push, 1 %   {:>10.3} ms   {:.4} of a full compare", ms(r.push_1pct_ns), r.push_ratio);
        println!(
            "  gather      {:>10.3} ms   push frame / gather of its marked lanes: {:.2}",
            ms(r.push_gather_ns),
            r.push_vs_gather
        );
        println!(
            "  {} actors changed in the last frame; {:.1} MB of live state",
            r.changed_actors,
            r.live_bytes as f64 / 1e6
        );
        println!("  dirty statistics of the push frames (lanes compared with a mark / lanes changed):");
        for s in r.dirty_stats.iter().filter(|s| s.marked != 0 || s.changed != 0) {
            println!("    {:<24} {:>10} marked {:>10} changed", s.property, s.marked, s.changed);
        }
        println!("  reference: {REFERENCE_COMPARE}");
        println!("  push, 1 %: {PUSH_1PCT}");
        println!("  gather: {PUSH_GATHER}");
        println!("  memcmp: the same live and shadow bytes compared with `==` (equal, so every byte is read)");
    }
    Ok(())
}

/// What `compare`'s "reference" is.
pub(crate) const REFERENCE_COMPARE: &str = "the UE-style path on the same actors: array-of-structs objects, each \
    property compared against its own shadow one by one (UE's CompareProperties), single-threaded as UE's is; \
    every frame its changelists must equal the kernel's";

/// What `compare`'s "push, 1 %" is.
pub(crate) const PUSH_1PCT: &str = "every property push-based, 1 % of the actors marked dirty (and changed): the \
    kernel compares only marked lanes; its time against a full compare of the same frame";

/// What `compare`'s "gather" is.
pub(crate) const PUSH_GATHER: &str = "one byte of every plane lane the push frame's marks name, live and shadow, \
    read with nothing else done, after the full compare flushed them from the cache (the live ones warmed again, \
    as the game's writes leave them): the latency floor of the push frame";

/// `compare --scaling`: the same number of marked actors in a world and in one ten times larger.
fn compare_scaling(
    args: &CompareArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    let (page, _) = actor_bytes(&args.class)?;
    check_memory("this scaling run", args.actors as f64 * 10.0 * 2.0 * page * 1.25 + 256e6)?;
    if args.dirty > args.actors {
        return Err(format!("--dirty {} is more than the {} actors", args.dirty, args.actors));
    }
    let kernels = kernels(&args.isa)?;
    let frames = args.frames.max(1);
    let opts = ScalingOptions {
        class: args.class.clone(),
        actors: args.actors,
        dirty: args.dirty,
        frames,
        kernels,
        seed: args.seed,
    };
    let r = run_push_scaling(&opts, progress, session)?;
    if json {
        session.emit(json!({
            "command": "compare",
            "scaling": "push frames (every property push-based, one thread) with the same number of actors marked \
                and changed, in a world and in one ten times larger; a large cache-sized buffer is streamed before \
                each frame so it starts cold",
            "class": args.class,
            "actors": r.actors,
            "dirty": r.dirty,
            "isa": kernels.isa.name(),
            "frames": frames,
            "push_ns": r.push_ns,
            "gather_ns": r.gather_ns,
            "scaling_ratio": r.scaling_ratio,
        }))?;
    } else {
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "compare --scaling: {} actors marked per push frame, {} × {} vs {}; medians of {frames} frames, ISA {}",
            r.dirty,
            args.class,
            r.actors[0],
            r.actors[1],
            kernels.isa.name()
        );
        for i in 0..2 {
            println!(
                "  {:>10} actors   push {:>8.3} ms   gather {:>8.3} ms   ({:.2}× the gather)",
                r.actors[i],
                ms(r.push_ns[i]),
                ms(r.gather_ns[i]),
                r.push_ns[i] as f64 / r.gather_ns[i].max(1) as f64
            );
        }
        println!("  scaling_ratio {:.2} (large / small)", r.scaling_ratio);
    }
    Ok(())
}

fn replicate(
    args: &ReplicateArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    if !(0.0..=1.0).contains(&args.changed) {
        return Err(format!("--changed must be within 0..=1, got {}", args.changed));
    }
    // One store, and per driver (shared and per-connection) a shadow, a history of one frame
    // stamp per leaf, and 16 bytes per (connection, actor) pair.
    let (page, _) = actor_bytes(&args.class)?;
    let leaves = shadowrep_layouts::layout_by_name(&args.class).map_or(0, |l| l.leaves.len()) as f64;
    let per_actor = 3.0 * page + 2.0 * (4.0 * leaves + 16.0 * args.connections as f64);
    check_memory("this replicate run", args.actors as f64 * per_actor * 1.25)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.unwrap_or(cores).max(1);
    let opts = ReplicateOptions {
        class: args.class.clone(),
        actors: args.actors,
        connections: args.connections.max(1),
        changed: args.changed,
        frames: args.frames.max(1),
        mtu: args.mtu,
        kernels: kernels(&args.isa)?,
        seed: args.seed,
    };
    // One command per process: the global pool gets the requested size.
    crate::build_pool(threads)?;
    let r = run_replicate(&opts, progress, session)?;
    if json {
        let out = json!({
            "command": "replicate",
            "class": opts.class,
            "actors": opts.actors,
            "connections": opts.connections,
            "changed": opts.changed,
            "threads": threads,
            "isa": opts.kernels.isa.name(),
            "frames": opts.frames,
            "times": "per-frame medians over the timed frames",
            "reference": REFERENCE_REPLICATE,
            "mtu": opts.mtu,
            "frame_ms": r.frame_ms,
            "frame_ms_unshared": r.frame_ms_unshared,
            "sharing_speedup": r.sharing_speedup,
            "idle_frame_ms": r.idle_frame_ms,
            "idle_ratio": r.frame_ms / r.idle_frame_ms.max(1e-9),
            "bytes_per_connection_frame": r.bytes_per_connection_frame,
            "packets_per_connection_frame": r.packets_per_connection_frame,
            "bytes_per_pair_state": r.bytes_per_pair_state,
            "changed_actors": r.changed_actors,
        });
        session.emit(out)?;
    } else {
        println!(
            "replicate: {} × {} to {} connections at {:.2} % changed per frame; {} thread(s), ISA {}; times are \
             per-frame medians of {} timed frames",
            opts.actors,
            opts.class,
            opts.connections,
            opts.changed * 100.0,
            threads,
            opts.kernels.isa.name(),
            opts.frames
        );
        println!("  server frame, shared        {:>10.3} ms", r.frame_ms);
        println!("  server frame, per connection {:>9.3} ms   sharing ×{:.2}", r.frame_ms_unshared, r.sharing_speedup);
        println!(
            "  idle frame                  {:>10.3} ms   {:.0}× cheaper",
            r.idle_frame_ms,
            r.frame_ms / r.idle_frame_ms.max(1e-9)
        );
        println!(
            "  per connection and frame    {:>10.0} bytes in {:.1} packets",
            r.bytes_per_connection_frame, r.packets_per_connection_frame
        );
        println!("  send state per (connection, actor): {} bytes", r.bytes_per_pair_state);
        println!("  per connection (the reference here): {REFERENCE_REPLICATE}");
    }
    Ok(())
}

/// What `replicate`'s baseline is.
const REFERENCE_REPLICATE: &str = "a second driver on the same store and changes that encodes every connection's \
    packets itself (UE's per-connection serialization); the shared driver encodes each changed property once per \
    frame for every connection";
