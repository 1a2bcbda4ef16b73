//! Tests added by the mutation pass (`docs/mutation-pass.md`): each kills a mutant that the rest
//! of the suite let survive.

use crate::Bench;
use shadowrep::client::{Receipt, ReceiveError, SeqVerdict};
use shadowrep::ids::Seq;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, Condition, PropType, PropertyDecl};
use shadowrep::value::Value;
use shadowrep::wire::packet::{begin_packet, end_packet, MAX_MTU};
use shadowrep::wire::{BitWriter, WireError};

/// While an actor's open is in flight, a change this connection may not receive (an OwnerOnly
/// property of a connection that does not own it) sends nothing: the open is not repeated
/// before its packet is reported lost.
#[test]
fn an_open_in_flight_is_not_repeated_for_an_inactive_change() {
    let class = ClassBuilder::new("P")
        .property(PropertyDecl::new("N", PropType::U32))
        .property(PropertyDecl::new("Secret", PropType::U32).condition(Condition::OwnerOnly));
    let mut b = Bench::new(class, DriverConfig::default());
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.store.set(a, 0, &Value::U32(5)).unwrap();
    let first = b.tick();
    assert_eq!(first.len(), 1);
    for v in 1..4 {
        b.store.set(a, 1, &Value::U32(v)).unwrap();
        assert!(b.tick().is_empty(), "an inactive change while the open is in flight sends nothing");
    }
    b.deliver(&first);
    assert_eq!(b.client.value(guid, 0), Some(Value::U32(5)));
    assert_eq!(b.client.value(guid, 1), Some(Value::U32(0)));
}

fn counter() -> ClassBuilder {
    ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32))
}

/// A keep-alive goes out after exactly `keep_alive_frames` quiet frames: the frame that sent
/// the content does not count as quiet.
#[test]
fn a_keep_alive_waits_exactly_keep_alive_frames() {
    let cfg = DriverConfig { keep_alive_frames: 3, ..DriverConfig::default() };
    let mut b = Bench::new(counter(), cfg);
    let a = b.store.spawn();
    b.guid(a);
    b.store.set(a, 0, &Value::U32(1)).unwrap();
    assert_eq!(b.tick().len(), 1);
    assert!(b.tick().is_empty(), "quiet frame 1");
    assert!(b.tick().is_empty(), "quiet frame 2");
    assert_eq!(b.tick().len(), 1, "quiet frame 3: the keep-alive");
    assert_eq!(b.driver.connection_stats(b.conn).unwrap().keep_alives, 1);
}

/// With one packet of room left, a keep-alive is a new (empty) packet that fills the window;
/// only a full window repeats the newest packet.
#[test]
fn the_last_slot_of_the_window_takes_a_keep_alive_and_only_then_packets_repeat() {
    let cfg = DriverConfig { keep_alive_frames: 1, ..DriverConfig::default() };
    let mut b = Bench::new(counter(), cfg);
    let a = b.store.spawn();
    b.guid(a);
    for v in 1..=255 {
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        assert_eq!(b.tick().len(), 1, "no feedback: packet {v} goes out");
    }
    let stats = |b: &Bench| b.driver.connection_stats(b.conn).unwrap();
    assert_eq!((stats(&b).keep_alives, stats(&b).repeats), (0, 0));
    let keep_alive = b.tick();
    assert_eq!(keep_alive.len(), 1);
    assert_eq!((stats(&b).keep_alives, stats(&b).repeats), (1, 0), "packet 256 is a keep-alive");
    let repeat = b.tick();
    assert_eq!(repeat, keep_alive, "the full window repeats the newest packet");
    assert_eq!((stats(&b).keep_alives, stats(&b).repeats), (1, 1));
}

/// `class` with three 256-byte opaque structs after its properties, at a 512-byte MTU: any two
/// of them changing together are more than one packet holds.
fn big_at_mtu_512(mut class: ClassBuilder) -> Bench {
    for i in 0..3 {
        let blob = PropType::Opaque { name: format!("Blob{i}"), size: 256 };
        class = class.property(PropertyDecl::new(format!("S{i}"), blob));
    }
    Bench::new(class, DriverConfig { mtu: 512, ..DriverConfig::default() })
}

/// A shared bunch larger than a packet (three 256-byte structs changing together under a
/// 512-byte MTU, the channel open acknowledged) is split record by record across packets like
/// any other bunch, never copied whole past the MTU.
#[test]
fn a_shared_bunch_larger_than_a_packet_is_split_across_packets() {
    let mut b = big_at_mtu_512(ClassBuilder::new("Big"));
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.run(2);
    assert!(b.client.has(guid), "the open is acknowledged");
    for round in 1..=2u8 {
        let blob = |p: usize| Value::Opaque(vec![round * 10 + p as u8; 256]);
        for p in 0..3 {
            b.store.set(a, p, &blob(p)).unwrap();
        }
        let packets = b.tick();
        let sizes: Vec<usize> = packets.iter().map(Vec::len).collect();
        assert!(sizes.len() >= 2 && sizes.iter().all(|&n| n <= 512), "packet sizes {sizes:?}");
        b.deliver(&packets);
        for p in 0..3 {
            assert_eq!(b.client.value(guid, p), Some(blob(p)), "round {round}, property {p}");
        }
    }
}

fn empty_packet(seq: u32, len: usize) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    end_packet(&mut w);
    let mut bytes = w.into_bytes();
    bytes.resize(len.max(bytes.len()), 0);
    bytes
}

/// A forged packet that takes the number of the server's next packet is undone when the
/// server's own packet with that number arrives: it differs, so it is applied too.
#[test]
fn the_servers_packet_replaces_a_forged_one_with_its_number() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.store.set(a, 0, &Value::U32(7)).unwrap();
    let real = b.tick();
    assert_eq!(real.len(), 1);
    assert_eq!(b.client.receive(&empty_packet(1, 0)), Ok(Receipt::Applied { bunches: 0, skipped: 0 }));
    assert_eq!(b.client.receive(&real[0]), Ok(Receipt::Applied { bunches: 1, skipped: 0 }));
    assert_eq!(b.client.stats().replaced, 1);
    assert_eq!(b.client.value(guid, 0), Some(Value::U32(7)));
    assert_eq!(b.client.receive(&real[0]), Ok(Receipt::Dropped(SeqVerdict::Duplicate)), "an honest repeat");
}

/// The largest MTU is a packet size the client accepts; one byte more is refused.
#[test]
fn a_packet_of_exactly_the_largest_mtu_is_not_refused_for_its_size() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let too_large = Err(ReceiveError::Wire(WireError::Invalid("packet larger than the largest MTU")));
    assert_ne!(b.client.receive(&empty_packet(1, MAX_MTU)), too_large);
    assert_eq!(b.client.receive(&empty_packet(2, MAX_MTU + 1)), too_large);
}

/// An open after a close of the same actor in one packet brings the actor back for the rest of
/// the packet: a later bunch without an open applies to it.
#[test]
fn an_open_after_a_close_in_one_packet_brings_the_actor_back() {
    use shadowrep::wire::bunch::write_leaf_record;
    use shadowrep::wire::packet::{write_bunch_after, write_close_after};
    let mut b = Bench::new(counter(), DriverConfig::default());
    let g = shadowrep::ids::NetGuid(2);
    // Each bunch after the first steps from the one before: the same GUID, a step of 0.
    let bunch = |w: &mut BitWriter, open: Option<u32>, v: u32, first: bool| {
        let mut body = BitWriter::new();
        let bits = shadowrep::wire::bunch::handle_bits(&counter().build().unwrap());
        write_leaf_record(&mut body, bits, 1, shadowrep::schema::LeafKind::U32, &v.to_le_bytes());
        let prev = if first { shadowrep::ids::NetGuid(0) } else { g };
        write_bunch_after(w, prev, g, open.map(shadowrep::wire::open::OpenHeader::spawn).as_ref(), &body);
    };
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(1));
    bunch(&mut w, Some(0), 1, true);
    write_close_after(&mut w, g, g, shadowrep::wire::open::CloseReason::Destroyed, None);
    bunch(&mut w, Some(0), 2, false);
    bunch(&mut w, None, 3, false);
    end_packet(&mut w);
    assert_eq!(b.client.receive(&w.into_bytes()), Ok(Receipt::Applied { bunches: 4, skipped: 0 }));
    assert!(b.client.has(g));
    assert_eq!(b.client.value(g, 0), Some(Value::U32(3)));
}

/// Reopen requests: one per actor however often it is named, at most `MAX_REOPENS` at a time,
/// each carried by exactly 8 feedbacks.
#[test]
fn reopen_requests_are_deduplicated_capped_and_expire() {
    use shadowrep::wire::bunch::write_leaf_record;
    use shadowrep::wire::feedback::{read_feedback, MAX_REOPENS};
    use shadowrep::wire::packet::write_bunch_after;
    let mut b = Bench::new(counter(), DriverConfig::default());
    // Sized bunches (a plain one for an unknown actor would refuse the packet at the first).
    let unknown = |w: &mut BitWriter, prev: u64, g: u64| {
        let mut body = BitWriter::new();
        let bits = shadowrep::wire::bunch::handle_bits(&counter().build().unwrap());
        write_leaf_record(&mut body, bits, 1, shadowrep::schema::LeafKind::U32, &[1, 0, 0, 0]);
        write_bunch_after(w, shadowrep::ids::NetGuid(prev), shadowrep::ids::NetGuid(g), None, &body);
    };
    let packet = |seq: u32, guids: &mut dyn Iterator<Item = u64>| {
        let mut w = BitWriter::new();
        begin_packet(&mut w, Seq(seq));
        let mut prev = 0;
        for g in guids {
            unknown(&mut w, prev, g);
            prev = g;
        }
        end_packet(&mut w);
        w.into_bytes()
    };
    // The same actor twice in one packet and again in the next: asked for once.
    assert!(b.client.receive(&packet(1, &mut [4, 4].into_iter())).is_ok());
    assert!(b.client.receive(&packet(2, &mut [4].into_iter())).is_ok());
    assert_eq!(b.client.stats().reopens_requested, 1);
    for n in 0..8 {
        let fb = read_feedback(&b.client.feedback()).expect("feedback decodes");
        assert_eq!(fb.reopen, vec![shadowrep::ids::NetGuid(4)], "feedback {n}");
    }
    assert!(read_feedback(&b.client.feedback()).expect("decodes").reopen.is_empty(), "expired after 8");
    // More unknown actors than a feedback carries: the first MAX_REOPENS are asked for.
    let many = MAX_REOPENS as u64 + 1;
    assert!(b.client.receive(&packet(3, &mut (1..=many).map(|i| 2 * i + 100))).is_ok());
    assert_eq!(b.client.stats().reopens_requested, 1 + MAX_REOPENS as u64);
    let fb = read_feedback(&b.client.feedback()).expect("feedback decodes");
    assert_eq!(fb.reopen.len(), MAX_REOPENS);
}

/// When the window fills in the middle of an actor, only what was not written goes back to the
/// pair: the part already in flight is not sent a second time.
#[test]
fn a_window_full_mid_actor_resends_only_the_unwritten_part() {
    let mut b = big_at_mtu_512(ClassBuilder::new("Big").property(PropertyDecl::new("N", PropType::U32)));
    let a = b.store.spawn();
    let guid = b.guid(a);
    b.run(2);
    assert!(b.client.has(guid));
    // 255 packets without feedback leave one slot in the window.
    let mut in_flight = Vec::new();
    for v in 1..=255 {
        b.store.set(a, 0, &Value::U32(v)).unwrap();
        in_flight.extend(b.tick());
    }
    // One 256-byte struct per 512-byte packet: the first goes out, then the window is full.
    for p in 1..=3 {
        b.store.set(a, p, &Value::Opaque(vec![p as u8; 256])).unwrap();
    }
    let last = b.tick();
    assert_eq!(last.len(), 1);
    in_flight.extend(last);
    b.deliver(&in_flight);
    let resend = b.tick();
    assert_eq!(resend.len(), 2, "the two structs that did not fit, not the one already delivered");
    b.deliver(&resend);
    for p in 1..=3 {
        assert_eq!(b.client.value(guid, p), Some(Value::Opaque(vec![p as u8; 256])));
    }
}
