//! The reference lane diff: one lane at a time, byte slices compared with `!=`.
//!
//! It is the oracle every vectorised backend is tested against, and [`super::Isa::Scalar`]'s
//! table (the slow baseline). It is deliberately not an instance of [`super::generic`]: a bug in
//! the shared algorithm must not be able to hide by appearing on both sides of the test.

use super::generic::{run, Routines};
use crate::schema::{PlaneRun, PlaneWidth};

/// Reference: lane `i` differs iff its `W` bytes differ (`N = 64 * W`).
pub fn scalar<const N: usize, const W: usize>(live: &[u8; N], shadow: &[u8; N]) -> u64 {
    let mut m = 0u64;
    for (i, (a, b)) in live.chunks_exact(W).zip(shadow.chunks_exact(W)).enumerate() {
        m |= ((a != b) as u64) << i;
    }
    m
}

/// Reference: whether two byte ranges are equal (slice `==`).
pub(crate) fn scalar_eq(live: &[u8], shadow: &[u8]) -> bool {
    live == shadow
}

/// Reference: bit `i` set iff plane `i` (offset, length) differs (slice `!=`).
pub(crate) fn scalar_planes_differ(live: &[u8], shadow: &[u8], planes: &[(usize, usize)]) -> u64 {
    debug_assert!(planes.len() <= 64, "one bit per plane: at most 64 planes");
    planes.iter().enumerate().fold(0, |flags, (i, &(o, n))| flags | u64::from(live[o..o + n] != shadow[o..o + n]) << i)
}

/// Reference: every plane's lane mask, one plane at a time with [`scalar`] (a bit plane's is its
/// words' XOR); returns their OR. With `copy`, every plane that differs is copied whole into the
/// shadow afterwards.
pub(crate) fn scalar_page_lanes(live: &[u8], shadow: &mut [u8], runs: &[PlaneRun], out: &mut [u64], copy: bool) -> u64 {
    let mut any = 0;
    for run in runs {
        let bytes = run.width.page_bytes();
        for (i, plane) in run.planes.clone().enumerate() {
            let at = run.offset + i * bytes;
            let (l, s) = (&live[at..at + bytes], &shadow[at..at + bytes]);
            let m = match run.width {
                PlaneWidth::Bit => {
                    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("a bit plane is 8 bytes"));
                    word(l) ^ word(s)
                }
                PlaneWidth::B1 => one_plane::<64, 1>(l, s),
                PlaneWidth::B2 => one_plane::<128, 2>(l, s),
                PlaneWidth::B4 => one_plane::<256, 4>(l, s),
                PlaneWidth::B8 => one_plane::<512, 8>(l, s),
                PlaneWidth::B12 => one_plane::<768, 12>(l, s),
            };
            out[plane] = m;
            any |= m;
            if copy && m != 0 {
                shadow[at..at + bytes].copy_from_slice(&live[at..at + bytes]);
            }
        }
    }
    any
}

/// [`scalar`] of one plane given as slices of its `N` bytes.
fn one_plane<const N: usize, const W: usize>(live: &[u8], shadow: &[u8]) -> u64 {
    scalar::<N, W>(live.try_into().expect("a plane is 64 lanes"), shadow.try_into().expect("a plane is 64 lanes"))
}

/// The reference table.
pub(crate) const ROUTINES: Routines = Routines {
    d1: scalar::<64, 1>,
    d2: scalar::<128, 2>,
    d4: scalar::<256, 4>,
    d8: scalar::<512, 8>,
    d12: scalar::<768, 12>,
    r1: |l, s, o| run(scalar_eq, scalar::<64, 1>, l, s, o),
    r2: |l, s, o| run(scalar_eq, scalar::<128, 2>, l, s, o),
    r4: |l, s, o| run(scalar_eq, scalar::<256, 4>, l, s, o),
    r8: |l, s, o| run(scalar_eq, scalar::<512, 8>, l, s, o),
    r12: |l, s, o| run(scalar_eq, scalar::<768, 12>, l, s, o),
    eq: scalar_eq,
    planes_differ: scalar_planes_differ,
    page_lanes: scalar_page_lanes,
};
