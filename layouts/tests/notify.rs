//! The generated notify accessors: a client's notifies read typed, each only for its own
//! property — not another class's at the same parent index.
use shadowrep::client::ClientWorld;
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep_layouts::classes::Actor;
use shadowrep_layouts::prelude::*;

shadowrep_layouts::replicated_class! {
    pub class Lamp extends Actor {
        lit: bool = "bLit" [notify = OnChangedWithOld],
        brightness: f32 = "Brightness" [notify = OnChanged],
    }
}

shadowrep_layouts::replicated_class! {
    pub class Crate extends Actor {
        /// At `Lamp::LIT`'s parent index.
        weight: f32 = "Weight" [notify = OnChanged],
    }
}

type TestResult<T> = Result<T, Box<dyn std::error::Error>>;

/// A driver of two stores' classes (registered in that order), one connection and its client.
struct Link {
    driver: NetDriver,
    conn: shadowrep::net::ConnectionId,
    client: ClientWorld,
    classes: [shadowrep::net::ClassId; 2],
}

impl Link {
    fn new(a: &mut ClassStore, b: &mut ClassStore) -> TestResult<Self> {
        let mut driver = NetDriver::new(DriverConfig::default())?;
        let classes = [driver.register_class(a)?, driver.register_class(b)?];
        let conn = driver.add_connection(false);
        let client = ClientWorld::new(&driver.layouts(), &driver.checksums())?;
        Ok(Self { driver, conn, client, classes })
    }

    /// One frame: the driver ticks both stores, the client applies its packets and answers;
    /// the notifies it fired.
    fn frame(&mut self, a: &mut ClassStore, b: &mut ClassStore) -> TestResult<Vec<shadowrep::client::NotifyEvent>> {
        self.driver.tick(&mut [a, b])?;
        for packet in self.driver.take_packets(self.conn)? {
            self.client.receive(&packet)?;
        }
        self.driver.receive_feedback(self.conn, &self.client.feedback())?;
        Ok(self.client.take_notifies())
    }
}

#[test]
fn notifies_read_typed_and_only_for_their_own_property() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(Lamp::LIT, Crate::WEIGHT, "the same parent index in two classes");
    let (mut lamps, mut crates) = (Lamp::new_store(), Crate::new_store());
    let mut link = Link::new(&mut lamps, &mut crates)?;
    let (lamp, box_) = (lamps.spawn(), crates.spawn());
    link.frame(&mut lamps, &mut crates)?;
    Lamp::set_lit(&mut lamps, lamp, true)?;
    Lamp::set_brightness(&mut lamps, lamp, 0.5)?;
    Crate::set_weight(&mut crates, box_, 3.0)?;
    let notifies = link.frame(&mut lamps, &mut crates)?;
    let client = &link.client;
    assert_eq!(notifies.len(), 3, "{notifies:?}");
    let lit: Vec<_> = notifies.iter().filter_map(|n| Lamp::lit_notify(client, n)).collect();
    assert_eq!(lit, [(Some(false), true)], "with its old value");
    let brightness: Vec<_> = notifies.iter().filter_map(|n| Lamp::brightness_notify(client, n)).collect();
    assert_eq!(brightness, [(None, 0.5)], "declared without the old value");
    let weight: Vec<_> = notifies.iter().filter_map(|n| Crate::weight_notify(client, n)).collect();
    assert_eq!(weight, [(None, 3.0)]);
    // Each event is read by exactly one accessor: the crate's weight is not the lamp's bLit.
    for n in &notifies {
        let readers = usize::from(Lamp::lit_notify(client, n).is_some())
            + usize::from(Lamp::brightness_notify(client, n).is_some())
            + usize::from(Crate::weight_notify(client, n).is_some());
        assert_eq!(readers, 1, "{n:?}");
    }
    let classes: Vec<u32> = notifies.iter().map(|n| n.class).collect();
    assert!(classes.contains(&link.classes[0].0) && classes.contains(&link.classes[1].0));
    Ok(())
}

shadowrep_layouts::replicated_class! {
    pub class Gauge extends Actor {
        low: f32 = "Low" [notify = OnChanged],
        high: f32 = "High" [notify = OnChanged],
    }
}

shadowrep_layouts::replicated_class! {
    pub class Scale extends Actor {
        /// At `Gauge::LOW`'s parent index, of the same type.
        mass: f32 = "Mass" [notify = OnChanged],
    }
}

/// A generated notify reader of an `f32` property.
type Reader = fn(&ClientWorld, &shadowrep::client::NotifyEvent) -> Option<(Option<f32>, f32)>;

#[test]
fn a_notify_of_the_same_type_is_read_only_by_its_own_propertys_accessor() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(Gauge::LOW, Scale::MASS, "the same parent index in two classes");
    let (mut gauges, mut scales) = (Gauge::new_store(), Scale::new_store());
    let mut link = Link::new(&mut gauges, &mut scales)?;
    let (gauge, scale) = (gauges.spawn(), scales.spawn());
    link.frame(&mut gauges, &mut scales)?;
    Gauge::set_low(&mut gauges, gauge, 1.0)?;
    Gauge::set_high(&mut gauges, gauge, 2.0)?;
    Scale::set_mass(&mut scales, scale, 3.0)?;
    let notifies = link.frame(&mut gauges, &mut scales)?;
    let client = &link.client;
    assert_eq!(notifies.len(), 3, "{notifies:?}");
    let read = |f: Reader| -> Vec<f32> { notifies.iter().filter_map(|n| f(client, n)).map(|(_, new)| new).collect() };
    // Every value is an f32: only the parent and the class tell them apart.
    assert_eq!(read(Gauge::low_notify), [1.0], "not High's (another parent of the class)");
    assert_eq!(read(Gauge::high_notify), [2.0]);
    assert_eq!(read(Scale::mass_notify), [3.0], "not Low's (another class, the same parent)");
    Ok(())
}
