//! Calls to clients, honest traffic: who a call reaches, reliable calls once and in order through
//! loss and past the 16-bit wrap, calls waiting for their channel's open, targets that go meanwhile.

use crate::common::*;
use shadowrep::client::RpcEvent;
use shadowrep::link::LinkConfig;
use std::sync::Arc;

#[test]
fn reliable_calls_arrive_once_and_in_order_through_loss_and_unreliable_ones_at_most_once() {
    let (mut w, ids) = world(6, 3, LinkConfig::perfect(1));
    for _ in 0..4 {
        w.step();
    }
    w.set_links(lossy(5));
    let mut events: Vec<Vec<RpcEvent>> = vec![Vec::new(); 3];
    let calls = 300u32;
    for n in 0..calls {
        let id = ids[n as usize % ids.len()];
        call(&mut w, id, SHOUT, n).unwrap();
        call(&mut w, id, PING, n).unwrap();
        if n % 2 == 0 {
            w.step();
            for (c, e) in events.iter_mut().enumerate() {
                e.extend(w.clients[c].world.take_rpcs());
            }
        }
    }
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..40 {
        w.step();
    }
    for (c, e) in events.iter_mut().enumerate() {
        e.extend(w.clients[c].world.take_rpcs());
        let reliable = numbers(e, SHOUT);
        assert_eq!(reliable, (0..calls).collect::<Vec<_>>(), "client {c}: every reliable call once, in call order");
        assert!(e.iter().all(|e| e.reliable == (e.name == SHOUT)));
        let unreliable = numbers(e, PING);
        assert!(unreliable.windows(2).all(|p| p[0] < p[1]), "client {c}: unreliable calls at most once, in order");
        assert!(unreliable.len() < calls as usize && unreliable.len() > calls as usize / 3, "{}", unreliable.len());
        let stats = w.driver.connection_stats(w.clients[c].conn).unwrap();
        assert!(stats.rpcs_resent > 0, "loss was exercised");
        assert_eq!(stats.rpcs_overflowed, 0);
        let cs = w.clients[c].world.stats();
        assert_eq!(cs.rpcs_delivered as usize, reliable.len() + unreliable.len());
        assert_eq!(cs.rpcs_conflicts, 0);
    }
    // A call goes again only in place of a packet the client reported missing (it drops late
    // packets unread): honest traffic brings no call twice.
    assert!(w.clients.iter().all(|c| c.world.stats().rpcs_stale == 0));
    w.assert_converged();
}

#[test]
fn a_client_call_reaches_its_owner_and_a_multicast_everyone() {
    let (mut w, ids) = world(2, 3, LinkConfig::perfect(1));
    w.set_owner(0, ids[0], Some(1), true);
    w.step();
    w.step();
    call(&mut w, ids[0], WHISPER, 1).unwrap();
    call(&mut w, ids[0], HINT, 2).unwrap();
    call(&mut w, ids[1], WHISPER, 3).unwrap(); // owned by nobody: reaches no one
    call(&mut w, ids[1], SHOUT, 4).unwrap();
    // Counted, for the game (UE runs such a call on the server, where it would).
    assert_eq!(w.driver.rpcs_without_owner(), 1, "the Client call on the pawn nobody owns");
    for _ in 0..3 {
        w.step();
    }
    for c in 0..3 {
        let e = w.clients[c].world.take_rpcs();
        let mut got: Vec<u32> = e.iter().flat_map(|e| numbers(std::slice::from_ref(e), &e.name)).collect();
        got.sort_unstable();
        let want = if c == 1 { vec![1, 2, 4] } else { vec![4] };
        assert_eq!(got, want, "client {c}");
        let pawn1 = w.guid(0, ids[1]);
        assert!(e.iter().filter(|e| e.name == SHOUT).all(|e| e.guid == pawn1 && e.class == 0));
        // A Client call is another connection's business, not a call dropped here.
        let stats = w.driver.connection_stats(w.clients[c].conn).unwrap();
        assert_eq!((stats.rpcs_sent, stats.rpcs_dropped), (want.len() as u64, 0), "client {c}");
    }
}

#[test]
fn a_client_call_never_reaches_the_next_connection_in_its_owners_slot() {
    // Called for the owner, who leaves before the tick; the next player to join takes the slot
    // (and gets the actor's channel this tick): the call was the leaver's, and goes nowhere.
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(0));
    w.set_owner(0, ids[0], Some(0), true);
    w.step();
    call(&mut w, ids[0], WHISPER, 1).unwrap();
    call(&mut w, ids[0], HINT, 2).unwrap();
    let leaver = w.clients.remove(0).conn;
    w.driver.remove_connection(leaver).unwrap();
    w.add_client(false, LinkConfig::perfect(0));
    for _ in 0..4 {
        w.step();
    }
    assert!(w.clients[0].world.take_rpcs().is_empty(), "the leaver's calls reached the next player");
    let guid = w.guid(0, ids[0]);
    assert!(w.clients[0].world.has(guid), "the newcomer has the actor");
}

#[test]
fn a_reliable_call_waits_for_its_actors_open_to_be_acknowledged() {
    let (mut w, _) = world(0, 1, LinkConfig::perfect(1));
    let id = w.spawn(0);
    // The first tick's packet, the actor's open, is lost.
    let mut stores: Vec<_> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).unwrap();
    assert!(!w.driver.take_packets(w.clients[0].conn).unwrap().is_empty());
    // Called before the loss is known: the unreliable call goes at once (its channel's open
    // went) and the client, without the actor, drops it; the reliable one waits for the open's
    // acknowledgement — sent now, it would be dropped as well, and lost for good.
    call(&mut w, id, SHOUT, 7).unwrap();
    call(&mut w, id, PING, 8).unwrap();
    for _ in 0..12 {
        w.step();
    }
    let e = w.clients[0].world.take_rpcs();
    assert_eq!(numbers(&e, SHOUT), vec![7]);
    assert_eq!(numbers(&e, PING), Vec::<u32>::new());
    assert_eq!(w.clients[0].world.stats().rpcs_dropped, 1, "the unreliable call found no actor");
    assert_eq!(w.driver.connection_stats(w.clients[0].conn).unwrap().rpcs_sent, 2);
}

#[test]
fn a_reliable_call_whose_actor_is_destroyed_in_flight_does_not_hold_up_the_next() {
    let (mut w, ids) = world(2, 1, LinkConfig::perfect(0));
    w.step();
    w.step();
    call(&mut w, ids[0], SHOUT, 1).unwrap();
    // Its packet is lost.
    let mut stores: Vec<_> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).unwrap();
    assert!(!w.driver.take_packets(w.clients[0].conn).unwrap().is_empty());
    w.despawn(0);
    call(&mut w, ids[1], SHOUT, 2).unwrap();
    for _ in 0..12 {
        w.step();
    }
    let e = w.clients[0].world.take_rpcs();
    // The first call's actor was gone when it came again; it was made while the client had the
    // actor, and UE's channel runs it before its close: delivered, in its turn (until session 66
    // it was dropped and counted).
    assert_eq!(numbers(&e, SHOUT), vec![1, 2]);
    let dropped =
        w.clients[0].world.stats().rpcs_dropped + w.driver.connection_stats(w.clients[0].conn).unwrap().rpcs_dropped;
    assert_eq!(dropped, 0);
}

#[test]
fn a_reliable_call_to_an_actor_destroyed_before_its_open_was_acknowledged_is_dropped() {
    let (mut w, _) = world(0, 1, LinkConfig::perfect(2));
    let id = w.spawn(0);
    let other = w.spawn(0);
    w.step();
    call(&mut w, id, SHOUT, 1).unwrap();
    w.despawn(0); // `id`, before its open's acknowledgement came back
    call(&mut w, other, SHOUT, 2).unwrap();
    for _ in 0..12 {
        w.step();
    }
    let e = w.clients[0].world.take_rpcs();
    assert_eq!(numbers(&e, SHOUT), vec![2]);
    // Its actor gone by the tick, the call found no channel to go down.
    let stats = w.driver.connection_stats(w.clients[0].conn).unwrap();
    assert_eq!((stats.rpcs_without_channel, stats.rpcs_dropped, stats.rpcs_sent), (1, 0, 1));
}

#[test]
fn the_readme_example_runs() {
    // README "Remote procedure calls", as written there.
    use shadowrep::net::NetDriver;
    use shadowrep::prelude::*;

    let layout = Arc::new(
        ClassBuilder::new("Pawn")
            .property(PropertyDecl::new("Health", PropType::U16))
            .rpc(RpcDecl::client("ClientHitConfirmed").reliable().param(PropertyDecl::new("Damage", PropType::U16)))
            .rpc(RpcDecl::multicast("PlayFootstep").param(PropertyDecl::new("Surface", PropType::U8)))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    let pawn = store.spawn();
    driver.set_owner(class, &store, pawn, Some(conn), true).unwrap();
    for frame in 0..3 {
        if frame == 1 {
            driver.call_rpc(class, &store, pawn, "ClientHitConfirmed", &[Value::U16(35)]).unwrap();
            driver.call_rpc(class, &store, pawn, "PlayFootstep", &[Value::U8(2)]).unwrap();
        }
        driver.tick(&mut [&mut store]).unwrap();
        for packet in driver.take_packets(conn).unwrap() {
            client.receive(&packet).unwrap();
        }
        driver.receive_feedback(conn, &client.feedback()).unwrap();
    }
    let calls = client.take_rpcs();
    // Reliable calls first (numbered ones not in flight), then the frame's unreliable ones.
    assert_eq!(calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ClientHitConfirmed", "PlayFootstep"]);
    assert_eq!(calls[0].args, vec![Value::U16(35)]);
}

/// Reliable calls are numbered in call order but for a call on an actor whose open is not
/// acknowledged yet, numbered when it is: a later call on an acknowledged actor overtakes it (each
/// actor's calls keep their order; UE orders per channel). (Found by a review, which read the
/// first documentation's "the order of every reliable call" as a promise.)
#[test]
fn a_call_on_an_actor_whose_open_is_unacknowledged_is_overtaken_by_later_calls_on_others() {
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(1));
    for _ in 0..3 {
        w.step();
    }
    let fresh = w.spawn(0);
    call(&mut w, fresh, SHOUT, 1).unwrap();
    call(&mut w, ids[0], SHOUT, 2).unwrap();
    for _ in 0..6 {
        w.step();
    }
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), SHOUT), vec![2, 1]);
}

/// Honest traffic past 65 536 reliable numbers, through loss and reordering: every call once,
/// in order (the client rebuilds numbers from 16 bits).
#[test]
fn reliable_numbers_wrap_past_16_bits_through_loss() {
    let (mut w, ids) = world(3, 1, LinkConfig::perfect(1));
    for _ in 0..3 {
        w.step();
    }
    w.set_links(LinkConfig { loss: 0.2, duplicate: 0.05, reorder: 0.1, latency: 1, jitter: 1, seed: 3 });
    let total = 70_000u32;
    let mut got = Vec::new();
    let mut n = 0;
    while n < total {
        for _ in 0..40 {
            if n < total {
                call(&mut w, ids[n as usize % 3], SHOUT, n).unwrap();
                n += 1;
            }
        }
        w.step();
        got.extend(numbers(&w.clients[0].world.take_rpcs(), SHOUT));
    }
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..60 {
        w.step();
    }
    got.extend(numbers(&w.clients[0].world.take_rpcs(), SHOUT));
    let stats = w.driver.connection_stats(w.clients[0].conn).unwrap();
    assert_eq!(stats.rpcs_overflowed, 0, "{stats:?}");
    assert_eq!(got.len(), total as usize);
    assert!(got.iter().copied().eq(0..total));
}

/// Honest loss: call 1 (actor A) is lost, call 2 (actor B) arrives and is held for it; B is
/// destroyed before call 1's resend comes. Call 2 reached the client while B was there (UE,
/// ordered per channel, runs it before B's close): it is delivered in its turn (a review found
/// it dropped, its actor looked up only then).
#[test]
fn a_reliable_call_held_behind_a_lost_one_is_delivered_though_its_actor_went_meanwhile() {
    let (mut w, ids) = world(2, 1, LinkConfig::perfect(0));
    for _ in 0..3 {
        w.step();
    }
    let conn = w.clients[0].conn;
    call(&mut w, ids[0], SHOUT, 1).unwrap();
    {
        let mut stores: Vec<_> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).unwrap();
    }
    assert!(!w.driver.take_packets(conn).unwrap().is_empty()); // lost
    call(&mut w, ids[1], SHOUT, 2).unwrap();
    {
        let mut stores: Vec<_> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).unwrap();
    }
    for p in w.driver.take_packets(conn).unwrap() {
        w.clients[0].world.receive(&p).unwrap(); // call 2 arrives while B is there
    }
    w.driver.receive_feedback(conn, &w.clients[0].world.feedback()).unwrap();
    w.despawn(1); // B
    for _ in 0..5 {
        w.step();
    }
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), SHOUT), vec![1, 2]);
}

/// A Client call reaches its owner's connection by the connection's id, which is never given
/// again — not by its slot: a player who joined into a departed player's slot gets the calls on
/// the actors it owns (a mutant taking the slot for the id sent them nowhere).
#[test]
fn a_client_call_reaches_an_owner_that_took_a_departed_players_slot() {
    let (mut w, ids) = world(1, 2, LinkConfig::perfect(0));
    let leaver = w.clients.remove(0).conn;
    w.driver.remove_connection(leaver).unwrap();
    w.add_client(false, LinkConfig::perfect(0)); // slot 0 again, a new id
    w.set_owner(0, ids[0], Some(1), true);
    for _ in 0..3 {
        w.step();
    }
    call(&mut w, ids[0], WHISPER, 5).unwrap();
    call(&mut w, ids[0], HINT, 6).unwrap();
    for _ in 0..3 {
        w.step();
    }
    let got = w.clients[1].world.take_rpcs();
    assert_eq!((numbers(&got, WHISPER), numbers(&got, HINT)), (vec![5], vec![6]), "the owner's calls");
    assert!(w.clients[0].world.take_rpcs().is_empty(), "another player's");
}

/// A reliable call waiting for its channel's open to be acknowledged is dropped and counted
/// (`rpcs_dropped`) when the channel closes first — its actor destroyed a tick after the call —
/// and holds up no later call (a mutant that stopped counting it lived).
#[test]
fn a_reliable_call_whose_channel_closes_while_it_waits_is_dropped_and_counted() {
    let (mut w, _) = world(0, 1, LinkConfig::perfect(2));
    let id = w.spawn(0);
    let other = w.spawn(0);
    w.step(); // the opens go
    call(&mut w, id, SHOUT, 1).unwrap();
    w.step(); // fanned out: it waits for the open's acknowledgement
    let conn = w.clients[0].conn;
    let stats = w.driver.connection_stats(conn).unwrap();
    assert_eq!((stats.rpcs_without_channel, stats.rpcs_dropped, stats.rpcs_sent), (0, 0, 0));
    w.despawn(0); // `id`
    call(&mut w, other, SHOUT, 2).unwrap();
    for _ in 0..12 {
        w.step();
    }
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), SHOUT), vec![2]);
    let stats = w.driver.connection_stats(conn).unwrap();
    assert_eq!((stats.rpcs_without_channel, stats.rpcs_dropped, stats.rpcs_sent), (0, 1, 1));
}
