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
    pub(super) leaves: usize,
    /// `masks[page * leaves + leaf]`: lanes whose leaf changed. Valid only where `page_lanes` is
    /// non-zero; use [`ChangeSet::leaf_mask`].
    pub(super) masks: Vec<u64>,
    /// Per page: lanes with any change.
    pub(super) page_lanes: Vec<u64>,
    /// Per page: dynamic-array changes, by leaf, then slot.
    pub(super) arrays: Vec<Vec<ArrayChange>>,
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
        self.arrays.resize_with(pages, Vec::new);
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
