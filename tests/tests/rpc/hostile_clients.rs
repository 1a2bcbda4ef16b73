//! A hostile client's Server calls at the server: refused, deduplicated and bounded, held calls
//! rechecked when their turn comes, each connection filling only its own room.

use crate::common::*;
use shadowrep::ids::NetGuid;
use shadowrep::link::LinkConfig;
use shadowrep::value::Value;
use shadowrep::wire::rpc::encode_call;
use shadowrep::wire::BitWriter;
use shadowrep_tests::World;

#[test]
fn hostile_server_calls_are_refused_and_bounded() {
    use shadowrep::wire::rpc::RpcBunch;
    let (mut w, _, guids) = owned_world(1, 1, LinkConfig::perfect(0));
    let g = guids[0];
    let layout = pawn();
    let use_call = |n: u32| encode_call(&layout, layout.rpc_index(USE).unwrap(), &[Value::U32(n)]).unwrap();
    let conn = w.clients[0].conn;
    let highest = w.clients[0].world.highest_received();
    let feedback = |calls: Vec<RpcBunch>| calls_feedback(highest, &calls);
    // A reliable call numbered `seq`, or an unreliable one numbered `u`.
    let bunch = |target: NetGuid, seq: Option<u16>, call: BitWriter| {
        let (bits, call) = (call.len_bits(), call.into_bytes());
        RpcBunch { target, seq: Some(seq.unwrap_or(bits as u16)), call, bits, reliable: seq.is_some() }
    };
    // Unknown actor, a client call's index, garbage bits, numbers all over the window.
    let mut garbage = BitWriter::new();
    garbage.write_bits(0b101, 3);
    garbage.write_bits(u64::MAX, 40);
    let client_index = encode_call(&layout, layout.rpc_index(WHISPER).unwrap(), &[Value::U32(1)]).unwrap();
    let calls = vec![
        bunch(NetGuid(4000), Some(0), use_call(1)),
        bunch(g, None, client_index),
        bunch(g, None, garbage),
        bunch(g, Some(2), use_call(2)),
        bunch(g, Some(40_000), use_call(3)),
    ];
    w.driver.receive_feedback(conn, &feedback(calls.clone())).unwrap();
    // Number 0 is used (not owned: refused); 2 waits for 1; 40 000 is far from any honest
    // number — only this client's own hostile calls can be disordered so, and it is delivered.
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, USE), vec![3]);
    let stats = w.driver.connection_stats(conn).unwrap();
    assert_eq!((stats.server_rpcs_refused, stats.server_rpcs_delivered), (3, 1), "{stats:?}");
    // The same datagram again: nothing more (reliable numbers seen, unreliable numbers seen).
    w.driver.receive_feedback(conn, &feedback(calls[..4].to_vec())).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty());
    assert_eq!(w.driver.connection_stats(conn).unwrap().server_rpcs_refused, 3);
    // A flood of numbers held at most two a number.
    for p in 0..40u32 {
        let calls = (0..60u32).map(|i| bunch(g, Some(((p * 60 + i) % 1000 + 3) as u16), use_call(p))).collect();
        w.driver.receive_feedback(conn, &feedback(calls)).unwrap();
    }
    w.driver.receive_feedback(conn, &feedback(vec![bunch(g, Some(1), use_call(77))])).unwrap();
    // Past two calls a number, the rest were delivered at once; the two held a number came
    // after number 1's, in order.
    let got = w.driver.take_server_rpcs();
    let uses = server_numbers(&got, conn, USE);
    assert!(uses.contains(&77), "number 1's call");
    assert!(got.len() <= 40 * 60 + 2, "{}", got.len());
    // The connection still works.
    w.clients[0].world.call_server_rpc(g, FIRE, &[Value::U32(5)]).unwrap();
    w.step();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, FIRE), vec![5]);
}

/// A client banks reliable calls behind a number it withholds while it owns an actor, then sends
/// the number once the game gave the actor to another player: none runs (ownership is asked
/// again when a call's turn comes; a review found all 60 delivered).
#[test]
fn calls_banked_while_owning_an_actor_do_not_run_once_another_player_owns_it() {
    let (mut w, ids, guids) = owned_world(1, 2, LinkConfig::perfect(1));
    let g = guids[0];
    let hostile = w.clients[0].conn;
    let highest = w.clients[0].world.highest_received();
    let banked: Vec<_> = (1..=60u16).map(|s| client_call(g, USE, s, u32::from(s))).collect();
    w.driver.receive_feedback(hostile, &calls_feedback(highest, &banked)).unwrap();
    assert!(w.driver.take_server_rpcs().is_empty(), "held behind number 0");
    w.set_owner(0, ids[0], Some(1), true);
    w.step();
    w.driver.take_server_rpcs();
    w.driver.receive_feedback(hostile, &calls_feedback(highest, &[client_call(g, USE, 0, 0)])).unwrap();
    assert!(server_numbers(&w.driver.take_server_rpcs(), hostile, USE).is_empty());
    assert_eq!(w.driver.connection_stats(hostile).unwrap().server_rpcs_refused, 61);
}

/// One client floods the server with unreliable calls on its own actor within a frame: it fills
/// its own room only; another client's reliable call in the same frame runs (a review found one
/// room for all connections, and a reliable call refused by it yet acknowledged: lost for good).
/// A reliable call that finds no room is not taken at all — not acknowledged — and runs once the
/// game took the others.
#[test]
fn a_flood_of_calls_fills_its_own_connections_room_only() {
    use shadowrep::net::MAX_UNTAKEN_SERVER_RPCS;
    let (mut w, _, guids) = owned_world(2, 2, LinkConfig::perfect(1));
    let (g0, g1) = (guids[0], guids[1]);
    let (hostile, honest) = (w.clients[0].conn, w.clients[1].conn);
    let highest = w.clients[0].world.highest_received();
    for d in 0..200u32 {
        let calls: Vec<_> = (0..64u32).map(|i| client_call(g0, FIRE, (d * 64 + i) as u16, i)).collect();
        w.driver.receive_feedback(hostile, &calls_feedback(highest, &calls)).unwrap();
    }
    w.clients[1].world.call_server_rpc(g1, USE, &[Value::U32(42)]).unwrap();
    // The hostile client's own reliable call finds no room: not taken, resent.
    w.clients[0].world.call_server_rpc(g0, USE, &[Value::U32(43)]).unwrap();
    w.step();
    w.step();
    let stats = w.driver.connection_stats(hostile).unwrap();
    assert_eq!(stats.server_rpcs_delivered as usize, MAX_UNTAKEN_SERVER_RPCS);
    assert_eq!(stats.server_rpcs_refused as usize, 200 * 64 - MAX_UNTAKEN_SERVER_RPCS);
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 1, "no room: not acknowledged");
    let got = w.driver.take_server_rpcs();
    assert_eq!(server_numbers(&got, honest, USE), vec![42]);
    assert!(server_numbers(&got, hostile, USE).is_empty());
    for _ in 0..3 {
        w.step();
    }
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), hostile, USE), vec![43], "taken once there was room");
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 0);
}

/// The server's dedupe of a client's unreliable calls at its edges: a number half the number
/// space from the newest is not newer (were it, two numbers 32 768 apart would each be newer
/// than the other, and repeated datagrams would deliver them again and again), and a number
/// `ACK_WINDOW` (256) or more behind is past the numbers kept (taken, it would be taken every
/// time it came); one 255 behind and not seen is taken, once.
#[test]
fn unreliable_server_calls_at_the_dedupe_windows_edges_are_taken_at_most_once() {
    let (mut w, _, guids) = owned_world(1, 1, LinkConfig::perfect(0));
    let g = guids[0];
    let conn = w.clients[0].conn;
    let highest = w.clients[0].world.highest_received();
    let send = |w: &mut World, seqs: &[u16]| {
        let calls: Vec<_> = seqs.iter().map(|&s| client_call(g, FIRE, s, u32::from(s))).collect();
        w.driver.receive_feedback(conn, &calls_feedback(highest, &calls)).unwrap();
        server_numbers(&w.driver.take_server_rpcs(), conn, FIRE)
    };
    assert_eq!(send(&mut w, &[0]), vec![0]);
    assert_eq!(send(&mut w, &[0x8000, 0, 0x8000, 0]), Vec::<u32>::new());
    assert_eq!(send(&mut w, &[256]), vec![256]);
    assert_eq!(send(&mut w, &[0, 0, 1, 1]), vec![1], "0 is 256 behind: forgotten; 1 is 255 behind");
    assert_eq!(w.driver.connection_stats(conn).unwrap().server_rpcs_stale, 7);
}

/// A reliable Server call is taken only if the connection's room holds it and every call held
/// behind it that it would release: with two held and the room two short of full, number 0 is
/// not taken (nor acknowledged: the client sends it again) — taken, the calls it released past
/// the room would be refused with their numbers used, lost for good (a mutant that did not count
/// the held calls lost one).
#[test]
fn a_reliable_server_call_that_would_release_more_than_the_room_holds_is_not_taken() {
    use shadowrep::net::MAX_UNTAKEN_SERVER_RPCS;
    let (mut w, _, guids) = owned_world(1, 1, LinkConfig::perfect(0));
    let g = guids[0];
    let conn = w.clients[0].conn;
    let highest = w.clients[0].world.highest_received();
    let fill = MAX_UNTAKEN_SERVER_RPCS as u32 - 2;
    for chunk in (0..fill).collect::<Vec<_>>().chunks(64) {
        let calls: Vec<_> = chunk.iter().map(|&n| client_call(g, FIRE, n as u16, n)).collect();
        w.driver.receive_feedback(conn, &calls_feedback(highest, &calls)).unwrap();
    }
    let uses: Vec<_> = (0..3u16).map(|s| client_call(g, USE, s, u32::from(s))).collect();
    w.driver.receive_feedback(conn, &calls_feedback(highest, &uses[1..])).unwrap(); // held
    w.driver.receive_feedback(conn, &calls_feedback(highest, &uses[..1])).unwrap(); // no room
    let got = w.driver.take_server_rpcs();
    assert_eq!(server_numbers(&got, conn, FIRE).len(), fill as usize);
    assert!(server_numbers(&got, conn, USE).is_empty(), "number 0 and the two it releases do not fit");
    // Taken, the room is free: the client's resend of what is unacknowledged brings them all.
    w.driver.receive_feedback(conn, &calls_feedback(highest, &uses)).unwrap();
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, USE), vec![0, 1, 2]);
    assert_eq!(w.driver.connection_stats(conn).unwrap().server_rpcs_refused, 0);
}
