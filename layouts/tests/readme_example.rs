//! The README's class declaration example, compiled.
use shadowrep_layouts::classes::Actor;
use shadowrep_layouts::prelude::*;

shadowrep_layouts::replicated_class! {
    /// A door: opened by players, seen by everyone.
    pub class Door extends Actor {
        /// Whether it is open.
        open: bool = "bOpen" [notify = OnChanged, push],
        /// Who opened it.
        opener: ObjectRef = "Opener" [cond = OwnerOnly],
    }
}

#[test]
fn the_readme_door_works() -> Result<(), shadowrep::store::StoreError> {
    let mut doors = Door::new_store();
    let door = doors.spawn();
    assert!(Door::set_open_and_mark_dirty(&mut doors, door, true)?);
    assert!(!Door::set_open_and_mark_dirty(&mut doors, door, true)?, "no mark without a change");
    assert!(Door::open(&doors, door)?);
    assert_eq!(Door::layout().parents[Door::OPENER].condition, shadowrep::schema::Condition::OwnerOnly);
    Ok(())
}
