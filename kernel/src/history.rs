//! The change history shared by every connection: when each property of each actor last changed.
//!
//! UE keeps, per object, a ring of the last 64 changelists (merging the oldest when full) and
//! each connection remembers the ring index it has caught up to; sending means OR-ing the
//! changelists after that index. Here the same question — *which leaves changed after frame F?* —
//! is answered from one number per (actor, leaf): the frame it last changed.
//!
//! ```text
//! frames[page][leaf][lane]   u32 frame of the last change (0 = never changed from the default)
//! changed_since(slot, F) = { leaf | frames[slot][leaf] > F }
//! ```
//!
//! A dynamic array is one leaf here, and beside it the frame each of its element leaves last
//! changed (by nested handle), so a connection that last sent at F gets the array's length and
//! the elements changed after F, as UE sends changed elements by nested handle:
//!
//! ```text
//! elements[(slot, leaf)][nested − 1]   u32 frame of the element leaf's last change (or growth)
//! ```
//!
//! This yields exactly the union UE's ring would, for any catch-up point, without a 64-entry
//! limit: a connection that is far behind gets precisely what changed since it last caught up
//! (UE's merged oldest entry may add properties that changed even earlier; sending those too is
//! harmless, sending fewer is what exactness buys). Frame numbers start at 1.

use crate::compare::ChangeSet;
use crate::ids::{Frame, GuidHasher, LeafMask};
use crate::schema::{ClassLayout, PAGE_LANES};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

/// Last-changed frames of every leaf (and array element) of one class.
#[derive(Clone, Debug)]
pub struct History {
    layout: Arc<ClassLayout>,
    /// `frames[(page * leaves + leaf) * 64 + lane]`.
    frames: Vec<u32>,
    /// Per slot: the two most recent frames with any change (latest, the one before).
    recent: Vec<(u32, u32)>,
    /// Per (slot, array leaf) with elements: each element leaf's last-changed frame, as long as
    /// the array (an element leaf of a new element changed when it appeared).
    /// Keyed by [`element_key`] and hashed with one multiply (the keys are the server's own): an
    /// ordered map cost a lookup a handful of cache misses down its nodes — with 100 000 actors'
    /// arrays, most of the ~0.5 µs a changed array cost its compare.
    elements: HashMap<u64, Vec<u32>, BuildHasherDefault<GuidHasher>>,
}

/// The key of array leaf `leaf` of `slot` in [`History`]'s element stamps.
fn element_key(slot: u32, leaf: u16) -> u64 {
    (u64::from(slot) << 16) | u64::from(leaf)
}

impl History {
    /// An empty history for `layout`.
    pub fn new(layout: Arc<ClassLayout>) -> Self {
        Self { layout, frames: Vec::new(), recent: Vec::new(), elements: HashMap::default() }
    }

    fn ensure_pages(&mut self, pages: usize) {
        let leaves = self.layout.leaves.len();
        self.frames.resize(pages * leaves * PAGE_LANES, 0);
        self.recent.resize(pages * PAGE_LANES, (0, 0));
    }

    /// Records what `changes` found in `frame` (frames must increase from call to call).
    pub fn record(&mut self, frame: Frame, changes: &ChangeSet) {
        let frame = frame.0;
        self.ensure_pages(changes.pages());
        let leaves = self.layout.leaves.len();
        for p in changes.touched_pages() {
            if changes.page_lanes(p).is_empty() {
                continue;
            }
            for lane in changes.page_lanes(p).iter() {
                let r = &mut self.recent[p * PAGE_LANES + lane];
                if r.0 != frame {
                    *r = (frame, r.0);
                }
            }
            for leaf in 0..leaves {
                let mask = changes.leaf_mask(p, leaf);
                let base = (p * leaves + leaf) * PAGE_LANES;
                for lane in mask.iter() {
                    self.frames[base + lane] = frame;
                }
            }
            for ch in changes.array_changes(p) {
                let Some(a) = self.layout.leaves.get(ch.leaf as usize).and_then(|l| l.array) else { continue };
                let per = self.layout.arrays[a].elements.len();
                let stamps = self.elements.entry(element_key(ch.slot, ch.leaf)).or_default();
                stamps.resize(ch.new_len as usize * per, 0);
                for &nested in ch.elements {
                    if let Some(s) = stamps.get_mut(usize::from(nested).wrapping_sub(1)) {
                        *s = frame;
                    }
                }
            }
        }
    }

    /// The last-changed frame of each element leaf of array leaf `leaf` of `slot`, by nested
    /// handle − 1, as long as the array was when it was last compared (empty: no element yet).
    pub fn element_frames(&self, slot: u32, leaf: usize) -> &[u32] {
        let key = element_key(slot, u16::try_from(leaf).unwrap_or(u16::MAX));
        self.elements.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Forgets slot `slot` (its actor was despawned; a new actor there starts from defaults).
    pub fn clear_slot(&mut self, slot: u32) {
        let (p, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        let leaves = self.layout.leaves.len();
        if p * leaves * PAGE_LANES >= self.frames.len() {
            return;
        }
        for leaf in 0..leaves {
            self.frames[(p * leaves + leaf) * PAGE_LANES + lane] = 0;
        }
        self.recent[slot as usize] = (0, 0);
        for (leaf, l) in self.layout.leaves.iter().enumerate() {
            if l.array.is_some() {
                self.elements.remove(&element_key(slot, leaf as u16));
            }
        }
    }

    /// Whether `slot` changed in a frame after `since` and before `frame` — what a pair that last
    /// sent at `since` may have missed besides this frame's changes. Answers without a scan.
    pub fn changed_between(&self, slot: u32, since: Frame, frame: Frame) -> bool {
        let before = self.changed_before(slot, frame);
        before > since && before < frame
    }

    /// The last frame before `frame` that `slot` changed in (0: none since it was cleared).
    pub fn changed_before(&self, slot: u32, frame: Frame) -> Frame {
        let (latest, previous) = self.recent.get(slot as usize).copied().unwrap_or((0, 0));
        Frame(if latest == frame.0 { previous } else { latest })
    }

    /// The last frame `slot` changed in (0: never since it was cleared).
    pub fn last_changed(&self, slot: u32) -> Frame {
        Frame(self.recent.get(slot as usize).map_or(0, |r| r.0))
    }

    /// Leaves of `slot` that changed after frame `since`, as the groups that hold them
    /// ([`crate::schema::groups`]: leaves, up to 64 of them).
    pub fn changed_since(&self, slot: u32, since: Frame) -> LeafMask {
        let (p, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        let leaves = self.layout.leaves.len();
        let groups = &self.layout.groups;
        let mut mask = LeafMask::EMPTY;
        for leaf in 0..leaves {
            let f = self.frames.get((p * leaves + leaf) * PAGE_LANES + lane).copied().unwrap_or(0);
            if f > since.0 {
                mask |= groups.bit(leaf);
            }
        }
        mask
    }
}
