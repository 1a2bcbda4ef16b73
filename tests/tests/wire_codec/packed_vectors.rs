//! Packed vectors (NetQuantize, 10, 100) against an encoder written here from UE's
//! `SerializePackedVector<Scale, MaxBits>` (see the root's module documentation for the formula
//! and the tolerance): the kernel's whole bit stream must equal one that encoder may produce,
//! values beyond the range clamp to its ends, and non-finite components travel as 0.

use super::*;

/// UE's parameters: (scale, MaxBitsPerComponent).
fn ue_params(q: VectorQuant) -> (f64, u32) {
    match q {
        VectorQuant::Q1 => (1.0, 20),
        VectorQuant::Q10 => (10.0, 24),
        VectorQuant::Q100 => (100.0, 30),
        _ => unreachable!(),
    }
}

/// The packed-vector bit stream for the components `ints` (already rounded, not yet clamped).
fn ue_packed_stream(max_bits: u32, ints: [i64; 3]) -> Bits {
    let largest = ints.iter().map(|i| i.unsigned_abs()).max().unwrap();
    let need = 64 - (largest).leading_zeros(); // ceil_log2(1 + largest)
    let bits = need.clamp(1, max_bits) - 1;
    let bias = 1i64 << (bits + 1);
    let max = 1i64 << (bits + 2);
    let mut e = Bits::default();
    e.push(bits as u64, ranged_width(max_bits as u64));
    for i in ints {
        e.push((i + bias).clamp(0, max - 1) as u64, bits + 2);
    }
    e
}

/// Every stream UE's encoder may produce for `c` under the tie tolerance, with the component
/// values each decodes to. Non-finite components travel as 0.
fn ue_packed_candidates(q: VectorQuant, c: [f32; 3]) -> Vec<(Bits, [f32; 3])> {
    let (scale, max_bits) = ue_params(q);
    let lo = -(1i64 << max_bits);
    let hi = (1i64 << max_bits) - 1;
    let per: Vec<Vec<i64>> = c
        .iter()
        .map(|&x| {
            // Far beyond the range every value clamps alike; keep the integers small.
            if x.is_finite() {
                acceptable_ints((x as f64 * scale).clamp(-1e15, 1e15))
            } else {
                vec![0]
            }
        })
        .collect();
    let mut out = Vec::new();
    for &a in &per[0] {
        for &b in &per[1] {
            for &d in &per[2] {
                let ints = [a, b, d];
                let decoded = ints.map(|i| (i.clamp(lo, hi) as f64 / scale) as f32);
                out.push((ue_packed_stream(max_bits, ints), decoded));
            }
        }
    }
    out
}

/// Below this magnitude an `f32` holds every point of the grid of `q` to within a fraction of a
/// quantum, so decoding and re-encoding must give the same bits.
fn idempotent_below(q: VectorQuant) -> f32 {
    match q {
        VectorQuant::Q1 => 1.1e6,   // the whole range, ±2^20
        VectorQuant::Q10 => 5.0e5,  // f32 spacing 1/32 there
        VectorQuant::Q100 => 6.0e4, // f32 spacing 1/256 there
        _ => unreachable!(),
    }
}

#[test]
fn packed_vectors_match_ues_formula() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0010);
    for q in [VectorQuant::Q1, VectorQuant::Q10, VectorQuant::Q100] {
        let kind = LeafKind::Vector(q);
        let (scale, max_bits) = ue_params(q);
        let range = ((1u64 << max_bits) as f64 / scale) as f32;
        for case in 0..CASES {
            // Components of one vector often share a magnitude (so the header is not always
            // set by one wild component), and sometimes sit exactly on a grid point or a tie.
            let span = [1.0, 100.0, range / 4.0, range, range * 4.0][rng.random_range(0..5)];
            let c: [f32; 3] = std::array::from_fn(|_| match rng.random_range(0..6) {
                0 => (rng.random_range(-1e4..1e4f64).round() / scale) as f32,
                1 => ((rng.random_range(-1e4..1e4f64).round() + 0.5) / scale) as f32,
                _ => any_f32(&mut rng, span),
            });
            let b = bytes_of(c);
            let (out, leaf) = trip(kind, &b, &mut rng);
            let d = f32s(&out);
            let candidates = ue_packed_candidates(q, c);
            assert!(
                candidates.iter().any(|(s, v)| *s == leaf && v.map(f32::to_bits) == d.map(f32::to_bits)),
                "{q:?} case {case}: {c:?} encoded as {} bits decoding to {d:?}; UE's formula allows {:?}",
                leaf.0.len(),
                candidates.iter().map(|(s, v)| (s.0.len(), *v)).collect::<Vec<_>>()
            );
            // Plainly: finite, within the clamp range, within half a quantum of the clamped input.
            for (x, y) in c.iter().zip(d) {
                assert!(y.is_finite(), "{q:?}: {x} decoded to {y}");
                let hi = ((((1i64 << max_bits) - 1) as f64) / scale) as f32;
                assert!((-range..=hi).contains(&y), "{q:?}: {x} decoded to {y}, outside the clamp range");
                if x.is_finite() {
                    let want = (*x as f64).clamp(-range as f64, hi as f64);
                    let err = (y as f64 - want).abs();
                    let tol = 0.5 / scale + tie_slack(want * scale) / scale + (want.abs() * 2f64.powi(-24));
                    assert!(err <= tol, "{q:?}: {x} decoded to {y} ({err} off, tolerance {tol})");
                } else {
                    assert_eq!(y.to_bits(), 0, "{q:?}: non-finite {x} must travel as +0");
                }
            }
            if c.iter().all(|x| x.abs() < idempotent_below(q)) {
                assert_eq!(encode(kind, &out), leaf, "{q:?}: {c:?} decoded to {d:?}, which re-encodes differently");
            }
        }
    }
}

#[test]
fn packed_vectors_clamp_at_their_range_ends() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0011);
    for q in [VectorQuant::Q1, VectorQuant::Q10, VectorQuant::Q100] {
        let kind = LeafKind::Vector(q);
        let (scale, max_bits) = ue_params(q);
        let top = ((((1i64 << max_bits) - 1) as f64) / scale) as f32;
        let bottom = (-((1i64 << max_bits) as f64) / scale) as f32;
        // Finite values beyond the range, up to the largest f32 (whose product with the scale
        // overflows an f32).
        for x in [top * 1.5, top * 1e3, 1e30, 3e36, 4e36, 1e37, 3.3e38, f32::MAX] {
            let (out, leaf) = trip(kind, &bytes_of([x, -x, 0.0]), &mut rng);
            let d = f32s(&out);
            assert_eq!(d, [top, bottom, 0.0], "{q:?}: ±{x} must clamp to the range ends");
            assert_eq!(leaf.0.len(), max_leaf_bits(kind), "{q:?}: a clamped vector uses the widest header");
        }
        // Non-finite components travel as 0; the finite ones are kept.
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::from_bits(0xffc1_2345)] {
            let (out, _) = trip(kind, &bytes_of([bad, 2.0, -3.0]), &mut rng);
            assert_eq!(f32s(&out), [0.0, 2.0, -3.0], "{q:?}: {bad} in x");
        }
        // The grid exactly: every whole quantum near zero decodes to itself.
        for k in -300i64..=300 {
            let x = (k as f64 / scale) as f32;
            let (out, _) = trip(kind, &bytes_of([x, -x, 0.0]), &mut rng);
            assert_eq!(f32s(&out), [x, -x, 0.0], "{q:?}: grid point {k}");
        }
    }
}
