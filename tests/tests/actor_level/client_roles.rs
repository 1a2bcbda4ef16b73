//! The client's role (UE's `Role` / `RemoteRole` swap): an actor's open tells each client
//! whether it holds an autonomous proxy (its connection owns the actor, set autonomous) or a
//! simulated one (UE's downgrade of `RemoteRole` for non-owners); a role that changes on an open
//! channel goes in the open sent again, once, and again only if that bunch is lost; a torn-off
//! actor is the client's own (Authority).

use super::*;
use rand::SeedableRng;
use shadowrep::net::{Dormancy, NetRole};

/// Delivers nothing of this frame to client `c` (its packets are lost) and tells the server so
/// at the next feedback.
fn step_losing(level: &mut Level, c: usize) {
    level.driver.tick(&mut [&mut level.store]).expect("tick");
    for (i, (conn, world)) in level.clients.iter_mut().enumerate() {
        for p in level.driver.take_packets(*conn).expect("live") {
            if i != c {
                world.receive(&p).expect("a well-formed packet");
            }
        }
        if i != c {
            level.driver.receive_feedback(*conn, &world.feedback()).expect("decodes");
        }
    }
}

/// Bits written for actor `guid` to client `c` in the last frame (0 when nothing was).
fn bits_for(level: &Level, c: usize, guid: NetGuid) -> u32 {
    level.decisions(c).sends.iter().filter(|s| s.guid == guid).map(|s| s.bits).sum()
}

fn roles(level: &Level, guid: NetGuid) -> Vec<Option<NetRole>> {
    level.clients.iter().map(|(_, w)| w.role(guid)).collect()
}

fn role_events(level: &mut Level, c: usize) -> Vec<ClientEvent> {
    level.events(c).into_iter().filter(|e| matches!(e, ClientEvent::RoleChanged { .. })).collect()
}

use NetRole::{AutonomousProxy as Autonomous, SimulatedProxy as Simulated};

#[test]
fn the_open_gives_the_owner_an_autonomous_proxy_and_everyone_else_a_simulated_one() {
    let mut level = Level::new(every_frame(), 3);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    let (crate_id, crate_guid) = level.spawn([200.0, 0.0, 0.0], 10);
    let me = level.clients[1].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    // Owned but not autonomous (a weapon the player holds): simulated everywhere.
    level.driver.set_owner(level.class, &level.store, crate_id, Some(me), false).unwrap();
    level.run(2);
    assert_eq!(roles(&level, guid), [Some(Simulated), Some(Autonomous), Some(Simulated)]);
    assert_eq!(roles(&level, crate_guid), [Some(Simulated); 3]);
    for c in 0..3 {
        assert_eq!(role_events(&mut level, c), [], "a first role comes with the spawn: no change event");
        let expected = if c == 1 { Autonomous } else { Simulated };
        assert_eq!(level.driver.client_role(level.class, pawn, level.clients[c].0), Some(expected));
    }
    assert_eq!(level.client(0).role(NetGuid(1 << 40)), None, "an actor the client lacks has no role");
}

#[test]
fn a_possession_after_the_open_reaches_the_owner_alone_in_one_reopen() {
    let mut level = Level::new(every_frame(), 2);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    level.run(3);
    assert_eq!(roles(&level, guid), [Some(Simulated); 2]);
    for c in 0..2 {
        level.events(c);
        assert_eq!(bits_for(&level, c, guid), 0, "at rest");
    }
    // Client 0 possesses the pawn: nothing about it changed but its role there.
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.step();
    assert_eq!(roles(&level, guid), [Some(Autonomous), Some(Simulated)]);
    assert_eq!(level.events(0), [ClientEvent::RoleChanged { guid, role: Autonomous }]);
    assert_eq!(role_events(&mut level, 1), [], "the other client's role did not change");
    assert!(bits_for(&level, 0, guid) > 0, "the owner gets the open again");
    assert_eq!(bits_for(&level, 1, guid), 0, "the other client gets nothing");
    // Delivered: it is not sent again.
    for _ in 0..3 {
        level.step();
        assert_eq!(bits_for(&level, 0, guid), 0, "a delivered role costs nothing more");
    }
    // Unpossessed: back to simulated.
    level.driver.set_owner(level.class, &level.store, pawn, None, false).unwrap();
    level.step();
    assert_eq!(roles(&level, guid), [Some(Simulated); 2]);
    assert_eq!(level.events(0), [ClientEvent::RoleChanged { guid, role: Simulated }]);
}

#[test]
fn a_role_changed_and_changed_back_between_frames_sends_nothing() {
    let mut level = Level::new(every_frame(), 1);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.run(3);
    assert_eq!(bits_for(&level, 0, guid), 0, "at rest");
    // Handed to nobody, then back, before the server ticks.
    level.driver.set_owner(level.class, &level.store, pawn, None, false).unwrap();
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    for _ in 0..2 {
        level.step();
        assert_eq!(bits_for(&level, 0, guid), 0, "the client still has the role it was told");
    }
    assert_eq!(level.client(0).role(guid), Some(Autonomous));
    assert_eq!(role_events(&mut level, 0), []);
}

#[test]
fn a_lost_role_goes_again_and_a_delivered_one_does_not() {
    let mut level = Level::new(every_frame(), 2);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    level.run(3);
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    // The frame carrying client 0's new role is lost.
    step_losing(&mut level, 0);
    assert_eq!(level.client(0).role(guid), Some(Simulated), "lost: the client has the old role");
    // Its loss comes to light once a later packet (a keep-alive, the connection being quiet)
    // is answered; the role goes again.
    level.run(30);
    assert_eq!(roles(&level, guid), [Some(Autonomous), Some(Simulated)]);
    assert_eq!(level.events(0).iter().filter(|e| matches!(e, ClientEvent::RoleChanged { .. })).count(), 1);
    // Lost again while the role flips back: the current role (simulated) is what goes.
    level.driver.set_owner(level.class, &level.store, pawn, None, false).unwrap();
    step_losing(&mut level, 0);
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.driver.set_owner(level.class, &level.store, pawn, Some(level.clients[1].0), true).unwrap();
    level.run(30);
    assert_eq!(roles(&level, guid), [Some(Simulated), Some(Autonomous)]);
    // Settled: nothing left owed.
    for c in 0..2 {
        assert_eq!(bits_for(&level, c, guid), 0, "client {c}: nothing left owed");
    }
}

#[test]
fn roles_converge_under_heavy_loss_while_possession_changes_at_random() {
    use rand::Rng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut level = Level::new(every_frame(), 4);
    always_due(&mut level);
    let pawns: Vec<(ActorId, NetGuid)> = (0..12).map(|i| level.spawn([100.0 * i as f32, 0.0, 0.0], 10)).collect();
    for frame in 0..300 {
        if frame % 3 == 0 {
            let (id, _) = pawns[rng.random_range(0..pawns.len())];
            let owner = rng.random_bool(0.8).then(|| level.clients[rng.random_range(0..4)].0);
            let autonomous = rng.random_bool(0.7);
            level.driver.set_owner(level.class, &level.store, id, owner, autonomous).unwrap();
        }
        level.step_lossy(&mut rng, 0.4);
    }
    level.run(20);
    for &(id, guid) in &pawns {
        for (c, (conn, world)) in level.clients.iter().enumerate() {
            let server = level.driver.client_role(level.class, id, *conn);
            assert_eq!(world.role(guid), server, "client {c}, actor {guid}");
        }
    }
}

#[test]
fn a_role_changed_while_dormant_reaches_the_client_when_the_actor_wakes() {
    let mut level = Level::new(every_frame(), 1);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    level.run(3);
    level.driver.set_net_dormancy(level.class, &level.store, pawn, Dormancy::DormantAll).unwrap();
    level.run(5);
    assert!(level.client(0).is_dormant(guid));
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.run(3);
    assert_eq!(level.client(0).role(guid), Some(Simulated), "a dormant actor replicates nothing (UE's)");
    level.driver.set_net_dormancy(level.class, &level.store, pawn, Dormancy::Awake).unwrap();
    level.run(3);
    assert_eq!(level.client(0).role(guid), Some(Autonomous));
}

#[test]
fn a_torn_off_actor_is_the_clients_own_and_a_sub_object_answers_its_owners_role() {
    let mut level = Level::new(every_frame(), 2);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    let id = level.store.spawn();
    let weapon_guid = level
        .driver
        .register_sub_object(level.class, &level.store, id, guid, shadowrep::net::SubObjectCondition::None)
        .unwrap();
    let me = level.clients[1].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.run(3);
    assert_eq!(roles(&level, weapon_guid), [Some(Simulated), Some(Autonomous)]);
    level.driver.tear_off(level.class, &level.store, pawn).unwrap();
    level.run(3);
    assert_eq!(roles(&level, guid), [Some(NetRole::Authority); 2]);
    assert_eq!(level.driver.client_role(level.class, pawn, me), Some(NetRole::Authority));
}

/// A role record of a closed channel outlived it (until the next prune, every 64 frames); a
/// new channel of the same actor that got the old channel's 8-bit epoch back (the connection
/// numbered 256 channels meanwhile) took that record for its own: its open told "simulated", the
/// record still said "told autonomous", a later possession owed nothing, and the client kept a
/// simulated proxy for good (a review found it). A new channel now drops its pair's record.
#[test]
fn a_stale_role_record_of_a_closed_channel_does_not_hide_a_later_possession() {
    use super::sublevels::{stream, HALL};
    let mut level = Level::new(every_frame(), 1);
    always_due(&mut level);
    // The pawn: the connection's first channel (epoch 0), in the hall.
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    level.driver.set_sublevel(level.class, &level.store, pawn, HALL).unwrap();
    stream(&mut level, 0, &[], true);
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    level.run(2);
    assert_eq!(level.client(0).role(guid), Some(Autonomous));
    // The hall unloads: the pawn's channel closes; then the pawn is unpossessed.
    stream(&mut level, 0, &[], false);
    level.step();
    assert!(!level.client(0).has(guid));
    level.driver.set_owner(level.class, &level.store, pawn, None, false).unwrap();
    // 255 other channels open (epochs 1..=255).
    for i in 0..255 {
        level.spawn([200.0 + i as f32, 0.0, 0.0], 1);
    }
    level.run(8);
    assert_eq!(level.driver.channels(me).unwrap().0, 255);
    // The hall loads again: the pawn's new channel is numbered 256 = 0 again.
    stream(&mut level, 0, &[], true);
    level.run(2);
    assert_eq!(level.client(0).role(guid), Some(Simulated));
    // Possessed again: the client must hear of it.
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), true).unwrap();
    // (Past two prunings: the record names a live channel, so it stays.)
    level.run(150);
    assert_eq!(level.driver.client_role(level.class, pawn, me), Some(Autonomous));
    assert_eq!(level.client(0).role(guid), Some(Autonomous), "the possession never reached the client");
}

/// UE's `SetAutonomousProxy`: the owner kept, its proxy switched between autonomous and
/// simulated — the owner's client follows, the others hold simulated throughout.
#[test]
fn switching_the_owners_proxy_keeps_the_owner_and_tells_its_client() {
    let mut level = Level::new(every_frame(), 2);
    always_due(&mut level);
    let (pawn, guid) = level.spawn([100.0, 0.0, 0.0], 10);
    let me = level.clients[0].0;
    level.driver.set_owner(level.class, &level.store, pawn, Some(me), false).unwrap();
    level.run(3);
    assert_eq!(roles(&level, guid), [Some(Simulated); 2]);
    for (autonomous, role) in [(true, Autonomous), (false, Simulated), (true, Autonomous)] {
        level.driver.set_autonomous_proxy(level.class, &level.store, pawn, autonomous).unwrap();
        assert_eq!(level.driver.owning_connection(level.class, pawn), Some(me));
        level.run(2);
        assert_eq!(roles(&level, guid), [Some(role), Some(Simulated)]);
        assert_eq!(role_events(&mut level, 0), [ClientEvent::RoleChanged { guid, role }]);
        assert_eq!(role_events(&mut level, 1), []);
    }
}
