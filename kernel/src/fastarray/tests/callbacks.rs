//! Client callbacks: every combination of adds, changes and removes in one delta fires removes,
//! then adds, then changes, and a removed item is still readable in `pre_replicated_remove`.

use super::*;
use FastArrayEvent::{Added, Changed, Removed};

/// What one item does between two deltas, and the event the client must see for it.
struct History {
    /// The item exists (and the client has it) before.
    existing: bool,
    /// What the server does to it, in order.
    ops: &'static [Op],
    /// The event the client sees.
    event: Option<fn(ReplicationId) -> FastArrayEvent>,
}

/// A remove event, its item's bytes left out (`removed_items_are_still_readable_in_pre_replicated_remove`
/// checks them).
fn removed(id: ReplicationId) -> FastArrayEvent {
    Removed(id, Vec::new())
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Change,
    Remove,
}

const HISTORIES: [History; 9] = [
    History { existing: true, ops: &[Op::Change], event: Some(Changed) },
    History { existing: true, ops: &[Op::Change, Op::Change], event: Some(Changed) },
    History { existing: true, ops: &[Op::Remove], event: Some(removed) },
    History { existing: true, ops: &[Op::Change, Op::Remove], event: Some(removed) },
    History { existing: true, ops: &[], event: None },
    History { existing: false, ops: &[Op::Add], event: Some(Added) },
    History { existing: false, ops: &[Op::Add, Op::Change], event: Some(Added) },
    History { existing: false, ops: &[Op::Add, Op::Remove], event: None },
    History { existing: false, ops: &[Op::Add, Op::Change, Op::Remove], event: None },
];

#[test]
fn every_combination_of_adds_changes_and_removes_fires_removes_then_adds_then_changes() {
    // Every subset of the histories, two items each, in one delta.
    for mask in 0u32..1 << HISTORIES.len() {
        let mut s = FastArray::new(layout());
        let conn = s.connect();
        let mut c = FastArrayReceiver::new(layout());
        let mut plan = Vec::new();
        for (h, history) in HISTORIES.iter().enumerate() {
            for copy in 0..2u16 {
                if mask >> h & 1 == 1 {
                    let id = history.existing.then(|| s.add(&item(100 + 2 * h as u16 + copy)).unwrap());
                    plan.push((h, id));
                }
            }
        }
        sync(&mut s, conn, &mut c);
        let mut expected: Vec<FastArrayEvent> = Vec::new();
        for (h, id) in &mut plan {
            let history = &HISTORIES[*h];
            for (i, op) in history.ops.iter().enumerate() {
                match op {
                    Op::Add => *id = Some(s.add(&item(7)).unwrap()),
                    Op::Change => s.set(id.unwrap(), &item(1000 + i as u16)).unwrap(),
                    Op::Remove => s.remove(id.unwrap()).unwrap(),
                }
            }
            if let (Some(e), Some(id)) = (history.event, *id) {
                expected.push(e(id));
            }
        }
        let (events, deltas) = sync(&mut s, conn, &mut c);
        let rank = |e: &FastArrayEvent| match e {
            Removed(..) => 0,
            Added(_) => 1,
            Changed(_) => 2,
            FastArrayEvent::Received { .. } => 3,
        };
        assert!(deltas <= 1, "mask {mask:b}: one delta carries it all");
        assert!(events.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])), "mask {mask:b}: order {events:?}");
        let mut got: Vec<FastArrayEvent> = events
            .iter()
            .map(|e| match e {
                Removed(id, _) => removed(*id),
                e => e.clone(),
            })
            .collect();
        got.sort_by_key(|e| (rank(e), e.clone()));
        expected.sort_by_key(|e| (rank(e), e.clone()));
        assert_eq!(got, expected, "mask {mask:b}");
        assert_same(&s, &c);
    }
}

#[test]
fn removed_items_are_still_readable_in_pre_replicated_remove() {
    struct Seen(Vec<(ReplicationId, Vec<u8>)>);
    impl FastArrayCallbacks for Seen {
        fn pre_replicated_remove(&mut self, id: ReplicationId, item: &[u8]) {
            self.0.push((id, item.to_vec()));
        }
    }
    let mut s = FastArray::new(layout());
    let conn = s.connect();
    let mut c = FastArrayReceiver::new(layout());
    let a = s.add(&item(5)).unwrap();
    sync(&mut s, conn, &mut c);
    s.remove(a).unwrap();
    let (_, bytes, _) = write(&mut s, conn).unwrap();
    let mut seen = Seen(Vec::new());
    c.receive(&bytes, &mut seen).unwrap();
    assert_eq!(seen.0, [(a, item(5).to_vec())]);
    assert!(c.is_empty());
}
