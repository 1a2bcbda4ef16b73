//! Review of the actor lifecycle under loss: `set_replicates` switched off and on with
//! sub-objects and fast arrays, sub-objects added and removed while the owner is off, dormant or
//! opening, tear-off with the switch, and the end state every client must reach once the link
//! heals — the server's actors, sub-objects and fast arrays its conditions allow, and nothing
//! stale.

use super::*;
use shadowrep::fastarray::item_layout;
use shadowrep::net::{Dormancy, FastArrayKind, SubObjectCondition};
use std::collections::BTreeMap;

mod cases;
mod rich;
mod switch;

/// Parent of the weapon's ammo.
const AMMO: usize = 0;

/// A server with characters (the `thing` class), weapons (sub-objects) and a fast array kind of
/// `u32` items; clients viewing from the origin.
pub struct World {
    pub driver: NetDriver,
    pub chars: ClassStore,
    pub weapons: ClassStore,
    pub ch: ClassId,
    pub wp: ClassId,
    pub kind: FastArrayKind,
    pub clients: Vec<(ConnectionId, ClientWorld)>,
    /// Packets the clients refused (an honest server's, in order: none).
    pub refused: Vec<String>,
    pub ticks: u32,
}

fn weapon_layout() -> Arc<ClassLayout> {
    Arc::new(ClassBuilder::new("Weapon").property(PropertyDecl::new("Ammo", PropType::U32)).build().unwrap())
}

fn items_layout() -> Arc<shadowrep::schema::ArrayLayout> {
    Arc::new(item_layout("Item", PropType::U32).unwrap())
}

impl World {
    pub fn new(clients: usize) -> World {
        World::with_level(clients, ActorLevelConfig::default())
    }

    /// [`World::new`] with the actor level's configuration `level`.
    pub fn with_level(clients: usize, level: ActorLevelConfig) -> World {
        let mut chars = ClassStore::new(thing());
        let mut weapons = ClassStore::new(weapon_layout());
        let cfg = DriverConfig { actor_level: Some(level), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let ch = driver.register_class(&mut chars).unwrap();
        let wp = driver.register_class(&mut weapons).unwrap();
        driver.set_location_property(ch, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(ch, s).unwrap();
        driver.set_class_settings(wp, s).unwrap();
        let kind = driver.register_fast_array_kind(items_layout()).unwrap();
        let mut w = World { driver, chars, weapons, ch, wp, kind, clients: Vec::new(), refused: Vec::new(), ticks: 0 };
        for _ in 0..clients {
            w.join();
        }
        w
    }

    pub fn join(&mut self) -> usize {
        let conn = self.driver.add_connection(false);
        self.driver.set_viewers(conn, &[viewer([0.0; 3], None)]).unwrap();
        let world = ClientWorld::new(&[thing(), weapon_layout()], &self.driver.checksums())
            .and_then(|w| w.with_fast_array_kinds(&[items_layout()], &self.driver.fast_array_checksums()))
            .unwrap();
        self.clients.push((conn, world));
        self.clients.len() - 1
    }

    pub fn spawn(&mut self, at: [f32; 3]) -> (ActorId, NetGuid) {
        let id = self.chars.spawn();
        self.chars.set(id, LOCATION, &Value::Vector(at)).unwrap();
        (id, self.driver.assign_guid(self.ch, &self.chars, id).unwrap())
    }

    pub fn weapon(&mut self, owner: NetGuid, ammo: u32, cond: SubObjectCondition) -> (ActorId, NetGuid) {
        let w = self.weapons.spawn();
        self.weapons.set(w, AMMO, &Value::U32(ammo)).unwrap();
        (w, self.driver.register_sub_object(self.wp, &self.weapons, w, owner, cond).unwrap())
    }

    /// One frame; each packet to a client and each feedback lost with `loss` (a mask of clients
    /// whose packets all go: `drop_all`).
    pub fn step(&mut self, rng: &mut impl rand::Rng, loss: f64, drop_all: u32) {
        self.driver.tick(&mut [&mut self.chars, &mut self.weapons]).unwrap();
        self.ticks += 1;
        for (c, (conn, world)) in self.clients.iter_mut().enumerate() {
            let dropped = drop_all >> c & 1 != 0;
            for p in self.driver.take_packets(*conn).unwrap() {
                if !(dropped || loss > 0.0 && rng.random_bool(loss)) {
                    if let Err(e) = world.receive(&p) {
                        self.refused.push(format!("client {c} at tick {}: {e}", self.ticks));
                    }
                }
            }
            let fb = world.feedback();
            if !(dropped || loss > 0.0 && rng.random_bool(loss)) {
                self.driver.receive_feedback(*conn, &fb).unwrap();
            } else {
                self.driver.heard_from(*conn).unwrap();
            }
        }
    }

    pub fn run(&mut self, n: usize) {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        for _ in 0..n {
            self.step(&mut rng, 0.0, 0);
        }
    }

    pub fn client(&self, c: usize) -> &ClientWorld {
        &self.clients[c].1
    }

    pub fn items(&self, fa: NetGuid) -> BTreeMap<u32, Vec<u8>> {
        self.driver.fast_array(fa).unwrap().iter().map(|(id, b)| (id.0, b.to_vec())).collect()
    }

    pub fn client_items(&self, c: usize, fa: NetGuid) -> Option<BTreeMap<u32, Vec<u8>>> {
        self.client(c).fast_array(fa).map(|r| r.iter().map(|(id, b)| (id.0, b.to_vec())).collect())
    }

    /// Whether client `c`'s copy of character `guid` (`id` here) has the server's health.
    pub fn check_health(&self, c: usize, (id, guid): (ActorId, NetGuid)) -> Result<(), String> {
        let (health, held) = (self.chars.get(id, HEALTH).ok(), self.client(c).value(guid, HEALTH));
        if held != health {
            return Err(format!("client {c}: character {guid} health {held:?}, server {health:?}"));
        }
        Ok(())
    }

    /// Despawns one of `weapons` at random (taken off the list, put on `gone`); returns its GUID.
    pub fn disarm(
        &mut self,
        rng: &mut impl rand::Rng,
        weapons: &mut Vec<(ActorId, NetGuid, SubObjectCondition)>,
        gone: &mut Vec<NetGuid>,
    ) -> NetGuid {
        let (wid, wg, _) = weapons.remove(rng.random_range(0..weapons.len()));
        self.weapons.despawn(wid).unwrap();
        gone.push(wg);
        wg
    }

    /// Despawns character `id` (`guid`) and its `weapons`; it, they and its `arrays` go on
    /// `gone`.
    pub fn despawn_character(
        &mut self,
        (id, guid): (ActorId, NetGuid),
        (weapons, arrays): (&Weapons, &Arrays),
        gone: &mut Vec<NetGuid>,
    ) {
        self.chars.despawn(id).unwrap();
        gone.push(guid);
        for &(wid, wg, _) in weapons {
            self.weapons.despawn(wid).unwrap();
            gone.push(wg);
        }
        gone.extend(arrays.iter().map(|a| a.0));
    }

    /// Whether client `c` holds exactly the weapons and fast arrays of character `owner` that
    /// `allows` lets it have (by condition), each with the server's ammo or items; the error
    /// says what differs (`why`: what it adds of the character).
    pub fn check_parts(
        &self,
        c: usize,
        owner: NetGuid,
        (weapons, arrays): (&Weapons, &Arrays),
        allows: impl Fn(SubObjectCondition) -> bool,
        why: &str,
    ) -> Result<(), String> {
        let client = self.client(c);
        let mut want = Vec::new();
        for &(wid, wg, cond) in weapons.iter().filter(|w| allows(w.2)) {
            want.push(wg);
            let ammo = self.weapons.get(wid, AMMO).ok();
            if client.value(wg, AMMO) != ammo {
                let held = client.value(wg, AMMO);
                return Err(format!("client {c}: weapon {wg} ({cond:?}) of {owner} ammo {held:?}, server {ammo:?}"));
            }
        }
        let mut have = client.sub_objects(owner);
        want.sort();
        have.sort();
        if have != want {
            return Err(format!("client {c}: character {owner}'s weapons {have:?}, want {want:?}{why}"));
        }
        let mut want = Vec::new();
        for &(fa, cond) in arrays.iter().filter(|a| allows(a.1)) {
            want.push(fa);
            let (server, held) = (self.items(fa), self.client_items(c, fa));
            if held.as_ref() != Some(&server) {
                return Err(format!("client {c}: fast array {fa} ({cond:?}) {held:?}, server {server:?}"));
            }
        }
        let mut have = client.fast_arrays_of(owner).to_vec();
        want.sort();
        have.sort();
        if have != want {
            return Err(format!("client {c}: character {owner}'s fast arrays {have:?}, want {want:?}{why}"));
        }
        Ok(())
    }
}

/// A character's weapons (sub-objects): id, GUID, condition.
pub type Weapons = [(ActorId, NetGuid, SubObjectCondition)];

/// A character's fast arrays: GUID, condition.
pub type Arrays = [(NetGuid, SubObjectCondition)];

/// One character of the random worlds, with its weapons and fast arrays.
struct Char {
    id: ActorId,
    guid: NetGuid,
    owner: Option<usize>,
    weapons: Vec<(ActorId, NetGuid, SubObjectCondition)>,
    arrays: Vec<(NetGuid, SubObjectCondition)>,
}

/// Switches actor `id`'s replication off if on, on if off.
fn toggle(w: &mut World, id: ActorId) {
    let on = w.driver.replicates(w.ch, id) == Some(true);
    w.driver.set_replicates(w.ch, &w.chars, id, !on).unwrap();
}

/// Moves actor `id` out of every viewer's reach half the time, else near the origin.
fn wander(w: &mut World, rng: &mut impl rand::Rng, id: ActorId) {
    let at = if rng.random_bool(0.5) { [900_000.0, 0.0, 0.0] } else { [rng.random_range(0.0..3000.0), 0.0, 0.0] };
    w.chars.set(id, LOCATION, &Value::Vector(at)).unwrap();
}

impl Char {
    /// One of its weapons under another random condition.
    fn recondition(&mut self, w: &mut World, rng: &mut impl rand::Rng) {
        let i = rng.random_range(0..self.weapons.len());
        let cond = CONDS[rng.random_range(0..3)];
        self.weapons[i].2 = cond;
        w.driver.set_sub_object_condition(w.wp, &w.weapons, self.weapons[i].0, cond).unwrap();
    }

    /// Another owner: a random client four times in five, else none.
    fn reown(&mut self, w: &mut World, rng: &mut impl rand::Rng) {
        let o = rng.random_bool(0.8).then(|| rng.random_range(0..w.clients.len()));
        self.owner = o;
        w.driver.set_owner(w.ch, &w.chars, self.id, o.map(|o| w.clients[o].0), false).unwrap();
    }

    /// Gives it one more fast array, under a random condition.
    fn add_array(&mut self, w: &mut World, rng: &mut impl rand::Rng) {
        let cond = CONDS[rng.random_range(0..3)];
        let fa = w.driver.add_fast_array(w.kind, self.guid, cond).unwrap();
        self.arrays.push((fa, cond));
    }

    /// Gives it one more weapon, under a random condition.
    fn arm(&mut self, w: &mut World, rng: &mut impl rand::Rng) {
        let cond = CONDS[rng.random_range(0..3)];
        let (wid, wg) = w.weapon(self.guid, rng.random_range(0..100), cond);
        self.weapons.push((wid, wg, cond));
    }
}

const CONDS: [SubObjectCondition; 3] =
    [SubObjectCondition::None, SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner];

fn allows(cond: SubObjectCondition, owner: bool) -> bool {
    cond.allows(shadowrep::net::ReplicationFlags { owner, ..Default::default() })
}

/// A character of the random worlds spawned near the origin: owned by a random client (or
/// none), with `sublevel` in three of ten when given, up to two weapons and one fast array under
/// random conditions, switched off in three of ten.
fn spawn_char(w: &mut World, rng: &mut impl rand::Rng, sublevel: Option<shadowrep::net::SublevelId>) -> Char {
    let at = [rng.random_range(0.0..3000.0), 0.0, 0.0];
    let (id, guid) = w.spawn(at);
    let owner = rng.random_bool(0.6).then(|| rng.random_range(0..w.clients.len()));
    if let Some(o) = owner {
        w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[o].0), false).unwrap();
    }
    if let Some(level) = sublevel {
        if rng.random_bool(0.3) {
            w.driver.set_sublevel(w.ch, &w.chars, id, level).unwrap();
        }
    }
    let mut c = Char { id, guid, owner, weapons: Vec::new(), arrays: Vec::new() };
    for _ in 0..rng.random_range(0..3) {
        c.arm(w, rng);
    }
    for _ in 0..rng.random_range(0..2) {
        c.add_array(w, rng);
    }
    if rng.random_bool(0.3) {
        w.driver.set_replicates(w.ch, &w.chars, id, false).unwrap();
    }
    c
}

fn check(w: &World, chars: &[Char], gone: &[NetGuid]) -> Result<(), String> {
    for (c, (conn, client)) in w.clients.iter().enumerate() {
        for &g in gone {
            if client.has(g) || client.fast_array(g).is_some() {
                return Err(format!("client {c} still holds {g}, gone on the server"));
            }
        }
        for ch in chars {
            if !client.has(ch.guid) {
                return Err(format!("client {c} lacks character {}", ch.guid));
            }
            w.check_health(c, (ch.id, ch.guid))?;
            let is_owner = w.driver.owning_connection(w.ch, ch.id) == Some(*conn);
            assert_eq!(is_owner, ch.owner == Some(c));
            w.check_parts(c, ch.guid, (&ch.weapons, &ch.arrays), |cond| allows(cond, is_owner), "")?;
        }
    }
    Ok(())
}
