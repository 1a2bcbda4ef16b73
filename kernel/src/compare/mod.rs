//! The compare: find what changed since the last frame, page by page, and update the shadow.
//!
//! ```text
//! pages = the marked pages (full-push fast path: every fixed leaf push-ruled, no validation),
//!         else every page
//! for each of those pages (sharded across cores with rayon, in page order):
//!     skip if no actor lives here, or — full-push fast path — nothing on the page is dirty
//!     for each parent:
//!         marked = occupied & dirty[page, parent]
//!         consider = marked if the parent is push-based (under the PushMode) else occupied
//!         for each fixed leaf of the parent:
//!             changed = OR over its planes of diff(live plane, shadow plane) & consider
//!             copy the changed lanes of each plane into the shadow
//!             masks[page, leaf] = changed
//!         for each dynamic array of the parent: element-wise diff of the marked lanes
//!             (the store marks every array write, whatever the push setting)
//!     clear the page's dirty masks
//! ```
//!
//! Equality is bitwise: `-0.0` vs `0.0` is a change and a NaN that stays the same NaN is not (UE's
//! `==` would resend a NaN forever). Newly spawned actors (a slot whose generation moved) get a
//! zeroed shadow lane and every parent marked dirty, so their first compare finds every property
//! that differs from the class defaults, as UE's shadow starts from the class default object.
//!
//! The full-push fast path builds its page jobs from the dirty summary bits (ascending, which the
//! safe `split_at_mut` split needs), so a frame with few marks neither walks nor wakes rayon for
//! the clean pages, and prefetches the next marked page a few jobs ahead. With
//! [`CompareConfig::validate_push`] or [`CompareConfig::dirty_stats`] on, `check` validates the
//! push-ruled leaves and counts marks and changes per parent (see its module docs).
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
//!
//! Where things are: this module owns the configuration and each driver's [`ShadowState`] (slot
//! tracking, sharding pages across rayon); `page` holds the per-compare plan and one page's walk;
//! `changes` the [`ChangeSet`] output; `simd` the lane diffs per ISA and the choice among them.
//!
//! Push rules decide for fixed leaves only: a dynamic array is compared exactly where the store
//! recorded a write (it records every one), so a polled fixed leaf in the same struct as an array
//! is still compared every frame, and a bulk write to it (`plane_mut`) is found without a mark.

mod changes;
mod check;
mod page;
mod simd;

pub use changes::{ArrayChange, ChangeSet};
use check::PushCheck;
pub use check::{CompareVisit, PropertyDirtyStats, UnmarkedChange};
pub(crate) use simd::prefetch_addr;
pub use simd::{scalar, Isa, Kernels};

use crate::schema::{ClassLayout, PAGE_LANES};
use crate::store::{read_parent, BitIter, Block, ClassStore, DirtyState, LiveView, PageArray, PageArrays, WatcherId};
use crate::value::Value;
use page::{PageRefs, Plan, PREFETCH_PAGES};
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
    /// Push-model validation (UE's `net.PushModelValidateProperties`): push-ruled fixed leaves
    /// are also compared in unmarked lanes, against a validation shadow of their own, and every
    /// change found without a mark is recorded (read it with
    /// [`ShadowState::take_unmarked_changes`]). Replication is unchanged: an unmarked change is
    /// still not sent, exactly as with the switch off. Costs a second shadow and a visit of every
    /// page. Default off.
    pub validate_push: bool,
    /// Count, per parent, the lanes compared with a mark and the lanes whose value changed
    /// (read them with [`ShadowState::dirty_stats`]). Default off.
    pub dirty_stats: bool,
}

impl Default for CompareConfig {
    fn default() -> Self {
        Self {
            push: PushMode::Declared,
            kernels: Kernels::best(),
            parallel: true,
            min_parallel_pages: PARALLEL_MIN_PAGES,
            validate_push: false,
            dirty_stats: false,
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
    /// Push validation and dirty statistics.
    check: PushCheck,
    /// What the last compare visited.
    visit: CompareVisit,
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
            watcher,
            arrays: Vec::new(),
            seen_epochs: Vec::new(),
            seen_generations: Vec::new(),
            seen_occupied: Vec::new(),
            check: PushCheck::new(&layout),
            visit: CompareVisit::default(),
            layout,
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
        self.compare_lanes(store, cfg, None, out)
    }

    /// Compares only the lanes `lanes[p]` of each page `p` (pages past the slice: none), as UE
    /// compares an actor only in a frame that replicates it: the other lanes cost nothing, keep
    /// their shadow and keep their push marks, so what changed is found when they are compared.
    /// `None`: every lane.
    pub fn compare_lanes(
        &mut self,
        store: &mut ClassStore,
        cfg: &CompareConfig,
        lanes: Option<&[u64]>,
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
        // Push validation compares push-ruled leaves against their own shadow in every lane, so it
        // visits every page; it is off (and its shadow dropped) unless the class has such leaves.
        let validate = cfg.validate_push && plan.validates();
        if validate {
            self.check.prepare(view.live, pages, parents);
        } else {
            self.check.validated = None;
        }
        // A list of pages instead of a walk over all of them: the marked pages when every
        // compared leaf is push-ruled, or the pages with a selected lane (the actor level's due
        // actors, a few of a large world's pages).
        let list_mode = (plan.dirty_only || lanes.is_some()) && !validate;
        let stat_words = if cfg.dirty_stats { 2 * parents } else { 0 };
        let dirty_ref: &DirtyState = dirty;
        let is_dirty = |p: usize| dirty_ref.page_dirty(p);
        let selected = |p: usize| lanes.map_or(!0, |l| l.get(p).copied().unwrap_or(0));
        let live_all = view.live.bytes();
        let shadow_base = self.shadow.bytes().as_ptr() as usize;
        let page_bytes = layout.page_bytes;
        let work = |tally: &mut Tally, job: PageJob<'_>| {
            let p = job.index;
            if let Some(q) = job.prefetch {
                // Latency-bound: start the loads of the dirty page a few list entries ahead.
                let base = q * page_bytes;
                plan.prefetch_page(dirty_ref.page_masks(q), view.occupied[q], |off| {
                    prefetch_addr(live_all.as_ptr() as usize + base + off);
                    prefetch_addr(shadow_base + base + off);
                });
            }
            let all = job.occupied;
            let occ = all & selected(p);
            let page_dirty = is_dirty(p);
            if occ == 0 || (plan.dirty_only && !page_dirty) {
                return;
            }
            let dmask = page_dirty.then(|| dirty_ref.page_masks(p));
            tally.pages += 1;
            tally.lanes += u64::from(
                if plan.dirty_only { dmask.map_or(0, |d| d.iter().fold(0, |a, &m| a | m)) & occ } else { occ }
                    .count_ones(),
            );
            let live: &[u8] = bytemuck::cast_slice(job.live);
            if let Some((validated, unmarked)) = job.check {
                plan.validate_page(live, bytemuck::cast_slice_mut(validated), occ, dmask, unmarked);
            }
            let page = PageRefs {
                index: p,
                occupied: occ,
                every_lane: occ == all,
                live,
                shadow: bytemuck::cast_slice_mut(job.shadow),
                live_arrays: job.live_arrays,
                shadow_arrays: job.shadow_arrays,
            };
            let changed = plan.compare_page(page, dmask, job.masks, job.arrays);
            *job.lanes = changed;
            if !tally.parents.is_empty() {
                plan.count_page(occ, dmask, (changed != 0).then_some(&*job.masks), &mut tally.parents);
            }
        };
        let fold = |mut t: Tally, job: PageJob<'_>| {
            work(&mut t, job);
            t
        };
        let parallel = cfg.parallel && pages >= cfg.min_parallel_pages;
        let tally = if list_mode || validate {
            // Only the marked pages (in ascending order, as the summary bits list them), or every
            // page with the validation shadow beside it.
            let order: Vec<usize> = if let (true, Some(l)) = (list_mode, lanes) {
                (0..pages)
                    .filter(|&p| l.get(p).is_some_and(|&m| m & view.occupied[p] != 0))
                    .filter(|&p| !plan.dirty_only || is_dirty(p))
                    .collect()
            } else if list_mode {
                dirty_ref
                    .pages
                    .iter()
                    .enumerate()
                    .flat_map(|(w, &bits)| BitIter(bits).map(move |b| w * 64 + b))
                    .filter(|&p| p < pages)
                    .collect()
            } else {
                (0..pages).collect()
            };
            let check = self.check.validated.as_mut().map(|v| (v.blocks_mut(), &mut self.check.scratch[..]));
            let jobs = split_jobs(
                &order,
                JobSource {
                    shadow: self.shadow.blocks_mut(),
                    live: view.live.blocks(),
                    stride,
                    shadow_arrays: &mut self.arrays,
                    live_arrays: view.arrays,
                    masks: &mut out.masks,
                    leaves,
                    page_lanes: &mut out.page_lanes,
                    arrays: &mut out.arrays,
                    occupied: view.occupied,
                    check,
                    parents,
                    prefetch: list_mode && plan.dirty_only,
                },
            );
            if parallel {
                jobs.into_par_iter()
                    .with_min_len(16)
                    .fold(|| Tally::new(stat_words), fold)
                    .reduce(|| Tally::new(stat_words), Tally::add)
            } else {
                jobs.into_iter().fold(Tally::new(stat_words), fold)
            }
        } else {
            let job = zip_job;
            if parallel {
                (
                    self.shadow.blocks_mut().par_chunks_mut(stride),
                    view.live.blocks().par_chunks(stride),
                    self.arrays.par_iter_mut(),
                    view.arrays.par_iter(),
                    out.masks.par_chunks_mut(leaves),
                    out.page_lanes.par_iter_mut(),
                    out.arrays.par_iter_mut(),
                    view.occupied.par_iter(),
                )
                    .into_par_iter()
                    .enumerate()
                    .with_min_len(16)
                    .map(job)
                    .fold(|| Tally::new(stat_words), fold)
                    .reduce(|| Tally::new(stat_words), Tally::add)
            } else {
                self.shadow
                    .blocks_mut()
                    .chunks_mut(stride)
                    .zip(view.live.blocks().chunks(stride))
                    .zip(self.arrays.iter_mut())
                    .zip(view.arrays.iter())
                    .zip(out.masks.chunks_mut(leaves))
                    .zip(out.page_lanes.iter_mut())
                    .zip(out.arrays.iter_mut())
                    .zip(view.occupied.iter())
                    .map(|(((((((a, b), c), d), e), f), g), h)| (a, b, c, d, e, f, g, h))
                    .enumerate()
                    .map(job)
                    .fold(Tally::new(stat_words), fold)
            }
        };
        self.visit = CompareVisit { pages: tally.pages, lanes: tally.lanes };
        if validate {
            self.check.collect(layout, view.generations, pages);
        }
        if !tally.parents.is_empty() {
            self.check.add_stats(&tally.parents);
        }
        match lanes {
            None => dirty.clear(),
            Some(l) => dirty.clear_lanes(l),
        }
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
                self.check.reset_lane(&self.layout, p, lane);
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
type ZipJob<'a> = (
    &'a mut [Block],
    &'a [Block],
    &'a mut PageArrays,
    &'a PageArrays,
    &'a mut [u64],
    &'a mut u64,
    &'a mut Vec<ArrayChange>,
    &'a u64,
);

/// A page of the zip as a [`PageJob`] (no validation, no prefetch).
fn zip_job(
    (index, (shadow, live, shadow_arrays, live_arrays, masks, lanes, arrays, occupied)): (usize, ZipJob<'_>),
) -> PageJob<'_> {
    PageJob {
        index,
        shadow,
        live,
        shadow_arrays,
        live_arrays,
        masks,
        lanes,
        arrays,
        occupied: *occupied,
        check: None,
        prefetch: None,
    }
}

/// Everything one page's compare borrows.
struct PageJob<'a> {
    /// Page index.
    index: usize,
    shadow: &'a mut [Block],
    live: &'a [Block],
    shadow_arrays: &'a mut PageArrays,
    live_arrays: &'a PageArrays,
    /// Output leaf masks of the page.
    masks: &'a mut [u64],
    /// Output lanes with any change.
    lanes: &'a mut u64,
    /// Output array changes.
    arrays: &'a mut Vec<ArrayChange>,
    occupied: u64,
    /// Push validation: the page of the validation shadow, and its per-parent unmarked lanes.
    check: Option<(&'a mut [Block], &'a mut [u64])>,
    /// A dirty page a few list entries ahead, to prefetch.
    prefetch: Option<usize>,
}

/// What [`split_jobs`] cuts into pages.
struct JobSource<'a> {
    shadow: &'a mut [Block],
    live: &'a [Block],
    stride: usize,
    shadow_arrays: &'a mut [PageArrays],
    live_arrays: &'a [PageArrays],
    masks: &'a mut [u64],
    leaves: usize,
    page_lanes: &'a mut [u64],
    arrays: &'a mut [Vec<ArrayChange>],
    occupied: &'a [u64],
    check: Option<(&'a mut [Block], &'a mut [u64])>,
    parents: usize,
    /// Give each job the page [`PREFETCH_PAGES`] entries ahead in `order`.
    prefetch: bool,
}

/// Splits off the first `n` items of `*rest` (safe `split_at_mut`; `rest` keeps the remainder).
fn take_front<'a, T>(rest: &mut &'a mut [T], n: usize) -> &'a mut [T] {
    let (front, back) = std::mem::take(rest).split_at_mut(n);
    *rest = back;
    front
}

/// One job per page of `order` (ascending page indices), each borrowing only its page's parts.
fn split_jobs<'a>(order: &[usize], src: JobSource<'a>) -> Vec<PageJob<'a>> {
    let JobSource {
        mut shadow,
        live,
        stride,
        mut shadow_arrays,
        live_arrays,
        mut masks,
        leaves,
        mut page_lanes,
        mut arrays,
        occupied,
        check,
        parents,
        prefetch,
    } = src;
    let (mut validated, mut unmarked) = match check {
        Some((v, u)) => (Some(v), Some(u)),
        None => (None, None),
    };
    let mut jobs = Vec::with_capacity(order.len());
    let mut at = 0;
    for (i, &p) in order.iter().enumerate() {
        let skip = p - at;
        take_front(&mut shadow, skip * stride);
        take_front(&mut shadow_arrays, skip);
        take_front(&mut masks, skip * leaves);
        take_front(&mut page_lanes, skip);
        take_front(&mut arrays, skip);
        let check = match (validated.as_mut(), unmarked.as_mut()) {
            (Some(v), Some(u)) => {
                take_front(v, skip * stride);
                take_front(u, skip * parents);
                Some((take_front(v, stride), take_front(u, parents)))
            }
            _ => None,
        };
        jobs.push(PageJob {
            index: p,
            shadow: take_front(&mut shadow, stride),
            live: &live[p * stride..(p + 1) * stride],
            shadow_arrays: &mut take_front(&mut shadow_arrays, 1)[0],
            live_arrays: &live_arrays[p],
            masks: take_front(&mut masks, leaves),
            lanes: &mut take_front(&mut page_lanes, 1)[0],
            arrays: &mut take_front(&mut arrays, 1)[0],
            occupied: occupied[p],
            check,
            prefetch: if prefetch { order.get(i + PREFETCH_PAGES).copied() } else { None },
        });
        at = p + 1;
    }
    jobs
}

/// What one shard of a compare counted: pages and lanes visited, and (with
/// [`CompareConfig::dirty_stats`]) per parent `[marked, changed]` lane counts.
struct Tally {
    pages: u64,
    lanes: u64,
    parents: Vec<u64>,
}

impl Tally {
    fn new(words: usize) -> Self {
        Self { pages: 0, lanes: 0, parents: vec![0; words] }
    }

    fn add(mut self, other: Self) -> Self {
        self.pages += other.pages;
        self.lanes += other.lanes;
        for (a, b) in self.parents.iter_mut().zip(other.parents) {
            *a += b;
        }
        self
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
    fn a_shadow_created_after_actors_exist_finds_everything_they_changed() {
        for push in [false, true] {
            let mut s = store(push);
            let a = s.spawn();
            let b = s.spawn();
            s.set_and_mark(a, 0, &Value::F32(4.0)).unwrap();
            s.begin_tick();
            // A driver that starts watching now sees every live actor as new: its first compare
            // reports whatever differs from the defaults, marks or not.
            let mut late = ShadowState::new(&mut s);
            let c = frame(&mut s, &mut late, PushMode::Declared);
            assert_eq!(c.changelist(s.layout(), a.index), vec![1, 0], "push {push}");
            assert_eq!(c.changelist(s.layout(), b.index), Vec::<u16>::new(), "push {push}: defaults are no change");
            assert_eq!(late.value(a.index, 0), Some(Value::F32(4.0)));
        }
    }

    #[test]
    fn a_lane_selection_compares_only_those_lanes_and_the_rest_is_found_later() {
        use rand::{Rng, SeedableRng};
        for (seed, push) in [(1u64, false), (2, true), (3, false), (4, true)] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut s = store(push);
            let mut sh = ShadowState::new(&mut s);
            let ids: Vec<_> = (0..150).map(|_| s.spawn()).collect();
            // What each actor's Hp and Inv were when it was last compared (a new actor: defaults).
            let mut seen: Vec<(f32, Vec<u32>)> = vec![(0.0, Vec::new()); ids.len()];
            for round in 0..40 {
                // Dense rounds change most actors (the dense path's whole-plane copy), sparse
                // rounds a few.
                let p_change = if round % 3 == 0 { 0.9 } else { 0.1 };
                for &a in &ids {
                    if rng.random_bool(p_change) {
                        s.set_and_mark(a, 0, &Value::F32(rng.random_range(0..4) as f32)).unwrap();
                    }
                    if rng.random_bool(p_change / 2.0) {
                        let v: Vec<Value> =
                            (0..rng.random_range(0..3)).map(|_| Value::U32(rng.random_range(0..3))).collect();
                        s.set_and_mark(a, 1, &Value::Array(v)).unwrap();
                    }
                }
                let pick = if round % 5 == 4 { 1.0 } else { 0.5 };
                let mut lanes = vec![0u64; ids.len().div_ceil(PAGE_LANES)];
                for &a in &ids {
                    if rng.random_bool(pick) {
                        lanes[a.index as usize / PAGE_LANES] |= 1 << (a.index as usize % PAGE_LANES);
                    }
                }
                s.begin_tick();
                let mut out = ChangeSet::new();
                let cfg = CompareConfig { push: PushMode::Declared, ..CompareConfig::default() };
                sh.compare_lanes(&mut s, &cfg, Some(&lanes), &mut out).unwrap();
                for (i, &a) in ids.iter().enumerate() {
                    let selected = lanes[i / PAGE_LANES] >> (i % PAGE_LANES) & 1 != 0;
                    let list = out.changelist(s.layout(), a.index);
                    if !selected {
                        assert!(list.is_empty(), "seed {seed} round {round}: unselected actor {i} reported");
                        continue;
                    }
                    let Value::F32(hp) = s.get(a, 0).unwrap() else { unreachable!() };
                    let Value::Array(inv) = s.get(a, 1).unwrap() else { unreachable!() };
                    let inv: Vec<u32> = inv.iter().map(|v| if let Value::U32(x) = v { *x } else { 0 }).collect();
                    let hp_changed = hp.to_bits() != seen[i].0.to_bits();
                    let inv_changed = inv != seen[i].1;
                    // Handles in order: 1 (Hp) first if it changed, then 2 (Inv) with its count.
                    let hp_listed = list.first() == Some(&1);
                    let inv_listed = list.get(hp_listed as usize) == Some(&2);
                    assert_eq!(hp_listed, hp_changed, "seed {seed} round {round} actor {i}: Hp");
                    assert_eq!(inv_listed, inv_changed, "seed {seed} round {round} actor {i}: Inv");
                    assert_eq!(sh.value(a.index, 0), Some(Value::F32(hp)), "the shadow caught up");
                    seen[i] = (hp, inv);
                }
            }
        }
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
