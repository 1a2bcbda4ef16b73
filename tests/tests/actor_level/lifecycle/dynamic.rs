//! Dynamic actors' opens and closes: the spawn info an open carries (and spawn properties of the
//! wrong kind refused), a torn-off actor left to the client, and a new actor in the slot of one
//! gone the same frame getting a channel of its own (or no row when it is not relevant).

use super::*;
use shadowrep::net::DriverError;
use shadowrep::wire::open::SpawnInfo;

/// A class whose spawn info reads a rotation and a velocity property.
fn mover() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Mover")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Rotation", PropType::Rotator))
            .property(PropertyDecl::new("Velocity", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Health", PropType::U32))
            .build()
            .expect("valid layout"),
    )
}

#[test]
fn a_dynamic_actor_is_created_from_the_spawn_info_its_open_carries() {
    for actor_level in [false, true] {
        let layout = mover();
        let mut store = ClassStore::new(layout.clone());
        let level = actor_level.then(ActorLevelConfig::default);
        let mut driver = NetDriver::new(DriverConfig { actor_level: level, ..DriverConfig::default() }).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        driver.set_location_property(class, 0).unwrap();
        driver.set_spawn_properties(class, Some(1), None, Some(2)).unwrap();
        let conn = driver.add_connection(false);
        if actor_level {
            driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
        }
        let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
        let id = store.spawn();
        store.set(id, 0, &Value::Vector([120.25, -40.5, 7.0])).unwrap();
        store.set(id, 1, &Value::Rotator([10.0, 270.0, 0.0])).unwrap();
        store.set(id, 2, &Value::Vector([600.0, 0.0, -3.0])).unwrap();
        for _ in 0..2 {
            driver.tick(&mut [&mut store]).unwrap();
            for p in driver.take_packets(conn).unwrap() {
                client.receive(&p).unwrap();
            }
            driver.receive_feedback(conn, &client.feedback()).unwrap();
        }
        let guid = driver.guid_of(class, id).unwrap();
        let expected = SpawnInfo {
            location: [120.25, -40.5, 7.0],
            rotation: [10.0, 270.0, 0.0],
            scale: [1.0; 3],
            velocity: [600.0, 0.0, -3.0],
        }
        .quantized();
        assert_eq!(client.spawn_info(guid), Some(expected), "actor level {actor_level}");
        // UE's spawn location has one decimal.
        assert!((expected.rotation[1] - 270.0).abs() < 0.01 && (expected.location[0] - 120.3).abs() < 0.051);
    }
}

#[test]
fn spawn_properties_of_the_wrong_kind_are_refused() {
    let layout = mover();
    let mut store = ClassStore::new(layout);
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    assert!(matches!(
        driver.set_spawn_properties(class, Some(0), None, None),
        Err(DriverError::NotASpawnProperty { parent: 0, what: "rotator", .. })
    ));
    assert!(matches!(
        driver.set_spawn_properties(class, None, Some(3), None),
        Err(DriverError::NotASpawnProperty { parent: 3, what: "vector", .. })
    ));
    assert_eq!(driver.set_spawn_properties(class, None, None, Some(9)), Err(DriverError::NoSuchParent(9)));
}

#[test]
fn a_torn_off_actor_stays_on_the_client_and_is_never_updated_again() {
    for actor_level in [false, true] {
        let mut l = Level::new(every_frame(), 1);
        if !actor_level {
            // The same world without the actor level.
            let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
            let mut store = ClassStore::new(l.layout.clone());
            l.class = driver.register_class(&mut store).unwrap();
            let conn = driver.add_connection(false);
            let world = ClientWorld::new(std::slice::from_ref(&l.layout), &driver.checksums()).unwrap();
            l.driver = driver;
            l.store = store;
            l.clients = vec![(conn, world)];
        }
        if actor_level {
            always_due(&mut l);
        }
        let (id, guid) = l.spawn([100.0, 0.0, 0.0], 5);
        l.run(2);
        l.store.set(id, HEALTH, &Value::U32(6)).unwrap();
        l.run(2);
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(6)));
        l.events(0);
        // UE's "health 0, then TearOff()": the change made with the tear-off goes out first.
        l.store.set(id, HEALTH, &Value::U32(7)).unwrap();
        l.driver.tear_off(l.class, &l.store, id).unwrap();
        l.driver.tear_off(l.class, &l.store, id).unwrap();
        l.run(1);
        l.store.set(id, HEALTH, &Value::U32(8)).unwrap();
        l.run(3);
        let events = l.events(0);
        assert_eq!(events.last(), Some(&ClientEvent::TornOff { guid }), "actor level {actor_level}");
        assert_eq!(events.iter().filter(|e| matches!(e, ClientEvent::TornOff { .. })).count(), 1);
        assert!(l.client(0).is_torn_off(guid));
        assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(7)), "the last update, nothing after");
        // Destroyed on the server: the client's copy is its own.
        l.store.despawn(id).unwrap();
        l.run(3);
        assert!(l.client(0).has(guid));
        assert!(l.events(0).is_empty());
        assert!(l.clients[0].1.forget(guid));
        assert!(!l.client(0).has(guid));
        assert!(!l.clients[0].1.forget(guid));
    }
}

/// A new actor in the slot of one destroyed the same frame gets a channel of its own: the late
/// acknowledgement of the old channel's open (its packet delivered only after the new open was
/// sent; the entry names the old GUID, and the row's channel epoch differs) acknowledges nothing
/// of the new one, the client gets the new actor's state, and nothing of the old channel (its
/// bunch still in flight when the slot changed hands) keeps the new one from settling and going
/// dormant.
#[test]
fn a_new_actor_in_a_gone_actors_slot_gets_a_channel_of_its_own() {
    let mut level = Level::new(every_frame(), 1);
    always_due(&mut level);
    let (old, old_guid) = level.spawn([100.0, 0.0, 0.0], 7);
    let conn = level.clients[0].0;
    level.driver.tick(&mut [&mut level.store]).unwrap();
    let first = level.driver.take_packets(conn).unwrap();
    assert!(!first.is_empty(), "the old actor's open goes out");
    level.store.despawn(old).unwrap();
    let (new, new_guid) = level.spawn([200.0, 0.0, 0.0], 9);
    // It sleeps once its channel settles: only the new channel's own packets may hold it.
    level.driver.set_net_dormancy(level.class, &level.store, new, shadowrep::net::Dormancy::DormantAll).unwrap();
    assert_eq!(new.index, old.index, "the store reuses the slot");
    assert_ne!(new_guid, old_guid);
    level.driver.tick(&mut [&mut level.store]).unwrap();
    let second = level.driver.take_packets(conn).unwrap();
    assert!(!second.is_empty(), "the new actor's open goes out");
    // Only the first frame's packets arrive (the second's are still on their way).
    let world = &mut level.clients[0].1;
    for p in &first {
        world.receive(p).unwrap();
    }
    level.driver.receive_feedback(conn, &world.feedback()).unwrap();
    let channels = level.driver.channel_info(conn).unwrap();
    let row = channels.iter().find(|c| c.guid == new_guid).expect("the new actor has a channel");
    assert!(!row.open_acked, "the old channel's packet acknowledged the new channel's open");
    assert!(channels.iter().all(|c| c.guid != old_guid), "the old actor's channel is gone");
    // Its own packets acknowledge it.
    for p in &second {
        world.receive(p).unwrap();
    }
    level.driver.receive_feedback(conn, &world.feedback()).unwrap();
    let channels = level.driver.channel_info(conn).unwrap();
    assert!(channels.iter().any(|c| c.guid == new_guid && c.open_acked));
    // The client destroyed the old actor and holds the new one with its own state.
    level.step();
    let world = level.client(0);
    assert!(!world.has(old_guid) && world.has(new_guid));
    assert_eq!(world.value(new_guid, HEALTH), Some(Value::U32(9)));
    assert_eq!(world.value(new_guid, LOCATION), Some(Value::Vector([200.0, 0.0, 0.0])));
    level.run(4);
    assert!(level.client(0).is_dormant(new_guid), "the new actor's channel settled and went dormant");
}

/// The same with the new actor out of sight: the gone actor's row is dropped by the frame (no
/// channel, no row left for the slot), and the client destroys the old actor.
#[test]
fn a_gone_actors_row_leaves_no_row_when_the_slot_s_new_actor_is_not_relevant() {
    let mut level = Level::new(every_frame(), 1);
    always_due(&mut level);
    let (old, old_guid) = level.spawn([100.0, 0.0, 0.0], 7);
    let conn = level.clients[0].0;
    level.run(2);
    assert!(level.client(0).has(old_guid));
    level.store.despawn(old).unwrap();
    let (new, new_guid) = level.spawn([90_000.0, 0.0, 0.0], 9); // beyond the cull distance
    assert_eq!(new.index, old.index, "the store reuses the slot");
    level.step();
    assert!(level.driver.channel_info(conn).unwrap().is_empty(), "no channel for either actor");
    assert_eq!(level.driver.channels(conn).unwrap().0, 0, "no row is left behind");
    assert!(level.decisions(0).sends.is_empty(), "nothing is sent for either actor");
    level.run(2);
    assert!(!level.client(0).has(old_guid) && !level.client(0).has(new_guid));
}
