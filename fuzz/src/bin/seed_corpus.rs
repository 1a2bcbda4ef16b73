//! Writes seed inputs for every target under `corpus/<target>/`, from the recorded run:
//! `cargo run --release --bin seed_corpus` (in `fuzz/`).

use shadowrep::net::SublevelId;
use shadowrep::session::frame::{DigestAnswer, Hello};
use shadowrep::session::{Datagram, DigestStatus, DisconnectReason, RejectReason, PROTOCOL_VERSION};
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
    // The session layer: each kind of datagram, plain, through each door (raw, and as a rogue
    // peer that holds the keys would seal it).
    let dir = "corpus/session";
    fs::create_dir_all(dir)?;
    let payload = [0x11u8; 24];
    let answer = DigestAnswer { id: 1, status: DigestStatus::Ready, seq: 3, actors: 4, digest: 5 };
    let hello = Hello { version: PROTOCOL_VERSION, nonce: 7, cookie: Some(3), checksums: vec![1], ticket: None };
    let datagrams = [
        Datagram::Hello(hello),
        Datagram::Challenge { nonce: 7, cookie: 3 },
        Datagram::Welcome { nonce: 7, token: 5, tick_rate: 30, checksums: vec![1] },
        Datagram::Reject { nonce: 7, reason: RejectReason::Full, server_version: PROTOCOL_VERSION },
        Datagram::Packet { token: 5, payload: &payload },
        Datagram::Feedback { token: 5, payload: &payload },
        Datagram::DigestRequest { token: 5, id: 1 },
        Datagram::DigestAnswer { token: 5, answer },
        Datagram::Disconnect { token: 5, reason: DisconnectReason::Closed },
        Datagram::Disconnect { token: 5, reason: DisconnectReason::ReliableOverflow },
        Datagram::Levels { token: 5, seq: 2, levels: vec![SublevelId(1), SublevelId(9)] },
        Datagram::LevelsAck { token: 5, seq: 2 },
    ];
    for (i, d) in datagrams.iter().enumerate() {
        for op in 0..5u8 {
            let m = [&[op][..], &d.encode()].concat();
            fs::write(format!("{dir}/d{i}_op{op}"), &join(0, [m.as_slice()])[1..])?;
        }
    }
    Ok(())
}
