//! The roles' unit tests: a torn-off pawn unpossessed, and the bound on each actor's records of inactive leaves.

use super::*;
use crate::net::DriverConfig;
use crate::schema::{ClassBuilder, Condition, PropType, PropertyDecl};

/// UE's death of a pawn — torn off, then unpossessed. The unpossession owed the former
/// owner its role (a review found it), but a torn-off actor is never planned again: the
/// record stayed owed as long as the actor lived (prune kept it: actor alive, pair of the
/// same epoch), and every pair that connection planned paid the lookup meanwhile. Now a
/// torn-off actor's roles are not tracked.
#[test]
fn unpossessing_a_torn_off_pawn_owes_no_role() {
    let layout = std::sync::Arc::new(
        ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let conn = driver.add_connection(false);
    let mut client = crate::client::ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    let pawn = store.spawn();
    driver.set_owner(class, &store, pawn, Some(conn), true).unwrap();
    let mut step = |driver: &mut NetDriver, store: &mut ClassStore| {
        driver.tick(&mut [store]).unwrap();
        for p in driver.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    };
    for _ in 0..3 {
        step(&mut driver, &mut store);
    }
    driver.tear_off(class, &store, pawn).unwrap();
    for _ in 0..3 {
        step(&mut driver, &mut store);
    }
    driver.set_owner(class, &store, pawn, None, false).unwrap();
    for _ in 0..200 {
        step(&mut driver, &mut store);
    }
    assert_eq!(driver.conns[0].roles.owing(), 0, "a torn-off actor's role is owed for good");
}

/// An item passed from connection to connection keeps at most `MAX_INACTIVE_PER_ACTOR`
/// records of former owners, and a connection that leaves takes its records with it.
#[test]
fn inactive_records_are_bounded_per_actor_and_go_with_their_connection() {
    let layout = std::sync::Arc::new(
        ClassBuilder::new("Item")
            .property(PropertyDecl::new("Charges", PropType::U32).condition(Condition::OwnerOnly))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout);
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let conns: Vec<ConnectionId> = (0..100).map(|_| driver.add_connection(false)).collect();
    let id = store.spawn();
    driver.tick(&mut [&mut store]).unwrap();
    for &c in &conns {
        driver.set_owner(class, &store, id, Some(c), false).unwrap();
    }
    let records = |d: &NetDriver| d.inactive.get(&(class.0, id.index)).map_or(0, Vec::len);
    assert_eq!(records(&driver), MAX_INACTIVE_PER_ACTOR);
    for &c in &conns {
        driver.remove_connection(c).unwrap();
    }
    assert_eq!(records(&driver), 0);
    assert!(driver.inactive.is_empty());
}
