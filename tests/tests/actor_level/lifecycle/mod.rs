//! Opens and closes as UE does them: spawn info, static actors bound by path (and destroyed on
//! clients that join later). Tear-off is in `tearoff`. This module holds the static door the
//! static actors' tests share; the tests are in its topic files.

use super::*;

mod dynamic;
mod hostile;
mod static_healing;
mod statics;

const DOOR: &str = "/Game/Maps/Arena.Arena:PersistentLevel.Door_7";

/// A level with one static thing at `at`, loaded by client 0 as well.
fn with_static_door(at: [f32; 3]) -> (Level, ActorId, NetGuid) {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let id = l.store.spawn();
    l.move_to(id, at);
    l.store.set(id, HEALTH, &Value::U32(40)).unwrap();
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    (l, id, guid)
}
