//! Fast arrays in the frame: UE's `FFastArraySerializer` properties, replicated through their
//! owner actor's channel as bunches of their own whose bodies are deltas ([`crate::fastarray`]).
//!
//! ```text
//! kind        an item layout registered on both ends in the same order (checksummed)
//! fast array  a FastArray owned by the driver, linked to an owner actor, with its own NetGUID and
//!             a condition (as a sub-object's: OwnerOnly for an inventory, say)
//! per connection (FaConn): a base in the array, open flags, a generation
//!
//! written with its owner: whenever the owner is replicated to a connection (the actor level: in
//! the owner's priority order, charged to its budget; without it: every frame after the actors)
//!   owner's open not sent                  → wait (the client must have the owner first; from the
//!                                            bunch carrying the owner's open on, its arrays follow
//!                                            it, as UE serializes them in the actor's first bunch)
//!   owner dormant                          → wait, keeping the base (wake sends what changed)
//!   base expired (far behind: the change   → forget it: a new base sends everything
//!   log dropped removals it lacked)
//!   owner's channel gone or reopened       → forget the base (the client destroyed its copy
//!                                            with the owner): a new base sends everything
//!   condition leaves this connection out  → close it (the client destroys it), forget the base
//!   otherwise: bunches of deltas while the base has something unsent (at most
//!   MAX_DELTAS_PER_FRAME), the first after a (re)open carrying the open (owner, kind)
//! acknowledged → the base advances (FastArray::acked), the open is settled
//! lost         → the base rolls back (FastArray::lost); a lost open forgets the base (below)
//! ```
//!
//! Only the first bunch after a (re)open carries the open, unlike an actor's, which repeats it
//! until acknowledged: a client resets its copy on an open (the new base starts from nothing, and
//! the client must drop items removed while it had no base), so a repeated open would drop what
//! the bunches before it delivered. A delta that reaches a client without the array (its open was
//! lost) is stepped over there although its packet is acknowledged, so a lost open forgets the
//! base — a new generation, whose first bunch opens the array again with every item — and the
//! bunches of the old generation settle as nothing.
//!
//! Each array sits behind a mutex: connections are written in parallel, and a delta moves the
//! connection's base inside the array. A connection locks an array when the array's owner is
//! written to it — unless its record of quiet arrays says nothing can have changed for it — and
//! when the owner may go dormant; no two locks are held at once.
//!
//! Here: the kinds, the arrays and their per-connection state, and each connection's record of
//! quiet arrays; the write path in `write.rs`; the driver's calls (`register_fast_array_kind`,
//! `add_fast_array`, `fast_array_mut`, …) in `api.rs`.
//!
//! # Example
//!
//! An inventory on a character, sent to its owner only:
//!
//! ```
//! use shadowrep::client::ClientWorld;
//! use shadowrep::fastarray::{item_layout, FastArrayEvent};
//! use shadowrep::net::{DriverConfig, NetDriver, SubObjectCondition};
//! use shadowrep::prelude::*;
//! use std::sync::Arc;
//!
//! let character = Arc::new(
//!     ClassBuilder::new("Character").property(PropertyDecl::new("Health", PropType::U16)).build().unwrap(),
//! );
//! let slot = Arc::new(item_layout("Inventory", PropType::U32).unwrap()); // one u32 per item
//! let mut store = ClassStore::new(character.clone());
//! let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
//! let class = driver.register_class(&mut store).unwrap();
//! let kind = driver.register_fast_array_kind(slot.clone()).unwrap();
//! let conn = driver.add_connection(false);
//! let mut client = ClientWorld::new(&[character], &driver.checksums())
//!     .and_then(|c| c.with_fast_array_kinds(&[slot], &driver.fast_array_checksums()))
//!     .unwrap();
//!
//! let hero = store.spawn();
//! let owner = driver.assign_guid(class, &store, hero).unwrap();
//! driver.set_owner(class, &store, hero, Some(conn), true).unwrap();
//! let inventory = driver.add_fast_array(kind, owner, SubObjectCondition::OwnerOnly).unwrap();
//! let sword = driver.fast_array_mut(inventory).unwrap().add(&7u32.to_le_bytes()).unwrap();
//!
//! // The owner opens; its fast array follows in the same packet.
//! for _ in 0..3 {
//!     driver.tick(&mut [&mut store]).unwrap();
//!     for packet in driver.take_packets(conn).unwrap() {
//!         client.receive(&packet).unwrap();
//!     }
//!     driver.receive_feedback(conn, &client.feedback()).unwrap();
//! }
//! assert_eq!(client.fast_array(inventory).unwrap().item(sword), Some(&7u32.to_le_bytes()[..]));
//! assert_eq!(client.take_fast_array_events(), [(inventory, FastArrayEvent::Added(sword))]);
//! assert_eq!(client.fast_arrays_of(owner), &[inventory]);
//! ```

mod api;
mod quiet;
mod write;

use quiet::Quiet;
pub(crate) use quiet::QuietArrays;

pub use api::{FastArrayItems, FastArrayView};

use super::actors::ClassNet;
use super::lifecycle::SubObjectCondition;
use crate::fastarray::{BaseId, DeltaToken, FastArray};
use crate::ids::NetGuid;
use crate::schema::ArrayLayout;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Most delta bunches one fast array sends one connection in one frame (a first send of a large
/// array goes out over frames, as UE's does).
pub const MAX_DELTAS_PER_FRAME: usize = 4;

/// A fast array item layout registered with [`NetDriver::register_fast_array_kind`](super::NetDriver::register_fast_array_kind) (its index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FastArrayKind(pub u32);

/// Whose connection a fast array's per-connection state belongs to: the driver's, or the UE-style
/// reference's ([`crate::reference::frame`]), which keeps bases of its own in the same arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Driver,
    Reference,
}

impl Side {
    /// Where connection `ci`'s state sits in [`FastArrayNet::conns`].
    fn slot(self, ci: usize) -> usize {
        2 * ci + self as usize
    }
}

/// The owner's channel on a connection, as the writer needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnerChannel {
    /// None, or its open was lost and is not sent again yet.
    Missing,
    /// Closed for dormancy.
    Dormant,
    /// Open — its open sent (before the arrays' bunches) or acknowledged: the client has the
    /// owner by the time it reads them (the channel's epoch).
    Open(u8),
}

/// [`FaConn::flags`]: the open was sent since the last (re)open or loss of it.
const OPEN_SENT: u8 = 1;
/// [`FaConn::flags`]: a packet carrying the open was acknowledged.
const OPEN_ACKED: u8 = 2;
/// [`FaConn::flags`]: a lost close of the array (from an earlier base) was not sent again, as
/// this base's open replaces the client's copy; should that open be lost, the close is owed
/// again ([`FastArrays::settle`]).
const CLOSE_OWED: u8 = 4;
/// [`FaConn::flags`]: the client may hold a copy of the array from an earlier channel of its
/// owner — that channel's close was lost and not sent again, as the owner has a channel here
/// again ([`FastArrays::owner_close_dropped`]) — which the server holds no state for. A base's
/// acknowledged open replaces the copy; a condition that leaves the connection out sends the
/// array's close instead (`write`). Kept through [`FastArrayNet::reset`].
const STALE: u8 = 8;

/// [`FaConn::flags`]: the owner's channel here ended ([`FastArrays::owner_ended`]) while the
/// client may have had the array (its open sent or acknowledged, bunches in flight, or a stale
/// copy): the owner's close takes the client's copy with it — unless that close is lost and not
/// sent again, the owner back first. Until the owner's close is known delivered
/// ([`FastArrays::owner_close_delivered`]) or a new open replaces the copy, a removal of the
/// array sends the array's own close (`NetDriver::remove_fast_array`): the server holds no
/// state that would tell it the client may keep it. Kept through [`FastArrayNet::reset`].
const MAY_HOLD: u8 = 16;

/// One connection's state in one fast array.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FaConn {
    base: Option<BaseId>,
    flags: u8,
    /// The owner's channel epoch when the base was made.
    owner_epoch: u8,
    /// Bunches in packets whose fate is unknown.
    in_flight: u16,
    /// Counts resets: bunches of an earlier base settle as nothing.
    generation: u32,
}

/// A fast array, its owner and its connections.
pub(crate) struct FastArrayNet {
    array: FastArray,
    kind: u32,
    owner: NetGuid,
    /// Per connection, at [`Side::slot`].
    conns: Vec<FaConn>,
}

impl FastArrayNet {
    /// Forgets the base at `slot`: its next bunch opens the array again from nothing.
    fn reset(&mut self, slot: usize) {
        let Some(fc) = self.conns.get_mut(slot) else { return };
        if let Some(base) = fc.base.take() {
            let _ = self.array.disconnect(base);
        }
        let kept = fc.flags & (STALE | MAY_HOLD);
        *fc = FaConn { generation: fc.generation.wrapping_add(1), flags: kept, ..FaConn::default() };
    }

    /// [`Self::reset`], and no stale copy either: the slot's connection is gone (or new).
    fn forget(&mut self, slot: usize) {
        self.reset(slot);
        if let Some(fc) = self.conns.get_mut(slot) {
            fc.flags = 0;
        }
    }

    /// Whether the driver's connection `ci` holds nothing of this array in flight and nothing
    /// unsent: its owner may go dormant for it.
    fn settled(&self, slot: usize) -> bool {
        self.conns.get(slot).is_none_or(|fc| {
            fc.in_flight == 0 && fc.base.is_none_or(|b| !self.array.has_unsent(b) && fc.flags & OPEN_ACKED != 0)
        })
    }
}

/// What one packet carried of one fast array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastSent {
    guid: NetGuid,
    /// The array's slot (where a connection keeps its quiet record).
    slot: u32,
    generation: u32,
    token: Option<DeltaToken>,
    open: bool,
}

/// Every fast array of a driver.
#[derive(Default)]
pub(crate) struct FastArrays {
    kinds: Vec<(Arc<ArrayLayout>, u64)>,
    /// By GUID: written in this order where every array is written.
    arrays: BTreeMap<NetGuid, FaEntry>,
    /// Owner → its fast arrays.
    by_owner: crate::ids::GuidMap<Vec<NetGuid>>,
    /// Slots of removed arrays, for the next ones; `slots` handed out in all.
    free_slots: Vec<u32>,
    slots: u32,
}

/// A fast array and the count of its changes through [`NetDriver::fast_array_mut`](super::NetDriver::fast_array_mut), which a
/// connection's [`QuietArrays`] compares without taking the lock.
struct FaEntry {
    version: u64,
    /// Its place in every connection's [`QuietArrays`] (reused after the array is removed).
    slot: u32,
    /// Its condition, changed only with the driver borrowed mutably: read without the lock (a
    /// caller holding a [`FastArrayView`] of the array may ask for it).
    condition: SubObjectCondition,
    m: Mutex<FastArrayNet>,
}

/// What a connection's write reads of a fast array without its lock: its version and its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ArrayStamp {
    pub version: u64,
    pub slot: u32,
}

fn lock(e: &FaEntry) -> std::sync::MutexGuard<'_, FastArrayNet> {
    // A panic while holding the lock is a bug elsewhere; the array's state stays usable.
    e.m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a write of a fast array to a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Left {
    /// Something may be left to do (written, out of room, or waiting on the owner's channel).
    Busy,
    /// The condition leaves the connection out, and it holds no base.
    Excluded,
    /// The open is sent and nothing is unsent.
    Synced,
}

impl FastArrays {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// Fast array `guid`'s slot, if it is one.
    pub fn slot_of(&self, guid: NetGuid) -> Option<u32> {
        self.arrays.get(&guid).map(|e| e.slot)
    }

    /// `owner`'s fast arrays with their versions and slots (`None`: no such array), in the
    /// owner's order.
    pub fn versions_of(&self, owner: NetGuid) -> impl Iterator<Item = (NetGuid, Option<ArrayStamp>)> + '_ {
        let list = self.by_owner.get(&owner).map_or(&[][..], |l| &l[..]);
        list.iter().map(|&g| (g, self.arrays.get(&g).map(|e| ArrayStamp { version: e.version, slot: e.slot })))
    }

    /// Adds fast array `guid` in a free slot.
    fn insert(&mut self, guid: NetGuid, fa: FastArrayNet, condition: SubObjectCondition) {
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.slots += 1;
            self.slots - 1
        });
        self.arrays.insert(guid, FaEntry { version: 0, slot, condition, m: Mutex::new(fa) });
    }

    /// Removes fast array `guid`, freeing its slot (every connection must forget it).
    fn remove(&mut self, guid: NetGuid) -> Option<FastArrayNet> {
        let e = self.arrays.remove(&guid)?;
        self.free_slots.push(e.slot);
        Some(e.m.into_inner().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether every fast array of `owner` is settled on connection `ci` (see
    /// [`FastArrayNet::settled`]).
    pub fn settled_for(&self, owner: NetGuid, ci: usize) -> bool {
        self.settled_on(Side::Driver, owner, ci)
    }

    /// [`Self::settled_for`] on `side`'s connection `ci`.
    pub(crate) fn settled_on(&self, side: Side, owner: NetGuid, ci: usize) -> bool {
        self.by_owner
            .get(&owner)
            .is_none_or(|list| list.iter().all(|g| self.arrays.get(g).is_none_or(|m| lock(m).settled(side.slot(ci)))))
    }

    /// Settles one packet's fast array bunch to `side`'s connection `ci`: delivered or lost.
    /// Returns the array when its close is owed to the connection again (see
    /// [`Self::close_lost`]): the caller queues it.
    pub fn settle(&self, side: Side, ci: usize, sent: FastSent, delivered: bool) -> Option<NetGuid> {
        let m = self.arrays.get(&sent.guid)?;
        let mut fa = lock(m);
        let fa = &mut *fa;
        let slot = side.slot(ci);
        let fc = fa.conns.get_mut(slot).filter(|fc| fc.generation == sent.generation)?;
        let base = fc.base?;
        fc.in_flight = fc.in_flight.saturating_sub(1);
        if delivered {
            if sent.open {
                // The open replaced whatever copy the client held.
                fc.flags = fc.flags & !(STALE | MAY_HOLD) | OPEN_ACKED;
            }
            if let Some(t) = sent.token {
                fa.array.acked(base, t);
            }
        } else if sent.open && fc.flags & OPEN_ACKED == 0 {
            // The client never got the array: whatever followed the open was stepped over there,
            // even if acknowledged. Start again from nothing — and if a lost close was not sent
            // again for this open, the client may still hold the copy it was to destroy.
            let owed = fc.flags & CLOSE_OWED != 0;
            fa.reset(slot);
            return owed.then_some(sent.guid);
        } else if let Some(t) = sent.token {
            fa.array.lost(base, t);
        }
        None
    }

    /// A close of fast array `guid` (destroyed) to `side`'s connection `ci` was lost: whether it
    /// goes again. Not when the array was opened there again since (its owner-only condition
    /// left the connection out, then let it in again): the close, behind that open on the
    /// client, would destroy the copy the open made while the server goes on believing the
    /// client has it — a quiet array never came back. The open replaces the client's copy by
    /// itself; should it be lost, [`Self::settle`] owes the close again.
    pub(crate) fn close_lost(&self, side: Side, ci: usize, guid: NetGuid) -> bool {
        let Some(e) = self.arrays.get(&guid) else { return true };
        let mut fa = lock(e);
        match fa.conns.get_mut(side.slot(ci)) {
            Some(fc) if fc.flags & (OPEN_SENT | OPEN_ACKED) != 0 => {
                fc.flags |= CLOSE_OWED;
                false
            }
            _ => true,
        }
    }

    /// A lost close of `owner` to `side`'s connection `ci` (destroyed, or its sublevel
    /// unloaded) is not sent again because the owner has a channel there again: the client may
    /// still hold the owner's fast arrays from the channel that close ended, while the new
    /// channel starts them from nothing. Each is marked ([`STALE`]) so that, should its
    /// condition leave the connection out before an open replaces the copy, the array's own
    /// close goes instead — or the client kept items it should not have, for good.
    ///
    /// The driver's connection passes its quiet record, which forgets the arrays (an answer
    /// recorded while the connection was left out would skip them).
    pub(crate) fn owner_close_dropped(
        &self,
        side: Side,
        ci: usize,
        owner: NetGuid,
        mut quiet: Option<&mut QuietArrays>,
    ) {
        let slot = side.slot(ci);
        for g in self.by_owner.get(&owner).map_or(&[][..], |l| &l[..]) {
            if let Some(q) = quiet.as_deref_mut() {
                q.forget(*g);
            }
            let Some(e) = self.arrays.get(g) else { continue };
            let mut fa = lock(e);
            if fa.conns.len() <= slot {
                fa.conns.resize(slot + 1, FaConn::default());
            }
            fa.conns[slot].flags |= STALE;
        }
    }

    /// A client got a bunch of fast array `guid` it does not have: send it again from nothing on
    /// `side`'s connection `ci`, if that side believes the open acknowledged (once per round
    /// trip, as an actor's reopen). False when not honoured (no such array, or its open is on its
    /// way).
    pub fn reopen(&self, side: Side, ci: usize, guid: NetGuid) -> bool {
        let Some(e) = self.arrays.get(&guid) else { return false };
        let mut fa = lock(e);
        let slot = side.slot(ci);
        if fa.conns.get(slot).is_none_or(|fc| fc.flags & OPEN_ACKED == 0) {
            return false;
        }
        fa.reset(slot);
        // The request may be late (feedback is reordered): sent before an open that reached the
        // client since, which holds the array now. Should the array's condition leave the
        // connection out before a new open replaces that copy, its own close must go — the
        // base just forgotten was all that told the server the client held it, and the copy
        // stayed for good (an owner-only array handed to another player in that frame).
        fa.conns[slot].flags |= STALE;
        true
    }

    /// Owner `owner` is opened again on `side`'s connection `ci` at the client's request: each
    /// of its arrays starts again from nothing there — marked [`STALE`] where the client may
    /// hold it, since the request may be late (behind an open that reached the client since) or
    /// forged, and a client keeps the actor it holds, arrays and all, through the open sent
    /// again: should an array's condition leave the connection out before a new open replaces
    /// that copy, its own close goes (an owner-only array handed to another player in that frame
    /// stayed with the old one for good). The driver's connection passes its quiet record, which
    /// forgets the arrays.
    pub(crate) fn owner_reopened(&self, side: Side, ci: usize, owner: NetGuid, quiet: Option<&mut QuietArrays>) {
        self.restart_owner(side, ci, owner, STALE, quiet);
    }

    /// Owner `owner`'s channel on `side`'s connection `ci` ended (closed, not torn off): the
    /// client destroys its arrays with it, so each starts again from nothing there — marked
    /// [`MAY_HOLD`] where the client may have had it, until the owner's close is known
    /// delivered.
    pub(crate) fn owner_ended(&self, side: Side, ci: usize, owner: NetGuid) {
        self.restart_owner(side, ci, owner, MAY_HOLD, None);
    }

    /// Each of `owner`'s arrays starts again from nothing on `side`'s connection `ci`
    /// ([`FastArrayNet::reset`]), with flag `mark` where the client may hold a copy (its open
    /// sent or acknowledged, bunches in flight, or a stale copy already); `quiet`, the driver
    /// connection's record, forgets them.
    fn restart_owner(&self, side: Side, ci: usize, owner: NetGuid, mark: u8, mut quiet: Option<&mut QuietArrays>) {
        let slot = side.slot(ci);
        for g in self.by_owner.get(&owner).map_or(&[][..], |l| &l[..]) {
            let Some(e) = self.arrays.get(g) else { continue };
            if let Some(q) = quiet.as_deref_mut() {
                q.forget_at(e.slot, *g);
            }
            let mut fa = lock(e);
            let Some(fc) = fa.conns.get_mut(slot) else { continue };
            let held = fc.flags & (OPEN_SENT | OPEN_ACKED | STALE) != 0 || fc.in_flight > 0;
            fa.reset(slot);
            if held {
                fa.conns[slot].flags |= mark;
            }
        }
    }

    /// Fast array `guid` starts again from nothing on `side`'s connection `ci`: its owner is
    /// opened there again — a new channel, or the client asked for it — and the client has
    /// none of its arrays (whatever the channels' numbers say: a connection numbers them in a
    /// byte, so a new channel may have the old one's).
    pub(crate) fn restart(&self, side: Side, ci: usize, guid: NetGuid) {
        if let Some(e) = self.arrays.get(&guid) {
            lock(e).reset(side.slot(ci));
        }
    }

    /// Whether actor `owner` has fast arrays.
    pub(crate) fn has_arrays(&self, owner: NetGuid) -> bool {
        self.by_owner.contains_key(&owner)
    }

    /// A close on `side`'s connection `ci` (`conn`, the close already out of its packets in
    /// flight) reached the client: one that destroyed an owner took the owner's arrays with it —
    /// unless another close of the owner is still on its way (a later channel's copy may be
    /// there) — so [`Self::owner_close_delivered`].
    pub(crate) fn close_delivered(
        &self,
        side: Side,
        ci: usize,
        conn: &super::connection::Connection,
        close: &super::connection::PendingClose,
    ) {
        if close.reason.destroys_copy() && self.has_arrays(close.guid) && !conn.close_pending(close.guid) {
            self.owner_close_delivered(side, ci, close.guid);
        }
    }

    /// The last close of `owner` on its way to `side`'s connection `ci` (destroyed, or its
    /// sublevel unloaded) reached it: the client holds none of its arrays from before
    /// ([`MAY_HOLD`] cleared).
    pub(crate) fn owner_close_delivered(&self, side: Side, ci: usize, owner: NetGuid) {
        let slot = side.slot(ci);
        for g in self.by_owner.get(&owner).map_or(&[][..], |l| &l[..]) {
            let Some(e) = self.arrays.get(g) else { continue };
            if let Some(fc) = lock(e).conns.get_mut(slot) {
                fc.flags &= !MAY_HOLD;
            }
        }
    }

    /// [`Self::restart`] of an owner's `arrays` (with their stamps: a gone array has none) on
    /// the driver's connection `ci`, whose quiet record forgets them.
    pub(crate) fn restart_for_connection(
        &self,
        ci: usize,
        quiet: &mut QuietArrays,
        arrays: impl IntoIterator<Item = (NetGuid, Option<ArrayStamp>)>,
    ) {
        for (g, stamp) in arrays {
            if let Some(s) = stamp {
                quiet.forget_at(s.slot, g);
                self.restart(Side::Driver, ci, g);
            }
        }
    }

    /// Connection `ci` is gone: its bases go.
    pub fn remove_connection(&mut self, ci: usize) {
        for m in self.arrays.values_mut() {
            m.m.get_mut().unwrap_or_else(PoisonError::into_inner).forget(Side::Driver.slot(ci));
        }
    }

    /// The reference's connection in slot `ci` is a new one: its bases start from nothing.
    pub(crate) fn reset_reference_connection(&self, ci: usize) {
        for m in self.arrays.values() {
            lock(m).forget(Side::Reference.slot(ci));
        }
    }

    /// Drops the arrays whose owner is gone or torn off (clients destroyed them with the owner,
    /// or keep them as the owner's, torn off).
    /// Returns the arrays dropped.
    pub fn drop_orphans(&mut self, guids: &crate::ids::GuidMap<(u32, u32)>, classes: &[ClassNet]) -> Vec<NetGuid> {
        let mut dropped = Vec::new();
        if self.arrays.is_empty() {
            return dropped;
        }
        let live = |owner: &NetGuid| {
            guids.get(owner).is_some_and(|&(c, s)| {
                classes[c as usize].actors.get(s as usize).is_some_and(|a| a.alive && !a.torn_off && a.guid == *owner)
            })
        };
        let gone: Vec<NetGuid> = self.by_owner.keys().filter(|o| !live(o)).copied().collect();
        for owner in gone {
            for g in self.by_owner.remove(&owner).unwrap_or_default() {
                self.remove(g);
                dropped.push(g);
            }
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_of_removed_arrays_are_reused() {
        let layout = Arc::new(crate::fastarray::item_layout("Slot", crate::schema::PropType::U32).unwrap());
        let fa =
            || FastArrayNet { array: FastArray::new(layout.clone()), kind: 0, owner: NetGuid(2), conns: Vec::new() };
        let mut arrays = FastArrays::default();
        for g in [10, 12, 14] {
            arrays.insert(NetGuid(g), fa(), crate::net::SubObjectCondition::None);
        }
        let slot = |arrays: &FastArrays, g| arrays.arrays[&NetGuid(g)].slot;
        assert_eq!([10, 12, 14].map(|g| slot(&arrays, g)), [0, 1, 2]);
        assert!(arrays.remove(NetGuid(12)).is_some());
        assert!(arrays.remove(NetGuid(12)).is_none(), "removed once");
        arrays.insert(NetGuid(16), fa(), crate::net::SubObjectCondition::None);
        assert_eq!(slot(&arrays, 16), 1, "the freed slot");
        arrays.insert(NetGuid(18), fa(), crate::net::SubObjectCondition::None);
        assert_eq!(slot(&arrays, 18), 3);
    }
}
