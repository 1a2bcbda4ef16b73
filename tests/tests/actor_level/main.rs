//! The actor level through the driver: relevancy, the relevant timeout, update frequency,
//! priority, bandwidth and the sparse channel table, each checked on what a client receives and
//! on the driver's recorded decisions.

mod bandwidth;
mod between_ticks;
mod client_roles;
mod dormancy;
mod dynamic_conditions;
mod fastarray_refs;
mod fastarrays;
mod frequency;
mod hostile;
mod initial;
mod initial_only;
mod lifecycle;
mod lifecycle_review;
mod mixed;
mod mutants;
mod net_groups;
mod ownership_review;
mod priority;
mod reference;
mod refusals;
mod relevancy;
mod replicates;
mod roles;
mod rpcs;
mod static_objects;
mod sub_conditions;
mod sublevels;
mod sublevels_review;
mod subobjects;
mod tearoff;
mod temporary;
mod timeout;

use shadowrep::client::{ClientEvent, ClientWorld};
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::{ActorLevelConfig, DriverConfig, FrameDecisions, NetDriver, NetSettings, Viewer};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl, VectorQuant};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::sync::Arc;

pub use shadowrep_tests::random_world::{thing, HEALTH, LOCATION};

/// A server with one class of things and clients over a perfect link.
pub struct Level {
    pub driver: NetDriver,
    pub store: ClassStore,
    pub class: ClassId,
    pub clients: Vec<(ConnectionId, ClientWorld)>,
    pub layout: Arc<ClassLayout>,
    /// Fast array kinds clients added later register.
    pub fast_kinds: Vec<Arc<shadowrep::schema::ArrayLayout>>,
}

impl Level {
    /// A level with `cfg` (decisions recorded) and `clients` clients, each viewing from the
    /// origin along +X.
    pub fn new(cfg: ActorLevelConfig, clients: usize) -> Level {
        Level::with_parallel(cfg, clients, true)
    }

    /// The same, on the rayon pool or on the calling thread only.
    pub fn with_parallel(cfg: ActorLevelConfig, clients: usize, parallel: bool) -> Level {
        let layout = thing();
        let mut store = ClassStore::new(layout.clone());
        let level = ActorLevelConfig { record_decisions: true, ..cfg };
        let compare = shadowrep::compare::CompareConfig { parallel, ..Default::default() };
        let driver_cfg = DriverConfig { actor_level: Some(level), parallel, compare, ..DriverConfig::default() };
        let mut driver = NetDriver::new(driver_cfg).expect("valid config");
        let class = driver.register_class(&mut store).expect("registers");
        driver.set_location_property(class, LOCATION).expect("a vector");
        let mut l = Level { driver, store, class, clients: Vec::new(), layout, fast_kinds: Vec::new() };
        for _ in 0..clients {
            l.add_client();
        }
        l
    }

    /// Adds a client viewing from the origin.
    pub fn add_client(&mut self) -> usize {
        let conn = self.driver.add_connection(false);
        let world = ClientWorld::new(std::slice::from_ref(&self.layout), &self.driver.checksums())
            .and_then(|w| w.with_fast_array_kinds(&self.fast_kinds, &self.driver.fast_array_checksums()))
            .expect("checksums match");
        self.driver.set_viewers(conn, &[viewer([0.0; 3], None)]).expect("live");
        self.clients.push((conn, world));
        self.clients.len() - 1
    }

    /// Spawns a thing at `at` with `health`.
    pub fn spawn(&mut self, at: [f32; 3], health: u32) -> (ActorId, NetGuid) {
        let id = self.store.spawn();
        self.store.set(id, LOCATION, &Value::Vector(at)).expect("a vector");
        self.store.set(id, HEALTH, &Value::U32(health)).expect("a u32");
        let guid = self.driver.assign_guid(self.class, &self.store, id).expect("live");
        (id, guid)
    }

    /// Moves a thing.
    pub fn move_to(&mut self, id: ActorId, at: [f32; 3]) {
        self.store.set(id, LOCATION, &Value::Vector(at)).expect("a vector");
    }

    /// Gives one actor its own settings.
    pub fn settings(&mut self, id: ActorId, f: impl FnOnce(&mut NetSettings)) {
        let mut s = self.driver.net_settings(self.class, id).expect("live");
        f(&mut s);
        self.driver.set_net_settings(self.class, &self.store, id, s).expect("live");
    }

    /// One frame: tick, deliver every packet, return feedback.
    pub fn step(&mut self) {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).expect("live") {
                world.receive(&p).expect("a well-formed packet");
            }
            self.driver.receive_feedback(*conn, &world.feedback()).expect("decodes");
        }
    }

    /// One frame in which client `silent` gets its packets but sends no feedback (not heard
    /// from: past the ready timeout the server stops replicating to it).
    pub fn step_with_silent(&mut self, silent: usize) {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        for (c, (conn, world)) in self.clients.iter_mut().enumerate() {
            for p in self.driver.take_packets(*conn).expect("live") {
                world.receive(&p).expect("a well-formed packet");
            }
            if c != silent {
                self.driver.receive_feedback(*conn, &world.feedback()).expect("decodes");
            }
        }
    }

    /// [`Self::step`] allowing refusals (after hostile input the server may send what a client
    /// refuses, and asks about).
    pub fn step_tolerant(&mut self) {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).expect("live") {
                let _ = world.receive(&p);
            }
            self.driver.receive_feedback(*conn, &world.feedback()).expect("decodes");
        }
    }

    /// One frame over a lossy link: each packet and each feedback is lost with probability
    /// `loss`.
    pub fn step_lossy(&mut self, rng: &mut impl rand::Rng, loss: f64) {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).expect("live") {
                if !rng.random_bool(loss) {
                    world.receive(&p).expect("a well-formed packet");
                }
            }
            let fb = world.feedback();
            if !rng.random_bool(loss) {
                self.driver.receive_feedback(*conn, &fb).expect("decodes");
            } else {
                // A client that lost its feedback is still alive: the server hears from it later.
                self.driver.heard_from(*conn).expect("live");
            }
        }
    }

    /// One frame in which client 0's packets go through `down` (those it delivers this frame
    /// arrive; its feedback goes straight back).
    pub fn step_through(&mut self, down: &mut shadowrep::link::Link) {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        let (conn, world) = &mut self.clients[0];
        for p in self.driver.take_packets(*conn).expect("live") {
            down.send(p);
        }
        for p in down.tick() {
            world.receive(&p).expect("a well-formed packet");
        }
        self.driver.receive_feedback(*conn, &world.feedback()).expect("decodes");
    }

    /// Runs `n` frames.
    pub fn run(&mut self, n: usize) {
        for _ in 0..n {
            self.step();
        }
    }

    /// Client `c`'s world.
    pub fn client(&self, c: usize) -> &ClientWorld {
        &self.clients[c].1
    }

    /// One frame of the kernel and the UE-style reference `r` side by side: both tick (the
    /// reference's audit finding no slot the driver's log missed) and must write client 0's
    /// packets byte for byte; returns them, not delivered.
    pub fn tick_beside(&mut self, r: &mut shadowrep::reference::frame::ReferenceFrame, frame: u32) -> Vec<Vec<u8>> {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        let tick = r.tick(&self.driver, &mut [&mut self.store]).expect("reference tick");
        assert_eq!(tick.missed_slots, 0, "frame {frame}: slots changed outside the driver's log");
        let conn = self.clients[0].0;
        let packets = self.driver.take_packets(conn).expect("live");
        let theirs: Vec<&[u8]> = r.packets(conn).collect();
        assert_eq!(packets.iter().map(Vec::as_slice).collect::<Vec<_>>(), theirs, "frame {frame}: the packets differ");
        packets
    }

    /// Client 0 gets `packets` (from [`Self::tick_beside`]); its feedback goes to the kernel and
    /// the reference `r`.
    pub fn deliver_beside(&mut self, r: &mut shadowrep::reference::frame::ReferenceFrame, packets: &[Vec<u8>]) {
        let (conn, world) = &mut self.clients[0];
        for p in packets {
            world.receive(p).expect("a well-formed packet");
        }
        let fb = world.feedback();
        self.driver.receive_feedback(*conn, &fb).expect("decodes");
        r.receive_feedback(&self.driver, *conn, &fb).expect("decodes");
    }

    /// Client `c`'s decisions of the last frame.
    pub fn decisions(&self, c: usize) -> FrameDecisions {
        self.driver.decisions(self.clients[c].0).expect("live").cloned().expect("recorded")
    }

    /// Client `c`'s events since the last call.
    pub fn events(&mut self, c: usize) -> Vec<ClientEvent> {
        self.clients[c].1.take_events()
    }
}

/// A hand-made packet with sequence number `seq`: `f` writes its bunches.
pub fn crafted(seq: u32, f: impl FnOnce(&mut shadowrep::wire::BitWriter)) -> Vec<u8> {
    use shadowrep::wire::packet::{begin_packet, end_packet};
    let mut w = shadowrep::wire::BitWriter::new();
    begin_packet(&mut w, shadowrep::ids::Seq(seq));
    f(&mut w);
    end_packet(&mut w);
    w.into_bytes()
}

/// A game connection's replication flags for a sub-object condition, its owner set autonomous
/// and replicating no physics: `owner` — the connection owns it.
pub fn owner_flags(owner: bool) -> shadowrep::net::ReplicationFlags {
    shadowrep::net::ReplicationFlags { owner, autonomous: true, ..Default::default() }
}

/// A viewer at `at` looking along +X.
pub fn viewer(at: [f32; 3], view_target: Option<NetGuid>) -> Viewer {
    Viewer { real_viewer: None, view_target, location: at, direction: [1.0, 0.0, 0.0] }
}

/// Settings considered every frame (a frequency far above the tick rate).
pub fn every_frame() -> ActorLevelConfig {
    ActorLevelConfig::default()
}

/// A class default with a frequency that makes every actor due every frame.
pub fn always_due(level: &mut Level) {
    let mut s = NetSettings::default();
    s.frequency.net_update_frequency = 1.0e6;
    level.driver.set_class_settings(level.class, s).expect("known class");
}

/// A driver for `store`'s class (its parent 0 the location) from `base`, with the actor level
/// (every actor due every frame) or without.
pub fn driver_for(level: bool, store: &mut ClassStore, base: DriverConfig) -> (NetDriver, ClassId) {
    driver_with(level.then(ActorLevelConfig::default), store, base)
}

/// [`driver_for`] with the actor level's configuration (`None`: without it).
pub fn driver_with(
    actor_level: Option<ActorLevelConfig>,
    store: &mut ClassStore,
    base: DriverConfig,
) -> (NetDriver, ClassId) {
    let level = actor_level.is_some();
    let mut driver = NetDriver::new(DriverConfig { actor_level, ..base }).unwrap();
    let class = driver.register_class(store).unwrap();
    if level {
        driver.set_location_property(class, LOCATION).unwrap();
        let mut s = NetSettings::default();
        s.frequency.net_update_frequency = 1.0e6;
        driver.set_class_settings(class, s).unwrap();
    }
    (driver, class)
}
