//! Forged opens giving a GUID another class than the server's: an open of a future GUID, a forged
//! close and open (sent once or again after its conflict), a late packet whose number came with
//! other bytes, and a wrong-class copy whose misread updates break off, break the next bunch's
//! header or name a missing actor — every one healed by the server's reopen.

use super::*;
use shadowrep::client::ReceiveError;
use shadowrep::value::Value;
use shadowrep::wire::bunch::PLAIN_FOR_MISSING;
use shadowrep::wire::WireError;

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
