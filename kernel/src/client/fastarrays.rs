//! A client's fast arrays ([`crate::fastarray`] replicated by [`crate::net::NetDriver`]).
//!
//! ```text
//! open (kind, owner)   the owner must be here (else stepped over, asked for again); a fresh
//!                      copy replaces any earlier one — the server's new base starts from nothing —
//!                      and the earlier copy's items are reported removed
//! delta                applied in UE's order (removes, adds, changes); one that cannot apply
//!                      (late, malformed ids) is stepped over and counted
//! close / owner gone   the copy goes
//! object references    mapped as an actor's: to an object the client lacks, null until it
//!                      arrives (then the item's change callback fires); to an actor that goes,
//!                      null again until it returns
//! ```

use super::error::{compare_checksums, ChecksumsDiffer};
use super::unmapped::Slot;
use super::{ClientError, ClientWorld};
use crate::fastarray::{layout_checksum, ArrayKey, Delta, FastArrayEvent, FastArrayReceiver, ReplicationId};
use crate::ids::NetGuid;
use crate::schema::{ArrayLayout, LeafKind};
use crate::wire::bunch::{Bunch, Resolve};
use crate::wire::open::{OpenHeader, OpenKind};
use crate::wire::WireError;
use std::collections::HashMap;
use std::sync::Arc;

/// One fast array on the client.
struct ClientFast {
    owner: NetGuid,
    /// Its kind (index into `kinds`).
    kind: u32,
    copy: FastArrayReceiver,
}

/// A client's fast arrays and their kinds.
#[derive(Default)]
pub(super) struct ClientFastArrays {
    kinds: Vec<Arc<ArrayLayout>>,
    arrays: HashMap<NetGuid, ClientFast>,
    /// Owner → its fast arrays.
    by_owner: HashMap<NetGuid, Vec<NetGuid>>,
    events: Vec<(NetGuid, FastArrayEvent)>,
}

impl ClientFastArrays {
    /// How a bunch of `guid` decodes if it is a fast array's: `None` when it is an actor's.
    /// `opened` holds the fast arrays opened earlier in the packet (their kind); `actor`: the
    /// GUID names an actor the client has or the packet opened.
    pub fn resolve(
        &self,
        guid: NetGuid,
        open: Option<&OpenHeader>,
        actor: bool,
        opened: &mut HashMap<NetGuid, u32>,
    ) -> Result<Option<Resolve<'_>>, WireError> {
        let fast = opened.contains_key(&guid) || self.arrays.contains_key(&guid);
        match open {
            Some(OpenHeader { class, kind: OpenKind::FastArray { .. }, .. }) => {
                if actor {
                    return Err(WireError::Invalid("a fast array opened under an actor's GUID"));
                }
                let layout = self.kinds.get(*class as usize).ok_or(WireError::Invalid("fast array kind"))?;
                opened.insert(guid, *class);
                // A fresh copy: its first delta's key is read against nothing applied.
                Ok(Some(Resolve::Delta(layout, ArrayKey(0))))
            }
            Some(_) if fast => Err(WireError::Invalid("an actor opened under a fast array's GUID")),
            Some(_) => Ok(None),
            None => match (opened.get(&guid), self.arrays.get(&guid)) {
                (Some(&kind), _) => Ok(Some(Resolve::Delta(&self.kinds[kind as usize], ArrayKey(0)))),
                (None, Some(f)) => Ok(Some(Resolve::Delta(f.copy.layout(), f.copy.newest_key()))),
                (None, None) => Ok(None),
            },
        }
    }

    /// Fast array `guid`'s kind, if the client has it.
    pub fn kind_of(&self, guid: NetGuid) -> Option<u32> {
        self.arrays.get(&guid).map(|f| f.kind)
    }

    /// Drops fast array `guid`; true if it was here.
    pub fn remove(&mut self, guid: NetGuid) -> bool {
        let Some(f) = self.arrays.remove(&guid) else { return false };
        if let Some(list) = self.by_owner.get_mut(&f.owner) {
            list.retain(|&g| g != guid);
            if list.is_empty() {
                self.by_owner.remove(&f.owner);
            }
        }
        true
    }

    /// Drops `owner`'s fast arrays (it is destroyed or forgotten); returns them.
    pub fn remove_owned(&mut self, owner: NetGuid) -> Vec<NetGuid> {
        let arrays = self.by_owner.remove(&owner).unwrap_or_default();
        for g in &arrays {
            self.arrays.remove(g);
        }
        arrays
    }
}

impl ClientWorld {
    /// Registers the fast array item layouts, in the server's order
    /// ([`crate::net::NetDriver::fast_array_kinds`] lists them so), refusing any whose checksum
    /// is not the server's ([`crate::net::NetDriver::fast_array_checksums`]) —
    /// [`ClientError::FastArrayKindOrder`] where it is the server's at another index.
    pub fn with_fast_array_kinds(
        mut self,
        layouts: &[Arc<ArrayLayout>],
        server_checksums: &[u64],
    ) -> Result<Self, ClientError> {
        let checksums = layouts.iter().map(|l| layout_checksum(l));
        compare_checksums(checksums, server_checksums).map_err(|d| match d {
            ChecksumsDiffer::Count => {
                ClientError::FastArrayKindCount { server: server_checksums.len(), client: layouts.len() }
            }
            ChecksumsDiffer::Order { index, server_index } => {
                ClientError::FastArrayKindOrder { kind: index, server_kind: server_index }
            }
            ChecksumsDiffer::Mismatch { index, server, client } => {
                ClientError::FastArrayChecksumMismatch { kind: index, server, client }
            }
        })?;
        self.fast.kinds = layouts.to_vec();
        Ok(self)
    }

    /// Fast array `guid`'s copy.
    pub fn fast_array(&self, guid: NetGuid) -> Option<&FastArrayReceiver> {
        self.fast.arrays.get(&guid).map(|f| &f.copy)
    }

    /// The fast arrays of actor `owner` the client has, in the order they opened.
    pub fn fast_arrays_of(&self, owner: NetGuid) -> &[NetGuid] {
        self.fast.by_owner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// The owner of fast array `guid`.
    pub fn fast_array_owner(&self, guid: NetGuid) -> Option<NetGuid> {
        self.fast.arrays.get(&guid).map(|f| f.owner)
    }

    /// Item callbacks since the last call, in the order they fired: per delta removes, then
    /// adds, then changes (UE's order); a fast array opened again reports its old items removed.
    pub fn take_fast_array_events(&mut self) -> Vec<(NetGuid, FastArrayEvent)> {
        std::mem::take(&mut self.fast.events)
    }

    /// Applies a fast array's bunch (checked: an open names an owner the client has).
    pub(super) fn apply_fast(&mut self, b: Bunch) {
        let guid = b.guid;
        if let Some(OpenHeader { class, kind: OpenKind::FastArray { owner }, .. }) = b.open {
            if let Some(old) = self.fast.arrays.get(&guid) {
                let events = &mut self.fast.events;
                events.extend(old.copy.iter().map(|(id, item)| (guid, FastArrayEvent::Removed(id, item.to_vec()))));
                self.fast.remove(guid);
                self.forget_references(guid);
            }
            let copy = FastArrayReceiver::new(self.fast.kinds[class as usize].clone());
            self.fast.arrays.insert(guid, ClientFast { owner, kind: class, copy });
            self.fast.by_owner.entry(owner).or_default().push(guid);
        }
        let (Some(f), Some(delta)) = (self.fast.arrays.get_mut(&guid), b.delta) else { return };
        let mut events = Vec::new();
        let old_len = f.copy.len();
        match f.copy.apply(&delta, &mut events) {
            Ok(()) => {
                self.fast.events.extend(events.into_iter().map(|e| (guid, e)));
                if self.receive_events {
                    self.fast.events.push((guid, FastArrayEvent::Received { old_len }));
                }
            }
            Err(_) => {
                self.stats.fast_array_refused += 1;
                return;
            }
        }
        self.map_item_references(guid, &delta);
    }

    /// Maps the object references of the items `delta` added or changed in fast array `guid`,
    /// as an actor's: a reference to an object the client lacks reads null and waits for it
    /// (its arrival writes it and fires the item's change callback, UE's
    /// `PostReplicatedChange` of an item whose references were mapped); one to an actor the
    /// client has is remembered by its target, for when that actor goes. A removed item's
    /// references are forgotten.
    fn map_item_references(&mut self, guid: NetGuid, delta: &Delta) {
        let Some(f) = self.fast.arrays.get(&guid) else { return };
        let layout = f.copy.layout();
        let refs: Vec<(usize, usize)> = (layout.elements.iter().enumerate())
            .filter(|(_, e)| e.kind == LeafKind::Object)
            .map(|(k, e)| (k, e.offset))
            .collect();
        if refs.is_empty() {
            return;
        }
        for &id in delta.deleted.iter().chain(&delta.changed) {
            self.unmapped.remove_leaf(guid, id.0 as usize);
            self.mapped.remove_leaf(guid, id.0 as usize);
        }
        for &id in &delta.changed {
            for &(k, offset) in &refs {
                let Some(item) = self.fast.arrays.get(&guid).and_then(|f| f.copy.item(id)) else { break };
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(&item[offset..offset + 8]);
                self.map_reference(guid, id.0 as usize, Some((0, k)), &mut bytes);
                if let Some(item) = self.fast.arrays.get_mut(&guid).and_then(|f| f.copy.item_mut(id)) {
                    item[offset..offset + 8].copy_from_slice(&bytes);
                }
            }
        }
    }

    /// Writes reference `target` into a fast array item's slot (nothing if the item is gone).
    pub(super) fn write_item_reference(&mut self, slot: Slot, target: NetGuid) {
        let Some(f) = self.fast.arrays.get_mut(&slot.owner) else { return };
        let Some((_, k)) = slot.element else { return };
        let Some(offset) = f.copy.layout().elements.get(k).map(|e| e.offset) else { return };
        if let Some(item) = f.copy.item_mut(ReplicationId(slot.leaf as u32)) {
            item[offset..offset + 8].copy_from_slice(&target.0.to_le_bytes());
        }
    }

    /// The references of item `item` of fast array `array` waiting for an object were written:
    /// its change callback fires.
    pub(super) fn item_references_resolved(&mut self, array: NetGuid, item: usize) {
        let id = ReplicationId(item as u32);
        if self.fast.arrays.get(&array).is_some_and(|f| f.copy.item(id).is_some()) {
            self.fast.events.push((array, FastArrayEvent::Changed(id)));
        }
    }
}
