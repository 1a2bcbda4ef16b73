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
//!   an actor split across packets is held until its last part and applied whole (its notifies
//!   fire once); if a part is lost, what was held applies when the next packet shows the gap
//!   exports bind static actors loaded with the level to the GUIDs references name
//!   an object reference to an object the client does not have yet is stored as null and kept
//!   unmapped; when that object arrives (an open, an export, a registered static object), the
//!   reference is written and its notify fires again
//!   then the packet's remote procedure calls (`rpcs`: reliable ones once each, in number
//!   order; taken with take_rpcs), and its acknowledgement of this client's Server calls
//! feedback(): the newest packet received, which of the 255 before it arrived, the actors to
//!   open again, and this client's Server calls (call_server_rpc) — send it at least once per
//!   frame in which packets arrived, and while feedback_due says so
//! ```
//!
//! Actors live in [`ClassStore`]s exactly like the server's, one per class.

mod apply;
mod closed;
mod error;
mod events;
mod fastarrays;
mod ignored;
mod partial;
mod receive;
mod resolve;
mod rpcs;
mod statics;
mod subobjects;
#[cfg(test)]
mod tests;
mod unmapped;
mod window;

/// Whether a client converged, in one number each side: what it holds, and what the server says
/// it should (they need no transport; [`crate::session::digest`] documents them).
pub use crate::session::digest::{client_digest, expected_digest, StateDigest};
pub use closed::MAX_CLOSED;
pub use error::{ClientError, ReceiveError};
pub use events::{ClientEvent, ClientStats, NotifyEvent, Receipt};
pub use partial::MAX_PARTIAL_BYTES;
pub use rpcs::{RpcEvent, MAX_FEEDBACK_CALL_BITS, MAX_HELD_RPCS, MAX_OUTGOING_CALLS, MAX_RESEND_GAP, MAX_UNTAKEN_RPCS};
pub use window::{SeqVerdict, ROLLBACK_DISTANCE, ROLLBACK_SPARSE, ROLLBACK_STREAK};

pub use crate::ids::NetRole;
use crate::ids::{NetGuid, Seq};
use crate::schema::ClassLayout;
use crate::store::{ActorId, ClassStore};
use crate::value::Value;
use crate::wire::feedback::write_feedback;
use crate::wire::open::{SpawnInfo, MAX_PATH_BYTES};
use crate::wire::BitWriter;
use error::{compare_checksums, ChecksumsDiffer};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use window::ReceiveWindow;

/// What the client keeps of a tear-off, to undo it if a later packet proves it forged.
#[derive(Clone, Copy, Debug)]
struct TearOff {
    /// The packet that carried the close. An honest server writes nothing more for the actor in
    /// packets numbered from it on (only the close itself again, if it was lost).
    at: Seq,
    /// References of the actor that waited for their target and were dropped with the tear-off:
    /// undone, the actor is asked for again, whose open carries them.
    dropped_refs: bool,
}

/// References waiting for their target kept at most (memory: they are indexed by slot and by
/// target, so a record, an open or a close costs a lookup, never a walk of them): beyond, a
/// reference is written as null and counted, not remembered.
pub const MAX_UNMAPPED: usize = 16_384;

/// References to objects the client has kept at most, by target (so a destroyed target's
/// references wait for it again): beyond, a reference is not remembered and counted
/// ([`ClientStats::mapped_dropped`]).
pub const MAX_MAPPED: usize = 65_536;

/// Feedbacks a reopen request rides in before the client gives up on it (the server answers
/// the first one it can; a request for an actor the server no longer has is never answered),
/// counted from the last time it was asked for. A sub-object or fast array set aside for want
/// of its owner asks again later ([`ignored`]).
const REOPEN_TRIES: u8 = 8;

/// Static actors whose opens the client refused (it did not load their path), and sub-objects
/// whose opens it set aside (their owner was not there), remembered at most: their updates are
/// read past (a plain bunch cannot be stepped over without knowing the class).
/// Beyond, a new one evicts the least recently opened or updated ([`ignored`]); an evicted one's
/// next update makes its packet refused, as for any actor the client lacks, and asks for it again.
const MAX_IGNORED: usize = 4096;

/// Most exports of paths the client had not loaded that it keeps, so a static object loaded
/// later binds at once ([`ClientWorld::load_static_object`]); past it, newer ones are dropped
/// and counted ([`ClientStats::pending_exports_dropped`]). Paths are at most
/// [`MAX_PATH_BYTES`] bytes: the record stays under ~150 KB.
pub const MAX_PENDING_EXPORTS: usize = 1024;

/// A request to open an actor again, riding in the next feedbacks.
#[derive(Clone, Copy, Debug)]
struct Reopen {
    guid: NetGuid,
    /// Feedbacks that carried it since it was last asked for.
    tries: u8,
    /// Whether it rides its [`REOPEN_TRIES`] feedbacks whatever bunches come for the actor
    /// meanwhile; if not, a bunch for the actor ends it (a missing actor's request: any open of
    /// it the server sends carries its whole state). What made a firm request only the server's
    /// answer heals — an open sent after it read the request, with the whole state — and the
    /// client cannot tell that open from another, while a plain update carries only what
    /// changed. Firm: a class conflict's (an open after the conflict may be a forger's again);
    /// a late packet's whose number came with other bytes (the forged packet's values stay
    /// where nothing changes); an undone tear-off's (the references it dropped come only with
    /// the open); a bunch set aside, a sub-object's or fast array's whose owner was not there
    /// (what it carried is the client's in the server's books, and the open sent again for a
    /// lost one lacks it — the ownership review's seed 2042: a weapon's ammo, changed after its
    /// lost open, set aside with its owner's open lost, then its open resent without it; stale
    /// for good).
    firm: bool,
}

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
    /// Static objects (assets, classes) loaded by the game, by path: the GUID the server's
    /// export bound to each; and the bound ones' paths by GUID.
    objects: HashMap<Arc<str>, Option<NetGuid>>,
    object_paths: HashMap<NetGuid, Arc<str>>,
    /// Exports whose path no loaded actor or object had when they came (each path's first), at
    /// most [`MAX_PENDING_EXPORTS`]: a static object loaded later binds from here.
    pending_exports: HashMap<Arc<str>, NetGuid>,
    /// Static actors a close destroyed, by path: their class and GUID. The server never opens
    /// a destroyed static actor again, so an open of one by its path and GUID says the close was
    /// not the server's (a forger's): the open brings a fresh copy back (at most one entry per
    /// path the level loaded).
    gone_statics: HashMap<Arc<str>, (u32, NetGuid)>,
    /// Dynamic actors' spawn info, as their open carried it.
    spawn: HashMap<NetGuid, SpawnInfo>,
    /// Actors closed for dormancy (kept, not updated).
    dormant: HashSet<NetGuid>,
    /// Actors torn off (kept, owned by the client, never updated again).
    torn: HashMap<NetGuid, TearOff>,
    /// Actors the client holds an autonomous proxy of, as the newest open of each said
    /// ([`Self::role`]).
    autonomous: HashSet<NetGuid>,
    /// Static actors opened by a path this client did not load, with their class: their updates
    /// are read and dropped (at most [`MAX_IGNORED`], least recently used evicted).
    ignored: ignored::Ignored,
    /// Dynamic actors, sub-objects and fast arrays closed (destroyed), with their class or kind:
    /// an open of one with another was forged ([`closed`]).
    closed: closed::Closed,
    /// Sub-object → owner, and owner → its sub-objects ([`subobjects`]).
    subs: subobjects::SubObjects,
    /// Fast arrays ([`fastarrays`]).
    fast: fastarrays::ClientFastArrays,
    window: ReceiveWindow,
    /// Actors to ask the server to open again, with the feedbacks that carried the request.
    reopen: Vec<Reopen>,
    /// Feedbacks written: the clock of set-aside sub-objects' requests ([`ignored`]).
    feedbacks: u64,
    unmapped: unmapped::Unmapped,
    /// References written to an object the client has, by target (the same index as
    /// `unmapped`): when the target is destroyed they wait for it again, so its return fires
    /// their notifies (UE's `MoveMappedObjectToUnmapped`).
    mapped: unmapped::Unmapped,
    notifies: Vec<NotifyEvent>,
    events: Vec<ClientEvent>,
    /// Packets were applied since the last feedback.
    unreported: bool,
    /// Report `ClientEvent::Received` and `FastArrayEvent::Received`.
    receive_events: bool,
    /// The part of a split update waiting for its continuation ([`partial::Partial`]).
    partial: Option<partial::Partial>,
    /// Remote procedure calls: the reliable window, and those delivered ([`rpcs`]).
    rpcs: rpcs::Rpcs,
    stats: ClientStats,
}

impl ClientWorld {
    /// A client with `layouts` (in the server's class-id order: [`NetDriver::layouts`] lists them
    /// so), refusing any whose checksum is not the server's — [`ClientError::ClassOrder`] where
    /// it is the server's at another id.
    ///
    /// [`NetDriver::layouts`]: crate::net::NetDriver::layouts
    pub fn new(layouts: &[Arc<ClassLayout>], server_checksums: &[u64]) -> Result<Self, ClientError> {
        compare_checksums(layouts.iter().map(|l| l.checksum), server_checksums).map_err(|d| match d {
            ChecksumsDiffer::Count => ClientError::ClassCount { server: server_checksums.len(), client: layouts.len() },
            ChecksumsDiffer::Order { index, server_index } => {
                ClientError::ClassOrder { class: index, server_class: server_index }
            }
            ChecksumsDiffer::Mismatch { index, server, client } => {
                ClientError::ChecksumMismatch { class: index, server, client }
            }
        })?;
        Ok(Self {
            classes: layouts
                .iter()
                .map(|l| ClientClass { layout: l.clone(), store: ClassStore::new(l.clone()) })
                .collect(),
            actors: HashMap::new(),
            statics: HashSet::new(),
            level: HashMap::new(),
            bound: HashMap::new(),
            objects: HashMap::new(),
            object_paths: HashMap::new(),
            pending_exports: HashMap::new(),
            gone_statics: HashMap::new(),
            spawn: HashMap::new(),
            dormant: HashSet::new(),
            torn: HashMap::new(),
            autonomous: HashSet::new(),
            ignored: ignored::Ignored::default(),
            closed: closed::Closed::default(),
            subs: subobjects::SubObjects::default(),
            fast: fastarrays::ClientFastArrays::default(),
            window: ReceiveWindow::new(Seq(1)),
            reopen: Vec::new(),
            feedbacks: 0,
            unmapped: unmapped::Unmapped::default(),
            mapped: unmapped::Unmapped::default(),
            notifies: Vec::new(),
            events: Vec::new(),
            unreported: false,
            receive_events: false,
            partial: None,
            rpcs: rpcs::Rpcs::default(),
            stats: ClientStats::default(),
        })
    }

    /// Reports every update applied: [`ClientEvent::Received`] after an actor's bunch (UE's
    /// `PostNetReceive`) and [`FastArrayEvent::Received`](crate::fastarray::FastArrayEvent::Received)
    /// after a fast array's delta (UE's `PostReplicatedReceive`), for game code that works on an
    /// actor's or an array's state as a whole once an update is in. Off by default: an event
    /// per bunch is a cost a client that only wants notifies need not pay.
    ///
    /// ```
    /// use shadowrep::client::{ClientEvent, ClientWorld};
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap().with_receive_events(true);
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// driver.tick(&mut [&mut store]).unwrap();
    /// for p in driver.take_packets(conn).unwrap() {
    ///     client.receive(&p).unwrap();
    /// }
    /// assert_eq!(client.take_events(), [ClientEvent::Spawned { guid, class: 0 }, ClientEvent::Received { guid }]);
    /// ```
    pub fn with_receive_events(mut self, on: bool) -> Self {
        self.receive_events = on;
        self
    }

    /// Expects the server's first packet to have sequence number `first` (the default is 1; see
    /// [`crate::net::NetDriver::add_connection_at`]).
    pub fn with_first_seq(mut self, first: Seq) -> Self {
        self.window = ReceiveWindow::new(first);
        self
    }

    /// The spawn info a dynamic actor's open carried (quantised as on the wire).
    pub fn spawn_info(&self, guid: NetGuid) -> Option<SpawnInfo> {
        self.spawn.get(&guid).copied()
    }

    /// The owner of sub-object `guid`.
    pub fn owner_of(&self, guid: NetGuid) -> Option<NetGuid> {
        self.subs.owner_of(guid)
    }

    /// Actor `owner`'s sub-objects the client has, in the order they opened.
    pub fn sub_objects(&self, owner: NetGuid) -> Vec<NetGuid> {
        self.subs.of(owner)
    }

    /// Whether actor (or sub-object, closed with its owner) `guid` is dormant as far as this
    /// client knows: its channel's last word was a dormancy close, and no bunch of it came since.
    /// A wake with nothing to send (no change while it slept) sends nothing — UE's reopened
    /// channel would send its open — so this stays true until the woken actor's first change.
    pub fn is_dormant(&self, guid: NetGuid) -> bool {
        self.dormant.contains(&guid)
    }

    /// Whether actor `guid` was torn off (the client owns its copy).
    pub fn is_torn_off(&self, guid: NetGuid) -> bool {
        self.torn.contains_key(&guid)
    }

    /// The client's role for actor `guid` (UE's local `Role` on the client, after its swap with
    /// the server's `RemoteRole`): [`NetRole::AutonomousProxy`] for the actor it controls — its
    /// connection owns it and the server set it autonomous
    /// ([`crate::net::NetDriver::set_owner`]) — [`NetRole::SimulatedProxy`] for every other
    /// actor the server replicates to it, [`NetRole::Authority`] once torn off (the copy is the
    /// client's own). A sub-object answers its owner's role (UE's `GetOwnerRole`). `None` for
    /// an actor the client does not have.
    ///
    /// The role comes with the actor's open, and in the open sent again when it changes
    /// (possession, a pawn handed to another player): [`ClientEvent::RoleChanged`] says so.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver, NetRole};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let (me, other) = (driver.add_connection(false), driver.add_connection(false));
    /// let mut mine = ClientWorld::new(&[layout.clone()], &driver.checksums()).unwrap();
    /// let mut theirs = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let pawn = store.spawn();
    /// let guid = driver.assign_guid(class, &store, pawn).unwrap();
    /// // `me` possesses the pawn.
    /// driver.set_owner(class, &store, pawn, Some(me), true).unwrap();
    /// driver.tick(&mut [&mut store]).unwrap();
    /// for (conn, client) in [(me, &mut mine), (other, &mut theirs)] {
    ///     for p in driver.take_packets(conn).unwrap() {
    ///         client.receive(&p).unwrap();
    ///     }
    /// }
    /// assert_eq!(mine.role(guid), Some(NetRole::AutonomousProxy));
    /// assert_eq!(theirs.role(guid), Some(NetRole::SimulatedProxy));
    /// ```
    pub fn role(&self, guid: NetGuid) -> Option<NetRole> {
        let actor = self.subs.owner_of(guid).unwrap_or(guid);
        if !self.actors.contains_key(&guid) || !self.actors.contains_key(&actor) {
            return None;
        }
        Some(if self.torn.contains_key(&actor) {
            NetRole::Authority
        } else if self.autonomous.contains(&actor) {
            NetRole::AutonomousProxy
        } else {
            NetRole::SimulatedProxy
        })
    }

    /// Lets go of a torn-off actor: it is despawned from its store. False if `guid` is not a
    /// torn-off actor.
    pub fn forget(&mut self, guid: NetGuid) -> bool {
        if !self.torn.contains_key(&guid) {
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
    /// [`Self::feedback`], an actor is being asked for, or Server calls wait to go or for the
    /// server's acknowledgement (feedback is the clock of their resends: call
    /// [`Self::feedback`] once a frame while this says so).
    pub fn feedback_due(&self) -> bool {
        self.unreported || !self.reopen.is_empty() || self.server_calls_waiting()
    }

    /// Whether the client has actor `guid`.
    pub fn has(&self, guid: NetGuid) -> bool {
        self.actors.contains_key(&guid)
    }

    /// The layout of class id `class` (as [`NotifyEvent::class`] and
    /// [`ClientEvent::Spawned`] name it); `None` past the classes the client has.
    pub fn class_layout(&self, class: u32) -> Option<&Arc<ClassLayout>> {
        self.classes.get(class as usize).map(|c| c.store.layout())
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

    /// The byte form of leaf `leaf` of actor `guid` (into the front of `out`); false if the
    /// client lacks the actor, its class has no such leaf, or `out` is shorter than the leaf.
    #[must_use]
    pub fn leaf_bytes(&self, guid: NetGuid, leaf: usize, out: &mut [u8]) -> bool {
        self.actors.get(&guid).is_some_and(|&(c, id)| self.classes[c as usize].store.leaf_bytes(id.index, leaf, out))
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

    /// Feedback for the server: what arrived, the actors to open again, and the Server calls
    /// due — new ones, and reliable ones the server has not acknowledged within a round trip
    /// and a half of their last send, measured in feedbacks (at most [`MAX_RESEND_GAP`]; until
    /// a first acknowledgement measures it, every feedback carries them).
    pub fn feedback(&mut self) -> Vec<u8> {
        self.unreported = false;
        let now = self.feedbacks;
        self.feedbacks += 1;
        // Set-aside sub-objects whose wait ended ask again — with room left for the requests
        // of what a packet lacked (a forger's sub-objects cannot take every place).
        for guid in self.ignored.due(now) {
            if self.reopen.len() < crate::wire::feedback::MAX_REOPENS / 2 {
                self.request_reopen_firm(guid);
            } else {
                self.ignored.unanswered(guid, now);
            }
        }
        let mut w = BitWriter::new();
        let guids: Vec<NetGuid> = self.reopen.iter().map(|r| r.guid).collect();
        write_feedback(&mut w, self.window.highest(), self.window.received(), &guids);
        let (calls, waiting) = self.calls_for_feedback();
        crate::wire::feedback::write_feedback_calls(&mut w, &calls);
        if waiting > 0 {
            self.unreported = true;
        }
        for r in &mut self.reopen {
            r.tries += 1;
        }
        let mut unanswered = Vec::new();
        self.reopen.retain(|r| {
            let rides = r.tries < REOPEN_TRIES;
            if !rides {
                unanswered.push(r.guid);
            }
            rides
        });
        for guid in unanswered {
            self.ignored.unanswered(guid, now + 1);
        }
        w.into_bytes()
    }
}
