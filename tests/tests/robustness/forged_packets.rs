//! One forged server→client packet (an on-path attacker who saw the session token) never leaves
//! a connection or an actor wrong for good: each test injects one, then runs a perfect link and
//! asserts the client converges to the server's values within a bounded number of frames.

use crate::Bench;
use shadowrep::client::{ClientWorld, Receipt, ReceiveError};
use shadowrep::ids::{ClassId, ConnectionId, NetGuid, Seq};
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::bunch::PLAIN_FOR_MISSING;
use shadowrep::wire::feedback::ACK_WINDOW;
use shadowrep::wire::open::OpenHeader;
use shadowrep::wire::packet::write_bunch;
use shadowrep::wire::packet::{begin_packet, end_packet};
use shadowrep::wire::{BitWriter, WireError};
use std::sync::Arc;

fn counter() -> ClassBuilder {
    ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32))
}

fn empty_packet(seq: u32) -> Vec<u8> {
    packet(seq, |_| {})
}

/// A packet numbered `seq` whose bunches `f` writes (what a forger with the token sends).
fn packet(seq: u32, f: impl FnOnce(&mut BitWriter)) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    f(&mut w);
    end_packet(&mut w);
    w.into_bytes()
}

/// A driver with two classes — [`counter`] (class 0) and `other` (class 1) — and one client,
/// driven by hand: every packet is offered to the client (a refusal is allowed) and its feedback
/// returned.
struct TwoClasses {
    driver: NetDriver,
    counters: ClassStore,
    others: ClassStore,
    class: ClassId,
    conn: ConnectionId,
    client: ClientWorld,
}

impl TwoClasses {
    fn new(other: ClassBuilder) -> Self {
        let (la, lb) = (Arc::new(counter().build().unwrap()), Arc::new(other.build().unwrap()));
        let (mut counters, mut others) = (ClassStore::new(la.clone()), ClassStore::new(lb.clone()));
        let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
        let class = driver.register_class(&mut counters).unwrap();
        driver.register_class(&mut others).unwrap();
        let conn = driver.add_connection(false);
        let client = ClientWorld::new(&[la, lb], &driver.checksums()).unwrap();
        TwoClasses { driver, counters, others, class, conn, client }
    }

    /// A counter, with its GUID.
    fn spawn(&mut self) -> (ActorId, NetGuid) {
        let id = self.counters.spawn();
        (id, self.driver.assign_guid(self.class, &self.counters, id).unwrap())
    }

    /// A counter the client has had for three frames, with its GUID.
    fn spawn_settled(&mut self) -> (ActorId, NetGuid) {
        let spawned = self.spawn();
        for _ in 0..3 {
            self.step();
        }
        spawned
    }

    /// A counter whose open the client never gets: the server's packet carrying it is lost, and
    /// a forged packet with its number, opening the counter's GUID with class 1, took its place —
    /// so the client acknowledges it, and the server counts its open delivered. The client's
    /// copy has the forger's class, and no open of the server's is left to conflict with it (a
    /// forged close and a forged open after it no longer get there: the client remembers the
    /// class of what it closed).
    fn spawn_forged(&mut self) -> (ActorId, NetGuid) {
        let (id, guid) = self.spawn();
        self.driver.tick(&mut [&mut self.counters, &mut self.others]).unwrap();
        let lost = self.driver.take_packets(self.conn).unwrap();
        assert_eq!(lost.len(), 1);
        let seq = shadowrep::wire::BitReader::new(&lost[0]).read_packed().unwrap() as u32;
        let forged = packet(seq, |w| write_bunch(w, guid, Some(&OpenHeader::spawn(1)), &BitWriter::new()));
        assert!(matches!(self.client.receive(&forged), Ok(Receipt::Applied { .. })));
        assert_eq!(self.client.class_of(guid), Some(1), "the forged copy took");
        self.driver.receive_feedback(self.conn, &self.client.feedback()).unwrap();
        (id, guid)
    }

    fn step(&mut self) {
        self.driver.tick(&mut [&mut self.counters, &mut self.others]).unwrap();
        for p in self.driver.take_packets(self.conn).unwrap() {
            let _ = self.client.receive(&p);
        }
        self.driver.receive_feedback(self.conn, &self.client.feedback()).unwrap();
    }
}

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

/// A forged open of the next dynamic GUID with another class, before the server spawns its actor
/// with that GUID: the server's open meets a copy of the wrong class. It is stepped over (not
/// refused: every packet resending it would be refused too, and the connection with it), the
/// wrong copy is destroyed and the actor asked for again, and the server's reopen gives the
/// client the right class; the other actor's updates flow throughout.
#[test]
fn a_forged_open_of_a_future_guid_with_another_class_heals() {
    let mut t = TwoClasses::new(ClassBuilder::new("B").property(PropertyDecl::new("M", PropType::U8)));
    let (a0, g0) = t.spawn();
    for _ in 0..3 {
        t.step();
    }
    // Dynamic GUIDs go up by two (their parity tells them from static ones).
    let future = NetGuid(g0.0 + 2);
    let forged = packet(t.client.highest_received().0 + 1, |w| {
        write_bunch(w, future, Some(&OpenHeader::spawn(1)), &BitWriter::new())
    });
    assert!(matches!(t.client.receive(&forged), Ok(Receipt::Applied { .. })));
    assert_eq!(t.client.class_of(future), Some(1), "the forged open took");
    let (a1, g1) = t.spawn();
    assert_eq!(g1, future);
    for v in 1..=10u32 {
        t.counters.set(a0, 0, &Value::U32(v)).unwrap();
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.step();
        assert_eq!(t.client.value(g0, 0), Some(Value::U32(v)), "frame {v}: the connection flows");
        if v >= 4 {
            assert_eq!(
                (t.client.class_of(future), t.client.value(future, 0)),
                (Some(0), Some(Value::U32(v))),
                "frame {v}: healed within a round trip; {:?}",
                t.client.stats()
            );
        }
    }
    assert_eq!(t.client.stats().open_conflicts, 1);
}

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

/// A copy of an actor with another class than the server's, with no open of the server's to
/// conflict with (`TwoClasses::spawn_forged`; `fuzz/`'s `client_receive` found it through a
/// forged close and a forged open): the server's updates of the actor are plain (they do not
/// name the class) and, read with the wrong class, break off, so their packets are refused —
/// and, sent again plain, refused again, with every other actor's updates in them, for as long
/// as the actor changes. A packet that breaks off in an update asks for that actor again; the
/// server's open names the class, the wrong copy is replaced, and the connection flows within a
/// few round trips.
#[test]
fn a_wrong_class_copy_whose_updates_break_off_does_not_wedge_the_connection() {
    let mut wide = ClassBuilder::new("Wide");
    for i in 0..8 {
        wide = wide.property(PropertyDecl::new(format!("P{i}"), PropType::U32));
    }
    let mut t = TwoClasses::new(wide);
    let (a1, g1) = t.spawn_settled();
    let (a0, g0) = t.spawn_forged();
    let mut v = 0u32;
    let mut step = |t: &mut TwoClasses| {
        v += 1;
        t.counters.set(a0, 0, &Value::U32(v)).unwrap();
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.step();
        v
    };
    let mut healed = None;
    for frame in 1..=12 {
        let v = step(&mut t);
        let values = (t.client.value(g0, 0), t.client.value(g1, 0));
        if t.client.class_of(g0) == Some(0) && values == (Some(Value::U32(v)), Some(Value::U32(v))) {
            healed = Some(frame);
            break;
        }
    }
    let stats = t.client.stats();
    assert!(stats.refused > 0, "the server's updates of the wrong copy broke off: {stats:?}");
    let healed = healed.unwrap_or_else(|| panic!("wedged: {stats:?} {:?}", t.driver.connection_stats(t.conn)));
    assert!(healed <= 6, "healed in {healed} frames");
    for _ in 0..5 {
        let v = step(&mut t);
        assert_eq!((t.client.value(g0, 0), t.client.value(g1, 0)), (Some(Value::U32(v)), Some(Value::U32(v))));
    }
}

/// A forged close and a forged open of the same GUID with another class: the client remembers
/// the class of the actor it closed, so the open is stepped over as a class conflict — no copy of
/// the wrong class to misread the server's plain updates with (they may decode cleanly, as
/// garbage, with nothing refused) — and the actor is asked for again. The server's reopen takes
/// (the record is forgotten, whichever side was forged), and the connection never refuses a
/// packet of the server's.
#[test]
fn a_forged_close_and_open_with_another_class_is_stepped_over() {
    use shadowrep::wire::packet::write_close;
    let mut t = TwoClasses::new(ClassBuilder::new("B").property(PropertyDecl::new("M", PropType::U8)));
    let ((a0, g0), (a1, g1)) = (t.spawn(), t.spawn());
    let mut v = 0u32;
    let mut step = |t: &mut TwoClasses| {
        v += 1;
        t.counters.set(a0, 0, &Value::U32(v)).unwrap();
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.step();
        v
    };
    for _ in 0..3 {
        step(&mut t);
    }
    let h = t.client.highest_received().0;
    let close = packet(h + 1, |w| write_close(w, g0));
    let open = packet(h + 2, |w| write_bunch(w, g0, Some(&OpenHeader::spawn(1)), &BitWriter::new()));
    for p in [close, open] {
        assert!(matches!(t.client.receive(&p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(t.client.class_of(g0), None, "the open was stepped over");
    assert_eq!(t.client.stats().open_conflicts, 1);
    // The server's first packet has the forged close's number, older than the newest received
    // (the forged open's): dropped as late, its content NAKed and resent. Its second replaces
    // the forged open's packet (same number, other bytes).
    for frame in 1..=6 {
        let v = step(&mut t);
        if frame >= 2 {
            assert_eq!(t.client.value(g1, 0), Some(Value::U32(v)), "frame {frame}: the connection flows");
            assert_eq!(
                (t.client.class_of(g0), t.client.value(g0, 0)),
                (Some(0), Some(Value::U32(v))),
                "frame {frame}: healed within a round trip; {:?}",
                t.client.stats()
            );
        }
    }
    assert_eq!(t.client.stats().refused, 0, "no packet of the server's refused");
    assert_eq!(t.client.stats().open_conflicts, 1, "the server's reopen took");
}

/// The same, the forged open sent again after the conflict: the second meets no copy (the first
/// conflict dropped it) and no record (whichever open was forged, the server's must take), so it
/// applies — and its bunch used to cancel the reopen request, leaving a copy of the wrong class
/// whose misread updates decode (a class of the same shape), for good. A conflict's request
/// rides all its feedbacks whatever bunches come: the server's reopen comes last.
#[test]
fn a_forged_open_repeated_after_its_conflict_still_heals() {
    use shadowrep::wire::packet::write_close;
    let mut t = TwoClasses::new(ClassBuilder::new("Twin").property(PropertyDecl::new("M", PropType::U32)));
    let (a0, g0) = t.spawn();
    let (a1, _) = t.spawn_settled();
    let h = t.client.highest_received().0;
    let open = |seq| packet(seq, |w| write_bunch(w, g0, Some(&OpenHeader::spawn(1)), &BitWriter::new()));
    for p in [packet(h + 1, |w| write_close(w, g0)), open(h + 2), open(h + 3)] {
        assert!(matches!(t.client.receive(&p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(t.client.class_of(g0), Some(1), "the second forged open took");
    let mut healed = None;
    for v in 1..=12u32 {
        // The server's packets with the forged numbers carry the other actor only (late, with
        // other bytes, they ask for what they name: not this one).
        if v > 3 {
            t.counters.set(a0, 0, &Value::U32(v)).unwrap();
        }
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.step();
        if v <= 3 {
            continue;
        }
        if (t.client.class_of(g0), t.client.value(g0, 0)) == (Some(0), Some(Value::U32(v))) {
            healed = Some(v);
            break;
        }
    }
    let stats = t.client.stats();
    let healed = healed.unwrap_or_else(|| panic!("fooled for good: {stats:?}"));
    assert!(healed <= 8, "healed in {healed} frames: {stats:?}");
}

/// The same wrong-class copy without a lost packet: two forged packets numbered as the server's
/// next two, the first opening the server's next actor with another class (here one of the same
/// shape, so its updates always decode: nothing is ever refused). The server's own packet with
/// the first number, carrying its open, arrives after the forged second and is dropped as late;
/// the client has acknowledged that number (for the forged packet), so the server counts its
/// open delivered and sends plain updates, read into the wrong class. A late packet whose number
/// the client received with other bytes proves one of the two forged: the actors it names are
/// asked for again, and the server's reopen names the class.
#[test]
fn a_late_packet_whose_number_came_with_other_bytes_asks_for_its_actors() {
    let mut t = TwoClasses::new(ClassBuilder::new("Twin").property(PropertyDecl::new("M", PropType::U32)));
    let (a1, g1) = t.spawn_settled();
    let (a0, g0) = t.spawn();
    let h = t.client.highest_received().0;
    let forged =
        [packet(h + 1, |w| write_bunch(w, g0, Some(&OpenHeader::spawn(1)), &BitWriter::new())), empty_packet(h + 2)];
    for p in &forged {
        assert!(matches!(t.client.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(t.client.class_of(g0), Some(1), "the forged copy took");
    let mut healed = None;
    for v in 1..=12u32 {
        t.counters.set(a0, 0, &Value::U32(v)).unwrap();
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.step();
        if t.client.class_of(g0) == Some(0)
            && (t.client.value(g0, 0), t.client.value(g1, 0)) == (Some(Value::U32(v)), Some(Value::U32(v)))
        {
            healed = Some(v);
            break;
        }
    }
    let stats = t.client.stats();
    assert_eq!(stats.refused, 0, "nothing refused: the misread updates decode");
    let healed = healed.unwrap_or_else(|| panic!("fooled for good: {stats:?}"));
    assert!(healed <= 6, "healed in {healed} frames");
    assert_eq!(stats.late_conflicts, 1, "{stats:?}");
}

/// The same wedge reached another way (found by `fuzz/`'s `client_receive` from the mixed
/// world's recording; these are its two packets): before the server's first packet, a forged
/// open gives actor 4 the small class. The server's updates of it, read with that class, end
/// early, and the bits after them read as an open of a class that does not exist — an error in
/// the next bunch's header, after the update. That refusal too must ask for the actor whose
/// update came before the error: a refusal that asks for nothing is resent and refused for good.
#[test]
fn a_misread_update_that_breaks_the_next_bunch_asks_for_its_actor() {
    use shadowrep::wire::feedback::read_feedback;
    use shadowrep_tests::{mixed_layouts, mixed_world};
    let hex =
        |s: &str| (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect::<Vec<u8>>();
    let forged = [
        hex("0221140000000000000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff60ffffffffffffffffffffffffffff"),
        hex("0800000000000000ffffff400401002a00"),
    ];
    // The fuzz target's recorded world: its packets go to an honest client and to the victim.
    let layouts = mixed_layouts();
    let mut w = mixed_world(11);
    let mut victim = ClientWorld::new(&layouts, &w.driver.checksums()).unwrap();
    for p in &forged {
        assert!(matches!(victim.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(victim.class_of(NetGuid(4)), Some(1), "the forged open took");
    let mut class_id_refusals = 0;
    for _ in 0..6 {
        w.mutate(0.7);
        let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).unwrap();
        let c = &mut w.clients[0];
        for p in w.driver.take_packets(c.conn).unwrap() {
            c.world.receive(&p).expect("the honest client applies every packet");
            if let Err(e) = victim.receive(&p) {
                class_id_refusals += usize::from(e == ReceiveError::Wire(WireError::Invalid("class id")));
                let fb = read_feedback(&victim.feedback()).unwrap();
                assert!(!fb.reopen.is_empty(), "refused ({e}), asking for nothing: {:?}", victim.stats());
            }
        }
        w.driver.receive_feedback(c.conn, &c.world.feedback()).unwrap();
    }
    assert!(class_id_refusals > 0, "the misread update broke the next bunch's header");
}

/// The wedge's third way: the copy's class (one bool) reads the server's update (one `u32`) as
/// one bit, and the value's other bits as the next bunch's header — here, a plain bunch for a
/// GUID the client lacks (and the server never had). That GUID is asked for, as any missing
/// actor is, and the server ignores the request; the resend of the update is refused the same
/// way. The same refusal again while the first request still rides asks for the actor read
/// before it too, and the world heals.
#[test]
fn a_misread_update_that_names_a_missing_actor_is_asked_for_on_the_second_refusal() {
    let mut t = TwoClasses::new(ClassBuilder::new("Flag").property(PropertyDecl::new("F", PropType::Bool)));
    let (a1, g1) = t.spawn_settled();
    let (a0, g0) = t.spawn_forged();
    // Values whose bits after the first read as "another bunch, plain, for a GUID nobody has"
    // (the high nibble changes every frame, so the update is sent every frame).
    let bits = |v: u32| 0xdaa6_6d2bu32.wrapping_add(v << 28);
    let (mut missing_refusals, mut healed) = (0, None);
    for v in 1..=12u32 {
        t.counters.set(a0, 0, &Value::U32(bits(v))).unwrap();
        t.counters.set(a1, 0, &Value::U32(v)).unwrap();
        t.driver.tick(&mut [&mut t.counters, &mut t.others]).unwrap();
        for p in t.driver.take_packets(t.conn).unwrap() {
            let r = t.client.receive(&p);
            missing_refusals += usize::from(r == Err(ReceiveError::Wire(WireError::Invalid(PLAIN_FOR_MISSING))));
        }
        t.driver.receive_feedback(t.conn, &t.client.feedback()).unwrap();
        let values = (t.client.value(g0, 0), t.client.value(g1, 0));
        if t.client.class_of(g0) == Some(0) && values == (Some(Value::U32(bits(v))), Some(Value::U32(v))) {
            healed = Some(v);
            break;
        }
    }
    let stats = t.client.stats();
    assert!(missing_refusals >= 2, "the misread update named a missing actor, twice: {stats:?}");
    let healed = healed.unwrap_or_else(|| panic!("wedged: {stats:?} {:?}", t.driver.connection_stats(t.conn)));
    assert!(healed <= 8, "healed in {healed} frames");
}
