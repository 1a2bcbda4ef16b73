//! The roles under the actor level.

use super::*;
use crate::net::{ActorLevelConfig, DriverConfig, Viewer};
use crate::schema::{ClassBuilder, Condition, PropType, PropertyDecl, VectorQuant};

/// A connection's records of an actor go when its channel closes for relevancy (the client
/// destroyed its copy): a later channel numbered with the same wrapping epoch must not find
/// them.
#[test]
fn a_closed_channel_takes_its_inactive_records_with_it() {
    let layout = std::sync::Arc::new(
        ClassBuilder::new("Item")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::None)))
            .property(PropertyDecl::new("Charges", PropType::U32).condition(Condition::OwnerOnly))
            .build()
            .unwrap(),
    );
    let mut store = ClassStore::new(layout);
    let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    let mut driver = NetDriver::new(cfg).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    driver.set_location_property(class, 0).unwrap();
    let viewer =
        |x: f32| Viewer { real_viewer: None, view_target: None, location: [x, 0.0, 0.0], direction: [1.0, 0.0, 0.0] };
    let (a, b) = (driver.add_connection(false), driver.add_connection(false));
    for c in [a, b] {
        driver.set_viewers(c, &[viewer(0.0)]).unwrap();
    }
    let id = store.spawn();
    store.set(id, 0, &crate::value::Value::Vector([100.0, 0.0, 0.0])).unwrap();
    driver.set_owner(class, &store, id, Some(a), false).unwrap();
    let frames = |driver: &mut NetDriver, store: &mut ClassStore, n: usize| {
        for _ in 0..n {
            driver.tick(&mut [store]).unwrap();
            for c in [a, b] {
                driver.take_packets(c).unwrap();
                driver.heard_from(c).unwrap();
            }
        }
    };
    frames(&mut driver, &mut store, 3);
    driver.set_owner(class, &store, id, Some(b), false).unwrap();
    let mine = |d: &NetDriver| d.inactive.get(&(class.0, id.index)).is_some_and(|l| l.iter().any(|e| e.conn == a.0));
    assert!(mine(&driver), "a lost its owner-only leaves");
    driver.set_viewers(a, &[viewer(1.0e7)]).unwrap();
    frames(&mut driver, &mut store, 300);
    assert!(!mine(&driver), "closed for relevancy: the record went with the channel");
}
