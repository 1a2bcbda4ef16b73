//! Your own class through the command's measurements: a `Vehicle` declared as a game would
//! declare it, registered with the workloads, then `run_compare` (kernel against the UE-style
//! reference and `memcmp`) and `run_replicate` (shared against per-connection serialization) —
//! the numbers `shadowrep compare` and `shadowrep replicate` print for the sample classes.
//!
//! ```text
//! cargo run --release -p shadowrep-benches --example custom_class -- \
//!     [--actors N] [--changed F] [--connections C] [--frames K] [--threads T] \
//!     [--hot Position,Heading,Fuel] [--occasional Health,Ammo]
//! ```
//!
//! Copy it and put your class in: `register_class` names what each change writes (here the
//! vehicle moves, turns and burns fuel; one change in ten also costs health or ammo).

use shadowrep::compare::Kernels;
use shadowrep_benches::phase::NoProbe;
use shadowrep_benches::replicate::{run_replicate, ReplicateOptions, ReplicateReport};
use shadowrep_benches::workload::{flag_pairs, flag_value, register_class, run_compare, CompareOptions, CompareReport};
use shadowrep_layouts::classes::Actor;
use shadowrep_layouts::prelude::*;

replicated_class! {
    /// A vehicle: driven, fuelled, shot at.
    pub class Vehicle extends Actor {
        position: NetQuantize100 = "Position",
        heading: Rotator = "Heading",
        health: u8 = "Health" [push],
        fuel: f32 = "Fuel",
        ammo: Vec<u16> = "Ammo",
        driver: ObjectRef = "Driver",
    }
}

/// What to measure (the flags).
pub struct Run {
    pub actors: usize,
    pub changed: f64,
    pub connections: usize,
    pub frames: usize,
    pub threads: usize,
    /// What every change writes, and one in ten also (wire names, comma separated).
    pub hot: String,
    pub occasional: String,
}

#[allow(dead_code)] // (A test runs `measure` alone.)
fn main() -> Result<(), String> {
    let mut run = Run {
        actors: 100_000,
        changed: 0.01,
        connections: 16,
        frames: 5,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        hot: "Position,Heading,Fuel".into(),
        occasional: "Health,Ammo".into(),
    };
    for (flag, value) in flag_pairs()? {
        match flag.as_str() {
            "--actors" => run.actors = flag_value(&flag, &value)?,
            "--changed" => run.changed = flag_value(&flag, &value)?,
            "--connections" => run.connections = flag_value::<usize>(&flag, &value)?.max(1),
            "--frames" => run.frames = flag_value::<usize>(&flag, &value)?.max(1),
            "--threads" => run.threads = flag_value::<usize>(&flag, &value)?.max(1),
            "--hot" => run.hot = value,
            "--occasional" => run.occasional = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    measure(&run).map(drop)
}

/// Registers `Vehicle` with `run`'s changes, measures it and prints the figures.
pub fn measure(run: &Run) -> Result<(CompareReport, ReplicateReport), String> {
    let Run { actors, changed, connections, frames, threads, .. } = *run;
    let layout = Vehicle::try_layout().map_err(|e| e.to_string())?.clone();
    println!(
        "Vehicle: {} parents, {} leaves, {:.1} bytes of fixed live state an actor (arrays beside)",
        layout.parents.len(),
        layout.leaves.len(),
        layout.page_bytes as f64 / shadowrep::schema::PAGE_LANES as f64
    );
    let names =
        |list: &'_ str| -> Vec<String> { list.split(',').filter(|n| !n.is_empty()).map(String::from).collect() };
    let (hot, occasional) = (names(&run.hot), names(&run.occasional));
    let (hot, occasional): (Vec<&str>, Vec<&str>) =
        (hot.iter().map(String::as_str).collect(), occasional.iter().map(String::as_str).collect());
    register_class(layout, &hot, &occasional)?;

    let opts =
        CompareOptions { class: "Vehicle".into(), actors, changed, threads, frames, kernels: Kernels::best(), seed: 1 };
    let compared = run_compare(&opts, &mut |_| {}, &mut NoProbe)?;
    let r = &compared;
    println!(
        "compare, {actors} vehicles at {:.2} % changed, {threads} thread(s), {}: kernel {:.3} ms, reference {:.3} ms \
         (×{:.1}), {:.2} of a memcmp of the same bytes; push 1 % / full {:.3} (per-frame medians of {frames})",
        changed * 100.0,
        r.isa.name(),
        r.kernel_ns as f64 / 1e6,
        r.reference_ns as f64 / 1e6,
        r.speedup_vs_reference,
        r.fraction_of_memcmp,
        r.push_ratio,
    );

    let opts = ReplicateOptions {
        class: "Vehicle".into(),
        actors,
        connections,
        changed,
        frames,
        mtu: 1024,
        kernels: Kernels::best(),
        seed: 1,
    };
    let replicated = run_replicate(&opts, &mut |_| {}, &mut NoProbe)?;
    let r = &replicated;
    println!(
        "replicate to {connections} connections: shared {:.3} ms, per connection {:.3} ms (×{:.2}), idle {:.3} ms; \
         {:.0} bytes in {:.1} packets a connection and frame",
        r.frame_ms,
        r.frame_ms_unshared,
        r.sharing_speedup,
        r.idle_frame_ms,
        r.bytes_per_connection_frame,
        r.packets_per_connection_frame,
    );
    if r.capped_connection_frames > 0 {
        println!(
            "  capped: {} connection frames filled their packet window; raise the MTU or lower --changed",
            r.capped_connection_frames
        );
    }
    Ok((compared, replicated))
}
