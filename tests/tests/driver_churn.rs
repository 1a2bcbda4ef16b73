//! Drivers that come and go over one store (a replay recorder started and stopped, a driver per
//! match) leave nothing behind in it: a dropped driver's watch stops receiving marks and its
//! state is freed at the store's next tick, its place taken by the next driver. Until session 44
//! the store kept every watcher it had ever had, each growing with the store and handed every
//! mark (a helper's review of the public API).
//!
//! One test in this binary, so the allocation counter sees nothing else.

use cap::Cap;
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::prelude::*;
use std::alloc;
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);

#[test]
fn drivers_that_come_and_go_over_a_store_leave_nothing_in_it() {
    let layout = Arc::new(
        ClassBuilder::new("Thing").property(PropertyDecl::new("X", PropType::U32).push(true)).build().unwrap(),
    );
    let mut store = ClassStore::new(layout.clone());
    let things: Vec<ActorId> = (0..5_000).map(|_| store.spawn()).collect();
    // The game's driver, which stays.
    let mut game = NetDriver::new(DriverConfig::default()).unwrap();
    let class = game.register_class(&mut store).unwrap();
    let conn = game.add_connection(false);
    let mut client = ClientWorld::new(std::slice::from_ref(&layout), &game.checksums()).unwrap();
    let mut frame = 0u32;
    let mut cycle = |store: &mut ClassStore, game: &mut NetDriver, client: &mut ClientWorld| {
        // A recorder joins for one frame, then stops.
        let mut recorder = NetDriver::new(DriverConfig::default()).unwrap();
        recorder.register_class(store).unwrap();
        for &id in things.iter().step_by(7) {
            store.set_and_mark(id, 0, &Value::U32(frame)).unwrap();
        }
        frame += 1;
        recorder.tick(&mut [&mut *store]).unwrap();
        game.tick(&mut [&mut *store]).unwrap();
        for p in game.take_packets(conn).unwrap() {
            client.receive(&p).unwrap();
        }
        game.receive_feedback(conn, &client.feedback()).unwrap();
        drop(recorder);
        assert_eq!(store.watcher_count(), 1, "the game's driver alone watches the store");
    };
    for _ in 0..20 {
        cycle(&mut store, &mut game, &mut client);
    }
    let before = ALLOCATOR.allocated();
    for _ in 0..300 {
        cycle(&mut store, &mut game, &mut client);
    }
    let grown = ALLOCATOR.allocated().saturating_sub(before);
    assert!(grown < 64 * 1024, "300 recorders came and went: {grown} bytes grown");
    // The game's driver still got every mark.
    let last = things[(things.len() - 1) / 7 * 7];
    let guid = game.guid_of(class, last).unwrap();
    assert_eq!(client.value(guid, 0), Some(Value::U32(frame - 1)));
}
