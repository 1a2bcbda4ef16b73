//! UE's `SetReplicates` (`NetDriver::set_replicates`): an actor switched off leaves the consider
//! list — not compared, not replicated, its channels neither updated nor closed for relevancy, so
//! each client keeps its copy as it was — and switched on again it is due at once: an open
//! channel catches up, a client without one gets it opened with its current state. Its
//! sub-objects go with it. The reference's random worlds with the switch:
//! `reference::with_actors_switched_off_and_on_…`.

use super::subobjects::{Arena, AMMO};
use super::*;
use shadowrep::net::{DriverError, SubObjectCondition};

/// Parent of the character's health.
const HEALTH: usize = 1;

#[test]
fn an_actor_switched_off_is_left_as_it_was_on_every_client_and_catches_up_when_switched_on() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.characters.set(ch, HEALTH, &Value::U32(100)).unwrap();
    a.run(3);
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    assert_eq!(a.driver.replicates(a.character, ch), Some(false));
    a.characters.set(ch, HEALTH, &Value::U32(90)).unwrap();
    let due = a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap().due_actors;
    assert_eq!(due, 0, "off the consider list: not even compared");
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(cg, HEALTH), Some(Value::U32(100)), "client {c}: as it was");
    }
    // It walks out of every viewer's reach for longer than the relevancy timeout: its channels
    // are not closed either (no frame considers it).
    a.characters.set(ch, LOCATION, &Value::Vector([500_000.0, 0.0, 0.0])).unwrap();
    a.run(200);
    for c in 0..2 {
        assert!(a.client(c).has(cg), "client {c}: its channel stays");
    }
    // Back near the viewers and switched on: due at once, the open channels send what changed.
    a.characters.set(ch, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(1);
    for c in 0..2 {
        assert_eq!(a.client(c).value(cg, HEALTH), Some(Value::U32(90)), "client {c}: caught up");
        assert_eq!(a.client(c).value(cg, LOCATION), Some(Value::Vector([100.0, 0.0, 0.0])));
    }
}

#[test]
fn switched_on_far_from_every_viewer_its_channels_close_for_relevancy() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.run(3);
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    a.characters.set(ch, LOCATION, &Value::Vector([500_000.0, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(a.client(0).has(cg));
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(3);
    for c in 0..2 {
        assert!(!a.client(c).has(cg), "client {c}: considered again, not relevant for long: closed");
    }
}

#[test]
fn an_actor_switched_off_before_its_first_tick_reaches_no_client_until_switched_on() {
    let mut a = Arena::new();
    let ch = a.characters.spawn();
    a.characters.set(ch, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    a.characters.set(ch, HEALTH, &Value::U32(7)).unwrap();
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    let cg = a.driver.guid_of(a.character, ch).expect("the call gave it its GUID");
    a.run(5);
    assert!(!a.client(0).has(cg) && !a.client(1).has(cg), "held back");
    a.characters.set(ch, HEALTH, &Value::U32(8)).unwrap();
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(1);
    for c in 0..2 {
        assert_eq!(a.client(c).value(cg, HEALTH), Some(Value::U32(8)), "client {c}: opened with its state");
    }
}

#[test]
fn its_sub_objects_go_with_it() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.run(3);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(30)));
    let err = a.driver.set_replicates(a.weapon, &a.weapons, w, false).unwrap_err();
    assert_eq!(err, DriverError::FollowsOwner { sub: wg, owner: cg });
    assert!(err.to_string().contains("replication"));
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    assert_eq!(a.driver.replicates(a.weapon, w), Some(false), "a sub-object's answer is its owner's");
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    // One registered while the owner is off waits with it.
    let late = a.weapons.spawn();
    a.weapons.set(late, AMMO, &Value::U32(5)).unwrap();
    let lg = a.driver.register_sub_object(a.weapon, &a.weapons, late, cg, SubObjectCondition::None).unwrap();
    a.run(5);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: frozen with its owner");
        assert!(!a.client(c).has(lg), "client {c}: the late one waits");
    }
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(2);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(29)), "client {c}");
        assert_eq!(a.client(c).value(lg, AMMO), Some(Value::U32(5)), "client {c}");
    }
}

#[test]
fn destroyed_while_switched_off_its_copies_go() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.run(3);
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    a.run(2);
    a.characters.despawn(ch).unwrap();
    a.run(3);
    for c in 0..2 {
        assert!(!a.client(c).has(cg), "client {c}: its close");
    }
}

#[test]
fn without_the_actor_level_it_is_refused() {
    let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    let mut store = ClassStore::new(layout);
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let id = store.spawn();
    assert_eq!(driver.set_replicates(class, &store, id, false), Err(DriverError::ActorLevelOff));
}

#[test]
fn a_tear_off_waits_while_it_is_switched_off() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.run(3);
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    a.characters.set(ch, HEALTH, &Value::U32(1)).unwrap();
    a.driver.tear_off(a.character, &a.characters, ch).unwrap();
    a.run(6);
    for c in 0..2 {
        assert!(a.client(c).has(cg) && !a.client(c).is_torn_off(cg), "client {c}: nothing went");
    }
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(3);
    for c in 0..2 {
        assert!(a.client(c).is_torn_off(cg), "client {c}: its last update, then the TornOff close");
        assert_eq!(a.client(c).value(cg, HEALTH), Some(Value::U32(1)));
    }
}

#[test]
fn switched_on_it_is_a_simulated_proxy_everywhere_until_the_game_says_otherwise() {
    let mut a = Arena::new();
    // A sub-object only an autonomous proxy's client gets.
    let (ch, _, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::AutonomousOnly);
    a.run(3);
    assert!(a.client(0).has(wg) && !a.client(1).has(wg));
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    a.run(2);
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(3);
    assert!(!a.client(0).has(wg), "UE's SetReplicates(true) makes it a simulated proxy: closed");
    a.driver.set_autonomous_proxy(a.character, &a.characters, ch, true).unwrap();
    a.run(3);
    assert!(a.client(0).has(wg), "autonomous again");
}

#[test]
fn a_dormant_actor_switched_on_is_flushed_and_sleeps_again() {
    use shadowrep::net::Dormancy;
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(10);
    assert!(a.driver.is_asleep(a.character, ch));
    a.driver.set_replicates(a.character, &a.characters, ch, false).unwrap();
    a.characters.set(ch, HEALTH, &Value::U32(55)).unwrap();
    a.run(3);
    a.driver.set_replicates(a.character, &a.characters, ch, true).unwrap();
    a.run(10);
    for c in 0..2 {
        assert_eq!(a.client(c).value(cg, HEALTH), Some(Value::U32(55)), "client {c}: the flush sent it");
    }
    assert!(a.driver.is_asleep(a.character, ch), "and it sleeps again");
}
