//! Per-actor Dynamic conditions at the actor level, through dormancy: a condition changed
//! while the actor sleeps takes effect when it wakes or is flushed, and a connection it comes
//! back to is owed what changed while it was off.

use super::*;
use shadowrep::net::Dormancy;
use shadowrep::schema::Condition;

const SECRET: usize = 1;

/// A Level whose class has a Dynamic parent `Secret` (parent 1).
fn dyn_level(clients: usize) -> Level {
    let layout = Arc::new(
        ClassBuilder::new("Dyn")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Secret", PropType::U32).condition(Condition::Dynamic))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let level = ActorLevelConfig { record_decisions: true, ..every_frame() };
    let cfg = DriverConfig { actor_level: Some(level), ..DriverConfig::default() };
    let mut driver = NetDriver::new(cfg).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    driver.set_location_property(class, 0).unwrap();
    let mut l = Level { driver, store, class, clients: Vec::new(), layout, fast_kinds: Vec::new() };
    for _ in 0..clients {
        l.add_client();
    }
    always_due(&mut l);
    l
}

fn secret(l: &Level, c: usize, g: NetGuid) -> Option<Value> {
    l.client(c).value(g, SECRET)
}

#[test]
fn a_dynamic_condition_changed_while_dormant_holds_when_the_actor_wakes() {
    let mut l = dyn_level(2);
    let id = l.store.spawn();
    l.store.set(id, 0, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    l.store.set(id, SECRET, &Value::U32(1)).unwrap();
    let g = l.driver.assign_guid(l.class, &l.store, id).unwrap();
    let owner = l.clients[0].0;
    l.driver.set_owner(l.class, &l.store, id, Some(owner), false).unwrap();
    l.run(5);
    assert_eq!((secret(&l, 0, g), secret(&l, 1, g)), (Some(Value::U32(1)), Some(Value::U32(1))));
    l.driver.set_dynamic_condition(l.class, &l.store, id, SECRET, Condition::OwnerOnly).unwrap();
    l.store.set(id, SECRET, &Value::U32(2)).unwrap();
    l.run(5);
    assert_eq!((secret(&l, 0, g), secret(&l, 1, g)), (Some(Value::U32(2)), Some(Value::U32(1))));
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(5);
    assert!(l.client(1).is_dormant(g));
    // Back to everyone while asleep, then woken.
    l.driver.set_dynamic_condition(l.class, &l.store, id, SECRET, Condition::Dynamic).unwrap();
    l.run(5);
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::Awake).unwrap();
    l.run(10);
    assert_eq!(secret(&l, 1, g), Some(Value::U32(2)), "the non-owner is owed what changed while it was off");
}

#[test]
fn a_dynamic_condition_changed_while_dormant_holds_when_the_actor_is_flushed() {
    // The same, with the value changed while asleep and a flush.
    let mut l = dyn_level(2);
    let id = l.store.spawn();
    l.store.set(id, 0, &Value::Vector([100.0, 0.0, 0.0])).unwrap();
    l.store.set(id, SECRET, &Value::U32(1)).unwrap();
    let g = l.driver.assign_guid(l.class, &l.store, id).unwrap();
    l.driver.set_owner(l.class, &l.store, id, Some(l.clients[0].0), false).unwrap();
    l.driver.set_net_dormancy(l.class, &l.store, id, Dormancy::DormantAll).unwrap();
    l.run(5);
    assert!(l.client(1).is_dormant(g));
    l.driver.set_dynamic_condition(l.class, &l.store, id, SECRET, Condition::OwnerOnly).unwrap();
    l.store.set(id, SECRET, &Value::U32(2)).unwrap();
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    l.run(10);
    assert_eq!((secret(&l, 0, g), secret(&l, 1, g)), (Some(Value::U32(2)), Some(Value::U32(1))));
    l.driver.set_dynamic_condition(l.class, &l.store, id, SECRET, Condition::None).unwrap();
    l.driver.flush_net_dormancy(l.class, &l.store, id).unwrap();
    l.run(10);
    assert_eq!(secret(&l, 1, g), Some(Value::U32(2)));
}
