//! The second recorded run, through the actor level: a static actor the client loads, actors
//! with object references, a fast array changing every frame, a sub-object, a despawn, a tear-off
//! and late spawns, an actor owned by the connection on and off (owner-only and skip-owner
//! properties), one going dormant, flushed and woken, one leaving relevancy (its channel closed)
//! and coming back, one whose replication is switched off and on, the sub-object's condition
//! changed — so hostile packets meet every kind of bunch a client can hold state for.

use super::Recording;
use shadowrep::client::ClientWorld;
use shadowrep::compare::CompareConfig;
use shadowrep::fastarray::item_layout;
use shadowrep::fastarray::ReplicationId;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::{ActorLevelConfig, Dormancy, DriverConfig, NetDriver, NetSettings, SubObjectCondition, Viewer};
use shadowrep::schema::{ClassBuilder, Condition, PropType, PropertyDecl, StructType, VectorQuant};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::{ObjectRef, Value};
use std::sync::Arc;

/// Frames recorded.
const FRAMES: usize = 24;

/// Thing's parents.
const LOCATION: usize = 0;
const HEALTH: usize = 1;
const TARGET: usize = 2;
const AMMO: usize = 3;
const POSE: usize = 4;

/// The actor level's world: one server, one client over a perfect link, stepped frame by frame.
pub struct LevelWorld {
    pub driver: NetDriver,
    pub client: ClientWorld,
    pub conn: ConnectionId,
    things: ClassStore,
    gears: ClassStore,
    tc: ClassId,
    gc: ClassId,
    door: ActorId,
    /// Owned by the connection from frame 3 to 12 and from 19 on.
    owned: ActorId,
    /// Dormant from frame 4, flushed at 11, woken at 17.
    sleeper: ActorId,
    /// Beyond the cull distance from frame 5 to 13 (its channel closes, then opens again).
    wanderer: ActorId,
    /// Whether the wanderer is beyond the cull distance now.
    far: bool,
    /// Its replication switched off from frame 6 to 14 (`set_replicates`: the client keeps its
    /// copy as it was).
    switched: ActorId,
    gear: ActorId,
    /// Live dynamic things (not despawned, not torn off).
    live: Vec<(ActorId, NetGuid)>,
    inventory: NetGuid,
    items: Vec<ReplicationId>,
    frame: usize,
    recording: Recording,
    /// The driver ended the connection (hostile feedback that never acknowledged 1 024 reliable
    /// calls): a legitimate end, nothing more to deliver.
    ended: bool,
}

impl LevelWorld {
    pub fn new() -> Self {
        let thing = ClassBuilder::new("Thing")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Health", PropType::U32))
            .property(PropertyDecl::new("Target", PropType::Object))
            .property(PropertyDecl::new("Ammo", PropType::U16).condition(Condition::OwnerOnly))
            .property(PropertyDecl::new("Pose", PropType::U8).condition(Condition::SkipOwner));
        let thing = Arc::new(shadowrep_tests::random_world::with_calls(thing).build().expect("valid layout"));
        let gear = Arc::new(
            ClassBuilder::new("Gear")
                .property(PropertyDecl::new("Charge", PropType::U16))
                .build()
                .expect("valid layout"),
        );
        let slot = StructType::new("Slot").field("Count", PropType::U16).field("Durability", PropType::U8);
        let slots = Arc::new(item_layout("Inventory", PropType::Struct(slot)).expect("valid item"));
        let compare = CompareConfig { parallel: false, ..Default::default() };
        // Channels close a few frames after their actor stops being relevant (UE: 5 s).
        let level = ActorLevelConfig { relevant_timeout: 0.1, ..ActorLevelConfig::default() };
        let cfg = DriverConfig { actor_level: Some(level), parallel: false, compare, ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).expect("valid config");
        let (mut things, mut gears) = (ClassStore::new(thing.clone()), ClassStore::new(gear.clone()));
        let tc = driver.register_class(&mut things).expect("registers");
        let gc = driver.register_class(&mut gears).expect("registers");
        driver.set_location_property(tc, LOCATION).expect("a vector");
        let kind = driver.register_fast_array_kind(slots.clone()).expect("registers");
        let mut due = NetSettings::default();
        due.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(tc, due).expect("known class");
        let conn = driver.add_connection(false);
        let viewer = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
        driver.set_viewers(conn, &[viewer]).expect("live");
        let door = things.spawn();
        things.set(door, LOCATION, &Value::Vector([50.0, 0.0, 0.0])).expect("a vector");
        driver.register_static_actor(tc, &things, door, "Level.Door").expect("a static actor");
        let mut w_live = Vec::new();
        for i in 0..8 {
            w_live.push(spawn(&mut things, &mut driver, tc, 100.0 * i as f32));
        }
        let inventory = driver.add_fast_array(kind, w_live[0].1, SubObjectCondition::None).expect("an owner");
        let g = gears.spawn();
        driver.register_sub_object(gc, &gears, g, w_live[1].1, SubObjectCondition::None).expect("a sub-object");
        let checksums = driver.checksums();
        let fast_checksums = driver.fast_array_checksums();
        let recording = Recording {
            layouts: vec![thing, gear],
            checksums,
            fast_kinds: vec![slots],
            fast_checksums,
            statics: vec![("Level.Door".to_string(), tc.0)],
            packets: Vec::new(),
            feedbacks: Vec::new(),
        };
        let client = recording.client_after(0);
        LevelWorld {
            driver,
            client,
            conn,
            things,
            gears,
            tc,
            gc,
            door,
            owned: w_live[5].0,
            sleeper: w_live[6].0,
            wanderer: w_live[7].0,
            switched: w_live[4].0,
            far: false,
            gear: g,
            live: w_live,
            inventory,
            items: Vec::new(),
            frame: 0,
            recording,
            ended: false,
        }
    }

    /// One frame: the world changes (if `mutate`), the server ticks, the client takes the
    /// packets (each must apply if `strict`) and its feedback reaches the server. Returns the
    /// packets and the feedback.
    pub fn step(&mut self, mutate: bool, strict: bool) -> (Vec<Vec<u8>>, Vec<u8>) {
        let packets = self.advance(mutate);
        for p in &packets {
            let r = self.client.receive(p);
            assert!(!strict || r.is_ok(), "a server packet applies: {r:?}");
        }
        let fb = self.client.feedback();
        let _ = self.driver.receive_feedback(self.conn, &fb);
        (packets, fb)
    }

    /// The server's half of [`Self::step`]: the world changes (if `mutate`), the server ticks;
    /// returns the client's packets, not delivered.
    pub fn advance(&mut self, mutate: bool) -> Vec<Vec<u8>> {
        if mutate {
            self.change();
        }
        self.driver.tick(&mut [&mut self.things, &mut self.gears]).expect("tick");
        self.ended |= self.driver.take_failed_connections().iter().any(|f| f.conn == self.conn);
        if self.ended {
            return Vec::new();
        }
        self.driver.take_packets(self.conn).expect("live")
    }

    /// The frame's changes: every thing moves and takes damage, the static door too, the
    /// reference and the sub-object change, the fast array gains, changes and loses items; a
    /// despawn at frame 8, spawns at 10 and 16, a tear-off at 12.
    pub(crate) fn change(&mut self) {
        let (frame, f) = (self.frame, self.frame as u32);
        self.frame += 1;
        let things = &mut self.things;
        self.far = (5..14).contains(&frame);
        for (i, &(id, _)) in self.live.iter().enumerate() {
            if id == self.sleeper && (4..17).contains(&frame) && frame != 10 {
                // At rest while dormancy is asked for (it takes once all sent is acknowledged),
                // but for one change that the flush sends.
                continue;
            }
            things.set(id, HEALTH, &Value::U32(100 + f * 7 + i as u32)).expect("a u32");
            let far = id == self.wanderer && self.far;
            let x = if far { 40_000.0 } else { 100.0 * i as f32 };
            things.set(id, LOCATION, &Value::Vector([x, f as f32 * 3.0, 0.0])).expect("a vector");
            things.set(id, AMMO, &Value::U16(f as u16 * 3 + i as u16)).expect("a u16");
            things.set(id, POSE, &Value::U8((f + i as u32) as u8)).expect("a u8");
        }
        let tc = self.tc;
        let conn = self.conn;
        match frame {
            3 | 19 => self.driver.set_owner(tc, things, self.owned, Some(conn), true).expect("live"),
            13 => self.driver.set_owner(tc, things, self.owned, None, false).expect("live"),
            4 => self.driver.set_net_dormancy(tc, things, self.sleeper, Dormancy::DormantAll).expect("live"),
            11 => self.driver.flush_net_dormancy(tc, things, self.sleeper).expect("live"),
            17 => self.driver.set_net_dormancy(tc, things, self.sleeper, Dormancy::Awake).expect("live"),
            6 | 15 => self.driver.set_replicates(tc, things, self.switched, frame == 15).expect("live"),
            // The inventory's condition leaves the client out (a close) and lets it in again
            // (opened whole), with items added meanwhile.
            8 | 10 => {
                let condition = if frame == 8 { SubObjectCondition::OwnerOnly } else { SubObjectCondition::None };
                self.driver.set_fast_array_condition(self.inventory, condition).expect("live")
            }
            // The sub-object under a physics condition (its owner simulated here: still sent).
            20 => {
                let gear = SubObjectCondition::SimulatedOrPhysicsNoReplay;
                self.driver.set_sub_object_condition(self.gc, &self.gears, self.gear, gear).expect("a sub-object")
            }
            21 => self.driver.set_physics(tc, things, self.live[1].0, true).expect("live"),
            _ => {}
        }
        things.set(self.door, HEALTH, &Value::U32(f / 4)).expect("a u32");
        // Calls of every kind on the live things (the owned one's client calls reach the client),
        // and the client's Server calls on the owned thing (refused while it does not own it).
        for (i, &(id, _)) in self.live.iter().enumerate() {
            let name = shadowrep_tests::random_world::CALLS[(frame + i) % 4];
            self.driver.call_rpc(tc, things, id, name, &[Value::U32(f)]).expect("a valid call");
        }
        if let Some(owned) = self.driver.guid_of(tc, self.owned).filter(|&g| self.client.has(g)) {
            let name = shadowrep_tests::random_world::SERVER_CALLS[frame % 2];
            self.client.call_server_rpc(owned, name, &[Value::U32(f)]).expect("a valid call");
        }
        if self.live.len() > 2 {
            let target = ObjectRef(self.live[(frame + 1) % self.live.len()].1 .0);
            things.set(self.live[0].0, TARGET, &Value::Object(target)).expect("an object");
        }
        self.gears.set(self.gear, 0, &Value::U16(frame as u16 * 11)).expect("a u16");
        let mut items = self.driver.fast_array_mut(self.inventory).expect("live");
        if frame % 3 != 2 && self.items.len() < 200 {
            self.items.push(items.add(&[frame as u8, 0, 90, 0]).expect("room"));
        }
        if let Some(&id) = self.items.first() {
            items.set(id, &[frame as u8, 1, 80, 0]).expect("an item");
        }
        if frame % 5 == 4 && !self.items.is_empty() {
            let id = self.items.remove(0);
            items.remove(id).expect("an item");
        }
        if frame == 8 {
            let (id, _) = self.live.remove(3);
            self.things.despawn(id).expect("live");
        }
        if frame == 12 {
            let (id, _) = self.live.remove(2);
            self.driver.tear_off(self.tc, &self.things, id).expect("live");
        }
        if frame == 10 || frame == 16 {
            self.live.push(spawn(&mut self.things, &mut self.driver, self.tc, 700.0 + f as f32));
        }
    }

    /// Whether the client holds the server's health of every live thing and the door, the
    /// owned thing's ammo (owner-only), every other thing's pose (skip-owner), the sub-object's
    /// charge and the fast array's items.
    pub fn converged(&self) -> bool {
        self.values_converged() && self.items_converged()
    }

    /// [`Self::converged`] but for the fast array: the values that change every frame (the
    /// door's every fourth), which the server sends again whatever a forger wrote into them.
    /// Not the wanderer while it is away (its channel closes, and the client's copy with it),
    /// nor the sleeper while the server holds it asleep (its changes wait for it to wake).
    pub fn values_converged(&self) -> bool {
        let c = &self.client;
        let asleep = self.driver.is_asleep(self.tc, self.sleeper);
        let things = self.live.iter().copied().chain(self.driver.guid_of(self.tc, self.door).map(|g| (self.door, g)));
        let off = self.driver.replicates(self.tc, self.switched) == Some(false);
        let away = |id: ActorId| {
            (id == self.wanderer && self.far) || (id == self.sleeper && asleep) || (id == self.switched && off)
        };
        let things = things.filter(|&(id, _)| !away(id));
        let same = |id: ActorId, g: NetGuid, p: usize| c.value(g, p) == self.things.get(id, p).ok();
        let owned = self.driver.owning_connection(self.tc, self.owned) == Some(self.conn);
        let healths = things.into_iter().all(|(id, g)| {
            same(id, g, HEALTH)
                && (id != self.owned || !owned || same(id, g, AMMO))
                && (id == self.owned && owned || id == self.door || same(id, g, POSE))
        });
        let gear = self.driver.guid_of(ClassId(1), self.gear);
        let charge = gear.is_some_and(|g| c.value(g, 0) == self.gears.get(self.gear, 0).ok());
        healths && charge
    }

    /// Whether the client's copy of the fast array holds the server's items — or, while its
    /// condition leaves the client out (owner only: the client does not own its owner), whether
    /// the client holds no copy.
    fn items_converged(&self) -> bool {
        let c = &self.client;
        if self.driver.fast_array_condition(self.inventory) == Ok(SubObjectCondition::OwnerOnly) {
            return c.fast_array(self.inventory).is_none();
        }
        let server: Vec<(u32, Vec<u8>)> = match self.driver.fast_array(self.inventory) {
            Ok(a) => a.iter().map(|(id, b)| (id.0, b.to_vec())).collect(),
            Err(_) => return false,
        };
        let client: Option<Vec<(u32, Vec<u8>)>> =
            c.fast_array(self.inventory).map(|a| a.iter().map(|(id, b)| (id.0, b.to_vec())).collect());
        client.is_some_and(|mut items| {
            items.sort();
            let mut server = server;
            server.sort();
            items == server
        })
    }
}

impl Default for LevelWorld {
    fn default() -> Self {
        Self::new()
    }
}

fn spawn(things: &mut ClassStore, driver: &mut NetDriver, tc: ClassId, x: f32) -> (ActorId, NetGuid) {
    let id = things.spawn();
    things.set(id, LOCATION, &Value::Vector([x, 0.0, 0.0])).expect("a vector");
    (id, driver.assign_guid(tc, things, id).expect("live"))
}

pub(super) fn record() -> Recording {
    use shadowrep::client::ClientEvent;
    let mut w = LevelWorld::new();
    let mut events = Vec::new();
    for _ in 0..FRAMES {
        let (packets, fb) = w.step(true, true);
        w.recording.packets.extend(packets);
        w.recording.feedbacks.push(fb);
        events.extend(w.client.take_events());
    }
    assert!(w.converged(), "the run reached the client");
    // The run holds what it is meant to: the wanderer's channel closed and opened again, the
    // sleeper went dormant (twice: before and after its flush).
    let guid = |id| w.driver.guid_of(w.tc, id).expect("live");
    let (wanderer, sleeper) = (guid(w.wanderer), guid(w.sleeper));
    let count = |e: ClientEvent| events.iter().filter(|&&x| x == e).count();
    assert_eq!(count(ClientEvent::Destroyed { guid: wanderer }), 1, "the wanderer left");
    assert_eq!(count(ClientEvent::Spawned { guid: wanderer, class: w.tc.0 }), 2, "and came back");
    assert_eq!(count(ClientEvent::Dormant { guid: sleeper }), 2, "the sleeper slept, twice");
    w.recording
}
