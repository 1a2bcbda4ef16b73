//! Packets, bunches and records: what one frame's replication looks like on the wire.
//!
//! ```text
//! packet   := seq:packed  { 1:bit bunch }*  0:bit
//! bunch    := guid:packed  open:bit [class:packed]  close:bit  { record }*  0:packed
//! record   := handle:packed(≥1)  value                         a fixed leaf
//!           | handle:packed(≥1)  count:packed { nested:packed(≥1) value }*  0:packed
//!                                                              a dynamic array
//! feedback := highest:packed  history:32 bits  (bit i: packet highest−1−i arrived)
//! ```
//!
//! A bunch carries one actor's records (UE's content block). `open` introduces the actor with
//! its class (UE's spawn info); it is repeated on every bunch until the client acknowledged a
//! packet carrying it, so a lost open never strands later bunches. `close` retires the actor. A
//! large actor may be split into several bunches across packets; each part stands alone.
//!
//! Decoding validates everything structural before a caller touches any state: unknown handles,
//! array counts over the declared cap, nested handles outside the count, truncation, and unknown
//! classes or actors are [`WireError`]s, never panics.

use super::{read_leaf, write_leaf, BitReader, BitWriter, WireError};
use crate::schema::{ClassLayout, LeafKind};

/// One record: a leaf's value, or a dynamic array's count and element values.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordValue {
    /// A fixed leaf in its byte form.
    Leaf(Vec<u8>),
    /// An array: its new length and (nested handle, element leaf bytes) pairs.
    Array {
        /// Length after this record.
        count: u16,
        /// Element leaf values by nested handle (`element * element_leaves + leaf + 1`).
        elements: Vec<(u16, Vec<u8>)>,
    },
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
    pub guid: u64,
    /// The class id when this bunch opens the actor's channel.
    pub open: Option<u32>,
    /// The channel closes: the client destroys the actor.
    pub close: bool,
    /// Records in handle order.
    pub records: Vec<Record>,
}

/// One decoded packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Packet {
    /// Sequence number.
    pub seq: u32,
    /// Bunches in order.
    pub bunches: Vec<Bunch>,
}

/// Writes a packet header.
pub fn begin_packet(w: &mut BitWriter, seq: u32) {
    w.write_packed(seq as u64);
}

/// Ends a packet (no more bunches).
pub fn end_packet(w: &mut BitWriter) {
    w.write_bool(false);
}

/// Starts a bunch for actor `guid`.
pub fn begin_bunch(w: &mut BitWriter, guid: u64, open: Option<u32>, close: bool) {
    w.write_bool(true);
    w.write_packed(guid);
    w.write_bool(open.is_some());
    if let Some(class) = open {
        w.write_packed(class as u64);
    }
    w.write_bool(close);
}

/// Ends a bunch's records.
pub fn end_bunch(w: &mut BitWriter) {
    w.write_packed(0);
}

/// Writes a fixed leaf record.
pub fn write_leaf_record(w: &mut BitWriter, handle: u16, kind: LeafKind, bytes: &[u8]) {
    w.write_packed(handle as u64);
    write_leaf(w, kind, bytes);
}

/// Writes a whole dynamic array as one record: every element leaf of every element.
pub fn write_array_record(w: &mut BitWriter, layout: &ClassLayout, leaf: usize, elements: &[u8]) {
    let Some(a) = layout.leaves[leaf].array else { return };
    let array = &layout.arrays[a];
    let count = elements.len() / array.stride;
    w.write_packed(layout.leaves[leaf].handle as u64);
    w.write_packed(count as u64);
    let per = array.elements.len();
    for e in 0..count {
        let element = &elements[e * array.stride..(e + 1) * array.stride];
        for (i, el) in array.elements.iter().enumerate() {
            w.write_packed((e * per + i + 1) as u64);
            write_leaf(w, el.kind, &element[el.offset..el.offset + el.kind.byte_size()]);
        }
    }
    w.write_packed(0);
}

/// Writes acknowledgement feedback.
pub fn write_feedback(w: &mut BitWriter, highest: u32, history: u32) {
    w.write_packed(highest as u64);
    w.write_bits(history as u64, 32);
}

/// Reads acknowledgement feedback: (highest sequence received, history bits).
pub fn read_feedback(bytes: &[u8]) -> Result<(u32, u32), WireError> {
    let mut r = BitReader::new(bytes);
    let highest = u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("sequence number"))?;
    let history = r.read_bits(32)? as u32;
    Ok((highest, history))
}

/// Decodes a packet. `resolve(guid, open_class)` names the layout of each bunch's actor: the class
/// in `open` for a new actor, or the class the caller already knows for `guid`. Close bunches
/// carry no records and are not resolved.
pub fn decode_packet<'a>(
    bytes: &[u8],
    mut resolve: impl FnMut(u64, Option<u32>) -> Result<&'a ClassLayout, WireError>,
) -> Result<Packet, WireError> {
    let mut r = BitReader::new(bytes);
    let seq = u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("sequence number"))?;
    let mut bunches = Vec::new();
    while r.read_bool()? {
        let guid = r.read_packed()?;
        let open = if r.read_bool()? {
            Some(u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("class id"))?)
        } else {
            None
        };
        let close = r.read_bool()?;
        if close {
            // A close carries no records, and may name an actor the receiver never got (its open
            // was lost); the receiver decides what that means, so no layout is needed here.
            if r.read_packed()? != 0 {
                return Err(WireError::Invalid("records in a close bunch"));
            }
            bunches.push(Bunch { guid, open, close, records: Vec::new() });
            continue;
        }
        let layout = resolve(guid, open)?;
        let mut records = Vec::new();
        let mut last = 0u16;
        loop {
            let handle = r.read_packed()?;
            if handle == 0 {
                break;
            }
            let handle = u16::try_from(handle).map_err(|_| WireError::Invalid("handle"))?;
            if handle <= last {
                return Err(WireError::Invalid("handle order"));
            }
            last = handle;
            let leaf = layout.leaf_by_handle(handle).ok_or(WireError::Invalid("handle"))?;
            let value = match leaf.array {
                None => {
                    let mut out = vec![0u8; leaf.kind.byte_size()];
                    read_leaf(&mut r, leaf.kind, &mut out)?;
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
                        let mut out = vec![0u8; el.kind.byte_size()];
                        read_leaf(&mut r, el.kind, &mut out)?;
                        elements.push((nested as u16, out));
                    }
                    RecordValue::Array { count: count as u16, elements }
                }
            };
            records.push(Record { handle, value });
        }
        bunches.push(Bunch { guid, open, close, records });
    }
    Ok(Packet { seq, bunches })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl};

    fn layout() -> ClassLayout {
        ClassBuilder::new("B")
            .property(PropertyDecl::new("A", PropType::U16))
            .property(PropertyDecl::new("Arr", PropType::Array { element: Box::new(PropType::U8), max_len: 4 }))
            .build()
            .unwrap()
    }

    fn sample() -> Vec<u8> {
        let l = layout();
        let mut w = BitWriter::new();
        begin_packet(&mut w, 7);
        begin_bunch(&mut w, 4, Some(2), false);
        write_leaf_record(&mut w, 1, LeafKind::U16, &[0x34, 0x12]);
        write_array_record(&mut w, &l, 1, &[9, 8]);
        end_bunch(&mut w);
        begin_bunch(&mut w, 6, None, true);
        end_bunch(&mut w);
        end_packet(&mut w);
        w.into_bytes()
    }

    #[test]
    fn packets_round_trip() {
        let l = layout();
        let p = decode_packet(&sample(), |_, _| Ok(&l)).unwrap();
        assert_eq!(p.seq, 7);
        assert_eq!(p.bunches.len(), 2);
        assert_eq!(p.bunches[0].open, Some(2));
        assert_eq!(p.bunches[0].records[0], Record { handle: 1, value: RecordValue::Leaf(vec![0x34, 0x12]) });
        assert_eq!(
            p.bunches[0].records[1],
            Record { handle: 2, value: RecordValue::Array { count: 2, elements: vec![(1, vec![9]), (2, vec![8])] } }
        );
        assert!(p.bunches[1].close);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let l = layout();
        let bytes = sample();
        for cut in 0..bytes.len() {
            assert!(decode_packet(&bytes[..cut], |_, _| Ok(&l)).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn bad_handles_and_counts_are_errors() {
        let l = layout();
        let mut w = BitWriter::new();
        begin_packet(&mut w, 1);
        begin_bunch(&mut w, 2, None, false);
        w.write_packed(9); // no such handle
        let bad = w.into_bytes();
        assert_eq!(decode_packet(&bad, |_, _| Ok(&l)), Err(WireError::Invalid("handle")));
        let mut w = BitWriter::new();
        begin_packet(&mut w, 1);
        begin_bunch(&mut w, 2, None, false);
        w.write_packed(2);
        w.write_packed(5); // count over the cap of 4
        let bad = w.into_bytes();
        assert!(matches!(decode_packet(&bad, |_, _| Ok(&l)), Err(WireError::OutOfRange { .. })));
    }
}
