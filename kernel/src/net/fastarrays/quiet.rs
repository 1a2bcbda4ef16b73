//! Each connection's record of its quiet fast arrays: the ones its last write of their owner
//! found with nothing to write, and what that answer rested on — so that the next write skips
//! them without taking their lock (see [`QuietArrays`]).

use super::FastSent;
use crate::ids::NetGuid;

/// A connection's fast arrays with nothing to write: the ones whose last write found the
/// condition leaving this connection out, or left nothing unsent, with what that answer rested
/// on — the owner's channel epoch, the array's version and the owner's ownership as the
/// condition read it. Writing the owner again finds the same and skips the array without
/// locking it: an owner-only inventory is asked for by every connection its character is sent
/// to, from every thread of a frame, and its lock's line went back and forth between them. The
/// answer holds until the array changes (its version, bumped by [`NetDriver::fast_array_mut`](crate::net::NetDriver::fast_array_mut);
/// not for an excluded connection), the owner's channel, ownership or physics changes (compared; a
/// channel that was not open passes through a write that forgets), or this connection's
/// feedback settles a bunch of the array or asks for it again (forgotten there). A removed or
/// orphaned array is forgotten by every connection.
///
/// Kept by the array's slot, with its GUID (a slot is reused once its array is gone): a look is
/// one load from a short vector. (A map by GUID, looked up for every character sent to every
/// connection, cost battle_royale's connections about 7 % of their time: a probe that skipped
/// the look for the connections that do not own the character saved that much.)
#[derive(Debug, Default)]
pub(crate) struct QuietArrays(Vec<Option<(NetGuid, Quiet)>>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Quiet {
    pub(super) epoch: u8,
    /// The array's version; `None` when the condition left the connection out, whatever the
    /// items (an owner-only inventory changes with every shot its owner fires).
    pub(super) version: Option<u64>,
    pub(super) owned: bool,
    pub(super) autonomous: bool,
    /// The owner's physics (the physics conditions read it: a fast array an autonomous owner's
    /// connection is left out of comes to it when its owner replicates physics).
    pub(super) physics: bool,
    /// The connection's count of net group changes ([`Connection::groups_changed`]): a
    /// NetGroup condition may answer otherwise after one.
    ///
    /// [`Connection::groups_changed`]: crate::net::connection::Connection::groups_changed
    pub(super) groups: u32,
}

impl QuietArrays {
    /// Forgets fast array `guid` (its state for this connection may have changed), wherever it
    /// is: a pass over the record, for the rare callers that do not know its slot (a removed or
    /// orphaned array).
    pub(crate) fn forget(&mut self, guid: NetGuid) {
        for e in self.0.iter_mut().filter(|e| e.is_some_and(|(g, _)| g == guid)) {
            *e = None;
        }
    }

    /// Forgets the array of a bunch that settled (its state for this connection may have changed).
    pub(crate) fn forget_sent(&mut self, sent: &FastSent) {
        self.forget_at(sent.slot, sent.guid);
    }

    /// Forgets fast array `guid` in `slot`.
    pub(crate) fn forget_at(&mut self, slot: u32, guid: NetGuid) {
        if let Some(e) = self.0.get_mut(slot as usize).filter(|e| e.is_some_and(|(g, _)| g == guid)) {
            *e = None;
        }
    }

    /// Asks for `slot`'s record ahead of a look.
    pub(crate) fn prefetch(&self, slot: u32) {
        if let Some(e) = self.0.get(slot as usize) {
            crate::compare::prefetch_addr(e as *const Option<(NetGuid, Quiet)> as usize);
        }
    }

    /// What was recorded of fast array `guid` in `slot`.
    pub(super) fn get(&self, slot: u32, guid: NetGuid) -> Option<&Quiet> {
        match self.0.get(slot as usize) {
            Some(Some((g, q))) if *g == guid => Some(q),
            _ => None,
        }
    }

    /// Records `quiet` for fast array `guid` in `slot`.
    pub(super) fn set(&mut self, slot: u32, guid: NetGuid, quiet: Quiet) {
        let i = slot as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some((guid, quiet));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_record_answers_for_its_own_array_only() {
        let q = |epoch| Quiet { epoch, version: Some(3), owned: false, autonomous: false, physics: false, groups: 0 };
        let (a, b) = (NetGuid(10), NetGuid(12));
        let mut quiet = QuietArrays::default();
        assert_eq!(quiet.get(4, a), None, "nothing recorded, slot beyond the vector");
        quiet.set(4, a, q(1));
        assert_eq!(quiet.get(4, a), Some(&q(1)));
        // The slot reused by another array (its first was removed): the old record is not its.
        assert_eq!(quiet.get(4, b), None);
        quiet.forget_at(4, b);
        assert_eq!(quiet.get(4, a), Some(&q(1)), "forgetting another array's slot keeps this one");
        quiet.set(0, b, q(2));
        quiet.forget(a);
        assert_eq!((quiet.get(4, a), quiet.get(0, b)), (None, Some(&q(2))));
        quiet.forget_at(0, b);
        assert_eq!(quiet.get(0, b), None);
    }
}
