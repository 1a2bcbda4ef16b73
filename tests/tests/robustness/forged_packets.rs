//! One forged server→client packet (an on-path attacker who saw the session token) never leaves
//! a connection or an actor wrong for good: each test injects one, then runs a perfect link and
//! asserts the client converges to the server's values within a bounded number of frames.

use crate::Bench;
use shadowrep::client::Receipt;
use shadowrep::ids::Seq;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::value::Value;
use shadowrep::wire::feedback::ACK_WINDOW;
use shadowrep::wire::packet::{begin_packet, end_packet};
use shadowrep::wire::BitWriter;

fn counter() -> ClassBuilder {
    ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32))
}

fn empty_packet(seq: u32) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    end_packet(&mut w);
    w.into_bytes()
}

/// A forged jump of the whole window while the client's feedback for the server's newest packet
/// is still on its way (the normal state of a live connection): the server's window ends before
/// the forged number, so it could never reach it. The client's feedback names a packet the
/// server never sent, but what it says of the packets the server did send settles them, and the
/// server's numbering reaches the forged packet and replaces it within the window.
#[test]
fn a_forged_jump_with_feedback_in_flight_recovers_within_the_window() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(3);
    // One more frame: the client has it, the server has not heard so yet.
    b.store.set(a, 0, &Value::U32(7)).unwrap();
    for p in b.tick() {
        b.client.receive(&p).unwrap();
    }
    let h = b.client.highest_received().0;
    assert!(matches!(b.client.receive(&empty_packet(h + ACK_WINDOW)), Ok(Receipt::Applied { .. })));
    let mut v = 100;
    let mut frames = 0;
    loop {
        v += 1;
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        let packets = b.tick();
        b.deliver(&packets);
        frames += 1;
        if b.client.value(g, 0) == Some(Value::U32(v)) {
            break;
        }
        assert!(
            frames < 2 * ACK_WINDOW,
            "wedged after {frames} frames: client {:?}, want {v}; {:?}",
            b.client.value(g, 0),
            b.driver.connection_stats(b.conn).unwrap()
        );
    }
    assert!(frames <= ACK_WINDOW + 2, "the stall lasted {frames} frames (one packet each)");
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert!(stats.feedback_ahead >= 1 && b.client.stats().replaced == 1, "{stats:?}");
    for _ in 0..20 {
        v += 1;
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        b.run(1);
        assert_eq!(b.client.value(g, 0), Some(Value::U32(v)), "every frame from here");
    }
}
