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

/// Forged packets as far ahead as a client accepts — one, or a chain of them, each as far past
/// the last — would stall the connection until the server's own packets reached the last forged
/// number: the window times the chain's length (a forger's few packets, minutes of stall). The
/// server's packets arrive late and never received, several in a row: the window goes back to
/// before the first forged number, and the connection flows again within a few packets; what
/// the dropped ones carried is reported missing and resent.
#[test]
fn forged_jumps_ahead_stall_the_connection_for_a_few_packets() {
    for chain in [1u32, 8] {
        let mut b = Bench::new(counter(), DriverConfig::default());
        let ids: Vec<_> = (0..4).map(|_| b.store.spawn()).collect();
        let guids: Vec<_> = ids.iter().map(|&id| b.guid(id)).collect();
        b.run(3);
        let h = b.client.highest_received().0;
        for k in 1..=chain {
            let forged = empty_packet(h + k * 256);
            assert!(matches!(b.client.receive(&forged), Ok(Receipt::Applied { .. })), "{chain}: {k}");
        }
        let (mut sent, mut frames, mut v) = (0u32, 0, 0);
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
            assert!(frames < 600, "{chain}: no recovery after {frames} frames and {sent} packets");
        }
        assert!(sent <= 4, "{chain}: the stall lasted {sent} packets");
        assert_eq!(b.client.stats().window_rollbacks, 1, "{chain}");
        for _ in 0..20 {
            v += 1;
            for &id in &ids {
                b.store.set(id, 0, &Value::U32(v)).unwrap();
            }
            b.run(1);
        }
        for &g in &guids {
            assert_eq!(b.client.value(g, 0), Some(Value::U32(v)), "{chain}");
        }
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
