//! Initial-only sub-objects (UE's `COND_InitialOnly` on a registered sub-object,
//! `SubObjectCondition::InitialOnly`): a connection gets one with its owner's initial bunch and
//! nothing of it after — no update, no close but with its owner; one registered after the
//! owner's open reached a client never does there, until the owner's channel opens anew. The
//! reference's random worlds with them: `reference::with_initial_only_sub_objects_…`.

use super::subobjects::{Arena, AMMO};
use super::*;
use shadowrep::net::{DriverError, SubObjectCondition};

/// Parent of the character's health.
const CHARACTER_HEALTH: usize = 1;

#[test]
fn an_initial_only_sub_object_goes_with_its_owners_open_and_never_after() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::InitialOnly);
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: with its owner's open");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.characters.set(ch, CHARACTER_HEALTH, &Value::U32(77)).unwrap();
    a.run(5);
    for c in 0..2 {
        assert_eq!(a.client(c).value(cg, CHARACTER_HEALTH), Some(Value::U32(77)), "client {c}: the owner is updated");
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: the sub-object never is");
    }
    // Destroyed on the server: it goes from the clients, as any sub-object.
    a.weapons.despawn(w).unwrap();
    a.run(3);
    for c in 0..2 {
        assert!(!a.client(c).has(wg), "client {c}: its close");
        assert!(a.client(c).has(cg));
    }
}

#[test]
fn one_registered_after_its_owners_open_waits_for_the_owners_next_channel() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.run(3);
    // Registered once the owner's open reached both clients, beside a plain one.
    let (late, plain) = (a.weapons.spawn(), a.weapons.spawn());
    a.weapons.set(late, AMMO, &Value::U32(12)).unwrap();
    a.weapons.set(plain, AMMO, &Value::U32(5)).unwrap();
    let lg = a.driver.register_sub_object(a.weapon, &a.weapons, late, cg, SubObjectCondition::InitialOnly).unwrap();
    let pg = a.driver.register_sub_object(a.weapon, &a.weapons, plain, cg, SubObjectCondition::None).unwrap();
    a.run(5);
    for c in 0..2 {
        assert!(a.client(c).has(pg), "client {c}: the plain one is sent");
        assert!(!a.client(c).has(lg), "client {c}: the owner's initial bunch went before it existed");
    }
    // The owner walks away until its channels close, then comes back: its next channel's initial
    // bunch carries the initial-only sub-object, as it is then.
    a.weapons.set(late, AMMO, &Value::U32(11)).unwrap();
    a.characters.set(ch, LOCATION, &Value::Vector([500_000.0, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(!a.client(0).has(cg) && !a.client(1).has(cg), "closed for relevancy");
    a.characters.set(ch, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    a.run(5);
    for c in 0..2 {
        assert_eq!(a.client(c).value(lg, AMMO), Some(Value::U32(11)), "client {c}: with the owner's new open");
        assert_eq!(a.client(c).value(pg, AMMO), Some(Value::U32(5)));
    }
    a.weapons.set(late, AMMO, &Value::U32(10)).unwrap();
    a.run(5);
    assert_eq!(a.client(0).value(lg, AMMO), Some(Value::U32(11)), "and nothing after");
}

#[test]
fn a_late_client_gets_it_with_the_owners_open_as_it_is_then() {
    let mut a = Arena::new();
    let (_, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::InitialOnly);
    a.run(3);
    a.weapons.set(w, AMMO, &Value::U32(20)).unwrap();
    a.run(3);
    a.join(false);
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(20)), "the owner's open there: the state of then");
    assert_eq!(a.client(2).owner_of(wg), Some(cg));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(30)), "the first client keeps its own");
}

#[test]
fn a_fast_array_cannot_be_initial_only() {
    let mut a = Arena::new();
    let (_, cg) = a.character_at([100.0, 0.0, 0.0]);
    let kind = a
        .driver
        .register_fast_array_kind(Arc::new(shadowrep::fastarray::item_layout("Slots", PropType::U32).unwrap()))
        .unwrap();
    // Nor initial-or-owner (initial-only where the connection does not own the owner).
    for condition in [SubObjectCondition::InitialOnly, SubObjectCondition::InitialOrOwner] {
        let err = a.driver.add_fast_array(kind, cg, condition).unwrap_err();
        assert_eq!(err, DriverError::InitialOnlyFastArray);
        assert!(err.to_string().contains("initial-only"));
    }
    // The other conditions are a fast array's too.
    for condition in [SubObjectCondition::None, SubObjectCondition::SimulatedOrPhysicsNoReplay] {
        assert!(a.driver.add_fast_array(kind, cg, condition).is_ok(), "{condition:?}");
    }
}

#[test]
fn it_comes_back_with_its_owner_when_a_client_streams_the_owners_sublevel_out_and_in() {
    use shadowrep::net::SublevelId;
    let hall = SublevelId(1);
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::InitialOnly);
    a.driver.set_sublevel(a.character, &a.characters, ch, hall).unwrap();
    for c in 0..2 {
        a.driver.set_sublevel_loaded(a.clients[c].0, hall, true).unwrap();
    }
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(30)));
    a.weapons.set(w, AMMO, &Value::U32(25)).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(30)), "not updated");
    // Client 1 streams the hall out: the owner's channel closes (LevelUnloaded), the
    // sub-object's with it; streamed in again, the owner's new initial bunch brings it as it is.
    a.driver.set_sublevel_loaded(a.clients[1].0, hall, false).unwrap();
    a.run(3);
    assert!(!a.client(1).has(cg) && !a.client(1).has(wg));
    a.driver.set_sublevel_loaded(a.clients[1].0, hall, true).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(25)), "with the owner's new open");
    assert_eq!(a.client(1).owner_of(wg), Some(cg));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(30)), "client 0 kept its channel");
}

#[test]
fn its_open_lost_after_the_owners_was_acknowledged_goes_again() {
    // UE's initial bunch is reliable: a sub-object in it reaches the client however many of its
    // packets are lost. Here the sub-object's open may go in a later packet than its owner's
    // (its own channel, behind the owner's): that packet lost after the owner's open was
    // acknowledged, its open goes again — its channel opened in the owner's window.
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let tick = |a: &mut Arena| {
        a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap();
        a.clients.iter().map(|(conn, _)| a.driver.take_packets(*conn).unwrap()).collect::<Vec<_>>()
    };
    let deliver = |a: &mut Arena, c: usize, packets: &[Vec<u8>], feedback: bool| {
        let (conn, world) = &mut a.clients[c];
        for p in packets {
            world.receive(p).unwrap();
        }
        if feedback {
            a.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    };
    // Frame A: the owner opens on both; client 1's acknowledgement is held back.
    let sent = tick(&mut a);
    deliver(&mut a, 0, &sent[0], true);
    deliver(&mut a, 1, &sent[1], false);
    assert!(a.client(1).has(cg));
    // Registered now: in the owner's window on client 1 only.
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(40)).unwrap();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::InitialOnly).unwrap();
    // Frame B: its open goes to client 1, and is lost.
    let sent = tick(&mut a);
    assert!(!sent[1].is_empty(), "the sub-object's open");
    deliver(&mut a, 0, &sent[0], true);
    // Frame C (the owner changed: a packet to acknowledge): client 1 hears again and acknowledges
    // A and C — the owner's open delivered, B lost.
    a.characters.set(ch, CHARACTER_HEALTH, &Value::U32(5)).unwrap();
    let sent = tick(&mut a);
    assert!(!sent[1].is_empty());
    deliver(&mut a, 0, &sent[0], true);
    deliver(&mut a, 1, &sent[1], true);
    assert!(!a.client(1).has(wg));
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(40)), "its open went again");
    assert_eq!(a.client(1).owner_of(wg), Some(cg));
    assert!(!a.client(0).has(wg), "client 0's window had closed before it was registered");
    a.weapons.set(w, AMMO, &Value::U32(39)).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(40)), "and nothing after");
}
