//! The batched push frame: a frame where every compared leaf is push-ruled, on the calling
//! thread, compares its marked lanes as one flat list instead of page by page.
//!
//! ```text
//! list   for each marked page (ascending), for each marked parent:
//!            at most BATCH_LANES marked lanes → one probe per (fixed leaf, marked lane), and
//!            one array probe per (dynamic array, marked lane) (`super::arrays`) (a page with
//!            a busier parent keeps the page walk)
//! run    for each probe, in list order: a 16-byte window around its lane read from live and
//!        shadow, the lane's bytes (a mask) diffed and written into the shadow with the rest
//!        of the window unchanged — the same few instructions for every plane width, no
//!        branch on the width or the data; a page's leaf masks gathered in a row, stored when
//!        the run leaves the page; then the array probes (`super::arrays`)
//! ```
//!
//! Why: a push frame's page walk spent most of its time around each lane, not in it — per page
//! the marks, occupancy, job borrows, a prefetch two stages ahead and a loop over the parents,
//! with a branch on each lane's data before the next page's loads could start. The list is made
//! from the marks alone (they stream in page order); the run is a tight loop whose iterations do
//! not depend on each other, so the lane loads of many probes are in flight at once, as in a
//! plain gather of the same lines. (The run dispatched on each probe's plane width at first —
//! a jump per probe, its target changing with the planes of each page: the masked window took
//! the run from 0.92–0.96 to 0.81–0.88 ms, 1M ShooterCharacter at 1 % marked, AMD EPYC Zen 3,
//! `--example push_probe`.)

use super::arrays::{ArrayProbes, ArrayTarget};
use super::lane::{at_least, fixed, fixed_mut};
use super::page::Plan;
use super::Tally;
use crate::schema::{ClassLayout, PlaneWidth, PAGE_LANES};
use crate::store::{BitIter, DirtyState};

/// A parent with more marked lanes than this on a page is compared by the page walk (its
/// planes diffed whole).
pub(super) const BATCH_LANES: u32 = 4;

/// Most parents of a class the batch takes (a page's marked parents are listed in a word).
pub(super) const MAX_PARENTS: usize = 64;

/// Most leaves of a class the batch takes (a probe names its leaf in 16 bits).
pub(super) const MAX_LEAVES: usize = u16::MAX as usize;

/// How many probes ahead the run prefetches lane lines. 16, 32 and 64 measured the same on an
/// Intel Xeon; on an AMD EPYC with AVX-512 (1M ShooterCharacter, 1 % marked) 32 took
/// `push_vs_gather` from 3.50–3.98 to 3.05–3.40 (six alternating runs each), 48 and 64 were like
/// 32, and 8 was worse (4.1–4.6).
const PROBE_PREFETCH: usize = 32;

/// How many probes ahead the run asks the L2 for a probe's lines, beside the L1 prefetch at
/// [`PROBE_PREFETCH`]. On an AMD EPYC Zen 3 (1M ShooterCharacter, 1 % marked, `--example
/// push_probe` alternating frames with and without it) 48 or 64 took the run 8–11 % off, 96–128
/// 5–8 %, 192 2 %; session 49 saw 96–192 take 9–14 % off on a Zen 4, and 48 level on an Intel Xeon
/// (session 21).
const PROBE_PREFETCH_L2: usize = 64;

/// How many marked pages ahead the listing prefetches marks and occupancy. In a 10M-actor world
/// (10 000 marked, cold) this took the push frame from 2.9–3.0 to 2.2 ms on an AMD EPYC (Zen 3)
/// and left 1M unchanged; prefetching each listed page's masks row as well made 1M slower.
const PAGE_PREFETCH: usize = 16;

/// One marked lane of one plane of a fixed leaf, as a masked 16-byte window: the run compares
/// and copies every probe the same way, whatever its plane's width.
#[derive(Clone, Copy, Debug)]
pub(super) struct Probe {
    /// Byte offset of the window in the page arrays (the same in the live and the shadow pages).
    window: usize,
    page: u32,
    leaf: u16,
    lane: u8,
    /// The lane's bytes within the window (a bit plane: its bit of the word): `MASKS[mask]`.
    mask: u8,
}

/// Bytes a probe reads and writes.
const WINDOW: usize = 16;

/// Lane widths in bytes, each with `WINDOW` masks (the lane's bytes at window offsets 0–15),
/// then a bit plane's 128 (bit `b` of the window).
const BYTE_WIDTHS: [usize; 5] = [1, 2, 4, 8, 12];

/// Every probe's mask, by [`Probe::mask`].
static MASKS: [u128; 5 * WINDOW + 128] = {
    let mut masks = [0u128; 5 * WINDOW + 128];
    let mut i = 0;
    while i < BYTE_WIDTHS.len() {
        let mut back = 0;
        while back < WINDOW {
            if back + BYTE_WIDTHS[i] <= WINDOW {
                masks[i * WINDOW + back] = (u128::MAX >> (128 - 8 * BYTE_WIDTHS[i])) << (8 * back);
            }
            back += 1;
        }
        i += 1;
    }
    let mut b = 0;
    while b < 128 {
        masks[5 * WINDOW + b] = 1 << b;
        b += 1;
    }
    masks
};

/// A plane as the listing sees it: its leaf, and each lane's window (from the page's start)
/// and mask.
#[derive(Clone, Debug)]
struct PlaneProbes {
    leaf: u16,
    lanes: Box<[(u32, u8); PAGE_LANES]>,
}

impl PlaneProbes {
    /// Lane `l`'s window holds the lane's read and lies inside the lines the read touches: it
    /// starts at the read, unless that would run past the line where the read ends. So a probe
    /// reads no line its lane does not, and stays inside the page arrays (pages and planes start
    /// on a line, a bit plane's word on 8 bytes).
    fn new(offset: usize, w: PlaneWidth, leaf: u16) -> Self {
        let (bit, bytes) = (w == PlaneWidth::Bit, w.read_bytes());
        // Where the width's masks start in `MASKS` (`BYTE_WIDTHS`' order, then the bits).
        let masks = WINDOW
            * match w {
                PlaneWidth::B1 => 0,
                PlaneWidth::B2 => 1,
                PlaneWidth::B4 => 2,
                PlaneWidth::B8 => 3,
                PlaneWidth::B12 => 4,
                PlaneWidth::Bit => 5,
            };
        let mut lanes = Box::new([(0u32, 0u8); PAGE_LANES]);
        for (lane, entry) in lanes.iter_mut().enumerate() {
            let at = offset + lane * w.read_stride();
            let o = at % 64;
            let back = if o + bytes <= 64 { o.saturating_sub(64 - WINDOW) } else { 0 };
            let mask = masks + if bit { 8 * back + lane } else { back };
            *entry = ((at - back) as u32, mask as u8);
        }
        Self { leaf, lanes }
    }

    /// The probe of lane `lane` on the page at `base`.
    #[inline(always)]
    fn probe(&self, base: usize, page: usize, lane: usize) -> Probe {
        let (window, mask) = self.lanes[lane % PAGE_LANES];
        Probe { window: base + window as usize, page: page as u32, leaf: self.leaf, lane: lane as u8, mask }
    }
}

/// The batch's lists, kept from frame to frame.
#[derive(Debug, Default)]
pub(super) struct Batch {
    probes: Vec<Probe>,
    /// The marked dynamic arrays of the pages listed.
    pub(super) arrays: ArrayProbes,
    /// Marked pages left to the page walk (a busy parent).
    pub(super) walk: Vec<usize>,
    /// Pages the batch compared, with their marked parents as bits (for the dirty statistics).
    listed: Vec<(usize, u64)>,
    /// Every plane of every fixed leaf, parent by parent: its probes, lane by lane.
    planes: Vec<PlaneProbes>,
    /// Per parent: its range of `planes`.
    parents: Vec<std::ops::Range<usize>>,
}

/// The bytes and output a batch works on.
pub(super) struct Target<'a> {
    pub(super) live: &'a [u8],
    pub(super) shadow: &'a mut [u8],
    /// The change set's leaf masks (`leaves` words a page) and changed lanes (a word a page).
    pub(super) masks: &'a mut [u64],
    pub(super) page_lanes: &'a mut [u64],
    /// The pages' dynamic arrays, live and shadow, and the change set's array changes.
    pub(super) live_arrays: &'a [crate::store::PageArrays],
    pub(super) shadow_arrays: &'a mut [crate::store::PageArrays],
    pub(super) changes: &'a mut [super::changes::PageArrayChanges],
}

impl Batch {
    /// Compares the marked pages `order` (ascending) whose parents are quiet, leaving the others
    /// in [`Batch::walk`]; counts the pages compared in `tally`. Two passes: the probes listed
    /// from the marks, then run, each prefetching the lines of the one [`PROBE_PREFETCH`] ahead
    /// (and asking the L2 for those [`PROBE_PREFETCH_L2`] ahead).
    /// (One pass that lists a page, prefetches its probes' lines and runs the probes a distance
    /// behind — 16, 64 or 256 — was 20 % slower: the prefetches, issued while listing, stalled the
    /// listing behind the memory.)
    pub(super) fn compare(
        &mut self,
        plan: &Plan<'_>,
        order: &[usize],
        (dirty, occupied): (&mut DirtyState, &[u64]),
        target: Target<'_>,
        tally: &mut Tally,
    ) {
        let layout = plan.layout();
        self.index_planes(layout);
        self.arrays.start(layout);
        self.probes.clear();
        self.walk.clear();
        self.listed.clear();
        let stats = !tally.parents.is_empty();
        for (i, &p) in order.iter().enumerate() {
            // In a large world the marked pages are far apart: their marks and occupancy are
            // a miss each unless asked for ahead.
            if let Some(&q) = order.get(i + PAGE_PREFETCH) {
                let marks = dirty.page_masks(q);
                super::prefetch_lines(marks.as_ptr() as usize, std::mem::size_of_val(marks));
                super::prefetch_addr(&occupied[q] as *const u64 as usize);
                super::prefetch_addr(dirty.page_parents_at(q));
            }
            let occ = occupied[p];
            if occ == 0 {
                continue;
            }
            let marks = dirty.page_masks(p);
            // The page's marked parents (from its parent bits: most parents are unmarked, and
            // their masks are not read), each listed as it is found; a busy one hands the page
            // to the walk, and what was listed of it is dropped. Arrays are listed once the page
            // is known to be quiet.
            let (listed, base) = (self.probes.len(), p * layout.page_bytes);
            let (mut marked_parents, mut lanes, mut busy, mut arrays) = (0u64, 0u64, false, 0u64);
            for pi in BitIter(dirty.page_parents(p)) {
                let m = marks[pi] & occ;
                if m == 0 {
                    continue;
                }
                if at_least(m, BATCH_LANES + 1) {
                    busy = true;
                    break;
                }
                marked_parents |= 1 << pi;
                lanes |= m;
                if self.arrays.has_array(pi) {
                    arrays |= 1 << pi;
                }
                for plane in &self.planes[self.parents[pi].clone()] {
                    for lane in BitIter(m) {
                        self.probes.push(plane.probe(base, p, lane));
                    }
                }
            }
            if busy {
                self.probes.truncate(listed);
                self.walk.push(p);
                continue;
            }
            if arrays != 0 {
                self.arrays.list(p, |pi| marks[pi] & occ, arrays);
            }
            tally.pages += 1;
            tally.lanes += u64::from(lanes.count_ones());
            if stats {
                self.listed.push((p, marked_parents));
                for pi in BitIter(marked_parents) {
                    tally.parents[2 * pi] += u64::from((marks[pi] & occ).count_ones());
                }
            }
            // The page's marks are consumed: cleared now, while their lines are at hand (the
            // frame's `DirtyState::clear` skips the page).
            dirty.clear_page(p);
        }
        let leaves = layout.leaves.len();
        let Target { live, shadow, masks, page_lanes, live_arrays, shadow_arrays, changes } = target;
        self.run(leaves, live, shadow, masks, page_lanes);
        let target = ArrayTarget { live: live_arrays, shadow: shadow_arrays, masks, page_lanes, changes };
        self.arrays.run(layout, target);
        if stats {
            // Dirty statistics (marked lanes were counted while listing): a marked parent's
            // lanes with a change, from the masks just written (an unmarked parent has none).
            for &(p, marked_parents) in self.listed.iter().filter(|&&(p, _)| page_lanes[p] != 0) {
                let row = &masks[p * leaves..(p + 1) * leaves];
                for pi in BitIter(marked_parents) {
                    let changed = row[layout.parents[pi].leaves.clone()].iter().fold(0, |a, &m| a | m);
                    tally.parents[2 * pi + 1] += u64::from(changed.count_ones());
                }
            }
        }
    }

    /// Runs the listed probes: each lane diffed and copied, its page's masks written.
    ///
    /// A page's leaf masks are gathered in a row of their own and stored whole when the run
    /// leaves the page: or-ing each change into the change set's row in place read that row
    /// right after zeroing it, and the read waited for its line (a quarter of the frame's samples
    /// sat on it, AMD EPYC).
    fn run(&self, leaves: usize, live: &[u8], shadow: &mut [u8], masks: &mut [u64], page_lanes: &mut [u64]) {
        let (live_at, shadow_at) = (live.as_ptr() as usize, shadow.as_ptr() as usize);
        let (mut page, mut any) = (usize::MAX, 0u64);
        let mut row = vec![0u64; leaves];
        let (masks_at, lanes_at) = (masks.as_ptr() as usize, page_lanes.as_ptr() as usize);
        let mut store = |page: usize, any: u64, row: &[u64]| {
            page_lanes[page] = any;
            masks[page * leaves..(page + 1) * leaves].copy_from_slice(row);
        };
        let mut ahead_page = u32::MAX;
        for (i, probe) in self.probes.iter().enumerate() {
            if let Some(far) = self.probes.get(i + PROBE_PREFETCH_L2) {
                super::prefetch_l2_addr(live_at + far.window);
                super::prefetch_l2_addr(shadow_at + far.window);
            }
            if let Some(ahead) = self.probes.get(i + PROBE_PREFETCH) {
                for at in [ahead.window, ahead.window + WINDOW - 1] {
                    super::prefetch_addr(live_at + at);
                    super::prefetch_addr(shadow_at + at);
                }
                // A page's first probe: its row of leaf masks and its lanes word, which the run
                // stores when it leaves the page, asked for as well (cold, each store waited for
                // its line).
                if ahead.page != ahead_page {
                    ahead_page = ahead.page;
                    let q = ahead.page as usize;
                    super::prefetch_lines(masks_at + q * leaves * 8, leaves * 8);
                    super::prefetch_addr(lanes_at + q * 8);
                }
            }
            let p = probe.page as usize;
            if p != page {
                if page != usize::MAX {
                    store(page, any, &row);
                }
                // Every listed page's masks start from zero, changed or not (they are read only
                // where its lanes say so): no branch on each probe's outcome.
                row.fill(0);
                (page, any) = (p, 0);
            }
            let lane = probe.lane as usize;
            let changed = u64::from(copy_lane(live, shadow, probe)) << lane;
            row[probe.leaf as usize] |= changed;
            any |= changed;
        }
        if page != usize::MAX {
            store(page, any, &row);
        }
    }

    /// Indexes the layout's planes by parent, once: a shadow's layout is its store's, for good.
    fn index_planes(&mut self, layout: &ClassLayout) {
        if self.parents.len() == layout.parents.len() {
            return;
        }
        self.planes.clear();
        self.parents.clear();
        for parent in &layout.parents {
            let start = self.planes.len();
            for leaf in parent.leaves.clone() {
                for pl in &layout.planes[layout.leaves[leaf].planes.clone()] {
                    self.planes.push(PlaneProbes::new(pl.page_offset, pl.width, leaf as u16));
                }
            }
            self.parents.push(start..self.planes.len());
        }
    }
}

/// Copies a probe's lane from live to shadow; returns whether it differed. The window's other
/// bytes are written back unchanged, and equal bytes are copied too: no branch on the width or
/// on the data just loaded.
#[inline(always)]
fn copy_lane(live: &[u8], shadow: &mut [u8], probe: &Probe) -> bool {
    let at = probe.window;
    let l = u128::from_le_bytes(*fixed::<WINDOW>(live, at));
    let s = fixed_mut::<WINDOW>(shadow, at);
    let old = u128::from_le_bytes(*s);
    let differ = (l ^ old) & MASKS[probe.mask as usize];
    *s = (old ^ differ).to_le_bytes();
    differ != 0
}

const _: () = assert!(PAGE_LANES <= 256, "a probe's lane is a byte");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_window_holds_its_lane_and_no_line_the_lane_does_not_touch() {
        use PlaneWidth::*;
        for w in [Bit, B1, B2, B4, B8, B12] {
            // A plane on a line, and a bit plane's word at each of its 8-byte places.
            let offsets: Vec<usize> = if w == Bit { (0..8).map(|k| 128 + 8 * k).collect() } else { vec![128] };
            for offset in offsets {
                let plane = PlaneProbes::new(offset, w, 7);
                for lane in 0..PAGE_LANES {
                    let base = 3 * 4096;
                    let probe = plane.probe(base, 3, lane);
                    let at = base + offset + lane * w.read_stride();
                    let read = at..at + w.read_bytes();
                    let window = probe.window..probe.window + WINDOW;
                    assert!(window.start <= read.start && read.end <= window.end, "{w:?} lane {lane}");
                    assert_eq!(window.start / 64, read.start / 64, "{w:?} lane {lane}: first line");
                    assert_eq!((window.end - 1) / 64, (read.end - 1) / 64, "{w:?} lane {lane}: last line");
                    let mask = MASKS[probe.mask as usize];
                    let expected = if w == Bit {
                        1u128 << (8 * (at - window.start) + lane)
                    } else {
                        (0..WINDOW).filter(|b| read.contains(&(window.start + b))).fold(0, |m, b| m | 0xff << (8 * b))
                    };
                    assert_eq!(mask, expected, "{w:?} lane {lane}");
                    assert_eq!((probe.page, probe.leaf, probe.lane as usize), (3, 7, lane));
                }
            }
        }
    }
}
