//! Review of the actor lifecycle under loss: `set_replicates` switched off and on with
//! sub-objects and fast arrays, sub-objects added and removed while the owner is off, dormant or
//! opening, tear-off with the switch, and the end state every client must reach once the link
//! heals — the server's actors, sub-objects and fast arrays its conditions allow, and nothing
//! stale.

use super::*;
use shadowrep::fastarray::item_layout;
use shadowrep::net::{Dormancy, FastArrayKind, SubObjectCondition};
use std::collections::BTreeMap;

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
        let thing = thing();
        let mut chars = ClassStore::new(thing.clone());
        let mut weapons = ClassStore::new(weapon_layout());
        let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
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
}

/// One character of the random worlds, with its weapons and fast arrays.
struct Char {
    id: ActorId,
    guid: NetGuid,
    owner: Option<usize>,
    weapons: Vec<(ActorId, NetGuid, SubObjectCondition)>,
    arrays: Vec<(NetGuid, SubObjectCondition)>,
}

const CONDS: [SubObjectCondition; 3] =
    [SubObjectCondition::None, SubObjectCondition::OwnerOnly, SubObjectCondition::SkipOwner];

fn allows(cond: SubObjectCondition, owner: bool) -> bool {
    cond.allows(shadowrep::net::ReplicationFlags { owner, ..Default::default() })
}

/// Plays a random world of characters switched off and on, with weapons and fast arrays coming
/// and going, moving in and out of reach, changing owner and dormancy, over a link losing `loss`
/// of everything; then heals it (every character on, awake, in reach; no loss) and checks every
/// client holds exactly the server's state: each character, each weapon and fast array its
/// condition allows with the server's values, and nothing else — no destroyed character or
/// weapon, no weapon or array the server no longer sends it.
fn switch_world(seed: u64, loss: f64, frames: u32, dormancy: bool) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::new(3);
    let mut chars: Vec<Char> = Vec::new();
    let mut gone: Vec<NetGuid> = Vec::new();
    let near = |rng: &mut rand_chacha::ChaCha8Rng| [rng.random_range(0.0..3000.0), 0.0, 0.0];
    for frame in 0..frames {
        let op = rng.random_range(0..40);
        let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
        match (op, k) {
            (0..=2, _) if chars.len() < 8 => {
                let at = near(&mut rng);
                let (id, guid) = w.spawn(at);
                let owner = rng.random_bool(0.6).then(|| rng.random_range(0..3));
                if let Some(o) = owner {
                    w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[o].0), false).unwrap();
                }
                let mut c = Char { id, guid, owner, weapons: Vec::new(), arrays: Vec::new() };
                for _ in 0..rng.random_range(0..3) {
                    let cond = CONDS[rng.random_range(0..3)];
                    let (wid, wg) = w.weapon(guid, rng.random_range(0..100), cond);
                    c.weapons.push((wid, wg, cond));
                }
                for _ in 0..rng.random_range(0..2) {
                    let cond = CONDS[rng.random_range(0..3)];
                    let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
                    c.arrays.push((fa, cond));
                }
                if rng.random_bool(0.3) {
                    w.driver.set_replicates(w.ch, &w.chars, id, false).unwrap();
                }
                chars.push(c);
            }
            (3..=8, Some(k)) => {
                let on = w.driver.replicates(w.ch, chars[k].id) == Some(true);
                w.driver.set_replicates(w.ch, &w.chars, chars[k].id, !on).unwrap();
            }
            (9..=10, Some(k)) => {
                let at = if rng.random_bool(0.5) { [900_000.0, 0.0, 0.0] } else { near(&mut rng) };
                w.chars.set(chars[k].id, LOCATION, &Value::Vector(at)).unwrap();
            }
            (11..=12, Some(k)) if chars[k].weapons.len() < 3 => {
                let cond = CONDS[rng.random_range(0..3)];
                let (wid, wg) = w.weapon(chars[k].guid, rng.random_range(0..100), cond);
                chars[k].weapons.push((wid, wg, cond));
            }
            (13, Some(k)) if !chars[k].weapons.is_empty() => {
                let i = rng.random_range(0..chars[k].weapons.len());
                let (wid, wg, _) = chars[k].weapons.remove(i);
                w.weapons.despawn(wid).unwrap();
                gone.push(wg);
            }
            (14, Some(k)) if !chars[k].weapons.is_empty() => {
                let i = rng.random_range(0..chars[k].weapons.len());
                let cond = CONDS[rng.random_range(0..3)];
                chars[k].weapons[i].2 = cond;
                w.driver.set_sub_object_condition(w.wp, &w.weapons, chars[k].weapons[i].0, cond).unwrap();
            }
            (15..=16, Some(k)) => {
                let o = rng.random_bool(0.8).then(|| rng.random_range(0..3));
                chars[k].owner = o;
                w.driver.set_owner(w.ch, &w.chars, chars[k].id, o.map(|o| w.clients[o].0), false).unwrap();
            }
            (17, Some(k)) if chars[k].arrays.len() < 2 => {
                let cond = CONDS[rng.random_range(0..3)];
                let fa = w.driver.add_fast_array(w.kind, chars[k].guid, cond).unwrap();
                chars[k].arrays.push((fa, cond));
            }
            (18, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let (fa, _) = chars[k].arrays.remove(i);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
            }
            (19..=20, Some(k)) if dormancy => {
                let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
                w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            }
            (21, Some(k)) => {
                let c = chars.swap_remove(k);
                w.chars.despawn(c.id).unwrap();
                gone.push(c.guid);
                for (wid, wg, _) in c.weapons {
                    w.weapons.despawn(wid).unwrap();
                    gone.push(wg);
                }
                gone.extend(c.arrays.iter().map(|a| a.0));
            }
            _ => {}
        }
        // Values change now and then (the game does not care whether the actor is on).
        for c in &chars {
            for &(wid, _, _) in &c.weapons {
                if rng.random_bool(0.05) {
                    w.weapons.set(wid, AMMO, &Value::U32(rng.random_range(0..1000))).unwrap();
                }
            }
            if rng.random_bool(0.05) {
                w.chars.set(c.id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap();
            }
            for &(fa, _) in &c.arrays {
                if rng.random_bool(0.1) {
                    let mut items = w.driver.fast_array_mut(fa).unwrap();
                    let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
                    match rng.random_range(0..3) {
                        0 if !ids.is_empty() => {
                            items.remove(ids[rng.random_range(0..ids.len())]).unwrap();
                        }
                        1 if !ids.is_empty() => {
                            let v: u32 = rng.random();
                            items.set(ids[rng.random_range(0..ids.len())], &v.to_le_bytes()).unwrap();
                        }
                        _ => {
                            let v: u32 = rng.random();
                            items.add(&v.to_le_bytes()).unwrap();
                        }
                    }
                }
            }
        }
        // Now and then one client loses everything for a while.
        let drop_all = if frame % 50 < 8 { 1 << (frame / 50 % 3) } else { 0 };
        w.step(&mut rng, loss, drop_all);
    }
    // Heal.
    for c in &chars {
        w.driver.set_replicates(w.ch, &w.chars, c.id, true).unwrap();
        if dormancy {
            w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::Awake).unwrap();
        }
        w.chars.set(c.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    w.run(150);
    let what = |e: String| format!("seed {seed}, loss {loss}, dormancy {dormancy}: {e}");
    if !w.refused.is_empty() {
        return Err(what(format!("packets refused: {:?}", w.refused)));
    }
    check(&w, &chars, &gone).map_err(what)
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
            let health = w.chars.get(ch.id, HEALTH).ok();
            if client.value(ch.guid, HEALTH) != health {
                return Err(format!(
                    "client {c}: character {} health {:?}, server {health:?}",
                    ch.guid,
                    client.value(ch.guid, HEALTH)
                ));
            }
            let is_owner = w.driver.owning_connection(w.ch, ch.id) == Some(*conn);
            assert_eq!(is_owner, ch.owner == Some(c));
            let mut want = Vec::new();
            for &(wid, wg, cond) in &ch.weapons {
                if allows(cond, is_owner) {
                    want.push(wg);
                    let ammo = w.weapons.get(wid, AMMO).ok();
                    if client.value(wg, AMMO) != ammo {
                        return Err(format!(
                            "client {c}: weapon {wg} ({cond:?}) of {} ammo {:?}, server {ammo:?}",
                            ch.guid,
                            client.value(wg, AMMO)
                        ));
                    }
                }
            }
            let mut have = client.sub_objects(ch.guid);
            want.sort();
            have.sort();
            if have != want {
                return Err(format!("client {c}: character {}'s weapons {have:?}, want {want:?}", ch.guid));
            }
            let mut want: Vec<NetGuid> = Vec::new();
            for &(fa, cond) in &ch.arrays {
                if allows(cond, is_owner) {
                    want.push(fa);
                    let (server, held) = (w.items(fa), w.client_items(c, fa));
                    if held.as_ref() != Some(&server) {
                        return Err(format!("client {c}: fast array {fa} ({cond:?}) {held:?}, server {server:?}"));
                    }
                }
            }
            let mut have = client.fast_arrays_of(ch.guid).to_vec();
            want.sort();
            have.sort();
            if have != want {
                return Err(format!("client {c}: character {}'s fast arrays {have:?}, want {want:?}", ch.guid));
            }
        }
    }
    Ok(())
}

#[test]
fn random_switch_worlds_heal_to_the_servers_state() {
    let mut failures = Vec::new();
    for seed in 0..12 {
        for (loss, dormancy) in [(0.2, false), (0.35, true)] {
            if let Err(e) = switch_world(seed, loss, 400, dormancy) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A static actor of the richer worlds: its path, sublevel and fast array.
struct Static {
    id: ActorId,
    guid: NetGuid,
    path: String,
    sublevel: shadowrep::net::SublevelId,
    arrays: Vec<(NetGuid, SubObjectCondition)>,
    alive: bool,
    torn: bool,
}

/// A client of the richer worlds: its packets delayed `delay` frames, the sublevel it loaded.
struct Peer {
    inbox: std::collections::VecDeque<(u32, Vec<u8>)>,
    loaded: bool,
    streamed: Option<u32>,
    refused: u32,
}

/// [`switch_world`] with more: a short relevant timeout (closes and reopens while earlier ones
/// fly), packets delayed two frames, static actors with fast arrays in a sublevel clients stream
/// out and in, tear-off, a client leaving and one joining. Torn-off characters are checked
/// only as torn off where held.
fn rich_world(seed: u64, loss: f64, frames: u32) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    use shadowrep::net::SublevelId;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w;
    let cfg = ActorLevelConfig { relevant_timeout: 0.1, ..ActorLevelConfig::default() };
    {
        // Rebuild the driver with the short timeout.
        let thing = thing();
        let mut chars = ClassStore::new(thing);
        let mut weapons = ClassStore::new(weapon_layout());
        let mut driver = NetDriver::new(DriverConfig { actor_level: Some(cfg), ..DriverConfig::default() }).unwrap();
        let ch = driver.register_class(&mut chars).unwrap();
        let wp = driver.register_class(&mut weapons).unwrap();
        driver.set_location_property(ch, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(ch, s).unwrap();
        driver.set_class_settings(wp, s).unwrap();
        let kind = driver.register_fast_array_kind(items_layout()).unwrap();
        w = World { driver, chars, weapons, ch, wp, kind, clients: Vec::new(), refused: Vec::new(), ticks: 0 };
    }
    const HALL: SublevelId = SublevelId(1);
    // Static actors, half in the hall.
    let mut statics: Vec<Static> = Vec::new();
    for i in 0..4 {
        let id = w.chars.spawn();
        w.chars.set(id, LOCATION, &Value::Vector([200.0 * i as f32, 0.0, 0.0])).unwrap();
        let path = format!("Level/Static{i}");
        let guid = w.driver.register_static_actor(w.ch, &w.chars, id, &path).unwrap();
        let sublevel = if i % 2 == 0 { HALL } else { SublevelId::PERSISTENT };
        w.driver.set_sublevel(w.ch, &w.chars, id, sublevel).unwrap();
        let cond = CONDS[i % 3];
        let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
        statics.push(Static { id, guid, path, sublevel, arrays: vec![(fa, cond)], alive: true, torn: false });
    }
    let mut peers: Vec<Peer> = Vec::new();
    let join = |w: &mut World, peers: &mut Vec<Peer>, statics: &[Static]| {
        let c = w.join();
        // The persistent level's static actors are loaded with the map (destroyed ones too).
        for s in statics.iter().filter(|s| s.sublevel == SublevelId::PERSISTENT) {
            w.clients[c].1.load_static_actor(&s.path, w.ch.0).unwrap();
        }
        peers.push(Peer { inbox: Default::default(), loaded: false, streamed: None, refused: 0 });
    };
    for _ in 0..3 {
        join(&mut w, &mut peers, &statics);
    }
    let now = std::cell::Cell::new(0u32);
    let stream = |w: &mut World, peers: &mut [Peer], statics: &[Static], c: usize, load: bool| {
        if peers[c].loaded == load {
            return;
        }
        for s in statics.iter().filter(|s| s.sublevel == HALL) {
            if load {
                w.clients[c].1.load_static_actor(&s.path, w.ch.0).unwrap();
            } else {
                w.clients[c].1.unload_static_actor(&s.path);
            }
        }
        peers[c].loaded = load;
        peers[c].streamed = Some(now.get());
        w.driver.set_sublevel_loaded(w.clients[c].0, HALL, load).unwrap();
    };
    let mut chars: Vec<Char> = Vec::new();
    let mut torn: Vec<NetGuid> = Vec::new();
    let mut torn_ids: Vec<ActorId> = Vec::new();
    let mut gone: Vec<NetGuid> = Vec::new();
    let mut why: std::collections::HashMap<NetGuid, String> = Default::default();
    let near = |rng: &mut rand_chacha::ChaCha8Rng| [rng.random_range(0.0..3000.0), 0.0, 0.0];
    let mut frame_no = 0u32;
    for frame in 0..frames {
        now.set(frame_no);
        let op = rng.random_range(0..48);
        let k = (!chars.is_empty()).then(|| rng.random_range(0..chars.len()));
        let si = rng.random_range(0..statics.len());
        match (op, k) {
            (0..=2, _) if chars.len() < 8 => {
                let at = near(&mut rng);
                let (id, guid) = w.spawn(at);
                let owner = rng.random_bool(0.6).then(|| rng.random_range(0..w.clients.len()));
                if let Some(o) = owner {
                    w.driver.set_owner(w.ch, &w.chars, id, Some(w.clients[o].0), false).unwrap();
                }
                if rng.random_bool(0.3) {
                    w.driver.set_sublevel(w.ch, &w.chars, id, HALL).unwrap();
                }
                let mut c = Char { id, guid, owner, weapons: Vec::new(), arrays: Vec::new() };
                for _ in 0..rng.random_range(0..3) {
                    let cond = CONDS[rng.random_range(0..3)];
                    let (wid, wg) = w.weapon(guid, rng.random_range(0..100), cond);
                    c.weapons.push((wid, wg, cond));
                }
                for _ in 0..rng.random_range(0..2) {
                    let cond = CONDS[rng.random_range(0..3)];
                    let fa = w.driver.add_fast_array(w.kind, guid, cond).unwrap();
                    c.arrays.push((fa, cond));
                }
                if rng.random_bool(0.3) {
                    w.driver.set_replicates(w.ch, &w.chars, id, false).unwrap();
                }
                chars.push(c);
            }
            (3..=8, Some(k)) => {
                let on = w.driver.replicates(w.ch, chars[k].id) == Some(true);
                w.driver.set_replicates(w.ch, &w.chars, chars[k].id, !on).unwrap();
            }
            (9..=11, Some(k)) => {
                let at = if rng.random_bool(0.5) { [900_000.0, 0.0, 0.0] } else { near(&mut rng) };
                w.chars.set(chars[k].id, LOCATION, &Value::Vector(at)).unwrap();
            }
            (12..=13, Some(k)) if chars[k].weapons.len() < 3 => {
                let cond = CONDS[rng.random_range(0..3)];
                let (wid, wg) = w.weapon(chars[k].guid, rng.random_range(0..100), cond);
                chars[k].weapons.push((wid, wg, cond));
            }
            (14, Some(k)) if !chars[k].weapons.is_empty() => {
                let i = rng.random_range(0..chars[k].weapons.len());
                let (wid, wg, _) = chars[k].weapons.remove(i);
                w.weapons.despawn(wid).unwrap();
                gone.push(wg);
                why.insert(
                    wg,
                    format!(
                        "weapon despawned at {frame} (owner {} on {:?})",
                        chars[k].guid,
                        w.driver.replicates(w.ch, chars[k].id)
                    ),
                );
            }
            (15, Some(k)) if !chars[k].weapons.is_empty() => {
                let i = rng.random_range(0..chars[k].weapons.len());
                let cond = CONDS[rng.random_range(0..3)];
                chars[k].weapons[i].2 = cond;
                w.driver.set_sub_object_condition(w.wp, &w.weapons, chars[k].weapons[i].0, cond).unwrap();
            }
            (16, Some(k)) => {
                let o = rng.random_bool(0.8).then(|| rng.random_range(0..w.clients.len()));
                chars[k].owner = o;
                w.driver.set_owner(w.ch, &w.chars, chars[k].id, o.map(|o| w.clients[o].0), false).unwrap();
            }
            (17, Some(k)) if chars[k].arrays.len() < 2 => {
                let cond = CONDS[rng.random_range(0..3)];
                let fa = w.driver.add_fast_array(w.kind, chars[k].guid, cond).unwrap();
                chars[k].arrays.push((fa, cond));
            }
            (18, Some(k)) if !chars[k].arrays.is_empty() => {
                let i = rng.random_range(0..chars[k].arrays.len());
                let (fa, _) = chars[k].arrays.remove(i);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
                let held: Vec<bool> = w.clients.iter().map(|c| c.1.fast_array(fa).is_some()).collect();
                let chans: Vec<bool> = w
                    .clients
                    .iter()
                    .map(|c| w.driver.channel_info(c.0).unwrap().iter().any(|i| i.guid == chars[k].guid))
                    .collect();
                why.insert(fa, format!("array removed at {frame} (owner {} on {:?} asleep {} at {:?}, held {held:?}, owner channels {chans:?}, dormant held {:?})", chars[k].guid, w.driver.replicates(w.ch, chars[k].id), w.driver.is_asleep(w.ch, chars[k].id), w.chars.get(chars[k].id, LOCATION).ok(), w.clients.iter().map(|c| c.1.is_dormant(chars[k].guid)).collect::<Vec<_>>()));
            }
            (19..=20, Some(k)) => {
                let d = if rng.random_bool(0.5) { Dormancy::DormantAll } else { Dormancy::Awake };
                w.driver.set_net_dormancy(w.ch, &w.chars, chars[k].id, d).unwrap();
            }
            (21, Some(k)) => {
                let c = chars.swap_remove(k);
                w.chars.despawn(c.id).unwrap();
                gone.push(c.guid);
                why.insert(c.guid, format!("char despawned at {frame} on {:?}", w.driver.replicates(w.ch, c.id)));
                for (wid, wg, _) in c.weapons {
                    why.insert(wg, format!("weapon of despawned char {} at {frame}", c.guid));
                    w.weapons.despawn(wid).unwrap();
                    gone.push(wg);
                }
                gone.extend(c.arrays.iter().map(|a| a.0));
            }
            (22, Some(k)) => {
                // Torn off, sometimes with the switch, dormancy or its sublevel in the same frame.
                let c = chars.swap_remove(k);
                w.driver.tear_off(w.ch, &w.chars, c.id).unwrap();
                match rng.random_range(0..4) {
                    0 => w.driver.set_replicates(w.ch, &w.chars, c.id, false).unwrap(),
                    1 => w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::DormantAll).unwrap(),
                    2 => {
                        let cl = rng.random_range(0..w.clients.len());
                        stream(&mut w, &mut peers, &statics, cl, false);
                    }
                    _ => {}
                }
                torn.push(c.guid);
                // Its weapons and arrays are not checked further; it is switched on at the heal
                // (a tear-off waits while the actor is off).
                torn_ids.push(c.id);
            }
            (23..=24, _) => {
                let cl = rng.random_range(0..w.clients.len());
                let load = !peers[cl].loaded;
                stream(&mut w, &mut peers, &statics, cl, load);
            }
            (25..=27, _) if statics[si].alive && !statics[si].torn => {
                let on = w.driver.replicates(w.ch, statics[si].id) == Some(true);
                w.driver.set_replicates(w.ch, &w.chars, statics[si].id, !on).unwrap();
            }
            (28, _) if statics[si].alive && !statics[si].torn => {
                let at = if rng.random_bool(0.5) { [900_000.0, 0.0, 0.0] } else { near(&mut rng) };
                w.chars.set(statics[si].id, LOCATION, &Value::Vector(at)).unwrap();
            }
            (29, _) if statics[si].alive && !statics[si].torn && rng.random_bool(0.2) => {
                statics[si].alive = false;
                w.chars.despawn(statics[si].id).unwrap();
                gone.extend(statics[si].arrays.iter().map(|a| a.0));
            }
            (30, _) if statics[si].alive && !statics[si].torn && statics[si].arrays.len() < 2 => {
                let cond = CONDS[rng.random_range(0..3)];
                let fa = w.driver.add_fast_array(w.kind, statics[si].guid, cond).unwrap();
                statics[si].arrays.push((fa, cond));
            }
            (31, _) if statics[si].alive && !statics[si].torn && !statics[si].arrays.is_empty() => {
                let (fa, _) = statics[si].arrays.remove(0);
                w.driver.remove_fast_array(fa).unwrap();
                gone.push(fa);
            }
            (32, _) if frame == frames / 2 => {}
            _ => {}
        }
        if frame == frames / 3 {
            // Client 1 leaves; a new one joins.
            let (conn, _) = w.clients.remove(1);
            peers.remove(1);
            w.driver.remove_connection(conn).unwrap();
            for c in &mut chars {
                c.owner = match c.owner {
                    Some(1) => None,
                    Some(o) if o > 1 => Some(o - 1),
                    o => o,
                };
            }
            join(&mut w, &mut peers, &statics);
        }
        // Values change now and then (the game does not care whether the actor is on).
        let live_statics: Vec<(ActorId, Vec<NetGuid>)> = statics
            .iter()
            .filter(|s| s.alive && !s.torn)
            .map(|s| (s.id, s.arrays.iter().map(|a| a.0).collect()))
            .collect();
        let owners = chars.iter().map(|c| (c.id, c.arrays.iter().map(|a| a.0).collect::<Vec<_>>())).chain(live_statics);
        for (id, arrays) in owners.collect::<Vec<_>>() {
            if rng.random_bool(0.05) {
                w.chars.set(id, HEALTH, &Value::U32(rng.random_range(0..1000))).unwrap();
            }
            for fa in arrays {
                if rng.random_bool(0.1) {
                    let mut items = w.driver.fast_array_mut(fa).unwrap();
                    let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
                    match rng.random_range(0..3) {
                        0 if !ids.is_empty() => items.remove(ids[rng.random_range(0..ids.len())]).unwrap(),
                        1 if !ids.is_empty() => {
                            let v: u32 = rng.random();
                            items.set(ids[rng.random_range(0..ids.len())], &v.to_le_bytes()).unwrap()
                        }
                        _ => {
                            let v: u32 = rng.random();
                            items.add(&v.to_le_bytes()).map(|_| ()).unwrap()
                        }
                    }
                }
            }
        }
        for c in &chars {
            for &(wid, _, _) in &c.weapons {
                if rng.random_bool(0.05) {
                    w.weapons.set(wid, AMMO, &Value::U32(rng.random_range(0..1000))).unwrap();
                }
            }
        }
        let lossy = frame < frames;
        rich_step(&mut w, &mut peers, &mut rng, if lossy { loss } else { 0.0 }, frame_no);
        frame_no += 1;
    }
    // Heal: every client loads the hall, every actor on, awake and near.
    for c in &chars {
        w.driver.set_replicates(w.ch, &w.chars, c.id, true).unwrap();
        w.driver.set_net_dormancy(w.ch, &w.chars, c.id, Dormancy::Awake).unwrap();
        w.chars.set(c.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    for &id in &torn_ids {
        w.driver.set_replicates(w.ch, &w.chars, id, true).unwrap();
    }
    for s in statics.iter().filter(|s| s.alive) {
        w.driver.set_replicates(w.ch, &w.chars, s.id, true).unwrap();
        w.chars.set(s.id, LOCATION, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    }
    now.set(frame_no);
    for c in 0..w.clients.len() {
        stream(&mut w, &mut peers, &statics, c, true);
    }
    for _ in 0..150 {
        rich_step(&mut w, &mut peers, &mut rng, 0.0, frame_no);
        frame_no += 1;
    }
    let what = |e: String| format!("seed {seed}, loss {loss}: {e}");
    // An honest server's packets, in order, are never refused (a sublevel streamed out with
    // updates in flight included).
    let refused: u32 = peers.iter().map(|p| p.refused).sum();
    if refused > 0 {
        return Err(what(format!("{refused} packets refused")));
    }
    check(&w, &chars, &gone).map_err(|e| {
        let g: Vec<_> =
            why.iter().filter(|(g, _)| e.contains(&format!(" {g},"))).map(|(g, y)| format!("{g}: {y}")).collect();
        what(format!("{e} {g:?}"))
    })?;
    for (c, (_, client)) in w.clients.iter().enumerate() {
        for &g in &torn {
            if client.has(g) && !client.is_torn_off(g) {
                return Err(what(format!("client {c} holds torn-off {g} not torn off")));
            }
        }
        for s in &statics {
            if !s.alive {
                if client.has(s.guid) || client.static_object(&s.path).is_some() {
                    return Err(what(format!("client {c} holds destroyed static {}", s.guid)));
                }
                continue;
            }
            if !client.has(s.guid) {
                return Err(what(format!("client {c} lacks static {} ({:?})", s.guid, s.sublevel)));
            }
            let health = w.chars.get(s.id, HEALTH).ok();
            if client.value(s.guid, HEALTH) != health {
                return Err(what(format!(
                    "client {c}: static {} health {:?}, server {health:?}",
                    s.guid,
                    client.value(s.guid, HEALTH)
                )));
            }
            let mut want = Vec::new();
            for &(fa, cond) in &s.arrays {
                if allows(cond, false) {
                    want.push(fa);
                    let (server, held) = (w.items(fa), w.client_items(c, fa));
                    if held.as_ref() != Some(&server) {
                        return Err(what(format!(
                            "client {c}: static {}'s fast array {fa} {held:?}, server {server:?}",
                            s.guid
                        )));
                    }
                }
            }
            let mut have = client.fast_arrays_of(s.guid).to_vec();
            want.sort();
            have.sort();
            if have != want {
                return Err(what(format!("client {c}: static {}'s fast arrays {have:?}, want {want:?}", s.guid)));
            }
        }
    }
    Ok(())
}

/// One frame of [`rich_world`]: packets reach each client two frames later (each lost with
/// `loss`), feedback comes straight back (lost with `loss`).
fn rich_step(w: &mut World, peers: &mut [Peer], rng: &mut impl rand::Rng, loss: f64, frame: u32) {
    w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
    for (c, (conn, world)) in w.clients.iter_mut().enumerate() {
        for p in w.driver.take_packets(*conn).unwrap() {
            if !(loss > 0.0 && rng.random_bool(loss)) {
                peers[c].inbox.push_back((frame + 2, p));
            }
        }
        while peers[c].inbox.front().is_some_and(|(at, _)| *at <= frame) {
            let (_, p) = peers[c].inbox.pop_front().unwrap();
            if let Err(e) = world.receive(&p) {
                if std::env::var("REVIEW_LOG").is_ok() {
                    eprintln!(
                        "frame {frame} client {c} (hall loaded {}, last stream {:?}): {e}",
                        peers[c].loaded, peers[c].streamed
                    );
                }
                peers[c].refused += 1;
            }
        }
        let fb = world.feedback();
        if !(loss > 0.0 && rng.random_bool(loss)) {
            w.driver.receive_feedback(*conn, &fb).unwrap();
        } else {
            w.driver.heard_from(*conn).unwrap();
        }
    }
}

#[test]
fn rich_random_worlds_heal_to_the_servers_state() {
    let mut failures = Vec::new();
    for seed in 0..16 {
        if let Err(e) = rich_world(seed, 0.25, 500) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_sublevel_streamed_out_with_updates_of_its_static_actors_in_flight_refuses_no_packet() {
    // The client streams the hall out (its game unloads the hall's static actors, then tells the
    // server) while a packet the server sent before it knew carries an update of the hall's lamp
    // and of an actor elsewhere. UE's client drops a bunch for a channel it cleaned up with the
    // level and reads the rest of the packet; a refused packet is one the server sends again
    // whole, and the client asks for the lamp (and, asked already, for its neighbour) again.
    use crate::sublevels::{level, stream, HALL, LAMP};
    let mut l = level(1);
    let lamp = l.store.spawn();
    l.move_to(lamp, [500.0, 0.0, 0.0]);
    let lamp_guid = l.driver.register_static_actor(l.class, &l.store, lamp, LAMP).unwrap();
    l.driver.set_sublevel(l.class, &l.store, lamp, HALL).unwrap();
    let (other, other_guid) = l.spawn([600.0, 0.0, 0.0], 1);
    stream(&mut l, 0, &[LAMP], true);
    l.run(3);
    assert!(l.client(0).has(lamp_guid) && l.client(0).has(other_guid));
    let conn = l.clients[0].0;
    // Two frames of updates in flight when the client streams the hall out.
    let mut in_flight = Vec::new();
    for hp in [2u32, 3] {
        l.store.set(lamp, HEALTH, &Value::U32(hp)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(hp)).unwrap();
        l.driver.tick(&mut [&mut l.store]).unwrap();
        in_flight.extend(l.driver.take_packets(conn).unwrap());
    }
    stream(&mut l, 0, &[LAMP], false);
    for p in &in_flight {
        let got = l.clients[0].1.receive(p);
        assert!(got.is_ok(), "a packet sent before the server knew of the unload refused: {got:?}");
    }
    assert_eq!(l.client(0).value(other_guid, HEALTH), Some(Value::U32(3)), "the rest of the packet applied");
    assert!(!l.client(0).has(lamp_guid));
    l.driver.receive_feedback(conn, &l.clients[0].1.feedback()).unwrap();
    l.run(5);
    assert!(!l.client(0).has(lamp_guid));
    // Streamed in again: the lamp is bound afresh with its state.
    stream(&mut l, 0, &[LAMP], true);
    l.run(3);
    assert_eq!(l.client(0).value(lamp_guid, HEALTH), Some(Value::U32(3)));
}

/// A sweep over many seeds (`REVIEW_SEEDS=a..b`), not run by default.
#[test]
#[ignore = "a sweep: REVIEW_SEEDS=0..500"]
fn sweep() {
    let range = std::env::var("REVIEW_SEEDS").unwrap_or_else(|_| "0..50".into());
    let (a, b) = range.split_once("..").unwrap();
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    let mut failures = Vec::new();
    for seed in a..b {
        for r in [switch_world(seed, 0.3, 400, true), rich_world(seed, 0.3, 600), rich_world(seed, 0.5, 400)] {
            if let Err(e) = r {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "bug, not fixed: a fast array removed while its owner's lost relevancy close is not sent again (the owner reopened before the loss was known) stays on the client for good"]
fn a_fast_array_removed_while_its_owners_lost_close_is_replaced_by_a_reopen_leaves_the_client() {
    // The owner's relevancy close is lost, the owner is relevant again before the server hears
    // of the loss (its close does not go again: the reopen replaces it, and the client keeps its
    // copy), and the owner's fast array is removed meanwhile. A sub-object in its place gets a
    // close of its own (`end_sub_channels`); the array's per-connection state was reset when
    // the owner's channel ended, so `remove_fast_array` sends no close, and
    // `owner_close_dropped` marks only the arrays the owner still has: the client keeps the
    // removed array, its items frozen, for as long as the owner lives.
    let mut w = World::new(1);
    let (owner, og) = w.spawn([500.0, 0.0, 0.0]);
    let fa = w.driver.add_fast_array(w.kind, og, SubObjectCondition::None).unwrap();
    w.driver.fast_array_mut(fa).unwrap().add(&7u32.to_le_bytes()).unwrap();
    w.run(3);
    assert!(w.client(0).fast_array(fa).is_some());
    w.chars.set(owner, LOCATION, &Value::Vector([900_000.0, 0.0, 0.0])).unwrap();
    let conn = w.clients[0].0;
    let mut closed = false;
    for _ in 0..2000 {
        w.driver.tick(&mut [&mut w.chars, &mut w.weapons]).unwrap();
        let packets = w.driver.take_packets(conn).unwrap();
        if w.driver.channels(conn).unwrap().0 == 0 {
            closed = true; // this frame's packets, with the close, are lost
            break;
        }
        for p in packets {
            w.clients[0].1.receive(&p).unwrap();
        }
        w.driver.receive_feedback(conn, &w.clients[0].1.feedback()).unwrap();
    }
    assert!(closed);
    // Back before the loss is known, and the array removed.
    w.chars.set(owner, LOCATION, &Value::Vector([500.0, 0.0, 0.0])).unwrap();
    w.driver.remove_fast_array(fa).unwrap();
    w.chars.set(owner, HEALTH, &Value::U32(5)).unwrap();
    w.run(10);
    assert_eq!(w.client(0).value(og, HEALTH), Some(Value::U32(5)), "the owner's reopen went");
    assert!(w.client(0).fast_array(fa).is_none(), "the removed fast array stays on the client");
}
