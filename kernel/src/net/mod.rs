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
//! connection has a channel with); the condition map is in [`condition`]. The game's roles (owner,
//! autonomy, physics, Custom and Dynamic overrides) are set in `roles`; what each client was told
//! of its own role (the bit at the end of an actor's open, sent again when it changes) is kept
//! apart, per connection, in `proxy_roles`.
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
pub mod decisions;
pub mod dormancy;
mod error;
pub mod fastarrays;
mod feedback;
mod held;
pub mod level;
pub mod lifecycle;
mod opens;
pub(crate) mod pairs;
pub(crate) mod plan;
pub mod priority;
mod proxy_roles;
mod register;
pub mod relevancy;
pub(crate) mod reliability;
mod roles;
pub mod rpc;
pub(crate) mod send;
pub mod settings;
mod share;
pub(crate) mod shared;
pub mod spatial;
pub mod sublevels;
mod tick;
mod warm;

pub use crate::ids::{ClassId, ConnectionId, Frame, LeafMask, NetGuid, NetRole, Seq};
pub use channels::{Action, FrameDecisions, SendDecision};
pub use connection::{ConnectionStats, PairState};
pub use consider::UpdateFrequency;
pub use dormancy::{Dormancy, DormancyHook};
pub use error::DriverError;
pub use fastarrays::{FastArrayItems, FastArrayKind, FastArrayView};
pub use feedback::FeedbackOutcome;
pub use held::HeldActor;
pub use level::ChannelInfo;
pub use lifecycle::{NetGroups, ReplicationFlags, SubObjectCondition};
pub use priority::{PriorityHook, PriorityInput};
pub use relevancy::{RelevancyHook, Viewer, MAX_OWNER_DEPTH};
pub use rpc::{ConnectionFailure, FailedConnection, ReliableOverflow, ServerRpcEvent, MAX_UNTAKEN_SERVER_RPCS};
pub use settings::{ActorLevelConfig, NetSettings};
pub use sublevels::SublevelId;
pub use tick::{Stages, TickStats};

use crate::compare::CompareConfig;
use crate::store::ClassStore;
use crate::wire::packet::{MAX_MTU, MIN_MTU};
use actors::{ChangedActor, ClassNet};
use connection::Connection;
use shared::SharedArena;
use std::collections::HashMap;
use std::time::Duration;

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
    /// `KeepAliveTime` is 0.2 s: 6 frames at 30 Hz). With the actor level every connection
    /// does, in flight or not: its client hears from the server at least this often (and
    /// answers, so it stays net-ready) — a client may take a longer silence as the session
    /// gone.
    pub keep_alive_frames: u32,
    /// How to compare.
    pub compare: CompareConfig,
    /// Run the actor level (UE's `ServerReplicateActors`: viewers, relevancy, priority,
    /// bandwidth; [`level`]). `None`: every actor goes to every connection, as fast as the
    /// window allows.
    pub actor_level: Option<ActorLevelConfig>,
    /// What a connection does when a reliable call finds
    /// [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) waiting or in flight on it:
    /// fail, as UE's does (the default), or drop the call and go on.
    pub reliable_overflow: ReliableOverflow,
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
            reliable_overflow: ReliableOverflow::Close,
        }
    }
}

/// The server replication driver.
pub struct NetDriver {
    pub(crate) cfg: DriverConfig,
    pub(crate) frame: Frame,
    pub(crate) classes: Vec<ClassNet>,
    /// Store id → class index.
    pub(crate) by_store: HashMap<u64, u32>,
    /// By slot: a removed connection's slot goes to the next one added ([`Connection::id`] is
    /// the id the game knows).
    pub(crate) conns: Vec<Connection>,
    /// Live connections' ids → their slots.
    pub(crate) conn_slots: HashMap<u32, u32>,
    /// Slots of removed connections, for the next ones added.
    pub(crate) free_slots: Vec<u32>,
    /// The next connection's id.
    pub(crate) next_conn_id: u32,
    pub(crate) next_guid: NetGuid,
    /// Live dynamic GUIDs → (class, slot).
    pub(crate) guids: crate::ids::GuidMap<(u32, u32)>,
    pub(crate) changed: Vec<ChangedActor>,
    /// The changed actors' replication state and last change before this frame, parallel to
    /// `changed`: per-connection planning reads them in order instead of jumping around the
    /// actor tables and the history once per connection.
    pub(crate) changed_actors: Vec<actors::ChangedNet>,
    pub(crate) arena: SharedArena,
    pub(crate) stats: TickStats,
    pub(crate) level: Option<level::Level>,
    /// Static actors (and destroyed ones), by GUID: their paths ([`lifecycle`]).
    pub(crate) statics: lifecycle::Statics,
    /// Sub-objects and their owners ([`lifecycle`]).
    pub(crate) subs: lifecycle::SubObjects,
    /// Per actor (class, slot), leaves inactive for a connection since a role change
    /// ([`roles`]).
    pub(crate) inactive: roles::InactiveLeaves,
    /// Tear-offs not finished yet ([`lifecycle`]).
    pub(crate) tearing: Vec<lifecycle::Tearing>,
    /// Fast arrays ([`fastarrays`]).
    pub(crate) fast: fastarrays::FastArrays,
    /// Remote procedure calls made since the last tick, and the tick's ([`rpc`]).
    pub(crate) rpcs: rpc::Calls,
    /// Connections the driver ended and the game has not heard of
    /// ([`NetDriver::take_failed_connections`]).
    pub(crate) failed: Vec<FailedConnection>,
    /// Owner chains, when owning connections follow them
    /// ([`ActorLevelConfig::owner_chain_connections`]; [`roles`]).
    pub(crate) chains: Option<roles::OwnerChains>,
    /// How long the last [`NetDriver::tick`] took: a long one runs the next on the pool.
    last_tick_ns: u64,
    /// This tick keeps the pool's other workers awake ([`warm`]): its phases may go to the pool
    /// with less work.
    warm: bool,
}

/// A tick whose predecessor took at least this long runs on a worker of the rayon pool (moved
/// there from a thread outside it) and keeps the pool's other workers awake through its phases
/// ([`warm::Warm`]); a shorter one has no parallel phase worth a wake-up (see
/// [`NetDriver::tick`]).
const POOL_TICK_MIN_NS: u64 = 250_000;

/// Bounds of how long the other workers stay awake for one tick (four times the last tick's
/// time, clamped): the frame's end releases them sooner; the bound limits how long a companion
/// that a worker took inside another job's wait holds that job (it looks at the clock between
/// the jobs it runs).
const WARM_LIMIT_MIN: Duration = Duration::from_millis(2);
const WARM_LIMIT_MAX: Duration = Duration::from_millis(100);

impl NetDriver {
    /// A driver with no classes and no connections.
    pub fn new(cfg: DriverConfig) -> Result<Self, DriverError> {
        if !(MIN_MTU..=MAX_MTU).contains(&cfg.mtu) {
            return Err(DriverError::MtuOutOfRange(cfg.mtu));
        }
        let level = cfg.actor_level.map(level::Level::new).transpose()?;
        let chains = cfg.actor_level.filter(|l| l.owner_chain_connections).map(|_| roles::OwnerChains::default());
        Ok(Self {
            level,
            chains,
            cfg,
            frame: Frame(0),
            classes: Vec::new(),
            by_store: HashMap::new(),
            conns: Vec::new(),
            conn_slots: HashMap::new(),
            free_slots: Vec::new(),
            next_conn_id: 0,
            next_guid: NetGuid::FIRST_DYNAMIC,
            guids: Default::default(),
            changed: Vec::new(),
            changed_actors: Vec::new(),
            arena: SharedArena::default(),
            stats: TickStats::default(),
            statics: lifecycle::Statics::default(),
            subs: lifecycle::SubObjects::default(),
            tearing: Vec::new(),
            inactive: HashMap::new(),
            fast: fastarrays::FastArrays::default(),
            rpcs: rpc::Calls::default(),
            failed: Vec::new(),
            last_tick_ns: 0,
            warm: false,
        })
    }

    fn live(&self, conn: ConnectionId) -> Result<usize, DriverError> {
        self.conn_slots.get(&conn.0).map(|&slot| slot as usize).ok_or(DriverError::UnknownConnection(conn))
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
            return Err(match self.by_store.get(&store.id()) {
                Some(&other) => DriverError::WrongStore { class, registered_as: ClassId(other) },
                None => DriverError::UnknownStore,
            });
        }
        Ok(class.0 as usize)
    }

    fn conn(&self, conn: ConnectionId) -> Result<&Connection, DriverError> {
        Ok(&self.conns[self.live(conn)?])
    }

    /// Packets produced for `conn` by the last tick (taken: a second call returns none).
    pub fn take_packets(&mut self, conn: ConnectionId) -> Result<Vec<Vec<u8>>, DriverError> {
        let ci = self.live(conn)?;
        let packets = self.conns[ci].packets().map(|p| p.to_vec()).collect();
        let c = &mut self.conns[ci];
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
        self.conn(conn).map_or(0, |c| c.stats.bytes_sent)
    }

    /// Packets sent to `conn` whose fate is not known yet.
    pub fn in_flight(&self, conn: ConnectionId) -> usize {
        self.conn(conn).map_or(0, |c| c.rel.in_flight())
    }

    /// One server frame. `stores` are the registered stores, in any order, each once.
    ///
    /// With [`DriverConfig::parallel`], the frame's parallel phases run on the current rayon
    /// pool. Best called from a thread of that pool — e.g. a game thread made a worker of the
    /// global pool with `rayon::ThreadPoolBuilder::use_current_thread`, or inside
    /// `pool.install` — so each phase starts on the calling thread at once. Called from outside
    /// any pool, a frame whose predecessor took 0.25 ms or more moves onto a worker of the
    /// global pool and the calling thread waits: a wake-up each way per frame instead of two per
    /// parallel phase. Such a frame keeps the pool's other workers awake until it ends (the
    /// `net::warm` module's companions run the frame's phases as soon as they are forked, and
    /// spin between them): the other cores are busy for the frame's length, and no phase waits
    /// for a wake-up.
    ///
    /// A frame may end connections itself (a reliable-call overflow under
    /// [`ReliableOverflow::Close`]): ask [`Self::take_failed_connections`] after it.
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
        // A large frame runs on a worker with the other workers kept awake: each parallel phase
        // starts at once, its other halves taken as soon as they are forked. Called from outside
        // the pool, a phase would block this thread until a sleeping worker woke, and wake this
        // thread at its end — two wake-ups a phase; moved, the frame pays one each way. On a
        // two-core VM (Intel Xeon, session 61), a thread outside the pool: battle_royale 2.67–2.71
        // ms a frame moved with the pool warm against 2.92–3.01 staying (the rule was 4 ms
        // frames then), open_world 1.08–1.11 against 1.28–1.30; a thread of the pool
        // (`use_current_thread`), warm against cold: 2.56–2.58 against 2.66–2.81 and 1.01–1.04
        // against 1.10–1.17.
        let pooled = self.cfg.parallel && self.last_tick_ns >= POOL_TICK_MIN_NS;
        let move_to_pool = pooled && rayon::current_thread_index().is_none();
        let limit = Duration::from_nanos(self.last_tick_ns.saturating_mul(4)).clamp(WARM_LIMIT_MIN, WARM_LIMIT_MAX);
        let mut body = |driver: &mut Self| {
            let hold = pooled.then(|| warm::Warm::start(limit)).flatten();
            driver.warm = hold.is_some();
            let stats = driver.tick_body(stores);
            driver.warm = false;
            stats
        };
        let stats = if move_to_pool { rayon::scope(|_| body(self)) } else { body(self) };
        // The tick ended the orphans' channels (those it orphaned itself too, an owner found
        // gone by its gather) and replicated or kept what woke.
        self.conns.iter_mut().for_each(|c| c.since_tick.clear());
        self.fail_overflowed();
        self.last_tick_ns = start.elapsed().as_nanos() as u64;
        stats
    }
}
