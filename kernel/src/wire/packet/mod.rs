//! Writing packets: the grammar of [`super::bunch`] under an MTU budget.
//!
//! A connection's packets for one frame are written back to back, byte-aligned, into one
//! [`BitWriter`] the caller owns; a [`PacketWriter`] keeps track of the packet being written, of
//! the GUID of its last bunch (each bunch's GUID is a step from it: see [`guid_delta`]) and of the
//! bunch being built. A bunch's body is built apart and copied in when the bunch ends, because its
//! header carries the body's length (a sized bunch) or its record count (a plain one; see
//! [`super::bunch`] for the two forms). Every `*_fits` question answers for the packet as it
//! would be *finished*: the header, the body-length field and the packet terminator are counted.
//!
//! ```text
//! begin_packet(seq)
//!   write_close(guid, reason) | write_export(guid, path) | write_call(call, seq)
//!   | write_plain(guid, pre-encoded count and records)            the shared arena's copy
//!   | write_open_bunch(guid, open and role, records)             an open encoded once a frame
//!   | begin_bunch(guid, open) | begin_plain(guid, count bits)
//!       { body().write… while body_fits(bits) } end_bunch(records)
//! finish_packet() | finish_packet_continued() → end byte
//! ```

use super::open::{close_reason_bits, max_open_bits, write_close_reason, CloseReason, EncodedOpen, OpenHeader};
use super::BitWriter;
use crate::ids::{NetGuid, Seq};

/// Largest MTU a driver accepts, and the largest packet a client decodes (UE's packets are at
/// most 1024 bytes; 8 KiB leaves room for jumbo frames and bounds what one decode allocates).
pub const MAX_MTU: usize = 8 * 1024;

/// Smallest MTU a driver accepts.
pub const MIN_MTU: usize = 512;

/// Bits of UE's packed encoding of `v` (7 bits per byte).
pub fn packed_bits(v: u64) -> usize {
    let significant = 64 - v.leading_zeros() as usize;
    8 * significant.div_ceil(7).max(1)
}

/// A bunch's GUID on the wire: its difference from the GUID of the bunch before it in the packet
/// (0 for the first), wrapping, zigzag-mapped so a small step either way is a small number.
pub fn guid_delta(prev: NetGuid, guid: NetGuid) -> u64 {
    let d = guid.0.wrapping_sub(prev.0) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

/// The GUID a [`guid_delta`] `v` names after `prev` (every `v` names one: the mapping is a
/// bijection on 64 bits, so a decoder has nothing to refuse here).
pub fn guid_from_delta(prev: NetGuid, v: u64) -> NetGuid {
    let d = (v >> 1) as i64 ^ -((v & 1) as i64);
    NetGuid(prev.0.wrapping_add(d as u64))
}

/// Bits of a bunch's presence bit, GUID (after `prev`) and form bit: what every bunch starts with.
pub fn bunch_lead_bits(prev: NetGuid, guid: NetGuid) -> usize {
    1 + packed_bits(guid_delta(prev, guid)) + 1
}

/// Bits a sized bunch's header takes before its body length: its lead, open bit and open
/// ([`super::open`]), close bit.
pub fn bunch_header_bits(prev: NetGuid, guid: NetGuid, open: Option<&EncodedOpen>) -> usize {
    bunch_lead_bits(prev, guid) + 1 + open.map_or(0, EncodedOpen::bits) + 1
}

/// Bits a close bunch takes.
pub fn close_bits(prev: NetGuid, guid: NetGuid, reason: CloseReason, path: Option<&str>) -> usize {
    bunch_header_bits(prev, guid, None) + close_reason_bits(guid, reason, path)
}

/// Bits a bunch body (its records) may take in an otherwise empty packet of `mtu` bytes, whatever
/// the packet's sequence number, the actor's GUID and class, and with the bunch carrying an open:
/// every record a class may send must fit this, or it could never be sent.
pub fn max_body_bits(mtu: usize) -> usize {
    let worst = NetGuid(1 << 63);
    let header = packed_bits(u32::MAX as u64) + bunch_header_bits(NetGuid(0), worst, None) + max_open_bits(u32::MAX);
    let length = packed_bits((MAX_MTU * 8) as u64);
    (mtu * 8).saturating_sub(header + PACKET_END_BITS + length)
}

/// Bits of the packet terminator and its continuation flag.
const PACKET_END_BITS: usize = 2;

/// Writes a packet header.
pub fn begin_packet(w: &mut BitWriter, seq: Seq) {
    w.write_packed(seq.0 as u64);
}

/// Ends a packet: no more bunches, and its last bunch is whole.
pub fn end_packet(w: &mut BitWriter) {
    end_packet_continued(w, false);
}

/// Ends a packet: no more bunches; `continues` says its last bunch goes on in the first bunch
/// of the next packet (an actor split across packets: see [`super::bunch`]).
pub fn end_packet_continued(w: &mut BitWriter, continues: bool) {
    w.write_bool(false);
    w.write_bool(continues);
}

/// Writes one whole sized bunch after the bunch for `prev` (or first in its packet, `prev` 0):
/// header, body length and `body` (its records).
pub fn write_bunch_after(w: &mut BitWriter, prev: NetGuid, guid: NetGuid, open: Option<&OpenHeader>, body: &BitWriter) {
    write_bunch_encoded(w, prev, guid, open.map(OpenHeader::encode).as_ref(), body);
}

/// Writes one whole sized bunch as the first of its packet (tests and tools that build packets by
/// hand write one bunch per packet, or use [`write_bunch_after`]).
pub fn write_bunch(w: &mut BitWriter, guid: NetGuid, open: Option<&OpenHeader>, body: &BitWriter) {
    write_bunch_after(w, NetGuid(0), guid, open, body);
}

/// [`write_bunch_after`] with the open already encoded.
pub fn write_bunch_encoded(
    w: &mut BitWriter,
    prev: NetGuid,
    guid: NetGuid,
    open: Option<&EncodedOpen>,
    body: &BitWriter,
) {
    let open = open.map(|o| (o, o.autonomous()));
    write_sized_bunch(w, prev, guid, open, (body.bytes(), body.len_bits()));
}

/// A whole sized bunch: its header (the open, if any, giving the client the role paired with
/// it), the body's length and `bits` of `body` from bit 0.
fn write_sized_bunch(
    w: &mut BitWriter,
    prev: NetGuid,
    guid: NetGuid,
    open: Option<(&EncodedOpen, bool)>,
    (body, bits): (&[u8], usize),
) {
    write_sized_header(w, prev, guid, open, false);
    w.write_packed(bits as u64);
    w.write_from(body, 0, bits);
}

/// Writes a plain bunch: an update of a channel whose open the client acknowledged. `body` is
/// its record count and records ([`super::bunch::write_record_count`]); it has no length, since
/// the client has the actor and reads exactly its records.
pub fn write_plain(w: &mut BitWriter, prev: NetGuid, guid: NetGuid, body: &[u8], from: usize, bits: usize) {
    write_lead(w, guid_delta(prev, guid), true);
    w.write_from(body, from, bits);
}

/// Writes what every bunch starts with: its presence bit, GUID step and form bit (`plain`) — in
/// one write when the step takes one or two packed bytes (below 2¹⁴), as it does for nearly every
/// bunch.
fn write_lead(w: &mut BitWriter, delta: u64, plain: bool) {
    let form = u64::from(plain);
    if delta < 1 << 7 {
        w.write_bits(1 | delta << 2 | form << 9, 10);
    } else if delta < 1 << 14 {
        let packed = (delta & 0x7f) << 1 | 1 | (delta >> 7) << 9;
        w.write_bits(1 | packed << 1 | form << 17, 18);
    } else {
        w.write_bool(true);
        w.write_packed(delta);
        w.write_bool(plain);
    }
}

/// Writes a close bunch of a destroyed actor (it has no body), first in its packet.
pub fn write_close(w: &mut BitWriter, guid: NetGuid) {
    write_close_for(w, guid, CloseReason::Destroyed, None);
}

/// Writes a close bunch, first in its packet, with its reason (and a destroyed static actor's
/// path).
pub fn write_close_for(w: &mut BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
    write_close_after(w, NetGuid(0), guid, reason, path);
}

/// [`write_close_for`] after the bunch for `prev`.
pub fn write_close_after(w: &mut BitWriter, prev: NetGuid, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
    write_sized_header(w, prev, guid, None, true);
    write_close_reason(w, guid, reason, path);
}

/// A sized bunch's header after the bunch for `prev`: the open (if any) giving the client the
/// role paired with it, and whether the bunch closes the channel.
pub(super) fn write_sized_header(
    w: &mut BitWriter,
    prev: NetGuid,
    guid: NetGuid,
    open: Option<(&EncodedOpen, bool)>,
    close: bool,
) {
    write_lead(w, guid_delta(prev, guid), false);
    w.write_bool(open.is_some());
    if let Some((open, autonomous)) = open {
        open.write_as(w, autonomous);
    }
    w.write_bool(close);
}

/// How the bunch being built ends its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// With a length (it may open; any receiver can step over it).
    Sized,
    /// With a record count of this many bits in front ([`super::bunch::handle_bits`]).
    Plain(u32),
}

/// The packet and bunch being written for one connection.
#[derive(Debug)]
pub struct PacketWriter {
    mtu_bits: usize,
    /// Bit where the open packet starts in the caller's writer.
    start: usize,
    open_packet: bool,
    bunches: u32,
    /// GUID of the last bunch written in the open packet (0 before the first): the next one's
    /// GUID is written as a step from it.
    prev: NetGuid,
    body: BitWriter,
    /// The bunch being built: its GUID, the bits of its header and how its body ends.
    header: Option<(NetGuid, usize, Form)>,
    /// The open of the bunch being built (`has_open`), its buffer reused.
    open: EncodedOpen,
    has_open: bool,
}

impl PacketWriter {
    /// A writer for packets of at most `mtu` bytes (clamped to `MIN_MTU..=MAX_MTU`).
    pub fn new(mtu: usize) -> Self {
        Self {
            mtu_bits: mtu.clamp(MIN_MTU, MAX_MTU) * 8,
            start: 0,
            open_packet: false,
            bunches: 0,
            prev: NetGuid(0),
            body: BitWriter::new(),
            header: None,
            open: EncodedOpen::default(),
            has_open: false,
        }
    }

    /// Starts a packet at the end of `out`, which must be byte-aligned.
    pub fn begin_packet(&mut self, out: &mut BitWriter, seq: Seq) {
        debug_assert!(out.len_bits().is_multiple_of(8) && !self.open_packet);
        self.start = out.len_bits();
        self.open_packet = true;
        self.bunches = 0;
        self.prev = NetGuid(0);
        begin_packet(out, seq);
    }

    /// Whether a packet is open.
    pub fn packet_open(&self) -> bool {
        self.open_packet
    }

    /// Bunches in the open packet (a bunch being built counts).
    pub fn bunches(&self) -> u32 {
        self.bunches + self.header.is_some() as u32
    }

    /// Bits the open packet would take, terminated, with `extra` more bits after the bunch
    /// being built and `extra_body` more bits in its body.
    fn total(&self, out: &BitWriter, extra: usize, extra_body: usize) -> usize {
        let mut bits = out.len_bits() - self.start + extra + PACKET_END_BITS;
        if let Some((_, header, form)) = self.header {
            let body = self.body.len_bits() + extra_body;
            bits += header + body;
            if form == Form::Sized {
                bits += packed_bits(body as u64);
            }
        }
        bits
    }

    /// The GUID the next bunch steps from: the bunch being built's, or the last one written.
    fn last_guid(&self) -> NetGuid {
        self.header.map_or(self.prev, |h| h.0)
    }

    /// Whether a plain bunch for `guid` whose body (record count and records) takes `bits`
    /// fits an otherwise empty packet (whatever its sequence number).
    pub fn plain_fits_empty(&self, guid: NetGuid, bits: usize) -> bool {
        packed_bits(u32::MAX as u64) + bunch_lead_bits(NetGuid(0), guid) + bits + PACKET_END_BITS <= self.mtu_bits
    }

    /// Whether a plain bunch for `guid` whose body (record count and records) takes `bits` fits
    /// the open packet.
    pub fn plain_fits(&self, out: &BitWriter, guid: NetGuid, bits: usize) -> bool {
        self.total(out, bunch_lead_bits(self.last_guid(), guid) + bits, 0) <= self.mtu_bits
    }

    /// Writes a whole plain bunch for `guid` whose body (record count and records) is `bits`
    /// bits of `src` from bit `from`.
    pub fn write_plain(&mut self, out: &mut BitWriter, guid: NetGuid, src: &[u8], from: usize, bits: usize) {
        debug_assert!(self.header.is_none());
        write_plain(out, self.prev, guid, src, from, bits);
        self.prev = guid;
        self.bunches += 1;
    }

    /// Whether a close bunch for `guid` fits the open packet.
    pub fn close_fits(&self, out: &BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) -> bool {
        self.total(out, close_bits(self.last_guid(), guid, reason, path), 0) <= self.mtu_bits
    }

    /// Writes a close bunch.
    pub fn write_close(&mut self, out: &mut BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
        debug_assert!(self.header.is_none());
        write_close_after(out, self.prev, guid, reason, path);
        self.prev = guid;
        self.bunches += 1;
    }

    /// Whether an export of static object `guid` at `path` fits the open packet.
    pub fn export_fits(&self, out: &BitWriter, guid: NetGuid, path: &str) -> bool {
        let mut body = BitWriter::new();
        super::open::write_export_body(&mut body, guid, path);
        self.bunch_fits(out, super::open::EXPORT_GUID, None, body.len_bits())
    }

    /// Writes an export bunch.
    pub fn write_export(&mut self, out: &mut BitWriter, guid: NetGuid, path: &str) {
        debug_assert!(self.header.is_none());
        let mut body = BitWriter::new();
        super::open::write_export_body(&mut body, guid, path);
        write_bunch_after(out, self.prev, super::open::EXPORT_GUID, None, &body);
        self.prev = super::open::EXPORT_GUID;
        self.bunches += 1;
    }

    /// Whether a call bunch ([`super::rpc`]) fits the open packet.
    pub fn call_fits(&self, out: &BitWriter, call: &super::rpc::EncodedCall) -> bool {
        self.bunch_fits(out, super::open::EXPORT_GUID, None, call.body_bits())
    }

    /// Whether a call bunch fits an otherwise empty packet (whatever its sequence number).
    pub fn rpc_fits_empty(&self, seq: Option<u16>, target: NetGuid, call: &BitWriter) -> bool {
        self.bunch_fits_empty(super::open::EXPORT_GUID, None, super::rpc::rpc_body_bits(seq, target, call))
    }

    /// Whether an acknowledgement of the client's reliable calls ([`super::rpc`]) fits the open
    /// packet.
    pub fn calls_ack_fits(&self, out: &BitWriter) -> bool {
        self.bunch_fits(out, super::open::EXPORT_GUID, None, super::rpc::CALLS_ACK_BITS)
    }

    /// Writes an acknowledgement of the client's reliable calls: `next`, the low 16 bits of the
    /// number of the first call not received yet.
    pub fn write_calls_ack(&mut self, out: &mut BitWriter, next: u16) {
        debug_assert!(self.header.is_none());
        let mut body = BitWriter::new();
        super::rpc::write_calls_ack_body(&mut body, next);
        write_bunch_after(out, self.prev, super::open::EXPORT_GUID, None, &body);
        self.prev = super::open::EXPORT_GUID;
        self.bunches += 1;
    }

    /// Writes a call bunch: its header, then its length and body as encoded once for every
    /// connection (`seq`: a reliable call's number).
    pub fn write_call(&mut self, out: &mut BitWriter, call: &super::rpc::EncodedCall, seq: Option<u16>) {
        debug_assert!(self.header.is_none());
        write_sized_header(out, self.prev, super::open::EXPORT_GUID, None, false);
        call.write(out, seq);
        self.prev = super::open::EXPORT_GUID;
        self.bunches += 1;
    }

    /// Writes as many of calls `first .. first + max` of `run` (those it has) as fit the open
    /// packet, in one copy, when its last bunch is one of GUID 1 — a call bunch, a calls
    /// acknowledgement or an export: the step to each call's header is then the run's; returns
    /// how many it wrote — those that [`Self::call_fits`] and [`Self::write_call`] one by one
    /// would have.
    pub fn write_call_run(
        &mut self,
        out: &mut BitWriter,
        run: &super::rpc::CallRun,
        first: usize,
        max: usize,
    ) -> usize {
        debug_assert!(self.header.is_none());
        if !self.open_packet || self.prev != super::open::EXPORT_GUID || max == 0 {
            return 0;
        }
        let room = self.mtu_bits.saturating_sub(self.total(out, 0, 0));
        let (n, bits) = run.fitting(first, max, room);
        let (src, from) = run.bits_from(first);
        out.write_from(src, from, bits);
        self.bunches += n as u32;
        n
    }

    /// Whether a sized bunch for `guid` with `body_bits` of records fits an otherwise empty
    /// packet (whatever its sequence number).
    pub fn bunch_fits_empty(&self, guid: NetGuid, open: Option<&EncodedOpen>, body_bits: usize) -> bool {
        let header = bunch_header_bits(NetGuid(0), guid, open);
        packed_bits(u32::MAX as u64) + header + packed_bits(body_bits as u64) + body_bits + PACKET_END_BITS
            <= self.mtu_bits
    }

    /// Whether a sized bunch for `guid` with `body_bits` of records fits the open packet.
    pub fn bunch_fits(&self, out: &BitWriter, guid: NetGuid, open: Option<&EncodedOpen>, body_bits: usize) -> bool {
        let header = bunch_header_bits(self.last_guid(), guid, open);
        self.total(out, header + packed_bits(body_bits as u64) + body_bits, 0) <= self.mtu_bits
    }

    /// Starts building a sized bunch for `guid` (one that opens, or a fast array's); its body
    /// goes to [`Self::body`]. An actor's open gives the client the role `autonomous` (one
    /// encoding of the open serves every connection, each with its own role).
    pub fn begin_bunch(&mut self, guid: NetGuid, open: Option<&EncodedOpen>, autonomous: bool) {
        debug_assert!(self.header.is_none());
        self.body.clear();
        self.header = Some((guid, bunch_header_bits(self.prev, guid, open), Form::Sized));
        self.has_open = open.is_some();
        if let Some(open) = open {
            self.open.set(open);
            self.open.set_autonomous(autonomous);
        }
    }

    /// Writes a whole sized bunch for `guid` that opens with `open`, giving the client the role
    /// `autonomous`, its body `bits` of `body` from bit 0: the bits [`Self::begin_bunch`], a body
    /// of those bits and [`Self::end_bunch`] write, without staging the body (an open copied
    /// whole from the frame's encoding of it, `net::opens`).
    pub fn write_open_bunch(
        &mut self,
        out: &mut BitWriter,
        guid: NetGuid,
        (open, autonomous): (&EncodedOpen, bool),
        body: &[u8],
        bits: usize,
    ) {
        debug_assert!(self.header.is_none());
        write_sized_bunch(out, self.prev, guid, Some((open, autonomous)), (body, bits));
        self.prev = guid;
        self.bunches += 1;
    }

    /// Starts building a plain bunch for `guid`, whose class writes handles (and its record
    /// count) in `count_bits` bits; its records go to [`Self::body`], their number to
    /// [`Self::end_bunch`].
    pub fn begin_plain(&mut self, guid: NetGuid, count_bits: u32) {
        debug_assert!(self.header.is_none());
        self.body.clear();
        self.header = Some((guid, bunch_lead_bits(self.prev, guid) + count_bits as usize, Form::Plain(count_bits)));
        self.has_open = false;
    }

    /// The body of the bunch being built.
    pub fn body(&mut self) -> &mut BitWriter {
        &mut self.body
    }

    /// Bits in the body of the bunch being built.
    pub fn body_bits(&self) -> usize {
        self.body.len_bits()
    }

    /// Whether `bits` more record bits fit the bunch being built.
    pub fn body_fits(&self, out: &BitWriter, bits: usize) -> bool {
        self.total(out, 0, bits) <= self.mtu_bits
    }

    /// Body bits the bunch being built may still take in the open packet (a sized bunch's length
    /// field sized for the whole packet).
    pub fn body_room(&self, out: &BitWriter) -> usize {
        let mut used = self.total(out, 0, 0);
        if let Some((_, _, Form::Sized)) = self.header {
            used = used - packed_bits(self.body.len_bits() as u64) + packed_bits(self.mtu_bits as u64);
        }
        self.mtu_bits.saturating_sub(used)
    }

    /// Ends the bunch being built, which carries `records` records (a plain bunch writes their
    /// number; a sized one its length): writes its header and body into the packet. A plain
    /// bunch without records is dropped.
    pub fn end_bunch(&mut self, out: &mut BitWriter, records: u32) {
        let Some((guid, _, form)) = self.header.take() else { return };
        match form {
            Form::Sized => {
                let open = std::mem::take(&mut self.has_open).then_some(&self.open);
                write_bunch_encoded(out, self.prev, guid, open, &self.body);
            }
            Form::Plain(_) if records == 0 => return,
            Form::Plain(count_bits) => {
                write_lead(out, guid_delta(self.prev, guid), true);
                super::bunch::write_record_count(out, count_bits, records);
                out.write_from(self.body.bytes(), 0, self.body.len_bits());
            }
        }
        self.prev = guid;
        self.bunches += 1;
    }

    /// Drops the bunch being built (nothing of it reaches the packet).
    pub fn abandon_bunch(&mut self) {
        self.header = None;
        self.has_open = false;
    }

    /// Ends the open packet and pads it to a byte; returns the byte in `out` where it ends. A
    /// bunch still being built is dropped: its caller ends it, knowing what it carries.
    pub fn finish_packet(&mut self, out: &mut BitWriter) -> usize {
        self.finish_packet_continued(out, false)
    }

    /// [`Self::finish_packet`], saying whether the packet's last bunch goes on in the first
    /// bunch of the next packet (the caller writes that packet next).
    pub fn finish_packet_continued(&mut self, out: &mut BitWriter, continues: bool) -> usize {
        debug_assert!(self.header.is_none(), "a packet finished with a bunch being built");
        self.abandon_bunch();
        end_packet_continued(out, continues);
        out.pad_to_byte();
        self.open_packet = false;
        debug_assert!(out.len_bits() - self.start <= self.mtu_bits);
        out.len_bits() / 8
    }

    /// Removes the open packet from `out` as if it was never begun.
    pub fn abandon_packet(&mut self, out: &mut BitWriter) {
        self.header = None;
        out.truncate(self.start);
        self.open_packet = false;
    }
}

#[cfg(test)]
mod tests;
