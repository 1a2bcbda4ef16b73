//! References waiting for their target (an object the client does not have yet), indexed both
//! ways so that no packet walks the whole list: by the slot they are written to (a record that
//! replaces one, an owner destroyed or torn off, an array cut short), and by target (the target
//! arrives). Every operation costs a logarithm of the list's size plus the entries it removes;
//! each entry is removed at most once, so the packet that added it paid for that.
//!
//! ```text
//! by_slot:   (owner, leaf, element) → (target, order)      one reference per slot
//! by_target: target → order → slot                          `take_target` writes them in order
//! ```

use crate::ids::NetGuid;
use std::collections::{BTreeMap, HashMap};

/// Where a waiting reference is to be written: actor `owner`'s leaf `leaf`, or its element
/// (element, element leaf) if `leaf` is a dynamic array. In a fast array `owner` is the array,
/// `leaf` the item's replication id and the element (0, item leaf): an item's references are
/// next to each other, as a leaf's elements are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Slot {
    pub owner: NetGuid,
    pub leaf: usize,
    pub element: Option<(usize, usize)>,
}

impl Slot {
    /// The first slot of `owner`'s leaf `leaf` (its fixed value, then its elements in order).
    fn first(owner: NetGuid, leaf: usize) -> Slot {
        Slot { owner, leaf, element: None }
    }

    /// The last slot of `owner`'s leaf `leaf`.
    fn last(owner: NetGuid, leaf: usize) -> Slot {
        Slot { owner, leaf, element: Some((usize::MAX, usize::MAX)) }
    }
}

/// The waiting references.
#[derive(Default)]
pub(super) struct Unmapped {
    by_slot: BTreeMap<Slot, (NetGuid, u64)>,
    by_target: HashMap<NetGuid, BTreeMap<u64, Slot>>,
    /// Insertion order, for `take_target` (references are written in the order they arrived).
    next: u64,
    /// Entries visited: inserted, looked up, removed or taken (the work bound's tests).
    #[cfg(test)]
    pub visited: u64,
}

impl Unmapped {
    /// References waiting.
    pub fn len(&self) -> usize {
        self.by_slot.len()
    }

    fn visit(&mut self, _n: usize) {
        #[cfg(test)]
        {
            self.visited += _n as u64;
        }
    }

    /// Remembers that `slot` waits for `target`, replacing what it waited for; false (nothing
    /// remembered) if `cap` references already wait.
    pub fn insert(&mut self, slot: Slot, target: NetGuid, cap: usize) -> bool {
        self.remove(slot);
        if self.by_slot.len() >= cap {
            return false;
        }
        let order = self.next;
        self.next += 1;
        self.by_slot.insert(slot, (target, order));
        self.by_target.entry(target).or_default().insert(order, slot);
        true
    }

    /// Forgets what `slot` waited for (a newer value replaced it).
    pub fn remove(&mut self, slot: Slot) {
        self.visit(1);
        if let Some((target, order)) = self.by_slot.remove(&slot) {
            self.unlink(target, order);
        }
    }

    /// Forgets what elements `count` and beyond of `owner`'s array `leaf` waited for (the array
    /// was cut to `count`).
    pub fn remove_elements_from(&mut self, owner: NetGuid, leaf: usize, count: usize) {
        let from = Slot { owner, leaf, element: Some((count, 0)) };
        self.remove_range(from, Slot::last(owner, leaf));
    }

    /// Forgets every reference of `owner`'s leaf `leaf` (a fast array's item: see
    /// [`Slot`]).
    pub fn remove_leaf(&mut self, owner: NetGuid, leaf: usize) {
        self.remove_range(Slot::first(owner, leaf), Slot::last(owner, leaf));
    }

    /// Forgets every reference of `owner` (an actor, or a fast array); returns how many there
    /// were.
    pub fn remove_owner(&mut self, owner: NetGuid) -> usize {
        self.remove_range(Slot::first(owner, 0), Slot::last(owner, usize::MAX))
    }

    fn remove_range(&mut self, from: Slot, to: Slot) -> usize {
        let slots: Vec<Slot> = self.by_slot.range(from..=to).map(|(s, _)| *s).collect();
        self.visit(1 + slots.len());
        for s in &slots {
            if let Some((target, order)) = self.by_slot.remove(s) {
                self.unlink(target, order);
            }
        }
        slots.len()
    }

    fn unlink(&mut self, target: NetGuid, order: u64) {
        if let Some(waiting) = self.by_target.get_mut(&target) {
            waiting.remove(&order);
            if waiting.is_empty() {
                self.by_target.remove(&target);
            }
        }
    }

    /// Takes the slots waiting for `target` (it arrived), in the order they began waiting.
    pub fn take_target(&mut self, target: NetGuid) -> Vec<Slot> {
        let slots: Vec<Slot> = self.by_target.remove(&target).map(|w| w.into_values().collect()).unwrap_or_default();
        self.visit(1 + slots.len());
        for s in &slots {
            self.by_slot.remove(s);
        }
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(owner: u64, leaf: usize, element: Option<(usize, usize)>) -> Slot {
        Slot { owner: NetGuid(owner), leaf, element }
    }

    #[test]
    fn both_indexes_agree() {
        let mut u = Unmapped::default();
        let t = NetGuid(100);
        assert!(u.insert(slot(2, 1, None), t, 8));
        assert!(u.insert(slot(4, 0, Some((3, 0))), t, 8));
        assert!(u.insert(slot(2, 0, Some((0, 1))), NetGuid(102), 8));
        assert!(u.insert(slot(2, 0, Some((5, 0))), t, 8));
        assert!(u.insert(slot(2, 1, None), t, 8), "a slot waits once: replaced");
        assert_eq!(u.len(), 4);
        // Cut owner 2's array 0 to 5 elements: element 5 goes, element 0 stays.
        u.remove_elements_from(NetGuid(2), 0, 5);
        assert_eq!(u.len(), 3);
        // In the order they began waiting (the replaced slot anew, last).
        assert_eq!(u.take_target(t), [slot(4, 0, Some((3, 0))), slot(2, 1, None)]);
        assert!(u.take_target(t).is_empty());
        assert_eq!(u.remove_owner(NetGuid(4)), 0);
        assert_eq!(u.remove_owner(NetGuid(2)), 1);
        assert_eq!((u.len(), u.by_target.len()), (0, 0));
        // Full: nothing more is remembered, but a slot already waiting may change its target.
        for i in 0..3 {
            assert!(u.insert(slot(6, i, None), t, 3));
        }
        assert!(!u.insert(slot(6, 3, None), t, 3));
        assert!(u.insert(slot(6, 0, None), NetGuid(104), 3));
        assert_eq!(u.take_target(NetGuid(104)), [slot(6, 0, None)]);
    }
}
