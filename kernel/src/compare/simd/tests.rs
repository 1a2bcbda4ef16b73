//! Every table against the scalar reference, on planes placed at every alignment inside buffers
//! whose padding differs between live and shadow (a read outside the plane would show), with
//! sparse and dense differences, single planes and runs, and runs given fewer planes than outputs.

use super::*;
use proptest::prelude::*;

const WIDTHS: [usize; 5] = [1, 2, 4, 8, 12];

/// Every table this CPU runs, checked against what the CPU reports: an ISA the CPU has must not
/// be skipped silently.
fn tables() -> Vec<Kernels> {
    let tables: Vec<Kernels> = Isa::ALL.into_iter().filter_map(Kernels::for_isa).collect();
    let ran: Vec<Isa> = tables.iter().map(|k| k.isa).collect();
    assert!(ran.contains(&Isa::Scalar) && ran.contains(&Isa::Wide), "portable tables missing: {ran:?}");
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!(ran.contains(&Isa::Avx2), std::arch::is_x86_feature_detected!("avx2"));
        let avx512 = std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw");
        assert_eq!(ran.contains(&Isa::Avx512), avx512);
    }
    tables
}

/// One plane's diff through table `k`'s single-plane routine for width `w`.
fn single(k: &Kernels, w: usize, l: &[u8], s: &[u8]) -> u64 {
    let r = &k.routines;
    match w {
        1 => (r.d1)(l.try_into().unwrap(), s.try_into().unwrap()),
        2 => (r.d2)(l.try_into().unwrap(), s.try_into().unwrap()),
        4 => (r.d4)(l.try_into().unwrap(), s.try_into().unwrap()),
        8 => (r.d8)(l.try_into().unwrap(), s.try_into().unwrap()),
        12 => (r.d12)(l.try_into().unwrap(), s.try_into().unwrap()),
        _ => unreachable!(),
    }
}

fn run_fn(k: &Kernels, w: usize) -> generic::RunFn {
    let r = &k.routines;
    match w {
        1 => r.r1,
        2 => r.r2,
        4 => r.r4,
        8 => r.r8,
        12 => r.r12,
        _ => unreachable!(),
    }
}

/// The public reference for width `w`.
fn reference(w: usize, l: &[u8], s: &[u8]) -> u64 {
    match w {
        1 => scalar::<64, 1>(l.try_into().unwrap(), s.try_into().unwrap()),
        2 => scalar::<128, 2>(l.try_into().unwrap(), s.try_into().unwrap()),
        4 => scalar::<256, 4>(l.try_into().unwrap(), s.try_into().unwrap()),
        8 => scalar::<512, 8>(l.try_into().unwrap(), s.try_into().unwrap()),
        12 => scalar::<768, 12>(l.try_into().unwrap(), s.try_into().unwrap()),
        _ => unreachable!(),
    }
}

/// Live and shadow buffers: `front` bytes of padding, `planes` planes of width `w`, 64 bytes of
/// padding; the padding differs between the two, the planes differ by `flips` and, when `dense`,
/// in every third byte.
fn buffers(
    w: usize,
    planes: usize,
    front: usize,
    seed: &[u8],
    flips: &[(usize, u8)],
    dense: bool,
) -> (Vec<u8>, Vec<u8>) {
    let len = front + planes * 64 * w + 64;
    let live: Vec<u8> = (0..len).map(|i| seed[i % seed.len()] ^ (i / seed.len()) as u8).collect();
    let mut shadow: Vec<u8> = live.iter().map(|b| !b).collect();
    let body = front..front + planes * 64 * w;
    shadow[body.clone()].copy_from_slice(&live[body.clone()]);
    for &(i, x) in flips {
        shadow[front + i % body.len()] = x;
    }
    if dense {
        for i in body.step_by(3) {
            shadow[i] = shadow[i].wrapping_add(1);
        }
    }
    (live, shadow)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_isa_agrees_with_scalar(
        w in proptest::sample::select(WIDTHS.to_vec()),
        front in 0usize..64,
        seed in proptest::collection::vec(any::<u8>(), 1..97),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..20),
        dense in any::<bool>(),
    ) {
        let (live, shadow) = buffers(w, 1, front, &seed, &flips, dense);
        let plane = front..front + 64 * w;
        let expected = reference(w, &live[plane.clone()], &shadow[plane.clone()]);
        for k in tables() {
            prop_assert_eq!(single(&k, w, &live[plane.clone()], &shadow[plane.clone()]), expected, "{:?} width {}", k.isa, w);
        }
    }

    #[test]
    fn runs_equal_plane_by_plane(
        w in proptest::sample::select(WIDTHS.to_vec()),
        planes in 1usize..5,
        front in 0usize..64,
        seed in proptest::collection::vec(any::<u8>(), 1..97),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..30),
    ) {
        let (live, shadow) = buffers(w, planes, front, &seed, &flips, false);
        let n = 64 * w;
        for k in tables() {
            // One output more than planes given: the routine must leave it alone.
            let mut out = vec![0xdead_beef_u64; planes + 1];
            run_fn(&k, w)(&live[front..front + planes * n], &shadow[front..front + planes * n], &mut out);
            for (i, &m) in out[..planes].iter().enumerate() {
                let r = front + i * n..front + (i + 1) * n;
                prop_assert_eq!(m, reference(w, &live[r.clone()], &shadow[r]), "{:?} width {} plane {}", k.isa, w, i);
            }
            prop_assert_eq!(out[planes], 0xdead_beef, "{:?} wrote past the planes it was given", k.isa);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The "equal?" pass, both scans (stopping at a difference; reading every byte, as one
    /// plane), against slice `==`: any length (whole blocks, whole vectors and a
    /// ragged tail), any alignment of either side, at most one differing byte anywhere (in a
    /// block, a lone vector or the tail), and slices of different lengths.
    #[test]
    fn equal_agrees_with_scalar(
        len in 0usize..1100,
        front_live in 0usize..64,
        front_shadow in 0usize..64,
        seed in proptest::collection::vec(any::<u8>(), 1..97),
        flip in proptest::option::of((any::<usize>(), 1u8..=255)),
        shorter in 0usize..3,
    ) {
        let fill = |front: usize| -> Vec<u8> {
            let mut v: Vec<u8> = (0..front + len + 64).map(|i| !(i as u8)).collect();
            for i in 0..len {
                v[front + i] = seed[i % seed.len()] ^ (i / seed.len()) as u8;
            }
            v
        };
        let live = fill(front_live);
        let mut shadow = fill(front_shadow);
        if let (Some((at, x)), true) = (flip, len > 0) {
            shadow[front_shadow + at % len] ^= x;
        }
        let l = &live[front_live..front_live + len];
        let s = &shadow[front_shadow..front_shadow + len - shorter.min(len)];
        let expected = scalar::scalar_eq(l, s);
        for k in tables() {
            prop_assert_eq!((k.routines.eq)(l, s), expected, "{:?} len {} flip {:?}", k.isa, len, flip);
            if l.len() == s.len() {
                let whole = (k.routines.planes_differ)(l, s, &[(0, len)]) == 0;
                prop_assert_eq!(whole, expected, "{:?} whole, len {} flip {:?}", k.isa, len, flip);
            }
        }
    }
}

/// A test page: planes of `widths` (0 for a bit plane's 8 bytes) laid end to end from `front`,
/// as (offset, bytes); live bytes from `seed`, and a shadow equal to them but for `flips` (plane,
/// byte, XOR) and, with `pad_flip`, a byte of the padding after the planes and before them (which
/// must not count). Returns the planes, live and shadow.
fn test_page(
    widths: &[usize],
    front: usize,
    seed: &[u8],
    flips: &[(usize, usize, u8)],
    pad_flip: bool,
) -> (Vec<(usize, usize)>, Vec<u8>, Vec<u8>) {
    let mut planes = Vec::new();
    let mut at = front;
    for &w in widths {
        let n = if w == 0 { 8 } else { 64 * w };
        planes.push((at, n));
        at += n;
    }
    let live: Vec<u8> = (0..at + 64).map(|i| seed[i % seed.len()] ^ (i / seed.len()) as u8).collect();
    let mut shadow = live.clone();
    for &(p, byte, x) in flips {
        let (o, n) = planes[p % planes.len()];
        shadow[o + byte % n] ^= x;
    }
    if pad_flip {
        shadow[at] ^= 1;
        if front > 0 {
            shadow[0] ^= 1;
        }
    }
    (planes, live, shadow)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The whole-page scan against the scalar one: a page of up to 20 planes of every width (a
    /// bit plane's 8 bytes among them) laid end to end from any offset, differing in a few bytes
    /// of any plane (or in the padding, or nowhere): one bit per plane that differs, no other.
    #[test]
    fn planes_differ_agrees_with_scalar(
        widths in proptest::collection::vec(proptest::sample::select(vec![0usize, 1, 2, 4, 8, 12]), 1..20),
        front in 0usize..64,
        seed in proptest::collection::vec(any::<u8>(), 1..97),
        flips in proptest::collection::vec((any::<usize>(), any::<usize>(), 1u8..=255), 0..4),
        pad_flip in any::<bool>(),
    ) {
        // Width 0 stands for a bit plane (8 bytes).
        let (planes, live, shadow) = test_page(&widths, front, &seed, &flips, pad_flip);
        let expected = scalar::scalar_planes_differ(&live, &shadow, &planes);
        let by_hand = planes.iter().enumerate().fold(0u64, |f, (i, &(o, n))| f | u64::from(live[o..o + n] != shadow[o..o + n]) << i);
        prop_assert_eq!(expected, by_hand);
        for k in tables() {
            prop_assert_eq!((k.routines.planes_differ)(&live, &shadow, &planes), expected, "{:?} {:?}", k.isa, planes);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The one-read lane scan (`PageScan::Lanes`) against each plane diffed on its own: a page of
    /// up to 20 planes of every width (bit planes among them) laid end to end from any offset, in
    /// runs of consecutive same-width planes as a layout groups them, differing in a few bytes of
    /// any plane, in every third byte of one, in the padding or nowhere: every plane's lane mask,
    /// their OR returned, and the output past the last plane left alone; asked to copy, the
    /// shadow ends equal to live in every plane (whole or lane by lane: a lane left out, or a
    /// byte written outside the planes, fails), and untouched when not asked.
    #[test]
    fn page_lanes_agree_with_each_plane_diffed_alone(
        widths in proptest::collection::vec(proptest::sample::select(vec![0usize, 1, 2, 4, 8, 12]), 1..20),
        front in 0usize..64,
        seed in proptest::collection::vec(any::<u8>(), 1..97),
        flips in proptest::collection::vec((any::<usize>(), any::<usize>(), 1u8..=255), 0..6),
        dense in proptest::option::of(any::<usize>()),
        pad_flip in any::<bool>(),
    ) {
        use crate::schema::{PlaneRun, PlaneWidth};
        // Width 0 stands for a bit plane (8 bytes).
        let width = |w: usize| match w {
            0 => PlaneWidth::Bit,
            1 => PlaneWidth::B1,
            2 => PlaneWidth::B2,
            4 => PlaneWidth::B4,
            8 => PlaneWidth::B8,
            _ => PlaneWidth::B12,
        };
        let (planes, live, mut shadow) = test_page(&widths, front, &seed, &flips, pad_flip);
        // Consecutive planes of one width make a run, as a layout groups them.
        let mut runs: Vec<PlaneRun> = Vec::new();
        for (i, (&w, &(o, _))) in widths.iter().zip(&planes).enumerate() {
            match runs.last_mut() {
                Some(r) if r.width == width(w) => r.planes.end = i + 1,
                _ => runs.push(PlaneRun { width: width(w), offset: o, planes: i..i + 1 }),
            }
        }
        if let Some(p) = dense {
            let (o, n) = planes[p % planes.len()];
            for i in (o..o + n).step_by(3) {
                shadow[i] = shadow[i].wrapping_add(1);
            }
        }
        let expected: Vec<u64> = planes
            .iter()
            .zip(&widths)
            .map(|(&(o, n), &w)| {
                let (l, s) = (&live[o..o + n], &shadow[o..o + n]);
                if w == 0 {
                    u64::from_le_bytes(l.try_into().unwrap()) ^ u64::from_le_bytes(s.try_into().unwrap())
                } else {
                    reference(w, l, s)
                }
            })
            .collect();
        let any = expected.iter().fold(0, |a, &m| a | m);
        // With the copy, the shadow must end equal to live in every plane and untouched around
        // them (the padding before and after the planes differs where `pad_flip` set it).
        let mut copied = shadow.clone();
        for &(o, n) in &planes {
            copied[o..o + n].copy_from_slice(&live[o..o + n]);
        }
        let scalar_table: super::generic::PageLanesFn = scalar::scalar_page_lanes;
        let paths = std::iter::once(("scalar".to_string(), scalar_table))
            .chain(tables().into_iter().map(|k| (format!("{:?}", k.isa), k.routines.page_lanes)));
        for (name, page_lanes) in paths {
            for copy in [false, true] {
                let mut out = vec![0xdead_beef_u64; planes.len() + 1];
                let mut after = shadow.clone();
                prop_assert_eq!(page_lanes(&live, &mut after, &runs, &mut out, copy), any, "{}", name);
                prop_assert_eq!(&out[..planes.len()], &expected[..], "{} {:?}", name, widths);
                prop_assert_eq!(out[planes.len()], 0xdead_beef, "{} wrote past the planes it was given", name);
                prop_assert!(&after == if copy { &copied } else { &shadow }, "{} copy {}: the shadow after the scan", name, copy);
            }
        }
    }
}

/// An "equal?" test of two byte slices.
type EqTest<'a> = dyn Fn(&[u8], &[u8]) -> bool + 'a;

#[test]
fn every_byte_of_every_lane_counts() {
    for k in tables() {
        for w in WIDTHS {
            for lane in 0..64 {
                for byte in 0..w {
                    let l = vec![0u8; 64 * w];
                    let mut s = l.clone();
                    s[lane * w + byte] = 0x80;
                    assert_eq!(single(&k, w, &l, &s), 1 << lane, "{:?} width {w} lane {lane} byte {byte}", k.isa);
                }
            }
            let (l, s) = (vec![1u8; 64 * w], vec![2u8; 64 * w]);
            assert_eq!(single(&k, w, &l, &s), !0, "{:?} width {w}: every lane differs", k.isa);
        }
        // Every byte of a buffer counts for "equal?", with either scan: a few blocks and a
        // ragged tail (the whole scan's word path), and whole vectors (its vector path, both
        // accumulators).
        let first = |l: &[u8], s: &[u8]| (k.routines.eq)(l, s);
        let whole = |l: &[u8], s: &[u8]| (k.routines.planes_differ)(l, s, &[(0, l.len())]) == 0;
        let scans: [(&str, &EqTest); 2] = [("first difference", &first), ("whole", &whole)];
        for len in [1000, 1024] {
            let l = vec![7u8; len];
            for (scan, eq) in scans {
                assert!(eq(&l, &l.clone()), "{:?} {scan}", k.isa);
                for byte in 0..l.len() {
                    let mut s = l.clone();
                    s[byte] = 0x87;
                    assert!(!eq(&l, &s), "{:?} {scan}: byte {byte} of {len}", k.isa);
                }
            }
        }
    }
}

#[test]
fn every_available_isa_is_tested() {
    let ran: Vec<&str> = tables().iter().map(|k| k.isa.name()).collect();
    eprintln!("lane diff tables tested on this CPU: {}", ran.join(", "));
    assert!(ran.len() >= 2);
}

#[test]
fn best_is_available_and_names_parse() {
    assert!(Kernels::best().isa.available());
    // Calibrated: every vector table was timed, and the pick is never slower than `wide` beyond
    // the tie margin.
    let cal = Kernels::calibration();
    let time = |isa| cal.iter().find(|(i, _)| *i == isa).map(|&(_, t)| t);
    let wide = time(Isa::Wide).expect("wide is always calibrated");
    let best = time(Kernels::best().isa).expect("the pick was calibrated");
    assert!(best as f64 <= wide as f64 * CALIBRATION_TIE, "{cal:?}");
    for k in tables().iter().filter(|k| k.isa != Isa::Scalar) {
        assert!(time(k.isa).is_some(), "{:?} not calibrated: {cal:?}", k.isa);
    }
    for isa in Isa::ALL {
        assert_eq!(Isa::parse(isa.name()), Some(isa));
    }
    assert_eq!(Isa::parse("sse9"), None);
    for scan in PageScan::ALL {
        assert_eq!(PageScan::parse(scan.name()), Some(scan));
    }
    assert_eq!(PageScan::parse("all"), None);
}
