//! The lane diff, written once over a small vector trait; every vectorised backend instantiates it.
//!
//! ```text
//! diff_w(live, shadow):                       // 64 lanes of w bytes each, w in {1, 2, 4, 8}
//!     for each vector-sized chunk i of live and shadow:
//!         m |= ne_w(load(live_i), load(shadow_i)) << (i * lanes per vector)
//! diff_12(live, shadow):                      // a 12-byte lane is three u32 lanes
//!     eq = concatenation of !ne_32 over every chunk   // 192 bits, three per lane
//!     lanes_of_12(eq)                         // lane j differs unless bits 3j..3j+2 are all set
//! equal(live, shadow):                        // any length: memcmp's work, no lane masks
//!     OR of (live_i ^ shadow_i) over blocks of four vectors, stopping at a non-zero block
//! planes_differ(live, shadow, planes):        // every byte read, one bit per plane
//!     per plane: OR of (live_i ^ shadow_i) over it, two accumulators, one test
//! run_w(planes):                              // consecutive planes of one width
//!     per plane: 0 if equal(plane), else diff_w(plane)
//! page_lanes(live, shadow, runs, copy):       // every plane's lane mask in one read
//!     per run, per plane: diff_w(plane)         (no "equal?" pass first; returns their OR)
//!         copy: a plane that differs copied into the shadow (whole, or its changed lanes)
//! ```
//!
//! [`LaneOps`] is implemented by a zero-sized *token* per instruction set: a value of the type is
//! the proof that this CPU runs its instructions (the x86 tokens are created only after feature
//! detection or inside code compiled for the feature), so the trait's methods are safe and this
//! module holds no `unsafe`. Every method is `#[inline(always)]`: a backend wraps [`diff`],
//! [`diff12`], [`equal`] and [`run`] in functions compiled for its ISA, and the whole loop is generated
//! there, with the chunk loop fully unrolled (the lengths are constants).
//!
//! The one-lane-at-a-time reference every instantiation is tested against lives in
//! [`super::scalar`], deliberately not written over this trait.

use super::super::lane::{at_least, copy_lanes_of, WHOLE_PLANE_LANES};
use crate::schema::{PlaneRun, PlaneWidth};

/// The vector operations the lane diff needs, on a token that proves the CPU has them.
pub(crate) trait LaneOps: Copy {
    /// One vector register.
    type V: Copy;
    /// Bytes per vector; divides 64 (so no vector straddles two planes or two result words).
    const BYTES: usize;
    /// The first [`Self::BYTES`] bytes of `bytes` (no alignment needed). Panics if `bytes` is
    /// shorter; [`diff`] passes exact chunks, so the check folds away.
    fn load(self, bytes: &[u8]) -> Self::V;
    /// Bit `i` set iff byte `i` of `a` and `b` differ (`BYTES` bits).
    fn ne8(self, a: Self::V, b: Self::V) -> u64;
    /// Bit `i` set iff the `i`-th `u16` of `a` and `b` differ (`BYTES / 2` bits).
    fn ne16(self, a: Self::V, b: Self::V) -> u64;
    /// Bit `i` set iff the `i`-th `u32` of `a` and `b` differ (`BYTES / 4` bits).
    fn ne32(self, a: Self::V, b: Self::V) -> u64;
    /// Bit `i` set iff the `i`-th `u64` of `a` and `b` differ (`BYTES / 8` bits).
    fn ne64(self, a: Self::V, b: Self::V) -> u64;
    /// The all-zero vector.
    fn zero(self) -> Self::V;
    /// `acc | (a ^ b)`: accumulates where two vectors differ, without a mask.
    fn or_xor(self, acc: Self::V, a: Self::V, b: Self::V) -> Self::V;
    /// Whether every bit of `v` is zero.
    fn is_zero(self, v: Self::V) -> bool;
}

/// Whether `live` and `shadow` hold the same bytes (`false` when their lengths differ): the
/// "equal?" pass that runs before any lane mask, at the cost of a `memcmp`.
///
/// ```text
/// for each block of 4 vectors:  acc = OR of (live ^ shadow) over the block; stop at the first
///                               block with acc != 0
/// the remaining whole vectors:  the same, one vector at a time
/// the last < BYTES bytes:       compared as a slice
/// ```
///
/// No lane masks, no movemask: one XOR and one OR per vector, and one test per block (so a page
/// whose first plane differs is abandoned after a few hundred bytes and its planes are diffed
/// from there, not read twice from memory).
#[inline(always)]
pub(crate) fn equal<S: LaneOps>(ops: S, live: &[u8], shadow: &[u8]) -> bool {
    if live.len() != shadow.len() {
        return false;
    }
    let block = 4 * S::BYTES;
    let mut l = live.chunks_exact(block);
    let mut s = shadow.chunks_exact(block);
    for (lb, sb) in (&mut l).zip(&mut s) {
        let mut acc = ops.zero();
        for (lv, sv) in lb.chunks_exact(S::BYTES).zip(sb.chunks_exact(S::BYTES)) {
            acc = ops.or_xor(acc, ops.load(lv), ops.load(sv));
        }
        if !ops.is_zero(acc) {
            return false;
        }
    }
    let (l, s) = (l.remainder(), s.remainder());
    let mut lv = l.chunks_exact(S::BYTES);
    let mut sv = s.chunks_exact(S::BYTES);
    let mut acc = ops.zero();
    for (a, b) in (&mut lv).zip(&mut sv) {
        acc = ops.or_xor(acc, ops.load(a), ops.load(b));
    }
    ops.is_zero(acc) && lv.remainder() == sv.remainder()
}

/// Whether `live` and `shadow` hold the same bytes, like [`equal`], but reading every byte: no
/// test until the end, so a page that differs early is still read whole at `memcmp`'s pace (its
/// loads independent of one another, as many in flight as the core allows), and the lane diffs
/// that follow find it in L1 (see `PageScan::Whole`).
#[inline(always)]
pub(crate) fn equal_whole<S: LaneOps>(ops: S, live: &[u8], shadow: &[u8]) -> bool {
    if live.len() != shadow.len() {
        return false;
    }
    let pair = 2 * S::BYTES;
    let mut l = live.chunks_exact(pair);
    let mut s = shadow.chunks_exact(pair);
    // Two accumulators: consecutive vectors do not wait on one another's OR.
    let (mut a0, mut a1) = (ops.zero(), ops.zero());
    for (lp, sp) in (&mut l).zip(&mut s) {
        a0 = ops.or_xor(a0, ops.load(lp), ops.load(sp));
        a1 = ops.or_xor(a1, ops.load(&lp[S::BYTES..]), ops.load(&sp[S::BYTES..]));
    }
    let (l, s) = (l.remainder(), s.remainder());
    let mut lv = l.chunks_exact(S::BYTES);
    let mut sv = s.chunks_exact(S::BYTES);
    for (a, b) in (&mut lv).zip(&mut sv) {
        a0 = ops.or_xor(a0, ops.load(a), ops.load(b));
    }
    ops.is_zero(ops.or_xor(a0, a1, ops.zero())) && lv.remainder() == sv.remainder()
}

/// Bit `i` set iff the bytes of `planes[i]` (offset, length) differ between `live` and
/// `shadow`: [`equal_whole`] plane by plane, so a page is read whole at `memcmp`'s pace and what
/// follows diffs only the planes that differ (from L1). A length that is not a whole number of
/// vectors (a bit plane's 8 bytes) is compared as 64-bit words and a ragged tail.
#[inline(always)]
pub(crate) fn planes_differ<S: LaneOps>(ops: S, live: &[u8], shadow: &[u8], planes: &[(usize, usize)]) -> u64 {
    debug_assert!(planes.len() <= 64, "one bit per plane: at most 64 planes");
    let mut flags = 0u64;
    for (i, &(o, n)) in planes.iter().enumerate() {
        let (l, s) = (&live[o..o + n], &shadow[o..o + n]);
        let differs = if n % S::BYTES == 0 {
            !equal_whole(ops, l, s)
        } else {
            let (mut lw, mut sw) = (l.chunks_exact(8), s.chunks_exact(8));
            let words = (&mut lw).zip(&mut sw).fold(0u64, |acc, (a, b)| {
                acc | (u64::from_le_bytes(a.try_into().unwrap_or_default())
                    ^ u64::from_le_bytes(b.try_into().unwrap_or_default()))
            });
            words != 0 || lw.remainder() != sw.remainder()
        };
        flags |= u64::from(differs) << i;
    }
    flags
}

/// Every plane's lane mask in one read of a page (`PageScan::Lanes`): `out[plane]` gets the
/// lanes of that plane whose bytes differ, for every plane of `runs`; returns the OR of them all
/// (0: the page's planes are equal). No "equal?" pass first and no second read: each vector is
/// compared lane by lane as it arrives, so an equal page costs a compare and a mask per vector
/// where [`equal_whole`] costs an XOR and an OR, and a changed page is read once.
///
/// With `copy` (every lane of the page is compared), a plane that differs is copied into the
/// shadow right after its mask, from L1 — whole from `lane::WHOLE_PLANE_LANES` changed lanes on,
/// else lane by lane (a lane outside the mask is equal already, so the shadow ends equal to live
/// in every plane). Copied here, the copies sit among the page's loads, where the out-of-order
/// window overlaps them with the memory stream; after the scan they stalled it.
///
/// Nothing is prefetched here: asking for the next page's lines plane by plane as this one is
/// read (as `Plan::diff_runs` does) cost 5–19 % at 0.1–100 % changed on an AMD EPYC Zen 3 (1M
/// ShooterCharacter, one thread, side by side with `--example compare_ab`): every page pays for
/// it, equal ones too, and the hardware's stream is already running.
#[inline(always)]
pub(crate) fn page_lanes<S: LaneOps>(
    ops: S,
    live: &[u8],
    shadow: &mut [u8],
    runs: &[PlaneRun],
    out: &mut [u64],
    copy: bool,
) -> u64 {
    let mut any = 0u64;
    for run in runs {
        let bytes = run.width.page_bytes();
        let span = run.offset..run.offset + run.planes.len() * bytes;
        let (l, s) = (&live[span.clone()], &mut shadow[span]);
        let o = &mut out[run.planes.clone()];
        any |= match run.width {
            PlaneWidth::Bit => {
                lanes_of_run::<8, 0>(l, s, o, copy, |a, b| u64::from_le_bytes(*a) ^ u64::from_le_bytes(*b))
            }
            PlaneWidth::B1 => lanes_of_run::<64, 1>(l, s, o, copy, |a, b| diff::<_, 64, 1>(ops, a, b)),
            PlaneWidth::B2 => lanes_of_run::<128, 2>(l, s, o, copy, |a, b| diff::<_, 128, 2>(ops, a, b)),
            PlaneWidth::B4 => lanes_of_run::<256, 4>(l, s, o, copy, |a, b| diff::<_, 256, 4>(ops, a, b)),
            PlaneWidth::B8 => lanes_of_run::<512, 8>(l, s, o, copy, |a, b| diff::<_, 512, 8>(ops, a, b)),
            PlaneWidth::B12 => lanes_of_run::<768, 12>(l, s, o, copy, |a, b| diff12(ops, a, b)),
        };
    }
    any
}

/// `out[i]` = `d` of the `i`-th `N`-byte plane of a run (lanes of `W` bytes; `W = 0`: a bit
/// plane), each plane that differs copied into the shadow when `copy` (see [`page_lanes`]);
/// returns their OR.
#[inline(always)]
fn lanes_of_run<const N: usize, const W: usize>(
    live: &[u8],
    shadow: &mut [u8],
    out: &mut [u64],
    copy: bool,
    d: impl Fn(&[u8; N], &[u8; N]) -> u64,
) -> u64 {
    let mut any = 0u64;
    for ((l, s), o) in live.chunks_exact(N).zip(shadow.chunks_exact_mut(N)).zip(out) {
        let (Ok(la), Ok(sa)) = (<&[u8; N]>::try_from(l), <&mut [u8; N]>::try_from(s)) else {
            continue;
        };
        let m = d(la, sa);
        *o = m;
        any |= m;
        if copy && m != 0 {
            if W == 0 || at_least(m, WHOLE_PLANE_LANES) {
                *sa = *la;
            } else {
                copy_lanes_of::<W>(la, sa, 0, m);
            }
        }
    }
    any
}

/// Lanes of a plane of 64 `W`-byte lanes (`N = 64 * W`, `W` in 1, 2, 4, 8) whose bytes differ.
#[inline(always)]
pub(crate) fn diff<S: LaneOps, const N: usize, const W: usize>(ops: S, live: &[u8; N], shadow: &[u8; N]) -> u64 {
    const { assert!(N == 64 * W && (W == 1 || W == 2 || W == 4 || W == 8)) };
    let per_vector = S::BYTES / W;
    let mut m = 0u64;
    for (i, (l, s)) in live.chunks_exact(S::BYTES).zip(shadow.chunks_exact(S::BYTES)).enumerate() {
        let (a, b) = (ops.load(l), ops.load(s));
        let ne = match W {
            1 => ops.ne8(a, b),
            2 => ops.ne16(a, b),
            4 => ops.ne32(a, b),
            _ => ops.ne64(a, b),
        };
        m |= ne << (i * per_vector);
    }
    m
}

/// Lanes of a plane of 64 twelve-byte lanes (vectors and rotators) whose bytes differ.
///
/// The 192 "equal" bits are gathered one 64-bit word at a time in a register (a loop writing
/// `eq[bit / 64]` in memory chains every vector through a store and a reload).
#[inline(always)]
pub(crate) fn diff12<S: LaneOps>(ops: S, live: &[u8; 768], shadow: &[u8; 768]) -> u64 {
    let per_vector = S::BYTES / 4;
    let per_word = 64 / per_vector;
    let all = u64::MAX >> (64 - per_vector);
    let mut eq = [0u64; 3];
    for (w, e) in eq.iter_mut().enumerate() {
        let mut acc = 0u64;
        for j in 0..per_word {
            let at = (w * per_word + j) * S::BYTES;
            let ne = ops.ne32(ops.load(&live[at..at + S::BYTES]), ops.load(&shadow[at..at + S::BYTES]));
            acc |= (!ne & all) << (j * per_vector);
        }
        *e = acc;
    }
    // An equal plane (every page's, with `PageScan::Lanes`) needs no regrouping.
    if eq == [u64::MAX; 3] {
        return 0;
    }
    lanes_of_12(&eq)
}

/// Lanes of a 12-byte plane that differ, from the plane's 192 four-byte "equal" bits (bit `i` of
/// the 192-bit string `eq` is set when the `i`-th `u32` of live and shadow are equal): lane `j`
/// is unchanged iff bits `3j`, `3j+1`, `3j+2` are all set.
///
/// Eight lanes are 24 bits: AND each bit with its two upper neighbours, then gather every third
/// bit with three shift-or-mask steps (bits 0,3,…,21 → 0..8).
#[inline(always)]
pub(crate) fn lanes_of_12(eq: &[u64; 3]) -> u64 {
    let mut changed = 0u64;
    for k in 0..8 {
        let start = 24 * k;
        let (w, off) = (start / 64, start % 64);
        let mut bits = eq[w] >> off;
        if off > 40 && w + 1 < 3 {
            bits |= eq[w + 1] << (64 - off);
        }
        let m = bits & 0xff_ffff;
        let mut x = m & (m >> 1) & (m >> 2) & 0x24_9249;
        x = (x | (x >> 2)) & 0x0c_30c3;
        x = (x | (x >> 4)) & 0xf00f;
        x = (x | (x >> 8)) & 0xff;
        changed |= (!x & 0xff) << (8 * k);
    }
    changed
}

/// Applies a one-plane diff to each of `out.len()` consecutive planes of `N` bytes; planes beyond
/// the shorter input are left untouched. A plane whose bytes are `eq`ual gets 0 without a lane
/// mask (one XOR/OR pass); only a plane that differs is diffed lane by lane (from L1 by then).
/// Backends wrap it in a function compiled for their ISA, so one call covers a whole run of
/// same-width planes.
#[inline(always)]
pub(crate) fn run<const N: usize>(
    eq: impl Fn(&[u8], &[u8]) -> bool,
    d: impl Fn(&[u8; N], &[u8; N]) -> u64,
    live: &[u8],
    shadow: &[u8],
    out: &mut [u64],
) {
    for ((l, s), o) in live.chunks_exact(N).zip(shadow.chunks_exact(N)).zip(out) {
        if let (Ok(la), Ok(sa)) = (l.try_into(), s.try_into()) {
            *o = if eq(l, s) { 0 } else { d(la, sa) };
        }
    }
}

/// Whether two byte slices are equal (see [`equal`]).
pub(crate) type EqFn = fn(&[u8], &[u8]) -> bool;

/// Bit `i` set iff plane `i` (offset, length) of two pages differs (see [`planes_differ`]); at
/// most 64 planes.
pub(crate) type PlanesFn = fn(&[u8], &[u8], &[(usize, usize)]) -> u64;

/// Every plane's lane mask of a page in one read, each plane that differs copied into the
/// shadow when asked (see [`page_lanes`]).
pub(crate) type PageLanesFn = fn(&[u8], &mut [u8], &[PlaneRun], &mut [u64], bool) -> u64;

/// Diffs `out.len()` consecutive planes of `live` and `shadow` (see [`run`]).
pub(crate) type RunFn = fn(&[u8], &[u8], &mut [u64]);

/// One backend's lane diffs: one routine per plane width, and a run version of each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Routines {
    pub d1: fn(&[u8; 64], &[u8; 64]) -> u64,
    pub d2: fn(&[u8; 128], &[u8; 128]) -> u64,
    pub d4: fn(&[u8; 256], &[u8; 256]) -> u64,
    pub d8: fn(&[u8; 512], &[u8; 512]) -> u64,
    pub d12: fn(&[u8; 768], &[u8; 768]) -> u64,
    /// `out[i]` = diff of the `i`-th plane of a run of same-width planes (0 without a lane
    /// mask when the plane's bytes are equal).
    pub r1: RunFn,
    pub r2: RunFn,
    pub r4: RunFn,
    pub r8: RunFn,
    pub r12: RunFn,
    /// Whether two byte ranges are equal: a page's "anything to do?" test, stopping at the
    /// first difference.
    pub eq: EqFn,
    /// Which of a page's planes differ, every byte read ([`planes_differ`]).
    pub planes_differ: PlanesFn,
    /// Every plane's lane mask of a page in one read ([`page_lanes`]).
    pub page_lanes: PageLanesFn,
}
