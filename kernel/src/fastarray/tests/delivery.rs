//! Deltas over an unreliable connection: a lost delta sent again (the base advancing only on an
//! ack), a late one rejected, a duplicate harmless, a new connection getting every item, and the
//! change log bounded under churn and compacted at its floor.

use super::*;
use crate::wire::BitReader;
use FastArrayEvent::Changed;

#[test]
fn a_lost_delta_is_sent_again_and_the_base_advances_only_on_ack() {
    let (mut s, conn, mut c) = inventory(10);
    sync(&mut s, conn, &mut c);
    let base = s.acked_key(conn).unwrap();
    s.set(ReplicationId(3), &item(333)).unwrap();
    let (t1, _, _) = write(&mut s, conn).unwrap();
    assert_eq!(s.acked_key(conn), Some(base), "sent is not acknowledged");
    assert!(write(&mut s, conn).is_none(), "optimistically nothing more to send");
    assert!(s.lost(conn, t1));
    let (t2, bytes, _) = write(&mut s, conn).expect("the loss is covered again");
    let mut events = Vec::new();
    c.receive(&bytes, &mut events).unwrap();
    assert_eq!(events, [Changed(ReplicationId(3))]);
    assert!(!s.acked(conn, t1), "a lost token is settled");
    assert!(s.acked(conn, t2));
    assert!(s.is_synced(conn));
    assert_same(&s, &c);
}

#[test]
fn a_late_delta_is_rejected_and_leaves_the_client_untouched() {
    let (mut s, conn, mut c) = inventory(10);
    sync(&mut s, conn, &mut c);
    s.set(ReplicationId(3), &item(1)).unwrap();
    let (t1, old, _) = write(&mut s, conn).unwrap();
    s.set(ReplicationId(3), &item(2)).unwrap();
    s.remove(ReplicationId(4)).unwrap();
    let (t2, new, _) = write(&mut s, conn).unwrap();
    c.receive(&new, &mut ()).unwrap();
    let before = items_of(c.iter());
    let mut events = Vec::new();
    assert!(matches!(c.receive(&old, &mut events), Err(FastArrayError::Late { .. })));
    assert!(events.is_empty());
    assert_eq!(items_of(c.iter()), before);
    assert_eq!(c.item(ReplicationId(3)), Some(&item(2)[..]));
    // The connection layer reports the late one lost: the server covers its range again.
    assert!(s.acked(conn, t2));
    assert!(s.lost(conn, t1));
    sync(&mut s, conn, &mut c);
    assert_same(&s, &c);
}

#[test]
fn a_duplicate_delta_changes_nothing_but_fires_its_changes_again() {
    let (mut s, conn, mut c) = inventory(3);
    sync(&mut s, conn, &mut c);
    s.set(ReplicationId(2), &item(8)).unwrap();
    let (_, bytes, _) = write(&mut s, conn).unwrap();
    let mut events = Vec::new();
    c.receive(&bytes, &mut events).unwrap();
    c.receive(&bytes, &mut events).unwrap();
    assert_eq!(events, [Changed(ReplicationId(2)), Changed(ReplicationId(2))]);
    assert_same(&s, &c);
}

#[test]
fn a_new_connection_gets_every_item_and_no_old_removals() {
    let (mut s, first, mut c1) = inventory(20);
    sync(&mut s, first, &mut c1);
    for id in 1..=10 {
        s.remove(ReplicationId(id)).unwrap();
    }
    let second = s.connect();
    let mut c2 = FastArrayReceiver::new(layout());
    let (_, bytes, _) = write(&mut s, second).unwrap();
    let d = c2.read(&mut BitReader::new(&bytes)).unwrap();
    assert!(d.deleted.is_empty(), "removed before it joined");
    assert_eq!(d.changed.len(), 10);
    c2.apply(&d, &mut ()).unwrap();
    sync(&mut s, first, &mut c1);
    assert_same(&s, &c1);
    assert_same(&s, &c2);
}

#[test]
fn the_change_log_stays_bounded_under_churn() {
    let (mut s, conn, mut c) = inventory(100);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut peak = 0;
    for _round in 0..2_000 {
        for _ in 0..50 {
            let ids: Vec<_> = s.iter().map(|(id, _)| id).collect();
            let id = ids[next() as usize % ids.len()];
            match next() % 4 {
                0 if s.len() > 80 => s.remove(id).unwrap(),
                1 if s.len() < 120 => drop(s.add(&item(1)).unwrap()),
                _ => s.set(id, &item(next() as u16)).unwrap(),
            }
        }
        sync(&mut s, conn, &mut c);
        peak = peak.max(s.log_len());
    }
    assert_same(&s, &c);
    // Compacted length ≤ live items (≤ 120) + removals not yet acknowledged (≤ 50 a round).
    assert!(peak <= 2 * (120 + 50) + 1, "peak log length {peak}");
    // A connection that never acknowledges pins the removals after its cursor, as documented.
    let stuck = s.connect();
    let _ = write(&mut s, stuck);
    for _ in 0..1_000 {
        let id = s.add(&item(1)).unwrap();
        s.remove(id).unwrap();
    }
    assert!(s.log_len() >= 1_000, "removals pinned by the stuck connection");
    s.disconnect(stuck).unwrap();
    sync(&mut s, conn, &mut c);
    for _ in 0..500 {
        let first = s.iter().next().unwrap().0;
        s.mark_item_dirty(first).unwrap();
    }
    assert!(s.log_len() <= 2 * 1_200, "released once it disconnects: {}", s.log_len());
}

#[test]
fn the_log_compacts_when_it_reaches_its_floor() {
    let mut s = FastArray::new(layout());
    let id = s.add(&item(0)).unwrap();
    for _ in 1..MIN_LOG_COMPACT - 1 {
        s.mark_item_dirty(id).unwrap();
    }
    assert_eq!(s.log_len(), MIN_LOG_COMPACT - 1, "below the floor: every mark kept");
    s.mark_item_dirty(id).unwrap();
    assert_eq!(s.log_len(), 1, "at the floor: only the item's newest mark is live");
}
