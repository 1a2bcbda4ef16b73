//! Deltas on the wire: their size (one change in ten thousand items, a first send spread over
//! updates, a bit budget), the caps at their edge on write and on read, truncations and bad ids or
//! bases refused, and the short key up to its window's edge.

use super::*;
use crate::fastarray::wire::{read_delta, write_count};
use crate::wire::{BitReader, WireError};

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
