//! A peer that joins and leaves without end (what `shadowrep serve` does per join:
//! `SessionServer::accept` and `NetDriver::add_connection`; per leave: `remove_connection`)
//! leaves nothing behind: a removed connection's slot serves the next one, its id is never given
//! again. Until session 43 every connection ever added kept a slot — ~1.4 KB each and a step of
//! every tick's loops — so one hostile peer grew the server without bound (a helper's review:
//! 50 000 cycles, 5 MB sent, held 71 MB and made an idle tick 50× slower).
//!
//! One test in this binary, so the allocation counter sees nothing else.

use cap::Cap;
use shadowrep::net::{ActorLevelConfig, DriverConfig, DriverError, NetDriver, Viewer};
use shadowrep::prelude::*;
use shadowrep::session::{ClientIncoming, Incoming, ServerConfig, SessionClient, SessionServer};
use std::alloc;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);

/// Cycles of churn after the warm-up.
const CYCLES: u64 = 20_000;

#[test]
fn a_peer_that_joins_and_leaves_without_end_leaves_nothing_behind() {
    let layout = Arc::new(ClassBuilder::new("Thing").property(PropertyDecl::new("X", PropType::U32)).build().unwrap());
    for actor_level in [false, true] {
        let mut store = ClassStore::new(layout.clone());
        let level = actor_level.then(ActorLevelConfig::default);
        let mut driver = NetDriver::new(DriverConfig { actor_level: level, ..DriverConfig::default() }).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let things: Vec<ActorId> = (0..16).map(|_| store.spawn()).collect();
        if actor_level {
            for &id in &things {
                driver.set_position(class, &store, id, [0.0; 3]).unwrap();
            }
        }
        // A player who stays through the churn, and whose id keeps working.
        let stays = driver.add_connection(false);
        let view = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
        if actor_level {
            driver.set_viewers(stays, &[view]).unwrap();
        }
        let mut cfg = ServerConfig::new(driver.checksums());
        cfg.max_sessions = 4;
        let t0 = Instant::now();
        let mut server = SessionServer::new(cfg, t0).expect("a valid session config");
        // One hostile peer at one real address (it receives its challenges), joining and leaving:
        // hello, hello with the cookie, (welcome), disconnect — three datagrams a cycle.
        let from = SocketAddr::from(([198, 51, 100, 7], 40000));
        let mut ids = HashSet::new();
        let mut cycle = |i: u64, driver: &mut NetDriver, store: &mut ClassStore| {
            let mut client = SessionClient::new(vec![layout.clone()], 1000 + i);
            let Incoming::Reply(challenge) = server.handle(from, &client.hello().unwrap(), t0) else {
                panic!("a challenge")
            };
            assert_eq!(client.handle(&challenge), ClientIncoming::Challenge);
            let Incoming::Join(join) = server.handle(from, &client.hello().unwrap(), t0) else { panic!("a join") };
            let conn = driver.add_connection(false);
            assert!(ids.insert(conn), "id {conn:?} given twice");
            let welcome = server.accept(join, conn, t0).expect("room");
            assert_eq!(client.handle(&welcome), ClientIncoming::Welcome);
            if i.is_multiple_of(8) {
                driver.tick(&mut [&mut *store]).unwrap();
                driver.take_packets(conn).unwrap();
            }
            let bye = client.disconnect().unwrap();
            assert_eq!(server.handle(from, &bye, t0), Incoming::Disconnected { conn });
            driver.remove_connection(conn).unwrap();
            // Its id is dead for good.
            assert_eq!(driver.take_packets(conn), Err(DriverError::UnknownConnection(conn)));
        };
        // The player's client answers every packet.
        let mut world = ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap();
        let mut serve = |driver: &mut NetDriver| {
            for p in driver.take_packets(stays).unwrap() {
                world.receive(&p).unwrap();
            }
            driver.receive_feedback(stays, &world.feedback()).unwrap();
        };
        for i in 0..1_000 {
            cycle(i, &mut driver, &mut store);
            serve(&mut driver);
        }
        let before = ALLOCATOR.allocated();
        for i in 1_000..1_000 + CYCLES {
            cycle(i, &mut driver, &mut store);
            serve(&mut driver);
        }
        let grown = ALLOCATOR.allocated().saturating_sub(before);
        assert_eq!(server.len(), 0);
        assert_eq!(driver.connections().collect::<Vec<_>>(), [stays], "only the player who stayed");
        assert!(
            grown < 256 << 10,
            "actor level {actor_level}: {grown} bytes more held after {CYCLES} joins and leaves of one peer"
        );
        // The player who stayed is still served: a change reaches its client.
        store.set(things[0], 0, &Value::U32(7)).unwrap();
        driver.tick(&mut [&mut store]).unwrap();
        serve(&mut driver);
        let guid = driver.guid_of(class, things[0]).unwrap();
        assert_eq!(world.value(guid, 0), Some(Value::U32(7)), "actor level {actor_level}");
    }
}
