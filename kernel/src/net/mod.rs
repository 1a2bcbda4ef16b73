//! The net layer: one server frame from compare to packets, and what client feedback does.
//!
//! ```text
//! tick(frame N)                                              modules, in the order a frame runs
//!   gather        per class: begin_tick, compare → ChangeSet, spawned/despawned   actors
//!                 slots (NetGUIDs, opens, closes), history.record(N); the frame's
//!                 changed actors, sorted
//!   plan          per connection (rayon): merge the changed actors with the      plan
//!                 connection's pending pairs; send = (changed ∪ resend ∪
//!                 changed-since-last-send) ∩ active(condition flags)
//!   share         every changed actor's changed fixed leaves encoded once        shared
//!   send          per connection (rayon): packets of at most `mtu` bytes,         send, wire::packet
//!                 records copied from the shared arena; each packet recorded
//!                 in flight; a full window defers the rest; keep-alives
//! receive_feedback  ack → retire (an acknowledged open makes the channel open);  reliability
//!                 nak → the lost leaves are resent (current values), a lost open
//!                 is sent again, a lost close queued again; forged, stale and
//!                 repeated feedback is ignored and counted; reopen requests
//! ```
//!
//! With [`DriverConfig::actor_level`] set, the frame after gather is UE's `ServerReplicateActors`
//! instead of plan/share/send for every changed actor: the consider list, relevancy, priority and
//! bandwidth per connection ([`level`], [`channels`]); only due actors are compared.
//!
//! Per-connection state ([`connection`]) is 16 bytes per (connection, actor) plus what is in
//! flight — dense tables without the actor level, sorted channel rows with it (only the actors a
//! connection has a channel with); the condition map is in [`condition`].
//!
//! NetGUIDs ([`NetGuid`]): a dynamic actor gets an even GUID from 2 upwards the first tick that
//! sees it spawned (or earlier, through [`NetDriver::assign_guid`]), never reused. Object-reference
//! properties hold GUIDs: the game writes `ObjectRef(driver.assign_guid(..)?.0)`.
//!
//! ```
//! use shadowrep::client::ClientWorld;
//! use shadowrep::net::{DriverConfig, NetDriver};
//! use shadowrep::prelude::*;
//! use std::sync::Arc;
//!
//! let layout = Arc::new(
//!     ClassBuilder::new("Door")
//!         .property(PropertyDecl::new("Open", PropType::Bool).notify(Notify::OnChanged))
//!         .build()
//!         .unwrap(),
//! );
//! let mut store = ClassStore::new(layout.clone());
//! let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
//! let class = driver.register_class(&mut store).unwrap();
//! let conn = driver.add_connection(false);
//! let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
//!
//! let door = store.spawn();
//! store.set(door, 0, &Value::Bool(true)).unwrap();
//! let guid = driver.assign_guid(class, &store, door).unwrap();
//! driver.tick(&mut [&mut store]).unwrap();
//! for packet in driver.take_packets(conn).unwrap() {
//!     client.receive(&packet).unwrap();
//! }
//! driver.receive_feedback(conn, &client.feedback()).unwrap();
//! assert_eq!(client.value(guid, 0), Some(Value::Bool(true)));
//! assert_eq!(client.take_notifies().len(), 1);
//! ```

pub(crate) mod actors;
pub mod budget;
pub mod channels;
pub mod condition;
pub mod connection;
pub mod consider;
pub mod dormancy;
pub mod fastarrays;
mod held;
pub mod level;
pub mod lifecycle;
pub(crate) mod pairs;
pub(crate) mod plan;
pub mod priority;
pub mod relevancy;
pub(crate) mod reliability;
pub(crate) mod send;
pub mod settings;
pub(crate) mod shared;
pub mod spatial;

pub use crate::ids::{ClassId, ConnectionId, Frame, LeafMask, NetGuid, Seq};
pub use channels::{Action, FrameDecisions, SendDecision};
pub use connection::{ConnectionStats, PairState};
pub use dormancy::{Dormancy, DormancyHook};
pub use fastarrays::{FastArrayItems, FastArrayKind};
pub use held::HeldActor;
pub use level::ChannelInfo;
pub use lifecycle::SubObjectCondition;
pub use relevancy::{RelevancyHook, Viewer};
pub use settings::{ActorLevelConfig, NetSettings};

use crate::compare::{ChangeSet, CompareConfig, CompareError, ShadowState};
use crate::history::History;
use crate::store::{ActorId, ClassStore};
use crate::wire::bunch::max_record_bits;
use crate::wire::feedback::read_feedback;
use crate::wire::packet::{max_body_bits, MAX_MTU, MIN_MTU};
use crate::wire::WireError;
use actors::{ActorNet, ChangedActor, ClassNet};
use condition::ActiveLeaves;
use connection::{pair, Connection};
use pairs::Pairs;
use rayon::prelude::*;
use reliability::Intake;
use shared::SharedArena;
use std::collections::HashMap;
use std::fmt;

/// How a driver runs.
#[derive(Clone, Copy, Debug)]
pub struct DriverConfig {
    /// Largest packet in bytes (UE's `MAX_PACKET_SIZE` is 1024), in `512..=8192`.
    pub mtu: usize,
    /// Encode each (actor, property) once per frame for every connection (UE's
    /// `ShareSerializedData`); off, every connection encodes for itself.
    pub shared_serialization: bool,
    /// Run per-connection work and shared encoding on the rayon pool.
    pub parallel: bool,
    /// Frames with fewer (actor, connection) candidates than this run on the calling thread even
    /// when `parallel`: an idle frame should cost next to nothing.
    pub min_parallel_items: usize,
    /// A connection with content in flight that sent nothing for this many frames sends a
    /// keep-alive, so a lost tail is found within about a round trip plus this interval (UE's
    /// `KeepAliveTime` is 0.2 s: 6 frames at 30 Hz).
    pub keep_alive_frames: u32,
    /// How to compare.
    pub compare: CompareConfig,
    /// Run the actor level (UE's `ServerReplicateActors`: viewers, relevancy, priority,
    /// bandwidth; [`level`]). `None`: every actor goes to every connection, as fast as the
    /// window allows.
    pub actor_level: Option<ActorLevelConfig>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self {
            mtu: 1024,
            shared_serialization: true,
            parallel: true,
            min_parallel_items: 2048,
            keep_alive_frames: 6,
            compare: CompareConfig::default(),
            actor_level: None,
        }
    }
}

/// Why a driver call was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum DriverError {
    /// `mtu` outside `512..=8192` bytes.
    MtuOutOfRange(usize),
    /// The per-pair state keeps one `u64` of leaves; this class has more.
    TooManyLeaves {
        /// Class name.
        class: String,
        /// Its leaf count.
        leaves: usize,
    },
    /// A record (or one array element) of this class may not fit one packet at this MTU.
    RecordTooLarge {
        /// Class name.
        class: String,
        /// Worst-case bits of its largest record.
        bits: usize,
    },
    /// The store is already registered with this driver.
    AlreadyRegistered(ClassId),
    /// No such class.
    UnknownClass(ClassId),
    /// No such connection.
    UnknownConnection(ConnectionId),
    /// A store that is not registered with this driver (or not the one registered as `ClassId`).
    UnknownStore,
    /// `tick` was not given the store of this class.
    MissingStore(ClassId),
    /// The actor id is stale.
    StaleActor(ActorId),
    /// A parent index out of range.
    NoSuchParent(usize),
    /// Feedback bytes did not decode (counted in the connection's statistics; nothing changed).
    Feedback(WireError),
    /// An actor-level setting was refused.
    ActorLevel(String),
    /// The call needs [`DriverConfig::actor_level`].
    ActorLevelOff,
    /// The parent is not a vector property, so it cannot be a class's location.
    NotALocation {
        /// Class name.
        class: String,
        /// The parent index.
        parent: usize,
    },
    /// The parent is not a (non-array) property of the kind spawn info needs.
    NotASpawnProperty {
        /// Class name.
        class: String,
        /// The parent index.
        parent: usize,
        /// The kind it should be.
        what: &'static str,
    },
    /// A static actor's path is empty, longer than [`crate::wire::open::MAX_PATH_BYTES`], or
    /// taken by another static actor.
    BadStaticPath(String),
    /// The actor already has a NetGUID (a tick or a call gave it a dynamic one): a static actor
    /// is registered before the first tick sees it.
    AlreadyReplicated(ActorId),
    /// No live actor has this GUID (a sub-object's owner).
    UnknownOwner(NetGuid),
    /// A sub-object's owner must be an actor, not itself nor another sub-object, and a
    /// sub-object cannot own sub-objects.
    SubObjectChain(NetGuid),
    /// No fast array kind with this index.
    UnknownFastArrayKind(fastarrays::FastArrayKind),
    /// No fast array has this GUID.
    UnknownFastArray(NetGuid),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::MtuOutOfRange(m) => write!(f, "mtu of {m} bytes is outside {MIN_MTU}..={MAX_MTU}"),
            DriverError::TooManyLeaves { class, leaves } => {
                write!(f, "class `{class}` has {leaves} leaf handles; the send state supports at most 64")
            }
            DriverError::RecordTooLarge { class, bits } => {
                write!(f, "class `{class}` has a record of up to {bits} bits, more than one packet holds")
            }
            DriverError::AlreadyRegistered(c) => write!(f, "this store is already registered as class {}", c.0),
            DriverError::UnknownClass(c) => write!(f, "no class with id {}", c.0),
            DriverError::UnknownConnection(c) => write!(f, "no connection with id {}", c.0),
            DriverError::UnknownStore => write!(f, "a store that is not registered with this driver"),
            DriverError::MissingStore(c) => write!(f, "tick needs the store of class {} too", c.0),
            DriverError::StaleActor(id) => write!(f, "actor {}:{} does not exist", id.index, id.generation),
            DriverError::NoSuchParent(p) => write!(f, "no parent property with index {p}"),
            DriverError::Feedback(e) => write!(f, "bad feedback: {e}"),
            DriverError::ActorLevel(why) => write!(f, "actor level: {why}"),
            DriverError::ActorLevelOff => write!(f, "this needs the actor level (DriverConfig::actor_level)"),
            DriverError::NotALocation { class, parent } => {
                write!(f, "parent {parent} of class `{class}` is not a (non-array) vector property")
            }
            DriverError::NotASpawnProperty { class, parent, what } => {
                write!(f, "parent {parent} of class `{class}` is not a (non-array) {what} property")
            }
            DriverError::BadStaticPath(why) => write!(f, "static actor path: {why}"),
            DriverError::UnknownOwner(g) => write!(f, "no live actor has GUID {g}"),
            DriverError::UnknownFastArrayKind(k) => write!(f, "no fast array kind {}", k.0),
            DriverError::UnknownFastArray(g) => write!(f, "no fast array has GUID {g}"),
            DriverError::SubObjectChain(g) => {
                write!(
                    f,
                    "{g}: a sub-object's owner is an actor (not itself, nor a sub-object), and owns no sub-objects"
                )
            }
            DriverError::AlreadyReplicated(id) => {
                write!(
                    f,
                    "actor {}:{} already has a NetGUID; register static actors before a tick sees them",
                    id.index, id.generation
                )
            }
        }
    }
}

impl std::error::Error for DriverError {}

/// What one tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Frame number.
    pub frame: Frame,
    /// Actors that changed.
    pub changed_actors: usize,
    /// (connection, actor) bunches written.
    pub bunches: usize,
    /// Packets written.
    pub packets: usize,
    /// Bytes written, over every connection.
    pub bytes: usize,
    /// Fixed-leaf records encoded into the shared arena.
    pub shared_records: usize,
    /// Actor level: actors on the consider list.
    pub due_actors: usize,
    /// Actor level: (connection, due actor) pairs relevant this frame.
    pub relevant_pairs: usize,
    /// Actor level: (connection, actor) pairs replicated this frame (opened or updated, even with
    /// nothing owed).
    pub sent_pairs: usize,
    /// Actor level: connections whose budget ran out before their candidates did.
    pub saturated_connections: usize,
    /// Where the frame's time went.
    pub stages: Stages,
}

/// Nanoseconds per step of a frame. The per-connection steps (`relevancy_query`, `priority`,
/// `write`) are summed over connections (CPU time: on N threads the wall time is about 1/N).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    /// Compare, slot tracking and history, every class.
    pub gather: u64,
    /// Actor level: the consider list.
    pub consider: u64,
    /// Actor level: dormancy's own work (connections looking for sleeping actors they have not
    /// met, before gather; actors falling asleep, after the connections).
    pub dormancy: u64,
    /// Actor level: building the relevancy index (grid, links).
    pub relevancy_index: u64,
    /// Shared serialization.
    pub share: u64,
    /// Every connection's step, wall time (without the actor level: planning and packets).
    pub connections: u64,
    /// Actor level, summed over connections: the relevant set of the viewers.
    pub relevancy_query: u64,
    /// Actor level, summed over connections: candidates and priority keys.
    pub priority: u64,
    /// Actor level, summed over connections: the send loop (relevancy rechecks, opens, closes,
    /// planning, packets).
    pub write: u64,
}

/// What [`NetDriver::receive_feedback`] did with a feedback message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedbackOutcome {
    /// It settled this many packets in flight.
    Applied(usize),
    /// It reports nothing newer than what was already settled (a duplicate, a reordered or
    /// repeated feedback): its acks are ignored (its reopen requests still count).
    Stale,
    /// It names a packet never sent: ignored entirely.
    NeverSent,
}

/// The server replication driver.
pub struct NetDriver {
    pub(crate) cfg: DriverConfig,
    pub(crate) frame: Frame,
    pub(crate) classes: Vec<ClassNet>,
    /// Store id → class index.
    pub(crate) by_store: HashMap<u64, u32>,
    pub(crate) conns: Vec<Connection>,
    pub(crate) next_guid: NetGuid,
    /// Live dynamic GUIDs → (class, slot).
    pub(crate) guids: crate::ids::GuidMap<(u32, u32)>,
    pub(crate) changed: Vec<ChangedActor>,
    /// The changed actors' replication state, parallel to `changed`: per-connection planning
    /// reads it in order instead of jumping around the actor tables once per connection.
    pub(crate) changed_actors: Vec<ActorNet>,
    pub(crate) arena: SharedArena,
    pub(crate) stats: TickStats,
    pub(crate) level: Option<level::Level>,
    /// Static actors (and destroyed ones), by GUID: their paths ([`lifecycle`]).
    pub(crate) statics: lifecycle::Statics,
    /// Sub-objects and their owners ([`lifecycle`]).
    pub(crate) subs: lifecycle::SubObjects,
    /// Fast arrays ([`fastarrays`]).
    pub(crate) fast: fastarrays::FastArrays,
    /// How long the last [`NetDriver::tick`] took: a long one runs the next on the pool.
    last_tick_ns: u64,
}

/// A tick from outside the rayon pool runs on one of its workers when the last took at least
/// this long (see [`NetDriver::tick`]).
const POOL_TICK_MIN_NS: u64 = 4_000_000;

impl NetDriver {
    /// A driver with no classes and no connections.
    pub fn new(cfg: DriverConfig) -> Result<Self, DriverError> {
        if !(MIN_MTU..=MAX_MTU).contains(&cfg.mtu) {
            return Err(DriverError::MtuOutOfRange(cfg.mtu));
        }
        let level = cfg.actor_level.map(level::Level::new).transpose()?;
        Ok(Self {
            level,
            cfg,
            frame: Frame(0),
            classes: Vec::new(),
            by_store: HashMap::new(),
            conns: Vec::new(),
            next_guid: NetGuid::FIRST_DYNAMIC,
            guids: Default::default(),
            changed: Vec::new(),
            changed_actors: Vec::new(),
            arena: SharedArena::default(),
            stats: TickStats::default(),
            statics: lifecycle::Statics::default(),
            subs: lifecycle::SubObjects::default(),
            fast: fastarrays::FastArrays::default(),
            last_tick_ns: 0,
        })
    }

    /// Starts watching `store`; its class id is the registration index.
    pub fn register_class(&mut self, store: &mut ClassStore) -> Result<ClassId, DriverError> {
        if let Some(&c) = self.by_store.get(&store.id()) {
            return Err(DriverError::AlreadyRegistered(ClassId(c)));
        }
        let layout = store.layout().clone();
        if layout.leaves.len() > 64 {
            return Err(DriverError::TooManyLeaves { class: layout.name.clone(), leaves: layout.leaves.len() });
        }
        // Every record (and every array element with its record head) must fit an otherwise
        // empty packet.
        let largest = (0..layout.leaves.len()).map(|leaf| max_record_bits(&layout, leaf)).max().unwrap_or(0);
        if largest > max_body_bits(self.cfg.mtu) {
            return Err(DriverError::RecordTooLarge { class: layout.name.clone(), bits: largest });
        }
        let array_leaves = layout
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, l)| l.array.is_some())
            .fold(LeafMask::EMPTY, |m, (i, _)| m | LeafMask::leaf(i));
        let object_leaves = layout
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, l)| match l.array {
                None => l.kind == crate::schema::LeafKind::Object,
                Some(a) => layout.arrays[a].elements.iter().any(|e| e.kind == crate::schema::LeafKind::Object),
            })
            .fold(LeafMask::EMPTY, |m, (i, _)| m | LeafMask::leaf(i));
        let active = ActiveLeaves::new(&layout);
        // Encoded once for every connection: the fixed leaves a plain simulated proxy receives
        // (physics or not). Owner-only, autonomous-only, initial-only and replay-only leaves
        // reach a connection or two, which encode them themselves — the arena would encode them
        // for nobody most frames.
        use condition::flags::{PHYSICS, SIMULATED};
        let shared_leaves = (active.get(SIMULATED) | active.get(SIMULATED | PHYSICS)) & !array_leaves;
        let id = ClassId(self.classes.len() as u32);
        self.by_store.insert(store.id(), id.0);
        self.classes.push(ClassNet {
            store_id: store.id(),
            shadow: ShadowState::new(store),
            history: History::new(layout.clone()),
            changes: ChangeSet::new(),
            active,
            actors: Vec::new(),
            seen_epochs: Vec::new(),
            seen_structure: None,
            array_leaves,
            shared_leaves,
            object_leaves,
            layout,
            cols: Default::default(),
        });
        for c in &mut self.conns {
            c.pairs.add_class();
        }
        Ok(id)
    }

    /// Checksums of the registered layouts, in class-id order (a client must match them).
    pub fn checksums(&self) -> Vec<u64> {
        self.classes.iter().map(|c| c.layout.checksum).collect()
    }

    /// Adds a connection whose first packet has sequence number 1; every live actor will be
    /// opened on it.
    pub fn add_connection(&mut self, replay: bool) -> ConnectionId {
        self.add_connection_at(replay, Seq(1))
    }

    /// Adds a connection whose first packet has sequence number `first` (a handshake may pick
    /// it at random, as UE's does; the client must be told: [`crate::client::ClientWorld::with_first_seq`]).
    pub fn add_connection_at(&mut self, replay: bool, first: Seq) -> ConnectionId {
        let mut c = Connection::new(replay, Pairs::new(false, self.classes.len()), self.cfg.mtu, first);
        self.level_connection(&mut c);
        // Static actors destroyed before it joined: its client loaded them with the level.
        c.closes.extend(self.statics.destroyed.iter().map(|&g| connection::PendingClose::destroyed(g)));
        for (ci, class) in self.classes.iter().enumerate().filter(|_| self.level.is_none()) {
            for (slot, a) in class.actors.iter().enumerate() {
                if a.alive {
                    c.queue(ci as u32, slot as u32);
                }
            }
        }
        self.conns.push(c);
        ConnectionId(self.conns.len() as u32 - 1)
    }

    /// Removes a connection: it sends nothing more and its state is freed. Its id stays taken
    /// (later calls with it are [`DriverError::UnknownConnection`]); actors it owned are owned
    /// by nobody.
    pub fn remove_connection(&mut self, conn: ConnectionId) -> Result<(), DriverError> {
        let ci = self.live(conn)?;
        self.conns[ci].remove();
        self.fast.remove_connection(ci);
        for c in &mut self.classes {
            for a in c.actors.iter_mut().filter(|a| a.owner == Some(conn.0)) {
                a.owner = None;
            }
        }
        Ok(())
    }

    /// The connections that exist, in id order.
    pub fn connections(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        self.conns.iter().enumerate().filter(|(_, c)| !c.removed).map(|(i, _)| ConnectionId(i as u32))
    }

    fn live(&self, conn: ConnectionId) -> Result<usize, DriverError> {
        match self.conns.get(conn.0 as usize) {
            Some(c) if !c.removed => Ok(conn.0 as usize),
            _ => Err(DriverError::UnknownConnection(conn)),
        }
    }

    /// Size of the per-(connection, actor) send state in bytes.
    pub fn pair_state_bytes() -> usize {
        std::mem::size_of::<PairState>()
    }

    /// Current frame number (0 before the first tick).
    pub fn frame(&self) -> Frame {
        self.frame
    }

    fn class_for(&self, class: ClassId, store: &ClassStore) -> Result<usize, DriverError> {
        let c = self.classes.get(class.0 as usize).ok_or(DriverError::UnknownClass(class))?;
        if c.store_id != store.id() {
            return Err(DriverError::UnknownStore);
        }
        Ok(class.0 as usize)
    }

    /// The NetGUID of a live actor, assigning one now (and announcing the actor to every
    /// connection) if no tick has seen it yet. A tick assigns GUIDs to new actors by itself;
    /// call this to reference an actor in a property before that tick.
    pub fn assign_guid(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<NetGuid, DriverError> {
        let ci = self.class_for(class, store)?;
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        Ok(self.ensure_actor(ci as u32, id.index, id.generation))
    }

    /// The NetGUID of an actor, if the driver has assigned one (no side effects).
    pub fn guid_of(&self, class: ClassId, id: ActorId) -> Option<NetGuid> {
        let a = self.classes.get(class.0 as usize)?.actors.get(id.index as usize)?;
        (a.alive && a.generation == id.generation).then_some(a.guid)
    }

    fn actor_mut(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<&mut ActorNet, DriverError> {
        self.assign_guid(class, store, id)?;
        Ok(&mut self.classes[class.0 as usize].actors[id.index as usize])
    }

    /// Sets which connection owns an actor (`None`: nobody) and whether the owner holds an
    /// autonomous proxy. Properties that become active for a connection are sent to it.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// // The player controlling it: owner-only and autonomous-only properties reach `conn` alone.
    /// driver.set_owner(class, &store, id, Some(conn), true).unwrap();
    /// assert_eq!(driver.owning_connection(class, id), Some(conn));
    /// driver.set_owner(class, &store, id, None, false).unwrap();
    /// assert_eq!(driver.owning_connection(class, id), None);
    /// # let _ = (guid, &mut client);
    /// ```
    pub fn set_owner(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        owner: Option<ConnectionId>,
        autonomous: bool,
    ) -> Result<(), DriverError> {
        if let Some(o) = owner {
            self.live(o)?;
        }
        self.class_for(class, store)?;
        let before = self.all_pair_flags(class.0, id.index);
        let a = self.actor_mut(class, store, id)?;
        a.owner = owner.map(|o| o.0);
        a.autonomous = autonomous;
        let guid = a.guid;
        self.wake_newly_active(class.0, id.index, &before);
        self.own_sub_objects(guid, owner.map(|o| o.0), autonomous);
        Ok(())
    }

    /// The connection that owns an actor ([`Self::set_owner`]), if any.
    pub fn owning_connection(&self, class: ClassId, id: ActorId) -> Option<ConnectionId> {
        self.guid_of(class, id)?;
        self.classes[class.0 as usize].actors[id.index as usize].owner.map(ConnectionId)
    }

    /// Sets whether an actor replicates physics (the SimulatedOrPhysics conditions).
    pub fn set_physics(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        physics: bool,
    ) -> Result<(), DriverError> {
        self.class_for(class, store)?;
        let before = self.all_pair_flags(class.0, id.index);
        self.actor_mut(class, store, id)?.physics = physics;
        self.wake_newly_active(class.0, id.index, &before);
        Ok(())
    }

    /// Switches a Custom (or Dynamic) condition property of one actor on or off (UE's
    /// `DOREPLIFETIME_ACTIVE_OVERRIDE`). Switching it on sends its current value.
    pub fn set_custom_active(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        parent: usize,
        active: bool,
    ) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let c = &self.classes[ci];
        if parent >= c.layout.parents.len() {
            return Err(DriverError::NoSuchParent(parent));
        }
        let leaves = c.active.parent(parent);
        let a = self.actor_mut(class, store, id)?;
        let was_inactive = !(a.custom_inactive & leaves).is_empty();
        if active {
            a.custom_inactive &= !leaves;
        } else {
            a.custom_inactive |= leaves;
        }
        if active && was_inactive {
            let ever = self.classes[ci].history.changed_since(id.index, Frame(0)) & leaves;
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                conn.owe(class.0, id.index, ever);
            }
        }
        Ok(())
    }

    fn all_pair_flags(&self, class: u32, slot: u32) -> Vec<u8> {
        (0..self.conns.len()).map(|c| self.pair_flags(class, slot, c)).collect()
    }

    fn pair_flags(&self, class: u32, slot: u32, conn: usize) -> u8 {
        let Some(a) = self.classes.get(class as usize).and_then(|c| c.actors.get(slot as usize)) else { return 0 };
        let Some(c) = self.conns.get(conn).filter(|c| !c.removed) else { return 0 };
        let acked = c.pair_ref(class, slot).is_some_and(|p| p.flags & pair::OPEN_ACKED != 0);
        a.flags(conn as u32, c.replay, acked)
    }

    /// After flags changed: leaves that became active for a connection are sent to it.
    fn wake_newly_active(&mut self, class: u32, slot: u32, before: &[u8]) {
        let ever = self.classes[class as usize].history.changed_since(slot, Frame(0));
        for (ci, &was) in before.iter().enumerate() {
            let now = self.pair_flags(class, slot, ci);
            let c = &self.classes[class as usize];
            let custom = c.actors[slot as usize].custom_inactive;
            let newly = c.active.get(now) & !c.active.get(was) & !custom & ever;
            if !newly.is_empty() && !self.conns[ci].removed {
                self.conns[ci].owe(class, slot, newly);
            }
        }
    }

    fn conn(&self, conn: ConnectionId) -> Result<&Connection, DriverError> {
        Ok(&self.conns[self.live(conn)?])
    }

    /// Packets produced for `conn` by the last tick (taken: a second call returns none).
    pub fn take_packets(&mut self, conn: ConnectionId) -> Result<Vec<Vec<u8>>, DriverError> {
        let packets = self.conn(conn)?.packets().map(|p| p.to_vec()).collect();
        let c = &mut self.conns[conn.0 as usize];
        c.out.clear();
        c.out_ends.clear();
        Ok(packets)
    }

    /// Packets produced for `conn` by the last tick, borrowed (no allocation); the next tick
    /// replaces them.
    pub fn packets(&self, conn: ConnectionId) -> Result<impl Iterator<Item = &[u8]> + '_, DriverError> {
        Ok(self.conn(conn)?.packets())
    }

    /// Counters of `conn`.
    pub fn connection_stats(&self, conn: ConnectionId) -> Result<ConnectionStats, DriverError> {
        let c = self.conn(conn)?;
        Ok(ConnectionStats { packets_in_flight: c.rel.in_flight() as u64, ..c.stats })
    }

    /// Bytes sent to `conn` so far.
    pub fn bytes_sent(&self, conn: ConnectionId) -> u64 {
        self.conns.get(conn.0 as usize).map_or(0, |c| c.stats.bytes_sent)
    }

    /// Packets sent to `conn` whose fate is not known yet.
    pub fn in_flight(&self, conn: ConnectionId) -> usize {
        self.conns.get(conn.0 as usize).map_or(0, |c| c.rel.in_flight())
    }

    /// Applies a client's feedback (see [`crate::wire::feedback`]): packets it received are
    /// retired, packets it missed have their content resent, actors it asks for are opened
    /// again. Feedback that is stale (duplicated, reordered, repeated) or names packets never
    /// sent changes nothing and is counted; bytes that do not decode are an error (and counted).
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// use shadowrep::net::FeedbackOutcome;
    ///
    /// driver.tick(&mut [&mut store]).unwrap();
    /// let packets = driver.take_packets(conn).unwrap();
    /// for packet in &packets {
    ///     client.receive(packet).unwrap();
    /// }
    /// // Once per frame in which packets arrived (`client.feedback_due()`), back to the server:
    /// let outcome = driver.receive_feedback(conn, &client.feedback()).unwrap();
    /// assert_eq!(outcome, FeedbackOutcome::Applied(packets.len()));
    /// assert_eq!(driver.in_flight(conn), 0);
    /// // The same feedback again (a duplicate on the wire) changes nothing.
    /// assert_eq!(driver.receive_feedback(conn, &client.feedback()).unwrap(), FeedbackOutcome::Stale);
    /// # let _ = guid;
    /// ```
    pub fn receive_feedback(&mut self, conn: ConnectionId, bytes: &[u8]) -> Result<FeedbackOutcome, DriverError> {
        let ci = self.live(conn)?;
        let fb = match read_feedback(bytes) {
            Ok(fb) => fb,
            Err(e) => {
                self.conns[ci].stats.feedback_malformed += 1;
                return Err(DriverError::Feedback(e));
            }
        };
        self.conns[ci].heard = self.server_time();
        let outcome = match self.conns[ci].rel.classify(&fb) {
            Intake::NeverSent => {
                self.conns[ci].stats.feedback_forged += 1;
                return Ok(FeedbackOutcome::NeverSent);
            }
            Intake::Stale => {
                self.conns[ci].stats.feedback_stale += 1;
                FeedbackOutcome::Stale
            }
            Intake::Settle => {
                let (classes, guids, c) = (&self.classes, &self.guids, &mut self.conns[ci]);
                let fast = &self.fast;
                let mut settled = 0;
                let mut entries = std::mem::take(&mut c.settled);
                while let Some((rec, delivered)) = c.rel.settle_next(&fb) {
                    reliability::apply_settled((ci, c), classes, guids, fast, rec, delivered, &mut entries);
                    settled += 1;
                }
                reliability::apply_entries(c, &mut entries);
                c.settled = entries;
                c.rel.settled(&fb);
                c.stats.feedback_applied += 1;
                FeedbackOutcome::Applied(settled)
            }
        };
        for &guid in &fb.reopen {
            self.reopen(ci, guid);
        }
        Ok(outcome)
    }

    /// A client got a bunch for `guid` but does not have the actor: open it again, if the
    /// server believes the open acknowledged (otherwise one is already on its way). Honoured at
    /// most once per round trip: the reopen clears the acknowledgement until a packet carrying
    /// the new open is acknowledged.
    fn reopen(&mut self, ci: usize, guid: NetGuid) {
        let c = &mut self.conns[ci];
        if self.fast.contains(guid) {
            if self.fast.reopen(ci, guid) {
                c.stats.reopens_honoured += 1;
            } else {
                c.stats.reopens_ignored += 1;
            }
            return;
        }
        let Some(&(class, slot)) = self.guids.get(&guid) else {
            c.stats.reopens_ignored += 1;
            return;
        };
        let Some(ps) = c.pairs.get_mut(class, slot).filter(|ps| ps.flags & pair::OPEN_ACKED != 0) else {
            c.stats.reopens_ignored += 1;
            return;
        };
        ps.flags &= !(pair::OPEN_ACKED | pair::OPEN_SENT);
        ps.sent_through = Frame(0);
        c.queue(class, slot);
        c.stats.reopens_honoured += 1;
    }

    /// One server frame. `stores` are the registered stores, in any order, each once.
    ///
    /// With [`DriverConfig::parallel`], the frame's parallel phases run on the current rayon
    /// pool. Best called from a thread of that pool — e.g. a game thread made a worker of the
    /// global pool with `rayon::ThreadPoolBuilder::use_current_thread`, or inside
    /// `pool.install` — so each phase starts on the calling thread at once. Called from outside
    /// any pool, a frame whose predecessor took 4 ms or more moves onto a worker of the global
    /// pool and the calling thread waits: one worker wake-up per frame instead of one per
    /// parallel phase.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// let stats = driver.tick(&mut [&mut store]).unwrap(); // compare, plan, write packets
    /// assert_eq!(stats.changed_actors, 1);
    /// for packet in driver.take_packets(conn).unwrap() {
    ///     client.receive(&packet).unwrap(); // over any transport
    /// }
    /// assert_eq!(client.value(guid, 0), Some(Value::U16(100)));
    /// ```
    pub fn tick(&mut self, stores: &mut [&mut ClassStore]) -> Result<TickStats, DriverError> {
        let start = std::time::Instant::now();
        // A large frame called from outside the pool runs on one of its workers: each parallel
        // phase then starts at once on this worker while the other wakes, instead of this
        // thread blocking until a sleeping worker wakes for it — on a loaded two-core host the
        // wake took 0.4–0.6 ms, paid by every phase (battle_royale's connections phase started
        // ~0.5 ms late on both workers). A smaller frame stays here: the one wake-up of the move
        // (~0.4 ms there) cost open_world's 2 ms frames more than their phases' wakes.
        let move_to_pool =
            self.cfg.parallel && self.last_tick_ns >= POOL_TICK_MIN_NS && rayon::current_thread_index().is_none();
        let stats = if move_to_pool { rayon::scope(|_| self.tick_body(stores)) } else { self.tick_body(stores) };
        self.last_tick_ns = start.elapsed().as_nanos() as u64;
        stats
    }

    fn tick_body(&mut self, stores: &mut [&mut ClassStore]) -> Result<TickStats, DriverError> {
        // Find each class's store before touching anything (store ids are unique and stores
        // cannot be cloned, so no class can be given twice).
        let mut order = vec![usize::MAX; self.classes.len()];
        for (i, s) in stores.iter().enumerate() {
            let &c = self.by_store.get(&s.id()).ok_or(DriverError::UnknownStore)?;
            order[c as usize] = i;
        }
        if let Some(missing) = order.iter().position(|&i| i == usize::MAX) {
            return Err(DriverError::MissingStore(ClassId(missing as u32)));
        }
        self.frame = Frame(self.frame.0 + 1);
        self.stats = TickStats { frame: self.frame, ..TickStats::default() };
        if let Some(level) = self.level.as_mut() {
            level.begin_frame(self.frame);
            let t = std::time::Instant::now();
            self.wake_for_viewers();
            self.stats.stages.dormancy = t.elapsed().as_nanos() as u64;
        }
        let t = std::time::Instant::now();
        for (ci, &si) in order.iter().enumerate() {
            self.gather_class(ci, stores[si])?;
        }
        self.stats.stages.gather = t.elapsed().as_nanos() as u64;
        self.fast.drop_orphans(&self.guids, &self.classes);
        if self.level.is_some() {
            let stores: Vec<&ClassStore> = order.iter().map(|&si| &*stores[si]).collect();
            self.tick_level(&stores);
            return Ok(self.stats);
        }
        self.collect_changed();
        self.stats.changed_actors = self.changed.len();
        let parallel = self.cfg.parallel && self.parallel_worth_it();
        let stores: Vec<&ClassStore> = order.iter().map(|&si| &*stores[si]).collect();
        let t = std::time::Instant::now();
        if self.cfg.shared_serialization {
            self.stats.shared_records = self.arena.encode(&self.changed, &self.classes, &stores, self.cfg.parallel);
        } else {
            self.arena.clear();
        }
        self.stats.stages.share = t.elapsed().as_nanos() as u64;
        let t = std::time::Instant::now();
        self.plan_and_write(&stores, parallel);
        self.stats.stages.connections = t.elapsed().as_nanos() as u64;
        Ok(self.stats)
    }

    /// Whether this frame's per-connection work is big enough to pay for waking the pool (an idle
    /// frame should cost next to nothing).
    fn parallel_worth_it(&self) -> bool {
        let pending: usize = self.conns.iter().map(|c| c.pending.len() + c.closes.len()).sum();
        self.changed.len() * self.conns.len() + pending >= self.cfg.min_parallel_items
    }

    /// Per connection, one after the other on a worker: what to send (a connection whose window
    /// is full is planned too — it is the only moment this frame's changes are visited for it;
    /// writing then hands everything back to the pairs as resends), then its closes and one
    /// bunch per actor into packets of at most `mtu` bytes. Planning and writing one connection
    /// together keeps its pair states in the cache between the two (planned for every
    /// connection first, a large world's pair states were gone by the time they were written).
    fn plan_and_write(&mut self, stores: &[&ClassStore], parallel: bool) {
        let (frame, changed) = (self.frame, (&self.changed[..], &self.changed_actors[..]));
        let ctx = send::WriteCtx {
            classes: &self.classes,
            stores,
            arena: self.cfg.shared_serialization.then_some(&self.arena),
            keep_alive_frames: self.cfg.keep_alive_frames,
            statics: &self.statics.paths,
            outers: &self.subs.outer,
            guids: &self.guids,
            fast: &self.fast,
        };
        let classes = &self.classes;
        let write = |(ci, conn): (usize, &mut Connection)| {
            plan::plan_connection(ci as u32, conn, classes, changed, frame);
            ctx.write_connection(ci as u32, conn)
        };
        let written: Vec<send::Written> = if parallel {
            self.conns.par_iter_mut().enumerate().map(write).collect()
        } else {
            self.conns.iter_mut().enumerate().map(write).collect()
        };
        for w in written {
            self.stats.bunches += w.bunches;
            self.stats.packets += w.packets;
            self.stats.bytes += w.bytes;
        }
    }

    /// Push-model validation's findings since the last call, over every class, leaving none:
    /// changes of push-based properties made without a dirty mark (not replicated, exactly as
    /// with validation off). Empty unless `DriverConfig::compare.validate_push` is on.
    pub fn take_unmarked_changes(&mut self) -> Vec<crate::compare::UnmarkedChange> {
        self.classes.iter_mut().flat_map(|c| c.shadow.take_unmarked_changes()).collect()
    }

    /// Class `class`'s per-property dirty statistics (counted while
    /// `DriverConfig::compare.dirty_stats` is on).
    pub fn dirty_stats(&self, class: ClassId) -> Result<&[crate::compare::PropertyDirtyStats], DriverError> {
        let c = self.classes.get(class.0 as usize).ok_or(DriverError::UnknownClass(class))?;
        Ok(c.shadow.dirty_stats())
    }
}

/// Maps a compare refusal (a shadow watching another store) to the driver's error; the driver
/// finds each class's store by id, so this cannot happen through it.
impl From<CompareError> for DriverError {
    fn from(_: CompareError) -> Self {
        DriverError::UnknownStore
    }
}
