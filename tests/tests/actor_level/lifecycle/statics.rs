//! Static actors bound by path: the client's level copy bound and its channel kept when far, a
//! destroyed one destroyed on every client (later joiners included), an open of a path the client
//! did not load stepped over, registration errors, and a reference to one that never opened
//! travelling with its export until acknowledged.

use super::*;
use shadowrep::net::DriverError;
use shadowrep::wire::open::MAX_PATH_BYTES;

#[test]
fn a_static_actor_binds_the_clients_level_copy_and_keeps_its_channel_when_far() {
    let (mut l, id, guid) = with_static_door([500.0, 0.0, 0.0]);
    assert!(guid.is_static());
    assert_eq!(l.client(0).actor_count(), 0, "loaded, not bound yet");
    l.run(2);
    assert!(l.events(0).contains(&ClientEvent::Bound { guid, class: l.class.0 }));
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(40)));
    assert_eq!(l.client(0).spawn_info(guid), None, "a static actor is not spawned");
    // Far away for longer than the relevant timeout: a startup actor's channel stays.
    l.move_to(id, [900_000.0, 0.0, 0.0]);
    l.run(200);
    assert!(l.client(0).has(guid));
    assert!(!l.events(0).iter().any(|e| matches!(e, ClientEvent::Destroyed { .. })));
    assert!(l.driver.channel_info(l.clients[0].0).unwrap().iter().any(|c| c.guid == guid));
}

#[test]
fn a_destroyed_static_actor_is_destroyed_on_every_client_and_on_those_that_join_later() {
    let (mut l, id, guid) = with_static_door([900_000.0, 0.0, 0.0]);
    l.run(2);
    assert!(!l.client(0).has(guid), "never relevant: not bound");
    l.store.despawn(id).unwrap();
    l.run(2);
    // Client 0 never bound the GUID: the close's path found its level copy.
    assert_eq!(l.events(0), vec![ClientEvent::Destroyed { guid }]);
    let c = l.add_client();
    l.clients[c].1.load_static_actor(DOOR, l.class.0).unwrap();
    let before = l.client(c).actor(guid).is_none();
    l.run(2);
    assert!(before);
    assert_eq!(l.events(c), vec![ClientEvent::Destroyed { guid }]);
    // The path is free again on the client and nothing is left of the copy.
    assert!(l.clients[c].1.load_static_actor(DOOR, l.class.0).is_ok());
}

#[test]
fn a_static_open_the_client_did_not_load_is_stepped_over_and_counted() {
    let mut l = Level::new(every_frame(), 1);
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    let (other, other_guid) = l.spawn([120.0, 0.0, 0.0], 1);
    always_due(&mut l);
    l.run(3);
    assert!(!l.client(0).has(guid));
    assert!(l.client(0).stats().unknown_statics > 0);
    // The server believes the open acknowledged: its updates are plain bunches, which the client
    // reads with the class the refused open named and drops — neither refusing the packets they
    // share with other actors nor asking for the actor again and again.
    for v in 10..15u32 {
        l.store.set(id, HEALTH, &Value::U32(v)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(v)).unwrap();
        l.step();
        assert_eq!(l.client(0).value(other_guid, HEALTH), Some(Value::U32(v)), "frame {v}: {:?}", l.client(0).stats());
    }
    let stats = l.client(0).stats();
    assert_eq!((stats.refused, stats.reopens_requested), (0, 0), "{stats:?}");
    assert!(stats.bunches_skipped >= 5, "{stats:?}");
    assert!(!l.client(0).has(guid));
    // Loaded with the wrong class id: refused by the client, not bound.
    assert!(l.clients[0].1.load_static_actor(DOOR, 7).is_err());
}

#[test]
fn static_registration_errors_are_clear() {
    let mut l = Level::new(every_frame(), 0);
    let (id, _) = l.spawn([0.0; 3], 1);
    assert_eq!(l.driver.register_static_actor(l.class, &l.store, id, DOOR), Err(DriverError::AlreadyReplicated(id)));
    let a = l.store.spawn();
    let b = l.store.spawn();
    assert!(matches!(l.driver.register_static_actor(l.class, &l.store, a, ""), Err(DriverError::BadStaticPath(_))));
    let long = "p".repeat(MAX_PATH_BYTES + 1);
    assert!(matches!(l.driver.register_static_actor(l.class, &l.store, a, &long), Err(DriverError::BadStaticPath(_))));
    let g = l.driver.register_static_actor(l.class, &l.store, a, DOOR).unwrap();
    assert!(matches!(l.driver.register_static_actor(l.class, &l.store, b, DOOR), Err(DriverError::BadStaticPath(_))));
    let h = l.driver.register_static_actor(l.class, &l.store, b, "/Game/Other").unwrap();
    assert!(g.is_static() && h.is_static() && g != h && g.0 >= 3);
}

#[test]
fn a_reference_to_a_static_actor_that_never_opened_travels_with_its_export_until_acknowledged() {
    use rand::{Rng, SeedableRng};
    use shadowrep::net::Dormancy;
    use shadowrep::value::ObjectRef;
    let key = Arc::new(
        ClassBuilder::new("Key")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Opens", PropType::Object))
            .property(PropertyDecl::new("Spares", PropType::array(PropType::Object)))
            .build()
            .unwrap(),
    );
    let door = thing();
    let mut doors = ClassStore::new(door.clone());
    let mut keys = ClassStore::new(key.clone());
    let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    let mut driver = NetDriver::new(cfg).unwrap();
    let door_class = driver.register_class(&mut doors).unwrap();
    let key_class = driver.register_class(&mut keys).unwrap();
    driver.set_location_property(door_class, LOCATION).unwrap();
    driver.set_location_property(key_class, 0).unwrap();
    let conn = driver.add_connection(false);
    driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
    let mut client = ClientWorld::new(&[door, key], &driver.checksums()).unwrap();
    // Two doors placed in the level, far away and asleep: they never open on this client.
    let mut door_guids = Vec::new();
    for (i, path) in ["/Game/Map.Door_A", "/Game/Map.Door_B"].into_iter().enumerate() {
        let d = doors.spawn();
        doors.set(d, LOCATION, &Value::Vector([900_000.0, i as f32, 0.0])).unwrap();
        door_guids.push(driver.register_static_actor(door_class, &doors, d, path).unwrap());
        driver.set_net_dormancy(door_class, &doors, d, Dormancy::Initial).unwrap();
        client.load_static_actor(path, door_class.0).unwrap();
    }
    let k = keys.spawn();
    keys.set(k, 1, &Value::Object(ObjectRef(door_guids[0].0))).unwrap();
    keys.set(k, 2, &Value::Array(vec![Value::Object(ObjectRef(door_guids[1].0))])).unwrap();
    let key_guid = driver.assign_guid(key_class, &keys, k).unwrap();
    // Half the packets are lost for a while: the exports go again until one is acknowledged.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for frame in 0..60 {
        driver.tick(&mut [&mut doors, &mut keys]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            if frame >= 30 || rng.random_bool(0.5) {
                client.receive(&p).unwrap();
            }
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    assert_eq!(client.value(key_guid, 1), Some(Value::Object(ObjectRef(door_guids[0].0))));
    let spares = client.value(key_guid, 2);
    assert_eq!(spares, Some(Value::Array(vec![Value::Object(ObjectRef(door_guids[1].0))])));
    assert_eq!(client.unmapped_count(), 0);
    for &g in &door_guids {
        assert!(client.has(g), "bound by its export");
        assert!(client.take_events().iter().all(|e| !matches!(e, ClientEvent::Spawned { guid, .. } if *guid == g)));
    }
    assert!(driver.channel_info(conn).unwrap().iter().all(|c| !door_guids.contains(&c.guid)), "never opened");
}
