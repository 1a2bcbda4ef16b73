//! The batched push frame: a frame where every compared leaf is push-ruled, on the calling
//! thread, compares its marked lanes as one flat list instead of page by page.
//!
//! ```text
//! list   for each marked page (ascending), for each marked parent:
//!            at most BATCH_LANES marked lanes and no dynamic array → one probe per
//!            (fixed leaf, marked lane) (a page with a busier parent keeps the page walk)
//! run    for each probe, in list order: its lane's planes diffed live against shadow and
//!        copied into the shadow (equal bytes copied too: no branch on the data); a page's
//!        first change zeroes its leaf masks, each change sets its bit
//! ```
//!
//! Why: a push frame's page walk spent most of its time around each lane, not in it — per page
//! the marks, occupancy, job borrows, a prefetch two stages ahead and a loop over the parents,
//! with a branch on each lane's data before the next page's loads could start. The list is made
//! from the marks alone (they stream in page order); the run is a tight loop whose iterations do
//! not depend on each other, so the lane loads of many probes are in flight at once, as in a
//! plain gather of the same lines.

use super::lane::{at_least, lane_lines};
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

/// How many marked pages ahead the listing prefetches marks and occupancy. In a 10M-actor world
/// (10 000 marked, cold) this took the push frame from 2.9–3.0 to 2.2 ms on an AMD EPYC (Zen 3)
/// and left 1M unchanged; prefetching each listed page's masks row as well made 1M slower.
const PAGE_PREFETCH: usize = 16;

/// One marked lane of one plane of a fixed leaf: where its bytes are (the same offset in the
/// live and the shadow pages), how wide, and which leaf mask it reports to.
#[derive(Clone, Copy, Debug)]
pub(super) struct Probe {
    /// Byte offset of the lane in the page arrays (a bit plane: of its 8-byte word).
    at: usize,
    page: u32,
    leaf: u16,
    lane: u8,
    width: PlaneWidth,
}

/// The batch's lists, kept from frame to frame.
#[derive(Debug, Default)]
pub(super) struct Batch {
    probes: Vec<Probe>,
    /// Marked pages left to the page walk (a busy parent, or a dynamic array marked).
    pub(super) walk: Vec<usize>,
    /// Pages the batch compared, with their marked parents as bits (for the dirty statistics).
    listed: Vec<(usize, u64)>,
    /// Every plane of every fixed leaf, parent by parent: (page offset, width, leaf).
    planes: Vec<(usize, PlaneWidth, u16)>,
    /// Per parent: its range of `planes`, and whether it has a dynamic array.
    parents: Vec<(std::ops::Range<usize>, bool)>,
}

/// The bytes and output a batch works on.
pub(super) struct Target<'a> {
    pub(super) live: &'a [u8],
    pub(super) shadow: &'a mut [u8],
    /// The change set's leaf masks (`leaves` words a page) and changed lanes (a word a page).
    pub(super) masks: &'a mut [u64],
    pub(super) page_lanes: &'a mut [u64],
}

impl Batch {
    /// Compares the marked pages `order` (ascending) whose parents are quiet, leaving the others
    /// in [`Batch::walk`]; counts the pages compared in `tally`. Two passes: the probes listed
    /// from the marks, then run, each prefetching the lines of the one [`PROBE_PREFETCH`] ahead.
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
            // The marked parents as bits (from the page's parent bits: most parents are
            // unmarked, and their masks are not read), and whether one keeps the page in the walk.
            let (mut marked_parents, mut lanes, mut busy) = (0u64, 0u64, false);
            for pi in BitIter(dirty.page_parents(p)) {
                let m = marks[pi] & occ;
                marked_parents |= u64::from(m != 0) << pi;
                lanes |= m;
                busy |= m != 0 && (self.parents[pi].1 || at_least(m, BATCH_LANES + 1));
            }
            if busy {
                self.walk.push(p);
                continue;
            }
            tally.pages += 1;
            tally.lanes += u64::from(lanes.count_ones());
            if stats {
                self.listed.push((p, marked_parents));
            }
            let base = p * layout.page_bytes;
            for pi in BitIter(marked_parents) {
                let marked = marks[pi] & occ;
                if stats {
                    tally.parents[2 * pi] += u64::from(marked.count_ones());
                }
                for &(offset, width, leaf) in &self.planes[self.parents[pi].0.clone()] {
                    let step = width.read_stride();
                    for lane in BitIter(marked) {
                        let at = base + offset + lane * step;
                        self.probes.push(Probe { at, page: p as u32, leaf, lane: lane as u8, width });
                    }
                }
            }
            // The page's marks are consumed: cleared now, while their lines are at hand (the
            // frame's `DirtyState::clear` skips the page).
            dirty.clear_page(p);
        }
        let leaves = layout.leaves.len();
        let Target { live, shadow, masks, page_lanes } = target;
        self.run(leaves, live, shadow, masks, page_lanes);
        if !tally.parents.is_empty() {
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
            if let Some(ahead) = self.probes.get(i + PROBE_PREFETCH) {
                lane_lines(ahead.at, ahead.width, |at| {
                    super::prefetch_addr(live_at + at);
                    super::prefetch_addr(shadow_at + at);
                });
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
            let changed = u64::from(copy_lane(probe.width, live, shadow, probe.at, lane)) << lane;
            row[probe.leaf as usize] |= changed;
            any |= changed;
        }
        if page != usize::MAX {
            store(page, any, &row);
        }
    }

    /// Indexes the layout's planes by parent.
    fn index_planes(&mut self, layout: &ClassLayout) {
        self.planes.clear();
        self.parents.clear();
        for parent in &layout.parents {
            let start = self.planes.len();
            let mut array = false;
            for leaf in parent.leaves.clone() {
                let l = &layout.leaves[leaf];
                array |= l.array.is_some();
                for pl in &layout.planes[l.planes.clone()] {
                    self.planes.push((pl.page_offset, pl.width, leaf as u16));
                }
            }
            self.parents.push((start..self.planes.len(), array));
        }
    }
}

/// Copies the lane at byte `at` of a plane of width `w` (a bit plane: bit `lane` of the word
/// at `at`) from live to shadow; returns whether it differed. Equal bytes are copied too: a
/// store is cheaper than a branch on the data just loaded.
#[inline(always)]
fn copy_lane(w: PlaneWidth, live: &[u8], shadow: &mut [u8], at: usize, lane: usize) -> bool {
    fn copy<const N: usize>(live: &[u8], shadow: &mut [u8], at: usize) -> bool {
        let l: [u8; N] = live[at..at + N].try_into().expect("a lane lies inside its page");
        let s = &mut shadow[at..at + N];
        let differs = *s != l;
        s.copy_from_slice(&l);
        differs
    }
    match w {
        PlaneWidth::Bit => {
            let word = |b: &[u8]| u64::from_le_bytes(b[at..at + 8].try_into().expect("a bit plane is 8 bytes"));
            let (l, s, bit) = (word(live), word(shadow), 1u64 << lane);
            shadow[at..at + 8].copy_from_slice(&((s & !bit) | (l & bit)).to_le_bytes());
            (l ^ s) & bit != 0
        }
        PlaneWidth::B1 => copy::<1>(live, shadow, at),
        PlaneWidth::B2 => copy::<2>(live, shadow, at),
        PlaneWidth::B4 => copy::<4>(live, shadow, at),
        PlaneWidth::B8 => copy::<8>(live, shadow, at),
        PlaneWidth::B12 => copy::<12>(live, shadow, at),
    }
}

const _: () = assert!(PAGE_LANES <= 256, "a probe's lane is a byte");
