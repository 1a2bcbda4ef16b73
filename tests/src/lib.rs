//! Test harness: a server (stores + [`NetDriver`]) and clients behind simulated links.
//!
//! [`World::step`] runs one frame: the server ticks, each client's packets travel down its link,
//! the client applies what arrives, its feedback travels up and the server applies that.
//! [`World::assert_converged`] checks every client holds, for every actor and every property
//! active for it, what the server holds (as the wire quantises it).

#![forbid(unsafe_code)]

pub mod expect;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::ClientWorld;
use shadowrep::ids::{ClassId, ConnectionId, NetGuid, Seq};
use shadowrep::link::{Link, LinkConfig};
use shadowrep::net::condition::{condition_active, flags};
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{ClassLayout, Condition, LeafKind, PropType};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::quantize_leaf;
use std::sync::Arc;

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
        Self { stores, driver, classes, clients: Vec::new(), actors: Vec::new(), rng: ChaCha8Rng::seed_from_u64(seed) }
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
        });
        self.clients.len() - 1
    }

    /// Spawns an actor of store `s` and returns its id.
    pub fn spawn(&mut self, s: usize) -> ActorId {
        let id = self.stores[s].spawn();
        self.actors.push((s, id));
        id
    }

    /// The GUID of an actor (assigned now if no tick has seen it yet).
    pub fn guid(&mut self, s: usize, id: ActorId) -> NetGuid {
        self.driver.assign_guid(self.classes[s], &self.stores[s], id).expect("live actor")
    }

    /// One frame: tick, deliver, apply, feed back.
    pub fn step(&mut self) {
        let mut stores: Vec<&mut ClassStore> = self.stores.iter_mut().collect();
        self.driver.tick(&mut stores).expect("tick");
        for c in &mut self.clients {
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
        let n = ((self.actors.len() as f64) * fraction).ceil() as usize;
        for _ in 0..n {
            let (s, id) = self.actors[self.rng.random_range(0..self.actors.len())];
            let layout = self.stores[s].layout().clone();
            let parent = self.rng.random_range(0..layout.parents.len());
            let v = self.random_value(&layout.parents[parent].ty);
            self.stores[s].set(id, parent, &v).expect("valid value");
            let _ = self.stores[s].mark_dirty(id, parent);
        }
    }

    /// Despawns the `i`-th live actor.
    pub fn despawn(&mut self, i: usize) {
        let (s, id) = self.actors.swap_remove(i);
        self.stores[s].despawn(id).expect("live");
    }

    /// Asserts every client matches the server for every property active for it (InitialOnly
    /// properties excepted: they are checked by their own test).
    ///
    /// A reference to an actor that no longer exists is dead on both sides: the client holds null
    /// (it never saw the actor) or the GUID of an actor it has destroyed.
    pub fn assert_converged(&mut self) {
        let actors = self.actors.clone();
        let live: std::collections::HashSet<u64> = actors.iter().map(|&(s, id)| self.guid(s, id).0).collect();
        let same = |kind: LeafKind, server: &[u8], client: &[u8]| -> bool {
            let q = quantize_leaf(kind, server);
            if kind == LeafKind::Object {
                let (s, c) = (
                    u64::from_le_bytes(q[..8].try_into().expect("8 bytes")),
                    u64::from_le_bytes(client[..8].try_into().expect("8 bytes")),
                );
                if !live.contains(&s) {
                    return c == 0 || !live.contains(&c);
                }
            }
            q == client
        };
        for (ci, c) in self.clients.iter().enumerate() {
            assert_eq!(c.errors, 0, "client {ci} refused packets");
        }
        for (s, id) in actors {
            let guid = self.guid(s, id);
            let layout = self.stores[s].layout().clone();
            for (ci, c) in self.clients.iter().enumerate() {
                assert!(c.world.has(guid), "client {ci} lacks actor {guid}");
                // Sample tests own nothing: every client is a simulated, non-owner, non-replay viewer.
                let f = flags::SIMULATED;
                for (li, leaf) in layout.leaves.iter().enumerate() {
                    let parent = &layout.parents[leaf.parent];
                    if parent.condition == Condition::InitialOnly || !condition_active(parent.condition, f) {
                        continue;
                    }
                    match leaf.array {
                        None => {
                            let n = leaf.kind.byte_size();
                            let mut server = vec![0u8; n];
                            self.stores[s].leaf_bytes(id.index, li, &mut server);
                            let mut client = vec![0u8; n];
                            c.world.leaf_bytes(guid, li, &mut client);
                            assert!(
                                same(leaf.kind, &server, &client),
                                "client {ci}, actor {guid}, leaf {}: server {server:?}, client {client:?}",
                                leaf.path
                            );
                        }
                        Some(a) => {
                            let array = &layout.arrays[a];
                            let server = self.stores[s].array_bytes(id.index, a);
                            let client = c.world.array_bytes(guid, a).unwrap_or(&[]);
                            assert_eq!(server.len(), client.len(), "client {ci}, actor {guid}, array {}", leaf.path);
                            for (se, ce) in server.chunks(array.stride).zip(client.chunks(array.stride)) {
                                for el in &array.elements {
                                    let r = el.offset..el.offset + el.kind.byte_size();
                                    assert!(
                                        same(el.kind, &se[r.clone()], &ce[r]),
                                        "client {ci}, actor {guid}, array {}",
                                        leaf.path
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
