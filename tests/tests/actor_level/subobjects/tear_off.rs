//! A torn-off owner's sub-objects: their last update before their close, a full window deferring
//! it, and an owner torn off and despawned at once.

use super::*;

/// A torn-off owner whose own last update went out, but whose sub-object's a full window
/// deferred, waits for it: the sub-object's channel needs its owner's, and an owner that had
/// finished first took the sub-object's close with it, without its update.
#[test]
fn a_tearing_owner_waits_for_its_sub_objects_deferred_last_update() {
    let mut a = Arena::new();
    let conn = a.clients[0].0;
    a.driver.set_net_speed(conn, 10_000_000).unwrap();
    let (ch, _, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    let fillers: Vec<ActorId> = (0..40)
        .map(|i| {
            let f = a.characters.spawn();
            a.characters.set(f, LOCATION, &Value::Vector([200.0 + i as f32, 0.0, 0.0])).unwrap();
            f
        })
        .collect();
    a.run(3);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(5)));
    // Client 0 hears everything, the server nothing from it (kept net-ready): its window fills.
    let tick = |a: &mut Arena, frame: u32, feedback: bool| {
        for &f in &fillers {
            a.characters.set(f, HEALTH, &Value::U32(frame)).unwrap();
        }
        a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap();
        for (c, (conn, world)) in a.clients.iter_mut().enumerate() {
            for p in a.driver.take_packets(*conn).unwrap() {
                world.receive(&p).unwrap();
            }
            if feedback || c == 1 {
                a.driver.receive_feedback(*conn, &world.feedback()).unwrap();
            } else {
                a.driver.heard_from(*conn).unwrap();
            }
        }
    };
    let mut frame = 0;
    while a.driver.connection_stats(conn).unwrap().repeats == 0 {
        frame += 1;
        assert!(frame < 2_000, "the window never filled");
        tick(&mut a, frame, false);
    }
    // The weapon's last change; the character has none (nothing of it is deferred).
    a.weapons.set(w, AMMO, &Value::U32(0)).unwrap();
    a.driver.tear_off(a.character, &a.characters, ch).unwrap();
    for f in 1..=4 {
        tick(&mut a, frame + f, false);
    }
    assert!(!a.client(0).is_torn_off(wg), "nothing got through the full window");
    for f in 5..=9 {
        tick(&mut a, frame + f, true);
    }
    assert!(a.client(0).is_torn_off(wg));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(0)), "its last update, then the close");
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(0)));
}

/// The edge of the one above: the owner's last update and its TornOff close fit in the window,
/// and its sub-object's, right behind it, does not (the window fills with it). The client keeps
/// the torn-off owner, so the sub-object's last update still has somewhere to go: it goes out
/// once the window opens, then its close — not the close alone.
#[test]
fn a_sub_objects_last_update_deferred_after_its_owners_close_still_goes_out() {
    sub_object_behind_a_torn_owner(false);
}

/// The same, the game destroying the torn-off owner before the window opens: the client owns
/// the owner's copy (no Destroyed close comes), so the pack, whose last update can no longer go,
/// is torn off with it (it stayed a replicated sub-object there that nothing would ever update).
#[test]
fn a_sub_object_waiting_behind_its_torn_off_owner_is_torn_off_when_the_owner_goes() {
    sub_object_behind_a_torn_owner(true);
}

fn sub_object_behind_a_torn_owner(owner_destroyed: bool) {
    let pack = Arc::new(
        ClassBuilder::new("Pack")
            .property(PropertyDecl::new("Items", PropType::Array { element: Box::new(PropType::U32), max_len: 1024 }))
            .build()
            .unwrap(),
    );
    let items = |v: u32| Value::Array(vec![Value::U32(v); 600]);
    let mut things = ClassStore::new(thing());
    let mut packs = ClassStore::new(pack.clone());
    let level = ActorLevelConfig { record_decisions: true, ..ActorLevelConfig::default() };
    let cfg = DriverConfig { actor_level: Some(level), ..DriverConfig::default() };
    let mut driver = NetDriver::new(cfg).unwrap();
    let tc = driver.register_class(&mut things).unwrap();
    let pc = driver.register_class(&mut packs).unwrap();
    driver.set_location_property(tc, LOCATION).unwrap();
    let mut s = NetSettings::default();
    s.frequency.net_update_frequency = 1.0e6;
    driver.set_class_settings(tc, s).unwrap();
    driver.set_class_settings(pc, s).unwrap();
    let conn = driver.add_connection(false);
    driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
    driver.set_net_speed(conn, 10_000_000).unwrap();
    let client = ClientWorld::new(&[thing(), pack], &driver.checksums()).unwrap();
    let ch = things.spawn();
    things.set(ch, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    let cg = driver.assign_guid(tc, &things, ch).unwrap();
    let p = packs.spawn();
    packs.set(p, 0, &items(1)).unwrap();
    let pg = driver.register_sub_object(pc, &packs, p, cg, SubObjectCondition::None).unwrap();
    let mut w = World { driver, stores: [things, packs], client, kept: Vec::new(), conn };
    for _ in 0..3 {
        w.tick(true);
    }
    assert!(w.client.value(pg, 0) == Some(items(1)));
    // A packet a frame, unanswered, until the window is full; then the answer to the first of
    // them opens it by that frame's packet.
    let mut frame = 0;
    while w.driver.connection_stats(conn).unwrap().repeats == 0 {
        frame += 1;
        assert!(frame < 2_000, "the window never filled");
        w.stores[0].set(ch, HEALTH, &Value::U32(frame)).unwrap();
        w.tick(false);
    }
    let first = w.kept[0].clone();
    w.driver.receive_feedback(conn, &first).unwrap();
    // The owner's last update (nothing changed) and its close fit that packet; the pack's 600
    // changed items do not.
    w.stores[1].set(p, 0, &items(2)).unwrap();
    w.driver.tear_off(tc, &w.stores[0], ch).unwrap();
    w.tick(false);
    assert!(w.client.is_torn_off(cg), "the owner's close went out");
    // Its row stays for the pack, but the client holds no replicated copy of it any more.
    assert!(w.driver.held_actors(conn).unwrap().iter().all(|h| h.guid != cg));
    assert!(w.client.value(pg, 0) != Some(items(2)), "the pack's last update is owed (a part of it went)");
    if owner_destroyed {
        w.stores[0].despawn(ch).unwrap();
    }
    for _ in 0..6 {
        w.tick(true);
        // The owner's row held for the pack is no channel: nothing goes to it (no new open).
        let sends = &w.driver.decisions(conn).unwrap().expect("recorded").sends;
        assert!(sends.iter().all(|s| s.guid != cg), "{sends:?}");
    }
    let client = &w.client;
    assert!(client.is_torn_off(cg) && client.is_torn_off(pg));
    if !owner_destroyed {
        assert!(client.value(pg, 0) == Some(items(2)), "its last update, then the close");
    }
}

/// A driver, its stores and one client whose feedback goes back or is kept.
struct World {
    driver: NetDriver,
    stores: [ClassStore; 2],
    client: ClientWorld,
    kept: Vec<Vec<u8>>,
    conn: ConnectionId,
}

impl World {
    /// A frame: the client gets its packets; its answer goes back (`feedback`), or is kept and
    /// the server only hears from it (net-ready).
    fn tick(&mut self, feedback: bool) {
        let [a, b] = &mut self.stores;
        self.driver.tick(&mut [a, b]).unwrap();
        for packet in self.driver.take_packets(self.conn).unwrap() {
            self.client.receive(&packet).unwrap();
        }
        if feedback {
            self.driver.receive_feedback(self.conn, &self.client.feedback()).unwrap();
        } else {
            self.kept.push(self.client.feedback());
            self.driver.heard_from(self.conn).unwrap();
        }
    }
}

/// A torn-off owner's sub-objects get their last update too, though their channels come after
/// the owner's close in the send order: the client keeps the owner, so they still ride it.
#[test]
fn a_torn_off_owners_sub_objects_get_their_last_update_before_their_close() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.run(3);
    a.characters.set(ch, HEALTH, &Value::U32(0)).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(0)).unwrap();
    a.driver.tear_off(a.character, &a.characters, ch).unwrap();
    a.run(3);
    for c in 0..2 {
        let client = a.client(c);
        assert!(client.is_torn_off(cg) && client.is_torn_off(wg), "client {c}");
        assert_eq!(client.value(cg, HEALTH), Some(Value::U32(0)), "client {c}");
        assert_eq!(client.value(wg, AMMO), Some(Value::U32(0)), "client {c}: the weapon's last update");
        assert_eq!(client.owner_of(wg), Some(cg));
    }
}

/// An owner torn off and despawned before the next frame: every client has its channel open,
/// so its Destroyed close takes the sub-objects with it, and no TornOff of a sub-object comes
/// first (it had, for a sub-object numbered before its owner: the game was told it was torn off).
#[test]
fn an_owner_torn_off_and_despawned_at_once_takes_its_sub_objects_without_a_tear_off() {
    let mut a = Arena::new();
    // The weapon numbered first (its GUID below the character's).
    let w = a.weapons.spawn();
    let wg = a.driver.assign_guid(a.weapon, &a.weapons, w).unwrap();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    assert!(wg < cg);
    a.run(3);
    assert!(a.client(0).has(wg) && a.client(1).has(wg));
    for c in 0..2 {
        a.clients[c].1.take_events();
    }
    a.driver.tear_off(a.character, &a.characters, ch).unwrap();
    a.characters.despawn(ch).unwrap();
    a.run(3);
    for c in 0..2 {
        let events = a.clients[c].1.take_events();
        assert!(!a.client(c).has(cg) && !a.client(c).has(wg), "client {c}: destroyed with the owner");
        assert!(!events.contains(&ClientEvent::TornOff { guid: wg }), "client {c}: {events:?}");
    }
}
