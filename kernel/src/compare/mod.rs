//! The compare: find what changed since the last frame, page by page, and update the shadow.
//!
//! ```text
//! pages = the marked pages (full-push fast path: every fixed leaf push-ruled, no validation),
//!         else every page
//! for each of those pages (sharded across cores with rayon, in page order):
//!     skip if no actor lives here, or — full-push fast path — nothing on the page is dirty
//!     skip if — walk over every page — nothing on the page is dirty and its plane bytes are
//!         equal in live and shadow (one XOR/OR pass)
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
//! shadow lane holding the class defaults (zero where none is declared:
//! [`crate::schema::PropertyDecl::default_value`]) and every parent marked dirty, so their first
//! compare finds every property that differs from the class defaults, as UE's shadow starts from
//! the class default object.
//!
//! The full-push fast path builds its page jobs from the dirty summary bits (ascending, which the
//! safe `split_at_mut` split needs), so a frame with few marks neither walks nor wakes rayon for
//! the clean pages, and prefetches the next marked page a few jobs ahead. On the calling thread
//! it first hands the quiet marked pages (a few marked lanes a parent, no dynamic array marked)
//! to `push`, which lists their marked lanes from the marks and compares them as one flat list
//! — a loop shaped like a gather of the same lines — and walks only the busier pages. With
//! [`CompareConfig::validate_push`] or [`CompareConfig::dirty_stats`] on, `check` validates the
//! push-ruled leaves and counts marks and changes per parent (see its module docs).
//!
//! With [`Kernels::best`], a class's first large full frames try each vector diff table in turn,
//! each with each [`PageScan`] and with and without the paced prefetch of a changed page's next
//! page ([`NextPage`]), and keep the fastest per page, checked again every few thousand
//! such frames (`tune`): the start-up calibration ranks the tables on cached pages, and out of the
//! cache the ranking can differ. The scan is how a page's "equal?" pass reads it: stopping at the
//! first difference (the lane diffs then stream the rest of the page, each plane's lines of the
//! next page asked for as they go), whole, naming the planes that differ (the lane diffs then
//! read L1 and visit only those), or as the lane diffs themselves, every plane's lane mask in the
//! one read (for a dense plan; ~10 % faster than the whole scan at 10–100 % changed on an AVX2-only
//! AMD EPYC Zen 3) — which one wins depends on how the diff's cost compares with
//! the machine's memory; so does whether the prefetch helps (on an AMD EPYC Zen 4 it costs a
//! third of the frame at 10 % changed, where on the other machines it saves as much).
//!
//! Optimisations: when no parent with planes is push-based (push model off, or a polled class),
//! a page's planes are diffed run by run — one call per width, the SIMD loop inside (with the
//! whole-page scan, one call per plane that differs) — and only a page with a change visits its
//! leaves; bit planes diff with one XOR; a parent whose consider mask has at most
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
//! Where things are: this module owns each driver's [`ShadowState`] (sharding pages across
//! rayon); `slots` keeps its slots in line with the store's (spawns, despawns, new pages);
//! `config` how a compare runs; `jobs` cuts the per-page borrows (`PageJob`, from a
//! run of consecutive pages, `PageBlock`, or a list) and counts what a shard visited; `page`
//! holds the per-compare plan and one page's walk; `lane` one lane of a plane (its lines, its
//! diff, its copy); `push` the batched push frame; `changes` the
//! [`ChangeSet`] output; `simd` the lane diffs per ISA and the choice among them.
//!
//! Push rules decide for fixed leaves only: a dynamic array is compared exactly where the store
//! recorded a write (it records every one), so a polled fixed leaf in the same struct as an array
//! is still compared every frame, and a bulk write to it (`plane_mut`) is found without a mark.

mod arrays;
mod changes;
mod check;
mod config;
mod jobs;
mod lane;
mod page;
mod push;
mod simd;
mod slots;
use slots::marked_pages;
pub mod tune;

pub use changes::{ArrayChange, ChangeSet};
use check::PushCheck;
pub use check::{CompareVisit, PropertyDirtyStats, UnmarkedChange, MAX_UNMARKED_CHANGES};
pub use config::{CompareConfig, CompareError, PushMode, PARALLEL_MIN_PAGES, SPARSE_LANES};
pub use simd::prefetch_addr;
use simd::prefetch_l2_addr;

/// Prefetches every cache line of the `len` bytes at `addr`.
pub(crate) fn prefetch_lines(addr: usize, len: usize) {
    let mut line = addr & !63;
    while line < addr + len {
        prefetch_addr(line);
        line += 64;
    }
}
pub use simd::{scalar, Isa, Kernels, NextPage, PageScan};

use crate::schema::{ClassLayout, PAGE_LANES};
use crate::store::{pages_with_lanes, read_parent, ClassStore, DirtyState, PageArray, PageArrays, WatcherId};
use crate::value::Value;
use jobs::{split_jobs, JobSource, PageBlock, PageJob, Tally, BLOCK_PAGES};
use page::{PageRefs, Plan};
use rayon::prelude::*;
use std::sync::Arc;

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
    /// The store's structure count when the slots were last brought in line.
    seen_structure: Option<u64>,
    /// Push validation and dirty statistics.
    check: PushCheck,
    /// What the last compare visited.
    visit: CompareVisit,
    /// The batched push frame's lists.
    batch: push::Batch,
    /// Which diff table large full frames use (see `tune`).
    tuner: tune::IsaTuner,
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
            seen_structure: None,
            check: PushCheck::new(&layout),
            visit: CompareVisit::default(),
            batch: push::Batch::default(),
            tuner: tune::IsaTuner::default(),
            layout,
        }
    }

    /// The diff table this shadow's compares settled on, when given [`Kernels::best`]: `None`
    /// until it has timed every vector table over its first large full frames (at least
    /// [`tune::TUNE_MIN_PAGES`] pages, every page walked; see [`tune`]), which push frames and
    /// compares of selected lanes never are.
    pub fn tuned_isa(&self) -> Option<Isa> {
        self.tuner.chosen().map(|k| k.isa)
    }

    /// The page scan this shadow's compares settled on, tried with every table alongside
    /// [`Self::tuned_isa`] (`None` until then).
    pub fn tuned_scan(&self) -> Option<PageScan> {
        self.tuner.chosen().map(|k| k.scan)
    }

    /// Whether this shadow's compares settled on prefetching a changed page's next page, tried
    /// with every table and scan alongside [`Self::tuned_isa`] (`None` until then).
    pub fn tuned_next_page(&self) -> Option<NextPage> {
        self.tuner.chosen().map(|k| k.next_page)
    }

    /// What the last round of trials measured (see [`tune`]): every candidate table, fastest
    /// first, with the median over the trial frames of its time per page over the baseline's
    /// (the widest table stopping at the first difference and prefetching, whose own is 1).
    /// Empty until a round is done; the first is the table kept.
    pub fn tune_scores(&self) -> &[(Kernels, f64)] {
        self.tuner.scores()
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
        let pages = lanes.map(pages_with_lanes);
        self.compare_inner(store, cfg, lanes.zip(pages.as_deref()), out)
    }

    /// [`Self::compare_lanes`] of `lanes` when the caller knows the pages with a selected lane
    /// (`pages`: ascending, each once; lanes of pages not listed are not compared): the frame
    /// costs those pages, not a pass over the class's (the actor level's due selection, a few
    /// pages of a large world of sleepers).
    pub fn compare_selected(
        &mut self,
        store: &mut ClassStore,
        cfg: &CompareConfig,
        lanes: &[u64],
        pages: &[u32],
        out: &mut ChangeSet,
    ) -> Result<(), CompareError> {
        self.compare_inner(store, cfg, Some((lanes, pages)), out)
    }

    fn compare_inner(
        &mut self,
        store: &mut ClassStore,
        cfg: &CompareConfig,
        selection: Option<(&[u64], &[u32])>,
        out: &mut ChangeSet,
    ) -> Result<(), CompareError> {
        let lanes = selection.map(|(l, _)| l);
        if store.id() != self.store {
            return Err(CompareError::ForeignStore);
        }
        let (view, dirty) = store.split_for_compare(&self.watcher);
        self.sync_slots(&view, dirty);
        let layout = &*self.layout;
        let pages = view.occupied.len();
        out.reset(pages, layout.leaves.len());
        if layout.parents.is_empty() || pages == 0 {
            dirty.clear();
            return Ok(());
        }
        let mut plan = Plan::new(layout, cfg);
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
        // Validation walks every page: a selection's lanes count on its listed pages only (an
        // unlisted page's lane, compared, would keep its mark and its change would be lost).
        let listed_lanes: Option<Vec<u64>> = selection.filter(|_| validate).map(|(l, listed)| {
            let mut only = vec![0u64; l.len()];
            for &p in listed {
                if let Some(&m) = l.get(p as usize) {
                    only[p as usize] = m;
                }
            }
            only
        });
        let lanes = listed_lanes.as_deref().or(lanes);
        // A large full frame may be a trial of another diff table (`tune`): timed, per page.
        let eligible = !list_mode && !validate && pages >= tune::TUNE_MIN_PAGES;
        let (kernels, trial) = self.tuner.pick(cfg.kernels, eligible);
        plan.set_kernels(kernels);
        // A trial frame walks its pages in short runs, each with one candidate's plan (`tune`).
        let trial_plans: Vec<Plan<'_>> =
            if trial { self.tuner.tables().iter().map(|&k| plan.with_kernels(k)).collect() } else { Vec::new() };
        let stat_words = if cfg.dirty_stats { 2 * parents } else { 0 };
        let live_all = view.live.bytes();
        // A push frame: the marked lanes of quiet pages as one list (`push`), on this thread even
        // when the pool is allowed — a latency-bound list beat the page walk on two threads by
        // 2–3× (1M ShooterCharacter, 10 000 marked: 1.3–1.5 ms against 3.7 ms), and the list cut
        // into two runs at multiples of 64 pages, one batch on each thread, was slower than one
        // (1.65–1.91 ms against 1.32–1.52, AMD EPYC Zen 3, session 65: a plain gather of the same
        // lines took 0.88 ms on two threads against 0.65 on one there) — and the busier pages
        // walked below. It runs before the walk so that it can clear a listed page's marks while
        // their lines are at hand.
        let batched = list_mode
            && plan.dirty_only
            && selection.is_none()
            && parents <= push::MAX_PARENTS
            && leaves <= push::MAX_LEAVES;
        let mut start = Tally::new(stat_words);
        let mut marked = Vec::new();
        if batched {
            marked = marked_pages(dirty, pages);
            let target = push::Target {
                live: live_all,
                shadow: bytemuck::cast_slice_mut(self.shadow.blocks_mut()),
                masks: &mut out.masks,
                page_lanes: &mut out.page_lanes,
                live_arrays: view.arrays,
                shadow_arrays: &mut self.arrays,
                changes: &mut out.arrays,
            };
            self.batch.compare(&plan, &marked, (&mut *dirty, view.occupied), target, &mut start);
        }
        let dirty_ref: &DirtyState = dirty;
        let is_dirty = |p: usize| dirty_ref.page_dirty(p);
        let selected = |p: usize| lanes.map_or(!0, |l| l.get(p).copied().unwrap_or(0));
        let shadow_base = self.shadow.bytes().as_ptr() as usize;
        let page_bytes = layout.page_bytes;
        // Addresses only (no borrow): the far prefetch names another job's output.
        let (out_masks, out_lanes) = (out.masks.as_ptr() as usize, out.page_lanes.as_ptr() as usize);
        let work = |plan: &Plan<'_>, tally: &mut Tally, job: PageJob<'_>| {
            let p = job.index;
            if let Some(q) = job.prefetch_far {
                // Two stages: first the page's bookkeeping, which the near stage reads.
                let masks = dirty_ref.page_masks(q);
                prefetch_lines(masks.as_ptr() as usize, std::mem::size_of_val(masks));
                prefetch_addr(&view.occupied[q] as *const u64 as usize);
                prefetch_lines(out_masks + q * leaves * 8, leaves * 8);
                prefetch_addr(out_lanes + q * 8);
            }
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
            if occ == 0 {
                return;
            }
            let page_dirty = is_dirty(p);
            let dmask = page_dirty.then(|| dirty_ref.page_masks(p));
            let live: &[u8] = bytemuck::cast_slice(job.live);
            // Validation first: an unmarked page is where a forgotten mark hides, and a class
            // whose every property is push-ruled compares only the marked ones.
            if let Some((validated, unmarked)) = job.check {
                plan.validate_page(live, bytemuck::cast_slice_mut(validated), occ, dmask, unmarked);
            }
            if plan.dirty_only && !page_dirty {
                return;
            }
            tally.pages += 1;
            tally.lanes += u64::from(
                if plan.dirty_only { dmask.map_or(0, |d| d.iter().fold(0, |a, &m| a | m)) & occ } else { occ }
                    .count_ones(),
            );
            let page = PageRefs {
                index: p,
                occupied: occ,
                every_lane: occ == all,
                streamed: job.streamed,
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
            work(&plan, &mut t, job);
            t
        };
        let mut parallel = cfg.parallel && pages >= cfg.min_parallel_pages;
        let mut written = None;
        let tally = if list_mode || validate {
            // Only the marked pages (in ascending order, as the summary bits list them), or every
            // page with the validation shadow beside it.
            let order: Vec<usize> = if let (true, Some((l, listed))) = (list_mode, selection) {
                listed
                    .iter()
                    .map(|&p| p as usize)
                    .filter(|&p| p < pages && l.get(p).is_some_and(|&m| m & view.occupied[p] != 0))
                    .filter(|&p| !plan.dirty_only || is_dirty(p))
                    .collect()
            } else if batched {
                std::mem::take(&mut marked)
            } else if list_mode {
                marked_pages(dirty_ref, pages)
            } else {
                (0..pages).collect()
            };
            // The pool pays off for many pages, not for a few walked out of a large class (the
            // batch took its pages already).
            let walk = if batched { &self.batch.walk } else { &order };
            parallel &= walk.len() >= cfg.min_parallel_pages;
            let check = self.check.validated.as_mut().map(|v| (v.blocks_mut(), &mut self.check.scratch[..]));
            let jobs = split_jobs(
                walk,
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
            let tally = if parallel {
                let walked = jobs
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .with_min_len(16)
                    .fold(|| Tally::new(stat_words), fold)
                    .reduce(|| Tally::new(stat_words), Tally::add);
                start.add(walked)
            } else {
                jobs.fold(start, fold)
            };
            if order.len() < pages {
                // A listed compare: the next reset clears its pages, and the array lists of
                // those it walked or whose arrays the batch compared.
                out.walked.extend_from_slice(if batched { &self.batch.walk } else { &order });
                if batched {
                    out.walked.extend_from_slice(&self.batch.arrays.pages);
                }
                written = Some(order);
            }
            tally
        } else {
            // Every page in order. A clean page whose plane bytes are equal changed nothing
            // (dynamic arrays are compared only where marked): one XOR/OR pass in a tight loop and
            // no job — most pages of a frame with little change. (Built as a job like any other
            // page, the walk ran 15 % slower at 0.1 % and 1 % changed: 1M ShooterCharacter, one
            // thread, AMD EPYC with AVX-512.)
            // A clean page of a dense plan (nothing push-ruled) that differs goes straight to the
            // plane diff too (no job, no second "equal?" pass): 1–2 % at 1–100 % changed, six
            // alternating runs each. With dirty statistics on, every page is a job (they count).
            let dense = plan.is_dense() && stat_words == 0;
            let walk = |t: &mut Tally, mut block: PageBlock<'_>| {
                let mut planes = [0; page::DENSE_MAX_PLANES];
                let (first, count) = (block.first, block.pages());
                let mut step = |plan: &Plan<'_>, t: &mut Tally, i: usize| {
                    let occ = block.occupied[i];
                    if occ != 0 && !is_dirty(first + i) {
                        // The walk's own pages compare every lane; a lane scan copies as it
                        // goes only where the page is finished here (not as a job, which would
                        // scan it again).
                        let (live, shadow) = block.bytes_mut(i);
                        let scan = plan.scan_page(live, shadow, &mut planes, dense);
                        if scan.0 == 0 || dense {
                            t.pages += 1;
                            t.lanes += u64::from(occ.count_ones());
                            if scan.0 != 0 {
                                let (mut page, masks, lanes) = block.refs(i);
                                *lanes = plan.compare_planes_dense(&mut page, scan, &mut planes, masks);
                            }
                            return;
                        }
                    }
                    work(plan, t, block.job(i));
                };
                if trial_plans.is_empty() {
                    (0..count).for_each(|i| step(&plan, t, i));
                } else {
                    tune::walk_trial(first, count, &trial_plans, t, step);
                }
            };
            let shadow = &mut self.shadow.blocks_mut()[..pages * stride];
            let live = &view.live.blocks()[..pages * stride];
            if parallel {
                (
                    shadow.par_chunks_mut(BLOCK_PAGES * stride),
                    live.par_chunks(BLOCK_PAGES * stride),
                    self.arrays[..pages].par_chunks_mut(BLOCK_PAGES),
                    view.arrays[..pages].par_chunks(BLOCK_PAGES),
                    out.masks.par_chunks_mut(BLOCK_PAGES * leaves),
                    out.page_lanes.par_chunks_mut(BLOCK_PAGES),
                    out.arrays.par_chunks_mut(BLOCK_PAGES),
                    view.occupied.par_chunks(BLOCK_PAGES),
                )
                    .into_par_iter()
                    .enumerate()
                    .map(|(k, (shadow, live, shadow_arrays, live_arrays, masks, lanes, arrays, occupied))| PageBlock {
                        first: k * BLOCK_PAGES,
                        stride,
                        leaves,
                        shadow,
                        live,
                        shadow_arrays,
                        live_arrays,
                        masks,
                        lanes,
                        arrays,
                        occupied,
                    })
                    .fold(
                        || Tally::new(stat_words).with_trials(trial_plans.len()),
                        |mut t, block| {
                            walk(&mut t, block);
                            t
                        },
                    )
                    .reduce(|| Tally::new(stat_words).with_trials(trial_plans.len()), Tally::add)
            } else {
                let mut t = Tally::new(stat_words).with_trials(trial_plans.len());
                let block = PageBlock {
                    first: 0,
                    stride,
                    leaves,
                    shadow,
                    live,
                    shadow_arrays: &mut self.arrays[..pages],
                    live_arrays: &view.arrays[..pages],
                    masks: &mut out.masks[..pages * leaves],
                    lanes: &mut out.page_lanes[..pages],
                    arrays: &mut out.arrays[..pages],
                    occupied: view.occupied,
                };
                walk(&mut t, block);
                t
            }
        };
        if trial {
            self.tuner.record(&tally.trial);
        }
        self.visit = CompareVisit { pages: tally.pages, lanes: tally.lanes };
        out.written = written;
        if validate {
            self.check.collect(layout, view.generations, pages);
        }
        if !tally.parents.is_empty() {
            self.check.add_stats(&tally.parents);
        }
        match selection {
            None => dirty.clear(),
            Some((l, listed)) => dirty.clear_listed(l, listed),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
