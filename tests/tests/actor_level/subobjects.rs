//! Sub-objects: created on the client with their owner, replicated where the owner is relevant
//! (to its owning connection only when owner-only), referenced by GUID, destroyed with the owner.

use super::*;
use shadowrep::net::{Dormancy, DriverError, SubObjectCondition};
use shadowrep::value::ObjectRef;

/// Parents of [`weapon`].
pub(super) const AMMO: usize = 0;
const RECOIL: usize = 1;

fn weapon() -> Arc<ClassLayout> {
    use shadowrep::schema::Condition;
    Arc::new(
        ClassBuilder::new("Weapon")
            .property(PropertyDecl::new("Ammo", PropType::U32))
            .property(PropertyDecl::new("Recoil", PropType::U8).condition(Condition::SimulatedOrPhysics))
            .build()
            .unwrap(),
    )
}

/// Characters (the `thing` class with a current-weapon reference) and weapons, two clients at
/// the origin.
pub(super) struct Arena {
    pub(super) driver: NetDriver,
    pub(super) characters: ClassStore,
    pub(super) weapons: ClassStore,
    pub(super) character: ClassId,
    pub(super) weapon: ClassId,
    pub(super) clients: Vec<(ConnectionId, ClientWorld)>,
    /// The two classes' layouts (a client added later is made with them).
    pub(super) layouts: Vec<Arc<ClassLayout>>,
}

/// Parent of the character's current weapon.
const CURRENT: usize = 2;

impl Arena {
    pub(super) fn new() -> Arena {
        let character = Arc::new(
            ClassBuilder::new("Character")
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
                .property(PropertyDecl::new("Health", PropType::U32))
                .property(PropertyDecl::new("Current", PropType::Object))
                .build()
                .unwrap(),
        );
        let mut characters = ClassStore::new(character.clone());
        let mut weapons = ClassStore::new(weapon());
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let c = driver.register_class(&mut characters).unwrap();
        let w = driver.register_class(&mut weapons).unwrap();
        driver.set_location_property(c, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(c, s).unwrap();
        driver.set_class_settings(w, s).unwrap();
        let mut clients = Vec::new();
        for _ in 0..2 {
            let conn = driver.add_connection(false);
            driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
            let world = ClientWorld::new(&[character.clone(), weapon()], &driver.checksums()).unwrap();
            clients.push((conn, world));
        }
        let layouts = vec![character, weapon()];
        Arena { driver, characters, weapons, character: c, weapon: w, clients, layouts }
    }

    /// A character at `at` owned by client `owner`, with a weapon holding `ammo` (`condition`).
    pub(super) fn armed(
        &mut self,
        at: [f32; 3],
        owner: usize,
        ammo: u32,
        condition: SubObjectCondition,
    ) -> (ActorId, NetGuid, ActorId, NetGuid) {
        let ch = self.characters.spawn();
        self.characters.set(ch, LOCATION, &Value::Vector(at)).unwrap();
        let cg = self.driver.assign_guid(self.character, &self.characters, ch).unwrap();
        self.driver.set_owner(self.character, &self.characters, ch, Some(self.clients[owner].0), true).unwrap();
        let w = self.weapons.spawn();
        self.weapons.set(w, AMMO, &Value::U32(ammo)).unwrap();
        let wg = self.driver.register_sub_object(self.weapon, &self.weapons, w, cg, condition).unwrap();
        self.characters.set(ch, CURRENT, &Value::Object(ObjectRef(wg.0))).unwrap();
        (ch, cg, w, wg)
    }

    /// A character at `at` that no connection owns.
    pub(super) fn character_at(&mut self, at: [f32; 3]) -> (ActorId, NetGuid) {
        let ch = self.characters.spawn();
        self.characters.set(ch, LOCATION, &Value::Vector(at)).unwrap();
        (ch, self.driver.assign_guid(self.character, &self.characters, ch).unwrap())
    }

    pub(super) fn run(&mut self, frames: usize) {
        for _ in 0..frames {
            self.driver.tick(&mut [&mut self.characters, &mut self.weapons]).unwrap();
            for (conn, world) in &mut self.clients {
                for p in self.driver.take_packets(*conn).unwrap() {
                    world.receive(&p).unwrap();
                }
                self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
            }
        }
    }

    pub(super) fn client(&self, c: usize) -> &ClientWorld {
        &self.clients[c].1
    }

    /// A client joining later (a replay one with `replay`), viewing from the origin: its index.
    pub(super) fn join(&mut self, replay: bool) -> usize {
        let conn = self.driver.add_connection(replay);
        self.driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
        let world = ClientWorld::new(&self.layouts, &self.driver.checksums()).unwrap();
        self.clients.push((conn, world));
        self.clients.len() - 1
    }
}

#[test]
fn a_sub_object_is_created_with_its_owner_and_a_reference_to_it_resolves() {
    let mut a = Arena::new();
    let (_, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.run(3);
    for c in 0..2 {
        let client = a.client(c);
        assert_eq!(client.value(wg, AMMO), Some(Value::U32(30)), "client {c}");
        assert_eq!(client.owner_of(wg), Some(cg));
        assert_eq!(client.sub_objects(cg), &[wg]);
        assert_eq!(client.value(cg, CURRENT), Some(Value::Object(ObjectRef(wg.0))));
        assert_eq!(client.unmapped_count(), 0);
    }
    assert_eq!(a.driver.owner_of(wg), Some(cg));
    assert_eq!(a.driver.sub_objects(cg), &[wg]);
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.run(2);
    assert_eq!(a.client(1).value(wg, AMMO), Some(Value::U32(29)));
}

#[test]
fn an_owner_only_sub_object_goes_to_the_owners_connection_only_and_follows_ownership() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::OwnerOnly);
    a.run(3);
    assert!(a.client(0).has(wg));
    assert!(!a.client(1).has(wg), "the inventory is its owner's");
    assert!(a.client(1).has(cg));
    // The character changes hands: the sub-object follows its owner's ownership.
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
    a.run(3);
    assert!(a.client(1).has(wg));
}

#[test]
fn a_sub_object_is_relevant_exactly_where_its_owner_is() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    a.run(3);
    assert!(a.client(1).has(wg));
    // The owner walks away from client 1's viewer (client 0 owns it: still relevant there).
    a.characters.set(ch, LOCATION, &Value::Vector([500_000.0, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(!a.client(1).has(cg));
    assert!(!a.client(1).has(wg), "closed with its owner");
    assert!(a.client(0).has(wg));
}

#[test]
fn removing_a_sub_object_or_destroying_its_owner_destroys_it_on_clients() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    let (_, _, _, spare) = {
        let w2 = a.weapons.spawn();
        let g = a.driver.register_sub_object(a.weapon, &a.weapons, w2, cg, SubObjectCondition::None).unwrap();
        (ch, cg, w2, g)
    };
    a.run(3);
    assert_eq!(a.client(0).sub_objects(cg).len(), 2);
    a.weapons.despawn(w).unwrap();
    a.run(2);
    assert!(!a.client(0).has(wg));
    assert_eq!(a.client(0).sub_objects(cg), &[spare]);
    a.characters.despawn(ch).unwrap();
    a.run(2);
    for c in 0..2 {
        assert!(!a.client(c).has(cg));
        assert!(!a.client(c).has(spare), "destroyed with its owner");
        let events = a.clients[c].1.take_events();
        assert!(events.contains(&ClientEvent::Destroyed { guid: spare }));
    }
    // The driver stopped replicating the orphan; it sends nothing for it any more.
    assert!(a.driver.sub_objects(cg).is_empty());
    assert_eq!(a.driver.owner_of(spare), None);
}

#[test]
fn sub_object_registration_errors_are_clear() {
    let mut a = Arena::new();
    let (_, cg, w, wg) = a.armed([0.0; 3], 0, 1, SubObjectCondition::None);
    assert_eq!(
        a.driver.register_sub_object(a.weapon, &a.weapons, w, NetGuid(9_999_998), SubObjectCondition::None),
        Err(DriverError::UnknownOwner(NetGuid(9_999_998)))
    );
    let other = a.weapons.spawn();
    assert_eq!(
        a.driver.register_sub_object(a.weapon, &a.weapons, other, wg, SubObjectCondition::None),
        Err(DriverError::SubObjectChain(wg)),
        "a sub-object owns no sub-objects"
    );
    assert_eq!(a.driver.guid_of(a.weapon, other), None, "a refused call changes nothing");
    assert_eq!(
        a.driver.register_sub_object(a.weapon, &a.weapons, w, wg, SubObjectCondition::None),
        Err(DriverError::SubObjectChain(wg)),
        "its own owner"
    );
    // Without the actor level there is no owner relevancy to ride on.
    let mut dense = NetDriver::new(DriverConfig::default()).unwrap();
    let mut weapons = ClassStore::new(weapon());
    let class = dense.register_class(&mut weapons).unwrap();
    let (x, y) = (weapons.spawn(), weapons.spawn());
    let owner = dense.assign_guid(class, &weapons, x).unwrap();
    assert_eq!(
        dense.register_sub_object(class, &weapons, y, owner, SubObjectCondition::None),
        Err(DriverError::ActorLevelOff)
    );
    assert!(a.driver.sub_objects(cg).contains(&wg));
    // An actor a tick has met (and may have sent as an actor of its own) is too late.
    let met = a.weapons.spawn();
    a.run(1);
    assert_eq!(
        a.driver.register_sub_object(a.weapon, &a.weapons, met, cg, SubObjectCondition::None),
        Err(DriverError::AlreadyReplicated(met))
    );
}

#[test]
fn what_a_sub_object_takes_from_its_owner_is_set_on_the_owner() {
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    // (A startup owner: its sub-objects still close where their condition stops passing.)
    let mut slow = NetSettings { startup: true, ..NetSettings::default() };
    slow.frequency.net_update_frequency = 0.1;
    a.driver.set_net_settings(a.character, &a.characters, ch, slow).unwrap();
    let error = DriverError::FollowsOwner { sub: wg, owner: cg };
    assert!(error.to_string().contains("set them on"), "{error}");
    let follows = Err(error);
    let before = a.driver.net_settings(a.weapon, w);
    assert_eq!(a.driver.set_net_settings(a.weapon, &a.weapons, w, NetSettings::default()), follows);
    assert_eq!(a.driver.set_owner_actor(a.weapon, &a.weapons, w, None, None), follows);
    assert_eq!(a.driver.set_owner(a.weapon, &a.weapons, w, Some(a.clients[1].0), false), follows);
    assert_eq!(a.driver.set_physics(a.weapon, &a.weapons, w, true), follows);
    assert_eq!(a.driver.set_net_dormancy(a.weapon, &a.weapons, w, Dormancy::DormantAll), follows);
    assert_eq!(a.driver.tear_off(a.weapon, &a.weapons, w), follows);
    assert_eq!(a.driver.net_settings(a.weapon, w), before, "a refused call changes nothing");
    assert_eq!(a.driver.owner_of(wg), Some(cg));
    assert_eq!(a.driver.owning_connection(a.weapon, w), Some(a.clients[0].0));
    // Its settings are the owner's (relevancy handed to it), whatever it had before.
    let s = before.unwrap();
    assert_eq!((s.frequency, s.use_owner_relevancy), (slow.frequency, true));
    let lone = a.weapons.spawn();
    let own = NetSettings { startup: true, only_relevant_to_owner: true, net_priority: 9.0, ..NetSettings::default() };
    a.driver.set_net_settings(a.weapon, &a.weapons, lone, own).unwrap();
    a.driver.set_net_dormancy(a.weapon, &a.weapons, lone, Dormancy::DormantAll).unwrap();
    a.driver.register_sub_object(a.weapon, &a.weapons, lone, cg, SubObjectCondition::None).unwrap();
    assert_eq!(a.driver.net_dormancy(a.weapon, lone), Some(Dormancy::default()), "its owner's dormancy is its own");
    let s = a.driver.net_settings(a.weapon, lone).unwrap();
    assert!(s.startup && !s.only_relevant_to_owner && s.use_owner_relevancy, "the owner's startup flag: {s:?}");
    assert_eq!((s.frequency, s.net_priority), (slow.frequency, slow.net_priority));
    // Physics is the owner's: the autonomous owner gets a SimulatedOrPhysics property of the
    // sub-object only once its owner replicates physics.
    a.weapons.set(w, RECOIL, &Value::U8(7)).unwrap();
    a.run(3);
    assert_eq!(a.client(1).value(wg, RECOIL), Some(Value::U8(7)), "a simulated proxy's");
    assert_eq!(a.client(0).value(wg, RECOIL), Some(Value::U8(0)), "not the autonomous owner's");
    a.driver.set_physics(a.character, &a.characters, ch, true).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(wg, RECOIL), Some(Value::U8(7)), "with physics, the owner's too");
    // A sub-object registered later takes the owner's physics as it is.
    let late = a.weapons.spawn();
    a.weapons.set(late, RECOIL, &Value::U8(3)).unwrap();
    let lg = a.driver.register_sub_object(a.weapon, &a.weapons, late, cg, SubObjectCondition::None).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(2);
    assert_eq!(a.client(0).value(lg, RECOIL), Some(Value::U8(3)), "registered after physics went on");
    // Forcing an update of the sub-object forces its owner's (an update every ten seconds here).
    a.characters.set(ch, HEALTH, &Value::U32(55)).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(4)).unwrap();
    a.run(2);
    assert_ne!(a.client(0).value(cg, HEALTH), Some(Value::U32(55)), "not due");
    a.driver.force_net_update(a.weapon, &a.weapons, w).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(cg, HEALTH), Some(Value::U32(55)));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(4)));
}

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

#[test]
fn every_condition_picks_its_connections_and_a_lost_condition_closes_at_once() {
    use SubObjectCondition as C;
    // (condition, client 0 — the owner, autonomous — gets it, client 1 gets it)
    let cases = [
        (C::None, true, true),
        (C::OwnerOnly, true, false),
        (C::SkipOwner, false, true),
        (C::SimulatedOnly, false, true),
        (C::AutonomousOnly, true, false),
        (C::ReplayOrOwner, true, false),
        (C::ReplayOnly, false, false),
        (C::SkipReplay, true, true),
        (C::Never, false, false),
    ];
    for (condition, to_owner, to_other) in cases {
        let mut a = Arena::new();
        let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, condition);
        a.run(3);
        assert!(a.client(0).has(cg) && a.client(1).has(cg));
        assert_eq!(a.client(0).has(wg), to_owner, "{condition:?} to the owner");
        assert_eq!(a.client(1).has(wg), to_other, "{condition:?} to the other");
        if condition == C::OwnerOnly {
            // The character changes hands: the old owner loses the inventory within frames, not
            // after the relevant timeout.
            a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
            a.run(3);
            assert!(!a.client(0).has(wg), "closed at once for the old owner");
            assert!(a.client(1).has(wg));
        }
    }
}

/// A startup owner's sub-objects stay with its channel when it falls out of relevancy (as they
/// ride it in UE), and still close where their condition stops passing.
#[test]
fn a_startup_owners_sub_objects_stay_with_it_and_still_close_by_condition() {
    let mut a = Arena::new();
    let (ch, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    let inv = a.weapons.spawn();
    let ig = a.driver.register_sub_object(a.weapon, &a.weapons, inv, cg, SubObjectCondition::OwnerOnly).unwrap();
    let startup = NetSettings {
        startup: true,
        frequency: a.driver.net_settings(a.character, ch).unwrap().frequency,
        ..NetSettings::default()
    };
    a.driver.set_net_settings(a.character, &a.characters, ch, startup).unwrap();
    a.run(3);
    assert!(a.client(1).has(wg) && a.client(0).has(ig));
    // Far away for longer than the relevant timeout: the startup owner's channel stays, and so
    // does its weapon's.
    a.characters.set(ch, LOCATION, &Value::Vector([1.0e6, 0.0, 0.0])).unwrap();
    a.run(200);
    assert!(a.client(1).has(cg), "a startup actor keeps its channel");
    assert!(a.client(1).has(wg), "and its sub-object with it");
    // The character changes hands: the old owner's inventory closes at once all the same.
    a.driver.set_owner(a.character, &a.characters, ch, Some(a.clients[1].0), true).unwrap();
    a.run(3);
    assert!(!a.client(0).has(ig), "closed for the old owner");
    assert!(a.client(1).has(ig));
}

/// A weapon of the loss test: its id, GUID and condition.
type Weapon = (ActorId, NetGuid, SubObjectCondition);

#[test]
fn sub_objects_converge_under_30_percent_loss_with_owners_coming_and_going() {
    use rand::{Rng, SeedableRng};
    for seed in 0..3u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut a = Arena::new();
        // (character, its guid, weapons)
        let mut armed: Vec<(ActorId, NetGuid, Vec<Weapon>)> = Vec::new();
        let conditions = [SubObjectCondition::None, SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner];
        for frame in 0..300 {
            match rng.random_range(0..12) {
                0 | 1 if armed.len() < 8 => {
                    let cond = conditions[rng.random_range(0..3)];
                    let owner = rng.random_range(0..2);
                    let (ch, cg, w, wg) = a.armed([rng.random_range(0.0..3000.0), 0.0, 0.0], owner, 9, cond);
                    armed.push((ch, cg, vec![(w, wg, cond)]));
                }
                2 if !armed.is_empty() => {
                    // An owner goes, its weapons with it (the game destroys them).
                    let (ch, _, weapons) = armed.swap_remove(rng.random_range(0..armed.len()));
                    a.characters.despawn(ch).unwrap();
                    for (w, _, _) in weapons {
                        a.weapons.despawn(w).unwrap();
                    }
                }
                3 if !armed.is_empty() => {
                    // A second weapon, or one dropped.
                    let i = rng.random_range(0..armed.len());
                    if armed[i].2.len() < 3 {
                        let w = a.weapons.spawn();
                        let cond = conditions[rng.random_range(0..3)];
                        let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, armed[i].1, cond).unwrap();
                        armed[i].2.push((w, wg, cond));
                    } else {
                        let (w, _, _) = armed[i].2.remove(0);
                        a.weapons.despawn(w).unwrap();
                    }
                }
                4 if !armed.is_empty() => {
                    let i = rng.random_range(0..armed.len());
                    let conn = a.clients[rng.random_range(0..2)].0;
                    a.driver.set_owner(a.character, &a.characters, armed[i].0, Some(conn), true).unwrap();
                }
                _ => {}
            }
            for (_, _, weapons) in &armed {
                for &(w, _, _) in weapons {
                    if rng.random_bool(0.2) {
                        a.weapons.set(w, AMMO, &Value::U32(rng.random_range(0..100))).unwrap();
                    }
                }
            }
            let loss = if frame < 250 { 0.3 } else { 0.0 };
            a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap();
            for (conn, world) in &mut a.clients {
                for p in a.driver.take_packets(*conn).unwrap() {
                    if !rng.random_bool(loss) {
                        world.receive(&p).unwrap();
                    }
                }
                let fb = world.feedback();
                if !rng.random_bool(loss) {
                    a.driver.receive_feedback(*conn, &fb).unwrap();
                } else {
                    a.driver.heard_from(*conn).unwrap();
                }
            }
        }
        a.run(40);
        for (c, (conn, world)) in a.clients.iter().enumerate() {
            for (ch, cg, weapons) in &armed {
                assert!(world.has(*cg), "seed {seed}: client {c} has character {cg}");
                let mut want: Vec<NetGuid> = Vec::new();
                for &(w, wg, cond) in weapons {
                    let is_owner = a.driver.owning_connection(a.character, *ch) == Some(*conn);
                    if cond.allows(super::owner_flags(is_owner)) {
                        want.push(wg);
                        let value = a.weapons.get(w, AMMO).ok();
                        assert_eq!(world.value(wg, AMMO), value, "seed {seed}: client {c}, weapon {wg} ({cond:?})");
                    }
                }
                let mut have = world.sub_objects(*cg).to_vec();
                want.sort();
                have.sort();
                assert_eq!(have, want, "seed {seed}: client {c}, character {cg}'s sub-objects");
            }
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

/// A sub-object rides its owner's channel in UE, closed with it for dormancy: where its owner is
/// held dormant it goes dormant too — kept by a client that walks away (it had been closed for
/// relevancy, leaving the client an owner without it), changed without a send until the owner
/// wakes, and woken with it.
#[test]
fn a_sub_object_sleeps_and_wakes_with_its_dormant_owner() {
    use shadowrep::net::Dormancy;
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(8);
    assert!(a.client(1).is_dormant(cg));
    assert!(a.client(1).is_dormant(wg), "dormant with its owner");
    // Client 1 walks away for longer than the relevant timeout.
    a.driver.set_viewers(a.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    a.run(200);
    assert!(a.client(1).has(cg));
    assert!(a.client(1).has(wg), "kept with its owner");
    assert_eq!(a.client(1).owner_of(wg), Some(cg));
    // Changed while its owner sleeps: not sent until the owner wakes.
    a.driver.set_viewers(a.clients[1].0, &[viewer([0.0; 3], None)]).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(12)).unwrap();
    a.run(3);
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(30)), "held dormant");
    a.driver.flush_net_dormancy(a.character, &a.characters, ch).unwrap();
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(12)), "client {c}: woken with its owner");
    }
}

/// The same when the sub-object comes before its owner in the send order (a smaller GUID, the same
/// priority): flushed while far from a client, the owner's woken row is not yet dormant again
/// when the sub-object's turn comes — it waits for its owner instead of being closed.
#[test]
fn a_sub_object_ranked_before_its_flushed_owner_stays_with_it() {
    use shadowrep::net::Dormancy;
    let mut a = Arena::new();
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(30)).unwrap();
    let wg = a.driver.assign_guid(a.weapon, &a.weapons, w).unwrap();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    assert!(wg < cg);
    a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(8);
    assert!(a.client(1).is_dormant(cg) && a.client(1).is_dormant(wg));
    a.driver.set_viewers(a.clients[1].0, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    a.run(200);
    a.driver.flush_net_dormancy(a.character, &a.characters, ch).unwrap();
    a.run(60);
    assert!(a.client(1).has(cg));
    assert!(a.client(1).has(wg), "kept with its owner");
}

/// UE replicates a sub-object inside its owner's update: here it is considered on exactly its
/// owner's frames (its clock draws its jitter from its owner's GUID, at the owner's frequency),
/// so a change to both in one tick reaches the client in one frame; the owner's later frequency
/// is theirs too, and `force_net_update` on the owner forces its sub-objects.
#[test]
fn a_sub_object_goes_out_in_its_owners_frames() {
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    // 7 Hz at a 30 Hz tick: an interval of 4.3 ticks, so the jitter decides between the fifth
    // and the sixth frame.
    s.frequency.net_update_frequency = 7.0;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    let w = a.weapons.spawn();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.run(3);
    // Frames in which client 0 got both of a change made to the two in one tick, and frames in
    // which it got one of them only.
    let pair_frames = |a: &mut Arena, (ch, cg): (ActorId, NetGuid), (w, wg): (ActorId, NetGuid), frames| {
        let (mut together, mut apart) = (0, 0);
        for frame in frames {
            a.characters.set(ch, HEALTH, &Value::U32(frame)).unwrap();
            a.weapons.set(w, AMMO, &Value::U32(frame)).unwrap();
            a.run(1);
            let got = |g: NetGuid, p: usize| a.client(0).value(g, p) == Some(Value::U32(frame));
            match (got(cg, HEALTH), got(wg, AMMO)) {
                (true, true) => together += 1,
                (false, false) => {}
                _ => apart += 1,
            }
        }
        (together, apart)
    };
    let (together, apart) = pair_frames(&mut a, (ch, cg), (w, wg), 1..=90u32);
    assert_eq!(apart, 0, "owner and sub-object in the same frames ({together} together)");
    assert!((14..=19).contains(&together), "5 to 6 updates a second, as UE's jitter gives: {together}");
    // One registered later goes with its owner too: due with it from the start.
    let w2 = a.weapons.spawn();
    let wg2 = a.driver.register_sub_object(a.weapon, &a.weapons, w2, cg, SubObjectCondition::None).unwrap();
    let (together, apart) = pair_frames(&mut a, (ch, cg), (w2, wg2), 100..=190u32);
    assert_eq!(apart, 0, "a sub-object registered later, in its owner's frames ({together} together)");
    assert!(together >= 14);
    // Seldom due: forcing the owner brings the sub-object's change in the same frame.
    s.frequency.net_update_frequency = 0.1;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    let sub = a.driver.net_settings(a.weapon, w).unwrap();
    assert_eq!(sub.frequency.net_update_frequency, 0.1, "the owner's frequency");
    a.run(2);
    a.characters.set(ch, HEALTH, &Value::U32(500)).unwrap();
    a.weapons.set(w, AMMO, &Value::U32(500)).unwrap();
    a.driver.force_net_update(a.character, &a.characters, ch).unwrap();
    a.run(1);
    assert_eq!(a.client(0).value(cg, HEALTH), Some(Value::U32(500)));
    assert_eq!(a.client(0).value(wg, AMMO), Some(Value::U32(500)), "forced with its owner");
    // An owner that takes its class's defaults: its sub-objects follow a change of them.
    let (_, _, w3, _) = a.armed([200.0, 0.0, 0.0], 1, 9, SubObjectCondition::None);
    let mut class_defaults = NetSettings::default();
    class_defaults.frequency.net_update_frequency = 3.0;
    a.driver.set_class_settings(a.character, class_defaults).unwrap();
    assert_eq!(a.driver.net_settings(a.weapon, w3).unwrap().frequency.net_update_frequency, 3.0);
}

/// UE checks a connection's budget after an actor's whole update, sub-objects included: an owner
/// whose send saturates the connection still takes the sub-objects ranked right behind it, and
/// the frame ends there (they had waited for a later frame, as leftovers).
#[test]
fn a_saturating_owner_takes_its_sub_objects_along() {
    let mut a = Arena::new();
    let (_, cg, _, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    let (_, other, _, _) = a.armed([300.0, 0.0, 0.0], 1, 40, SubObjectCondition::None);
    // A connection that can carry about one actor a frame.
    a.driver.set_net_speed(a.clients[0].0, 600).unwrap();
    a.run(1);
    let client = a.client(0);
    assert!(client.has(cg), "the nearest actor goes first");
    assert!(client.has(wg), "and its sub-object with it, in the same frame");
    assert!(!client.has(other), "then the frame ends");
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

/// A sub-object spawned into the slot of an actor gone between ticks, and orphaned before any
/// frame met it (its owner despawned as well), leaves the gone actor's channel to its
/// retirement: the close goes, and the clients destroy their copies. (Its orphaning had dropped
/// the gone actor's rows, with the close they were waiting for: the clients kept a copy of an
/// actor gone — seed 2226 of the reference's random worlds.)
#[test]
fn a_sub_object_orphaned_in_a_gone_actors_slot_leaves_that_actors_close_alone() {
    let mut a = Arena::new();
    let (_, _, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 5, SubObjectCondition::None);
    let (ch2, cg2, _, _) = a.armed([200.0, 0.0, 0.0], 1, 7, SubObjectCondition::None);
    a.run(3);
    assert!(a.client(0).has(wg) && a.client(1).has(wg));
    a.weapons.despawn(w).unwrap();
    let next = a.weapons.spawn();
    assert_eq!(next.index, w.index, "the slot is taken again");
    a.driver.register_sub_object(a.weapon, &a.weapons, next, cg2, SubObjectCondition::None).unwrap();
    a.characters.despawn(ch2).unwrap();
    a.run(3);
    for c in 0..2 {
        assert!(!a.client(c).has(wg), "client {c}: the gone weapon is destroyed");
        assert!(!a.client(c).has(cg2), "client {c}: its owner too");
    }
}

/// A sub-object whose owner is held dormant on a connection goes dormant with it only once the
/// client has its open: one whose open was lost — carrying no values, so nothing else is owed —
/// and that is no longer relevant there when the loss is learned gets its open again, not a
/// Dormant close for a copy the client never had (the mutation pass's survivor d1).
#[test]
fn a_sub_object_whose_open_was_lost_is_not_closed_for_dormancy_with_its_dormant_owner() {
    let mut a = Arena::new();
    // An owner of no connection's, relevant by distance alone: it falls asleep once dormant.
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(5)).unwrap();
    a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    a.driver.set_net_dormancy(a.character, &a.characters, ch, Dormancy::DormantAll).unwrap();
    a.run(10);
    assert!(a.client(0).has(cg));
    let dormant = |a: &Arena| a.driver.is_asleep(a.character, ch);
    assert!(dormant(&a), "the owner settled and fell asleep");
    // A new sub-object at its default values (its open carries none): the packet with its open
    // is lost, and the client says nothing for longer than the relevancy timeout (the server
    // stops replicating to it after the ready timeout) while its viewer walks away.
    let spare = a.weapons.spawn();
    let sg = a.driver.register_sub_object(a.weapon, &a.weapons, spare, cg, SubObjectCondition::None).unwrap();
    let (conn, _) = a.clients[0];
    let step = |a: &mut Arena, deliver: bool, feedback: bool| {
        a.driver.tick(&mut [&mut a.characters, &mut a.weapons]).unwrap();
        for (c, world) in &mut a.clients {
            for p in a.driver.take_packets(*c).unwrap() {
                if deliver || *c != conn {
                    world.receive(&p).unwrap();
                }
            }
            if feedback || *c != conn {
                a.driver.receive_feedback(*c, &world.feedback()).unwrap();
            }
        }
    };
    let sent = |a: &Arena| a.driver.connection_stats(conn).unwrap().bytes_sent;
    let before = sent(&a);
    step(&mut a, false, false);
    assert!(sent(&a) > before && a.client(1).has(sg), "the sub-object's open went out (and was lost)");
    a.driver.set_viewers(conn, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    for _ in 0..(7.0 * 30.0) as usize {
        step(&mut a, true, false);
    }
    assert!(!a.client(0).has(sg));
    assert!(dormant(&a), "the owner still asleep");
    for _ in 0..5 {
        step(&mut a, true, true);
    }
    assert!(a.client(0).has(sg), "the lost open went again");
    assert_eq!(a.client(0).sub_objects(cg).len(), 2);
    assert_eq!(a.client(1).sub_objects(cg).len(), 2, "the other client's arrived at once");
    assert_eq!(a.driver.connection_stats(conn).unwrap().reopens_honoured, 0);
}

#[test]
fn a_lost_relevancy_close_then_a_reopen_leaves_no_destroyed_sub_object_on_the_client() {
    // The owner's relevancy close is lost (its sub-object's channel ended with it), the owner
    // is relevant again before the server hears of the loss (its close does not go again), and
    // the sub-object is destroyed meanwhile: the sub-object's own close, sent with the owner's
    // and sent again while it has no channel, takes it. (The LevelUnloaded path alike:
    // `sublevels_review`.) Some extra far actors shift the GUIDs and so which close is first.
    let mut seen = 0;
    for extra in 0..12 {
        let mut l = super::sublevels::level(1);
        for _ in 0..extra {
            l.spawn([900_000.0, 0.0, 0.0], 1);
        }
        let (owner, og) = l.spawn([500.0, 0.0, 0.0], 1);
        let sub = l.store.spawn();
        let sg = l.driver.register_sub_object(l.class, &l.store, sub, og, Default::default()).unwrap();
        l.run(3);
        assert!(l.client(0).has(og) && l.client(0).has(sg));
        l.move_to(owner, [900_000.0, 0.0, 0.0]);
        let conn = l.clients[0].0;
        let mut closed = false;
        for _ in 0..2000 {
            l.driver.tick(&mut [&mut l.store]).unwrap();
            let packets = l.driver.take_packets(conn).unwrap();
            if l.driver.channels(conn).unwrap().0 == 0 {
                closed = true;
                break;
            }
            for p in packets {
                l.clients[0].1.receive(&p).unwrap();
            }
            l.driver.receive_feedback(conn, &l.clients[0].1.feedback()).unwrap();
        }
        assert!(closed);
        if !l.client(0).has(sg) {
            continue; // the sub-object's own close came first
        }
        seen += 1;
        l.move_to(owner, [500.0, 0.0, 0.0]);
        l.store.despawn(sub).unwrap();
        l.store.set(owner, HEALTH, &Value::U32(5)).unwrap();
        l.run(10);
        assert_eq!(l.client(0).value(og, HEALTH), Some(Value::U32(5)));
        assert!(!l.client(0).has(sg), "extra {extra}: the destroyed sub-object stays on the client");
    }
    assert!(seen > 0, "never the owner's close first");
}

#[test]
fn a_temporary_owners_sub_objects_are_temporary_with_it() {
    // UE writes sub-objects inside their owner's channel, which a temporary actor's connection
    // never updates once its initial bunch went: a sub-object takes its owner's `net_temporary`
    // with the rest of its settings, and is sent once.
    let mut a = Arena::new();
    let (ch, cg, w, wg) = a.armed([100.0, 0.0, 0.0], 0, 30, SubObjectCondition::None);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    s.net_temporary = true;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    assert!(a.driver.net_settings(a.weapon, w).unwrap().net_temporary, "passed to its sub-object");
    a.run(3);
    a.weapons.set(w, AMMO, &Value::U32(29)).unwrap();
    a.characters.set(ch, HEALTH, &Value::U32(5)).unwrap();
    a.run(5);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(30)), "client {c}: the sub-object is not updated");
        assert_ne!(a.client(c).value(cg, HEALTH), Some(Value::U32(5)), "client {c}: nor its owner");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
    // A third client gets both, as they are now, once.
    a.join(false);
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(29)));
    assert_eq!(a.client(2).value(cg, HEALTH), Some(Value::U32(5)));
    a.weapons.set(w, AMMO, &Value::U32(28)).unwrap();
    a.run(3);
    assert_eq!(a.client(2).value(wg, AMMO), Some(Value::U32(29)));
}

#[test]
fn a_sub_object_registered_after_its_temporary_owners_open_went_is_sent_once() {
    // UE would never send it (it rides the owner's channel, not updated again); here its own
    // open goes once, as a temporary actor's, then nothing more (README, "Temporary actors").
    let mut a = Arena::new();
    let (ch, cg) = a.character_at([100.0, 0.0, 0.0]);
    let mut s = a.driver.net_settings(a.character, ch).unwrap();
    s.net_temporary = true;
    a.driver.set_net_settings(a.character, &a.characters, ch, s).unwrap();
    a.run(3);
    let w = a.weapons.spawn();
    a.weapons.set(w, AMMO, &Value::U32(12)).unwrap();
    let wg = a.driver.register_sub_object(a.weapon, &a.weapons, w, cg, SubObjectCondition::None).unwrap();
    assert!(a.driver.net_settings(a.weapon, w).unwrap().net_temporary);
    a.run(3);
    a.weapons.set(w, AMMO, &Value::U32(11)).unwrap();
    a.run(3);
    for c in 0..2 {
        assert_eq!(a.client(c).value(wg, AMMO), Some(Value::U32(12)), "client {c}: its open, once");
        assert_eq!(a.client(c).owner_of(wg), Some(cg));
    }
}
