//! Notifies at the client

use crate::helpers::*;
use shadowrep::client::{ClientWorld, NotifyEvent, Receipt};
use shadowrep::schema::{ClassBuilder, Notify, PropType, PropertyDecl, StructType};
use shadowrep::value::Value;

#[test]
fn notifies_fire_by_their_declared_mode() {
    let pair = PropType::Struct(StructType::new("Pair").field("A", PropType::U32).field("B", PropType::U32));
    let layout = build(
        ClassBuilder::new("Notified")
            .property(PropertyDecl::new("Quiet", PropType::U32))
            .property(PropertyDecl::new("Changed", PropType::U32).notify(Notify::OnChanged))
            .property(PropertyDecl::new("ChangedOld", PropType::U32).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Always", PropType::U32).notify(Notify::Always))
            .property(PropertyDecl::new("AlwaysOld", PropType::U32).notify(Notify::AlwaysWithOld))
            .property(PropertyDecl::new("Pair", pair).notify(Notify::OnChangedWithOld)),
    );
    assert_eq!((1..=5).map(|p| handle(&layout, p)).collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let g = NetGuid(2);
    let ev = |parent: usize, old: Option<u32>, new: u32| NotifyEvent {
        guid: g,
        class: 0,
        parent,
        old: old.map(Value::U32),
        new: Value::U32(new),
    };
    let pair_value = |a: u32, b: u32| Value::Struct(vec![Value::U32(a), Value::U32(b)]);
    let take = |c: &mut ClientWorld| {
        let mut n = c.take_notifies();
        n.sort_by_key(|e| e.parent);
        n
    };

    // Open with every value 5: OnChanged fires (5 differs from the default 0), Always fires.
    let p = craft(1, |w| u32_bunch(w, &layout, g, Some(0), &[(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(take(&mut c), [ev(1, None, 5), ev(2, Some(0), 5), ev(3, None, 5), ev(4, Some(0), 5)]);
    assert_eq!(u32s(&c, g, 5), [5; 5]);

    // The same values again: only the Always notifies.
    let p = craft(2, |w| u32_bunch(w, &layout, g, None, &[(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(take(&mut c), [ev(3, None, 5), ev(4, Some(5), 5)]);

    // New values, and both leaves of the struct: every notify, with old values where declared,
    // and one notify for the struct parent.
    let p = craft(3, |w| u32_bunch(w, &layout, g, None, &[(1, 9), (2, 9), (3, 9), (4, 9), (5, 9), (6, 1), (7, 2)]));
    assert_eq!(c.receive(&p), applied(1));
    let mut want = vec![ev(1, None, 9), ev(2, Some(5), 9), ev(3, None, 9), ev(4, Some(5), 9)];
    want.push(NotifyEvent { class: 0, guid: g, parent: 5, old: Some(pair_value(0, 0)), new: pair_value(1, 2) });
    assert_eq!(take(&mut c), want);
    assert_eq!(c.value(g, 5), Some(pair_value(1, 2)));

    // A partial bunch: Changed with its current value (nothing), Always (fires), one struct leaf
    // unchanged (nothing); properties not received fire nothing.
    let p = craft(4, |w| u32_bunch(w, &layout, g, None, &[(2, 9), (4, 9), (7, 2)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(take(&mut c), [ev(3, None, 9)]);

    // Notify::None never fires, changed or not.
    let p = craft(5, |w| u32_bunch(w, &layout, g, None, &[(1, 1)]));
    assert_eq!(c.receive(&p), applied(1));
    assert!(take(&mut c).is_empty());
    assert_eq!(u32s(&c, g, 5), [1, 9, 9, 9, 9]);

    // One struct leaf changed: the struct parent fires with the whole old and new value.
    let p = craft(6, |w| u32_bunch(w, &layout, g, None, &[(7, 3)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(
        take(&mut c),
        [NotifyEvent { class: 0, guid: g, parent: 5, old: Some(pair_value(1, 2)), new: pair_value(1, 3) }]
    );

    // A second actor opened with default values: OnChanged stays quiet, Always fires.
    let p = craft(7, |w| u32_bunch(w, &layout, NetGuid(4), Some(0), &[(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]));
    assert_eq!(c.receive(&p), applied(1));
    let opened_at_default = [
        NotifyEvent { class: 0, guid: NetGuid(4), parent: 3, old: None, new: Value::U32(0) },
        NotifyEvent { class: 0, guid: NetGuid(4), parent: 4, old: Some(Value::U32(0)), new: Value::U32(0) },
    ];
    assert_eq!(take(&mut c), opened_at_default);

    // A duplicate (not newer) is dropped: no values, no notifies.
    assert_eq!(c.receive(&p), Ok(Receipt::Dropped(shadowrep::client::SeqVerdict::Duplicate)));
    assert!(take(&mut c).is_empty());
    assert_eq!(u32s(&c, g, 5), [1, 9, 9, 9, 9]);
    // An older one too.
    let old = craft(6, |w| u32_bunch(w, &layout, g, None, &[(1, 7), (4, 7)]));
    assert_eq!(c.receive(&old), Ok(Receipt::Dropped(shadowrep::client::SeqVerdict::Late)));
    assert!(take(&mut c).is_empty());
    assert_eq!(u32s(&c, g, 5), [1, 9, 9, 9, 9]);
}

/// A static array is one property, as in UE (its OnRep is queued once): its elements changed by
/// one bunch fire one notify naming element 0, with every element before and after; an element
/// written with its own value changes nothing; references in it resolving fire once too.
#[test]
fn a_static_array_notifies_once_per_update_with_every_element() {
    use shadowrep::schema::LeafKind;
    use shadowrep::value::ObjectRef;
    use shadowrep::wire::bunch::{handle_bits, write_leaf_record};
    let layout = build(
        ClassBuilder::new("Armed")
            .property(PropertyDecl::new("Ammo", PropType::U32).dim(3).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Hp", PropType::U32).notify(Notify::OnChangedWithOld))
            .property(PropertyDecl::new("Targets", PropType::Object).dim(2).notify(Notify::OnChanged)),
    );
    assert_eq!(layout.parent_index("Hp"), Some(3));
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).expect("same layout");
    let g = NetGuid(2);
    let u32s = |v: &[u32]| Value::Array(v.iter().map(|&x| Value::U32(x)).collect());
    let ev = |parent: usize, old: Option<Value>, new: Value| NotifyEvent { class: 0, guid: g, parent, old, new };

    // Elements 0 and 2 and the scalar after the array: one notify each for Ammo and Hp.
    let p = craft(1, |w| u32_bunch(w, &layout, g, Some(0), &[(1, 5), (3, 7), (4, 9)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(
        c.take_notifies(),
        [ev(0, Some(u32s(&[0, 0, 0])), u32s(&[5, 0, 7])), ev(3, Some(Value::U32(0)), Value::U32(9))]
    );
    // Element 1 alone: the whole array again; element 0 with its own value: nothing.
    let p = craft(2, |w| u32_bunch(w, &layout, g, None, &[(2, 6)]));
    assert_eq!(c.receive(&p), applied(1));
    assert_eq!(c.take_notifies(), [ev(0, Some(u32s(&[5, 0, 7])), u32s(&[5, 6, 7]))]);
    let p = craft(3, |w| u32_bunch(w, &layout, g, None, &[(1, 5)]));
    assert_eq!(c.receive(&p), applied(1));
    assert!(c.take_notifies().is_empty());

    // Both references name an actor the client lacks: null, no change; its open fires the
    // array's notify once.
    let target = NetGuid(4);
    let p = craft(4, |w| {
        bunch(w, g, None, |b| {
            for h in [5, 6] {
                write_leaf_record(b, handle_bits(&layout), h, LeafKind::Object, &target.0.to_le_bytes());
            }
        })
    });
    assert_eq!(c.receive(&p), applied(1));
    assert!(c.take_notifies().is_empty());
    assert_eq!(c.unmapped_count(), 2);
    let p = craft(5, |w| u32_bunch(w, &layout, target, Some(0), &[]));
    assert_eq!(c.receive(&p), applied(1));
    let obj = Value::Object(ObjectRef(target.0));
    assert_eq!(c.take_notifies(), [ev(4, None, Value::Array(vec![obj.clone(), obj]))]);
}

/// Asked for, every actor update applied is reported once its records and notifies are in (UE's
/// `PostNetReceive`): one per bunch with records, none for a close.
#[test]
fn receive_events_follow_each_update_when_asked() {
    let layout = build(ClassBuilder::new("Plain").property(PropertyDecl::new("N", PropType::U32)));
    let mut c = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum])
        .expect("same layout")
        .with_receive_events(true);
    let (a, b) = (NetGuid(2), NetGuid(4));
    let p = craft(1, |w| {
        u32_bunch(w, &layout, a, Some(0), &[(1, 1)]);
        u32_bunch(w, &layout, b, Some(0), &[(1, 2)]);
    });
    assert_eq!(c.receive(&p), applied(2));
    use shadowrep::client::ClientEvent::{Destroyed, Received, Spawned};
    assert_eq!(
        c.take_events(),
        [Spawned { guid: a, class: 0 }, Received { guid: a }, Spawned { guid: b, class: 0 }, Received { guid: b }]
    );
    let p = craft(2, |w| {
        u32_bunch(w, &layout, a, None, &[(1, 3)]);
        close(w, b);
    });
    assert_eq!(c.receive(&p), applied(2));
    assert_eq!(c.take_events(), [Received { guid: a }, Destroyed { guid: b }]);
}

#[test]
fn a_notify_names_its_actors_class() {
    use shadowrep::net::{DriverConfig, NetDriver};
    use shadowrep::store::ClassStore;
    // Two classes whose parent 0 both notify: the parent index alone does not say whose.
    let door =
        build(ClassBuilder::new("Door").property(PropertyDecl::new("Open", PropType::U32).notify(Notify::OnChanged)));
    let hero = build(
        ClassBuilder::new("Hero").property(PropertyDecl::new("Health", PropType::U32).notify(Notify::OnChangedWithOld)),
    );
    let (mut doors, mut heroes) = (ClassStore::new(door.clone()), ClassStore::new(hero.clone()));
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let door_class = driver.register_class(&mut doors).unwrap();
    let hero_class = driver.register_class(&mut heroes).unwrap();
    let conn = driver.add_connection(false);
    let mut c = ClientWorld::new(&driver.layouts(), &driver.checksums()).unwrap();
    let d = doors.spawn();
    let h = heroes.spawn();
    let (dg, hg) =
        (driver.assign_guid(door_class, &doors, d).unwrap(), driver.assign_guid(hero_class, &heroes, h).unwrap());
    doors.set(d, 0, &Value::U32(1)).unwrap();
    heroes.set(h, 0, &Value::U32(100)).unwrap();
    driver.tick(&mut [&mut doors, &mut heroes]).unwrap();
    for p in driver.take_packets(conn).unwrap() {
        assert!(matches!(c.receive(&p), Ok(Receipt::Applied { .. })));
    }
    let mut got = c.take_notifies();
    got.sort_by_key(|n| n.class);
    assert_eq!(
        got,
        [
            NotifyEvent { guid: dg, class: door_class.0, parent: 0, old: None, new: Value::U32(1) },
            NotifyEvent { guid: hg, class: hero_class.0, parent: 0, old: Some(Value::U32(0)), new: Value::U32(100) },
        ]
    );
}
