//! Test harness: a server (stores + [`NetDriver`]) and clients behind simulated links.
//!
//! [`World::step`] runs one frame: the server ticks, each client's packets travel down its link,
//! the client applies what arrives, its feedback travels up and the server applies that.
//! [`World::assert_converged`] checks every client against expectations written apart from the
//! kernel ([`expect`]): for every actor and every property active for the client's role now,
//! the server's value (exactly, or within the stated tolerance of a quantised kind); for every
//! property never active for any role the client has had, the default. Ownership, physics and
//! Custom overrides go through [`World`] so it knows every client's role over time.

#![forbid(unsafe_code)]

pub mod expect;
pub mod random_world;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid, NetRole, Seq};
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{
    ClassBuilder, ClassLayout, Condition, LeafKind, Notify, PropType, PropertyDecl, StructType, VectorQuant,
};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Two classes that between them use every kind of leaf a packet can carry — scalars, a
/// quantised vector, a rotator, a bool, an enum, an object reference, a name, a packed u32 and a dynamic
/// array of structs holding references — for tests of hostile input; each declares the calls of
/// [`random_world::with_calls`].
pub fn mixed_layouts() -> Vec<Arc<ClassLayout>> {
    let item = PropType::Struct(StructType::new("Item").field("Count", PropType::U16).field("Owner", PropType::Object));
    let build = |b: ClassBuilder| Arc::new(random_world::with_calls(b).build().expect("valid layout"));
    vec![
        build(
            ClassBuilder::new("Mixed")
                .property(PropertyDecl::new("Health", PropType::U32))
                .property(PropertyDecl::new("Speed", PropType::F32))
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::Q100)))
                .property(PropertyDecl::new("Rotation", PropType::Rotator))
                .property(PropertyDecl::new("Alive", PropType::Bool))
                .property(PropertyDecl::new("Mode", PropType::Enum { bits: 3 }))
                .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::Always))
                .property(PropertyDecl::new("Label", PropType::Name))
                .property(PropertyDecl::new("Items", PropType::Array { element: Box::new(item), max_len: 8 }))
                .property(PropertyDecl::new("Kills", PropType::PackedU32)),
        ),
        build(ClassBuilder::new("Small").property(PropertyDecl::new("Byte", PropType::U8).notify(Notify::OnChanged))),
    ]
}

/// A server of [`mixed_layouts`] seeded `seed`, one client over a perfect link and seven actors
/// (four of the first class, three of the second): the world whose traffic the hostile-input
/// tests and `fuzz/` record (with [`World::call_some`] each frame).
pub fn mixed_world(seed: u64) -> World {
    let mut w = World::with_layouts(mixed_layouts(), DriverConfig::default(), seed);
    w.add_client(false, LinkConfig::perfect(0));
    for s in [0, 0, 0, 0, 1, 1, 1] {
        w.spawn(s);
    }
    w
}

/// One client: its connection on the server, its world, and its two links.
pub struct Client {
    /// Server-side connection id.
    pub conn: ConnectionId,
    /// The client's world.
    pub world: ClientWorld,
    /// Server → client.
    pub down: Link,
    /// Client → server.
    pub up: Link,
    /// Packets refused by the client (must stay 0 for a well-behaved server).
    pub errors: usize,
    /// A replay connection.
    pub replay: bool,
}

/// What the test knows of one actor's replication settings, and the roles each client has had.
#[derive(Clone, Debug, Default)]
pub struct ActorMeta {
    /// Owning client.
    pub owner: Option<usize>,
    /// The owner holds an autonomous proxy.
    pub autonomous: bool,
    /// The actor replicates physics.
    pub physics: bool,
    /// Custom-condition parents switched off.
    pub custom_off: HashSet<usize>,
    /// Dynamic parents' own conditions for this actor (`set_dynamic_condition`; absent: the
    /// class's, active everywhere).
    pub dynamic: HashMap<usize, Condition>,
    /// Per client, every role it has had (the first one is the role it opened with).
    pub roles: Vec<Vec<expect::Role>>,
}

impl ActorMeta {
    fn role(&self, client: usize, replay: bool) -> expect::Role {
        let owner = self.owner == Some(client);
        expect::Role { owner, autonomous: owner && self.autonomous, replay, physics: self.physics }
    }
}

/// A server with every sample class and some clients.
pub struct World {
    /// Stores in class-id order.
    pub stores: Vec<ClassStore>,
    /// The driver.
    pub driver: NetDriver,
    /// Class ids, in store order.
    pub classes: Vec<ClassId>,
    /// Clients.
    pub clients: Vec<Client>,
    /// Live actors: (store index, id).
    pub actors: Vec<(usize, ActorId)>,
    /// Seeded randomness for mutations.
    pub rng: ChaCha8Rng,
    /// Replication settings and role history per live actor.
    pub meta: HashMap<(usize, ActorId), ActorMeta>,
    /// Connections the driver ended (a reliable-call overflow): their clients are stepped no
    /// more.
    pub failed: Vec<shadowrep::net::FailedConnection>,
}

impl World {
    /// A server with the named sample classes and `clients` clients on links made by `link(i)`.
    pub fn new(
        class_names: &[&str],
        clients: usize,
        cfg: DriverConfig,
        link: impl Fn(usize) -> LinkConfig,
        seed: u64,
    ) -> Self {
        let layouts =
            class_names.iter().map(|n| shadowrep_layouts::layout_by_name(n).expect("sample class").clone()).collect();
        let mut w = Self::with_layouts(layouts, cfg, seed);
        for i in 0..clients {
            w.add_client(false, link(i));
        }
        w
    }

    /// A server with these layouts and no clients.
    pub fn with_layouts(layouts: Vec<Arc<ClassLayout>>, cfg: DriverConfig, seed: u64) -> Self {
        let mut driver = NetDriver::new(cfg).expect("valid config");
        let mut stores: Vec<ClassStore> = layouts.into_iter().map(ClassStore::new).collect();
        let classes = stores.iter_mut().map(|s| driver.register_class(s).expect("registers")).collect();
        Self {
            stores,
            driver,
            classes,
            clients: Vec::new(),
            actors: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            meta: HashMap::new(),
            failed: Vec::new(),
        }
    }

    /// Adds a client (a replay connection if `replay`); returns its index.
    pub fn add_client(&mut self, replay: bool, link: LinkConfig) -> usize {
        self.add_client_at(replay, link, Seq(1))
    }

    /// Adds a client whose connection's first packet has sequence number `first`.
    pub fn add_client_at(&mut self, replay: bool, link: LinkConfig, first: Seq) -> usize {
        let layouts: Vec<Arc<ClassLayout>> = self.stores.iter().map(|s| s.layout().clone()).collect();
        let checksums = self.driver.checksums();
        self.clients.push(Client {
            conn: self.driver.add_connection_at(replay, first),
            world: ClientWorld::new(&layouts, &checksums).expect("same layouts").with_first_seq(first),
            down: Link::new(link),
            up: Link::new(LinkConfig { seed: link.seed.wrapping_add(1000), ..link }),
            errors: 0,
            replay,
        });
        self.clients.len() - 1
    }

    /// Spawns an actor of store `s` and returns its id.
    pub fn spawn(&mut self, s: usize) -> ActorId {
        let id = self.stores[s].spawn();
        self.actors.push((s, id));
        self.meta.insert((s, id), ActorMeta::default());
        id
    }

    /// Gives an actor to a client (`None`: nobody), as an autonomous proxy or not.
    pub fn set_owner(&mut self, s: usize, id: ActorId, owner: Option<usize>, autonomous: bool) {
        let conn = owner.map(|o| self.clients[o].conn);
        self.driver.set_owner(self.classes[s], &self.stores[s], id, conn, autonomous).expect("set_owner");
        let m = self.meta.entry((s, id)).or_default();
        m.owner = owner;
        m.autonomous = autonomous;
    }

    /// Switches an actor's physics replication.
    pub fn set_physics(&mut self, s: usize, id: ActorId, physics: bool) {
        self.driver.set_physics(self.classes[s], &self.stores[s], id, physics).expect("set_physics");
        self.meta.entry((s, id)).or_default().physics = physics;
    }

    /// Gives an actor its own condition for a Dynamic parent (`Condition::Dynamic`: the class's
    /// again).
    pub fn set_dynamic(&mut self, s: usize, id: ActorId, parent: usize, condition: Condition) {
        self.driver
            .set_dynamic_condition(self.classes[s], &self.stores[s], id, parent, condition)
            .expect("set_dynamic_condition");
        let m = self.meta.entry((s, id)).or_default();
        if condition == Condition::Dynamic {
            m.dynamic.remove(&parent);
        } else {
            m.dynamic.insert(parent, condition);
        }
    }

    /// Switches a Custom-condition parent of an actor on or off.
    pub fn set_custom(&mut self, s: usize, id: ActorId, parent: usize, active: bool) {
        self.driver.set_custom_active(self.classes[s], &self.stores[s], id, parent, active).expect("set_custom");
        let m = self.meta.entry((s, id)).or_default();
        if active {
            m.custom_off.remove(&parent);
        } else {
            m.custom_off.insert(parent);
        }
    }

    /// Notes every client's current role over every live actor.
    fn record_roles(&mut self) {
        let replays: Vec<bool> = self.clients.iter().map(|c| c.replay).collect();
        for m in self.meta.values_mut() {
            m.roles.resize(replays.len(), Vec::new());
            for (ci, &replay) in replays.iter().enumerate() {
                let role = m.role(ci, replay);
                if m.roles[ci].last() != Some(&role) {
                    m.roles[ci].push(role);
                }
            }
        }
    }

    /// The GUID of an actor (assigned now if no tick has seen it yet).
    pub fn guid(&mut self, s: usize, id: ActorId) -> NetGuid {
        self.driver.assign_guid(self.classes[s], &self.stores[s], id).expect("live actor")
    }

    /// Takes the connections the driver ended in its last tick into [`Self::failed`].
    pub fn note_failures(&mut self) {
        self.failed.extend(self.driver.take_failed_connections());
    }

    /// Whether the driver ended connection `conn` (see [`Self::failed`]): its client is stepped
    /// no more.
    pub fn has_failed(&self, conn: ConnectionId) -> bool {
        self.failed.iter().any(|f| f.conn == conn)
    }

    /// One frame: tick, deliver, apply, feed back.
    pub fn step(&mut self) {
        self.record_roles();
        let mut stores: Vec<&mut ClassStore> = self.stores.iter_mut().collect();
        self.driver.tick(&mut stores).expect("tick");
        self.note_failures();
        for i in 0..self.clients.len() {
            if self.has_failed(self.clients[i].conn) {
                continue;
            }
            let c = &mut self.clients[i];
            for p in self.driver.take_packets(c.conn).expect("connection") {
                c.down.send(p);
            }
            for p in c.down.tick() {
                if let Err(e) = c.world.receive(&p) {
                    eprintln!("client refused a packet: {e}");
                    c.errors += 1;
                }
                // Acks ride on the client's own traffic: one feedback per packet received.
                c.up.send(c.world.feedback());
            }
            c.up.send(c.world.feedback());
            for f in c.up.tick() {
                self.driver.receive_feedback(c.conn, &f).expect("feedback decodes");
            }
        }
    }

    /// Sets every client's links to `cfg` (same seeds).
    pub fn set_links(&mut self, cfg: LinkConfig) {
        for c in &mut self.clients {
            c.down.set_config(cfg);
            c.up.set_config(cfg);
        }
    }

    /// A random value for a property; object references point at live actors (or null).
    pub fn random_value(&mut self, ty: &PropType) -> Value {
        let mut guids = Vec::new();
        for _ in 0..2 {
            if !self.actors.is_empty() {
                let (s, id) = self.actors[self.rng.random_range(0..self.actors.len())];
                guids.push(self.guid(s, id).0);
            }
        }
        shadowrep_benches::workload::random_value(ty, &mut self.rng, &guids)
    }

    /// Changes `fraction` of the actors: each gets one random property a new random value.
    pub fn mutate(&mut self, fraction: f64) {
        self.mutate_where(fraction, |_| true);
    }

    /// Like [`Self::mutate`], choosing only among parents whose condition passes `allowed`.
    pub fn mutate_where(&mut self, fraction: f64, allowed: impl Fn(Condition) -> bool) {
        let n = ((self.actors.len() as f64) * fraction).ceil() as usize;
        for _ in 0..n {
            let (s, id) = self.actors[self.rng.random_range(0..self.actors.len())];
            let layout = self.stores[s].layout().clone();
            let choices: Vec<usize> =
                (0..layout.parents.len()).filter(|&p| allowed(layout.parents[p].condition)).collect();
            if choices.is_empty() {
                continue;
            }
            let parent = choices[self.rng.random_range(0..choices.len())];
            let v = self.random_value(&layout.parents[parent].ty);
            self.stores[s].set(id, parent, &v).expect("valid value");
            let _ = self.stores[s].mark_dirty(id, parent);
        }
    }

    /// Calls remote procedures of the first three live actors, each of [`mixed_layouts`]' calls
    /// in turn from `frame`, numbered `frame`; and client 0 calls both Server calls on the first
    /// two actors it has (the first its own from frame 0 on: the second is refused) — the
    /// recorded worlds' calls.
    pub fn call_some(&mut self, frame: usize) {
        let args = [Value::U32(frame as u32)];
        if frame == 0 && !self.clients.is_empty() {
            let (s, first) = self.actors[0];
            self.set_owner(s, first, Some(0), false);
        }
        for (i, &(s, id)) in self.actors.clone().iter().take(3).enumerate() {
            let name = random_world::CALLS[(frame + i) % random_world::CALLS.len()];
            self.driver.call_rpc(self.classes[s], &self.stores[s], id, name, &args).expect("a valid call");
        }
        let targets: Vec<NetGuid> = self.actors.clone().iter().take(2).map(|&(s, id)| self.guid(s, id)).collect();
        if let Some(c) = self.clients.first_mut() {
            for (g, name) in targets.into_iter().zip(random_world::SERVER_CALLS.iter().cycle().skip(frame % 2)) {
                if c.world.has(g) {
                    c.world.call_server_rpc(g, name, &args).expect("a valid call");
                }
            }
        }
    }

    /// Despawns the `i`-th live actor.
    pub fn despawn(&mut self, i: usize) {
        let (s, id) = self.actors.swap_remove(i);
        self.stores[s].despawn(id).expect("live");
        self.meta.remove(&(s, id));
    }

    /// Asserts every client matches the server (see the module docs): for every live actor and
    /// every parent, by the condition table of [`expect`] and the client's role history:
    /// - active for the client's role now (InitialOnly: active for the role it opened with) →
    ///   the server's value, as [`expect::leaf_matches`] judges a trip over the wire;
    /// - never active for any role it has had → the default;
    /// - otherwise (active once, not now) → not checked: the client keeps the last value it got.
    ///
    /// InitialOnly and InitialOrOwner values must not change after the actor's first tick (the
    /// client keeps the value it opened with), and roles must not change before the open is
    /// acknowledged. A reference to an actor that no longer exists is dead on both sides: the
    /// client holds null (it never saw the actor) or the GUID of an actor it has destroyed.
    pub fn assert_converged(&mut self) {
        self.record_roles();
        let actors = self.actors.clone();
        let live: HashSet<u64> = actors.iter().map(|&(s, id)| self.guid(s, id).0).collect();
        for (ci, c) in self.clients.iter().enumerate() {
            assert_eq!(c.errors, 0, "client {ci} refused packets");
        }
        let mut defaults: HashMap<usize, (ClassStore, ActorId)> = HashMap::new();
        for (s, id) in actors {
            let guid = self.guid(s, id);
            let layout = self.stores[s].layout().clone();
            let (fresh, fresh_id) = defaults.entry(s).or_insert_with(|| {
                let mut st = ClassStore::new(layout.clone());
                let id = st.spawn();
                (st, id)
            });
            let meta = self.meta.get(&(s, id)).cloned().unwrap_or_default();
            for (ci, c) in self.clients.iter().enumerate() {
                assert!(c.world.has(guid), "client {ci} lacks actor {guid}");
                let roles = meta.roles.get(ci).cloned().unwrap_or_default();
                let now = meta.role(ci, c.replay);
                // The role the client holds: autonomous where the game made this client's
                // connection the owner of an autonomous actor, simulated everywhere else.
                let role = if now.autonomous { NetRole::AutonomousProxy } else { NetRole::SimulatedProxy };
                assert_eq!(c.world.role(guid), Some(role), "client {ci} ({now:?}), actor {guid}: role");
                for (pi, parent) in layout.parents.iter().enumerate() {
                    let cond = parent.condition;
                    let custom = matches!(cond, Condition::Custom | Condition::Dynamic);
                    let initial = matches!(cond, Condition::InitialOnly | Condition::InitialOrOwner);
                    let active_now = if custom {
                        // A Dynamic parent's own condition (its history is not kept: a value it
                        // had while off is not checked, as a Custom one's).
                        let own = meta.dynamic.get(&pi).is_none_or(|&d| expect::expected_active(d, now, false));
                        !meta.custom_off.contains(&pi) && own
                    } else {
                        expect::expected_active(cond, now, false)
                            || (initial && roles.first().is_some_and(|&r| expect::expected_active(cond, r, true)))
                    };
                    let ever = active_now
                        || custom
                        || roles.iter().enumerate().any(|(k, &r)| expect::expected_active(cond, r, k == 0));
                    let (want, what): (&ClassStore, ActorId) = if active_now {
                        (&self.stores[s], id)
                    } else if !ever {
                        (fresh, *fresh_id)
                    } else {
                        continue;
                    };
                    let ctx = |leaf: &str| format!("client {ci} ({now:?}), actor {guid}, {cond:?} {leaf}");
                    for li in parent.leaves.clone() {
                        let leaf = &layout.leaves[li];
                        match leaf.array {
                            None => {
                                let n = leaf.kind.byte_size();
                                let (mut server, mut client) = (vec![0u8; n], vec![0u8; n]);
                                assert!(
                                    want.leaf_bytes(what.index, li, &mut server),
                                    "{}: on the server",
                                    ctx(&leaf.path)
                                );
                                assert!(
                                    c.world.leaf_bytes(guid, li, &mut client),
                                    "{}: on the client",
                                    ctx(&leaf.path)
                                );
                                // Equal bytes: the client holds the server's value as it is — a class
                                // default never sent (a quantised one off the wire's grid) included.
                                if server != client && !dead_reference(leaf.kind, &server, &client, &live) {
                                    if let Err(e) = expect::leaf_matches(leaf.kind, &server, &client) {
                                        panic!("{}: {e}", ctx(&leaf.path));
                                    }
                                }
                            }
                            Some(a) => {
                                let array = &layout.arrays[a];
                                let server = want.array_bytes(what.index, a);
                                let client = c.world.array_bytes(guid, a).unwrap_or(&[]);
                                assert_eq!(server.len(), client.len(), "{}: array length", ctx(&leaf.path));
                                for (se, ce) in server.chunks(array.stride).zip(client.chunks(array.stride)) {
                                    for el in &array.elements {
                                        let r = el.offset..el.offset + el.kind.byte_size();
                                        if dead_reference(el.kind, &se[r.clone()], &ce[r.clone()], &live) {
                                            continue;
                                        }
                                        if let Err(e) = expect::leaf_matches(el.kind, &se[r.clone()], &ce[r]) {
                                            panic!("{}: {e}", ctx(&leaf.path));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// An object reference whose target is gone on the server: the client holds null or the GUID of
/// an actor that is gone too.
fn dead_reference(kind: LeafKind, server: &[u8], client: &[u8], live: &HashSet<u64>) -> bool {
    if kind != LeafKind::Object {
        return false;
    }
    let guid = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let (s, c) = (guid(server), guid(client));
    s != 0 && !live.contains(&s) && (c == 0 || !live.contains(&c))
}

/// Runs `f` with at most `budget` more bytes available from `allocator` (the test binary's
/// global allocator; an allocation beyond it aborts the binary). A panic in `f` lifts the limit
/// before it goes on. A binary that uses it holds one test, so the cap sees nothing else.
pub fn capped<T>(allocator: &cap::Cap<std::alloc::System>, budget: usize, f: impl FnOnce() -> T) -> T {
    allocator.set_limit(allocator.allocated() + budget).expect("limit above what is allocated");
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    allocator.set_limit(usize::MAX).expect("lift the limit");
    out.unwrap_or_else(|p| std::panic::resume_unwind(p))
}
