//! One lane of a plane: which lines its read touches, whether it differs between live and
//! shadow, and copying lanes from live to shadow — the lane-by-lane work under a page's compare
//! ([`super::page`]) and the push frame's probes ([`super::push`]).

use crate::schema::{PlaneWidth, PAGE_LANES};
use crate::store::BitIter;

/// From this many changed lanes on, a plane of a page whose every lane is compared is copied
/// whole — by the leaves' copies and by the lane scan's own (fewer: lane by lane, so a page with
/// one changed actor dirties one line of each changed plane, not all of them).
pub(super) const WHOLE_PLANE_LANES: u32 = 8;

/// Whether `m` has at least `n` bits set: its lowest cleared `n - 1` times (a baseline x86-64
/// build, or the AVX2 table, is not compiled for `popcnt`: `count_ones` is a dozen instructions
/// there).
#[inline(always)]
pub(super) fn at_least(mut m: u64, n: u32) -> bool {
    for _ in 1..n {
        m &= m.wrapping_sub(1);
    }
    m != 0
}

/// Calls `fetch` with the offset `at` of a read of one lane of width `w` and, when the read ends
/// in the next cache line (a 12-byte lane does in 2 of every 16: bytes 60–71 and 124–135 of a
/// plane's lines), with the offset of its last byte too.
pub(super) fn lane_lines(at: usize, w: PlaneWidth, mut fetch: impl FnMut(usize)) {
    fetch(at);
    let last = at + w.read_bytes() - 1;
    if last / 64 != at / 64 {
        fetch(last);
    }
}

/// Whether lane `lane` of a leaf's `planes` differs between the pages `live` and `shadow`
/// (integer loads, no branch per plane).
#[inline(always)]
pub(super) fn lane_differs(planes: &[crate::schema::Plane], live: &[u8], shadow: &[u8], lane: usize) -> bool {
    let mut differs = 0u64;
    for pl in planes {
        differs |= lane_bits(pl.width, live, pl.page_offset, lane) ^ lane_bits(pl.width, shadow, pl.page_offset, lane);
        if pl.width == PlaneWidth::B12 {
            // The lane's last four bytes (lane_bits covered the first eight).
            let at = pl.page_offset + lane * 12 + 8;
            differs |= (fixed::<4>(live, at) != fixed::<4>(shadow, at)) as u64;
        }
    }
    differs != 0
}

/// Lane `lane` of the plane at `o`, zero-extended (a bit plane yields that lane's bit).
#[inline(always)]
fn lane_bits(w: PlaneWidth, bytes: &[u8], o: usize, lane: usize) -> u64 {
    match w {
        PlaneWidth::Bit => word(bytes, o) >> lane & 1,
        PlaneWidth::B1 => bytes[o + lane] as u64,
        PlaneWidth::B2 => u16::from_le_bytes(*fixed(bytes, o + lane * 2)) as u64,
        PlaneWidth::B4 => u32::from_le_bytes(*fixed(bytes, o + lane * 4)) as u64,
        PlaneWidth::B8 => u64::from_le_bytes(*fixed(bytes, o + lane * 8)),
        // The first eight of the lane's twelve bytes; the caller compares the rest.
        PlaneWidth::B12 => u64::from_le_bytes(*fixed(bytes, o + lane * 12)),
    }
}

pub(super) fn word(bytes: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(*fixed::<8>(bytes, o))
}

/// The `N` bytes at `o`: planes lie inside their page by construction of the layout.
pub(super) fn fixed<const N: usize>(bytes: &[u8], o: usize) -> &[u8; N] {
    bytes[o..o + N].try_into().expect("plane lies inside its page")
}

/// The `N` bytes at `o`, to write.
pub(super) fn fixed_mut<const N: usize>(bytes: &mut [u8], o: usize) -> &mut [u8; N] {
    (&mut bytes[o..o + N]).try_into().expect("plane lies inside its page")
}

/// Copies the `lanes` of one plane from live to shadow.
pub(super) fn copy_lanes(w: PlaneWidth, live: &[u8], shadow: &mut [u8], o: usize, lanes: u64) {
    match w {
        PlaneWidth::Bit => {
            let s = (word(shadow, o) & !lanes) | (word(live, o) & lanes);
            shadow[o..o + 8].copy_from_slice(&s.to_le_bytes());
        }
        w if lanes == !0 => {
            let len = w.page_bytes();
            shadow[o..o + len].copy_from_slice(&live[o..o + len]);
        }
        PlaneWidth::B1 => copy_lanes_of::<1>(live, shadow, o, lanes),
        PlaneWidth::B2 => copy_lanes_of::<2>(live, shadow, o, lanes),
        PlaneWidth::B4 => copy_lanes_of::<4>(live, shadow, o, lanes),
        PlaneWidth::B8 => copy_lanes_of::<8>(live, shadow, o, lanes),
        PlaneWidth::B12 => copy_lanes_of::<12>(live, shadow, o, lanes),
    }
}

/// [`copy_lanes`] for lanes of `N` bytes: each lane one fixed-size move. (A copy of a run-time
/// length called `memcpy` for every lane, the most of a changed page's diff work: 1M
/// ShooterCharacter at 10 % changed copies ~60 lanes a page.)
#[inline(always)]
pub(super) fn copy_lanes_of<const N: usize>(live: &[u8], shadow: &mut [u8], o: usize, lanes: u64) {
    let (live, shadow) = (&live[o..o + N * PAGE_LANES], &mut shadow[o..o + N * PAGE_LANES]);
    for lane in BitIter(lanes) {
        let at = (lane % PAGE_LANES) * N;
        *fixed_mut::<N>(shadow, at) = *fixed::<N>(live, at);
    }
}
