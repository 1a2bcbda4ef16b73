//! Static objects that are not actors — assets and classes both ends load — named by object
//! references: exported by path with the first bunch that names one, bound by the clients that
//! loaded the path (`NetDriver::register_static_object`, `ClientWorld::load_static_object`).

use super::*;
use rand::{Rng, SeedableRng};
use shadowrep::client::ClientError;
use shadowrep::net::DriverError;
use shadowrep::value::ObjectRef;

const FIRE: &str = "/Game/DamageTypes/Fire";
const ICE: &str = "/Game/DamageTypes/Ice";

/// A hit: where, its damage type, and the types it may also deal.
fn hit() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Hit")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("DamageType", PropType::Object))
            .property(PropertyDecl::new("Also", PropType::array(PropType::Object)))
            .build()
            .unwrap(),
    )
}

fn object(g: NetGuid) -> Value {
    Value::Object(ObjectRef(g.0))
}

/// Runs `frames` frames of `driver` over `store` to `clients`, losing half the packets before
/// frame `lossy_until`.
fn run(
    driver: &mut NetDriver,
    store: &mut ClassStore,
    clients: &mut [(ConnectionId, ClientWorld)],
    frames: u32,
    lossy_until: u32,
    rng: &mut impl Rng,
) {
    for frame in 0..frames {
        driver.tick(&mut [store]).unwrap();
        for (conn, client) in clients.iter_mut() {
            for p in driver.take_packets(*conn).unwrap() {
                if frame >= lossy_until || rng.random_bool(0.5) {
                    client.receive(&p).unwrap();
                }
            }
            driver.receive_feedback(*conn, &client.feedback()).unwrap();
        }
    }
}

fn world(actor_level: bool) -> (NetDriver, ClassStore, Vec<(ConnectionId, ClientWorld)>, NetGuid, NetGuid) {
    let layout = hit();
    let mut store = ClassStore::new(layout.clone());
    let cfg = DriverConfig { actor_level: actor_level.then(ActorLevelConfig::default), ..DriverConfig::default() };
    let mut driver = NetDriver::new(cfg).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    if actor_level {
        driver.set_location_property(class, 0).unwrap();
    }
    let fire = driver.register_static_object(FIRE).unwrap();
    let ice = driver.register_static_object(ICE).unwrap();
    // Client 0 has both damage types; client 1 only the ice.
    let mut clients = Vec::new();
    for loaded in [&[FIRE, ICE][..], &[ICE][..]] {
        let conn = driver.add_connection(false);
        if actor_level {
            driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
        }
        let mut client = ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap();
        for path in loaded {
            client.load_static_object(path).unwrap();
        }
        clients.push((conn, client));
    }
    (driver, store, clients, fire, ice)
}

fn references_resolve_by_path_on_the_clients_that_loaded_it(actor_level: bool) {
    let (mut driver, mut store, mut clients, fire, ice) = world(actor_level);
    assert!(fire.is_static() && ice.is_static() && fire != ice);
    let a = store.spawn();
    store.set(a, 0, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    store.set(a, 1, &object(fire)).unwrap();
    store.set(a, 2, &Value::Array(vec![object(ice), object(fire)])).unwrap();
    let class = ClassId(0);
    let guid = driver.assign_guid(class, &store, a).unwrap();
    // Half the packets lost for a while: a lost export goes again until one is acknowledged.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    run(&mut driver, &mut store, &mut clients, 60, 30, &mut rng);
    let both = &clients[0].1;
    assert_eq!(both.value(guid, 1), Some(object(fire)));
    assert_eq!(both.value(guid, 2), Some(Value::Array(vec![object(ice), object(fire)])));
    assert_eq!((both.static_object_path(fire), both.static_object_path(ice)), (Some(FIRE), Some(ICE)));
    assert_eq!((both.static_object(FIRE), both.static_object(ICE)), (Some(fire), Some(ice)));
    assert_eq!(both.stats().unknown_statics, 0);
    // The client without the fire: its references stay null, the ice's resolve.
    let ice_only = &clients[1].1;
    let null = Value::Object(ObjectRef(0));
    assert_eq!(ice_only.value(guid, 1), Some(null.clone()));
    assert_eq!(ice_only.value(guid, 2), Some(Value::Array(vec![object(ice), null])));
    assert_eq!((ice_only.static_object_path(fire), ice_only.static_object(ICE)), (None, Some(ice)));
    assert!(ice_only.stats().unknown_statics > 0, "the fire's export found no loaded path");
    // A new reference to an object already exported goes without an export; both clients follow.
    let sent = driver.connection_stats(clients[0].0).unwrap().bytes_sent;
    store.set(a, 1, &object(ice)).unwrap();
    run(&mut driver, &mut store, &mut clients, 10, 0, &mut rng);
    assert!(clients.iter().all(|(_, c)| c.value(guid, 1) == Some(object(ice))));
    let extra = driver.connection_stats(clients[0].0).unwrap().bytes_sent - sent;
    assert!(extra < 64, "{extra} bytes for one reference changed: no export again");
}

#[test]
fn references_to_a_static_object_resolve_by_path_on_the_clients_that_loaded_it() {
    references_resolve_by_path_on_the_clients_that_loaded_it(true);
}

#[test]
fn without_the_actor_level_references_to_a_static_object_resolve_the_same() {
    references_resolve_by_path_on_the_clients_that_loaded_it(false);
}

#[test]
fn a_path_names_one_static_actor_or_object() {
    let mut l = Level::new(every_frame(), 1);
    let door = l.store.spawn();
    l.driver.register_static_actor(l.class, &l.store, door, "/Game/Map.Door").unwrap();
    for bad in ["/Game/Map.Door", "", &"x".repeat(10_000)] {
        assert!(matches!(l.driver.register_static_object(bad), Err(DriverError::BadStaticPath(_))), "{bad:.20}");
    }
    let fire = l.driver.register_static_object(FIRE).unwrap();
    assert!(matches!(l.driver.register_static_object(FIRE), Err(DriverError::BadStaticPath(_))));
    let late = l.store.spawn();
    let err = l.driver.register_static_actor(l.class, &l.store, late, FIRE);
    assert!(matches!(err, Err(DriverError::BadStaticPath(_))), "an object's path is taken for actors too");
    assert_ne!(l.driver.register_static_actor(l.class, &l.store, late, "/Game/Map.Door2").unwrap(), fire);
    let client = &mut l.clients[0].1;
    client.load_static_actor("/Game/Map.Door", 0).unwrap();
    for bad in ["/Game/Map.Door", ""] {
        assert!(matches!(client.load_static_object(bad), Err(ClientError::BadStaticPath(_))), "{bad}");
    }
    client.load_static_object(FIRE).unwrap();
    assert!(matches!(client.load_static_object(FIRE), Err(ClientError::BadStaticPath(_))));
    assert!(matches!(client.load_static_actor(FIRE, 0), Err(ClientError::BadStaticPath(_))));
}

#[test]
fn a_second_export_of_a_loaded_path_rebinds_neither_an_object_nor_a_level_actor() {
    use shadowrep::wire::open::{write_export_body, EXPORT_GUID};
    use shadowrep::wire::packet::write_bunch;
    use shadowrep::wire::BitWriter;
    let layout = hit();
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).unwrap();
    c.load_static_object(FIRE).unwrap();
    c.load_static_actor("/Game/Map.Door", 0).unwrap();
    let export = |seq: u32, g: u64, path: &'static str| {
        crafted(seq, move |w| {
            let mut body = BitWriter::new();
            write_export_body(&mut body, NetGuid(g), path);
            write_bunch(w, EXPORT_GUID, None, &body);
        })
    };
    c.receive(&export(1, 3, FIRE)).unwrap();
    c.receive(&export(2, 5, "/Game/Map.Door")).unwrap();
    assert_eq!(c.static_object(FIRE), Some(NetGuid(3)));
    assert!(c.has(NetGuid(5)));
    // A forger's second export of each path.
    c.receive(&export(3, 9, FIRE)).unwrap();
    c.receive(&export(4, 11, "/Game/Map.Door")).unwrap();
    assert!(c.has(NetGuid(5)) && !c.has(NetGuid(11)), "a level actor's export does not rebind");
    // The server exports an object once: had the forger's rebound it, the server's GUID 3 would
    // map to nothing for good.
    assert_eq!(c.static_object(FIRE), Some(NetGuid(3)), "the first export binds");
    assert_eq!((c.static_object_path(NetGuid(3)), c.static_object_path(NetGuid(9))), (Some(FIRE), None));
    assert_eq!(c.stats().object_export_conflicts, 1);
}

#[test]
fn an_object_loaded_after_its_export_came_binds_at_once_and_the_record_of_such_exports_is_bounded() {
    use shadowrep::client::MAX_PENDING_EXPORTS;
    let (mut driver, mut store, mut clients, fire, _) = world(true);
    let late = clients.remove(1);
    let mut clients = vec![late];
    let a = store.spawn();
    store.set(a, 0, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    store.set(a, 1, &object(fire)).unwrap();
    let guid = driver.assign_guid(ClassId(0), &store, a).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    run(&mut driver, &mut store, &mut clients, 10, 0, &mut rng);
    let client = &mut clients[0].1;
    assert_eq!(client.value(guid, 1), Some(Value::Object(ObjectRef(0))), "not loaded: null");
    assert_eq!(client.static_object_path(fire), None);
    // The game loads the fire now: the export that came before binds it.
    client.load_static_object(FIRE).unwrap();
    assert_eq!((client.static_object(FIRE), client.static_object_path(fire)), (Some(fire), Some(FIRE)));
    assert_eq!(client.value(guid, 1), Some(object(fire)), "the reference that waited resolves");
    store.set(a, 1, &Value::Object(ObjectRef(0))).unwrap();
    run(&mut driver, &mut store, &mut clients, 3, 0, &mut rng);
    store.set(a, 1, &object(fire)).unwrap();
    run(&mut driver, &mut store, &mut clients, 3, 0, &mut rng);
    assert_eq!(clients[0].1.value(guid, 1), Some(object(fire)));
    // Hostile or not, exports of paths never loaded are kept at most MAX_PENDING_EXPORTS.
    use shadowrep::wire::open::{write_export_body, EXPORT_GUID};
    use shadowrep::wire::packet::write_bunch;
    use shadowrep::wire::BitWriter;
    let layout = hit();
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).unwrap();
    let n = MAX_PENDING_EXPORTS + 10;
    for i in 0..n {
        let packet = crafted(i as u32 + 1, |w| {
            let mut body = BitWriter::new();
            write_export_body(&mut body, NetGuid(2 * i as u64 + 3), &format!("/Game/Junk{i}"));
            write_bunch(w, EXPORT_GUID, None, &body);
        });
        c.receive(&packet).unwrap();
    }
    assert_eq!(c.stats().pending_exports_dropped, 10);
    c.load_static_object("/Game/Junk0").unwrap();
    assert_eq!(c.static_object("/Game/Junk0"), Some(NetGuid(3)), "a kept one binds");
    c.load_static_object(&format!("/Game/Junk{}", n - 1)).unwrap();
    assert_eq!(c.static_object(&format!("/Game/Junk{}", n - 1)), None, "a dropped one waits for nothing");
}
