//! Replays a `client_heal` input on the actor level's world and prints each frame: what the
//! client did with each packet, what it asked for, and the server's counters:
//! `cargo run --release --bin replay_heal -- FILE` (in `fuzz/`).

use shadowrep::wire::feedback::read_feedback;
use shadowrep_fuzz::level::LevelWorld;
use shadowrep_fuzz::split;

fn main() {
    let path = std::env::args().nth(1).expect("an input file");
    let data = std::fs::read(&path).expect("readable");
    let Some((&first, rest)) = data.split_first() else { return };
    assert!(first & 0x80 != 0, "replays the actor level's world only");
    let mut w = LevelWorld::new();
    for _ in 0..(first & 31) {
        w.step(true, true);
    }
    let mut frame = 0;
    let run = |w: &mut LevelWorld, frame: &mut usize| {
        let packets = w.advance(true);
        for p in &packets {
            let r = w.client.receive(p);
            println!("frame {frame}: server packet {} bytes: {r:?}", p.len());
        }
        let fb = w.client.feedback();
        if let Ok(f) = read_feedback(&fb) {
            println!("  feedback: newest {:?}, reopen {:?}", f.highest, f.reopen);
        }
        let _ = w.driver.receive_feedback(w.conn, &fb);
        println!("  events {:?}", w.client.take_events());
        *frame += 1;
    };
    for (i, p) in split(rest).take(64).enumerate() {
        let r = w.client.receive(p);
        println!("hostile {i} ({} bytes): {r:?}; events {:?}", p.len(), w.client.take_events());
        if i % 2 == 1 {
            run(&mut w, &mut frame);
        }
    }
    for _ in 0..80 {
        run(&mut w, &mut frame);
        if w.values_converged() {
            println!("converged");
            break;
        }
    }
    println!("{:?}\n{:?}", w.driver.connection_stats(w.conn), w.client.stats());
}
