//! The server side of replication: one frame from compare to packets, and what acks and naks do.
//!
//! ```text
//! tick(frame N):
//!   per class      begin_tick, compare → ChangeSet, find spawned/despawned slots (NetGUIDs,
//!                  opens, closes), history.record(N)
//!   changed list   (class, slot, changed leaves) for every actor that changed, shared
//!   per connection (rayon) merge the changed list with the connection's pending pairs
//!                  (opens, resends, newly active properties); per pair:
//!                    send = (changed ∪ resend ∪ changed-since-last-send) ∩ active(flags)
//!   shared arena   union of every connection's fixed leaves per actor, each encoded once as a
//!                  `handle + value` bit record (rayon over chunks of actors)
//!   per connection (rayon) packets of at most `mtu` bytes: closes, then one bunch per actor;
//!                  records are bit-copied from the arena (or encoded here when sharing is off);
//!                  each packet's content is kept in flight until its ack or nak
//! receive_feedback: ack → retire (an acknowledged open makes the channel open);
//!                   nak → the lost leaves go to the pair's resend set (current value next frame),
//!                   a lost open is sent again, a lost close is queued again;
//!                   a packet with no news for `ack_timeout_frames` counts as a nak
//! ```
//!
//! Dynamic arrays are written whole (count and every element) and per connection, split across
//! packets between elements when large; fixed leaves go through the shared arena.
//!
//! NetGUIDs: dynamic actors get even GUIDs from 2 upwards, never reused; static objects are odd
//! ([`NetDriver::register_static`]). Object-reference properties hold GUIDs: the game writes
//! `ObjectRef(driver.guid(..))`.
//!
//! ```
//! use shadowrep::client::ClientWorld;
//! use shadowrep::driver::{DriverConfig, NetDriver};
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
//! driver.register_class(&mut store).unwrap();
//! let conn = driver.add_connection(false);
//! let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
//!
//! let door = store.spawn();
//! store.set(door, 0, &Value::Bool(true)).unwrap();
//! let guid = driver.guid(shadowrep::driver::ClassId(0), &store, door).unwrap();
//! driver.tick(&mut [&mut store]).unwrap();
//! for packet in driver.take_packets(conn).unwrap() {
//!     client.receive(&packet).unwrap();
//! }
//! driver.receive_feedback(conn, &client.feedback()).unwrap();
//! assert_eq!(client.value(guid, 0), Some(Value::Bool(true)));
//! assert_eq!(client.take_notifies().len(), 1);
//! ```

use crate::compare::{ChangeSet, CompareConfig, CompareError, ShadowState};
use crate::connection::{flags, pair, ActiveLeaves, PairState};
use crate::history::History;
use crate::schema::{ClassLayout, PAGE_LANES};
use crate::store::{ActorId, BitIter, ClassStore};
use crate::wire::bunch::{begin_bunch, begin_packet, end_bunch, end_packet, read_feedback, write_leaf_record};
use crate::wire::{BitWriter, WireError};
use rayon::prelude::*;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// How a driver runs.
#[derive(Clone, Copy, Debug)]
pub struct DriverConfig {
    /// Largest packet in bytes (UE's `MAX_PACKET_SIZE` is 1024); at least 512.
    pub mtu: usize,
    /// Encode each (actor, property) once per frame for every connection (UE's
    /// `ShareSerializedData`); off, every connection encodes for itself.
    pub shared_serialization: bool,
    /// Run per-connection work and shared encoding on the rayon pool.
    pub parallel: bool,
    /// Frames with fewer (actor, connection) candidates than this run on the calling thread even
    /// when `parallel`: an idle frame should cost next to nothing.
    pub min_parallel_items: usize,
    /// A packet with no news for this many frames counts as lost and its content is resent (the
    /// last packets before a quiet spell have no later packet whose ack would reveal their loss).
    pub ack_timeout_frames: u32,
    /// How to compare.
    pub compare: CompareConfig,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self {
            mtu: 1024,
            shared_serialization: true,
            parallel: true,
            min_parallel_items: 2048,
            ack_timeout_frames: 30,
            compare: CompareConfig::default(),
        }
    }
}

/// Identifies a registered class (its store).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassId(pub u32);

/// Identifies a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u32);

/// Why a driver call was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum DriverError {
    /// `mtu` below 512 bytes: a largest fixed record might not fit a packet.
    MtuTooSmall(usize),
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
    /// No such class.
    UnknownClass(ClassId),
    /// No such connection.
    UnknownConnection(ConnectionId),
    /// `tick` got stores that are not the registered ones, in registration order.
    StoreMismatch,
    /// The actor id is stale.
    StaleActor(ActorId),
    /// A parent index out of range.
    NoSuchParent(usize),
    /// A GUID that is not odd (static objects have odd GUIDs).
    NotStatic(u64),
    /// Feedback bytes did not decode.
    Feedback(WireError),
    /// The compare refused.
    Compare(CompareError),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::MtuTooSmall(m) => write!(f, "mtu of {m} bytes is below the minimum of 512"),
            DriverError::TooManyLeaves { class, leaves } => {
                write!(f, "class `{class}` has {leaves} leaf handles; the send state supports at most 64")
            }
            DriverError::RecordTooLarge { class, bits } => {
                write!(f, "class `{class}` has a record of up to {bits} bits, more than one packet holds")
            }
            DriverError::UnknownClass(c) => write!(f, "no class with id {}", c.0),
            DriverError::UnknownConnection(c) => write!(f, "no connection with id {}", c.0),
            DriverError::StoreMismatch => write!(f, "tick needs the registered stores, in registration order"),
            DriverError::StaleActor(id) => write!(f, "actor {}:{} does not exist", id.index, id.generation),
            DriverError::NoSuchParent(p) => write!(f, "no parent property with index {p}"),
            DriverError::NotStatic(g) => write!(f, "GUID {g} is not odd; static GUIDs are odd"),
            DriverError::Feedback(e) => write!(f, "bad feedback: {e}"),
            DriverError::Compare(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DriverError {}

impl From<CompareError> for DriverError {
    fn from(e: CompareError) -> Self {
        DriverError::Compare(e)
    }
}

/// What one tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Frame number.
    pub frame: u32,
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
}

/// Replication state of one actor slot.
#[derive(Clone, Copy, Debug, Default)]
struct ActorNet {
    guid: u64,
    generation: u32,
    alive: bool,
    owner: Option<u32>,
    autonomous: bool,
    physics: bool,
    /// Leaves of Custom/Dynamic parents switched off for this actor.
    custom_inactive: u64,
}

/// One registered class: its shadow, history and actors.
struct ClassNet {
    layout: Arc<ClassLayout>,
    store_id: u64,
    shadow: ShadowState,
    history: History,
    changes: ChangeSet,
    active: ActiveLeaves,
    actors: Vec<ActorNet>,
    seen_epochs: Vec<u32>,
    /// Leaves that are dynamic arrays (written per connection, not shared).
    array_leaves: u64,
}

/// What one packet carried for one actor.
#[derive(Clone, Copy, Debug)]
struct SentEntry {
    class: u32,
    slot: u32,
    guid: u64,
    leaves: u64,
    open: bool,
}

/// A packet in flight.
#[derive(Clone, Debug)]
struct PacketRecord {
    seq: u32,
    frame: u32,
    /// Entries of this packet, at the front of the connection's `sent` ring once the packets
    /// before it are settled.
    entries: u32,
    /// Closes of this packet, likewise in `sent_closes`.
    closes: u32,
}

/// One actor to send to one connection this frame.
#[derive(Clone, Copy, Debug)]
struct SendItem {
    class: u32,
    slot: u32,
    guid: u64,
    leaves: u64,
    open: bool,
}

/// The server's state for one client.
struct Connection {
    replay: bool,
    next_seq: u32,
    pairs: Vec<Vec<PairState>>,
    pending: Vec<(u32, u32)>,
    closes: Vec<u64>,
    in_flight: VecDeque<PacketRecord>,
    /// What each packet in flight carried, in packet order.
    sent: VecDeque<SentEntry>,
    sent_closes: VecDeque<u64>,
    /// This frame's packets, back to back and byte-aligned, written in place;
    /// `out_ends[i]` is the byte where packet `i` ends.
    writer: BitWriter,
    out_ends: Vec<usize>,
    sends: Vec<SendItem>,
    bytes_sent: u64,
}

impl Connection {
    fn queue(&mut self, class: u32, slot: u32) {
        let ps = &mut self.pairs[class as usize][slot as usize];
        if ps.flags & pair::PENDING == 0 {
            ps.flags |= pair::PENDING;
            self.pending.push((class, slot));
        }
    }

    fn pair(&mut self, class: u32, slot: u32) -> &mut PairState {
        let v = &mut self.pairs[class as usize];
        if v.len() <= slot as usize {
            v.resize(slot as usize + 1, PairState::default());
        }
        &mut v[slot as usize]
    }
}

/// The frame's shared encodings: for each actor that changed, its changed fixed leaves as one
/// whole bunch and as one span per record.
#[derive(Default)]
struct Arena {
    /// (class, slot, leaves encoded), sorted by actor.
    keys: Vec<(u32, u32, u64)>,
    /// Per key, index of its whole-bunch span; its record spans follow in leaf order.
    first_span: Vec<u32>,
    /// (chunk, bit start, bit length).
    spans: Vec<(u32, u32, u32)>,
    chunks: Vec<BitWriter>,
}

/// The server replication driver.
pub struct NetDriver {
    cfg: DriverConfig,
    frame: u32,
    classes: Vec<ClassNet>,
    conns: Vec<Connection>,
    next_guid: u64,
    changed: Vec<(u32, u32, u64)>,
    /// The changed actors' replication state, parallel to `changed`: per-connection planning
    /// reads it in order instead of jumping around the actor tables once per connection.
    changed_actors: Vec<ActorNet>,
    arena: Arena,
    stats: TickStats,
}

impl NetDriver {
    /// A driver with no classes and no connections.
    pub fn new(cfg: DriverConfig) -> Result<Self, DriverError> {
        if cfg.mtu < 512 {
            return Err(DriverError::MtuTooSmall(cfg.mtu));
        }
        Ok(Self {
            cfg,
            frame: 0,
            classes: Vec::new(),
            conns: Vec::new(),
            next_guid: 2,
            changed: Vec::new(),
            changed_actors: Vec::new(),
            arena: Arena::default(),
            stats: TickStats::default(),
        })
    }

    /// Starts watching `store`; its class id is the registration index, and `tick` takes the
    /// stores in that order.
    pub fn register_class(&mut self, store: &mut ClassStore) -> Result<ClassId, DriverError> {
        let layout = store.layout().clone();
        if layout.leaves.len() > 64 {
            return Err(DriverError::TooManyLeaves { class: layout.name.clone(), leaves: layout.leaves.len() });
        }
        // Every record (and every array element) must fit an otherwise empty packet.
        let room = self.cfg.mtu * 8 - 256;
        let record = |kind| 24 + crate::wire::max_leaf_bits(kind);
        let largest = layout
            .leaves
            .iter()
            .map(|l| match l.array {
                Some(a) => layout.arrays[a].elements.iter().map(|e| record(e.kind)).sum::<usize>() + 48,
                None => record(l.kind),
            })
            .max()
            .unwrap_or(0);
        if largest > room {
            return Err(DriverError::RecordTooLarge { class: layout.name.clone(), bits: largest });
        }
        let array_leaves =
            layout.leaves.iter().enumerate().filter(|(_, l)| l.array.is_some()).fold(0u64, |m, (i, _)| m | 1 << i);
        self.classes.push(ClassNet {
            store_id: store.id(),
            shadow: ShadowState::new(store),
            history: History::new(layout.clone()),
            changes: ChangeSet::new(),
            active: ActiveLeaves::new(&layout),
            actors: Vec::new(),
            seen_epochs: Vec::new(),
            array_leaves,
            layout,
        });
        for c in &mut self.conns {
            c.pairs.push(Vec::new());
        }
        Ok(ClassId(self.classes.len() as u32 - 1))
    }

    /// Checksums of the registered layouts, in class-id order (a client must match them).
    pub fn checksums(&self) -> Vec<u64> {
        self.classes.iter().map(|c| c.layout.checksum).collect()
    }

    /// Adds a connection; every live actor will be opened on it.
    pub fn add_connection(&mut self, replay: bool) -> ConnectionId {
        let mut c = Connection {
            replay,
            next_seq: 1,
            pairs: self.classes.iter().map(|_| Vec::new()).collect(),
            pending: Vec::new(),
            closes: Vec::new(),
            in_flight: VecDeque::new(),
            sent: VecDeque::new(),
            sent_closes: VecDeque::new(),
            writer: BitWriter::new(),
            out_ends: Vec::new(),
            sends: Vec::new(),
            bytes_sent: 0,
        };
        for (ci, class) in self.classes.iter().enumerate() {
            c.pairs[ci].resize(class.actors.len(), PairState::default());
            for (slot, a) in class.actors.iter().enumerate() {
                if a.alive {
                    c.queue(ci as u32, slot as u32);
                }
            }
        }
        self.conns.push(c);
        ConnectionId(self.conns.len() as u32 - 1)
    }

    /// Size of the per-(connection, actor) send state in bytes.
    pub fn pair_state_bytes() -> usize {
        std::mem::size_of::<PairState>()
    }

    /// Current frame number (0 before the first tick).
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// Validates a static object's GUID (odd); the client must know it too.
    pub fn register_static(&self, guid: u64) -> Result<u64, DriverError> {
        if guid % 2 == 1 {
            Ok(guid)
        } else {
            Err(DriverError::NotStatic(guid))
        }
    }

    fn class_mut(&mut self, class: ClassId) -> Result<&mut ClassNet, DriverError> {
        self.classes.get_mut(class.0 as usize).ok_or(DriverError::UnknownClass(class))
    }

    /// The NetGUID of a live actor, assigning one (and queueing its open on every connection) if
    /// this is the first time the driver hears of it.
    pub fn guid(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<u64, DriverError> {
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        let c = self.class_mut(class)?;
        if c.store_id != store.id() {
            return Err(DriverError::StoreMismatch);
        }
        Ok(self.ensure_actor(class.0, id.index, id.generation))
    }

    fn ensure_actor(&mut self, class: u32, slot: u32, generation: u32) -> u64 {
        let c = &mut self.classes[class as usize];
        if c.actors.len() <= slot as usize {
            c.actors.resize(slot as usize + 1, ActorNet::default());
        }
        let a = &mut c.actors[slot as usize];
        if a.alive && a.generation == generation {
            return a.guid;
        }
        if a.alive {
            // The slot's previous actor died unseen: close it first.
            let old = a.guid;
            self.retire_actor(class, slot, old);
        }
        let guid = self.next_guid;
        self.next_guid += 2;
        let c = &mut self.classes[class as usize];
        c.actors[slot as usize] = ActorNet { guid, generation, alive: true, ..ActorNet::default() };
        c.history.clear_slot(slot);
        for conn in &mut self.conns {
            *conn.pair(class, slot) = PairState::default();
            conn.queue(class, slot);
        }
        guid
    }

    fn retire_actor(&mut self, class: u32, slot: u32, guid: u64) {
        let c = &mut self.classes[class as usize];
        c.actors[slot as usize].alive = false;
        c.history.clear_slot(slot);
        for conn in &mut self.conns {
            let ps = std::mem::take(conn.pair(class, slot));
            if ps.flags & pair::EVER_OPENED != 0 {
                conn.closes.push(guid);
            }
        }
    }

    fn actor_mut(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<&mut ActorNet, DriverError> {
        self.guid(class, store, id)?;
        Ok(&mut self.classes[class.0 as usize].actors[id.index as usize])
    }

    /// Sets which connection owns an actor (`None`: nobody) and whether the owner holds an
    /// autonomous proxy. Properties that become active for a connection are sent to it.
    pub fn set_owner(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        owner: Option<ConnectionId>,
        autonomous: bool,
    ) -> Result<(), DriverError> {
        if let Some(o) = owner {
            if o.0 as usize >= self.conns.len() {
                return Err(DriverError::UnknownConnection(o));
            }
        }
        let before: Vec<u8> = (0..self.conns.len()).map(|c| self.pair_flags(class.0, id.index, c)).collect();
        let a = self.actor_mut(class, store, id)?;
        a.owner = owner.map(|o| o.0);
        a.autonomous = autonomous;
        self.wake_newly_active(class.0, id.index, &before);
        Ok(())
    }

    /// Sets whether an actor replicates physics (the SimulatedOrPhysics conditions).
    pub fn set_physics(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        physics: bool,
    ) -> Result<(), DriverError> {
        let before: Vec<u8> = (0..self.conns.len()).map(|c| self.pair_flags(class.0, id.index, c)).collect();
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
        let c = self.classes.get(class.0 as usize).ok_or(DriverError::UnknownClass(class))?;
        if parent >= c.layout.parents.len() {
            return Err(DriverError::NoSuchParent(parent));
        }
        let leaves = c.active.parent(parent);
        let a = self.actor_mut(class, store, id)?;
        let was_inactive = a.custom_inactive & leaves != 0;
        if active {
            a.custom_inactive &= !leaves;
        } else {
            a.custom_inactive |= leaves;
        }
        if active && was_inactive {
            let ever = self.classes[class.0 as usize].history.changed_since(id.index, 0) & leaves;
            for conn in &mut self.conns {
                conn.pair(class.0, id.index).resend |= ever;
                conn.queue(class.0, id.index);
            }
        }
        Ok(())
    }

    fn pair_flags(&self, class: u32, slot: u32, conn: usize) -> u8 {
        let Some(a) = self.classes.get(class as usize).and_then(|c| c.actors.get(slot as usize)) else { return 0 };
        let Some(c) = self.conns.get(conn) else { return 0 };
        let acked = c.pairs[class as usize].get(slot as usize).is_some_and(|p| p.flags & pair::OPEN_ACKED != 0);
        actor_flags(a, conn as u32, c.replay, acked)
    }

    /// After flags changed: leaves that became active for a connection are sent to it.
    fn wake_newly_active(&mut self, class: u32, slot: u32, before: &[u8]) {
        let ever = self.classes[class as usize].history.changed_since(slot, 0);
        for (ci, &was) in before.iter().enumerate() {
            let now = self.pair_flags(class, slot, ci);
            let c = &self.classes[class as usize];
            let custom = c.actors[slot as usize].custom_inactive;
            let newly = c.active.get(now) & !c.active.get(was) & !custom & ever;
            if newly != 0 {
                let conn = &mut self.conns[ci];
                conn.pair(class, slot).resend |= newly;
                conn.queue(class, slot);
            }
        }
    }

    /// Packets produced for `conn` by the last tick (taken: a second call returns none).
    pub fn take_packets(&mut self, conn: ConnectionId) -> Result<Vec<Vec<u8>>, DriverError> {
        let packets = self.packets(conn)?.map(|p| p.to_vec()).collect();
        let c = &mut self.conns[conn.0 as usize];
        c.writer.clear();
        c.out_ends.clear();
        Ok(packets)
    }

    /// Packets produced for `conn` by the last tick, borrowed (no allocation); the next tick
    /// replaces them.
    pub fn packets(&self, conn: ConnectionId) -> Result<impl Iterator<Item = &[u8]> + '_, DriverError> {
        let c = self.conns.get(conn.0 as usize).ok_or(DriverError::UnknownConnection(conn))?;
        let starts = std::iter::once(0).chain(c.out_ends.iter().copied());
        let bytes = c.writer.bytes();
        Ok(starts.zip(c.out_ends.iter().copied()).map(move |(a, b)| &bytes[a..b]))
    }

    /// Bytes sent to `conn` so far.
    pub fn bytes_sent(&self, conn: ConnectionId) -> u64 {
        self.conns.get(conn.0 as usize).map_or(0, |c| c.bytes_sent)
    }

    /// Packets sent to `conn` whose fate is not known yet.
    pub fn in_flight(&self, conn: ConnectionId) -> usize {
        self.conns.get(conn.0 as usize).map_or(0, |c| c.in_flight.len())
    }

    /// Applies a client's acknowledgement feedback (see [`crate::wire::bunch`]): packets it
    /// received are retired, packets it missed have their content resent. Duplicated, late and
    /// reordered feedback is harmless.
    pub fn receive_feedback(&mut self, conn: ConnectionId, bytes: &[u8]) -> Result<(), DriverError> {
        let (highest, history) = read_feedback(bytes).map_err(DriverError::Feedback)?;
        let ci = conn.0 as usize;
        if ci >= self.conns.len() {
            return Err(DriverError::UnknownConnection(conn));
        }
        while self.conns[ci].in_flight.front().is_some_and(|r| r.seq <= highest) {
            let Some(rec) = self.conns[ci].in_flight.pop_front() else { break };
            let back = highest - rec.seq;
            let delivered = back == 0 || (back <= 32 && history >> (back - 1) & 1 != 0);
            self.settle(ci, rec, delivered);
        }
        Ok(())
    }

    fn settle(&mut self, ci: usize, rec: PacketRecord, delivered: bool) {
        let (classes, conn) = (&self.classes, &mut self.conns[ci]);
        for _ in 0..rec.entries {
            let Some(e) = conn.sent.pop_front() else { break };
            let a = &classes[e.class as usize].actors[e.slot as usize];
            if !a.alive || a.guid != e.guid {
                continue;
            }
            let ps = conn.pair(e.class, e.slot);
            if delivered {
                if e.open {
                    ps.flags |= pair::OPEN_ACKED;
                }
            } else {
                ps.resend |= e.leaves;
                if e.open {
                    ps.flags &= !pair::OPEN_SENT;
                }
                conn.queue(e.class, e.slot);
            }
        }
        for _ in 0..rec.closes {
            let Some(guid) = conn.sent_closes.pop_front() else { break };
            if !delivered {
                conn.closes.push(guid);
            }
        }
    }

    /// One server frame. `stores` are the registered stores, in registration order.
    pub fn tick(&mut self, stores: &mut [&mut ClassStore]) -> Result<TickStats, DriverError> {
        if stores.len() != self.classes.len() || stores.iter().zip(&self.classes).any(|(s, c)| s.id() != c.store_id) {
            return Err(DriverError::StoreMismatch);
        }
        self.frame += 1;
        let frame = self.frame;
        self.stats = TickStats { frame, ..TickStats::default() };
        for (ci, store) in stores.iter_mut().enumerate() {
            store.begin_tick();
            let c = &mut self.classes[ci];
            c.shadow.compare(store, &self.cfg.compare, &mut c.changes)?;
            self.track_slots(ci as u32, store);
            let c = &mut self.classes[ci];
            c.history.record(frame, &c.changes);
        }
        self.expire_in_flight();
        self.collect_changed();
        self.stats.changed_actors = self.changed.len();
        self.plan_sends();
        let stores: Vec<&ClassStore> = stores.iter().map(|s| &**s).collect();
        if self.cfg.shared_serialization {
            self.encode_shared(&stores);
        }
        self.write_packets(&stores);
        Ok(self.stats)
    }

    /// Packets without news for `ack_timeout_frames` count as lost.
    fn expire_in_flight(&mut self) {
        let deadline = self.frame.saturating_sub(self.cfg.ack_timeout_frames);
        for ci in 0..self.conns.len() {
            while self.conns[ci].in_flight.front().is_some_and(|r| r.frame < deadline) {
                let Some(rec) = self.conns[ci].in_flight.pop_front() else { break };
                self.settle(ci, rec, false);
            }
        }
    }

    /// Finds actors spawned and despawned since the last tick (pages whose epoch moved).
    fn track_slots(&mut self, class: u32, store: &ClassStore) {
        let epochs = store.epochs();
        let c = &mut self.classes[class as usize];
        c.seen_epochs.resize(epochs.len(), u32::MAX);
        let mut changed_pages = Vec::new();
        for (p, (&e, seen)) in epochs.iter().zip(c.seen_epochs.iter_mut()).enumerate() {
            if e != *seen {
                *seen = e;
                changed_pages.push(p);
            }
        }
        for p in changed_pages {
            let occupied = store.occupied()[p];
            for lane in 0..PAGE_LANES {
                let slot = (p * PAGE_LANES + lane) as u32;
                let Some(&generation) = store.generations().get(slot as usize) else { break };
                let live = occupied >> lane & 1 != 0;
                let known = self.classes[class as usize].actors.get(slot as usize).copied().unwrap_or_default();
                if known.alive && (!live || known.generation != generation) {
                    self.retire_actor(class, slot, known.guid);
                }
                if live {
                    self.ensure_actor(class, slot, generation);
                }
            }
        }
    }

    /// The frame's changed actors with their changed leaves, sorted by (class, slot).
    fn collect_changed(&mut self) {
        self.changed.clear();
        self.changed_actors.clear();
        for (ci, c) in self.classes.iter().enumerate() {
            let leaves = c.layout.leaves.len();
            for p in 0..c.changes.pages() {
                let lanes = c.changes.page_lanes(p);
                if lanes == 0 {
                    continue;
                }
                let mut per_lane = [0u64; PAGE_LANES];
                for leaf in 0..leaves {
                    for lane in BitIter(c.changes.leaf_mask(p, leaf)) {
                        per_lane[lane] |= 1 << leaf;
                    }
                }
                for lane in BitIter(lanes) {
                    let slot = p * PAGE_LANES + lane;
                    self.changed.push((ci as u32, slot as u32, per_lane[lane]));
                    self.changed_actors.push(c.actors.get(slot).copied().unwrap_or_default());
                }
            }
        }
    }

    /// Per connection: what to send to whom.
    fn plan_sends(&mut self) {
        let (classes, frame) = (&self.classes, self.frame);
        let changed = (&self.changed[..], &self.changed_actors[..]);
        let plan = |(ci, conn): (usize, &mut Connection)| plan_connection(ci as u32, conn, classes, changed, frame);
        if self.cfg.parallel && self.parallel_worth_it() {
            self.conns.par_iter_mut().enumerate().for_each(plan);
        } else {
            self.conns.iter_mut().enumerate().for_each(plan);
        }
    }

    /// Encodes the union of every connection's fixed leaves, once per (actor, leaf).
    fn encode_shared(&mut self, stores: &[&ClassStore]) {
        // What nearly every connection needs is what changed this frame: encode that, once.
        // Leaves only some connections need (resends, first sends, newly active properties) are
        // encoded by those connections themselves.
        let arena = &mut self.arena;
        arena.keys.clear();
        for &(class, slot, leaves) in &self.changed {
            let fixed = leaves & !self.classes[class as usize].array_leaves;
            if fixed != 0 {
                arena.keys.push((class, slot, fixed));
            }
        }
        let classes = &self.classes;
        const CHUNK: usize = 256;
        let encode = |keys: &[(u32, u32, u64)]| {
            let mut w = BitWriter::new();
            let mut spans = Vec::new();
            let mut buf = [0u8; 256];
            for &(class, slot, leaves) in keys {
                let c = &classes[class as usize];
                // The whole bunch (header, records, terminator), so a connection that gets
                // exactly these leaves copies one span; each record is a span inside it.
                let bunch = spans.len();
                let bunch_start = w.len_bits();
                spans.push((0, 0));
                begin_bunch(&mut w, c.actors[slot as usize].guid, None, false);
                for leaf in BitIter(leaves) {
                    let l = &c.layout.leaves[leaf];
                    let n = l.kind.byte_size();
                    stores[class as usize].leaf_bytes(slot, leaf, &mut buf[..n]);
                    let start = w.len_bits();
                    write_leaf_record(&mut w, l.handle, l.kind, &buf[..n]);
                    spans.push((start as u32, (w.len_bits() - start) as u32));
                }
                end_bunch(&mut w);
                spans[bunch] = (bunch_start as u32, (w.len_bits() - bunch_start) as u32);
            }
            (w, spans)
        };
        let chunks: Vec<(BitWriter, Vec<(u32, u32)>)> = if self.cfg.parallel && arena.keys.len() > CHUNK {
            arena.keys.par_chunks(CHUNK).map(encode).collect()
        } else {
            arena.keys.chunks(CHUNK).map(encode).collect()
        };
        arena.spans.clear();
        arena.first_span.clear();
        arena.chunks.clear();
        let mut key = 0;
        for (chunk, (w, spans)) in chunks.into_iter().enumerate() {
            let mut it = spans.into_iter();
            for k in &arena.keys[key..(key + CHUNK).min(arena.keys.len())] {
                arena.first_span.push(arena.spans.len() as u32);
                for _ in 0..=k.2.count_ones() {
                    let (start, len) = it.next().unwrap_or((0, 0));
                    arena.spans.push((chunk as u32, start, len));
                }
            }
            key += CHUNK;
            arena.chunks.push(w);
        }
        self.stats.shared_records = arena.spans.len() - arena.keys.len();
    }

    /// Whether this frame's per-connection work is big enough to pay for waking the pool (an idle
    /// frame should cost next to nothing).
    fn parallel_worth_it(&self) -> bool {
        let pending: usize = self.conns.iter().map(|c| c.pending.len() + c.sends.len() + c.closes.len()).sum();
        self.changed.len() * self.conns.len() + pending >= self.cfg.min_parallel_items
    }

    /// Per connection: closes, then one bunch per actor, into packets of at most `mtu` bytes.
    fn write_packets(&mut self, stores: &[&ClassStore]) {
        let ctx = WriteCtx {
            frame: self.frame,
            classes: &self.classes,
            stores,
            arena: self.cfg.shared_serialization.then_some(&self.arena),
            mtu_bits: self.cfg.mtu * 8,
        };
        let write = |conn: &mut Connection| ctx.write_connection(conn);
        let parallel = self.cfg.parallel && self.parallel_worth_it();
        let counts: Vec<(usize, usize, usize)> = if parallel {
            self.conns.par_iter_mut().map(write).collect()
        } else {
            self.conns.iter_mut().map(write).collect()
        };
        for (bunches, packets, bytes) in counts {
            self.stats.bunches += bunches;
            self.stats.packets += packets;
            self.stats.bytes += bytes;
        }
    }
}

/// A pair's replication flags.
fn actor_flags(a: &ActorNet, conn: u32, replay: bool, open_acked: bool) -> u8 {
    let owner = a.owner == Some(conn);
    let mut f = 0;
    if !open_acked {
        f |= flags::INITIAL;
    }
    if owner {
        f |= flags::OWNER;
    }
    if !(owner && a.autonomous) {
        f |= flags::SIMULATED;
    }
    if replay {
        f |= flags::REPLAY;
    }
    if a.physics {
        f |= flags::PHYSICS;
    }
    f
}

/// How many changed actors ahead `plan_connection` prefetches pair states.
const PAIR_PREFETCH: usize = 16;

/// Decides what one connection gets this frame: merges the shared changed list with the
/// connection's pending pairs.
fn plan_connection(
    ci: u32,
    conn: &mut Connection,
    classes: &[ClassNet],
    (changed, changed_actors): (&[(u32, u32, u64)], &[ActorNet]),
    frame: u32,
) {
    conn.sends.clear();
    let mut pending = std::mem::take(&mut conn.pending);
    pending.sort_unstable();
    pending.dedup();
    let (mut i, mut j) = (0, 0);
    while i < changed.len() || j < pending.len() {
        // Pair states are scattered (one per actor per connection); start loading the ones a
        // few iterations ahead so their cache misses overlap.
        if let Some(&(c, s, _)) = changed.get(i + PAIR_PREFETCH) {
            if let Some(p) = conn.pairs[c as usize].get(s as usize) {
                crate::compare::prefetch_addr(p as *const PairState as usize);
            }
        }
        let a = changed.get(i).map(|c| (c.0, c.1));
        let b = pending.get(j).copied();
        let (key, leaves, known) = match (a, b) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
                (a, changed[i - 1].2, Some(&changed_actors[i - 1]))
            }
            (Some(a), Some(b)) if a < b => {
                i += 1;
                (a, changed[i - 1].2, Some(&changed_actors[i - 1]))
            }
            (Some(a), None) => {
                i += 1;
                (a, changed[i - 1].2, Some(&changed_actors[i - 1]))
            }
            (_, Some(b)) => {
                j += 1;
                (b, 0, None)
            }
            (None, None) => break,
        };
        let (class, slot) = key;
        let c = &classes[class as usize];
        let Some(actor) = known.or_else(|| c.actors.get(slot as usize)).filter(|a| a.alive) else { continue };
        let ps = conn.pair(class, slot);
        ps.flags &= !pair::PENDING;
        let open = ps.flags & pair::OPEN_ACKED == 0;
        let f = actor_flags(actor, ci, conn.replay, !open);
        let active = c.active.get(f) & !actor.custom_inactive;
        let ps = conn.pair(class, slot);
        let mut send = leaves | ps.resend;
        if ps.sent_through == 0 || c.history.changed_between(slot, ps.sent_through, frame) {
            send |= c.history.changed_since(slot, ps.sent_through);
        }
        send &= active;
        let open_bunch = open && ps.flags & pair::OPEN_SENT == 0;
        ps.resend = 0;
        ps.sent_through = frame;
        if send == 0 && !open_bunch {
            continue;
        }
        if open {
            ps.flags |= pair::OPEN_SENT | pair::EVER_OPENED;
        }
        conn.sends.push(SendItem { class, slot, guid: actor.guid, leaves: send, open });
    }
}

/// What packet writing reads.
struct WriteCtx<'a> {
    frame: u32,
    classes: &'a [ClassNet],
    stores: &'a [&'a ClassStore],
    arena: Option<&'a Arena>,
    mtu_bits: usize,
}

/// Bits that must stay free after a record: the bunch's and the packet's terminators.
const TAIL_BITS: usize = 8 + 1;

/// The packet being built for one connection: its sequence number and what it carries so far.
struct PacketBuilder {
    seq: u32,
    /// Bit where this packet starts in the connection's writer.
    start_bits: usize,
    entries: u32,
    closes: u32,
    has_bunch: bool,
    mtu_bits: usize,
}

impl PacketBuilder {
    /// Starts a packet at the end of the connection's writer (which is byte-aligned).
    fn start(conn: &mut Connection, mtu_bits: usize) -> Self {
        let start_bits = conn.writer.len_bits();
        begin_packet(&mut conn.writer, conn.next_seq);
        Self { seq: conn.next_seq, start_bits, entries: 0, closes: 0, has_bunch: false, mtu_bits }
    }

    fn fits(&self, conn: &Connection, bits: usize) -> bool {
        conn.writer.len_bits() - self.start_bits + bits + TAIL_BITS <= self.mtu_bits
    }
}

impl WriteCtx<'_> {
    /// Writes one connection's packets; returns (bunches, packets, bytes).
    fn write_connection(&self, conn: &mut Connection) -> (usize, usize, usize) {
        conn.writer.clear();
        conn.out_ends.clear();
        let mut b = PacketBuilder::start(conn, self.mtu_bits);
        let mut bunches = 0;
        for guid in std::mem::take(&mut conn.closes) {
            if !b.fits(conn, 80) {
                self.flush(conn, &mut b);
            }
            begin_bunch(&mut conn.writer, guid, None, true);
            end_bunch(&mut conn.writer);
            conn.sent_closes.push_back(guid);
            b.closes += 1;
            b.has_bunch = true;
            bunches += 1;
        }
        let mut buf = [0u8; 256];
        let mut span_key = 0usize;
        let sends = std::mem::take(&mut conn.sends);
        for s in &sends {
            let c = &self.classes[s.class as usize];
            let guid = s.guid;
            let open = s.open.then_some(s.class);
            let mut entry = SentEntry { class: s.class, slot: s.slot, guid, leaves: 0, open: s.open };
            // Shared spans of this actor, if any (keys and sends are both sorted by actor).
            let spans = self.arena.and_then(|a| {
                while a.keys.get(span_key).is_some_and(|k| (k.0, k.1) < (s.class, s.slot)) {
                    span_key += 1;
                }
                a.keys
                    .get(span_key)
                    .filter(|k| (k.0, k.1) == (s.class, s.slot))
                    .map(|k| (a, k.2, a.first_span[span_key]))
            });
            // The common case: this connection gets exactly the encoded leaves of an open channel:
            // one copy of the whole bunch.
            if let Some((a, union, first)) = spans {
                let (chunk, start, len) = a.spans[first as usize];
                if !s.open && s.leaves == union && b.fits(conn, len as usize) {
                    conn.writer.write_from(a.chunks[chunk as usize].bytes(), start as usize, len as usize);
                    b.has_bunch = true;
                    bunches += 1;
                    entry.leaves = s.leaves;
                    conn.sent.push_back(entry);
                    b.entries += 1;
                    continue;
                }
            }
            let header_bits = 1 + 80 + 1 + if open.is_some() { 40 } else { 0 } + 1;
            if !b.fits(conn, header_bits + 64) {
                self.flush(conn, &mut b);
            }
            begin_bunch(&mut conn.writer, guid, open, false);
            b.has_bunch = true;
            bunches += 1;
            for leaf in BitIter(s.leaves) {
                let l = &c.layout.leaves[leaf];
                if let Some(a) = l.array {
                    self.write_array(conn, &mut b, &mut entry, s, leaf, a, &mut bunches);
                    continue;
                }
                match spans.filter(|&(_, union, _)| union >> leaf & 1 != 0) {
                    // Shared: bit-copy the record encoded once for every connection.
                    Some((a, union, first)) => {
                        let k = (union & ((1u64 << leaf) - 1)).count_ones();
                        let (chunk, start, len) = a.spans[(first + 1 + k) as usize];
                        if !b.fits(conn, len as usize) {
                            self.split(conn, &mut b, &mut entry, s, &mut bunches);
                        }
                        conn.writer.write_from(a.chunks[chunk as usize].bytes(), start as usize, len as usize);
                    }
                    // Per connection (sharing off, or a leaf only this connection needs): encode
                    // straight into the packet, again in a new one if it did not fit.
                    None => {
                        let n = l.kind.byte_size();
                        self.stores[s.class as usize].leaf_bytes(s.slot, leaf, &mut buf[..n]);
                        let before = conn.writer.len_bits();
                        write_leaf_record(&mut conn.writer, l.handle, l.kind, &buf[..n]);
                        if !b.fits(conn, 0) {
                            conn.writer.truncate(before);
                            self.split(conn, &mut b, &mut entry, s, &mut bunches);
                            write_leaf_record(&mut conn.writer, l.handle, l.kind, &buf[..n]);
                        }
                    }
                }
                entry.leaves |= 1 << leaf;
            }
            end_bunch(&mut conn.writer);
            conn.sent.push_back(entry);
            b.entries += 1;
        }
        conn.sends = sends;
        if b.has_bunch {
            self.finish(conn, &b);
        }
        let bytes = conn.out_ends.last().copied().unwrap_or(0);
        conn.writer.truncate(bytes * 8);
        conn.bytes_sent += bytes as u64;
        (bunches, conn.out_ends.len(), bytes)
    }

    /// Ends the current bunch and packet, and opens a continuation bunch in a new packet.
    fn split(
        &self,
        conn: &mut Connection,
        b: &mut PacketBuilder,
        entry: &mut SentEntry,
        s: &SendItem,
        bunches: &mut usize,
    ) {
        end_bunch(&mut conn.writer);
        conn.sent.push_back(*entry);
        b.entries += 1;
        entry.leaves = 0;
        self.flush(conn, b);
        begin_bunch(&mut conn.writer, entry.guid, s.open.then_some(s.class), false);
        b.has_bunch = true;
        *bunches += 1;
    }

    /// Writes a whole dynamic array, splitting it between elements across packets.
    #[allow(clippy::too_many_arguments)]
    fn write_array(
        &self,
        conn: &mut Connection,
        b: &mut PacketBuilder,
        entry: &mut SentEntry,
        s: &SendItem,
        leaf: usize,
        a: usize,
        bunches: &mut usize,
    ) {
        let layout = &self.classes[s.class as usize].layout;
        let array = &layout.arrays[a];
        let handle = layout.leaves[leaf].handle;
        let bytes = self.stores[s.class as usize].array_bytes(s.slot, a);
        let count = bytes.len() / array.stride;
        let per = array.elements.len();
        let mut el = BitWriter::new();
        let mut e = 0;
        loop {
            // A record header (handle, count) and its terminator need about 48 bits.
            if !b.fits(conn, 48 + 8) {
                self.split(conn, b, entry, s, bunches);
            }
            conn.writer.write_packed(handle as u64);
            conn.writer.write_packed(count as u64);
            entry.leaves |= 1 << leaf;
            while e < count {
                el.clear();
                let element = &bytes[e * array.stride..(e + 1) * array.stride];
                for (i, x) in array.elements.iter().enumerate() {
                    el.write_packed((e * per + i + 1) as u64);
                    crate::wire::write_leaf(&mut el, x.kind, &element[x.offset..x.offset + x.kind.byte_size()]);
                }
                if !b.fits(conn, el.len_bits() + 8) {
                    break;
                }
                conn.writer.write_from(el.bytes(), 0, el.len_bits());
                e += 1;
            }
            conn.writer.write_packed(0);
            if e >= count {
                return;
            }
            // The rest goes in a new record for the same array, in a continuation bunch.
            self.split(conn, b, entry, s, bunches);
        }
    }

    /// Finishes the current packet (if it carries anything) and starts the next.
    fn flush(&self, conn: &mut Connection, b: &mut PacketBuilder) {
        if b.has_bunch {
            self.finish(conn, b);
        } else {
            // Nothing in it: drop its header and start it again.
            conn.writer.truncate(b.start_bits);
        }
        *b = PacketBuilder::start(conn, self.mtu_bits);
    }

    /// Ends the packet in place (padded to a byte) and keeps its record.
    fn finish(&self, conn: &mut Connection, b: &PacketBuilder) {
        end_packet(&mut conn.writer);
        conn.writer.pad_to_byte();
        conn.out_ends.push(conn.writer.len_bits() / 8);
        conn.in_flight.push_back(PacketRecord { seq: b.seq, frame: self.frame, entries: b.entries, closes: b.closes });
        conn.next_seq += 1;
    }
}
