//! UE's encodings of every leaf kind (the table in [`super`]): a leaf's byte form written as
//! bits and read back, the most bits a value can take, vector quantisation and rotator axis
//! compression. Re-exported from [`super`].

use super::{ranged_bits, BitReader, BitWriter, WireError};
use crate::schema::{LeafKind, VectorQuant};

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
}
