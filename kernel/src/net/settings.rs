//! What the actor level reads: per-actor net settings (class defaults, per-actor overrides) and
//! how a driver runs the actor level.
//!
//! Defaults are UE's `AActor` defaults: `NetUpdateFrequency` 100, `MinNetUpdateFrequency` 2,
//! `NetPriority` 1, `NetCullDistanceSquared` 15000², visible, with a colliding root.

use super::budget::DEFAULT_NET_SPEED;
use super::consider::{UpdateFrequency, DEFAULT_TICK_RATE};
use super::relevancy::DEFAULT_CULL_DISTANCE_SQUARED;
use super::spatial::GridConfig;
use super::DriverError;

/// UE's `RelevantTimeout`: seconds a channel stays open after its actor was last relevant.
pub const DEFAULT_RELEVANT_TIMEOUT: f64 = 5.0;

/// Seconds without hearing from a client after which it is not replicated to (UE's "ready"
/// rule: a connection received from within 1.5 s).
pub const DEFAULT_READY_TIMEOUT: f64 = 1.5;

/// An actor's net settings (UE's `AActor` replication properties).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetSettings {
    /// `NetUpdateFrequency` and `MinNetUpdateFrequency`, in Hz.
    pub frequency: UpdateFrequency,
    /// `NetPriority`.
    pub net_priority: f32,
    /// `NetCullDistanceSquared`.
    pub cull_distance_squared: f32,
    /// `bAlwaysRelevant`.
    pub always_relevant: bool,
    /// `bOnlyRelevantToOwner`.
    pub only_relevant_to_owner: bool,
    /// `bNetUseOwnerRelevancy`: relevancy and priority are the owner actor's.
    pub use_owner_relevancy: bool,
    /// `bHidden`.
    pub hidden: bool,
    /// Has a root component (without one, only the owner rules can make it relevant).
    pub has_root: bool,
    /// Its root collides (a hidden actor that collides stays relevant by distance, as in UE).
    pub collision: bool,
    /// Loaded with the level (UE's `bNetStartup`): its channel is never closed for relevancy.
    pub startup: bool,
    /// UE's `bNetTemporary`: a connection is sent the actor's initial bunch once, then nothing
    /// more — once its channel's open has gone out there, the connection's frames skip it (after
    /// the owner-only rule, before relevancy: never updated, never closed for relevancy or
    /// dormancy; its channel closes when it is destroyed, torn off or its sublevel unloads, and
    /// a channel that ended while it lives is not opened again there).
    /// An open reported lost goes again, as the initial bunch with the current values (UE's
    /// initial bunch is reliable). Its sub-objects take it with the rest of its settings.
    pub net_temporary: bool,
}

impl Default for NetSettings {
    fn default() -> Self {
        Self {
            frequency: UpdateFrequency::default(),
            net_priority: 1.0,
            cull_distance_squared: DEFAULT_CULL_DISTANCE_SQUARED,
            always_relevant: false,
            only_relevant_to_owner: false,
            use_owner_relevancy: false,
            hidden: false,
            has_root: true,
            collision: true,
            startup: false,
            net_temporary: false,
        }
    }
}

impl NetSettings {
    /// Refuses settings replication cannot run with ([`DriverError::BadNetSetting`]): an update
    /// frequency that is not finite and above 0 (UE's clock divides by it), a minimum frequency
    /// that is negative or not finite (0 means UE's 2 Hz), a priority that is negative or not
    /// finite, a cull distance squared that is negative or NaN (infinite: relevant at any
    /// distance).
    pub fn validate(&self) -> Result<(), DriverError> {
        let bad = |setting, value: f32, expected| {
            Err(DriverError::BadNetSetting { setting, value: f64::from(value), expected })
        };
        let f = &self.frequency;
        if !(f.net_update_frequency.is_finite() && f.net_update_frequency > 0.0) {
            return bad("NetUpdateFrequency", f.net_update_frequency, "a finite frequency above 0 Hz");
        }
        if !(f.min_net_update_frequency.is_finite() && f.min_net_update_frequency >= 0.0) {
            return bad("MinNetUpdateFrequency", f.min_net_update_frequency, "a finite frequency of 0 Hz or more");
        }
        if !(self.net_priority.is_finite() && self.net_priority >= 0.0) {
            return bad("NetPriority", self.net_priority, "a finite priority of 0 or more");
        }
        if self.cull_distance_squared.is_nan() || self.cull_distance_squared < 0.0 {
            return bad("NetCullDistanceSquared", self.cull_distance_squared, "0 or more (infinite: any distance)");
        }
        Ok(())
    }

    /// What a sub-object of an actor with these settings has: its owner's frequency, priority
    /// and startup flag (it stays where its owner's channel stays), and its relevancy handed to
    /// the owner (UE replicates sub-objects inside their owner's channel: they have no relevancy
    /// rules of their own). A sub-object whose condition stops passing for a connection closes
    /// there all the same (see `channels`).
    pub(crate) fn for_sub_object(self) -> NetSettings {
        NetSettings {
            always_relevant: false,
            only_relevant_to_owner: false,
            use_owner_relevancy: true,
            hidden: false,
            has_root: true,
            collision: true,
            ..self
        }
    }

    /// Whether actor `guid` with these settings counts as loaded with the level (its channel
    /// never closed for relevancy): its `startup` flag, or a static actor whatever it says.
    pub(crate) fn startup_for(&self, guid: crate::ids::NetGuid) -> bool {
        self.startup || guid.is_static()
    }

    /// Whether relevancy needs more than the distance test and the owner links: the rules
    /// before it can decide on their own (always relevant, owner relevancy, owner only, hidden
    /// without collision, no root).
    pub(crate) fn needs_rules(&self) -> bool {
        self.always_relevant
            || self.only_relevant_to_owner
            || self.use_owner_relevancy
            || !self.has_root
            || (self.hidden && !self.collision)
    }
}

/// How a driver runs the actor level (UE's `ServerReplicateActors`): per connection, the due
/// actors relevant to its viewers, in priority order, until its bandwidth is spent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActorLevelConfig {
    /// Server ticks per second (UE's `NetServerMaxTickRate`, 30): server time advances by one
    /// tick per [`super::NetDriver::tick`].
    pub tick_rate: f64,
    /// Seconds a channel stays open after its actor was last relevant (UE: 5).
    pub relevant_timeout: f64,
    /// Seconds without hearing from a client after which it is not replicated to (UE: 1.5); at
    /// least one tick (`1 / tick_rate`), or no connection would ever be ready.
    pub ready_timeout: f64,
    /// Bytes per second a new connection may receive (UE 5: 100 000); at least 1.
    pub net_speed: u32,
    /// Bytes each packet costs the budget beyond its payload (UE's `PacketOverhead`: 28 for
    /// IPv4 and UDP, [`super::budget::DEFAULT_PACKET_OVERHEAD`]); 48 for IPv6, 0 for a
    /// transport that wants its payload counted alone.
    pub packet_overhead: u32,
    /// UE's adaptive net update frequency (off by default, as in UE 5).
    pub adaptive_frequency: bool,
    /// The spatial grid of the distance test's broad phase.
    pub grid: GridConfig,
    /// Keep each connection's relevant set and send order of the last frame
    /// ([`super::NetDriver::decisions`]): for tests, dumps and debugging a server's choices.
    pub record_decisions: bool,
    /// An actor the game gave no owning connection ([`super::NetDriver::set_owner`]) takes the
    /// one of the first actor up its owner chain ([`super::NetDriver::set_owner_actor`]) that
    /// has one, as UE's `GetNetConnection` walks `Owner`: a weapon owned by a pawn its player
    /// owns is that player's — its owner-only properties, its sub-objects' owner conditions, the
    /// Server calls its player may make on it. On by default (UE's rule; since session 71). Off,
    /// only `set_owner` makes an owner, and the chain serves relevancy and priority alone — for
    /// a game that gives every owner itself and wants no derivation (it costs an index of the
    /// owner links and, at each link, owner or despawn, a walk of the actors below).
    pub owner_chain_connections: bool,
}

impl Default for ActorLevelConfig {
    fn default() -> Self {
        Self {
            tick_rate: DEFAULT_TICK_RATE,
            relevant_timeout: DEFAULT_RELEVANT_TIMEOUT,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            net_speed: DEFAULT_NET_SPEED,
            packet_overhead: super::budget::DEFAULT_PACKET_OVERHEAD,
            adaptive_frequency: false,
            grid: GridConfig::default(),
            record_decisions: false,
            owner_chain_connections: true,
        }
    }
}

/// Where a class keeps what a channel's spawn info carries besides the location: leaf indices
/// (a rotator, and vectors), each optional (then the default: unrotated, unit scale, at rest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpawnLeaves {
    pub rotation: Option<usize>,
    pub scale: Option<usize>,
    pub velocity: Option<usize>,
}

/// A class's actor-level columns, one row per actor slot.
#[derive(Clone, Default)]
pub(crate) struct Columns {
    /// The class default.
    pub defaults: NetSettings,
    /// The leaf holding the replicated location (a vector), if the class has one.
    pub location_leaf: Option<usize>,
    /// The leaves a channel's spawn info reads rotation, scale and velocity from.
    pub spawn_leaves: SpawnLeaves,
    pub hook: Option<super::relevancy::RelevancyHook>,
    /// The class's own priority ([`super::priority::PriorityHook`]).
    pub priority_hook: Option<super::priority::PriorityHook>,
    pub settings: Vec<NetSettings>,
    /// Set by a per-actor override: a new class default leaves the row alone.
    pub overridden: Vec<bool>,
    /// Where the actor is (read from the location leaf each time it is due, if there is one).
    pub position: Vec<[f32; 3]>,
    /// UE's `Owner` and `Instigator`.
    pub owner_actor: Vec<Option<crate::ids::NetGuid>>,
    pub instigator: Vec<Option<crate::ids::NetGuid>>,
    /// Change it through [`Columns::force_net_update`], [`Columns::set_pending`] or with
    /// `due_at` beside it: the two must agree.
    pub clock: Vec<super::consider::ConsiderClock>,
    /// Per slot, [`ConsiderClock::due_at`](super::consider::ConsiderClock::due_at) of `clock`: the
    /// due selection reads 8 bytes a lane here instead of the 32-byte clock (1M actors: 8 MB a
    /// frame instead of 32).
    pub due_at: Vec<f64>,
    /// The frame the actor was last on the consider list.
    pub last_considered: Vec<crate::ids::Frame>,
    /// UE's `NetDormancy` of each actor ([`super::dormancy`]).
    pub dormancy: Vec<super::dormancy::Dormancy>,
    /// Off the consider list: dormant on every connection that has it (not compared, nothing
    /// per connection) until woken, flushed, or needed by a connection that meets it.
    pub asleep: Vec<bool>,
    /// How many times the actor in each slot fell asleep: an entry of the dormant cells is for
    /// one sleep (one made before the actor woke and moved names an old one).
    pub sleeps: Vec<u32>,
    /// A sub-object's condition ([`super::lifecycle::SubObjectCondition`]); `None`: not a
    /// sub-object.
    pub sub_condition: Vec<Option<super::lifecycle::SubObjectCondition>>,
    /// The sublevel each actor lives in ([`super::sublevels`]; a sub-object's is its owner's).
    pub sublevel: Vec<super::sublevels::SublevelId>,
    /// The class's per-connection answer for `DormantPartial` actors.
    pub dormancy_hook: Option<super::dormancy::DormancyHook>,
    /// Per page: the lanes of actors that may be due — live, not torn off, not asleep — so the
    /// due selection costs the awake actors, not the world.
    pub awake: Vec<u64>,
    /// Bit `p % 64` of word `p / 64`: `awake[p]` is not empty. The due selection walks these
    /// words, so a world of sleepers costs its awake pages, not all of its pages.
    pub awake_pages: Vec<u64>,
}

impl Columns {
    /// UE's `ForceNetUpdate` of the actor in `slot` at server time `now`.
    pub fn force_net_update(&mut self, slot: usize, now: f64) {
        self.clock[slot].force_net_update(now);
        self.due_at[slot] = self.clock[slot].due_at();
    }

    /// Marks the actor in `slot` left over (considered next frame whatever its time), or not.
    pub fn set_pending(&mut self, slot: usize, pending: bool) {
        self.clock[slot].pending_net_update = pending;
        self.due_at[slot] = self.clock[slot].due_at();
    }

    /// A new actor in `slot`: the class defaults, nowhere, owned by nobody, due at once.
    pub fn reset(&mut self, slot: usize) {
        if self.settings.len() <= slot {
            let n = slot + 1;
            self.settings.resize(n, self.defaults);
            self.overridden.resize(n, false);
            self.position.resize(n, [0.0; 3]);
            self.owner_actor.resize(n, None);
            self.instigator.resize(n, None);
            self.clock.resize(n, Default::default());
            self.due_at.resize(n, super::consider::ConsiderClock::default().due_at());
            self.last_considered.resize(n, Default::default());
            self.dormancy.resize(n, Default::default());
            self.asleep.resize(n, false);
            self.sleeps.resize(n, 0);
            self.sub_condition.resize(n, None);
            self.sublevel.resize(n, Default::default());
        }
        self.settings[slot] = self.defaults;
        self.overridden[slot] = false;
        self.position[slot] = [0.0; 3];
        self.owner_actor[slot] = None;
        self.instigator[slot] = None;
        self.clock[slot] = Default::default();
        self.due_at[slot] = self.clock[slot].due_at();
        self.last_considered[slot] = Default::default();
        self.dormancy[slot] = Default::default();
        self.sub_condition[slot] = None;
        self.sublevel[slot] = Default::default();
        self.set_asleep(slot, false);
    }

    /// Puts the actor in `slot` to sleep (off the due selection) or wakes it.
    pub fn set_asleep(&mut self, slot: usize, asleep: bool) {
        self.asleep[slot] = asleep;
        self.set_awake_lane(slot, !asleep);
    }

    /// Whether the due selection looks at `slot` at all (false: gone, torn off or asleep).
    pub fn set_awake_lane(&mut self, slot: usize, awake: bool) {
        let (page, lane) = (slot / crate::schema::PAGE_LANES, slot % crate::schema::PAGE_LANES);
        if self.awake.len() <= page {
            self.awake.resize(page + 1, 0);
            self.awake_pages.resize(self.awake.len().div_ceil(64), 0);
        }
        let word = &mut self.awake[page];
        if awake {
            *word |= 1 << lane;
        } else {
            *word &= !(1 << lane);
        }
        let bit = 1 << (page % 64);
        if *word != 0 {
            self.awake_pages[page / 64] |= bit;
        } else {
            self.awake_pages[page / 64] &= !bit;
        }
    }

    /// The pages with an awake lane, ascending.
    pub fn awake_page_list(&self) -> impl Iterator<Item = usize> + '_ {
        let words = self.awake_pages.iter().enumerate();
        words.flat_map(|(w, &bits)| crate::store::BitIter(bits).map(move |b| w * 64 + b))
    }
}
