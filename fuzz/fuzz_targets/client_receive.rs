//! `ClientWorld::receive` on hostile packets, from a client that has applied a prefix of a
//! recorded server run (so the packets meet actors, classes and a sequence window that exist):
//! the mixed world's (every property kind) or the actor level's (statics, fast arrays,
//! sub-objects, references, tear-off).
//!
//! Input: one byte choosing the run (top bit) and the prefix, then packets, each a little-endian `u16` length and its
//! bytes. Checks: no panic (libFuzzer's `-malloc_limit_mb` bounds what one input may allocate),
//! and whatever the packets did, the client still takes each recorded packet that follows, or
//! refuses it asking for an actor again (what the server heals by).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shadowrep::wire::feedback::read_feedback;
use shadowrep_fuzz::{pick, split};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let (rec, k) = pick(first);
    let mut client = rec.client_after(k);
    for packet in split(rest) {
        let _ = client.receive(packet);
        let _ = client.feedback();
        let _ = client.take_notifies();
    }
    // The server's own packets still get through or ask for help: a packet refused after a
    // forged close (a plain bunch for an actor the client lacks cannot be read), or after a
    // forged close and open with another class (the update is read with the wrong class and
    // breaks off), asks for an actor again — the server treats the packet as lost and opens
    // the actor anew. A refusal that asks for nothing would be sent again, refused again, and
    // wedge the connection.
    for p in &rec.packets[k..] {
        if let Err(e) = client.receive(p) {
            let fb = read_feedback(&client.feedback()).expect("the client's feedback decodes");
            assert!(!fb.reopen.is_empty(), "a recorded packet was refused, asking for nothing: {e:?}");
        }
    }
});
