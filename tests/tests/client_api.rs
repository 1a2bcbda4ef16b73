//! The client's embedding API: actor listing, typed reads through the layouts crate, spawn and
//! destroy events, and when feedback is due.

use shadowrep::client::ClientEvent;
use shadowrep::prelude::*;
use shadowrep_layouts::classes::Counter;
use shadowrep_layouts::PackedU32;
use std::collections::HashSet;

#[test]
fn a_client_lists_reads_and_reports_its_actors() {
    let mut store = Counter::new_store();
    let mut driver = NetDriver::new(DriverConfig::default()).expect("config");
    let class = driver.register_class(&mut store).expect("class");
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[Counter::layout().clone()], &driver.checksums()).expect("same layout");
    let ids: Vec<ActorId> = (0..3).map(|_| store.spawn()).collect();
    for (i, &id) in ids.iter().enumerate() {
        Counter::set_count(&mut store, id, PackedU32(10 + i as u32)).expect("set");
    }
    let guids: Vec<NetGuid> = ids.iter().map(|&id| driver.assign_guid(class, &store, id).expect("guid")).collect();
    assert!(!client.feedback_due(), "nothing received yet");
    driver.tick(&mut [&mut store]).expect("tick");
    for p in driver.take_packets(conn).expect("connection") {
        client.receive(&p).expect("applies");
    }
    assert!(client.feedback_due());
    let listed: HashSet<(NetGuid, u32)> = client.actors().collect();
    assert_eq!(listed, guids.iter().map(|&g| (g, class.0)).collect());
    let spawned: Vec<ClientEvent> = client.take_events();
    assert_eq!(spawned.len(), 3);
    for (i, &g) in guids.iter().enumerate() {
        assert!(spawned.contains(&ClientEvent::Spawned { guid: g, class: class.0 }));
        let (client_store, id) = client.actor(g).expect("the client has it");
        assert_eq!(Counter::count(client_store, id), Ok(PackedU32(10 + i as u32)), "typed read on the client");
    }
    let fb = client.feedback();
    assert!(!client.feedback_due(), "reported");
    driver.receive_feedback(conn, &fb).expect("feedback");

    store.despawn(ids[1]).expect("despawn");
    driver.tick(&mut [&mut store]).expect("tick");
    for p in driver.take_packets(conn).expect("connection") {
        client.receive(&p).expect("applies");
    }
    assert_eq!(client.take_events(), vec![ClientEvent::Destroyed { guid: guids[1] }]);
    assert!(client.actor(guids[1]).is_none());
    assert!(client.take_events().is_empty(), "taken");
}

#[test]
fn connection_statistics_count_what_was_lost_and_resent_and_what_is_in_flight() {
    let mut store = Counter::new_store();
    let mut driver = NetDriver::new(DriverConfig::default()).expect("config");
    driver.register_class(&mut store).expect("class");
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[Counter::layout().clone()], &driver.checksums()).expect("same layout");
    let ids: Vec<ActorId> = (0..5).map(|_| store.spawn()).collect();
    for (i, &id) in ids.iter().enumerate() {
        Counter::set_count(&mut store, id, PackedU32(1 + i as u32)).expect("set");
    }
    // Frame 1 is lost; frame 2 changes two counters and arrives; its feedback reports the loss.
    driver.tick(&mut [&mut store]).expect("tick");
    let lost = driver.take_packets(conn).expect("connection");
    assert!(!lost.is_empty());
    let s = driver.connection_stats(conn).expect("live");
    assert_eq!(s.packets_in_flight, lost.len() as u64);
    assert_eq!(s.packets_in_flight, driver.in_flight(conn) as u64);
    for &id in &ids[..2] {
        Counter::set_count(&mut store, id, PackedU32(7)).expect("set");
    }
    driver.tick(&mut [&mut store]).expect("tick");
    for p in driver.take_packets(conn).expect("connection") {
        client.receive(&p).expect("applies");
    }
    driver.receive_feedback(conn, &client.feedback()).expect("feedback");
    let s = driver.connection_stats(conn).expect("live");
    assert_eq!(s.packets_lost, lost.len() as u64);
    // The lost packets carried the five actors' count (one leaf each): owed again.
    assert_eq!(s.leaves_resent, 5);
    assert_eq!(s.packets_in_flight, 0, "everything settled");
    // The next frame sends their current values; the client then holds every count.
    driver.tick(&mut [&mut store]).expect("tick");
    for p in driver.take_packets(conn).expect("connection") {
        client.receive(&p).expect("applies");
    }
    assert_eq!(client.actors().count(), 5);
    for &id in &ids {
        let guid = driver.guid_of(ClassId(0), id).expect("live");
        assert_eq!(client.value(guid, 0), store.get(id, 0).ok(), "{guid}");
    }
}
