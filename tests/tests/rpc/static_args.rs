//! A call's object arguments that name static objects export them, as a property's references
//! do: UE serialises a call's parameters through the package map (`SerializeObject`), which
//! exports a stably named object the connection has not acknowledged (its GUID and path) ahead
//! of the call. Found by a helper's review against UE's source (session 77): the kernel exported
//! for properties only, and a client that loaded the asset got a GUID it could not name.

use shadowrep::client::ClientWorld;
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl, RpcDecl, StructType};
use shadowrep::store::ClassStore;
use shadowrep::value::{ObjectRef, Value};
use std::sync::Arc;

const FIRE: &str = "/Game/DamageTypes/Fire";
const ICE: &str = "/Game/DamageTypes/Ice";

/// A pawn's calls naming static objects, reliable (`Hit`: one object) and unreliable (`Splash`:
/// an array of them), made on frame 2 of 8 with unreliable calls naming none around them: the
/// calls the client got, by name, and the paths it can name.
fn calls_naming_statics() -> (Vec<String>, [Option<String>; 2]) {
    let layout = Arc::new(
        ClassBuilder::new("Pawn")
            .property(PropertyDecl::new("Health", PropType::U16))
            .rpc(RpcDecl::multicast("Hit").reliable().param(PropertyDecl::new("DamageType", PropType::Object)))
            .rpc(RpcDecl::multicast("Splash").param(PropertyDecl::new("Types", PropType::array(PropType::Object))))
            .rpc(RpcDecl::multicast("Ping").param(PropertyDecl::new("N", PropType::U32)))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let (fire, ice) = (driver.register_static_object(FIRE).unwrap(), driver.register_static_object(ICE).unwrap());
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    client.load_static_object(FIRE).unwrap();
    client.load_static_object(ICE).unwrap();
    let pawn = store.spawn();
    driver.assign_guid(class, &store, pawn).unwrap();
    for frame in 0..8 {
        if frame == 2 {
            driver.call_rpc(class, &store, pawn, "Ping", &[Value::U32(1)]).unwrap();
            driver.call_rpc(class, &store, pawn, "Hit", &[Value::Object(ObjectRef(fire.0))]).unwrap();
            let types = Value::Array(vec![Value::Object(ObjectRef(ice.0)), Value::Object(ObjectRef(fire.0))]);
            driver.call_rpc(class, &store, pawn, "Splash", &[types]).unwrap();
            driver.call_rpc(class, &store, pawn, "Ping", &[Value::U32(2)]).unwrap();
        }
        driver.tick(&mut [&mut store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    let calls = client.take_rpcs().into_iter().map(|c| c.name).collect();
    let paths = [fire, ice].map(|g| client.static_object_path(g).map(str::to_string));
    (calls, paths)
}

#[test]
fn a_calls_static_object_arguments_are_exported_ahead_of_it() {
    let (names, paths) = calls_naming_statics();
    assert_eq!(names, ["Hit", "Ping", "Splash", "Ping"], "the reliable call, then the unreliable ones in call order");
    assert_eq!(paths, [Some(FIRE.to_string()), Some(ICE.to_string())], "both exported: the client names them");
}

/// A static object named inside a struct argument is exported ahead of its call too, as
/// UE's package map meets it serialising the struct's fields.
#[test]
fn a_static_object_inside_a_struct_argument_is_exported_ahead_of_the_call() {
    let hit = StructType::new("HitInfo").field("Amount", PropType::U16).field("DamageType", PropType::Object);
    let layout = Arc::new(
        ClassBuilder::new("Pawn")
            .property(PropertyDecl::new("Health", PropType::U16))
            .rpc(RpcDecl::multicast("Burn").reliable().param(PropertyDecl::new("Hit", PropType::Struct(hit))))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let fire = driver.register_static_object(FIRE).unwrap();
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    client.load_static_object(FIRE).unwrap();
    let pawn = store.spawn();
    driver.assign_guid(class, &store, pawn).unwrap();
    for frame in 0..6 {
        if frame == 2 {
            let hit = Value::Struct(vec![Value::U16(5), Value::Object(ObjectRef(fire.0))]);
            driver.call_rpc(class, &store, pawn, "Burn", &[hit]).unwrap();
        }
        driver.tick(&mut [&mut store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    let names: Vec<_> = client.take_rpcs().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["Burn"]);
    assert_eq!(client.static_object_path(fire), Some(FIRE), "exported: the client names it");
}
