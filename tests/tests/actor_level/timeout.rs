//! Channels over time: the relevant timeout closes a channel (the client destroys its copy), a
//! level's startup actor keeps its channel, a re-relevant actor reopens with its current state,
//! and a client not heard from is not replicated to.

use super::*;

/// Frames until client 0 is told `guid` is destroyed (None within `limit`).
fn frames_until_destroyed(l: &mut Level, guid: NetGuid, limit: usize) -> Option<usize> {
    for f in 1..=limit {
        l.step();
        if l.events(0).contains(&ClientEvent::Destroyed { guid }) {
            return Some(f);
        }
    }
    None
}

#[test]
fn out_of_range_closes_after_the_relevant_timeout_and_the_client_destroys_its_copy() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.run(3);
    assert!(l.client(0).has(guid));
    l.events(0);
    l.move_to(id, [1.0e6, 0.0, 0.0]);
    let frames = frames_until_destroyed(&mut l, guid, 300).expect("closed within 10 s");
    // The last relevant recheck was at most 1 s before the move and set the relevant time up to
    // 0.5 s ahead; the channel closes at the first recheck 5 s past it.
    let seconds = frames as f64 / 30.0;
    assert!((3.9..=5.6).contains(&seconds), "closed {seconds} s after leaving");
    assert!(!l.client(0).has(guid));
    let conn = l.clients[0].0;
    assert_eq!(l.driver.channels(conn).unwrap().0, 0, "no row left for a closed channel");
    let closed = l.decisions(0).sends.iter().any(|s| s.action == shadowrep::net::Action::Closed);
    assert!(closed || frames > 0);
}

#[test]
fn a_startup_actor_keeps_its_channel_when_it_stops_being_relevant() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.settings(id, |s| s.startup = true);
    l.run(3);
    l.move_to(id, [1.0e6, 0.0, 0.0]);
    assert_eq!(frames_until_destroyed(&mut l, guid, 300), None, "never closed for relevancy");
    let conn = l.clients[0].0;
    assert_eq!(l.driver.channels(conn).unwrap().0, 1, "the channel is kept");
    // Kept, but not replicated while it is not relevant (UE's rule); back in range, it is
    // updated through the same channel, with no new open.
    l.store.set(id, HEALTH, &Value::U32(99)).unwrap();
    l.run(2);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(7)));
    l.move_to(id, [50.0, 0.0, 0.0]);
    l.run(2);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(99)));
    assert!(!l.events(0).iter().any(|e| matches!(e, ClientEvent::Spawned { .. })), "no reopen");
}

#[test]
fn a_re_relevant_actor_reopens_with_its_current_state() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.run(3);
    l.move_to(id, [1.0e6, 0.0, 0.0]);
    frames_until_destroyed(&mut l, guid, 300).expect("closed");
    l.store.set(id, HEALTH, &Value::U32(1234)).unwrap();
    l.run(5);
    assert!(!l.client(0).has(guid), "still far away");
    l.move_to(id, [200.0, 0.0, 0.0]);
    l.run(2);
    assert!(l.events(0).contains(&ClientEvent::Spawned { guid, class: 0 }));
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(1234)), "the changes made while away");
    assert_eq!(l.client(0).value(guid, LOCATION), Some(Value::Vector([200.0, 0.0, 0.0])));
}

#[test]
fn a_destroyed_actor_is_closed_and_a_client_not_heard_from_gets_nothing() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.run(2);
    l.store.despawn(id).unwrap();
    l.run(1);
    assert!(!l.client(0).has(guid), "destroyed with its actor");

    // Silence: tick without returning feedback for 2 s (the ready timeout is 1.5 s).
    let (_, g2) = l.spawn([100.0, 0.0, 0.0], 8);
    let conn = l.clients[0].0;
    for _ in 0..60 {
        l.driver.tick(&mut [&mut l.store]).unwrap();
        let packets = l.driver.take_packets(conn).unwrap();
        for p in packets {
            l.clients[0].1.receive(&p).unwrap();
        }
    }
    assert!(!l.decisions(0).ready, "not heard from for 2 s");
    assert!(l.decisions(0).sends.is_empty());
    // The keep-alives it still gets let it answer; then it is replicated to again.
    l.run(2);
    assert!(l.decisions(0).ready);
    assert!(l.client(0).has(g2));
}

/// An actor destroyed while its client is not heard from: the connection's frames then retire
/// the gone row on their own (not in the walk of a replicating frame), and the close waits for
/// the client to be replicated to again. Catches a row left behind there (its actor's copy
/// never destroyed on the client, a channel row for an actor that is gone).
#[test]
fn an_actor_destroyed_while_its_client_is_silent_is_closed_when_it_answers_again() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.run(2);
    assert!(l.client(0).has(guid));
    let conn = l.clients[0].0;
    // Silence for 2 s (the ready timeout is 1.5 s); the actor goes once the client is not ready.
    for frame in 0..60 {
        if frame == 55 {
            assert!(!l.decisions(0).ready, "not heard from by now");
            l.store.despawn(id).unwrap();
        }
        l.step_with_silent(0);
    }
    assert!(l.client(0).has(guid), "nothing but keep-alives while silent");
    l.run(3);
    assert!(l.decisions(0).ready);
    assert!(!l.client(0).has(guid), "the close went out once the client answered");
    assert!(l.driver.channel_info(conn).unwrap().iter().all(|c| c.guid != guid), "no row left for it");
}
