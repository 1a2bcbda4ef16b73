//! An engine programmer's plausible mistakes with the public API get a clear error and change
//! nothing (findings of session 44's misuse review: each of these was accepted, and then
//! replication silently stopped, a call panicked, or memory grew).

use shadowrep::client::ClientWorld;
use shadowrep::compare::{CompareConfig, MAX_UNMARKED_CHANGES};
use shadowrep::ids::{ClassId, ConnectionId};
use shadowrep::net::{ActorLevelConfig, DriverConfig, DriverError, NetDriver, NetSettings, SubObjectCondition, Viewer};
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl, VectorQuant};
use shadowrep::session::{ServerConfig, ServerConfigError, SessionServer};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::sync::Arc;

fn layout() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Thing")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Secret", PropType::U16).condition(Condition::OwnerOnly))
            .build()
            .expect("valid layout"),
    )
}

fn level(cfg: ActorLevelConfig) -> Result<NetDriver, DriverError> {
    NetDriver::new(DriverConfig { actor_level: Some(cfg), ..DriverConfig::default() })
}

/// A driver (with the actor level or without), its class and store, one actor with a GUID.
fn world(actor_level: bool) -> (NetDriver, ClassStore, ClassId, ActorId) {
    let mut store = ClassStore::new(layout());
    let mut driver = if actor_level {
        level(ActorLevelConfig::default()).unwrap()
    } else {
        NetDriver::new(DriverConfig::default()).unwrap()
    };
    let class = driver.register_class(&mut store).unwrap();
    let id = store.spawn();
    driver.assign_guid(class, &store, id).unwrap();
    (driver, store, class, id)
}

#[test]
fn a_ready_timeout_shorter_than_a_tick_is_refused() {
    // Heard from between two ticks, a client was heard a tick ago at the next one: with a tick
    // longer than the ready timeout no connection was ever ready and nothing replicated.
    let refused = |cfg: ActorLevelConfig| match level(cfg) {
        Err(DriverError::ActorLevel(why)) => why,
        other => panic!("{cfg:?} accepted: {:?}", other.map(|_| ())),
    };
    let base = ActorLevelConfig::default();
    assert!(refused(ActorLevelConfig { tick_rate: 0.5, ..base }).contains("shorter than a tick"));
    assert!(refused(ActorLevelConfig { ready_timeout: 0.01, ..base }).contains("shorter than a tick"));
    assert!(refused(ActorLevelConfig { ready_timeout: 0.0, ..base }).contains("shorter than a tick"));
    // A tick rate so small that its tick is not finite.
    assert!(refused(ActorLevelConfig { tick_rate: 1e-310, ..base }).contains("tick of"));
    // At the edge: a ready timeout of exactly one tick.
    level(ActorLevelConfig { tick_rate: 2.0, ready_timeout: 0.5, ..base }).unwrap();
    level(ActorLevelConfig { tick_rate: 1.0, ..base }).unwrap();
    assert!(matches!(
        level(ActorLevelConfig { net_speed: 0, ..base }),
        Err(DriverError::BadNetSetting { setting: "net speed", .. })
    ));
}

#[test]
fn net_settings_replication_cannot_run_with_are_refused_and_change_nothing() {
    let (mut driver, store, class, id) = world(true);
    let before = driver.net_settings(class, id).unwrap();
    type Mutation = fn(&mut NetSettings);
    let bad: [(&str, Mutation); 9] = [
        ("NetUpdateFrequency", |s| s.frequency.net_update_frequency = f32::NAN),
        ("NetUpdateFrequency", |s| s.frequency.net_update_frequency = 0.0),
        ("NetUpdateFrequency", |s| s.frequency.net_update_frequency = -1.0),
        ("NetUpdateFrequency", |s| s.frequency.net_update_frequency = f32::INFINITY),
        ("MinNetUpdateFrequency", |s| s.frequency.min_net_update_frequency = f32::NAN),
        ("MinNetUpdateFrequency", |s| s.frequency.min_net_update_frequency = -2.0),
        ("NetPriority", |s| s.net_priority = -1.0),
        ("NetPriority", |s| s.net_priority = f32::NAN),
        ("NetCullDistanceSquared", |s| s.cull_distance_squared = f32::NAN),
    ];
    for (name, set) in bad {
        let mut s = NetSettings::default();
        set(&mut s);
        let is_refused = |r: Result<(), DriverError>| matches!(r, Err(DriverError::BadNetSetting { setting, .. }) if setting == name);
        assert!(is_refused(driver.set_net_settings(class, &store, id, s)), "{s:?}");
        assert!(is_refused(driver.set_class_settings(class, s)), "{s:?}");
        assert_eq!(driver.net_settings(class, id), Some(before), "a refused call changed nothing");
    }
    // What UE allows: a minimum of 0 (UE's 2 Hz), a priority of 0, any distance.
    let mut fine = NetSettings { net_priority: 0.0, cull_distance_squared: f32::INFINITY, ..NetSettings::default() };
    fine.frequency.min_net_update_frequency = 0.0;
    driver.set_net_settings(class, &store, id, fine).unwrap();
    assert_eq!(driver.net_settings(class, id), Some(fine));
    assert!(DriverError::BadNetSetting { setting: "NetPriority", value: -1.0, expected: "x" }
        .to_string()
        .contains("NetPriority = -1"));
}

#[test]
fn a_net_speed_of_zero_is_refused() {
    // A connection of 0 bytes a second never drained what it was sent: one packet, then nothing.
    let (mut driver, _, _, _) = world(true);
    let conn = driver.add_connection(false);
    assert!(matches!(driver.set_net_speed(conn, 0), Err(DriverError::BadNetSetting { setting: "net speed", .. })));
    driver.set_net_speed(conn, 1).unwrap();
}

#[test]
fn actor_level_calls_without_the_actor_level_are_refused() {
    // They were accepted and did nothing, while the dormancy and sub-object calls refused.
    let (mut driver, store, class, id) = world(false);
    let conn = driver.add_connection(false);
    let off = |r: Result<(), DriverError>| assert_eq!(r, Err(DriverError::ActorLevelOff));
    off(driver.set_class_settings(class, NetSettings::default()));
    off(driver.set_net_settings(class, &store, id, NetSettings::default()));
    off(driver.set_position(class, &store, id, [1.0; 3]));
    off(driver.set_owner_actor(class, &store, id, None, None));
    off(driver.force_net_update(class, &store, id));
    off(driver.set_relevancy_hook(class, None));
    off(driver.set_dormancy_hook(class, None));
    off(driver.set_net_speed(conn, 1000));
    let viewer = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
    off(driver.set_viewers(conn, &[viewer]));
    // A transport tells the driver it heard from a client whatever the mode.
    driver.heard_from(conn).unwrap();
    assert_eq!(driver.heard_from(ConnectionId(99)), Err(DriverError::UnknownConnection(ConnectionId(99))));
}

#[test]
fn a_torn_off_owner_takes_no_sub_objects_or_fast_arrays() {
    // They were given GUIDs and never replicated.
    let (mut driver, mut store, class, owner_id) = world(true);
    let owner = driver.guid_of(class, owner_id).unwrap();
    let sub = store.spawn();
    let kind = driver
        .register_fast_array_kind(Arc::new(shadowrep::fastarray::item_layout("Slots", PropType::U32).unwrap()))
        .unwrap();
    // Its own sub-object: refused as a chain (it was `AlreadyReplicated`).
    assert_eq!(
        driver.register_sub_object(class, &store, owner_id, owner, SubObjectCondition::None),
        Err(DriverError::SubObjectChain(owner))
    );
    driver.tear_off(class, &store, owner_id).unwrap();
    assert_eq!(
        driver.register_sub_object(class, &store, sub, owner, SubObjectCondition::None),
        Err(DriverError::TornOffOwner(owner))
    );
    assert_eq!(driver.guid_of(class, sub), None, "the refused sub-object got no GUID");
    assert_eq!(driver.add_fast_array(kind, owner, SubObjectCondition::None), Err(DriverError::TornOffOwner(owner)));
    // After the tick that sends its tear-off, still refused.
    driver.tick(&mut [&mut store]).unwrap();
    assert_eq!(driver.add_fast_array(kind, owner, SubObjectCondition::None), Err(DriverError::TornOffOwner(owner)));
}

#[test]
fn raw_leaf_reads_refuse_bad_slots_leaves_and_buffers() {
    // Each panicked on a slice index inside the store.
    let (mut driver, mut store, class, id) = world(true);
    store.set(id, 0, &Value::Vector([1.0, 2.0, 3.0])).unwrap();
    let mut out = [0xAAu8; 16];
    assert!(!store.leaf_bytes(id.index, 99, &mut out), "no leaf 99");
    assert!(!store.leaf_bytes(id.index, 0, &mut out[..4]), "a vector takes 12 bytes");
    assert!(!store.leaf_bytes(1_000_000, 0, &mut out), "no such slot");
    assert_eq!(out, [0xAA; 16], "a refused read writes nothing");
    assert!(store.leaf_bytes(id.index, 0, &mut out));
    assert_eq!(&out[..4], &1.0f32.to_le_bytes());

    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[layout()], &driver.checksums()).unwrap();
    driver
        .set_viewers(
            conn,
            &[Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }],
        )
        .unwrap();
    driver.tick(&mut [&mut store]).unwrap();
    for p in driver.take_packets(conn).unwrap() {
        client.receive(&p).unwrap();
    }
    let guid = driver.guid_of(class, id).unwrap();
    let mut out = [0u8; 12];
    assert!(client.leaf_bytes(guid, 0, &mut out), "the client has it");
    assert_eq!(&out[8..12], &3.0f32.to_le_bytes());
    assert!(!client.leaf_bytes(guid, 99, &mut out));
    assert!(!client.leaf_bytes(guid, 0, &mut out[..1]));
}

#[test]
fn push_validation_finds_unmarked_changes_when_every_property_is_push_based_and_keeps_a_bounded_list() {
    // A class whose every property is push-based compares only its marked pages; validation
    // skipped the others too, so it found no forgotten mark — and its list grew while untaken.
    let layout = Arc::new(
        ClassBuilder::new("Pushed").property(PropertyDecl::new("N", PropType::U32).push(true)).build().unwrap(),
    );
    let mut store = ClassStore::new(layout);
    let compare = CompareConfig { validate_push: true, ..CompareConfig::default() };
    let mut driver = NetDriver::new(DriverConfig { compare, ..DriverConfig::default() }).unwrap();
    driver.register_class(&mut store).unwrap();
    let n = MAX_UNMARKED_CHANGES + 1000;
    let ids: Vec<_> = (0..n).map(|_| store.spawn()).collect();
    driver.tick(&mut [&mut store]).unwrap();
    assert!(driver.take_unmarked_changes().is_empty(), "new actors are marked");
    for &id in &ids[..3] {
        store.set(id, 0, &Value::U32(7)).unwrap();
    }
    driver.tick(&mut [&mut store]).unwrap();
    let found = driver.take_unmarked_changes();
    assert_eq!(found.iter().map(|u| u.actor).collect::<Vec<_>>(), ids[..3]);
    // Every actor changed without a mark, twice, nothing taken: the list stops at its bound.
    for round in 0..2 {
        for &id in &ids {
            store.set(id, 0, &Value::U32(round + 100)).unwrap();
        }
        driver.tick(&mut [&mut store]).unwrap();
    }
    assert_eq!(driver.take_unmarked_changes().len(), MAX_UNMARKED_CHANGES);
    assert_eq!(driver.unmarked_changes_dropped(), (2 * n - MAX_UNMARKED_CHANGES) as u64);
}

#[test]
fn a_session_server_refuses_more_classes_than_a_hello_names() {
    // It started, then rejected every client, even one with the same classes.
    let now = std::time::Instant::now();
    let max = shadowrep::session::frame::MAX_CLASSES;
    let refused = SessionServer::new(ServerConfig::new(vec![7; max + 1]), now).err();
    assert_eq!(refused, Some(ServerConfigError::TooManyClasses { classes: max + 1 }));
    assert!(refused.unwrap().to_string().contains("no client could join"));
    assert!(SessionServer::new(ServerConfig::new(vec![7; max]), now).is_ok());
}

#[test]
fn calls_on_an_actor_despawned_since_the_last_tick_are_stale() {
    // Every call naming an actor refused it once despawned, but these three (harmless: the
    // driver retires the actor at the next tick, and a new actor in the slot is not touched).
    let (mut driver, mut store, class, id) = world(true);
    store.despawn(id).unwrap();
    let stale = Err(DriverError::StaleActor(id));
    assert_eq!(driver.set_net_dormancy(class, &store, id, shadowrep::net::dormancy::Dormancy::DormantAll), stale);
    assert_eq!(driver.flush_net_dormancy(class, &store, id), stale);
    assert_eq!(driver.tear_off(class, &store, id), stale);
    assert_eq!(driver.set_net_settings(class, &store, id, NetSettings::default()), stale);
}
