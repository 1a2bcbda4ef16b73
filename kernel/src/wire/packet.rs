//! Writing packets: the grammar of [`super::bunch`] under an MTU budget.
//!
//! A connection's packets for one frame are written back to back, byte-aligned, into one
//! [`BitWriter`] the caller owns; a [`PacketWriter`] keeps track of the packet being written and
//! of the bunch being built inside it. A bunch's body is built apart and copied in when the bunch
//! ends, because its header carries the body's length (so a receiver can step over a bunch it
//! cannot apply). Every `*_fits` question answers for the packet as it would be *finished*: the
//! body-length field and the packet terminator are counted (a body has no terminator of its own:
//! its length says where it ends).
//!
//! ```text
//! begin_packet(seq)
//!   write_close(guid, reason) | write_bunch(pre-encoded span)
//!   | begin_bunch(guid, open) { body().write… while body_fits(bits) } end_bunch()
//! finish_packet() → end byte
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

/// Bits a bunch header takes before its body length: presence bit, GUID, open bit and open
/// ([`super::open`]), close bit.
pub fn bunch_header_bits(guid: NetGuid, open: Option<&EncodedOpen>) -> usize {
    1 + packed_bits(guid.0) + 1 + open.map_or(0, EncodedOpen::bits) + 1
}

/// Bits a close bunch takes.
pub fn close_bits(guid: NetGuid, reason: CloseReason, path: Option<&str>) -> usize {
    1 + packed_bits(guid.0) + 1 + 1 + close_reason_bits(guid, reason, path)
}

/// Bits a bunch body (its records) may take in an otherwise empty packet of `mtu` bytes, whatever
/// the packet's sequence number, the actor's GUID and class, and with the bunch carrying an open:
/// every record a class may send must fit this, or it could never be sent.
pub fn max_body_bits(mtu: usize) -> usize {
    let header = packed_bits(u32::MAX as u64) + bunch_header_bits(NetGuid(u64::MAX), None) + max_open_bits(u32::MAX);
    let length = packed_bits((MAX_MTU * 8) as u64);
    (mtu * 8).saturating_sub(header + PACKET_END_BITS + length + BODY_END_BITS)
}

/// Bits of the packet terminator.
const PACKET_END_BITS: usize = 1;
/// Bits after a body's records: none, the body length says where they end (a terminator of 8
/// bits per bunch was dropped for it; see `wire::bunch`).
const BODY_END_BITS: usize = 0;

/// Writes a packet header.
pub fn begin_packet(w: &mut BitWriter, seq: Seq) {
    w.write_packed(seq.0 as u64);
}

/// Ends a packet: no more bunches.
pub fn end_packet(w: &mut BitWriter) {
    w.write_bool(false);
}

/// Writes one whole bunch: header, body length and `body` (its records).
pub fn write_bunch(w: &mut BitWriter, guid: NetGuid, open: Option<&OpenHeader>, body: &BitWriter) {
    write_bunch_encoded(w, guid, open.map(OpenHeader::encode).as_ref(), body);
}

/// [`write_bunch`] with the open already encoded.
pub fn write_bunch_encoded(w: &mut BitWriter, guid: NetGuid, open: Option<&EncodedOpen>, body: &BitWriter) {
    write_bunch_header(w, guid, open, false);
    w.write_packed((body.len_bits() + BODY_END_BITS) as u64);
    w.write_from(body.bytes(), 0, body.len_bits());
}

/// Writes a close bunch of a destroyed actor (it has no body).
pub fn write_close(w: &mut BitWriter, guid: NetGuid) {
    write_close_for(w, guid, CloseReason::Destroyed, None);
}

/// Writes a close bunch with its reason (and a destroyed static actor's path).
pub fn write_close_for(w: &mut BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
    write_bunch_header(w, guid, None, true);
    write_close_reason(w, guid, reason, path);
}

fn write_bunch_header(w: &mut BitWriter, guid: NetGuid, open: Option<&EncodedOpen>, close: bool) {
    w.write_bool(true);
    w.write_packed(guid.0);
    w.write_bool(open.is_some());
    if let Some(open) = open {
        open.write(w);
    }
    w.write_bool(close);
}

/// The packet and bunch being written for one connection.
#[derive(Debug)]
pub struct PacketWriter {
    mtu_bits: usize,
    /// Bit where the open packet starts in the caller's writer.
    start: usize,
    open_packet: bool,
    bunches: u32,
    body: BitWriter,
    /// The bunch being built: its GUID and the bits of its header.
    header: Option<(NetGuid, usize)>,
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
        if let Some((_, header)) = self.header {
            let body = self.body.len_bits() + extra_body + BODY_END_BITS;
            bits += header + packed_bits(body as u64) + body;
        }
        bits
    }

    /// Whether a whole bunch of `bits` bits fits an otherwise empty packet (whatever its
    /// sequence number).
    pub fn span_fits_empty(&self, bits: usize) -> bool {
        packed_bits(u32::MAX as u64) + bits + PACKET_END_BITS <= self.mtu_bits
    }

    /// Whether a whole bunch of `bits` bits (as copied by [`Self::write_span`]) fits the open packet.
    pub fn span_fits(&self, out: &BitWriter, bits: usize) -> bool {
        self.total(out, bits, 0) <= self.mtu_bits
    }

    /// Copies a whole pre-encoded bunch (`bits` bits of `src` from bit `from`) into the packet.
    pub fn write_span(&mut self, out: &mut BitWriter, src: &[u8], from: usize, bits: usize) {
        debug_assert!(self.header.is_none());
        out.write_from(src, from, bits);
        self.bunches += 1;
    }

    /// Whether a close bunch for `guid` fits the open packet.
    pub fn close_fits(&self, out: &BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) -> bool {
        self.total(out, close_bits(guid, reason, path), 0) <= self.mtu_bits
    }

    /// Writes a close bunch.
    pub fn write_close(&mut self, out: &mut BitWriter, guid: NetGuid, reason: CloseReason, path: Option<&str>) {
        debug_assert!(self.header.is_none());
        write_close_for(out, guid, reason, path);
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
        write_bunch(out, super::open::EXPORT_GUID, None, &body);
        self.bunches += 1;
    }

    /// Whether a bunch for `guid` with `body_bits` of records fits the open packet.
    pub fn bunch_fits(&self, out: &BitWriter, guid: NetGuid, open: Option<&EncodedOpen>, body_bits: usize) -> bool {
        let body = body_bits + BODY_END_BITS;
        self.total(out, bunch_header_bits(guid, open) + packed_bits(body as u64) + body, 0) <= self.mtu_bits
    }

    /// Starts building a bunch for `guid`; its records go to [`Self::body`].
    pub fn begin_bunch(&mut self, guid: NetGuid, open: Option<&EncodedOpen>) {
        debug_assert!(self.header.is_none());
        self.body.clear();
        self.header = Some((guid, bunch_header_bits(guid, open)));
        self.has_open = open.is_some();
        if let Some(open) = open {
            self.open.set(open);
        }
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

    /// Body bits the bunch being built may still take in the open packet (its length field
    /// sized for the whole packet).
    pub fn body_room(&self, out: &BitWriter) -> usize {
        let length = packed_bits((self.mtu_bits) as u64);
        let used = self.total(out, 0, 0) - packed_bits((self.body.len_bits() + BODY_END_BITS) as u64) + length;
        self.mtu_bits.saturating_sub(used)
    }

    /// Ends the bunch being built: writes its header, length and body into the packet.
    pub fn end_bunch(&mut self, out: &mut BitWriter) {
        if let Some((guid, _)) = self.header.take() {
            let open = std::mem::take(&mut self.has_open).then_some(&self.open);
            write_bunch_encoded(out, guid, open, &self.body);
            self.bunches += 1;
        }
    }

    /// Drops the bunch being built (nothing of it reaches the packet).
    pub fn abandon_bunch(&mut self) {
        self.header = None;
        self.has_open = false;
    }

    /// Ends the open packet (ending its bunch first) and pads it to a byte; returns the byte in
    /// `out` where it ends.
    pub fn finish_packet(&mut self, out: &mut BitWriter) -> usize {
        self.end_bunch(out);
        end_packet(out);
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
mod tests {
    use super::*;

    #[test]
    fn packed_bits_match_the_writer() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut w = BitWriter::new();
            w.write_packed(v);
            assert_eq!(packed_bits(v), w.len_bits(), "{v}");
        }
    }

    #[test]
    fn a_packet_filled_to_the_brim_stays_within_the_mtu() {
        for mtu in [MIN_MTU, 1024, 1400] {
            let mut out = BitWriter::new();
            let mut p = PacketWriter::new(mtu);
            p.begin_packet(&mut out, Seq(70_000));
            let mut guid = NetGuid(2);
            loop {
                let open = OpenHeader::spawn(3).encode();
                if !p.bunch_fits(&out, guid, Some(&open), 13) {
                    break;
                }
                p.begin_bunch(guid, Some(&open));
                p.body().write_bits(0x1fff, 13);
                while p.body_fits(&out, 13) {
                    p.body().write_bits(0x1fff, 13);
                }
                p.end_bunch(&mut out);
                guid = guid.next_dynamic();
            }
            let end = p.finish_packet(&mut out);
            assert!(end <= mtu, "{end} bytes in a {mtu}-byte packet");
            assert!(end * 8 + 13 + 64 > mtu * 8, "the packet is nearly full: {end} of {mtu}");
        }
    }

    #[test]
    fn fits_answers_are_exact_at_the_mtu() {
        for mtu in [0, MIN_MTU, 1400, MAX_MTU, 100_000] {
            let mtu_bits = mtu.clamp(MIN_MTU, MAX_MTU) * 8;
            let mut out = BitWriter::new();
            let mut p = PacketWriter::new(mtu);
            p.begin_packet(&mut out, Seq(300));
            // The header (2 bytes) and the packet terminator (1 bit) are counted.
            let room = mtu_bits - 16 - 1;
            assert!(p.span_fits(&out, room), "mtu {mtu}");
            assert!(!p.span_fits(&out, room + 1), "mtu {mtu}");
            // In a bunch: its header and the body-length field count too.
            p.begin_bunch(NetGuid(2), None);
            let header = bunch_header_bits(NetGuid(2), None);
            let body = |bits: usize| bits + BODY_END_BITS;
            let fits = (0..room).rev().find(|&b| header + packed_bits(body(b) as u64) + body(b) <= room).unwrap();
            assert!(p.body_fits(&out, fits), "mtu {mtu}");
            assert!(!p.body_fits(&out, fits + 1), "mtu {mtu}");
        }
    }
}
