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

#[test]
fn notifies_read_typed_and_only_for_their_own_property() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(Lamp::LIT, Crate::WEIGHT, "the same parent index in two classes");
    let (mut lamps, mut crates) = (Lamp::new_store(), Crate::new_store());
    let mut driver = NetDriver::new(DriverConfig::default())?;
    let lamp_class = driver.register_class(&mut lamps)?;
    let crate_class = driver.register_class(&mut crates)?;
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&driver.layouts(), &driver.checksums())?;
    let (lamp, box_) = (lamps.spawn(), crates.spawn());
    let mut frame = |lamps: &mut ClassStore, crates: &mut ClassStore| -> Result<_, Box<dyn std::error::Error>> {
        driver.tick(&mut [lamps, crates])?;
        for packet in driver.take_packets(conn)? {
            client.receive(&packet)?;
        }
        driver.receive_feedback(conn, &client.feedback())?;
        Ok(client.take_notifies())
    };
    frame(&mut lamps, &mut crates)?;
    Lamp::set_lit(&mut lamps, lamp, true)?;
    Lamp::set_brightness(&mut lamps, lamp, 0.5)?;
    Crate::set_weight(&mut crates, box_, 3.0)?;
    let notifies = frame(&mut lamps, &mut crates)?;
    assert_eq!(notifies.len(), 3, "{notifies:?}");
    let lit: Vec<_> = notifies.iter().filter_map(|n| Lamp::lit_notify(&client, n)).collect();
    assert_eq!(lit, [(Some(false), true)], "with its old value");
    let brightness: Vec<_> = notifies.iter().filter_map(|n| Lamp::brightness_notify(&client, n)).collect();
    assert_eq!(brightness, [(None, 0.5)], "declared without the old value");
    let weight: Vec<_> = notifies.iter().filter_map(|n| Crate::weight_notify(&client, n)).collect();
    assert_eq!(weight, [(None, 3.0)]);
    // Each event is read by exactly one accessor: the crate's weight is not the lamp's bLit.
    for n in &notifies {
        let readers = usize::from(Lamp::lit_notify(&client, n).is_some())
            + usize::from(Lamp::brightness_notify(&client, n).is_some())
            + usize::from(Crate::weight_notify(&client, n).is_some());
        assert_eq!(readers, 1, "{n:?}");
    }
    let classes: Vec<u32> = notifies.iter().map(|n| n.class).collect();
    assert!(classes.contains(&lamp_class.0) && classes.contains(&crate_class.0));
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
    let mut driver = NetDriver::new(DriverConfig::default())?;
    driver.register_class(&mut gauges)?;
    driver.register_class(&mut scales)?;
    let conn = driver.add_connection(false);
    let mut client = ClientWorld::new(&driver.layouts(), &driver.checksums())?;
    let (gauge, scale) = (gauges.spawn(), scales.spawn());
    let mut frame = |gauges: &mut ClassStore, scales: &mut ClassStore| -> Result<_, Box<dyn std::error::Error>> {
        driver.tick(&mut [gauges, scales])?;
        for packet in driver.take_packets(conn)? {
            client.receive(&packet)?;
        }
        driver.receive_feedback(conn, &client.feedback())?;
        Ok(client.take_notifies())
    };
    frame(&mut gauges, &mut scales)?;
    Gauge::set_low(&mut gauges, gauge, 1.0)?;
    Gauge::set_high(&mut gauges, gauge, 2.0)?;
    Scale::set_mass(&mut scales, scale, 3.0)?;
    let notifies = frame(&mut gauges, &mut scales)?;
    assert_eq!(notifies.len(), 3, "{notifies:?}");
    let read = |f: Reader| -> Vec<f32> { notifies.iter().filter_map(|n| f(&client, n)).map(|(_, new)| new).collect() };
    // Every value is an f32: only the parent and the class tell them apart.
    assert_eq!(read(Gauge::low_notify), [1.0], "not High's (another parent of the class)");
    assert_eq!(read(Gauge::high_notify), [2.0]);
    assert_eq!(read(Scale::mass_notify), [3.0], "not Low's (another class, the same parent)");
    Ok(())
}
