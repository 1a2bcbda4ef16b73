//! Static actors whose opens the client stepped over (it did not load their path), with the class
//! their open named: their plain updates are read with it and dropped. At most a cap of them are
//! kept; a new one evicts the least recently opened or updated, so forged opens can never fill
//! the table for good and leave the server's own such actor unrecorded (its plain updates could
//! then not be read past, and every packet carrying one would be refused).
//!
//! Sub-objects whose open the client set aside (their owner was not there: its open was lost)
//! are kept here too, marked to ask: the server may believe that open delivered and send plain
//! updates, which are read past the same way, each asking for the sub-object again (see
//! `receive`).

use crate::ids::NetGuid;
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub(super) struct Ignored {
    /// GUID → (class, last use, whether a read-past update asks for it again).
    by_guid: HashMap<NetGuid, (u32, u64, bool)>,
    /// Last use → GUID: the first is evicted.
    by_use: BTreeMap<u64, NetGuid>,
    next: u64,
}

impl Ignored {
    /// The class the open of ignored static actor `guid` named.
    pub fn class(&self, guid: NetGuid) -> Option<u32> {
        self.by_guid.get(&guid).map(|e| e.0)
    }

    /// Whether a read-past update of `guid` asks for it again (a sub-object set aside for want
    /// of its owner, not a static actor that was not loaded).
    pub fn asks(&self, guid: NetGuid) -> bool {
        self.by_guid.get(&guid).is_some_and(|e| e.2)
    }

    /// Records (or refreshes) static actor `guid`, evicting the least recently used if `cap` are
    /// kept; returns whether one was evicted.
    pub fn insert(&mut self, guid: NetGuid, class: u32, cap: usize) -> bool {
        self.put(guid, (class, false), cap)
    }

    /// Records (or refreshes) sub-object `guid`, whose open was set aside for want of its owner:
    /// its updates are read past and ask for it again. As [`Self::insert`].
    pub fn insert_asking(&mut self, guid: NetGuid, class: u32, cap: usize) -> bool {
        self.put(guid, (class, true), cap)
    }

    fn put(&mut self, guid: NetGuid, (class, ask): (u32, bool), cap: usize) -> bool {
        self.remove(guid);
        let evicted = self.by_guid.len() >= cap;
        if evicted {
            if let Some((_, old)) = self.by_use.pop_first() {
                self.by_guid.remove(&old);
            }
        }
        self.by_guid.insert(guid, (class, self.next, ask));
        self.by_use.insert(self.next, guid);
        self.next += 1;
        evicted
    }

    /// `guid`'s update was read past: it is the most recently used.
    pub fn touch(&mut self, guid: NetGuid, cap: usize) {
        if let Some(&(class, _, ask)) = self.by_guid.get(&guid) {
            self.put(guid, (class, ask), cap);
        }
    }

    /// Forgets `guid` (it was opened for real, or closed).
    pub fn remove(&mut self, guid: NetGuid) {
        if let Some((_, used, _)) = self.by_guid.remove(&guid) {
            self.by_use.remove(&used);
        }
    }
}
