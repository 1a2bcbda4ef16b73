//! The server's items: the item layout, adds, sets and removes (the last row swapped in) with
//! their replication keys, `mark_array_dirty` resending nothing unchanged, and the item and
//! replication id caps at their edges.

use super::*;

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
