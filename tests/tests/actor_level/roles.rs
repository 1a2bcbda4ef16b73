//! Roles over a lossy link: owners, autonomy, physics and Custom conditions changing at random
//! while packets are lost and clients fall silent for a while. Once the link heals, every client
//! holds the server's value of every property active for it — a value lost while its property
//! was off for the client arrives when it comes back (planning parks the lost leaf, the driver's
//! record of inactive leaves owes it), with the actor level and without.

use super::*;
use rand::{Rng, SeedableRng};
use shadowrep::net::{Dormancy, NetRole};
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

/// The owner UE's `GetNetConnection` gives actor `k`: its own, else the first owner up its chain
/// of owner actors (`links`) within `MAX_OWNER_DEPTH` links; `links` all `None` without owner
/// chains.
fn owner_through(actors: &[(ActorId, NetGuid, Roles)], links: &[Option<usize>], k: usize) -> Option<usize> {
    let mut at = k;
    for _ in 0..=shadowrep::net::MAX_OWNER_DEPTH {
        if let Some(o) = actors[at].2.owner {
            return Some(o);
        }
        at = links[at]?;
    }
    None
}

/// `chains`: owning connections follow owner chains
/// (`ActorLevelConfig::owner_chain_connections`), the game linking the actors to each other at
/// random — chains, cycles, an actor its own owner — as it sets their owners.
fn converges(level: bool, dormancy: bool, chains: bool, seed: u64) {
    let mut b = ClassBuilder::new("Armed").property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)));
    for (i, &c) in CONDITIONS.iter().enumerate() {
        b = b.property(PropertyDecl::new(format!("P{i}"), PropType::U32).condition(c));
    }
    let layout = Arc::new(b.build().unwrap());
    let mut store = ClassStore::new(layout.clone());
    let actor_level = ActorLevelConfig { owner_chain_connections: chains, ..ActorLevelConfig::default() };
    let (mut driver, class) = driver_with(level.then_some(actor_level), &mut store, DriverConfig::default());
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
    let guids: Vec<NetGuid> = actors.iter().map(|a| a.1).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut silent_until = [0u32; 3];
    let mut resent = 0;
    // The InitialOrOwner property: what each client held after the last frame (None: not the
    // actor), and each actor's owner at the last frame's tick.
    let initial_or_owner = 1 + CONDITIONS.iter().position(|&c| c == Condition::InitialOrOwner).unwrap();
    let mut held: Vec<Vec<Option<Option<Value>>>> = vec![vec![None; actors.len()]; conns.len()];
    let mut was_owner: Vec<Option<usize>> = vec![None; actors.len()];
    let mut links: Vec<Option<usize>> = vec![None; actors.len()];
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
                if chains && rng.random_bool(0.05) {
                    links[k] = rng.random_bool(0.8).then(|| rng.random_range(0..8));
                    let owner = links[k].map(|j| guids[j]);
                    driver.set_owner_actor(class, &store, *id, owner, None).unwrap();
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
        // A client that did not own the actor at this tick or the last one gets no InitialOrOwner
        // value but its initial one — late if its open's was lost (it held the default until
        // then). (Dormant actors woken reopen their channels, initial values and all, as UE's.)
        for (k, &(_, guid, _)) in actors.iter().enumerate() {
            let owner = owner_through(&actors, &links, k);
            for (c, client) in clients.iter().enumerate() {
                let now = client.has(guid).then(|| client.value(guid, initial_or_owner));
                if let (Some(before), Some(now)) = (&held[c][k], &now) {
                    let owned = owner == Some(c) || was_owner[k] == Some(c);
                    if !owned && !dormancy && before != now {
                        assert_eq!(
                            *before,
                            Some(Value::U32(0)),
                            "level {level} seed {seed} frame {frame}: client {c}, {guid:?}: InitialOrOwner {now:?} sent to a non-owner"
                        );
                    }
                }
                held[c][k] = now;
            }
            was_owner[k] = owner;
        }
    }
    assert!(resent > 0, "seed {seed}: leaves were lost");
    for (c, client) in clients.iter().enumerate() {
        for (k, &(id, guid, roles)) in actors.iter().enumerate() {
            let roles = Roles { owner: owner_through(&actors, &links, k), ..roles };
            // The client's role, as the game's last call set it (UE's swap of Role and
            // RemoteRole, downgraded for non-owners).
            let role = if roles.owner == Some(c) && roles.autonomous {
                NetRole::AutonomousProxy
            } else {
                NetRole::SimulatedProxy
            };
            assert_eq!(client.role(guid), Some(role), "level {level} seed {seed}: client {c}, {guid:?} role");
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
        converges(true, false, false, seed);
    }
}

/// The same with actors going dormant and waking at random. A dormancy close queued again after
/// its packet was lost went out after the actor had woken, ahead of its bunches, and left the
/// client holding a stale dormant copy (the session 39 review's stress test found it).
#[test]
fn with_dormancy_too_clients_converge_under_loss_and_silence_while_roles_change() {
    for seed in 0..SEEDS {
        converges(true, true, false, seed);
    }
}

#[test]
fn without_it_clients_converge_under_loss_and_silence_while_roles_change() {
    for seed in 0..12 {
        converges(false, false, false, seed);
    }
}

/// The same with owning connections derived from owner chains that the game relinks at random
/// (`ActorLevelConfig::owner_chain_connections`): each client's roles and values follow the
/// owner UE's `GetNetConnection` walk gives each actor, as its own owner changes and as its
/// chain's do.
#[test]
fn with_owner_chains_clients_converge_under_loss_and_silence_while_roles_and_chains_change() {
    for seed in 0..12 {
        converges(true, false, true, seed);
    }
    for seed in 0..6 {
        converges(true, true, true, seed);
    }
}
