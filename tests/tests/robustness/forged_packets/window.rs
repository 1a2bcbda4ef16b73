//! Forged packet numbers: a forged jump of the whole window (with feedback in flight, or closing
//! an actor) taken back by the server's late packets, and a refused packet whose number was forged
//! reported missing and resent.

use super::*;
use crate::Bench;
use shadowrep::value::Value;
use shadowrep::wire::feedback::ACK_WINDOW;

/// A forged jump of the whole window while the client's feedback for the server's newest packet
/// is still on its way (the normal state of a live connection): the server's window ends before
/// the forged number, so it could never reach it. The client's feedback names a packet the
/// server never sent, but what it says of the packets the server did send settles them; the
/// server's packets arrive late, never received, and the third in a row takes the client's
/// window back to before the forged number (`window_rollbacks`).
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
    assert!(frames <= 4, "the stall lasted {frames} frames (one packet each)");
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert!(stats.feedback_ahead >= 1 && b.client.stats().window_rollbacks == 1, "{stats:?}");
    for _ in 0..20 {
        v += 1;
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        b.run(1);
        assert_eq!(b.client.value(g, 0), Some(Value::U32(v)), "every frame from here");
    }
}

/// A forged packet with the server's next number closes actor 0; the server's real packet with
/// that number updates actors 0 and 1 and is refused (a plain bunch for an actor the client no
/// longer has). The number must not stay acknowledged: the client forgets it, the server resends
/// that packet's content, and actor 0 comes back by its reopen — actor 1's update, never sent
/// again otherwise, arrives.
#[test]
fn a_refused_packet_whose_number_was_forged_is_reported_missing_and_resent() {
    use shadowrep::wire::packet::write_close;
    let mut b = Bench::new(counter(), DriverConfig::default());
    let (a0, a1) = (b.store.spawn(), b.store.spawn());
    let (g0, g1) = (b.guid(a0), b.guid(a1));
    b.run(3);
    let h = b.client.highest_received().0;
    let forged = packet(h + 1, |w| write_close(w, g0));
    assert!(matches!(b.client.receive(&forged), Ok(Receipt::Applied { .. })));
    b.store.set(a0, 0, &Value::U32(1)).unwrap();
    b.store.set(a1, 0, &Value::U32(1)).unwrap();
    let p = b.tick();
    assert_eq!(p.len(), 1);
    assert!(b.client.receive(&p[0]).is_err(), "refused");
    assert_eq!(b.client.highest_received().0, h, "the forged number is forgotten");
    assert_eq!(b.client.stats().restored, 1);
    b.feed_back();
    for frame in 0..10 {
        b.run(1); // the actors never change again: only a resend brings actor 1's value
        if (b.client.value(g0, 0), b.client.value(g1, 0)) == (Some(Value::U32(1)), Some(Value::U32(1))) {
            eprintln!("recovered after {} frames", frame + 1);
            return;
        }
    }
    panic!(
        "actor 0 {:?}, actor 1 {:?} (want 1, 1): {:?}",
        b.client.value(g0, 0),
        b.client.value(g1, 0),
        b.driver.connection_stats(b.conn).unwrap()
    );
}

/// The same with a forged jump of the whole window that closes actor 0: the server's packets
/// behind it take the window back (see the test above), and the closed actor's next update is
/// refused and asks for it again.
#[test]
fn a_forged_jump_that_closes_an_actor_recovers_when_the_servers_packet_is_refused() {
    use shadowrep::wire::packet::write_close;
    let mut b = Bench::new(counter(), DriverConfig::default());
    let (a0, a1) = (b.store.spawn(), b.store.spawn());
    let (g0, g1) = (b.guid(a0), b.guid(a1));
    b.run(3);
    let h = b.client.highest_received().0;
    let forged = packet(h + ACK_WINDOW, |w| write_close(w, g0));
    assert!(matches!(b.client.receive(&forged), Ok(Receipt::Applied { .. })));
    let mut v = 0;
    let mut frames = 0;
    loop {
        v += 1;
        b.store.set(a0, 0, &Value::U32(v)).unwrap();
        b.store.set(a1, 0, &Value::U32(v)).unwrap();
        let packets = b.tick();
        for p in &packets {
            let _ = b.client.receive(p); // the server's packet with the forged number is refused
        }
        b.feed_back();
        frames += 1;
        if (b.client.value(g0, 0), b.client.value(g1, 0)) == (Some(Value::U32(v)), Some(Value::U32(v))) {
            break;
        }
        assert!(
            frames < 2 * ACK_WINDOW,
            "wedged: {:?} {:?}, want {v}; {:?} {:?}",
            b.client.value(g0, 0),
            b.client.value(g1, 0),
            b.client.stats(),
            b.driver.connection_stats(b.conn).unwrap()
        );
    }
    assert!(frames <= 8, "{frames} frames");
    assert_eq!(b.client.stats().window_rollbacks, 1);
    for _ in 0..10 {
        v += 1;
        b.store.set(a0, 0, &Value::U32(v)).unwrap();
        b.store.set(a1, 0, &Value::U32(v)).unwrap();
        b.run(1);
    }
    assert_eq!((b.client.value(g0, 0), b.client.value(g1, 0)), (Some(Value::U32(v)), Some(Value::U32(v))));
}
