//! The game of a random world: its stores, its driver and reference side by side, its clients
//! behind a lossy link, and the calls a game makes frame by frame — spawns, despawns, moves,
//! owners, settings, tear-offs, dormancy, sublevels, joins and leaves ([`Sim::play`]) — then a
//! tick of both sides and the clients' feedback ([`Sim::step`]).
//!
//! Here the type and its construction; its step in [`step`]; the game's calls by family in the
//! other submodules: spawns ([`spawn`]), clients joining and streaming ([`clients`]), the
//! frame's play ([`play`]), the conditions changing ([`conditions`]) and the other calls of a
//! frame ([`calls`]).

use super::{bag, thing, LOCATION};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid};
use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, SublevelId};
use shadowrep::reference::frame::ReferenceFrame;
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::sync::Arc;

/// The last point among the game's calls where held feedback arrives: after every call, as the
/// step begins ([`Sim::arrive`]; the points before it are marked in `play.rs` and
/// `random_world::play_frame`).
pub(super) const AFTER_THE_CALLS: u8 = 17;

mod calls;
mod clients;
mod conditions;
mod differ;
mod play;
mod spawn;
mod step;

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
    /// Owner actors set that moved an actor's owning connection (with owner chains).
    pub(super) chain_moves: usize,
    /// The game switches actors' replication off and on ([`super::Spec::replicates`]), from dice
    /// of their own.
    pub(super) replicates_switch: bool,
    switch_rng: ChaCha8Rng,
    pub(super) switched_off: usize,
    /// The game removes inventories (fast arrays) from live owners
    /// ([`super::Spec::remove_fast_arrays`]), from dice of their own.
    pub(super) remove_arrays: bool,
    removal_rng: ChaCha8Rng,
    /// A client's feedback arrives after the game's next calls half the time
    /// ([`super::Spec::late_feedback`]), from dice of their own: held here until the next step.
    pub(super) late_feedback: bool,
    late_rng: ChaCha8Rng,
    /// Held feedback, each with the point among the game's next calls where it arrives
    /// ([`Sim::arrive`]; [`AFTER_THE_CALLS`] without [`super::Spec::interleaved_feedback`]).
    held_feedback: Vec<(ConnectionId, Vec<u8>, u8)>,
    /// Each held feedback's point drawn from dice of their own
    /// ([`super::Spec::interleaved_feedback`]).
    pub(super) interleaved_feedback: bool,
    cut_rng: ChaCha8Rng,
    /// Held feedback that arrived before the last of the game's calls.
    pub(super) among_calls: usize,
    /// The first error of a feedback delivered among the game's calls, reported by the step.
    failure: Option<String>,
    /// Feedback delivered late.
    pub(super) late_feedbacks: usize,
    /// Now and then a feedback asks again for an actor or array its client had once
    /// ([`super::Spec::stale_reopens`]), from dice of their own: a request late or forged.
    pub(super) stale_reopens: bool,
    /// Now and then a thing spawned and at once made dormant, flushed or torn off, before any
    /// tick saw it ([`super::Spec::fresh_calls`]), from dice of their own.
    pub(super) fresh_calls: bool,
    fresh_rng: ChaCha8Rng,
    pub(super) fresh: usize,
    reopen_rng: ChaCha8Rng,
    /// What the clients held once (actors and fast arrays), the requests' pool: the newest 64.
    held_once: std::collections::VecDeque<NetGuid>,
    /// Requests added.
    pub(super) stale_requests: usize,
    /// Now and then the link delivers a client's earlier feedback again, before or after its
    /// newest ([`super::Spec::replayed_feedback`]): a datagram duplicated or reordered. Dice of
    /// their own; the newest 64 feedbacks delivered, by connection.
    pub(super) replayed_feedback: bool,
    replay_rng: ChaCha8Rng,
    delivered: std::collections::VecDeque<(ConnectionId, Vec<u8>)>,
    /// Feedbacks delivered again.
    pub(super) replays: usize,
    /// Now and then a feedback claims a lost packet received ([`super::Spec::lying_feedback`]),
    /// dice of their own; the lies told, and the packets the liars refused since (a client
    /// lacking an actor it was told it got).
    pub(super) lying_feedback: bool,
    lie_rng: ChaCha8Rng,
    pub(super) lies: usize,
    pub(super) refused: usize,
    /// The arrays removed, with their owners; every array's owner.
    pub(super) removed_arrays: Vec<(NetGuid, NetGuid)>,
    array_owners: std::collections::HashMap<NetGuid, NetGuid>,
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
    /// Each sub-object's condition as the game last set it (the driver keeps it to itself): the
    /// end-state check ([`super::settle`]) leaves the initial-only ones out.
    pub(super) sub_object_conditions: std::collections::HashMap<NetGuid, shadowrep::net::SubObjectCondition>,
    /// Every bag registered as a sub-object: one the driver no longer names an owner of was
    /// orphaned (its owner despawned), and calls on it are refused.
    pub(super) registered_subs: std::collections::HashSet<NetGuid>,
}

fn slots() -> Arc<shadowrep::schema::ArrayLayout> {
    Arc::new(shadowrep::fastarray::item_layout("Slots", shadowrep::schema::PropType::U32).unwrap())
}

impl Sim {
    /// A world of `connections` clients; `adaptive`: UE's adaptive update frequency on; each
    /// packet costing `packet_overhead` bytes beyond its payload.
    pub(super) fn new(
        seed: u64,
        connections: usize,
        (adaptive, bags_first, sublevels, net_groups): (bool, bool, bool, bool),
        (dynamic, defaults, wide, owner_chains): (bool, bool, bool, bool),
        packet_overhead: u32,
    ) -> Sim {
        let (tl, bl) = (thing(), bag(dynamic, defaults, wide));
        let mut things = ClassStore::new(tl.clone());
        let mut bags = ClassStore::new(bl.clone());
        let level = ActorLevelConfig {
            record_decisions: true,
            adaptive_frequency: adaptive,
            owner_chain_connections: owner_chains,
            packet_overhead,
            ..ActorLevelConfig::default()
        };
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
            chain_moves: 0,
            replicates_switch: false,
            switch_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7265_706c),
            switched_off: 0,
            remove_arrays: false,
            removal_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7265_6d6f),
            late_feedback: false,
            late_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6c61_7465),
            held_feedback: Vec::new(),
            interleaved_feedback: false,
            cut_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6375_7473),
            among_calls: 0,
            failure: None,
            late_feedbacks: 0,
            stale_reopens: false,
            fresh_calls: false,
            fresh_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6672_6573),
            fresh: 0,
            reopen_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7265_6f70),
            held_once: Default::default(),
            stale_requests: 0,
            replayed_feedback: false,
            replay_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6475_7065),
            delivered: Default::default(),
            replays: 0,
            lying_feedback: false,
            lie_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6c69_6573),
            lies: 0,
            refused: 0,
            removed_arrays: Vec::new(),
            array_owners: Default::default(),
            dynamic_changes: 0,
            fast_conditions_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6661_7374),
            fast_condition_changes: 0,
            wide,
            wide_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7769_6465),
            ledger_writes: 0,
            rpcs: false,
            rpc_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7270_6373),
            rpcs_called: 0,
            sub_object_conditions: Default::default(),
            registered_subs: Default::default(),
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

    /// Whether a call on an actor that sets what a sub-object takes from its owner went through:
    /// refused (`FollowsOwner`) exactly for a sub-object, (`Orphaned`) for one whose owner was
    /// despawned, done for any other actor.
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
            None => self.done_unless_orphaned(class, id, result),
        }
    }

    /// Whether a call on an actor went through: refused (`Orphaned`) exactly for a sub-object
    /// whose owner was despawned, done for any other actor.
    fn done_unless_orphaned(
        &self,
        class: ClassId,
        id: ActorId,
        result: Result<(), shadowrep::net::DriverError>,
    ) -> bool {
        let orphan =
            self.guid(class, id).filter(|g| self.registered_subs.contains(g) && self.driver.owner_of(*g).is_none());
        match orphan {
            Some(sub) => {
                assert_eq!(result, Err(shadowrep::net::DriverError::Orphaned(sub)));
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

    /// A thing spawned and, before any tick saw it, made dormant, flushed or torn off
    /// ([`super::Spec::fresh_calls`]): the call gives it its NetGUID.
    pub(super) fn fresh_call(&mut self) {
        let s = self.span;
        let r = &mut self.fresh_rng;
        let at = [r.random_range(-s..s), r.random_range(-s..s), 0.0];
        let id = self.things.spawn();
        self.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
        assert_eq!(self.driver.guid_of(self.thing, id), None, "no tick has seen it");
        let thing = self.thing;
        let torn = match self.fresh_rng.random_range(0..4) {
            0 | 1 => {
                self.driver.set_net_dormancy(thing, &self.things, id, shadowrep::net::Dormancy::DormantAll).unwrap();
                false
            }
            2 => {
                self.driver.tear_off(thing, &self.things, id).unwrap();
                true
            }
            _ => {
                self.driver.flush_net_dormancy(thing, &self.things, id).unwrap();
                false
            }
        };
        assert!(self.driver.guid_of(thing, id).is_some(), "the call gave it its NetGUID");
        if torn {
            self.torn_ids.push((thing, id));
        } else {
            self.live.push((thing, id));
        }
        self.fresh += 1;
    }
}
