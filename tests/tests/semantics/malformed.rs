//! Malformed input

use crate::helpers::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::client::{ClientWorld, Receipt, ReceiveError};
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, LeafKind, PropType, PropertyDecl};
use shadowrep::value::{ObjectRef, Value};
use shadowrep::wire::bunch::{handle_bits, write_leaf_record};
use shadowrep::wire::BitReader;
use shadowrep_tests::{mixed_layouts, World};
use std::collections::HashSet;
use std::sync::Arc;

/// A run of the server: the packets to one client, in order, and every actor GUID used.
fn recorded_run() -> (Vec<Arc<ClassLayout>>, Vec<Vec<u8>>, Vec<NetGuid>) {
    let layouts = mixed_layouts();
    let mut w = World::with_layouts(layouts.clone(), DriverConfig::default(), 11);
    w.add_client(false, LinkConfig::perfect(1));
    for s in [0, 0, 0, 1, 1] {
        w.spawn(s);
    }
    let mut guids = HashSet::new();
    let mut packets = Vec::new();
    for frame in 0..10 {
        w.mutate(0.6);
        if frame == 5 {
            w.despawn(1);
            w.spawn(0);
        }
        for &(s, id) in &w.actors.clone() {
            guids.insert(w.guid(s, id));
        }
        packets.extend(step_capture(&mut w).swap_remove(0));
    }
    w.assert_converged();
    let mut guids: Vec<NetGuid> = guids.into_iter().collect();
    guids.sort_unstable();
    (layouts, packets, guids)
}

/// Everything observable about a client's state, bit-exact.
fn snapshot(c: &ClientWorld, guids: &[NetGuid], layouts: &[Arc<ClassLayout>]) -> String {
    use std::fmt::Write;
    // Not the reopen requests: a refusal may ask for an actor again (see `asked_at_most_one`).
    let mut s =
        format!("actors {} unmapped {} highest {}\n", c.actor_count(), c.unmapped_count(), c.highest_received());
    for &g in guids {
        let Some(class) = c.class_of(g) else {
            let _ = writeln!(s, "{g}: absent");
            continue;
        };
        let layout = &layouts[class as usize];
        for p in 0..layout.parents.len() {
            let _ = writeln!(s, "{g}.{p} = {:?}", c.value(g, p));
        }
        for (li, leaf) in layout.leaves.iter().enumerate() {
            match leaf.array {
                None => {
                    let mut b = vec![0u8; leaf.kind.byte_size()];
                    assert!(c.leaf_bytes(g, li, &mut b));
                    let _ = writeln!(s, "{g} leaf {li}: {b:?}");
                }
                Some(a) => {
                    let _ = writeln!(s, "{g} array {a}: {:?}", c.array_bytes(g, a));
                }
            }
        }
    }
    s
}

fn fresh_client(layouts: &[Arc<ClassLayout>]) -> ClientWorld {
    let checksums: Vec<u64> = layouts.iter().map(|l| l.checksum).collect();
    ClientWorld::new(layouts, &checksums).expect("same layouts")
}

/// A refusal asks for one actor again at most (one the client lacks whose plain bunch it could
/// not read past, or one it has whose update the packet broke off in, as its copy may have a
/// forger's class; `tests/tests/fuzz.rs` checks which).
fn assert_asked_at_most_one(c: &ClientWorld, reopens_before: u64, e: &ReceiveError, what: &str) {
    let asked = c.stats().reopens_requested - reopens_before;
    assert!(asked <= 1, "{what}: {e} asked for {asked}");
}

/// `Err` must leave the client exactly as it was (and fire nothing), but for asking for an
/// actor again.
fn assert_refused_without_effect(
    c: &mut ClientWorld,
    bytes: &[u8],
    guids: &[NetGuid],
    layouts: &[Arc<ClassLayout>],
    what: &str,
) -> ReceiveError {
    let before = snapshot(c, guids, layouts);
    let reopens = c.stats().reopens_requested;
    let e = match c.receive(bytes) {
        Err(e) => e,
        Ok(r) => panic!("{what}: accepted ({r:?})"),
    };
    assert_asked_at_most_one(c, reopens, &e, what);
    assert_eq!(snapshot(c, guids, layouts), before, "{what}: refused ({e}) but the state changed");
    assert!(c.take_notifies().is_empty(), "{what}: refused but notified");
    e
}

#[test]
fn every_truncation_of_a_real_packet_is_refused_without_effect() {
    let (layouts, packets, guids) = recorded_run();
    assert!(packets.len() >= 10);
    let mut c = fresh_client(&layouts);
    for (i, p) in packets.iter().enumerate() {
        for cut in 0..p.len() {
            assert_refused_without_effect(
                &mut c,
                &p[..cut],
                &guids,
                &layouts,
                &format!("packet {i} cut to {cut} of {} bytes", p.len()),
            );
        }
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })), "packet {i} whole");
        c.take_notifies();
    }
    assert!(c.actor_count() > 0);
}

#[test]
fn bit_flipped_packets_never_panic_and_refusals_have_no_effect() {
    let (layouts, packets, guids) = recorded_run();
    let mut rng = ChaCha8Rng::seed_from_u64(0xf11b);
    let (mut refused, mut applied, mut dropped) = (0, 0, 0);
    for sample in 0..300 {
        let i = rng.random_range(0..packets.len());
        let mut c = fresh_client(&layouts);
        for p in &packets[..i] {
            assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })));
        }
        c.take_notifies();
        let mut bad = packets[i].clone();
        for _ in 0..rng.random_range(1..=3) {
            let bit = rng.random_range(0..bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
        }
        let before = snapshot(&c, &guids, &layouts);
        let reopens = c.stats().reopens_requested;
        match c.receive(&bad) {
            Err(e) => {
                refused += 1;
                assert_asked_at_most_one(&c, reopens, &e, &format!("sample {sample}"));
                assert_eq!(
                    snapshot(&c, &guids, &layouts),
                    before,
                    "sample {sample}: refused ({e}) but the state changed"
                );
                assert!(c.take_notifies().is_empty());
                // The refusal did not consume the sequence number: the real packet applies.
                assert!(matches!(c.receive(&packets[i]), Ok(Receipt::Applied { .. })), "sample {sample}");
            }
            Ok(Receipt::Dropped(_)) => {
                dropped += 1;
                assert_eq!(snapshot(&c, &guids, &layouts), before, "sample {sample}: dropped but the state changed");
            }
            Ok(Receipt::Applied { .. }) => {
                applied += 1;
                // Whatever state that left, later packets must not panic either.
                for p in &packets[i + 1..] {
                    let _ = c.receive(p);
                }
            }
        }
    }
    assert!(refused > 0 && applied > 0, "refused {refused}, applied {applied}, dropped {dropped}");
}

#[test]
fn crafted_malformed_packets_are_refused_without_effect() {
    let (layouts, packets, guids) = recorded_run();
    let mut c = fresh_client(&layouts);
    for p in &packets {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })));
    }
    c.take_notifies();
    let last = packets.iter().map(|p| BitReader::new(p).read_packed().expect("seq")).max().expect("packets");
    let seq = u32::try_from(last).expect("u32") + 1;
    let mixed = &layouts[0];
    let victim = *guids.iter().find(|&&g| c.class_of(g) == Some(0)).expect("a Mixed actor on the client");
    let small = *guids.iter().find(|&&g| c.class_of(g) == Some(1)).expect("a Small actor on the client");
    let health = handle(mixed, 0);
    let target = handle(mixed, 6);
    let items = handle(mixed, 8);
    assert_eq!(mixed.arrays[0].max_len, 8);
    // Every bad packet starts with a valid bunch, which must not be applied either.
    let valid = |w: &mut Craft| u32_bunch(w, mixed, victim, None, &[(health, 0xdead_beef)]);
    let object_bunch = |w: &mut Craft, g: u64| {
        bunch(w, victim, None, |w| {
            write_leaf_record(w, handle_bits(mixed), target, LeafKind::Object, &g.to_le_bytes())
        });
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown handle",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, mixed, victim, None, &[(mixed.leaves.len() as u16 + 1, 1)]);
            }),
        ),
        ("handles out of order", craft(seq, |w| u32_bunch(w, mixed, victim, None, &[(health, 1), (health, 2)]))),
        (
            "array count over its cap",
            craft(seq, |w| {
                valid(w);
                bunch(w, victim, None, |w| {
                    w.write_bits(u64::from(items) - 1, handle_bits(mixed));
                    w.write_packed(9);
                    w.write_packed(0);
                });
            }),
        ),
        (
            "nested handle beyond the count",
            craft(seq, |w| {
                valid(w);
                bunch(w, victim, None, |w| {
                    w.write_bits(u64::from(items) - 1, handle_bits(mixed));
                    w.write_packed(1);
                    w.write_packed(3); // one element has nested handles 1 and 2
                    w.write_bits(0, 16);
                    w.write_packed(0);
                });
            }),
        ),
        (
            "unknown class id in an open",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, mixed, NetGuid(1000), Some(layouts.len() as u32), &[]);
            }),
        ),
        (
            "an odd (static) GUID as an actor",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, mixed, NetGuid(1001), Some(0), &[]);
            }),
        ),
        (
            "GUID 0 (the null reference) as an actor",
            craft(seq, |w| {
                valid(w);
                u32_bunch(w, mixed, NetGuid::NULL, Some(0), &[]);
            }),
        ),
        (
            "nested handles out of order",
            craft(seq, |w| {
                valid(w);
                bunch(w, victim, None, |w| {
                    w.write_bits(u64::from(items) - 1, handle_bits(mixed));
                    w.write_packed(2);
                    w.write_packed(3); // element 1 before element 0
                    w.write_bits(0, 16);
                    w.write_packed(1);
                    w.write_bits(0, 16);
                    w.write_packed(0);
                });
            }),
        ),
    ];
    for (what, bytes) in &cases {
        let e = assert_refused_without_effect(&mut c, bytes, &guids, &layouts, what);
        assert!(matches!(e, ReceiveError::Wire(_)), "{what}: {e:?}");
    }
    // References to static objects the client does not know yet apply as null and wait (the
    // server exports such objects; a registered one resolves them), with the sequence number
    // none of the refusals consumed.
    let unknown_static = craft(seq, |w| {
        object_bunch(w, 7);
        valid(w);
        bunch(w, victim, None, |w| {
            w.write_bits(u64::from(items) - 1, handle_bits(mixed));
            w.write_packed(1);
            w.write_packed(1);
            w.write_bits(3, 16);
            w.write_packed(2);
            w.write_packed(9);
            w.write_packed(0);
        });
    });
    // (References of the recorded run to actors it destroyed wait for them already.)
    let waiting = c.unmapped_count();
    assert_eq!(c.receive(&unknown_static), applied(3));
    assert_eq!(c.value(victim, 0), Some(Value::U32(0xdead_beef)));
    assert_eq!(c.value(victim, 6), Some(Value::Object(ObjectRef(0))), "held as null until GUID 7 is known");
    assert_eq!(c.unmapped_count(), waiting + 2);
    // Registering GUID 7 writes the reference that waited for it.
    assert!(c.register_static(NetGuid(7)));
    assert!(!c.register_static(NetGuid(8)), "an even GUID is not static");
    assert_eq!(c.value(victim, 6), Some(Value::Object(ObjectRef(7))));
    assert_eq!(c.unmapped_count(), waiting + 1);
    let ok = craft(seq + 1, |w| {
        valid(w);
        object_bunch(w, 7);
    });
    assert_eq!(c.receive(&ok), applied(2));
    assert_eq!(c.value(victim, 6), Some(Value::Object(ObjectRef(7))));
    // An open of an actor the client has with another class: one of the two opens was forged (a
    // server never reopens a GUID with another class). Not refused — refusing the server's own
    // open would refuse every packet resending it — but stepped over; the client's copy is
    // destroyed and asked for again, so the server's open decides the class.
    let asked = c.stats().reopens_requested;
    let reopened = craft(seq + 2, |w| {
        valid(w);
        u32_bunch(w, mixed, small, Some(0), &[]);
    });
    assert_eq!(c.receive(&reopened), Ok(Receipt::Applied { bunches: 1, skipped: 1 }));
    assert!(!c.has(small), "the copy whose class an open contradicts is gone");
    assert_eq!((c.stats().open_conflicts, c.stats().reopens_requested), (1, asked + 1));
}

/// A bunch for an actor closed earlier in the same packet names an actor the client no longer
/// has, without an open: it is stepped over (the close applies), and the actor stays closed.
#[test]
fn a_bunch_after_its_actors_close_in_the_same_packet_does_not_resurrect_it() {
    let layout = build(ClassBuilder::new("P").property(PropertyDecl::new("N", PropType::U32)));
    let layouts = [layout.clone()];
    let mut c = ClientWorld::new(&layouts, &[layout.checksum]).expect("same layout");
    let g = NetGuid(2);
    assert_eq!(c.receive(&craft(1, |w| u32_bunch(w, &layout, g, Some(0), &[(1, 5)]))), applied(1));
    let p = craft(2, |w| {
        close(w, g);
        u32_bunch(w, &layout, g, None, &[(1, 6)]);
    });
    assert_eq!(c.receive(&p), Ok(Receipt::Applied { bunches: 1, skipped: 1 }));
    assert!(!c.has(g), "the closed actor is back without an open (value {:?})", c.value(g, 0));
    assert_eq!(c.stats().reopens_requested, 0, "a closed actor is not asked for again");
}

/// A bunch for an actor the client does not have is stepped over, the rest of the packet
/// applies, and the client's feedback asks the server to open the actor again (once).
#[test]
fn a_bunch_for_an_unknown_actor_is_skipped_and_asked_for() {
    let layout = build(ClassBuilder::new("P").property(PropertyDecl::new("N", PropType::U32)));
    let layouts = [layout.clone()];
    let mut c = ClientWorld::new(&layouts, &[layout.checksum]).expect("same layout");
    let (known, unknown) = (NetGuid(2), NetGuid(4));
    assert_eq!(c.receive(&craft(1, |w| u32_bunch(w, &layout, known, Some(0), &[(1, 5)]))), applied(1));
    let p = craft(2, |w| {
        u32_bunch(w, &layout, unknown, None, &[(1, 7)]);
        u32_bunch(w, &layout, known, None, &[(1, 6)]);
    });
    assert_eq!(c.receive(&p), Ok(Receipt::Applied { bunches: 1, skipped: 1 }));
    assert_eq!(c.value(known, 0), Some(Value::U32(6)), "the rest of the packet applied");
    assert!(!c.has(unknown));
    let fb = shadowrep::wire::feedback::read_feedback(&c.feedback()).expect("feedback decodes");
    assert_eq!(fb.reopen, vec![unknown]);
    assert_eq!(c.stats().reopens_requested, 1);
    // Once the actor opens, nobody asks for it any more.
    assert_eq!(c.receive(&craft(3, |w| u32_bunch(w, &layout, unknown, Some(0), &[(1, 8)]))), applied(1));
    let fb = shadowrep::wire::feedback::read_feedback(&c.feedback()).expect("feedback decodes");
    assert!(fb.reopen.is_empty());
    assert_eq!(c.value(unknown, 0), Some(Value::U32(8)));
}
