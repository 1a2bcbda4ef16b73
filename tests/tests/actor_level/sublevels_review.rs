//! An adversarial review of sublevels: unloads and loads with lost packets and late feedback,
//! sub-objects, and forged LevelUnloaded closes.

use super::*;
use shadowrep::wire::open::CloseReason;

use super::sublevels::{level, stream, HALL, LAMP};

/// A tick whose packets to client 0 are lost and whose feedback does not come yet.
fn dark_step(l: &mut Level) {
    l.driver.tick(&mut [&mut l.store]).unwrap();
    let _ = l.driver.take_packets(l.clients[0].0).unwrap();
}

#[test]
fn a_forged_level_unloaded_close_of_a_dynamic_actor_does_not_wedge_the_connection() {
    let mut l = level(1);
    let (id, guid) = l.spawn([500.0, 0.0, 0.0], 1);
    let (other, g) = l.spawn([600.0, 0.0, 0.0], 1);
    l.run(3);
    let seq = l.client(0).highest_received().0 + 1;
    let forged = crafted(seq, |w| shadowrep::wire::packet::write_close_for(w, guid, CloseReason::LevelUnloaded, None));
    l.clients[0].1.receive(&forged).unwrap();
    assert!(!l.client(0).has(guid));
    for frame in 0..120u32 {
        l.store.set(id, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.step_tolerant();
    }
    assert_eq!(l.client(0).value(g, HEALTH), Some(Value::U32(219)), "the connection goes on");
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(219)), "the actor is back");
}

#[test]
fn a_forged_level_unloaded_close_of_a_static_actor_does_not_wedge_the_connection() {
    let mut l = level(1);
    let lamp = l.store.spawn();
    l.move_to(lamp, [500.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, lamp, LAMP).unwrap();
    l.driver.set_sublevel(l.class, &l.store, lamp, HALL).unwrap();
    stream(&mut l, 0, &[LAMP], true);
    l.run(3);
    assert!(l.client(0).has(guid));
    let seq = l.client(0).highest_received().0 + 1;
    let forged = crafted(seq, |w| shadowrep::wire::packet::write_close_for(w, guid, CloseReason::LevelUnloaded, None));
    l.clients[0].1.receive(&forged).unwrap();
    assert!(!l.client(0).has(guid));
    for frame in 0..120u32 {
        l.store.set(lamp, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.step_tolerant();
    }
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(219)), "the lamp is back");
}

/// An owner in the hall near the viewer with a sub-object, the hall loaded by client 0:
/// (owner, its GUID, sub-object, its GUID).
fn owner_and_sub_object_in_the_hall(l: &mut Level) -> (ActorId, NetGuid, ActorId, NetGuid) {
    let (owner, og) = l.spawn([500.0, 0.0, 0.0], 1);
    l.driver.set_sublevel(l.class, &l.store, owner, HALL).unwrap();
    let sub = l.store.spawn();
    let sg = l.driver.register_sub_object(l.class, &l.store, sub, og, Default::default()).unwrap();
    stream(l, 0, &[], true);
    (owner, og, sub, sg)
}

#[test]
fn a_lost_unload_close_then_a_load_leaves_no_destroyed_sub_object_on_the_client() {
    // The unload's close of the owner is lost, the client loads the hall again before the
    // server hears of the loss (the owner has a row again: the close does not go again), and
    // the sub-object is destroyed meanwhile.
    let mut l = level(1);
    let (owner, og, sub, sg) = owner_and_sub_object_in_the_hall(&mut l);
    l.run(3);
    assert!(l.client(0).has(og) && l.client(0).has(sg));
    stream(&mut l, 0, &[], false);
    dark_step(&mut l);
    stream(&mut l, 0, &[], true);
    l.store.despawn(sub).unwrap();
    l.store.set(owner, HEALTH, &Value::U32(5)).unwrap();
    l.run(10);
    assert_eq!(l.client(0).value(og, HEALTH), Some(Value::U32(5)));
    assert!(!l.client(0).has(sg), "the destroyed sub-object stays on the client");
}

#[test]
fn quick_unload_and_load_over_a_lossy_link_leaves_the_client_current() {
    use rand::SeedableRng;
    for seed in 0..40u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut l = level(1);
        let (owner, og, sub, sg) = owner_and_sub_object_in_the_hall(&mut l);
        l.run(3);
        for i in 0..30u32 {
            l.store.set(owner, HEALTH, &Value::U32(10 + i)).unwrap();
            l.store.set(sub, HEALTH, &Value::U32(50 + i)).unwrap();
            if i % 3 == 0 {
                stream(&mut l, 0, &[], false);
                if i % 2 == 0 {
                    stream(&mut l, 0, &[], true);
                }
            } else if !l.driver.sublevel_loaded(l.clients[0].0, HALL).unwrap() {
                stream(&mut l, 0, &[], true);
            }
            l.step_lossy(&mut rng, 0.4);
        }
        l.run(20);
        assert_eq!(l.client(0).value(og, HEALTH), Some(Value::U32(39)), "seed {seed}");
        assert_eq!(l.client(0).value(sg, HEALTH), Some(Value::U32(79)), "seed {seed}");
    }
}

#[test]
fn a_lost_unload_close_is_sent_again_while_the_channel_opened_since_has_sent_no_open() {
    // The unload's close is lost; the hall is loaded again while the packet window is full,
    // so the actor's new channel opens but its open cannot go; then the server hears of the
    // loss. The client's copy is the old channel's: the close must go again — else the hall,
    // unloaded once more before the open went, leaves that copy on the client for good (a
    // channel that never sent its open ends without a close).
    for unload_again in [true, false] {
        let mut l = level(1);
        let (id, guid) = l.spawn([500.0, 0.0, 0.0], 1);
        l.driver.set_sublevel(l.class, &l.store, id, HALL).unwrap();
        // Something in the persistent level that changes every frame keeps packets going.
        let (ticker, tg) = l.spawn([600.0, 0.0, 0.0], 0);
        stream(&mut l, 0, &[], true);
        l.run(3);
        assert!(l.client(0).has(guid));
        stream(&mut l, 0, &[], false);
        dark_step(&mut l);
        // Fill the window with packets that get lost (the client is heard from all along);
        // one of them will arrive late.
        let conn = l.clients[0].0;
        let mut late = Vec::new();
        for frame in 0..300u32 {
            l.store.set(ticker, HEALTH, &Value::U32(frame)).unwrap();
            l.driver.tick(&mut [&mut l.store]).unwrap();
            let packets = l.driver.take_packets(conn).unwrap();
            if frame == 100 {
                late = packets;
            }
            l.driver.heard_from(conn).unwrap();
        }
        assert!(!late.is_empty());
        stream(&mut l, 0, &[], true);
        l.driver.tick(&mut [&mut l.store]).unwrap();
        assert_eq!(l.driver.channels(conn).unwrap().0, 2, "the hall's actor has a channel again");
        let _ = l.driver.take_packets(conn).unwrap();
        assert!(
            l.decisions(0).sends.iter().all(|s| s.guid != guid || s.bits == 0),
            "the window is full: its open does not go"
        );
        // The late packet: its feedback tells the server the unload's close was lost.
        for p in &late {
            l.clients[0].1.receive(p).unwrap();
        }
        l.driver.receive_feedback(conn, &l.clients[0].1.feedback()).unwrap();
        if unload_again {
            stream(&mut l, 0, &[], false);
        }
        l.run(5);
        assert_eq!(l.client(0).value(tg, HEALTH), Some(Value::U32(299)), "the connection goes on");
        assert_eq!(l.client(0).has(guid), !unload_again, "unloaded again: {unload_again}");
    }
}
