//! Static actors whose opens the client stepped over (it did not load their path), with the class
//! their open named: their plain updates are read with it and dropped. At most a cap of them are
//! kept; a new one evicts the least recently opened or updated, so forged opens can never fill
//! the table for good and leave the server's own such actor unrecorded (its plain updates could
//! then not be read past, and every packet carrying one would be refused).

use crate::ids::NetGuid;
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub(super) struct Ignored {
    /// GUID → (class, last use).
    by_guid: HashMap<NetGuid, (u32, u64)>,
    /// Last use → GUID: the first is evicted.
    by_use: BTreeMap<u64, NetGuid>,
    next: u64,
}

impl Ignored {
    /// The class the open of ignored static actor `guid` named.
    pub fn class(&self, guid: NetGuid) -> Option<u32> {
        self.by_guid.get(&guid).map(|e| e.0)
    }

    /// Records (or refreshes) `guid`, evicting the least recently used if `cap` are kept; returns
    /// whether one was evicted.
    pub fn insert(&mut self, guid: NetGuid, class: u32, cap: usize) -> bool {
        self.remove(guid);
        let evicted = self.by_guid.len() >= cap;
        if evicted {
            if let Some((_, old)) = self.by_use.pop_first() {
                self.by_guid.remove(&old);
            }
        }
        self.by_guid.insert(guid, (class, self.next));
        self.by_use.insert(self.next, guid);
        self.next += 1;
        evicted
    }

    /// `guid`'s update was read past: it is the most recently used.
    pub fn touch(&mut self, guid: NetGuid, cap: usize) {
        if let Some(class) = self.class(guid) {
            self.insert(guid, class, cap);
        }
    }

    /// Forgets `guid` (it was opened for real, or closed).
    pub fn remove(&mut self, guid: NetGuid) {
        if let Some((_, used)) = self.by_guid.remove(&guid) {
            self.by_use.remove(&used);
        }
    }
}
