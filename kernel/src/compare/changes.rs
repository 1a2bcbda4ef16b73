//! What a compare found: per (page, leaf) lane masks, per-page summaries and dynamic-array
//! changes, and their rendering as UE changelists.
//!
//! Invariant: `masks[page * leaves + leaf]` is valid only where `page_lanes[page]` is non-zero (a
//! page without changes leaves its masks stale, so the compare never writes them); every reader
//! goes through [`ChangeSet::leaf_mask`] or [`ChangeSet::changelist`], which check the summary
//! first.

use crate::ids::LaneMask;
use crate::schema::{ClassLayout, LeafKind, PAGE_LANES};

/// One actor's dynamic-array change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayChange<'a> {
    /// Actor slot.
    pub slot: u32,
    /// Leaf index of the array command.
    pub leaf: u16,
    /// Length now.
    pub new_len: u16,
    /// Nested handles (`element * element_leaves + leaf + 1`) of changed or new element leaves,
    /// ascending.
    pub elements: &'a [u16],
}

/// One page's dynamic-array changes: the changes in order, and their nested handles in one
/// list. Nothing is allocated a change (the lists keep their room from frame to frame) and a
/// reset is two lengths set to zero. (Each change owned a `Vec` of its handles before session
/// 77: an allocation a change, and a reset that walked every change of the last frame to free
/// them, its lines cold — a fifth of a push frame of marked arrays.)
#[derive(Clone, Debug, Default)]
pub(super) struct PageArrayChanges {
    changes: Vec<StoredChange>,
    elements: Vec<u16>,
}

/// A change as a page keeps it: its handles end at `end` in the page's list, where the one
/// before's end.
#[derive(Clone, Copy, Debug)]
struct StoredChange {
    slot: u32,
    leaf: u16,
    new_len: u16,
    end: u32,
}

impl PageArrayChanges {
    pub(super) fn clear(&mut self) {
        self.changes.clear();
        self.elements.clear();
    }

    /// Where the next change's nested handles are pushed, before [`Self::push`] records it (a
    /// lane found unchanged pushes none).
    pub(super) fn elements_mut(&mut self) -> &mut Vec<u16> {
        &mut self.elements
    }

    /// Records a change of the array leaf `leaf` of `slot`, now `new_len` long, whose handles
    /// are those pushed since the last.
    pub(super) fn push(&mut self, slot: u32, leaf: u16, new_len: u16) {
        self.changes.push(StoredChange { slot, leaf, new_len, end: self.elements.len() as u32 });
    }

    /// The changes, in the order recorded.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = ArrayChange<'_>> + '_ {
        self.changes.iter().enumerate().map(move |(i, c)| {
            let start = if i == 0 { 0 } else { self.changes[i - 1].end as usize };
            ArrayChange {
                slot: c.slot,
                leaf: c.leaf,
                new_len: c.new_len,
                elements: &self.elements[start..c.end as usize],
            }
        })
    }
}

/// What one compare found.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    pub(super) leaves: usize,
    /// `masks[page * leaves + leaf]`: lanes whose leaf changed. Valid only where `page_lanes` is
    /// non-zero; use [`ChangeSet::leaf_mask`].
    pub(super) masks: Vec<u64>,
    /// Per page: lanes with any change.
    pub(super) page_lanes: Vec<u64>,
    /// Per page: dynamic-array changes, by leaf, then slot.
    pub(super) arrays: Vec<PageArrayChanges>,
    /// The only pages the last compare may have written (a listed compare's pages), so the next
    /// reset clears just those; `None`: any page (clear them all).
    pub(super) written: Option<Vec<usize>>,
    /// Of those, the pages the page walk compared or whose arrays the batched push frame
    /// compared: the only ones whose `arrays` may be non-empty, so the next reset reads just
    /// their lists.
    pub(super) walked: Vec<usize>,
}

impl ChangeSet {
    /// An empty change set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the set for a compare of `pages` pages of `leaves` leaves. After a listed compare
    /// of the same shape only its pages are cleared, so a push frame's reset costs what the frame
    /// wrote, not what the class holds.
    pub(super) fn reset(&mut self, pages: usize, leaves: usize) {
        let written = self.written.take();
        if let Some(list) = written.filter(|_| self.leaves == leaves && self.page_lanes.len() == pages) {
            for p in list {
                self.page_lanes[p] = 0;
            }
            for p in self.walked.drain(..) {
                self.arrays[p].clear();
            }
            return;
        }
        self.walked.clear();
        self.leaves = leaves;
        self.masks.resize(pages * leaves, 0);
        self.page_lanes.clear();
        self.page_lanes.resize(pages, 0);
        self.arrays.resize_with(pages, PageArrayChanges::default);
        for a in &mut self.arrays {
            a.clear();
        }
    }

    /// The pages the last compare may have changed, ascending: a listed compare's own pages
    /// (so a reader of a few selected lanes of a large class costs those), else every page.
    pub fn touched_pages(&self) -> impl Iterator<Item = usize> + '_ {
        let listed = self.written.as_deref().map(|l| l.iter().copied());
        let all = self.written.is_none().then_some(0..self.pages());
        listed.into_iter().flatten().chain(all.into_iter().flatten())
    }

    /// Pages covered.
    pub fn pages(&self) -> usize {
        self.page_lanes.len()
    }

    /// Lanes of page `p` with any change.
    pub fn page_lanes(&self, p: usize) -> LaneMask {
        LaneMask(self.page_lanes.get(p).copied().unwrap_or(0))
    }

    /// Lanes of page `p` whose leaf `leaf` changed.
    pub fn leaf_mask(&self, p: usize, leaf: usize) -> LaneMask {
        if self.page_lanes(p).is_empty() {
            return LaneMask::EMPTY;
        }
        LaneMask(self.masks[p * self.leaves + leaf])
    }

    /// Dynamic-array changes of page `p`, by leaf, then slot.
    pub fn array_changes(&self, p: usize) -> impl ExactSizeIterator<Item = ArrayChange<'_>> + '_ {
        static NONE: PageArrayChanges = PageArrayChanges { changes: Vec::new(), elements: Vec::new() };
        self.arrays.get(p).unwrap_or(&NONE).iter()
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
        if !self.page_lanes(p).contains(lane) {
            return out;
        }
        for (i, leaf) in layout.leaves.iter().enumerate() {
            if self.masks[p * self.leaves + i] >> lane & 1 == 0 {
                continue;
            }
            out.push(leaf.handle);
            if leaf.kind == LeafKind::Array {
                let change = self.arrays[p].iter().find(|c| c.slot == slot && c.leaf as usize == i);
                let elements = change.map_or(&[][..], |c| c.elements);
                out.push(elements.len() as u16);
                out.extend_from_slice(elements);
                out.push(0);
            }
        }
        out.push(0);
        out
    }
}
