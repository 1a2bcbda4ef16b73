//! Sublevels (UE's streaming levels): no channel opens to an actor whose sublevel the client has
//! not loaded; an unload closes them and the client's copies go; a load brings the actors back
//! with their current state — static actors bound to the freshly loaded copies — and tells the
//! sublevel's destroyed static actors again. The reference's random worlds with sublevels are in
//! `reference`.

use super::*;
use shadowrep::net::{DriverError, SublevelId};
use shadowrep::wire::open::CloseReason;

pub(super) const HALL: SublevelId = SublevelId(1);
pub(super) const LAMP: &str = "Hall/Lamp";

/// Client `c` streams `HALL` in or out: its game loads or unloads the hall's static actors,
/// then tells the server (UE's `ServerUpdateLevelVisibility`).
pub(super) fn stream(l: &mut Level, c: usize, statics: &[&str], load: bool) {
    let (conn, world) = &mut l.clients[c];
    for path in statics {
        if load {
            world.load_static_actor(path, l.class.0).unwrap();
        } else {
            assert!(world.unload_static_actor(path));
        }
    }
    l.driver.set_sublevel_loaded(*conn, HALL, load).unwrap();
}

/// A level where every actor is due every frame, with `clients` clients.
pub(super) fn level(clients: usize) -> Level {
    let mut l = Level::new(every_frame(), clients);
    always_due(&mut l);
    l
}

/// A static lamp placed in the hall near the viewers (not loaded by any client yet).
fn lamp_in_the_hall(l: &mut Level) -> (ActorId, NetGuid) {
    let lamp = l.store.spawn();
    l.move_to(lamp, [500.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, lamp, LAMP).unwrap();
    l.driver.set_sublevel(l.class, &l.store, lamp, HALL).unwrap();
    (lamp, guid)
}

#[test]
fn an_actor_in_a_sublevel_the_client_has_not_loaded_gets_no_channel_until_it_loads_it() {
    let mut l = level(2);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 7);
    l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
    stream(&mut l, 1, &[], true);
    l.run(3);
    // Relevant to both (UE asks relevancy of it all the same), opened only where it is loaded.
    assert!(l.decisions(0).relevant.contains(&guid));
    assert!(l.decisions(0).sends.iter().all(|s| s.guid != guid));
    assert!(!l.client(0).has(guid) && l.client(1).has(guid));
    assert_eq!(l.driver.channels(l.clients[0].0).unwrap().0, 0);
    l.store.set(id, HEALTH, &Value::U32(8)).unwrap();
    stream(&mut l, 0, &[], true);
    assert!(l.driver.sublevel_loaded(l.clients[0].0, HALL).unwrap());
    l.step();
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(8)), "opened with its current state");
}

#[test]
fn unloading_a_sublevel_closes_its_channels_and_the_clients_copies_go() {
    let mut l = level(2);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 7);
    let (_, outside) = l.spawn([600.0, 0.0, 0.0], 1);
    l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
    for c in 0..2 {
        stream(&mut l, c, &[], true);
    }
    l.run(2);
    assert!(l.client(0).has(guid) && l.client(1).has(guid));
    l.events(0);
    stream(&mut l, 0, &[], false);
    l.step();
    // The server's LevelUnloaded close took client 0's copy; the persistent level's actor and
    // client 1 are untouched.
    assert!(!l.client(0).has(guid), "the copy went with the close");
    assert_eq!(l.events(0), [ClientEvent::Destroyed { guid }]);
    assert!(l.client(0).has(outside) && l.client(1).has(guid));
    assert_eq!(l.driver.channels(l.clients[0].0).unwrap().0, 1, "only the persistent level's actor");
    // Changed while out; streamed in again, it comes back as it is now.
    l.store.set(id, HEALTH, &Value::U32(9)).unwrap();
    l.run(3);
    assert!(!l.client(0).has(guid), "no channel while its sublevel is out");
    stream(&mut l, 0, &[], true);
    l.step();
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(9)));
}

#[test]
fn a_level_unloaded_close_never_takes_a_level_actor_loaded_again() {
    // The close names the actor, never a path: one the client's game loaded again meanwhile
    // stays for the server's next open to bind.
    let mut l = level(1);
    let (_, guid) = lamp_in_the_hall(&mut l);
    stream(&mut l, 0, &[LAMP], true);
    l.step();
    assert!(l.client(0).has(guid));
    // A close that arrives after the game unloaded the lamp and loaded it again.
    stream(&mut l, 0, &[LAMP], false);
    l.clients[0].1.load_static_actor(LAMP, l.class.0).unwrap();
    let seq = l.client(0).highest_received().0 + 1;
    let late = crafted(seq, |w| shadowrep::wire::packet::write_close_for(w, guid, CloseReason::LevelUnloaded, None));
    l.clients[0].1.receive(&late).unwrap();
    assert!(l.clients[0].1.unload_static_actor(LAMP), "the loaded copy is still there");
}

#[test]
fn a_static_actor_streamed_out_and_in_binds_the_fresh_copy_with_its_current_state() {
    for quick in [false, true] {
        let mut l = level(1);
        let (lamp, guid) = lamp_in_the_hall(&mut l);
        l.store.set(lamp, HEALTH, &Value::U32(1)).unwrap();
        l.run(2);
        assert!(!l.client(0).has(guid), "not loaded: not bound");
        stream(&mut l, 0, &[LAMP], true);
        l.step();
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(1)));
        stream(&mut l, 0, &[LAMP], false);
        assert!(!l.client(0).has(guid), "the game unloaded its copy");
        l.store.set(lamp, HEALTH, &Value::U32(2)).unwrap();
        if !quick {
            l.run(3);
            assert_eq!(l.driver.channels(l.clients[0].0).unwrap().0, 0, "closed for the unload");
        }
        // (Quick: out and in again before the server's next tick — the channel closes and opens
        // again in one frame, so the fresh copy gets everything, not what changed since.)
        stream(&mut l, 0, &[LAMP], true);
        l.step();
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(2)), "quick: {quick}");
        l.store.set(lamp, HEALTH, &Value::U32(3)).unwrap();
        l.step();
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(3)), "quick: {quick}");
    }
}

#[test]
fn a_static_actor_destroyed_while_its_sublevel_is_out_is_destroyed_when_the_client_loads_it() {
    let mut l = level(1);
    let (lamp, guid) = lamp_in_the_hall(&mut l);
    stream(&mut l, 0, &[LAMP], true);
    l.step();
    stream(&mut l, 0, &[LAMP], false);
    l.step();
    l.store.despawn(lamp).unwrap();
    l.run(2);
    l.events(0);
    // Its close went while the hall was out (and found nothing); loading the hall again brings
    // the lamp's level copy back, which the close, told again, takes.
    stream(&mut l, 0, &[LAMP], true);
    l.step();
    assert_eq!(l.events(0), [ClientEvent::Destroyed { guid }]);
    assert!(l.clients[0].1.load_static_actor(LAMP, l.class.0).is_ok(), "nothing left at the path");
    l.run(2);
    assert!(l.events(0).is_empty(), "told once a load");
}

#[test]
fn a_sleeper_a_client_meets_when_it_loads_its_sublevel_wakes_with_its_current_state() {
    use shadowrep::net::Dormancy;
    let mut l = level(1);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 1);
    l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
    stream(&mut l, 0, &[], true);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(10);
    assert!(l.client(0).is_dormant(guid), "held dormant");
    assert_eq!(l.driver.asleep_actors(), 1);
    stream(&mut l, 0, &[], false);
    l.step();
    assert!(!l.client(0).has(guid), "the dormant copy went with the unload");
    l.store.set(id, HEALTH, &Value::U32(2)).unwrap();
    // (Past a few of the connection's looks for sleepers, one a second.)
    l.run(100);
    assert_eq!(l.driver.asleep_actors(), 1, "no client that has not loaded the hall wakes it");
    stream(&mut l, 0, &[], true);
    l.run(2);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(2)), "met at the load");
}

#[test]
fn sublevel_calls_are_checked() {
    let mut l = level(1);
    let conn = l.clients[0].0;
    assert_eq!(l.driver.set_sublevel_loaded(conn, SublevelId::PERSISTENT, false), Err(DriverError::PersistentSublevel));
    assert_eq!(l.driver.set_sublevel_loaded(conn, SublevelId::PERSISTENT, true), Ok(()));
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 1);
    l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
    assert_eq!(l.driver.sublevel(l.class, id), Some(HALL));
    l.step();
    // Placed once, before the tick that first replicates the actor.
    assert_eq!(l.driver.set_sublevel(l.class, &l.store, id, SublevelId(2)), Err(DriverError::SublevelFixed(guid)));
    assert_eq!(l.driver.sublevel(l.class, id), Some(HALL));
    // A sub-object is in its owner's sublevel.
    let (owner, owner_guid) = l.spawn([500.0, 0.0, 0.0], 1);
    l.driver.set_sublevel(l.class, &l.store, owner, HALL).unwrap();
    let sub = l.store.spawn();
    let sub_guid = l.driver.register_sub_object(l.class, &l.store, sub, owner_guid, Default::default()).unwrap();
    assert_eq!(l.driver.sublevel(l.class, sub), Some(HALL));
    assert_eq!(
        l.driver.set_sublevel(l.class, &l.store, sub, SublevelId::PERSISTENT),
        Err(DriverError::FollowsOwner { sub: sub_guid, owner: owner_guid })
    );
    l.driver.remove_connection(conn).unwrap();
    assert_eq!(l.driver.set_sublevel_loaded(conn, HALL, true), Err(DriverError::UnknownConnection(conn)));
    // Without the actor level there are no channels to gate.
    let mut store = ClassStore::new(thing());
    let mut plain = NetDriver::new(DriverConfig::default()).unwrap();
    let class = plain.register_class(&mut store).unwrap();
    let c = plain.add_connection(false);
    let id = store.spawn();
    assert_eq!(plain.set_sublevel(class, &store, id, HALL), Err(DriverError::ActorLevelOff));
    assert_eq!(plain.set_sublevel_loaded(c, HALL, true), Err(DriverError::ActorLevelOff));
}
