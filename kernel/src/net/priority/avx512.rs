//! The send order's key sort on AVX-512: a merge sort of `u64` keys in 512-bit registers — the
//! only `unsafe` of the actor level's ranking.
//!
//! ```text
//! pad        the keys copied into a scratch run, padded with u64::MAX to a multiple of 16
//! blocks     each 16 sorted in registers: two 8-lane sorting networks (19 compare-exchanges in
//!            6 layers of permute + min + max + blend), then a bitonic merge of the two
//! levels     runs of 16, 32, 64, … merged pairwise between two scratch runs: the merge keeps
//!            the larger 16 of the last step in registers and loads the next 16 from the run
//!            whose next key is smaller (a select, no branch), a bitonic merge of 16 + 16 a step
//! back       the first len keys of the last run
//! ```
//!
//! Padding with the largest key leaves the first `len` keys of the sorted run exactly the sorted
//! input, whatever the keys (a key equal to `u64::MAX` is indistinguishable from the padding).
//! The scalar twin is `sort_unstable` ([`super::sort`]); the property tests hold the two equal.
//!
//! Why this is sound:
//! 1. A token ([`Avx512`]) exists only after `is_x86_feature_detected!("avx512f")` said yes;
//!    [`sort`] takes one, so the `#[target_feature]` functions are only called on CPUs with the
//!    feature.
//! 2. Loads and stores go through [`load16`] and [`store16`], which take slices of exactly 16
//!    keys (checked); the merge's heads are read at indices clamped inside their runs.

#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// Proof that this CPU runs AVX-512F.
#[derive(Clone, Copy, Debug)]
pub(super) struct Avx512(());

impl Avx512 {
    /// The token, if this CPU has AVX-512F.
    pub(super) fn detect() -> Option<Self> {
        std::arch::is_x86_feature_detected!("avx512f").then_some(Self(()))
    }
}

/// Sorts `keys` ascending; `a` and `b` are scratch (kept by the caller from frame to frame).
pub(super) fn sort(t: Avx512, keys: &mut [u64], a: &mut Vec<u64>, b: &mut Vec<u64>) {
    // SAFETY: `t` exists only where the CPU has AVX-512F (its `detect`).
    unsafe { sort_with(t, keys, a, b) }
}

/// One layer of compare-exchanges within a vector: lane `i` meets lane `idx[i]`, and the lanes
/// set in `upper` keep the larger key.
#[derive(Clone, Copy)]
struct Layer {
    idx: __m512i,
    upper: __mmask8,
}

/// The networks, as vectors.
struct Nets {
    /// Sorts 8 lanes (a sorting network of 19 compare-exchanges in 6 layers — the fewest of both
    /// for 8 inputs; a test runs it on every 0-1 input, which proves it sorts every input).
    sort8: [Layer; 6],
    /// Sorts a bitonic vector: distances 4, 2, 1.
    clean: [Layer; 3],
    /// Reverses a vector.
    rev: __m512i,
}

/// A layer from its pairs (lower lane first).
const fn layer(pairs: &[(usize, usize)]) -> ([i64; 8], u8) {
    let mut idx = [0, 1, 2, 3, 4, 5, 6, 7];
    let mut upper = 0u8;
    let mut k = 0;
    while k < pairs.len() {
        let (lo, hi) = pairs[k];
        idx[lo] = hi as i64;
        idx[hi] = lo as i64;
        upper |= 1 << hi;
        k += 1;
    }
    (idx, upper)
}

const SORT8: [([i64; 8], u8); 6] = [
    layer(&[(0, 2), (1, 3), (4, 6), (5, 7)]),
    layer(&[(0, 4), (1, 5), (2, 6), (3, 7)]),
    layer(&[(0, 1), (2, 3), (4, 5), (6, 7)]),
    layer(&[(2, 4), (3, 5)]),
    layer(&[(1, 4), (3, 6)]),
    layer(&[(1, 2), (3, 4), (5, 6)]),
];

const CLEAN: [([i64; 8], u8); 3] = [
    layer(&[(0, 4), (1, 5), (2, 6), (3, 7)]),
    layer(&[(0, 2), (1, 3), (4, 6), (5, 7)]),
    layer(&[(0, 1), (2, 3), (4, 5), (6, 7)]),
];

#[target_feature(enable = "avx512f")]
fn vector(lanes: [i64; 8]) -> __m512i {
    _mm512_set_epi64(lanes[7], lanes[6], lanes[5], lanes[4], lanes[3], lanes[2], lanes[1], lanes[0])
}

#[target_feature(enable = "avx512f")]
fn nets() -> Nets {
    let l = |(idx, upper): ([i64; 8], u8)| Layer { idx: vector(idx), upper };
    Nets { sort8: SORT8.map(l), clean: CLEAN.map(l), rev: vector([7, 6, 5, 4, 3, 2, 1, 0]) }
}

#[target_feature(enable = "avx512f")]
#[inline]
fn exchange(v: __m512i, l: Layer) -> __m512i {
    let other = _mm512_permutexvar_epi64(l.idx, v);
    _mm512_mask_blend_epi64(l.upper, _mm512_min_epu64(v, other), _mm512_max_epu64(v, other))
}

/// A bitonic vector sorted.
#[target_feature(enable = "avx512f")]
#[inline]
fn clean(v: __m512i, n: &Nets) -> __m512i {
    exchange(exchange(exchange(v, n.clean[0]), n.clean[1]), n.clean[2])
}

/// Two sorted vectors merged: the smaller 8 keys, sorted, and the larger 8.
#[target_feature(enable = "avx512f")]
#[inline]
fn merge8(a: __m512i, b: __m512i, n: &Nets) -> (__m512i, __m512i) {
    let b = _mm512_permutexvar_epi64(n.rev, b);
    (clean(_mm512_min_epu64(a, b), n), clean(_mm512_max_epu64(a, b), n))
}

/// Sixteen keys as two vectors, the first 8 first.
type Sixteen = (__m512i, __m512i);

/// A bitonic sixteen sorted.
#[target_feature(enable = "avx512f")]
#[inline]
fn clean16((lo, hi): Sixteen, n: &Nets) -> Sixteen {
    (clean(_mm512_min_epu64(lo, hi), n), clean(_mm512_max_epu64(lo, hi), n))
}

/// Two sorted sixteens merged: the smaller 16 keys, sorted, and the larger 16.
#[target_feature(enable = "avx512f")]
#[inline]
fn merge16(a: Sixteen, b: Sixteen, n: &Nets) -> (Sixteen, Sixteen) {
    // `b` reversed makes `a ++ b` bitonic; the halves' min and max split it into the smaller
    // and the larger sixteen, each bitonic.
    let (b0, b1) = (_mm512_permutexvar_epi64(n.rev, b.1), _mm512_permutexvar_epi64(n.rev, b.0));
    let low = (_mm512_min_epu64(a.0, b0), _mm512_min_epu64(a.1, b1));
    let high = (_mm512_max_epu64(a.0, b0), _mm512_max_epu64(a.1, b1));
    (clean16(low, n), clean16(high, n))
}

#[target_feature(enable = "avx512f")]
#[inline]
fn load16(keys: &[u64]) -> Sixteen {
    assert_eq!(keys.len(), 16);
    let p = keys.as_ptr();
    // SAFETY: `keys` holds 16 keys (asserted): both unaligned 64-byte loads are inside it.
    unsafe { (_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(8).cast())) }
}

#[target_feature(enable = "avx512f")]
#[inline]
fn store16(keys: &mut [u64], (lo, hi): Sixteen) {
    assert_eq!(keys.len(), 16);
    let p = keys.as_mut_ptr();
    // SAFETY: `keys` holds 16 keys (asserted) and is borrowed mutably: both unaligned 64-byte
    // stores are inside it.
    unsafe {
        _mm512_storeu_si512(p.cast(), lo);
        _mm512_storeu_si512(p.add(8).cast(), hi);
    }
}

/// Merges sorted runs `a` and `b` (each a non-zero multiple of 16 long) into `out`.
#[target_feature(enable = "avx512f")]
fn merge_runs(a: &[u64], b: &[u64], out: &mut [u64], n: &Nets) {
    let (la, lb) = (a.len(), b.len());
    assert!(la % 16 == 0 && lb % 16 == 0 && la > 0 && lb > 0 && out.len() == la + lb);
    let (low, mut high) = merge16(load16(&a[..16]), load16(&b[..16]), n);
    store16(&mut out[..16], low);
    let (mut ia, mut ib) = (16, 16);
    for o in (16..la + lb - 16).step_by(16) {
        // The next sixteen come from the run whose next key is smaller (an empty run's head is
        // read at its last key and never taken): which one is a coin toss, so it is a select.
        let (ha, hb) = (a[ia.min(la - 1)], b[ib.min(lb - 1)]);
        let take_a = (ia < la) & ((ib >= lb) | (ha <= hb));
        let (run, at) = if take_a { (a, ia) } else { (b, ib) };
        ia += usize::from(take_a) * 16;
        ib += usize::from(!take_a) * 16;
        let (low, h) = merge16(high, load16(&run[at..at + 16]), n);
        high = h;
        store16(&mut out[o..o + 16], low);
    }
    store16(&mut out[la + lb - 16..], high);
}

#[target_feature(enable = "avx512f")]
fn sort_with(_: Avx512, keys: &mut [u64], a: &mut Vec<u64>, b: &mut Vec<u64>) {
    let len = keys.len();
    if len < 2 {
        return;
    }
    let n = nets();
    let padded = len.div_ceil(16) * 16;
    a.clear();
    a.extend_from_slice(keys);
    a.resize(padded, u64::MAX);
    b.clear();
    b.resize(padded, 0);
    for block in a.chunks_exact_mut(16) {
        let (lo, hi) = load16(block);
        let (lo, hi) =
            (n.sort8.iter().fold(lo, |v, &l| exchange(v, l)), n.sort8.iter().fold(hi, |v, &l| exchange(v, l)));
        store16(block, merge8(lo, hi, &n));
    }
    let (mut from, mut to) = (&mut *a, &mut *b);
    let mut width = 16;
    while width < padded {
        for (src, dst) in from.chunks(2 * width).zip(to.chunks_mut(2 * width)) {
            if src.len() <= width {
                dst.copy_from_slice(src);
            } else {
                merge_runs(&src[..width], &src[width..], dst, &n);
            }
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    keys.copy_from_slice(&from[..len]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a table of layers to 8 keys as the vector code does: lane `i` meets lane
    /// `idx[i]`, the lanes set in `upper` keep the larger.
    fn run(layers: &[([i64; 8], u8)], mut v: [u8; 8]) -> [u8; 8] {
        for &(idx, upper) in layers {
            let before = v;
            for i in 0..8 {
                let other = before[idx[i] as usize];
                v[i] = if upper >> i & 1 != 0 { before[i].max(other) } else { before[i].min(other) };
            }
        }
        v
    }

    /// Catches a network table that misses or misplaces a compare-exchange (the 8-lane sort or
    /// the bitonic clean): some 0-1 input comes out unsorted. The oracle is `sort_unstable` of
    /// that input; the tables are run lane by lane in scalar code, as the vector code reads them.
    #[test]
    fn the_networks_sort_every_zero_one_input() {
        // The 0-1 principle: a comparator network that sorts every input of 0s and 1s sorts
        // every input.
        for bits in 0u32..256 {
            let v: [u8; 8] = std::array::from_fn(|i| (bits >> i & 1) as u8);
            let mut want = v;
            want.sort_unstable();
            assert_eq!(run(&SORT8, v), want, "{bits:08b}");
        }
        // The clean sorts every bitonic 0-1 input: a run of 1s anywhere in a ring of 0s, and its
        // complement (the bitonic sequences of 0s and 1s).
        for ones in 0..=8 {
            for start in 0..8 {
                let ring: [u8; 8] = std::array::from_fn(|i| u8::from((i + 8 - start) % 8 < ones));
                for v in [ring, ring.map(|b| 1 - b)] {
                    let mut want = v;
                    want.sort_unstable();
                    assert_eq!(run(&CLEAN, v), want, "{v:?}");
                }
            }
        }
    }
}
