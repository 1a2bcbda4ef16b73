//! Unmapped object references

use crate::helpers::*;
use shadowrep::client::{ClientWorld, NotifyEvent, Receipt};
use shadowrep::schema::{ClassBuilder, LeafKind, Notify, PropType, PropertyDecl};
use shadowrep::store::ClassStore;
use shadowrep::value::{ObjectRef, Value};
use shadowrep::wire::bunch::write_leaf_record;

#[test]
fn unmapped_reference_resolves_when_its_target_opens() {
    let layout = build(
        ClassBuilder::new("Linked")
            .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("N", PropType::U32)),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let (a, b, d) = (NetGuid(2), NetGuid(4), NetGuid(6));
    let obj = |g: NetGuid| Value::Object(ObjectRef(g.0));
    let reference = |w: &mut Craft, guid: NetGuid, open: Option<u32>, target: NetGuid| {
        bunch(w, guid, open, |w| {
            write_leaf_record(
                w,
                shadowrep::wire::bunch::handle_bits(&layout),
                1,
                LeafKind::Object,
                &target.0.to_le_bytes(),
            )
        });
    };

    // A opens pointing at B, which the client does not have: null, and waiting.
    assert_eq!(c.receive(&craft(1, |w| reference(w, a, Some(0), b))), applied(1));
    assert_eq!(c.value(a, 0), Some(obj(NetGuid::NULL)));
    assert_eq!(c.unmapped_count(), 1);
    assert!(c.take_notifies().is_empty(), "null to null is no change");
    // The same unresolved reference again: still one waiting entry.
    assert_eq!(c.receive(&craft(2, |w| reference(w, a, None, b))), applied(1));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(NetGuid::NULL)), 1));
    assert!(c.take_notifies().is_empty());

    // B opens: A's reference now reads B, and A's notify fired with the old null.
    assert_eq!(c.receive(&craft(3, |w| u32_bunch(w, &layout, b, Some(0), &[(2, 1)]))), applied(1));
    assert_eq!(c.value(a, 0), Some(obj(b)));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(
        c.take_notifies(),
        [NotifyEvent { class: 0, guid: a, parent: 0, old: Some(obj(NetGuid::NULL)), new: obj(b) }]
    );

    // A now points at D (unknown), then back at null before D arrives: D's later open must not
    // resurrect the stale reference.
    assert_eq!(c.receive(&craft(4, |w| reference(w, a, None, d))), applied(1));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(NetGuid::NULL)), 1));
    assert_eq!(
        c.take_notifies(),
        [NotifyEvent { class: 0, guid: a, parent: 0, old: Some(obj(b)), new: obj(NetGuid::NULL) }]
    );
    assert_eq!(c.receive(&craft(5, |w| reference(w, a, None, NetGuid::NULL))), applied(1));
    assert_eq!(c.unmapped_count(), 0, "a newer value replaces the waiting reference");
    assert!(c.take_notifies().is_empty());
    assert_eq!(c.receive(&craft(6, |w| u32_bunch(w, &layout, d, Some(0), &[]))), applied(1));
    assert_eq!(c.value(a, 0), Some(obj(NetGuid::NULL)));
    assert!(c.take_notifies().is_empty());

    // B points at an unknown actor, then B closes: nothing waits for a destroyed actor.
    assert_eq!(c.receive(&craft(7, |w| reference(w, b, None, NetGuid(8)))), applied(1));
    assert_eq!(c.unmapped_count(), 1);
    let closing = craft(8, |w| close(w, b));
    assert_eq!(c.receive(&closing), applied(1));
    assert!(!c.has(b));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(c.receive(&craft(9, |w| u32_bunch(w, &layout, NetGuid(8), Some(0), &[]))), applied(1));
    assert_eq!(c.actor_count(), 3);
}

/// Through the server: the referring actor's bunch is split across packets by a large array,
/// and the target actor (spawned later) opens after it. The split update is held until its last
/// part and applied whole; its reference waits for the target, whose open fires its notify once.
#[test]
fn unmapped_reference_through_the_server() {
    let layout = build(
        ClassBuilder::new("Holder")
            .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Big", PropType::Array { element: Box::new(PropType::U64), max_len: 2048 })),
    );
    let mut w = world_with(&layout, &[false]);
    let a = w.spawn(0);
    let ga = w.guid(0, a);
    for _ in 0..3 {
        w.step();
    }
    assert!(w.clients[0].world.has(ga));
    assert!(w.clients[0].world.take_notifies().is_empty());

    let b = w.spawn(0);
    let gb = w.guid(0, b);
    assert!(b.index > a.index, "the target is sent after the referrer");
    set(&mut w, 0, a, 0, Value::Object(ObjectRef(gb.0)));
    set(&mut w, 0, a, 1, Value::Array((0..300u64).map(Value::U64).collect()));
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let conn = w.clients[0].conn;
    let packets = w.driver.take_packets(conn).expect("connection");
    assert!(packets.len() >= 3, "the array splits the bunch: {} packets", packets.len());
    let c = &mut w.clients[0].world;
    assert!(matches!(c.receive(&packets[0]), Ok(Receipt::Applied { .. })));
    assert!(!c.has(gb), "the target's open is not in the first packet");
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(0))), "nothing applied yet");
    assert_eq!(c.value(ga, 1), Some(Value::Array(Vec::new())), "the split update is held whole");
    assert_eq!(c.unmapped_count(), 0);
    assert!(c.take_notifies().is_empty());
    for p in &packets[1..] {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied { .. })));
    }
    assert_eq!(c.value(ga, 1), Some(Value::Array((0..300u64).map(Value::U64).collect())));
    assert_eq!(c.stats().split_joined, 1);
    assert_eq!(c.stats().split_broken, 0);
    assert!(c.has(gb));
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(gb.0))));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(
        c.take_notifies(),
        [NotifyEvent {
            guid: ga,
            class: 0,
            parent: 0,
            old: Some(Value::Object(ObjectRef(0))),
            new: Value::Object(ObjectRef(gb.0))
        }]
    );
    let fb = c.feedback();
    w.driver.receive_feedback(conn, &fb).expect("feedback");
    for _ in 0..3 {
        w.step();
    }
    w.assert_converged();
}

/// A forged tear-off drops the references its actor held waiting for their target; the server's
/// next bunch (its packet numbered from the tear-off's on) undoes it, and the client asks for the
/// actor again — only its open carries those references again. The request must ride its
/// feedbacks whatever the server's plain updates do meanwhile: they carry what changed, never
/// the waiting reference, and one that ended the request (its feedback lost) left the reference
/// null for good.
#[test]
fn a_request_after_an_undone_tear_off_rides_through_plain_updates() {
    use shadowrep::wire::feedback::read_feedback;
    use shadowrep::wire::open::CloseReason;
    use shadowrep::wire::packet::write_close_after;
    let layout = build(
        ClassBuilder::new("Linked")
            .property(PropertyDecl::new("Target", PropType::Object))
            .property(PropertyDecl::new("N", PropType::U32)),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let (a, b) = (NetGuid(2), NetGuid(4));
    let bits = shadowrep::wire::bunch::handle_bits(&layout);
    // A opens pointing at B, which the client does not have: waiting.
    let opened =
        craft(1, |w| bunch(w, a, Some(0), |w| write_leaf_record(w, bits, 1, LeafKind::Object, &b.0.to_le_bytes())));
    assert_eq!(c.receive(&opened), applied(1));
    assert_eq!(c.unmapped_count(), 1);
    let _ = c.feedback();
    // A forged tear-off numbered as the server's next packet: the waiting reference is dropped.
    let forged = craft(2, |w| write_close_after(w, NetGuid(0), a, CloseReason::TornOff, None));
    assert_eq!(c.receive(&forged), applied(1));
    assert!(c.is_torn_off(a) && c.unmapped_count() == 0);
    // The server's packet with that number (other bytes): A's update undoes the tear-off, and
    // the client asks for A.
    assert!(matches!(c.receive(&craft(2, |w| u32_bunch(w, &layout, a, None, &[(2, 5)]))), Ok(Receipt::Applied { .. })));
    assert!(!c.is_torn_off(a));
    assert_eq!(c.stats().tear_offs_undone, 1);
    // Its feedback lost; the server's next plain update of A arrives.
    let lost = read_feedback(&c.feedback()).unwrap();
    assert_eq!(lost.reopen, [a]);
    assert_eq!(c.receive(&craft(3, |w| u32_bunch(w, &layout, a, None, &[(2, 6)]))), applied(1));
    let next = read_feedback(&c.feedback()).unwrap();
    assert_eq!(next.reopen, [a], "the request rides on: only A's open brings its reference again");
}
