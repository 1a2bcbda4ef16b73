//! An actor split across packets: the server says which packet's last bunch goes on in the next
//! packet, the client holds the parts and applies the update whole (UE's partial bunches), and
//! a lost or refused part, or a hostile chain of parts, never loses a value nor grows memory.

use crate::helpers::*;
use shadowrep::client::{ClientEvent, ClientWorld, NotifyEvent, Receipt, MAX_PARTIAL_BYTES, ROLLBACK_STREAK};
use shadowrep::schema::{ClassBuilder, ClassLayout, Notify, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::bunch::RecordValue;
use shadowrep_tests::World;
use std::collections::HashMap;
use std::sync::Arc;

/// A class whose array splits its bunch: `Hp` (handle 1) comes in the first part, the array
/// goes on over the next packets.
fn holder() -> Arc<ClassLayout> {
    build(
        ClassBuilder::new("Holder")
            .property(PropertyDecl::new("Hp", PropType::U32).notify(Notify::OnChangedWithOld))
            .property(
                PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 2048 })
                    .notify(Notify::OnChangedWithOld),
            ),
    )
}

fn big(n: u64) -> Value {
    Value::Array((0..n).map(Value::U64).collect())
}

/// A world with one opened `holder` actor, and its next frame's packets after setting `Hp` and
/// a 300-element `Big`: more than one packet.
fn split_frame() -> (World, ActorId, NetGuid, Vec<Vec<u8>>) {
    let layout = holder();
    let mut w = world_with(&layout, &[false]);
    let a = w.spawn(0);
    let g = w.guid(0, a);
    for _ in 0..3 {
        w.step();
    }
    assert!(w.clients[0].world.has(g));
    w.clients[0].world.take_notifies();
    set(&mut w, 0, a, 0, Value::U32(5));
    set(&mut w, 0, a, 1, big(300));
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let packets = w.driver.take_packets(w.clients[0].conn).expect("connection");
    assert!(packets.len() >= 3, "the array splits the bunch: {} packets", packets.len());
    (w, a, g, packets)
}

#[test]
fn the_server_flags_exactly_the_packets_whose_last_bunch_goes_on() {
    let (_, _, g, packets) = split_frame();
    let layouts = HashMap::from([(g, holder())]);
    let decoded: Vec<_> = packets.iter().map(|p| decode(p, &layouts)).collect();
    for (i, p) in decoded.iter().enumerate() {
        let last = i + 1 == decoded.len();
        assert_eq!(p.continues, !last, "packet {i} of {}", decoded.len());
        assert_eq!(p.bunches.iter().map(|b| b.guid).collect::<Vec<_>>(), [g], "one actor's parts");
    }
}

#[test]
fn a_split_update_applies_whole_and_notifies_once() {
    let (mut w, _, g, packets) = split_frame();
    let c = &mut w.clients[0].world;
    for p in &packets[..packets.len() - 1] {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { bunches: 1, .. })));
        assert_eq!(c.value(g, 0), Some(Value::U32(0)), "nothing of the update before its last part");
        assert_eq!(c.value(g, 1), Some(big(0)));
        assert!(c.take_notifies().is_empty());
    }
    assert!(matches!(c.receive(packets.last().unwrap()), Ok(Receipt::Applied { .. })));
    assert_eq!(c.value(g, 0), Some(Value::U32(5)));
    assert_eq!(c.value(g, 1), Some(big(300)));
    let mut notifies = c.take_notifies();
    notifies.sort_by_key(|n| n.parent);
    assert_eq!(
        notifies,
        [
            NotifyEvent { class: 0, guid: g, parent: 0, old: Some(Value::U32(0)), new: Value::U32(5) },
            NotifyEvent { class: 0, guid: g, parent: 1, old: Some(big(0)), new: big(300) },
        ],
        "one notify per property, with the value before the update and after all of it"
    );
    assert_eq!((c.stats().split_joined, c.stats().split_broken), (1, 0));
}

#[test]
fn a_lost_part_applies_what_was_held_and_the_resend_completes_it() {
    let (mut w, _, g, packets) = split_frame();
    let conn = w.clients[0].conn;
    let c = &mut w.clients[0].world;
    // The second packet is lost: the first part is held until the third packet shows the gap,
    // then applies alone (its Hp); the lost part's elements are resent.
    assert!(matches!(c.receive(&packets[0]), Ok(Receipt::Applied { .. })));
    assert_eq!(c.value(g, 0), Some(Value::U32(0)));
    for p in &packets[2..] {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(c.value(g, 0), Some(Value::U32(5)), "the held part applied when the gap showed");
    assert!(c.stats().split_broken >= 1);
    let fb = c.feedback();
    w.driver.receive_feedback(conn, &fb).expect("feedback");
    for _ in 0..4 {
        w.step();
    }
    assert_eq!(w.clients[0].world.value(g, 1), Some(big(300)));
    w.assert_converged();
}

/// A hand-made packet whose only bunch sets `Hp` of actor `g` (opening it when `open`),
/// padded with zero bytes to `size` (a decoder reads nothing past the packet's end bits).
fn hp_packet(layout: &ClassLayout, seq: u32, g: NetGuid, open: bool, hp: u32, continues: bool, size: usize) -> Vec<u8> {
    let mut p = craft_continued(seq, continues, |w| u32_bunch(w, layout, g, open.then_some(0), &[(1, hp)]));
    p.resize(size.max(p.len()), 0);
    p
}

#[test]
fn a_chain_of_parts_is_applied_in_pieces_of_the_held_bound() {
    let layout = holder();
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let g = NetGuid(2);
    let size = 8000;
    let held = MAX_PARTIAL_BYTES / size;
    // A server that says every packet goes on: the client holds at most MAX_PARTIAL_BYTES of
    // them, then applies what it holds.
    for seq in 1..=held as u32 {
        assert_eq!(c.receive(&hp_packet(&layout, seq, g, seq == 1, seq, true, size)), applied(1));
        assert!(!c.has(g), "packet {seq}: held");
    }
    let next = held as u32 + 1;
    assert_eq!(c.receive(&hp_packet(&layout, next, g, false, next, true, size)), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(next)), "the bound reached: applied");
    assert_eq!(c.stats().split_broken, 1);
    // The next part starts a new hold, which a packet that does not go on completes.
    assert_eq!(c.receive(&hp_packet(&layout, next + 1, g, false, next + 1, true, size)), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(next)));
    assert_eq!(c.receive(&hp_packet(&layout, next + 2, g, false, next + 2, false, 0)), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(next + 2)));
    assert_eq!(c.stats().split_joined, 1);
}

#[test]
fn a_refused_next_packet_leaves_the_part_held_and_an_unrelated_one_applies_it() {
    let layout = holder();
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let (g, other) = (NetGuid(2), NetGuid(4));
    assert_eq!(c.receive(&hp_packet(&layout, 1, g, true, 7, true, 0)), applied(1));
    assert!(!c.has(g));
    // A malformed packet with the continuation's number (truncated; a forger's, say): refused,
    // not received — the part stays held, and the server's own packet 2 continues it.
    let bad = hp_packet(&layout, 2, g, false, 8, false, 0);
    assert!(c.receive(&bad[..bad.len() - 1]).is_err());
    assert!(!c.has(g), "still held");
    assert_eq!(c.receive(&bad), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(8)));
    assert_eq!((c.stats().split_joined, c.stats().split_broken), (1, 0));
    // A part whose next packet starts with another actor: applied before that packet's bunches.
    assert_eq!(c.receive(&hp_packet(&layout, 3, g, false, 9, true, 0)), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(8)));
    assert_eq!(c.receive(&hp_packet(&layout, 4, other, true, 1, false, 0)), applied(1));
    assert_eq!(c.value(g, 0), Some(Value::U32(9)));
    assert_eq!(c.value(other, 0), Some(Value::U32(1)));
    assert_eq!(c.stats().split_broken, 1);
    // A close ends nothing held: a packet that says it goes on after a close holds nothing.
    let closing = craft_continued(5, true, |w| close(w, other));
    assert_eq!(c.receive(&closing), applied(1));
    assert!(!c.has(other));
    assert_eq!(c.stats().split_broken, 1);
}

#[test]
fn a_packet_ending_a_full_window_does_not_say_it_goes_on() {
    // No feedback reaches the server: it writes until its sequence window is full. The packet
    // that fills it ends with a part whose continuation cannot follow: it must not say it goes
    // on (a client would hold that part until some later packet).
    let (mut w, a, g, first) = split_frame();
    let layouts = HashMap::from([(g, holder())]);
    let mut packets = first;
    for frame in 0..200u64 {
        set(&mut w, 0, a, 1, Value::Array((0..300).map(|e| Value::U64(e + frame)).collect()));
        let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).expect("tick");
        packets.extend(w.driver.take_packets(w.clients[0].conn).expect("connection"));
    }
    let decoded: Vec<_> = packets.iter().map(|p| decode(p, &layouts)).collect();
    for (i, p) in decoded.iter().enumerate() {
        if p.continues {
            let next = decoded.get(i + 1).filter(|n| n.seq.0 == p.seq.0 + 1);
            let next = next.unwrap_or_else(|| panic!("packet {} goes on into nothing", p.seq.0));
            assert_eq!(next.bunches.first().map(|b| b.guid), Some(g), "packet {} goes on", p.seq.0);
        }
    }
    // The newest packet (repeated while the window is full) ends in the middle of the array.
    let newest = decoded.iter().max_by_key(|p| p.seq.0).unwrap();
    let array = newest.bunches.last().and_then(|b| b.records.last()).map(|r| &r.value);
    let Some(RecordValue::Array { count, elements }) = array else { panic!("the newest packet ends with the array") };
    assert!(elements.len() < *count as usize, "its last part is cut: {} of {count}", elements.len());
    assert!(!newest.continues, "a packet after which no packet may start does not go on");
}

#[test]
fn a_split_update_is_received_once() {
    let (mut w, _, g, packets) = split_frame();
    let c = std::mem::replace(&mut w.clients[0].world, ClientWorld::new(&[], &[]).expect("no classes"));
    let mut c = c.with_receive_events(true);
    c.take_events();
    for p in &packets {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(c.take_events(), [ClientEvent::Received { guid: g }], "one update, one receive");
    // Off by default.
    let (mut w, _, _, packets) = split_frame();
    w.clients[0].world.take_events();
    for p in &packets {
        assert!(matches!(w.clients[0].world.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert!(w.clients[0].world.take_events().is_empty());
}

/// A class of another shape, for opens that name a GUID with the wrong class.
fn other() -> Arc<ClassLayout> {
    build(ClassBuilder::new("Other").property(PropertyDecl::new("N", PropType::U32)))
}

#[test]
fn a_held_part_applies_before_the_next_packet_changes_anything() {
    // The part was checked against the world as it was: it applies before a forged open of
    // its actor with another class destroys the copy and asks for the actor again (applied
    // after, it spawned the actor anew from a plain bunch and cancelled the request).
    let (layout, other) = (holder(), other());
    let mut c =
        ClientWorld::new(&[layout.clone(), other.clone()], &[layout.checksum, other.checksum]).expect("layouts");
    let g = NetGuid(2);
    assert_eq!(c.receive(&hp_packet(&layout, 1, g, true, 1, false, 0)), applied(1));
    assert_eq!(c.receive(&hp_packet(&layout, 2, g, false, 7, true, 0)), applied(1));
    let forged = craft(3, |w| u32_bunch(w, &other, g, Some(1), &[(1, 3)]));
    assert!(matches!(c.receive(&forged), Ok(Receipt::Applied { .. })));
    assert!(!c.has(g), "the conflict destroys the copy, held part applied");
    assert_eq!(c.stats().open_conflicts, 1);
    assert_eq!(c.stats().reopens_requested, 1, "and asks for the actor again");
    assert_eq!(c.stats().split_broken, 1);
}

#[test]
fn a_released_part_ends_a_static_actors_being_ignored() {
    // A static actor's open stepped over (its path not loaded yet) makes its updates read past;
    // an open that binds it ends that — also when that open was a held part released on a gap
    // (it had stayed ignored, and every later update of it was dropped).
    use shadowrep::wire::open::{OpenHeader, OpenKind};
    use shadowrep::wire::packet::{begin_packet, end_packet_continued, write_bunch_after};
    use shadowrep::wire::BitWriter;
    const PATH: &str = "/Game/Lvl.Lvl:PersistentLevel.A";
    let layout = holder();
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let door = NetGuid(3);
    assert!(door.is_static());
    let static_open = |seq: u32, hp: u32, continues: bool| {
        let mut body = BitWriter::new();
        shadowrep::wire::bunch::write_leaf_record(
            &mut body,
            shadowrep::wire::bunch::handle_bits(&layout),
            1,
            shadowrep::schema::LeafKind::U32,
            &hp.to_le_bytes(),
        );
        let open = OpenHeader { class: 0, kind: OpenKind::Static(PATH.into()), autonomous: false };
        let mut w = BitWriter::new();
        begin_packet(&mut w, shadowrep::ids::Seq(seq));
        write_bunch_after(&mut w, NetGuid(0), door, Some(&open), &body);
        end_packet_continued(&mut w, continues);
        w.into_bytes()
    };
    assert!(matches!(c.receive(&static_open(1, 1, false)), Ok(Receipt::Applied { skipped: 1, .. })));
    c.load_static_actor(PATH, 0).expect("loads");
    assert_eq!(c.receive(&static_open(2, 7, true)), applied(1));
    // Packet 3 is lost; packet 4 shows the gap: the held open binds the door.
    assert_eq!(c.receive(&hp_packet(&layout, 4, NetGuid(2), true, 1, false, 0)), applied(1));
    assert_eq!(c.value(door, 0), Some(Value::U32(7)));
    let update = craft(5, |w| u32_bunch(w, &layout, door, None, &[(1, 9)]));
    assert_eq!(c.receive(&update), applied(1));
    assert_eq!(c.value(door, 0), Some(Value::U32(9)), "the door's updates apply");
}

/// A frame's packets held back by the link while the next frames' — more than half the receive
/// window of them — arrive, then the held ones late: the client must not take them for new (its
/// window rolled back past a forged jump that way) and apply their older values over the newer,
/// acknowledged ones, which the server never sends again (found by a helper's probe).
#[test]
fn a_frame_held_behind_a_burst_of_later_ones_is_not_applied_over_them() {
    let array = || PropType::Array { element: Box::new(PropType::U32), max_len: 2048 };
    let layout = build(
        ClassBuilder::new("Burst")
            .property(PropertyDecl::new("A", array()))
            .property(PropertyDecl::new("B", array()))
            .property(PropertyDecl::new("C", array()))
            .property(PropertyDecl::new("X", PropType::U32)),
    );
    let mut w = SmallMtu::new(&layout);
    let id = w.store.spawn();
    let mut k = 0u32;
    let mut frame = |w: &mut SmallMtu, x: u32| -> Vec<Vec<u8>> {
        k += 1;
        w.store.set(id, 3, &Value::U32(x)).unwrap();
        let a = Value::Array((0..2000).map(|i| Value::U32(i * 7 + k * 1_000_003)).collect());
        for p in 0..3 {
            w.store.set(id, p, &a).unwrap();
        }
        w.driver.tick(&mut [&mut w.store]).unwrap();
        w.driver.take_packets(w.conn).unwrap()
    };
    let feedback = |w: &mut SmallMtu| {
        let f = w.client.feedback();
        w.driver.receive_feedback(w.conn, &f).unwrap();
    };
    for p in frame(&mut w, 1) {
        w.client.receive(&p).unwrap();
    }
    feedback(&mut w);
    let held = frame(&mut w, 2);
    let (mut delivered, mut x) = (0, 2);
    while delivered < 140 {
        x += 1;
        for p in frame(&mut w, x) {
            w.client.receive(&p).unwrap();
            delivered += 1;
        }
        feedback(&mut w);
    }
    assert!(held.len() > ROLLBACK_STREAK as usize, "a burst of {} packets held", held.len());
    for p in &held {
        let _ = w.client.receive(p);
    }
    feedback(&mut w);
    for _ in 0..20 {
        w.frame(|_| false);
    }
    let guid = w.guid();
    assert_eq!(w.client.stats().window_rollbacks, 0, "honest reordering rolled the window back");
    assert_eq!(w.client.value(guid, 3), Some(Value::U32(x)), "X went back to an older frame's");
    assert_eq!(w.client.value(guid, 0), Some(w.store.get(id, 0).unwrap()), "the array went back");
}
