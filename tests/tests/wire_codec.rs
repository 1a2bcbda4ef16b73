//! The leaf codec of `shadowrep::wire`, kind by kind, against expectations written here.
//!
//! - Raw kinds (bools, integers, floats, enums, names, objects, opaque structs, full-precision
//!   vectors) round-trip bit for bit, NaN payloads and `-0.0` included, and spend exactly the
//!   bits the format documents (packed ints: 8 bits per 7-bit group).
//! - Packed vectors (NetQuantize, 10, 100) are checked against an encoder written in
//!   `wire_codec/packed_vectors.rs` from UE's `SerializePackedVector<Scale, MaxBits>` as
//!   `reference/ue-facts.md` describes it: components `round(x × scale)` (computed exactly in
//!   `f64`), clamped into
//!   `[-2^MaxBits, 2^MaxBits - 1]`, a bit-count header `clamp(ceil_log2(1 + max|c|), 1, MaxBits) − 1`
//!   as a ranged int below `MaxBits`, each component biased by `2^(bits+1)` into `bits + 2` bits.
//!   The kernel's whole bit stream must equal that encoder's. NetQuantizeNormal: each component
//!   `round(clamp(x, −1, 1) × 32767) + 32768` in 16 bits. Rotators: per axis one bit "non-zero"
//!   then `round(deg × 65536 / 360) mod 65536` in 16 bits; decoded `short × 360 / 65536`.
//! - Tolerance, stated once: the kernel may compute the scaled value in `f32`, so where the exact
//!   scaled value lies within `TIE_SLACK` of a rounding tie (x.5), either neighbour is accepted; UE
//!   rounds ties up (`floor(x + 0.5)`), the kernel away from zero, and both are accepted there.
//! - Non-finite input (NaN, ±inf) never panics and decodes to 0 in that component (as the
//!   kernel documents); finite input beyond the range decodes to the clamped end.
//! - Every decoded value re-encodes to the same bits, within the range where an `f32` can hold
//!   the quantisation grid (see `IDEMPOTENT_BELOW`).
//! - [`max_leaf_bits`] bounds every encoding, and every strict prefix of an encoding is refused.
//!
//! Everything runs on seeded ChaCha streams, so every run sees the same inputs.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::schema::{LeafKind, VectorQuant};
use shadowrep::wire::{max_leaf_bits, read_leaf, write_leaf, BitReader, BitWriter};

const CASES: usize = 4000;

// ---------------------------------------------------------------------------------------------
// An independent bit stream: LSB first, one bool per bit
// ---------------------------------------------------------------------------------------------

#[derive(Default, Debug, Clone, PartialEq, Eq)]
struct Bits(Vec<bool>);

impl Bits {
    fn push(&mut self, v: u64, n: u32) {
        for i in 0..n {
            self.0.push((v >> i) & 1 == 1);
        }
    }

    /// The first `n` bits of `bytes`, LSB first.
    fn of(bytes: &[u8], n: usize) -> Self {
        Bits((0..n).map(|i| (bytes[i / 8] >> (i % 8)) & 1 == 1).collect())
    }
}

/// `ceil(log2(max))`: the bits of a ranged int below `max`, as the kernel documents it.
fn ranged_width(max: u64) -> u32 {
    let mut n = 0;
    while (1u128 << n) < max as u128 {
        n += 1;
    }
    n
}

// ---------------------------------------------------------------------------------------------
// Running the kernel's codec
// ---------------------------------------------------------------------------------------------

/// Writes `bytes` as `kind` after a random prefix and before a sentinel, checks that decoding
/// the stream gives back the prefix and the sentinel, and returns the decoded bytes and the bits
/// the leaf took (its own bits, extracted from the stream).
fn trip(kind: LeafKind, bytes: &[u8], rng: &mut ChaCha8Rng) -> (Vec<u8>, Bits) {
    let prefix_len = rng.random_range(0..64u32);
    let prefix = rng.next_u64() & if prefix_len == 0 { 0 } else { u64::MAX >> (64 - prefix_len) };
    let sentinel = rng.next_u64() & 0x1_ffff;
    let mut w = BitWriter::new();
    w.write_bits(prefix, prefix_len);
    write_leaf(&mut w, kind, bytes);
    let leaf_end = w.len_bits();
    w.write_bits(sentinel, 17);
    let stream = Bits::of(w.bytes(), w.len_bits());
    let leaf = Bits(stream.0[prefix_len as usize..leaf_end].to_vec());

    let mut r = BitReader::with_len(w.bytes(), w.len_bits());
    assert_eq!(r.read_bits(prefix_len).unwrap(), prefix);
    let mut out = vec![0u8; kind.byte_size()];
    read_leaf(&mut r, kind, &mut out).unwrap_or_else(|e| panic!("{kind:?} {bytes:02x?}: {e}"));
    assert_eq!(r.position(), leaf_end, "{kind:?} {bytes:02x?}: the reader took other bits than the writer");
    assert_eq!(r.read_bits(17).unwrap(), sentinel, "{kind:?}: the bits after the leaf");
    assert!(
        leaf.0.len() <= max_leaf_bits(kind),
        "{kind:?} {bytes:02x?}: {} bits written, max_leaf_bits says {}",
        leaf.0.len(),
        max_leaf_bits(kind)
    );
    // Every strict prefix is refused (without a panic).
    let alone = encode(kind, bytes);
    for cut in 0..alone.0.len() {
        let packed = pack(&alone.0[..cut]);
        let mut r = BitReader::with_len(&packed, cut);
        let mut scratch = vec![0u8; kind.byte_size()];
        assert!(read_leaf(&mut r, kind, &mut scratch).is_err(), "{kind:?}: a {cut}-bit prefix decoded");
    }
    (out, leaf)
}

/// The kernel's encoding of one leaf, alone.
fn encode(kind: LeafKind, bytes: &[u8]) -> Bits {
    let mut w = BitWriter::new();
    write_leaf(&mut w, kind, bytes);
    Bits::of(w.bytes(), w.len_bits())
}

fn pack(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= (b as u8) << (i % 8);
    }
    out
}

fn f32s(b: &[u8]) -> [f32; 3] {
    std::array::from_fn(|i| f32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap()))
}

fn bytes_of(c: [f32; 3]) -> Vec<u8> {
    c.iter().flat_map(|x| x.to_le_bytes()).collect()
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// Floats worth trying: zeros, NaNs with payloads, infinities, subnormals, extremes.
fn special_f32s() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaN, payload 1
        f32::from_bits(0xffc1_2345), // negative quiet NaN with a payload
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        f32::from_bits(1), // smallest subnormal
        -f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        0.5,
        -0.5,
        1.0,
        -1.0,
    ]
}

/// A float from a mix: any bit pattern, a special, or a uniform value in `[-span, span]`.
fn any_f32(rng: &mut ChaCha8Rng, span: f32) -> f32 {
    match rng.random_range(0..8) {
        0 => f32::from_bits(rng.next_u32()),
        1 => {
            let s = special_f32s();
            s[rng.random_range(0..s.len())]
        }
        2 => rng.random_range(-1.0f32..1.0),
        3 => rng.random_range(-span * 2.0..span * 2.0),
        _ => rng.random_range(-span..span),
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Raw kinds: exact, and exactly as wide as documented
// ---------------------------------------------------------------------------------------------

/// Bits a packed int (7-bit groups, one byte each) takes for `v`.
fn packed_width(v: u64) -> usize {
    let significant = 64 - v.leading_zeros() as usize;
    8 * significant.div_ceil(7).max(1)
}

fn raw_kinds() -> Vec<LeafKind> {
    let mut k = vec![
        LeafKind::U8,
        LeafKind::I8,
        LeafKind::U16,
        LeafKind::I16,
        LeafKind::U32,
        LeafKind::PackedU32,
        LeafKind::I32,
        LeafKind::U64,
        LeafKind::I64,
        LeafKind::F32,
        LeafKind::F64,
        LeafKind::Name,
        LeafKind::Object,
        LeafKind::Vector(VectorQuant::None),
    ];
    k.extend((1..=8).map(LeafKind::Enum));
    k.extend([1u16, 2, 3, 12, 37, 64].map(LeafKind::Opaque));
    k
}

/// Random byte forms of `kind`, biased towards short packed ints and special floats.
fn raw_bytes(kind: LeafKind, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut b = vec![0u8; kind.byte_size()];
    rng.fill_bytes(&mut b);
    match kind {
        LeafKind::Enum(bits) => b[0] &= ((1u16 << bits) - 1) as u8,
        LeafKind::Name | LeafKind::Object | LeafKind::PackedU32 if rng.random_bool(0.5) => {
            // Short values: a random number of significant bits.
            let v = rng.next_u64() >> rng.random_range(0..64);
            let n = b.len();
            b.copy_from_slice(&v.to_le_bytes()[..n]);
        }
        LeafKind::F32 if rng.random_bool(0.3) => b.copy_from_slice(&any_f32(rng, 1e6).to_le_bytes()),
        LeafKind::Vector(VectorQuant::None) if rng.random_bool(0.3) => {
            b = bytes_of([any_f32(rng, 1e6), any_f32(rng, 1e6), any_f32(rng, 1e6)]);
        }
        LeafKind::F64 if rng.random_bool(0.3) => {
            let s = [0.0, -0.0, f64::NAN, f64::from_bits(0x7ff0_0000_0000_0001), f64::INFINITY, f64::MIN];
            b.copy_from_slice(&s[rng.random_range(0..s.len())].to_le_bytes());
        }
        _ => {}
    }
    b
}

/// The bits the format documents for a raw value: the byte form's little-endian bits, the
/// width of the kind (packed ints: 7-bit groups, low bit = more).
fn expected_raw_bits(kind: LeafKind, b: &[u8]) -> Bits {
    let mut e = Bits::default();
    match kind {
        LeafKind::Enum(bits) => e.push(b[0] as u64, bits as u32),
        LeafKind::Name | LeafKind::Object | LeafKind::PackedU32 => {
            let mut v = b.iter().rev().fold(0u64, |acc, &x| acc << 8 | x as u64);
            loop {
                let more = v >= 0x80;
                e.push(((v & 0x7f) << 1) | more as u64, 8);
                v >>= 7;
                if !more {
                    break;
                }
            }
        }
        _ => {
            for &x in b {
                e.push(x as u64, 8);
            }
        }
    }
    e
}

#[test]
fn raw_kinds_round_trip_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0001);
    for kind in raw_kinds() {
        let mut widest = 0;
        for case in 0..CASES / 4 {
            let b = raw_bytes(kind, &mut rng);
            let (out, leaf) = trip(kind, &b, &mut rng);
            assert_eq!(out, b, "{kind:?} case {case}: decoded bytes differ");
            assert_eq!(leaf, expected_raw_bits(kind, &b), "{kind:?} {b:02x?}: wire bits");
            if let LeafKind::Name | LeafKind::Object | LeafKind::PackedU32 = kind {
                let v = b.iter().rev().fold(0u64, |acc, &x| acc << 8 | x as u64);
                assert_eq!(leaf.0.len(), packed_width(v), "{kind:?} {v}: packed width");
                assert!(leaf.0.len() <= max_leaf_bits(kind), "{kind:?} {v}: within max_leaf_bits");
            }
            widest = widest.max(leaf.0.len());
        }
        if !matches!(kind, LeafKind::Name | LeafKind::Object | LeafKind::PackedU32) {
            assert_eq!(widest, max_leaf_bits(kind), "{kind:?}: a fixed-width kind's max_leaf_bits");
        }
    }
}

#[test]
fn special_floats_round_trip_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0002);
    for x in special_f32s() {
        let (out, _) = trip(LeafKind::F32, &x.to_le_bytes(), &mut rng);
        assert_eq!(out, x.to_le_bytes(), "f32 {x:?} ({:#x})", x.to_bits());
        let v = [x, -x, f32::from_bits(x.to_bits() ^ 1)];
        let (out, _) = trip(LeafKind::Vector(VectorQuant::None), &bytes_of(v), &mut rng);
        assert_eq!(out, bytes_of(v), "full vector of {v:?}");
    }
    for bits in [0u64, 1 << 63, 0x7ff8_0000_0000_0000, 0xfff0_0000_dead_beef, 0x7ff0_0000_0000_0000, 1] {
        let (out, _) = trip(LeafKind::F64, &bits.to_le_bytes(), &mut rng);
        assert_eq!(out, bits.to_le_bytes(), "f64 {bits:#x}");
    }
}

#[test]
fn bools_take_one_bit_and_any_nonzero_byte_is_true() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0003);
    for byte in 0..=255u8 {
        let (out, leaf) = trip(LeafKind::Bool, &[byte], &mut rng);
        assert_eq!(out, [(byte != 0) as u8], "bool byte {byte}");
        assert_eq!(leaf.0, vec![byte != 0]);
    }
    assert_eq!(max_leaf_bits(LeafKind::Bool), 1);
}

#[test]
fn packed_ints_at_group_edges() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0004);
    for shift in 0..64 {
        for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) + 1, u64::MAX >> shift] {
            let (out, leaf) = trip(LeafKind::Object, &v.to_le_bytes(), &mut rng);
            assert_eq!(out, v.to_le_bytes());
            assert_eq!(leaf.0.len(), packed_width(v), "object {v:#x}");
            let n = v as u32;
            let (out, leaf) = trip(LeafKind::Name, &n.to_le_bytes(), &mut rng);
            assert_eq!(out, n.to_le_bytes());
            assert_eq!(leaf.0.len(), packed_width(n as u64), "name {n:#x}");
        }
    }
    // A name index beyond u32 on the wire is refused, not wrapped.
    let mut w = BitWriter::new();
    w.write_packed(1 << 32);
    let mut r = BitReader::with_len(w.bytes(), w.len_bits());
    assert!(read_leaf(&mut r, LeafKind::Name, &mut [0u8; 4]).is_err(), "a 33-bit name index decoded");
}

// ---------------------------------------------------------------------------------------------
// The rounding tolerance (packed vectors, normals, rotators)
// ---------------------------------------------------------------------------------------------

/// How close to a rounding tie (in quanta) the exact scaled value may be before either
/// neighbour is accepted: an `f32` product of a value below 2^31 quanta is off by at most
/// 2^-24 relative, so the slack grows with the magnitude.
fn tie_slack(t: f64) -> f64 {
    1e-9 + t.abs() * 2f64.powi(-23)
}

/// The integers a correct encoder may send for the exact scaled value `t`: `round(t)`, or
/// either neighbour of a tie within the slack.
fn acceptable_ints(t: f64) -> Vec<i64> {
    let lo = t.floor();
    let frac = t - lo;
    if (frac - 0.5).abs() <= tie_slack(t) {
        vec![lo as i64, lo as i64 + 1]
    } else if frac < 0.5 {
        vec![lo as i64]
    } else {
        vec![lo as i64 + 1]
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Packed vectors against UE's formula: `wire_codec/packed_vectors.rs`
// ---------------------------------------------------------------------------------------------

/// Packed vectors (NetQuantize, 10, 100) against the encoder written there from UE's formula.
#[path = "wire_codec/packed_vectors.rs"]
mod packed_vectors;

// ---------------------------------------------------------------------------------------------
// 3. Normals
// ---------------------------------------------------------------------------------------------

#[test]
fn normals_are_sixteen_bit_fixed_point() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0020);
    let kind = LeafKind::Vector(VectorQuant::Normal);
    for case in 0..CASES {
        let c: [f32; 3] = std::array::from_fn(|_| any_f32(&mut rng, 1.2));
        let (out, leaf) = trip(kind, &bytes_of(c), &mut rng);
        let d = f32s(&out);
        assert_eq!(leaf.0.len(), 48, "normal {c:?}");
        for (i, (&x, &y)) in c.iter().zip(&d).enumerate() {
            let clamped = if x.is_finite() { (x as f64).clamp(-1.0, 1.0) } else { 0.0 };
            let field = Bits(leaf.0[i * 16..i * 16 + 16].to_vec());
            let ok = acceptable_ints(clamped * 32767.0).into_iter().any(|k| {
                let mut e = Bits::default();
                e.push((k + 32768) as u64, 16);
                e == field && (y as f64 - k as f64 / 32767.0).abs() <= 1.2e-7
            });
            assert!(ok, "case {case}: component {x} encoded as {:?}, decoded {y}", field.0);
            assert!((-1.0..=1.0).contains(&y), "normal component {x} decoded to {y}");
        }
        assert_eq!(encode(kind, &out), leaf, "normal {c:?} → {d:?} re-encodes differently");
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Rotators
// ---------------------------------------------------------------------------------------------

/// The shorts UE's CompressAxisToShort may give for `deg` under the tie tolerance.
fn ue_axis_shorts(deg: f32) -> Vec<u16> {
    if !deg.is_finite() {
        return vec![0];
    }
    let t = deg as f64 * 65536.0 / 360.0;
    acceptable_ints(t).into_iter().map(|k| k.rem_euclid(65536) as u16).collect()
}

#[test]
fn rotators_compress_each_axis_to_a_short() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0030);
    for case in 0..CASES {
        let c: [f32; 3] = std::array::from_fn(|_| match rng.random_range(0..6) {
            0 => 0.0,
            1 => (rng.random_range(-200_000..200_000) as f64 * 360.0 / 65536.0) as f32,
            2 => ((rng.random_range(-200_000..200_000) as f64 + 0.5) * 360.0 / 65536.0) as f32,
            _ => any_f32(&mut rng, 1000.0),
        });
        let (out, leaf) = trip(LeafKind::Rotator, &bytes_of(c), &mut rng);
        let d = f32s(&out);
        let mut at = 0;
        for (i, &deg) in c.iter().enumerate() {
            let nonzero = leaf.0[at];
            let short = if nonzero {
                let s = (0..16).fold(0u16, |acc, b| acc | (leaf.0[at + 1 + b] as u16) << b);
                at += 17;
                s
            } else {
                at += 1;
                0
            };
            assert!(!(nonzero && short == 0), "axis {i}: a zero short must be sent as one 0 bit");
            // Exact in f64 and in f32 alike: short × 45 < 2^24, then exact scalings.
            assert_eq!(d[i], (short as f64 * 360.0 / 65536.0) as f32, "axis {i} decodes from its short");
            assert!((0.0..360.0).contains(&d[i]), "axis {i}: {deg} decoded to {}", d[i]);
            // Exact formula where an f32 holds the angle to a fraction of a step.
            if deg.is_finite() && deg.abs() < 20_000.0 {
                assert!(
                    ue_axis_shorts(deg).contains(&short),
                    "case {case} axis {i}: {deg}° sent as {short}, UE's formula allows {:?}",
                    ue_axis_shorts(deg)
                );
            } else if !deg.is_finite() {
                assert_eq!(short, 0, "axis {i}: non-finite {deg} must travel as 0");
            }
        }
        assert_eq!(at, leaf.0.len(), "rotator {c:?}: trailing bits");
        assert_eq!(encode(LeafKind::Rotator, &out), leaf, "rotator {c:?} → {d:?} re-encodes differently");
    }
}

#[test]
fn rotator_axis_examples() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0031);
    // (degrees, short): quarter turns, negative angles wrap, a full turn is zero.
    for (deg, short) in [
        (0.0f32, 0u16),
        (90.0, 16384),
        (180.0, 32768),
        (270.0, 49152),
        (-90.0, 49152),
        (360.0, 0),
        (720.0 + 45.0, 8192),
        (-0.0, 0),
    ] {
        let (out, leaf) = trip(LeafKind::Rotator, &bytes_of([deg, 0.0, 0.0]), &mut rng);
        let want_bits = if short == 0 { 3 } else { 19 };
        assert_eq!(leaf.0.len(), want_bits, "{deg}°");
        assert_eq!(f32s(&out)[0], short as f32 * 360.0 / 65536.0, "{deg}°");
    }
    assert_eq!(max_leaf_bits(LeafKind::Rotator), 51);
}

/// UE's `UPackageMapClient::SerializeNewActor` with its default settings
/// (`ConditionallySerializeQuantizedVector`): location and velocity as `FVector_NetQuantize10`
/// (`net.QuantizeActorLocationOnSpawn`, `net.QuantizeActorVelocityOnSpawn` on), scale three
/// full floats (`net.QuantizeActorScaleOnSpawn` off). Found by a helper's review against UE's
/// source (session 77): scale went at one decimal — 0.25 came out 0.3 on every client, for
/// good — and velocity in whole units.
#[test]
fn a_spawn_infos_location_scale_and_velocity_quantise_as_ues_serialize_new_actor() {
    use shadowrep::wire::open::SpawnInfo;
    let s = SpawnInfo {
        location: [1234.56, -0.04, 77.77],
        rotation: [0.0; 3],
        scale: [0.25, 0.123_456_7, 1.5],
        velocity: [12.34, 0.0, -3.26],
    };
    let q = s.quantized();
    assert_eq!(q.scale, s.scale, "scale unquantised");
    let near = |a: [f32; 3], b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-3);
    assert!(near(q.velocity, [12.3, 0.0, -3.3]), "velocity at one decimal: {:?}", q.velocity);
    assert!(near(q.location, [1234.6, 0.0, 77.8]), "location at one decimal: {:?}", q.location);
}
