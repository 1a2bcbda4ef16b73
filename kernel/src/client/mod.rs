//! The client side: a world with the server's layouts that applies packets and fires notifies.
//!
//! ```text
//! receive(packet):
//!   a packet not newer than the newest one received (duplicate or late: its content, if lost
//!   to us, is NAKed and resent with current values), or too far ahead of it, is dropped
//!   decode the whole packet, validating handles, counts, caps, lengths, GUIDs and classes
//!   (an error leaves every actor untouched, and the packet counts as not received)
//!   a bunch for an actor the client does not have is stepped over and reported; the next
//!   feedback asks the server to open that actor again
//!   per bunch: open spawns the actor; records are written; close destroys it;
//!              then notifies fire (on-changed only if the value differs; always on every receive)
//!   exports bind static actors loaded with the level to the GUIDs references name
//!   an object reference to an object the client does not have yet is stored as null and kept
//!   unmapped; when that object arrives (an open, an export, a registered static object), the
//!   reference is written and its notify fires again
//! feedback(): the newest packet received, which of the 255 before it arrived, and the actors to
//!   open again — send it at least once per frame in which packets arrived
//! ```
//!
//! Actors live in [`ClassStore`]s exactly like the server's, one per class.

mod window;

pub use window::SeqVerdict;

use crate::ids::{NetGuid, Seq};
use crate::schema::{ClassLayout, LeafKind, Notify};
use crate::store::{value_bits_eq, ActorId, ClassStore};
use crate::value::Value;
use crate::wire::bunch::{decode_packet, Close, RecordValue, Resolve, PLAIN_FOR_MISSING};
use crate::wire::feedback::{write_feedback, MAX_REOPENS};
use crate::wire::open::{CloseReason, OpenHeader, OpenKind, SpawnInfo, MAX_PATH_BYTES};
use crate::wire::packet::MAX_MTU;
use crate::wire::{BitWriter, WireError};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use window::ReceiveWindow;

mod fastarrays;

/// Why a client could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The server registers a different number of classes.
    ClassCount {
        /// Server's count.
        server: usize,
        /// Client's count.
        client: usize,
    },
    /// No class with this id.
    UnknownClass(u32),
    /// A static actor's path is empty, too long, or loaded already.
    BadStaticPath(String),
    /// A class layout differs from the server's.
    ChecksumMismatch {
        /// Class id.
        class: usize,
        /// Server's checksum.
        server: u64,
        /// Client's checksum.
        client: u64,
    },
    /// The server registers a different number of fast array kinds.
    FastArrayKindCount {
        /// Server's count.
        server: usize,
        /// Client's count.
        client: usize,
    },
    /// A fast array item layout differs from the server's.
    FastArrayChecksumMismatch {
        /// Kind index.
        kind: usize,
        /// Server's checksum.
        server: u64,
        /// Client's checksum.
        client: u64,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::ClassCount { server, client } => write!(f, "server has {server} classes, client {client}"),
            ClientError::UnknownClass(c) => write!(f, "no class with id {c}"),
            ClientError::BadStaticPath(p) => {
                write!(f, "static actor path `{p}` is empty, longer than {MAX_PATH_BYTES} bytes, or loaded already")
            }
            ClientError::ChecksumMismatch { class, server, client } => write!(
                f,
                "class {class}: layout checksum {client:#x} does not match the server's {server:#x}; the builds do not interoperate"
            ),
            ClientError::FastArrayKindCount { server, client } => {
                write!(f, "server has {server} fast array kinds, client {client}")
            }
            ClientError::FastArrayChecksumMismatch { kind, server, client } => write!(
                f,
                "fast array kind {kind}: item layout checksum {client:#x} does not match the server's {server:#x}"
            ),
        }
    }
}

impl std::error::Error for ClientError {}

/// Why a packet was refused (nothing was applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiveError {
    /// Malformed bits.
    Wire(WireError),
}

impl fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveError::Wire(e) => write!(f, "malformed packet: {e}"),
        }
    }
}

impl std::error::Error for ReceiveError {}

impl From<WireError> for ReceiveError {
    fn from(e: WireError) -> Self {
        ReceiveError::Wire(e)
    }
}

/// What `receive` did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receipt {
    /// Applied.
    Applied {
        /// Bunches applied.
        bunches: usize,
        /// Bunches stepped over: for an actor the client does not have (asked for again), closed
        /// earlier in the same packet, or referencing a static object the client does not know.
        skipped: usize,
    },
    /// Not applied: a duplicate, a late packet, or one too far ahead (see [`SeqVerdict`]).
    Dropped(SeqVerdict),
}

/// Counters of a client, for monitoring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Packets applied.
    pub packets_applied: u64,
    /// Packets dropped as duplicates.
    pub duplicates: u64,
    /// Packets dropped as late.
    pub late: u64,
    /// Packets dropped as too far ahead.
    pub too_far: u64,
    /// Packets with the newest sequence number but other bytes than the packet received under
    /// it (one of the two was forged): applied.
    pub replaced: u64,
    /// Packets refused as malformed.
    pub refused: u64,
    /// Bunches stepped over.
    pub bunches_skipped: u64,
    /// Requests to open an actor again, counted once per actor.
    pub reopens_requested: u64,
    /// Opens of static actors this client did not load (no such path, or another class):
    /// stepped over.
    pub unknown_statics: u64,
    /// References to unknown objects not remembered because [`MAX_UNMAPPED`] were waiting.
    pub unmapped_dropped: u64,
    /// Fast array deltas that decoded but could not be applied (late, or naming ids wrongly):
    /// stepped over, state untouched.
    pub fast_array_refused: u64,
}

/// A fired notify.
#[derive(Clone, Debug, PartialEq)]
pub struct NotifyEvent {
    /// Actor GUID.
    pub guid: NetGuid,
    /// Parent property index.
    pub parent: usize,
    /// Previous value, when the notify is declared with it.
    pub old: Option<Value>,
    /// Value now.
    pub new: Value,
}

/// An actor appearing or disappearing on the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// The server opened an actor: it exists now, with the values of the packet that opened it.
    Spawned {
        /// The actor.
        guid: NetGuid,
        /// Its class id.
        class: u32,
    },
    /// The server closed an actor: it is gone.
    Destroyed {
        /// The actor.
        guid: NetGuid,
    },
    /// The server opened a static actor the client loaded with the level
    /// ([`ClientWorld::load_static_actor`]): the GUID names that copy now.
    Bound {
        /// The actor.
        guid: NetGuid,
        /// Its class id.
        class: u32,
    },
    /// The actor went dormant: the client keeps it as it is; the server sends nothing for it
    /// until it wakes.
    Dormant {
        /// The actor.
        guid: NetGuid,
    },
    /// The actor was torn off: the client keeps it and owns it now; the server sends nothing more
    /// ([`ClientWorld::forget`] lets go of it).
    TornOff {
        /// The actor.
        guid: NetGuid,
    },
}

/// A reference waiting for its target actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Unmapped {
    owner: NetGuid,
    leaf: usize,
    /// (element, element leaf) inside a dynamic array.
    element: Option<(usize, usize)>,
    target: NetGuid,
}

/// References waiting for their target kept at most (each costs a scan per record that may
/// replace it): beyond, a reference is written as null and counted, not remembered.
pub const MAX_UNMAPPED: usize = 16_384;

/// Feedbacks a reopen request rides in before the client gives up on it (the server answers
/// the first one it can; a request for an actor the server no longer has is never answered).
const REOPEN_TRIES: u8 = 8;

/// Static actors whose opens the client refused (it did not load their path) remembered at most:
/// their updates are read past (a plain bunch cannot be stepped over without knowing the class).
/// Beyond, a refused static's update makes its packet refused, as for any actor the client lacks.
const MAX_IGNORED: usize = 4096;

struct ClientClass {
    layout: Arc<ClassLayout>,
    store: ClassStore,
}

/// A client's replicated world.
pub struct ClientWorld {
    classes: Vec<ClientClass>,
    actors: HashMap<NetGuid, (u32, ActorId)>,
    statics: HashSet<NetGuid>,
    /// Static actors loaded with the level, by path: (class, id, the GUID bound to it).
    level: HashMap<Arc<str>, (u32, ActorId, Option<NetGuid>)>,
    /// Static actors bound to a GUID, by GUID: their paths (in `level`).
    bound: HashMap<NetGuid, Arc<str>>,
    /// Dynamic actors' spawn info, as their open carried it.
    spawn: HashMap<NetGuid, SpawnInfo>,
    /// Actors closed for dormancy (kept, not updated).
    dormant: HashSet<NetGuid>,
    /// Actors torn off (kept, owned by the client, never updated again).
    torn: HashSet<NetGuid>,
    /// Static actors opened by a path this client did not load, with their class: their updates
    /// are read and dropped (at most [`MAX_IGNORED`]).
    ignored: HashMap<NetGuid, u32>,
    /// Sub-object → owner, and owner → its sub-objects.
    outer: HashMap<NetGuid, NetGuid>,
    inner: HashMap<NetGuid, Vec<NetGuid>>,
    /// Fast arrays ([`fastarrays`]).
    fast: fastarrays::ClientFastArrays,
    window: ReceiveWindow,
    /// Actors to ask the server to open again, with the feedbacks that carried the request.
    reopen: Vec<(NetGuid, u8)>,
    unmapped: Vec<Unmapped>,
    notifies: Vec<NotifyEvent>,
    events: Vec<ClientEvent>,
    /// Packets were applied since the last feedback.
    unreported: bool,
    stats: ClientStats,
}

impl ClientWorld {
    /// A client with `layouts` (in the server's class-id order), refusing any whose checksum is
    /// not the server's.
    pub fn new(layouts: &[Arc<ClassLayout>], server_checksums: &[u64]) -> Result<Self, ClientError> {
        if layouts.len() != server_checksums.len() {
            return Err(ClientError::ClassCount { server: server_checksums.len(), client: layouts.len() });
        }
        for (i, (l, &s)) in layouts.iter().zip(server_checksums).enumerate() {
            if l.checksum != s {
                return Err(ClientError::ChecksumMismatch { class: i, server: s, client: l.checksum });
            }
        }
        Ok(Self {
            classes: layouts
                .iter()
                .map(|l| ClientClass { layout: l.clone(), store: ClassStore::new(l.clone()) })
                .collect(),
            actors: HashMap::new(),
            statics: HashSet::new(),
            level: HashMap::new(),
            bound: HashMap::new(),
            spawn: HashMap::new(),
            dormant: HashSet::new(),
            torn: HashSet::new(),
            ignored: HashMap::new(),
            outer: HashMap::new(),
            inner: HashMap::new(),
            fast: fastarrays::ClientFastArrays::default(),
            window: ReceiveWindow::new(Seq(1)),
            reopen: Vec::new(),
            unmapped: Vec::new(),
            notifies: Vec::new(),
            events: Vec::new(),
            unreported: false,
            stats: ClientStats::default(),
        })
    }

    /// Expects the server's first packet to have sequence number `first` (the default is 1; see
    /// [`crate::net::NetDriver::add_connection_at`]).
    pub fn with_first_seq(mut self, first: Seq) -> Self {
        self.window = ReceiveWindow::new(first);
        self
    }

    /// Makes a static object's GUID known; false (and nothing done) if `guid` is not odd.
    pub fn register_static(&mut self, guid: NetGuid) -> bool {
        if !guid.is_static() {
            return false;
        }
        self.statics.insert(guid);
        self.resolve(guid);
        true
    }

    /// Loads a static actor with the level (UE: the map's placed actors exist on both ends
    /// before any packet): an actor of class `class` at `path`, with default values until the
    /// server opens it by that path and its properties arrive. Returns its id in the class's
    /// store.
    pub fn load_static_actor(&mut self, path: &str, class: u32) -> Result<ActorId, ClientError> {
        if path.is_empty() || path.len() > MAX_PATH_BYTES {
            return Err(ClientError::BadStaticPath(path.to_string()));
        }
        let c = self.classes.get_mut(class as usize).ok_or(ClientError::UnknownClass(class))?;
        if self.level.contains_key(path) {
            return Err(ClientError::BadStaticPath(path.to_string()));
        }
        let id = c.store.spawn();
        self.level.insert(path.into(), (class, id, None));
        Ok(id)
    }

    /// The spawn info a dynamic actor's open carried (quantised as on the wire).
    pub fn spawn_info(&self, guid: NetGuid) -> Option<SpawnInfo> {
        self.spawn.get(&guid).copied()
    }

    /// The owner of sub-object `guid`.
    pub fn owner_of(&self, guid: NetGuid) -> Option<NetGuid> {
        self.outer.get(&guid).copied()
    }

    /// Actor `owner`'s sub-objects the client has.
    pub fn sub_objects(&self, owner: NetGuid) -> &[NetGuid] {
        self.inner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// Whether actor `guid` is dormant (kept as last received; the server sends nothing until it
    /// wakes).
    pub fn is_dormant(&self, guid: NetGuid) -> bool {
        self.dormant.contains(&guid)
    }

    /// Whether actor `guid` was torn off (the client owns its copy).
    pub fn is_torn_off(&self, guid: NetGuid) -> bool {
        self.torn.contains(&guid)
    }

    /// Lets go of a torn-off actor: it is despawned from its store. False if `guid` is not a
    /// torn-off actor.
    pub fn forget(&mut self, guid: NetGuid) -> bool {
        if !self.torn.remove(&guid) {
            return false;
        }
        self.destroy(guid);
        true
    }

    /// Counters of this client.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// The newest packet received.
    pub fn highest_received(&self) -> Seq {
        self.window.highest()
    }

    /// Actors the client has.
    pub fn actor_count(&self) -> usize {
        self.actors.len()
    }

    /// Every actor the client has: (GUID, class id), in no particular order.
    pub fn actors(&self) -> impl Iterator<Item = (NetGuid, u32)> + '_ {
        self.actors.iter().map(|(&g, &(c, _))| (g, c))
    }

    /// The store holding actor `guid` and its id there, for typed reads through the layouts
    /// crate's generated accessors (e.g. `Door::open(store, id)`).
    pub fn actor(&self, guid: NetGuid) -> Option<(&ClassStore, ActorId)> {
        let &(c, id) = self.actors.get(&guid)?;
        Some((&self.classes[c as usize].store, id))
    }

    /// Actors spawned and destroyed since the last call, in order. (Like notifies, they pile up
    /// until taken: take them every frame.)
    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        std::mem::take(&mut self.events)
    }

    /// Whether the server is owed feedback: packets were applied since the last
    /// [`Self::feedback`], or an actor is being asked for.
    pub fn feedback_due(&self) -> bool {
        self.unreported || !self.reopen.is_empty()
    }

    /// Whether the client has actor `guid`.
    pub fn has(&self, guid: NetGuid) -> bool {
        self.actors.contains_key(&guid)
    }

    /// Class id of actor `guid`.
    pub fn class_of(&self, guid: NetGuid) -> Option<u32> {
        self.actors.get(&guid).map(|a| a.0)
    }

    /// The client's value of a parent of actor `guid`.
    pub fn value(&self, guid: NetGuid, parent: usize) -> Option<Value> {
        let &(c, id) = self.actors.get(&guid)?;
        self.classes[c as usize].store.get(id, parent).ok()
    }

    /// The byte form of leaf `leaf` of actor `guid` (into `out`); false if the client lacks it.
    pub fn leaf_bytes(&self, guid: NetGuid, leaf: usize, out: &mut [u8]) -> bool {
        match self.actors.get(&guid) {
            Some(&(c, id)) => {
                self.classes[c as usize].store.leaf_bytes(id.index, leaf, out);
                true
            }
            None => false,
        }
    }

    /// The element bytes of dynamic array `array` of actor `guid`.
    pub fn array_bytes(&self, guid: NetGuid, array: usize) -> Option<&[u8]> {
        let &(c, id) = self.actors.get(&guid)?;
        Some(self.classes[c as usize].store.array_bytes(id.index, array))
    }

    /// References still waiting for their target actor.
    pub fn unmapped_count(&self) -> usize {
        self.unmapped.len()
    }

    /// Notifies fired since the last call.
    pub fn take_notifies(&mut self) -> Vec<NotifyEvent> {
        std::mem::take(&mut self.notifies)
    }

    /// Feedback for the server: what arrived, and the actors to open again.
    pub fn feedback(&mut self) -> Vec<u8> {
        self.unreported = false;
        let mut w = BitWriter::new();
        let guids: Vec<NetGuid> = self.reopen.iter().map(|r| r.0).collect();
        write_feedback(&mut w, self.window.highest(), self.window.received(), &guids);
        for r in &mut self.reopen {
            r.1 += 1;
        }
        self.reopen.retain(|r| r.1 < REOPEN_TRIES);
        w.into_bytes()
    }

    /// Decodes, validates and applies one packet. A malformed packet is an error and changes
    /// nothing; a duplicate, late or too-far packet is dropped ([`Receipt::Dropped`]).
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
    /// use shadowrep::client::{Receipt, SeqVerdict};
    ///
    /// driver.tick(&mut [&mut store]).unwrap();
    /// let packet = driver.take_packets(conn).unwrap().remove(0);
    /// assert_eq!(client.receive(&packet), Ok(Receipt::Applied { bunches: 1, skipped: 0 }));
    /// assert_eq!(client.receive(&packet), Ok(Receipt::Dropped(SeqVerdict::Duplicate)));
    /// assert!(client.receive(&packet[..1]).is_err(), "truncated: refused");
    /// assert_eq!(client.value(guid, 0), Some(Value::U16(100)));
    /// ```
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Receipt, ReceiveError> {
        if bytes.len() > MAX_MTU {
            self.stats.refused += 1;
            return Err(ReceiveError::Wire(WireError::Invalid("packet larger than the largest MTU")));
        }
        let seq = match crate::wire::BitReader::new(bytes).read_packed().map(u32::try_from) {
            Ok(Ok(s)) => Seq(s),
            _ => {
                self.stats.refused += 1;
                return Err(ReceiveError::Wire(WireError::Invalid("sequence number")));
            }
        };
        // A packet not newer than the newest received is a duplicate or late: dropped before
        // decoding, since the actors it names may be gone by now.
        // Only a packet that may be applied — a new one, or the newest number with other bytes —
        // is hashed.
        let verdict = self.window.verdict(seq);
        let hash = match verdict {
            SeqVerdict::Late | SeqVerdict::TooFar => 0,
            SeqVerdict::New | SeqVerdict::Duplicate => packet_hash(bytes),
        };
        match verdict {
            SeqVerdict::New => {}
            SeqVerdict::Duplicate if self.window.differs(hash) => self.stats.replaced += 1,
            SeqVerdict::Duplicate => {
                self.stats.duplicates += 1;
                return Ok(Receipt::Dropped(verdict));
            }
            SeqVerdict::Late => {
                self.stats.late += 1;
                return Ok(Receipt::Dropped(verdict));
            }
            SeqVerdict::TooFar => {
                self.stats.too_far += 1;
                return Ok(Receipt::Dropped(verdict));
            }
        }
        let mut opened: HashMap<NetGuid, u32> = HashMap::new();
        let mut fast_opened: HashMap<NetGuid, u32> = HashMap::new();
        let mut missing: Vec<NetGuid> = Vec::new();
        let (classes, actors, fast) = (&self.classes, &self.actors, &self.fast);
        let (torn, ignored) = (&self.torn, &self.ignored);
        let decoded = decode_packet(bytes, |guid, open| {
            if guid.is_null() {
                return Err(WireError::Invalid("actor GUID"));
            }
            if torn.contains(&guid) || (open.is_none() && ignored.contains_key(&guid)) {
                // The server's last bunches before the tear-off (the actor is the client's now),
                // or updates of a static actor this client did not load: read past, not applied.
                let class = actors.get(&guid).map(|a| a.0).or_else(|| ignored.get(&guid).copied());
                return Ok(match class.and_then(|c| classes.get(c as usize)) {
                    Some(c) if open.is_none() => Resolve::Discard(&c.layout),
                    _ => Resolve::Skip,
                });
            }
            let known = opened.get(&guid).copied().or_else(|| actors.get(&guid).map(|a| a.0));
            if let Some(r) = fast.resolve(guid, open, known.is_some(), &mut fast_opened)? {
                return Ok(r);
            }
            let class = match (open.map(|o| o.class), known) {
                (Some(c), Some(k)) if c != k => return Err(WireError::Invalid("actor reopened with another class")),
                (Some(c), _) => c,
                (None, Some(k)) => k,
                (None, None) => {
                    missing.push(guid);
                    return Ok(Resolve::Skip);
                }
            };
            let layout = classes.get(class as usize).map(|c| &*c.layout).ok_or(WireError::Invalid("class id"))?;
            opened.insert(guid, class);
            Ok(Resolve::Layout(layout))
        });
        let mut packet = match decoded {
            Ok(p) => p,
            Err(e) => {
                self.stats.refused += 1;
                if e == WireError::Invalid(PLAIN_FOR_MISSING) {
                    // An update of an actor this client does not have, which cannot be stepped
                    // over: the packet is refused (the server sends its content again, as for a
                    // lost one) and the actor asked for, so the next bunch opens it.
                    if let Some(&guid) = missing.last() {
                        self.request_reopen(guid);
                    }
                }
                return Err(ReceiveError::Wire(e));
            }
        };
        let mut skipped = packet.skipped.len();
        // Every open must say what its GUID's parity says: a dynamic actor spawns from spawn
        // info, a static one is found by its path among the actors loaded with the level.
        for b in &packet.bunches {
            match b.open.as_ref().map(|o| &o.kind) {
                Some(OpenKind::Spawn(_)) if !b.guid.is_dynamic() => {
                    self.stats.refused += 1;
                    return Err(ReceiveError::Wire(WireError::Invalid("a static GUID opened with spawn info")));
                }
                Some(OpenKind::Static(_)) if !b.guid.is_static() => {
                    self.stats.refused += 1;
                    return Err(ReceiveError::Wire(WireError::Invalid("a dynamic GUID opened by path")));
                }
                Some(OpenKind::FastArray { .. }) if !b.guid.is_dynamic() => {
                    self.stats.refused += 1;
                    return Err(ReceiveError::Wire(WireError::Invalid("a static GUID opened as a fast array")));
                }
                _ => {}
            }
        }
        // Actors must exist when their bunch runs: a close within this packet ends an actor, and
        // only an open brings one back; a bunch naming a static object the client does not know
        // cannot be applied either, nor an open of a static actor the client did not load.
        let mut gone: HashSet<NetGuid> = HashSet::new();
        let level = &self.level;
        let mut unknown_statics = 0;
        let mut opened_here: HashSet<NetGuid> = HashSet::new();
        let mut sub_opened_here: HashSet<NetGuid> = HashSet::new();
        let outer = &self.outer;
        let mut orphans: Vec<NetGuid> = Vec::new();
        let mut not_loaded: Vec<(NetGuid, u32)> = Vec::new();
        packet.bunches.retain(|b| {
            if b.close.is_some() {
                gone.insert(b.guid);
                return true;
            }
            if let Some(open) = &b.open {
                if let OpenKind::Static(path) = &open.kind {
                    let loaded = level.get(path).is_some_and(|&(c, _, bound)| {
                        c == open.class
                            && bound.is_none_or(|g| g == b.guid)
                            && actors.get(&b.guid).is_none_or(|a| a.0 == c)
                    });
                    if !loaded {
                        unknown_statics += 1;
                        skipped += 1;
                        not_loaded.push((b.guid, open.class));
                        return false;
                    }
                }
                if let OpenKind::FastArray { owner } = open.kind {
                    // An actor's (a static one's too), never a sub-object's nor a fast array's.
                    let present =
                        (actors.contains_key(&owner) && !gone.contains(&owner)) || opened_here.contains(&owner);
                    if outer.contains_key(&owner)
                        || sub_opened_here.contains(&owner)
                        || fast_opened.contains_key(&owner)
                    {
                        skipped += 1;
                        return false;
                    }
                    if !present {
                        // Its owner is not here (yet): the server sends the open again.
                        skipped += 1;
                        orphans.push(b.guid);
                        return false;
                    }
                    gone.remove(&b.guid);
                    return true;
                }
                if let OpenKind::SubObject { owner } = open.kind {
                    // An owner is an actor, never a sub-object (no chains: the server makes none).
                    if !owner.is_dynamic() || outer.contains_key(&owner) || sub_opened_here.contains(&owner) {
                        skipped += 1;
                        return false;
                    }
                    let present =
                        (actors.contains_key(&owner) && !gone.contains(&owner)) || opened_here.contains(&owner);
                    if !present || owner == b.guid {
                        // Its owner is not here (yet): the server sends the open again.
                        skipped += 1;
                        orphans.push(b.guid);
                        return false;
                    }
                }
                opened_here.insert(b.guid);
                if matches!(open.kind, OpenKind::SubObject { .. }) {
                    sub_opened_here.insert(b.guid);
                }
                gone.remove(&b.guid);
            } else if gone.contains(&b.guid) {
                skipped += 1;
                return false;
            }
            true
        });
        self.window.accept(packet.seq, hash);
        self.unreported = true;
        self.stats.packets_applied += 1;
        self.stats.bunches_skipped += skipped as u64;
        self.stats.unknown_statics += unknown_statics;
        for guid in missing.into_iter().chain(orphans) {
            self.request_reopen(guid);
        }
        for (guid, class) in not_loaded {
            if self.ignored.len() < MAX_IGNORED || self.ignored.contains_key(&guid) {
                self.ignored.insert(guid, class);
            }
        }
        // Exports first: the static objects this packet's references name.
        for (guid, path) in std::mem::take(&mut packet.exports) {
            self.bind_export(guid, &path);
        }
        let n = packet.bunches.len();
        for b in packet.bunches {
            self.reopen.retain(|r| r.0 != b.guid);
            if b.close.is_some() || b.open.is_some() {
                self.ignored.remove(&b.guid);
            }
            if let Some(close) = b.close {
                self.close(b.guid, close);
                continue;
            }
            if let Some(&class) = opened.get(&b.guid) {
                self.apply_bunch(class, b);
            } else {
                self.apply_fast(b);
            }
        }
        Ok(Receipt::Applied { bunches: n, skipped })
    }

    /// Asks the server to open actor `guid` again (in the next feedbacks), unless already asked.
    fn request_reopen(&mut self, guid: NetGuid) {
        if self.reopen.len() < MAX_REOPENS && !self.reopen.iter().any(|r| r.0 == guid) {
            self.reopen.push((guid, 0));
            self.stats.reopens_requested += 1;
        }
    }

    /// Binds a static actor the client loaded at `path` to `guid` (an export: the server's
    /// references name it), and writes the references that waited for it. An export of a path
    /// the client did not load, or already bound to another GUID, changes nothing.
    fn bind_export(&mut self, guid: NetGuid, path: &str) {
        if self.actors.contains_key(&guid) {
            return;
        }
        let Some(entry) = self.level.get_mut(path).filter(|e| e.2.is_none()) else {
            self.stats.unknown_statics += 1;
            return;
        };
        entry.2 = Some(guid);
        let (class, id) = (entry.0, entry.1);
        self.bound.insert(guid, path.into());
        self.actors.insert(guid, (class, id));
        self.events.push(ClientEvent::Bound { guid, class });
        self.resolve(guid);
    }

    /// Applies a channel's close. Closing an actor the client never got (its open was lost) is
    /// no error; a destroyed static actor is found by its path if its GUID was never bound.
    fn close(&mut self, guid: NetGuid, close: Close) {
        match close.reason {
            CloseReason::Destroyed => {
                if self.fast.remove(guid) {
                    // A fast array removed from its owner (or no longer for this connection).
                } else if self.actors.contains_key(&guid) {
                    // A bound static actor's level entry goes with it (`destroy`).
                    self.destroy(guid);
                } else if let Some(path) = close.path.as_deref() {
                    // A static actor this client never bound (it joined after the destruction,
                    // or the actor never opened here): only a path bound to nobody is taken.
                    if let Some((class, id, None)) = self.level.get(path).copied() {
                        self.level.remove(path);
                        let _ = self.classes[class as usize].store.despawn(id);
                        self.events.push(ClientEvent::Destroyed { guid });
                    }
                }
            }
            CloseReason::Dormant => {
                if self.actors.contains_key(&guid) && self.dormant.insert(guid) {
                    self.events.push(ClientEvent::Dormant { guid });
                }
            }
            CloseReason::TornOff => {
                if self.actors.contains_key(&guid) && self.torn.insert(guid) {
                    self.dormant.remove(&guid);
                    self.unmapped.retain(|u| u.owner != guid);
                    self.events.push(ClientEvent::TornOff { guid });
                }
            }
        }
    }

    /// Removes actor `guid` and everything kept about it, and its sub-objects with it (one level:
    /// a sub-object owns none).
    fn destroy(&mut self, guid: NetGuid) {
        let subs = self.inner.remove(&guid).unwrap_or_default();
        self.fast.remove_owned(guid);
        for g in std::iter::once(guid).chain(subs) {
            if let Some((class, id)) = self.actors.remove(&g) {
                let _ = self.classes[class as usize].store.despawn(id);
                self.unmapped.retain(|u| u.owner != g);
                self.spawn.remove(&g);
                self.dormant.remove(&g);
                self.torn.remove(&g);
                if let Some(path) = self.bound.remove(&g) {
                    self.level.remove(&path);
                }
                self.events.push(ClientEvent::Destroyed { guid: g });
            }
            if let Some(owner) = self.outer.remove(&g) {
                if let Some(list) = self.inner.get_mut(&owner) {
                    list.retain(|&x| x != g);
                }
            }
        }
    }

    fn apply_bunch(&mut self, class: u32, b: crate::wire::bunch::Bunch) {
        let guid = b.guid;
        let mut spawned = false;
        self.dormant.remove(&guid);
        let id = match (self.actors.get(&guid), &b.open) {
            (Some(&(_, id)), _) => id,
            (None, Some(OpenHeader { kind: OpenKind::Static(path), .. })) => {
                // Checked before anything was applied: the path names a loaded actor of this
                // class; an export earlier in the packet may have bound it to another GUID since.
                let Some(entry) = self.level.get_mut(path).filter(|e| e.2.is_none_or(|g| g == guid)) else {
                    self.stats.unknown_statics += 1;
                    return;
                };
                entry.2 = Some(guid);
                let id = entry.1;
                self.bound.insert(guid, path.clone());
                self.actors.insert(guid, (class, id));
                self.events.push(ClientEvent::Bound { guid, class });
                spawned = true;
                id
            }
            (None, open) => {
                let id = self.classes[class as usize].store.spawn();
                match open {
                    Some(OpenHeader { kind: OpenKind::Spawn(info), .. }) => {
                        self.spawn.insert(guid, *info);
                    }
                    Some(OpenHeader { kind: OpenKind::SubObject { owner }, .. }) => {
                        self.outer.insert(guid, *owner);
                        self.inner.entry(*owner).or_default().push(guid);
                    }
                    _ => {}
                }
                self.actors.insert(guid, (class, id));
                self.events.push(ClientEvent::Spawned { guid, class });
                spawned = true;
                id
            }
        };
        let layout = self.classes[class as usize].layout.clone();
        let mut touched: Vec<(usize, Value)> = Vec::new();
        for r in &b.records {
            let Some(leaf_index) = r.handle.checked_sub(1).map(usize::from) else { continue };
            let leaf = &layout.leaves[leaf_index];
            let store = &mut self.classes[class as usize].store;
            if !touched.iter().any(|t| t.0 == leaf.parent) {
                if let Ok(old) = store.get(id, leaf.parent) {
                    touched.push((leaf.parent, old));
                }
            }
            match &r.value {
                RecordValue::Leaf(bytes) => {
                    self.unmapped.retain(|u| !(u.owner == guid && u.leaf == leaf_index && u.element.is_none()));
                    let mut bytes = bytes.clone();
                    if leaf.kind == LeafKind::Object {
                        self.map_reference(guid, leaf_index, None, &mut bytes);
                    }
                    let _ = self.classes[class as usize].store.write_leaf_bytes(id, leaf_index, &bytes);
                }
                RecordValue::Array { count, elements } => {
                    let Some(a) = leaf.array else { continue };
                    let array = &layout.arrays[a];
                    let per = array.elements.len().max(1);
                    let count = *count as usize;
                    self.unmapped.retain(|u| {
                        !(u.owner == guid && u.leaf == leaf_index && u.element.is_some_and(|e| e.0 >= count))
                    });
                    let mut writes = Vec::with_capacity(elements.len());
                    for (nested, bytes) in elements {
                        let (e, i) = ((*nested as usize - 1) / per, (*nested as usize - 1) % per);
                        let mut bytes = bytes.clone();
                        self.unmapped
                            .retain(|u| !(u.owner == guid && u.leaf == leaf_index && u.element == Some((e, i))));
                        if array.elements[i].kind == LeafKind::Object {
                            self.map_reference(guid, leaf_index, Some((e, i)), &mut bytes);
                        }
                        writes.push((e, i, bytes));
                    }
                    if let Ok(buf) = self.classes[class as usize].store.array_bytes_mut(id, a) {
                        buf.resize(count * array.stride, 0);
                        for (e, i, bytes) in writes {
                            let at = e * array.stride + array.elements[i].offset;
                            buf[at..at + bytes.len()].copy_from_slice(&bytes);
                        }
                    }
                }
            }
        }
        let store = &self.classes[class as usize].store;
        for (parent, old) in touched {
            let Ok(new) = store.get(id, parent) else { continue };
            fire(&mut self.notifies, layout.parents[parent].notify, guid, parent, old, new);
        }
        if spawned {
            self.resolve(guid);
        }
    }

    /// An object reference to an object the client lacks (an actor not opened yet, a static
    /// object neither registered nor exported yet) is written as null and remembered.
    fn map_reference(&mut self, owner: NetGuid, leaf: usize, element: Option<(usize, usize)>, bytes: &mut [u8]) {
        let g = guid_of(bytes);
        if !g.is_null() && !self.actors.contains_key(&g) && !self.statics.contains(&g) {
            if self.unmapped.len() < MAX_UNMAPPED {
                self.unmapped.push(Unmapped { owner, leaf, element, target: g });
            } else {
                self.stats.unmapped_dropped += 1;
            }
            bytes[..8].fill(0);
        }
    }

    /// Actor `target` arrived: writes every reference waiting for it and fires their notifies.
    fn resolve(&mut self, target: NetGuid) {
        let (ready, rest): (Vec<Unmapped>, Vec<Unmapped>) = self.unmapped.drain(..).partition(|u| u.target == target);
        self.unmapped = rest;
        for u in ready {
            let Some(&(class, id)) = self.actors.get(&u.owner) else { continue };
            let c = &mut self.classes[class as usize];
            let layout = c.layout.clone();
            let parent = layout.leaves[u.leaf].parent;
            let Ok(old) = c.store.get(id, parent) else { continue };
            let bytes = target.0.to_le_bytes();
            match (u.element, layout.leaves[u.leaf].array) {
                (None, _) => {
                    let _ = c.store.write_leaf_bytes(id, u.leaf, &bytes);
                }
                (Some((e, i)), Some(a)) => {
                    let array = &layout.arrays[a];
                    if let Ok(buf) = c.store.array_bytes_mut(id, a) {
                        let at = e * array.stride + array.elements[i].offset;
                        if at + 8 <= buf.len() {
                            buf[at..at + 8].copy_from_slice(&bytes);
                        }
                    }
                }
                _ => continue,
            }
            if let Ok(new) = c.store.get(id, parent) {
                fire(&mut self.notifies, layout.parents[parent].notify, u.owner, parent, old, new);
            }
        }
    }
}

/// A hash of a packet's bytes (to tell a repeat from a different packet with the same number).
fn packet_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Fires a notify by its declared mode.
fn fire(out: &mut Vec<NotifyEvent>, mode: Notify, guid: NetGuid, parent: usize, old: Value, new: Value) {
    let changed = !value_bits_eq(&old, &new);
    let (fires, with_old) = match mode {
        Notify::None => (false, false),
        Notify::OnChanged => (changed, false),
        Notify::OnChangedWithOld => (changed, true),
        Notify::Always => (true, false),
        Notify::AlwaysWithOld => (true, true),
    };
    if fires {
        out.push(NotifyEvent { guid, parent, old: with_old.then_some(old), new });
    }
}

fn guid_of(bytes: &[u8]) -> NetGuid {
    let mut a = [0u8; 8];
    let n = bytes.len().min(8);
    a[..n].copy_from_slice(&bytes[..n]);
    NetGuid(u64::from_le_bytes(a))
}
