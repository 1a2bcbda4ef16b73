//! Opens and closes as UE does them: spawn info, static actors bound by path (and destroyed on
//! clients that join later). Tear-off is in `tearoff`.

use super::*;
use shadowrep::client::ReceiveError;
use shadowrep::net::DriverError;
use shadowrep::wire::open::{OpenHeader, OpenKind, SpawnInfo, MAX_PATH_BYTES};
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch, write_bunch_after};
use shadowrep::wire::{BitWriter, WireError};

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
        assert!((expected.rotation[1] - 270.0).abs() < 0.01 && expected.location[0] == 120.25);
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

const DOOR: &str = "/Game/Maps/Arena.Arena:PersistentLevel.Door_7";

/// A level with one static thing at `at`, loaded by client 0 as well.
fn with_static_door(at: [f32; 3]) -> (Level, ActorId, NetGuid) {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let id = l.store.spawn();
    l.move_to(id, at);
    l.store.set(id, HEALTH, &Value::U32(40)).unwrap();
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    (l, id, guid)
}

/// `frames` frames for client 0 over a perfect link, the door's health 100, 101, … (packets the
/// client refuses are dropped, as a lost packet).
fn door_changing(l: &mut Level, door: ActorId, frames: u32) {
    for frame in 0..frames {
        l.store.set(door, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.driver.tick(&mut [&mut l.store]).unwrap();
        let (conn, world) = &mut l.clients[0];
        for p in l.driver.take_packets(*conn).unwrap() {
            let _ = world.receive(&p);
        }
        l.driver.receive_feedback(*conn, &world.feedback()).unwrap();
    }
}

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
fn a_forged_close_of_a_static_actor_does_not_wedge_the_connection() {
    // The forged close destroys the client's level copy; the server's next plain update of the
    // door then finds no actor, so the client refuses that packet and asks for the door again —
    // a static GUID in its feedback's reopen list, which the server must take (it had refused
    // the whole feedback, every time: nothing was ever acknowledged again). The server's open
    // of the door by its path then brings a fresh copy back (until session 44 the client had
    // forgotten the path with the copy and stepped over every such open: the door stayed gone,
    // found by `fuzz/`'s `client_heal`).
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    let (other, g) = l.spawn([600.0, 0.0, 0.0], 1);
    l.run(3);
    assert!(l.client(0).has(guid) && l.client(0).has(g));
    let seq = l.client(0).highest_received().0 + 1;
    let forged = crafted(seq, |w| {
        shadowrep::wire::packet::write_close_for(w, guid, shadowrep::wire::open::CloseReason::Destroyed, Some(DOOR))
    });
    l.clients[0].1.receive(&forged).unwrap();
    assert!(!l.client(0).has(guid), "the forged close took the level copy");
    let conn = l.clients[0].0;
    for frame in 0..120u32 {
        l.store.set(door, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(100 + frame)).unwrap();
        // A step that lets the client refuse a packet (the one whose door update it cannot read).
        l.driver.tick(&mut [&mut l.store]).unwrap();
        let (conn, world) = &mut l.clients[0];
        for p in l.driver.take_packets(*conn).unwrap() {
            let _ = world.receive(&p);
        }
        l.driver.receive_feedback(*conn, &world.feedback()).expect("every feedback decodes");
    }
    assert_eq!(l.client(0).value(g, HEALTH), Some(Value::U32(219)), "the connection goes on");
    // The server opened the door again for the client's request: the client knew the path it
    // destroyed (a server never opens a static actor it closed), so the door came back, current.
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(219)), "the door is back");
    assert_eq!(l.client(0).stats().statics_restored, 1);
    let stats = l.driver.connection_stats(conn).unwrap();
    assert_eq!(stats.feedback_malformed, 0, "every feedback decoded");
    assert!(l.driver.in_flight(conn) < 16, "acknowledged as it goes");
}

#[test]
fn a_forged_open_that_binds_a_static_path_to_another_guid_is_undone_by_the_servers_open() {
    // A forged open of the door's path under another static GUID took the path: the server's
    // updates of the door then named a GUID the client no longer had, its reopen by the path
    // was stepped over as "not loaded" and the door stayed stale for good (found by `fuzz/`'s
    // `client_heal`). A server gives a path one GUID, so the newest open of a path binds it.
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    // Before the server's own open: the forged packet takes the number the server's first
    // packet comes with next (which then replaces it).
    let forged_guid = NetGuid(guid.0 + 1_000);
    assert!(forged_guid.is_static());
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static(DOOR.into()), autonomous: false };
        write_bunch_after(w, NetGuid(0), forged_guid, Some(&open), &BitWriter::new());
    });
    l.clients[0].1.receive(&forged).unwrap();
    assert!(l.client(0).has(forged_guid), "the forger took the path");
    door_changing(&mut l, door, 60);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(159)), "the door is the server's again");
    assert!(!l.client(0).has(forged_guid));
    assert!(l.client(0).stats().statics_rebound >= 1, "{:?}", l.client(0).stats());
}

#[test]
fn a_forged_open_of_an_unloaded_path_under_a_bound_static_guid_is_healed_by_the_servers_open() {
    // A forged open of a path the client did not load, under the GUID of its bound door: the
    // client believes the newest open and reads the GUID's updates past as an unloaded static
    // actor's — and the door stayed stale for good, no reopen asked (found by `fuzz/`'s
    // `client_heal`, session 51). It now asks for the door again: the server's open, by the
    // door's path, takes the GUID back.
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    l.run(2);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(40)));
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static("Level.Nowhere".into()), autonomous: false };
        write_bunch_after(w, NetGuid(0), guid, Some(&open), &BitWriter::new());
    });
    l.clients[0].1.receive(&forged).unwrap();
    door_changing(&mut l, door, 40);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(139)), "the door is the server's again");
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

/// Forged opens of static actors by paths the client never loaded fill its table of such actors
/// (whose plain updates it reads past with the class their open named): the server's own
/// unloaded static actor, opened after them, must still be read past — not make every packet
/// carrying its updates refused, with the other actors' updates in it.
#[test]
fn forged_unloaded_static_opens_never_get_the_servers_packets_refused() {
    let mut l = Level::new(every_frame(), 1);
    let (other, other_guid) = l.spawn([120.0, 0.0, 0.0], 1);
    always_due(&mut l);
    l.run(3);
    // Before each of 12 frames, a forged packet numbered as the server's next one (which then
    // replaces it) opens 400 static actors by paths the client did not load: 4800 in all.
    for f in 0..12u64 {
        let seq = l.client(0).highest_received().0 + 1;
        let class = l.class.0;
        let p = crafted(seq, |w| {
            let mut prev = NetGuid(0);
            for i in f * 400..(f + 1) * 400 {
                let g = NetGuid(1_000_001 + 2 * i);
                let open =
                    OpenHeader { class, kind: OpenKind::Static(format!("/Forged/{i}").into()), autonomous: false };
                write_bunch_after(w, prev, g, Some(&open), &BitWriter::new());
                prev = g;
            }
        });
        assert!(l.clients[0].1.receive(&p).is_ok());
        // The server sends a packet every frame (something changed): its own takes the number.
        l.store.set(other, HEALTH, &Value::U32(2 + f as u32)).unwrap();
        l.step();
    }
    assert_eq!(l.client(0).stats().replaced, 12, "{:?}", l.client(0).stats());
    assert!(l.client(0).stats().unknown_statics >= 4800);
    // The server's own static actor, at a path this client did not load either.
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    let before = l.client(0).stats();
    let mut late = Vec::new();
    for v in 10..40u32 {
        l.store.set(id, HEALTH, &Value::U32(v)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(v)).unwrap();
        l.step_tolerant();
        if l.client(0).value(other_guid, HEALTH) != Some(Value::U32(v)) {
            late.push(v);
        }
    }
    let stats = l.client(0).stats();
    assert_eq!(
        (stats.refused, stats.reopens_requested, late),
        (before.refused, before.reopens_requested, vec![]),
        "the server's packets refused, the other actor's updates late in those frames: {stats:?}"
    );
    assert!(!l.client(0).has(guid));
    assert_eq!(stats.ignored_evicted, 4800 + 1 - 4096, "the oldest forged ones made room: {stats:?}");
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

/// One hand-made packet with one open of `guid`.
fn open_packet(guid: NetGuid, kind: OpenKind) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, shadowrep::ids::Seq(1));
    write_bunch(&mut w, guid, Some(&OpenHeader { class: 0, kind, autonomous: false }), &BitWriter::new());
    end_packet(&mut w);
    w.into_bytes()
}

#[test]
fn an_open_that_contradicts_its_guids_parity_is_refused() {
    let l = Level::new(every_frame(), 0);
    let mut client = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    client.load_static_actor(DOOR, 0).unwrap();
    let refused = |c: &mut ClientWorld, p: &[u8], why: &'static str| {
        assert_eq!(c.receive(p), Err(ReceiveError::Wire(WireError::Invalid(why))));
    };
    refused(
        &mut client,
        &open_packet(NetGuid(5), OpenKind::Spawn(SpawnInfo::default())),
        "a static GUID opened with spawn info",
    );
    refused(&mut client, &open_packet(NetGuid(4), OpenKind::Static(DOOR.into())), "a dynamic GUID opened by path");
    assert_eq!(client.actor_count(), 0);
    assert!(client.receive(&open_packet(NetGuid(5), OpenKind::Static(DOOR.into()))).is_ok());
    assert!(client.has(NetGuid(5)));
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

fn open(w: &mut BitWriter, guid: u64, kind: OpenKind) {
    write_bunch(w, NetGuid(guid), Some(&OpenHeader { class: 0, kind, autonomous: false }), &BitWriter::new());
}

#[test]
fn hostile_sub_object_chains_export_conflicts_and_foreign_close_paths_do_no_harm() {
    use shadowrep::wire::open::{write_export_body, CloseReason, EXPORT_GUID};
    use shadowrep::wire::packet::write_close_for;
    let l = Level::new(every_frame(), 0);
    let mut c = ClientWorld::new(std::slice::from_ref(&l.layout), &l.driver.checksums()).unwrap();
    // A chain: 2 is an actor, 4 its sub-object, 6 claims 4 as its owner, and so on for 2 000
    // links — only the first level is created, and destroying the root is no deep recursion.
    let spawn = || OpenKind::Spawn(SpawnInfo::default());
    c.receive(&crafted(1, |w| open(w, 2, spawn()))).unwrap();
    for (i, g) in (4..4004u64).step_by(2).enumerate() {
        c.receive(&crafted(2 + i as u32, |w| open(w, g, OpenKind::SubObject { owner: NetGuid(g - 2) }))).unwrap();
    }
    assert!(c.has(NetGuid(4)) && !c.has(NetGuid(6)), "no sub-object of a sub-object");
    assert_eq!(c.sub_objects(NetGuid(2)), &[NetGuid(4)]);
    // A sub-object opened under a static GUID or the export GUID is stepped over.
    c.receive(&crafted(2002, |w| open(w, 5000, OpenKind::SubObject { owner: NetGuid(3) }))).unwrap();
    c.receive(&crafted(2003, |w| open(w, 5002, OpenKind::SubObject { owner: EXPORT_GUID }))).unwrap();
    assert!(!c.has(NetGuid(5000)) && !c.has(NetGuid(5002)));
    c.receive(&crafted(2004, |w| write_close_for(w, NetGuid(2), CloseReason::Destroyed, None))).unwrap();
    assert!(!c.has(NetGuid(2)) && !c.has(NetGuid(4)), "the sub-object went with its owner");

    // One level copy is never bound to two GUIDs: an export and an open of the same path in one
    // packet bind it once — the open, the newer (a server gives a path one GUID, so one of the
    // two is forged; since session 44 the newest open of a path binds it, which heals a forged
    // binding once the server's open comes again).
    let other = "/Game/Map.Lamp";
    c.load_static_actor(DOOR, 0).unwrap();
    let lamp = c.load_static_actor(other, 0).unwrap();
    let export = |w: &mut BitWriter| {
        let mut body = BitWriter::new();
        write_export_body(&mut body, NetGuid(7), DOOR);
        write_bunch(w, EXPORT_GUID, None, &body);
    };
    c.receive(&crafted(2005, |w| {
        export(w);
        let door = OpenHeader { class: 0, kind: OpenKind::Static(DOOR.into()), autonomous: false };
        shadowrep::wire::packet::write_bunch_after(w, EXPORT_GUID, NetGuid(5), Some(&door), &BitWriter::new());
    }))
    .unwrap();
    assert!(c.has(NetGuid(5)) && !c.has(NetGuid(7)), "bound once, by the open after the export");
    // A close naming someone else's path takes nothing; one naming an unbound path takes it.
    c.receive(&crafted(2006, |w| write_close_for(w, NetGuid(9), CloseReason::Destroyed, Some(DOOR)))).unwrap();
    assert!(c.has(NetGuid(5)), "the door is bound to 5, not 9");
    let events = c.take_events();
    c.receive(&crafted(2007, |w| write_close_for(w, NetGuid(11), CloseReason::Destroyed, Some(other)))).unwrap();
    assert!(c.take_events().contains(&ClientEvent::Destroyed { guid: NetGuid(11) }), "{events:?}");
    assert!(c.load_static_actor(other, 0).is_ok(), "the lamp's path is free again");
    let _ = lamp;
    // Destroying the bound door frees its path too.
    c.receive(&crafted(2008, |w| write_close_for(w, NetGuid(5), CloseReason::Destroyed, Some(DOOR)))).unwrap();
    assert!(!c.has(NetGuid(5)));
    assert!(c.load_static_actor(DOOR, 0).is_ok());
}

#[test]
fn references_waiting_for_unknown_objects_stop_at_max_unmapped_and_are_counted() {
    use shadowrep::client::MAX_UNMAPPED;
    use shadowrep::schema::LeafKind;
    use shadowrep::wire::bunch::{end_array, write_array_head};
    let layout = Arc::new(
        ClassBuilder::new("Keyring")
            .property(PropertyDecl::new("Keys", PropType::Array { element: Box::new(PropType::Object), max_len: 2048 }))
            .build()
            .unwrap(),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).unwrap();
    let mut seq = 1;
    let mut next_static = 3u64;
    // Actors of 2048 references each, every one to a static GUID nobody registered, in bunches
    // of 1000 elements (a packet holds them under the largest MTU).
    let actors = MAX_UNMAPPED / 2048 + 2;
    for a in 0..actors as u64 {
        let guid = NetGuid(2 + 2 * a);
        for part in 0..3usize {
            let elements = part * 1000..((part + 1) * 1000).min(2048);
            let mut body = BitWriter::new();
            write_array_head(&mut body, shadowrep::wire::bunch::handle_bits(&layout), 1, 2048);
            for e in elements {
                body.write_packed(e as u64 + 1);
                shadowrep::wire::write_leaf(&mut body, LeafKind::Object, &next_static.to_le_bytes());
                next_static += 2;
            }
            end_array(&mut body);
            let open = (part == 0).then(|| OpenHeader::spawn(0));
            let packet = crafted(seq, |w| write_bunch(w, guid, open.as_ref(), &body));
            seq += 1;
            assert!(packet.len() <= shadowrep::wire::packet::MAX_MTU);
            c.receive(&packet).unwrap();
        }
    }
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED, "remembered up to the cap");
    let dropped = (actors * 2048 - MAX_UNMAPPED) as u64;
    assert_eq!(c.stats().unmapped_dropped, dropped, "the rest counted");
    // Every reference reads as null until its object is known.
    let last = NetGuid(2 + 2 * (actors as u64 - 1));
    assert!(
        matches!(c.value(last, 0), Some(Value::Array(v)) if v.iter().all(|x| *x == Value::Object(shadowrep::value::ObjectRef(0))))
    );
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

/// A forged packet numbered as the server's next one opens the static actor's GUID by a path the
/// client did not load (so the client steps over it and ignores the GUID's updates), and the
/// server's packet with that number — carrying the real open — arrives after it, late: the
/// client acknowledged its number for the forged one, so the server counts the open delivered
/// and its updates were read past for good. A late packet whose number came with other bytes
/// asks for every actor it names, static ones the client never bound included (found by
/// `fuzz/`'s `client_heal`).
#[test]
fn a_static_open_dropped_late_behind_a_forged_one_is_asked_for_again() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (other, _) = l.spawn([120.0, 0.0, 0.0], 1);
    l.run(3);
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    // The forged packet takes the server's next number; a second one the number after, so the
    // server's packet with the first arrives late.
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static("/Forged/Door".into()), autonomous: false };
        write_bunch(w, guid, Some(&open), &BitWriter::new());
    });
    assert!(l.clients[0].1.receive(&forged).is_ok());
    assert!(l.clients[0].1.receive(&crafted(seq + 1, |_| {})).is_ok());
    let mut healed = None;
    for v in 10..30u32 {
        l.store.set(id, HEALTH, &Value::U32(v)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(v)).unwrap();
        l.step_tolerant();
        if l.client(0).value(guid, HEALTH) == Some(Value::U32(v)) {
            healed = Some(v);
            break;
        }
    }
    let stats = l.client(0).stats();
    let healed = healed.unwrap_or_else(|| panic!("the door never bound: {stats:?}"));
    assert!(healed <= 16, "bound in {} frames: {stats:?}", healed - 9);
    assert_eq!(stats.late_conflicts, 1, "{stats:?}");
}
