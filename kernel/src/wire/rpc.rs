//! Remote procedure calls on the wire ([`crate::schema::rpc`]).
//!
//! ```text
//! call bunch := a sized bunch of GUID 1 (EXPORT_GUID) whose body is
//!               1:bit  reliable:bit [seq:16]  target:packed  call
//!               (an export's body starts with a 0 bit: super::open)
//! calls ack  := a sized bunch of GUID 1 whose body is  0:bit  0:packed  next:16
//!               (an export of GUID 0, which names nothing): the server has every reliable call
//!               of the client's numbered below `next` (the client's calls ride its feedback:
//!               super::feedback)
//! call       := index:bits(⌈log₂ calls⌉ of the target's class)  { record }*
//!               the parameters as records of the call's parameter layout, in handle order, those
//!               at their zero value left out; the bunch's length ends them
//! seq        := the low 16 bits of the connection's reliable call number
//! ```
//!
//! A call bunch names its target actor in its body, so the packet's GUID steps stay those of the
//! actors' bunches: a frame's calls come after its actors, in the last packets, where the step to
//! GUID 1 is paid once per packet. The decoder reads the header and keeps the call's bits
//! ([`RpcBunch`]): the receiver decodes them with the target's class once the packet's bunches
//! applied (an actor opened by the same packet has its class then), and a sized bunch is stepped
//! over whole when it cannot ([`decode_call`] fails alone, never the packet).
//!
//! Reliable calls carry the low 16 bits of their number in the connection's reliable stream; a
//! sender (the server, or a client for its Server calls) never has more than
//! [`MAX_RELIABLE_RPCS`] numbered and unacknowledged, so a receiver that expects number `n`
//! places any honest one within `n .. n + MAX_RELIABLE_RPCS`.

use super::bunch::{handle_bits, read_records, write_array_record, write_leaf_record, RecordValue};
use super::{BitReader, BitWriter, WireError};
use crate::ids::NetGuid;
use crate::schema::rpc::rpc_index_bits;
use crate::schema::ClassLayout;
use crate::value::{decode_parent, encode_parent, Value, ValueError};
use std::collections::BTreeMap;

/// Most reliable calls a connection has numbered and not yet acknowledged: the reliable window
/// (UE's `RELIABLE_BUFFER` is 256 reliable bunches per channel; here one stream per connection).
pub const MAX_RELIABLE_RPCS: u32 = 1024;

/// A call bunch as decoded: its target, reliable number, and the call's bits (index and
/// parameters) for [`decode_call`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcBunch {
    /// The actor called.
    pub target: NetGuid,
    /// A reliable call's number, its low 16 bits; `None` for an unreliable one.
    pub seq: Option<u16>,
    /// The call's bits: its index and parameters.
    pub call: Vec<u8>,
    /// How many bits of `call` are the call's.
    pub bits: usize,
    /// A reliable call (`seq` is its number in the reliable stream). A server's unreliable call
    /// has no number; a client's has one in its unreliable stream.
    pub reliable: bool,
}

/// Encodes call `index` of `class` with `args` (one per parameter, in order): its index and its
/// parameters' records. The parameters are type-checked against the call's parameter layout.
pub fn encode_call(class: &ClassLayout, index: usize, args: &[Value]) -> Result<BitWriter, ValueError> {
    let rpc = class.rpcs.get(index).ok_or(ValueError::NoSuchProperty(index))?;
    let params = &*rpc.params;
    if args.len() != params.parents.len() {
        return Err(ValueError::ArgCount { expected: params.parents.len(), got: args.len() });
    }
    let mut record = params.default_record.clone();
    let mut arrays = params.default_arrays.clone();
    for (pi, v) in args.iter().enumerate() {
        let encoded = encode_parent(params, pi, v)?;
        let range = params.parents[pi].record_range.clone();
        record[range.clone()].copy_from_slice(&encoded.record[..range.len()]);
        for (a, data) in encoded.arrays {
            arrays[a] = data;
        }
    }
    let mut w = BitWriter::new();
    w.write_bits(index as u64, rpc_index_bits(class));
    let bits = handle_bits(params);
    for leaf in &params.leaves {
        match leaf.array {
            None => {
                let bytes = &record[leaf.record_offset..leaf.record_offset + leaf.kind.byte_size()];
                if bytes.iter().any(|&b| b != 0) {
                    write_leaf_record(&mut w, bits, leaf.handle, leaf.kind, bytes);
                }
            }
            Some(a) if !arrays[a].is_empty() => {
                write_array_record(&mut w, params, leaf.handle as usize - 1, &arrays[a]);
            }
            Some(_) => {}
        }
    }
    Ok(w)
}

/// Decodes a call bunch's call with its target's class: the call's index and arguments.
pub fn decode_call(class: &ClassLayout, bunch: &RpcBunch) -> Result<(usize, Vec<Value>), WireError> {
    let mut r = BitReader::with_len(&bunch.call, bunch.bits);
    let index = r.read_bits(rpc_index_bits(class))? as usize;
    let rpc = class.rpcs.get(index).ok_or(WireError::Invalid("call index"))?;
    let params = &*rpc.params;
    let records = read_records(&mut r, params, None)?;
    let mut record = vec![0u8; params.record_bytes];
    let mut arrays: Vec<Vec<u8>> = vec![Vec::new(); params.arrays.len()];
    for rec in records {
        let leaf = params.leaf_by_handle(rec.handle).ok_or(WireError::Invalid("handle"))?;
        match rec.value {
            RecordValue::Leaf(bytes) => {
                record[leaf.record_offset..leaf.record_offset + bytes.len()].copy_from_slice(&bytes);
            }
            RecordValue::Array { count, elements } => {
                let Some(a) = leaf.array else { return Err(WireError::Invalid("array record")) };
                let array = &params.arrays[a];
                let per = array.elements.len();
                let mut data = vec![0u8; count as usize * array.stride];
                for (nested, bytes) in elements {
                    let n = nested as usize - 1;
                    let (e, el) = (n / per, &array.elements[n % per]);
                    let at = e * array.stride + el.offset;
                    data[at..at + bytes.len()].copy_from_slice(&bytes);
                }
                arrays[a] = data;
            }
        }
    }
    let args = (0..params.parents.len())
        .map(|pi| {
            let range = params.parents[pi].record_range.clone();
            decode_parent(params, pi, &record[range], |a| &arrays[a][..])
        })
        .collect();
    Ok((index, args))
}

/// Bits of an acknowledgement of a client's reliable calls: the export bit, GUID 0 (no export
/// names it) and the next number.
pub const CALLS_ACK_BITS: usize = 1 + 8 + 16;

/// Writes the body of an acknowledgement of a client's reliable calls (a special bunch whose
/// body reads as an export of GUID 0): `next`, the low 16 bits of the first number not received.
pub fn write_calls_ack_body(w: &mut BitWriter, next: u16) {
    w.write_bool(false);
    w.write_packed(0);
    w.write_bits(u64::from(next), 16);
}

/// Writes a call bunch's body: the call bit, the reliable number, the target and the call.
pub fn write_rpc_body(w: &mut BitWriter, seq: Option<u16>, target: NetGuid, call: &BitWriter) {
    w.write_bool(true);
    w.write_bool(seq.is_some());
    if let Some(s) = seq {
        w.write_bits(u64::from(s), 16);
    }
    w.write_packed(target.0);
    w.write_from(call.bytes(), 0, call.len_bits());
}

/// Bits [`write_rpc_body`] writes.
pub fn rpc_body_bits(seq: Option<u16>, target: NetGuid, call: &BitWriter) -> usize {
    2 + if seq.is_some() { 16 } else { 0 } + super::packet::packed_bits(target.0) + call.len_bits()
}

/// A call bunch after its header — its length and body — encoded once for every connection it
/// goes to: a connection's writer copies its bits (a reliable call's number written in
/// between).
#[derive(Debug)]
pub struct EncodedCall {
    /// The length and the body, a reliable call's number zero.
    bits: BitWriter,
    /// Where a reliable call's 16-bit number goes in `bits`.
    seq_at: Option<usize>,
    body_bits: usize,
}

impl EncodedCall {
    /// Call `call` (index and parameters, [`encode_call`]) on actor `target`.
    pub fn new(target: NetGuid, reliable: bool, call: &BitWriter) -> Self {
        let seq = reliable.then_some(0);
        let body_bits = rpc_body_bits(seq, target, call);
        let mut bits = BitWriter::new();
        bits.write_packed(body_bits as u64);
        let seq_at = seq.map(|_| bits.len_bits() + 2);
        write_rpc_body(&mut bits, seq, target, call);
        Self { bits, seq_at, body_bits }
    }

    /// Bits of the bunch's body ([`write_rpc_body`]'s).
    pub fn body_bits(&self) -> usize {
        self.body_bits
    }

    /// Writes the bunch's length and body, what [`write_rpc_body`] writes after the length,
    /// with reliable number `seq` (given exactly for a reliable call).
    pub fn write(&self, w: &mut BitWriter, seq: Option<u16>) {
        let (bytes, len) = (self.bits.bytes(), self.bits.len_bits());
        debug_assert_eq!(seq.is_some(), self.seq_at.is_some(), "a number exactly for a reliable call");
        match (self.seq_at, seq) {
            (Some(at), Some(s)) => {
                w.write_from(bytes, 0, at);
                w.write_bits(u64::from(s), 16);
                w.write_from(bytes, at + 16, len - at - 16);
            }
            _ => w.write_from(bytes, 0, len),
        }
    }
}

/// Unreliable call bunches one after another, encoded once for every connection: each after a
/// call bunch, so each header is the same step from GUID 1 to itself, and a connection whose
/// open packet ends with a call bunch writes the next calls it gets of the run in one copy
/// ([`super::packet::PacketWriter::write_call_run`]).
#[derive(Debug, Default)]
pub struct CallRun {
    bits: BitWriter,
    /// Where each call's bunch starts in `bits`, and where the last one ends.
    at: Vec<usize>,
}

impl CallRun {
    /// Appends an unreliable call's bunch, as written after a call bunch.
    pub fn push(&mut self, call: &EncodedCall) {
        if self.at.is_empty() {
            self.at.push(0);
        }
        let export = super::open::EXPORT_GUID;
        super::packet::write_sized_header(&mut self.bits, export, export, None, false);
        call.write(&mut self.bits, None);
        self.at.push(self.bits.len_bits());
    }

    /// Calls in the run.
    pub fn len(&self) -> usize {
        self.at.len().saturating_sub(1)
    }

    /// Whether the run has no call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many of the `max` calls from `first` on (those the run has) fit in `room` bits, and
    /// their bits.
    pub fn fitting(&self, first: usize, max: usize, room: usize) -> (usize, usize) {
        let last = first.saturating_add(max).min(self.len());
        let Some(at) = self.at.get(first..=last).filter(|_| first < last) else { return (0, 0) };
        let n = at[1..].partition_point(|&end| end - at[0] <= room);
        (n, at[n] - at[0])
    }

    /// The run's bits, and where call `first` starts in them (its end past the last call).
    pub fn bits_from(&self, first: usize) -> (&[u8], usize) {
        (self.bits.bytes(), self.at.get(first).or(self.at.last()).copied().unwrap_or(0))
    }
}

/// Reads a call bunch's body after its call bit, to its end (the bunch's length).
pub fn read_rpc_body(r: &mut BitReader<'_>) -> Result<RpcBunch, WireError> {
    let seq = if r.read_bool()? { Some(r.read_bits(16)? as u16) } else { None };
    let target = NetGuid(r.read_packed()?);
    if target.is_null() {
        return Err(WireError::Invalid("call target"));
    }
    let bits = r.remaining();
    let call = r.read_to_bytes(bits)?;
    Ok(RpcBunch { target, seq, call, bits, reliable: seq.is_some() })
}

/// What [`ReliableWindow::accept`] did with a reliable call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Within the window: held (and delivered with every call before it, if it was the next).
    InOrder,
    /// Its very bits came under its number before: a resend, dropped.
    Stale,
    /// Other bits under a number held or delivered, a third call a number, or a number further
    /// than an honest sender goes: some call was forged, and this one was delivered too (in its
    /// turn while its number is held with room, at once otherwise).
    Conflict,
}

/// The receiving end of a reliable call stream (the client's of the server's calls, the
/// server's of a client's): numbers rebuilt from their low 16 bits, calls held until every
/// number before them arrived and then delivered in number order, each once — see
/// `client::rpcs` for the rules and why a call whose number came with other bits is delivered
/// too. Each held call carries a tag the receiver chose when it arrived (the actor it named).
#[derive(Debug)]
pub struct ReliableWindow<T> {
    /// The next number to deliver.
    expected: u32,
    /// Calls numbered past `expected`: the hash of their bits, the call, its tag.
    held: BTreeMap<u32, Vec<(u64, RpcBunch, T)>>,
    /// The hashes of the bits delivered under the last [`MAX_RELIABLE_RPCS`] numbers, by number
    /// modulo the window (two where a number came with two); allocated with the first delivery
    /// (16 KiB: a window made and dropped costs nothing).
    done: Vec<[u64; 2]>,
}

impl<T> Default for ReliableWindow<T> {
    fn default() -> Self {
        Self { expected: 0, held: BTreeMap::new(), done: Vec::new() }
    }
}

/// A call's hash: its target and bits (never 0, which marks an empty slot).
fn call_hash(call: &RpcBunch) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (call.target, &call.call, call.bits).hash(&mut h);
    h.finish() | 1
}

impl<T> ReliableWindow<T> {
    /// The next number to deliver.
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Calls held for their turn.
    pub fn held(&self) -> usize {
        self.held.values().map(Vec::len).sum()
    }

    /// Takes reliable call `call` (its `seq` set), tagged `tag`; `deliver` gets every call that
    /// becomes deliverable, in order.
    pub fn accept(&mut self, call: RpcBunch, tag: T, mut deliver: impl FnMut(RpcBunch, T)) -> Arrival {
        let low = call.seq.unwrap_or(0);
        let hash = call_hash(&call);
        let window = MAX_RELIABLE_RPCS;
        let ahead = u32::from(low.wrapping_sub(self.expected as u16));
        if ahead < window {
            let n = self.expected.wrapping_add(ahead);
            let entry = self.held.entry(n).or_default();
            if entry.iter().any(|&(h, _, _)| h == hash) {
                return Arrival::Stale;
            }
            if entry.len() >= 2 {
                // Forged twice over: delivered now rather than kept (memory stays bounded).
                deliver(call, tag);
                return Arrival::Conflict;
            }
            let arrival = if entry.is_empty() { Arrival::InOrder } else { Arrival::Conflict };
            entry.push((hash, call, tag));
            while let Some(calls) = self.held.remove(&self.expected) {
                if self.done.is_empty() {
                    self.done = vec![[0; 2]; window as usize];
                }
                self.done[(self.expected % window) as usize] = [calls[0].0, calls.get(1).map_or(0, |c| c.0)];
                self.expected = self.expected.wrapping_add(1);
                for (_, call, tag) in calls {
                    deliver(call, tag);
                }
            }
            return arrival;
        }
        let behind = u32::from((self.expected as u16).wrapping_sub(low));
        if behind <= window && !self.done.is_empty() {
            let slot = &mut self.done[(self.expected.wrapping_sub(behind) % window) as usize];
            if slot.contains(&hash) {
                // A resend of a call delivered (its acknowledgement was lost).
                return Arrival::Stale;
            }
            if slot[0] != 0 && slot[1] == 0 {
                slot[1] = hash;
            }
        }
        // Other bits under a delivered number, or further than an honest sender goes.
        deliver(call, tag);
        Arrival::Conflict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl, RpcDecl, StructType};

    fn class() -> ClassLayout {
        let hit = StructType::new("Hit").field("Damage", PropType::F32).field("Bone", PropType::U8);
        ClassBuilder::new("Pawn")
            .property(PropertyDecl::new("Hp", PropType::U16))
            .rpc(RpcDecl::multicast("Ping"))
            .rpc(
                RpcDecl::client("ClientHit")
                    .reliable()
                    .param(PropertyDecl::new("Hit", PropType::Struct(hit)))
                    .param(PropertyDecl::new("Ids", PropType::Array { element: Box::new(PropType::U16), max_len: 8 }))
                    .param(PropertyDecl::new("Who", PropType::Object)),
            )
            .build()
            .unwrap()
    }

    fn round_trip(c: &ClassLayout, index: usize, args: &[Value], seq: Option<u16>) -> (usize, Vec<Value>, usize) {
        let call = encode_call(c, index, args).unwrap();
        let mut w = BitWriter::new();
        write_rpc_body(&mut w, seq, NetGuid(42), &call);
        assert_eq!(w.len_bits(), rpc_body_bits(seq, NetGuid(42), &call));
        // Encoded once, it writes the same bits after the length, its number put in.
        let (mut once, mut plain) = (BitWriter::new(), BitWriter::new());
        once.write_bits(0b101, 3);
        EncodedCall::new(NetGuid(42), seq.is_some(), &call).write(&mut once, seq);
        plain.write_bits(0b101, 3);
        plain.write_packed(w.len_bits() as u64);
        plain.write_from(w.bytes(), 0, w.len_bits());
        assert_eq!((once.bytes(), once.len_bits()), (plain.bytes(), plain.len_bits()));
        let mut r = BitReader::with_len(w.bytes(), w.len_bits());
        assert!(r.read_bool().unwrap());
        let b = read_rpc_body(&mut r).unwrap();
        assert_eq!((b.target, b.seq, b.bits), (NetGuid(42), seq, call.len_bits()));
        let (i, back) = decode_call(c, &b).unwrap();
        (i, back, call.len_bits())
    }

    #[test]
    fn calls_round_trip_and_zero_parameters_cost_nothing() {
        let c = class();
        let (i, args, bits) = round_trip(&c, 0, &[], None);
        assert_eq!((i, args.len(), bits), (0, 0, 1), "an argument-less call is its index");
        let hit = Value::Struct(vec![Value::F32(12.5), Value::U8(3)]);
        let ids = Value::Array(vec![Value::U16(7), Value::U16(0), Value::U16(9)]);
        let who = Value::Object(crate::value::ObjectRef(8));
        let args = [hit.clone(), ids.clone(), who.clone()];
        let (i, back, _) = round_trip(&c, 1, &args, Some(65535));
        assert_eq!((i, back), (1, args.to_vec()));
        let zero = [
            Value::Struct(vec![Value::F32(0.0), Value::U8(0)]),
            Value::Array(vec![]),
            Value::Object(crate::value::ObjectRef(0)),
        ];
        let (_, back, bits) = round_trip(&c, 1, &zero, Some(1));
        assert_eq!((back, bits), (zero.to_vec(), 1), "zero arguments are left out");
    }

    #[test]
    fn a_window_costs_nothing_until_it_delivers() {
        // Connections and clients move their windows about with `mem::take`: a default window
        // must not allocate (its 16 KiB of hashes come with the first delivery).
        let mut w: ReliableWindow<()> = ReliableWindow::default();
        assert_eq!(w.done.capacity(), 0);
        let call = RpcBunch { target: NetGuid(2), seq: Some(0), call: vec![1], bits: 1, reliable: true };
        let mut n = 0;
        assert_eq!(w.accept(call.clone(), (), |_, _| n += 1), Arrival::InOrder);
        assert_eq!((n, w.done.len(), w.expected()), (1, MAX_RELIABLE_RPCS as usize, 1));
        assert_eq!(w.accept(call, (), |_, _| n += 1), Arrival::Stale);
    }

    #[test]
    fn bad_arguments_are_refused_and_bad_bits_fail_alone() {
        let c = class();
        assert_eq!(encode_call(&c, 1, &[]).unwrap_err(), ValueError::ArgCount { expected: 3, got: 0 });
        assert!(encode_call(&c, 1, &[Value::U8(1), Value::Array(vec![]), Value::Object(crate::value::ObjectRef(0))])
            .is_err());
        assert!(encode_call(&c, 2, &[]).is_err());
        // Index 1 of 2, then a truncated record.
        let b = RpcBunch { target: NetGuid(2), seq: None, call: vec![0b1111_1111], bits: 5, reliable: false };
        assert!(decode_call(&c, &b).is_err());
        // An index past the class's calls (a class of 3 calls reads 2 bits).
        let three = ClassBuilder::new("T")
            .rpc(RpcDecl::multicast("A"))
            .rpc(RpcDecl::multicast("B"))
            .rpc(RpcDecl::multicast("C"))
            .build()
            .unwrap();
        let b = RpcBunch { target: NetGuid(2), seq: None, call: vec![0b11], bits: 2, reliable: false };
        assert_eq!(decode_call(&three, &b).unwrap_err(), WireError::Invalid("call index"));
        let mut r = BitReader::new(&[0, 0, 0, 0]);
        assert_eq!(read_rpc_body(&mut r).unwrap_err(), WireError::Invalid("call target"));
    }
}
