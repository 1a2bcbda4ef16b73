//! Unmapped object references

use crate::helpers::*;
use shadowrep::client::{ClientWorld, NotifyEvent, Receipt};
use shadowrep::schema::{ClassBuilder, LeafKind, Notify, PropType, PropertyDecl};
use shadowrep::store::ClassStore;
use shadowrep::value::{ObjectRef, Value};
use shadowrep::wire::bunch::{begin_bunch, end_bunch, write_leaf_record};
use shadowrep::wire::BitWriter;

#[test]
fn unmapped_reference_resolves_when_its_target_opens() {
    let layout = build(
        ClassBuilder::new("Linked")
            .property(PropertyDecl::new("Target", PropType::Object).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("N", PropType::U32)),
    );
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let (a, b, d) = (2u64, 4u64, 6u64);
    let obj = |g: u64| Value::Object(ObjectRef(g));
    let reference = |w: &mut BitWriter, guid: u64, open: Option<u32>, target: u64| {
        begin_bunch(w, guid, open, false);
        write_leaf_record(w, 1, LeafKind::Object, &target.to_le_bytes());
        end_bunch(w);
    };

    // A opens pointing at B, which the client does not have: null, and waiting.
    assert_eq!(c.receive(&craft(1, |w| reference(w, a, Some(0), b))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(0)));
    assert_eq!(c.unmapped_count(), 1);
    assert!(c.take_notifies().is_empty(), "null to null is no change");
    // The same unresolved reference again: still one waiting entry.
    assert_eq!(c.receive(&craft(2, |w| reference(w, a, None, b))), Ok(Receipt::Applied(1)));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(0)), 1));
    assert!(c.take_notifies().is_empty());

    // B opens: A's reference now reads B, and A's notify fired with the old null.
    assert_eq!(c.receive(&craft(3, |w| u32_bunch(w, b, Some(0), &[(2, 1)]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(b)));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(c.take_notifies(), [NotifyEvent { guid: a, parent: 0, old: Some(obj(0)), new: obj(b) }]);

    // A now points at D (unknown), then back at null before D arrives: D's later open must not
    // resurrect the stale reference.
    assert_eq!(c.receive(&craft(4, |w| reference(w, a, None, d))), Ok(Receipt::Applied(1)));
    assert_eq!((c.value(a, 0), c.unmapped_count()), (Some(obj(0)), 1));
    assert_eq!(c.take_notifies(), [NotifyEvent { guid: a, parent: 0, old: Some(obj(b)), new: obj(0) }]);
    assert_eq!(c.receive(&craft(5, |w| reference(w, a, None, 0))), Ok(Receipt::Applied(1)));
    assert_eq!(c.unmapped_count(), 0, "a newer value replaces the waiting reference");
    assert!(c.take_notifies().is_empty());
    assert_eq!(c.receive(&craft(6, |w| u32_bunch(w, d, Some(0), &[]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.value(a, 0), Some(obj(0)));
    assert!(c.take_notifies().is_empty());

    // B points at an unknown actor, then B closes: nothing waits for a destroyed actor.
    assert_eq!(c.receive(&craft(7, |w| reference(w, b, None, 8))), Ok(Receipt::Applied(1)));
    assert_eq!(c.unmapped_count(), 1);
    let close = craft(8, |w| {
        begin_bunch(w, b, None, true);
        end_bunch(w);
    });
    assert_eq!(c.receive(&close), Ok(Receipt::Applied(1)));
    assert!(!c.has(b));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(c.receive(&craft(9, |w| u32_bunch(w, 8, Some(0), &[]))), Ok(Receipt::Applied(1)));
    assert_eq!(c.actor_count(), 3);
}

/// Through the server: the referring actor's bunch is split across packets by a large array, so
/// its reference arrives packets before the target actor (spawned later) opens.
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
    set(&mut w, 0, a, 0, Value::Object(ObjectRef(gb)));
    set(&mut w, 0, a, 1, Value::Array((0..300u64).map(Value::U64).collect()));
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let conn = w.clients[0].conn;
    let packets = w.driver.take_packets(conn).expect("connection");
    assert!(packets.len() >= 3, "the array splits the bunch: {} packets", packets.len());
    let c = &mut w.clients[0].world;
    assert!(matches!(c.receive(&packets[0]), Ok(Receipt::Applied(_))));
    assert!(!c.has(gb), "the target's open is not in the first packet");
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(0))), "unmapped reads null");
    assert_eq!(c.unmapped_count(), 1);
    assert!(c.take_notifies().is_empty());
    for p in &packets[1..] {
        assert!(matches!(c.receive(p), Ok(Receipt::Applied(_))));
    }
    assert!(c.has(gb));
    assert_eq!(c.value(ga, 0), Some(Value::Object(ObjectRef(gb))));
    assert_eq!(c.unmapped_count(), 0);
    assert_eq!(
        c.take_notifies(),
        [NotifyEvent {
            guid: ga,
            parent: 0,
            old: Some(Value::Object(ObjectRef(0))),
            new: Value::Object(ObjectRef(gb))
        }]
    );
    let fb = c.feedback();
    w.driver.receive_feedback(conn, &fb).expect("feedback");
    for _ in 0..3 {
        w.step();
    }
    w.assert_converged();
}
