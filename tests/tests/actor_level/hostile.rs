//! A hostile client under the actor level: forged acknowledgements, reopen storms for actors it
//! may not see, random bytes. Nothing panics, nothing grows without bound, no actor it is not
//! allowed to see reaches it, and an honest client beside it converges.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::ids::Seq;
use shadowrep::wire::feedback::{write_feedback, AckBits};
use shadowrep::wire::BitWriter;

#[test]
fn a_hostile_client_neither_crashes_the_server_nor_sees_what_is_not_relevant_to_it() {
    let mut l = Level::new(every_frame(), 2);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut actors = Vec::new();
    for i in 0..200 {
        let x = if i % 2 == 0 { 100.0 + i as f32 } else { 1.0e6 + i as f32 };
        actors.push(l.spawn([x, 0.0, 0.0], i));
    }
    // Client 1 views from far away: only the odd actors are near it.
    let evil = l.clients[1].0;
    l.driver.set_viewers(evil, &[viewer([1.0e6, 0.0, 0.0], None)]).unwrap();
    let guids: Vec<NetGuid> = actors.iter().map(|a| a.1).collect();
    for frame in 0..200u32 {
        for &(id, _) in actors.iter().step_by(7) {
            l.store.set(id, HEALTH, &Value::U32(frame)).unwrap();
        }
        l.driver.tick(&mut [&mut l.store]).unwrap();
        // The honest client.
        let honest = l.clients[0].0;
        for p in l.driver.take_packets(honest).unwrap() {
            l.clients[0].1.receive(&p).unwrap();
        }
        l.driver.receive_feedback(honest, &l.clients[0].1.feedback()).unwrap();
        // The hostile one: takes its packets, answers with lies.
        let packets = l.driver.take_packets(evil).unwrap();
        for p in &packets {
            let _ = l.clients[1].1.receive(p);
        }
        let mut w = BitWriter::new();
        let highest = Seq(rng.random_range(0..2_000));
        let mut bits = AckBits::default();
        for b in 0..256 {
            if rng.random_bool(0.5) {
                bits.set(b);
            }
        }
        let reopen: Vec<NetGuid> =
            (0..rng.random_range(0..64)).map(|_| guids[rng.random_range(0..guids.len())]).collect();
        write_feedback(&mut w, highest, &bits, &reopen);
        let _ = l.driver.receive_feedback(evil, &w.into_bytes());
        let junk: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random()).collect();
        let _ = l.driver.receive_feedback(evil, &junk);
        let (rows, _) = l.driver.channels(evil).unwrap();
        assert!(rows <= 100, "frame {frame}: {rows} rows for 100 actors it may see");
        assert!(l.driver.in_flight(evil) <= 257, "the window bounds what is in flight");
    }
    // It never got an actor that is not relevant to it (the even ones are 1e6 units away).
    for (i, &g) in guids.iter().enumerate() {
        if i % 2 == 0 {
            assert!(!l.client(1).has(g), "actor {i} reached a client it is not relevant to");
        }
    }
    // The honest client beside it has every actor near it, with current values.
    l.run(5);
    for (i, &(id, g)) in actors.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(l.client(0).value(g, HEALTH), l.store.get(id, HEALTH).ok(), "actor {i}");
        } else {
            assert!(!l.client(0).has(g));
        }
    }
}
