//! UE's other conditions on a registered sub-object — `SimulatedOrPhysics`,
//! `SimulatedOnlyNoReplay`, `SimulatedOrPhysicsNoReplay` and `InitialOrOwner` — read with its
//! owner's flags on each connection, as UE's condition map does (the map itself against the
//! properties' one: the kernel's `every_sub_object_condition_is_ues_condition_map`). The
//! reference's random worlds with them: `reference::with_ues_other_sub_object_conditions_…`.

use super::subobjects::{Arena, AMMO};
use super::*;
use shadowrep::net::SubObjectCondition;

#[test]
fn simulated_or_physics_reaches_the_autonomous_owner_only_while_its_owner_replicates_physics() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::SimulatedOrPhysics);
    a.run(3);
    assert!(a.client(0).has(cg), "the owner reaches its own client");
    assert!(!a.client(0).has(wg), "client 0 holds an autonomous proxy and no physics is replicated");
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(30)), "a simulated proxy gets it");
    // The owner replicates physics: every connection gets the sub-object, the owner's too.
    a.driver.set_physics(a.character, &a.characters, ch, true).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(29)), "client {c}");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
    // Physics off: the owner's client loses it at once, the other keeps it and its updates.
    a.driver.set_physics(a.character, &a.characters, ch, false).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(28)).unwrap();
    a.run(3);
    assert!(!a.client(0).has(wg), "closed where the condition no longer allows it");
    assert!(a.client(0).has(cg), "its owner stays");
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(28)));
    // Not autonomous any more: client 0 holds a simulated proxy, which the condition allows.
    a.driver.set_autonomous_proxy(a.character, &a.characters, ch, false).unwrap();
    a.run(3);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(28)), "a simulated proxy's client gets it again");
}

#[test]
fn the_no_replay_conditions_leave_replays_out() {
    let mut a = Arena::new();
    assert_eq!(a.join(true), 2, "the replay's client");
    let (ch, _, _, simulated) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::SimulatedOnlyNoReplay);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(7)).unwrap();
    let cg = a.driver.guid_of(a.character, ch).unwrap();
    let physics = a
        .driver
        .register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::SimulatedOrPhysicsNoReplay)
        .unwrap();
    a.run(3);
    assert!(a.client(2).has(cg), "the replay records the owner");
    for g in [simulated, physics] {
        assert!(!a.client(2).has(g), "{g:?}: never to a replay");
        assert!(!a.client(0).has(g), "{g:?}: not to the autonomous owner without physics");
        assert!(a.client(1).has(g), "{g:?}: to a simulated proxy");
    }
    a.driver.set_physics(a.character, &a.characters, ch, true).unwrap();
    a.run(3);
    assert!(a.client(0).has(physics), "physics lets the owner's client have the physics one");
    assert!(!a.client(0).has(simulated), "but not the simulated-only one");
    assert!(!a.client(2).has(physics) && !a.client(2).has(simulated), "and the replay still neither");
}

#[test]
fn initial_or_owner_updates_the_owner_and_reaches_the_others_with_the_owners_open_only() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::InitialOrOwner);
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: with its owner's open");
    }
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.run(3);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(29)), "the owner's client is updated");
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(30)), "the other is not");
    // Client 1 comes to own the owner: it is updated from then on; client 0 keeps its copy as
    // it was and hears nothing more of it (no close: the owner's channel is still open there).
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(29)), "the new owner's client catches up");
    a.weapons.set(w, AMMO, &Value::U32(28)).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(28)));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(29)), "the old owner's copy stays as it was");
    // A late client gets it with the owner's open, as it is then.
    a.join(false);
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(28)));
    assert_eq!(a.client(2).owner_of(wg), Some(cg));
    a.weapons.set(w, AMMO, &Value::U32(27)).unwrap();
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(28)), "and nothing after");
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(27)));
}

#[test]
fn one_registered_after_its_owners_open_reaches_the_owners_client_only() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[0].0), false).unwrap();
    a.run(3);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(12)).unwrap();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::InitialOrOwner).unwrap();
    a.run(5);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(12)), "the owner's client");
    assert!(!a.client(1).has(wg), "the owner's initial bunch went to client 1 before it existed");
}
