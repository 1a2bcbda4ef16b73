//! The loss soak: every condition, every role, ownership and physics changing mid-run, Custom
//! overrides, spawns and despawns with slot reuse, array writes — under 30 % loss with
//! duplication and reordering, then clean frames; judged by the independent expectations of
//! `shadowrep_tests::expect`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl, VectorQuant};
use shadowrep::store::ActorId;
use shadowrep::value::Value;
use shadowrep_tests::World;
use std::sync::Arc;

/// One `u32` parent per condition, and an array, a vector and a rotator under conditions too.
///
/// `wide`: each condition's parent a struct of four leaves instead, and twenty one-byte parents
/// and an initial-only array of up to 960 bytes after the rest — 88 leaves, more than a leaf
/// mask's 64 bits (`schema::groups`), under the same parent indices.
fn every_condition(wide: bool) -> Arc<ClassLayout> {
    let mut b = ClassBuilder::new(if wide { "WideEveryCondition" } else { "EveryCondition" });
    let four = shadowrep::schema::StructType::new("Four")
        .field("A", PropType::U32)
        .field("B", PropType::U16)
        .field("C", PropType::Bool)
        .field("D", PropType::F32);
    for c in Condition::ALL {
        let ty = if wide { PropType::Struct(four.clone()) } else { PropType::U32 };
        b = b.property(PropertyDecl::new(format!("{c:?}"), ty).condition(c));
    }
    let array = PropType::Array { element: Box::new(PropType::U16), max_len: 40 };
    b = b
        .property(PropertyDecl::new("OwnedItems", array).condition(Condition::OwnerOnly))
        .property(
            PropertyDecl::new("Location", PropType::Vector(VectorQuant::Q100)).condition(Condition::SimulatedOrPhysics),
        )
        .property(PropertyDecl::new("Aim", PropType::Rotator).condition(Condition::SkipOwner));
    if wide {
        b = (0..20).fold(b, |b, i| b.property(PropertyDecl::new(format!("Ballast{i}"), PropType::U8)));
        // Up to 960 bytes of initial values: longer than a small packet.
        let long = PropType::Array { element: Box::new(PropType::U64), max_len: 120 };
        b = b.property(PropertyDecl::new("InitialLog", long).condition(Condition::InitialOnly));
    }
    Arc::new(shadowrep_tests::random_world::with_calls(b).build().expect("valid layout"))
}

fn is_initial(c: Condition) -> bool {
    matches!(c, Condition::InitialOnly | Condition::InitialOrOwner)
}

const CLIENTS: usize = 4;

struct Soak {
    w: World,
    rng: ChaCha8Rng,
    /// Frame each live actor was spawned.
    born: Vec<((usize, ActorId), usize)>,
}

impl Soak {
    fn new(seed: u64, wide: bool, mtu: usize) -> Self {
        let layouts = vec![
            every_condition(wide),
            shadowrep_layouts::layout_by_name("ShooterCharacter").unwrap().clone(),
            shadowrep_layouts::layout_by_name("LootContainer").unwrap().clone(),
        ];
        let mut w = World::with_layouts(layouts, DriverConfig { mtu, ..DriverConfig::default() }, seed);
        for i in 0..CLIENTS {
            w.add_client(false, LinkConfig::lossy(0.3, seed * 100 + i as u64));
        }
        w.add_client(true, LinkConfig::lossy(0.3, seed * 100 + 99));
        Self { w, rng: ChaCha8Rng::seed_from_u64(seed ^ 0x50a6), born: Vec::new() }
    }

    /// Spawns an actor with its initial-only values and a random role set-up.
    fn spawn(&mut self, s: usize, frame: usize) {
        let id = self.w.spawn(s);
        let layout = self.w.stores[s].layout().clone();
        for (p, parent) in layout.parents.iter().enumerate() {
            if is_initial(parent.condition) || self.rng.random_bool(0.5) {
                let v = self.w.random_value(&parent.ty);
                self.w.stores[s].set(id, p, &v).expect("valid value");
            }
        }
        if let Some(p) = layout.parent_index("InitialLog") {
            let n = self.rng.random_range(40..120u64);
            let log = Value::Array((0..n).map(|i| Value::U64(i * 0x9e37_79b9 + frame as u64)).collect());
            self.w.stores[s].set(id, p, &log).expect("valid value");
        }
        self.roles(s, id);
        self.born.push(((s, id), frame));
    }

    fn roles(&mut self, s: usize, id: ActorId) {
        let owner = self.rng.random_bool(0.7).then(|| self.rng.random_range(0..CLIENTS));
        let autonomous = self.rng.random_bool(0.5);
        self.w.set_owner(s, id, owner, autonomous);
        let physics = self.rng.random_bool(0.3);
        self.w.set_physics(s, id, physics);
        if s == 0 {
            for p in [8, 14] {
                let on = self.rng.random_bool(0.6);
                self.w.set_custom(s, id, p, on);
            }
            // The Dynamic parent's own condition for this actor (UE's SetDynamicCondition): any
            // but the initial-only ones, or the class's rule again.
            let own = [
                Condition::Dynamic,
                Condition::OwnerOnly,
                Condition::SkipOwner,
                Condition::SimulatedOnly,
                Condition::AutonomousOnly,
                Condition::SimulatedOrPhysics,
                Condition::ReplayOrOwner,
                Condition::ReplayOnly,
                Condition::SkipReplay,
                Condition::Never,
            ];
            let c = own[self.rng.random_range(0..own.len())];
            self.w.set_dynamic(s, id, Condition::Dynamic as usize, c);
        }
    }

    fn frame(&mut self, frame: usize) {
        self.w.mutate_where(0.3, |c| !is_initial(c));
        // Array writes on actors of the first class.
        for _ in 0..3 {
            let live: Vec<ActorId> = self.born.iter().filter(|b| b.0 .0 == 0).map(|b| b.0 .1).collect();
            let id = live[self.rng.random_range(0..live.len())];
            let n = self.rng.random_range(0..40u16);
            let v = Value::Array((0..n).map(|i| Value::U16(i.wrapping_mul(frame as u16))).collect());
            self.w.stores[0].set(id, 16, &v).expect("array");
        }
        if frame % 10 == 5 {
            // Roles change only for actors whose opens have long been acknowledged.
            let old: Vec<(usize, ActorId)> = self.born.iter().filter(|b| frame - b.1 > 40).map(|b| b.0).collect();
            for _ in 0..old.len().min(4) {
                let (s, id) = old[self.rng.random_range(0..old.len())];
                self.roles(s, id);
            }
        }
        if frame % 15 == 7 {
            for _ in 0..2 {
                let i = self.rng.random_range(0..self.born.len());
                let (key, _) = self.born.swap_remove(i);
                let at = self.w.actors.iter().position(|&a| a == key).expect("live actor");
                self.w.despawn(at);
            }
            for s in [0, self.rng.random_range(0..3)] {
                self.spawn(s, frame);
            }
        }
        self.w.step();
    }
}

#[test]
fn every_condition_and_role_converges_after_a_lossy_soak() {
    soak(1..=5, false, DriverConfig::default().mtu);
}

/// The same with the first class past 64 leaves: leaf groups sent, lost and resent whole, each
/// condition's struct a group of its own, Custom and Dynamic parents switched per actor.
#[test]
fn a_class_of_more_than_64_leaves_converges_after_a_lossy_soak() {
    let wide = every_condition(true);
    assert!(wide.leaves.len() > 64 && !wide.groups.is_single() && wide.groups.fits(), "{} leaves", wide.leaves.len());
    soak(1..=3, true, DriverConfig::default().mtu);
}

/// The same at the smallest MTU (512 bytes): the wide class's opens and its arrays' updates
/// split between packets, whose parts are lost, delivered and resent in every order.
#[test]
fn a_wide_class_at_the_smallest_mtu_converges_after_a_lossy_soak() {
    soak(1..=3, true, 512);
}

fn soak(seeds: std::ops::RangeInclusive<u64>, wide: bool, mtu: usize) {
    for seed in seeds {
        let mut soak = Soak::new(seed, wide, mtu);
        for (s, n) in [(0, 40), (1, 20), (2, 15)] {
            for _ in 0..n {
                soak.spawn(s, 0);
            }
        }
        for frame in 1..=150 {
            soak.frame(frame);
        }
        let reused = soak.born.iter().filter(|b| b.1 > 0).count();
        assert!(reused >= 10, "spawns during the run: {reused}");
        soak.w.set_links(LinkConfig::perfect(1));
        for _ in 0..40 {
            soak.w.step();
        }
        soak.w.assert_converged();
        let lost: u64 =
            soak.w.clients.iter().map(|c| soak.w.driver.connection_stats(c.conn).unwrap().packets_lost).sum();
        assert!(lost > 100, "seed {seed}: the soak lost only {lost} packets");
    }
}

/// Remote procedure calls through the soak: five actors of the first class never despawned, their
/// owners changing, called every frame with every kind of call while the rest of the soak runs
/// (30 % loss, duplication, reordering): after the clean frames every client has had every
/// reliable call that reached it — a multicast every client, a client call the actor's owner
/// when called — once each, each actor's in call order; unreliable calls at most once, in order.
#[test]
fn remote_procedure_calls_arrive_once_through_a_lossy_soak() {
    use shadowrep::client::RpcEvent;
    use shadowrep_tests::random_world::CALLS;
    use std::collections::BTreeMap;
    for seed in 1..=3u64 {
        let mut soak = Soak::new(seed, false, DriverConfig::default().mtu);
        for (s, n) in [(0, 30), (1, 10), (2, 10)] {
            for _ in 0..n {
                soak.spawn(s, 0);
            }
        }
        let callees: Vec<ActorId> = (0..5).map(|_| soak.w.spawn(0)).collect();
        let mut owners: Vec<Option<usize>> = vec![None; callees.len()];
        let clients = soak.w.clients.len();
        // Per client: the reliable calls that must arrive, by actor, in call order.
        let mut want: Vec<BTreeMap<usize, Vec<u32>>> = vec![BTreeMap::new(); clients];
        let mut got: Vec<Vec<RpcEvent>> = vec![Vec::new(); clients];
        let mut n = 0u32;
        for frame in 1..=150 {
            if frame % 20 == 1 {
                for (i, &id) in callees.iter().enumerate() {
                    owners[i] = soak.rng.random_bool(0.7).then(|| soak.rng.random_range(0..CLIENTS));
                    soak.w.set_owner(0, id, owners[i], true);
                }
            }
            if frame > 2 {
                for _ in 0..soak.rng.random_range(1..6) {
                    let i = soak.rng.random_range(0..callees.len());
                    let name = CALLS[soak.rng.random_range(0..CALLS.len())];
                    soak.w
                        .driver
                        .call_rpc(soak.w.classes[0], &soak.w.stores[0], callees[i], name, &[Value::U32(n)])
                        .unwrap();
                    let reach: Vec<usize> = match name {
                        "Shout" => (0..clients).collect(),
                        "Whisper" => owners[i].into_iter().collect(),
                        _ => Vec::new(),
                    };
                    for c in reach {
                        want[c].entry(i).or_default().push(n);
                    }
                    n += 1;
                }
            }
            soak.frame(frame);
            for (c, g) in got.iter_mut().enumerate() {
                g.extend(soak.w.clients[c].world.take_rpcs());
            }
        }
        soak.w.set_links(LinkConfig::perfect(1));
        for _ in 0..40 {
            soak.w.step();
        }
        let wanted: usize = want.iter().flat_map(|w| w.values()).map(Vec::len).sum();
        assert!(wanted > 300, "seed {seed}: {wanted} reliable calls to deliver");
        let guids: Vec<_> = callees.iter().map(|&id| soak.w.guid(0, id)).collect();
        for (c, g) in got.iter_mut().enumerate() {
            g.extend(soak.w.clients[c].world.take_rpcs());
            for (i, &guid) in guids.iter().enumerate() {
                let of = |reliable: bool| -> Vec<u32> {
                    g.iter()
                        .filter(|e| e.guid == guid && e.reliable == reliable)
                        .map(|e| match e.args[..] {
                            [Value::U32(n)] => n,
                            _ => panic!("one u32"),
                        })
                        .collect()
                };
                let reliable = of(true);
                assert_eq!(&reliable, want[c].get(&i).unwrap_or(&Vec::new()), "seed {seed} client {c} actor {i}");
                let unreliable = of(false);
                assert!(unreliable.windows(2).all(|p| p[0] < p[1]), "seed {seed} client {c} actor {i}: {unreliable:?}");
            }
            let stats = soak.w.driver.connection_stats(soak.w.clients[c].conn).unwrap();
            assert!(stats.rpcs_resent > 0, "seed {seed} client {c}: no call was lost");
        }
        soak.w.assert_converged();
    }
}
