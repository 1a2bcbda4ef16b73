//! Sub-object conditions: which connections each condition picks, and a condition that stops
//! passing (the owner changing hands) closing the sub-object at once, a startup owner's included.

use super::*;

#[test]
fn an_owner_only_sub_object_goes_to_the_owners_connection_only_and_follows_ownership() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::OwnerOnly);
    a.run(3);
    assert!(a.client(0).has(wg));
    assert!(!a.client(1).has(wg), "the inventory is its owner's");
    assert!(a.client(1).has(cg));
    // The character changes hands: the sub-object follows its owner's ownership.
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
    a.run(3);
    assert!(a.client(1).has(wg));
}

#[test]
fn every_condition_picks_its_connections_and_a_lost_condition_closes_at_once() {
    use SubObjectCondition as C;
    // (condition, client 0 — the owner, autonomous — gets it, client 1 gets it)
    let cases = [
        (C::None, true, true),
        (C::OwnerOnly, true, false),
        (C::SkipOwner, false, true),
        (C::SimulatedOnly, false, true),
        (C::AutonomousOnly, true, false),
        (C::ReplayOrOwner, true, false),
        (C::ReplayOnly, false, false),
        (C::SkipReplay, true, true),
        (C::Never, false, false),
    ];
    for (condition, to_owner, to_other) in cases {
        let mut a = Arena::new();
        let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, condition);
        a.run(3);
        assert!(a.client(0).has(cg) && a.client(1).has(cg));
        assert_eq!(a.client(0).has(wg), to_owner, "{condition:?} to the owner");
        assert_eq!(a.client(1).has(wg), to_other, "{condition:?} to the other");
        if condition == C::OwnerOnly {
            // The character changes hands: the old owner loses the inventory within frames, not
            // after the relevant timeout.
            a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
            a.run(3);
            assert!(!a.client(0).has(wg), "closed at once for the old owner");
            assert!(a.client(1).has(wg));
        }
    }
}

/// A startup owner's sub-objects stay with its channel when it falls out of relevancy (as they
/// ride it in UE), and still close where their condition stops passing.
#[test]
fn a_startup_owners_sub_objects_stay_with_it_and_still_close_by_condition() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    let inv = a.weapons.spawn();
    let ig = a.driver.register_sub_object(a.weapon, &a.weapons, inv, cg, SubObjectCondition::OwnerOnly).unwrap();
    let startup = NetSettings {
        startup: true,
        frequency: a.driver.net_settings(a.character, ch).unwrap().frequency,
        ..NetSettings::default()
    };
    a.driver.set_net_settings(a.character, &a.characters, ch, startup).unwrap();
    a.run(3);
    assert!(a.client(1).has(wg) && a.client(0).has(ig));
    // Far away for longer than the relevant timeout: the startup owner's channel stays, and so
    // does its weapon's.
    a.characters.set(ch, LOCATION, &Value::Vector([1.0e6, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(a.client(1).has(cg), "a startup actor keeps its channel");
    assert!(a.client(1).has(wg), "and its sub-object with it");
    // The character changes hands: the old owner's inventory closes at once all the same.
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
    a.run(3);
    assert!(!a.client(0).has(ig), "closed for the old owner");
    assert!(a.client(1).has(ig));
}
