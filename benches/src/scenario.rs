//! Seeded server worlds at their tick rate, run through the actor level (UE's
//! `ServerReplicateActors`): the `battle_royale` and `mmo` profiles of `shadowrep run`.
//!
//! ```text
//! World (world.rs)              the game: stores + simulation, one seed     no replication
//!   │ FrameEvents               joins, shots, despawns, changed pickups
//!   ▼
//! ScenarioServer                prepare (game-side calls: owners, viewers,   untimed
//!   (kernel.rs: KernelServer)     ForceNetUpdate)
//!                               tick  → TickStats                            frame_ms
//!                               feedback (every packet acknowledged)         stages.feedback
//! run()                         level load (untimed, no connections) → join
//!                               → warm-up frame → timed frames
//! ```
//!
//! The input of a frame (the world's step and its events) is made apart from any server, so a
//! second server implementation (the UE-style reference frame, later) can implement
//! [`ScenarioServer`] and be ticked on the same frames: [`run_frame`] runs one frame of one
//! server and returns its record.
//!
//! The profiles' classes, net settings and sizes are in `profile.rs`; a run's medians and
//! percentiles in `summary.rs`.
//!
//! # The profiles
//! - **battle_royale**: 100 connections, ~50 000 actors on a square map 400 000 units (4 km)
//!   wide, 30 Hz, 100 000 B/s per connection, UE's default cull distance (15 000). Each player
//!   views from its own `ShooterCharacter` (owned by its connection, autonomous proxy). About
//!   2 000 projectiles are in the air (1–2 s each, spawned and despawned continuously, instigated
//!   by the shooter); the rest are pickups (60 %) and loot containers at rest, 0.5 % of them
//!   changing per second. Hot drop: 80 % of the players start in a disc of radius 15 000
//!   (300 m across) and fight there for 3 s (the projectiles in the air build up over the first
//!   1–2 s), then fly out of it (gliding, driving) at 2 000–5 000 units/s for 3–8 s, then run (600, or 900
//!   sprinting) and turn like everyone else.
//! - **mmo**: 1 000 connections and 1 000 000 actors (the same mix: 4 % projectiles, the rest
//!   static but the characters) on a map √20 ≈ 4.47× wider, so the actor density around a viewer
//!   is battle_royale's. No hot drop: players start anywhere.
//! - **open_world**: 100 connections and 10 000 awake actors (the characters, ~2 000
//!   projectiles, pickups and loot containers as in battle_royale) on battle_royale's map, plus
//!   990 000 dormant ones (99 % of the world): 90 % of them placed in the level (static
//!   actors with `Initial` dormancy — props, closed doors: every client loads them, they never
//!   open), 10 % idle loot (dynamic, `DormantAll`: a client gets each once when it first comes
//!   near, then holds it dormant). No hot drop. `--dormant-fraction F` sets the dormant share
//!   (0: the awake actors alone).
//!
//! # Net settings (per class, as UE games set them)
//! | class | NetUpdateFrequency | NetPriority | why |
//! |---|---|---|---|
//! | ShooterCharacter | 100 (every frame) | 3 | `APawn`'s defaults |
//! | Projectile | 100 (every frame) | 1 | fast movers; the shooter's own get T × 4 (instigated by its view target) |
//! | Pickup | 2 | 1 | at rest; a change is pushed at once with ForceNetUpdate |
//! | LootContainer | 5 | 1 | at rest, interacted with more than pickups; ForceNetUpdate too |
//! | ShooterWeapon | its character's | its character's | a sub-object of the character: relevant where it is; its burst counter changes with every shot, its ammo (owner only) too |
//!
//! Every class keeps UE's default cull distance (15 000) and `MinNetUpdateFrequency` 2 (1 for
//! the static classes; it matters only with adaptive frequency, off as in UE 5). None is a
//! startup actor: floor loot is spawned at match start, so its channels close when out of range.
//!
//! # Level load
//! Static actors spawn over the first `ceil(tick rate / 2)` frames (a pickup's period), before any
//! player joins, with the server ticking: their consider clocks are spread over the frames of a
//! period as on a server that has been up for a while, instead of all falling due on the same
//! frame. Those frames have no connections and are not timed.

mod kernel;
mod profile;
mod summary;
mod world;

pub use kernel::{apply_events, scenario_driver, KernelServer};
pub use profile::{DormantActors, HotDrop, Kind, Profile, ScenarioConfig};
pub use summary::{peak_rss_bytes, summarize, PhaseSummary, RunSummary, StagesMs};
pub use world::{FrameEvents, World};

use crate::phase::{ExtraFrames, NoProbe, PhaseProbe};
use shadowrep::net::TickStats;
use std::io::Write;
use std::time::Instant;

/// A server the scenario drives. The kernel's is [`KernelServer`]; a UE-style reference frame
/// implements the same and is ticked on the same frames.
pub trait ScenarioServer {
    /// The game's calls into the server for what happened (owners, instigators, forced
    /// updates) and every connection's viewers; not timed.
    fn prepare(&mut self, world: &mut World, events: &FrameEvents) -> Result<(), String>;
    /// One server frame: what `frame_ms` times. `probe` is told when the kernel's tick
    /// ([`Phase::Kernel`](crate::phase::Phase::Kernel)) and a reference's frame
    /// ([`Phase::Reference`](crate::phase::Phase::Reference)) start and end.
    fn tick(&mut self, world: &mut World, probe: &mut dyn PhaseProbe) -> Result<TickStats, String>;
    /// The clients' feedback: every packet of the frame acknowledged.
    fn feedback(&mut self) -> Result<(), String>;
    /// Records (or stops recording) every connection's decisions from the next tick on.
    fn record_decisions(&mut self, on: bool) -> Result<(), String>;
    /// Writes the last frame's inputs and decisions as one JSON object (`frame`: the timed
    /// frame's number).
    fn dump(&self, world: &World, frame: usize, out: &mut dyn Write) -> Result<(), String>;
    /// Channel rows held over every connection, and their bytes.
    fn pair_state(&self) -> Result<(usize, usize), String>;
    /// With a UE-style reference ticked beside the server: its last frame's time, ns (without
    /// its relevancy audit).
    fn reference_ns(&self) -> Option<u64> {
        None
    }
    /// The reference's last relevancy audit, ns (answers UE never asks, asked for the
    /// cross-check): part of neither the reference's frame nor the server's.
    fn reference_audit_ns(&self) -> u64 {
        0
    }
}

/// One frame of one server.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameRecord {
    /// The server's tick, ns.
    pub tick_ns: u64,
    /// Applying every connection's feedback, ns.
    pub feedback_ns: u64,
    /// The server's share of the game's calls ([`ScenarioServer::prepare`]; not part of the
    /// frame), ns.
    pub prepare_ns: u64,
    /// The game's own step (not part of the frame), ns.
    pub game_ns: u64,
    /// What the tick reported.
    pub stats: TickStats,
    /// The UE-style reference's frame, ns, when one ticked beside the server (not part of
    /// `tick_ns`).
    pub reference_ns: Option<u64>,
}

/// Runs one frame of `server` on the events of a world step that already happened.
pub fn run_frame(
    server: &mut dyn ScenarioServer,
    world: &mut World,
    events: &FrameEvents,
    probe: &mut dyn PhaseProbe,
) -> Result<FrameRecord, String> {
    let t = Instant::now();
    server.prepare(world, events)?;
    let prepare_ns = t.elapsed().as_nanos() as u64;
    let t = Instant::now();
    let stats = server.tick(world, probe)?;
    let tick_ns = t.elapsed().as_nanos() as u64;
    let t = Instant::now();
    server.feedback()?;
    let feedback_ns = t.elapsed().as_nanos() as u64;
    let reference_ns = server.reference_ns();
    let tick_ns = tick_ns.saturating_sub(reference_ns.unwrap_or(0) + server.reference_audit_ns());
    Ok(FrameRecord { tick_ns, feedback_ns, prepare_ns, game_ns: 0, stats, reference_ns })
}

/// Frames run before the timed ones (with connections): the thread pool's and the caches' first
/// use. The hot drop stays in the timed frames.
pub const WARMUP_FRAMES: usize = 1;

/// A request to dump one timed frame (1-based) as JSON.
pub struct DumpRequest<'a> {
    /// The timed frame, `1..=frames`.
    pub frame: usize,
    /// Where the JSON goes.
    pub out: &'a mut dyn Write,
}

/// Loads the level (its frames have no connections), joins the players and runs the warm-up:
/// what comes before the timed frames.
pub fn start(
    world: &mut World,
    server: &mut dyn ScenarioServer,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<(), String> {
    let batches = world.config().load_frames();
    for b in 0..batches {
        progress(&format!("level load {}/{batches}", b + 1));
        let events = world.load_step(b, batches);
        run_frame(server, world, &events, probe)?;
    }
    progress("players join");
    let events = world.join();
    server.prepare(world, &events)?;
    for w in 0..WARMUP_FRAMES {
        progress(&format!("warm-up frame {}/{WARMUP_FRAMES}", w + 1));
        let events = world.step();
        run_frame(server, world, &events, probe)?;
    }
    Ok(())
}

/// [`start`]s a new world and server, then runs `frames` timed frames (dumping one if asked).
/// Returns each timed frame's record. A `probe` that wants more of its phase afterwards gets
/// extra frames (the world goes on; they are not recorded).
pub fn run(
    world: &mut World,
    server: &mut dyn ScenarioServer,
    frames: usize,
    dump: Option<DumpRequest<'_>>,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<Vec<FrameRecord>, String> {
    run_beside(world, server, frames, dump, progress, probe, None)
}

/// A second world and its server, run frame by frame beside a timed run: a ratio between the
/// two runs then compares frames of the same moments of a shared machine, which a second pass
/// afterwards does not (a noisy host moved such a ratio by a third from run to run).
pub struct Companion<'c> {
    /// The second world (its own seed and config).
    pub world: &'c mut World,
    /// Its server.
    pub server: &'c mut dyn ScenarioServer,
    /// Its timed frames' records, filled by [`run_beside`].
    pub records: Vec<FrameRecord>,
}

/// [`run`], with a [`Companion`] (not probed) started after the world and stepped beside each
/// timed frame, first on odd frames and second on even ones, so neither side always runs in
/// the other's wake.
pub fn run_beside(
    world: &mut World,
    server: &mut dyn ScenarioServer,
    frames: usize,
    mut dump: Option<DumpRequest<'_>>,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
    mut companion: Option<&mut Companion<'_>>,
) -> Result<Vec<FrameRecord>, String> {
    start(world, server, progress, probe)?;
    if let Some(c) = companion.as_deref_mut() {
        progress("the companion world");
        start(c.world, c.server, progress, &mut NoProbe)?;
        c.records = Vec::with_capacity(frames);
    }
    let companion_frame = |c: &mut Companion<'_>| -> Result<(), String> {
        let events = c.world.step();
        let r = run_frame(c.server, c.world, &events, &mut NoProbe)?;
        c.records.push(r);
        Ok(())
    };
    let mut records = Vec::with_capacity(frames);
    for f in 1..=frames {
        progress(&format!("frame {f}/{frames}"));
        if let Some(c) = companion.as_deref_mut().filter(|_| f % 2 == 1) {
            companion_frame(c)?;
        }
        let t = Instant::now();
        let events = world.step();
        let step_ns = t.elapsed().as_nanos() as u64;
        let dumping = dump.as_ref().is_some_and(|d| d.frame == f);
        if dumping {
            server.record_decisions(true)?;
        }
        let mut r = run_frame(server, world, &events, probe)?;
        r.game_ns = step_ns;
        if let (true, Some(d)) = (dumping, dump.as_mut()) {
            progress(&format!("writing frame {f}"));
            server.dump(world, f, d.out)?;
            server.record_decisions(false)?;
        }
        records.push(r);
        if let Some(c) = companion.as_deref_mut().filter(|_| f % 2 == 0) {
            companion_frame(c)?;
        }
    }
    let mut extra = ExtraFrames::new();
    while extra.another(probe) {
        progress(&format!("profiling: extra frame {}", extra.frames()));
        let events = world.step();
        run_frame(server, world, &events, probe)?;
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::summary::phase;
    use super::*;
    use crate::phase::NoProbe;
    use shadowrep::net::NetGuid;

    /// battle_royale at a tenth of its size (10 players, 5000 actors, the same density), with a
    /// shorter fight and dispersal so the test sees both.
    fn small() -> ScenarioConfig {
        let mut cfg = Profile::BattleRoyale.config(7).scaled(0.1);
        cfg.hot_drop = cfg.hot_drop.map(|h| HotDrop { fight_seconds: 2.0, spread_seconds: (3.0, 5.0), ..h });
        cfg
    }

    fn run_small(cfg: &ScenarioConfig, frames: usize, dump: Option<DumpRequest<'_>>) -> (World, Vec<FrameRecord>) {
        let mut world = World::new(cfg);
        let mut server = KernelServer::new(&mut world, true).expect("a valid driver");
        let records = run(&mut world, &mut server, frames, dump, &mut |_| {}, &mut NoProbe).expect("runs");
        (world, records)
    }

    /// What a frame did, without its timings.
    fn counts(r: &FrameRecord) -> [usize; 8] {
        let s = &r.stats;
        [
            s.changed_actors,
            s.bunches,
            s.packets,
            s.bytes,
            s.due_actors,
            s.relevant_pairs,
            s.sent_pairs,
            s.saturated_connections,
        ]
    }

    #[test]
    fn a_seed_gives_the_same_frames() {
        let cfg = small();
        let (_, a) = run_small(&cfg, 20, None);
        let (_, b) = run_small(&cfg, 20, None);
        assert_eq!(a.iter().map(counts).collect::<Vec<_>>(), b.iter().map(counts).collect::<Vec<_>>());
        let other = ScenarioConfig { seed: 8, ..cfg };
        let (_, c) = run_small(&other, 20, None);
        assert_ne!(a.iter().map(counts).collect::<Vec<_>>(), c.iter().map(counts).collect::<Vec<_>>());
        assert!(a.iter().all(|r| r.stats.bytes > 0 && r.stats.relevant_pairs > 0));
    }

    /// Running a companion world beside the timed one changes neither's frames: each is what it
    /// is alone, and the companion records every timed frame.
    #[test]
    fn a_world_run_beside_another_gives_the_same_frames_as_alone() {
        let (cfg, other) = (small(), ScenarioConfig { seed: 9, ..small() });
        let (_, alone) = run_small(&cfg, 12, None);
        let (_, other_alone) = run_small(&other, 12, None);
        let mut world = World::new(&cfg);
        let mut server = KernelServer::new(&mut world, true).expect("a valid driver");
        let mut other_world = World::new(&other);
        let mut other_server = KernelServer::new(&mut other_world, true).expect("a valid driver");
        let mut companion = Companion { world: &mut other_world, server: &mut other_server, records: Vec::new() };
        let records = run_beside(&mut world, &mut server, 12, None, &mut |_| {}, &mut NoProbe, Some(&mut companion))
            .expect("runs");
        let counts_of = |r: &[FrameRecord]| r.iter().map(counts).collect::<Vec<_>>();
        assert_eq!(counts_of(&records), counts_of(&alone));
        assert_eq!(counts_of(&companion.records), counts_of(&other_alone));
        assert_ne!(counts_of(&alone), counts_of(&other_alone), "the two worlds differ");
    }

    /// `--calls`: the server's calls (a muzzle effect per shot, a reload when a clip runs dry)
    /// reach the connections where the shooter's channel is open, and the UE-style reference,
    /// ticked on the same frames, makes the same decisions and writes the same calls.
    #[test]
    fn a_world_with_calls_writes_them_as_the_reference_does() {
        let cfg = ScenarioConfig { calls: true, ..small() };
        let mut world = World::new(&cfg);
        let mut server = KernelServer::with_reference(&mut world, true).expect("a valid driver");
        let records = run(&mut world, &mut server, 45, None, &mut |_| {}, &mut NoProbe).expect("runs");
        let [written, dropped, elsewhere, _] = server.calls_written().expect("live connections");
        assert!(
            // (A world this small saturates no connection: nothing is dropped.)
            written > 100 && elsewhere > 0,
            "{written} written, {dropped} dropped, {elsewhere} not here"
        );
        let (_, mismatch) = server.reference_report().expect("a reference ran");
        assert_eq!(mismatch, None);
        // The calls' bytes come on top where a connection's budget has room: the same world
        // without them sends no more.
        let (_, quiet) = run_small(&small(), 45, None);
        let bytes = |r: &[FrameRecord]| r.iter().map(|r| r.stats.bytes).sum::<usize>();
        assert!(bytes(&records) >= bytes(&quiet), "calls add bytes: {} against {}", bytes(&records), bytes(&quiet));
    }

    #[test]
    fn the_hot_drop_makes_players_see_each_other_then_they_spread_out() {
        let cfg = small();
        let mut world = World::new(&cfg);
        let mut server = KernelServer::new(&mut world, true).expect("a valid driver");
        start(&mut world, &mut server, &mut |_| {}, &mut NoProbe).expect("starts");
        server.record_decisions(true).expect("the actor level is on");
        let characters: std::collections::HashSet<NetGuid> = server.characters().iter().copied().collect();
        // Per frame: the frame's record, and (connection, another player's character) pairs
        // relevant, from the recorded decisions.
        let mut frames = Vec::new();
        for _ in 0..270 {
            let events = world.step();
            let r = run_frame(&mut server, &mut world, &events, &mut NoProbe).expect("runs");
            let mut seen = 0;
            for (&conn, own) in server.connections().iter().zip(server.characters()) {
                let d = server.driver().decisions(conn).expect("live").expect("recorded");
                seen += d.relevant.iter().filter(|g| *g != own && characters.contains(g)).count();
            }
            frames.push((r, seen));
        }
        let second = cfg.tick_rate as usize;
        let mean_seen = |f: &[(FrameRecord, usize)]| f.iter().map(|x| x.1).sum::<usize>() as f64 / f.len() as f64;
        let records = |f: &[(FrameRecord, usize)]| f.iter().map(|x| x.0).collect::<Vec<_>>();
        // The drop's fight (its second second: the projectiles in the air have built up) against
        // the last second.
        let (drop, late) = (&frames[second..2 * second], &frames[frames.len() - second..]);
        let players = cfg.connections as f64;
        assert!(mean_seen(drop) > 1.5 * players, "{} players in sight in the drop", mean_seen(drop));
        assert!(
            mean_seen(drop) > 3.0 * mean_seen(late),
            "players in sight: {} in the drop, {} after",
            mean_seen(drop),
            mean_seen(late)
        );
        // Ten players are too few to saturate one another (the full profile's 80 in the drop
        // do: see the README); relevant pairs still fall as they spread.
        let (drop, late) = (phase(&records(drop), cfg.connections), phase(&records(late), cfg.connections));
        assert!(
            drop.relevant_pairs > late.relevant_pairs,
            "{} relevant pairs in the drop, {} after",
            drop.relevant_pairs,
            late.relevant_pairs
        );
    }

    #[test]
    fn a_dumped_frame_lists_every_actor_and_every_connection() {
        let cfg = Profile::BattleRoyale.config(3).scaled(0.02);
        let mut out = Vec::new();
        let (world, _) = run_small(&cfg, 3, Some(DumpRequest { frame: 2, out: &mut out }));
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        assert_eq!(v["frame"], 2);
        let actors = v["actors"].as_array().expect("actors");
        let live: usize = world.stores.iter().map(|s| s.len()).sum();
        assert_eq!(actors.len(), live);
        let guids: std::collections::HashSet<u64> =
            actors.iter().map(|a| a["guid"].as_u64().expect("a guid")).collect();
        assert_eq!(guids.len(), live, "one row per actor");
        let conns = v["connections"].as_array().expect("connections");
        assert_eq!(conns.len(), cfg.connections);
        for c in conns {
            assert_eq!(c["viewers"].as_array().map(Vec::len), Some(1));
            let sends = c["sends"].as_array().expect("decisions recorded for the dumped frame");
            assert!(!sends.is_empty());
            for s in sends {
                assert!(guids.contains(&s["guid"].as_u64().expect("a guid")) || s["action"] == "closed");
                assert!(["opened", "replicated", "closed"].contains(&s["action"].as_str().expect("an action")));
            }
            assert!(c["relevant"].as_array().is_some() && c["channels"].as_array().is_some());
        }
    }

    #[test]
    fn a_dumped_frame_tells_each_actors_sublevel_and_each_connections_loaded_sublevels() {
        use shadowrep::net::SublevelId;
        let cfg = Profile::BattleRoyale.config(3).scaled(0.02);
        let mut world = World::new(&cfg);
        let mut server = KernelServer::new(&mut world, true).expect("a valid driver");
        run(&mut world, &mut server, 1, None, &mut |_| {}, &mut NoProbe).expect("runs");
        let (kind, hall) = (Kind::Pickup, SublevelId(7));
        // A pickup placed in the hall (an actor's sublevel is set before it first replicates).
        let class = server.class(kind);
        let store = &mut world.stores[kind.index()];
        let id = store.spawn();
        let guid = server.driver_mut().assign_guid(class, store, id).expect("live");
        server.driver_mut().set_sublevel(class, store, id, hall).expect("not replicated yet");
        let conn = server.connections()[1];
        server.driver_mut().set_sublevel_loaded(conn, hall, true).expect("live");
        let mut out = Vec::new();
        server.dump(&world, 1, &mut out).expect("written");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        for a in v["actors"].as_array().expect("actors") {
            let want = if a["guid"] == guid.0 { 7 } else { 0 };
            assert_eq!(a["sublevel"], want, "{a}");
        }
        for c in v["connections"].as_array().expect("connections") {
            let want: &[u64] = if c["connection"] == conn.0 { &[7] } else { &[] };
            assert_eq!(c["loaded_sublevels"], serde_json::json!(want), "connection {}", c["connection"]);
        }
    }
}
