//! How a sub-object replicates with its owner: created with it and referenced by GUID, relevant
//! where it is, its settings the owner's, sent in the owner's frames and budget, temporary with it.

use super::*;
use shadowrep::net::{Dormancy, DriverError};

#[test]
fn a_sub_object_is_created_with_its_owner_and_a_reference_to_it_resolves() {
    let mut a = Arena::new();
    let (_, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.run(3);
    for c in 0..2 {
        let client = a.client(c);
        assert_eq!(client.value(wg, AMMO), Some(Value::U32(30)), "client {c}");
        assert_eq!(client.owner_of(wg), Some(cg));
        assert_eq!(client.sub_objects(cg), &[wg]);
        assert_eq!(client.value(cg, CURRENT), Some(Value::Object(ObjectRef(wg.0))));
        assert_eq!(client.unmapped_count(), 0);
    }
    assert_eq!(a.driver.owner_of(wg), Some(cg));
    assert_eq!(a.driver.sub_objects(cg), &[wg]);
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.run(2);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(29)));
}

#[test]
fn a_sub_object_is_relevant_exactly_where_its_owner_is() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    a.run(3);
    assert!(a.client(1).has(wg));
    // The owner walks away from client 1's viewer (client 0 owns it: still relevant there).
    a.characters.set(ch, LOCATION, &Value::Vector([500_000.0, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(!a.client(1).has(cg));
    assert!(!a.client(1).has(wg), "closed with its owner");
    assert!(a.client(0).has(wg));
}

#[test]
fn what_a_sub_object_takes_from_its_owner_is_set_on_the_owner() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    // (A startup owner: its sub-objects still close where their condition stops passing.)
    let mut slow = NetSettings { startup: true, ..NetSettings::default() };
    slow.frequency.net_update_frequency = 0.1;
    a.driver.set_net_settings(a.character, &a.characters, ch, slow).unwrap();
    let error = DriverError::FollowsOwner { sub: wg, owner: cg };
    assert!(error.to_string().contains("set them on"), "{error}");
    let follows = Err(error);
    let before = a.driver.net_settings(a.weapon, w);
    assert_eq!(a.driver.set_net_settings(a.weapon, &a.weapons, w, NetSettings::default()), follows);
    assert_eq!(a.driver.set_owner_actor(a.weapon, &a.weapons, w, None, None), follows);
    assert_eq!(a.driver.set_owner(a.weapon, &a.weapons, w, Some(a.clients[1].0), false), follows);
    assert_eq!(a.driver.set_physics(a.weapon, &a.weapons, w, true), follows);
    assert_eq!(a.driver.set_net_dormancy(a.weapon, &a.weapons, w, Dormancy::DormantAll), follows);
    assert_eq!(a.driver.tear_off(a.weapon, &a.weapons, w), follows);
    assert_eq!(a.driver.net_settings(a.weapon, w), before, "a refused call changes nothing");
    assert_eq!(a.driver.owner_of(wg), Some(cg));
    assert_eq!(a.driver.owning_connection(a.weapon, w), Some(a.clients[0].0));
    // Its settings are the owner's (relevancy handed to it), whatever it had before.
    let s = before.unwrap();
    assert_eq!((s.frequency, s.use_owner_relevancy), (slow.frequency, true));
    let lone = a.weapons.spawn();
    let own = NetSettings { startup: true, only_relevant_to_owner: true, net_priority: 9.0, ..NetSettings::default() };
    a.driver.set_net_settings(a.weapon, &a.weapons, lone, own).unwrap();
    a.driver.set_net_dormancy(a.weapon, &a.weapons, lone, Dormancy::DormantAll).unwrap();
    a.driver.register_sub_object(a.weapon, &a.weapons, lone, cg, SubObjectCondition::None).unwrap();
    assert_eq!(a.driver.net_dormancy(a.weapon, lone), Some(Dormancy::default()), "its owner's dormancy is its own");
    let s = a.driver.net_settings(a.weapon, lone).unwrap();
    assert!(s.startup && !s.only_relevant_to_owner && s.use_owner_relevancy, "the owner's startup flag: {s:?}");
    assert_eq!((s.frequency, s.net_priority), (slow.frequency, slow.net_priority));
    // Physics is the owner's: the autonomous owner gets a SimulatedOrPhysics property of the
    // sub-object only once its owner replicates physics.
    a.weapons.set(w, RECOIL, &Value::U8(7)).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, RECOIL), Some(Value::U8(7)), "a simulated proxy's");
    assert_eq!(a.client(0).value(wg, RECOIL), Some(Value::U8(0)), "not the autonomous owner's");
    a.driver.set_physics(a.character, &a.characters, ch, true).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(wg, RECOIL), Some(Value::U8(7)), "with physics, the owner's too");
    // A sub-object registered later takes the owner's physics as it is.
    let late = a.weapons.spawn();
    a.weapons.set(late, RECOIL, &Value::U8(3)).unwrap();
    let lg = a.driver.register_sub_object(a.weapon, &a.weapons, late, cg, SubObjectCondition::None).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(2);
    assert_eq!(a.client(0).value(lg, RECOIL), Some(Value::U8(3)), "registered after physics went on");
    // Forcing an update of the sub-object forces its owner's (an update every ten seconds here).
    a.characters.set(ch, HEALTH, &Value::U32(55)).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(4)).unwrap();
    a.run(2);
    assert_ne!(a.client(0).value(cg, HEALTH), Some(Value::U32(55)), "not due");
    a.driver.force_net_update(a.weapon, &a.weapons, w).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(cg, HEALTH), Some(Value::U32(55)));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(4)));
}

/// UE replicates a sub-object inside its owner's update: here it is considered on exactly its
/// owner's frames (its clock draws its jitter from its owner's GUID, at the owner's frequency),
/// so a change to both in one tick reaches the client in one frame; the owner's later frequency
/// is theirs too, and `force_net_update` on the owner forces its sub-objects.
#[test]
fn a_sub_object_goes_out_in_its_owners_frames() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    // 7 Hz at a 30 Hz tick: an interval of 4.3 ticks, so the jitter decides between the fifth
    // and the sixth frame.
    s.frequency.net_update_frequency = 7.0;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    let w = a.weapons.spawn();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.run(3);
    // Frames in which client 0 got both of a change made to the two in one tick, and frames in
    // which it got one of them only.
    let pair_frames = |a: &mut Arena, (ch, cg): (ActorId, NetGuid), (w, wg): (ActorId, NetGuid), frames| {
        let (mut together, mut apart) = (0, 0);
        for frame in frames {
            a.characters.set(ch, HEALTH, &Value::U32(frame)).unwrap();
            a.weapons.set(w, AMMO, &Value::U32(frame)).unwrap();
            a.run(1);
            let got = |g: NetGuid, p: usize| a.client(0).value(g, p) == Some(Value::U32(frame));
            match (got(cg, HEALTH), got(wg, AMMO)) {
                (true, true) => together += 1,
                (false, false) => {}
                _ => apart += 1,
            }
        }
        (together, apart)
    };
    let (together, apart) = pair_frames(&mut a, (ch, cg), (w, wg), 1..=90u32);
    assert_eq!(apart, 0, "owner and sub-object in the same frames ({together} together)");
    assert!((14..=19).contains(&together), "5 to 6 updates a second, as UE's jitter gives: {together}");
    // One registered later goes with its owner too: due with it from the start.
    let w2 = a.weapons.spawn();
    let wg2 = a.driver.register_sub_object(a.weapon, &a.weapons, w2, cg, SubObjectCondition::None).unwrap();
    let (together, apart) = pair_frames(&mut a, (ch, cg), (w2, wg2), 100..=190u32);
    assert_eq!(apart, 0, "a sub-object registered later, in its owner's frames ({together} together)");
    assert!(together >= 14);
    // Seldom due: forcing the owner brings the sub-object's change in the same frame.
    s.frequency.net_update_frequency = 0.1;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    let sub = a.driver.net_settings(a.weapon, w).unwrap();
    assert_eq!(sub.frequency.net_update_frequency, 0.1, "the owner's frequency");
    a.run(2);
    a.characters.set(ch, HEALTH, &Value::U32(500)).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(500)).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(cg, HEALTH), Some(Value::U32(500)));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(500)), "forced with its owner");
    // An owner that takes its class's defaults: its sub-objects follow a change of them.
    let (_, _, w3, _) = a.armed([200.0, 0.0, 0.0], 1, 9, SubObjectCondition::None);
    let mut class_defaults = NetSettings::default();
    class_defaults.frequency.net_update_frequency = 3.0;
    a.driver.set_class_settings(a.character, class_defaults).unwrap();
    assert_eq!(a.driver.net_settings(a.weapon, w3).unwrap().frequency.net_update_frequency, 3.0);
}

/// UE checks a connection's budget after an actor's whole update, sub-objects included: an owner
/// whose send saturates the connection still takes the sub-objects ranked right behind it, and
/// the frame ends there (they had waited for a later frame, as leftovers).
#[test]
fn a_saturating_owner_takes_its_sub_objects_along() {
    let mut a = Arena::new();
    let (_, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    let (_, other, _, _) = a.armed([300.0, 0.0, 0.0], 1, 40, SubObjectCondition::None);
    // A connection that can carry about one actor a frame.
    a.driver.set_net_speed(a.clients[0].0, 600).unwrap();
    a.run(1);
    let client = a.client(0);
    assert!(client.has(cg), "the nearest actor goes first");
    assert!(client.has(wg), "and its sub-object with it, in the same frame");
    assert!(!client.has(other), "then the frame ends");
}

#[test]
fn a_temporary_owners_sub_objects_are_temporary_with_it() {
    // UE writes sub-objects inside their owner's channel, which a temporary actor's connection
    // never updates once its initial bunch went: a sub-object takes its owner's `net_temporary`
    // with the rest of its settings, and is sent once.
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    s.net_temporary = true;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    assert!(a.driver.net_settings(a.weapon, w).unwrap().net_temporary, "passed to its sub-object");
    a.run(3);
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.characters.set(ch, HEALTH, &Value::U32(5)).unwrap();
    a.run(5);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: the sub-object is not updated");
        assert_ne!(a.client(c).value(cg, HEALTH), Some(Value::U32(5)), "client {c}: nor its owner");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
    // A third client gets both, as they are now, once.
    a.join(false);
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(29)));
    assert_eq!(a.client(2).value(cg, HEALTH), Some(Value::U32(5)));
    a.weapons.set(w, AMMO, &Value::U32(28)).unwrap();
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(29)));
}

#[test]
fn a_sub_object_registered_after_its_temporary_owners_open_went_is_sent_once() {
    // UE would never send it (it rides the owner's channel, not updated again); here its own
    // open goes once, as a temporary actor's, then nothing more (README, "Temporary actors").
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    s.net_temporary = true;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    a.run(3);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(12)).unwrap();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    assert!(a.driver.net_settings(a.weapon, w).unwrap().net_temporary);
    a.run(3);
    a.weapons.set(w, AMMO, &Value::U32(11)).unwrap();
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(12)), "client {c}: its open, once");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
}
