//! What the client remembers of the dynamic objects it closed: their class (or fast array kind),
//! so an open of one of them with another names a forged open — or, having closed it, a forged
//! close with the forged open after it.
//!
//! The server never gives a dynamic GUID another class (GUIDs are never reused), though it does
//! open one again after a relevancy close. A plain bunch does not name its class, so a copy of
//! the wrong class reads the server's updates with the wrong layout — garbage in the copy, and in
//! the actors after it in each packet, while the misread bits happen to decode (they do, often).
//! The server's own open of the GUID conflicts with such a copy and heals it; a forged close and
//! a forged open after it leave no open of the server's to conflict with — except this record.
//!
//! At most [`MAX_CLOSED`] are kept, the oldest forgotten first: memory stays bounded whatever a
//! forger closes, at the price that a forger who closes that many objects of its own between its
//! close and its open of a victim gets past it (it can forge update bunches outright in any case:
//! what this record stops is a wrong-class copy that stays wrong, and the bit shift that spreads
//! it to the actors after it).

use crate::ids::NetGuid;
use std::collections::{HashMap, VecDeque};

/// Dynamic objects closed remembered at most (a few hundred kilobytes).
pub const MAX_CLOSED: usize = 16_384;

/// What a closed GUID was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Was {
    /// An actor or sub-object of this class.
    Actor(u32),
    /// A fast array of this kind.
    FastArray(u32),
}

#[derive(Default)]
pub(super) struct Closed {
    /// GUID → (what it was, when it was recorded).
    by_guid: HashMap<NetGuid, (Was, u64)>,
    /// (GUID, when) in the order recorded; an entry whose GUID was forgotten or recorded again
    /// since is stale (its stamp is no longer `by_guid`'s) and skipped.
    order: VecDeque<(NetGuid, u64)>,
    next: u64,
}

impl Closed {
    /// What closed GUID `guid` was, if it is remembered.
    pub fn get(&self, guid: NetGuid) -> Option<Was> {
        self.by_guid.get(&guid).map(|e| e.0)
    }

    /// Remembers that `guid` (dynamic) was `was` when it closed, as the newest, forgetting the
    /// oldest if [`MAX_CLOSED`] are kept.
    pub fn insert(&mut self, guid: NetGuid, was: Was) {
        let stamp = self.next;
        self.next += 1;
        self.by_guid.insert(guid, (was, stamp));
        self.order.push_back((guid, stamp));
        while self.by_guid.len() > MAX_CLOSED {
            let Some((old, when)) = self.order.pop_front() else { break };
            if self.by_guid.get(&old).is_some_and(|e| e.1 == when) {
                self.by_guid.remove(&old);
            }
        }
        // Stale entries are dropped once they are half the queue, so it stays within twice the
        // cap whatever is recorded again or forgotten.
        if self.order.len() > 2 * MAX_CLOSED {
            let by_guid = &self.by_guid;
            self.order.retain(|&(g, when)| by_guid.get(&g).is_some_and(|e| e.1 == when));
        }
    }

    /// Forgets `guid` (an open of it was stepped over as a conflict: whichever side was forged,
    /// the server's next open must take).
    pub fn remove(&mut self, guid: NetGuid) {
        self.by_guid.remove(&guid);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_guid.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_up_to_the_cap_and_a_bounded_queue() {
        let mut c = Closed::default();
        for i in 0..(3 * MAX_CLOSED as u32) {
            c.insert(NetGuid(2 * u64::from(i) + 1), Was::Actor(i % 3));
            // Recorded again (and others forgotten): stale queue entries, which must not evict
            // the newest record of a GUID.
            c.insert(NetGuid(1), Was::Actor(7));
            if i % 5 == 0 {
                c.remove(NetGuid(2 * u64::from(i) + 1));
            }
            assert!(c.len() <= MAX_CLOSED);
            assert!(c.order.len() <= 2 * MAX_CLOSED + 1);
        }
        let last = 3 * MAX_CLOSED as u32 - 1;
        assert_eq!(c.get(NetGuid(2 * u64::from(last) + 1)), Some(Was::Actor(last % 3)));
        assert_eq!(c.get(NetGuid(3)), None, "the oldest went first");
        assert_eq!(c.get(NetGuid(1)), Some(Was::Actor(7)), "refreshed each time, never evicted");
    }
}
