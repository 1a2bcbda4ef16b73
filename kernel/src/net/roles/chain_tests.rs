//! Owning connections derived from owner chains ([`super::chains`]) against UE's walk, over
//! random games: owners given and taken back, actors relinked (chains, cycles, an actor its own
//! owner), despawned, registered as sub-objects, connections removed and added.

use super::*;
use crate::net::{ActorLevelConfig, DriverConfig, NetGuid, NetRole, SubObjectCondition, MAX_OWNER_DEPTH};
use crate::schema::{ClassBuilder, PropType, PropertyDecl, VectorQuant};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// What the game did, as a test keeps it: per actor its own owner, autonomy, owner actor, and
/// the owner it was registered under as a sub-object.
#[derive(Default)]
struct Game {
    ids: Vec<(ActorId, NetGuid)>,
    own: HashMap<NetGuid, ConnectionId>,
    autonomous: HashMap<NetGuid, bool>,
    link: HashMap<NetGuid, NetGuid>,
    sub_of: HashMap<NetGuid, NetGuid>,
    /// Sub-objects whose owner was despawned without them: torn off.
    torn: std::collections::HashSet<NetGuid>,
}

impl Game {
    /// UE's `GetNetConnection`: the actor's own owner, else the first up its chain of owner
    /// actors still alive, within [`MAX_OWNER_DEPTH`] links; a sub-object's is its owner's.
    fn owner(&self, guid: NetGuid) -> Option<ConnectionId> {
        let alive = |g: &NetGuid| self.ids.iter().any(|&(_, x)| x == *g);
        let mut at = self.sub_of.get(&guid).copied().unwrap_or(guid);
        for _ in 0..=MAX_OWNER_DEPTH {
            if let Some(&c) = self.own.get(&at) {
                return Some(c);
            }
            // A sub-object named as an owner actor: its chain goes on through its owner.
            at = self.link.get(&at).or_else(|| self.sub_of.get(&at)).copied().filter(alive)?;
        }
        None
    }
}

/// A driver at the actor level, owning connections following owner chains or not, with one
/// class of located things with an owner-only property (no viewers: ownership and roles are
/// what these tests look at).
fn thing_world(chains: bool) -> (NetDriver, ClassStore, ClassId) {
    let layout = std::sync::Arc::new(
        ClassBuilder::new("Thing")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Ammo", PropType::U16).condition(crate::schema::Condition::OwnerOnly))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout);
    let level = ActorLevelConfig { owner_chain_connections: chains, ..ActorLevelConfig::default() };
    let mut driver = NetDriver::new(DriverConfig { actor_level: Some(level), ..DriverConfig::default() }).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    driver.set_location_property(class, 0).unwrap();
    (driver, store, class)
}

fn world(seed: u64) {
    let (mut driver, mut store, class) = thing_world(true);
    let mut conns: Vec<ConnectionId> = (0..3).map(|_| driver.add_connection(false)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut game = Game::default();
    let spawn = |driver: &mut NetDriver, store: &mut ClassStore, game: &mut Game| {
        let id = store.spawn();
        let guid = driver.assign_guid(class, store, id).unwrap();
        game.ids.push((id, guid));
        (id, guid)
    };
    for _ in 0..10 {
        spawn(&mut driver, &mut store, &mut game);
    }
    let (mut derived, mut moved) = (0, 0);
    for step in 0..400 {
        let pick = |rng: &mut rand_chacha::ChaCha8Rng, game: &Game| game.ids[rng.random_range(0..game.ids.len())];
        let (id, guid) = pick(&mut rng, &game);
        let sub = game.sub_of.contains_key(&guid) || game.torn.contains(&guid);
        let before: HashMap<NetGuid, Option<ConnectionId>> =
            game.ids.iter().map(|&(i, g)| (g, driver.owning_connection(class, i))).collect();
        match rng.random_range(0..100) {
            0..30 if !sub => {
                let owner = rng.random_bool(0.6).then(|| conns[rng.random_range(0..conns.len())]);
                let autonomous = rng.random_bool(0.5);
                driver.set_owner(class, &store, id, owner, autonomous).unwrap();
                match owner {
                    Some(c) => game.own.insert(guid, c),
                    None => game.own.remove(&guid),
                };
                game.autonomous.insert(guid, autonomous);
            }
            30..60 if !sub => {
                let to = rng.random_bool(0.85).then(|| pick(&mut rng, &game).1);
                driver.set_owner_actor(class, &store, id, to, None).unwrap();
                match to {
                    Some(t) => game.link.insert(guid, t),
                    None => game.link.remove(&guid),
                };
            }
            60..68 if !sub => {
                let autonomous = rng.random_bool(0.5);
                driver.set_autonomous_proxy(class, &store, id, autonomous).unwrap();
                game.autonomous.insert(guid, autonomous);
            }
            68..80 => {
                // Despawned, most times with its sub-objects (as UE's die with their actor); a
                // sub-object left behind is torn off, an actor of its own whose owner actor is
                // gone. The driver retires them at its next tick.
                let parts = game.sub_of.iter().filter(|&(_, &o)| o == guid).map(|(&s, _)| s);
                let parts: Vec<NetGuid> = parts.collect();
                let gone: Vec<NetGuid> = if rng.random_bool(0.7) { parts.clone() } else { Vec::new() };
                game.torn.extend(parts.iter().filter(|p| !gone.contains(p)));
                let gone: Vec<NetGuid> = gone.into_iter().chain([guid]).collect();
                for &(i, g) in &game.ids {
                    if gone.contains(&g) {
                        store.despawn(i).unwrap();
                    }
                }
                game.ids.retain(|(_, g)| !gone.contains(g));
                game.sub_of.retain(|s, _| !parts.contains(s) && !gone.contains(s));
                driver.tick(&mut [&mut store]).unwrap();
                spawn(&mut driver, &mut store, &mut game);
            }
            80..88 if !sub => {
                // A new actor made a sub-object of this one (before its first tick).
                let (_, part) = spawn(&mut driver, &mut store, &mut game);
                let part_id = game.ids.last().unwrap().0;
                driver.register_sub_object(class, &store, part_id, guid, SubObjectCondition::None).unwrap();
                game.sub_of.insert(part, guid);
            }
            88..92 => {
                let gone = conns.remove(rng.random_range(0..conns.len()));
                driver.remove_connection(gone).unwrap();
                game.own.retain(|_, c| *c != gone);
                conns.push(driver.add_connection(false));
            }
            _ => {
                driver.tick(&mut [&mut store]).unwrap();
            }
        }
        for &(i, g) in &game.ids {
            let want = game.owner(g);
            let got = driver.owning_connection(class, i);
            assert_eq!(got, want, "seed {seed} step {step}: {g:?}'s owner");
            let own = game.sub_of.get(&g).map_or(g, |&o| o);
            if want.is_some() && !game.own.contains_key(&own) {
                derived += 1;
            }
            if before.get(&g).is_some_and(|&b| b != got) {
                moved += 1;
            }
            let autonomous = game.autonomous.get(&own).copied().unwrap_or(false);
            for &c in &conns {
                let role = match () {
                    _ if game.torn.contains(&g) => NetRole::Authority,
                    _ if want == Some(c) && autonomous => NetRole::AutonomousProxy,
                    _ => NetRole::SimulatedProxy,
                };
                assert_eq!(
                    driver.client_role(class, i, c),
                    Some(role),
                    "seed {seed} step {step}: {g:?}'s role for {c:?}"
                );
            }
        }
    }
    assert!(derived > 100 && moved > 20, "seed {seed}: {derived} derived owners, {moved} moves: a world too tame");
}

#[test]
fn owning_connections_follow_ues_walk_of_the_owner_chain() {
    for seed in 0..40 {
        world(seed);
    }
}

/// A pawn its player owns (`set_owner`) and a rifle whose owner actor is the pawn, with owner
/// chains followed or not: the rifle's owning connection, and the player's.
fn rifle_of_a_players_pawn(chains: bool) -> (Option<ConnectionId>, ConnectionId) {
    let (mut driver, mut store, class) = thing_world(chains);
    let conn = driver.add_connection(false);
    let (pawn, rifle) = (store.spawn(), store.spawn());
    let pawn_guid = driver.assign_guid(class, &store, pawn).unwrap();
    driver.set_owner(class, &store, pawn, Some(conn), false).unwrap();
    driver.set_owner_actor(class, &store, rifle, Some(pawn_guid), None).unwrap();
    assert_eq!(driver.owning_connection(class, pawn), Some(conn));
    (driver.owning_connection(class, rifle), conn)
}

/// With the switch off the chain gives no owner: only `set_owner` makes one (the behaviour
/// before owner chains).
#[test]
fn without_owner_chains_an_owner_actor_gives_no_owning_connection() {
    assert_eq!(rifle_of_a_players_pawn(false).0, None);
}

/// By default the chain gives the owner, as UE's `GetNetConnection` walks it: a driver made
/// with the default actor level hands a rifle its pawn's player.
#[test]
fn by_default_an_owner_actor_gives_its_owning_connection() {
    let (rifle, player) = rifle_of_a_players_pawn(ActorLevelConfig::default().owner_chain_connections);
    assert_eq!(rifle, Some(player));
}

/// The chains keep nothing of what is gone: a pawn firing projectiles (each linked to it, then
/// despawned), parts linked to the pawn and then registered as a bag's sub-objects, connections
/// added and removed — the index holds only the live links and owners.
#[test]
fn the_chains_keep_nothing_of_actors_gone() {
    let (mut driver, mut store, class) = thing_world(true);
    let pawn = store.spawn();
    let pawn_guid = driver.assign_guid(class, &store, pawn).unwrap();
    let bag = store.spawn();
    let bag_guid = driver.assign_guid(class, &store, bag).unwrap();
    for round in 0..500 {
        let conn = driver.add_connection(false);
        driver.set_owner(class, &store, pawn, Some(conn), round % 2 == 0).unwrap();
        let (shot, part) = (store.spawn(), store.spawn());
        driver.set_owner_actor(class, &store, shot, Some(pawn_guid), None).unwrap();
        driver.set_owner(class, &store, shot, Some(conn), false).unwrap();
        driver.set_owner_actor(class, &store, part, Some(pawn_guid), None).unwrap();
        assert_eq!(driver.owning_connection(class, part), Some(conn));
        // Registered under the bag: its link to the pawn goes.
        driver.register_sub_object(class, &store, part, bag_guid, SubObjectCondition::None).unwrap();
        assert_eq!(driver.owning_connection(class, part), None);
        driver.tick(&mut [&mut store]).unwrap();
        store.despawn(shot).unwrap();
        store.despawn(part).unwrap();
        driver.tick(&mut [&mut store]).unwrap();
        driver.remove_connection(conn).unwrap();
        assert_eq!(driver.owning_connection(class, pawn), None);
    }
    let chains = driver.chains.as_ref().unwrap();
    assert!(chains.children.is_empty(), "{} owners with children left", chains.children.len());
    assert!(chains.explicit.is_empty(), "{} owners left", chains.explicit.len());
}
