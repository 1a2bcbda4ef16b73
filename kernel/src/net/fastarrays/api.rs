//! Fast arrays in the driver's API: registering kinds, adding and removing arrays, reading and
//! changing their items.

use crate::fastarray::{FastArray, FastArrayError, ReplicationId};
use crate::ids::NetGuid;
use crate::net::connection::PendingClose;
use crate::net::lifecycle::SubObjectCondition;
use crate::net::{DriverError, NetDriver};
use crate::schema::ArrayLayout;
use crate::wire::packet::max_body_bits;
use std::sync::{Arc, PoisonError};

use super::{FastArrayKind, FastArrayNet, MAY_HOLD, OPEN_ACKED, OPEN_SENT, STALE};

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

    /// UE's `MarkArrayDirty`: sends nothing for unchanged items, as UE's does (see
    /// [`crate::fastarray::FastArray::mark_array_dirty`]).
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

    /// Change log entries held ([`FastArray::log_len`]): live items and the removals some
    /// connection's base has not acknowledged.
    pub fn log_len(&self) -> usize {
        self.0.array.log_len()
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

    /// The registered fast array item layouts, in kind order: what a client in the same process
    /// registers ([`crate::client::ClientWorld::with_fast_array_kinds`]).
    pub fn fast_array_kinds(&self) -> Vec<Arc<ArrayLayout>> {
        self.fast.kinds.iter().map(|k| k.0.clone()).collect()
    }

    /// Adds a fast array of `kind` to the actor `owner` (a live actor with a NetGUID — see
    /// [`Self::assign_guid`] — not a sub-object, not torn off), sent to the connections its owner reaches that
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
        if condition.initial() {
            return Err(DriverError::InitialOnlyFastArray);
        }
        let layout = layout.clone();
        let &(oc, os) = self.guids.get(&owner).ok_or(DriverError::UnknownOwner(owner))?;
        if self.subs.outer.contains_key(&owner) {
            return Err(DriverError::SubObjectChain(owner));
        }
        if self.classes[oc as usize].actors[os as usize].torn() {
            return Err(DriverError::TornOffOwner(owner));
        }
        self.classes[oc as usize].actors[os as usize].fast = true;
        let guid = self.next_guid;
        self.next_guid = guid.next_dynamic();
        let fa = FastArrayNet { array: FastArray::new(layout), kind: kind.0, owner, conns: Vec::new() };
        self.fast.insert(guid, fa, condition);
        self.fast.by_owner.entry(owner).or_default().push(guid);
        Ok(guid)
    }

    /// Fast array `guid`'s items, to read. A view holds the array's lock: a second view of the
    /// same array while one is alive is refused ([`DriverError::FastArrayInView`]) — taking
    /// the lock again on the same thread would wait for good. The driver's other reads of the
    /// array ([`Self::fast_array_condition`], [`Self::fast_arrays_of`]) take no lock.
    ///
    /// ```
    /// use shadowrep::fastarray::item_layout;
    /// use shadowrep::net::{DriverConfig, DriverError, NetDriver, SubObjectCondition};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let pawn = Arc::new(ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(pawn);
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let kind = driver.register_fast_array_kind(Arc::new(item_layout("Item", PropType::U32).unwrap())).unwrap();
    /// let hero = store.spawn();
    /// let owner = driver.assign_guid(class, &store, hero).unwrap();
    /// let bag = driver.add_fast_array(kind, owner, SubObjectCondition::OwnerOnly).unwrap();
    /// let view = driver.fast_array(bag).unwrap();
    /// assert!(view.is_empty());
    /// assert_eq!(driver.fast_array_condition(bag), Ok(SubObjectCondition::OwnerOnly));
    /// assert!(matches!(driver.fast_array(bag), Err(DriverError::FastArrayInView(g)) if g == bag));
    /// drop(view);
    /// assert!(driver.fast_array(bag).is_ok());
    /// ```
    pub fn fast_array(&self, guid: NetGuid) -> Result<FastArrayView<'_>, DriverError> {
        let m = self.fast.arrays.get(&guid).ok_or(DriverError::UnknownFastArray(guid))?;
        match m.m.try_lock() {
            Ok(fa) => Ok(FastArrayView(fa)),
            Err(std::sync::TryLockError::Poisoned(p)) => Ok(FastArrayView(p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => Err(DriverError::FastArrayInView(guid)),
        }
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

    /// Changes fast array `guid`'s condition to `condition` — UE's dynamic condition on a fast
    /// array property (`SetDynamicCondition`; GAS's `ActiveGameplayEffects`, sent to the owner
    /// only in its Mixed replication mode, to everyone in Full). It takes effect at the owner's
    /// next write to each connection, as every other condition input does: a connection it now
    /// allows gets the array opened with every item; one it now leaves out gets a close (the
    /// client destroys its copy, as when ownership leaves an owner-only array out). Initial-only
    /// conditions are refused ([`DriverError::InitialOnlyFastArray`]), as in
    /// [`Self::add_fast_array`]; the same condition again changes nothing.
    ///
    /// ```
    /// use shadowrep::fastarray::item_layout;
    /// use shadowrep::net::{DriverConfig, NetDriver, SubObjectCondition};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let character = Arc::new(ClassBuilder::new("Character").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(character);
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let effects = driver.register_fast_array_kind(Arc::new(item_layout("Effect", PropType::U32).unwrap())).unwrap();
    /// let hero = store.spawn();
    /// let owner = driver.assign_guid(class, &store, hero).unwrap();
    /// // Mixed mode: the owner alone sees the effects; Full mode: every connection does.
    /// let active = driver.add_fast_array(effects, owner, SubObjectCondition::OwnerOnly).unwrap();
    /// driver.set_fast_array_condition(active, SubObjectCondition::None).unwrap();
    /// assert!(driver.set_fast_array_condition(active, SubObjectCondition::InitialOnly).is_err());
    /// ```
    pub fn set_fast_array_condition(
        &mut self,
        guid: NetGuid,
        condition: SubObjectCondition,
    ) -> Result<(), DriverError> {
        if condition.initial() {
            return Err(DriverError::InitialOnlyFastArray);
        }
        let e = self.fast.arrays.get_mut(&guid).ok_or(DriverError::UnknownFastArray(guid))?;
        if e.condition == condition {
            return Ok(());
        }
        e.condition = condition;
        let slot = e.slot;
        // Every connection's record of this array rested on the old condition (a connection it
        // left out skips the array without looking at it): looked at again, locked.
        for conn in &mut self.conns {
            conn.quiet.forget_at(slot, guid);
        }
        Ok(())
    }

    /// The condition fast array `guid` replicates under.
    pub fn fast_array_condition(&self, guid: NetGuid) -> Result<SubObjectCondition, DriverError> {
        Ok(self.fast.arrays.get(&guid).ok_or(DriverError::UnknownFastArray(guid))?.condition)
    }

    /// The fast arrays of actor `owner`, in the order they were added.
    pub fn fast_arrays_of(&self, owner: NetGuid) -> &[NetGuid] {
        self.fast.by_owner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// Removes fast array `guid` from its owner: clients that have it get a close (and destroy it).
    pub fn remove_fast_array(&mut self, guid: NetGuid) -> Result<(), DriverError> {
        let fa = self.fast.remove(guid).ok_or(DriverError::UnknownFastArray(guid))?;
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
        // The client may hold it: opened here, in flight, or a copy from an earlier channel of
        // the owner whose close was lost (`STALE`) or may yet be (`MAY_HOLD`).
        let may_hold =
            |fc: &&super::FaConn| fc.flags & (OPEN_SENT | OPEN_ACKED | STALE | MAY_HOLD) != 0 || fc.in_flight > 0;
        // The driver's connections' states sit at even slots (the reference's at odd ones).
        for (ci, _) in fa.conns.iter().step_by(2).enumerate().filter(|(_, fc)| may_hold(fc)) {
            if let Some(conn) = self.conns.get_mut(ci).filter(|c| !c.removed) {
                conn.closes.push(PendingClose::destroyed(guid));
            }
        }
        // The reference's states go with the array too: what they say is logged for it, by
        // connection slot — a slot's reference state is the connection the reference last saw
        // there (one that joined since, in a removed one's slot, is met at its next frame).
        if let Some(level) = self.level.as_mut() {
            let holders = fa.conns.iter().skip(1).step_by(2).enumerate().filter(|(_, fc)| may_hold(fc));
            level.fast_removed.push((guid, holders.map(|(ci, _)| ci as u32).collect()));
        }
        Ok(())
    }
}
