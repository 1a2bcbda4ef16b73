//! The replicate workload: one store, many connections, server frames timed end to end.
//!
//! Two drivers watch the same store — one with shared serialization, one encoding per
//! connection — and tick the same frames, so their times compare side by side. Clients are not
//! simulated: each connection acknowledges every packet of a frame with one feedback (built from
//! the newest packet's sequence number), which keeps in-flight records bounded as a healthy link
//! would.
//! A frame is timed from compare to the last packet; acks are not part of it.

use crate::phase::{within, ExtraFrames, Phase, PhaseProbe};
use crate::workload::{median, CompareWorkload};
use shadowrep::compare::{CompareConfig, Kernels, PushMode};
use shadowrep::net::{ConnectionId, DriverConfig, NetDriver, TickStats};
use shadowrep::wire::feedback::ack_everything;
use std::time::Instant;

/// What `shadowrep replicate` measures.
#[derive(Clone, Debug)]
pub struct ReplicateOptions {
    /// Class name.
    pub class: String,
    /// Actors.
    pub actors: usize,
    /// Connections.
    pub connections: usize,
    /// Fraction of actors changed per frame.
    pub changed: f64,
    /// Timed frames.
    pub frames: usize,
    /// Packet size limit.
    pub mtu: usize,
    /// Diff routines.
    pub kernels: Kernels,
    /// RNG seed.
    pub seed: u64,
}

/// Medians of one run.
#[derive(Clone, Debug)]
pub struct ReplicateReport {
    /// Server frame with shared serialization, ms.
    pub frame_ms: f64,
    /// The same frames encoded per connection, ms.
    pub frame_ms_unshared: f64,
    /// A frame where nothing changed (shared driver), ms.
    pub idle_frame_ms: f64,
    /// Median over frames of unshared / shared, timed in the same frame.
    pub sharing_speedup: f64,
    /// Bytes each connection receives per frame (mean over the timed frames).
    pub bytes_per_connection_frame: f64,
    /// Packets each connection receives per frame.
    pub packets_per_connection_frame: f64,
    /// Bytes of send state per (connection, actor).
    pub bytes_per_pair_state: usize,
    /// Actors changed per frame (last timed frame).
    pub changed_actors: usize,
    /// Bytes each connection received per idle frame (mean): what is left to send once nothing
    /// changes — keep-alives, nothing of a backlog (drained before the idle frames are timed).
    pub idle_bytes_per_connection_frame: f64,
    /// Of the timed frames' (connection, frame) pairs, those in which the connection's packet
    /// window filled (256 packets past its last acknowledgement, about 256 × MTU bytes): what did
    /// not fit was left to later frames, so such a frame measures a capped send, not the whole
    /// change. 0 in a run whose changes fit.
    pub capped_connection_frames: u64,
}

/// Acknowledges every packet a driver produced for each connection this frame, with one
/// feedback per connection; returns bytes and packets.
pub fn drain_and_ack(driver: &mut NetDriver, conns: &[ConnectionId]) -> Result<(usize, usize), String> {
    let (mut bytes, mut packets) = (0, 0);
    for &c in conns {
        let mut newest = None;
        for p in driver.packets(c).map_err(|e| e.to_string())? {
            bytes += p.len();
            packets += 1;
            newest = Some(p);
        }
        if let Some(feedback) = newest.map(ack_everything).transpose().map_err(|e| e.to_string())? {
            driver.receive_feedback(c, &feedback).map_err(|e| e.to_string())?;
        }
    }
    Ok((bytes, packets))
}

/// Runs the replicate measurement; `probe` is told when the shared driver's frame
/// ([`Phase::Kernel`]) and the per-connection driver's ([`Phase::Reference`]) start and end, and
/// may ask for extra frames after the timed ones (untimed, unreported).
pub fn run_replicate(
    opts: &ReplicateOptions,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<ReplicateReport, String> {
    progress(&format!("spawning {} {} actors", opts.actors, opts.class));
    let mut w = CompareWorkload::new(&opts.class, opts.actors, opts.seed, false)?;
    let compare = CompareConfig { push: PushMode::Declared, kernels: opts.kernels, ..CompareConfig::default() };
    let cfg = DriverConfig { mtu: opts.mtu, compare, ..DriverConfig::default() };
    let mut shared = NetDriver::new(cfg).map_err(|e| e.to_string())?;
    let mut unshared =
        NetDriver::new(DriverConfig { shared_serialization: false, ..cfg }).map_err(|e| e.to_string())?;
    shared.register_class(&mut w.store).map_err(|e| e.to_string())?;
    unshared.register_class(&mut w.store).map_err(|e| e.to_string())?;
    let conns: Vec<ConnectionId> = (0..opts.connections).map(|_| shared.add_connection(false)).collect();
    for _ in 0..opts.connections {
        unshared.add_connection(false);
    }
    // Initial replication: every actor opens on every connection (a connection sends at most
    // 256 packets past its last acknowledgement, so a large world takes several frames); then
    // frames until nothing is left over, so the timed frames carry only their own changes.
    for frame in 0..3 {
        progress(&format!("initial replication, frame {}", frame + 1));
        w.mutate(opts.changed, true);
        shared.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        unshared.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        drain_and_ack(&mut shared, &conns)?;
        drain_and_ack(&mut unshared, &conns)?;
    }
    drain_backlog(&mut w, [&mut shared, &mut unshared], &conns, "the initial backlog", progress)?;
    let capped_before = window_full_frames(&shared, &conns);
    let (mut t_shared, mut t_unshared, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut bytes, mut packets, mut changed_actors) = (0usize, 0usize, 0usize);
    for frame in 0..opts.frames {
        progress(&format!("frame {}/{} at {:.1} % changed", frame + 1, opts.frames, opts.changed * 100.0));
        w.mutate(opts.changed, true);
        // The driver that ticks first finds the frame's writes cold in the cache and warms them
        // for the other: the order alternates, so neither side always pays for it.
        let ((a, stats), (b, _)) = if frame % 2 == 0 {
            let s = timed_tick(&mut shared, &mut w, probe, Phase::Kernel)?;
            (s, timed_tick(&mut unshared, &mut w, probe, Phase::Reference)?)
        } else {
            let u = timed_tick(&mut unshared, &mut w, probe, Phase::Reference)?;
            (timed_tick(&mut shared, &mut w, probe, Phase::Kernel)?, u)
        };
        let (by, pk) = drain_and_ack(&mut shared, &conns)?;
        let (by_u, _) = drain_and_ack(&mut unshared, &conns)?;
        // Same records either way; packet boundaries may fall a record apart (the shared path
        // knows a whole bunch's size, the other path checks record by record).
        if by.abs_diff(by_u) > by / 100 + 64 {
            return Err(format!("shared and per-connection encodings differ in size: {by} vs {by_u} bytes"));
        }
        bytes += by;
        packets += pk;
        changed_actors = stats.changed_actors;
        t_shared.push(a);
        t_unshared.push(b);
        ratios.push(b / a.max(1e-9));
    }
    let capped_connection_frames = window_full_frames(&shared, &conns) - capped_before;
    // What capped frames left over goes first: an idle frame sends nothing.
    drain_backlog(&mut w, [&mut shared, &mut unshared], &conns, "what the timed frames left over", progress)?;
    let (mut idle, mut idle_bytes) = (Vec::new(), 0usize);
    for frame in 0..opts.frames {
        progress(&format!("idle frame {}/{}", frame + 1, opts.frames));
        let t = Instant::now();
        shared.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        idle.push(t.elapsed().as_secs_f64() * 1e3);
        unshared.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        idle_bytes += drain_and_ack(&mut shared, &conns)?.0;
        drain_and_ack(&mut unshared, &conns)?;
    }
    // A profiler that wants more of its phase gets extra changing frames (untimed).
    let mut extra = ExtraFrames::new();
    while extra.another(probe) {
        if extra.frames() % 20 == 1 {
            progress(&format!("profiling: extra frame {}", extra.frames()));
        }
        w.mutate(opts.changed, true);
        // Only the driver the probe watches ticks (the other one is not used again).
        if probe.watches(Phase::Kernel) {
            within(probe, Phase::Kernel, || shared.tick(&mut [&mut w.store])).map_err(|e| e.to_string())?;
            drain_and_ack(&mut shared, &conns)?;
        }
        if probe.watches(Phase::Reference) {
            within(probe, Phase::Reference, || unshared.tick(&mut [&mut w.store])).map_err(|e| e.to_string())?;
            drain_and_ack(&mut unshared, &conns)?;
        }
    }
    let per = (opts.connections * opts.frames).max(1) as f64;
    Ok(ReplicateReport {
        frame_ms: median(t_shared),
        frame_ms_unshared: median(t_unshared),
        idle_frame_ms: median(idle),
        sharing_speedup: median(ratios),
        bytes_per_connection_frame: bytes as f64 / per,
        packets_per_connection_frame: packets as f64 / per,
        bytes_per_pair_state: NetDriver::pair_state_bytes(),
        changed_actors,
        capped_connection_frames,
        idle_bytes_per_connection_frame: idle_bytes as f64 / per,
    })
}

/// Frames, summed over `conns`, in which a connection of `driver` found its packet window full.
fn window_full_frames(driver: &NetDriver, conns: &[ConnectionId]) -> u64 {
    conns.iter().map(|&c| driver.connection_stats(c).map_or(0, |s| s.window_full_frames)).sum()
}

/// Frames with no new change until no connection of either driver finds its window full: what
/// earlier frames could not send (`what`) has gone.
fn drain_backlog(
    w: &mut CompareWorkload,
    drivers: [&mut NetDriver; 2],
    conns: &[ConnectionId],
    what: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let [a, b] = drivers;
    for frame in 0.. {
        let before = (window_full_frames(a, conns), window_full_frames(b, conns));
        progress(&format!("draining {what}, frame {}", frame + 1));
        a.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        b.tick(&mut [&mut w.store]).map_err(|e| e.to_string())?;
        drain_and_ack(a, conns)?;
        drain_and_ack(b, conns)?;
        if (window_full_frames(a, conns), window_full_frames(b, conns)) == before {
            return Ok(());
        }
        if frame > 10_000 {
            return Err(format!("{what} never drained"));
        }
    }
    Ok(())
}

/// One tick of `driver` inside `phase`, timed: (milliseconds, its statistics).
fn timed_tick(
    driver: &mut NetDriver,
    w: &mut CompareWorkload,
    probe: &mut dyn PhaseProbe,
    phase: Phase,
) -> Result<(f64, TickStats), String> {
    let t = Instant::now();
    let stats = within(probe, phase, || driver.tick(&mut [&mut w.store])).map_err(|e| e.to_string())?;
    Ok((t.elapsed().as_secs_f64() * 1e3, stats))
}
