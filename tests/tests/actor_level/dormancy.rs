//! Dormancy: every transition, seen by the clients and by the driver's frame.

use super::*;
use shadowrep::net::{Dormancy, DriverError};
use std::sync::Arc;

const DOOR: &str = "/Game/Maps/Arena.Arena:PersistentLevel.Door_1";

/// A level with `clients` clients and one thing near the origin, made dormant-all, after
/// `frames` frames.
fn dormant_thing(clients: usize, frames: usize) -> (Level, ActorId, NetGuid) {
    let mut l = Level::new(every_frame(), clients);
    always_due(&mut l);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(frames);
    (l, id, guid)
}

fn health(l: &Level, c: usize, guid: NetGuid) -> Option<Value> {
    l.client(c).value(guid, HEALTH)
}

#[test]
fn an_actor_goes_dormant_once_acknowledged_and_then_costs_nothing() {
    let (mut l, id, guid) = dormant_thing(2, 4);
    for c in 0..2 {
        assert_eq!(health(&l, c, guid), Some(Value::U32(10)));
        assert!(l.client(c).is_dormant(guid));
        assert!(l.events(c).contains(&ClientEvent::Dormant { guid }));
    }
    assert!(l.driver.is_asleep(l.class, id));
    // Asleep: off the consider list, nothing sent, and a change is not compared or sent.
    l.store.set(id, HEALTH, &Value::U32(11)).unwrap();
    let before = l.driver.bytes_sent(l.clients[0].0);
    l.step();
    let stats = l.driver.tick(&mut [&mut l.store]).unwrap();
    assert_eq!(stats.due_actors, 0);
    assert!(l.decisions(0).sends.is_empty());
    l.run(30);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(10)));
    let keep_alives = l.driver.connection_stats(l.clients[0].0).unwrap().keep_alives;
    // Only keep-alives went out (a few bytes each).
    assert!(l.driver.bytes_sent(l.clients[0].0) - before <= 8 * (keep_alives + 2), "only keep-alives");
    // The dormant row is all the connection keeps for it: the client still has the actor.
    assert!(l.client(0).has(guid));
}

/// Sleepers are plain actors (relevant by distance alone), and a sleeper wakes only for a viewer
/// near it: a relevancy hook given to the class later takes its sleepers back to the consider
/// list, where the hook answers for them (they had slept on, out of its reach).
#[test]
fn a_class_hook_set_later_wakes_the_classs_sleepers() {
    let (mut l, id, guid) = dormant_thing(1, 4);
    assert!(l.driver.is_asleep(l.class, id));
    let far = l.add_client();
    let conn = l.clients[far].0;
    l.driver.set_viewers(conn, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    let hook: shadowrep::net::relevancy::RelevancyHook = Arc::new(move |a, _| (a.guid == guid).then_some(true));
    l.driver.set_relevancy_hook(l.class, Some(hook)).unwrap();
    assert!(!l.driver.is_asleep(l.class, id), "back on the consider list");
    l.run(4);
    assert_eq!(health(&l, far, guid), Some(Value::U32(10)), "the hook made it relevant far away");
    assert!(l.client(0).is_dormant(guid), "still dormant where it was");
}

#[test]
fn waking_sends_every_change_made_while_dormant() {
    let (mut l, id, guid) = dormant_thing(1, 4);
    l.store.set(id, HEALTH, &Value::U32(77)).unwrap();
    l.move_to(id, [600.0, 0.0, 0.0]);
    l.run(10);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(10)));
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    assert!(!l.driver.is_asleep(l.class, id));
    l.run(2);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(77)));
    assert_eq!(l.client(0).value(guid, LOCATION), Some(Value::Vector([600.0, 0.0, 0.0])));
    assert!(!l.client(0).is_dormant(guid));
    // Awake: changes flow again.
    l.store.set(id, HEALTH, &Value::U32(78)).unwrap();
    l.run(2);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(78)));
    assert!(!l.driver.is_asleep(l.class, id));
}

#[test]
fn a_flush_replicates_once_and_the_actor_goes_dormant_again() {
    let (mut l, id, guid) = dormant_thing(1, 4);
    l.events(0);
    l.store.set(id, HEALTH, &Value::U32(5)).unwrap();
    l.run(3);
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    l.run(4);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(5)));
    assert_eq!(l.events(0), vec![ClientEvent::Dormant { guid }], "dormant again after the flush");
    assert!(l.driver.is_asleep(l.class, id));
    assert_eq!(l.driver.net_dormancy(l.class, id), Some(Dormancy::DormantAll));
    // Changes after the flush wait for the next one.
    l.store.set(id, HEALTH, &Value::U32(6)).unwrap();
    l.run(5);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(5)));
}

#[test]
fn force_net_update_flushes_a_dormant_actor() {
    // UE's ForceNetUpdate flushes dormancy first: the change made while dormant goes out, and the
    // actor goes dormant again.
    let (mut l, id, guid) = dormant_thing(1, 4);
    l.store.set(id, HEALTH, &Value::U32(77)).unwrap();
    l.run(3);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(10)));
    l.driver.force_net_update(l.class, &l.store, id).unwrap();
    l.run(4);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(77)));
    assert!(l.driver.is_asleep(l.class, id), "dormant again after the flush");
    assert_eq!(l.driver.net_dormancy(l.class, id), Some(Dormancy::DormantAll));
}

#[test]
fn a_woken_actor_ranks_as_one_without_a_channel_not_by_the_time_it_slept() {
    // UE closed its channel for dormancy: woken, it has none, so T is SpawnPrioritySeconds (1 s),
    // not the ten seconds since it was last sent.
    let (mut l, id, guid) = dormant_thing(1, 4);
    l.run(300);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.step();
    let send = l.decisions(0).sends.into_iter().find(|s| s.guid == guid).expect("sent on waking");
    // 500 units dead ahead of the viewer: × 2.
    let v = viewer([0.0; 3], None);
    let expect = shadowrep::net::priority::priority_key(shadowrep::net::priority::net_priority(
        [500.0, 0.0, 0.0],
        1.0,
        1.0,
        false,
        true,
        &v,
    ));
    assert_eq!(send.priority, expect);
}

#[test]
fn a_connection_that_joins_later_gets_the_dormant_actors_current_state_once() {
    let (mut l, id, guid) = dormant_thing(1, 4);
    l.store.set(id, HEALTH, &Value::U32(33)).unwrap();
    l.run(3);
    let late = l.add_client();
    l.run(4);
    assert_eq!(health(&l, late, guid), Some(Value::U32(33)));
    assert!(l.client(late).is_dormant(guid));
    // The first client still holds it dormant as it was, and it sleeps again.
    assert_eq!(health(&l, 0, guid), Some(Value::U32(10)));
    assert!(l.driver.is_asleep(l.class, id));
}

#[test]
fn a_connection_that_comes_near_later_gets_it_within_a_look() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let far = [0.0, 200_000.0, 0.0];
    let conn1 = l.clients[1].0;
    l.driver.set_viewers(conn1, &[viewer(far, None)]).unwrap();
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(6);
    assert!(l.driver.is_asleep(l.class, id));
    assert!(!l.client(1).has(guid));
    l.driver.set_viewers(conn1, &[viewer([0.0; 3], None)]).unwrap();
    // One look per second (30 frames), plus the round trip to dormancy.
    l.run(40);
    assert_eq!(health(&l, 1, guid), Some(Value::U32(10)));
    assert!(l.client(1).is_dormant(guid));
    assert!(l.driver.is_asleep(l.class, id));
}

#[test]
fn destroying_a_dormant_actor_destroys_it_on_every_client() {
    let (mut l, id, guid) = dormant_thing(2, 4);
    l.events(0);
    l.events(1);
    l.store.despawn(id).unwrap();
    l.run(2);
    for c in 0..2 {
        assert_eq!(l.events(c), vec![ClientEvent::Destroyed { guid }]);
        assert!(!l.client(c).has(guid));
    }
}

#[test]
fn partial_dormancy_asks_the_class_per_connection() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let dormant_conn = l.clients[0].0;
    l.driver.set_dormancy_hook(l.class, Some(Arc::new(move |_, conn| conn == dormant_conn))).unwrap();
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantPartial).unwrap();
    l.run(4);
    assert!(l.client(0).is_dormant(guid));
    assert!(!l.client(1).is_dormant(guid));
    assert!(!l.driver.is_asleep(l.class, id), "held awake by the second connection");
    l.store.set(id, HEALTH, &Value::U32(12)).unwrap();
    l.run(2);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(10)));
    assert_eq!(health(&l, 1, guid), Some(Value::U32(12)));
}

#[test]
fn an_initially_dormant_static_actor_never_opens_until_woken() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let id = l.store.spawn();
    l.move_to(id, [300.0, 0.0, 0.0]);
    l.store.set(id, HEALTH, &Value::U32(3)).unwrap();
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Initial).unwrap();
    let copy = l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    l.run(40);
    assert!(!l.client(0).has(guid), "never opened");
    assert!(l.driver.is_asleep(l.class, id));
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.run(2);
    let (_, bound) = l.client(0).actor(guid).expect("bound");
    assert_eq!(bound, copy);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(3)));
}

#[test]
fn dormancy_needs_the_actor_level() {
    let layout = thing();
    let mut store = ClassStore::new(layout);
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let id = store.spawn();
    driver.assign_guid(class, &store, id).unwrap();
    assert_eq!(driver.set_net_dormancy(class, &store, id, Dormancy::DormantAll), Err(DriverError::ActorLevelOff));
    assert_eq!(driver.flush_net_dormancy(class, &store, id), Err(DriverError::ActorLevelOff));
}

#[test]
fn clients_converge_under_30_percent_loss_with_dormancy_flushes_wakes_spawns_and_joins() {
    use rand::{Rng, SeedableRng};
    for seed in 0..3 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut l = Level::new(every_frame(), 2);
        always_due(&mut l);
        let mut live: Vec<ActorId> = (0..12).map(|i| l.spawn([100.0 * i as f32, 0.0, 0.0], i)).map(|a| a.0).collect();
        for frame in 0..400 {
            if frame == 150 {
                l.add_client();
            }
            let id = live[rng.random_range(0..live.len())];
            match rng.random_range(0..20) {
                0..=5 => l.store.set(id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap(),
                6..=8 => l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap(),
                9 => l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap(),
                10 => l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap(),
                11 if live.len() > 4 => {
                    l.store.despawn(id).unwrap();
                    live.retain(|&a| a != id);
                }
                12 => live.push(l.spawn([rng.random_range(0.0..2000.0), 0.0, 0.0], 1).0),
                _ => {}
            }
            l.step_lossy(&mut rng, 0.3);
        }
        // Everything is flushed and goes dormant, still over the lossy link: a channel closes
        // for dormancy only once what it carried is acknowledged, so every sleeping copy is the
        // server's.
        for &id in &live {
            l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
            l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
        }
        for _ in 0..300 {
            l.step_lossy(&mut rng, 0.3);
        }
        assert!(live.iter().all(|&id| l.driver.is_asleep(l.class, id)), "seed {seed}: all asleep");
        let check = |l: &Level, when: &str| {
            for c in 0..l.clients.len() {
                let mut want: Vec<NetGuid> = live.iter().map(|&id| l.driver.guid_of(l.class, id).unwrap()).collect();
                let mut have: Vec<NetGuid> = l.client(c).actors().map(|a| a.0).collect();
                want.sort();
                have.sort();
                assert_eq!(have, want, "seed {seed}, client {c}, {when}: actors");
                for &id in &live {
                    let guid = l.driver.guid_of(l.class, id).unwrap();
                    let v = l.store.get(id, HEALTH).ok();
                    assert_eq!(health(l, c, guid), v, "seed {seed}, client {c}, {when}, {guid}");
                }
            }
        };
        check(&l, "asleep");
        // The link heals and everything wakes: every client must hold exactly the server's world.
        for &id in &live {
            l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
        }
        l.run(40);
        check(&l, "awake");
    }
}

/// An entry of the dormant cells is for one sleep: an actor that woke, moved away and fell
/// asleep there is not woken again by its old cell (it had been, at every look of a connection
/// near its old place, about once a second for as long as it slept).
#[test]
fn a_sleeper_that_moved_is_not_woken_by_its_old_cell() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let far = [-1.0e6, 0.0, 0.0];
    l.driver.set_viewers(l.clients[1].0, &[viewer(far, None)]).unwrap();
    let (id, _) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(4);
    assert!(l.driver.is_asleep(l.class, id));
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    l.move_to(id, [1.0e6, 0.0, 0.0]);
    // Replicated there once (its channel is still recently relevant), dormant again, asleep.
    l.run(10);
    assert!(l.driver.is_asleep(l.class, id));
    // A connection that never had it comes to its old place.
    l.driver.set_viewers(l.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
    let mut considered = 0;
    for _ in 0..90 {
        considered += l.driver.tick(&mut [&mut l.store]).unwrap().due_actors;
        for (conn, world) in &mut l.clients {
            for p in l.driver.take_packets(*conn).unwrap() {
                world.receive(&p).unwrap();
            }
            l.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
    }
    assert_eq!(considered, 0, "three seconds of looks at its old place");
    assert!(l.driver.is_asleep(l.class, id));
}

/// UE asks about dormancy only for actors that are not owner-only: an owner-only actor (an
/// inventory, a quest state) keeps replicating to its owner whatever its dormancy says.
#[test]
fn an_owner_only_actor_never_goes_dormant() {
    let mut l = Level::new(every_frame(), 2);
    always_due(&mut l);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.settings(id, |s| s.only_relevant_to_owner = true);
    l.driver.set_owner(l.class, &l.store, id, Some(l.clients[0].0), false).unwrap();
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(6);
    assert!(!l.client(0).is_dormant(guid));
    assert!(!l.client(1).has(guid));
    l.store.set(id, HEALTH, &Value::U32(11)).unwrap();
    l.run(2);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(11)), "no flush needed");
    assert!(!l.driver.is_asleep(l.class, id));
}

/// A flush reaches the connections the actor is relevant to. One it is not relevant to keeps its
/// dormant copy, as UE's (its channel stays closed): a dynamic actor is not destroyed there (it
/// had been, closed for relevancy), a static one falls asleep again (its channel had been held
/// open for that connection for good, keeping the actor awake), and the copy, stale, is brought
/// up to date when the actor is relevant there again.
#[test]
fn a_flush_leaves_far_connections_their_dormant_copy_until_they_come_back() {
    for is_static in [false, true] {
        let mut l = Level::new(every_frame(), 2);
        always_due(&mut l);
        let id = l.store.spawn();
        l.move_to(id, [500.0, 0.0, 0.0]);
        l.store.set(id, HEALTH, &Value::U32(10)).unwrap();
        let guid = if is_static {
            for c in 0..2 {
                l.clients[c].1.load_static_actor(DOOR, l.class.0).unwrap();
            }
            l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap()
        } else {
            l.driver.assign_guid(l.class, &l.store, id).unwrap()
        };
        l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
        l.run(6);
        assert!(l.client(1).is_dormant(guid) && l.driver.is_asleep(l.class, id), "static {is_static}");
        // Client 1 goes away for longer than the relevant timeout; the actor changes and is
        // flushed.
        l.driver.set_viewers(l.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
        l.run(200);
        l.store.set(id, HEALTH, &Value::U32(11)).unwrap();
        l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
        l.events(1);
        l.run(60);
        assert_eq!(health(&l, 0, guid), Some(Value::U32(11)), "static {is_static}");
        assert!(l.client(1).has(guid), "static {is_static}: kept");
        assert_eq!(health(&l, 1, guid), Some(Value::U32(10)), "static {is_static}: stale, as UE's");
        assert!(l.events(1).is_empty(), "static {is_static}: nothing sent there");
        assert!(l.driver.is_asleep(l.class, id), "static {is_static}: asleep again");
        // Back near: the stale copy is brought up to date.
        l.driver.set_viewers(l.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
        l.run(45);
        assert_eq!(health(&l, 1, guid), Some(Value::U32(11)), "static {is_static}");
        assert!(l.client(1).is_dormant(guid), "static {is_static}: and dormant again");
        assert!(l.driver.is_asleep(l.class, id), "static {is_static}");
    }
}

/// UE's `FlushNetDormancy` returns at once for an actor that is not dormant: it is not made due.
#[test]
fn flushing_an_awake_actor_leaves_it_to_its_update_frequency() {
    let mut l = Level::new(every_frame(), 1);
    let (id, _) = l.spawn([500.0, 0.0, 0.0], 10);
    l.settings(id, |s| s.frequency.net_update_frequency = 0.5);
    l.run(3);
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    let due = l.driver.tick(&mut [&mut l.store]).unwrap().due_actors;
    assert_eq!(due, 0, "not made due");
}

/// What the client's `is_dormant` says across a wake: a wake with something to send clears it
/// with the first bunch delivered (a flush's too, until its new dormancy close); a wake with
/// nothing to send — no change while the actor slept — sends nothing (UE's reopened channel
/// would send its open; here the woken channel is the same channel), so the client, told
/// nothing, still counts the actor dormant until the first change arrives.
#[test]
fn is_dormant_clears_with_the_first_bunch_after_a_wake() {
    let (mut l, id, guid) = dormant_thing(1, 4);
    assert!(l.client(0).is_dormant(guid));
    let content = |l: &Level| {
        let s = l.driver.connection_stats(l.clients[0].0).unwrap();
        s.packets_sent - s.keep_alives
    };
    // Woken with nothing changed: nothing goes, and the client still counts it dormant.
    let before = content(&l);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.run(4);
    assert_eq!(content(&l), before, "a wake with nothing to send sends nothing");
    assert!(l.client(0).is_dormant(guid), "told nothing of the wake");
    // Its first change clears it.
    l.store.set(id, HEALTH, &Value::U32(12)).unwrap();
    l.run(2);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(12)));
    assert!(!l.client(0).is_dormant(guid), "awake once a bunch of it arrived");
    // Dormant again, then woken with a change made while it slept: the wake's bunch clears it.
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(4);
    assert!(l.client(0).is_dormant(guid));
    l.store.set(id, HEALTH, &Value::U32(13)).unwrap();
    l.run(2);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.run(1);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(13)));
    assert!(!l.client(0).is_dormant(guid), "awake with the wake's bunch");
    l.run(4);
    assert!(!l.client(0).is_dormant(guid), "and stays awake");
    // A flush with a change: awake with its bunch, dormant again with its new close.
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(4);
    l.store.set(id, HEALTH, &Value::U32(14)).unwrap();
    l.events(0);
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    l.run(1);
    assert_eq!(health(&l, 0, guid), Some(Value::U32(14)));
    assert!(!l.client(0).is_dormant(guid), "awake with the flush's bunch");
    l.run(4);
    assert!(l.client(0).is_dormant(guid), "dormant again");
    assert_eq!(l.events(0), vec![ClientEvent::Dormant { guid }]);
}

/// A dormancy close lost, and the game wakes the actor before the feedback that reports the loss
/// arrives (a server's order: feedback comes between ticks, after or before the game's calls):
/// the client never closed the channel, the woken channel is the one it has, and the close
/// goes no more — from the kernel (its row is awake when the loss is known) and from the
/// reference alike (its copy is dormant until its next tick replays the wake, so it queues the
/// close again; the closes' writer, shared, drops a dormancy close whose copy is awake). A
/// helper's review of call order (session 72) named the case as a possible divergence: it is
/// none.
#[test]
fn a_dormancy_close_lost_and_reported_after_a_wake_is_not_sent_again() {
    use shadowrep::net::Action;
    use shadowrep::reference::frame::ReferenceFrame;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let mut r = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).unwrap();
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 10);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    // Another actor changes every frame: each frame sends a packet.
    let (other, _) = l.spawn([600.0, 0.0, 0.0], 0);
    let mut frame = 0;
    // Until a frame closes the channel for dormancy: its packets are lost.
    loop {
        frame += 1;
        assert!(frame < 50, "the actor never went dormant");
        l.store.set(other, HEALTH, &Value::U32(frame)).unwrap();
        let packets = l.tick_beside(&mut r, frame);
        if l.decisions(0).sends.iter().any(|s| s.guid == guid && s.action == Action::Dormant) {
            break;
        }
        l.deliver_beside(&mut r, &packets);
    }
    assert!(!l.client(0).is_dormant(guid));
    // The next frame's packets arrive; the game wakes the actor; then the feedback that reports
    // the lost packet arrives.
    frame += 1;
    l.store.set(other, HEALTH, &Value::U32(frame)).unwrap();
    let packets = l.tick_beside(&mut r, frame);
    for p in &packets {
        l.clients[0].1.receive(p).expect("a well-formed packet");
    }
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    let fb = l.clients[0].1.feedback();
    let conn = l.clients[0].0;
    l.driver.receive_feedback(conn, &fb).expect("decodes");
    r.receive_feedback(&l.driver, conn, &fb).expect("decodes");
    assert_eq!(l.driver.connection_stats(conn).unwrap().packets_lost, 1, "the close's packet, known lost");
    l.store.set(id, HEALTH, &Value::U32(11)).unwrap();
    for _ in 0..4 {
        frame += 1;
        let packets = l.tick_beside(&mut r, frame);
        l.deliver_beside(&mut r, &packets);
    }
    assert!(!l.client(0).is_dormant(guid), "never closed: awake");
    assert!(!l.events(0).contains(&ClientEvent::Dormant { guid }), "no dormancy close ever arrived");
    assert_eq!(health(&l, 0, guid), Some(Value::U32(11)));
}

/// The game makes an actor dormant (and flushes another) in the frame it spawns them, before
/// any tick gave them a NetGUID — UE's pickup spawned dormant. Each call gives the actor its GUID
/// there (until session 75 they were refused as `StaleActor`, "actor 0:0 does not exist"): the
/// dormant one opens with its state, then sleeps once its open is acknowledged; the reference
/// beside decides alike.
#[test]
fn an_actor_set_dormant_before_any_tick_saw_it_opens_then_sleeps() {
    use shadowrep::reference::frame::ReferenceFrame;
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let mut r = ReferenceFrame::new(&l.driver, &mut [&mut l.store]).unwrap();
    let pickup = l.store.spawn();
    l.move_to(pickup, [500.0, 0.0, 0.0]);
    l.store.set(pickup, HEALTH, &Value::U32(7)).unwrap();
    assert_eq!(l.driver.guid_of(l.class, pickup), None, "no tick has seen it");
    l.driver.set_net_dormancy(l.class, &l.store, pickup, Dormancy::DormantAll).unwrap();
    let guid = l.driver.guid_of(l.class, pickup).expect("the call gave it its GUID");
    let other = l.store.spawn();
    l.move_to(other, [600.0, 0.0, 0.0]);
    l.driver.flush_net_dormancy(l.class, &l.store, other).unwrap();
    let other_guid = l.driver.guid_of(l.class, other).expect("the flush gave it its GUID");
    for frame in 1..=8 {
        let packets = l.tick_beside(&mut r, frame);
        l.deliver_beside(&mut r, &packets);
    }
    assert!(l.client(0).has(guid) && l.client(0).has(other_guid));
    assert!(l.client(0).is_dormant(guid), "opened, then dormant");
    assert!(!l.client(0).is_dormant(other_guid), "a flush leaves an awake actor awake");
    assert_eq!(health(&l, 0, guid), Some(Value::U32(7)));
    // A call naming an actor the game despawned is still refused, and gives nothing a GUID.
    let gone = l.store.spawn();
    l.store.despawn(gone).unwrap();
    let refused = l.driver.set_net_dormancy(l.class, &l.store, gone, Dormancy::DormantAll);
    assert_eq!(refused, Err(shadowrep::net::DriverError::StaleActor(gone)));
    assert_eq!(
        l.driver.flush_net_dormancy(l.class, &l.store, gone),
        Err(shadowrep::net::DriverError::StaleActor(gone))
    );
}
