//! The shadow's slots kept in line with the store's: pages added as the store grows, and the
//! lanes of actors spawned or despawned since the last compare reset — a new actor's shadow
//! holds its class defaults and every parent is marked dirty, so its first compare finds what
//! differs from them (UE compares a new object with its class default object). Also the list of
//! a frame's marked pages, which the push frame and the listed walks start from.

use super::ShadowState;
use crate::schema::PAGE_LANES;
use crate::store::{BitIter, DirtyState, LiveView};

/// The pages with a mark below `pages`, ascending (as the summary bits list them).
pub(super) fn marked_pages(dirty: &DirtyState, pages: usize) -> Vec<usize> {
    dirty
        .pages
        .iter()
        .enumerate()
        .flat_map(|(w, &bits)| BitIter(bits).map(move |b| w * 64 + b))
        .filter(|&p| p < pages)
        .collect()
}

impl ShadowState {
    /// Brings the shadow's slots in line with the store's: new pages, and lanes whose actor was
    /// spawned or despawned since the last compare (zeroed shadow, every parent marked dirty).
    pub(super) fn sync_slots(&mut self, view: &LiveView<'_>, dirty: &mut DirtyState) {
        let pages = view.occupied.len();
        // Nothing spawned or despawned since the last look: no page to visit (a push frame of a
        // large class costs its marks, not a pass over every page's epoch).
        if self.seen_structure == Some(view.structure) && self.seen_epochs.len() == pages {
            return;
        }
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
                crate::store::zero_lanes(&self.layout, bytes, lane);
                self.check.reset_lane(&self.layout, p, lane);
                for a in 0..self.layout.arrays.len() {
                    self.arrays[p][a * PAGE_LANES + lane] = Vec::new();
                }
            }
            let born = reset & now;
            // A new actor's shadow holds the class defaults: its first compare finds what differs
            // from them (UE compares a new object with its class default object).
            if !self.layout.default_planes.is_empty() {
                for lane in BitIter(born) {
                    crate::store::write_defaults(&self.layout, bytes, lane);
                }
            }
            for lane in BitIter(born) {
                crate::store::write_default_arrays(&self.layout, &mut self.arrays[p], lane);
            }
            if born != 0 {
                for parent in 0..parents {
                    dirty.mark(p, parent, born);
                }
            }
            self.seen_occupied[p] = now;
            self.seen_epochs[p] = view.epochs[p];
        }
        self.seen_structure = Some(view.structure);
    }
}
