//! Static actors whose opens the client stepped over (it did not load their path), with the class
//! their open named: their plain updates are read with it and dropped. At most a cap of them are
//! kept; a new one evicts the least recently opened or updated, so forged opens can never fill
//! the table for good and leave the server's own such actor unrecorded (its plain updates could
//! then not be read past, and every packet carrying one would be refused).
//!
//! Sub-objects whose open the client set aside (their owner was not there: its open was lost)
//! are kept here too, marked to ask: the server may believe that open delivered and send plain
//! updates, which are read past the same way, each asking for the sub-object again (see
//! `receive`). One that never changes sends no update: when its request goes unanswered (it rode
//! its feedbacks, all lost, say) it asks again after a wait that doubles each time, from
//! [`FIRST_ASK_GAP`] feedbacks up to [`MAX_ASK_GAP`], until its open or its close ends the
//! record. Fast arrays set aside so are kept the same way, without a class (a fast array's
//! bunch is stepped over by its length, not read past): they ask again on the same schedule.

use crate::ids::NetGuid;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Feedbacks a sub-object set aside waits, the first time its request went unanswered, before
/// it asks again; each further wait doubles, up to [`MAX_ASK_GAP`].
const FIRST_ASK_GAP: u32 = 16;

/// The longest wait between a set-aside sub-object's requests (at a feedback a frame and 30
/// frames a second, about 34 s).
const MAX_ASK_GAP: u32 = 1024;

#[derive(Default)]
pub(super) struct Ignored {
    /// GUID → its record.
    by_guid: HashMap<NetGuid, Entry>,
    /// Last use → GUID: the first is evicted.
    by_use: BTreeMap<u64, NetGuid>,
    next: u64,
    /// (Feedback number, GUID): when a set-aside sub-object whose request went unanswered asks
    /// again.
    again: BTreeSet<(u64, NetGuid)>,
}

#[derive(Clone, Copy)]
struct Entry {
    /// The class its updates are read past with (none for a fast array).
    class: Option<u32>,
    /// Its key in `by_use`.
    used: u64,
    /// A sub-object (or fast array) set aside: it asks for itself again.
    ask: Option<Ask>,
}

/// How a set-aside sub-object asks for itself again.
#[derive(Clone, Copy)]
struct Ask {
    /// Feedbacks it waits after its next request goes unanswered.
    gap: u32,
    /// When it asks again (its key in `again`), if a request went unanswered.
    at: Option<u64>,
}

impl Ignored {
    /// The class the open of ignored static actor (or set-aside sub-object) `guid` named.
    pub fn class(&self, guid: NetGuid) -> Option<u32> {
        self.by_guid.get(&guid).and_then(|e| e.class)
    }

    /// Whether a read-past update of `guid` asks for it again (a sub-object set aside for want
    /// of its owner, not a static actor that was not loaded).
    pub fn asks(&self, guid: NetGuid) -> bool {
        self.by_guid.get(&guid).is_some_and(|e| e.ask.is_some())
    }

    /// Records (or refreshes) static actor `guid`, evicting the least recently used if `cap` are
    /// kept; returns whether one was evicted.
    pub fn insert(&mut self, guid: NetGuid, class: u32, cap: usize) -> bool {
        self.put(guid, Some(class), None, cap)
    }

    /// Records (or refreshes) sub-object `guid` (of `class`), or fast array `guid` (`None`),
    /// whose open was set aside for want of its owner: a sub-object's updates are read past and
    /// ask for it again; either asks again on the schedule when its request goes unanswered. As
    /// [`Self::insert`].
    pub fn insert_asking(&mut self, guid: NetGuid, class: Option<u32>, cap: usize) -> bool {
        let ask = self.by_guid.get(&guid).and_then(|e| e.ask).unwrap_or(Ask { gap: FIRST_ASK_GAP, at: None });
        self.put(guid, class, Some(ask), cap)
    }

    fn put(&mut self, guid: NetGuid, class: Option<u32>, ask: Option<Ask>, cap: usize) -> bool {
        self.remove(guid);
        let evicted = self.by_guid.len() >= cap;
        if evicted {
            if let Some((_, old)) = self.by_use.pop_first() {
                self.remove(old);
            }
        }
        if let Some(at) = ask.and_then(|a| a.at) {
            self.again.insert((at, guid));
        }
        self.by_guid.insert(guid, Entry { class, used: self.next, ask });
        self.by_use.insert(self.next, guid);
        self.next += 1;
        evicted
    }

    /// `guid`'s update was read past: it is the most recently used.
    pub fn touch(&mut self, guid: NetGuid, cap: usize) {
        if let Some(&Entry { class, ask, .. }) = self.by_guid.get(&guid) {
            self.put(guid, class, ask, cap);
        }
    }

    /// Forgets `guid` (it was opened for real, or closed).
    pub fn remove(&mut self, guid: NetGuid) {
        if let Some(e) = self.by_guid.remove(&guid) {
            self.by_use.remove(&e.used);
            if let Some(at) = e.ask.and_then(|a| a.at) {
                self.again.remove(&(at, guid));
            }
        }
    }

    /// The request for set-aside sub-object (or fast array) `guid` went unanswered (it rode its
    /// feedbacks; the next is number `feedback`): it asks again after a wait, twice the last
    /// one. A sub-object that never changes has no update to ask for it, and would never come
    /// (its owner's open lost, its own delivered alone, and every feedback carrying the request
    /// lost). Nothing for any other GUID.
    pub fn unanswered(&mut self, guid: NetGuid, feedback: u64) {
        let Some(Entry { ask: Some(ask), .. }) = self.by_guid.get_mut(&guid) else { return };
        if let Some(at) = ask.at.take() {
            self.again.remove(&(at, guid));
        }
        let at = feedback + u64::from(ask.gap);
        *ask = Ask { gap: (ask.gap * 2).min(MAX_ASK_GAP), at: Some(at) };
        self.again.insert((at, guid));
    }

    /// Set-aside sub-object `guid`'s request found no place in the reopen list (full: a
    /// forger's requests fill it): it never rode a feedback, so it never goes unanswered, and
    /// one that never changes would never ask again. It asks again as one unanswered would —
    /// unless already waiting to. Nothing for any other GUID.
    pub fn turned_away(&mut self, guid: NetGuid, feedback: u64) {
        if self.by_guid.get(&guid).is_some_and(|e| e.ask.is_some_and(|a| a.at.is_none())) {
            self.unanswered(guid, feedback);
        }
    }

    /// The set-aside sub-objects whose wait ends by feedback number `feedback`, taken off the
    /// schedule (each asks again once its request goes unanswered, [`Self::unanswered`]).
    pub fn due(&mut self, feedback: u64) -> Vec<NetGuid> {
        let mut due = Vec::new();
        while let Some(&(at, guid)) = self.again.first().filter(|&&(at, _)| at <= feedback) {
            self.again.remove(&(at, guid));
            if let Some(Entry { ask: Some(ask), .. }) = self.by_guid.get_mut(&guid) {
                ask.at = None;
                due.push(guid);
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswered_sub_object_asks_again_after_doubling_waits() {
        let mut ig = Ignored::default();
        let (sub, stat) = (NetGuid(6), NetGuid(9));
        ig.insert_asking(sub, Some(1), 8);
        ig.insert(stat, 2, 8);
        ig.unanswered(stat, 0);
        assert!(ig.due(u64::MAX).is_empty(), "a static actor does not ask");
        ig.unanswered(sub, 10);
        assert!(ig.due(25).is_empty());
        assert_eq!(ig.due(26), [sub]);
        assert!(ig.due(1000).is_empty(), "taken off the schedule");
        ig.unanswered(sub, 40);
        ig.touch(sub, 8);
        assert!(ig.due(71).is_empty(), "the wait doubled, kept through a touch");
        assert_eq!(ig.due(72), [sub]);
        for _ in 0..10 {
            ig.unanswered(sub, 0);
        }
        assert_eq!(ig.due(u64::from(MAX_ASK_GAP) - 1), Vec::<NetGuid>::new());
        assert_eq!(ig.due(u64::from(MAX_ASK_GAP)), [sub], "capped");
        ig.unanswered(sub, 0);
        ig.remove(sub);
        assert!(ig.due(u64::MAX).is_empty() && ig.again.is_empty(), "a record gone asks nothing");
    }

    #[test]
    fn a_sub_object_set_aside_again_keeps_its_wait() {
        // Its open set aside once more (the server sent it again, to a client still without the
        // owner): the record is refreshed, and the wait it had grown to keeps doubling.
        let mut ig = Ignored::default();
        let sub = NetGuid(6);
        ig.insert_asking(sub, Some(1), 8);
        ig.unanswered(sub, 0);
        ig.unanswered(sub, 0);
        ig.insert_asking(sub, Some(1), 8);
        ig.unanswered(sub, 100);
        assert!(ig.due(163).is_empty(), "the wait started over");
        assert_eq!(ig.due(164), [sub]);
    }

    #[test]
    fn a_sub_object_turned_away_while_it_waits_keeps_its_wait() {
        // Turned away by a full reopen list while already waiting to ask again: its wait is
        // not pushed out (nor doubled), or a forger keeping the list full would put it off for
        // good.
        let mut ig = Ignored::default();
        let sub = NetGuid(6);
        ig.insert_asking(sub, Some(1), 8);
        ig.turned_away(sub, 0);
        ig.turned_away(sub, 10);
        assert_eq!(ig.due(16), [sub]);
        ig.unanswered(sub, 20);
        assert_eq!(ig.due(52), [sub], "the wait doubled once");
    }

    #[test]
    fn a_sub_object_due_is_not_due_again_when_its_update_is_read_past() {
        // Due, it asks; a read-past update (a touch) or its open set aside again, while that
        // request rides, must not put it back on the schedule: due again at the next feedback
        // with the reopen list half full, it would be counted unanswered and its wait doubled
        // once more than its requests went unanswered.
        let mut ig = Ignored::default();
        let sub = NetGuid(6);
        ig.insert_asking(sub, Some(1), 8);
        ig.unanswered(sub, 0);
        assert_eq!(ig.due(16), [sub]);
        ig.touch(sub, 8);
        ig.insert_asking(sub, Some(1), 8);
        assert!(ig.due(u64::MAX).is_empty(), "due again");
        ig.unanswered(sub, 100);
        assert_eq!(ig.due(132), [sub], "the wait doubled once");
    }

    #[test]
    fn an_evicted_sub_object_leaves_no_schedule() {
        let mut ig = Ignored::default();
        ig.insert_asking(NetGuid(4), None, 1);
        ig.unanswered(NetGuid(4), 0);
        assert!(ig.insert(NetGuid(8), 1, 1), "evicted");
        assert!(ig.again.is_empty() && !ig.asks(NetGuid(4)));
    }
}
