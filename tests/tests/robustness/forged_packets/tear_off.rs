//! Forged tear-offs: one undone by the server's next bunch, one in a forged jump going with the
//! jump, and the server's own tear-off holding against its earlier packets.

use super::*;
use crate::Bench;
use shadowrep::value::Value;
use shadowrep::wire::feedback::ACK_WINDOW;

/// A counter the client has had for three frames, and a forged tear-off of it numbered `ahead`
/// past the client's newest packet, applied.
fn forged_tear_off(ahead: u32) -> (Bench, ActorId, NetGuid) {
    use shadowrep::wire::open::CloseReason;
    use shadowrep::wire::packet::write_close_for;
    let mut b = Bench::new(counter(), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(3);
    let h = b.client.highest_received().0;
    let forged = packet(h + ahead, |w| write_close_for(w, g, CloseReason::TornOff, None));
    assert!(matches!(b.client.receive(&forged), Ok(Receipt::Applied { .. })));
    assert!(b.client.is_torn_off(g), "the forged tear-off took");
    (b, a, g)
}

/// A forged "torn off" close: the client would keep the actor frozen, owned by it, for good. The
/// server's next bunch for the actor comes in a packet numbered after the close, which an honest
/// server never writes after a tear-off: the tear-off is undone and the actor replicates again.
#[test]
fn a_forged_tear_off_is_undone_by_the_servers_next_bunch() {
    let (mut b, a, g) = forged_tear_off(1);
    for v in 1..=10u32 {
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        b.run(1);
        // Frame 1's packet has the forged number: it replaces it, and its bunch undoes it.
        assert_eq!(b.client.value(g, 0), Some(Value::U32(v)), "frame {v}: {:?}", b.client.stats());
        assert!(!b.client.is_torn_off(g));
    }
    assert_eq!(b.client.stats().tear_offs_undone, 1);
}

/// A forged tear-off in a forged jump ahead: the server's packets, all numbered before it, would
/// be read past as the actor's last bunches before its tear-off, for good. The window going back
/// past the jump (three late packets never received) takes the tear-off with it.
#[test]
fn a_forged_tear_off_in_a_forged_jump_goes_with_the_jump() {
    let (mut b, a, g) = forged_tear_off(ACK_WINDOW);
    let mut healed = None;
    for v in 1..=10u32 {
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        b.run(1);
        if b.client.value(g, 0) == Some(Value::U32(v)) && !b.client.is_torn_off(g) {
            healed = Some(v);
            break;
        }
    }
    let stats = b.client.stats();
    let healed = healed.unwrap_or_else(|| panic!("frozen for good: {stats:?}"));
    assert!(healed <= 5, "healed in {healed} frames");
    assert_eq!((stats.window_rollbacks, stats.tear_offs_undone), (1, 1));
}

/// The server's own tear-off holds: its last bunches before the close, arriving late, are read
/// past — here through a forged packet with the close's number whose failure makes the client
/// forget that number, so the server's packets before the close are new to it again.
#[test]
fn a_real_tear_off_holds_against_the_servers_earlier_packets() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(3);
    b.store.set(a, 0, &Value::U32(5)).unwrap();
    let early = b.tick(); // lost for now
    b.driver.tear_off(b.class, &b.store, a).unwrap();
    // The frame after the call replicates the actor once more (nothing changed since `early`),
    // the next one closes it.
    let last = b.tick();
    b.deliver(&last);
    assert!(!b.client.is_torn_off(g));
    let close = b.tick();
    b.deliver(&close);
    assert!(b.client.is_torn_off(g));
    // The number of the close again, other bytes that fail (an open of a class that does not
    // exist): the client forgets that number.
    let open = shadowrep::wire::open::OpenHeader::spawn(99);
    let other = packet(b.client.highest_received().0, |w| {
        shadowrep::wire::packet::write_bunch(w, shadowrep::ids::NetGuid(g.0 + 100), Some(&open), &BitWriter::new())
    });
    assert!(b.client.receive(&other).is_err());
    assert_eq!(b.client.stats().restored, 1);
    for p in &early {
        assert!(matches!(b.client.receive(p), Ok(Receipt::Applied { .. })), "new to the client again");
    }
    assert!(b.client.is_torn_off(g), "a packet before the close proves nothing");
    assert_eq!(b.client.value(g, 0), Some(Value::U32(0)), "read past");
    assert_eq!(b.client.stats().tear_offs_undone, 0);
}
