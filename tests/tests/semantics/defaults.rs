//! Class defaults (UE's class default object): a property's declared default is what a new
//! actor holds, on the server and on every client, and an open sends only what differs from it —
//! on the per-slot path and at the actor level, over a lossy link, for late joiners and reopens.

use shadowrep::client::ClientWorld;
use shadowrep::link::LinkConfig;
use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, Viewer};
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, LayoutError, PropType, PropertyDecl, StructType};
use shadowrep::store::ClassStore;
use shadowrep::value::{ObjectRef, Value};
use std::sync::Arc;

/// A pawn whose properties mostly have defaults (`with`) or none: the same shape either way.
fn pawn(with: bool) -> Arc<ClassLayout> {
    let d = |decl: PropertyDecl, v: Value| if with { decl.default_value(v) } else { decl };
    let stats = StructType::new("Stats").field("Speed", PropType::F32).field("Jump", PropType::U8);
    Arc::new(
        ClassBuilder::new("Pawn")
            .property(d(PropertyDecl::new("Health", PropType::U16), Value::U16(100)))
            .property(d(PropertyDecl::new("Alive", PropType::Bool), Value::Bool(true)))
            .property(d(
                PropertyDecl::new("Stats", PropType::Struct(stats)),
                Value::Struct(vec![Value::F32(600.0), Value::U8(3)]),
            ))
            .property(d(PropertyDecl::new("Ammo", PropType::U8).dim(3), Value::U8(30)))
            .property(d(PropertyDecl::new("Team", PropType::U8).condition(Condition::InitialOnly), Value::U8(2)))
            .property(PropertyDecl::new("Score", PropType::U32))
            .property(d(
                PropertyDecl::new("Slots", PropType::array(PropType::U16)),
                Value::Array(vec![Value::U16(5), Value::U16(6), Value::U16(7)]),
            ))
            .build()
            .unwrap(),
    )
}

/// The values the pawn's defaults give, by parent.
fn defaults() -> Vec<Value> {
    vec![
        Value::U16(100),
        Value::Bool(true),
        Value::Struct(vec![Value::F32(600.0), Value::U8(3)]),
        Value::U8(30),
        Value::U8(30),
        Value::U8(30),
        Value::U8(2),
        Value::U32(0),
        Value::Array(vec![Value::U16(5), Value::U16(6), Value::U16(7)]),
    ]
}

/// The pawn's dynamic array (parent 8).
const SLOTS: usize = 8;

/// A viewer at the origin looking along +X (every actor of these tests is relevant to it).
fn origin() -> Viewer {
    Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }
}

struct Server {
    driver: NetDriver,
    store: ClassStore,
    class: shadowrep::ids::ClassId,
    layout: Arc<ClassLayout>,
    clients: Vec<(shadowrep::ids::ConnectionId, ClientWorld)>,
}

impl Server {
    fn new(layout: Arc<ClassLayout>, level: bool) -> Server {
        let cfg = DriverConfig { actor_level: level.then(ActorLevelConfig::default), ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).unwrap();
        let mut store = ClassStore::new(layout.clone());
        let class = driver.register_class(&mut store).unwrap();
        Server { driver, store, class, layout, clients: Vec::new() }
    }

    fn join(&mut self) -> usize {
        let conn = self.driver.add_connection(false);
        // (Viewers are the actor level's: the per-slot driver refuses them, and needs none.)
        self.driver.set_viewers(conn, &[origin()]).ok();
        let world = ClientWorld::new(std::slice::from_ref(&self.layout), &self.driver.checksums()).unwrap();
        self.clients.push((conn, world));
        self.clients.len() - 1
    }

    /// One frame; a packet is lost with probability `loss`. Bytes sent this frame.
    fn step(&mut self, rng: &mut impl rand::Rng, loss: f64) -> u64 {
        self.driver.tick(&mut [&mut self.store]).unwrap();
        let mut bytes = 0;
        for (conn, world) in &mut self.clients {
            for p in self.driver.take_packets(*conn).unwrap() {
                bytes += p.len() as u64;
                if !rng.random_bool(loss) {
                    world.receive(&p).unwrap();
                }
            }
            self.driver.receive_feedback(*conn, &world.feedback()).unwrap();
        }
        bytes
    }
}

fn no_loss() -> rand_chacha::ChaCha8Rng {
    rand::SeedableRng::seed_from_u64(0)
}

#[test]
fn a_new_actor_holds_its_class_defaults_on_the_server_and_on_its_clients() {
    for level in [false, true] {
        let mut s = Server::new(pawn(true), level);
        s.join();
        let id = s.store.spawn();
        for (p, v) in defaults().iter().enumerate() {
            assert_eq!(&s.store.get(id, p).unwrap(), v, "server parent {p}");
        }
        let guid = s.driver.assign_guid(s.class, &s.store, id).unwrap();
        s.step(&mut no_loss(), 0.0);
        for (p, v) in defaults().iter().enumerate() {
            assert_eq!(s.clients[0].1.value(guid, p).as_ref(), Some(v), "level {level}: client parent {p}");
        }
    }
}

#[test]
fn an_open_sends_only_what_differs_from_the_defaults() {
    let mut rng = no_loss();
    for level in [false, true] {
        // The same values — the defaults, and a health of 50 — with and without declared
        // defaults: the class that declares them opens with the health alone.
        let (mut with, mut without) = (Server::new(pawn(true), level), Server::new(pawn(false), level));
        let mut guids = Vec::new();
        for s in [&mut with, &mut without] {
            s.join();
            for _ in 0..50 {
                let id = s.store.spawn();
                for (p, v) in defaults().iter().enumerate() {
                    s.store.set(id, p, v).unwrap();
                }
                s.store.set(id, 0, &Value::U16(50)).unwrap();
                guids.push(s.driver.assign_guid(s.class, &s.store, id).unwrap());
            }
        }
        let (a, b) = (with.step(&mut rng, 0.0), without.step(&mut rng, 0.0));
        // Left out per actor: a bool, a float, a byte, three ammo counts and the team, each
        // with its 4-bit handle — 101 bits — and the array's three elements.
        assert!(b >= a + 50 * 16, "level {level}: {a} bytes with defaults, {b} without");
        for s in [&with, &without] {
            for &g in &guids[..50] {
                assert_eq!(s.clients[0].1.value(g, 0), Some(Value::U16(50)));
                assert_eq!(s.clients[0].1.value(g, 2), Some(defaults()[2].clone()));
            }
        }
    }
}

#[test]
fn a_value_changed_and_back_reaches_every_client_and_late_joiners_get_it() {
    let mut rng: rand_chacha::ChaCha8Rng = rand::SeedableRng::seed_from_u64(7);
    for level in [false, true] {
        let mut s = Server::new(pawn(true), level);
        s.join();
        let ids: Vec<_> = (0..40).map(|_| s.store.spawn()).collect();
        let guids: Vec<_> = ids.iter().map(|&id| s.driver.assign_guid(s.class, &s.store, id).unwrap()).collect();
        // Over a lossy link, health moves away from its default and back; ammo to zero.
        for frame in 0..120u32 {
            for (i, &id) in ids.iter().enumerate() {
                if (frame + i as u32).is_multiple_of(7) {
                    let hp = if frame % 2 == 0 { 100 } else { 40 + i as u16 };
                    s.store.set(id, 0, &Value::U16(hp)).unwrap();
                    s.store.set(id, 3 + i % 3, &Value::U8((frame % 31) as u8)).unwrap();
                    let slots = (0..frame % 4).map(|k| Value::U16((frame + k) as u16)).collect();
                    s.store.set(id, SLOTS, &Value::Array(slots)).unwrap();
                }
            }
            if frame == 60 {
                s.join();
            }
            s.step(&mut rng, 0.3);
        }
        // Every actor back at its defaults but one parent; then a healed link.
        for (i, &id) in ids.iter().enumerate() {
            for (p, v) in defaults().iter().enumerate().filter(|&(p, _)| p != 6) {
                s.store.set(id, p, v).unwrap();
            }
            s.store.set(id, 7, &Value::U32(i as u32)).unwrap();
        }
        for _ in 0..30 {
            s.step(&mut rng, 0.0);
        }
        for (c, (_, world)) in s.clients.iter().enumerate() {
            for (i, &g) in guids.iter().enumerate() {
                for (p, v) in defaults().iter().enumerate().filter(|&(p, _)| p != 6 && p != 7) {
                    assert_eq!(world.value(g, p).as_ref(), Some(v), "level {level} client {c} actor {i} parent {p}");
                }
                assert_eq!(world.value(g, 7), Some(Value::U32(i as u32)));
                assert_eq!(world.value(g, 6), Some(Value::U8(2)), "InitialOnly: the default, never written");
            }
        }
    }
}

#[test]
fn a_default_that_does_not_fit_is_refused_with_its_property_named() {
    let bad = |decl: PropertyDecl| ClassBuilder::new("Bad").property(decl).build().unwrap_err();
    let LayoutError::BadDefault(name, why) = bad(PropertyDecl::new("Hp", PropType::U16).default_value(Value::U32(1)))
    else {
        panic!("a type mismatch")
    };
    assert_eq!(name, "Hp");
    assert!(!why.is_empty());
    assert!(matches!(
        bad(PropertyDecl::new("Items", PropType::array(PropType::U8)).default_value(Value::Array(vec![Value::U16(1)]))),
        LayoutError::BadDefault(n, _) if n == "Items"
    ));
    // An array's default names no object either, and holds no more than its cap.
    assert!(matches!(
        bad(PropertyDecl::new("Refs", PropType::array(PropType::Object))
            .default_value(Value::Array(vec![Value::Object(ObjectRef(0)), Value::Object(ObjectRef(3))]))),
        LayoutError::BadDefault(n, _) if n == "Refs"
    ));
    let capped = PropType::Array { element: Box::new(PropType::U8), max_len: 2 };
    assert!(matches!(
        bad(PropertyDecl::new("Few", capped).default_value(Value::Array(vec![Value::U8(1); 3]))),
        LayoutError::BadDefault(n, _) if n == "Few"
    ));
    assert!(matches!(
        bad(PropertyDecl::new("Target", PropType::Object).default_value(Value::Object(ObjectRef(2)))),
        LayoutError::BadDefault(n, _) if n == "Target"
    ));
    assert!(matches!(
        bad(PropertyDecl::new("Mode", PropType::Enum { bits: 2 }).default_value(Value::Enum(9))),
        LayoutError::BadDefault(n, _) if n == "Mode"
    ));
    // A null reference is a fine default (it is what no default says).
    ClassBuilder::new("Ok")
        .property(PropertyDecl::new("Target", PropType::Object).default_value(Value::Object(ObjectRef(0))))
        .build()
        .unwrap();
}

#[test]
fn defaults_are_part_of_the_checksum_and_a_subclass_keeps_its_bases() {
    let (with, without) = (pawn(true), pawn(false));
    assert_ne!(with.checksum, without.checksum, "a client with other defaults would read opens wrong");
    let plain = ClassBuilder::new("Pawn").property(PropertyDecl::new("Health", PropType::U16)).build().unwrap();
    let zero = ClassBuilder::new("Pawn")
        .property(PropertyDecl::new("Health", PropType::U16).default_value(Value::U16(0)))
        .build()
        .unwrap();
    assert_eq!(plain.checksum, zero.checksum, "a zero default is no default");
    let sub = ClassBuilder::extends("Hero", &with).property(PropertyDecl::new("Level", PropType::U8)).build().unwrap();
    let mut store = ClassStore::new(Arc::new(sub));
    let id = store.spawn();
    assert_eq!(store.get(id, 0).unwrap(), Value::U16(100));
    assert_eq!(store.get(id, SLOTS).unwrap(), defaults()[SLOTS]);
    assert_eq!(store.get(id, 9).unwrap(), Value::U8(0));
    // A despawned slot's next actor starts from the defaults again.
    store.set(id, 0, &Value::U16(1)).unwrap();
    store.despawn(id).unwrap();
    let again = store.spawn();
    assert_eq!(again.index, id.index);
    assert_eq!(store.get(again, 0).unwrap(), Value::U16(100));
}

#[test]
fn a_client_over_a_lossy_link_converges_with_defaults() {
    let mut world = shadowrep_tests::World::with_layouts(vec![pawn(true)], DriverConfig::default(), 5);
    for i in 0..3 {
        world.add_client(false, LinkConfig::lossy(0.3, 40 + i));
    }
    for _ in 0..30 {
        world.spawn(0);
    }
    for _ in 0..60 {
        // InitialOnly values stay as opened (the client keeps its open's).
        world.mutate_where(0.2, |c| c != Condition::InitialOnly);
        world.step();
    }
    world.set_links(LinkConfig::perfect(1));
    for _ in 0..40 {
        world.step();
    }
    world.assert_converged();
}

/// Every kind of default — a true bool, a NaN and a `-0.0` float, an enum, a struct, a static
/// array, quantised vectors and a rotator, a name, push-ruled and conditioned properties — over
/// churn (despawns and spawns in reused slots between ticks), writes back to the defaults, owners
/// and Custom switches, lossy links and late joiners: every client converges.
#[test]
fn every_kind_of_default_converges_through_churn_and_loss() {
    use rand::Rng;
    use shadowrep::schema::VectorQuant;
    let st = StructType::new("S").field("A", PropType::U8).field("B", PropType::F32).field("C", PropType::Bool);
    let decls: Vec<(PropertyDecl, Value)> = vec![
        (PropertyDecl::new("Flag", PropType::Bool), Value::Bool(true)),
        (PropertyDecl::new("PushFlag", PropType::Bool).push(true), Value::Bool(true)),
        (PropertyDecl::new("Nan", PropType::F32), Value::F32(f32::from_bits(0x7fc0_1234))),
        (PropertyDecl::new("NegZero", PropType::F32).push(true), Value::F32(-0.0)),
        (PropertyDecl::new("Mode", PropType::Enum { bits: 3 }), Value::Enum(5)),
        (
            PropertyDecl::new("S", PropType::Struct(st)),
            Value::Struct(vec![Value::U8(9), Value::F32(1.5), Value::Bool(true)]),
        ),
        (PropertyDecl::new("Ammo", PropType::U16).dim(3).push(true), Value::U16(30)),
        (PropertyDecl::new("Pos", PropType::Vector(VectorQuant::Q10)), Value::Vector([1.25, -3.0, 7.5])),
        (PropertyDecl::new("Rot", PropType::Rotator), Value::Rotator([10.0, 90.0, 0.0])),
        (PropertyDecl::new("Tag", PropType::Name), Value::Name(17)),
        (PropertyDecl::new("Secret", PropType::U32).condition(Condition::OwnerOnly), Value::U32(77)),
        (PropertyDecl::new("Public", PropType::I16).condition(Condition::SkipOwner).push(true), Value::I16(-5)),
        (PropertyDecl::new("Intro", PropType::U8).condition(Condition::InitialOnly), Value::U8(42)),
        (PropertyDecl::new("Tuned", PropType::U64).condition(Condition::Custom), Value::U64(1 << 40)),
        (PropertyDecl::new("Big", PropType::F64), Value::F64(-1e300)),
        (PropertyDecl::new("Items", PropType::array(PropType::U8)), Value::Array(vec![Value::U8(1), Value::U8(2)])),
    ];
    let defaults: Vec<Value> = decls.iter().flat_map(|(d, v)| std::iter::repeat_n(v.clone(), d.dim as usize)).collect();
    let mut b = ClassBuilder::new("Everything");
    for (d, v) in &decls {
        b = b.property(d.clone().default_value(v.clone()));
    }
    let layout = Arc::new(b.build().unwrap());
    for level in [false, true] {
        let cfg = DriverConfig { actor_level: level.then(ActorLevelConfig::default), ..DriverConfig::default() };
        let mut world = shadowrep_tests::World::with_layouts(vec![layout.clone()], cfg, 11);
        for i in 0..2 {
            world.add_client(false, LinkConfig::lossy(0.25, 70 + i));
        }
        if level {
            for c in 0..world.clients.len() {
                world.driver.set_viewers(world.clients[c].conn, &[origin()]).unwrap();
            }
        }
        let value = |world: &mut shadowrep_tests::World, p: usize| -> Value {
            if world.rng.random_bool(0.4) {
                return defaults[p].clone();
            }
            let ty = layout.parents[p].ty.clone();
            world.random_value(&ty)
        };
        for frame in 0..90 {
            // Churn: despawns, and spawns that reuse their slots, between two ticks.
            for _ in 0..3 {
                if world.actors.len() > 10 && world.rng.random_bool(0.5) {
                    let i = world.rng.random_range(0..world.actors.len());
                    world.despawn(i);
                }
                let id = world.spawn(0);
                for p in 0..layout.parents.len() {
                    if world.rng.random_bool(0.3) {
                        let v = value(&mut world, p);
                        world.stores[0].set(id, p, &v).unwrap();
                    }
                }
            }
            for _ in 0..6 {
                let (s, id) = world.actors[world.rng.random_range(0..world.actors.len())];
                let p = world.rng.random_range(0..layout.parents.len());
                if layout.parents[p].condition == Condition::InitialOnly {
                    continue;
                }
                let v = value(&mut world, p);
                world.stores[s].set(id, p, &v).unwrap();
                world.stores[s].mark_dirty(id, p).unwrap();
            }
            if frame % 10 == 3 {
                let (s, id) = world.actors[world.rng.random_range(0..world.actors.len())];
                let owner = world.rng.random_range(0..world.clients.len());
                world.set_owner(s, id, Some(owner), false);
                let tuned = layout.parent_index("Tuned").unwrap();
                let on = world.rng.random_bool(0.5);
                world.set_custom(s, id, tuned, on);
            }
            if frame == 40 {
                let c = world.add_client(false, LinkConfig::lossy(0.25, 99));
                if level {
                    world.driver.set_viewers(world.clients[c].conn, &[origin()]).unwrap();
                }
            }
            world.step();
        }
        world.set_links(LinkConfig::perfect(1));
        for _ in 0..40 {
            world.step();
        }
        world.assert_converged();
    }
}
