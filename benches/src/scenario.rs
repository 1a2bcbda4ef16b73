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
mod world;

pub use kernel::{apply_events, scenario_driver, KernelServer};
pub use world::{FrameEvents, World};

use crate::phase::{ExtraFrames, NoProbe, PhaseProbe};
use crate::workload::median;
use shadowrep::net::consider::UpdateFrequency;
use shadowrep::net::{NetSettings, TickStats};
use shadowrep::schema::ClassLayout;
use shadowrep_layouts::classes::{LootContainer, Pickup, Projectile, ShooterCharacter, ShooterWeapon};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// The classes of a scenario, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A player's `ShooterCharacter`.
    Character,
    /// A `Projectile` in the air.
    Projectile,
    /// A `Pickup` on the floor.
    Pickup,
    /// A `LootContainer`.
    Loot,
    /// A character's `ShooterWeapon` (a sub-object of the character).
    Weapon,
}

impl Kind {
    /// Every kind, in registration order.
    pub const ALL: [Kind; 5] = [Kind::Character, Kind::Projectile, Kind::Pickup, Kind::Loot, Kind::Weapon];

    /// Index in [`Kind::ALL`] (and the class id the server registers it as).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class layout.
    pub fn layout(self) -> &'static Arc<ClassLayout> {
        match self {
            Kind::Character => ShooterCharacter::layout(),
            Kind::Projectile => Projectile::layout(),
            Kind::Pickup => Pickup::layout(),
            Kind::Loot => LootContainer::layout(),
            Kind::Weapon => ShooterWeapon::layout(),
        }
    }

    /// The class name.
    pub fn class_name(self) -> &'static str {
        match self {
            Kind::Character => ShooterCharacter::CLASS_NAME,
            Kind::Projectile => Projectile::CLASS_NAME,
            Kind::Pickup => Pickup::CLASS_NAME,
            Kind::Loot => LootContainer::CLASS_NAME,
            Kind::Weapon => ShooterWeapon::CLASS_NAME,
        }
    }

    /// The class's net settings (see the module documentation for the choices).
    pub fn net_settings(self) -> NetSettings {
        let freq = |net_update_frequency, min_net_update_frequency| UpdateFrequency {
            net_update_frequency,
            min_net_update_frequency,
        };
        let ue = NetSettings::default();
        match self {
            Kind::Character => NetSettings { frequency: freq(100.0, 2.0), net_priority: 3.0, ..ue },
            Kind::Projectile => NetSettings { frequency: freq(100.0, 2.0), net_priority: 1.0, ..ue },
            Kind::Pickup => NetSettings { frequency: freq(2.0, 1.0), net_priority: 1.0, ..ue },
            Kind::Loot => NetSettings { frequency: freq(5.0, 1.0), net_priority: 1.0, ..ue },
            // A sub-object takes its character's frequency, priority and relevancy.
            Kind::Weapon => NetSettings { frequency: freq(100.0, 2.0), net_priority: 3.0, ..ue },
        }
    }
}

/// The opening hot drop: most players start close together and fly apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HotDrop {
    /// Share of the players who drop there.
    pub fraction: f64,
    /// Radius of the drop disc, units.
    pub radius: f32,
    /// Seconds the players fight in the drop (roaming in the disc) before they leave it.
    pub fight_seconds: f32,
    /// Speed range of leaving it (gliding, vehicles), units per second.
    pub spread_speed: (f32, f32),
    /// How long each keeps leaving before it roams, seconds (range).
    pub spread_seconds: (f32, f32),
}

/// A scenario's sizes and rates.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioConfig {
    /// Profile name.
    pub name: String,
    /// Connections (= players = characters).
    pub connections: usize,
    /// Actors in all (characters, projectiles in the air, static actors), about.
    pub actors: usize,
    /// Projectiles in the air, about.
    pub projectiles: usize,
    /// Share of the static actors that are pickups (the rest: loot containers).
    pub pickup_share: f64,
    /// Side of the square map, units (cm).
    pub world_size: f32,
    /// Server ticks per second.
    pub tick_rate: f64,
    /// Bytes per second per connection.
    pub net_speed: u32,
    /// The opening hot drop, if any.
    pub hot_drop: Option<HotDrop>,
    /// Share of the static actors whose state changes per second.
    pub static_change_rate: f64,
    /// Dormant actors besides the awake ones (`actors` counts the awake), if any.
    pub dormant: Option<DormantActors>,
    /// RNG seed.
    pub seed: u64,
}

/// A world's dormant actors: spawned at level load, idle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DormantActors {
    /// How many.
    pub actors: usize,
    /// Share placed in the level (static actors, `Initial` dormancy); the rest is idle loot
    /// (dynamic, `DormantAll`).
    pub static_share: f64,
}

impl ScenarioConfig {
    /// Static actors (pickups and loot containers).
    pub fn static_actors(&self) -> usize {
        self.actors.saturating_sub(self.connections + self.projectiles)
    }

    /// Frames of level load: one period of the slowest static class.
    pub fn load_frames(&self) -> usize {
        let slowest =
            Kind::ALL.iter().map(|k| k.net_settings().frequency.net_update_frequency).fold(f32::MAX, f32::min);
        (self.tick_rate / slowest as f64).ceil().max(1.0) as usize
    }

    /// The same world with dormant actors making up `fraction` of it (`0 ≤ fraction < 1`): the
    /// awake actors stay, the dormant ones are `awake × fraction / (1 − fraction)`.
    pub fn with_dormant_fraction(&self, fraction: f64) -> Result<ScenarioConfig, String> {
        if !(0.0..1.0).contains(&fraction) {
            return Err(format!("dormant fraction {fraction} is not in 0..1"));
        }
        let actors = (self.actors as f64 * fraction / (1.0 - fraction)).round() as usize;
        let static_share = self.dormant.map_or(0.9, |d| d.static_share);
        Ok(ScenarioConfig { dormant: (actors > 0).then_some(DormantActors { actors, static_share }), ..self.clone() })
    }

    /// Every actor: the awake and the dormant.
    pub fn all_actors(&self) -> usize {
        self.actors + self.dormant.map_or(0, |d| d.actors)
    }

    /// The same world with `factor` × the actors, connections and area (the same density; the
    /// hot drop's disc keeps its size), for tests of a smaller world.
    pub fn scaled(&self, factor: f64) -> ScenarioConfig {
        let n = |x: usize| ((x as f64 * factor).round() as usize).max(1);
        ScenarioConfig {
            connections: n(self.connections),
            actors: n(self.actors),
            projectiles: n(self.projectiles),
            world_size: self.world_size * factor.sqrt() as f32,
            dormant: self.dormant.map(|d| DormantActors { actors: n(d.actors), ..d }),
            ..self.clone()
        }
    }
}

/// The named profiles of `shadowrep run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// 100 players, 50k actors, a hot drop.
    BattleRoyale,
    /// 1000 players, 1M actors, 20× the area.
    Mmo,
    /// 100 players, 10k awake actors and 990k dormant ones.
    OpenWorld,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 3] = [Profile::BattleRoyale, Profile::Mmo, Profile::OpenWorld];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::BattleRoyale => "battle_royale",
            Profile::Mmo => "mmo",
            Profile::OpenWorld => "open_world",
        }
    }

    /// The profile called `name`.
    pub fn by_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Frames the UE-style reference runs on by default (it loops over every due actor for every
    /// connection: mmo's takes seconds a frame).
    pub fn default_reference_frames(self) -> usize {
        match self {
            Profile::BattleRoyale => 360,
            Profile::Mmo => 5,
            // The reference has no dormancy.
            Profile::OpenWorld => 0,
        }
    }

    /// Timed frames when none are asked for: battle_royale's hot drop and its spreading out
    /// (12 s); a 1M-actor world's first two seconds (projectiles in the air reach their
    /// number in the second).
    pub fn default_frames(self) -> usize {
        match self {
            Profile::BattleRoyale => 360,
            Profile::Mmo => 60,
            Profile::OpenWorld => 300,
        }
    }

    /// The profile's world for `seed`.
    pub fn config(self, seed: u64) -> ScenarioConfig {
        let battle_royale = ScenarioConfig {
            name: "battle_royale".into(),
            connections: 100,
            actors: 50_000,
            projectiles: 2_000,
            pickup_share: 0.6,
            world_size: 400_000.0,
            tick_rate: 30.0,
            net_speed: 100_000,
            hot_drop: Some(HotDrop {
                fraction: 0.8,
                radius: 15_000.0,
                fight_seconds: 3.0,
                spread_speed: (2_000.0, 5_000.0),
                spread_seconds: (3.0, 8.0),
            }),
            static_change_rate: 0.005,
            dormant: None,
            seed,
        };
        match self {
            Profile::BattleRoyale => battle_royale,
            Profile::Mmo => ScenarioConfig {
                name: "mmo".into(),
                connections: 1_000,
                actors: 1_000_000,
                projectiles: 40_000,
                world_size: battle_royale.world_size * 20f32.sqrt(),
                hot_drop: None,
                ..battle_royale
            },
            Profile::OpenWorld => ScenarioConfig {
                name: "open_world".into(),
                actors: 10_000,
                hot_drop: None,
                dormant: Some(DormantActors { actors: 990_000, static_share: 0.9 }),
                ..battle_royale
            },
        }
    }
}

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
    /// With a UE-style reference ticked beside the server: its last frame's time, ns.
    fn reference_ns(&self) -> Option<u64> {
        None
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
    let tick_ns = tick_ns - reference_ns.unwrap_or(0);
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

/// Medians of a stage, ms: the per-connection stages are CPU time summed over connections.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StagesMs {
    /// Compare, slot tracking and history, every class.
    pub gather: f64,
    /// The consider list.
    pub consider: f64,
    /// Dormancy's own work (looks for sleeping actors, falling asleep).
    pub dormancy: f64,
    /// The relevancy index (grid, links).
    pub relevancy_index: f64,
    /// Every connection's relevant set, summed over connections.
    pub relevancy_query: f64,
    /// Index plus queries (median of the per-frame sums).
    pub relevancy: f64,
    /// Shared serialization.
    pub share: f64,
    /// Candidates and priority keys, summed over connections.
    pub priority: f64,
    /// The send loop (rechecks, opens, closes, planning, packets), summed over connections.
    pub write: f64,
    /// The per-connection step, wall time.
    pub connections: f64,
    /// Applying the clients' feedback (outside `frame_ms`).
    pub feedback: f64,
}

/// Medians over some frames of what the actor level did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseSummary {
    /// Frames summarised.
    pub frames: usize,
    /// Median server frame, ms.
    pub frame_ms: f64,
    /// Median (connection, due actor) pairs relevant per frame.
    pub relevant_pairs: f64,
    /// Median pairs replicated per frame.
    pub sent_pairs: f64,
    /// Median saturated connections per frame.
    pub saturated_connections: f64,
    /// Median bytes per connection per frame.
    pub bytes_per_connection_frame: f64,
}

/// What `shadowrep run` reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Every timed frame.
    pub all: PhaseSummary,
    /// 99th percentile (nearest rank) of the frame, ms.
    pub frame_p99_ms: f64,
    /// Median frame / tick period.
    pub tick_share: f64,
    /// Stage medians.
    pub stages: StagesMs,
    /// Median actors on the consider list.
    pub due_actors: f64,
    /// Median of the server's prepare (the game's calls into it; not in the frame), ms.
    pub prepare_ms: f64,
    /// Median of frame plus prepare: the kernel's whole work per frame, ms.
    pub frame_with_prepare_ms: f64,
    /// Median of the game's own step (not in the frame), ms.
    pub game_ms: f64,
    /// The first second of timed frames (the hot drop, in battle_royale).
    pub first_second: PhaseSummary,
    /// The last second of timed frames.
    pub last_second: PhaseSummary,
    /// Each second of timed frames in turn (the last one may be short).
    pub per_second: Vec<PhaseSummary>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn phase(records: &[FrameRecord], connections: usize) -> PhaseSummary {
    let m = |f: &dyn Fn(&FrameRecord) -> f64| median(records.iter().map(f).collect::<Vec<f64>>());
    PhaseSummary {
        frames: records.len(),
        frame_ms: m(&|r| ms(r.tick_ns)),
        relevant_pairs: m(&|r| r.stats.relevant_pairs as f64),
        sent_pairs: m(&|r| r.stats.sent_pairs as f64),
        saturated_connections: m(&|r| r.stats.saturated_connections as f64),
        bytes_per_connection_frame: m(&|r| r.stats.bytes as f64 / connections.max(1) as f64),
    }
}

/// Summarises timed frames of a world with `connections` connections at `tick_rate`.
pub fn summarize(records: &[FrameRecord], connections: usize, tick_rate: f64) -> RunSummary {
    let m = |f: &dyn Fn(&FrameRecord) -> f64| median(records.iter().map(f).collect::<Vec<f64>>());
    let s = |f: fn(&shadowrep::net::Stages) -> u64| m(&|r| ms(f(&r.stats.stages)));
    let mut frame: Vec<f64> = records.iter().map(|r| ms(r.tick_ns)).collect();
    frame.sort_unstable_by(f64::total_cmp);
    let p99 = frame.get(((frame.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    let second = (tick_rate.round() as usize).clamp(1, records.len().max(1));
    let all = phase(records, connections);
    RunSummary {
        all,
        frame_p99_ms: p99,
        tick_share: all.frame_ms / (1e3 / tick_rate),
        stages: StagesMs {
            gather: s(|x| x.gather),
            consider: s(|x| x.consider),
            dormancy: s(|x| x.dormancy),
            relevancy_index: s(|x| x.relevancy_index),
            relevancy_query: s(|x| x.relevancy_query),
            relevancy: s(|x| x.relevancy_index + x.relevancy_query),
            share: s(|x| x.share),
            priority: s(|x| x.priority),
            write: s(|x| x.write),
            connections: s(|x| x.connections),
            feedback: m(&|r| ms(r.feedback_ns)),
        },
        due_actors: m(&|r| r.stats.due_actors as f64),
        prepare_ms: m(&|r| ms(r.prepare_ns)),
        frame_with_prepare_ms: m(&|r| ms(r.tick_ns + r.prepare_ns)),
        game_ms: m(&|r| ms(r.game_ns)),
        first_second: phase(&records[..second.min(records.len())], connections),
        last_second: phase(&records[records.len().saturating_sub(second)..], connections),
        per_second: records.chunks(second).map(|c| phase(c, connections)).collect(),
    }
}

/// Peak resident memory of this process (`VmHWM`), bytes, where the OS tells.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests {
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
}
