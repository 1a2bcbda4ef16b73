//! The client side: a fast array copy that applies validated deltas and fires UE's callbacks.
//!
//! ```text
//! receive(bytes):
//!   read: decode and validate the whole delta (caps, ids, truncation) — nothing changes on error
//!   apply:
//!     array key older than the newest applied    Late: nothing changes (the caller reports the
//!                                                delta lost, as the connection layer does)
//!     items after it > MAX_FAST_ARRAY_ITEMS      TooManyItems: nothing changes
//!     pre_replicated_remove(id, item) for each deleted id held, then remove them (swap)
//!     write every changed item (an id not held is appended: an add)
//!     post_replicated_add for the adds, then post_replicated_change for the others
//! ```
//!
//! A deleted id the client does not hold is ignored (it was added and removed before the client
//! saw it); a changed id it does not hold is an add. So a delta delivered twice changes nothing
//! but fires its changes again, as UE does.

use super::wire::{read_delta, Delta};
use super::{ArrayKey, FastArrayError, ReplicationId, MAX_FAST_ARRAY_ITEMS};
use crate::schema::ArrayLayout;
use crate::wire::BitReader;
use std::collections::HashMap;
use std::sync::Arc;

/// What a client hears as a delta is applied (UE's `FFastArraySerializerItem` callbacks). Every
/// method has an empty default.
pub trait FastArrayCallbacks {
    /// Before an item is removed; it is still readable (UE's `PreReplicatedRemove`).
    fn pre_replicated_remove(&mut self, id: ReplicationId, item: &[u8]) {
        let _ = (id, item);
    }
    /// After an item was added (UE's `PostReplicatedAdd`).
    fn post_replicated_add(&mut self, id: ReplicationId, item: &[u8]) {
        let _ = (id, item);
    }
    /// After an item changed (UE's `PostReplicatedChange`).
    fn post_replicated_change(&mut self, id: ReplicationId, item: &[u8]) {
        let _ = (id, item);
    }
    /// After a whole delta applied, its item callbacks done; `old_len`: the items before it
    /// (UE's `PostReplicatedReceive`). Not recorded by `Vec<FastArrayEvent>` (a
    /// [`crate::client::ClientWorld`] reports it when asked: `with_receive_events`).
    fn post_replicated_receive(&mut self, old_len: usize) {
        let _ = old_len;
    }
}

/// A callback, as recorded by `Vec<FastArrayEvent>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FastArrayEvent {
    /// [`FastArrayCallbacks::pre_replicated_remove`], with the item's bytes as it was: the only
    /// moment they can be read (UE's `PreReplicatedRemove` sees the item; cleanup code — the
    /// ability an item granted — needs what it held). An added or changed item is read from the
    /// array.
    Removed(ReplicationId, Vec<u8>),
    /// [`FastArrayCallbacks::post_replicated_add`].
    Added(ReplicationId),
    /// [`FastArrayCallbacks::post_replicated_change`].
    Changed(ReplicationId),
    /// [`FastArrayCallbacks::post_replicated_receive`]: a delta's callbacks are done; the
    /// array held `old_len` items before it. Reported by a client only when asked
    /// ([`crate::client::ClientWorld::with_receive_events`]).
    Received {
        /// Items before the delta.
        old_len: usize,
    },
}

impl FastArrayCallbacks for Vec<FastArrayEvent> {
    fn pre_replicated_remove(&mut self, id: ReplicationId, item: &[u8]) {
        self.push(FastArrayEvent::Removed(id, item.to_vec()));
    }
    fn post_replicated_add(&mut self, id: ReplicationId, _: &[u8]) {
        self.push(FastArrayEvent::Added(id));
    }
    fn post_replicated_change(&mut self, id: ReplicationId, _: &[u8]) {
        self.push(FastArrayEvent::Changed(id));
    }
}

/// No callbacks.
impl FastArrayCallbacks for () {}

/// A client's copy of a fast array.
#[derive(Clone, Debug)]
pub struct FastArrayReceiver {
    layout: Arc<ArrayLayout>,
    rows: Vec<u8>,
    ids: Vec<ReplicationId>,
    index: HashMap<ReplicationId, u32>,
    /// The newest array key applied.
    newest: ArrayKey,
    /// Reused per delta: which changed entries were adds.
    added: Vec<bool>,
}

impl FastArrayReceiver {
    /// An empty copy of an array laid out as `layout`.
    pub fn new(layout: Arc<ArrayLayout>) -> Self {
        Self {
            layout,
            rows: Vec::new(),
            ids: Vec::new(),
            index: HashMap::new(),
            newest: ArrayKey(0),
            added: Vec::new(),
        }
    }

    /// The item layout.
    pub fn layout(&self) -> &ArrayLayout {
        &self.layout
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The newest array key applied.
    pub fn newest_key(&self) -> ArrayKey {
        self.newest
    }

    /// The item with this id, as bytes.
    pub fn item(&self, id: ReplicationId) -> Option<&[u8]> {
        let row = *self.index.get(&id)? as usize;
        Some(&self.rows[row * self.layout.stride..(row + 1) * self.layout.stride])
    }

    /// The item with this id, to write (the client maps the object references in it).
    pub(crate) fn item_mut(&mut self, id: ReplicationId) -> Option<&mut [u8]> {
        let row = *self.index.get(&id)? as usize;
        Some(&mut self.rows[row * self.layout.stride..(row + 1) * self.layout.stride])
    }

    /// Items as (id, bytes), in storage order.
    pub fn iter(&self) -> impl Iterator<Item = (ReplicationId, &[u8])> {
        self.ids.iter().copied().zip(self.rows.chunks_exact(self.layout.stride))
    }

    /// Decodes and validates one delta from `r` (nothing is applied).
    pub fn read(&self, r: &mut BitReader<'_>) -> Result<Delta, FastArrayError> {
        read_delta(r, &self.layout, self.newest)
    }

    /// Decodes one delta from `bytes` and applies it.
    pub fn receive(&mut self, bytes: &[u8], callbacks: &mut impl FastArrayCallbacks) -> Result<(), FastArrayError> {
        let delta = self.read(&mut BitReader::new(bytes))?;
        self.apply(&delta, callbacks)
    }

    /// Applies a validated delta: removes, then adds, then changes, each with its callback. On an
    /// error nothing changes and no callback fires.
    pub fn apply(&mut self, delta: &Delta, callbacks: &mut impl FastArrayCallbacks) -> Result<(), FastArrayError> {
        let stride = self.layout.stride;
        if delta.items.len() != delta.changed.len() * stride {
            return Err(FastArrayError::ItemSize { expected: delta.changed.len() * stride, got: delta.items.len() });
        }
        if delta.array_key < self.newest {
            return Err(FastArrayError::Late { key: delta.array_key, newest: self.newest });
        }
        let old_len = self.ids.len();
        let removes = delta.deleted.iter().filter(|id| self.index.contains_key(id)).count();
        let adds = delta.changed.iter().filter(|id| !self.index.contains_key(id)).count();
        if self.ids.len() - removes + adds > MAX_FAST_ARRAY_ITEMS {
            return Err(FastArrayError::TooManyItems);
        }
        for &id in &delta.deleted {
            if let Some(&row) = self.index.get(&id) {
                let row = row as usize;
                callbacks.pre_replicated_remove(id, &self.rows[row * stride..(row + 1) * stride]);
            }
        }
        for &id in &delta.deleted {
            self.remove(id);
        }
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        for (id, item) in delta.changed_items() {
            match self.index.get(&id) {
                Some(&row) => {
                    let row = row as usize;
                    self.rows[row * stride..(row + 1) * stride].copy_from_slice(item);
                    added.push(false);
                }
                None => {
                    self.index.insert(id, self.ids.len() as u32);
                    self.ids.push(id);
                    self.rows.extend_from_slice(item);
                    added.push(true);
                }
            }
        }
        for want_add in [true, false] {
            for (&id, _) in delta.changed.iter().zip(&added).filter(|(_, &a)| a == want_add) {
                let row = self.index[&id] as usize;
                let item = &self.rows[row * stride..(row + 1) * stride];
                if want_add {
                    callbacks.post_replicated_add(id, item);
                } else {
                    callbacks.post_replicated_change(id, item);
                }
            }
        }
        self.added = added;
        self.newest = self.newest.max(delta.array_key);
        callbacks.post_replicated_receive(old_len);
        Ok(())
    }

    /// Removes `id` if held (RemoveAtSwap).
    fn remove(&mut self, id: ReplicationId) {
        let Some(row) = self.index.remove(&id) else { return };
        let (row, stride, last) = (row as usize, self.layout.stride, self.ids.len() - 1);
        if row != last {
            self.rows.copy_within(last * stride..(last + 1) * stride, row * stride);
            self.index.insert(self.ids[last], row as u32);
        }
        self.rows.truncate(last * stride);
        self.ids.swap_remove(row);
    }
}
