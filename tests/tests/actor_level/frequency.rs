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
