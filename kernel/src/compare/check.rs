//! Push-model validation and per-property dirty statistics, for a game team hunting missing
//! `mark_*_dirty` calls (UE's `net.PushModelValidateProperties`; NetDirty's `NETDIRTY_CHECK`
//! static buffer and its dirty statistics).
//!
//! ```text
//! validation on (CompareConfig::validate_push), per compared page:
//!     for each push-ruled parent with fixed leaves:
//!         changed  = OR over its planes of diff(live, validation shadow) & compared lanes
//!         unmarked = changed & !marked            → one UnmarkedChange per (lane, parent)
//!         copy the changed lanes live → validation shadow
//! statistics on (CompareConfig::dirty_stats), per compared page and parent:
//!     marked  += lanes compared with a mark
//!     changed += lanes whose value changed (what the compare reported)
//! ```
//!
//! The validation shadow is separate from the replication shadow, so validation never changes
//! what is replicated: an unmarked change stays unsent (as with the switch off) until a mark
//! arrives, and it is reported once, in the compare that first sees it. The validation shadow is a
//! copy of the live pages taken when validation is switched on and dropped when it is switched
//! off, so it reports changes made from the switch on. Lanes of a newly spawned actor are marked
//! on every parent (they start all-dirty), so a new actor is never reported, and they count as
//! marked in the statistics.

use crate::schema::{ClassLayout, PAGE_LANES};
use crate::store::{ActorId, BitIter, PageArray};

/// Unmarked changes a shadow keeps until [`super::ShadowState::take_unmarked_changes`]; the ones
/// found beyond are counted ([`super::ShadowState::unmarked_changes_dropped`]), not kept: a game
/// that validates and never takes them does not grow without bound.
pub const MAX_UNMARKED_CHANGES: usize = 1 << 16;

/// One change of a push-based property found without a dirty mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmarkedChange {
    /// Class name.
    pub class: String,
    /// The actor whose property changed.
    pub actor: ActorId,
    /// Parent property index.
    pub parent: usize,
    /// Parent property name.
    pub property: String,
}

/// One parent property's dirty statistics since the last reset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PropertyDirtyStats {
    /// Parent property name.
    pub property: String,
    /// Whether the property is declared push-based.
    pub push: bool,
    /// Actor lanes compared with a dirty mark on this parent (several marks between two compares
    /// count once; a new actor counts as marked).
    pub marked: u64,
    /// Actor lanes in which the compare found this parent's value changed.
    pub changed: u64,
}

/// What the last compare visited (a counter, to observe which pages and lanes were read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompareVisit {
    /// Pages whose columns the compare read.
    pub pages: u64,
    /// Lanes it considered: the marked ones on a dirty-only compare (every property push-ruled),
    /// else every compared occupied lane.
    pub lanes: u64,
}

/// A shadow's validation state and statistics.
#[derive(Debug)]
pub(super) struct PushCheck {
    /// The validation shadow: live as of the last validating compare (`None`: validation off).
    pub(super) validated: Option<PageArray>,
    /// `scratch[page * parents + parent]`: unmarked changed lanes found by this compare.
    pub(super) scratch: Vec<u64>,
    /// Unmarked changes not yet taken (at most [`MAX_UNMARKED_CHANGES`]), and how many found
    /// beyond that were dropped.
    unmarked: Vec<UnmarkedChange>,
    dropped: u64,
    /// Per parent statistics.
    stats: Vec<PropertyDirtyStats>,
}

impl PushCheck {
    pub(super) fn new(layout: &ClassLayout) -> Self {
        let stats = layout
            .parents
            .iter()
            .map(|p| PropertyDirtyStats { property: p.name.clone(), push: p.push, ..Default::default() })
            .collect();
        Self { validated: None, scratch: Vec::new(), unmarked: Vec::new(), dropped: 0, stats }
    }

    /// Before a validating compare: a validation shadow covering `pages` (a copy of `live` when
    /// validation was off), and cleared scratch masks.
    pub(super) fn prepare(&mut self, live: &PageArray, pages: usize, parents: usize) {
        let validated = self.validated.get_or_insert_with(|| live.clone());
        while validated.len() < pages {
            // A new page's occupied lanes are new actors, marked on every parent.
            validated.push_zeroed();
        }
        self.scratch.clear();
        self.scratch.resize(pages * parents, 0);
    }

    /// Zeroes a slot's lane of the validation shadow (its actor was replaced).
    pub(super) fn reset_lane(&mut self, layout: &ClassLayout, page: usize, lane: usize) {
        if let Some(v) = self.validated.as_mut().filter(|v| page < v.len()) {
            crate::store::zero_lanes(layout, v.page_mut(page), lane);
        }
    }

    /// After a validating compare: turns the scratch masks into [`UnmarkedChange`]s.
    pub(super) fn collect(&mut self, layout: &ClassLayout, generations: &[u32], pages: usize) {
        let parents = layout.parents.len();
        for p in 0..pages {
            let masks = &self.scratch[p * parents..(p + 1) * parents];
            let mut lanes_any = 0u64;
            for m in masks {
                lanes_any |= m;
            }
            for lane in BitIter(lanes_any) {
                let index = (p * PAGE_LANES + lane) as u32;
                let actor = ActorId { index, generation: generations[index as usize] };
                for (parent, &m) in masks.iter().enumerate() {
                    if m >> lane & 1 == 0 {
                        continue;
                    }
                    if self.unmarked.len() >= MAX_UNMARKED_CHANGES {
                        self.dropped += 1;
                    } else {
                        self.unmarked.push(UnmarkedChange {
                            class: layout.name.clone(),
                            actor,
                            parent,
                            property: layout.parents[parent].name.clone(),
                        });
                    }
                }
            }
        }
    }

    /// Adds one compare's `[marked, changed]` counts per parent.
    pub(super) fn add_stats(&mut self, counts: &[u64]) {
        for (s, c) in self.stats.iter_mut().zip(counts.chunks_exact(2)) {
            s.marked += c[0];
            s.changed += c[1];
        }
    }
}

impl super::ShadowState {
    /// The unmarked changes push validation found since the last call (in slot order within a
    /// compare, compares in order), leaving none. Empty unless [`super::CompareConfig::validate_push`]
    /// was on.
    pub fn take_unmarked_changes(&mut self) -> Vec<UnmarkedChange> {
        std::mem::take(&mut self.check.unmarked)
    }

    /// Unmarked changes found while [`MAX_UNMARKED_CHANGES`] were waiting to be taken, so not
    /// kept (a count since the shadow was made).
    pub fn unmarked_changes_dropped(&self) -> u64 {
        self.check.dropped
    }

    /// Per parent property, its dirty statistics since the last [`Self::reset_dirty_stats`]
    /// (counted by compares run with [`super::CompareConfig::dirty_stats`]).
    pub fn dirty_stats(&self) -> &[PropertyDirtyStats] {
        &self.check.stats
    }

    /// Sets every dirty statistic back to zero.
    pub fn reset_dirty_stats(&mut self) {
        for s in &mut self.check.stats {
            s.marked = 0;
            s.changed = 0;
        }
    }

    /// What the last compare visited.
    pub fn last_visit(&self) -> CompareVisit {
        self.visit
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ChangeSet, CompareConfig, ShadowState};
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl};
    use crate::store::ClassStore;
    use crate::value::Value;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Parents: 0 `Hp` (push), 1 `Ammo` (push), 2 `Pos` (polled), 3 `Inv` (push array).
    fn store() -> ClassStore {
        let layout = ClassBuilder::new("Hero")
            .property(PropertyDecl::new("Hp", PropType::F32).push(true))
            .property(PropertyDecl::new("Ammo", PropType::U16).push(true))
            .property(PropertyDecl::new("Pos", PropType::Vector(Default::default())))
            .property(PropertyDecl::new("Inv", PropType::array(PropType::U32)).push(true))
            .build()
            .unwrap();
        ClassStore::new(Arc::new(layout))
    }

    fn cfg(validate: bool) -> CompareConfig {
        CompareConfig { validate_push: validate, dirty_stats: true, min_parallel_pages: 1, ..CompareConfig::default() }
    }

    fn frame(s: &mut ClassStore, sh: &mut ShadowState, cfg: &CompareConfig) -> ChangeSet {
        let mut out = ChangeSet::new();
        s.begin_tick();
        sh.compare(s, cfg, &mut out).unwrap();
        out
    }

    fn value(parent: usize, x: u16) -> Value {
        match parent {
            0 => Value::F32(x as f32),
            _ => Value::U16(x),
        }
    }

    #[test]
    fn validation_reports_exactly_the_unmarked_changes_once() {
        let mut s = store();
        let mut sh = ShadowState::new(&mut s);
        let ids: Vec<_> = (0..3).map(|_| s.spawn()).collect();
        // New actors start all-dirty: never reported.
        s.set(ids[0], 0, &Value::F32(5.0)).unwrap();
        frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        // Marked change: not reported. Unmarked change: reported once. Marked, unchanged: not.
        s.set_and_mark(ids[0], 0, &Value::F32(6.0)).unwrap();
        s.set(ids[1], 1, &Value::U16(7)).unwrap();
        s.mark_dirty(ids[2], 0).unwrap();
        // A polled change needs no mark.
        s.set(ids[2], 2, &Value::Vector([1.0, 2.0, 3.0])).unwrap();
        let c = frame(&mut s, &mut sh, &cfg(true));
        let found = sh.take_unmarked_changes();
        let expected = vec![UnmarkedChange { class: "Hero".into(), actor: ids[1], parent: 1, property: "Ammo".into() }];
        assert_eq!(found, expected);
        // Replication as with the switch off: the unmarked change is not sent.
        assert!(c.changelist(s.layout(), ids[1].index).is_empty());
        assert_eq!(c.changelist(s.layout(), ids[0].index), vec![1, 0]);
        // Not reported again while it stays; sent once it is marked, and still not reported.
        frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        s.mark_dirty(ids[1], 1).unwrap();
        let c = frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(c.changelist(s.layout(), ids[1].index), vec![2, 0]);
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        // A slot reused by a new actor is not reported either.
        s.despawn(ids[2]).unwrap();
        let b = s.spawn();
        s.set(b, 0, &Value::F32(9.0)).unwrap();
        frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(sh.take_unmarked_changes(), vec![]);
    }

    #[test]
    fn validation_starts_from_the_state_it_is_switched_on_in() {
        let mut s = store();
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        frame(&mut s, &mut sh, &cfg(false));
        s.set(a, 0, &Value::F32(1.0)).unwrap();
        frame(&mut s, &mut sh, &cfg(false));
        // The change before the switch is not reported; one after it is.
        frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        s.set(a, 0, &Value::F32(2.0)).unwrap();
        frame(&mut s, &mut sh, &cfg(true));
        assert_eq!(sh.take_unmarked_changes().len(), 1);
    }

    #[test]
    fn statistics_count_marks_and_real_changes() {
        let mut s = store();
        let mut sh = ShadowState::new(&mut s);
        let a = s.spawn();
        let b = s.spawn();
        frame(&mut s, &mut sh, &cfg(false));
        // The two new actors: marked on every parent, nothing differs from defaults.
        let counts = |sh: &ShadowState| sh.dirty_stats().iter().map(|p| (p.marked, p.changed)).collect::<Vec<_>>();
        assert_eq!(counts(&sh), vec![(2, 0); 4]);
        sh.reset_dirty_stats();
        // Frame 1: Hp marked twice and changed (counts once), Ammo marked unchanged on both,
        // Pos changed without a mark (polled), Inv written (the store marks it) and changed.
        s.set_and_mark(a, 0, &Value::F32(1.0)).unwrap();
        s.set_and_mark(a, 0, &Value::F32(2.0)).unwrap();
        s.mark_dirty(a, 1).unwrap();
        s.mark_dirty(b, 1).unwrap();
        s.set(b, 2, &Value::Vector([1.0, 0.0, 0.0])).unwrap();
        s.set(b, 3, &Value::Array(vec![Value::U32(4)])).unwrap();
        frame(&mut s, &mut sh, &cfg(false));
        // Frame 2: Hp of b changed without a mark (push: not compared, not counted).
        s.set(b, 0, &Value::F32(3.0)).unwrap();
        s.set_and_mark(b, 1, &Value::U16(1)).unwrap();
        frame(&mut s, &mut sh, &cfg(false));
        assert_eq!(counts(&sh), vec![(1, 1), (3, 1), (0, 1), (1, 1)]);
        assert_eq!(sh.dirty_stats()[1].property, "Ammo");
        assert!(sh.dirty_stats()[1].push && !sh.dirty_stats()[2].push);
    }

    /// With every property push-ruled, a compare reads only the pages and lanes with marks.
    #[test]
    fn a_push_compare_visits_only_the_marked_actors() {
        let layout = ClassBuilder::new("P")
            .property(PropertyDecl::new("Hp", PropType::F32).push(true))
            .property(PropertyDecl::new("Ammo", PropType::U16).push(true))
            .build()
            .unwrap();
        let mut s = ClassStore::new(Arc::new(layout));
        let mut sh = ShadowState::new(&mut s);
        let ids: Vec<_> = (0..64 * 40).map(|_| s.spawn()).collect();
        for parallel in [false, true] {
            let cfg = CompareConfig { parallel, min_parallel_pages: 1, ..CompareConfig::default() };
            frame(&mut s, &mut sh, &cfg);
            frame(&mut s, &mut sh, &cfg);
            assert_eq!(sh.last_visit(), CompareVisit::default(), "no marks: nothing read");
            // Three actors on two pages; one of them marked twice on two parents.
            for (i, parent) in [(5, 0), (5, 1), (5, 0), (70, 1), (2000, 0)] {
                s.set_and_mark(ids[i], parent, &Value::default_for(&s.layout().parents[parent].ty)).unwrap();
                s.mark_dirty(ids[i], parent).unwrap();
            }
            s.begin_tick();
            assert_eq!(sh_dirty_pages(&s, &sh), vec![0, 1, 31]);
            let mut out = ChangeSet::new();
            sh.compare(&mut s, &cfg, &mut out).unwrap();
            assert_eq!(sh.last_visit(), CompareVisit { pages: 3, lanes: 3 }, "parallel {parallel}");
        }
    }

    fn sh_dirty_pages(s: &ClassStore, sh: &ShadowState) -> Vec<u32> {
        let mut pages = s.dirty(&sh.watcher).dirty_pages().to_vec();
        pages.sort_unstable();
        pages
    }

    /// Class defaults on push-ruled properties: a new actor (on a new page, in a reused slot,
    /// compared late by a selected compare) is never reported, nor is an actor left at its
    /// defaults; an unmarked change away from a default is reported once.
    #[test]
    fn validation_with_class_defaults_reports_only_real_unmarked_changes() {
        let layout = ClassBuilder::new("Hero")
            .property(PropertyDecl::new("Hp", PropType::F32).push(true).default_value(Value::F32(100.0)))
            .property(PropertyDecl::new("Alive", PropType::Bool).push(true).default_value(Value::Bool(true)))
            .property(PropertyDecl::new("Ammo", PropType::U16).push(true).dim(2).default_value(Value::U16(30)))
            .property(PropertyDecl::new("Pos", PropType::Vector(Default::default())))
            .build()
            .unwrap();
        let mut s = ClassStore::new(Arc::new(layout));
        let mut sh = ShadowState::new(&mut s);
        let on = cfg(true);
        let ids: Vec<_> = (0..70).map(|_| s.spawn()).collect();
        for _ in 0..3 {
            frame(&mut s, &mut sh, &on);
            assert_eq!(sh.take_unmarked_changes(), vec![]);
        }
        // Written to their defaults without a mark: no change.
        s.set(ids[3], 0, &Value::F32(100.0)).unwrap();
        s.set(ids[3], 1, &Value::Bool(true)).unwrap();
        frame(&mut s, &mut sh, &on);
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        // A slot reused, its actor compared first by a selected compare, a frame later.
        s.despawn(ids[5]).unwrap();
        let b = s.spawn();
        s.set(b, 2, &Value::U16(1)).unwrap();
        let mut out = ChangeSet::new();
        s.begin_tick();
        sh.compare_lanes(&mut s, &on, Some(&[1 << 6, 0]), &mut out).unwrap();
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        s.begin_tick();
        sh.compare_lanes(&mut s, &on, Some(&[1 << 5, 0]), &mut out).unwrap();
        assert_eq!(sh.take_unmarked_changes(), vec![]);
        assert_eq!(out.changelist(s.layout(), b.index), vec![3, 0]);
        for _ in 0..2 {
            frame(&mut s, &mut sh, &on);
            assert_eq!(sh.take_unmarked_changes(), vec![]);
        }
        // An unmarked change away from a default: reported once.
        s.set(ids[66], 1, &Value::Bool(false)).unwrap();
        frame(&mut s, &mut sh, &on);
        let found: Vec<_> = sh.take_unmarked_changes().iter().map(|u| (u.actor, u.parent)).collect();
        assert_eq!(found, vec![(ids[66], 1)]);
        frame(&mut s, &mut sh, &on);
        assert_eq!(sh.take_unmarked_changes(), vec![]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Random changes and marks over frames: validation reports exactly the (actor, push
        /// parent) pairs whose value changed without a mark since the last compare, and the
        /// replicated changes are those of the same compare with validation off.
        #[test]
        fn validation_reports_exactly_the_unmarked_changes_random(
            actors in 1usize..150,
            frames in proptest::collection::vec(proptest::collection::vec((0usize..150, 0usize..2, 0u16..3, any::<bool>()), 0..40), 1..6),
        ) {
            let mut s = store();
            let mut checked = ShadowState::new(&mut s);
            let mut plain = ShadowState::new(&mut s);
            let ids: Vec<_> = (0..actors).map(|_| s.spawn()).collect();
            let on = cfg(true);
            let off = cfg(false);
            s.begin_tick();
            let (mut a, mut b) = (ChangeSet::new(), ChangeSet::new());
            checked.compare(&mut s, &on, &mut a).unwrap();
            plain.compare(&mut s, &off, &mut b).unwrap();
            for ops in frames {
                let mut before = std::collections::BTreeMap::new();
                let mut marked = std::collections::BTreeSet::new();
                for &(i, parent, x, mark) in &ops {
                    let id = ids[i % actors];
                    before.entry((id.index, parent)).or_insert_with(|| s.get(id, parent).unwrap());
                    s.set(id, parent, &value(parent, x)).unwrap();
                    if mark {
                        s.mark_dirty(id, parent).unwrap();
                        marked.insert((id.index, parent));
                    }
                }
                let expected: Vec<(u32, usize)> = before
                    .iter()
                    .filter(|(k, v)| !marked.contains(k) && !crate::store::value_bits_eq(v, &s.get(ids[k.0 as usize], k.1).unwrap()))
                    .map(|(k, _)| *k)
                    .collect();
                s.begin_tick();
                checked.compare(&mut s, &on, &mut a).unwrap();
                plain.compare(&mut s, &off, &mut b).unwrap();
                let found: Vec<(u32, usize)> = checked.take_unmarked_changes().iter().map(|u| (u.actor.index, u.parent)).collect();
                prop_assert_eq!(found, expected);
                for id in &ids {
                    prop_assert_eq!(a.changelist(s.layout(), id.index), b.changelist(s.layout(), id.index));
                }
            }
        }
    }
}
