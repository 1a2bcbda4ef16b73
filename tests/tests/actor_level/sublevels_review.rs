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
