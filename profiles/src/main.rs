//! `shadowrep`: run a named replication workload and report what it cost.
//!
//! ```text
//! shadowrep                                   # the main job: battle_royale briefly + compare, one report
//! shadowrep compare --class C --actors N --changed F --threads T [--json] [--flamegraph out.svg]
//! shadowrep replicate --class C --actors N --connections M --changed F [--json]
//! shadowrep run --profile battle_royale|mmo|open_world [--frames N] [--threads T] [--seed S]
//!               [--calls] [--json] [--flamegraph out.svg] [--dump-frame K FILE.json]
//! shadowrep serve [--profile battle_royale|mmo] --bind 127.0.0.1:PORT [--seconds S] [--scale F]
//! shadowrep bots --connect 127.0.0.1:PORT --count N [--loss F] [--seconds S] [--json]
//! shadowrep sweep [--quick] [--series actors,changed,connections] [--out DIR] [--csv F] [--plot F.svg]
//! shadowrep layout [--class C]                # what a sample class is made of
//! ```
//!
//! Every subcommand accepts `--json` (one JSON object on stdout, nothing on stderr) and, built
//! with the `flamegraph` feature, `--flamegraph FILE.svg [--flamegraph-phase kernel|reference|whole]`
//! (a pprof flamegraph of the measured phase: see `shadowrep_benches::flamegraph`). On a terminal, long runs
//! show their progress on stderr.
#![recursion_limit = "256"]
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use shadowrep::compare::{Isa, Kernels};
use shadowrep_benches::phase::Phase;
use std::fs::File;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod compare;
mod layout;
mod overview;
mod replicate;
mod run;
mod session;
mod sweep;
mod udp;

pub(crate) use compare::{PUSH_1PCT, REFERENCE_COMPARE};
pub(crate) use session::Session;

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
    Compare(compare::CompareArgs),
    /// Whole server frames (compare, history, send state, serialization, packets) for many
    /// connections, with and without shared serialization.
    Replicate(replicate::ReplicateArgs),
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
    /// What a sample class is made of: its parents (index, wire name, type, condition, notify,
    /// push, handles) and the bytes an actor holds.
    Layout(layout::LayoutArgs),
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
            Some(Command::Compare(args)) => compare::compare(&args, cli.json, &mut progress, &mut session),
            Some(Command::Replicate(args)) => replicate::replicate(&args, cli.json, &mut progress, &mut session),
            Some(Command::Run(args)) => run::run(&args, cli.json, &mut progress, &mut session),
            Some(Command::Serve(args)) => udp::serve(&args, cli.json, &mut session),
            Some(Command::Bots(args)) => udp::bots(&args, cli.json, &mut session),
            Some(Command::Sweep(args)) => sweep::sweep(&args, cli.json, show_progress, &mut session),
            Some(Command::Layout(args)) => layout::layout(&args, cli.json, &mut session),
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

/// A count that must be at least 1.
fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// Checks that `path` can be written (creating its folder if `mkdir`), so a run that could not
/// write its output is refused before it starts rather than after — without touching what is
/// there: an existing file is opened for writing but not emptied, and a new one is created and
/// removed again. A run refused later (another flag, a build without flamegraphs) loses nothing;
/// each output is created when it is written.
fn check_writable(path: &Path, mkdir: bool) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| mkdir && !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => std::fs::remove_file(path).map_err(cannot),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::OpenOptions::new().write(true).open(path).map(drop).map_err(cannot)
        }
        Err(e) => Err(cannot(e)),
    }
}

/// A file created (emptied, if it exists) at its first write: an output checked at the start
/// ([`check_writable`]) but written mid-run, so a run that ends before it leaves the old file.
pub(crate) struct LazyFile {
    path: std::path::PathBuf,
    file: Option<std::io::BufWriter<File>>,
}

impl LazyFile {
    pub(crate) fn new(path: &Path) -> Self {
        Self { path: path.to_path_buf(), file: None }
    }
}

impl std::io::Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => self.file.insert(std::io::BufWriter::with_capacity(1 << 20, File::create(&self.path)?)).write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
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
