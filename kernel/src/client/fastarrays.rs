//! A client's fast arrays ([`crate::fastarray`] replicated by [`crate::net::NetDriver`]).
//!
//! ```text
//! open (kind, owner)   the owner must be here (else stepped over, asked for again); a fresh
//!                      copy replaces any earlier one — the server's new base starts from nothing —
//!                      and the earlier copy's items are reported removed
//! delta                applied in UE's order (removes, adds, changes); one that cannot apply
//!                      (late, malformed ids) is stepped over and counted
//! close / owner gone   the copy goes
//! ```

use super::{ClientError, ClientWorld};
use crate::fastarray::{layout_checksum, ArrayKey, FastArrayEvent, FastArrayReceiver};
use crate::ids::NetGuid;
use crate::schema::ArrayLayout;
use crate::wire::bunch::{Bunch, Resolve};
use crate::wire::open::{OpenHeader, OpenKind};
use crate::wire::WireError;
use std::collections::HashMap;
use std::sync::Arc;

/// One fast array on the client.
struct ClientFast {
    owner: NetGuid,
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
            Some(OpenHeader { class, kind: OpenKind::FastArray { .. } }) => {
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

    /// Drops `owner`'s fast arrays (it is destroyed or forgotten).
    pub fn remove_owned(&mut self, owner: NetGuid) {
        for g in self.by_owner.remove(&owner).unwrap_or_default() {
            self.arrays.remove(&g);
        }
    }
}

impl ClientWorld {
    /// Registers the fast array item layouts, in the server's order, refusing any whose checksum
    /// is not the server's ([`crate::net::NetDriver::fast_array_checksums`]).
    pub fn with_fast_array_kinds(
        mut self,
        layouts: &[Arc<ArrayLayout>],
        server_checksums: &[u64],
    ) -> Result<Self, ClientError> {
        if layouts.len() != server_checksums.len() {
            return Err(ClientError::FastArrayKindCount { server: server_checksums.len(), client: layouts.len() });
        }
        for (kind, (l, &server)) in layouts.iter().zip(server_checksums).enumerate() {
            let client = layout_checksum(l);
            if client != server {
                return Err(ClientError::FastArrayChecksumMismatch { kind, server, client });
            }
        }
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
        if let Some(OpenHeader { class, kind: OpenKind::FastArray { owner } }) = b.open {
            if let Some(old) = self.fast.arrays.get(&guid) {
                let events = &mut self.fast.events;
                events.extend(old.copy.iter().map(|(id, item)| (guid, FastArrayEvent::Removed(id, item.to_vec()))));
                self.fast.remove(guid);
            }
            let copy = FastArrayReceiver::new(self.fast.kinds[class as usize].clone());
            self.fast.arrays.insert(guid, ClientFast { owner, copy });
            self.fast.by_owner.entry(owner).or_default().push(guid);
        }
        let (Some(f), Some(delta)) = (self.fast.arrays.get_mut(&guid), b.delta) else { return };
        let mut events = Vec::new();
        match f.copy.apply(&delta, &mut events) {
            Ok(()) => self.fast.events.extend(events.into_iter().map(|e| (guid, e))),
            Err(_) => self.stats.fast_array_refused += 1,
        }
    }
}
