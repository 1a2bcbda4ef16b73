//! Every `DriverError` a user can reach, with its message.

use crate::Bench;
use shadowrep::ids::{ClassId, ConnectionId};
use shadowrep::net::{DriverConfig, DriverError, NetDriver};
use shadowrep::schema::{ClassBuilder, Condition, PropType, PropertyDecl};
use shadowrep::store::ClassStore;
use std::sync::Arc;

fn class(name: &str, leaves: usize) -> ClassStore {
    let mut b = ClassBuilder::new(name);
    for i in 0..leaves {
        b = b.property(PropertyDecl::new(format!("P{i}"), PropType::U8));
    }
    ClassStore::new(Arc::new(b.build().expect("valid layout")))
}

fn message(e: DriverError, want: &str) {
    let m = e.to_string();
    assert!(m.contains(want), "{m:?} should mention {want:?}");
}

#[test]
fn configuration_and_registration_errors() {
    for mtu in [0, 511, 8193] {
        let e = NetDriver::new(DriverConfig { mtu, ..DriverConfig::default() }).err().expect("refused");
        assert_eq!(e, DriverError::MtuOutOfRange(mtu));
        message(e, "512..=8192");
    }
    for mtu in [512, 8192] {
        assert!(NetDriver::new(DriverConfig { mtu, ..DriverConfig::default() }).is_ok());
    }
    let mut d = NetDriver::new(DriverConfig::default()).unwrap();
    let mut exactly = class("Exactly64", 64);
    let id = d.register_class(&mut exactly).expect("64 leaves fit the send state");
    let mut wide = class("Wide", 300);
    let wide_id = d.register_class(&mut wide).expect("300 leaves of one condition share 64 groups");
    // There, a parent shares its group with others: it cannot be switched on its own.
    let a = wide.spawn();
    let e = d.set_custom_active(wide_id, &wide, a, 0, false).unwrap_err();
    assert_eq!(e, DriverError::SharedLeafGroup { class: "Wide".into(), parent: 0 });
    message(e, "declare it Custom");
    // 65 runs that must be told apart: conditions alternating from leaf to leaf.
    let mut over = ClassStore::new(Arc::new(
        (0..65)
            .fold(ClassBuilder::new("Over"), |b, i| {
                let c = if i % 2 == 0 { Condition::None } else { Condition::OwnerOnly };
                b.property(PropertyDecl::new(format!("P{i}"), PropType::U8).condition(c))
            })
            .build()
            .unwrap(),
    ));
    let e = d.register_class(&mut over).unwrap_err();
    assert_eq!(e, DriverError::TooManyLeaves { class: "Over".into(), leaves: 65, groups: 65 });
    message(e, "at most 64");
    assert_eq!(d.register_class(&mut exactly), Err(DriverError::AlreadyRegistered(id)));
    let big = PropType::Opaque { name: "Blob".into(), size: 200 };
    let mut blob =
        ClassStore::new(Arc::new(ClassBuilder::new("Blob").property(PropertyDecl::new("B", big)).build().unwrap()));
    let mut small = NetDriver::new(DriverConfig { mtu: 512, ..DriverConfig::default() }).unwrap();
    assert!(small.register_class(&mut blob).is_ok(), "a 200-byte record fits a 512-byte packet");
    // An array element of three 256-byte structs: ~6 kbit, more than a 512-byte packet.
    let blob = || PropType::Opaque { name: "Blob".into(), size: 256 };
    let element = PropType::Struct(
        shadowrep::schema::StructType::new("Three").field("A", blob()).field("B", blob()).field("C", blob()),
    );
    let array = PropType::Array { element: Box::new(element), max_len: 4 };
    let mut huge =
        ClassStore::new(Arc::new(ClassBuilder::new("Huge").property(PropertyDecl::new("H", array)).build().unwrap()));
    let e = small.register_class(&mut huge).unwrap_err();
    assert!(matches!(e, DriverError::RecordTooLarge { .. }), "{e:?}");
    message(e, "more than one packet holds");
}

#[test]
fn calls_naming_what_does_not_exist() {
    let mut b =
        Bench::new(ClassBuilder::new("C").property(PropertyDecl::new("N", PropType::U32)), DriverConfig::default());
    let a = b.store.spawn();
    let mut other = class("Other", 1);
    let stranger = other.spawn();
    assert_eq!(b.driver.assign_guid(ClassId(7), &b.store, a), Err(DriverError::UnknownClass(ClassId(7))));
    assert_eq!(b.driver.assign_guid(b.class, &other, stranger), Err(DriverError::UnknownStore));
    b.store.despawn(a).unwrap();
    assert_eq!(b.driver.assign_guid(b.class, &b.store, a), Err(DriverError::StaleActor(a)));
    let a = b.store.spawn();
    let nobody = ConnectionId(9);
    assert_eq!(
        b.driver.set_owner(b.class, &b.store, a, Some(nobody), false),
        Err(DriverError::UnknownConnection(nobody))
    );
    assert_eq!(b.driver.set_custom_active(b.class, &b.store, a, 3, true), Err(DriverError::NoSuchParent(3)));
    assert!(b.driver.take_packets(nobody).is_err());
    assert!(b.driver.connection_stats(nobody).is_err());
    assert_eq!(b.driver.receive_feedback(nobody, &[0]), Err(DriverError::UnknownConnection(nobody)));
    let e = b.driver.receive_feedback(b.conn, &[0x01]).unwrap_err();
    assert!(matches!(e, DriverError::Feedback(_)));
    message(e, "bad feedback");
    // tick: a foreign store, a missing one.
    let e = b.driver.tick(&mut [&mut b.store, &mut other]).unwrap_err();
    assert_eq!(e, DriverError::UnknownStore);
    let mut second = class("Second", 1);
    let second_id = b.driver.register_class(&mut second).unwrap();
    assert_eq!(b.driver.tick(&mut [&mut b.store]), Err(DriverError::MissingStore(second_id)));
    // Stores in any order work.
    assert!(b.driver.tick(&mut [&mut second, &mut b.store]).is_ok());
    // The store of another class: named as such (a sub-object's class with its owner's store).
    let in_second = second.spawn();
    let e = b.driver.assign_guid(b.class, &second, in_second).unwrap_err();
    assert_eq!(e, DriverError::WrongStore { class: b.class, registered_as: second_id });
    message(e, "the store given is class 1's, not class 0's");
}

/// A removed connection sends nothing more, frees its state, and its id is refused afterwards;
/// the other connections go on.
#[test]
fn removed_connections_send_nothing_and_refuse_their_id() {
    use shadowrep::link::LinkConfig;
    use shadowrep_tests::World;
    let mut w = World::new(&["ShooterCharacter"], 2, DriverConfig::default(), |_| LinkConfig::perfect(1), 4);
    let ids: Vec<_> = (0..20).map(|_| w.spawn(0)).collect();
    w.set_owner(0, ids[0], Some(0), true);
    for _ in 0..3 {
        w.mutate(0.5);
        w.step();
    }
    let gone = w.clients[0].conn;
    let kept = w.clients[1].conn;
    assert_eq!(w.driver.connections().collect::<Vec<_>>(), vec![gone, kept]);
    w.driver.remove_connection(gone).expect("removes");
    assert_eq!(w.driver.connections().collect::<Vec<_>>(), vec![kept]);
    assert_eq!(w.driver.remove_connection(gone), Err(DriverError::UnknownConnection(gone)));
    assert_eq!(w.driver.take_packets(gone).err(), Some(DriverError::UnknownConnection(gone)));
    assert_eq!(w.driver.receive_feedback(gone, &[0]), Err(DriverError::UnknownConnection(gone)));
    let class = w.classes[0];
    assert_eq!(
        w.driver.set_owner(class, &w.stores[0], ids[1], Some(gone), false),
        Err(DriverError::UnknownConnection(gone))
    );
    // The remaining client goes on as before; the removed one is not stepped any more.
    let removed = w.clients.remove(0);
    assert_eq!(removed.conn, gone);
    w.meta.values_mut().for_each(|m| {
        if m.owner == Some(0) {
            m.owner = None;
        }
        m.owner = m.owner.map(|o| o - 1);
        m.roles.remove(0);
    });
    for _ in 0..5 {
        w.mutate(0.5);
        w.step();
    }
    w.assert_converged();
    assert_eq!(w.driver.in_flight(gone), 0);
    assert_eq!(w.driver.bytes_sent(gone), 0, "its state is gone");
}

/// Per-actor Dynamic conditions: refusals with their messages, and the cap on a class's
/// distinct sets of them (a refused call changes nothing; a set made before is still taken).
#[test]
fn dynamic_condition_errors_and_the_cap_on_distinct_sets() {
    use shadowrep::net::condition::MAX_DYNAMIC_SETS;
    use shadowrep::schema::Condition;
    let mut b = ClassBuilder::new("Effects").property(PropertyDecl::new("Plain", PropType::U8));
    for i in 0..4 {
        b = b.property(PropertyDecl::new(format!("D{i}"), PropType::U8).condition(Condition::Dynamic));
    }
    let mut b = Bench::new(b, DriverConfig::default());
    let a = b.store.spawn();
    let e = b.driver.set_dynamic_condition(b.class, &b.store, a, 0, Condition::OwnerOnly).unwrap_err();
    assert_eq!(e, DriverError::NotDynamic(0));
    message(e, "not declared Dynamic");
    let e = b.driver.set_dynamic_condition(b.class, &b.store, a, 1, Condition::InitialOnly).unwrap_err();
    assert_eq!(e, DriverError::BadDynamicCondition(Condition::InitialOnly));
    message(e, "initial-only");
    // Every combination of four parents' conditions (13 each besides the class's rule) is a set
    // of its own: the class keeps MAX_DYNAMIC_SETS, then refuses.
    let own: Vec<Condition> = Condition::ALL
        .into_iter()
        .filter(|c| !matches!(c, Condition::InitialOnly | Condition::InitialOrOwner | Condition::Dynamic))
        .collect();
    let conditions = |b: &Bench| -> Vec<_> { (1..=4).map(|q| b.driver.dynamic_condition(b.class, a, q)).collect() };
    let (mut made, mut capped) = (0, false);
    'all: for i in 0..own.len().pow(4) {
        let mut k = i;
        for p in 1..=4 {
            let c = own[k % own.len()];
            k /= own.len();
            let before = conditions(&b);
            match b.driver.set_dynamic_condition(b.class, &b.store, a, p, c) {
                Ok(()) => made += 1,
                Err(e) => {
                    assert_eq!(e, DriverError::TooManyDynamicSets(b.class));
                    message(e, "distinct sets");
                    assert_eq!(conditions(&b), before, "a refused call changes nothing");
                    // The set the actor has is still taken (the same condition again).
                    let same = before[p - 1].expect("live");
                    b.driver.set_dynamic_condition(b.class, &b.store, a, p, same).unwrap();
                    capped = true;
                    break 'all;
                }
            }
        }
    }
    assert!(capped && made >= MAX_DYNAMIC_SETS, "{made} calls, capped: {capped}");
    // Another actor takes a set made before (the first call's), and the class's rule again.
    let other = b.store.spawn();
    b.driver.set_dynamic_condition(b.class, &b.store, other, 1, own[0]).unwrap();
    assert_eq!(b.driver.dynamic_condition(b.class, other, 1), Some(own[0]));
    b.driver.set_dynamic_condition(b.class, &b.store, other, 1, Condition::Dynamic).unwrap();
    assert_eq!(b.driver.dynamic_condition(b.class, other, 1), Some(Condition::Dynamic));
}
