//! Dynamic arrays through the server

use crate::helpers::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep_tests::World;
use std::sync::Arc;

fn arrays_layout() -> Arc<ClassLayout> {
    build(
        ClassBuilder::new("Arrays")
            .property(PropertyDecl::new("Tag", PropType::U32))
            .property(PropertyDecl::new("Small", PropType::array(PropType::U32)))
            .property(PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 2048 })),
    )
}

/// Every client holds exactly the server's bytes for every array of actor `id`.
fn assert_arrays_match(w: &World, id: ActorId, guid: NetGuid, what: &str) {
    let layout = w.stores[0].layout().clone();
    for (a, array) in layout.arrays.iter().enumerate() {
        let server = w.stores[0].array_bytes(id.index, a);
        for (ci, c) in w.clients.iter().enumerate() {
            let client = c.world.array_bytes(guid, a).expect("client has the actor");
            assert!(
                client == server,
                "{what}: client {ci}, array {}: {} bytes vs the server's {}",
                layout.leaves[array.leaf].path,
                client.len(),
                server.len()
            );
            assert_eq!(
                c.world.value(guid, array.parent),
                w.stores[0].get(id, array.parent).ok(),
                "{what}: client {ci}"
            );
        }
    }
}

#[test]
fn dynamic_arrays_grow_shrink_and_change() {
    let layout = arrays_layout();
    let mut w = world_with(&layout, &[false, true]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let small = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
    let steps: [(&str, Vec<u32>); 7] = [
        ("grow from empty", vec![1, 2, 3]),
        ("grow", (1..=10).collect()),
        ("change one element", vec![1, 2, 3, 4, 99, 6, 7, 8, 9, 10]),
        ("change first and last", vec![7, 2, 3, 4, 99, 6, 7, 8, 9, 70]),
        ("shrink", vec![7, 2, 3, 4]),
        ("shrink to empty", vec![]),
        ("grow again", vec![0, 5]),
    ];
    for (what, v) in steps {
        set(&mut w, 0, id, 1, small(&v));
        w.step();
        w.step();
        assert_eq!(w.clients[0].world.array_bytes(guid, 0).map(|b| b.len()), Some(v.len() * 4), "{what}");
        assert_arrays_match(&w, id, guid, what);
        w.assert_converged();
    }
}

#[test]
fn large_dynamic_arrays_split_across_packets() {
    let layout = arrays_layout();
    let mut w = world_with(&layout, &[false, false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let big = |n: usize, salt: u64| {
        Value::Array((0..n as u64).map(|i| Value::U64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)).collect())
    };
    step_capture(&mut w);
    let cases: [(&str, usize, u64, usize); 6] = [
        ("300 elements", 300, 1, 3),
        ("300 elements, all changed", 300, 2, 3),
        ("shrink to 120", 120, 2, 1),
        ("grow to 700", 700, 3, 7),
        ("the cap: 2048 elements", 2048, 4, 20),
        ("shrink to empty", 0, 0, 1),
    ];
    for (what, n, salt, min_packets) in cases {
        set(&mut w, 0, id, 2, big(n, salt));
        set(&mut w, 0, id, 0, Value::U32(n as u32));
        let packets = step_capture(&mut w);
        for (ci, p) in packets.iter().enumerate() {
            assert!(p.len() >= min_packets, "{what}: client {ci} got {} packets", p.len());
            assert!(p.iter().all(|p| p.len() <= 1024), "{what}: a packet over the MTU");
        }
        assert_eq!(w.clients[0].world.array_bytes(guid, 1).map(|b| b.len()), Some(n * 8), "{what}");
        assert_arrays_match(&w, id, guid, what);
    }
    // Single elements of a large array.
    set(&mut w, 0, id, 2, big(300, 5));
    step_capture(&mut w);
    let mut v = match big(300, 5) {
        Value::Array(v) => v,
        _ => unreachable!(),
    };
    for i in [0, 150, 299] {
        v[i] = Value::U64(u64::MAX - i as u64);
    }
    set(&mut w, 0, id, 2, Value::Array(v));
    step_capture(&mut w);
    assert_arrays_match(&w, id, guid, "single elements changed");
    w.assert_converged();
}

#[test]
fn a_changed_element_goes_alone_and_a_lost_one_comes_back_whole() {
    // UE sends a dynamic array's changed elements by nested handle: one changed element of 300
    // costs its handle and value, not the array. A lost delta is resent whole: what the client
    // missed is no longer "changed since the last send".
    let layout = arrays_layout();
    let mut w = world_with(&layout, &[false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let big = |changed: &[u64]| {
        Value::Array((0..300u64).map(|i| Value::U64(if changed.contains(&i) { u64::MAX - i } else { 3 * i })).collect())
    };
    let bytes = |packets: &[Vec<Vec<u8>>]| packets[0].iter().map(Vec::len).sum::<usize>();
    set(&mut w, 0, id, 2, big(&[]));
    let first = bytes(&step_capture(&mut w));
    assert!(first > 300 * 8, "the open carries the whole array: {first} bytes");
    step_capture(&mut w);
    set(&mut w, 0, id, 2, big(&[150]));
    let one = bytes(&step_capture(&mut w));
    assert!(one <= 24, "one changed element of 300: {one} bytes");
    assert_arrays_match(&w, id, guid, "one element changed");
    // The next delta (elements 7 and 150) is lost on the way.
    set(&mut w, 0, id, 2, big(&[7, 150, 299]));
    {
        let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).expect("tick");
        let lost = w.driver.take_packets(w.clients[0].conn).expect("connection");
        assert!(lost.iter().map(Vec::len).sum::<usize>() < 64, "a delta of two elements");
    }
    let mut largest = 0;
    for _ in 0..12 {
        largest = largest.max(bytes(&step_capture(&mut w)));
    }
    assert!(largest > 300 * 8, "the lost delta came back as the whole array: {largest} bytes at most");
    assert_arrays_match(&w, id, guid, "after the loss");
    w.assert_converged();
}

#[test]
fn an_array_under_a_condition_goes_whole() {
    // A conditioned array may come back by a role change having missed changes that "changed
    // since the last send" does not name: it is always sent whole (a departure from UE, which
    // sends its changed elements; README, "Dynamic arrays").
    let layout = build(
        ClassBuilder::new("Inventories")
            .property(PropertyDecl::new("Mine", PropType::array(PropType::U32)).condition(Condition::OwnerOnly))
            .property(PropertyDecl::new("Shown", PropType::array(PropType::U32))),
    );
    let mut w = world_with(&layout, &[false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    set_owner(&mut w, id, Some(0), false);
    let fifty = |changed: u32| Value::Array((0..50).map(|i| Value::U32(if i == 10 { changed } else { i })).collect());
    let bytes = |packets: &[Vec<Vec<u8>>]| packets[0].iter().map(Vec::len).sum::<usize>();
    set(&mut w, 0, id, 0, fifty(10));
    set(&mut w, 0, id, 1, fifty(10));
    step_capture(&mut w);
    step_capture(&mut w);
    set(&mut w, 0, id, 1, fifty(77));
    let shown = bytes(&step_capture(&mut w));
    set(&mut w, 0, id, 0, fifty(77));
    let mine = bytes(&step_capture(&mut w));
    assert!(shown < 24, "one element of the plain array: {shown} bytes");
    assert!(mine > 50 * 4, "the owner-only array whole: {mine} bytes");
    assert_arrays_match(&w, id, guid, "both changed");
}

#[test]
fn large_dynamic_arrays_converge_over_a_lossy_link() {
    let layout = arrays_layout();
    let mut w = World::with_layouts(vec![layout], DriverConfig::default(), 9);
    for i in 0..2 {
        w.add_client(false, LinkConfig::lossy(0.25, 90 + i));
    }
    let ids: Vec<ActorId> = (0..2).map(|_| w.spawn(0)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for frame in 0..40 {
        if frame % 4 == 0 {
            for &id in &ids {
                let n = rng.random_range(0..500);
                let v = Value::Array((0..n).map(|_| Value::U64(rng.random())).collect());
                set(&mut w, 0, id, 2, v);
            }
        }
        w.step();
    }
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..45 {
        w.step();
    }
    w.assert_converged();
    for &id in &ids {
        let guid = w.guid(0, id);
        assert_arrays_match(&w, id, guid, "after healing");
    }
}

fn element_layout() -> Arc<ClassLayout> {
    build(
        ClassBuilder::new("ElementArrays")
            .property(PropertyDecl::new("Location", PropType::Vector(shadowrep::schema::VectorQuant::None)))
            .property(PropertyDecl::new("Tag", PropType::U32))
            .property(PropertyDecl::new("Small", PropType::Array { element: Box::new(PropType::U32), max_len: 64 }))
            .property(PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 600 })),
    )
}

/// Changes `parent`'s array a little, as a game does: one to three elements, a growth (zeros or
/// values), a shrink, or a shrink and regrowth with zeros in one frame.
fn mutate_array(w: &mut World, id: ActorId, parent: usize, rng: &mut ChaCha8Rng, max: usize, wide: bool) {
    let mut v = match w.stores[0].get(id, parent).expect("value") {
        Value::Array(v) => v,
        _ => unreachable!(),
    };
    let mk = |rng: &mut ChaCha8Rng| if wide { Value::U64(rng.random()) } else { Value::U32(rng.random()) };
    match rng.random_range(0..6) {
        0..=2 => {
            for _ in 0..rng.random_range(1..4) {
                if !v.is_empty() {
                    let i = rng.random_range(0..v.len());
                    v[i] = mk(rng);
                }
            }
        }
        3 => {
            let n = (v.len() + rng.random_range(1..5)).min(max);
            while v.len() < n {
                v.push(if rng.random_bool(0.5) {
                    if wide {
                        Value::U64(0)
                    } else {
                        Value::U32(0)
                    }
                } else {
                    mk(rng)
                });
            }
        }
        4 => {
            let n = v.len().saturating_sub(rng.random_range(1..5));
            v.truncate(n);
        }
        _ => {
            // shrink then grow within one frame, zeros refilled
            let n = v.len();
            v.truncate(n / 2);
            while v.len() < n {
                v.push(if wide { Value::U64(0) } else { Value::U32(0) });
            }
        }
    }
    set(w, 0, id, parent, Value::Array(v));
}

/// Changes actor `id`'s small array with probability 0.4 and its big one with `big`, each a
/// little ([`mutate_array`]).
fn mutate_arrays(w: &mut World, id: ActorId, rng: &mut ChaCha8Rng, big: f64) {
    if rng.random_bool(0.4) {
        mutate_array(w, id, 2, rng, 64, false);
    }
    if rng.random_bool(big) {
        mutate_array(w, id, 3, rng, 600, true);
    }
}

/// Every client holds every actor's arrays as the server does, and has converged.
fn check_all(w: &mut World, ids: &[ActorId], what: &str) {
    for &id in ids {
        let guid = w.guid(0, id);
        assert_arrays_match(w, id, guid, what);
    }
    w.assert_converged();
}

#[test]
fn changed_elements_converge_over_a_lossy_link() {
    // Element deltas under 30 % loss, duplication and reordering, a replay client among the
    // three: every lost delta is resent whole and every client ends with the server's arrays.
    for seed in 0..12u64 {
        let layout = element_layout();
        let mut w = World::with_layouts(vec![layout], DriverConfig::default(), seed);
        for i in 0..3 {
            w.add_client(i == 2, LinkConfig::lossy(0.3, 100 * seed + i as u64));
        }
        let ids: Vec<ActorId> = (0..3).map(|_| w.spawn(0)).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for &id in &ids {
            let v = Value::Array((0..300).map(Value::U64).collect());
            set(&mut w, 0, id, 3, v);
        }
        for _ in 0..120 {
            for &id in &ids {
                mutate_arrays(&mut w, id, &mut rng, 0.4);
            }
            w.step();
        }
        w.set_links(LinkConfig::perfect(1));
        for _ in 0..60 {
            w.step();
        }
        check_all(&mut w, &ids, &format!("property path, seed {seed}"));
    }
}

/// The actor level's version of [`changed_elements_converge_over_a_lossy_link`]: actors leave
/// relevancy and come back (channels closed and opened again: the open goes whole), go dormant
/// and are flushed, at `net_speed` bytes a second (low: frames saturate and actors carry over),
/// then `settle` clean frames.
fn changed_elements_converge_at_the_actor_level(net_speed: u32, settle: usize) {
    use shadowrep::net::{ActorLevelConfig, Dormancy, Viewer};
    for seed in 0..12u64 {
        let layout = element_layout();
        let level = ActorLevelConfig { relevant_timeout: 0.2, net_speed, ..ActorLevelConfig::default() };
        let cfg = DriverConfig { actor_level: Some(level), ..DriverConfig::default() };
        let mut w = World::with_layouts(vec![layout], cfg, seed);
        let class = w.classes[0];
        w.driver.set_location_property(class, 0).unwrap();
        for i in 0..3 {
            w.add_client(false, LinkConfig::lossy(0.3, 100 * seed + i as u64));
            let conn = w.clients[i].conn;
            let v = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
            w.driver.set_viewers(conn, &[v]).unwrap();
        }
        let ids: Vec<ActorId> = (0..4).map(|_| w.spawn(0)).collect();
        for &id in &ids {
            w.guid(0, id);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let near = Value::Vector([10.0, 0.0, 0.0]);
        let far = Value::Vector([1.0e6, 0.0, 0.0]);
        for &id in &ids {
            set(&mut w, 0, id, 0, near.clone());
            let v = Value::Array((0..300).map(Value::U64).collect());
            set(&mut w, 0, id, 3, v);
        }
        for _ in 0..200 {
            for &id in &ids {
                mutate_arrays(&mut w, id, &mut rng, 0.3);
                if rng.random_bool(0.03) {
                    let at = if rng.random_bool(0.5) { far.clone() } else { near.clone() };
                    set(&mut w, 0, id, 0, at);
                }
                if rng.random_bool(0.03) {
                    let d = [Dormancy::Awake, Dormancy::DormantAll][rng.random_range(0..2)];
                    let (c, st) = (w.classes[0], &w.stores[0]);
                    w.driver.set_net_dormancy(c, st, id, d).unwrap();
                }
                if rng.random_bool(0.03) {
                    let (c, st) = (w.classes[0], &w.stores[0]);
                    w.driver.flush_net_dormancy(c, st, id).unwrap();
                }
            }
            w.step();
        }
        w.set_links(LinkConfig::perfect(1));
        for &id in &ids {
            set(&mut w, 0, id, 0, near.clone());
            let (c, st) = (w.classes[0], &w.stores[0]);
            w.driver.set_net_dormancy(c, st, id, Dormancy::Awake).unwrap();
        }
        for _ in 0..settle {
            w.step();
        }
        check_all(&mut w, &ids, &format!("actor level, seed {seed}"));
    }
}

#[test]
fn changed_elements_converge_at_the_actor_level_over_a_lossy_link() {
    changed_elements_converge_at_the_actor_level(shadowrep::net::ActorLevelConfig::default().net_speed, 200);
}

#[test]
fn changed_elements_converge_at_the_actor_level_when_saturated() {
    changed_elements_converge_at_the_actor_level(4000, 900);
}

/// An initial-only array longer than a packet: split between packets, settled by none of its
/// parts alone, and, cut short by a full window, owed again whole.
#[test]
fn an_initial_only_array_split_across_packets_arrives_whole() {
    let array = |max_len| {
        build(
            ClassBuilder::new("InitialArray").property(PropertyDecl::new("Plain", PropType::U32)).property(
                PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len })
                    .condition(Condition::InitialOnly),
            ),
        )
    };
    let values = |n: u64, base: u64| Value::Array((0..n).map(|i| Value::U64(base << 40 | i)).collect());
    // The open's first packet lost: a continuation delivered alone settles nothing of the
    // array (before, it did, and the client kept the second half only).
    let mut w = SmallMtu::new(&array(200));
    let id = w.store.spawn();
    w.store.set(id, 1, &values(150, 1)).unwrap();
    assert!(w.frame(|i| i == 0) >= 3, "the array spans packets");
    for _ in 0..10 {
        w.frame(|_| false);
    }
    assert_eq!(w.client.value(w.guid(), 1), Some(values(150, 1)), "first packet lost");
    // The open's later packets lost (the array owed as initial values), then one part of its
    // resend — a plain bunch, not the open's — lost too: an earlier part's delivery settled the
    // array, the lost part owes it again (before, it was parked and half of it never came).
    for lose in 1..4 {
        let mut w = SmallMtu::new(&array(200));
        let id = w.store.spawn();
        w.store.set(id, 1, &values(150, 1)).unwrap();
        w.frame(|i| i >= 1);
        let resent = (0..20).map(|_| w.frame(|i| i == lose)).find(|&n| n >= 2);
        assert!(resent.is_some(), "the array is resent, split");
        for _ in 0..10 {
            w.frame(|_| false);
        }
        assert_eq!(w.client.value(w.guid(), 1), Some(values(150, 1)), "part {lose} of the resend lost");
    }
    // Two actors of 64 000 bytes each against a window of 256 packets of 512 bytes: the second
    // array is cut short; what was written of it is delivered, and it is owed again whole.
    let mut w = SmallMtu::new(&array(8000));
    let ids = [w.store.spawn(), w.store.spawn()];
    for (k, &id) in ids.iter().enumerate() {
        w.store.set(id, 1, &values(8000, k as u64 + 2)).unwrap();
    }
    w.frame(|_| false);
    assert!(w.driver.connection_stats(w.conn).unwrap().window_full_frames > 0, "the window never filled");
    for _ in 0..10 {
        w.frame(|_| false);
    }
    let guids: Vec<NetGuid> = w.client.actors().map(|(g, _)| g).collect();
    for (k, &id) in ids.iter().enumerate() {
        let guid = w.driver.guid_of(shadowrep::ids::ClassId(0), id).expect("a GUID");
        assert!(guids.contains(&guid));
        assert_eq!(w.client.value(guid, 1), Some(values(8000, k as u64 + 2)), "actor {k}: cut short by the window");
    }
}
