//! Hostile packets to the client of a live world — the mixed one (every property kind), or the
//! actor level's (a static actor, references, a fast array, a sub-object, ownership on and off,
//! dormancy, a relevancy close and reopen, a despawn, a tear-off, late spawns) — between its
//! frames; then the world keeps changing over a perfect link.
//! Unlike `client_receive`, the server answers the client's feedback, so this checks the whole
//! healing loop: refusals, reopen requests, NAKs and resends.
//!
//! Input: one byte whose top bit picks the world and whose low five bits say how many frames run
//! first, then packets, each a
//! little-endian `u16` length and its bytes; the world runs a frame after every second one.
//! Checks: no panic, bounded allocation (libFuzzer's `-malloc_limit_mb`), and within a bounded
//! number of frames after the server's numbering passes the client's newest packet, the client holds the server's values of
//! everything that changes every frame — no wedge, and no copy a forger left wrong for good (a
//! forger with the session token can write values, which hold until the server's next change;
//! the fast array's items are not checked for that reason: most never change again).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shadowrep::ids::Seq;
use shadowrep_fuzz::{pick_live, split};

/// Frames the world gets to heal once the server's numbering is past the client's newest packet
/// (a refusal's reopen takes a round trip, a class conflict's two; the door changes every fourth
/// frame). Before that, a forged packet numbered ahead of the server makes the client drop the
/// server's packets as late — a stall of at most `ACK_WINDOW` packets, by design (see the
/// client's `window`).
const SETTLE: usize = 28;

/// Frames at most before the server's numbering passes the client's newest: the window, and
/// more (one packet a frame at least).
const CATCH_UP: usize = 300;

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
    let newest = w.client_highest();
    let mut caught_up = None;
    for frame in 0..CATCH_UP + SETTLE {
        let packets = w.heal_frame();
        let past = packets.iter().any(|p| seq_of(p).is_some_and(|s| s.ahead_of(newest) > 0));
        if past && caught_up.is_none() {
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
        "no convergence {SETTLE} frames after the server's numbering passed the client's newest ({caught_up:?}): {}",
        w.stats()
    );
});

/// A packet's sequence number (its first field).
fn seq_of(packet: &[u8]) -> Option<Seq> {
    let s = shadowrep::wire::BitReader::new(packet).read_packed().ok()?;
    u32::try_from(s).ok().map(Seq)
}
