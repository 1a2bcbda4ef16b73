//! Sub-objects and their owners, indexed both ways so that closing one of an owner's many
//! sub-objects never walks the owner's list: nothing caps how many sub-objects an owner has, and
//! a packet of their closes would cost sub-objects × closes. Each sub-object keeps its rank in
//! its owner's list (the order they opened); every operation costs a logarithm of the list's
//! size plus the entries it returns.
//!
//! ```text
//! outer: sub-object → (owner, rank)
//! inner: owner → rank → sub-object       in the order they opened
//! ```

use crate::ids::NetGuid;
use std::collections::{BTreeMap, HashMap};

/// The client's sub-objects.
#[derive(Default)]
pub(super) struct SubObjects {
    outer: HashMap<NetGuid, (NetGuid, u64)>,
    inner: HashMap<NetGuid, BTreeMap<u64, NetGuid>>,
    /// The next rank (opening order, over all owners).
    next: u64,
    /// Entries visited: inserted, removed or taken (the work bound's tests).
    #[cfg(test)]
    pub visited: u64,
}

impl SubObjects {
    fn visit(&mut self, _n: usize) {
        #[cfg(test)]
        {
            self.visited += _n as u64;
        }
    }

    /// Records `sub` as `owner`'s newest sub-object.
    pub fn insert(&mut self, sub: NetGuid, owner: NetGuid) {
        self.remove(sub);
        let rank = self.next;
        self.next += 1;
        self.outer.insert(sub, (owner, rank));
        self.inner.entry(owner).or_default().insert(rank, sub);
        self.visit(1);
    }

    /// Forgets sub-object `sub` (nothing if it is none), returning its owner.
    pub fn remove(&mut self, sub: NetGuid) -> Option<NetGuid> {
        let (owner, rank) = self.outer.remove(&sub)?;
        self.visit(1);
        if let Some(list) = self.inner.get_mut(&owner) {
            list.remove(&rank);
            if list.is_empty() {
                self.inner.remove(&owner);
            }
        }
        Some(owner)
    }

    /// Takes `owner`'s list, in the order its sub-objects opened (they stay sub-objects of
    /// `owner` until each is removed).
    pub fn take_owned(&mut self, owner: NetGuid) -> Vec<NetGuid> {
        let subs: Vec<NetGuid> = self.inner.remove(&owner).map(|l| l.into_values().collect()).unwrap_or_default();
        self.visit(subs.len());
        subs
    }

    /// The owner of sub-object `sub`.
    pub fn owner_of(&self, sub: NetGuid) -> Option<NetGuid> {
        self.outer.get(&sub).map(|o| o.0)
    }

    /// Whether `guid` is a sub-object.
    pub fn contains(&self, guid: NetGuid) -> bool {
        self.outer.contains_key(&guid)
    }

    /// `owner`'s sub-objects, in the order they opened.
    pub fn of(&self, owner: NetGuid) -> Vec<NetGuid> {
        self.inner.get(&owner).map(|l| l.values().copied().collect()).unwrap_or_default()
    }
}
