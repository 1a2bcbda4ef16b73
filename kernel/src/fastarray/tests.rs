//! FastArray tests: callback order, the caps at their edges, loss, lateness, the log bound.
//! Convergence under random loss and reordering, and hostile-bytes fuzzing, are property tests
//! in `tests/tests/fastarray.rs`.

use super::wire::{read_delta, write_count};
use super::*;
use crate::schema::{PropType, StructType};
use crate::wire::{BitReader, BitWriter, WireError};
use std::collections::HashMap;
use std::sync::Arc;
use FastArrayEvent::{Added, Changed, Removed};

/// Items of `{ Count: u16, Durability: u8 }` (4 bytes with a padding byte, 24 bits on the wire).
fn layout() -> Arc<ArrayLayout> {
    let s = StructType::new("Slot").field("Count", PropType::U16).field("Durability", PropType::U8);
    Arc::new(item_layout("Inventory", PropType::Struct(s)).unwrap())
}

const ITEM_BITS: usize = 24;

fn item(v: u16) -> [u8; 4] {
    let b = v.to_le_bytes();
    [b[0], b[1], v as u8 ^ 0x5a, 0]
}

/// Writes one delta, or `None` when there is nothing to send.
fn write(server: &mut FastArray, conn: BaseId) -> Option<(DeltaToken, Vec<u8>, usize)> {
    let mut w = BitWriter::new();
    let t = server.write_delta(conn, &mut w).unwrap()?;
    let bits = w.len_bits();
    Some((t, w.into_bytes(), bits))
}

/// Delivers and acknowledges deltas until the connection is synced; returns the events and the
/// number of deltas.
fn sync(server: &mut FastArray, conn: BaseId, client: &mut FastArrayReceiver) -> (Vec<FastArrayEvent>, usize) {
    let mut events = Vec::new();
    let mut n = 0;
    while let Some((t, bytes, _)) = write(server, conn) {
        client.receive(&bytes, &mut events).unwrap();
        assert!(server.acked(conn, t));
        n += 1;
    }
    assert!(server.is_synced(conn));
    (events, n)
}

fn items_of<'a>(it: impl Iterator<Item = (ReplicationId, &'a [u8])>) -> HashMap<ReplicationId, Vec<u8>> {
    it.map(|(id, b)| (id, b.to_vec())).collect()
}

fn assert_same(server: &FastArray, client: &FastArrayReceiver) {
    let (s, c) = (items_of(server.iter()), items_of(client.iter()));
    let differ = s.iter().find(|(id, v)| c.get(id) != Some(v)).map(|(id, _)| *id);
    assert!(s == c, "server {} items, client {}; first differing id {differ:?}", s.len(), c.len());
}

#[test]
fn the_item_layout_is_the_dynamic_array_element() {
    let l = layout();
    assert_eq!(l.stride, 4, "rounded up to the u16's alignment");
    assert_eq!(l.elements.iter().map(|e| e.offset).collect::<Vec<_>>(), [0, 2]);
    assert!(item_layout("Bad", PropType::array(PropType::U8)).is_err(), "arrays of arrays");
}

#[test]
fn server_items_add_set_and_remove_at_swap() {
    let mut s = FastArray::new(layout());
    let ids: Vec<_> = (0..4).map(|v| s.add(&item(v)).unwrap()).collect();
    assert_eq!(ids, (1..=4).map(ReplicationId).collect::<Vec<_>>(), "ids count from 1");
    assert_eq!(s.array_key(), ArrayKey(4));
    s.set(ids[1], &item(9)).unwrap();
    assert_eq!(s.item_key(ids[1]), Some(ArrayKey(5)), "a mark stamps the array key");
    s.remove(ids[0]).unwrap();
    assert_eq!(s.iter().map(|(id, _)| id).collect::<Vec<_>>(), [ids[3], ids[1], ids[2]], "the last row swapped in");
    assert_eq!(s.item(ids[3]), Some(&item(3)[..]));
    assert_eq!(s.array_key(), ArrayKey(6));
    assert_eq!(s.remove(ids[0]), Err(FastArrayError::UnknownItem(ids[0])));
    assert_eq!(s.set(ids[1], &[1]), Err(FastArrayError::ItemSize { expected: 4, got: 1 }));
    s.item_mut(ids[2]).unwrap()[0] = 77;
    assert_eq!(s.item_key(ids[2]), Some(ArrayKey(7)));
    s.mark_array_dirty();
    assert_eq!(s.array_key(), ArrayKey(7), "no item marked: every edit was marked when made");
}

#[test]
fn mark_array_dirty_resends_nothing_unchanged() {
    // UE's MarkArrayDirty sends no item whose replication key did not change, so a client that
    // has them all gets nothing and fires no PostReplicatedChange.
    let mut server = FastArray::new(layout());
    let conn = server.connect();
    for v in 0..100 {
        server.add(&item(v)).unwrap();
    }
    let mut client = FastArrayReceiver::new(layout());
    let mut w = BitWriter::new();
    let sent = server.write_delta(conn, &mut w).unwrap().expect("the adds");
    let mut events = Vec::new();
    client.receive(w.bytes(), &mut events).unwrap();
    assert_eq!(events.len(), 100);
    server.acked(conn, sent);
    server.mark_array_dirty();
    let mut w = BitWriter::new();
    assert!(server.write_delta(conn, &mut w).unwrap().is_none(), "nothing to send: {} bytes", w.bytes().len());
    // A changed item still goes, alone.
    let id = server.iter().map(|(id, _)| id).nth(7).unwrap();
    server.set(id, &item(1000)).unwrap();
    server.mark_array_dirty();
    let mut w = BitWriter::new();
    server.write_delta(conn, &mut w).unwrap().expect("the change");
    let mut events = Vec::new();
    client.receive(w.bytes(), &mut events).unwrap();
    assert_eq!(events, vec![FastArrayEvent::Changed(id)]);
}

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

fn inventory(n: u16) -> (FastArray, BaseId, FastArrayReceiver) {
    let mut s = FastArray::new(layout());
    for v in 0..n {
        s.add(&item(v)).unwrap();
    }
    let conn = s.connect();
    (s, conn, FastArrayReceiver::new(layout()))
}

#[test]
fn one_change_in_ten_thousand_items_costs_its_item_and_at_most_48_bits() {
    let (mut s, conn, mut c) = inventory(10_000);
    sync(&mut s, conn, &mut c);
    for id in [1, 5_000, 10_000] {
        s.set(ReplicationId(id), &item(42)).unwrap();
        let (t, bytes, bits) = write(&mut s, conn).unwrap();
        assert!(bits <= ITEM_BITS + 48, "id {id}: {bits} bits");
        c.receive(&bytes, &mut ()).unwrap();
        s.acked(conn, t);
    }
    assert_same(&s, &c);
}

#[test]
fn a_first_send_of_ten_thousand_items_spreads_over_five_updates() {
    let (mut s, conn, mut c) = inventory(10_000);
    let mut sizes = Vec::new();
    while let Some((t, bytes, _)) = write(&mut s, conn) {
        let d = c.read(&mut BitReader::new(&bytes)).unwrap();
        sizes.push(d.changed.len());
        c.apply(&d, &mut ()).unwrap();
        s.acked(conn, t);
    }
    assert_eq!(sizes, [2048, 2048, 2048, 2048, 1808]);
    assert_same(&s, &c);
}

#[test]
fn the_caps_hold_at_their_edge_on_write() {
    for (n, parts) in [(MAX_CHANGED_PER_DELTA, vec![2048]), (MAX_CHANGED_PER_DELTA + 1, vec![2048, 1])] {
        let (mut s, conn, mut c) = inventory(n as u16);
        sync(&mut s, conn, &mut c);
        for id in 1..=n as u32 {
            s.set(ReplicationId(id), &item(3)).unwrap();
        }
        let mut sizes = Vec::new();
        while let Some((t, bytes, _)) = write(&mut s, conn) {
            let d = c.read(&mut BitReader::new(&bytes)).unwrap();
            sizes.push(d.changed.len());
            c.apply(&d, &mut ()).unwrap();
            s.acked(conn, t);
        }
        assert_eq!(sizes, parts, "{n} changes");
        assert_same(&s, &c);
    }
    for (n, parts) in [(MAX_DELETED_PER_DELTA, vec![2048]), (MAX_DELETED_PER_DELTA + 1, vec![2048, 1])] {
        let (mut s, conn, mut c) = inventory(n as u16 + 1);
        sync(&mut s, conn, &mut c);
        for id in 1..=n as u32 {
            s.remove(ReplicationId(id)).unwrap();
        }
        let mut sizes = Vec::new();
        while let Some((t, bytes, _)) = write(&mut s, conn) {
            let d = c.read(&mut BitReader::new(&bytes)).unwrap();
            sizes.push(d.deleted.len());
            c.apply(&d, &mut ()).unwrap();
            s.acked(conn, t);
        }
        assert_eq!(sizes, parts, "{n} removals");
        assert_eq!(c.len(), 1);
        assert_same(&s, &c);
    }
}

/// A long-key header with these counts and nothing after it.
fn header(deletes: usize, changes: usize) -> Vec<u8> {
    let mut w = BitWriter::new();
    w.write_bool(true);
    w.write_packed(5);
    w.write_packed(0);
    write_count(&mut w, deletes);
    write_count(&mut w, changes);
    w.into_bytes()
}

#[test]
fn the_caps_hold_at_their_edge_on_read() {
    let l = layout();
    let read = |b: &[u8]| read_delta(&mut BitReader::new(b), &l, ArrayKey(0));
    assert_eq!(read(&header(MAX_DELETED_PER_DELTA, 0)), Err(FastArrayError::Wire(WireError::Truncated)));
    assert_eq!(read(&header(MAX_DELETED_PER_DELTA + 1, 0)), Err(FastArrayError::TooManyDeleted(2049)));
    assert_eq!(read(&header(0, MAX_CHANGED_PER_DELTA)), Err(FastArrayError::Wire(WireError::Truncated)));
    assert_eq!(read(&header(0, MAX_CHANGED_PER_DELTA + 1)), Err(FastArrayError::TooManyChanged(2049)));
    // A delta at both caps decodes: deleted ids 1..=2048, changed ids 2049..=4096.
    let full = |first_changed: u64| {
        let mut w = BitWriter::new();
        w.write_bool(true);
        w.write_packed(5);
        w.write_packed(0);
        write_count(&mut w, MAX_DELETED_PER_DELTA);
        write_count(&mut w, MAX_CHANGED_PER_DELTA);
        for i in 0..MAX_DELETED_PER_DELTA {
            w.write_packed(u64::from(i == 0));
        }
        for i in 0..MAX_CHANGED_PER_DELTA {
            w.write_packed(if i == 0 { first_changed } else { 0 });
            w.write_bits(0, ITEM_BITS as u32);
        }
        w.into_bytes()
    };
    let d = read(&full(2049)).unwrap();
    assert_eq!((d.deleted.len(), d.changed.len()), (2048, 2048));
    assert_eq!((d.deleted[2047], d.changed[0]), (ReplicationId(2048), ReplicationId(2049)));
    assert_eq!(read(&full(2048)), Err(FastArrayError::Wire(WireError::Invalid("an id both deleted and changed"))));
}

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
fn the_item_cap_holds_at_its_edge_on_both_sides() {
    let l = Arc::new(item_layout("Bits", PropType::U8).unwrap());
    let mut s = FastArray::new(l.clone());
    for _ in 0..MAX_FAST_ARRAY_ITEMS {
        s.add(&[1]).unwrap();
    }
    assert_eq!(s.add(&[1]), Err(FastArrayError::TooManyItems));
    let conn = s.connect();
    let mut c = FastArrayReceiver::new(l);
    sync(&mut s, conn, &mut c);
    assert_eq!(c.len(), MAX_FAST_ARRAY_ITEMS);
    let one_more = Delta {
        array_key: s.array_key(),
        base_key: s.array_key(),
        deleted: vec![],
        changed: vec![ReplicationId(u32::MAX)],
        items: vec![1],
    };
    assert_eq!(c.apply(&one_more, &mut ()), Err(FastArrayError::TooManyItems));
    let swap = Delta { deleted: vec![ReplicationId(1)], ..one_more };
    assert_eq!(c.apply(&swap, &mut ()), Ok(()), "one out, one in: still at the cap");
    assert_eq!(c.len(), MAX_FAST_ARRAY_ITEMS);
}

#[test]
fn replication_ids_run_out_at_their_edge() {
    let mut s = FastArray::new(layout());
    s.set_last_id(MAX_REPLICATION_ID - 1);
    assert_eq!(s.add(&item(0)), Ok(ReplicationId(MAX_REPLICATION_ID)));
    assert_eq!(s.add(&item(0)), Err(FastArrayError::IdsExhausted));
    // The largest id travels.
    let conn = s.connect();
    let mut c = FastArrayReceiver::new(layout());
    sync(&mut s, conn, &mut c);
    assert_eq!(c.item(ReplicationId(MAX_REPLICATION_ID)), Some(&item(0)[..]));
}

#[test]
fn every_truncation_of_a_delta_is_an_error_and_changes_nothing() {
    let (mut s, conn, mut c) = inventory(50);
    sync(&mut s, conn, &mut c);
    for id in [3, 9, 27] {
        s.set(ReplicationId(id), &item(id as u16 * 11)).unwrap();
    }
    for id in [5, 40] {
        s.remove(ReplicationId(id)).unwrap();
    }
    s.add(&item(4)).unwrap();
    let (_, bytes, _) = write(&mut s, conn).unwrap();
    let before = items_of(c.iter());
    for cut in 0..bytes.len() {
        let mut events = Vec::new();
        assert!(c.receive(&bytes[..cut], &mut events).is_err(), "cut at {cut}");
        assert!(events.is_empty());
        assert_eq!(items_of(c.iter()), before);
    }
    c.receive(&bytes, &mut ()).unwrap();
    assert_same(&s, &c);
}

#[test]
fn a_bad_id_or_base_is_an_error() {
    let l = layout();
    let read = |b: &[u8]| read_delta(&mut BitReader::new(b), &l, ArrayKey(0));
    let mut w = BitWriter::new();
    w.write_bool(true);
    w.write_packed(5);
    w.write_packed(6); // base 5 − 6 < 0
    write_count(&mut w, 0);
    write_count(&mut w, 0);
    assert_eq!(read(&w.into_bytes()), Err(FastArrayError::Wire(WireError::Invalid("base key"))));
    let mut w = BitWriter::new();
    w.write_bool(true);
    w.write_packed(5);
    w.write_packed(0);
    write_count(&mut w, 1);
    write_count(&mut w, 0);
    w.write_packed(0); // id 0
    assert_eq!(read(&w.into_bytes()), Err(FastArrayError::Wire(WireError::Invalid("replication id"))));
    let mut w = BitWriter::new();
    w.write_bool(true);
    w.write_packed(5);
    w.write_packed(0);
    write_count(&mut w, 2);
    write_count(&mut w, 0);
    w.write_packed(u32::MAX as u64);
    w.write_packed(0); // the next id is past u32
    assert_eq!(read(&w.into_bytes()), Err(FastArrayError::Wire(WireError::Invalid("replication id"))));
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

#[test]
fn the_short_key_is_used_up_to_its_window_edge() {
    for (marks, short) in [(wire::SHORT_KEY_WINDOW - 1, true), (wire::SHORT_KEY_WINDOW, false)] {
        let mut s = FastArray::new(layout());
        let conn = s.connect();
        let id = s.add(&item(0)).unwrap();
        while s.array_key().0 < marks {
            s.mark_item_dirty(id).unwrap();
        }
        let (t, bytes, _) = write(&mut s, conn).unwrap();
        assert_eq!(bytes[0] & 1 == 0, short, "array key {marks}");
        let mut c = FastArrayReceiver::new(layout());
        c.receive(&bytes, &mut ()).unwrap();
        assert_eq!(c.newest_key(), ArrayKey(marks));
        s.acked(conn, t);
        // Acknowledged: the next delta is within the window again.
        s.mark_item_dirty(id).unwrap();
        let (_, bytes, _) = write(&mut s, conn).unwrap();
        assert_eq!(bytes[0] & 1, 0);
        c.receive(&bytes, &mut ()).unwrap();
        assert_eq!(c.newest_key(), s.array_key());
        assert_same(&s, &c);
    }
}

#[test]
fn a_bit_budget_spreads_a_delta_and_each_part_fits() {
    let (mut s, conn, mut c) = inventory(10);
    sync(&mut s, conn, &mut c);
    for id in 1..=7 {
        s.set(ReplicationId(id), &item(900)).unwrap();
    }
    for id in 8..=9 {
        s.remove(ReplicationId(id)).unwrap();
    }
    let per_item = wire::ID_MAX_BITS + wire::item_max_bits(s.layout());
    let budget = wire::HEADER_MAX_BITS + 3 * per_item;
    assert_eq!(s.min_delta_bits(), wire::HEADER_MAX_BITS + per_item);
    // Below the minimum: nothing written, nothing changed.
    let mut w = BitWriter::new();
    assert_eq!(s.write_delta_within(conn, &mut w, s.min_delta_bits() - 1).unwrap(), None);
    assert!(w.is_empty());
    assert_eq!(s.in_flight(conn), 0);
    let mut parts = Vec::new();
    loop {
        let mut w = BitWriter::new();
        let Some(t) = s.write_delta_within(conn, &mut w, budget).unwrap() else { break };
        assert!(w.len_bits() <= budget, "{} bits over a {budget}-bit budget", w.len_bits());
        let d = c.read(&mut BitReader::new(w.bytes())).unwrap();
        parts.push((d.changed.len(), d.deleted.len()));
        c.apply(&d, &mut ()).unwrap();
        s.acked(conn, t);
    }
    assert_eq!(parts, [(3, 0), (3, 0), (1, 2)], "7 changes then 2 removals, 3 entries a delta at most");
    assert!(s.is_synced(conn));
    assert_same(&s, &c);
}
