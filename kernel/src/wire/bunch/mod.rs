//! Packets, bunches and records: what one frame's replication looks like on the wire, and the
//! decoder that validates it.
//!
//! ```text
//! packet   := seq:packed  { 1:bit bunch }*  0:bit  continues:bit
//! bunch    := step:packed  1:bit  count  { record }{count}          a plain bunch
//!           | step:packed  0:bit  open:bit [open]  close:bit ( close | len:packed body )
//!                                     a sized bunch (open and close in super::open: spawn info
//!                                     or a static path, close reason; a close has no body)
//! step     := the GUID's difference from the previous bunch's in the packet (0 before the
//!             first), zigzag-mapped: ascending GUIDs cost about a byte each (packet::guid_delta)
//! count    := (records − 1) in handle_bits(class) bits          none for a one-leaf class
//! body     := { record }*                           exactly `len` bits: the length ends it
//!           | [ delta ]                              a fast array's bunch (crate::fastarray::wire)
//! record   := handle  value                                   a fixed leaf
//!           | handle  count:packed { nested:packed(≥1) value }*  0:packed
//!                                                              a dynamic array
//! handle   := (handle − 1) in handle_bits(class) bits           ⌈log₂ leaves⌉: none for a
//!                                                              one-leaf class
//! ```
//!
//! A bunch carries one actor's records (UE's content block). `open` introduces the actor with
//! its class and spawn info (or binds a static actor by its path); it is repeated on every bunch
//! until the client acknowledged a packet carrying it, so a lost open never strands later
//! bunches. `close` ends the channel, saying why (destroyed, dormant, torn off). An actor that
//! does not fit the rest of a packet is split: its first bunch ends the packet, whose
//! `continues` bit says it goes on in the first bunch of the next packet (and so on). Each part
//! decodes alone; a receiver holds the parts and applies them together, so one update is seen
//! whole (UE's partial bunches; one bit per packet, not per bunch, since only a packet's last
//! bunch can go on). A receiver that misses a part applies what it holds: the server resends
//! the lost part's properties, as for any lost packet.
//!
//! Two forms, because a length costs a byte or two on every bunch and only a receiver that lacks
//! the actor needs it. A **sized** bunch (an open, a close, a fast array's delta, an export, a
//! call or a calls acknowledgement: [`super::rpc`])
//! carries its body length, so a receiver can step over a bunch it cannot apply (as UE skips a
//! bunch for a channel it cannot open) and keep the rest of the packet. A **plain** bunch — an
//! update of a channel whose open the client acknowledged, by far the most common — carries a
//! record count instead: the client has the actor, knows its class and reads exactly its records.
//! A client that somehow lacks it cannot read past it and refuses the packet (which the server
//! then treats as lost) and asks for the actor again; the server's next bunch for it opens it,
//! sized. A client whose copy has another class than the server's actor (a forged close and open
//! can do that; a plain bunch does not name its class) reads the records wrong and breaks off
//! somewhere after them: a packet refused for another reason than a missing actor asks for the
//! last actor it read an update of.
//! Packet writing under an MTU lives in [`super::packet`], feedback in [`super::feedback`].
//!
//! Decoding validates everything structural before a caller touches any state: unknown handles,
//! array counts over the declared cap, nested handles outside the count, a body that does not end
//! at its length, a plain bunch for an actor the receiver does not have, truncation, and unknown
//! classes are [`WireError`]s, never panics.

use super::open::{read_close_reason, read_export_body, read_open, CloseReason, OpenHeader, EXPORT_GUID};
use super::packet::guid_from_delta;
use super::{read_leaf, write_leaf, BitReader, BitWriter, WireError};
use crate::fastarray::{wire::read_delta, ArrayKey, Delta, FastArrayError};
use crate::ids::{NetGuid, Seq};
use crate::schema::{ArrayLayout, ClassLayout, LeafKind};

/// One record: a leaf's value, or a dynamic array's count and element values.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordValue {
    /// A fixed leaf in its byte form.
    Leaf(LeafBytes),
    /// An array: its new length and (nested handle, element leaf bytes) pairs.
    Array {
        /// Length after this record.
        count: u16,
        /// Element leaf values by nested handle (`element * element_leaves + leaf + 1`).
        elements: Vec<(u16, LeafBytes)>,
    },
}

/// A leaf's bytes as decoded: held inline up to [`LeafBytes::INLINE`] bytes (every leaf kind but
/// a large opaque one), so decoding a record allocates nothing for its value — a client applies
/// thousands a frame. Reads as a byte slice.
#[derive(Clone)]
pub struct LeafBytes(Held);

#[derive(Clone)]
enum Held {
    Inline { len: u8, bytes: [u8; LeafBytes::INLINE] },
    Heap(Vec<u8>),
}

impl LeafBytes {
    /// Bytes held without an allocation.
    pub const INLINE: usize = 16;

    /// `len` zero bytes, to read a leaf into.
    pub fn zeroed(len: usize) -> LeafBytes {
        match len <= Self::INLINE {
            true => LeafBytes(Held::Inline { len: len as u8, bytes: [0; Self::INLINE] }),
            false => LeafBytes(Held::Heap(vec![0; len])),
        }
    }
}

impl std::ops::Deref for LeafBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Held::Inline { len, bytes } => &bytes[..*len as usize],
            Held::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for LeafBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Held::Inline { len, bytes } => &mut bytes[..*len as usize],
            Held::Heap(v) => v,
        }
    }
}

impl From<&[u8]> for LeafBytes {
    fn from(bytes: &[u8]) -> LeafBytes {
        let mut b = LeafBytes::zeroed(bytes.len());
        b.copy_from_slice(bytes);
        b
    }
}

impl From<Vec<u8>> for LeafBytes {
    fn from(bytes: Vec<u8>) -> LeafBytes {
        LeafBytes::from(&bytes[..])
    }
}

impl PartialEq for LeafBytes {
    fn eq(&self, other: &LeafBytes) -> bool {
        self[..] == other[..]
    }
}

impl std::fmt::Debug for LeafBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Leaf handle.
    pub handle: u16,
    /// Value.
    pub value: RecordValue,
}

/// One decoded bunch.
#[derive(Clone, Debug, PartialEq)]
pub struct Bunch {
    /// The actor's NetGUID.
    pub guid: NetGuid,
    /// The open, when this bunch opens the actor's channel: class, and spawn info or path.
    pub open: Option<OpenHeader>,
    /// The close, when this bunch ends the channel.
    pub close: Option<Close>,
    /// Records in handle order.
    pub records: Vec<Record>,
    /// A fast array's bunch: its delta (none in a bunch that only opens it).
    pub delta: Option<Delta>,
}

/// A channel's end as decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Close {
    /// Why.
    pub reason: CloseReason,
    /// A destroyed static actor's path.
    pub path: Option<String>,
}

/// One decoded packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Packet {
    /// Sequence number.
    pub seq: Seq,
    /// Bunches in order (skipped ones left out).
    pub bunches: Vec<Bunch>,
    /// GUIDs of the bunches the resolver asked to skip, in order.
    pub skipped: Vec<NetGuid>,
    /// Static objects the packet exports: (GUID, path) (see [`super::open::EXPORT_GUID`]).
    pub exports: Vec<(NetGuid, String)>,
    /// Calls, in order ([`super::rpc`]): decoded by the receiver with their target's class.
    pub rpcs: Vec<super::rpc::RpcBunch>,
    /// The server's acknowledgement of the client's reliable calls: the low 16 bits of the first
    /// number it has not received (the last one in the packet).
    pub calls_ack: Option<u16>,
    /// Whether the last bunch of `bunches` goes on in the next packet's first bunch: the packet
    /// says so and its last bunch on the wire was decoded (not stepped over, not an export, a
    /// call or a calls acknowledgement).
    pub continues: bool,
}

/// The [`WireError::Invalid`] text of a plain bunch whose actor the receiver does not have (it
/// cannot be stepped over: the receiver refuses the packet and asks for the actor).
pub const PLAIN_FOR_MISSING: &str = "a plain bunch for an actor the receiver does not have";

/// What the decoder should do with a bunch, as the receiver decides from its GUID and open class.
pub enum Resolve<'a> {
    /// Decode its records with this layout.
    Layout(&'a ClassLayout),
    /// Its body is a fast array delta of items of this layout; the key is the newest the
    /// receiver applied (it widens a short key; see [`crate::fastarray::wire`]).
    Delta(&'a ArrayLayout, ArrayKey),
    /// Step over it (the receiver cannot apply it). A plain bunch cannot be stepped over: the
    /// decode fails with [`WireError::Invalid`] ("a plain bunch for an actor the receiver does
    /// not have").
    Skip,
    /// Read its records with this layout (to step over them) and drop them: the receiver knows
    /// the actor's class but will not apply it (a torn-off actor, a static one it did not bind).
    Discard(&'a ClassLayout),
}

/// The most bits one record of leaf `leaf` takes: a fixed leaf's handle and value; for a dynamic
/// array, its head and end with one whole element (an array is split between elements, so one
/// element is the most a packet must hold at once).
pub fn max_record_bits(layout: &ClassLayout, leaf: usize) -> usize {
    let handle = handle_bits(layout) as usize;
    let packed = super::packet::packed_bits(u16::MAX as u64);
    let l = &layout.leaves[leaf];
    match l.array {
        None => handle + super::max_leaf_bits(l.kind),
        Some(a) => {
            let element: usize = layout.arrays[a].elements.iter().map(|e| packed + super::max_leaf_bits(e.kind)).sum();
            // Head: handle and count; end: a zero nested handle.
            element + handle + packed + 8
        }
    }
}

/// Bits of a record's handle in `layout`'s bunches: enough for its leaf handles `1..=n`, written
/// as `handle − 1` (UE writes handles as ranged ints of the class's width too; a one-leaf class
/// spends none).
pub fn handle_bits(layout: &ClassLayout) -> u32 {
    let n = layout.leaves.len().max(1) as u32;
    u32::BITS - (n - 1).leading_zeros()
}

/// Writes a plain bunch's record count (at least 1, at most the class's leaves) in `bits` bits
/// ([`handle_bits`]).
pub fn write_record_count(w: &mut BitWriter, bits: u32, records: u32) {
    w.write_bits(u64::from(records.saturating_sub(1)), bits);
}

/// Writes a record's handle in `bits` bits ([`handle_bits`]).
fn write_handle(w: &mut BitWriter, bits: u32, handle: u16) {
    w.write_bits(u64::from(handle.saturating_sub(1)), bits);
}

/// Writes a fixed leaf record; `bits`: the class's [`handle_bits`].
pub fn write_leaf_record(w: &mut BitWriter, bits: u32, handle: u16, kind: LeafKind, bytes: &[u8]) {
    write_handle(w, bits, handle);
    write_leaf(w, kind, bytes);
}

/// Writes the head of a dynamic array record: its handle and the array's length.
pub fn write_array_head(w: &mut BitWriter, bits: u32, handle: u16, count: usize) {
    write_handle(w, bits, handle);
    w.write_packed(count as u64);
}

/// Writes element `e` of an array record: its element leaves `i` for which `leaf(i)` holds,
/// each with its nested handle.
pub fn write_array_element(
    w: &mut BitWriter,
    array: &ArrayLayout,
    e: usize,
    element: &[u8],
    leaf: impl Fn(usize) -> bool,
) {
    let per = array.elements.len();
    for (i, el) in array.elements.iter().enumerate().filter(|&(i, _)| leaf(i)) {
        w.write_packed((e * per + i + 1) as u64);
        write_leaf(w, el.kind, &element[el.offset..el.offset + el.kind.byte_size()]);
    }
}

/// Ends an array record.
pub fn end_array(w: &mut BitWriter) {
    w.write_packed(0);
}

/// Writes a whole dynamic array as one record: every element leaf of every element.
pub fn write_array_record(w: &mut BitWriter, layout: &ClassLayout, leaf: usize, elements: &[u8]) {
    let Some(a) = layout.leaves[leaf].array else { return };
    let array = &layout.arrays[a];
    let count = elements.len() / array.stride;
    write_array_head(w, handle_bits(layout), layout.leaves[leaf].handle, count);
    for e in 0..count {
        write_array_element(w, array, e, &elements[e * array.stride..(e + 1) * array.stride], |_| true);
    }
    end_array(w);
}

/// Decodes a packet. `resolve(guid, open_class)` decides each bunch: decode it with a layout
/// (the class in `open` for a new actor, or the class the caller already knows for `guid`), or
/// skip it. Close bunches carry no records and are not resolved.
pub fn decode_packet<'a>(
    bytes: &[u8],
    mut resolve: impl FnMut(NetGuid, Option<&OpenHeader>) -> Result<Resolve<'a>, WireError>,
) -> Result<Packet, WireError> {
    let mut r = BitReader::new(bytes);
    let seq = Seq(u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("sequence number"))?);
    let mut bunches = Vec::new();
    let mut skipped = Vec::new();
    let mut exports = Vec::new();
    let mut rpcs = Vec::new();
    let mut calls_ack = None;
    let mut prev = NetGuid(0);
    // Whether the last bunch read so far is in `bunches`.
    let mut last_kept = false;
    while r.read_bool()? {
        let guid = guid_from_delta(prev, r.read_packed()?);
        prev = guid;
        last_kept = false;
        if r.read_bool()? {
            // Plain: an acknowledged channel's update; the records count themselves.
            let (layout, keep) = match resolve(guid, None)? {
                Resolve::Layout(l) => (l, true),
                Resolve::Discard(l) => (l, false),
                Resolve::Skip => return Err(WireError::Invalid(PLAIN_FOR_MISSING)),
                Resolve::Delta(..) => return Err(WireError::Invalid("a plain bunch for a fast array")),
            };
            let count = r.read_bits(handle_bits(layout))? as usize + 1;
            let records = read_records(&mut r, layout, Some(count))?;
            if keep {
                bunches.push(Bunch { guid, open: None, close: None, records, delta: None });
                last_kept = true;
            } else {
                skipped.push(guid);
            }
            continue;
        }
        let open = if r.read_bool()? { Some(read_open(&mut r)?) } else { None };
        if r.read_bool()? {
            // A close may name an actor the receiver never got (its open was lost); the
            // receiver decides what that means, so no layout is needed here.
            if open.is_some() {
                return Err(WireError::Invalid("a close that opens"));
            }
            let (reason, path) = read_close_reason(&mut r, guid)?;
            bunches.push(Bunch { guid, open, close: Some(Close { reason, path }), records: Vec::new(), delta: None });
            continue;
        }
        let len = r.read_packed()?;
        if len > r.remaining() as u64 {
            return Err(WireError::Truncated);
        }
        let (start, len) = (r.position(), len as usize);
        if guid == EXPORT_GUID {
            if open.is_some() {
                return Err(WireError::Invalid("an export or call that opens"));
            }
            let mut body = BitReader::with_len(bytes, start + len);
            body.skip(start)?;
            if body.read_bool()? {
                rpcs.push(super::rpc::read_rpc_body(&mut body)?);
            } else if body.clone().read_packed()? == 0 {
                body.read_packed()?;
                calls_ack = Some(body.read_bits(16)? as u16);
            } else {
                exports.push(read_export_body(&mut body)?);
            }
            if body.remaining() != 0 {
                return Err(WireError::Invalid("bunch length"));
            }
            r.skip(len)?;
            continue;
        }
        let mut body = BitReader::with_len(bytes, start + len);
        body.skip(start)?;
        let (records, delta) = match resolve(guid, open.as_ref())? {
            Resolve::Layout(l) => (read_records(&mut body, l, None)?, None),
            Resolve::Delta(l, newest) => (Vec::new(), read_delta_body(&mut body, l, newest)?),
            Resolve::Skip | Resolve::Discard(_) => {
                r.skip(len)?;
                skipped.push(guid);
                continue;
            }
        };
        if body.remaining() != 0 {
            return Err(WireError::Invalid("bunch length"));
        }
        r.skip(len)?;
        bunches.push(Bunch { guid, open, close: None, records, delta });
        last_kept = true;
    }
    let continues = r.read_bool()? && last_kept;
    Ok(Packet { seq, bunches, skipped, exports, rpcs, calls_ack, continues })
}

/// Reads a fast array bunch's body: a delta, or nothing (a bunch that only opens the array).
fn read_delta_body(
    body: &mut BitReader<'_>,
    layout: &ArrayLayout,
    newest: ArrayKey,
) -> Result<Option<Delta>, WireError> {
    if body.remaining() == 0 {
        return Ok(None);
    }
    let delta = read_delta(body, layout, newest).map_err(|e| match e {
        FastArrayError::Wire(w) => w,
        FastArrayError::TooManyChanged(_) => WireError::Invalid("fast array changes over the cap"),
        FastArrayError::TooManyDeleted(_) => WireError::Invalid("fast array deletes over the cap"),
        _ => WireError::Invalid("fast array delta"),
    })?;
    Ok(Some(delta))
}

/// Reads a bunch body's records: `count` of them (a plain bunch), or to the end of the body (a
/// sized one: its length ends it).
pub(crate) fn read_records(
    r: &mut BitReader<'_>,
    layout: &ClassLayout,
    count: Option<usize>,
) -> Result<Vec<Record>, WireError> {
    let mut records = Vec::new();
    let mut last = 0u16;
    let bits = handle_bits(layout);
    while count.map_or(r.remaining() > 0, |n| records.len() < n) {
        let handle = r.read_bits(bits)? + 1;
        let handle = u16::try_from(handle).map_err(|_| WireError::Invalid("handle"))?;
        if handle <= last {
            return Err(WireError::Invalid("handle order"));
        }
        last = handle;
        let leaf = layout.leaf_by_handle(handle).ok_or(WireError::Invalid("handle"))?;
        let value = match leaf.array {
            None => {
                let mut out = LeafBytes::zeroed(leaf.kind.byte_size());
                read_leaf(r, leaf.kind, &mut out)?;
                RecordValue::Leaf(out)
            }
            Some(a) => {
                let array = &layout.arrays[a];
                let count = r.read_packed()?;
                if count > array.max_len as u64 {
                    return Err(WireError::OutOfRange { value: count, max: array.max_len as u64 + 1 });
                }
                let per = array.elements.len() as u64;
                let mut elements = Vec::new();
                let mut last_nested = 0u64;
                loop {
                    let nested = r.read_packed()?;
                    if nested == 0 {
                        break;
                    }
                    if nested <= last_nested || nested > count * per {
                        return Err(WireError::Invalid("nested handle"));
                    }
                    last_nested = nested;
                    let el = &array.elements[((nested - 1) % per) as usize];
                    let mut out = LeafBytes::zeroed(el.kind.byte_size());
                    read_leaf(r, el.kind, &mut out)?;
                    elements.push((nested as u16, out));
                }
                RecordValue::Array { count: count as u16, elements }
            }
        };
        records.push(Record { handle, value });
    }
    Ok(records)
}

#[cfg(test)]
mod tests;
