//! Sequence numbers: forged jumps, wrap-around.

use crate::Bench;
use shadowrep::client::{Receipt, SeqVerdict};
use shadowrep::ids::Seq;
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
use shadowrep::value::Value;
use shadowrep::wire::packet::{begin_packet, end_packet};
use shadowrep::wire::BitWriter;
use shadowrep_tests::World;

fn empty_packet(seq: u32) -> Vec<u8> {
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    end_packet(&mut w);
    w.into_bytes()
}

fn counter() -> ClassBuilder {
    ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32))
}

/// A packet numbered far ahead of anything sent is dropped; the connection goes on.
#[test]
fn far_future_sequence_numbers_are_dropped() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let a = b.store.spawn();
    let g = b.guid(a);
    b.run(3);
    let h = b.client.highest_received().0;
    for forged in [1u32 << 31, u32::MAX, h + 1000, h + 257, h.wrapping_add((1 << 31) + 5)] {
        let r = b.client.receive(&empty_packet(forged)).unwrap();
        assert!(matches!(r, Receipt::Dropped(SeqVerdict::TooFar | SeqVerdict::Late)), "{forged}: {r:?}");
    }
    assert_eq!(b.client.highest_received().0, h);
    for n in 1..20 {
        b.store.set(a, 0, &Value::U32(n)).unwrap();
        b.run(1);
        assert_eq!(b.client.value(g, 0), Some(Value::U32(n)), "not stalled");
    }
}

/// A forged packet as far ahead as a client accepts stalls the connection until the server's
/// own packets reach that number — and then the server's packet replaces it, so nothing the
/// client never saw is acknowledged.
#[test]
fn a_forged_jump_stalls_for_at_most_the_window_and_then_recovers() {
    let mut b = Bench::new(counter(), DriverConfig::default());
    let ids: Vec<_> = (0..4).map(|_| b.store.spawn()).collect();
    let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
    b.run(3);
    let h = b.client.highest_received().0;
    let forged = h + 256;
    assert!(matches!(b.client.receive(&empty_packet(forged)), Ok(Receipt::Applied { .. })));
    let mut sent = 0u32;
    let mut frames = 0;
    let mut v = 0;
    loop {
        v += 1;
        for &id in &ids {
            b.store.set(id, 0, &Value::U32(v)).unwrap();
        }
        let packets = b.tick();
        sent += packets.len() as u32;
        b.deliver(&packets);
        frames += 1;
        if guids.iter().all(|&g| b.client.value(g, 0) == Some(Value::U32(v))) {
            break;
        }
        assert!(frames < 600, "no recovery after {frames} frames and {sent} packets");
    }
    assert!(sent <= 256 + 2, "the stall lasted {sent} packets");
    assert!(b.client.stats().replaced >= 1, "the server's own packet replaced the forged one");
    for _ in 0..20 {
        v += 1;
        for &id in &ids {
            b.store.set(id, 0, &Value::U32(v)).unwrap();
        }
        b.run(1);
    }
    for &g in &guids {
        assert_eq!(b.client.value(g, 0), Some(Value::U32(v)));
    }
}

/// Sequence numbers wrap around u32 in the middle of a lossy soak, on both ends.
#[test]
fn sequence_numbers_wrap_around_under_loss() {
    let mut w = World::with_layouts(
        vec![shadowrep_layouts::layout_by_name("ShooterCharacter").unwrap().clone()],
        DriverConfig::default(),
        3,
    );
    for i in 0..3 {
        w.add_client_at(false, LinkConfig::lossy(0.3, 40 + i), Seq(u32::MAX - 20));
    }
    for _ in 0..300 {
        w.spawn(0);
    }
    for frame in 0..80 {
        w.mutate(0.3);
        if frame % 20 == 5 {
            w.despawn(7);
            w.spawn(0);
        }
        w.step();
    }
    assert!(w.clients.iter().all(|c| c.world.highest_received().0 < 10_000), "the numbers wrapped");
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..30 {
        w.step();
    }
    w.assert_converged();
}
