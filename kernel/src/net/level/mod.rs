//! The actor level (UE's `ServerReplicateActors`): which actors each connection gets, in what
//! order, and how many — a frame of [`super::DriverConfig::actor_level`].
//!
//! ```text
//! tick(frame N), now = N / tick_rate                                   modules
//!   gather      per class: slots tracked, the due actors selected     actors
//!               (clock due or pending; replicating: `set_replicates`),
//!               only their lanes compared, history recorded
//!   budgets     every connection's queued bits drain by one tick       budget
//!   consider    the selected actors → the due list, sorted by (class,  level/due,
//!               slot); their next time is scheduled                     consider
//!               (UE's jitter from a hash of (NetGUID, frame))
//!   relevancy   index over the due actors: grid (distance), links      relevancy::index
//!               (owners, instigators, view targets), rule actors
//!   share       due actors' changes since they were last considered,   shared
//!               encoded once for every connection
//!   per connection (rayon)                                              channels
//!               relevant due actors ∪ due actors with a channel → UE
//!               priority (max over viewers) → partial sort, in batches →
//!               in order: relevancy recheck, open / replicate / close,
//!               until the budget is spent; leftovers → pending
//!   pending     leftovers that were relevant are considered next frame
//! ```
//!
//! Per-pair state exists only for channels (open, opening, or recently relevant): each
//! connection keeps a sorted table of channel rows (`pairs::Channel`), never a row per actor of
//! the world.
//!
//! ```
//! use shadowrep::client::ClientWorld;
//! use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, NetSettings, Viewer};
//! use shadowrep::prelude::*;
//! use std::sync::Arc;
//!
//! let layout = Arc::new(
//!     ClassBuilder::new("Crate")
//!         .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::Q100)))
//!         .property(PropertyDecl::new("Health", PropType::U32))
//!         .build()
//!         .unwrap(),
//! );
//! let mut store = ClassStore::new(layout.clone());
//! let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
//! let mut driver = NetDriver::new(cfg).unwrap();
//! let class = driver.register_class(&mut store).unwrap();
//! driver.set_location_property(class, 0).unwrap(); // relevancy reads "Location"
//! let mut settings = NetSettings::default(); // UE's AActor defaults
//! settings.frequency.net_update_frequency = 10.0;
//! driver.set_class_settings(class, settings).unwrap();
//!
//! let conn = driver.add_connection(false);
//! let viewer = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
//! driver.set_viewers(conn, &[viewer]).unwrap();
//! let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
//!
//! let near = store.spawn();
//! store.set(near, 0, &Value::Vector([500.0, 0.0, 0.0])).unwrap();
//! let far = store.spawn();
//! store.set(far, 0, &Value::Vector([90_000.0, 0.0, 0.0])).unwrap(); // beyond 15 000 units
//! for _ in 0..3 {
//!     driver.tick(&mut [&mut store]).unwrap();
//!     for packet in driver.take_packets(conn).unwrap() {
//!         client.receive(&packet).unwrap();
//!     }
//!     driver.receive_feedback(conn, &client.feedback()).unwrap(); // also keeps the client "ready"
//! }
//! assert!(client.has(driver.guid_of(class, near).unwrap()));
//! assert!(!client.has(driver.guid_of(class, far).unwrap()));
//! ```

mod due;

pub(crate) use due::{clock_key, GuidRanks};
mod inputs;
mod log;

pub use log::{ReusedTearing, TickLog};

use super::actors::ClassNet;
use super::channels::{self, LevelCtx, Outcome};
use super::connection::Connection;
use super::consider::ServerTime;
use super::relevancy::{ActorRelevancy, DueActor, RelevancyHook, RelevancyIndex};
use super::send::WriteCtx;
use super::settings::{ActorLevelConfig, NetSettings};
use super::{ClassId, DriverError, Frame, LeafMask, NetDriver, NetGuid};
use crate::schema::PAGE_LANES;
use crate::store::BitIter;
use crate::store::ClassStore;
use crate::wire::open::SpawnInfo;
use rayon::prelude::*;
use std::time::Instant;

/// One channel of a connection ([`NetDriver::channel_info`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChannelInfo {
    /// The actor.
    pub guid: NetGuid,
    /// Its class.
    pub class: ClassId,
    /// The client acknowledged the open.
    pub open_acked: bool,
    /// Server time the channel last replicated (priority's T counts from it).
    pub last_update: f64,
    /// Server time until which it counts as relevant without a recheck.
    pub relevant_time: f64,
}

/// A due actor with nothing in the shared arena.
pub(crate) const NOT_SHARED: u32 = u32::MAX;

/// No due entry for a slot.
pub(crate) const NOT_DUE: u32 = u32::MAX;

/// The actor level's frame state.
pub(crate) struct Level {
    pub cfg: ActorLevelConfig,
    pub index: RelevancyIndex,
    /// The frame's consider list, sorted by (class, slot).
    pub due: Vec<DueActor>,
    /// The due actors' pair keys, parallel to `due`, packed for the per-connection merges.
    pub keys: Vec<u64>,
    /// The due actors that may fall asleep this frame (indices into `due`, ascending): listed
    /// as the consider list is built, so no later step walks the wide records to find them.
    pub sleepy: Vec<u32>,
    /// How many due sub-objects have a condition that leaves some connections out (counted
    /// likewise).
    pub conditioned: usize,
    /// How many due actors are owner-only, or sub-objects of an owner-only owner (counted
    /// likewise): none, and no connection asks which of its channels it no longer owns.
    pub owner_only: usize,
    /// How many due actors are tearing off (counted likewise): none, and no connection asks
    /// whether a relevant actor without a channel may get one.
    pub tearing: usize,
    /// How many due actors are temporary (counted likewise): none, and no connection asks
    /// whether a channel's open went out to skip it.
    pub temporary: usize,
    /// How many due sub-objects are initial-only (counted likewise): none, and no candidate's
    /// condition is read to skip it.
    pub initial_only: usize,
    /// Per class, per slot: index into `due`, or [`NOT_DUE`].
    pub due_index: Vec<Vec<u32>>,
    /// Per class, per page: the lanes of actors due this frame (the lanes compared).
    pub selected: Vec<Vec<u64>>,
    /// Per class: the pages with a selected lane, ascending.
    pub selected_pages: Vec<Vec<u32>>,
    /// Actors gone since the last frame's connection step, by (key, GUID): every connection
    /// drops their rows and closes their open channels.
    pub retired: Vec<(u64, NetGuid)>,
    /// `force_net_update` calls, as (class, slot, server time of the call): inputs a reference
    /// replays.
    pub forced: TickLog<(u32, u32, f64)>,
    /// What the game's dormancy calls did to actors, in call order: inputs a reference replays.
    pub dormancy_calls: TickLog<super::dormancy::Logged>,
    /// Fast arrays the game removed (`NetDriver::remove_fast_array`), each with the connection
    /// slots whose reference-side state (the odd slots of the array's per-connection states,
    /// which go with it) says the client may hold it: a reference's closes of them, told at the
    /// call as the driver's are.
    pub fast_removed: TickLog<(NetGuid, Vec<u32>)>,
    /// Slots (class, slot) whose actor was adopted, retired, made or orphaned as a sub-object, or
    /// torn off ([`NetDriver::touch`]): where a reference's actor list changed, as UE's network
    /// object list hears of spawns and destructions when they happen (a reference walks these,
    /// not every slot of the world).
    pub touched: TickLog<(u32, u32)>,
    /// Tearing actors whose slot the game reused: their tear-off judged at that call, with what
    /// it read then (inputs a reference judges it with alike).
    pub reused_tearing: TickLog<ReusedTearing>,
    pub time: ServerTime,
    /// Sleeping actors by cell, where connections look for those they have not met.
    pub dormant: super::dormancy::DormantCells,
    /// The due owners' fast arrays and their versions (`None`: no such array), each owner's
    /// run named by its record's `fast_arrays`: read once a frame, not once per connection the
    /// owner is sent to (a hash lookup for the owner's list and a tree lookup per array).
    pub fast_arrays: Vec<(NetGuid, Option<super::fastarrays::ArrayStamp>)>,
    /// Each due actor's rank by GUID among the frame's due actors (parallel to `due`): the send
    /// order's tie-break as one small integer, shared by every connection.
    pub guid_rank: GuidRanks,
    /// The frame's open encodings, by due index (see [`super::opens`]).
    pub opens: super::opens::OpenCache,
    /// Some actor was placed outside the persistent level: connections check their clients'
    /// sublevels ([`super::sublevels`]).
    pub sublevels: bool,
}

impl Level {
    /// Starts frame `frame`: server time moves on by one tick.
    pub fn begin_frame(&mut self, frame: Frame) {
        self.forced.rotate();
        self.dormancy_calls.rotate();
        self.fast_removed.rotate();
        self.touched.rotate();
        self.reused_tearing.rotate();
        self.time = ServerTime { frame, now: frame.0 as f64 * self.time.tick, tick: self.time.tick };
    }

    /// The lanes of class `ci` whose actor is due now (clock due, or pending): the consider
    /// list's members, and the only lanes compared this frame. On the pool when `parallel` and
    /// the class has enough awake lanes to pay for it (fewer when `warm`: the frame keeps the
    /// other workers awake, `net::warm`, so a phase costs no wake-up).
    pub fn select_due(&mut self, ci: usize, c: &ClassNet, parallel: bool, warm: bool) {
        /// Awake lanes up to which a page's due times are read lane by lane.
        const SPARSE_PAGE_LANES: u32 = 4;
        if self.selected.len() <= ci {
            self.selected.resize(ci + 1, Vec::new());
        }
        if self.selected_pages.len() <= ci {
            self.selected_pages.resize(ci + 1, Vec::new());
        }
        let lanes = &mut self.selected[ci];
        let listed = &mut self.selected_pages[ci];
        let pages = c.actors.len().div_ceil(PAGE_LANES);
        if lanes.len() == pages {
            // Only last frame's selected pages hold bits.
            for &p in listed.iter() {
                lanes[p as usize] = 0;
            }
        } else {
            lanes.clear();
            lanes.resize(pages, 0);
        }
        listed.clear();
        let now = self.time.now;
        let awake = &c.cols.awake;
        let due_at = &c.cols.due_at;
        debug_assert!(
            c.cols.clock.iter().zip(due_at).all(|(k, &t)| k.due_at() == t) && c.cols.clock.len() == due_at.len(),
            "a consider clock changed without its due time"
        );
        let page = |p: usize| {
            // The due times first, a page's 64 in one branch-free pass over their column: most
            // awake actors are not due, and their actor entries (a cache miss each in a large
            // world) are then never read. A page with a few awake lanes (a sleeper woken among
            // sleepers) reads their times alone: one cache line, not the column's eight.
            let base = p * PAGE_LANES;
            let times = due_at.get(base..due_at.len().min(base + PAGE_LANES)).unwrap_or(&[]);
            let due = if awake[p].count_ones() <= SPARSE_PAGE_LANES {
                BitIter(awake[p]).fold(0u64, |m, lane| m | u64::from(times.get(lane).is_some_and(|&t| now > t)) << lane)
            } else {
                times.iter().enumerate().fold(0u64, |m, (lane, &t)| m | u64::from(now > t) << lane)
            };
            let mut out = 0;
            for lane in BitIter(awake[p] & due) {
                let slot = base + lane;
                let a = &c.actors[slot];
                if a.alive && !a.torn_off && !a.not_replicated {
                    out |= 1 << lane;
                }
            }
            out
        };
        let list: Vec<usize> = c.cols.awake_page_list().filter(|&p| p < pages).collect();
        // The pool pays off only with many awake actors (a world of sleepers has few).
        let awake_lanes: u32 = list.iter().map(|&p| awake[p].count_ones()).sum();
        let pool_from = if warm { PARALLEL_CONSIDER_LANES_WARM } else { PARALLEL_CONSIDER_LANES };
        let found: Vec<u64> = if parallel && awake_lanes as usize >= pool_from {
            list.par_iter().with_min_len(16).map(|&p| page(p)).collect()
        } else {
            list.iter().map(|&p| page(p)).collect()
        };
        for (&p, l) in list.iter().zip(found).filter(|(_, l)| *l != 0) {
            lanes[p] = l;
            listed.push(p as u32);
        }
    }

    pub fn new(cfg: ActorLevelConfig) -> Result<Level, DriverError> {
        if !(cfg.tick_rate.is_finite() && cfg.tick_rate > 0.0) {
            return Err(DriverError::ActorLevel(format!("tick rate {} is not finite and positive", cfg.tick_rate)));
        }
        for (name, v) in [("relevant timeout", cfg.relevant_timeout), ("ready timeout", cfg.ready_timeout)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(DriverError::ActorLevel(format!("{name} {v} is not finite and non-negative")));
            }
        }
        let tick = 1.0 / cfg.tick_rate;
        if !tick.is_finite() {
            return Err(DriverError::ActorLevel(format!("tick rate {} gives a tick of {tick} s", cfg.tick_rate)));
        }
        // A client is heard from between ticks; at the next tick it was heard a tick ago. A
        // ready timeout shorter than a tick would never see a ready connection (nothing would
        // replicate, as in UE with a tick longer than its 1.5 s).
        if cfg.ready_timeout < tick {
            return Err(DriverError::ActorLevel(format!(
                "ready timeout {} s is shorter than a tick ({tick} s at {} Hz): no connection would ever be ready",
                cfg.ready_timeout, cfg.tick_rate
            )));
        }
        super::budget::check_net_speed(cfg.net_speed)?;
        let index = RelevancyIndex::new(cfg.grid).map_err(|e| DriverError::ActorLevel(e.to_string()))?;
        Ok(Level {
            cfg,
            index,
            due: Vec::new(),
            keys: Vec::new(),
            sleepy: Vec::new(),
            conditioned: 0,
            owner_only: 0,
            tearing: 0,
            temporary: 0,
            initial_only: 0,
            due_index: Vec::new(),
            selected: Vec::new(),
            selected_pages: Vec::new(),
            retired: Vec::new(),
            forced: TickLog::default(),
            dormancy_calls: TickLog::default(),
            fast_removed: TickLog::default(),
            touched: TickLog::default(),
            reused_tearing: TickLog::default(),
            time: ServerTime { frame: Frame(0), now: 0.0, tick: 1.0 / cfg.tick_rate },
            dormant: super::dormancy::DormantCells::new(cfg.grid.cell_size),
            fast_arrays: Vec::new(),
            guid_rank: GuidRanks::default(),
            opens: Default::default(),
            sublevels: false,
        })
    }
}

/// Reads an actor's location: its location leaf (three `f32`) or its position column.
pub(crate) fn location(c: &ClassNet, store: &ClassStore, slot: u32) -> [f32; 3] {
    read_location(c.cols.location_leaf, c.cols.position[slot as usize], store, slot)
}

fn read_location(leaf: Option<usize>, column: [f32; 3], store: &ClassStore, slot: u32) -> [f32; 3] {
    match leaf {
        Some(leaf) => read_vector(store, slot, leaf),
        None => column,
    }
}

/// Three `f32` of a vector or rotator leaf.
fn read_vector(store: &ClassStore, slot: u32, leaf: usize) -> [f32; 3] {
    let mut b = [0u8; 12];
    store.read_leaf(slot, leaf, &mut b);
    let f = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [f(0), f(4), f(8)]
}

/// What a dynamic actor's open carries: its location, and the rotation, scale and velocity
/// its class keeps in the properties named by [`NetDriver::set_spawn_properties`].
pub(crate) fn spawn_info(c: &ClassNet, store: &ClassStore, slot: u32) -> SpawnInfo {
    let leaves = c.cols.spawn_leaves;
    let at = c.cols.position.get(slot as usize).copied().unwrap_or_default();
    let or = |leaf: Option<usize>, default: [f32; 3]| leaf.map_or(default, |l| read_vector(store, slot, l));
    SpawnInfo {
        location: read_location(c.cols.location_leaf, at, store, slot),
        rotation: or(leaves.rotation, [0.0; 3]),
        scale: or(leaves.scale, [1.0; 3]),
        velocity: or(leaves.velocity, [0.0; 3]),
    }
}

/// What relevancy reads of the actor in `slot`.
pub(crate) fn relevancy_of(c: &ClassNet, slot: u32, location: [f32; 3]) -> ActorRelevancy {
    let s = slot as usize;
    let cols = &c.cols;
    relevancy(c.actors[s].guid, &cols.settings[s], cols.owner_actor[s], cols.instigator[s], location)
}

fn relevancy(
    guid: NetGuid,
    s: &NetSettings,
    owner: Option<NetGuid>,
    instigator: Option<NetGuid>,
    location: [f32; 3],
) -> ActorRelevancy {
    ActorRelevancy {
        guid,
        owner,
        instigator,
        location,
        cull_distance_squared: s.cull_distance_squared,
        always_relevant: s.always_relevant,
        only_relevant_to_owner: s.only_relevant_to_owner,
        use_owner_relevancy: s.use_owner_relevancy,
        hidden: s.hidden,
        has_root: s.has_root,
        collision: s.collision,
    }
}

/// Awake lanes of a class below which the due selection stays on the calling thread (a lane's
/// clock check costs a few nanoseconds: below this, waking the pool costs more than it saves).
const PARALLEL_CONSIDER_LANES: usize = 32_768;

/// The same in a frame that keeps the pool awake: no wake-up to pay, only the fork (battle_royale,
/// Intel Xeon, session 61: gather 0.255 → 0.217 ms with the pool from 4096 lanes).
const PARALLEL_CONSIDER_LANES_WARM: usize = 4096;

impl NetDriver {
    /// The actor level's part of a frame, after gather.
    pub(super) fn tick_level(&mut self, stores: &[&ClassStore]) {
        let Some(level) = self.level.as_ref() else { return };
        let time = level.time;
        for c in &mut self.conns {
            c.budget.tick(time.tick, level.cfg.tick_rate);
        }
        let t = Instant::now();
        self.consider(stores);
        self.stats.stages.consider = t.elapsed().as_nanos() as u64;
        // The relevancy index and the shared encodings read the same frame and nothing of each
        // other: built side by side.
        let level = self.level.as_mut().expect("checked above");
        let (classes, guids, changed) = (&self.classes, &self.guids, &self.changed);
        let (arena, shared, parallel, frame) =
            (&mut self.arena, self.cfg.shared_serialization, self.cfg.parallel, self.frame);
        let Level { due, due_index, index, guid_rank, opens, .. } = level;
        let mut build_index = || {
            let t = Instant::now();
            let due_of = |g: NetGuid| {
                let &(c, s) = guids.get(&g)?;
                let d = *due_index.get(c as usize)?.get(s as usize)?;
                (d != NOT_DUE).then_some(d)
            };
            let find = |g: NetGuid| {
                let &(c, s) = guids.get(&g)?;
                let class = &classes[c as usize];
                let at = location(class, stores[c as usize], s);
                Some((relevancy_of(class, s, at), class.cols.settings[s as usize].net_priority, c))
            };
            let hooked = |c: u32| classes.get(c as usize).is_some_and(|c| c.cols.hook.is_some());
            let priority_hooked = |c: u32| classes.get(c as usize).is_some_and(|c| c.cols.priority_hook.is_some());
            let any_priority_hook = classes.iter().any(|c| c.cols.priority_hook.is_some());
            index.build(
                due,
                find,
                due_of,
                hooked,
                any_priority_hook.then_some(&priority_hooked as &dyn Fn(u32) -> bool),
            );
            t.elapsed().as_nanos() as u64
        };
        // The shared encodings, then the due actors' GUID ranks (the shorter side of the join).
        let mut encode = || {
            let t = Instant::now();
            let records = if shared {
                arena.encode(changed, classes, stores, (frame, parallel))
            } else {
                arena.clear();
                0
            };
            guid_rank.rank();
            opens.begin_frame(due.len());
            (records, t.elapsed().as_nanos() as u64)
        };
        let (index_ns, (records, share_ns)) =
            if parallel { rayon::join(build_index, encode) } else { (build_index(), encode()) };
        self.stats.stages.relevancy_index = index_ns;
        self.stats.stages.share = share_ns;
        self.stats.shared_records = records;
        self.stats.changed_actors = self.changed.len();
        let level = self.level.as_mut().expect("checked above");
        level.retired.sort_unstable();
        self.rpcs.frame.resolve(&self.guids);
        self.rpcs.frame.find_due(&level.due_index);
        let level = self.level.as_ref().expect("checked above");
        debug_assert_eq!(level.guid_rank.ranks.len(), level.due.len(), "a GUID rank per due actor");
        let hooks: Vec<Option<RelevancyHook>> = self.classes.iter().map(|c| c.cols.hook.clone()).collect();
        let priority_hooks: Vec<_> = self.classes.iter().map(|c| c.cols.priority_hook.clone()).collect();
        let dormancy_hooks: Vec<_> = self.classes.iter().map(|c| c.cols.dormancy_hook.clone()).collect();
        let write = WriteCtx {
            classes: &self.classes,
            stores,
            arena: self.cfg.shared_serialization.then_some(&self.arena),
            keep_alive_frames: self.cfg.keep_alive_frames,
            statics: &self.statics,
            outers: &self.subs.outer,
            guids: &self.guids,
            fast: &self.fast,
            marks_opens: true,
            calls: &self.rpcs.frame,
        };
        let ctx = LevelCtx {
            write: &write,
            due: &level.due,
            keys: &level.keys,
            due_index: &level.due_index,
            selected: &level.selected,
            retired: &level.retired,
            guids: &self.guids,
            subs: &self.subs.inner,
            index: &level.index,
            hooks: &hooks,
            priority_hooks: &priority_hooks,
            dormancy_hooks: &dormancy_hooks,
            sleepy: level.sleepy.len(),
            fast_arrays: &level.fast_arrays,
            guid_rank: &level.guid_rank,
            opens: &level.opens,
            conditioned: level.conditioned,
            owner_only: level.owner_only,
            tearing: level.tearing,
            temporary: level.temporary,
            initial_only: level.initial_only,
            report_closes: !self.inactive.is_empty(),
            time,
            cfg: &level.cfg,
            statics: &self.statics,
            sublevels: level.sublevels,
        };
        let run = |(ci, conn): (usize, &mut Connection)| channels::replicate_connection(&ctx, ci as u32, conn);
        let items = (level.due.len() + self.rpcs.frame.calls.len()) * self.conns.len();
        let parallel = self.cfg.parallel && items >= self.cfg.min_parallel_items;
        let t = Instant::now();
        let outcomes: Vec<Outcome> = if parallel {
            super::share::share_mut(&mut self.conns, |ci, c| run((ci, c)))
        } else {
            self.conns.iter_mut().enumerate().map(run).collect()
        };
        self.stats.stages.connections = t.elapsed().as_nanos() as u64;
        let level = self.level.as_ref().expect("checked above");
        let mut awake = vec![false; level.due.len()];
        let mut pending = vec![0u64; level.due.len().div_ceil(64)];
        for o in &outcomes {
            for &d in &o.awake {
                awake[d as usize] = true;
            }
            self.stats.bunches += o.written.bunches;
            self.stats.packets += o.written.packets;
            self.stats.bytes += o.written.bytes;
            self.stats.relevant_pairs += o.relevant;
            self.stats.sent_pairs += o.processed;
            self.stats.saturated_connections += o.saturated as usize;
            self.stats.stages.relevancy_query += o.nanos[0];
            self.stats.stages.priority += o.nanos[1];
            self.stats.stages.write += o.nanos[2];
            for (p, &w) in pending.iter_mut().zip(&o.pending) {
                *p |= w;
            }
        }
        // Adaptive frequency: each actor's interval from the connections it was sent to (UE sets
        // it at every real send; a second send in the frame leaves the fastest).
        if level.cfg.adaptive_frequency {
            let mut sends = vec![0u32; level.due.len()];
            for &d in outcomes.iter().flat_map(|o| &o.replicated) {
                sends[d as usize] += 1;
            }
            for (d, &n) in level.due.iter().zip(&sends).filter(|&(_, &n)| n > 0) {
                let cols = &mut self.classes[d.class as usize].cols;
                let f = cols.settings[d.slot as usize].frequency;
                cols.clock[d.slot as usize].replicated(time.now, &f, n);
            }
        }
        // Channels closed (the clients destroyed their copies): their records of inactive leaves
        // go (an epoch of a later channel could match theirs).
        let closed: Vec<(u32, u32, usize)> =
            outcomes.iter().enumerate().flat_map(|(ci, o)| o.closed.iter().map(move |&(c, s)| (c, s, ci))).collect();
        // Tearing actors replicated: whether each connection's window deferred their update.
        let tearing: Vec<(u32, u32, u32, bool)> = outcomes
            .iter()
            .enumerate()
            .flat_map(|(ci, o)| o.tearing.iter().map(move |&(d, deferred)| (ci as u32, d, deferred)))
            .map(|(ci, d, deferred)| (ci, level.due[d as usize].class, level.due[d as usize].slot, deferred))
            .collect();
        // Lost leaves found inactive are recorded before the closes drop their channels' records.
        self.park_inactive_losses();
        for (class, slot, ci) in closed {
            self.forget_inactive(class, slot, ci);
        }
        self.note_tear_deferrals(&tearing);
        let level = self.level.as_ref().expect("checked above");
        // Left over by some connection: considered again next frame. One pass in due order
        // (class, slot ascending), each actor once, however many connections left it over.
        for d in crate::net::relevancy::due_in(&pending) {
            let d = &level.due[d as usize];
            self.classes[d.class as usize].cols.set_pending(d.slot as usize, true);
        }
        // The opens encoded this frame: their buffers back to the pool, their slots empty.
        let level = self.level.as_mut().expect("checked above");
        level.opens.end_frame(outcomes.iter().flat_map(|o| &o.first_opens));
        for (conn, o) in self.conns.iter_mut().zip(outcomes) {
            channels::recycle(conn, o);
        }
        self.stats.due_actors = level.due.len();
        let t = Instant::now();
        self.sleep_settled(&awake);
        self.stats.stages.dormancy += t.elapsed().as_nanos() as u64;
        self.level.as_mut().expect("checked above").retired.clear();
    }
}
