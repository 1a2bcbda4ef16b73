//! The bit writer and reader every encoding is built on: bits least significant first, UE's
//! packed and ranged integers, and the bit copy behind shared serialization. Re-exported from
//! [`super`]; the leaf encodings are in [`super::leaf`].

use super::WireError;

/// Appends bits, least significant first, into a byte buffer.
///
/// Writes are word-at-a-time: the buffer keeps 8 bytes of slack past the last written bit, so up
/// to 56 bits go in with one unaligned 64-bit store. Every write keeps the bits written before it
/// in its first byte and stores zeros past its end within its 8 bytes; bytes beyond are never
/// read, so clearing a writer does not zero its buffer (a connection's packets are 64 KB a frame
/// on ShooterCharacter 50k × 100 at 5 %: zeroing them doubled the bytes the frame writes).
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

    /// Drops everything written (keeps the allocation, unzeroed).
    pub fn clear(&mut self) {
        self.bits = 0;
    }

    /// Drops bits past `bits` (to undo a partial write).
    pub fn truncate(&mut self, bits: usize) {
        if bits < self.bits {
            if !bits.is_multiple_of(8) {
                // `bytes` ends with this byte: its bits past the end read as zero.
                self.buf[bits / 8] &= (1u8 << (bits % 8)) - 1;
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

    /// Appends up to 56 bits (`v` has none above `n`).
    #[inline(always)]
    fn put(&mut self, v: u64, n: u32) {
        let byte = self.bits / 8;
        if self.buf.len() < byte + 8 {
            let want = (byte + 8).max(self.buf.len() * 2).max(64);
            self.buf.resize(want, 0);
        }
        let s = self.bits % 8;
        let w = (u64::from(self.buf[byte]) & ((1u64 << s) - 1)) | (v << s);
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
    /// Every piece but the last is 56 bits read with one unaligned load and not masked: what a
    /// piece carries past its 56 bits is the next piece's first source bits at the same places
    /// (or zeros), so OR-ing that piece in again changes nothing; the last piece clears whatever
    /// lies past the end (a copy is ~10 instructions a piece).
    pub fn write_from(&mut self, src: &[u8], from: usize, n: usize) {
        if n == 0 {
            return;
        }
        debug_assert!(from + n <= src.len() * 8, "bits {from}..{} past the source's {} bytes", from + n, src.len());
        let end_bits = self.bits + n;
        let need = end_bits / 8 + 9;
        if self.buf.len() < need {
            let want = need.max(self.buf.len() * 2).max(64);
            self.buf.resize(want, 0);
        }
        let mut byte = self.bits / 8;
        // The bits already in the last partial byte.
        let pending = self.bits % 8;
        let mut acc = u64::from(self.buf[byte]) & ((1u64 << pending) - 1);
        let (mut at, end) = (from, from + n);
        while end - at > 56 {
            // `at + 56 < end ≤ 8 · src.len()`: the 8 bytes from `at / 8` are all in `src`.
            acc |= read_word_at(src, at) << pending;
            self.buf[byte..byte + 8].copy_from_slice(&acc.to_le_bytes());
            // 56 bits went: `pending` is the same, seven bytes on.
            (byte, acc, at) = (byte + 7, acc >> 56, at + 56);
        }
        let last = end - at;
        let tail = pending + last;
        acc = (acc | read_bits_at(src, at, last) << pending) & (u64::MAX >> (64 - tail));
        self.buf[byte..byte + 8].copy_from_slice(&acc.to_le_bytes());
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
    read_word_at(src, at) & ((1u64 << n) - 1)
}

/// The source bits from bit `at` on, unmasked: at least 56 of them (zeros past the end of
/// `src`), bit `at` lowest.
#[inline(always)]
fn read_word_at(src: &[u8], at: usize) -> u64 {
    let byte = at / 8;
    let word = match src.get(byte..byte + 8) {
        // One unaligned load when 8 bytes are there; byte by byte only at the very end.
        Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
        None => src[byte.min(src.len())..].iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64),
    };
    word >> (at % 8)
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

    /// Reads `n` bits into bytes of their own (the last one zero-padded), as a writer would have
    /// them.
    pub fn read_to_bytes(&mut self, n: usize) -> Result<Vec<u8>, WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated);
        }
        let mut w = BitWriter::new();
        w.write_from(self.bytes, self.pos, n);
        self.pos += n;
        Ok(w.into_bytes())
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
        fn a_cleared_or_truncated_writer_writes_what_a_fresh_one_does(
            old in proptest::collection::vec((any::<u64>(), 1u32..=64), 1..20),
            keep in 0usize..200,
            new in proptest::collection::vec((any::<u64>(), 1u32..=64), 0..10),
            copy in 0usize..64,
        ) {
            // The buffer keeps the old bytes (clear and truncate zero nothing past the end):
            // what is written after must read exactly as if written into a fresh writer.
            let mut w = BitWriter::new();
            for &(v, n) in &old { w.write_bits(v, n); }
            let keep = keep.min(w.len_bits());
            let kept = w.bytes().to_vec();
            let mut fresh = BitWriter::new();
            fresh.write_from(&kept, 0, keep);
            w.truncate(keep);
            prop_assert_eq!(w.bytes(), fresh.bytes());
            let src: Vec<u8> = (0..16u8).map(|b| b.wrapping_mul(37)).collect();
            for writer in [&mut w, &mut fresh] {
                for &(v, n) in &new { writer.write_bits(v, n); }
                writer.write_from(&src, copy % 8, copy);
                writer.pad_to_byte();
            }
            prop_assert_eq!(w.bytes(), fresh.bytes());
            w.clear();
            let mut fresh = BitWriter::new();
            for writer in [&mut w, &mut fresh] {
                for &(v, n) in &new { writer.write_bits(v, n); }
                writer.write_bool(true);
            }
            prop_assert_eq!(w.bytes(), fresh.bytes());
            prop_assert_eq!(w.len_bits(), fresh.len_bits());
        }

        /// The bit copy against a bit-by-bit one, from any bit of any bytes into a writer at
        /// any bit whose buffer holds stale bytes: a piece placed one off, a carried bit lost or
        /// doubled, or a stale bit left past the end (the next write reads it back) shows.
        #[test]
        fn bit_copy_equals_a_copy_bit_by_bit(
            src in proptest::collection::vec(any::<u8>(), 0..40),
            stale in proptest::collection::vec(any::<u64>(), 1..12),
            prefix in 0u32..64,
            from in 0.0f64..1.0,
            n in 0.0f64..=1.0,
        ) {
            // Anywhere in the source, and any part of the rest up to its last bit (source bits
            // after the copy's end are there to leak; a copy to the end reads no byte past it).
            let from = (from * (src.len() * 8) as f64) as usize;
            let n = (n * (src.len() * 8 - from) as f64) as usize;
            let mut a = BitWriter::new();
            for &v in &stale { a.write_bits(v, 64); }
            a.clear();
            a.write_bits(0x5a5a_5a5a, prefix);
            a.write_from(&src, from, n);
            let mut b = BitWriter::new();
            b.write_bits(0x5a5a_5a5a, prefix);
            let mut r = BitReader::new(&src);
            r.read_bits(0).unwrap();
            for i in 0..from + n {
                let bit = r.read_bits(1).unwrap();
                if i >= from { b.write_bits(bit, 1); }
            }
            // The last byte zero past the end, and writes after the copy as after the bits.
            prop_assert_eq!(a.bytes(), b.bytes());
            a.write_bits(0x2d, 6);
            b.write_bits(0x2d, 6);
            prop_assert_eq!(a.bytes(), b.bytes());
            prop_assert_eq!(a.len_bits(), b.len_bits());
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
    }

    #[test]
    fn packed_int_matches_ue_bytes() {
        let mut w = BitWriter::new();
        w.write_packed(300); // 300 = 0b10_0101100 -> groups 0x2c, 0x02
        assert_eq!(w.bytes(), &[(0x2c << 1) | 1, 0x02 << 1]);
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
