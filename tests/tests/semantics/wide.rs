//! A class of more than 64 leaves: the net layer's leaf masks name groups of leaves
//! (`shadowrep::schema::groups`), so a changed leaf sends its group — and nothing else.

use crate::helpers::*;
use shadowrep::schema::{ClassBuilder, Condition, Notify, PropType, PropertyDecl};
use shadowrep::value::Value;
use std::collections::{BTreeSet, HashMap};

#[test]
fn a_changed_leaf_of_a_wide_class_sends_its_group_and_nothing_else() {
    // 100 `u32` parents of one condition: 100 leaves in 64 groups, of one parent or two.
    let layout = build(
        (0..100).fold(ClassBuilder::new("Wide"), |b, i| b.property(PropertyDecl::new(format!("P{i}"), PropType::U32))),
    );
    let g = &layout.groups;
    assert_eq!(g.len(), 64);
    let pair = (0..64).find(|&b| g.leaves(b).len() == 2).expect("a group of two");
    let single = (0..64).find(|&b| g.leaves(b).len() == 1).expect("a group of one");
    let mut w = world_with(&layout, &[false, false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    let opened = run_and_collect(&mut w, 3, &layouts);
    assert_eq!(opened.len(), 0, "an actor at its defaults opens with no record");
    let mut want_values = vec![0u32; 100];
    for (k, bit) in [pair, single, 63, 0].into_iter().enumerate() {
        // One leaf of the group changes: the last one (of two, the second parent).
        let leaves = g.leaves(bit);
        let parent = layout.leaves[leaves.end - 1].parent;
        let v = 1000 + k as u32;
        set(&mut w, 0, id, parent, Value::U32(v));
        want_values[parent] = v;
        let sent = run_and_collect(&mut w, 2, &layouts);
        for ci in 0..2 {
            let handles: BTreeSet<u16> = sent.iter().filter(|s| s.0 == ci && s.1 == guid).map(|s| s.2).collect();
            let group: BTreeSet<u16> = leaves.clone().map(|l| layout.leaves[l].handle).collect();
            assert_eq!(handles, group, "client {ci}: a change of parent {parent} sends group {bit} ({leaves:?})");
        }
        for (ci, c) in w.clients.iter().enumerate() {
            assert_eq!(u32s(&c.world, guid, 100), want_values, "client {ci} after group {bit}");
        }
    }
}

#[test]
fn a_neighbours_change_fires_no_always_notify() {
    // An always-notified parent is a group of its own (`schema::groups`): sending it because a
    // neighbour changed would fire its notify for nothing.
    let layout = build((0..100).fold(ClassBuilder::new("Wide"), |b, i| {
        let d = PropertyDecl::new(format!("P{i}"), PropType::U32);
        b.property(if i % 10 == 5 { d.notify(Notify::Always) } else { d })
    }));
    let g = &layout.groups;
    assert!(g.fits() && !g.is_single());
    let mut w = world_with(&layout, &[false]);
    let id = w.spawn(0);
    let guid = w.guid(0, id);
    let layouts = HashMap::from([(guid, layout.clone())]);
    run_and_collect(&mut w, 3, &layouts);
    w.clients[0].world.take_notifies();
    for parent in (0..100).filter(|p| p % 10 == 4 || p % 10 == 6) {
        set(&mut w, 0, id, parent, Value::U32(7 + parent as u32));
    }
    run_and_collect(&mut w, 2, &layouts);
    let fired: Vec<usize> = w.clients[0].world.take_notifies().iter().map(|n| n.parent).collect();
    assert!(fired.is_empty(), "always-notified parents fired with only their neighbours changed: {fired:?}");
    set(&mut w, 0, id, 15, Value::U32(1));
    run_and_collect(&mut w, 2, &layouts);
    let fired: Vec<usize> = w.clients[0].world.take_notifies().iter().map(|n| n.parent).collect();
    assert_eq!(fired, vec![15], "its own change fires it");
}

#[test]
fn initial_values_of_a_wide_class_split_across_packets_arrive_when_the_first_packet_is_lost() {
    // An open longer than a packet (MTU 512), the first packet lost: every initial-only value
    // still arrives. A group of initial-only leaves straddling the two packets is settled by
    // neither part (`SentEntry::settles`): the second packet's delivery alone settles nothing
    // of it. The plain parents before them move the packet boundary
    // across the initial-only ones.
    for plain in [30, 35, 40, 45, 50, 55, 60, 70] {
        let initial = 40;
        let n = plain + initial;
        let layout = build((0..n).fold(ClassBuilder::new("WideInitial"), |b, i| {
            let d = PropertyDecl::new(format!("P{i}"), PropType::U64);
            b.property(if i >= plain { d.condition(Condition::InitialOnly) } else { d })
        }));
        assert!(layout.groups.fits() && !layout.groups.is_single());
        let mut w = SmallMtu::new(&layout);
        let id = w.store.spawn();
        tag_all(&mut w, id, n);
        assert!(w.frame(|i| i == 0) >= 2, "{plain} plain parents: the open fits one packet");
        for _ in 0..10 {
            w.frame(|_| false);
        }
        let guid = w.guid();
        let missing = untagged(&w, guid, n);
        assert!(missing.is_empty(), "{plain} plain parents: never received {missing:?}");
    }
}

#[test]
fn initial_values_owed_and_resent_split_arrive_when_a_later_part_is_lost() {
    // The open's packets after the first lost: the initial-only values are owed, and resent in
    // plain bunches split between packets, one of which is lost too. A delivered earlier part
    // settled the straddling group; the lost part owes it again.
    let mut failures = Vec::new();
    for plain in (0..80).step_by(6) {
        for lose in 1..3 {
            let n = plain + 60;
            let layout = build((0..n).fold(ClassBuilder::new("WideInitial"), |b, i| {
                let d = PropertyDecl::new(format!("P{i}"), PropType::U64);
                b.property(if i >= plain { d.condition(Condition::InitialOnly) } else { d })
            }));
            let mut w = SmallMtu::new(&layout);
            let id = w.store.spawn();
            tag_all(&mut w, id, n);
            w.frame(|i| i >= 1);
            let resent = (0..20).map(|_| w.frame(|i| i == lose)).find(|&k| k >= 2);
            for _ in 0..10 {
                w.frame(|_| false);
            }
            let guid = w.guid();
            let missing = untagged(&w, guid, n);
            if !missing.is_empty() {
                failures.push(format!("{plain} plain, resend in {resent:?} packets, part {lose} lost: {missing:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "never received: {failures:#?}");
}

#[test]
fn initial_or_owner_values_split_between_packets_reach_a_client_that_stops_owning() {
    // 130 InitialOrOwner parents (64 groups of two or three) at MTU 512, their owner's
    // connection. An owner's bunches carry them as plain values: a part of a group split
    // between packets, delivered, must not settle the initial values still owed of it, or the
    // lost part is parked for good once the client no longer owns the actor (found by a
    // helper's probes). Two ways there: the open's later packets lost, then a part of the
    // owner's resend; the whole open lost and the client made owner before it hears of that,
    // then the middle one of the owner's three packets.
    for case in ["resend", "gained"] {
        let n = 130;
        let layout = build((0..n).fold(ClassBuilder::new("WideInitialOrOwner"), |b, i| {
            b.property(PropertyDecl::new(format!("P{i}"), PropType::U64).condition(Condition::InitialOrOwner))
        }));
        let mut w = SmallMtu::new(&layout);
        let id = w.store.spawn();
        tag_all(&mut w, id, n);
        if case == "resend" {
            w.set_owner(id, true);
            assert!(w.frame(|i| i >= 1) >= 3, "the open spans packets");
            let resent = (0..20).map(|_| w.frame(|i| i == 1)).find(|&k| k >= 2);
            assert!(resent.is_some(), "the owed values are resent, split");
        } else {
            w.frame(|_| true);
            w.set_owner(id, true);
            assert!(w.frame(|i| i == 1) >= 3, "the owner's values span packets");
        }
        w.set_owner(id, false);
        for _ in 0..15 {
            w.frame(|_| false);
        }
        let guid = w.guid();
        let missing = untagged(&w, guid, n);
        assert!(missing.is_empty(), "{case}: never received {missing:?}");
    }
}

/// Gives each of the `n` `u64` parents of `id` a value of its own.
fn tag_all(w: &mut SmallMtu, id: shadowrep::store::ActorId, n: usize) {
    for p in 0..n {
        w.store.set(id, p, &Value::U64(1 << 40 | p as u64)).unwrap();
    }
}

/// The parents of `guid` whose value on the client is not the one [`tag_all`] gave.
fn untagged(w: &SmallMtu, guid: NetGuid, n: usize) -> Vec<usize> {
    (0..n).filter(|&p| w.client.value(guid, p) != Some(Value::U64(1 << 40 | p as u64))).collect()
}
