//! Dynamic arrays: one lane's element-wise compare, and the push frame's marked arrays as one
//! list.
//!
//! ```text
//! lane   equal length and bytes → no change (one memcmp); else, element by element, an
//!        equal element is skipped whole and a differing one names its differing leaves;
//!        elements past the shadow's length are new (all their leaves); the shadow takes
//!        live's bytes
//! list   the batched push frame lists each marked array of a quiet page as a probe
//!        (page, lane, leaf, array), leaf by leaf within a page, lane by lane within a leaf —
//!        the change set's order, as the page walk writes it
//! run    probe i: asked for, live and shadow — the page's arrays of probe i + 3·AHEAD (where
//!        its headers are), the headers of probe i + 2·AHEAD, the element bytes of probe
//!        i + AHEAD (each found from what the stage before brought) — then probe i compared
//! ```
//!
//! Why a list: an array lives beside its page, behind a header in the page's [`PageArrays`],
//! itself behind the page's entry in the class's table, so a cold array is three misses in a
//! row (table entry, header, bytes) on each side. The page walk met
//! them one marked page at a time, each miss waited for; in the list, the loads of many probes
//! are in flight at once. (1 % of 100 000 ShooterCharacter with only the `Inventory` array
//! marked, AMD EPYC Zen 5: see the README's measurements.)

use super::changes::PageArrayChanges;
use super::simd::prefetch_addr;
use crate::schema::{ArrayLayout, ClassLayout, PAGE_LANES};
use crate::store::PageArrays;

/// Compares one lane's array, `live` against `shadow`; on a change the shadow takes live's
/// bytes, the change's nested handles (`element * element_leaves + leaf + 1`, ascending) are
/// pushed onto `handles` and its new length is returned (no change: `handles` as it was).
pub(super) fn compare_lane(
    array: &ArrayLayout,
    live: &[u8],
    shadow: &mut Vec<u8>,
    handles: &mut Vec<u16>,
) -> Option<u16> {
    // A marked array written with what it held costs one comparison: equal bytes are no change,
    // whatever the elements (a leaf differs only where bytes do).
    if live == shadow.as_slice() {
        return None;
    }
    let (stride, n) = (array.stride, array.elements.len());
    let (nl, ns) = (live.len() / stride, shadow.len() / stride);
    let start = handles.len();
    for e in 0..nl {
        let element = &live[e * stride..(e + 1) * stride];
        let old = if e < ns { Some(&shadow[e * stride..(e + 1) * stride]) } else { None };
        if old == Some(element) {
            continue;
        }
        for (i, el) in array.elements.iter().enumerate() {
            let r = el.offset..el.offset + el.kind.byte_size();
            if old.is_none_or(|old| element[r.clone()] != old[r]) {
                handles.push((e * n + i + 1) as u16);
            }
        }
    }
    // The shadow takes live's bytes (its buffer kept where they fit). Bytes that differ only
    // between an element's leaves, at the same length, are no change.
    shadow.clear();
    shadow.extend_from_slice(live);
    (nl != ns || handles.len() > start).then_some(nl as u16)
}

/// One marked dynamic array of a page the batch takes.
#[derive(Clone, Copy, Debug)]
pub(super) struct ArrayProbe {
    page: u32,
    /// The array's leaf in the layout.
    leaf: u16,
    /// The array's index in the layout's arrays.
    array: u16,
    lane: u8,
}

/// How many probes ahead the array run asks for element bytes; headers twice as far, the
/// page's header table three times.
const AHEAD: usize = 8;

/// The batch's array probes, kept from frame to frame.
#[derive(Debug, Default)]
pub(super) struct ArrayProbes {
    probes: Vec<ArrayProbe>,
    /// Pages with an array probe (their change lists are reset by the next frame).
    pub(super) pages: Vec<usize>,
    /// Per parent: its (leaf, array) pairs.
    parents: Vec<Vec<(u16, u16)>>,
}

/// The arrays and output the array run works on.
pub(super) struct ArrayTarget<'a> {
    pub(super) live: &'a [PageArrays],
    pub(super) shadow: &'a mut [PageArrays],
    /// The change set's leaf masks (`leaves` words a page), changed lanes (a word a page) and
    /// array changes (a list a page).
    pub(super) masks: &'a mut [u64],
    pub(super) page_lanes: &'a mut [u64],
    pub(super) changes: &'a mut [PageArrayChanges],
}

impl ArrayProbes {
    /// Forgets the last frame's probes; indexes the layout's arrays by parent, once.
    pub(super) fn start(&mut self, layout: &ClassLayout) {
        self.probes.clear();
        self.pages.clear();
        if self.parents.len() != layout.parents.len() {
            self.parents = vec![Vec::new(); layout.parents.len()];
            for (a, array) in layout.arrays.iter().enumerate() {
                self.parents[array.parent].push((array.leaf as u16, a as u16));
            }
        }
    }

    /// Whether parent `pi` has a dynamic array.
    pub(super) fn has_array(&self, pi: usize) -> bool {
        !self.parents[pi].is_empty()
    }

    /// Lists page `p`'s arrays of the parents `parents` (as bits), each in the lanes `marks`
    /// gives it: by leaf, then lane (parents ascending, a parent's arrays in leaf order).
    pub(super) fn list(&mut self, p: usize, marks: impl Fn(usize) -> u64, parents: u64) {
        let start = self.probes.len();
        for pi in crate::store::BitIter(parents) {
            for &(leaf, array) in &self.parents[pi] {
                for lane in crate::store::BitIter(marks(pi)) {
                    self.probes.push(ArrayProbe { page: p as u32, leaf, array, lane: lane as u8 });
                }
            }
        }
        if self.probes.len() > start {
            self.pages.push(p);
        }
    }

    /// Compares the listed arrays, each asking for those ahead of it (see the module docs). A
    /// page's lanes word is 0 until this frame's first change on it (the change set's reset,
    /// then the fixed run, which stores it for the pages it ran): the first change zeroes the
    /// page's leaf masks (stale from an earlier frame unless the fixed run stored them).
    pub(super) fn run(&self, layout: &ClassLayout, target: ArrayTarget<'_>) {
        let ArrayTarget { live, shadow, masks, page_lanes, changes } = target;
        let leaves = layout.leaves.len();
        let header = |a: &ArrayProbe| a.array as usize * PAGE_LANES + a.lane as usize;
        for (i, probe) in self.probes.iter().enumerate() {
            if let Some(farthest) = self.probes.get(i + 3 * AHEAD) {
                let q = farthest.page as usize;
                prefetch_addr(&live[q] as *const PageArrays as usize);
                prefetch_addr(&shadow[q] as *const PageArrays as usize);
            }
            if let Some(far) = self.probes.get(i + 2 * AHEAD) {
                let (q, k) = (far.page as usize, header(far));
                prefetch_addr(&live[q][k] as *const Vec<u8> as usize);
                prefetch_addr(&shadow[q][k] as *const Vec<u8> as usize);
                // Where a change is written: the page's list of array changes, leaf masks and
                // lanes word.
                prefetch_addr(&changes[q] as *const PageArrayChanges as usize);
                prefetch_addr(&masks[q * leaves + far.leaf as usize] as *const u64 as usize);
                prefetch_addr(&page_lanes[q] as *const u64 as usize);
            }
            if let Some(near) = self.probes.get(i + AHEAD) {
                let (q, k) = (near.page as usize, header(near));
                prefetch_addr(live[q][k].as_ptr() as usize);
                prefetch_addr(shadow[q][k].as_ptr() as usize);
                prefetch_addr(changes[q].elements_mut().as_ptr() as usize);
            }
            let (p, k) = (probe.page as usize, header(probe));
            let array = &layout.arrays[probe.array as usize];
            if let Some(new_len) = compare_lane(array, &live[p][k], &mut shadow[p][k], changes[p].elements_mut()) {
                let lane = probe.lane as usize;
                let row = &mut masks[p * leaves..(p + 1) * leaves];
                if page_lanes[p] == 0 {
                    row.fill(0);
                }
                row[probe.leaf as usize] |= 1 << lane;
                page_lanes[p] |= 1 << lane;
                changes[p].push((p * PAGE_LANES + lane) as u32, probe.leaf, new_len);
            }
        }
    }
}
