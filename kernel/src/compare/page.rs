//! One page's compare: the per-compare [`Plan`] (which leaves use dirty lanes, which path a page
//! takes) and the page walk itself — sparse lane-by-lane diffs, whole-plane diffs, the dense
//! run-by-run path, shadow copies and dynamic-array diffs. See the module docs of
//! [`super`] for the algorithm and its optimisations.
//!
//! Data flow: [`super::ShadowState::compare`] builds one [`Plan`] per compare, then hands each page's
//! borrowed live and shadow bytes ([`PageRefs`]) to [`Plan::compare_page`], which updates the
//! shadow in place and writes the page's leaf masks and array changes.

use super::changes::PageArrayChanges;
use super::lane::{at_least, copy_lanes, fixed, lane_differs, lane_lines, word, WHOLE_PLANE_LANES};
use super::simd::prefetch_addr;
use super::{CompareConfig, Kernels, NextPage, PageScan, PushMode, SPARSE_LANES};
use crate::schema::{ClassLayout, PlaneWidth, PAGE_LANES};
use crate::store::{BitIter, PageArrays};

/// One page's live and shadow data, borrowed for its compare.
pub(super) struct PageRefs<'a> {
    pub(super) index: usize,
    pub(super) occupied: u64,
    /// `occupied` is every occupied lane of the page (not a selection of them).
    pub(super) every_lane: bool,
    /// The page after this one in memory (live and shadow) is the next this thread compares.
    pub(super) streamed: bool,
    pub(super) live: &'a [u8],
    pub(super) shadow: &'a mut [u8],
    pub(super) live_arrays: &'a PageArrays,
    pub(super) shadow_arrays: &'a mut PageArrays,
}

/// Per-compare decisions made once, not per page.
#[derive(Clone)]
pub(super) struct Plan<'a> {
    layout: &'a ClassLayout,
    kernels: Kernels,
    /// Per parent: its fixed leaves are compared only in dirty lanes (push rules). Dynamic arrays
    /// are always compared only in dirty lanes: the store marks every array write.
    uses_dirty: Vec<bool>,
    /// Nothing is compared outside dirty lanes: clean pages are skipped outright.
    pub(super) dirty_only: bool,
    /// No parent with planes uses dirty lanes: every plane of a page is compared for every
    /// occupied lane, so whole runs of planes are diffed in one call each.
    dense: bool,
    /// Dense path: every fixed leaf with its plane range.
    fixed_leaves: Vec<(usize, std::ops::Range<usize>)>,
    /// Dense path: every dynamic-array leaf as (parent, leaf, array).
    array_leaves: Vec<(usize, usize, usize)>,
    /// Per parent: the planes of its fixed leaves, when they are one contiguous range (else
    /// empty, and nothing is prefetched for it).
    parent_planes: Vec<std::ops::Range<usize>>,
    /// Bytes of a page its planes cover (`0..planes_end`, no gaps: byte planes are multiples of
    /// 64 bytes and bit planes follow them 8 bytes apart).
    planes_end: usize,
    /// Some parent with planes is compared in every occupied lane (not push-ruled): a page read
    /// whole anyway starts with one "equal?" pass over its planes, and a page that passes skips
    /// every fixed leaf.
    page_check: bool,
    /// The "equal?" pass reads a page whole and names the planes that differ
    /// ([`PageScan::Whole`]), for a dense plan only: it has at most 64 planes (one bit each),
    /// and only its page diff uses which planes differ — another plan's page would be read whole
    /// twice (its "equal?" pass again in [`Self::compare_page`]).
    whole: bool,
    /// Every plane's (page offset, bytes), in plane order: what [`PageScan::Whole`] reads.
    plane_spans: Vec<(usize, usize)>,
    /// The "equal?" pass is the lane diff itself ([`PageScan::Lanes`]), for a dense plan only
    /// (its masks fit [`PlaneMasks`]): the scan leaves every plane's lane mask behind.
    lanes: bool,
}

/// One page's lane mask per plane, as a dense compare gathers them (at most
/// [`DENSE_MAX_PLANES`] planes).
pub(super) type PlaneMasks = [u64; DENSE_MAX_PLANES];

/// How many pages ahead a dirty-only compare prefetches.
pub(super) const PREFETCH_PAGES: usize = 8;

/// With [`PageScan::Lanes`] and [`NextPage::Prefetch`], a changed page asks for this many lines
/// of the next page, live and shadow, before its leaves' masks (and copies, where the scan did
/// not make them). On an AMD EPYC Zen 3 with AVX2
/// only (1M ShooterCharacter, one thread, side by side with `--example compare_ab`): 8 or 16
/// lines 3–5 % faster than none at 10 and 100 % changed, 32 level, 64 4–10 % slower (the burst
/// crowds the stream's own misses).
/// (With the scan's own copies, session 63: still 1–3 % faster than none.)
const LANES_AHEAD_LINES: usize = 8;

/// Most planes a class may have for the dense path's on-stack mask buffer.
pub(super) const DENSE_MAX_PLANES: usize = 64;

impl<'a> Plan<'a> {
    pub(super) fn new(layout: &'a ClassLayout, cfg: &CompareConfig) -> Self {
        // Push rules decide for fixed leaves only; a dynamic array is always compared where the
        // store recorded a write, whatever its parent's push setting.
        let uses_dirty: Vec<bool> = layout
            .parents
            .iter()
            .map(|p| match cfg.push {
                PushMode::Off => false,
                PushMode::Declared => p.push,
                PushMode::All => true,
            })
            .collect();
        let has_fixed = |p: &crate::schema::Parent| layout.leaves[p.leaves.clone()].iter().any(|l| l.array.is_none());
        // Clean pages can be skipped when nothing is compared without a mark: every parent's fixed
        // leaves are push-ruled (arrays always need a mark).
        let dirty_only = layout.parents.iter().zip(&uses_dirty).all(|(p, &d)| d || !has_fixed(p));
        let dense = layout.planes.len() <= DENSE_MAX_PLANES
            && layout
                .parents
                .iter()
                .zip(&uses_dirty)
                .all(|(p, &d)| !d || p.leaves.clone().all(|l| layout.leaves[l].planes.is_empty()));
        let fixed_leaves = layout
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, l)| l.array.is_none())
            .map(|(i, l)| (i, l.planes.clone()))
            .collect();
        let array_leaves =
            layout.leaves.iter().enumerate().filter_map(|(i, l)| l.array.map(|a| (l.parent, i, a))).collect();
        let parent_planes = layout
            .parents
            .iter()
            .map(|p| {
                let mut ranges =
                    layout.leaves[p.leaves.clone()].iter().map(|l| l.planes.clone()).filter(|r| !r.is_empty());
                let first = ranges.next().unwrap_or(0..0);
                ranges.try_fold(first, |acc, r| (r.start == acc.end).then_some(acc.start..r.end)).unwrap_or(0..0)
            })
            .collect();
        let planes_end = layout
            .planes
            .iter()
            .map(|p| p.page_offset + if p.width == PlaneWidth::Bit { 8 } else { p.width.page_bytes() })
            .max()
            .unwrap_or(0);
        let page_check = layout.parents.iter().zip(&uses_dirty).any(|(p, &d)| {
            !d && layout.leaves[p.leaves.clone()].iter().any(|l| l.array.is_none() && !l.planes.is_empty())
        });
        let plane_spans: Vec<(usize, usize)> = layout
            .planes
            .iter()
            .map(|p| (p.page_offset, if p.width == PlaneWidth::Bit { 8 } else { p.width.page_bytes() }))
            .collect();
        Self {
            layout,
            kernels: cfg.kernels,
            uses_dirty,
            dirty_only,
            dense,
            fixed_leaves,
            array_leaves,
            parent_planes,
            planes_end,
            page_check,
            whole: cfg.kernels.scan == PageScan::Whole && dense,
            plane_spans,
            lanes: cfg.kernels.scan == PageScan::Lanes && dense,
        }
    }

    /// Replaces the diff table (a trial of another, or the one a tuner kept).
    pub(super) fn set_kernels(&mut self, kernels: Kernels) {
        self.kernels = kernels;
        self.whole = kernels.scan == PageScan::Whole && self.dense;
        self.lanes = kernels.scan == PageScan::Lanes && self.dense;
    }

    /// The same plan with another diff table (a trial frame's candidates, see `tune`).
    pub(super) fn with_kernels(&self, kernels: Kernels) -> Self {
        let mut plan = self.clone();
        plan.set_kernels(kernels);
        plan
    }

    /// The class layout compared.
    pub(super) fn layout(&self) -> &'a ClassLayout {
        self.layout
    }

    /// Whether the page's plane bytes are equal in live and shadow: then no fixed leaf changed,
    /// whatever lanes are considered.
    /// (A plan that is not dense never scans by lanes: no plane masks to keep.)
    fn planes_equal(&self, page: &PageRefs<'_>) -> bool {
        self.scan_planes(page.live, page.shadow) == 0
    }

    /// The "equal?" pass over a page's planes, live and shadow, read as the table's
    /// [`PageScan`] says: 0 when they are equal, else the planes a lane diff must look at —
    /// every plane when the scan stopped at the first difference, exactly those that differ
    /// when it read the page whole; with [`PageScan::Lanes`] the OR of every plane's lane mask,
    /// the masks themselves left in `planes` (which [`Self::compare_planes_dense`] then takes as
    /// they are). With `copy` (every lane of the page is compared, and the page goes on to
    /// [`Self::compare_planes_dense`]), a lane scan also copies each plane that differs into the
    /// shadow: returns whether it did (then the leaves are not copied again).
    pub(super) fn scan_page(&self, live: &[u8], shadow: &mut [u8], planes: &mut PlaneMasks, copy: bool) -> (u64, bool) {
        if self.lanes {
            ((self.kernels.routines.page_lanes)(live, shadow, &self.layout.plane_runs, planes, copy), copy)
        } else {
            (self.scan_planes(live, shadow), false)
        }
    }

    /// [`Self::scan_page`] without lane masks: the planes a lane diff must look at, by the
    /// table's first-difference or whole scan.
    fn scan_planes(&self, live: &[u8], shadow: &[u8]) -> u64 {
        if self.whole {
            (self.kernels.routines.planes_differ)(live, shadow, &self.plane_spans)
        } else {
            let end = self.planes_end;
            u64::from(!(self.kernels.routines.eq)(&live[..end], &shadow[..end])).wrapping_neg()
        }
    }

    /// Whether every page takes the dense path (see [`Self::compare_planes_dense`]).
    pub(super) fn is_dense(&self) -> bool {
        self.dense
    }

    /// Whether push validation has anything to check: a push-ruled parent with fixed leaves.
    pub(super) fn validates(&self) -> bool {
        self.layout.parents.iter().zip(&self.uses_dirty).any(|(p, &d)| d && self.has_planes(p))
    }

    fn has_planes(&self, p: &crate::schema::Parent) -> bool {
        self.layout.leaves[p.leaves.clone()].iter().any(|l| l.array.is_none() && !l.planes.is_empty())
    }

    /// Push validation of one page (see [`super::check`]): diffs every push-ruled fixed leaf in the
    /// `occupied` lanes against the validation shadow `validated`, records the changed lanes
    /// without a mark in `unmarked[parent]`, and copies the changed lanes into `validated`.
    pub(super) fn validate_page(
        &self,
        live: &[u8],
        validated: &mut [u8],
        occupied: u64,
        dirty: Option<&[u64]>,
        unmarked: &mut [u64],
    ) {
        for (pi, parent) in self.layout.parents.iter().enumerate() {
            if !self.uses_dirty[pi] {
                continue;
            }
            let mut changed = 0u64;
            for leaf in &self.layout.leaves[parent.leaves.clone()] {
                if leaf.array.is_some() {
                    continue;
                }
                let planes = &self.layout.planes[leaf.planes.clone()];
                let mut leaf_changed = 0u64;
                for pl in planes {
                    leaf_changed |= self.diff_plane(pl.width, live, validated, pl.page_offset);
                }
                leaf_changed &= occupied;
                for pl in planes {
                    copy_lanes(pl.width, live, validated, pl.page_offset, leaf_changed);
                }
                changed |= leaf_changed;
            }
            unmarked[pi] = changed & !dirty.map_or(0, |d| d[pi]);
        }
    }

    /// Adds one compared page's per-parent `[marked, changed]` lane counts to `counts`; `masks` is
    /// the page's leaf masks when the page changed.
    pub(super) fn count_page(&self, occupied: u64, dirty: Option<&[u64]>, masks: Option<&[u64]>, counts: &mut [u64]) {
        for (pi, parent) in self.layout.parents.iter().enumerate() {
            let marked = dirty.map_or(0, |d| d[pi]) & occupied;
            let changed = masks.map_or(0, |m| m[parent.leaves.clone()].iter().fold(0, |a, &x| a | x));
            counts[2 * pi] += u64::from(marked.count_ones());
            counts[2 * pi + 1] += u64::from(changed.count_ones());
        }
    }

    /// Compares one page; returns the lanes with any change. `dirty` is `None` for a page with no
    /// marks, so a clean page never reads its mask memory (marks are cleared after the compare,
    /// page by dirty page). The page's leaf masks are
    /// written only once something changed: a page whose lanes come back 0 leaves them stale, and
    /// [`ChangeSet`] never reads them.
    pub(super) fn compare_page(
        &self,
        mut page: PageRefs<'_>,
        dirty: Option<&[u64]>,
        masks: &mut [u64],
        arrays: &mut PageArrayChanges,
    ) -> u64 {
        if self.dense {
            return self.compare_page_dense(page, dirty, masks, arrays);
        }
        // Every occupied lane of the page is compared for some parent, so its planes are read
        // anyway: one "equal?" pass first, and fixed leaves only if something differs.
        let fixed = !(self.page_check && page.every_lane && self.planes_equal(&page));
        let mut any = 0u64;
        for (pi, parent) in self.layout.parents.iter().enumerate() {
            let marked = page.occupied & dirty.map_or(0, |d| d[pi]);
            let consider_fixed = match (fixed, self.uses_dirty[pi]) {
                (false, _) => 0,
                (true, true) => marked,
                (true, false) => page.occupied,
            };
            // A parent with nothing to compare here (push-ruled and unmarked, the common case
            // of a push frame's page) costs one mask test, not a visit of its leaves.
            if marked == 0 && consider_fixed == 0 {
                continue;
            }
            for li in parent.leaves.clone() {
                let leaf = &self.layout.leaves[li];
                let changed = match leaf.array {
                    Some(a) if marked != 0 => self.compare_arrays(&mut page, a, li, marked, arrays),
                    None if consider_fixed != 0 => self.compare_leaf(&mut page, leaf.planes.clone(), consider_fixed),
                    _ => 0,
                };
                note_change(masks, &mut any, li, changed);
            }
        }
        any
    }

    fn compare_leaf(&self, page: &mut PageRefs<'_>, planes_range: std::ops::Range<usize>, consider: u64) -> u64 {
        let planes = &self.layout.planes[planes_range.clone()];
        let mut changed = 0u64;
        if consider.count_ones() <= SPARSE_LANES {
            for lane in BitIter(consider) {
                changed |= u64::from(lane_differs(planes, page.live, page.shadow, lane)) << lane;
            }
        } else {
            for pl in planes {
                changed |= self.diff_plane(pl.width, page.live, page.shadow, pl.page_offset);
            }
            changed &= consider;
        }
        self.copy_leaf(page, planes_range, changed);
        changed
    }

    /// The dense page compare: a page whose plane bytes are equal costs one XOR/OR pass; else
    /// every plane is diffed run by run (an equal plane without a lane mask) and only the leaves
    /// that changed are visited. Dynamic arrays are compared where written.
    fn compare_page_dense(
        &self,
        mut page: PageRefs<'_>,
        dirty: Option<&[u64]>,
        masks: &mut [u64],
        arrays: &mut PageArrayChanges,
    ) -> u64 {
        let occupied = page.occupied;
        // Most pages of a frame with little change are equal: no lane masks, no leaves.
        let mut planes = [0; DENSE_MAX_PLANES];
        let (differ, copied) = self.scan_page(page.live, page.shadow, &mut planes, page.every_lane);
        let mut any =
            if differ == 0 { 0 } else { self.compare_planes_dense(&mut page, (differ, copied), &mut planes, masks) };
        if let Some(d) = dirty {
            for &(pi, li, a) in &self.array_leaves {
                let consider = d[pi] & occupied;
                if consider == 0 {
                    continue;
                }
                let changed = self.compare_arrays(&mut page, a, li, consider, arrays);
                note_change(masks, &mut any, li, changed);
            }
        }
        any
    }

    /// The fixed leaves of a dense page whose planes differ somewhere (`differ` and
    /// `plane_masks`, from [`Self::scan_page`]): lane masks of the planes named there (already in
    /// `plane_masks` after a [`PageScan::Lanes`] scan), then the changed lanes of each leaf copied
    /// (unless the scan `copied` them); returns the lanes with a change (the page's leaf masks
    /// written when there is one).
    pub(super) fn compare_planes_dense(
        &self,
        page: &mut PageRefs<'_>,
        (differ, copied): (u64, bool),
        plane_masks: &mut PlaneMasks,
        masks: &mut [u64],
    ) -> u64 {
        if !self.lanes {
            self.diff_runs(page, differ, plane_masks);
        } else if let Some(next) = self.next_page(page) {
            // What follows — the leaves' masks (and copies) — reads only this page, from L1: the
            // next page's first lines are asked for now, so its read starts with them on the way.
            prefetch_page_lines(next, 0, LANES_AHEAD_LINES * 64);
        }
        let occupied = page.occupied;
        let planes = &plane_masks[..self.layout.planes.len()];
        if planes.iter().fold(0, |a, &m| a | m) & occupied == 0 {
            return 0;
        }
        let mut any = 0u64;
        for (li, range) in &self.fixed_leaves {
            let changed = plane_masks[range.clone()].iter().fold(0, |a, &m| a | m) & occupied;
            note_change(masks, &mut any, *li, changed);
            if changed != 0 && !copied {
                // Dense pages compare every occupied lane, and free lanes are zero on both
                // sides, so every lane outside `changed` already matches: with many changed
                // lanes one whole-plane copy beats a copy per lane.
                // (Not when only some lanes are compared: the others may differ.)
                let whole = page.every_lane && at_least(changed, WHOLE_PLANE_LANES);
                let copy = if whole { !0 } else { changed };
                self.copy_leaf(page, range.clone(), copy);
            }
        }
        any
    }

    /// Copies a leaf's changed lanes from live to shadow.
    fn copy_leaf(&self, page: &mut PageRefs<'_>, planes: std::ops::Range<usize>, changed: u64) {
        if changed != 0 {
            for pl in &self.layout.planes[planes] {
                copy_lanes(pl.width, page.live, page.shadow, pl.page_offset, changed);
            }
        }
    }

    /// Calls `fetch` with the page offset of every lane a sparse diff of this page will read.
    pub(super) fn prefetch_page(&self, dirty: &[u64], occupied: u64, mut fetch: impl FnMut(usize)) {
        for (pi, planes) in self.parent_planes.iter().enumerate() {
            let consider = dirty[pi] & occupied;
            if consider == 0 || consider.count_ones() > SPARSE_LANES {
                continue;
            }
            for pl in &self.layout.planes[planes.clone()] {
                for lane in BitIter(consider) {
                    lane_lines(pl.page_offset + lane * pl.width.read_stride(), pl.width, &mut fetch);
                }
            }
        }
    }

    /// Diffs the planes of the page `differ` names with its width's run routine — or, when the
    /// page was read whole and `differ` names exactly the planes that differ, straight with the
    /// plane diff; `out[plane]` gets the plane's lane mask (0 for a plane not named) for every
    /// plane (`out` is reused from page to page).
    ///
    /// In a walk over consecutive pages, with [`NextPage::Prefetch`], each plane first prefetches
    /// its bytes of the next page, live and shadow: a lane diff spends several instructions per
    /// byte where `memcmp` spends one, so the out-of-order window holds a few lines' loads ahead
    /// instead of dozens, and the hardware prefetchers alone left the diff and the memory stream
    /// one after the other (1M ShooterCharacter at 10 % changed on an AMD EPYC with AVX-512: 480
    /// → 340 ns a page, the same for every table; the diff alone costs ~200 ns a page in L2, DRAM
    /// ~240; an AMD EPYC Zen 4 is faster without it, see [`NextPage`]). A prefetch
    /// per line spread among the runs: the whole next page prefetched at once before the "equal?"
    /// pass was slower than none (the burst fills the miss buffers the stream needs); spread
    /// through every page's "equal?" pass as well it was level at 1 % changed and slower at 0.1 %
    /// (0.89 → 0.78–0.82 of `memcmp`: equal pages stream at `memcmp` speed without it).
    fn diff_runs(&self, page: &PageRefs<'_>, differ: u64, out: &mut PlaneMasks) {
        let k = &self.kernels.routines;
        let next = self.next_page(page);
        let prefetch_next = |o: usize, bytes: usize| {
            if let Some(next) = next {
                prefetch_page_lines(next, o, bytes);
            }
        };
        for run in &self.layout.plane_runs {
            let run_fn = match run.width {
                PlaneWidth::Bit => {
                    prefetch_next(run.offset, 8 * run.planes.len());
                    for (i, plane) in run.planes.clone().enumerate() {
                        let o = run.offset + 8 * i;
                        out[plane] = word(page.live, o) ^ word(page.shadow, o);
                    }
                    continue;
                }
                PlaneWidth::B1 => k.r1,
                PlaneWidth::B2 => k.r2,
                PlaneWidth::B4 => k.r4,
                PlaneWidth::B8 => k.r8,
                PlaneWidth::B12 => k.r12,
            };
            // Plane by plane, each after its own lines of the next page are asked for. Paced
            // so, the prefetches do not crowd the diff's own loads: a run's lines at once in a
            // `step_by` loop (which the compiler unrolled to eight prefetches back to back) was
            // 7–9 % slower at 10 % and 100 % changed than the same in a plain loop, and that 5–7 %
            // slower at 1–100 % than a plane's lines at a time (1M ShooterCharacter, AMD EPYC
            // with AVX-512; four to six alternating runs each).
            let bytes = run.width.page_bytes();
            for (i, plane) in run.planes.clone().enumerate() {
                let o = run.offset + i * bytes;
                prefetch_next(o, bytes);
                if differ >> plane & 1 == 0 {
                    out[plane] = 0;
                    continue;
                }
                if self.whole {
                    out[plane] = self.diff_plane(run.width, page.live, page.shadow, o);
                } else {
                    run_fn(&page.live[o..o + bytes], &page.shadow[o..o + bytes], &mut out[plane..plane + 1]);
                }
            }
        }
    }

    /// The next page's live and shadow addresses when a changed page asks for its lines: the next
    /// page in memory is the next compared (`streamed`) and the table says
    /// [`NextPage::Prefetch`].
    fn next_page(&self, page: &PageRefs<'_>) -> Option<(usize, usize)> {
        (page.streamed && self.kernels.next_page == NextPage::Prefetch).then(|| {
            let stride = self.layout.page_bytes;
            (page.live.as_ptr() as usize + stride, page.shadow.as_ptr() as usize + stride)
        })
    }

    fn diff_plane(&self, w: PlaneWidth, live: &[u8], shadow: &[u8], o: usize) -> u64 {
        let k = &self.kernels.routines;
        match w {
            PlaneWidth::Bit => word(live, o) ^ word(shadow, o),
            PlaneWidth::B1 => (k.d1)(fixed(live, o), fixed(shadow, o)),
            PlaneWidth::B2 => (k.d2)(fixed(live, o), fixed(shadow, o)),
            PlaneWidth::B4 => (k.d4)(fixed(live, o), fixed(shadow, o)),
            PlaneWidth::B8 => (k.d8)(fixed(live, o), fixed(shadow, o)),
            PlaneWidth::B12 => (k.d12)(fixed(live, o), fixed(shadow, o)),
        }
    }

    fn compare_arrays(
        &self,
        page: &mut PageRefs<'_>,
        a: usize,
        leaf: usize,
        consider: u64,
        out: &mut PageArrayChanges,
    ) -> u64 {
        let array = &self.layout.arrays[a];
        let mut changed = 0u64;
        for lane in BitIter(consider) {
            let (live, shadow) =
                (&page.live_arrays[a * PAGE_LANES + lane], &mut page.shadow_arrays[a * PAGE_LANES + lane]);
            if let Some(new_len) = super::arrays::compare_lane(array, live, shadow, out.elements_mut()) {
                changed |= 1 << lane;
                out.push((page.index * PAGE_LANES + lane) as u32, leaf as u16, new_len);
            }
        }
        changed
    }
}

/// Asks for the next page's lines (`next`: its live and shadow addresses) of `bytes` bytes from
/// page offset `o`: a plain loop, two prefetches an iteration, live and shadow side by side (not
/// `prefetch_lines` once per side, which would ask for all of one side's lines before the
/// other's).
fn prefetch_page_lines((live, shadow): (usize, usize), o: usize, bytes: usize) {
    let mut at = o & !63;
    while at < o + bytes {
        prefetch_addr(live + at);
        prefetch_addr(shadow + at);
        at += 64;
    }
}

/// Records that leaf `li` changed in lanes `changed` of a page whose changed lanes so far are
/// `any`. The page's first change zeroes its masks (a change set is reused from frame to frame,
/// so an earlier frame's may be there; a page with no change leaves them stale, unread): every
/// path of a page's compare records through here.
fn note_change(masks: &mut [u64], any: &mut u64, li: usize, changed: u64) {
    if changed != 0 {
        if *any == 0 {
            masks.fill(0);
        }
        masks[li] = changed;
        *any |= changed;
    }
}
