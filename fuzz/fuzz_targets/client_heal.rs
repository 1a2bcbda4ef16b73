//! Hostile packets to the client of a live world — the mixed one (every property kind), or the
//! actor level's (a static actor, references, a fast array, a sub-object, ownership on and off,
//! dormancy, a relevancy close and reopen, a despawn, a tear-off, late spawns) — between its
//! frames; then the world keeps changing over a perfect link.
//! Unlike `client_receive`, the server answers the client's feedback, so this checks the whole
//! healing loop: refusals, reopen requests, NAKs and resends.
//!
//! Input: one byte whose top bit picks the world and whose low five bits say how many frames run
//! first, then packets, each a little-endian `u16` length and its bytes; the world runs a frame
//! after every second one. Checks: no panic, bounded allocation (libFuzzer's `-malloc_limit_mb`),
//! the client takes the server's newest packet again within `CATCH_UP` frames, and within
//! `SETTLE` frames after that it holds the server's values of everything that changes every frame — no wedge, and no copy a forger left wrong for good (a
//! forger with the session token can write values, which hold until the server's next change;
//! the fast array's items are not checked for that reason: most never change again).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shadowrep::ids::Seq;
use shadowrep_fuzz::{pick_live, split};

/// Frames the world gets to heal once the client takes the server's newest packet again (a
/// refusal's reopen takes a round trip, a class conflict's two; the door changes every fourth
/// frame).
const SETTLE: usize = 28;

/// Frames at most before the client takes the server's newest packet again: a forged packet
/// numbered ahead makes it drop the server's as late, until three of them in a row take its
/// window back — or, a jump of less than `ROLLBACK_DISTANCE` (which is not rolled back: honest
/// reordering looks the same, session 53), until the server's numbering passes it (the worlds
/// send a packet a frame at least). See the client's `window`.
const CATCH_UP: usize = shadowrep::client::ROLLBACK_DISTANCE as usize + 16;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let (mut w, before) = pick_live(first);
    for _ in 0..before {
        w.frame(true);
    }
    for (i, p) in split(rest).take(64).enumerate() {
        w.hostile_packet(p);
        if i % 2 == 1 {
            w.frame(true);
        }
    }
    let mut caught_up = None;
    for frame in 0..CATCH_UP + SETTLE {
        let packets = w.heal_frame();
        // A frame's packets are numbered in order.
        let newest = packets.last().and_then(|p| seq_of(p));
        if caught_up.is_none() && newest == Some(w.client_highest()) {
            caught_up = Some(frame);
        }
        match caught_up {
            Some(at) if frame >= at + 4 && w.values_converged() => return,
            Some(at) if frame >= at + SETTLE => break,
            None if frame >= CATCH_UP => break,
            _ => {}
        }
    }
    panic!(
        "no convergence {SETTLE} frames after the client took the server's newest packet ({caught_up:?}): {}",
        w.stats()
    );
});

/// A packet's sequence number (its first field).
fn seq_of(packet: &[u8]) -> Option<Seq> {
    let s = shadowrep::wire::BitReader::new(packet).read_packed().ok()?;
    u32::try_from(s).ok().map(Seq)
}
