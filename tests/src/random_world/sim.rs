//! The game of a random world: its stores, its driver and reference side by side, its clients
//! behind a lossy link, and the calls a game makes frame by frame — spawns, despawns, moves,
//! owners, settings, tear-offs, dormancy, sublevels, joins and leaves ([`Sim::play`]) — then a
//! tick of both sides and the clients' feedback ([`Sim::step`]).

use super::{bag, thing, BAG_CONDITIONED, HEALTH, LEDGERS, LOCATION, MOOD, TUNED};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::dormancy::Dormancy;
use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, NetSettings, SublevelId, Viewer};
use shadowrep::reference::frame::ReferenceFrame;
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::sync::Arc;

pub(super) struct Sim {
    /// The sub-objects' class was registered first (owners' classes come after theirs).
    pub(super) bags_first: bool,
    pub(super) driver: NetDriver,
    pub(super) reference: ReferenceFrame,
    pub(super) things: ClassStore,
    pub(super) bags: ClassStore,
    pub(super) thing: ClassId,
    pub(super) bag: ClassId,
    pub(super) clients: Vec<(ConnectionId, ClientWorld)>,
    pub(super) live: Vec<(ClassId, ActorId)>,
    pub(super) rng: ChaCha8Rng,
    pub(super) span: f32,
    /// Things' fast arrays (inventories), and their kind.
    pub(super) arrays: Vec<NetGuid>,
    pub(super) kind: shadowrep::net::FastArrayKind,
    /// Actors torn off so far; those still in their store (the game despawns some later, its
    /// ragdolls: some while their tear-off still waits for a saturated client); how many went.
    pub(super) torn: usize,
    pub(super) torn_ids: Vec<(ClassId, ActorId)>,
    pub(super) torn_gone: usize,
    /// Frames stepped, and the clients that answer nothing until a frame.
    pub(super) frames: u32,
    pub(super) silent: std::collections::HashMap<ConnectionId, u32>,
    /// The level's static actors' paths (each client loads them all).
    pub(super) statics: Vec<String>,
    /// Connections that joined and left mid-run.
    pub(super) joined: usize,
    pub(super) left: usize,
    /// The share of packets the link loses, and its own dice (so a lossless world's stream is
    /// the same as before loss existed).
    pub(super) loss: f64,
    pub(super) link: ChaCha8Rng,
    /// Lossy worlds: clients whose downlink goes dark (every packet lost) until a frame, their
    /// feedback still arriving — each says nothing new, yet keeps the client net-ready, so the
    /// server writes on until the sequence window is full.
    pub(super) dark: std::collections::HashMap<ConnectionId, u32>,
    /// Packets the link lost.
    pub(super) dropped: usize,
    /// The game uses dormancy: actors set dormant (all, or partial by the things' hook), awake
    /// and never, flushed; static actors streamed in with `Initial`; a relevancy hook on the
    /// things for a while (their sleepers back to the consider list).
    pub(super) dormancy: bool,
    /// Dormancy calls that went through, and the most actors asleep at once.
    pub(super) dormancy_calls: usize,
    pub(super) most_asleep: usize,
    /// Actors live in the persistent level and in sublevels 1 and 2, which the clients stream
    /// in and out (the static actors' sublevel beside `statics`); the streaming calls made.
    pub(super) sublevels: bool,
    pub(super) static_sublevels: Vec<SublevelId>,
    pub(super) sublevel_changes: usize,
    /// Sub-objects and fast arrays under `NetGroup` conditions, the connections' groups and the
    /// sub-objects' changing as the world runs, drawn from their own dice (so a world without
    /// them is the same as before they existed); the changes made.
    pub(super) net_groups: bool,
    pub(super) groups_rng: ChaCha8Rng,
    pub(super) group_changes: usize,
    /// The bags' class has a Dynamic parent ([`super::Spec::dynamic_conditions`]), its own dice,
    /// and the conditions set.
    pub(super) dynamic: bool,
    /// The bags' class declares class defaults ([`super::Spec::class_defaults`]).
    defaults: bool,
    dynamic_rng: ChaCha8Rng,
    pub(super) dynamic_changes: usize,
    /// With dynamic conditions, fast arrays' conditions change too (GAS's effects between its
    /// Mixed and Full modes), from dice of their own; the changes made.
    fast_conditions_rng: ChaCha8Rng,
    pub(super) fast_condition_changes: usize,
    /// Some actors are temporary ([`super::Spec::net_temporary`]), drawn from dice of their own
    /// (a world without them is the same as before they existed).
    pub(super) temporary: bool,
    temporary_rng: ChaCha8Rng,
    pub(super) temporaries: usize,
    /// Some sub-objects are initial-only ([`super::Spec::initial_only`]), drawn from dice of their
    /// own (a world without them is the same as before they existed).
    pub(super) initial_only: bool,
    initial_rng: ChaCha8Rng,
    pub(super) initial_onlys: usize,
    /// Some sub-objects take UE's other conditions ([`super::Spec::sub_conditions`]), drawn from
    /// dice of their own.
    pub(super) sub_conditions: bool,
    conditions_rng: ChaCha8Rng,
    pub(super) other_conditions: usize,
    /// The game switches actors' replication off and on ([`super::Spec::replicates`]), from dice
    /// of their own.
    pub(super) replicates_switch: bool,
    switch_rng: ChaCha8Rng,
    pub(super) switched_off: usize,
    /// The bags' class is past 64 leaves ([`super::Spec::wide`]); its ledgers' own dice and the
    /// ledger bytes written.
    wide: bool,
    wide_rng: ChaCha8Rng,
    pub(super) ledger_writes: usize,
    /// The game calls the actors' remote procedures ([`super::Spec::rpcs`]), from dice of their
    /// own, each call numbered by its argument.
    pub(super) rpcs: bool,
    rpc_rng: ChaCha8Rng,
    pub(super) rpcs_called: u32,
}

fn slots() -> Arc<shadowrep::schema::ArrayLayout> {
    Arc::new(shadowrep::fastarray::item_layout("Slots", shadowrep::schema::PropType::U32).unwrap())
}

impl Sim {
    /// A world of `connections` clients; `adaptive`: UE's adaptive update frequency on.
    pub(super) fn new(
        seed: u64,
        connections: usize,
        (adaptive, bags_first, sublevels, net_groups): (bool, bool, bool, bool),
        (dynamic, defaults, wide): (bool, bool, bool),
    ) -> Sim {
        let (tl, bl) = (thing(), bag(dynamic, defaults, wide));
        let mut things = ClassStore::new(tl.clone());
        let mut bags = ClassStore::new(bl.clone());
        let level =
            ActorLevelConfig { record_decisions: true, adaptive_frequency: adaptive, ..ActorLevelConfig::default() };
        let mut driver =
            NetDriver::new(DriverConfig { actor_level: Some(level), ..DriverConfig::default() }).expect("valid");
        let (thing, bag) = if bags_first {
            let bag = driver.register_class(&mut bags).unwrap();
            (driver.register_class(&mut things).unwrap(), bag)
        } else {
            let thing = driver.register_class(&mut things).unwrap();
            (thing, driver.register_class(&mut bags).unwrap())
        };
        driver.set_location_property(thing, LOCATION).unwrap();
        let kind = driver.register_fast_array_kind(slots()).unwrap();
        let reference = ReferenceFrame::new(&driver, &mut [&mut things, &mut bags]).expect("actor level on");
        let mut sim = Sim {
            bags_first,
            driver,
            reference,
            things,
            bags,
            thing,
            bag,
            clients: Vec::new(),
            live: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            span: 30_000.0,
            arrays: Vec::new(),
            kind,
            torn: 0,
            torn_ids: Vec::new(),
            torn_gone: 0,
            frames: 0,
            silent: Default::default(),
            statics: Vec::new(),
            joined: 0,
            left: 0,
            loss: 0.0,
            link: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1055),
            dark: Default::default(),
            dropped: 0,
            dormancy: false,
            dormancy_calls: 0,
            most_asleep: 0,
            sublevels,
            static_sublevels: Vec::new(),
            sublevel_changes: 0,
            net_groups,
            groups_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_7467),
            group_changes: 0,
            dynamic,
            defaults,
            dynamic_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6479_6e61),
            temporary: false,
            temporary_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7465_6d70),
            temporaries: 0,
            initial_only: false,
            initial_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x696e_6974),
            initial_onlys: 0,
            sub_conditions: false,
            conditions_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x636f_6e64),
            other_conditions: 0,
            replicates_switch: false,
            switch_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7265_706c),
            switched_off: 0,
            dynamic_changes: 0,
            fast_conditions_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6661_7374),
            fast_condition_changes: 0,
            wide,
            wide_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7769_6465),
            ledger_writes: 0,
            rpcs: false,
            rpc_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7270_6373),
            rpcs_called: 0,
        };
        // `DormantPartial` things are dormant for two connections in three.
        let partial: shadowrep::net::dormancy::DormancyHook =
            Arc::new(|g, c| !(g.0 / 2 + c.0 as u64).is_multiple_of(3));
        sim.driver.set_dormancy_hook(thing, Some(partial)).unwrap();
        // The level's static actors (UE's actors loaded with the map): things registered by
        // path, never closed for relevancy.
        for i in 0..12 {
            let id = sim.things.spawn();
            let at = sim.pos();
            sim.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
            let path = format!("Level/Thing_{i}");
            sim.driver.register_static_actor(thing, &sim.things, id, &path).unwrap();
            let sublevel = SublevelId(if sublevels { (i % 3) as u16 } else { 0 });
            sim.driver.set_sublevel(thing, &sim.things, id, sublevel).unwrap();
            sim.statics.push(path);
            sim.static_sublevels.push(sublevel);
            sim.live.push((thing, id));
        }
        // A class hook: some bags are always relevant to viewers west of the origin, some never
        // relevant, the rest left to UE's rules.
        let hook: shadowrep::net::relevancy::RelevancyHook = Arc::new(|a, v| match a.guid.0 % 14 {
            0 => (v.location[0] < 0.0).then_some(true),
            2 => Some(false),
            _ => None,
        });
        sim.driver.set_relevancy_hook(bag, Some(hook)).unwrap();
        // The last a replay connection (a demo recorder: its own conditions and budget).
        for c in 0..connections {
            sim.join(c + 1 == connections);
        }
        for _ in 0..300 {
            sim.spawn();
        }
        sim
    }

    /// A client joins (with the level's static actors loaded), a replay connection or not.
    fn join(&mut self, replay: bool) {
        let conn = self.driver.add_connection(replay);
        let bag = bag(self.dynamic, self.defaults, self.wide);
        let layouts = if self.bags_first { [bag, thing()] } else { [thing(), bag] };
        let mut world = ClientWorld::new(&layouts, &self.driver.checksums())
            .and_then(|w| w.with_fast_array_kinds(&[slots()], &self.driver.fast_array_checksums()))
            .unwrap();
        for (path, _) in self.statics.iter().zip(&self.static_sublevels).filter(|s| *s.1 == SublevelId::PERSISTENT) {
            world.load_static_actor(path, self.thing.0).unwrap();
        }
        let speed = [4_000, 12_000, 100_000][self.rng.random_range(0..3)];
        self.driver.set_net_speed(conn, speed).unwrap();
        if self.net_groups {
            let groups = Self::game_groups(&mut self.groups_rng);
            self.driver.set_connection_net_groups(conn, groups).unwrap();
        }
        self.clients.push((conn, world));
        if self.sublevels {
            for l in 1..=2 {
                if self.rng.random_bool(0.5) {
                    self.stream(self.clients.len() - 1, SublevelId(l), true);
                }
            }
        }
    }

    /// Client `c` streams sublevel `l` in (its static actors loaded, then the server told) or
    /// out (unloaded, then told), as a game does.
    fn stream(&mut self, c: usize, l: SublevelId, load: bool) {
        let (conn, world) = &mut self.clients[c];
        for (path, _) in self.statics.iter().zip(&self.static_sublevels).filter(|s| *s.1 == l) {
            if load {
                // (One a destroy's close took is loaded again: the server tells it again.)
                world.load_static_actor(path, self.thing.0).unwrap();
            } else {
                // (False for one a destroy's close took.)
                world.unload_static_actor(path);
            }
        }
        self.driver.set_sublevel_loaded(*conn, l, load).unwrap();
        self.sublevel_changes += 1;
    }

    /// Whether a call on an actor that sets what a sub-object takes from its owner went through:
    /// refused (`FollowsOwner`) exactly for a sub-object, done for any other actor.
    fn done_unless_sub_object(
        &self,
        class: ClassId,
        id: ActorId,
        result: Result<(), shadowrep::net::DriverError>,
    ) -> bool {
        match self.guid(class, id).and_then(|g| Some((g, self.driver.owner_of(g)?))) {
            Some((sub, owner)) => {
                assert_eq!(result, Err(shadowrep::net::DriverError::FollowsOwner { sub, owner }));
                false
            }
            None => {
                result.unwrap();
                true
            }
        }
    }

    fn pos(&mut self) -> [f32; 3] {
        let s = self.span;
        [self.rng.random_range(-s..s), self.rng.random_range(-s..s), self.rng.random_range(-100.0..100.0f32)]
    }

    fn guid(&self, c: ClassId, id: ActorId) -> Option<NetGuid> {
        self.driver.guid_of(c, id)
    }

    /// Net settings drawn at random (a spawn's, or a later change's).
    fn settings(r: &mut ChaCha8Rng) -> NetSettings {
        let mut s = NetSettings {
            net_priority: [1.0, 1.0, 3.0, 0.5][r.random_range(0..4)],
            cull_distance_squared: [225_000_000.0, 36_000_000.0][r.random_range(0..2)],
            always_relevant: r.random_bool(0.02),
            only_relevant_to_owner: r.random_bool(0.05),
            use_owner_relevancy: r.random_bool(0.05),
            hidden: r.random_bool(0.05),
            // Without a root component (never relevant by distance) or, hidden, without collision.
            has_root: r.random_bool(0.97),
            collision: r.random_bool(0.7),
            startup: r.random_bool(0.1),
            ..NetSettings::default()
        };
        s.frequency.net_update_frequency = [100.0, 30.0, 10.0, 2.0][r.random_range(0..4)];
        s.frequency.min_net_update_frequency = [2.0, 0.5][r.random_range(0..2)];
        s
    }

    fn spawn(&mut self) {
        let at = self.pos();
        let is_bag = self.rng.random_bool(0.3);
        let (class, id) = if is_bag {
            let id = self.bags.spawn();
            self.driver.set_position(self.bag, &self.bags, id, at).unwrap();
            (self.bag, id)
        } else {
            let id = self.things.spawn();
            self.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
            self.driver.assign_guid(self.thing, &self.things, id).unwrap();
            (self.thing, id)
        };
        let mut s = Self::settings(&mut self.rng);
        s.net_temporary = self.temporary && self.temporary_rng.random_bool(0.25);
        self.temporaries += s.net_temporary as usize;
        let r = &mut self.rng;
        let owner_actor =
            (r.random_bool(0.15) && !self.live.is_empty()).then(|| self.live[r.random_range(0..self.live.len())]);
        let owner_conn = r.random_bool(0.1).then(|| r.random_range(0..self.clients.len()));
        let store = if is_bag { &self.bags } else { &self.things };
        self.driver.set_net_settings(class, store, id, s).unwrap();
        // A quarter of the bags are sub-objects of a thing, under every condition.
        // (Owned by a dynamic thing: a static actor owns no sub-objects here.)
        let things: Vec<ActorId> = self
            .live
            .iter()
            .filter(|l| l.0 == self.thing && self.driver.guid_of(l.0, l.1).is_some_and(|g| g.is_dynamic()))
            .map(|l| l.1)
            .collect();
        if is_bag && !things.is_empty() && self.rng.random_bool(0.25) {
            use shadowrep::net::SubObjectCondition as C;
            let conditions = [
                C::None,
                C::OwnerOnly,
                C::SkipOwner,
                C::SimulatedOnly,
                C::AutonomousOnly,
                C::ReplayOrOwner,
                C::ReplayOnly,
                C::SkipReplay,
                C::Never,
            ];
            let condition = conditions[self.rng.random_range(0..conditions.len())];
            let owner = things[self.rng.random_range(0..things.len())];
            let owner = self.driver.guid_of(self.thing, owner).expect("live");
            self.driver.register_sub_object(class, &self.bags, id, owner, condition).unwrap();
            if self.net_groups && self.groups_rng.random_bool(0.5) {
                let groups = C::NetGroup(Self::sub_object_groups(&mut self.groups_rng));
                self.driver.set_sub_object_condition(class, &self.bags, id, groups).unwrap();
            }
            if self.initial_only && self.initial_rng.random_bool(0.5) {
                self.driver.set_sub_object_condition(class, &self.bags, id, C::InitialOnly).unwrap();
                self.initial_onlys += 1;
            }
            if self.sub_conditions && self.conditions_rng.random_bool(0.5) {
                let others =
                    [C::SimulatedOrPhysics, C::SimulatedOnlyNoReplay, C::SimulatedOrPhysicsNoReplay, C::InitialOrOwner];
                let condition = others[self.conditions_rng.random_range(0..others.len())];
                self.driver.set_sub_object_condition(class, &self.bags, id, condition).unwrap();
                self.other_conditions += 1;
            }
            self.live.push((class, id));
            return;
        }
        let owner_guid = owner_actor.and_then(|(c, a)| self.driver.guid_of(c, a));
        // Some are instigated by another actor (a projectile by its shooter): relevant to the
        // viewers whose view target that is.
        let instigator = (self.rng.random_bool(0.1) && !self.live.is_empty())
            .then(|| self.live[self.rng.random_range(0..self.live.len())])
            .and_then(|(c, a)| self.driver.guid_of(c, a));
        self.driver.set_owner_actor(class, store, id, owner_guid, instigator).unwrap();
        if let Some(c) = owner_conn {
            let autonomous = self.rng.random_bool(0.5);
            self.driver.set_owner(class, store, id, Some(self.clients[c].0), autonomous).unwrap();
        }
        // A fifth of the things carry an inventory (a fast array), under a few conditions.
        if class == self.thing && self.rng.random_bool(0.2) {
            use shadowrep::net::SubObjectCondition as C;
            let mut condition = [C::None, C::OwnerOnly, C::SkipOwner][self.rng.random_range(0..3)];
            if self.net_groups && self.groups_rng.random_bool(0.3) {
                condition = C::NetGroup(Self::sub_object_groups(&mut self.groups_rng));
            }
            if self.sub_conditions && self.conditions_rng.random_bool(0.5) {
                // (Not the initial-only ones: a fast array refuses them.)
                let others = [C::SimulatedOrPhysics, C::SimulatedOnlyNoReplay, C::SimulatedOrPhysicsNoReplay];
                condition = others[self.conditions_rng.random_range(0..others.len())];
            }
            let owner = self.driver.guid_of(class, id).expect("live");
            let fa = self.driver.add_fast_array(self.kind, owner, condition).unwrap();
            let n = self.rng.random_range(0..40);
            let mut items = self.driver.fast_array_mut(fa).unwrap();
            for i in 0..n {
                items.add(&(i as u32).to_le_bytes()).unwrap();
            }
            self.arrays.push(fa);
        }
        if self.sublevels {
            let l = SublevelId(self.rng.random_range(0..3));
            self.driver.set_sublevel(class, store, id, l).unwrap();
        }
        self.live.push((class, id));
    }

    /// Calls a few actors' remote procedures, of every kind ([`super::CALLS`]), each with the
    /// next number; a torn-off actor refuses.
    pub(super) fn play_rpcs(&mut self) {
        for _ in 0..self.rpc_rng.random_range(0..12) {
            let (c, id) = self.live[self.rpc_rng.random_range(0..self.live.len())];
            let name = super::CALLS[self.rpc_rng.random_range(0..super::CALLS.len())];
            let store = if c == self.thing { &self.things } else { &self.bags };
            match self.driver.call_rpc(c, store, id, name, &[Value::U32(self.rpcs_called)]) {
                Ok(()) => self.rpcs_called += 1,
                Err(shadowrep::net::DriverError::TornOff(_)) => {}
                Err(e) => panic!("call {name} on {id:?}: {e}"),
            }
        }
        // The clients' Server calls: mostly on an actor their connection owns, now and then on
        // one it does not (refused on both sides alike, its number used).
        for ci in 0..self.clients.len() {
            if !self.rpc_rng.random_bool(0.6) {
                continue;
            }
            let conn = self.clients[ci].0;
            let (driver, rng) = (&self.driver, &mut self.rpc_rng);
            let owned: Vec<NetGuid> = self
                .live
                .iter()
                .filter(|&&(c, id)| rng.random_bool(0.05) || driver.owning_connection(c, id) == Some(conn))
                .filter_map(|&(c, id)| driver.guid_of(c, id))
                .collect();
            let world = &mut self.clients[ci].1;
            let owned: Vec<NetGuid> = owned.into_iter().filter(|&g| world.has(g)).collect();
            if owned.is_empty() {
                continue;
            }
            let guid = owned[self.rpc_rng.random_range(0..owned.len())];
            let name = super::SERVER_CALLS[self.rpc_rng.random_range(0..2)];
            match world.call_server_rpc(guid, name, &[Value::U32(self.rpcs_called)]) {
                Ok(()) => self.rpcs_called += 1,
                Err(shadowrep::client::ClientError::TooManyCalls) => {}
                Err(e) => panic!("client call {name} on {guid}: {e}"),
            }
        }
    }

    /// Changes, adds and removes items of a few inventories (dropping those whose owner is gone).
    pub(super) fn play_inventories(&mut self) {
        let driver = &mut self.driver;
        self.arrays.retain(|&fa| driver.fast_array_mut(fa).is_ok());
        for _ in 0..self.arrays.len() / 4 {
            let fa = self.arrays[self.rng.random_range(0..self.arrays.len())];
            let mut items = self.driver.fast_array_mut(fa).unwrap();
            let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
            match self.rng.random_range(0..4) {
                0 => drop(items.add(&self.rng.random::<u32>().to_le_bytes()).unwrap()),
                1 if !ids.is_empty() => items.remove(ids[self.rng.random_range(0..ids.len())]).unwrap(),
                _ if !ids.is_empty() => {
                    let id = ids[self.rng.random_range(0..ids.len())];
                    items.set(id, &self.rng.random::<u32>().to_le_bytes()).unwrap();
                }
                _ => {}
            }
        }
    }

    /// The game's frame: moves, changes, a few spawns and despawns, viewers follow actors.
    pub(super) fn play(&mut self) {
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
                self.bags.set_and_mark(id, 0, &Value::U32(coins)).unwrap();
                // A push change the game forgot to mark: found only by a later marked compare.
                if self.rng.random_bool(0.2) {
                    self.bags.set(id, 0, &Value::U32(coins + 1)).unwrap();
                }
                // Its elements change a few at a time with the coins (sent as the changed elements).
                let items: Vec<Value> = (0..self.rng.random_range(0..30))
                    .map(|i: u16| Value::U16(i + u16::from(i % 4 == coins as u16)))
                    .collect();
                self.bags.set(id, 1, &Value::Array(items)).unwrap();
                let open = self.rng.random_bool(0.5);
                self.bags.set(id, 2, &Value::Bool(open)).unwrap();
                if self.rng.random_bool(0.3) {
                    let stash: Vec<Value> =
                        (0..self.rng.random_range(0..16)).map(|_| Value::U8(self.rng.random_range(0..4))).collect();
                    self.bags.set(id, 7, &Value::Array(stash)).unwrap();
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
                self.driver.set_owner(class, store, id, owner, autonomous).unwrap();
            } else if class == self.bag {
                let on = self.rng.random_bool(0.5);
                self.driver.set_custom_active(class, &self.bags, id, TUNED, on).unwrap();
            }
        }
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
                    self.driver.set_owner_actor(class, store, id, owner, instigator)
                }
                2 => {
                    let on = self.rng.random_bool(0.5);
                    self.driver.set_physics(class, store, id, on)
                }
                // A sub-object's forces its owner.
                _ => {
                    self.driver.force_net_update(class, store, id).unwrap();
                    continue;
                }
            };
            self.done_unless_sub_object(class, id, result);
        }
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
        if self.dormancy {
            self.play_dormancy();
        }
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
                    self.driver.flush_net_dormancy(class, store, id).unwrap();
                    self.dormancy_calls += 1;
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

    /// Some of the game's groups 0 to 2, drawn at random.
    fn game_groups(r: &mut ChaCha8Rng) -> shadowrep::net::NetGroups {
        (0..3).filter(|_| r.random_bool(0.4)).fold(shadowrep::net::NetGroups::EMPTY, |g, n| {
            g | shadowrep::net::NetGroups::group(n).expect("a game group")
        })
    }

    /// A sub-object's groups: some of the game's, now and then the owner's and the replays'.
    fn sub_object_groups(r: &mut ChaCha8Rng) -> shadowrep::net::NetGroups {
        use shadowrep::net::NetGroups;
        let special = |r: &mut ChaCha8Rng, p: f64, g: NetGroups| if r.random_bool(p) { g } else { NetGroups::EMPTY };
        Self::game_groups(r) | special(r, 0.3, NetGroups::OWNER) | special(r, 0.2, NetGroups::REPLAY)
    }

    /// Every fifth frame ([`super::Spec::net_groups`]): a connection joins other groups, and a
    /// sub-object takes other groups (or leaves the groups for no condition, or comes back).
    pub(super) fn net_groups(&mut self, frame: u32) {
        use shadowrep::net::SubObjectCondition as C;
        if !frame.is_multiple_of(5) {
            return;
        }
        let r = &mut self.groups_rng;
        let (conn, _) = self.clients[r.random_range(0..self.clients.len())];
        self.driver.set_connection_net_groups(conn, Self::game_groups(r)).unwrap();
        let subs: Vec<ActorId> = self
            .live
            .iter()
            .filter(|&&(c, id)| {
                c == self.bag && self.driver.guid_of(c, id).and_then(|g| self.driver.owner_of(g)).is_some()
            })
            .map(|&(_, id)| id)
            .collect();
        if !subs.is_empty() {
            let r = &mut self.groups_rng;
            let id = subs[r.random_range(0..subs.len())];
            let condition = if r.random_bool(0.8) { C::NetGroup(Self::sub_object_groups(r)) } else { C::None };
            self.driver.set_sub_object_condition(self.bag, &self.bags, id, condition).unwrap();
        }
        self.group_changes += 1;
    }

    /// Every third frame ([`super::Spec::dynamic_conditions`]): three bags get a new `Mood` and
    /// a new condition of their own for it.
    pub(super) fn dynamic_conditions(&mut self, frame: u32) {
        use shadowrep::schema::Condition as C;
        if !frame.is_multiple_of(3) {
            return;
        }
        let own = [
            C::Dynamic,
            C::None,
            C::OwnerOnly,
            C::SkipOwner,
            C::SimulatedOnly,
            C::AutonomousOnly,
            C::SimulatedOrPhysics,
            C::ReplayOrOwner,
            C::ReplayOnly,
            C::SimulatedOnlyNoReplay,
            C::SkipReplay,
            C::Never,
        ];
        let bags: Vec<ActorId> = self.live.iter().filter(|l| l.0 == self.bag).map(|l| l.1).collect();
        for _ in 0..3.min(bags.len()) {
            let r = &mut self.dynamic_rng;
            let id = bags[r.random_range(0..bags.len())];
            let mood = Value::U16(r.random_range(0..1000));
            let c = own[r.random_range(0..own.len())];
            self.bags.set(id, MOOD, &mood).unwrap();
            self.driver.set_dynamic_condition(self.bag, &self.bags, id, MOOD, c).unwrap();
            self.dynamic_changes += 1;
        }
        // And a fast array's condition (`set_fast_array_condition`), the same condition again
        // now and then (nothing changes).
        use shadowrep::net::SubObjectCondition as S;
        let fast = [
            S::None,
            S::OwnerOnly,
            S::SkipOwner,
            S::SimulatedOnly,
            S::AutonomousOnly,
            S::SimulatedOrPhysics,
            S::SimulatedOnlyNoReplay,
            S::SimulatedOrPhysicsNoReplay,
        ];
        if !self.arrays.is_empty() {
            let r = &mut self.fast_conditions_rng;
            let fa = self.arrays[r.random_range(0..self.arrays.len())];
            let c = fast[r.random_range(0..fast.len())];
            match self.driver.set_fast_array_condition(fa, c) {
                Ok(()) => self.fast_condition_changes += 1,
                // Removed with its owner.
                Err(shadowrep::net::DriverError::UnknownFastArray(_)) => {}
                Err(e) => panic!("a fast array's condition: {e}"),
            }
        }
    }

    /// A few bytes of one or two of a bag's ledgers ([`super::Spec::wide`]), each a leaf of a
    /// group that may hold others.
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

    /// The classes' priority hooks at `frame` ([`super::Spec::priority_hooks`]).
    pub(super) fn priority_hooks(&mut self, frame: u32) {
        use shadowrep::net::PriorityHook;
        if frame == 20 {
            let hook: PriorityHook = Arc::new(|p, t, v| {
                let base = p.priority(t, v);
                match p.actor.0 % 6 {
                    0 => base * 3.0,
                    1 => -1.0,
                    2 => f32::NAN,
                    3 => base + f32::from(u8::from(v.location[0] > 0.0)),
                    4 => 0.5,
                    _ => base,
                }
            });
            self.driver.set_priority_hook(self.thing, Some(hook)).unwrap();
        } else if frame == 60 {
            let hook: PriorityHook =
                Arc::new(|p, t, v| 0.5 * p.priority(t, v) + if p.source != p.actor { 0.25 } else { 0.0 });
            self.driver.set_priority_hook(self.bag, Some(hook)).unwrap();
        } else if frame == 180 {
            self.driver.set_priority_hook(self.thing, None).unwrap();
        }
    }

    /// One frame: the kernel ticks, then the reference; packets go down the link to the clients,
    /// their feedback up to both. A client refusing a packet is an error: the kernel sent what a
    /// client cannot read.
    pub(super) fn step(&mut self) -> Result<(), String> {
        let frame = self.frames;
        self.driver.tick(&mut [&mut self.things, &mut self.bags]).map_err(|e| format!("frame {frame}: kernel: {e}"))?;
        self.reference
            .tick(&self.driver, &mut [&mut self.bags, &mut self.things])
            .map_err(|e| format!("frame {frame}: reference: {e}"))?;
        self.frames += 1;
        self.most_asleep = self.most_asleep.max(self.driver.asleep_actors());
        if self.loss > 0.0 && (self.frames == 40 || self.link.random_bool(0.01)) {
            let c = self.clients[self.link.random_range(0..self.clients.len())].0;
            let until = self.frames + self.link.random_range(90..180);
            self.dark.insert(c, until);
        }
        for (conn, world) in &mut self.clients {
            let dark = self.dark.get(conn).is_some_and(|&until| self.frames < until);
            let packets = self.driver.take_packets(*conn).unwrap();
            // Byte for byte what the reference wrote: the same decisions write the same values.
            let reference: Vec<&[u8]> = self.reference.packets(*conn).collect();
            if let Some(i) = (0..packets.len().max(reference.len()))
                .find(|&i| packets.get(i).map(Vec::as_slice) != reference.get(i).copied())
            {
                return Err(format!("frame {frame}: connection {conn:?}: packet {i} differs from the reference's"));
            }
            for p in packets {
                if dark || self.loss > 0.0 && self.link.random_bool(self.loss) {
                    self.dropped += 1;
                    continue;
                }
                world.receive(&p).map_err(|e| format!("frame {frame}: connection {conn:?} refused a packet: {e}"))?;
            }
            // A silent client's answers wait (past the ready timeout the server stops sending
            // to it), then come all at once.
            if self.silent.get(conn).is_some_and(|&until| self.frames < until) {
                continue;
            }
            let feedback = world.feedback();
            self.driver.receive_feedback(*conn, &feedback).map_err(|e| format!("frame {frame}: kernel: {e}"))?;
            self.reference
                .receive_feedback(&self.driver, *conn, &feedback)
                .map_err(|e| format!("frame {frame}: reference: {e}"))?;
        }
        Ok(())
    }
}
