//! What a fast array sends: the whole array with its owner's open, then deltas of what changed
//! with callbacks in UE's order (and the delta's end when asked), a reopen of the array or of its
//! owner sending it whole again, a change that fits a packet arriving in one, and a large first
//! send spread over frames.

use super::*;
use shadowrep::fastarray::FastArrayEvent;
use shadowrep::wire::BitWriter;

#[test]
fn a_fast_array_opens_with_its_owner_then_sends_only_what_changed_with_callbacks_in_ues_order() {
    let (mut l, kind) = level(2);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    assert_eq!(l.driver.fast_arrays_of(owner), &[fa]);
    let ids = fill(&mut l, fa, 100);
    // UE serializes the array in its owner's first bunch: one frame brings both.
    l.step();
    let want = server_items(&l, fa);
    for c in 0..2 {
        assert!(l.client(c).has(owner));
        assert_eq!(client_items(&l, c, fa).as_ref(), Some(&want), "client {c}: with the owner's open");
    }
    l.run(3);
    for c in 0..2 {
        assert_eq!(client_items(&l, c, fa).as_ref(), Some(&want), "client {c}");
        assert_eq!(l.client(c).fast_array_owner(fa), Some(owner));
        assert_eq!(l.client(c).fast_arrays_of(owner), &[fa]);
        let events = l.clients[c].1.take_fast_array_events();
        let added: Vec<_> = ids.iter().map(|&id| (fa, FastArrayEvent::Added(id))).collect();
        assert_eq!(events, added, "client {c}: every item added once");
    }
    // Nothing changes: nothing but the actor level's keep-alive (an empty packet).
    idle_step(&mut l, 0);
    // A change, a removal and an add in one frame: one delta, callbacks removes → adds → changes.
    let added = {
        let mut items = l.driver.fast_array_mut(fa).unwrap();
        items.set(ids[5], &slot(5, 99)).unwrap();
        items.remove(ids[7]).unwrap();
        items.add(&slot(1000, 1)).unwrap()
    };
    let before = l.driver.bytes_sent(l.clients[0].0);
    l.step();
    let bytes = l.driver.bytes_sent(l.clients[0].0) - before;
    let events = l.clients[0].1.take_fast_array_events();
    assert_eq!(
        events,
        [
            (fa, FastArrayEvent::Removed(ids[7], slot(7, 100).to_vec())),
            (fa, FastArrayEvent::Added(added)),
            (fa, FastArrayEvent::Changed(ids[5]))
        ]
    );
    assert_eq!(client_items(&l, 0, fa), Some(server_items(&l, fa)));
    // The packet: its header, the bunch's, the delta's and three ids with two items of 3 bytes.
    assert!(bytes <= 24, "{bytes} bytes for a three-item delta");
}

/// A synced owner with a 20-item array on one client, which then asks again for `asked(owner,
/// array)` in a stale feedback (it settles nothing) after an idle frame: returns the level, the
/// array, and the bytes the frame after the request sent.
fn asked_again(asked: impl Fn(NetGuid, NetGuid) -> NetGuid) -> (Level, NetGuid, u64) {
    let (mut l, kind) = level(1);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    fill(&mut l, fa, 20);
    l.run(4);
    let conn = l.clients[0].0;
    let idle = idle_step(&mut l, 0);
    let last = shadowrep::wire::feedback::read_feedback(&l.clients[0].1.feedback()).unwrap();
    let mut w = BitWriter::new();
    shadowrep::wire::feedback::write_feedback(&mut w, last.highest, &last.received, &[asked(owner, fa)]);
    l.driver.receive_feedback(conn, &w.into_bytes()).unwrap();
    assert_eq!(l.driver.connection_stats(conn).unwrap().reopens_honoured, idle.reopens_honoured + 1);
    l.step();
    let after = l.driver.connection_stats(conn).unwrap();
    (l, fa, after.bytes_sent - idle.bytes_sent)
}

#[test]
fn a_reopen_of_a_synced_fast_array_sends_it_again_whole() {
    // A client asks again for an array the server believes it has (its owner stays acknowledged):
    // the next frame opens the array again with every item, although nothing changed — a quiet
    // array skipped without its lock must not stay skipped.
    let (mut l, fa, bytes) = asked_again(|_, fa| fa);
    assert!(bytes > 20 * 4, "the array went again with its items: {bytes} bytes");
    l.run(2);
    assert_eq!(client_items(&l, 0, fa), Some(server_items(&l, fa)));
}

/// A client that asks for an owner again has none of its arrays either (they went with its copy):
/// the owner's reopen sends them again whole behind its open, although nothing changed.
#[test]
fn an_owners_reopen_sends_its_fast_arrays_again_whole_behind_its_open() {
    let (mut l, fa, bytes) = asked_again(|owner, _| owner);
    assert!(bytes > 20 * 4, "the owner and its array: {bytes} bytes");
    l.run(2);
    assert_eq!(client_items(&l, 0, fa), Some(server_items(&l, fa)));
    let conn = l.clients[0].0;
    let honoured = l.driver.connection_stats(conn).unwrap().reopens_honoured;
    assert_eq!(honoured, 1, "no other reopen");
}

/// A change that fits a packet goes in one delta — in the next packet if the one being written
/// has too little room left — so the client gets all of it in one packet (UE writes it inside
/// the owner's update, joined whole); it had been cut to the room left, the rest a packet later.
/// Without the actor level the arrays follow every actor's bunches: the delta lands wherever
/// the actors left off.
#[test]
fn a_change_that_fits_a_packet_arrives_in_one() {
    let layout = thing();
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let kind = driver.register_fast_array_kind(slots()).unwrap();
    let conn = driver.add_connection(false);
    let mut world = ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums())
        .and_then(|w| w.with_fast_array_kinds(&[slots()], &driver.fast_array_checksums()))
        .unwrap();
    let actors: Vec<ActorId> = (0..300).map(|_| store.spawn()).collect();
    let owner = driver.assign_guid(class, &store, actors[0]).unwrap();
    let fa = driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    let (mut cut, mut whole) = (0, 0);
    for frame in 0..40u32 {
        // A varying number of actors changes: the delta lands at varying places in a packet.
        let busy = 50 + (frame as usize * 37) % 250;
        for (i, &a) in actors.iter().enumerate().take(busy) {
            store.set(a, HEALTH, &Value::U32(frame * 1000 + i as u32)).unwrap();
            store.mark_dirty(a, HEALTH).unwrap();
        }
        let mut items = driver.fast_array_mut(fa).unwrap();
        for i in 0..100 {
            items.add(&slot(i, 1)).unwrap();
        }
        driver.tick(&mut [&mut store]).unwrap();
        let packets = driver.take_packets(conn).unwrap();
        let mut calls = 0;
        for p in &packets {
            world.receive(p).unwrap();
            let events = world.take_fast_array_events();
            if !events.is_empty() {
                calls += 1;
                if events.len() == 100 {
                    whole += 1;
                }
            }
        }
        if calls > 1 {
            cut += 1;
        }
        driver.receive_feedback(conn, &world.feedback()).unwrap();
    }
    assert_eq!((whole, cut), (40, 0), "every frame's 100 adds in one packet");
}

#[test]
fn a_large_first_send_is_spread_over_frames_and_converges() {
    let (mut l, kind) = level(1);
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    fill(&mut l, fa, 10_000);
    l.run(2);
    let partial = client_items(&l, 0, fa).map_or(0, |m| m.len());
    assert!(partial > 0 && partial < 10_000, "{partial} items after two frames");
    l.run(60);
    assert_eq!(client_items(&l, 0, fa), Some(server_items(&l, fa)));
}

/// Asked for, a delta's end is reported after its item callbacks, with the items before it
/// (UE's `PostReplicatedReceive`).
#[test]
fn a_deltas_end_is_reported_after_its_callbacks_when_asked() {
    let (mut l, kind) = level(1);
    let (conn, world) = l.clients.remove(0);
    l.clients.push((conn, world.with_receive_events(true)));
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    let ids = fill(&mut l, fa, 2);
    l.step();
    let received = |old_len| (fa, FastArrayEvent::Received { old_len });
    let added: Vec<_> = ids.iter().map(|&id| (fa, FastArrayEvent::Added(id))).collect();
    assert_eq!(l.clients[0].1.take_fast_array_events(), [added, vec![received(0)]].concat());
    l.driver.fast_array_mut(fa).unwrap().remove(ids[0]).unwrap();
    l.driver.fast_array_mut(fa).unwrap().set(ids[1], &slot(9, 9)).unwrap();
    l.step();
    let events = l.clients[0].1.take_fast_array_events();
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(events[0].1, FastArrayEvent::Removed(id, _) if id == ids[0]));
    assert_eq!(events[1..], [(fa, FastArrayEvent::Changed(ids[1])), received(2)]);
}
