//! Forged packets against static actors healed by the server's own packets: a forged close, a
//! forged open binding the door's path to another GUID or an unloaded path to the door's GUID,
//! forged unloaded opens filling the client's table, and the server's open dropped late behind a
//! forged packet with its number.

use super::*;
use shadowrep::wire::open::{OpenHeader, OpenKind};
use shadowrep::wire::packet::{write_bunch, write_bunch_after};
use shadowrep::wire::BitWriter;

/// `frames` frames for client 0 over a perfect link, the door's health 100, 101, … (packets the
/// client refuses are dropped, as a lost packet).
fn door_changing(l: &mut Level, door: ActorId, frames: u32) {
    for frame in 0..frames {
        l.store.set(door, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.driver.tick(&mut [&mut l.store]).unwrap();
        let (conn, world) = &mut l.clients[0];
        for p in l.driver.take_packets(*conn).unwrap() {
            let _ = world.receive(&p);
        }
        l.driver.receive_feedback(*conn, &world.feedback()).unwrap();
    }
}

#[test]
fn a_forged_close_of_a_static_actor_does_not_wedge_the_connection() {
    // The forged close destroys the client's level copy; the server's next plain update of the
    // door then finds no actor, so the client refuses that packet and asks for the door again —
    // a static GUID in its feedback's reopen list, which the server must take (it had refused
    // the whole feedback, every time: nothing was ever acknowledged again). The server's open
    // of the door by its path then brings a fresh copy back (until session 44 the client had
    // forgotten the path with the copy and stepped over every such open: the door stayed gone,
    // found by `fuzz/`'s `client_heal`).
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    let (other, g) = l.spawn([600.0, 0.0, 0.0], 1);
    l.run(3);
    assert!(l.client(0).has(guid) && l.client(0).has(g));
    let seq = l.client(0).highest_received().0 + 1;
    let forged = crafted(seq, |w| {
        shadowrep::wire::packet::write_close_for(w, guid, shadowrep::wire::open::CloseReason::Destroyed, Some(DOOR))
    });
    l.clients[0].1.receive(&forged).unwrap();
    assert!(!l.client(0).has(guid), "the forged close took the level copy");
    let conn = l.clients[0].0;
    for frame in 0..120u32 {
        l.store.set(door, HEALTH, &Value::U32(100 + frame)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(100 + frame)).unwrap();
        // A step that lets the client refuse a packet (the one whose door update it cannot read).
        l.driver.tick(&mut [&mut l.store]).unwrap();
        let (conn, world) = &mut l.clients[0];
        for p in l.driver.take_packets(*conn).unwrap() {
            let _ = world.receive(&p);
        }
        l.driver.receive_feedback(*conn, &world.feedback()).expect("every feedback decodes");
    }
    assert_eq!(l.client(0).value(g, HEALTH), Some(Value::U32(219)), "the connection goes on");
    // The server opened the door again for the client's request: the client knew the path it
    // destroyed (a server never opens a static actor it closed), so the door came back, current.
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(219)), "the door is back");
    assert_eq!(l.client(0).stats().statics_restored, 1);
    let stats = l.driver.connection_stats(conn).unwrap();
    assert_eq!(stats.feedback_malformed, 0, "every feedback decoded");
    assert!(l.driver.in_flight(conn) < 16, "acknowledged as it goes");
}

#[test]
fn a_forged_open_that_binds_a_static_path_to_another_guid_is_undone_by_the_servers_open() {
    // A forged open of the door's path under another static GUID took the path: the server's
    // updates of the door then named a GUID the client no longer had, its reopen by the path
    // was stepped over as "not loaded" and the door stayed stale for good (found by `fuzz/`'s
    // `client_heal`). A server gives a path one GUID, so the newest open of a path binds it.
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    // Before the server's own open: the forged packet takes the number the server's first
    // packet comes with next (which then replaces it).
    let forged_guid = NetGuid(guid.0 + 1_000);
    assert!(forged_guid.is_static());
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static(DOOR.into()), autonomous: false };
        write_bunch_after(w, NetGuid(0), forged_guid, Some(&open), &BitWriter::new());
    });
    l.clients[0].1.receive(&forged).unwrap();
    assert!(l.client(0).has(forged_guid), "the forger took the path");
    door_changing(&mut l, door, 60);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(159)), "the door is the server's again");
    assert!(!l.client(0).has(forged_guid));
    assert!(l.client(0).stats().statics_rebound >= 1, "{:?}", l.client(0).stats());
}

#[test]
fn a_forged_open_of_an_unloaded_path_under_a_bound_static_guid_is_healed_by_the_servers_open() {
    // A forged open of a path the client did not load, under the GUID of its bound door: the
    // client believes the newest open and reads the GUID's updates past as an unloaded static
    // actor's — and the door stayed stale for good, no reopen asked (found by `fuzz/`'s
    // `client_heal`, session 51). It now asks for the door again: the server's open, by the
    // door's path, takes the GUID back.
    let (mut l, door, guid) = with_static_door([500.0, 0.0, 0.0]);
    l.run(2);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(40)));
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static("Level.Nowhere".into()), autonomous: false };
        write_bunch_after(w, NetGuid(0), guid, Some(&open), &BitWriter::new());
    });
    l.clients[0].1.receive(&forged).unwrap();
    door_changing(&mut l, door, 40);
    assert_eq!(l.client(0).value(guid, HEALTH), Some(Value::U32(139)), "the door is the server's again");
}

/// Forged opens of static actors by paths the client never loaded fill its table of such actors
/// (whose plain updates it reads past with the class their open named): the server's own
/// unloaded static actor, opened after them, must still be read past — not make every packet
/// carrying its updates refused, with the other actors' updates in it.
#[test]
fn forged_unloaded_static_opens_never_get_the_servers_packets_refused() {
    let mut l = Level::new(every_frame(), 1);
    let (other, other_guid) = l.spawn([120.0, 0.0, 0.0], 1);
    always_due(&mut l);
    l.run(3);
    // Before each of 12 frames, a forged packet numbered as the server's next one (which then
    // replaces it) opens 400 static actors by paths the client did not load: 4800 in all.
    for f in 0..12u64 {
        let seq = l.client(0).highest_received().0 + 1;
        let class = l.class.0;
        let p = crafted(seq, |w| {
            let mut prev = NetGuid(0);
            for i in f * 400..(f + 1) * 400 {
                let g = NetGuid(1_000_001 + 2 * i);
                let open =
                    OpenHeader { class, kind: OpenKind::Static(format!("/Forged/{i}").into()), autonomous: false };
                write_bunch_after(w, prev, g, Some(&open), &BitWriter::new());
                prev = g;
            }
        });
        assert!(l.clients[0].1.receive(&p).is_ok());
        // The server sends a packet every frame (something changed): its own takes the number.
        l.store.set(other, HEALTH, &Value::U32(2 + f as u32)).unwrap();
        l.step();
    }
    assert_eq!(l.client(0).stats().replaced, 12, "{:?}", l.client(0).stats());
    assert!(l.client(0).stats().unknown_statics >= 4800);
    // The server's own static actor, at a path this client did not load either.
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    let before = l.client(0).stats();
    let mut late = Vec::new();
    for v in 10..40u32 {
        l.store.set(id, HEALTH, &Value::U32(v)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(v)).unwrap();
        l.step_tolerant();
        if l.client(0).value(other_guid, HEALTH) != Some(Value::U32(v)) {
            late.push(v);
        }
    }
    let stats = l.client(0).stats();
    assert_eq!(
        (stats.refused, stats.reopens_requested, late),
        (before.refused, before.reopens_requested, vec![]),
        "the server's packets refused, the other actor's updates late in those frames: {stats:?}"
    );
    assert!(!l.client(0).has(guid));
    assert_eq!(stats.ignored_evicted, 4800 + 1 - 4096, "the oldest forged ones made room: {stats:?}");
}

/// A forged packet numbered as the server's next one opens the static actor's GUID by a path the
/// client did not load (so the client steps over it and ignores the GUID's updates), and the
/// server's packet with that number — carrying the real open — arrives after it, late: the
/// client acknowledged its number for the forged one, so the server counts the open delivered
/// and its updates were read past for good. A late packet whose number came with other bytes
/// asks for every actor it names, static ones the client never bound included (found by
/// `fuzz/`'s `client_heal`).
#[test]
fn a_static_open_dropped_late_behind_a_forged_one_is_asked_for_again() {
    let mut l = Level::new(every_frame(), 1);
    always_due(&mut l);
    let (other, _) = l.spawn([120.0, 0.0, 0.0], 1);
    l.run(3);
    let id = l.store.spawn();
    l.move_to(id, [100.0, 0.0, 0.0]);
    let guid = l.driver.register_static_actor(l.class, &l.store, id, DOOR).unwrap();
    l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    // The forged packet takes the server's next number; a second one the number after, so the
    // server's packet with the first arrives late.
    let seq = l.client(0).highest_received().0 + 1;
    let class = l.class.0;
    let forged = crafted(seq, |w| {
        let open = OpenHeader { class, kind: OpenKind::Static("/Forged/Door".into()), autonomous: false };
        write_bunch(w, guid, Some(&open), &BitWriter::new());
    });
    assert!(l.clients[0].1.receive(&forged).is_ok());
    assert!(l.clients[0].1.receive(&crafted(seq + 1, |_| {})).is_ok());
    let mut healed = None;
    for v in 10..30u32 {
        l.store.set(id, HEALTH, &Value::U32(v)).unwrap();
        l.store.set(other, HEALTH, &Value::U32(v)).unwrap();
        l.step_tolerant();
        if l.client(0).value(guid, HEALTH) == Some(Value::U32(v)) {
            healed = Some(v);
            break;
        }
    }
    let stats = l.client(0).stats();
    let healed = healed.unwrap_or_else(|| panic!("the door never bound: {stats:?}"));
    assert!(healed <= 16, "bound in {} frames: {stats:?}", healed - 9);
    assert_eq!(stats.late_conflicts, 1, "{stats:?}");
}
