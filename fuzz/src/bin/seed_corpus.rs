//! Writes seed inputs for every target under `corpus/<target>/`, from the recorded run:
//! `cargo run --release --bin seed_corpus` (in `fuzz/`).

use shadowrep_fuzz::{join, level_recording, recording};
use std::fs;

fn main() -> std::io::Result<()> {
    let dir = "corpus/client_receive";
    fs::create_dir_all(dir)?;
    for (name, rec, top) in [("mixed", recording(), 0), ("level", level_recording(), 0x80)] {
        for k in 0..rec.packets.len().min(0x7f) {
            // The client after k packets, then the next one, two or three.
            for n in 1..=3 {
                let next = rec.packets[k..].iter().take(n).map(Vec::as_slice);
                fs::write(format!("{dir}/{name}_k{k:02}_n{n}"), join(top | k as u8, next))?;
            }
        }
        println!("{name}: {} recorded packets, {} feedbacks", rec.packets.len(), rec.feedbacks.len());
    }
    // A live world after k frames, then the packets of the next frames (which the live world
    // sends again, so the copies arrive as duplicates; a mutation makes them forged).
    let dir = "corpus/client_heal";
    fs::create_dir_all(dir)?;
    for (name, rec, top) in [("mixed", recording(), 0), ("level", level_recording(), 0x80)] {
        for k in 0..rec.packets.len().min(31) {
            for n in 1..=3 {
                let next = rec.packets[k..].iter().take(n).map(Vec::as_slice);
                fs::write(format!("{dir}/{name}_k{k:02}_n{n}"), join(top | k as u8, next))?;
            }
        }
    }
    let dir = "corpus/server_feedback";
    fs::create_dir_all(dir)?;
    for (name, rec, top) in [("mixed", recording(), 0), ("level", level_recording(), 0x80)] {
        for k in 0..8 {
            // k frames, then the run's own feedbacks (acknowledging packets of the same frames).
            for n in 1..=3 {
                let fbs = rec.feedbacks[k..].iter().take(n).map(Vec::as_slice);
                fs::write(format!("{dir}/{name}_k{k}_n{n}"), join(top | k as u8, fbs))?;
            }
        }
    }
    Ok(())
}
