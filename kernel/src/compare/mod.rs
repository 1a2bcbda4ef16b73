//! The compare: find what changed since the last frame, page by page, and update the shadow.
//!
//! ```text
//! for each page (sharded across cores with rayon, in page order):
//!     skip if no actor lives here, or — full-push fast path — nothing on the page is dirty
//!     for each parent:
//!         consider = occupied & (dirty[page, parent] if the parent is push-based else all)
//!         for each leaf of the parent:
//!             changed = OR over its planes of diff(live plane, shadow plane) & consider
//!             copy the changed lanes of each plane into the shadow
//!             masks[page, leaf] = changed
//!         dynamic arrays: element-wise diff of the lanes written since the last frame
//!     clear the page's dirty masks
//! ```
//!
//! Equality is bitwise: `-0.0` vs `0.0` is a change and a NaN that stays the same NaN is not (UE's
//! `==` would resend a NaN forever). Newly spawned actors (a slot whose generation moved) get a
//! zeroed shadow lane and every parent marked dirty, so their first compare finds every property
//! that differs from the class defaults, as UE's shadow starts from the class default object.
//!
//! Optimisations: when no parent with planes is push-based (push model off, or a polled class),
//! a page's planes are diffed run by run — one call per width, the SIMD loop inside — and only a
//! page with a change visits its leaves; bit planes diff with one XOR; a parent whose consider mask has at most
//! [`SPARSE_LANES`] lanes is diffed lane by lane (integer loads, no branch per plane) instead of
//! by whole planes; a fully changed plane is copied with one `memcpy`; pages and parents with
//! nothing to consider read no column bytes; a clean page never reads its dirty masks, and a page
//! without changes never writes its leaf masks.
//!
//! Output is a [`ChangeSet`]: per (page, leaf) a lane mask, per page the OR of its lanes, and per
//! page the dynamic-array changes with their nested element handles. [`ChangeSet::changelist`]
//! renders one actor's changes in UE's changelist format, which the tests compare with the
//! reference path's.

mod simd;

pub(crate) use simd::prefetch_addr;
pub use simd::{scalar, Isa, Kernels};

use crate::schema::{ClassLayout, LeafKind, PlaneWidth, PAGE_LANES};
use crate::store::{read_parent, BitIter, Block, ClassStore, DirtyState, LiveView, PageArray, PageArrays, WatcherId};
use crate::value::Value;
use rayon::prelude::*;
use std::sync::Arc;

/// Default [`CompareConfig::min_parallel_pages`].
pub const PARALLEL_MIN_PAGES: usize = 256;

/// A parent considered for at most this many lanes is diffed lane by lane.
pub const SPARSE_LANES: u32 = 2;

/// Which properties the compare restricts to dirty-marked lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PushMode {
    /// Push model off: every property is compared for every actor (dynamic arrays still only when
    /// written, which the store always knows).
    Off,
    /// Properties declared push-based are compared only where marked; the rest always.
    #[default]
    Declared,
    /// Every property is treated as push-based (the game marks every change, e.g. through the
    /// generated setters): only dirty bits are visited.
    All,
}

/// How to run a compare.
#[derive(Clone, Copy, Debug)]
pub struct CompareConfig {
    /// Push model.
    pub push: PushMode,
    /// Diff routines (an ISA).
    pub kernels: Kernels,
    /// Shard pages across the current rayon pool.
    pub parallel: bool,
    /// Fewer pages than this are compared on the calling thread even when `parallel` (waking
    /// the pool costs more than the work); default [`PARALLEL_MIN_PAGES`].
    pub min_parallel_pages: usize,
}

impl Default for CompareConfig {
    fn default() -> Self {
        Self {
            push: PushMode::Declared,
            kernels: Kernels::best(),
            parallel: true,
            min_parallel_pages: PARALLEL_MIN_PAGES,
        }
    }
}

/// Why a compare was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompareError {
    /// The shadow was created for another store.
    ForeignStore,
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this shadow state watches a different store")
    }
}

impl std::error::Error for CompareError {}

/// One actor's dynamic-array change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayChange {
    /// Actor slot.
    pub slot: u32,
    /// Leaf index of the array command.
    pub leaf: u16,
    /// Length now.
    pub new_len: u16,
    /// Nested handles (`element * element_leaves + leaf + 1`) of changed or new element leaves.
    pub elements: Vec<u16>,
}

/// What one compare found.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    leaves: usize,
    /// `masks[page * leaves + leaf]`: lanes whose leaf changed. Valid only where `page_lanes` is
    /// non-zero; use [`ChangeSet::leaf_mask`].
    masks: Vec<u64>,
    /// Per page: lanes with any change.
    page_lanes: Vec<u64>,
    /// Per page: dynamic-array changes, in (slot, leaf) order.
    arrays: Vec<Vec<ArrayChange>>,
}

impl ChangeSet {
    /// An empty change set.
    pub fn new() -> Self {
        Self::default()
    }

    fn reset(&mut self, pages: usize, leaves: usize) {
        self.leaves = leaves;
        self.masks.resize(pages * leaves, 0);
        self.page_lanes.clear();
        self.page_lanes.resize(pages, 0);
        self.arrays.resize_with(pages, Vec::new);
        for a in &mut self.arrays {
            a.clear();
        }
    }

    /// Pages covered.
    pub fn pages(&self) -> usize {
        self.page_lanes.len()
    }

    /// Lanes of page `p` with any change.
    pub fn page_lanes(&self, p: usize) -> u64 {
        self.page_lanes.get(p).copied().unwrap_or(0)
    }

    /// Lanes of page `p` whose leaf `leaf` changed.
    pub fn leaf_mask(&self, p: usize, leaf: usize) -> u64 {
        if self.page_lanes(p) == 0 {
            return 0;
        }
        self.masks[p * self.leaves + leaf]
    }

    /// Dynamic-array changes of page `p`.
    pub fn array_changes(&self, p: usize) -> &[ArrayChange] {
        self.arrays.get(p).map_or(&[], |v| v.as_slice())
    }

    /// Number of actors with any change.
    pub fn changed_actors(&self) -> usize {
        self.page_lanes.iter().map(|m| m.count_ones() as usize).sum()
    }

    /// Slot `slot`'s changes in UE's changelist format: ascending handles; a dynamic array as
    /// `handle, count, nested handles…, 0`; the whole list terminated by 0. Empty when nothing
    /// changed.
    pub fn changelist(&self, layout: &ClassLayout, slot: u32) -> Vec<u16> {
        let (p, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        let mut out = Vec::new();
        if self.page_lanes(p) >> lane & 1 == 0 {
            return out;
        }
        for (i, leaf) in layout.leaves.iter().enumerate() {
            if self.masks[p * self.leaves + i] >> lane & 1 == 0 {
                continue;
            }
            out.push(leaf.handle);
            if leaf.kind == LeafKind::Array {
                let change = self.arrays[p].iter().find(|c| c.slot == slot && c.leaf as usize == i);
                let elements = change.map_or(&[][..], |c| c.elements.as_slice());
                out.push(elements.len() as u16);
                out.extend_from_slice(elements);
                out.push(0);
            }
        }
        out.push(0);
        out
    }
}

/// One driver's shadow of one store: the values last seen by its compare.
#[derive(Debug)]
pub struct ShadowState {
    layout: Arc<ClassLayout>,
    watcher: WatcherId,
    store: u64,
    shadow: PageArray,
    arrays: Vec<PageArrays>,
    seen_epochs: Vec<u32>,
    seen_generations: Vec<u32>,
    seen_occupied: Vec<u64>,
}

impl ShadowState {
    /// A shadow for `store`, registering a new watcher on it. Every actor already in the store
    /// counts as newly registered: its first compare sends everything that differs from defaults.
    pub fn new(store: &mut ClassStore) -> Self {
        let watcher = store.add_watcher();
        let layout = store.layout().clone();
        Self {
            store: store.id(),
            shadow: PageArray::new(layout.page_blocks()),
            layout,
            watcher,
            arrays: Vec::new(),
            seen_epochs: Vec::new(),
            seen_generations: Vec::new(),
            seen_occupied: Vec::new(),
        }
    }

    /// The shadow pages (same layout as the store's live pages).
    pub fn pages(&self) -> &PageArray {
        &self.shadow
    }

    /// The shadow's value of `parent` for slot `slot` (what the last compare saw), or `None` for a
    /// slot or parent this shadow does not hold.
    pub fn value(&self, slot: u32, parent: usize) -> Option<Value> {
        let (p, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        if p >= self.seen_epochs.len() || parent >= self.layout.parents.len() {
            return None;
        }
        Some(read_parent(&self.layout, self.shadow.page(p), &self.arrays[p], lane, parent))
    }

    /// Compares `store` against this shadow, consuming this driver's dirty marks (call
    /// [`ClassStore::begin_tick`] first so this frame's marks are included).
    pub fn compare(
        &mut self,
        store: &mut ClassStore,
        cfg: &CompareConfig,
        out: &mut ChangeSet,
    ) -> Result<(), CompareError> {
        if store.id() != self.store {
            return Err(CompareError::ForeignStore);
        }
        let (view, dirty) = store.split_for_compare(self.watcher);
        self.sync_slots(&view, dirty);
        let layout = &*self.layout;
        let pages = view.occupied.len();
        out.reset(pages, layout.leaves.len());
        if layout.parents.is_empty() || pages == 0 {
            dirty.clear();
            return Ok(());
        }
        let plan = Plan::new(layout, cfg);
        let parents = layout.parents.len();
        let leaves = layout.leaves.len();
        let stride = self.shadow.stride();
        let dirty_pages = std::mem::take(&mut dirty.pages);
        let dirty_masks: &[u64] = &dirty.masks;
        let live_all = view.live.bytes();
        let shadow_base = self.shadow.bytes().as_ptr() as usize;
        let page_bytes = layout.page_bytes;
        let is_dirty = |p: usize| dirty_pages.get(p / 64).is_some_and(|w| w >> (p % 64) & 1 != 0);
        let work = |(p, (shadow, live, sh_arr, lv_arr, masks, lanes, arr, occ)): (usize, PageJob<'_>)| {
            let page_dirty = is_dirty(p);
            if plan.dirty_only {
                // Latency-bound: start the loads of a page a few pages ahead.
                let q = p + PREFETCH_PAGES;
                if is_dirty(q) {
                    let base = q * page_bytes;
                    plan.prefetch_page(&dirty_masks[q * parents..(q + 1) * parents], view.occupied[q], |off| {
                        prefetch_addr(live_all.as_ptr() as usize + base + off);
                        prefetch_addr(shadow_base + base + off);
                    });
                }
            }
            if *occ == 0 || (plan.dirty_only && !page_dirty) {
                return;
            }
            let dmask = &dirty_masks[p * parents..(p + 1) * parents];
            let page = PageRefs {
                index: p,
                occupied: *occ,
                live: bytemuck::cast_slice(live),
                shadow: bytemuck::cast_slice_mut(shadow),
                live_arrays: lv_arr,
                shadow_arrays: sh_arr,
            };
            *lanes = plan.compare_page(page, page_dirty.then_some(dmask), masks, arr);
        };
        let shadow_arrays = &mut self.arrays;
        if cfg.parallel && pages >= cfg.min_parallel_pages {
            (
                self.shadow.blocks_mut().par_chunks_mut(stride),
                view.live.blocks().par_chunks(stride),
                shadow_arrays.par_iter_mut(),
                view.arrays.par_iter(),
                out.masks.par_chunks_mut(leaves),
                out.page_lanes.par_iter_mut(),
                out.arrays.par_iter_mut(),
                view.occupied.par_iter(),
            )
                .into_par_iter()
                .enumerate()
                .with_min_len(16)
                .for_each(work);
        } else {
            self.shadow
                .blocks_mut()
                .chunks_mut(stride)
                .zip(view.live.blocks().chunks(stride))
                .zip(shadow_arrays.iter_mut())
                .zip(view.arrays.iter())
                .zip(out.masks.chunks_mut(leaves))
                .zip(out.page_lanes.iter_mut())
                .zip(out.arrays.iter_mut())
                .zip(view.occupied.iter())
                .map(|(((((((a, b), c), d), e), f), g), h)| (a, b, c, d, e, f, g, h))
                .enumerate()
                .for_each(work);
        }
        dirty.pages = dirty_pages;
        dirty.clear();
        Ok(())
    }

    /// Brings the shadow's slots in line with the store's: new pages, and lanes whose actor was
    /// spawned or despawned since the last compare (zeroed shadow, every parent marked dirty).
    fn sync_slots(&mut self, view: &LiveView<'_>, dirty: &mut DirtyState) {
        let pages = view.occupied.len();
        while self.seen_epochs.len() < pages {
            let p = self.seen_epochs.len();
            self.shadow.push_zeroed();
            self.arrays.push(vec![Vec::new(); self.layout.arrays.len() * PAGE_LANES]);
            // Differs from the store's epoch, so the page's lanes are examined below.
            self.seen_epochs.push(view.epochs[p].wrapping_add(1));
            self.seen_occupied.push(0);
        }
        self.seen_generations.resize(view.generations.len(), 0);
        let parents = self.layout.parents.len();
        for p in 0..pages {
            if self.seen_epochs[p] == view.epochs[p] {
                continue;
            }
            let (now, was) = (view.occupied[p], self.seen_occupied[p]);
            let first = p * PAGE_LANES;
            let slots = first..(first + PAGE_LANES).min(view.generations.len());
            let mut reset = now ^ was;
            for (lane, slot) in slots.enumerate() {
                if now >> lane & 1 != 0 && self.seen_generations[slot] != view.generations[slot] {
                    reset |= 1 << lane;
                }
                self.seen_generations[slot] = view.generations[slot];
            }
            let bytes = self.shadow.page_mut(p);
            for lane in BitIter(reset) {
                for plane in &self.layout.planes {
                    crate::store::zero_lane(bytes, plane.page_offset, plane.width, lane);
                }
                for a in 0..self.layout.arrays.len() {
                    self.arrays[p][a * PAGE_LANES + lane] = Vec::new();
                }
            }
            let born = reset & now;
            if born != 0 {
                for parent in 0..parents {
                    dirty.mark(p, parent, born);
                }
            }
            self.seen_occupied[p] = now;
            self.seen_epochs[p] = view.epochs[p];
        }
    }
}

/// Everything one page's compare borrows, as the page zip yields it: shadow blocks, live blocks,
/// shadow and live arrays, output leaf masks, output lane summary, output array
/// changes, occupied lanes.
type PageJob<'a> = (
    &'a mut [Block],
    &'a [Block],
    &'a mut PageArrays,
    &'a PageArrays,
    &'a mut [u64],
    &'a mut u64,
    &'a mut Vec<ArrayChange>,
    &'a u64,
);

/// One page's live and shadow data, borrowed for its compare.
struct PageRefs<'a> {
    index: usize,
    occupied: u64,
    live: &'a [u8],
    shadow: &'a mut [u8],
    live_arrays: &'a PageArrays,
    shadow_arrays: &'a mut PageArrays,
}

/// Per-compare decisions made once, not per page.
struct Plan<'a> {
    layout: &'a ClassLayout,
    kernels: Kernels,
    /// Per parent: its fixed leaves are compared only in dirty lanes (push rules). Dynamic arrays
    /// are always compared only in dirty lanes: the store marks every array write.
    uses_dirty: Vec<bool>,
    /// Nothing is compared outside dirty lanes: clean pages are skipped outright.
    dirty_only: bool,
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
}

/// How many pages ahead a dirty-only compare prefetches.
const PREFETCH_PAGES: usize = 8;

/// From this many changed lanes on, the dense path copies whole planes.
const DENSE_WHOLE_PLANE_COPY: u32 = 8;

/// Most planes a class may have for the dense path's on-stack mask buffer.
const DENSE_MAX_PLANES: usize = 64;

impl<'a> Plan<'a> {
    fn new(layout: &'a ClassLayout, cfg: &CompareConfig) -> Self {
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
        Self { layout, kernels: cfg.kernels, uses_dirty, dirty_only, dense, fixed_leaves, array_leaves, parent_planes }
    }

    /// Compares one page; returns the lanes with any change. `dirty` is `None` for a page with no
    /// marks, so a clean page never reads its mask memory (marks are cleared after the compare,
    /// page by dirty page). The page's leaf masks are
    /// written only once something changed: a page whose lanes come back 0 leaves them stale, and
    /// [`ChangeSet`] never reads them.
    fn compare_page(
        &self,
        mut page: PageRefs<'_>,
        dirty: Option<&[u64]>,
        masks: &mut [u64],
        arrays: &mut Vec<ArrayChange>,
    ) -> u64 {
        if self.dense {
            return self.compare_page_dense(page, dirty, masks, arrays);
        }
        let mut any = 0u64;
        for (pi, parent) in self.layout.parents.iter().enumerate() {
            let marked = page.occupied & dirty.map_or(0, |d| d[pi]);
            let consider_fixed = if self.uses_dirty[pi] { marked } else { page.occupied };
            for li in parent.leaves.clone() {
                let leaf = &self.layout.leaves[li];
                let changed = match leaf.array {
                    Some(a) if marked != 0 => self.compare_arrays(&mut page, a, li, marked, arrays),
                    None if consider_fixed != 0 => self.compare_leaf(&mut page, leaf.planes.clone(), consider_fixed),
                    _ => 0,
                };
                if any != 0 {
                    masks[li] = changed;
                } else if changed != 0 {
                    masks[..li].fill(0);
                    masks[li] = changed;
                }
                any |= changed;
            }
        }
        any
    }

    fn compare_leaf(&self, page: &mut PageRefs<'_>, planes_range: std::ops::Range<usize>, consider: u64) -> u64 {
        let planes = &self.layout.planes[planes_range.clone()];
        let mut changed = 0u64;
        if consider.count_ones() <= SPARSE_LANES {
            for lane in BitIter(consider) {
                let mut differs = 0u64;
                for pl in planes {
                    differs |= lane_bits(pl.width, page.live, pl.page_offset, lane)
                        ^ lane_bits(pl.width, page.shadow, pl.page_offset, lane);
                    if pl.width == PlaneWidth::B12 {
                        // The lane's last four bytes (lane_bits covered the first eight).
                        let at = pl.page_offset + lane * 12 + 8;
                        differs |= (fixed::<4>(page.live, at) != fixed::<4>(page.shadow, at)) as u64;
                    }
                }
                changed |= ((differs != 0) as u64) << lane;
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

    /// The dense page compare: every plane diffed run by run, then only the leaves of a page that
    /// changed are visited; dynamic arrays are compared where written.
    fn compare_page_dense(
        &self,
        mut page: PageRefs<'_>,
        dirty: Option<&[u64]>,
        masks: &mut [u64],
        arrays: &mut Vec<ArrayChange>,
    ) -> u64 {
        let mut plane_masks = [0u64; DENSE_MAX_PLANES];
        self.diff_runs(&page, &mut plane_masks);
        let occupied = page.occupied;
        let mut any = 0u64;
        let planes = &plane_masks[..self.layout.planes.len()];
        if planes.iter().fold(0, |a, &m| a | m) & occupied != 0 {
            masks.fill(0);
            for (li, range) in &self.fixed_leaves {
                let changed = plane_masks[range.clone()].iter().fold(0, |a, &m| a | m) & occupied;
                if changed != 0 {
                    masks[*li] = changed;
                    any |= changed;
                    // Dense pages compare every occupied lane, and free lanes are zero on both
                    // sides, so every lane outside `changed` already matches: with many changed
                    // lanes one whole-plane copy beats a copy per lane.
                    let copy = if changed.count_ones() >= DENSE_WHOLE_PLANE_COPY { !0 } else { changed };
                    self.copy_leaf(&mut page, range.clone(), copy);
                }
            }
        }
        if let Some(d) = dirty {
            for &(pi, li, a) in &self.array_leaves {
                let consider = d[pi] & occupied;
                if consider == 0 {
                    continue;
                }
                let changed = self.compare_arrays(&mut page, a, li, consider, arrays);
                if changed != 0 {
                    if any == 0 {
                        masks.fill(0);
                    }
                    masks[li] = changed;
                    any |= changed;
                }
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
    fn prefetch_page(&self, dirty: &[u64], occupied: u64, mut fetch: impl FnMut(usize)) {
        for (pi, planes) in self.parent_planes.iter().enumerate() {
            let consider = dirty[pi] & occupied;
            if consider == 0 || consider.count_ones() > SPARSE_LANES {
                continue;
            }
            for pl in &self.layout.planes[planes.clone()] {
                for lane in BitIter(consider) {
                    fetch(pl.page_offset + lane * pl.width.lane_bytes());
                }
            }
        }
    }

    /// Diffs every plane of the page, one call per run of same-width planes; `out[plane]` gets the
    /// plane's lane mask.
    fn diff_runs(&self, page: &PageRefs<'_>, out: &mut [u64; DENSE_MAX_PLANES]) {
        let k = &self.kernels.routines;
        for run in &self.layout.plane_runs {
            let masks = &mut out[run.planes.clone()];
            let run_fn = match run.width {
                PlaneWidth::Bit => {
                    for (i, m) in masks.iter_mut().enumerate() {
                        let o = run.offset + 8 * i;
                        *m = word(page.live, o) ^ word(page.shadow, o);
                    }
                    continue;
                }
                PlaneWidth::B1 => k.r1,
                PlaneWidth::B2 => k.r2,
                PlaneWidth::B4 => k.r4,
                PlaneWidth::B8 => k.r8,
                PlaneWidth::B12 => k.r12,
            };
            let bytes = run.offset..run.offset + masks.len() * run.width.page_bytes();
            run_fn(&page.live[bytes.clone()], &page.shadow[bytes], masks);
        }
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
        out: &mut Vec<ArrayChange>,
    ) -> u64 {
        let array = &self.layout.arrays[a];
        let n = array.elements.len();
        let mut changed = 0u64;
        for lane in BitIter(consider) {
            let live = &page.live_arrays[a * PAGE_LANES + lane];
            let shadow = &mut page.shadow_arrays[a * PAGE_LANES + lane];
            let (nl, ns) = (live.len() / array.stride, shadow.len() / array.stride);
            let mut elements = Vec::new();
            for e in 0..nl {
                for (i, el) in array.elements.iter().enumerate() {
                    let r = e * array.stride + el.offset..e * array.stride + el.offset + el.kind.byte_size();
                    if e >= ns || live[r.clone()] != shadow[r] {
                        elements.push((e * n + i + 1) as u16);
                    }
                }
            }
            if nl != ns || !elements.is_empty() {
                changed |= 1 << lane;
                shadow.clone_from(live);
                out.push(ArrayChange {
                    slot: (page.index * PAGE_LANES + lane) as u32,
                    leaf: leaf as u16,
                    new_len: nl as u16,
                    elements,
                });
            }
        }
        changed
    }
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

fn word(bytes: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(*fixed::<8>(bytes, o))
}

/// The `N` bytes at `o`: planes lie inside their page by construction of the layout.
fn fixed<const N: usize>(bytes: &[u8], o: usize) -> &[u8; N] {
    bytes[o..o + N].try_into().expect("plane lies inside its page")
}

/// Copies the `lanes` of one plane from live to shadow.
fn copy_lanes(w: PlaneWidth, live: &[u8], shadow: &mut [u8], o: usize, lanes: u64) {
    match w {
        PlaneWidth::Bit => {
            let s = (word(shadow, o) & !lanes) | (word(live, o) & lanes);
            shadow[o..o + 8].copy_from_slice(&s.to_le_bytes());
        }
        w => {
            let n = w.lane_bytes();
            if lanes == !0 {
                let len = n * PAGE_LANES;
                shadow[o..o + len].copy_from_slice(&live[o..o + len]);
            } else {
                for lane in BitIter(lanes) {
                    let r = o + lane * n..o + (lane + 1) * n;
                    shadow[r.clone()].copy_from_slice(&live[r]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};

    fn store(push: bool) -> ClassStore {
        let layout = ClassBuilder::new("T")
            .property(PropertyDecl::new("Hp", PropType::F32).push(push))
            .property(PropertyDecl::new("Inv", PropType::array(PropType::U32)).push(push))
            .build()
            .unwrap();
        ClassStore::new(Arc::new(layout))
    }

    fn frame(store: &mut ClassStore, shadow: &mut ShadowState, push: PushMode) -> ChangeSet {
        let mut out = ChangeSet::new();
        store.begin_tick();
        let cfg = CompareConfig { push, ..CompareConfig::default() };
        shadow.compare(store, &cfg, &mut out).unwrap();
        out
    }

    #[test]
    fn new_actors_send_what_differs_from_defaults_then_nothing() {
        let mut s = store(false);
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        let b = s.spawn();
        s.set(a, 0, &Value::F32(3.0)).unwrap();
        let c = frame(&mut s, &mut sh, PushMode::Declared);
        assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0]);
        assert!(c.changelist(s.layout(), b.index).is_empty());
        assert_eq!(c.changed_actors(), 1);
        let c = frame(&mut s, &mut sh, PushMode::Declared);
        assert_eq!(c.changed_actors(), 0);
    }

    #[test]
    fn equality_is_bitwise() {
        let mut s = store(false);
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        frame(&mut s, &mut sh, PushMode::Off);
        s.set(a, 0, &Value::F32(-0.0)).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1, "-0.0 differs from 0.0");
        s.set(a, 0, &Value::F32(f32::NAN)).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1);
        s.set(a, 0, &Value::F32(f32::NAN)).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 0, "the same NaN is no change");
    }

    #[test]
    fn push_properties_are_compared_only_when_marked() {
        let mut s = store(true);
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        frame(&mut s, &mut sh, PushMode::Declared);
        s.set(a, 0, &Value::F32(1.0)).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Declared).changed_actors(), 0, "unmarked push change is not seen");
        s.mark_dirty(a, 0).unwrap();
        let c = frame(&mut s, &mut sh, PushMode::Declared);
        assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0]);
        // Polled mode compares it regardless of marks.
        s.set(a, 0, &Value::F32(2.0)).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 1);
        // A mark without a change sends nothing.
        s.mark_dirty(a, 0).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Declared).changed_actors(), 0);
    }

    #[test]
    fn arrays_report_growth_shrink_and_element_changes() {
        let mut s = store(false);
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        frame(&mut s, &mut sh, PushMode::Off);
        let arr = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
        s.set(a, 1, &arr(&[5, 6])).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changelist(s.layout(), a.index), vec![2, 2, 1, 2, 0, 0]);
        s.set(a, 1, &arr(&[5, 7, 8])).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changelist(s.layout(), a.index), vec![2, 2, 2, 3, 0, 0]);
        s.set(a, 1, &arr(&[5])).unwrap();
        let c = frame(&mut s, &mut sh, PushMode::Off);
        assert_eq!(c.changelist(s.layout(), a.index), vec![2, 0, 0, 0], "a pure shrink still reaches the changelist");
        assert_eq!(c.array_changes(0)[0].new_len, 1);
        s.set(a, 1, &arr(&[5])).unwrap();
        assert_eq!(frame(&mut s, &mut sh, PushMode::Off).changed_actors(), 0, "rewriting the same array is no change");
    }

    #[test]
    fn two_drivers_see_the_same_marks_and_keep_their_own_shadows() {
        let mut s = store(true);
        let mut game = ShadowState::new(&mut s);
        let mut replay = ShadowState::new(&mut s);
        let a = s.spawn();
        s.set_and_mark(a, 0, &Value::F32(4.0)).unwrap();
        assert_eq!(frame(&mut s, &mut game, PushMode::Declared).changed_actors(), 1);
        // The replay driver compares later; the marks were handed to it at the same tick start.
        let mut out = ChangeSet::new();
        replay.compare(&mut s, &CompareConfig::default(), &mut out).unwrap();
        assert_eq!(out.changelist(s.layout(), a.index), vec![1, 0]);
        assert_eq!(replay.value(a.index, 0), Some(Value::F32(4.0)));
    }

    #[test]
    fn a_shadow_refuses_another_store() {
        let mut s1 = store(false);
        let mut s2 = store(false);
        let mut sh = ShadowState::new(&mut s1);
        let mut out = ChangeSet::new();
        assert_eq!(sh.compare(&mut s2, &CompareConfig::default(), &mut out), Err(CompareError::ForeignStore));
    }

    /// A polled leaf that shares its struct with a dynamic array, written by a bulk system
    /// (`plane_mut`, no mark): the array part needs the store's write mark, the fixed part does not.
    #[test]
    fn a_bulk_write_beside_an_array_is_found_without_a_mark() {
        let inner = StructType::new("S").field("A", PropType::F32).field("Inv", PropType::array(PropType::U32));
        for (push_decl, mode, expect_seen) in [
            (false, PushMode::Off, true),
            (false, PushMode::Declared, true),
            (true, PushMode::Off, true),
            (true, PushMode::Declared, false),
            (false, PushMode::All, false),
        ] {
            let layout = ClassBuilder::new("T")
                .property(PropertyDecl::new("S", PropType::Struct(inner.clone())).push(push_decl))
                .build()
                .unwrap();
            let mut s = ClassStore::new(Arc::new(layout));
            let mut sh = ShadowState::new(&mut s);
            let a = s.spawn();
            frame(&mut s, &mut sh, mode);
            let leaf = s.layout().leaf_index("S.A").unwrap();
            let plane = s.layout().leaves[leaf].planes.start;
            s.plane_mut::<f32>(plane).unwrap().page(0)[a.lane()] = 5.0;
            let c = frame(&mut s, &mut sh, mode);
            let handle = s.layout().leaves[leaf].handle;
            let expected = if expect_seen { vec![handle, 0] } else { vec![] };
            assert_eq!(c.changelist(s.layout(), a.index), expected, "push {push_decl} mode {mode:?}");
            // Marked in bulk, the push-based case finds it too.
            s.mark_lanes_dirty(0, 0, 1 << a.lane());
            let c = frame(&mut s, &mut sh, mode);
            let expected = if expect_seen { vec![] } else { vec![handle, 0] };
            assert_eq!(c.changelist(s.layout(), a.index), expected, "marked: push {push_decl} mode {mode:?}");
        }
    }

    #[test]
    fn a_reused_slot_is_a_new_actor() {
        let mut s = store(false);
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        s.set(a, 0, &Value::F32(9.0)).unwrap();
        frame(&mut s, &mut sh, PushMode::Off);
        s.despawn(a).unwrap();
        let b = s.spawn();
        s.set(b, 0, &Value::F32(9.0)).unwrap();
        // Same slot, same value as the old actor: still sent, because b is new.
        let c = frame(&mut s, &mut sh, PushMode::Off);
        assert_eq!(c.changelist(s.layout(), b.index), vec![1, 0]);
    }
}
