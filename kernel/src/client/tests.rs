//! The client's work per packet: references waiting for their target (up to [`MAX_UNMAPPED`],
//! filled by earlier packets) are never walked once per record, per open or per close of a later
//! packet. The work is counted (entries of the waiting list visited), not timed.

use super::{ClientWorld, Receipt, MAX_UNMAPPED};
use crate::ids::{NetGuid, Seq};
use crate::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl};
use crate::wire::bunch::{end_array, handle_bits, write_array_head};
use crate::wire::open::{CloseReason, OpenHeader};
use crate::wire::packet::{begin_packet, end_packet, write_bunch_after, write_close_after};
use crate::wire::BitWriter;
use std::sync::Arc;

fn layout() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Ref")
            .property(PropertyDecl::new("Target", PropType::Object))
            .property(PropertyDecl::new("Refs", PropType::array(PropType::Object)))
            .build()
            .expect("valid layout"),
    )
}

/// Bunches of a hand-made packet: (GUID, opens, body) or a close with its reason.
enum Part {
    Bunch(NetGuid, bool, BitWriter),
    Close(NetGuid, CloseReason),
}

fn packet(seq: u32, parts: Vec<Part>) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    let mut prev = NetGuid(0);
    for p in parts {
        match p {
            Part::Bunch(g, open, body) => {
                write_bunch_after(&mut w, prev, g, open.then(|| OpenHeader::spawn(0)).as_ref(), &body);
                prev = g;
            }
            Part::Close(g, reason) => {
                write_close_after(&mut w, prev, g, reason, None);
                prev = g;
            }
        }
    }
    end_packet(&mut w);
    w.into_bytes()
}

/// An array record of `Refs`: element `e` refers to `targets[e]`.
fn refs(layout: &ClassLayout, targets: &[u64]) -> BitWriter {
    let mut body = BitWriter::new();
    write_array_head(&mut body, handle_bits(layout), 2, targets.len());
    for (e, t) in targets.iter().enumerate() {
        body.write_packed(e as u64 + 1);
        body.write_packed(*t);
    }
    end_array(&mut body);
    body
}

/// Targets of the forged references: dynamic GUIDs from here on, never opened.
const TARGETS: u64 = 100_000;
/// GUIDs of the actors the worst packets open, tear off and close (nobody's target).
const FRESH: u64 = 1_000_000;

/// A client whose waiting list is full: owners 2, 4, … each hold 1024 references, each to its
/// own never-opened target. Returns the next sequence number.
fn full(layout: &Arc<ClassLayout>) -> (ClientWorld, u32) {
    let mut c = ClientWorld::new(std::slice::from_ref(layout), &[layout.checksum]).expect("same layout");
    let mut seq = 1;
    while c.unmapped_count() < MAX_UNMAPPED {
        let first = TARGETS + 2 * 1024 * seq as u64;
        let targets: Vec<u64> = (0..1024).map(|i| first + 2 * i).collect();
        let p = packet(seq, vec![Part::Bunch(NetGuid(2 * seq as u64), true, refs(layout, &targets))]);
        assert_eq!(c.receive(&p), Ok(Receipt::Applied { bunches: 1, skipped: 0 }));
        seq += 1;
    }
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED);
    (c, seq)
}

/// Receives `p` and checks the waiting-list entries it visited: at most its size in bytes, plus
/// the entries it let go of (each was paid for by the packet that added it).
fn receive_within(c: &mut ClientWorld, p: &[u8], what: &str) {
    let (visited, waiting) = (c.unmapped.visited, c.unmapped_count());
    assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })), "{what}");
    let freed = waiting.saturating_sub(c.unmapped_count()) as u64;
    let work = c.unmapped.visited - visited;
    assert!(
        work <= p.len() as u64 + freed,
        "{what}: {work} waiting references visited for a {}-byte packet that freed {freed}",
        p.len()
    );
}

#[test]
fn a_packet_visits_waiting_references_in_proportion_to_its_size() {
    let layout = layout();
    let (mut c, mut seq) = full(&layout);
    let next = |seq: &mut u32| {
        *seq += 1;
        *seq - 1
    };
    // Many object records (each may replace a waiting reference): an actor opened with 2048 null
    // references, then the same again as an update.
    let nulls = refs(&layout, &[0; 2048]);
    let p = packet(next(&mut seq), vec![Part::Bunch(NetGuid(FRESH), true, nulls.clone())]);
    receive_within(&mut c, &p, "an open with 2048 null references");
    let p = packet(next(&mut seq), vec![Part::Bunch(NetGuid(FRESH), false, nulls)]);
    receive_within(&mut c, &p, "an update with 2048 null references");
    // Many opens (each may be a waiting reference's target).
    let opened: Vec<NetGuid> = (1..=1000).map(|i| NetGuid(FRESH + 2 * i)).collect();
    let p = packet(next(&mut seq), opened.iter().map(|&g| Part::Bunch(g, true, BitWriter::new())).collect());
    receive_within(&mut c, &p, "1000 opens");
    // Many tear-offs and closes (each drops the references its actor owns).
    let half = opened.len() / 2;
    let p = packet(next(&mut seq), opened[..half].iter().map(|&g| Part::Close(g, CloseReason::TornOff)).collect());
    receive_within(&mut c, &p, "500 tear-offs");
    let p = packet(next(&mut seq), opened[half..].iter().map(|&g| Part::Close(g, CloseReason::Destroyed)).collect());
    receive_within(&mut c, &p, "500 closes");
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED, "nothing here touched a waiting reference");
    // What does let references go costs what it frees: an owner's array emptied, an owner closed.
    let p = packet(next(&mut seq), vec![Part::Bunch(NetGuid(2), false, refs(&layout, &[]))]);
    receive_within(&mut c, &p, "an owner's array emptied");
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED - 1024);
    let p = packet(next(&mut seq), vec![Part::Close(NetGuid(4), CloseReason::Destroyed)]);
    receive_within(&mut c, &p, "an owner closed");
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED - 2048);
    // And a target arriving writes the references that waited for it, all of them.
    let target = NetGuid(TARGETS + 2 * 1024 * 3);
    let p = packet(next(&mut seq), vec![Part::Bunch(target, true, BitWriter::new())]);
    receive_within(&mut c, &p, "a target opened");
    assert_eq!(c.unmapped_count(), MAX_UNMAPPED - 2049);
    let mut out = [0u8; 8];
    let (store, id) = c.actor(NetGuid(6)).expect("owner 6");
    let elements = store.array_bytes(id.index, 0);
    out.copy_from_slice(&elements[..8]);
    assert_eq!(NetGuid(u64::from_le_bytes(out)), target);
}
