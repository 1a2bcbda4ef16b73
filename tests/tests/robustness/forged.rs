//! Forged, stale and repeated feedback: ignored, counted, never amplifying traffic.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::link::LinkConfig;
use shadowrep::net::{DriverConfig, FeedbackOutcome};
use shadowrep::store::ClassStore;
use shadowrep::wire::feedback::{read_feedback, write_feedback, AckBits};
use shadowrep::wire::BitWriter;
use shadowrep_tests::World;
use std::collections::VecDeque;

const CLASSES: [&str; 3] = ["ShooterCharacter", "LootContainer", "Pickup"];

fn world(seed: u64) -> World {
    let mut w =
        World::new(&CLASSES, 3, DriverConfig::default(), |i| LinkConfig::lossy(0.2, seed * 10 + i as u64), seed);
    for s in 0..CLASSES.len() {
        for _ in 0..40 {
            w.spawn(s);
        }
    }
    w
}

fn feedback(highest: Seq, bits: AckBits, reopen: &[NetGuid]) -> Vec<u8> {
    let mut w = BitWriter::new();
    write_feedback(&mut w, highest, &bits, reopen);
    w.into_bytes()
}

/// One frame of [`World::step`], with `forge(client, real feedback)` returning forgeries the
/// server receives after each real feedback.
/// Makes the forgeries sent after one real feedback of one client.
type Forger<'a> = dyn FnMut(usize, &[u8]) -> Vec<Vec<u8>> + 'a;

fn step_forging(w: &mut World, forge: &mut Forger<'_>) {
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    for (ci, c) in w.clients.iter_mut().enumerate() {
        for p in w.driver.take_packets(c.conn).expect("connection") {
            c.down.send(p);
        }
        for p in c.down.tick() {
            if c.world.receive(&p).is_err() {
                c.errors += 1;
            }
            c.up.send(c.world.feedback());
        }
        c.up.send(c.world.feedback());
        for f in c.up.tick() {
            w.driver.receive_feedback(c.conn, &f).expect("real feedback decodes");
            for forged in forge(ci, &f) {
                // Errors (undecodable bytes) are fine; nothing may panic or change.
                let _ = w.driver.receive_feedback(c.conn, &forged);
            }
        }
    }
}

fn bytes_sent(w: &World) -> u64 {
    w.clients.iter().map(|c| w.driver.bytes_sent(c.conn)).sum()
}

/// Every kind of forgery at once, every frame, against the same world without them: the
/// server sends no more than 1.1× the bytes, and both converge.
#[test]
fn forged_feedback_never_amplifies_traffic() {
    for seed in [1, 2] {
        let (mut honest, mut attacked) = (world(seed), world(seed));
        let mut old: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); 3];
        let mut forge = |ci: usize, real: &[u8]| -> Vec<Vec<u8>> {
            let fb = read_feedback(real).expect("real feedback");
            let h = fb.highest;
            let mut out = vec![
                feedback(Seq(h.0.wrapping_add(1000)), AckBits::default(), &[]),
                feedback(Seq(u32::MAX), AckBits::default(), &[]),
                feedback(Seq(h.0.wrapping_add(1 << 31)), AckBits::default(), &[]),
                feedback(Seq(h.0.wrapping_sub(300)), AckBits::default(), &[]),
            ];
            // Already settled: feedback from some frames ago, and the real one a thousand times.
            out.extend(old[ci].iter().cloned());
            out.extend(std::iter::repeat_n(real.to_vec(), 1000));
            old[ci].push_back(real.to_vec());
            if old[ci].len() > 5 {
                old[ci].pop_front();
            }
            out
        };
        for frame in 0..120 {
            honest.mutate(0.2);
            attacked.mutate(0.2);
            if frame % 30 == 10 {
                honest.despawn(3);
                attacked.despawn(3);
                honest.spawn(1);
                attacked.spawn(1);
            }
            honest.step();
            step_forging(&mut attacked, &mut forge);
        }
        let (a, b) = (bytes_sent(&honest), bytes_sent(&attacked));
        eprintln!("seed {seed}: {b} bytes sent under forged feedback, {a} without: {:.4}×", b as f64 / a as f64);
        assert!(b as f64 <= a as f64 * 1.1, "seed {seed}: {b} bytes under forgery vs {a} without");
        let stats = attacked.driver.connection_stats(attacked.clients[0].conn).unwrap();
        assert!(stats.feedback_forged > 100 && stats.feedback_stale > 1000, "{stats:?}");
        for w in [&mut honest, &mut attacked] {
            w.set_links(LinkConfig::perfect(1));
            for _ in 0..30 {
                w.step();
            }
            w.assert_converged();
        }
    }
}

/// The server's answer to each kind of feedback.
#[test]
fn feedback_outcomes_name_what_was_ignored() {
    let mut w = world(5);
    for _ in 0..3 {
        w.step();
    }
    let conn = w.clients[0].conn;
    let real = w.clients[0].world.feedback();
    let h = read_feedback(&real).unwrap().highest;
    assert_eq!(w.driver.receive_feedback(conn, &real), Ok(FeedbackOutcome::Stale), "already applied");
    let never = feedback(Seq(h.0 + 5000), AckBits::default(), &[]);
    assert_eq!(w.driver.receive_feedback(conn, &never), Ok(FeedbackOutcome::NeverSent));
    assert!(w.driver.receive_feedback(conn, &[0xff; 3]).is_err());
    let stats = w.driver.connection_stats(conn).unwrap();
    assert_eq!((stats.feedback_forged, stats.feedback_malformed), (1, 1));
}

/// Random bytes as feedback: most do not decode; those that do may name packets really in flight
/// (a lie the server cannot tell from the truth), but each packet is settled once, so traffic
/// stays within 1.1× of the same run without them.
#[test]
fn random_feedback_bytes_never_amplify_traffic() {
    let (mut honest, mut attacked) = (world(3), world(3));
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut forge = |_: usize, _: &[u8]| -> Vec<Vec<u8>> {
        (0..50)
            .map(|_| {
                let n = rng.random_range(1..12);
                (0..n).map(|_| rng.random()).collect()
            })
            .collect()
    };
    for _ in 0..100 {
        honest.mutate(0.2);
        attacked.mutate(0.2);
        honest.step();
        step_forging(&mut attacked, &mut forge);
    }
    let (a, b) = (bytes_sent(&honest), bytes_sent(&attacked));
    eprintln!("{b} bytes sent under random feedback bytes, {a} without: {:.4}×", b as f64 / a as f64);
    assert!(b as f64 <= a as f64 * 1.1, "{b} bytes under random feedback vs {a} without");
    let stats = attacked.driver.connection_stats(attacked.clients[0].conn).unwrap();
    assert!(stats.feedback_malformed > 1000, "{stats:?}");
}
