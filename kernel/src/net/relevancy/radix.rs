//! Sorting the relevancy index's link lists — (key, due index) pairs pushed in due order — by
//! key, and the due list by GUID (the send order's tie-break ranks, `level::GuidRanks`): a
//! least-significant-digit radix sort over the bytes in which the keys differ.
//!
//! ```text
//! varying   = OR of (key XOR first key): the bytes where some key differs
//! per varying byte, lowest first: count the byte's values, place each pair after the pairs
//!                                 with a smaller value (stable), swap the buffers
//! ```
//!
//! Stable, so pairs with one key keep their input order: for a list pushed in ascending due
//! index the result is exactly the tuples' sorted order. A frame's lists key by few distinct
//! GUIDs or connections (2 000 projectiles instigated by 100 characters), which
//! `sort_unstable` ordered by comparison ~n log n times; here a pass is a read and a write of
//! each pair, and keys below 2²⁴ take three.

/// Below this many pairs a comparison sort is cheaper than the passes' counting.
const RADIX_FROM: usize = 256;

/// Sorts `v` (pushed with non-decreasing `.1` among equal keys) by `(key, .1)`, keys from `key`;
/// `scratch` is reused from call to call.
pub(crate) fn sort_pairs<K: Copy + Ord>(v: &mut Vec<(K, u32)>, scratch: &mut Vec<(K, u32)>, key: impl Fn(K) -> u64) {
    if v.len() < RADIX_FROM {
        v.sort_unstable();
        return;
    }
    let first = key(v[0].0);
    let varying = v.iter().fold(0u64, |acc, p| acc | (key(p.0) ^ first));
    if varying == 0 {
        // One key: pushed in order, the list is sorted.
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(v);
    let (mut src, mut dst) = (v, scratch);
    let mut swapped = false;
    for byte in (0..8).filter(|b| varying >> (8 * b) & 0xff != 0) {
        let shift = 8 * byte;
        let mut start = [0usize; 257];
        for p in src.iter() {
            start[(key(p.0) >> shift & 0xff) as usize + 1] += 1;
        }
        for d in 0..256 {
            start[d + 1] += start[d];
        }
        for p in src.iter() {
            let d = (key(p.0) >> shift & 0xff) as usize;
            dst[start[d]] = *p;
            start[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        swapped = !swapped;
    }
    if swapped {
        // The sorted pairs are in the scratch buffer: back into the list.
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_radix_order_is_the_tuples_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut scratch = Vec::new();
        for (len, spread) in [(0, 1), (5, 3), (255, 7), (256, 1), (300, 100), (2000, 1 << 20), (5000, u64::MAX)] {
            // Pushed in ascending index, keys drawn from `spread` values (one value: nothing varies).
            let list: Vec<(u64, u32)> = (0..len).map(|i| (next() % spread, i as u32)).collect();
            let mut want = list.clone();
            want.sort_unstable();
            let mut got = list.clone();
            sort_pairs(&mut got, &mut scratch, |k| k);
            assert_eq!(got, want, "len {len}, spread {spread}");
        }
        // Keys whose high bytes differ only (an odd number of passes and an even one).
        for shift in [8, 16, 56] {
            let list: Vec<(u64, u32)> = (0..400).map(|i| ((next() % 3) << shift, i)).collect();
            let mut want = list.clone();
            want.sort_unstable();
            let mut got = list.clone();
            sort_pairs(&mut got, &mut scratch, |k| k);
            assert_eq!(got, want, "shift {shift}");
        }
    }
}
