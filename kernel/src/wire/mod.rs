//! The wire format: a bit writer and reader, and UE's encodings of every leaf kind.
//!
//! ```text
//! bool            1 bit
//! u8/i8/enum      8 bits / the enum's bit width
//! u16..i64, f32,  raw little-endian bits of the width
//!   f64
//! packed int      7-bit groups, low bit of each byte = "more follows" (UE SerializeIntPacked)
//! ranged int      ceil(log2(max)) bits for a value < max (UE SerializeInt)
//! vector Q1/10/100  bits = clamp(ceil_log2(1 + max|round(c × scale)|), 1, MAX) − 1 as a ranged int
//!                 < MAX, then each component + (1 << (bits+1)) as a ranged int < 1 << (bits+2)
//!                 (MAX = 20 / 24 / 30 bits); a component out of range is clamped
//! vector Normal   each component as 16-bit fixed point in [−1, 1]
//! vector None     three raw f32
//! rotator         per axis: 1 bit "non-zero", then the angle as 16 bits of a turn
//! name            packed int (a name-table index)
//! object          NetGUID as a packed int: 0 null, odd static, even dynamic
//! opaque          its bytes
//! ```
//!
//! Values travel in their byte form ([`crate::value`]): the encoder reads a leaf's bytes, the
//! decoder writes them. Decoding never panics: running out of bits is [`WireError::Truncated`].

use crate::schema::{LeafKind, VectorQuant};
use std::fmt;

pub mod bunch;
pub mod feedback;
pub mod open;
pub mod packet;

/// Why bits could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The input ended inside a value.
    Truncated,
    /// A packed int ran longer than its type allows.
    PackedOverflow,
    /// A ranged int was not below its maximum.
    OutOfRange {
        /// The value read.
        value: u64,
        /// The exclusive maximum.
        max: u64,
    },
    /// A value that no encoder produces (the text says which).
    Invalid(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => write!(f, "input ended inside a value"),
            WireError::PackedOverflow => write!(f, "packed integer longer than 64 bits"),
            WireError::OutOfRange { value, max } => write!(f, "value {value} not below its maximum {max}"),
            WireError::Invalid(what) => write!(f, "invalid {what}"),
        }
    }
}

impl std::error::Error for WireError {}

/// Appends bits, least significant first, into a byte buffer.
///
/// Writes are word-at-a-time: the buffer keeps 8 zero bytes of slack past the last written bit,
/// so up to 56 bits are OR-ed in with one unaligned 64-bit load and store. Invariant: every bit
/// past `bits` is zero.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    buf: Vec<u8>,
    bits: usize,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bits written.
    pub fn len_bits(&self) -> usize {
        self.bits
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// Drops everything written (keeps the allocation).
    pub fn clear(&mut self) {
        let used = self.bits.div_ceil(8).min(self.buf.len());
        self.buf[..used].fill(0);
        self.bits = 0;
    }

    /// Drops bits past `bits` (to undo a partial write).
    pub fn truncate(&mut self, bits: usize) {
        if bits < self.bits {
            let used = self.bits.div_ceil(8);
            let keep = bits / 8;
            if !bits.is_multiple_of(8) {
                self.buf[keep] &= (1u8 << (bits % 8)) - 1;
                self.buf[keep + 1..used].fill(0);
            } else {
                self.buf[keep..used].fill(0);
            }
            self.bits = bits;
        }
    }

    /// The bytes written (the last one zero-padded).
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.bits.div_ceil(8).min(self.buf.len())]
    }

    /// Consumes the writer.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.buf.truncate(self.bits.div_ceil(8));
        self.buf
    }

    /// ORs up to 56 bits in at the end.
    #[inline(always)]
    fn put(&mut self, v: u64, n: u32) {
        let byte = self.bits / 8;
        if self.buf.len() < byte + 8 {
            let want = (byte + 8).max(self.buf.len() * 2).max(64);
            self.buf.resize(want, 0);
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.buf[byte..byte + 8]);
        let w = u64::from_le_bytes(word) | (v << (self.bits % 8));
        self.buf[byte..byte + 8].copy_from_slice(&w.to_le_bytes());
        self.bits += n as usize;
    }

    /// Writes the low `n` bits of `value` (n ≤ 64).
    #[inline]
    pub fn write_bits(&mut self, value: u64, n: u32) {
        if n > 56 {
            self.put(value & 0xffff_ffff, 32);
            self.put((value >> 32) & ((1u64 << (n - 32)) - 1), n - 32);
        } else if n > 0 {
            self.put(value & ((1u64 << n) - 1), n);
        }
    }

    /// Advances to the next byte boundary (the skipped bits are zero).
    pub fn pad_to_byte(&mut self) {
        let pad = (8 - self.bits % 8) % 8;
        if pad > 0 {
            self.put(0, pad as u32);
        }
    }

    /// Writes one bit.
    pub fn write_bool(&mut self, b: bool) {
        self.write_bits(b as u64, 1);
    }

    /// Appends `n` bits of `src` starting at bit `from` (the shared-serialization bit copy).
    ///
    /// The bits gather in a register and leave in whole 8-byte stores that are never read back
    /// (OR-ing each 56-bit piece in, as [`Self::write_bits`] does, reloads bytes the previous
    /// piece has just stored at an overlapping address, which a store buffer cannot forward).
    pub fn write_from(&mut self, src: &[u8], from: usize, n: usize) {
        if n == 0 {
            return;
        }
        let end_bits = self.bits + n;
        let need = end_bits / 8 + 9;
        if self.buf.len() < need {
            let want = need.max(self.buf.len() * 2).max(64);
            self.buf.resize(want, 0);
        }
        let mut byte = self.bits / 8;
        // The bits already in the last partial byte (every bit past them is zero).
        let mut pending = (self.bits % 8) as u32;
        let mut acc = u64::from(self.buf[byte]) & ((1u64 << pending) - 1);
        let (mut at, end) = (from, from + n);
        while at < end {
            let take = (end - at).min(56);
            acc |= read_bits_at(src, at, take) << pending;
            pending += take as u32;
            at += take;
            // Bits past `pending` are zero, so the store keeps the zero tail.
            self.buf[byte..byte + 8].copy_from_slice(&acc.to_le_bytes());
            let whole = pending / 8;
            byte += whole as usize;
            acc = acc.checked_shr(whole * 8).unwrap_or(0);
            pending -= whole * 8;
        }
        self.bits = end_bits;
    }

    /// UE's SerializeIntPacked: 7 bits per byte, low bit set when more bytes follow.
    pub fn write_packed(&mut self, mut v: u64) {
        loop {
            let more = v >= 0x80;
            self.write_bits(((v & 0x7f) << 1) | more as u64, 8);
            v >>= 7;
            if !more {
                break;
            }
        }
    }

    /// UE's SerializeInt: `value < max` in `ceil(log2(max))` bits (values ≥ max are clamped).
    pub fn write_ranged(&mut self, value: u64, max: u64) {
        let max = max.max(1);
        self.write_bits(value.min(max - 1), ranged_bits(max));
    }
}

/// Bits UE's SerializeInt spends on a value below `max`.
pub fn ranged_bits(max: u64) -> u32 {
    if max <= 1 {
        0
    } else {
        64 - (max - 1).leading_zeros()
    }
}

/// Reads `n ≤ 56` bits of `src` at bit `at` (the caller checked they exist).
#[inline(always)]
fn read_bits_at(src: &[u8], at: usize, n: usize) -> u64 {
    let byte = at / 8;
    let word = match src.get(byte..byte + 8) {
        // One unaligned load when 8 bytes are there; byte by byte only at the very end.
        Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
        None => src[byte.min(src.len())..].iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64),
    };
    (word >> (at % 8)) & ((1u64 << n) - 1)
}

/// Reads bits written by [`BitWriter`]; every read checks the length.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> BitReader<'a> {
    /// Reads all bits of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0, end: bytes.len() * 8 }
    }

    /// Reads the first `bits` bits of `bytes` (clamped to what they hold).
    pub fn with_len(bytes: &'a [u8], bits: usize) -> Self {
        Self { bytes, pos: 0, end: bits.min(bytes.len() * 8) }
    }

    /// Bits left.
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// Bit position.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Reads `n` bits (n ≤ 64).
    pub fn read_bits(&mut self, n: u32) -> Result<u64, WireError> {
        let n = n as usize;
        if n > self.remaining() {
            return Err(WireError::Truncated);
        }
        let mut v = 0u64;
        let mut got = 0;
        while got < n {
            let take = (n - got).min(56);
            v |= read_bits_at(self.bytes, self.pos, take) << got;
            self.pos += take;
            got += take;
        }
        Ok(v)
    }

    /// Steps over `n` bits.
    pub fn skip(&mut self, n: usize) -> Result<(), WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated);
        }
        self.pos += n;
        Ok(())
    }

    /// Reads one bit.
    pub fn read_bool(&mut self) -> Result<bool, WireError> {
        Ok(self.read_bits(1)? != 0)
    }

    /// Reads a packed int.
    pub fn read_packed(&mut self) -> Result<u64, WireError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.read_bits(8)?;
            let group = byte >> 1;
            if shift == 63 && group > 1 {
                return Err(WireError::PackedOverflow);
            }
            v |= group << shift;
            if byte & 1 == 0 {
                return Ok(v);
            }
        }
        Err(WireError::PackedOverflow)
    }

    /// Reads a ranged int below `max`.
    pub fn read_ranged(&mut self, max: u64) -> Result<u64, WireError> {
        let max = max.max(1);
        let v = self.read_bits(ranged_bits(max))?;
        if v >= max {
            return Err(WireError::OutOfRange { value: v, max });
        }
        Ok(v)
    }
}

/// Scale and maximum bits per component of a packed vector.
fn packed_params(q: VectorQuant) -> Option<(f32, u32)> {
    match q {
        VectorQuant::Q1 => Some((1.0, 20)),
        VectorQuant::Q10 => Some((10.0, 24)),
        VectorQuant::Q100 => Some((100.0, 30)),
        VectorQuant::None | VectorQuant::Normal => None,
    }
}

fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]])
}

fn le_u64(b: &[u8], n: usize) -> u64 {
    let mut a = [0u8; 8];
    a[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(a)
}

/// The most bits [`write_leaf`] spends on one value of `kind`.
pub fn max_leaf_bits(kind: LeafKind) -> usize {
    match kind {
        LeafKind::Bool => 1,
        LeafKind::Enum(bits) => bits as usize,
        LeafKind::U8 | LeafKind::I8 => 8,
        LeafKind::U16 | LeafKind::I16 => 16,
        LeafKind::U32 | LeafKind::I32 | LeafKind::F32 => 32,
        LeafKind::PackedU32 => 40,
        LeafKind::U64 | LeafKind::I64 | LeafKind::F64 => 64,
        LeafKind::Name | LeafKind::Object => 80,
        LeafKind::Vector(q) => match packed_params(q) {
            Some((_, max)) => ranged_bits(max as u64) as usize + 3 * (max as usize + 1),
            None if q == VectorQuant::Normal => 48,
            None => 96,
        },
        LeafKind::Rotator => 51,
        LeafKind::Opaque(n) => 8 * n as usize,
        LeafKind::Array => 0,
    }
}

/// Writes a leaf from its byte form.
pub fn write_leaf(w: &mut BitWriter, kind: LeafKind, bytes: &[u8]) {
    match kind {
        LeafKind::Bool => w.write_bool(bytes[0] != 0),
        LeafKind::Enum(bits) => w.write_bits(bytes[0] as u64, bits as u32),
        LeafKind::U8 | LeafKind::I8 => w.write_bits(bytes[0] as u64, 8),
        LeafKind::U16 | LeafKind::I16 => w.write_bits(le_u64(bytes, 2), 16),
        LeafKind::U32 | LeafKind::I32 | LeafKind::F32 => w.write_bits(le_u64(bytes, 4), 32),
        LeafKind::PackedU32 => w.write_packed(le_u64(bytes, 4)),
        LeafKind::U64 | LeafKind::I64 | LeafKind::F64 => w.write_bits(le_u64(bytes, 8), 64),
        LeafKind::Name | LeafKind::Object => w.write_packed(le_u64(bytes, kind.byte_size())),
        LeafKind::Vector(q) => write_vector(w, q, [f32_at(bytes, 0), f32_at(bytes, 1), f32_at(bytes, 2)]),
        LeafKind::Rotator => {
            for i in 0..3 {
                let short = compress_axis(f32_at(bytes, i));
                w.write_bool(short != 0);
                if short != 0 {
                    w.write_bits(short as u64, 16);
                }
            }
        }
        LeafKind::Opaque(n) => {
            for &b in &bytes[..n as usize] {
                w.write_bits(b as u64, 8);
            }
        }
        LeafKind::Array => {}
    }
}

/// Reads a leaf into its byte form (`out` holds `kind.byte_size()` bytes).
pub fn read_leaf(r: &mut BitReader<'_>, kind: LeafKind, out: &mut [u8]) -> Result<(), WireError> {
    let put = |out: &mut [u8], v: u64, n: usize| out[..n].copy_from_slice(&v.to_le_bytes()[..n]);
    match kind {
        LeafKind::Bool => out[0] = r.read_bool()? as u8,
        LeafKind::Enum(bits) => out[0] = r.read_bits(bits as u32)? as u8,
        LeafKind::U8 | LeafKind::I8 => out[0] = r.read_bits(8)? as u8,
        LeafKind::U16 | LeafKind::I16 => put(out, r.read_bits(16)?, 2),
        LeafKind::U32 | LeafKind::I32 | LeafKind::F32 => put(out, r.read_bits(32)?, 4),
        LeafKind::PackedU32 => {
            let v = u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("packed u32"))?;
            put(out, v as u64, 4);
        }
        LeafKind::U64 | LeafKind::I64 | LeafKind::F64 => put(out, r.read_bits(64)?, 8),
        LeafKind::Name => {
            let v = r.read_packed()?;
            let v = u32::try_from(v).map_err(|_| WireError::Invalid("name index"))?;
            put(out, v as u64, 4);
        }
        LeafKind::Object => put(out, r.read_packed()?, 8),
        LeafKind::Vector(q) => {
            let c = read_vector(r, q)?;
            for (i, x) in c.iter().enumerate() {
                out[i * 4..i * 4 + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
        LeafKind::Rotator => {
            for i in 0..3 {
                let short = if r.read_bool()? { r.read_bits(16)? as u16 } else { 0 };
                out[i * 4..i * 4 + 4].copy_from_slice(&decompress_axis(short).to_le_bytes());
            }
        }
        LeafKind::Opaque(n) => {
            for b in &mut out[..n as usize] {
                *b = r.read_bits(8)? as u8;
            }
        }
        LeafKind::Array => {}
    }
    Ok(())
}

fn write_vector(w: &mut BitWriter, q: VectorQuant, c: [f32; 3]) {
    if let Some((scale, max_bits)) = packed_params(q) {
        // NaN and infinities are not representable; they travel as 0, as UE's writer does.
        // Scaled in f64: an f32 times 100 is exact there and cannot overflow, so every finite
        // value beyond the range clamps (in f32, 1e37 × 100 became infinity and travelled as 0).
        let ints = c.map(|x| {
            if x.is_finite() {
                (x as f64 * scale as f64).round().clamp(i32::MIN as f64, i32::MAX as f64) as i64
            } else {
                0
            }
        });
        let largest = ints.iter().map(|i| i.unsigned_abs()).max().unwrap_or(0);
        let need = 64 - largest.leading_zeros(); // ceil_log2(1 + largest)
        let bits = need.clamp(1, max_bits) - 1;
        w.write_ranged(bits as u64, max_bits as u64);
        let bias = 1i64 << (bits + 1);
        let max = 1u64 << (bits + 2);
        for i in ints {
            w.write_ranged((i + bias).clamp(0, max as i64 - 1) as u64, max);
        }
    } else if q == VectorQuant::Normal {
        for x in c {
            let x = if x.is_finite() { x.clamp(-1.0, 1.0) } else { 0.0 };
            let v = ((x * 32767.0).round() as i32 + 32768).clamp(0, 65535);
            w.write_bits(v as u64, 16);
        }
    } else {
        for x in c {
            w.write_bits(x.to_bits() as u64, 32);
        }
    }
}

fn read_vector(r: &mut BitReader<'_>, q: VectorQuant) -> Result<[f32; 3], WireError> {
    let mut c = [0f32; 3];
    if let Some((scale, max_bits)) = packed_params(q) {
        let bits = r.read_ranged(max_bits as u64)? as u32;
        let bias = 1i64 << (bits + 1);
        let max = 1u64 << (bits + 2);
        for x in &mut c {
            // Divided in f64 and rounded once: above 2^24 quanta an i64 → f32 conversion
            // first would round the integer and land up to a quarter unit off.
            *x = ((r.read_ranged(max)? as i64 - bias) as f64 / scale as f64) as f32;
        }
    } else if q == VectorQuant::Normal {
        for x in &mut c {
            *x = (r.read_bits(16)? as i32 - 32768) as f32 / 32767.0;
        }
    } else {
        for x in &mut c {
            *x = f32::from_bits(r.read_bits(32)? as u32);
        }
    }
    Ok(c)
}

/// UE's CompressAxisToShort: degrees to 1/65536 of a turn.
pub fn compress_axis(deg: f32) -> u16 {
    if !deg.is_finite() {
        return 0;
    }
    ((deg * 65536.0 / 360.0).round() as i64 & 0xffff) as u16
}

/// UE's DecompressAxisFromShort: 1/65536 of a turn to degrees in [0, 360).
pub fn decompress_axis(s: u16) -> f32 {
    s as f32 * 360.0 / 65536.0
}

/// What a value of `kind` looks like after a trip over the wire: quantised vectors rounded,
/// rotator axes reduced to 16 bits of a turn, everything else unchanged. Tests compare a client's
/// state with the server's through this.
pub fn quantize_leaf(kind: LeafKind, bytes: &[u8]) -> Vec<u8> {
    let mut w = BitWriter::new();
    write_leaf(&mut w, kind, bytes);
    let mut out = vec![0u8; kind.byte_size()];
    let mut r = BitReader::with_len(w.bytes(), w.len_bits());
    // A value written by `write_leaf` always reads back.
    let _ = read_leaf(&mut r, kind, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn bits_round_trip(fields in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..40)) {
            let mut w = BitWriter::new();
            for &(v, n) in &fields { w.write_bits(v, n); }
            let mut r = BitReader::with_len(w.bytes(), w.len_bits());
            for &(v, n) in &fields {
                let mask = if n == 64 { !0 } else { (1u64 << n) - 1 };
                prop_assert_eq!(r.read_bits(n).unwrap(), v & mask);
            }
            prop_assert_eq!(r.remaining(), 0);
            prop_assert_eq!(r.read_bits(1), Err(WireError::Truncated));
        }

        #[test]
        fn packed_and_ranged_round_trip(v in any::<u64>(), max in 1u64..u64::MAX) {
            let mut w = BitWriter::new();
            w.write_packed(v);
            w.write_ranged(v % max, max);
            let mut r = BitReader::with_len(w.bytes(), w.len_bits());
            prop_assert_eq!(r.read_packed().unwrap(), v);
            prop_assert_eq!(r.read_ranged(max).unwrap(), v % max);
        }

        #[test]
        fn bit_copy_equals_rewrite(prefix in 0u32..64, fields in proptest::collection::vec((any::<u64>(), 1u32..=64), 1..10), skip in 0usize..7) {
            let mut src = BitWriter::new();
            src.write_bits(0, skip as u32);
            for &(v, n) in &fields { src.write_bits(v, n); }
            let mut a = BitWriter::new();
            a.write_bits(0x5a5a, prefix);
            a.write_from(src.bytes(), skip, src.len_bits() - skip);
            let mut b = BitWriter::new();
            b.write_bits(0x5a5a, prefix);
            for &(v, n) in &fields { b.write_bits(v, n); }
            // Writes after the copy land on zero bits.
            a.write_bits(0x2d, 6);
            b.write_bits(0x2d, 6);
            prop_assert_eq!(a.bytes(), b.bytes());
            prop_assert_eq!(a.len_bits(), b.len_bits());
        }

        #[test]
        fn quantised_vectors_round_to_their_scale(x in -1e6f32..1e6, y in -1e6f32..1e6, z in -1e6f32..1e6) {
            for (q, scale) in [(VectorQuant::Q1, 1.0f32), (VectorQuant::Q10, 10.0), (VectorQuant::Q100, 100.0)] {
                let mut w = BitWriter::new();
                write_vector(&mut w, q, [x, y, z]);
                let mut r = BitReader::with_len(w.bytes(), w.len_bits());
                let c = read_vector(&mut r, q).unwrap();
                for (a, b) in c.iter().zip([x, y, z]) {
                    // Within half a quantum, allowing f32 rounding of large values.
                    prop_assert!((a - b).abs() <= 0.5 / scale + b.abs() * 1e-6, "{:?}: {} vs {}", q, a, b);
                }
            }
        }
    }

    #[test]
    fn packed_int_matches_ue_bytes() {
        let mut w = BitWriter::new();
        w.write_packed(300); // 300 = 0b10_0101100 -> groups 0x2c, 0x02
        assert_eq!(w.bytes(), &[(0x2c << 1) | 1, 0x02 << 1]);
    }

    #[test]
    fn a_packed_u32_over_u32_max_is_an_error() {
        let mut w = BitWriter::new();
        w.write_packed(1 << 32);
        let mut out = [0u8; 4];
        assert_eq!(
            read_leaf(&mut BitReader::new(w.bytes()), LeafKind::PackedU32, &mut out),
            Err(WireError::Invalid("packed u32"))
        );
        let mut w = BitWriter::new();
        write_leaf(&mut w, LeafKind::PackedU32, &u32::MAX.to_le_bytes());
        assert_eq!(w.len_bits(), max_leaf_bits(LeafKind::PackedU32));
        read_leaf(&mut BitReader::new(w.bytes()), LeafKind::PackedU32, &mut out).unwrap();
        assert_eq!(out, u32::MAX.to_le_bytes());
    }

    #[test]
    fn truncated_input_is_an_error() {
        let mut w = BitWriter::new();
        write_leaf(&mut w, LeafKind::Vector(VectorQuant::Q100), &[0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0]);
        let bytes = w.bytes().to_vec();
        for cut in 0..w.len_bits() {
            let mut r = BitReader::with_len(&bytes, cut);
            assert!(read_leaf(&mut r, LeafKind::Vector(VectorQuant::Q100), &mut [0u8; 12]).is_err());
        }
        let mut r = BitReader::new(&[0xff; 11]);
        assert_eq!(r.read_packed(), Err(WireError::PackedOverflow));
    }

    #[test]
    fn rotators_compress_to_sixteen_bits_per_axis() {
        assert_eq!(compress_axis(0.0), 0);
        assert_eq!(compress_axis(180.0), 32768);
        assert_eq!(compress_axis(-90.0), 49152);
        assert!((decompress_axis(compress_axis(45.0)) - 45.0).abs() < 0.01);
        let mut w = BitWriter::new();
        write_leaf(&mut w, LeafKind::Rotator, &[0u8; 12]);
        assert_eq!(w.len_bits(), 3, "zero axes cost one bit each");
    }

    #[test]
    fn a_skip_past_the_end_is_refused_and_does_not_move() {
        let bytes = [0xffu8; 2];
        let mut r = BitReader::with_len(&bytes, 12);
        assert_eq!(r.skip(13), Err(WireError::Truncated));
        assert_eq!(r.position(), 0);
        assert_eq!(r.skip(12), Ok(()));
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.skip(1), Err(WireError::Truncated));
        assert_eq!(r.position(), 12);
    }

    #[test]
    fn a_packed_int_past_64_bits_is_refused() {
        // Nine groups of 7 bits with "more" set hold bits 0..63; a tenth byte may add bit 63 only.
        let mut max = vec![0xffu8; 9];
        max.push(1 << 1);
        assert_eq!(BitReader::new(&max).read_packed(), Ok(u64::MAX));
        for group in [2u8, 3, 0x7f] {
            let mut over = vec![0xffu8; 9];
            over.push(group << 1);
            assert_eq!(BitReader::new(&over).read_packed(), Err(WireError::PackedOverflow), "group {group}");
        }
    }

    #[test]
    fn ranged_ints_stay_below_their_maximum() {
        // A value below 20 takes 5 bits, which can also hold 20..32: those are refused.
        for v in [20u64, 21, 31] {
            let mut w = BitWriter::new();
            w.write_bits(v, ranged_bits(20));
            let mut r = BitReader::with_len(w.bytes(), w.len_bits());
            assert_eq!(r.read_ranged(20), Err(WireError::OutOfRange { value: v, max: 20 }));
        }
        // The writer clamps a value at or over the maximum to the largest one below it.
        for (v, max) in [(20u64, 20u64), (99, 20), (8, 8), (u64::MAX, 8)] {
            let mut w = BitWriter::new();
            w.write_ranged(v, max);
            assert_eq!(w.len_bits() as u32, ranged_bits(max));
            let mut r = BitReader::with_len(w.bytes(), w.len_bits());
            assert_eq!(r.read_ranged(max), Ok(max - 1), "{v} clamped below {max}");
        }
    }
}
