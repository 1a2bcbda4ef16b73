//! `shadowrep sweep`: how cost grows with the world — a scaling series of `compare` and
//! `replicate` runs.
//!
//! Three series, each a line per measure against the swept variable:
//! - **actors** (compare, 1 % changed): 10k → 1M `ShooterCharacter`;
//! - **changed** (compare, 100k actors): 0.1 % → 100 % of the actors changed per frame;
//! - **connections** (replicate, 2 000 actors, 5 % changed): 1 → 1000 connections.
//!
//! Each point is one measured run of the command's own workload (per-frame medians). The points
//! go to a CSV file (one row each), a JSON object and an SVG (plotters: for each series, frame
//! time of the kernel and its baseline, and the key ratios, on log-log axes: `sweep/plot.rs`).
//! `--quick` runs small sizes that finish in seconds.

use crate::compare::compare_bytes;
use crate::{check_memory, check_writable, kernels, positive, Session};
use clap::Args;
use serde_json::json;
use shadowrep::compare::Kernels;
use shadowrep_benches::phase::NoProbe;
use shadowrep_benches::replicate::{run_replicate, ReplicateOptions};
use shadowrep_benches::workload::{run_compare, CompareOptions};
use std::path::PathBuf;

mod plot;
use plot::{plot, Bar};

/// The class every series instantiates.
const CLASS: &str = "ShooterCharacter";

#[derive(Args, Clone)]
pub struct SweepArgs {
    /// Series to run, comma-separated: actors, changed, connections.
    #[arg(long, value_delimiter = ',', default_value = "actors,changed,connections")]
    series: Vec<String>,
    /// Small sizes that finish in seconds: actors 2k–10k, change rates at 5 000 actors,
    /// 1–16 connections at 500 actors, 3 frames.
    #[arg(long)]
    quick: bool,
    /// The actors series' counts (default 10000,30000,100000,300000,1000000).
    #[arg(long, value_delimiter = ',', value_parser = positive)]
    actors: Option<Vec<usize>>,
    /// The change-rate series' fractions, each in (0, 1] (default 0.001,0.003,0.01,0.03,0.1,0.3,1).
    #[arg(long, value_delimiter = ',', value_parser = rate)]
    changed: Option<Vec<f64>>,
    /// The connections series' counts (default 1,10,100,1000).
    #[arg(long, value_delimiter = ',', value_parser = positive)]
    connections: Option<Vec<usize>>,
    /// Actors of the change-rate series (default 100000).
    #[arg(long, value_parser = positive)]
    changed_actors: Option<usize>,
    /// Actors of the connections series (default 2000).
    #[arg(long, value_parser = positive)]
    connection_actors: Option<usize>,
    /// Timed frames per point (default 5; --quick 3); medians are reported.
    #[arg(long, value_parser = positive)]
    frames: Option<usize>,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = positive)]
    threads: Option<usize>,
    /// Write sweep.csv, sweep.json and sweep.svg into this folder.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write the points as CSV to this file.
    #[arg(long, value_name = "FILE.csv")]
    csv: Option<PathBuf>,
    /// Write SVG line plots to this file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A change rate: a fraction in (0, 1].
fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        Ok(f) => Err(format!("{f} is not in (0, 1] (0.01 = 1 %)")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// The swept variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Series {
    Actors,
    Changed,
    Connections,
}

impl Series {
    const ALL: [Series; 3] = [Series::Actors, Series::Changed, Series::Connections];

    fn name(self) -> &'static str {
        match self {
            Series::Actors => "actors",
            Series::Changed => "changed",
            Series::Connections => "connections",
        }
    }

    /// The x axis's label.
    fn axis(self) -> &'static str {
        match self {
            Series::Actors => "actors (compare, 1 % changed)",
            Series::Changed => "% changed per frame (compare)",
            Series::Connections => "connections (replicate)",
        }
    }
}

/// One measured point.
#[derive(Clone, Debug)]
struct Point {
    series: Series,
    /// The swept variable (the change rate in %).
    x: f64,
    actors: usize,
    connections: usize,
    changed: f64,
    /// The kernel's frame (compare, or the shared server frame), ms.
    frame_ms: f64,
    /// The baseline's: the UE-style reference (compare) or per-connection encoding, ms.
    baseline_ms: f64,
    /// Baseline / kernel, per-frame median.
    speedup: f64,
    fraction_of_memcmp: Option<f64>,
    push_ratio: Option<f64>,
    bytes_per_connection_frame: Option<f64>,
}

impl Point {
    fn baseline(&self) -> &'static str {
        if self.series == Series::Connections {
            "per_connection"
        } else {
            "reference"
        }
    }
}

const CSV_HEADER: &str = "series,x,class,actors,connections,changed,frame_ms,baseline,baseline_ms,speedup,\
                          fraction_of_memcmp,push_ratio,bytes_per_connection_frame";

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v}"))
}

fn csv_row(p: &Point) -> String {
    format!(
        "{},{},{CLASS},{},{},{},{},{},{},{},{},{},{}",
        p.series.name(),
        p.x,
        p.actors,
        p.connections,
        p.changed,
        p.frame_ms,
        p.baseline(),
        p.baseline_ms,
        p.speedup,
        opt(p.fraction_of_memcmp),
        opt(p.push_ratio),
        opt(p.bytes_per_connection_frame)
    )
}

fn point_json(p: &Point) -> serde_json::Value {
    json!({
        "series": p.series.name(),
        "x": p.x,
        "actors": p.actors,
        "connections": p.connections,
        "changed": p.changed,
        "frame_ms": p.frame_ms,
        "baseline": p.baseline(),
        "baseline_ms": p.baseline_ms,
        "speedup": p.speedup,
        "fraction_of_memcmp": p.fraction_of_memcmp,
        "push_ratio": p.push_ratio,
        "bytes_per_connection_frame": p.bytes_per_connection_frame,
    })
}

/// What one run of the sweep measures, each point's workload options.
enum Job {
    Compare(Series, f64, CompareOptions),
    Replicate(ReplicateOptions),
}

fn plan(args: &SweepArgs, threads: usize, kernels: Kernels) -> Result<Vec<Job>, String> {
    let mut series = Vec::new();
    for name in &args.series {
        let s = Series::ALL
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| format!("unknown series `{name}` (actors, changed, connections)"))?;
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let q = args.quick;
    let frames = args.frames.unwrap_or(if q { 3 } else { 5 });
    let actors = args.actors.clone().unwrap_or_else(|| {
        if q {
            vec![2_000, 5_000, 10_000]
        } else {
            vec![10_000, 30_000, 100_000, 300_000, 1_000_000]
        }
    });
    let changed = args.changed.clone().unwrap_or_else(|| {
        if q {
            vec![0.01, 0.1, 1.0]
        } else {
            vec![0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
        }
    });
    let connections =
        args.connections.clone().unwrap_or_else(|| if q { vec![1, 4, 16] } else { vec![1, 10, 100, 1000] });
    let changed_actors = args.changed_actors.unwrap_or(if q { 5_000 } else { 100_000 });
    let connection_actors = args.connection_actors.unwrap_or(if q { 500 } else { 2_000 });
    let compare = |actors: usize, changed: f64| CompareOptions {
        class: CLASS.into(),
        actors,
        changed,
        threads,
        frames,
        kernels,
        seed: args.seed,
    };
    let mut jobs = Vec::new();
    for s in series {
        match s {
            Series::Actors => {
                jobs.extend(actors.iter().map(|&n| Job::Compare(s, n as f64, compare(n, 0.01))));
            }
            Series::Changed => {
                jobs.extend(changed.iter().map(|&f| Job::Compare(s, f * 100.0, compare(changed_actors, f))));
            }
            Series::Connections => jobs.extend(connections.iter().map(|&c| {
                Job::Replicate(ReplicateOptions {
                    class: CLASS.into(),
                    actors: connection_actors,
                    connections: c,
                    changed: 0.05,
                    frames,
                    mtu: 1024,
                    kernels,
                    seed: args.seed,
                })
            })),
        }
    }
    // The largest point must fit: the compare's pages and the reference's objects, twice each,
    // and its cold-cache buffer; the replicate's two drivers' pair states.
    let (page, _) = crate::actor_bytes(CLASS)?;
    for job in &jobs {
        match job {
            Job::Compare(_, _, o) => check_memory("this sweep's largest compare", compare_bytes(CLASS, o.actors)?)?,
            Job::Replicate(o) => check_memory(
                "this sweep's largest replicate",
                o.actors as f64 * (3.0 * page + 2.0 * 16.0 * o.connections as f64) * 1.25,
            )?,
        }
    }
    Ok(jobs)
}

fn label(job: &Job) -> String {
    match job {
        Job::Compare(Series::Actors, _, o) => format!("actors: {} at 1 % changed", o.actors),
        Job::Compare(_, _, o) => format!("changed: {:.1} % of {}", o.changed * 100.0, o.actors),
        Job::Replicate(o) => format!("connections: {} × {} actors", o.connections, o.actors),
    }
}

fn measure(job: &Job, progress: &mut dyn FnMut(&str)) -> Result<Point, String> {
    Ok(match job {
        Job::Compare(series, x, o) => {
            let r = run_compare(o, progress, &mut NoProbe)?;
            Point {
                series: *series,
                x: *x,
                actors: o.actors,
                connections: 0,
                changed: o.changed,
                frame_ms: r.kernel_ns as f64 / 1e6,
                baseline_ms: r.reference_ns as f64 / 1e6,
                speedup: r.speedup_vs_reference,
                fraction_of_memcmp: Some(r.fraction_of_memcmp),
                push_ratio: Some(r.push_ratio),
                bytes_per_connection_frame: None,
            }
        }
        Job::Replicate(o) => {
            let r = run_replicate(o, progress, &mut NoProbe)?;
            Point {
                series: Series::Connections,
                x: o.connections as f64,
                actors: o.actors,
                connections: o.connections,
                changed: o.changed,
                frame_ms: r.frame_ms,
                baseline_ms: r.frame_ms_unshared,
                speedup: r.sharing_speedup,
                fraction_of_memcmp: None,
                push_ratio: None,
                bytes_per_connection_frame: Some(r.bytes_per_connection_frame),
            }
        }
    })
}

/// Runs the sweep.
pub fn sweep(args: &SweepArgs, json: bool, terminal: bool, session: &mut Session) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.unwrap_or(cores);
    let kernels = kernels("best")?;
    let jobs = plan(args, threads, kernels)?;
    if !cfg!(feature = "plots") && args.plot.is_some() {
        return Err("--plot: this shadowrep was built without plots (the `plots` feature, on by default)".into());
    }
    // Every output is opened before anything runs, so a bad path is refused at once.
    let out = args.out.as_ref().map(|d| (d.join("sweep.csv"), d.join("sweep.json"), d.join("sweep.svg")));
    let csv_paths: Vec<PathBuf> = args.csv.iter().cloned().chain(out.as_ref().map(|o| o.0.clone())).collect();
    let plot_paths: Vec<PathBuf> = args
        .plot
        .iter()
        .cloned()
        .chain(out.as_ref().filter(|_| cfg!(feature = "plots")).map(|o| o.2.clone()))
        .collect();
    let json_path = out.as_ref().map(|o| o.1.clone());
    for p in csv_paths.iter().chain(&plot_paths).chain(&json_path) {
        check_writable(p, true)?;
    }
    crate::build_pool(threads)?;

    let bar = Bar::new(jobs.len(), terminal && !json);
    let mut points = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let what = label(job);
        bar.start(&what);
        let p = measure(job, &mut |msg: &str| bar.detail(&what, msg))?;
        bar.done();
        points.push(p);
    }
    bar.finish();

    let csv: String =
        std::iter::once(CSV_HEADER.to_string()).chain(points.iter().map(csv_row)).collect::<Vec<_>>().join("\n") + "\n";
    for p in &csv_paths {
        std::fs::write(p, &csv).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    for p in &plot_paths {
        plot(&points, p)?;
    }
    let doc = json!({
        "command": "sweep",
        "class": CLASS,
        "isa": kernels.isa.name(),
        "threads": threads,
        "frames": args.frames.unwrap_or(if args.quick { 3 } else { 5 }),
        "times": "per-frame medians of each point's timed frames",
        "baselines": {
            "reference": crate::REFERENCE_COMPARE,
            "per_connection": "a driver that encodes every connection's packets itself (the shared one encodes each change once)",
        },
        "points": points.iter().map(point_json).collect::<Vec<_>>(),
        "csv": csv_paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "plots": plot_paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    if let Some(p) = &json_path {
        std::fs::write(p, format!("{doc}\n")).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    if json {
        return session.emit(doc);
    }
    println!(
        "sweep: {CLASS}, {threads} thread(s), ISA {}; times are per-frame medians; baseline = the UE-style reference \
         (compare) or per-connection encoding (replicate)",
        kernels.isa.name()
    );
    for s in Series::ALL {
        let rows: Vec<&Point> = points.iter().filter(|p| p.series == s).collect();
        if rows.is_empty() {
            continue;
        }
        println!("  {}", s.axis());
        for p in rows {
            let extra = match (p.fraction_of_memcmp, p.bytes_per_connection_frame) {
                (Some(f), _) => format!("at {f:.2}× memcmp's speed"),
                (_, Some(b)) => format!("{b:.0} B per connection and frame"),
                _ => String::new(),
            };
            println!(
                "    {:>10}  kernel {:>9.3} ms  {} {:>9.3} ms  ×{:<6.1} {extra}",
                format!("{}", p.x),
                p.frame_ms,
                p.baseline(),
                p.baseline_ms,
                p.speedup
            );
        }
    }
    for p in csv_paths.iter().chain(&plot_paths).chain(&json_path) {
        println!("  written: {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_outside_zero_to_one_are_refused() {
        assert!(rate("0").is_err());
        assert!(rate("1.5").is_err());
        assert!(rate("-0.1").is_err());
        assert!(rate("x").is_err());
        assert_eq!(rate("1"), Ok(1.0));
        assert_eq!(rate("0.001"), Ok(0.001));
    }

    #[test]
    fn a_csv_row_has_a_field_per_header_column() {
        let p = Point {
            series: Series::Connections,
            x: 10.0,
            actors: 500,
            connections: 10,
            changed: 0.05,
            frame_ms: 1.5,
            baseline_ms: 3.0,
            speedup: 2.0,
            fraction_of_memcmp: None,
            push_ratio: None,
            bytes_per_connection_frame: Some(120.0),
        };
        let row = csv_row(&p);
        assert_eq!(row.split(',').count(), CSV_HEADER.split(',').count());
        assert!(row.starts_with("connections,10,ShooterCharacter,500,10,0.05,1.5,per_connection,3,2,,,120"), "{row}");
    }
}
