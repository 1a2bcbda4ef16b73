//! Update frequency: an actor is considered exactly on the frames UE's formula gives.

use super::*;
use shadowrep::net::consider::jitter;

#[test]
fn a_ten_hertz_actor_at_a_thirty_hertz_tick_is_considered_exactly_on_ues_frames() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 0);
    l.settings(id, |s| s.frequency.net_update_frequency = 10.0);
    // UE: due when now > next; when considered, next = now + FRand · tick + 1 / NUF (FRand: the
    // kernel's hash of (GUID, frame)).
    let tick = 1.0 / 30.0;
    let mut next = 0.0f64;
    let mut considered = Vec::new();
    let mut expected = Vec::new();
    for frame in 1..=300u32 {
        l.store.set(id, HEALTH, &Value::U32(frame)).unwrap();
        l.step();
        let now = frame as f64 * tick;
        if now > next {
            expected.push(frame);
            next = now + jitter(guid, shadowrep::ids::Frame(frame)) * tick + 0.1;
        }
        if l.decisions(0).sends.iter().any(|s| s.guid == guid) {
            considered.push(frame);
            assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(frame)), "sent when considered");
        } else {
            assert_ne!(l.client(0).value(guid, HEALTH), Some(Value::U32(frame)), "nothing sent between");
        }
    }
    assert_eq!(considered, expected);
    for second in 0..10 {
        let n = considered.iter().filter(|&&f| (f - 1) / 30 == second).count();
        assert!((6..=10).contains(&n), "second {second}: {n} times");
    }
}

#[test]
fn adaptive_frequency_schedules_exactly_as_ues_consider_list_and_sends_do() {
    // UE with adaptive frequency: at consider time an actor silent for over 2 s backs off
    // towards 1 / MinNUF over 5 s; each real send (ReplicateActor wrote something) sets the next
    // interval to 0.7 × the time since the last one, clamped. Modelled here frame by frame and
    // compared with the frames the kernel considers the actor on, while it changes in bursts
    // with long silences between.
    let mut l = Level::new(ActorLevelConfig { adaptive_frequency: true, ..every_frame() }, 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 0);
    l.settings(id, |s| {
        s.frequency.net_update_frequency = 10.0;
        s.frequency.min_net_update_frequency = 2.0;
    });
    let tick = 1.0 / 30.0;
    let (fastest, slowest) = (0.1f64, 0.5f64);
    let (mut next, mut optimal, mut last_send) = (0.0f64, 0.0f64, 0.0f64);
    let mut backed_off = 0;
    for frame in 1..=900u32 {
        // Bursts of change: a second of changes every six seconds.
        if frame % 180 < 30 {
            l.store.set(id, HEALTH, &Value::U32(frame)).unwrap();
        }
        l.step();
        let now = frame as f64 * tick;
        let due = now > next;
        let send = l.decisions(0).sends.into_iter().find(|s| s.guid == guid);
        assert_eq!(send.is_some(), due, "frame {frame}: considered exactly when UE's clock says");
        if !due {
            continue;
        }
        if optimal == 0.0 {
            (optimal, last_send) = (fastest, now);
        }
        let since = now - last_send;
        if since > 2.0 {
            optimal = fastest + (slowest - fastest) * ((since - 2.0) / 5.0).clamp(0.0, 1.0);
            backed_off += 1;
        }
        next = now + jitter(guid, shadowrep::ids::Frame(frame)) * tick + optimal;
        if send.is_some_and(|s| s.bits > 0) {
            optimal = (0.7 * (now - last_send)).clamp(fastest, slowest);
            last_send = now;
        }
    }
    assert!(backed_off > 10, "silences long enough to back off ({backed_off})");
}

#[test]
fn force_net_update_makes_a_slow_actor_due_on_the_next_frame() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 0);
    l.settings(id, |s| s.frequency.net_update_frequency = 0.5);
    l.run(2);
    l.store.set(id, HEALTH, &Value::U32(5)).unwrap();
    l.run(3);
    assert_ne!(l.client(0).value(guid, HEALTH), Some(Value::U32(5)), "not due for 2 s");
    l.driver.force_net_update(l.class, &l.store, id).unwrap();
    l.step();
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(5)));
}

#[test]
fn an_actor_is_compared_only_when_due_so_a_change_undone_in_between_sends_nothing() {
    let mut l = Level::new(every_frame(), 1);
    let (id, guid) = l.spawn([100.0, 0.0, 0.0], 7);
    l.settings(id, |s| s.frequency.net_update_frequency = 1.0);
    l.step();
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(7)));
    // Changed and changed back between two considerations: nothing to send when it is due.
    l.store.set(id, HEALTH, &Value::U32(9)).unwrap();
    l.step();
    l.store.set(id, HEALTH, &Value::U32(7)).unwrap();
    let mut seen = None;
    for _ in 0..60 {
        l.step();
        if let Some(s) = l.decisions(0).sends.iter().find(|s| s.guid == guid) {
            seen = Some(s.bits);
            break;
        }
    }
    assert_eq!(seen, Some(0), "considered again within 2 s, with nothing owed");
    // A change that stays is found and sent when the actor is next due.
    l.store.set(id, HEALTH, &Value::U32(11)).unwrap();
    for _ in 0..60 {
        l.step();
    }
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(11)));
}

/// The due selection and the consider step run page runs on the rayon pool when a class is large
/// (here 34 000 actors, 532 pages: above the due selection's 32 768 awake lanes and the consider
/// step's 1 024 due actors); sharded, they must decide exactly as on one thread — the bug this
/// catches is a page or a run of pages read or written at the wrong offset.
#[test]
fn the_parallel_consider_step_decides_as_the_sequential_one() {
    use rand::{Rng, SeedableRng};
    let mut levels = [Level::with_parallel(every_frame(), 2, true), Level::with_parallel(every_frame(), 2, false)];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for i in 0..34_000u32 {
        let at = [rng.random_range(-40_000.0..40_000.0f32), rng.random_range(-40_000.0..40_000.0f32), 0.0];
        let hz = [100.0, 10.0, 2.0][rng.random_range(0..3)];
        for l in levels.iter_mut() {
            let (id, _) = l.spawn(at, i);
            l.settings(id, |s| s.frequency.net_update_frequency = hz);
        }
    }
    for l in levels.iter_mut() {
        let conn = l.clients[1].0;
        l.driver.set_viewers(conn, &[viewer([20_000.0, 5_000.0, 0.0], None)]).unwrap();
    }
    for frame in 0..30 {
        let changes: Vec<(usize, u32)> =
            (0..300).map(|_| (rng.random_range(0..34_000), rng.random_range(0..9))).collect();
        for l in levels.iter_mut() {
            let all: Vec<ActorId> = l.store.ids().collect();
            for &(i, h) in &changes {
                l.store.set(all[i], HEALTH, &Value::U32(h)).unwrap();
            }
            l.step();
        }
        for c in 0..2 {
            assert_eq!(levels[0].decisions(c), levels[1].decisions(c), "frame {frame}, client {c}");
        }
        assert!(!levels[0].decisions(0).sends.is_empty());
    }
}

/// The consider step's runs of every class go to the pool together, each writing its records at
/// its place in the one due list: with three classes — a small one, a large one, a small one — the
/// places cross class boundaries, and a run of one class written at another's offset, or a class's
/// slot → due index built from the wrong part of the list, would change what is sent. Sharded and
/// on one thread, the decisions and the bytes must be the same.
#[test]
fn the_parallel_consider_step_decides_as_the_sequential_one_across_classes() {
    use rand::{Rng, SeedableRng};
    let layout = |name: &str| {
        Arc::new(
            ClassBuilder::new(name)
                .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
                .property(PropertyDecl::new("Health", PropType::U32))
                .build()
                .expect("valid layout"),
        )
    };
    let layouts = [layout("Small"), layout("Large"), layout("Tail")];
    let sizes = [700usize, 6_000, 900];
    struct World {
        driver: NetDriver,
        stores: Vec<ClassStore>,
        ids: Vec<Vec<ActorId>>,
        conns: Vec<ConnectionId>,
    }
    let new_world = |parallel: bool, rng: &mut rand_chacha::ChaCha8Rng| {
        let level = ActorLevelConfig { record_decisions: true, ..every_frame() };
        let compare = shadowrep::compare::CompareConfig { parallel, ..Default::default() };
        let cfg = DriverConfig { actor_level: Some(level), parallel, compare, ..DriverConfig::default() };
        let mut driver = NetDriver::new(cfg).expect("valid config");
        let mut stores: Vec<ClassStore> = layouts.iter().map(|l| ClassStore::new(l.clone())).collect();
        let mut ids = Vec::new();
        for (store, &n) in stores.iter_mut().zip(&sizes) {
            let class = driver.register_class(store).expect("registers");
            driver.set_location_property(class, LOCATION).expect("a vector");
            let mut list = Vec::new();
            for i in 0..n {
                let id = store.spawn();
                let at = [rng.random_range(-30_000.0..30_000.0f32), rng.random_range(-30_000.0..30_000.0f32), 0.0];
                store.set(id, LOCATION, &Value::Vector(at)).expect("a vector");
                store.set(id, HEALTH, &Value::U32(i as u32)).expect("a u32");
                driver.assign_guid(class, store, id).expect("live");
                let mut s = driver.net_settings(class, id).expect("live");
                s.frequency.net_update_frequency = [100.0, 10.0, 2.0][rng.random_range(0..3)];
                driver.set_net_settings(class, store, id, s).expect("live");
                list.push(id);
            }
            ids.push(list);
        }
        let conns: Vec<ConnectionId> = [[0.0, 0.0, 0.0], [15_000.0, -8_000.0, 0.0], [-20_000.0, 20_000.0, 0.0]]
            .iter()
            .map(|&at| {
                let conn = driver.add_connection(false);
                driver.set_viewers(conn, &[viewer(at, None)]).expect("live");
                conn
            })
            .collect();
        World { driver, stores, ids, conns }
    };
    let seeds = [rand_chacha::ChaCha8Rng::seed_from_u64(9), rand_chacha::ChaCha8Rng::seed_from_u64(9)];
    let mut worlds: Vec<World> = seeds.into_iter().zip([true, false]).map(|(mut r, p)| new_world(p, &mut r)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let mut due = 0;
    for frame in 0..20 {
        let changes: Vec<(usize, usize, u32)> = (0..400)
            .map(|_| {
                let c = rng.random_range(0..3);
                (c, rng.random_range(0..sizes[c]), rng.random_range(0..9))
            })
            .collect();
        let mut packets = Vec::new();
        for w in worlds.iter_mut() {
            for &(c, i, h) in &changes {
                w.stores[c].set(w.ids[c][i], HEALTH, &Value::U32(h)).expect("a u32");
            }
            let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
            due = w.driver.tick(&mut stores).expect("tick").due_actors;
            let mut sent = Vec::new();
            for &conn in &w.conns {
                sent.push(w.driver.take_packets(conn).expect("live"));
                w.driver.heard_from(conn).expect("live");
            }
            packets.push(sent);
        }
        for &conn in &worlds[0].conns {
            let [a, b] = [&worlds[0], &worlds[1]].map(|w| w.driver.decisions(conn).expect("live").cloned());
            assert_eq!(a, b, "frame {frame}, connection {}", conn.0);
        }
        assert_eq!(packets[0], packets[1], "frame {frame}: the same bytes");
    }
    // The frame had enough due actors for the pool, from every class.
    assert!(due >= 1_024, "{due} due actors");
}
