//! What a client reports: what [`super::ClientWorld::receive`] did with a packet ([`Receipt`]),
//! its counters ([`ClientStats`]), and the notifies and actor events it fires, which pile up
//! until the game takes them.

use super::SeqVerdict;
use crate::ids::{NetGuid, NetRole};
use crate::value::Value;

/// What `receive` did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receipt {
    /// Applied.
    Applied {
        /// Bunches of this packet applied (or held: the first parts of an update split across
        /// packets, applied with its last part).
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
    /// Refused packets that had the newest sequence number with other bytes: the window forgot
    /// that number (one of the two was forged), so it is reported missing and its content resent.
    pub restored: u64,
    /// Opens naming an actor the client has with another class, or a dynamic object it closed
    /// with another class or kind (one of the two opens, or the close, was forged): the open was
    /// stepped over, and a dynamic actor's copy destroyed and asked for again.
    pub open_conflicts: u64,
    /// Late packets whose number the client had received with other bytes (one of the two was
    /// forged, and the server may count the forged one's number as its own packet delivered):
    /// the actors the late one names were asked for again.
    pub late_conflicts: u64,
    /// Times the receive window went back past packets the server had not sent yet: late
    /// packets never received, several in a row (the server's, behind a forged jump ahead).
    pub window_rollbacks: u64,
    /// Tear-offs undone: a bunch for the actor came in a packet numbered from the tear-off's on,
    /// which an honest server never writes (the tear-off was forged).
    pub tear_offs_undone: u64,
    /// Bunches stepped over.
    pub bunches_skipped: u64,
    /// Requests to open an actor again, counted once per actor.
    pub reopens_requested: u64,
    /// Opens of static actors this client did not load (no such path, or another class):
    /// stepped over; and exports of static actors and objects whose path it did not load
    /// (references to them stay null).
    pub unknown_statics: u64,
    /// Static actors a close had destroyed that the server opened again by their path and GUID
    /// (it never does after its own close: the close was forged): brought back as fresh copies
    /// ([`ClientEvent::Spawned`]).
    pub statics_restored: u64,
    /// Opens of a loaded static actor's path naming another GUID than the one bound to it (a
    /// server gives a path one GUID: one of the two was forged): the newest open binds it.
    pub statics_rebound: u64,
    /// Exports of a loaded static object's path naming another GUID than the one its first
    /// export bound (the server exports an object once: a forger's): stepped over.
    pub object_export_conflicts: u64,
    /// Exports of paths not loaded, not kept for a later load: the record of them was full
    /// ([`super::MAX_PENDING_EXPORTS`]).
    pub pending_exports_dropped: u64,
    /// Static actors whose open was stepped over (not loaded) forgotten to make room for a newer
    /// one (at most 4096 are kept, the least recently used evicted): an evicted one's next
    /// update is refused with its packet and the actor asked for again.
    pub ignored_evicted: u64,
    /// References to unknown objects not remembered because [`MAX_UNMAPPED`](super::MAX_UNMAPPED) were waiting.
    pub unmapped_dropped: u64,
    /// References to objects the client has not remembered because
    /// [`MAX_MAPPED`](super::MAX_MAPPED) were, or to an actor destroyed while half of
    /// [`MAX_UNMAPPED`](super::MAX_UNMAPPED) references waited already: they keep its GUID, and
    /// its return fires no notify for them.
    pub mapped_dropped: u64,
    /// Fast array deltas that decoded but could not be applied (late, or naming ids wrongly):
    /// stepped over, state untouched.
    pub fast_array_refused: u64,
    /// Updates split across packets that were applied whole (every part arrived in order).
    pub split_joined: u64,
    /// Held parts of a split update applied without their continuation: the next packet was
    /// lost or did not continue it (the server resends what the lost part carried), or the
    /// parts reached [`MAX_PARTIAL_BYTES`](super::MAX_PARTIAL_BYTES).
    pub split_broken: u64,
    /// Remote procedure calls delivered ([`ClientWorld::take_rpcs`](super::ClientWorld::take_rpcs)).
    pub rpcs_delivered: u64,
    /// Calls dropped: the client lacked the actor when the call arrived (its channel is gone —
    /// for a reliable call, one the client has no record of closing — or its open has not
    /// arrived — for an unreliable call), the call does not decode with its class,
    /// [`MAX_UNTAKEN_RPCS`](super::MAX_UNTAKEN_RPCS) were waiting to be taken, or — a reliable
    /// call on a sub-object whose open the client set aside — [`MAX_HELD_RPCS`](super::MAX_HELD_RPCS)
    /// were held for such opens already (or the record of the set-aside open ended without one).
    pub rpcs_dropped: u64,
    /// Reliable calls whose exact bits were held or delivered under their number already (the
    /// server's resend after a lost acknowledgement): dropped.
    pub rpcs_stale: u64,
    /// Reliable calls whose number came with other bits than a call held or delivered under it,
    /// or further from the window than an honest server goes: some call was forged, and this one
    /// is delivered too (see `client::rpcs`).
    pub rpcs_conflicts: u64,
    /// Reliable Server calls written again into a feedback: the server's acknowledgement had
    /// not come within the resend gap (a lost feedback, or a lost or late acknowledgement).
    pub server_calls_resent: u64,
    /// Reliable Server calls taken as acknowledged and then found missing at the server (its
    /// acknowledgement named a number before them: a forged acknowledgement had retired them,
    /// or an older one came late): sent again.
    pub server_calls_restored: u64,
}

/// A fired notify: one per property and update (a packet's bunch, or the arrival of an object
/// its references waited for). A static array is one property, as in UE: its notify names its
/// element 0's parent and carries every element as a [`Value::Array`], whichever changed.
#[derive(Clone, Debug, PartialEq)]
pub struct NotifyEvent {
    /// Actor GUID.
    pub guid: NetGuid,
    /// Its class id: a parent index names a property of this class only.
    pub class: u32,
    /// Parent property index (a static array's element 0).
    pub parent: usize,
    /// Previous value, when the notify is declared with it.
    pub old: Option<Value>,
    /// Value now.
    pub new: Value,
}

/// An actor appearing or disappearing on the client, or (when asked) receiving an update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// An update of the actor applied: the records of one bunch (of an update split across
    /// packets, all its parts), its notifies fired (UE's `PostNetReceive`). Reported only when
    /// asked ([`ClientWorld::with_receive_events`](super::ClientWorld::with_receive_events)).
    Received {
        /// The actor.
        guid: NetGuid,
    },
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
    /// ([`ClientWorld::load_static_actor`](super::ClientWorld::load_static_actor)): the GUID names that copy now.
    Bound {
        /// The actor.
        guid: NetGuid,
        /// Its class id.
        class: u32,
    },
    /// The actor went dormant: the client keeps it as it is; the server sends nothing for it
    /// until it wakes. No event marks the wake: the actor's next bunch is its first news of it
    /// ([`ClientWorld::is_dormant`](super::ClientWorld::is_dormant)).
    Dormant {
        /// The actor.
        guid: NetGuid,
    },
    /// The actor was torn off: the client keeps it and owns it now; the server sends nothing more
    /// ([`ClientWorld::forget`](super::ClientWorld::forget) lets go of it).
    TornOff {
        /// The actor.
        guid: NetGuid,
    },
    /// The client's role for an actor it had changed (the server's
    /// [`crate::net::NetDriver::set_owner`]: a possession, a pawn handed to another player):
    /// UE's `PostNetReceiveRole`. An actor's first role comes with its `Spawned` or `Bound`.
    RoleChanged {
        /// The actor.
        guid: NetGuid,
        /// Its role now ([`ClientWorld::role`](super::ClientWorld::role)).
        role: NetRole,
    },
}
