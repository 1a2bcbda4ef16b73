//! FastArray: UE's `FFastArraySerializer` — an array whose items are marked dirty one by one and
//! replicated as per-connection deltas of added, changed and removed items, so compare and
//! serialization cost follow the dirty items, not the array length. This module stands alone
//! (any transport can drive it); [`crate::net::NetDriver::add_fast_array`] replicates one
//! through its owner actor's channel ([`crate::net::fastarrays`]).
//!
//! What each file owns:
//!
//! - [`FastArray`] (`array.rs`): the server's items (rows of `stride` bytes, with parallel `ids`
//!   and `keys` columns and an id → row map; removal is RemoveAtSwap), the array key, and the
//!   **change log**: every mark appends `(key, id, change | remove)` in key order.
//! - `base.rs`: one connection's **base** — the acknowledged cursor, the optimistic sent cursor and
//!   the deltas in flight, each remembered by a [`DeltaToken`] the caller stores with its packet.
//! - [`wire`]: the delta grammar, its encoder and the validating decoder.
//! - [`FastArrayReceiver`] (`client.rs`): the client's copy, applying validated deltas and firing
//!   callbacks in UE's order (removes, then adds, then changes).
//!
//! # Keys and the change log
//!
//! The array key counts marks. A mark (add, change, [`FastArray::mark_item_dirty`]) bumps it and
//! stamps the item's key with it; a removal bumps it too. UE bumps a per-item counter instead; a
//! stamp from the array key is just as monotonic per item and also tells whether a log entry is
//! the item's newest (its key equals the item's key) or stale (the item was marked again later,
//! and a later entry stands for it). UE's per-connection base is a map id → item key plus the
//! array key; here it is one cursor: the client holds the current value of every item whose key is
//! at most the cursor, and none of the items removed at or before it. A delta for a connection
//! is the log after its cursor, so finding it costs the entries since, never the array length.
//!
//! ```text
//! mark(id):    key += 1; item(id).key = key; log.push(key, id, change)
//! remove(id):  key += 1; swap-remove the row; log.push(key, id, remove)
//!
//! write_delta(conn):                          sent = conn's optimistic cursor
//!   for e in log after sent, in key order:
//!     change e, stale (item gone or re-marked): skip
//!     remove e at or before conn joined:        skip (the client never had it)
//!     a 2049th change or delete:                stop; to = e.key − 1
//!     otherwise: take e.id
//!   to = array key if the log ran out
//!   write header + deletes + changes (current item values); remember token → (sent, to]
//!   sent = to
//! acked(token):  acked = to  if the delta's from ≤ acked   (then re-check parked acked deltas)
//! lost(token):   sent = acked                             (the next delta covers the loss again)
//! compaction:    when the log doubled since the last one, keep only live changes and the
//!                removals some connection has not acknowledged (amortised O(1) per mark)
//! ```
//!
//! A new connection's cursor is 0, so its first deltas send every live item, at most
//! [`MAX_CHANGED_PER_DELTA`] per update. Order is not preserved: the receiver appends adds and
//! removes by swapping, as UE's RemoveAtSwap does.
//!
//! # Bounds
//!
//! - Log length < max([`MIN_LOG_COMPACT`], 2 × its length after the last compaction), and that
//!   length is the live items plus the removals some connection had not acknowledged then, at
//!   most max([`MAX_PINNED_REMOVALS`], live items): a compaction that finds more **expires** the
//!   bases furthest behind (a connection whose packets are all lost while it stays connected, or
//!   that acknowledges only some) — their removals are dropped, and such a base only answers
//!   [`FastArrayError::BaseExpired`]; its connection starts again from nothing (disconnect,
//!   connect, a fresh receiver), as the driver does by opening the array again.
//! - Deltas in flight per connection ≤ [`MAX_IN_FLIGHT_DELTAS`]; the oldest beyond it counts as lost.
//! - Items ≤ [`MAX_FAST_ARRAY_ITEMS`] on both sides; one delta ≤ [`MAX_CHANGED_PER_DELTA`]
//!   changes and [`MAX_DELETED_PER_DELTA`] deletes, on write and on read.
//!
//! # Reordering
//!
//! A delta carries values as of when it was written, and its array key orders deltas by writing
//! time. The receiver applies deltas in that order and rejects an older one as
//! [`FastArrayError::Late`] (state untouched); like the kernel's connection layer, which drops a
//! late packet so it counts as lost, the caller must report such a delta as lost, never as acked.
//! Two deltas with the same array key were written with no mark between them (the parts of one
//! first send, or a resend): they describe one state and apply in either order. A short key
//! (see [`wire`]) is exact for every delta newer than the receiver's; a late one more than
//! [`wire::SHORT_KEY_WINDOW`] keys behind could be misread as new, so the receiver's own check
//! backs up the connection layer's sequence window rather than replacing it.
//!
//! # Example
//!
//! ```
//! use shadowrep::fastarray::{item_layout, FastArray, FastArrayEvent, FastArrayReceiver};
//! use shadowrep::schema::{PropType, StructType};
//! use shadowrep::wire::BitWriter;
//! use std::sync::Arc;
//!
//! let item = StructType::new("Slot").field("Count", PropType::U16).field("Durability", PropType::U8);
//! let layout = Arc::new(item_layout("Inventory", PropType::Struct(item)).unwrap());
//! let mut server = FastArray::new(layout.clone());
//! let conn = server.connect();
//! // Count 1, Durability 100 (and a padding byte: the stride is 4).
//! let sword = server.add(&[1, 0, 100, 0]).unwrap();
//! let shield = server.add(&[1, 0, 90, 0]).unwrap();
//!
//! let mut client = FastArrayReceiver::new(layout);
//! let mut w = BitWriter::new();
//! let token = server.write_delta(conn, &mut w).unwrap().expect("two adds to send");
//! let mut events = Vec::new();
//! client.receive(w.bytes(), &mut events).unwrap();
//! server.acked(conn, token);
//! assert_eq!(events, [FastArrayEvent::Added(sword), FastArrayEvent::Added(shield)]);
//!
//! server.set(sword, &[1, 0, 99, 0]).unwrap();
//! server.remove(shield).unwrap();
//! let mut w = BitWriter::new();
//! server.write_delta(conn, &mut w).unwrap().expect("a change and a removal");
//! events.clear();
//! client.receive(w.bytes(), &mut events).unwrap();
//! // The removed item comes with what it held (the only moment it can be read).
//! assert_eq!(events, [FastArrayEvent::Removed(shield, vec![1, 0, 90, 0]), FastArrayEvent::Changed(sword)]);
//! assert_eq!(client.item(sword), Some(&[1, 0, 99, 0][..]));
//! assert_eq!(client.len(), 1);
//! ```

mod array;
mod base;
mod client;
pub mod wire;

#[cfg(test)]
mod tests;

pub use array::FastArray;
pub use client::{FastArrayCallbacks, FastArrayEvent, FastArrayReceiver};
pub use wire::Delta;

use crate::schema::{ArrayLayout, ClassBuilder, LayoutError, PropType, PropertyDecl};
use crate::wire::WireError;
use std::fmt;

/// Most changed (added or changed) items in one delta, on write and on read (UE's limit).
pub const MAX_CHANGED_PER_DELTA: usize = 2048;
/// Most deleted items in one delta, on write and on read (UE's limit).
pub const MAX_DELETED_PER_DELTA: usize = 2048;
/// Most items a fast array holds, on the server and on a receiver.
pub const MAX_FAST_ARRAY_ITEMS: usize = 1 << 20;
/// Most deltas one connection has in flight; writing one more counts the oldest as lost.
pub const MAX_IN_FLIGHT_DELTAS: usize = 256;
/// The change log is compacted when it reaches this many entries, or twice its length after the
/// last compaction if that is more.
pub const MIN_LOG_COMPACT: usize = 64;
/// Removals the change log keeps for connections behind the others, beyond the live items: a
/// compaction that would keep more expires the bases furthest behind (see the bounds in the
/// module docs).
pub const MAX_PINNED_REMOVALS: usize = 4 * MAX_DELETED_PER_DELTA;
/// The largest replication id; adding an item after it was assigned fails.
pub const MAX_REPLICATION_ID: u32 = u32::MAX;

/// Identifies one item for its whole life (UE's `ReplicationID`); assigned from 1 up, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ReplicationId(pub u32);

/// A point in the array's history: the number of marks and removals so far (UE's
/// `ArrayReplicationKey`). An item's key is the array key of its last mark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ArrayKey(pub u64);

/// Names one delta written to one connection; store it with the packet that carries the delta
/// and hand it back to [`FastArray::acked`] or [`FastArray::lost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct DeltaToken(pub u32);

/// One connection's base in a [`FastArray`] (a slot index; a disconnected slot is reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct BaseId(pub u32);

/// Why a fast array operation or a delta failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastArrayError {
    /// The bits could not be decoded.
    Wire(WireError),
    /// A delta declares more changed items than [`MAX_CHANGED_PER_DELTA`].
    TooManyChanged(u64),
    /// A delta declares more deleted items than [`MAX_DELETED_PER_DELTA`].
    TooManyDeleted(u64),
    /// The array would hold more than [`MAX_FAST_ARRAY_ITEMS`] items.
    TooManyItems,
    /// Every replication id up to [`MAX_REPLICATION_ID`] was assigned.
    IdsExhausted,
    /// No item has this id.
    UnknownItem(ReplicationId),
    /// An item's bytes are not one stride long.
    ItemSize {
        /// The layout's stride.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// No connection base has this id.
    UnknownBase(BaseId),
    /// The base fell so far behind that the removals it lacked were dropped from the change log
    /// ([`MAX_PINNED_REMOVALS`]): disconnect it and start its client again from nothing.
    BaseExpired(BaseId),
    /// A delta older than one already applied (its values are stale); state is untouched.
    Late {
        /// The delta's array key.
        key: ArrayKey,
        /// The newest array key applied.
        newest: ArrayKey,
    },
}

impl From<WireError> for FastArrayError {
    fn from(e: WireError) -> Self {
        FastArrayError::Wire(e)
    }
}

impl fmt::Display for FastArrayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FastArrayError::Wire(e) => write!(f, "fast array delta: {e}"),
            FastArrayError::TooManyChanged(n) => {
                write!(f, "{n} changed items in one delta; at most {MAX_CHANGED_PER_DELTA}")
            }
            FastArrayError::TooManyDeleted(n) => {
                write!(f, "{n} deleted items in one delta; at most {MAX_DELETED_PER_DELTA}")
            }
            FastArrayError::TooManyItems => write!(f, "a fast array holds at most {MAX_FAST_ARRAY_ITEMS} items"),
            FastArrayError::IdsExhausted => write!(f, "every replication id was assigned"),
            FastArrayError::UnknownItem(id) => write!(f, "no item with replication id {}", id.0),
            FastArrayError::ItemSize { expected, got } => {
                write!(f, "an item is {expected} bytes, {got} were given")
            }
            FastArrayError::UnknownBase(b) => write!(f, "no connection base {}", b.0),
            FastArrayError::BaseExpired(b) => {
                write!(f, "connection base {} fell too far behind and expired; start it again", b.0)
            }
            FastArrayError::Late { key, newest } => {
                write!(f, "delta at array key {} is older than the applied {}", key.0, newest.0)
            }
        }
    }
}

impl std::error::Error for FastArrayError {}

/// A checksum of an item layout (stride, and each leaf's kind and offset): two ends that
/// register fast array kinds compare these, as they compare class checksums.
pub fn layout_checksum(layout: &ArrayLayout) -> u64 {
    // FNV-1a over the layout's description; stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(&(layout.stride as u64).to_le_bytes());
    eat(&(layout.elements.len() as u64).to_le_bytes());
    for e in &layout.elements {
        eat(&(e.offset as u64).to_le_bytes());
        eat(format!("{:?}", e.kind).as_bytes());
    }
    h
}

/// The item layout of a fast array whose items are `element` (a scalar or a struct): the
/// kernel's dynamic-array element description, built by [`ClassBuilder`] (so element leaves,
/// offsets and stride are exactly those of a `TArray` of the same type). Its `max_len` is not
/// used: a fast array is capped by [`MAX_FAST_ARRAY_ITEMS`]. Only leaves are replicated: keep
/// padding bytes between them zero, or a client's copy differs from the server's there.
pub fn item_layout(name: &str, element: PropType) -> Result<ArrayLayout, LayoutError> {
    let class = ClassBuilder::new(name)
        .property(PropertyDecl::new("Items", PropType::Array { element: Box::new(element), max_len: 1 }))
        .build()?;
    // One array property always flattens into exactly one array layout.
    Ok(class.arrays.into_iter().next().expect("an array property has an array layout"))
}
