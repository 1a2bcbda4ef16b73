//! `NetDriver::receive_feedback` on hostile feedback, between the frames of a live world whose
//! client is honest (the mixed world, or the actor level's with a static actor, a fast array and
//! a sub-object): forged acknowledgements, huge counts, reopen requests for anything.
//!
//! Input: one byte choosing the world (top bit), where the feedback arrives (bit 6: after the
//! game's calls of the next frame, before its tick — where `SinceTick` and the ended channels'
//! records hold what the calls did; else after the tick) and how many frames run first (low
//! five bits), then feedback messages, each a little-endian `u16` length and its bytes; the
//! world runs a frame after every second one. Checks: no panic, bounded allocation (libFuzzer's
//! `-malloc_limit_mb`), and once the hostile feedback stops, the connection converges: within a
//! bounded number of frames with no new changes, the client holds the server's values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shadowrep_fuzz::{pick_live, split};

/// Frames the world gets to converge after the hostile feedback (a lost packet's NAK and
/// resend take a round trip; a refused packet's reopen two).
const SETTLE: usize = 24;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let (mut w, before) = pick_live(first);
    for _ in 0..before {
        w.frame(true);
    }
    let between = first & 0x40 != 0;
    for (i, fb) in split(rest).take(64).enumerate() {
        if between && i % 2 == 0 {
            w.calls();
        }
        w.hostile_feedback(fb);
        if i % 2 == 1 {
            // Between: the calls were made before this pair of feedbacks; the tick alone now.
            w.frame(!between);
        }
    }
    // One more change everywhere, then quiet: every value must arrive.
    w.frame(true);
    for _ in 0..SETTLE {
        if w.converged() {
            return;
        }
        w.frame(false);
    }
    panic!("no convergence {SETTLE} frames after hostile feedback: {}", w.stats());
});
