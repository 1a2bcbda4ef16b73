//! `shadowrep replicate`: whole server frames for many connections, with shared serialization
//! (each changed property encoded once per frame) and without (every connection's packets
//! encoded by themselves, as UE does), and an idle frame.

use crate::{actor_bytes, check_memory, kernels, positive, Session};
use clap::Args;
use serde_json::json;
use shadowrep_benches::replicate::{run_replicate, ReplicateOptions};

#[derive(Args, Clone)]
pub(crate) struct ReplicateArgs {
    /// Class to instantiate: Actor, ShooterCharacter, LootContainer, ExampleActor, Projectile, ShooterWeapon, Pickup,
    /// Counter (a class of your own: `cargo run --release -p shadowrep-benches --example custom_class`).
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

pub(crate) fn replicate(
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
            "idle_bytes_per_connection_frame": r.idle_bytes_per_connection_frame,
            "bytes_per_connection_frame": r.bytes_per_connection_frame,
            "packets_per_connection_frame": r.packets_per_connection_frame,
            "bytes_per_pair_state": r.bytes_per_pair_state,
            "changed_actors": r.changed_actors,
            "capped_connection_frames": r.capped_connection_frames,
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
            "  idle frame                  {:>10.3} ms   {:.0}× cheaper, {:.0} bytes a connection",
            r.idle_frame_ms,
            r.frame_ms / r.idle_frame_ms.max(1e-9),
            r.idle_bytes_per_connection_frame
        );
        println!(
            "  per connection and frame    {:>10.0} bytes in {:.1} packets",
            r.bytes_per_connection_frame, r.packets_per_connection_frame
        );
        if r.capped_connection_frames > 0 {
            println!(
                "  CAPPED: in {} of {} (connection, frame) pairs the connection's packet window filled (256 packets \
                 past its last acknowledgement, about 256 × {} bytes) and the rest of the change waited for later \
                 frames: these frames measure a capped send, not the whole change (raise --mtu, or lower --changed \
                 or --actors)",
                r.capped_connection_frames,
                opts.connections * opts.frames,
                opts.mtu
            );
        }
        println!("  send state per (connection, actor): {} bytes", r.bytes_per_pair_state);
        println!("  per connection (the reference here): {REFERENCE_REPLICATE}");
    }
    Ok(())
}

/// What `replicate`'s baseline is.
const REFERENCE_REPLICATE: &str = "a second driver on the same store and changes that encodes every connection's \
    packets itself (UE's per-connection serialization); the shared driver encodes each changed property once per \
    frame for every connection";
