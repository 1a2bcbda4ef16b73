//! Sub-objects of a dormant owner: they sleep and wake with it, stay with it when flushed, and a
//! lost open is sent again rather than closed for dormancy.

use super::*;
use shadowrep::net::Dormancy;

/// A sub-object rides its owner's channel in UE, closed with it for dormancy: where its owner is
/// held dormant it goes dormant too — kept by a client that walks away (it had been closed for
/// relevancy, leaving the client an owner without it), changed without a send until the owner
/// wakes, and woken with it.
#[test]
fn a_sub_object_sleeps_and_wakes_with_its_dormant_owner() {
    use shadowrep::net::Dormancy;
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(8);
    assert!(a.client(1).is_dormant(cg));
    assert!(a.client(1).is_dormant(wg), "dormant with its owner");
    // Client 1 walks away for longer than the relevant timeout.
    a.driver.set_viewers(a.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    a.run(200);
    assert!(a.client(1).has(cg));
    assert!(a.client(1).has(wg), "kept with its owner");
    assert_eq!(a.client(1).owner_of(wg), Some(cg));
    // Changed while its owner sleeps: not sent until the owner wakes.
    a.driver.set_viewers(a.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(12)).unwrap();
    a.run(3);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(30)), "held dormant");
    a.driver.flush_net_dormancy(a.character, &a.characters, ch).unwrap();
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(12)), "client {c}: woken with its owner");
    }
}

/// The same when the sub-object comes before its owner in the send order (a smaller GUID, the same
/// priority): flushed while far from a client, the owner's woken row is not yet dormant again
/// when the sub-object's turn comes — it waits for its owner instead of being closed.
#[test]
fn a_sub_object_ranked_before_its_flushed_owner_stays_with_it() {
    use shadowrep::net::Dormancy;
    let mut a = Arena::new();
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(30)).unwrap();
    let wg = a.driver.assign_guid(a.weapon, &a.weapons, w).unwrap();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    assert!(wg < cg);
    a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(8);
    assert!(a.client(1).is_dormant(cg) && a.client(1).is_dormant(wg));
    a.driver.set_viewers(a.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    a.run(200);
    a.driver.flush_net_dormancy(a.character, &a.characters, ch).unwrap();
    a.run(60);
    assert!(a.client(1).has(cg));
    assert!(a.client(1).has(wg), "kept with its owner");
}

/// A sub-object whose owner is held dormant on a connection goes dormant with it only once the
/// client has its open: one whose open was lost — carrying no values, so nothing else is owed —
/// while its owner went dormant, and that is no longer relevant there when the loss is learned,
/// gets its open again, not a Dormant close for a copy the client never had (the mutation
/// pass's survivor d1). (The open goes while the owner is awake: none opens under a dormant
/// owner — `a_sub_object_newly_allowed_while_its_owner_is_dormant_waits_for_the_owner_to_wake`.)
#[test]
fn a_sub_object_whose_open_was_lost_is_not_closed_for_dormancy_with_its_dormant_owner() {
    let mut a = Arena::new();
    // An owner of no connection's, relevant by distance alone: it falls asleep once dormant.
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(5)).unwrap();
    a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.run(10);
    assert!(a.client(0).has(cg));
    // A new sub-object at its default values (its open carries none): the packet with its open
    // is lost, its owner goes dormant, and the client says nothing for longer than the
    // relevancy timeout (the server stops replicating to it after the ready timeout) while its
    // viewer walks away.
    let spare = a.weapons.spawn();
    let sg = a.driver.register_sub_object(a.weapon, &a.weapons, spare, cg, SubObjectCondition::None).unwrap();
    let (conn, _) = a.clients[0];
    let step = |a: &mut Arena, deliver: bool, feedback: bool| {
        a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap();
        for (c, world) in &mut a.clients {
            for p in a.driver.take_packets(*c).unwrap() {
                if deliver || *c != conn {
                    world.receive(&p).unwrap();
                }
            }
            if feedback || *c != conn {
                a.driver.receive_feedback(*c, &world.feedback()).unwrap();
            }
        }
    };
    let sent = |a: &Arena| a.driver.connection_stats(conn).unwrap().bytes_sent;
    let before = sent(&a);
    step(&mut a, false, false);
    assert!(sent(&a) > before && a.client(1).has(sg), "the sub-object's open went out (and was lost)");
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.driver.set_viewers(conn, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    for _ in 0..(7.0 * 30.0) as usize {
        step(&mut a, true, false);
    }
    assert!(!a.client(0).has(sg));
    assert!(a.client(0).is_dormant(cg), "the owner dormant there");
    let dormant = |a: &Arena| a.driver.is_asleep(a.character, ch);
    assert!(dormant(&a), "the owner settled and fell asleep");
    for _ in 0..5 {
        step(&mut a, true, true);
    }
    assert!(a.client(0).has(sg), "the lost open went again");
    assert_eq!(a.client(0).sub_objects(cg).len(), 2);
    assert_eq!(a.client(1).sub_objects(cg).len(), 2, "the other client's arrived at once");
    assert_eq!(a.driver.connection_stats(conn).unwrap().reopens_honoured, 0);
}

/// A sub-object rides its owner's channel in UE: while the owner is dormant on a connection
/// (its channel closed there), nothing of it goes — a sub-object its condition newly allows
/// there (the owner changing hands: an owner-only part now the new owner's, a skip-owner part
/// now the old owner's) waits for the owner to wake, and opens with it; where the part no
/// longer applies its dormant copy stays until the wake too.
#[test]
fn a_sub_object_newly_allowed_while_its_owner_is_dormant_waits_for_the_owner_to_wake() {
    for condition in [SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner] {
        let mut a = Arena::new();
        let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, condition);
        a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
        a.run(8);
        // The client the part newly applies to once client 1 owns the character.
        let newly = if condition == SubObjectCondition::OwnerOnly { 1 } else { 0 };
        assert!(a.client(newly).is_dormant(cg), "{condition:?}: the owner dormant there");
        assert!(!a.client(newly).has(wg), "{condition:?}: not its part yet");
        // Packets with content (keep-alives aside).
        let sent = |a: &Arena| {
            let s = a.driver.connection_stats(a.clients[newly].0).unwrap();
            s.packets_sent - s.keep_alives
        };
        a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
        let before = sent(&a);
        a.run(10);
        assert!(!a.client(newly).has(wg), "{condition:?}: the part waits for its dormant owner");
        assert!(a.client(newly).is_dormant(cg), "{condition:?}: the owner still dormant there");
        assert_eq!(sent(&a) - before, 0, "{condition:?}: nothing goes for a dormant actor");
        // The client the part no longer applies to keeps its dormant copy as it is until the
        // owner wakes, which closes it there (the departure kept: a part its condition leaves
        // out is destroyed, not left stale as UE leaves it).
        let left = 1 - newly;
        assert!(a.client(left).has(wg) && a.client(left).is_dormant(wg), "{condition:?}: kept dormant");
        a.driver.flush_net_dormancy(a.character, &a.characters, ch).unwrap();
        a.run(3);
        assert!(!a.client(left).has(wg), "{condition:?}: closed where it no longer applies once woken");
        assert!(a.client(newly).has(wg), "{condition:?}: opened with its woken owner");
        assert_eq!(a.client(newly).owner_of(wg), Some(cg));
        assert_eq!(a.client(newly).value(wg, AMMO), Some(Value::U32(30)));
    }
}

/// A sub-object held dormant with its owner gets its own dormancy close (the client counts it
/// dormant too), and a wake clears it on the client with the sub-object's first bunch.
#[test]
fn a_sub_objects_client_copy_is_dormant_with_its_owner_and_wakes_with_its_first_bunch() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(8);
    for c in 0..2 {
        assert!(a.client(c).is_dormant(cg) && a.client(c).is_dormant(wg), "client {c}: both dormant");
    }
    a.weapons.set(w, AMMO, &Value::U32(7)).unwrap();
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::Awake).unwrap();
    a.run(2);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(7)));
        assert!(!a.client(c).is_dormant(wg), "client {c}: the part awake with its bunch");
    }
}
