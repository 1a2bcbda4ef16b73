//! Roles over a lossy link: owners, autonomy, physics and Custom conditions changing at random
//! while packets are lost and clients fall silent for a while. Once the link heals, every client
//! holds the server's value of every property active for it — a value lost while its property
//! was off for the client arrives when it comes back (planning parks the lost leaf, the driver's
//! record of inactive leaves owes it), with the actor level and without.

use super::*;
use rand::{Rng, SeedableRng};
use shadowrep::net::Dormancy;
use shadowrep::schema::Condition;

/// Seeds of the dormancy variant (200 pass; without the fix seed 47 is the first to fail).
const SEEDS: u64 = 60;

const CONDITIONS: [Condition; 7] = [
    Condition::None,
    Condition::OwnerOnly,
    Condition::Custom,
    Condition::AutonomousOnly,
    Condition::SimulatedOrPhysics,
    Condition::SkipOwner,
    Condition::InitialOrOwner,
];

/// The Custom property's parent (switched on and off).
const CUSTOM: usize = 3;

/// An actor's roles as the game last set them.
#[derive(Clone, Copy, Default)]
struct Roles {
    owner: Option<usize>,
    autonomous: bool,
    physics: bool,
    custom_off: bool,
}

impl Roles {
    /// Whether a property under `condition` is active for client `c` once its open is settled.
    fn active(self, condition: Condition, c: usize) -> bool {
        let owner = self.owner == Some(c);
        let simulated = !(owner && self.autonomous);
        match condition {
            Condition::OwnerOnly | Condition::InitialOrOwner => owner,
            Condition::Custom => !self.custom_off,
            Condition::AutonomousOnly => !simulated,
            Condition::SimulatedOrPhysics => simulated || self.physics,
            Condition::SkipOwner => !owner,
            _ => true,
        }
    }
}

/// A driver for `store`'s class, with the actor level (every actor due every frame) or without.
fn driver_for(level: bool, store: &mut ClassStore) -> (NetDriver, ClassId) {
    let actor_level = level.then(ActorLevelConfig::default);
    let mut driver = NetDriver::new(DriverConfig { actor_level, ..DriverConfig::default() }).unwrap();
    let class = driver.register_class(store).unwrap();
    if level {
        driver.set_location_property(class, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(class, s).unwrap();
    }
    (driver, class)
}

fn converges(level: bool, dormancy: bool, seed: u64) {
    let mut b = ClassBuilder::new("Armed").property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)));
    for (i, &c) in CONDITIONS.iter().enumerate() {
        b = b.property(PropertyDecl::new(format!("P{i}"), PropType::U32).condition(c));
    }
    let layout = Arc::new(b.build().unwrap());
    let mut store = ClassStore::new(layout.clone());
    let (mut driver, class) = driver_for(level, &mut store);
    let conns: Vec<ConnectionId> = (0..3).map(|_| driver.add_connection(false)).collect();
    let mut clients: Vec<ClientWorld> =
        conns.iter().map(|_| ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap()).collect();
    if level {
        for &c in &conns {
            driver.set_viewers(c, &[viewer([0.0; 3], None)]).unwrap();
        }
    }
    let mut actors: Vec<(ActorId, NetGuid, Roles)> = (0..8)
        .map(|i| {
            let id = store.spawn();
            store.set(id, LOCATION, &Value::Vector([100.0 + i as f32, 0.0, 0.0])).unwrap();
            (id, driver.assign_guid(class, &store, id).unwrap(), Roles::default())
        })
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut silent_until = [0u32; 3];
    let mut resent = 0;
    for frame in 0..380u32 {
        let lossy = frame < 300;
        if lossy {
            for (k, (id, _, roles)) in actors.iter_mut().enumerate() {
                if rng.random_bool(0.3) {
                    let p = rng.random_range(1..=CONDITIONS.len());
                    store.set(*id, p, &Value::U32(rng.random_range(0..1_000_000))).unwrap();
                }
                if rng.random_bool(0.08) {
                    roles.owner = [None, Some(0), Some(1), Some(2)][rng.random_range(0..4)];
                    roles.autonomous = rng.random_bool(0.5);
                    driver.set_owner(class, &store, *id, roles.owner.map(|o| conns[o]), roles.autonomous).unwrap();
                }
                if rng.random_bool(0.05) {
                    roles.physics = !roles.physics;
                    driver.set_physics(class, &store, *id, roles.physics).unwrap();
                }
                if rng.random_bool(0.05) {
                    roles.custom_off = !roles.custom_off;
                    driver.set_custom_active(class, &store, *id, CUSTOM, !roles.custom_off).unwrap();
                }
                // At the actor level, now and then out of everyone's sight and back.
                if level && rng.random_bool(0.02) {
                    let x = if rng.random_bool(0.5) { 1.0e7 } else { 100.0 + k as f32 };
                    store.set(*id, LOCATION, &Value::Vector([x, 0.0, 0.0])).unwrap();
                }
                if dormancy && rng.random_bool(0.03) {
                    let d = [Dormancy::DormantAll, Dormancy::Awake][rng.random_range(0..2)];
                    driver.set_net_dormancy(class, &store, *id, d).unwrap();
                }
            }
        } else if frame == 300 && level {
            for (k, (id, ..)) in actors.iter().enumerate() {
                store.set(*id, LOCATION, &Value::Vector([100.0 + k as f32, 0.0, 0.0])).unwrap();
                if dormancy {
                    driver.set_net_dormancy(class, &store, *id, Dormancy::Awake).unwrap();
                }
            }
        }
        driver.tick(&mut [&mut store]).unwrap();
        for (c, (&conn, client)) in conns.iter().zip(&mut clients).enumerate() {
            for p in driver.take_packets(conn).unwrap() {
                if !(lossy && rng.random_bool(0.3)) {
                    client.receive(&p).unwrap();
                }
            }
            if lossy && silent_until[c] <= frame && rng.random_bool(0.05) {
                silent_until[c] = frame + rng.random_range(1..20);
            }
            if lossy && silent_until[c] > frame {
                driver.heard_from(conn).unwrap();
            } else {
                driver.receive_feedback(conn, &client.feedback()).unwrap();
            }
        }
        resent = resent.max(driver.connection_stats(conns[0]).unwrap().leaves_resent);
    }
    assert!(resent > 0, "seed {seed}: leaves were lost");
    for (c, client) in clients.iter().enumerate() {
        for &(id, guid, roles) in &actors {
            for (i, &condition) in CONDITIONS.iter().enumerate() {
                if roles.active(condition, c) {
                    let want = store.get(id, i + 1).ok();
                    assert_eq!(
                        client.value(guid, i + 1),
                        want,
                        "level {level} seed {seed}: client {c}, {guid:?} {condition:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn with_the_actor_level_clients_converge_under_loss_and_silence_while_roles_change() {
    for seed in 0..12 {
        converges(true, false, seed);
    }
}

/// The same with actors going dormant and waking at random. A dormancy close queued again after
/// its packet was lost went out after the actor had woken, ahead of its bunches, and left the
/// client holding a stale dormant copy (the session 39 review's stress test found it).
#[test]
fn with_dormancy_too_clients_converge_under_loss_and_silence_while_roles_change() {
    for seed in 0..SEEDS {
        converges(true, true, seed);
    }
}

#[test]
fn without_it_clients_converge_under_loss_and_silence_while_roles_change() {
    for seed in 0..12 {
        converges(false, false, seed);
    }
}

/// Parents of [`Ammo`]'s class.
const AMMO: usize = 1;
const HEALTH: usize = 2;

/// One actor with an InitialOrOwner ammo, owned by connection 0, and two clients; at the actor
/// level or without it.
struct Ammo {
    driver: NetDriver,
    store: ClassStore,
    class: ClassId,
    conns: [ConnectionId; 2],
    clients: Vec<ClientWorld>,
    id: ActorId,
    guid: NetGuid,
}

impl Ammo {
    fn new(level: bool, ammo: u32) -> Ammo {
        let layout = Arc::new(
            ClassBuilder::new("Armed")
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
                .property(PropertyDecl::new("Ammo", PropType::U32).condition(Condition::InitialOrOwner))
                .property(PropertyDecl::new("Health", PropType::U32))
                .build()
                .unwrap(),
        );
        let mut store = ClassStore::new(layout.clone());
        let (mut driver, class) = driver_for(level, &mut store);
        let conns = [driver.add_connection(false), driver.add_connection(false)];
        let clients = conns
            .iter()
            .map(|_| ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap())
            .collect();
        for &c in conns.iter().filter(|_| level) {
            driver.set_viewers(c, &[viewer([0.0; 3], None)]).unwrap();
        }
        let id = store.spawn();
        store.set(id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
        store.set(id, AMMO, &Value::U32(ammo)).unwrap();
        let guid = driver.assign_guid(class, &store, id).unwrap();
        driver.set_owner(class, &store, id, Some(conns[0]), false).unwrap();
        Ammo { driver, store, class, conns, clients, id, guid }
    }

    /// One frame; connection 0's packets are delivered unless `drop0`. Each client's (ammo,
    /// health).
    fn step(&mut self, drop0: bool) -> [(Option<Value>, Option<Value>); 2] {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        for (c, client) in self.clients.iter_mut().enumerate() {
            for p in self.driver.take_packets(self.conns[c]).unwrap() {
                if !(drop0 && c == 0) {
                    client.receive(&p).unwrap();
                }
            }
            self.driver.receive_feedback(self.conns[c], &client.feedback()).unwrap();
        }
        [0, 1].map(|c| (self.clients[c].value(self.guid, AMMO), self.clients[c].value(self.guid, HEALTH)))
    }

    fn set(&mut self, parent: usize, v: u32) {
        self.store.set(self.id, parent, &Value::U32(v)).unwrap();
    }

    fn give_to(&mut self, c: usize) {
        let (class, id, conn) = (self.class, self.id, self.conns[c]);
        self.driver.set_owner(class, &self.store, id, Some(conn), false).unwrap();
    }

    fn resent(&self) -> u64 {
        self.driver.connection_stats(self.conns[0]).unwrap().leaves_resent
    }
}

/// An InitialOrOwner value lost while its connection owned the actor is an owner's value: once
/// another connection owns the actor it is not sent there as an initial value (a non-owner has
/// the initial value only), and it is sent when the connection owns the actor again — at the
/// actor level as without it.
#[test]
fn an_owners_initial_or_owner_value_lost_after_ownership_moves_waits_for_ownership_to_return() {
    let u32v = |v| Some(Value::U32(v));
    for level in [false, true] {
        let mut w = Ammo::new(level, 10);
        for _ in 0..3 {
            w.step(false);
        }
        // The owner's new ammo is lost; then the actor changes hands.
        w.set(AMMO, 11);
        w.step(true);
        w.give_to(1);
        // The health moves on, so connection 0 hears later packets and its feedback tells the loss.
        let mut seen = w.step(false);
        for h in 0..4 {
            w.set(HEALTH, h);
            seen = w.step(false);
        }
        assert!(w.resent() > 0, "level {level}: the loss was reported");
        assert_eq!(seen, [(u32v(10), u32v(3)), (u32v(11), u32v(3))], "level {level}: the initial value, the owner's");
        w.give_to(0);
        assert_eq!(w.step(false)[0].0, u32v(11), "level {level}: owned again, the value it lost");
    }
}

/// The other side of the same rule: an InitialOrOwner value whose open was lost is an initial
/// value the client never had. The channel's open is acknowledged by a later bunch that does
/// not carry it, then the actor changes hands before any bunch carrying it is delivered: the
/// former owner still gets it (UE's open bunch is reliable), and nothing after it.
#[test]
fn an_initial_or_owner_value_whose_open_was_lost_still_reaches_the_owner_turned_non_owner() {
    let u32v = |v| Some(Value::U32(v));
    for level in [false, true] {
        let mut w = Ammo::new(level, 10);
        w.set(HEALTH, 1);
        // The open with the ammo is lost; the next bunch opens the actor with the health alone.
        w.step(true);
        w.set(HEALTH, 2);
        let seen = w.step(false);
        assert!(w.resent() > 0, "level {level}: the loss was reported");
        assert_eq!(seen[0], (u32v(0), u32v(2)), "level {level}: opened without the ammo (the default)");
        w.give_to(1);
        w.set(AMMO, 12);
        let seen = w.step(false);
        assert_eq!(seen, [(u32v(12), u32v(2)), (u32v(12), u32v(2))], "level {level}: its initial value, the owner's");
        w.set(AMMO, 13);
        let seen = w.step(false);
        assert_eq!(seen, [(u32v(12), u32v(2)), (u32v(13), u32v(2))], "level {level}: a non-owner's is initial only");
        // Delivered once, the value is the client's: an owner's update lost later is not owed
        // as an initial one after the next move.
        w.give_to(0);
        assert_eq!(w.step(false)[0].0, u32v(13), "level {level}: owned again");
        w.set(AMMO, 14);
        w.step(true);
        w.give_to(1);
        for h in 3..6 {
            w.set(HEALTH, h);
            w.step(false);
        }
        assert_eq!(w.step(false)[0], (u32v(13), u32v(5)), "level {level}: the lost update waits for ownership");
    }
}
