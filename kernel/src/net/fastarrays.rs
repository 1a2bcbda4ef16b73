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
//!   owner's channel not acknowledged yet → wait (the client must have the owner first)
//!   owner dormant                          → wait, keeping the base (wake sends what changed)
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
//! // The owner opens first; its fast array follows once the client has it.
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

use super::actors::ClassNet;
use super::connection::{pair, Connection, PendingClose};
use super::lifecycle::SubObjectCondition;
use super::send::{FrameWrite, WriteCtx};
use super::{DriverError, NetDriver};
use crate::fastarray::{BaseId, DeltaToken, FastArray, FastArrayError, ReplicationId};
use crate::ids::NetGuid;
use crate::schema::ArrayLayout;
use crate::wire::open::{OpenHeader, OpenKind};
use crate::wire::packet::max_body_bits;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Most delta bunches one fast array sends one connection in one frame (a first send of a large
/// array goes out over frames, as UE's does).
pub const MAX_DELTAS_PER_FRAME: usize = 4;

/// A fast array item layout registered with [`NetDriver::register_fast_array_kind`] (its index).
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
    /// None, or its open is not acknowledged yet.
    Missing,
    /// Closed for dormancy.
    Dormant,
    /// Open and acknowledged: the client has the owner (the channel's epoch).
    Open(u8),
}

/// [`FaConn::flags`]: the open was sent since the last (re)open or loss of it.
const OPEN_SENT: u8 = 1;
/// [`FaConn::flags`]: a packet carrying the open was acknowledged.
const OPEN_ACKED: u8 = 2;

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
    condition: SubObjectCondition,
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
        *fc = FaConn { generation: fc.generation.wrapping_add(1), ..FaConn::default() };
    }

    /// Whether the driver's connection `ci` holds nothing of this array in flight and nothing
    /// unsent: its owner may go dormant for it.
    fn settled(&self, ci: usize) -> bool {
        self.conns.get(Side::Driver.slot(ci)).is_none_or(|fc| {
            fc.in_flight == 0 && fc.base.is_none_or(|b| !self.array.has_unsent(b) && fc.flags & OPEN_ACKED != 0)
        })
    }
}

/// What one packet carried of one fast array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastSent {
    guid: NetGuid,
    generation: u32,
    token: Option<DeltaToken>,
    open: bool,
}

impl FastSent {
    /// The fast array.
    pub(crate) fn guid(&self) -> NetGuid {
        self.guid
    }
}

/// Every fast array of a driver.
#[derive(Default)]
pub(crate) struct FastArrays {
    kinds: Vec<(Arc<ArrayLayout>, u64)>,
    /// By GUID: written in this order where every array is written.
    arrays: BTreeMap<NetGuid, FaEntry>,
    /// Owner → its fast arrays.
    by_owner: crate::ids::GuidMap<Vec<NetGuid>>,
}

/// A fast array and the count of its changes through [`NetDriver::fast_array_mut`], which a
/// connection's [`QuietArrays`] compares without taking the lock.
struct FaEntry {
    version: u64,
    m: Mutex<FastArrayNet>,
}

fn lock(e: &FaEntry) -> std::sync::MutexGuard<'_, FastArrayNet> {
    // A panic while holding the lock is a bug elsewhere; the array's state stays usable.
    e.m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection's fast arrays with nothing to write: the ones whose last write found the
/// condition leaving this connection out, or left nothing unsent, with what that answer rested
/// on — the owner's channel epoch, the array's version and the owner's ownership as the
/// condition read it. Writing the owner again finds the same and skips the array without
/// locking it: an owner-only inventory is asked for by every connection its character is sent
/// to, from every thread of a frame, and its lock's line went back and forth between them. The
/// answer holds until the array changes (its version, bumped by [`NetDriver::fast_array_mut`];
/// not for an excluded connection), the owner's channel or ownership changes (compared; a
/// channel that was not open passes through a write that forgets), or this connection's
/// feedback settles a bunch of the array or asks for it again (forgotten there). A removed or
/// orphaned array is forgotten by every connection.
#[derive(Debug, Default)]
pub(crate) struct QuietArrays(crate::ids::GuidMap<Quiet>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quiet {
    epoch: u8,
    /// The array's version; `None` when the condition left the connection out, whatever the
    /// items (an owner-only inventory changes with every shot its owner fires).
    version: Option<u64>,
    owned: bool,
    autonomous: bool,
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

impl QuietArrays {
    /// Forgets fast array `guid` (its state for this connection may have changed).
    pub(crate) fn forget(&mut self, guid: NetGuid) {
        self.0.remove(&guid);
    }
}

impl FastArrays {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// Whether `guid` is a fast array.
    pub fn contains(&self, guid: NetGuid) -> bool {
        self.arrays.contains_key(&guid)
    }

    /// Whether every fast array of `owner` is settled on connection `ci` (see
    /// [`FastArrayNet::settled`]).
    pub fn settled_for(&self, owner: NetGuid, ci: usize) -> bool {
        self.by_owner
            .get(&owner)
            .is_none_or(|list| list.iter().all(|g| self.arrays.get(g).is_none_or(|m| lock(m).settled(ci))))
    }

    /// Settles one packet's fast array bunch to `side`'s connection `ci`: delivered or lost.
    pub fn settle(&self, side: Side, ci: usize, sent: FastSent, delivered: bool) {
        let Some(m) = self.arrays.get(&sent.guid) else { return };
        let mut fa = lock(m);
        let fa = &mut *fa;
        let slot = side.slot(ci);
        let Some(fc) = fa.conns.get_mut(slot).filter(|fc| fc.generation == sent.generation) else { return };
        let Some(base) = fc.base else { return };
        fc.in_flight = fc.in_flight.saturating_sub(1);
        if delivered {
            if sent.open {
                fc.flags |= OPEN_ACKED;
            }
            if let Some(t) = sent.token {
                fa.array.acked(base, t);
            }
        } else if sent.open && fc.flags & OPEN_ACKED == 0 {
            // The client never got the array: whatever followed the open was stepped over there,
            // even if acknowledged. Start again from nothing.
            fa.reset(slot);
        } else if let Some(t) = sent.token {
            fa.array.lost(base, t);
        }
    }

    /// A client got a bunch of fast array `guid` it does not have: send it again from nothing,
    /// if the server believes the open acknowledged (once per round trip, as an actor's reopen).
    /// False when not honoured (no such array, or its open is on its way).
    pub fn reopen(&mut self, ci: usize, guid: NetGuid) -> bool {
        let Some(m) = self.arrays.get_mut(&guid) else { return false };
        let fa = m.m.get_mut().unwrap_or_else(PoisonError::into_inner);
        let slot = Side::Driver.slot(ci);
        if fa.conns.get(slot).is_none_or(|fc| fc.flags & OPEN_ACKED == 0) {
            return false;
        }
        fa.reset(slot);
        true
    }

    /// Connection `ci` is gone: its bases go.
    pub fn remove_connection(&mut self, ci: usize) {
        for m in self.arrays.values_mut() {
            m.m.get_mut().unwrap_or_else(PoisonError::into_inner).reset(Side::Driver.slot(ci));
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
                self.arrays.remove(&g);
                dropped.push(g);
            }
        }
        dropped
    }
}

impl WriteCtx<'_> {
    /// Writes what `side`'s connection `ci` is owed of `owner`'s fast arrays (the owner was just
    /// replicated to it; its channel there is `channel`).
    pub(crate) fn write_fast_arrays_for(
        &self,
        side: Side,
        (ci, conn): (u32, &mut Connection),
        st: &mut FrameWrite,
        owner: NetGuid,
        channel: OwnerChannel,
    ) {
        let Some(list) = self.fast.by_owner.get(&owner) else { return };
        // What a quiet answer rests on, for the driver's connections (the reference's keep none).
        let basis = match (side, channel) {
            (Side::Driver, OwnerChannel::Open(epoch)) => self
                .guids
                .get(&owner)
                .and_then(|&(c, s)| self.classes[c as usize].actors.get(s as usize))
                .filter(|a| a.alive && !a.torn_off && a.guid == owner)
                .map(|a| (epoch, a.owner == Some(ci), a.autonomous)),
            _ => None,
        };
        for &g in list {
            let now = basis.and_then(|(epoch, owned, autonomous)| {
                let version = self.fast.arrays.get(&g)?.version;
                Some(Quiet { epoch, version: Some(version), owned, autonomous })
            });
            if let (Some(now), Some(was)) = (now, conn.quiet.0.get(&g)) {
                if *was == now || *was == (Quiet { version: None, ..now }) {
                    continue;
                }
            }
            let left = self.write_fast_array(side, ci, conn, st, g, Some(channel));
            match (now, left) {
                (Some(q), Left::Synced) => {
                    conn.quiet.0.insert(g, q);
                }
                (Some(q), Left::Excluded) => {
                    conn.quiet.0.insert(g, Quiet { version: None, ..q });
                }
                _ => conn.quiet.forget(g),
            }
        }
    }

    /// Writes what connection `ci` is owed of every fast array.
    pub(crate) fn write_all_fast_arrays(&self, ci: u32, conn: &mut Connection, st: &mut FrameWrite) {
        for &g in self.fast.arrays.keys() {
            // Without the actor level no answer is recorded: every array is looked at, locked.
            let _ = self.write_fast_array(Side::Driver, ci, conn, st, g, None);
        }
    }

    /// Writes fast array `guid`'s bunches to `side`'s connection `ci`; `channel`: its owner's
    /// channel there (`None`: read from the connection's pairs). Returns how it ended: with nothing
    /// left to do (excluded by the condition, or synced), a call would do nothing until the owner's
    /// channel or ownership, this connection's feedback of the array, or (synced) the array
    /// changes.
    fn write_fast_array(
        &self,
        side: Side,
        ci: u32,
        conn: &mut Connection,
        st: &mut FrameWrite,
        guid: NetGuid,
        channel: Option<OwnerChannel>,
    ) -> Left {
        let Some(m) = self.fast.arrays.get(&guid) else { return Left::Busy };
        let mut fa = lock(m);
        let fa = &mut *fa;
        let Some(&(class, slot)) = self.guids.get(&fa.owner) else { return Left::Busy };
        let Some(actor) = self.classes[class as usize]
            .actors
            .get(slot as usize)
            .filter(|a| a.alive && !a.torn_off && a.guid == fa.owner)
        else {
            return Left::Busy;
        };
        let i = side.slot(ci as usize);
        if fa.conns.len() <= i {
            fa.conns.resize(i + 1, FaConn::default());
        }
        let channel = channel.unwrap_or_else(|| match conn.pair_ref(class, slot) {
            Some(ps) if ps.flags & pair::DORMANT != 0 => OwnerChannel::Dormant,
            Some(ps) if ps.flags & pair::OPEN_ACKED != 0 => OwnerChannel::Open(ps.epoch),
            _ => OwnerChannel::Missing,
        });
        let epoch = match channel {
            OwnerChannel::Dormant => return Left::Busy,
            OwnerChannel::Open(epoch) => epoch,
            // The client has not got the owner yet, or no more (closed, or asked to open it
            // again): a base from an earlier channel of the owner went with the client's copy.
            OwnerChannel::Missing => {
                if fa.conns[i].base.is_some() {
                    fa.reset(i);
                }
                return Left::Busy;
            }
        };
        if !fa.condition.allows(actor.owner == Some(ci), actor.autonomous, conn.replay) {
            if fa.conns[i].base.is_some() {
                if fa.conns[i].flags & (OPEN_SENT | OPEN_ACKED) != 0 || fa.conns[i].in_flight > 0 {
                    conn.closes.push(PendingClose::destroyed(guid));
                }
                fa.reset(i);
            }
            // No base: until the owner's ownership changes, every call ends here.
            return Left::Excluded;
        }
        if fa.conns[i].base.is_some() && fa.conns[i].owner_epoch != epoch {
            fa.reset(i);
        }
        let base = match fa.conns[i].base {
            Some(base) => base,
            None => {
                let base = fa.array.connect();
                fa.conns[i] = FaConn { base: Some(base), owner_epoch: epoch, ..fa.conns[i] };
                base
            }
        };
        for _ in 0..MAX_DELTAS_PER_FRAME {
            let opening = fa.conns[i].flags & OPEN_SENT == 0;
            if st.full {
                return Left::Busy;
            }
            if !opening && !fa.array.has_unsent(base) {
                return Left::Synced;
            }
            let header =
                opening.then(|| OpenHeader { class: fa.kind, kind: OpenKind::FastArray { owner: fa.owner } }.encode());
            let need = if fa.array.has_unsent(base) { fa.array.min_delta_bits() } else { 0 };
            if !self.ensure_in(conn, st, |c| c.writer.bunch_fits(&c.out, guid, header.as_ref(), need)) {
                st.full = true;
                return Left::Busy;
            }
            conn.writer.begin_bunch(guid, header.as_ref());
            let room = conn.writer.body_room(&conn.out);
            // The base exists and the room was checked: an error here is a bug; send nothing.
            let token = fa.array.write_delta_within(base, conn.writer.body(), room).unwrap_or(None);
            if token.is_none() && !opening {
                conn.writer.abandon_bunch();
                return Left::Busy;
            }
            conn.writer.end_bunch(&mut conn.out, 0);
            let fc = &mut fa.conns[i];
            conn.rel.fast.push_back(FastSent { guid, generation: fc.generation, token, open: opening });
            st.wrote_fast();
            fc.flags |= OPEN_SENT;
            fc.in_flight = fc.in_flight.saturating_add(1);
            if token.is_none() {
                return Left::Busy;
            }
        }
        Left::Busy
    }
}

/// A fast array's items, to change on the server ([`NetDriver::fast_array_mut`]): every change
/// marks the item, and the next frames send it to every connection that has the array.
pub struct FastArrayItems<'a>(&'a mut FastArray);

impl FastArrayItems<'_> {
    /// Items.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// An item's bytes.
    pub fn item(&self, id: ReplicationId) -> Option<&[u8]> {
        self.0.item(id)
    }

    /// Every item, in storage order (not the order of adding: removal swaps).
    pub fn iter(&self) -> impl Iterator<Item = (ReplicationId, &[u8])> {
        self.0.iter()
    }

    /// Adds an item (one stride of bytes); returns its replication id.
    pub fn add(&mut self, item: &[u8]) -> Result<ReplicationId, FastArrayError> {
        self.0.add(item)
    }

    /// Replaces an item's bytes and marks it.
    pub fn set(&mut self, id: ReplicationId, item: &[u8]) -> Result<(), FastArrayError> {
        self.0.set(id, item)
    }

    /// An item's bytes to change in place; marks it.
    pub fn item_mut(&mut self, id: ReplicationId) -> Result<&mut [u8], FastArrayError> {
        self.0.item_mut(id)
    }

    /// Marks an item changed (UE's `MarkItemDirty`).
    pub fn mark_item_dirty(&mut self, id: ReplicationId) -> Result<(), FastArrayError> {
        self.0.mark_item_dirty(id)
    }

    /// Marks every item changed (UE's `MarkArrayDirty`).
    pub fn mark_array_dirty(&mut self) {
        self.0.mark_array_dirty()
    }

    /// Removes an item.
    pub fn remove(&mut self, id: ReplicationId) -> Result<(), FastArrayError> {
        self.0.remove(id)
    }
}

/// A fast array's items, to read ([`NetDriver::fast_array`]): reading changes nothing, so the
/// connections that have everything go on skipping the array.
pub struct FastArrayView<'a>(std::sync::MutexGuard<'a, FastArrayNet>);

impl FastArrayView<'_> {
    /// Items.
    pub fn len(&self) -> usize {
        self.0.array.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.0.array.is_empty()
    }

    /// An item's bytes.
    pub fn item(&self, id: ReplicationId) -> Option<&[u8]> {
        self.0.array.item(id)
    }

    /// Every item, in storage order (not the order of adding: removal swaps).
    pub fn iter(&self) -> impl Iterator<Item = (ReplicationId, &[u8])> {
        self.0.array.iter()
    }
}

impl NetDriver {
    /// Registers a fast array item layout (build one with [`crate::fastarray::item_layout`]).
    /// Clients register the same layouts in the same order
    /// ([`crate::client::ClientWorld::with_fast_array_kinds`], checked against
    /// [`Self::fast_array_checksums`]). An item must fit one packet.
    pub fn register_fast_array_kind(&mut self, layout: Arc<ArrayLayout>) -> Result<FastArrayKind, DriverError> {
        let bits = FastArray::new(layout.clone()).min_delta_bits();
        if bits > max_body_bits(self.cfg.mtu) {
            return Err(DriverError::RecordTooLarge { class: "fast array item".into(), bits });
        }
        let checksum = crate::fastarray::layout_checksum(&layout);
        self.fast.kinds.push((layout, checksum));
        Ok(FastArrayKind(self.fast.kinds.len() as u32 - 1))
    }

    /// The checksums of the registered fast array kinds, in order (for a client's check).
    pub fn fast_array_checksums(&self) -> Vec<u64> {
        self.fast.kinds.iter().map(|k| k.1).collect()
    }

    /// Adds a fast array of `kind` to the actor `owner` (a live actor with a NetGUID — see
    /// [`Self::assign_guid`] — not a sub-object), sent to the connections its owner reaches that
    /// `condition` allows (evaluated with the owner's ownership, as a sub-object's). Returns its
    /// NetGUID; change its items with [`Self::fast_array_mut`]. Clients create it once they have
    /// the owner, and destroy it with the owner.
    pub fn add_fast_array(
        &mut self,
        kind: FastArrayKind,
        owner: NetGuid,
        condition: SubObjectCondition,
    ) -> Result<NetGuid, DriverError> {
        let (layout, _) = self.fast.kinds.get(kind.0 as usize).ok_or(DriverError::UnknownFastArrayKind(kind))?;
        let layout = layout.clone();
        let &(oc, os) = self.guids.get(&owner).ok_or(DriverError::UnknownOwner(owner))?;
        if self.subs.outer.contains_key(&owner) {
            return Err(DriverError::SubObjectChain(owner));
        }
        self.classes[oc as usize].actors[os as usize].fast = true;
        let guid = self.next_guid;
        self.next_guid = guid.next_dynamic();
        let fa = FastArrayNet { array: FastArray::new(layout), kind: kind.0, owner, condition, conns: Vec::new() };
        self.fast.arrays.insert(guid, FaEntry { version: 0, m: Mutex::new(fa) });
        self.fast.by_owner.entry(owner).or_default().push(guid);
        Ok(guid)
    }

    /// Fast array `guid`'s items, to read.
    pub fn fast_array(&self, guid: NetGuid) -> Result<FastArrayView<'_>, DriverError> {
        let m = self.fast.arrays.get(&guid).ok_or(DriverError::UnknownFastArray(guid))?;
        Ok(FastArrayView(lock(m)))
    }

    /// Fast array `guid`'s items, to read and change. Every call counts as a change (each
    /// connection looks at the array again at its owner's next write): to only read, use
    /// [`Self::fast_array`].
    pub fn fast_array_mut(&mut self, guid: NetGuid) -> Result<FastArrayItems<'_>, DriverError> {
        let m = self.fast.arrays.get_mut(&guid).ok_or(DriverError::UnknownFastArray(guid))?;
        // Any change may leave something unsent to every connection.
        m.version += 1;
        Ok(FastArrayItems(&mut m.m.get_mut().unwrap_or_else(PoisonError::into_inner).array))
    }

    /// The fast arrays of actor `owner`, in the order they were added.
    pub fn fast_arrays_of(&self, owner: NetGuid) -> &[NetGuid] {
        self.fast.by_owner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// Removes fast array `guid` from its owner: clients that have it get a close (and destroy it).
    pub fn remove_fast_array(&mut self, guid: NetGuid) -> Result<(), DriverError> {
        let m = self.fast.arrays.remove(&guid).ok_or(DriverError::UnknownFastArray(guid))?;
        let fa = m.m.into_inner().unwrap_or_else(PoisonError::into_inner);
        for conn in &mut self.conns {
            conn.quiet.forget(guid);
        }
        if let Some(list) = self.fast.by_owner.get_mut(&fa.owner) {
            list.retain(|&g| g != guid);
            if list.is_empty() {
                self.fast.by_owner.remove(&fa.owner);
                if let Some(&(oc, os)) = self.guids.get(&fa.owner) {
                    self.classes[oc as usize].actors[os as usize].fast = false;
                }
            }
        }
        // The driver's connections' states sit at even slots (the reference's at odd ones).
        for (ci, fc) in fa.conns.iter().step_by(2).enumerate() {
            if fc.flags & (OPEN_SENT | OPEN_ACKED) != 0 || fc.in_flight > 0 {
                if let Some(conn) = self.conns.get_mut(ci).filter(|c| !c.removed) {
                    conn.closes.push(PendingClose::destroyed(guid));
                }
            }
        }
        Ok(())
    }
}
