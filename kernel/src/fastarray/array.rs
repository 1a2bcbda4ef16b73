//! The server's fast array: item rows, the change log, and writing a connection's delta.
//!
//! Items are rows of `stride` bytes in one buffer, with parallel `ids` and `keys` columns and an
//! id → row map; removal swaps the last row into the hole (UE's RemoveAtSwap). Every mark and
//! removal appends to the change log in key order; a connection's delta is the log after its
//! cursor (see the [module docs](super) for the algorithm and the bounds).

use super::base::{ConnectionBase, KeyRange};
use super::wire::{self, DeltaHeader, SHORT_KEY_WINDOW};
use super::{
    ArrayKey, BaseId, DeltaToken, FastArrayError, ReplicationId, MAX_CHANGED_PER_DELTA, MAX_DELETED_PER_DELTA,
    MAX_FAST_ARRAY_ITEMS, MAX_PINNED_REMOVALS, MAX_REPLICATION_ID, MIN_LOG_COMPACT,
};
use crate::schema::ArrayLayout;
use crate::wire::BitWriter;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What a log entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LogOp {
    /// The item was added or marked dirty.
    Change,
    /// The item was removed.
    Remove,
}

/// One change log entry: at array key `key`, item `id` changed or was removed.
#[derive(Clone, Copy, Debug)]
struct LogEntry {
    key: ArrayKey,
    id: ReplicationId,
    op: LogOp,
}

/// The server side of a fast array (UE's `FFastArraySerializer` with its items).
#[derive(Clone, Debug)]
pub struct FastArray {
    layout: Arc<ArrayLayout>,
    /// Item bytes, `stride` per row.
    rows: Vec<u8>,
    /// Row → replication id.
    ids: Vec<ReplicationId>,
    /// Row → item key (the array key of its last mark).
    keys: Vec<ArrayKey>,
    /// Replication id → row.
    index: HashMap<ReplicationId, u32>,
    /// The last replication id assigned (UE's `IDCounter`).
    last_id: u32,
    array_key: ArrayKey,
    /// Marks and removals in key order.
    log: VecDeque<LogEntry>,
    /// The log's length after its last compaction.
    compacted_len: usize,
    /// Connection bases by slot.
    bases: Vec<Option<ConnectionBase>>,
    /// Reused per delta: (id, row) of the changed items, and the deleted ids.
    scratch_changed: Vec<(ReplicationId, u32)>,
    scratch_deleted: Vec<ReplicationId>,
}

impl FastArray {
    /// An empty array of items laid out as `layout` (see [`super::item_layout`]).
    pub fn new(layout: Arc<ArrayLayout>) -> Self {
        Self {
            layout,
            rows: Vec::new(),
            ids: Vec::new(),
            keys: Vec::new(),
            index: HashMap::new(),
            last_id: 0,
            array_key: ArrayKey(0),
            log: VecDeque::new(),
            compacted_len: 0,
            bases: Vec::new(),
            scratch_changed: Vec::new(),
            scratch_deleted: Vec::new(),
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

    /// The array key: marks and removals so far.
    pub fn array_key(&self) -> ArrayKey {
        self.array_key
    }

    /// Change log entries held (see the bound in the [module docs](super)).
    pub fn log_len(&self) -> usize {
        self.log.len()
    }

    /// The item with this id, as bytes.
    pub fn item(&self, id: ReplicationId) -> Option<&[u8]> {
        let row = *self.index.get(&id)? as usize;
        Some(&self.rows[row * self.layout.stride..(row + 1) * self.layout.stride])
    }

    /// The item key of `id`: the array key of its last mark.
    pub fn item_key(&self, id: ReplicationId) -> Option<ArrayKey> {
        self.index.get(&id).map(|&row| self.keys[row as usize])
    }

    /// The bytes of the items marked after array key `key` (those a connection acknowledged
    /// through `key` may not have), in storage order.
    pub(crate) fn items_after(&self, key: ArrayKey) -> impl Iterator<Item = &[u8]> {
        self.keys.iter().zip(self.rows.chunks_exact(self.layout.stride)).filter(move |(k, _)| **k > key).map(|(_, r)| r)
    }

    /// Items as (id, bytes), in storage order (not insertion order: removal swaps rows).
    pub fn iter(&self) -> impl Iterator<Item = (ReplicationId, &[u8])> {
        self.ids.iter().copied().zip(self.rows.chunks_exact(self.layout.stride))
    }

    fn check_size(&self, item: &[u8]) -> Result<(), FastArrayError> {
        if item.len() != self.layout.stride {
            return Err(FastArrayError::ItemSize { expected: self.layout.stride, got: item.len() });
        }
        Ok(())
    }

    fn row_of(&self, id: ReplicationId) -> Result<usize, FastArrayError> {
        self.index.get(&id).map(|&r| r as usize).ok_or(FastArrayError::UnknownItem(id))
    }

    /// Appends an item and marks it dirty; returns its new replication id.
    pub fn add(&mut self, item: &[u8]) -> Result<ReplicationId, FastArrayError> {
        self.check_size(item)?;
        if self.ids.len() >= MAX_FAST_ARRAY_ITEMS {
            return Err(FastArrayError::TooManyItems);
        }
        if self.last_id == MAX_REPLICATION_ID {
            return Err(FastArrayError::IdsExhausted);
        }
        self.last_id += 1;
        let id = ReplicationId(self.last_id);
        self.index.insert(id, self.ids.len() as u32);
        self.ids.push(id);
        self.keys.push(ArrayKey(0));
        self.rows.extend_from_slice(item);
        self.mark_row(self.ids.len() - 1);
        Ok(id)
    }

    /// Overwrites an item and marks it dirty.
    pub fn set(&mut self, id: ReplicationId, item: &[u8]) -> Result<(), FastArrayError> {
        self.check_size(item)?;
        let row = self.row_of(id)?;
        let stride = self.layout.stride;
        self.rows[row * stride..(row + 1) * stride].copy_from_slice(item);
        self.mark_row(row);
        Ok(())
    }

    /// Marks an item dirty and returns its bytes to change in place.
    pub fn item_mut(&mut self, id: ReplicationId) -> Result<&mut [u8], FastArrayError> {
        let row = self.row_of(id)?;
        self.mark_row(row);
        let stride = self.layout.stride;
        Ok(&mut self.rows[row * stride..(row + 1) * stride])
    }

    /// Marks an item dirty (UE's `MarkItemDirty`): it is sent to every connection again.
    pub fn mark_item_dirty(&mut self, id: ReplicationId) -> Result<(), FastArrayError> {
        let row = self.row_of(id)?;
        self.mark_row(row);
        Ok(())
    }

    /// UE's `MarkArrayDirty`, which UE needs after a removal (its cleared item map is how the
    /// next serialization finds deleted items) and which sends nothing for an item whose
    /// replication key did not change — no bytes and no `PostReplicatedChange` on a client that
    /// has it. Here every edit is marked by [`Self::item_mut`] / [`Self::set`] and every removal
    /// recorded by [`Self::remove`], so there is nothing left to rediscover: it sends nothing
    /// either. (It once marked every item, resending the whole array and firing a change for
    /// each on every client; to resend an item, mark it: [`Self::mark_item_dirty`].)
    pub fn mark_array_dirty(&mut self) {}

    /// Removes an item (RemoveAtSwap: the last row moves into its place).
    pub fn remove(&mut self, id: ReplicationId) -> Result<(), FastArrayError> {
        let row = self.row_of(id)?;
        let stride = self.layout.stride;
        let last = self.ids.len() - 1;
        if row != last {
            self.rows.copy_within(last * stride..(last + 1) * stride, row * stride);
            self.index.insert(self.ids[last], row as u32);
        }
        self.rows.truncate(last * stride);
        self.ids.swap_remove(row);
        self.keys.swap_remove(row);
        self.index.remove(&id);
        self.array_key.0 += 1;
        self.log_append(id, LogOp::Remove);
        Ok(())
    }

    fn mark_row(&mut self, row: usize) {
        self.array_key.0 += 1;
        self.keys[row] = self.array_key;
        self.log_append(self.ids[row], LogOp::Change);
    }

    /// Logs `op` of `id` at the (already bumped) array key; compacts when the log doubled. The
    /// item's key is stamped before, so compaction sees the new entry as live.
    fn log_append(&mut self, id: ReplicationId, op: LogOp) {
        self.log.push_back(LogEntry { key: self.array_key, id, op });
        if self.log.len() >= (2 * self.compacted_len).max(MIN_LOG_COMPACT) {
            self.compact();
        }
    }

    /// Drops stale changes and the removals every connection has acknowledged (or joined after).
    /// Removals kept for the connections behind the others are bounded: past
    /// max([`MAX_PINNED_REMOVALS`], live items) the bases furthest behind expire, and the
    /// removals only they lacked go. (A connection whose packets are all lost while it stays
    /// connected had pinned every later removal, and the log grew without bound.)
    fn compact(&mut self) {
        let (index, keys) = (&self.index, &self.keys);
        self.log.retain(|e| match e.op {
            LogOp::Change => index.get(&e.id).is_some_and(|&row| keys[row as usize] == e.key),
            LogOp::Remove => true,
        });
        let floor_of = |bases: &[Option<ConnectionBase>], key: ArrayKey| {
            bases.iter().flatten().filter(|b| !b.expired()).map(ConnectionBase::floor).min().unwrap_or(key)
        };
        // The log is in key order: the removals after a floor are those past its place.
        let removals_after = |log: &VecDeque<LogEntry>, floor: ArrayKey| {
            log.range(log.partition_point(|e| e.key <= floor)..).filter(|e| e.op == LogOp::Remove).count()
        };
        let bound = MAX_PINNED_REMOVALS.max(self.ids.len());
        let mut floor = floor_of(&self.bases, self.array_key);
        while removals_after(&self.log, floor) > bound {
            for b in self.bases.iter_mut().flatten().filter(|b| !b.expired() && b.floor() == floor) {
                b.expire();
            }
            floor = floor_of(&self.bases, self.array_key);
        }
        self.log.retain(|e| e.op == LogOp::Change || e.key > floor);
        self.compacted_len = self.log.len();
    }

    /// Adds a connection whose client holds nothing yet: its first deltas send every item.
    pub fn connect(&mut self) -> BaseId {
        let base = Some(ConnectionBase::new(self.array_key));
        match self.bases.iter().position(Option::is_none) {
            Some(slot) => {
                self.bases[slot] = base;
                BaseId(slot as u32)
            }
            None => {
                self.bases.push(base);
                BaseId(self.bases.len() as u32 - 1)
            }
        }
    }

    /// Removes a connection's base (its slot is reused by a later [`connect`](Self::connect)).
    pub fn disconnect(&mut self, base: BaseId) -> Result<(), FastArrayError> {
        self.base_mut(base)?;
        self.bases[base.0 as usize] = None;
        Ok(())
    }

    fn base_mut(&mut self, base: BaseId) -> Result<&mut ConnectionBase, FastArrayError> {
        self.bases.get_mut(base.0 as usize).and_then(Option::as_mut).ok_or(FastArrayError::UnknownBase(base))
    }

    fn base(&self, base: BaseId) -> Option<&ConnectionBase> {
        self.bases.get(base.0 as usize).and_then(Option::as_ref)
    }

    /// The connection's acknowledged cursor: its client holds every item with a key at or below.
    pub fn acked_key(&self, base: BaseId) -> Option<ArrayKey> {
        self.base(base).map(ConnectionBase::acked_key)
    }

    /// Whether the connection has everything: acknowledged up to the array key.
    pub fn is_synced(&self, base: BaseId) -> bool {
        self.acked_key(base) == Some(self.array_key)
    }

    /// Whether the connection's base has marks or removals it was not sent yet (false for an
    /// unknown base; true for an expired one).
    pub fn has_unsent(&self, base: BaseId) -> bool {
        self.base(base).is_some_and(|b| b.sent_key() < self.array_key || b.expired())
    }

    /// Whether the connection's base expired: it fell so far behind that the change log dropped
    /// removals it lacked (see the bounds in the [module docs](super)). Disconnect it and start
    /// its client again from nothing.
    pub fn is_expired(&self, base: BaseId) -> bool {
        self.base(base).is_some_and(ConnectionBase::expired)
    }

    /// Deltas in flight to the connection.
    pub fn in_flight(&self, base: BaseId) -> usize {
        self.base(base).map_or(0, ConnectionBase::in_flight)
    }

    /// Writes the connection's next delta to `w`: the items added, changed and removed since its
    /// sent cursor, at most [`MAX_CHANGED_PER_DELTA`] changes and [`MAX_DELETED_PER_DELTA`]
    /// deletes (a larger change goes out over successive calls). Returns the token to store with
    /// the packet, or `None` when there is nothing to send (nothing is written then).
    pub fn write_delta(&mut self, base: BaseId, w: &mut BitWriter) -> Result<Option<DeltaToken>, FastArrayError> {
        self.write_delta_within(base, w, usize::MAX)
    }

    /// The most bits the connection's next delta may take whole — its worst case, as
    /// [`write_delta_within`](Self::write_delta_within) counts it, up to the caps of one delta
    /// (0 when nothing is unsent): a writer that has room for it writes it in one bunch.
    pub fn next_delta_bits(&self, base: BaseId) -> usize {
        let Some(b) = self.base(base) else { return 0 };
        // Where the delta will start: a full in-flight list rolls back to the acknowledged
        // cursor (`make_room`).
        let from = if b.in_flight() >= super::MAX_IN_FLIGHT_DELTAS { b.acked_key() } else { b.sent_key() };
        if from >= self.array_key {
            return 0;
        }
        self.scan(from, b.joined(), usize::MAX, None, None).1
    }

    /// The entries of the change log after `from` that one delta takes within `max_bits` (worst
    /// case), for a connection that joined at `joined`: the changed items (id, row) and removed
    /// ids, into `changed` and `deleted` when given. Returns the key the delta reaches and its
    /// worst-case bits.
    fn scan(
        &self,
        from: ArrayKey,
        joined: ArrayKey,
        max_bits: usize,
        mut changed: Option<&mut Vec<(ReplicationId, u32)>>,
        mut deleted: Option<&mut Vec<ReplicationId>>,
    ) -> (ArrayKey, usize) {
        let item_bits = wire::ID_MAX_BITS + wire::item_max_bits(&self.layout);
        let mut bits = wire::HEADER_MAX_BITS;
        let (mut n_changed, mut n_deleted) = (0, 0);
        let start = self.log.partition_point(|e| e.key <= from);
        for e in self.log.range(start..) {
            match e.op {
                LogOp::Change => {
                    let Some(&row) = self.index.get(&e.id) else { continue };
                    if self.keys[row as usize] != e.key {
                        continue; // re-marked later: its newest entry stands for it
                    }
                    if n_changed == MAX_CHANGED_PER_DELTA || bits + item_bits > max_bits {
                        return (ArrayKey(e.key.0 - 1), bits);
                    }
                    bits += item_bits;
                    n_changed += 1;
                    if let Some(c) = changed.as_deref_mut() {
                        c.push((e.id, row));
                    }
                }
                LogOp::Remove => {
                    if e.key <= joined {
                        continue; // removed before this connection could have had it
                    }
                    if n_deleted == MAX_DELETED_PER_DELTA || bits + wire::ID_MAX_BITS > max_bits {
                        return (ArrayKey(e.key.0 - 1), bits);
                    }
                    bits += wire::ID_MAX_BITS;
                    n_deleted += 1;
                    if let Some(d) = deleted.as_deref_mut() {
                        d.push(e.id);
                    }
                }
            }
        }
        (self.array_key, bits)
    }

    /// The fewest bits [`write_delta_within`](Self::write_delta_within) needs to make progress:
    /// the worst-case header, one id and one item.
    pub fn min_delta_bits(&self) -> usize {
        wire::HEADER_MAX_BITS + wire::ID_MAX_BITS + wire::item_max_bits(&self.layout)
    }

    /// [`write_delta`](Self::write_delta) within `max_bits` (a packet's room): entries are taken
    /// while the delta's worst-case size stays within it, and the rest follows in later deltas.
    /// Below [`min_delta_bits`](Self::min_delta_bits) it may send nothing and change nothing.
    pub fn write_delta_within(
        &mut self,
        base: BaseId,
        w: &mut BitWriter,
        max_bits: usize,
    ) -> Result<Option<DeltaToken>, FastArrayError> {
        let array_key = self.array_key;
        let b =
            self.bases.get_mut(base.0 as usize).and_then(Option::as_mut).ok_or(FastArrayError::UnknownBase(base))?;
        if b.expired() {
            return Err(FastArrayError::BaseExpired(base));
        }
        b.make_room();
        let (from, joined) = (b.sent_key(), b.joined());
        if from >= array_key {
            return Ok(None);
        }
        let mut changed = std::mem::take(&mut self.scratch_changed);
        let mut deleted = std::mem::take(&mut self.scratch_deleted);
        changed.clear();
        deleted.clear();
        let (to, _) = self.scan(from, joined, max_bits, Some(&mut changed), Some(&mut deleted));
        let b = self.bases[base.0 as usize].as_mut().expect("looked up above");
        let range = KeyRange { from, to };
        let token = if to == from {
            None // not even the first entry fits the budget
        } else if changed.is_empty() && deleted.is_empty() {
            // Nothing in (from, to] reaches this client: settle the range without a delta.
            let t = b.on_sent(range, None);
            b.acked(t);
            None
        } else {
            changed.sort_unstable_by_key(|&(id, _)| id);
            deleted.sort_unstable();
            // The client's receiver widens a short key against its newest applied key, which lies
            // between the newest key it is known to have applied and this one. (Not the
            // acknowledged cursor: a range with nothing for the client is settled without a
            // delta — a connection that joins an empty array whose key is past the window — and
            // the client's newest key stays behind it; a short key read against that was refused
            // as an invalid key, or misread, for every delta after.)
            let short_key = array_key.0 - b.delivered_key().0 < SHORT_KEY_WINDOW;
            let header = DeltaHeader { array_key, base_key: from, short_key };
            let stride = self.layout.stride;
            let rows = &self.rows;
            let items =
                changed.iter().map(|&(id, row)| (id, &rows[row as usize * stride..(row as usize + 1) * stride]));
            wire::write_delta(w, &self.layout, header, &deleted, items);
            Some(b.on_sent(range, Some(array_key)))
        };
        self.scratch_changed = changed;
        self.scratch_deleted = deleted;
        Ok(token)
    }

    /// The packet carrying `token` to `base` was acknowledged: the base advances (once every
    /// earlier range is acknowledged too). False when the token is not in flight.
    pub fn acked(&mut self, base: BaseId, token: DeltaToken) -> bool {
        self.base_mut(base).is_ok_and(|b| b.acked(token))
    }

    /// The packet carrying `token` to `base` was lost: the next delta covers everything after the
    /// acknowledged base again. False when the token is not in flight.
    pub fn lost(&mut self, base: BaseId, token: DeltaToken) -> bool {
        self.base_mut(base).is_ok_and(|b| b.lost(token))
    }

    #[cfg(test)]
    pub(crate) fn set_last_id(&mut self, id: u32) {
        self.last_id = id;
    }
}
