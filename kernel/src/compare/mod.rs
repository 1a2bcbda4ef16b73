//! The compare: find what changed since the last frame, page by page, and update the shadow.
//!
//! ```text
//! for each page (sharded across cores with rayon, in page order):
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
mod page;
mod simd;

pub use changes::{ArrayChange, ChangeSet};
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
        let dirty_pages = std::mem::take(&mut dirty.pages);
        let dirty_masks: &[u64] = &dirty.masks;
        let live_all = view.live.bytes();
        let shadow_base = self.shadow.bytes().as_ptr() as usize;
        let page_bytes = layout.page_bytes;
        let is_dirty = |p: usize| dirty_pages.get(p / 64).is_some_and(|w| w >> (p % 64) & 1 != 0);
        let selected = |p: usize| lanes.map_or(!0, |l| l.get(p).copied().unwrap_or(0));
        let work = |(p, (shadow, live, sh_arr, lv_arr, masks, lanes, arr, occ)): (usize, PageJob<'_>)| {
            let all = *occ;
            let occ = all & selected(p);
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
            if occ == 0 || (plan.dirty_only && !page_dirty) {
                return;
            }
            let dmask = &dirty_masks[p * parents..(p + 1) * parents];
            let page = PageRefs {
                index: p,
                occupied: occ,
                every_lane: occ == all,
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
