//! The game's frame ([`Sim::play`]): moves, owners, settings, replication switches, streamed static
//! actors, joins and leaves, silences, net speeds, tear-offs, despawns, dormancy, sublevels, viewers.

use super::Sim;
use crate::random_world::{BAG_CONDITIONED, COINS, HEALTH, ITEMS, LEDGERS, LOCATION, OPEN, STASH, TUNED};
use rand::Rng;
use shadowrep::net::dormancy::Dormancy;
use shadowrep::net::{SublevelId, Viewer};
use shadowrep::store::ActorId;
use shadowrep::value::Value;
use std::sync::Arc;

impl Sim {
    /// The game's frame: moves, changes, a few spawns and despawns, viewers follow actors.
    pub(in crate::random_world) fn play(&mut self) {
        let n = self.live.len();
        for _ in 0..n / 5 {
            let (class, id) = self.live[self.rng.random_range(0..self.live.len())];
            let at = if self.rng.random_bool(0.8) { self.pos() } else { [1.0e6, 0.0, 0.0] };
            if class == self.thing {
                self.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
                let h = self.rng.random_range(0..5);
                self.things.set(id, HEALTH, &Value::U32(h)).unwrap();
            } else {
                self.driver.set_position(class, &self.bags, id, at).unwrap();
                let coins = self.rng.random_range(0..4);
                self.bags.set_and_mark(id, COINS, &Value::U32(coins)).unwrap();
                // A push change the game forgot to mark: found only by a later marked compare.
                if self.rng.random_bool(0.2) {
                    self.bags.set(id, COINS, &Value::U32(coins + 1)).unwrap();
                }
                // Its elements change a few at a time with the coins (sent as the changed elements).
                let items: Vec<Value> = (0..self.rng.random_range(0..30))
                    .map(|i: u16| Value::U16(i + u16::from(i % 4 == coins as u16)))
                    .collect();
                self.bags.set(id, ITEMS, &Value::Array(items)).unwrap();
                let open = self.rng.random_bool(0.5);
                self.bags.set(id, OPEN, &Value::Bool(open)).unwrap();
                if self.rng.random_bool(0.3) {
                    let stash: Vec<Value> =
                        (0..self.rng.random_range(0..16)).map(|_| Value::U8(self.rng.random_range(0..4))).collect();
                    self.bags.set(id, STASH, &Value::Array(stash)).unwrap();
                }
                for (parent, n) in BAG_CONDITIONED {
                    if self.rng.random_bool(0.3) {
                        let v = self.rng.random_range(0..n);
                        let value = if n > 255 { Value::U16(v as u16) } else { Value::U8(v as u8) };
                        self.bags.set(id, parent, &value).unwrap();
                    }
                }
                if self.wide {
                    self.write_ledgers(id);
                }
            }
        }
        self.arrive(1);
        // Roles change: owners come and go (a thing's sub-objects follow it) and Custom properties
        // switch off and on — what changed while a property was off for a connection reaches it
        // when it comes back, and only that (UE's inactive changelist).
        for _ in 0..n / 20 {
            let (class, id) = self.live[self.rng.random_range(0..self.live.len())];
            let Some(guid) = self.guid(class, id) else { continue };
            let store = if class == self.thing { &self.things } else { &self.bags };
            if self.driver.owner_of(guid).is_none() && self.rng.random_bool(0.6) {
                let owner =
                    self.rng.random_bool(0.7).then(|| self.clients[self.rng.random_range(0..self.clients.len())].0);
                let autonomous = self.rng.random_bool(0.5);
                let set = self.driver.set_owner(class, store, id, owner, autonomous);
                self.done_unless_orphaned(class, id, set);
            } else if class == self.bag {
                let on = self.rng.random_bool(0.5);
                self.driver.set_custom_active(class, &self.bags, id, TUNED, on).unwrap();
            }
        }
        self.arrive(2);
        // The game changes its mind: an actor's net settings (priority, frequency, cull distance,
        // hidden, owner-only…), its owner actor and instigator (owner relevancy chains), its
        // physics (SimulatedOrPhysics), or asks for an update now; a connection's net speed.
        for _ in 0..n / 30 {
            let (class, id) = self.live[self.rng.random_range(0..self.live.len())];
            let store = if class == self.thing { &self.things } else { &self.bags };
            let result = match self.rng.random_range(0..4) {
                0 => {
                    let mut s = Self::settings(&mut self.rng);
                    s.net_temporary = self.temporary && self.temporary_rng.random_bool(0.25);
                    self.temporaries += s.net_temporary as usize;
                    self.driver.set_net_settings(class, store, id, s)
                }
                1 => {
                    let (oc, oid) = self.live[self.rng.random_range(0..self.live.len())];
                    let owner = self.rng.random_bool(0.7).then(|| self.driver.guid_of(oc, oid)).flatten();
                    let (ic, iid) = self.live[self.rng.random_range(0..self.live.len())];
                    let instigator = self.rng.random_bool(0.2).then(|| self.driver.guid_of(ic, iid)).flatten();
                    let before = self.driver.owning_connection(class, id);
                    let set = self.driver.set_owner_actor(class, store, id, owner, instigator);
                    self.chain_moves += usize::from(set.is_ok() && self.driver.owning_connection(class, id) != before);
                    set
                }
                2 => {
                    let on = self.rng.random_bool(0.5);
                    self.driver.set_physics(class, store, id, on)
                }
                // A sub-object's forces its owner.
                _ => {
                    let forced = self.driver.force_net_update(class, store, id);
                    self.done_unless_orphaned(class, id, forced);
                    continue;
                }
            };
            self.done_unless_sub_object(class, id, result);
        }
        self.arrive(3);
        // The game switches actors' replication off and on (UE's `SetReplicates`): a few a
        // frame, from dice of their own; each switch turns one off with odds 0.15, so about that
        // share of the live actors is off at a time.
        if self.replicates_switch {
            for _ in 0..(n / 40).max(1) {
                let (class, id) = self.live[self.switch_rng.random_range(0..self.live.len())];
                let store = if class == self.thing { &self.things } else { &self.bags };
                let on = self.switch_rng.random_bool(0.85);
                let result = self.driver.set_replicates(class, store, id, on);
                if self.done_unless_sub_object(class, id, result) && !on {
                    self.switched_off += 1;
                }
            }
        }
        self.arrive(4);
        // Now and then the level streams a static actor in, which may be gone before any tick
        // saw it (its end is told to every client all the same).
        if self.rng.random_bool(0.05) {
            let id = self.things.spawn();
            let at = self.pos();
            self.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
            let path = format!("Level/Streamed_{}", self.statics.len());
            self.driver.register_static_actor(self.thing, &self.things, id, &path).unwrap();
            if self.dormancy && self.rng.random_bool(0.5) {
                // Dormant from its registration: it never opens until woken.
                self.driver.set_net_dormancy(self.thing, &self.things, id, Dormancy::Initial).unwrap();
            }
            let l = SublevelId(if self.sublevels { self.rng.random_range(0..3) } else { 0 });
            self.driver.set_sublevel(self.thing, &self.things, id, l).unwrap();
            for (conn, world) in &mut self.clients {
                if self.driver.sublevel_loaded(*conn, l).unwrap() {
                    world.load_static_actor(&path, self.thing.0).unwrap();
                }
            }
            self.statics.push(path);
            self.static_sublevels.push(l);
            if self.rng.random_bool(0.5) {
                self.things.despawn(id).unwrap();
            } else {
                self.live.push((self.thing, id));
            }
        }
        self.arrive(5);
        // Players come and go.
        if self.rng.random_bool(0.03) {
            let replay = self.rng.random_bool(0.15);
            self.join(replay);
            self.joined += 1;
        }
        if self.rng.random_bool(0.03) && self.clients.len() > 3 {
            let (conn, _) = self.clients.remove(self.rng.random_range(0..self.clients.len()));
            self.driver.remove_connection(conn).unwrap();
            self.left += 1;
        }
        self.arrive(6);
        // Now and then a client falls silent for one to two and a half seconds (its link
        // stalls): not net-ready after 1.5 s, the server sends it nothing but keep-alives.
        if self.rng.random_bool(0.03) || self.frames == 20 {
            let c = self.clients[self.rng.random_range(0..self.clients.len())].0;
            let until = self.frames + if self.frames == 20 { 60 } else { self.rng.random_range(30..75) };
            self.silent.insert(c, until);
        }
        if self.rng.random_bool(0.1) {
            let c = self.rng.random_range(0..self.clients.len());
            let speed = [4_000, 12_000, 100_000][self.rng.random_range(0..3)];
            self.driver.set_net_speed(self.clients[c].0, speed).unwrap();
        }
        self.arrive(7);
        // Now and then an actor is torn off (its sub-objects with it): clients keep their copies.
        if self.rng.random_bool(0.07) && self.live.len() > 50 {
            let i = self.rng.random_range(0..self.live.len());
            let (class, id) = self.live.swap_remove(i);
            let store = if class == self.thing { &self.things } else { &self.bags };
            let result = self.driver.tear_off(class, store, id);
            if self.done_unless_sub_object(class, id, result) {
                self.torn += 1;
                self.torn_ids.push((class, id));
            } else {
                self.live.push((class, id));
            }
        }
        self.arrive(8);
        if !self.torn_ids.is_empty() && self.rng.random_bool(0.3) {
            let (class, id) = self.torn_ids.swap_remove(self.rng.random_range(0..self.torn_ids.len()));
            let store = if class == self.thing { &mut self.things } else { &mut self.bags };
            store.despawn(id).unwrap();
            self.torn_gone += 1;
        }
        for _ in 0..3 {
            if self.rng.random_bool(0.5) && self.live.len() > 50 {
                let i = self.rng.random_range(0..self.live.len());
                let (class, id) = self.live.swap_remove(i);
                if class == self.thing {
                    self.things.despawn(id).unwrap()
                } else {
                    self.bags.despawn(id).unwrap()
                }
            } else {
                self.spawn();
            }
        }
        self.arrive(9);
        if self.fresh_calls && self.fresh_rng.random_bool(0.3) {
            self.fresh_call();
        }
        if self.dormancy {
            self.play_dormancy();
        }
        self.arrive(10);
        if self.sublevels && self.rng.random_bool(0.15) {
            let c = self.rng.random_range(0..self.clients.len());
            let l = SublevelId(self.rng.random_range(1..=2));
            let loaded = self.driver.sublevel_loaded(self.clients[c].0, l).unwrap();
            self.stream(c, l, !loaded);
            // Now and then streamed out and in again before the server's next tick.
            if loaded && self.rng.random_bool(0.2) {
                self.stream(c, l, true);
            }
        }
        self.arrive(11);
        for c in 0..self.clients.len() {
            let mut viewers = Vec::new();
            for _ in 0..self.rng.random_range(1..=2) {
                let (class, id) = self.live[self.rng.random_range(0..self.live.len())];
                let vt = self.guid(class, id);
                // Now and then the viewer's real viewer (its controller) is an actor of its own.
                let real_viewer =
                    self.rng.random_bool(0.3).then(|| self.live[self.rng.random_range(0..self.live.len())]);
                let real_viewer = real_viewer.and_then(|(c, a)| self.guid(c, a));
                let at = self.pos();
                let dir = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.6, 0.8, 0.0]][self.rng.random_range(0..3)];
                viewers.push(Viewer { real_viewer, view_target: vt, location: at, direction: dir });
            }
            self.driver.set_viewers(self.clients[c].0, &viewers).unwrap();
        }
    }

    /// The game's dormancy calls: actors set dormant (most), partial, awake or never; flushed
    /// (a sub-object's flushes its owner; its own dormancy is refused); for a while the things
    /// get a relevancy hook (their sleepers go back to the consider list), then lose it.
    fn play_dormancy(&mut self) {
        for _ in 0..self.live.len() / 25 {
            let (class, id) = self.live[self.rng.random_range(0..self.live.len())];
            let store = if class == self.thing { &self.things } else { &self.bags };
            let result = match self.rng.random_range(0..20) {
                0..=8 => self.driver.set_net_dormancy(class, store, id, Dormancy::DormantAll),
                9..=11 => self.driver.set_net_dormancy(class, store, id, Dormancy::DormantPartial),
                12..=15 => {
                    let flushed = self.driver.flush_net_dormancy(class, store, id);
                    self.dormancy_calls += usize::from(self.done_unless_orphaned(class, id, flushed));
                    continue;
                }
                16..=18 => self.driver.set_net_dormancy(class, store, id, Dormancy::Awake),
                _ => self.driver.set_net_dormancy(class, store, id, Dormancy::Never),
            };
            if self.done_unless_sub_object(class, id, result) {
                self.dormancy_calls += 1;
            }
        }
        if self.frames == 100 {
            let hook: shadowrep::net::relevancy::RelevancyHook = Arc::new(|a, _| (a.guid.0 % 11 == 0).then_some(true));
            self.driver.set_relevancy_hook(self.thing, Some(hook)).unwrap();
        } else if self.frames == 130 {
            self.driver.set_relevancy_hook(self.thing, None).unwrap();
        }
    }

    /// A few bytes of one or two of a bag's ledgers ([`crate::random_world::Spec::wide`]), each a
    /// leaf of a group that may hold others.
    fn write_ledgers(&mut self, id: ActorId) {
        let first = self.bags.layout().parents.len() - LEDGERS;
        let r = &mut self.wide_rng;
        for _ in 0..r.random_range(0..3) {
            let parent = first + r.random_range(0..LEDGERS);
            let Ok(Value::Struct(mut fields)) = self.bags.get(id, parent) else { panic!("a ledger is a struct") };
            for _ in 0..r.random_range(1..3) {
                let e = r.random_range(0..fields.len());
                fields[e] = Value::U8(r.random_range(0..4));
                self.ledger_writes += 1;
            }
            self.bags.set(id, parent, &Value::Struct(fields)).unwrap();
        }
    }
}
