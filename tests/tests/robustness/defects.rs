//! The defects of the hardening issue, each reproduced.

use crate::Bench;
use shadowrep::client::ReceiveError;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, Condition, PropType, PropertyDecl};
use shadowrep::value::Value;
use shadowrep::wire::bunch::PLAIN_FOR_MISSING;
use shadowrep::wire::feedback::ack_everything;
use shadowrep::wire::WireError;

fn initial_class() -> ClassBuilder {
    ClassBuilder::new("Spawned")
        .property(PropertyDecl::new("N", PropType::U32))
        .property(PropertyDecl::new("Init", PropType::U32).condition(Condition::InitialOnly))
        .property(PropertyDecl::new("InitOrOwner", PropType::U32).condition(Condition::InitialOrOwner))
}

/// Packet 1 (open + InitialOnly values) is lost; packet 2 repeats the open with an ordinary
/// change and arrives. The ack of packet 2 acknowledges the open, but the InitialOnly values
/// packet 1 carried stay owed until a packet carrying them is acknowledged.
#[test]
fn initial_only_values_survive_the_loss_of_the_first_open() {
    let mut b = Bench::new(initial_class(), DriverConfig::default());
    let a = b.store.spawn();
    let guid = b.guid(a);
    for (p, v) in [(0, 1), (1, 7), (2, 9)] {
        b.store.set(a, p, &Value::U32(v)).unwrap();
    }
    let lost = b.tick();
    assert_eq!(lost.len(), 1);
    b.store.set(a, 0, &Value::U32(2)).unwrap();
    let second = b.tick();
    b.deliver(&second);
    assert_eq!(b.client.value(guid, 0), Some(Value::U32(2)), "the second packet opened the actor");
    assert_eq!(b.client.value(guid, 1), Some(Value::U32(0)), "InitialOnly not there yet");
    b.run(3);
    assert_eq!(b.client.value(guid, 1), Some(Value::U32(7)), "InitialOnly resent after the nak");
    assert_eq!(b.client.value(guid, 2), Some(Value::U32(9)), "InitialOrOwner resent after the nak");
    // And it is not sent again once delivered.
    b.store.set(a, 1, &Value::U32(70)).unwrap();
    b.run(3);
    assert_eq!(b.client.value(guid, 1), Some(Value::U32(7)), "InitialOnly is initial only");
}

/// The resend of a lost InitialOnly value can itself be lost: it stays owed.
#[test]
fn a_lost_resend_of_an_initial_only_value_is_resent_again() {
    let mut b = Bench::new(initial_class(), DriverConfig::default());
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.store.set(a, 1, &Value::U32(7)).unwrap();
    let _lost = b.tick();
    b.store.set(a, 0, &Value::U32(2)).unwrap();
    let second = b.tick();
    b.deliver(&second);
    let resend = b.tick();
    assert!(!resend.is_empty(), "the nak produced a resend");
    // Lose the resend; a later packet reveals the loss.
    b.store.set(a, 0, &Value::U32(3)).unwrap();
    let later = b.tick();
    b.deliver(&later);
    b.run(3);
    assert_eq!(b.client.value(guid, 1), Some(Value::U32(7)));
}

/// An update for an actor the client does not have (here: a client that claimed to have received
/// the open it lost) is a plain bunch the client cannot read past: it refuses the packet — which
/// the server then treats as lost and sends again — and asks for the actor; the server opens it
/// again, once per round trip. The liar pays a refused packet per actor it lied about, and
/// converges.
#[test]
fn a_false_claim_of_an_open_is_repaired_by_a_reopen() {
    let mut b = Bench::new(initial_class(), DriverConfig::default());
    let ids: Vec<_> = (0..3).map(|_| b.store.spawn()).collect();
    let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
    b.store.set(ids[0], 1, &Value::U32(11)).unwrap();
    let lost = b.tick();
    // The client never got these packets but acknowledges all of them.
    let lie = ack_everything(lost.last().expect("a packet")).unwrap();
    b.driver.receive_feedback(b.conn, &lie).unwrap();
    for &id in &ids {
        let n = b.store.get(id, 0).unwrap();
        let Value::U32(n) = n else { panic!() };
        b.store.set(id, 0, &Value::U32(n + 1)).unwrap();
    }
    let updates = b.tick();
    assert_eq!(updates.len(), 1);
    assert_eq!(
        b.client.receive(&updates[0]),
        Err(ReceiveError::Wire(WireError::Invalid(PLAIN_FOR_MISSING))),
        "plain bunches for actors the client lacks"
    );
    assert_eq!(b.client.stats().reopens_requested, 1, "the first of them, where the decode stopped");
    b.feed_back();
    for _ in 0..8 {
        for p in b.tick() {
            let _ = b.client.receive(&p);
        }
        b.feed_back();
    }
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert_eq!(stats.reopens_honoured, 3, "{stats:?}");
    assert_eq!(b.client.stats().reopens_requested, 3);
    assert_eq!(b.client.stats().refused, 3, "one refused packet per actor lied about");
    for (i, &g) in guids.iter().enumerate() {
        assert!(b.client.has(g), "actor {i} reopened");
        assert_eq!(b.client.value(g, 0), Some(Value::U32(1)));
    }
    assert_eq!(b.client.value(guids[0], 1), Some(Value::U32(11)), "a reopen sends initial values too");
    // Converged: later packets apply.
    b.store.set(ids[2], 0, &Value::U32(5)).unwrap();
    b.run(1);
    assert_eq!(b.client.value(guids[2], 0), Some(Value::U32(5)));
}

/// Reopen requests for an actor whose open is on its way, or that the server never had, are
/// ignored: they cannot make the server send more than it would.
#[test]
fn reopen_requests_are_honoured_at_most_once_per_round_trip() {
    use shadowrep::ids::{NetGuid, Seq};
    use shadowrep::wire::feedback::{write_feedback, AckBits};
    use shadowrep::wire::BitWriter;
    let mut b = Bench::new(initial_class(), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(2);
    let newest = b.client.highest_received();
    let ask = |guids: &[NetGuid], highest: Seq| {
        let mut w = BitWriter::new();
        write_feedback(&mut w, highest, &AckBits([u64::MAX; 4]), guids);
        w.into_bytes()
    };
    // The first request is honoured; repeats before the new open is acknowledged are not.
    for _ in 0..100 {
        b.driver.receive_feedback(b.conn, &ask(&[g, NetGuid(1000)], newest)).unwrap();
    }
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert_eq!((stats.reopens_honoured, stats.reopens_ignored), (1, 199));
    let reopened = b.tick();
    assert_eq!(reopened.len(), 1, "one open, once");
    b.deliver(&reopened);
    assert!(b.client.has(g));
}

/// One feedback covers every packet since the last one: a frame of far more than 32 packets,
/// acknowledged once, is settled without a single spurious loss.
#[test]
fn one_feedback_settles_a_frame_of_many_packets() {
    let mut b = Bench::new(
        ClassBuilder::new("Wide")
            .property(PropertyDecl::new("A", PropType::U64))
            .property(PropertyDecl::new("B", PropType::U64)),
        DriverConfig::default(),
    );
    let ids: Vec<_> = (0..9000).map(|_| b.store.spawn()).collect();
    for (i, &id) in ids.iter().enumerate() {
        b.store.set(id, 0, &Value::U64(i as u64 * 7919)).unwrap();
    }
    let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
    let packets = b.tick();
    assert!(packets.len() > 64, "{} packets: more than the old 32-packet window", packets.len());
    b.deliver(&packets);
    // 9000 changed actors: the shared arena is encoded in many chunks; every actor got its own.
    for (i, &g) in guids.iter().enumerate() {
        assert_eq!(b.client.value(g, 0), Some(Value::U64(i as u64 * 7919)), "actor {i}");
    }
    for (i, &id) in ids.iter().enumerate() {
        b.store.set(id, 1, &Value::U64(i as u64 + 3)).unwrap();
    }
    let packets = b.tick();
    assert!(packets.len() > 64);
    b.deliver(&packets);
    for (i, &g) in guids.iter().enumerate() {
        assert_eq!(b.client.value(g, 1), Some(Value::U64(i as u64 + 3)), "actor {i}, shared spans");
    }
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert_eq!(stats.packets_lost, 0, "{stats:?}");
    assert_eq!(b.driver.in_flight(b.conn), 0);
    assert!(b.tick().is_empty(), "nothing is resent");
}

/// A lost tail during a quiet spell is found by a keep-alive: repaired within a round trip plus
/// the keep-alive interval, not after a long timeout.
#[test]
fn a_lost_tail_is_repaired_within_a_keep_alive_and_a_round_trip() {
    let cfg = DriverConfig { keep_alive_frames: 6, ..DriverConfig::default() };
    let mut b = Bench::new(initial_class(), cfg);
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.run(3);
    b.store.set(a, 0, &Value::U32(42)).unwrap();
    let lost = b.tick();
    assert_eq!(lost.len(), 1);
    b.feed_back();
    // Quiet frames; the link delivers in the same frame.
    let mut frames = 0;
    while b.client.value(guid, 0) != Some(Value::U32(42)) {
        frames += 1;
        assert!(frames <= 6 + 2, "not repaired after {frames} quiet frames");
        let p = b.tick();
        b.deliver(&p);
    }
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert_eq!(stats.keep_alives, 1, "{stats:?}");
    // Once everything is settled, a quiet connection sends nothing at all.
    for _ in 0..30 {
        assert!(b.tick().is_empty());
        b.feed_back();
    }
}

/// The smallest MTU, with records of the largest fixed size (256-byte opaque structs): every
/// packet stays within the MTU, and everything arrives. (Filling a packet to the last bit is
/// `wire::packet`'s own test.)
#[test]
fn records_fill_packets_of_the_smallest_mtu_exactly_and_arrive() {
    for mtu in [512, 700, 1024] {
        let blob = PropType::Opaque { name: "Blob".into(), size: 256 };
        let mut b = Bench::new(
            ClassBuilder::new("Fat")
                .property(PropertyDecl::new("A", blob.clone()))
                .property(PropertyDecl::new("B", blob))
                .property(PropertyDecl::new("N", PropType::U8)),
            DriverConfig { mtu, ..DriverConfig::default() },
        );
        let ids: Vec<_> = (0..40).map(|_| b.store.spawn()).collect();
        let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
        let blob = |i: usize, k: u8| Value::Opaque((0..256).map(|j| (i as u8) ^ (j as u8) ^ k).collect());
        for round in 0..3u8 {
            for (i, &id) in ids.iter().enumerate() {
                b.store.set(id, 0, &blob(i, round)).unwrap();
                b.store.set(id, 1, &blob(i, round.wrapping_add(7))).unwrap();
                b.store.set(id, 2, &Value::U8(round)).unwrap();
            }
            let packets = b.tick();
            assert!(packets.iter().all(|p| p.len() <= mtu), "mtu {mtu}: {:?}", packets.iter().map(Vec::len).max());
            assert!(packets.iter().any(|p| p.len() * 2 > mtu), "mtu {mtu}: packets carry more than half their room");
            b.deliver(&packets);
            for (i, &g) in guids.iter().enumerate() {
                assert_eq!(b.client.value(g, 0), Some(blob(i, round)), "mtu {mtu}, actor {i}");
                assert_eq!(b.client.value(g, 2), Some(Value::U8(round)));
            }
        }
    }
}

/// A blackout: the server keeps sending while nothing arrives and no feedback comes back. It
/// stops at 256 packets in flight (the window), repeats its newest packet while the window is
/// full, and everything converges once the link is back.
#[test]
fn a_blackout_fills_the_window_and_the_connection_recovers() {
    let cfg = DriverConfig { keep_alive_frames: 2, ..DriverConfig::default() };
    let mut b = Bench::new(ClassBuilder::new("Wide").property(PropertyDecl::new("A", PropType::U64)), cfg);
    let ids: Vec<_> = (0..3000).map(|_| b.store.spawn()).collect();
    let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
    b.run(2);
    let mut v = 0u64;
    let mut sent = 0;
    for _ in 0..12 {
        v += 1;
        for &id in &ids {
            b.store.set(id, 0, &Value::U64(v)).unwrap();
        }
        sent += b.tick().len();
        assert!(b.driver.in_flight(b.conn) <= 256, "{} in flight", b.driver.in_flight(b.conn));
    }
    let stats = b.driver.connection_stats(b.conn).unwrap();
    assert!(sent >= 256 && stats.window_full_frames > 0, "{sent} packets, {stats:?}");
    assert!(stats.repeats > 0, "the newest packet is repeated while the window is full: {stats:?}");
    // The link is back.
    for _ in 0..10 {
        b.run(1);
    }
    for (i, &g) in guids.iter().enumerate() {
        assert_eq!(b.client.value(g, 0), Some(Value::U64(v)), "actor {i}");
    }
    assert_eq!(b.driver.in_flight(b.conn), 0);
}

/// Changes made while a connection's window is full (so it can send nothing) still reach it once
/// the window opens, even for an actor that changes only then.
#[test]
fn changes_made_while_the_window_is_full_are_not_forgotten() {
    let cfg = DriverConfig { keep_alive_frames: 2, ..DriverConfig::default() };
    let mut b = Bench::new(ClassBuilder::new("Wide").property(PropertyDecl::new("A", PropType::U64)), cfg);
    let ids: Vec<_> = (0..3000).map(|_| b.store.spawn()).collect();
    let quiet = b.store.spawn();
    let quiet_guid = b.guid(quiet);
    b.run(2);
    for v in 1..=12u64 {
        for &id in &ids {
            b.store.set(id, 0, &Value::U64(v)).unwrap();
        }
        if v == 11 {
            // The window is full by now: this change is made while nothing can be sent.
            assert!(b.driver.connection_stats(b.conn).unwrap().window_full_frames > 0);
            b.store.set(quiet, 0, &Value::U64(99)).unwrap();
        }
        b.tick();
    }
    for _ in 0..10 {
        b.run(1);
    }
    assert_eq!(b.client.value(quiet_guid, 0), Some(Value::U64(99)));
}

/// A tear-off's last update that a full sequence window deferred goes out when the window opens,
/// before the close (without the actor level): the tear-off waits while the connection owes it.
/// It had been dropped when the tear-off finished, and the client kept its older value.
#[test]
fn a_tear_offs_last_update_deferred_by_a_full_window_still_arrives() {
    let mut b =
        Bench::new(ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32)), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(3);
    // The client gets every packet but the server hears nothing: its window fills.
    for v in 1..=300u32 {
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        let p = b.tick();
        for p in &p {
            b.client.receive(p).unwrap();
        }
    }
    assert!(b.tick().is_empty(), "the window is full");
    b.store.set(a, 0, &Value::U32(0)).unwrap();
    b.driver.tear_off(b.class, &b.store, a).unwrap();
    assert!(b.tick().is_empty(), "the last update deferred");
    // The client is heard from again.
    b.feed_back();
    b.run(4);
    assert!(b.client.is_torn_off(g));
    assert_eq!(b.client.value(g, 0), Some(Value::U32(0)), "the last update, then the close");
}
