//! Seeded random worlds at the actor level, decided side by side by the kernel and the UE-style
//! reference frame ([`shadowrep::reference::frame::ReferenceFrame`]): the oracle of
//! `tests/tests/actor_level/reference.rs` and of the sweep tool (`cargo run --release -p
//! shadowrep-tests --example reference_sweep -- --help`).
//!
//! A world ([`Spec`]) is two classes — [`thing`]s with a location, some with an inventory (a fast
//! array), and bags (no location property; a push property, dynamic arrays, every condition,
//! a quarter of them sub-objects of a thing) — with static actors, random net settings, owners
//! and instigators, relevancy hooks, clients joining, leaving, falling silent and (over a lossy
//! link) going dark, net speeds changing, tear-offs, with [`Spec::dormancy`] the game's
//! dormancy calls, and with [`Spec::sublevels`] actors placed in sublevels the clients stream in
//! and out. [`decide_alike`] runs it for 240 frames and compares on every frame of every
//! connection the relevant set, the send order (with priorities, actions and bits), saturation
//! and the bits queued; [`Exercised::weakness`] says whether the world exercised what a test
//! relies on. [`settle_and_check`] plays the same worlds, heals them and checks the clients' end
//! state against the server's (`tests/tests/end_state.rs`).

use shadowrep::net::ConnectionStats;
use shadowrep::schema::{ClassBuilder, ClassLayout, Notify, PropType, PropertyDecl, VectorQuant};
use shadowrep::value::Value;
use std::sync::Arc;

mod settle;
mod sim;
mod spec;
pub use settle::{settle_and_check, Settled, PLAY_FRAMES, QUIET_FRAMES, RECENT_FRAMES};
use sim::Sim;
pub use spec::Spec;

/// Parent indices of [`thing`].
pub const LOCATION: usize = 0;
pub const HEALTH: usize = 1;

/// Parent indices of the bags (`bag`) that the world writes under no condition: `Coins` (push
/// model), `Items` (a dynamic array), `Open` (with a notify); and `Stash`, the owner-only array.
pub const COINS: usize = 0;
pub const ITEMS: usize = 1;
pub const OPEN: usize = 2;
pub const STASH: usize = 7;

/// A class with a replicated location and a health, and the calls of [`with_calls`].
pub fn thing() -> Arc<ClassLayout> {
    let b = ClassBuilder::new("Thing")
        .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
        .property(PropertyDecl::new("Health", PropType::U32));
    Arc::new(with_calls(b).build().expect("valid layout"))
}

/// The remote procedure calls of [`thing`] and the bags, one of each kind, each with a `u32`
/// (a world's calls number themselves with it): [`CALLS`] in order, then [`SERVER_CALLS`].
pub fn with_calls(b: ClassBuilder) -> ClassBuilder {
    use shadowrep::schema::RpcDecl;
    let n = || PropertyDecl::new("N", PropType::U32);
    b.rpc(RpcDecl::multicast(CALLS[0]).param(n()))
        .rpc(RpcDecl::multicast(CALLS[1]).reliable().param(n()))
        .rpc(RpcDecl::client(CALLS[2]).param(n()))
        .rpc(RpcDecl::client(CALLS[3]).reliable().param(n()))
        .rpc(RpcDecl::server(SERVER_CALLS[0]).param(n()))
        .rpc(RpcDecl::server(SERVER_CALLS[1]).reliable().param(n()))
}

/// The Server calls of [`with_calls`] (a client calls them): unreliable, reliable.
pub const SERVER_CALLS: [&str; 2] = ["ServerFire", "ServerUse"];

/// The calls of [`with_calls`]: unreliable and reliable multicasts, unreliable and reliable
/// client calls.
pub const CALLS: [&str; 4] = ["Ping", "Shout", "Hint", "Whisper"];

/// A class without a location property (positions set by the game) with a push-model property,
/// a dynamic array (growing, shrinking and changing a few elements at a time), and properties
/// under conditions that follow roles (owner-only, skip-owner, autonomous-only, Custom) — one of
/// them an owner-only dynamic array (sent whole, what a new owner is owed when it comes back).
///
/// With `dynamic` ([`Spec::dynamic_conditions`]) a thirteenth parent, `Mood` ([`MOOD`]), is
/// declared Dynamic: each bag's own condition for it changes as the world runs.
///
/// With `defaults` ([`Spec::class_defaults`]) most of its properties declare a class default —
/// its two dynamic arrays too — some of which the world's values hit.
///
/// With `wide` ([`Spec::wide`]) twenty more parents after the rest, [`LEDGERS`], each a struct of
/// eight bytes under no condition, owner-only, initial-only or skip-owner in turn: 172 leaves
/// (173 with `Mood`), whose net masks name groups of leaves (`shadowrep::schema::groups`).
fn bag(dynamic: bool, defaults: bool, wide: bool) -> Arc<ClassLayout> {
    use shadowrep::schema::Condition;
    let d = |decl: PropertyDecl, v: Value| if defaults { decl.default_value(v) } else { decl };
    let mood = dynamic.then(|| PropertyDecl::new("Mood", PropType::U16).condition(Condition::Dynamic));
    let b = ClassBuilder::new("Bag")
        .property(d(PropertyDecl::new("Coins", PropType::U32).push(true), Value::U32(100)))
        .property(d(
            PropertyDecl::new("Items", PropType::Array { element: Box::new(PropType::U16), max_len: 40 }),
            Value::Array(vec![Value::U16(1), Value::U16(2), Value::U16(3)]),
        ))
        .property(d(PropertyDecl::new("Open", PropType::Bool).notify(Notify::OnChanged), Value::Bool(true)))
        .property(d(PropertyDecl::new("Secret", PropType::U16).condition(Condition::OwnerOnly), Value::U16(7)))
        .property(d(PropertyDecl::new("Public", PropType::U8).condition(Condition::SkipOwner), Value::U8(1)))
        .property(d(PropertyDecl::new("Pilot", PropType::U8).condition(Condition::AutonomousOnly), Value::U8(3)))
        .property(d(PropertyDecl::new("Tuned", PropType::U16).condition(Condition::Custom), Value::U16(5)))
        .property(d(
            PropertyDecl::new("Stash", PropType::Array { element: Box::new(PropType::U8), max_len: 16 })
                .condition(Condition::OwnerOnly),
            Value::Array(vec![Value::U8(4)]),
        ))
        .property(d(PropertyDecl::new("Intro", PropType::U16).condition(Condition::InitialOnly), Value::U16(9)))
        .property(d(PropertyDecl::new("Badge", PropType::U8).condition(Condition::InitialOrOwner), Value::U8(2)))
        .property(d(PropertyDecl::new("Drift", PropType::U8).condition(Condition::SimulatedOrPhysics), Value::U8(4)))
        .property(PropertyDecl::new("Skin", PropType::U8).condition(Condition::SimulatedOnly));
    let b = mood.into_iter().fold(b, |b, p| b.property(p));
    let ledger =
        (0..8).fold(shadowrep::schema::StructType::new("Ledger"), |s, i| s.field(format!("E{i}"), PropType::U8));
    let ledgers = (0..if wide { LEDGERS } else { 0 }).map(|i| {
        let c = [Condition::None, Condition::OwnerOnly, Condition::InitialOnly, Condition::SkipOwner][i % 4];
        PropertyDecl::new(format!("Ledger{i}"), PropType::Struct(ledger.clone())).condition(c)
    });
    Arc::new(with_calls(ledgers.fold(b, |b, p| b.property(p))).build().expect("valid layout"))
}

/// The ledger parents of a wide [`bag`], after its others.
const LEDGERS: usize = 20;

/// The Dynamic parent of [`bag`] with `dynamic`.
const MOOD: usize = 12;

/// Parents of [`bag`] under a condition: (parent, distinct values).
///
/// `Badge` (9, InitialOrOwner) keeps its spawn value: coming back by ownership, the kernel owes
/// it if it ever changed, where UE owes what changed since the open was acknowledged (a
/// departure, README "A property that comes back"), which the reference does not model; the
/// loss soak's convergence covers its value.
const BAG_CONDITIONED: [(usize, u32); 7] = [(3, 1000), (4, 200), (5, 200), (6, 1000), (8, 1000), (10, 200), (11, 200)];
/// The Custom parent of [`bag`].
const TUNED: usize = 6;

/// What a world exercised, counted over its frames and connections (the kernel's decisions; the
/// reference made the same ones).
#[derive(Clone, Debug, Default)]
pub struct Exercised {
    /// Connection-frames that stopped saturated.
    pub saturated: usize,
    /// Connection-frames not net-ready (a silent client).
    pub not_ready: usize,
    /// Channels closed for relevancy (or by a destroy), and for dormancy.
    pub closed: usize,
    pub dormant_closes: usize,
    /// Send decisions, and those of sub-objects.
    pub sends: usize,
    pub sub_sends: usize,
    /// Fast array item callbacks on the clients.
    pub item_events: usize,
    /// Actors torn off, and torn-off actors the game despawned later.
    pub torn: usize,
    pub torn_gone: usize,
    /// Clients that joined and left mid-run.
    pub joined: usize,
    pub left: usize,
    /// Dormancy calls that went through, and the most actors asleep at once.
    pub dormancy_calls: usize,
    pub most_asleep: usize,
    /// Packets the link lost.
    pub dropped: usize,
    /// Sublevels the clients streamed in or out.
    pub sublevel_changes: usize,
    /// Net group changes made (a connection's and a sub-object's each).
    pub group_changes: usize,
    /// Dynamic conditions set on bags.
    pub dynamic_changes: usize,
    /// Fast arrays' conditions set (with dynamic conditions).
    pub fast_condition_changes: usize,
    /// Actors made temporary (at spawn or by a change of settings).
    pub temporaries: usize,
    /// Sub-objects registered initial-only.
    pub initial_onlys: usize,
    /// Sub-objects registered with one of UE's other conditions ([`Spec::sub_conditions`]).
    pub other_conditions: usize,
    /// Actors switched off ([`Spec::replicates`]).
    pub switched_off: usize,
    /// Fast arrays removed from live owners ([`Spec::remove_fast_arrays`]).
    pub arrays_removed: usize,
    /// Feedback that arrived after the game's next calls ([`Spec::late_feedback`]).
    pub late_feedbacks: usize,
    /// Of those, the ones that arrived before the last of the calls
    /// ([`Spec::interleaved_feedback`]).
    pub among_calls: usize,
    /// Things spawned and made dormant, flushed or torn off before any tick saw them
    /// ([`Spec::fresh_calls`]).
    pub fresh_calls: usize,
    /// Requests to open again added to the feedback ([`Spec::stale_reopens`]).
    pub stale_requests: usize,
    /// Feedbacks the link delivered again ([`Spec::replayed_feedback`]).
    pub replays: usize,
    /// Lies told, and packets the liars refused ([`Spec::lying_feedback`]).
    pub lies: usize,
    pub refused: usize,
    /// Owner actors set that moved an actor's owning connection ([`Spec::owner_chains`]).
    pub chain_moves: usize,
    /// Ledger bytes written ([`Spec::wide`]).
    pub ledger_writes: usize,
    /// Remote procedure calls made, and those delivered to the clients, reliable and not
    /// ([`Spec::rpcs`]).
    pub rpcs_called: usize,
    /// Channels a saturated frame opened for a call that found none ([`Spec::rpcs`]).
    pub opened_for_calls: usize,
    pub reliable_delivered: usize,
    pub unreliable_delivered: usize,
    /// The clients' Server calls the server delivered ([`Spec::rpcs`]).
    pub server_delivered: usize,
    /// The last clients' connection statistics.
    pub stats: Vec<ConnectionStats>,
}

impl Exercised {
    /// `None` when the world exercised what the tests rely on — saturation, closes, sends,
    /// fast array items, tear-offs, silent clients, joins and leaves, sub-objects, and with
    /// dormancy or loss their own paths; else which count fell short (`"seed N: …"`).
    pub fn weakness(&self, spec: &Spec) -> Option<String> {
        let seed = spec.seed;
        let resent: u64 = self.stats.iter().map(|s| s.leaves_resent).sum();
        let ahead: u64 = self.stats.iter().map(|s| s.feedback_ahead).sum();
        let checks = [
            (self.saturated > 50, format!("{} saturated connection-frames", self.saturated)),
            (self.closed > 5, format!("{} relevancy closes", self.closed)),
            (self.sends > 5_000, format!("{} sends", self.sends)),
            (self.item_events > 500, format!("{} fast array item callbacks", self.item_events)),
            (self.torn > 2, format!("{} actors torn off", self.torn)),
            (self.not_ready > 5, format!("{} connection-frames not net-ready (silent clients)", self.not_ready)),
            (self.torn_gone > 1, format!("{} torn-off actors despawned", self.torn_gone)),
            (self.joined > 0 && self.left > 0, format!("{} joined, {} left", self.joined, self.left)),
            (self.sub_sends > 100, format!("{} sends of sub-objects", self.sub_sends)),
            (
                !spec.dormancy || self.dormant_closes > 50,
                format!("{} channels closed for dormancy", self.dormant_closes),
            ),
            (!spec.dormancy || self.most_asleep > 10, format!("at most {} actors asleep", self.most_asleep)),
            (!spec.dormancy || self.dormancy_calls > 200, format!("{} dormancy calls", self.dormancy_calls)),
            (!spec.sublevels || self.sublevel_changes > 15, format!("{} sublevels streamed", self.sublevel_changes)),
            (!spec.net_groups || self.group_changes > 40, format!("{} net group changes", self.group_changes)),
            (
                !spec.dynamic_conditions || self.dynamic_changes > 100,
                format!("{} dynamic condition changes", self.dynamic_changes),
            ),
            (!spec.net_temporary || self.temporaries > 20, format!("{} actors made temporary", self.temporaries)),
            (!spec.initial_only || self.initial_onlys > 3, format!("{} initial-only sub-objects", self.initial_onlys)),
            (
                !spec.sub_conditions || self.other_conditions > 3,
                format!("{} sub-objects with UE's other conditions", self.other_conditions),
            ),
            (!spec.replicates || self.switched_off > 20, format!("{} actors switched off", self.switched_off)),
            (
                !spec.remove_fast_arrays || self.arrays_removed > 5,
                format!("{} fast arrays removed", self.arrays_removed),
            ),
            (!spec.late_feedback || self.late_feedbacks > 100, format!("{} feedbacks late", self.late_feedbacks)),
            (
                !spec.interleaved_feedback || self.among_calls > 50,
                format!("{} feedbacks arrived among the calls", self.among_calls),
            ),
            (!spec.fresh_calls || self.fresh_calls > 20, format!("{} fresh calls", self.fresh_calls)),
            (!spec.stale_reopens || self.stale_requests > 20, format!("{} stale reopen requests", self.stale_requests)),
            (!spec.replayed_feedback || self.replays > 50, format!("{} feedbacks delivered again", self.replays)),
            (
                !spec.lying_feedback || self.lies > 20 && self.refused > 5 && ahead > 0,
                format!("{} lies told, {} packets refused, {ahead} feedbacks ahead", self.lies, self.refused),
            ),
            (!spec.owner_chains || self.chain_moves > 10, format!("{} owners moved by a chain", self.chain_moves)),
            (!spec.wide || self.ledger_writes > 1000, format!("{} ledger bytes written", self.ledger_writes)),
            (!spec.rpcs || self.server_delivered > 100, format!("{} Server calls delivered", self.server_delivered)),
            (!spec.rpcs || self.opened_for_calls > 0, format!("{} channels opened for calls", self.opened_for_calls)),
            (
                !spec.rpcs || self.reliable_delivered > 200 && self.unreliable_delivered > 50,
                format!(
                    "{} reliable and {} unreliable calls delivered",
                    self.reliable_delivered, self.unreliable_delivered
                ),
            ),
            (
                spec.loss == 0.0 || self.dropped > 100 && resent > 100,
                format!("{} packets lost, {resent} leaves resent", self.dropped),
            ),
        ];
        checks.into_iter().find(|(held, _)| !held).map(|(_, what)| format!("seed {seed}: {what}"))
    }
}

/// Runs world `spec` for 240 frames, the kernel and the reference deciding side by side: the
/// same relevant sets, sends, bits and saturation on every frame of every connection, and every
/// packet read by its client. `Err` names the first difference (`"seed N frame F client C: …"`)
/// or the refused packet.
pub fn decide_alike(spec: Spec) -> Result<Exercised, String> {
    let seed = spec.seed;
    let mut sim = world(&spec);
    // Per (connection, actor, reliable): the number of the last call delivered.
    let mut last_call: std::collections::HashMap<(shadowrep::ids::ConnectionId, shadowrep::ids::NetGuid, bool), u32> =
        Default::default();
    // The same for the clients' Server calls as the server got them.
    let mut last_server_call = last_call.clone();
    let mut x = Exercised::default();
    for frame in 0..240 {
        play_frame(&mut sim, &spec, frame);
        sim.step().map_err(|e| format!("seed {seed} {e}"))?;
        for (c, &(conn, _)) in sim.clients.iter().enumerate() {
            let kernel = sim.driver.decisions(conn).map_err(|e| e.to_string())?.expect("recorded");
            let reference = sim.reference.decisions(conn).expect("a connection");
            let at = format!("seed {seed} frame {frame} client {c}");
            if kernel.relevant != reference.relevant {
                return Err(format!(
                    "{at}: relevant sets differ: kernel {:?} reference {:?}",
                    kernel.relevant, reference.relevant
                ));
            }
            if let Some(i) = kernel.sends.iter().zip(&reference.sends).position(|(a, b)| a != b) {
                return Err(format!(
                    "{at}: send {i} differs: kernel {:?} reference {:?}",
                    &kernel.sends[i.saturating_sub(1)..(i + 2).min(kernel.sends.len())],
                    &reference.sends[i.saturating_sub(1)..(i + 2).min(reference.sends.len())]
                ));
            }
            if kernel.sends.len() != reference.sends.len() {
                return Err(format!(
                    "{at}: {} sends against {}; saturated {} / {}; queued {} / {}; tail {:?} / {:?}",
                    kernel.sends.len(),
                    reference.sends.len(),
                    kernel.saturated,
                    reference.saturated,
                    kernel.queued_bits,
                    reference.queued_bits,
                    &kernel.sends[kernel.sends.len().saturating_sub(3)..],
                    &reference.sends[reference.sends.len().saturating_sub(3)..]
                ));
            }
            if (kernel.saturated, kernel.queued_bits) != (reference.saturated, reference.queued_bits) {
                return Err(format!(
                    "{at}: saturated {} / {}, queued bits {} / {}: not the same bytes went out",
                    kernel.saturated, reference.saturated, kernel.queued_bits, reference.queued_bits
                ));
            }
            x.saturated += kernel.saturated as usize;
            x.not_ready += usize::from(!kernel.ready);
            x.closed += kernel.sends.iter().filter(|s| s.action == shadowrep::net::Action::Closed).count();
            x.dormant_closes += kernel.sends.iter().filter(|s| s.action == shadowrep::net::Action::Dormant).count();
            x.opened_for_calls +=
                kernel.sends.iter().filter(|s| s.action == shadowrep::net::Action::OpenedForCall).count();
            x.sends += kernel.sends.len();
            x.sub_sends += kernel.sends.iter().filter(|s| sim.driver.owner_of(s.guid).is_some()).count();
        }
        for e in sim.driver.take_server_rpcs() {
            let [Value::U32(n)] = e.args[..] else { return Err(format!("seed {seed}: a call's arguments {e:?}")) };
            // Reliable ones in call order; unreliable ones as their feedback came (in order here:
            // the sim's feedback is neither repeated nor reordered).
            if let Some(last) = last_server_call.insert((e.conn, e.guid, e.reliable), n).filter(|&last| last >= n) {
                return Err(format!(
                    "seed {seed} frame {frame}: the server got {n} on {} after {last} ({})",
                    e.guid, e.name
                ));
            }
            x.server_delivered += 1;
        }
        for (conn, world) in &mut sim.clients {
            x.item_events += world.take_fast_array_events().len();
            for e in world.take_rpcs() {
                let [Value::U32(n)] = e.args[..] else { return Err(format!("seed {seed}: a call's arguments {e:?}")) };
                if let Some(last) = last_call.insert((*conn, e.guid, e.reliable), n).filter(|&last| last >= n) {
                    return Err(format!(
                        "seed {seed} frame {frame}: {conn:?} got call {n} on {} after call {last} ({}); client {:?}",
                        e.guid,
                        e.name,
                        world.stats()
                    ));
                }
                if e.reliable {
                    x.reliable_delivered += 1;
                } else {
                    x.unreliable_delivered += 1;
                }
            }
        }
    }
    x.torn = sim.torn;
    x.torn_gone = sim.torn_gone;
    x.joined = sim.joined;
    x.left = sim.left;
    x.dormancy_calls = sim.dormancy_calls;
    x.most_asleep = sim.most_asleep;
    x.dropped = sim.dropped;
    x.sublevel_changes = sim.sublevel_changes;
    x.group_changes = sim.group_changes;
    x.dynamic_changes = sim.dynamic_changes;
    x.fast_condition_changes = sim.fast_condition_changes;
    x.temporaries = sim.temporaries;
    x.initial_onlys = sim.initial_onlys;
    x.other_conditions = sim.other_conditions;
    x.switched_off = sim.switched_off;
    x.arrays_removed = sim.removed_arrays.len();
    x.late_feedbacks = sim.late_feedbacks;
    x.fresh_calls = sim.fresh;
    x.among_calls = sim.among_calls;
    x.stale_requests = sim.stale_requests;
    x.replays = sim.replays;
    x.lies = sim.lies;
    x.refused = sim.refused;
    x.chain_moves = sim.chain_moves;
    x.ledger_writes = sim.ledger_writes;
    x.rpcs_called = sim.rpcs_called as usize;
    x.stats = sim.clients.iter().map(|&(c, _)| sim.driver.connection_stats(c).expect("live")).collect();
    Ok(x)
}

/// World `spec` built: its stores, driver, reference and first clients, its game's options set.
fn world(spec: &Spec) -> Sim {
    let Spec { seed, connections, bags_first, sublevels, net_groups, .. } = *spec;
    let mut sim = Sim::new(
        seed,
        connections,
        (seed % 4 == 3, bags_first, sublevels, net_groups),
        (spec.dynamic_conditions, spec.class_defaults, spec.wide, spec.owner_chains),
        spec.packet_overhead,
    );
    sim.loss = spec.loss;
    sim.dormancy = spec.dormancy;
    sim.temporary = spec.net_temporary;
    sim.initial_only = spec.initial_only;
    sim.sub_conditions = spec.sub_conditions;
    sim.replicates_switch = spec.replicates;
    sim.remove_arrays = spec.remove_fast_arrays;
    sim.late_feedback = spec.late_feedback;
    sim.interleaved_feedback = spec.interleaved_feedback;
    sim.stale_reopens = spec.stale_reopens;
    sim.fresh_calls = spec.fresh_calls;
    sim.replayed_feedback = spec.replayed_feedback;
    sim.lying_feedback = spec.lying_feedback;
    sim.rpcs = spec.rpcs;
    if spec.dormancy {
        // A wider map: more actors out of every viewer's reach, asleep until a viewer comes by.
        sim.span = 60_000.0;
    }
    sim
}

/// The game's calls of frame `frame` of world `spec` (before its step).
///
/// With [`Spec::interleaved_feedback`], held feedback arrives at its own point among these calls
/// (`sim.arrive(k)`, points 0 to 16 here and in `Sim::play`; the rest as the step begins).
fn play_frame(sim: &mut Sim, spec: &Spec, frame: u32) {
    sim.arrive(0);
    // Sometimes the actors stay where they are, so channels time out.
    if frame % 90 < 60 {
        sim.play();
    }
    sim.arrive(12);
    sim.play_inventories();
    sim.arrive(13);
    if spec.priority_hooks {
        sim.priority_hooks(frame);
    }
    sim.arrive(14);
    if spec.net_groups {
        sim.net_groups(frame);
    }
    sim.arrive(15);
    if spec.dynamic_conditions {
        sim.dynamic_conditions(frame);
    }
    sim.arrive(16);
    if spec.rpcs {
        sim.play_rpcs();
    }
}
