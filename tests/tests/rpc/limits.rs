//! Calls a game gets wrong, what a call costs on the wire, and the bounds: a call's size, the
//! calls a game never takes, the reliable window's overflow (dropped, or the connection failed).

use crate::common::*;
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::link::LinkConfig;
use shadowrep::net::{ConnectionFailure, DriverConfig, DriverError, ReliableOverflow};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl, RpcDecl};
use shadowrep::value::{Value, ValueError};
use shadowrep::wire::open::EXPORT_GUID;
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch_after};
use shadowrep::wire::rpc::{encode_call, write_rpc_body, MAX_RELIABLE_RPCS};
use shadowrep::wire::BitWriter;
use shadowrep_tests::World;
use std::sync::Arc;

#[test]
fn a_call_the_game_gets_wrong_is_refused_and_changes_nothing() {
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(1));
    let (class, id) = (w.classes[0], ids[0]);
    // Refused calls on an actor no tick has seen yet give it no GUID.
    for (name, args) in [("Nope", vec![]), (SHOUT, vec![]), (USE, vec![Value::U32(1)])] {
        assert!(w.driver.call_rpc(class, &w.stores[0], id, name, &args).is_err());
    }
    assert_eq!(w.driver.guid_of(class, id), None, "a refused call changes nothing");
    let err = w.driver.call_rpc(class, &w.stores[0], id, "Nope", &[]).unwrap_err();
    assert_eq!(err, DriverError::UnknownRpc { class: "Pawn".into(), rpc: "Nope".into() });
    assert!(err.to_string().contains("declares no call `Nope`"), "{err}");
    let err = w.driver.call_rpc(class, &w.stores[0], id, SHOUT, &[]).unwrap_err();
    assert_eq!(err, DriverError::RpcArgs(ValueError::ArgCount { expected: 1, got: 0 }));
    let err = w.driver.call_rpc(class, &w.stores[0], id, SHOUT, &[Value::U8(1)]).unwrap_err();
    assert!(matches!(err, DriverError::RpcArgs(ValueError::TypeMismatch { .. })), "{err}");
    w.stores[0].despawn(id).unwrap();
    let err = w.driver.call_rpc(class, &w.stores[0], id, SHOUT, &[Value::U32(1)]).unwrap_err();
    assert_eq!(err, DriverError::StaleActor(id));
    w.actors.clear();
    for _ in 0..3 {
        w.step();
    }
    assert!(w.clients[0].world.take_rpcs().is_empty(), "nothing was called");

    // A call larger than a packet, at the smallest MTU.
    let big = ClassBuilder::new("Big")
        .rpc(
            RpcDecl::multicast("Dump")
                .param(PropertyDecl::new("Data", PropType::Array { element: Box::new(PropType::U64), max_len: 200 })),
        )
        .build()
        .unwrap();
    let mut w = World::with_layouts(vec![Arc::new(big)], DriverConfig { mtu: 512, ..DriverConfig::default() }, 3);
    let id = w.spawn(0);
    let data = |n: u64| Value::Array((0..n).map(|i| Value::U64(u64::MAX - i)).collect());
    let err = w.driver.call_rpc(w.classes[0], &w.stores[0], id, "Dump", &[data(100)]).unwrap_err();
    assert!(matches!(err, DriverError::RpcTooLarge { .. }), "{err}");
    w.driver.call_rpc(w.classes[0], &w.stores[0], id, "Dump", &[data(10)]).unwrap();

    // A torn-off actor is its clients' own.
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(1));
    w.step();
    w.driver.tear_off(w.classes[0], &w.stores[0], ids[0]).unwrap();
    let guid = w.guid(0, ids[0]);
    assert_eq!(call(&mut w, ids[0], SHOUT, 1).unwrap_err(), DriverError::TornOff(guid));
}

#[test]
fn a_call_costs_what_its_grammar_says() {
    // One actor, its open acknowledged, nothing changing: a frame's packet is the call alone.
    // seq (8 bits) + lead (presence 1, GUID step 8, form 1) + open and close bits (2) + length
    // (8) + call bit, reliable bit (2) [+ number 16] + target GUID (8) + index (3 bits: the class
    // declares 6 calls) + the u32 argument (32; its record's handle takes no bits in a
    // one-parameter call) + end (2).
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(0));
    for _ in 0..3 {
        w.step();
    }
    let conn = w.clients[0].conn;
    let mut sizes = Vec::new();
    for name in [PING, SHOUT] {
        call(&mut w, ids[0], name, 1000).unwrap();
        let mut stores: Vec<_> = w.stores.iter_mut().collect();
        w.driver.tick(&mut stores).unwrap();
        let packets = w.driver.take_packets(conn).unwrap();
        sizes.push(packets.iter().map(Vec::len).collect::<Vec<_>>());
        for p in packets {
            w.clients[0].world.receive(&p).unwrap();
        }
        let fb = w.clients[0].world.feedback();
        w.driver.receive_feedback(conn, &fb).unwrap();
    }
    assert_eq!(
        sizes,
        vec![vec![(8 + 10 + 2 + 8 + 2 + 8 + 3 + 32 + 2usize).div_ceil(8)], vec![(75 + 16usize).div_ceil(8)]]
    );
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), PING), vec![1000]);
}

#[test]
fn calls_a_game_never_takes_stop_at_a_bound() {
    use shadowrep::client::MAX_UNTAKEN_RPCS;
    let g = NetGuid(2);
    let mut c = crafted_client(g, &[]);
    let layout = pawn();
    let ping = encode_call(&layout, layout.rpc_index(PING).unwrap(), &[Value::U32(1)]).unwrap();
    let per = 300;
    let packets = MAX_UNTAKEN_RPCS / per + 10;
    for p in 0..packets {
        let mut w = BitWriter::new();
        begin_packet(&mut w, Seq(2 + p as u32));
        for i in 0..per {
            let mut body = BitWriter::new();
            write_rpc_body(&mut body, None, g, &ping);
            write_bunch_after(&mut w, if i == 0 { NetGuid(0) } else { EXPORT_GUID }, EXPORT_GUID, None, &body);
        }
        end_packet(&mut w);
        c.receive(&w.into_bytes()).unwrap();
    }
    let stats = c.stats();
    assert_eq!(stats.rpcs_delivered as usize, MAX_UNTAKEN_RPCS);
    assert_eq!(stats.rpcs_dropped as usize, packets * per - MAX_UNTAKEN_RPCS);
    assert_eq!(c.take_rpcs().len(), MAX_UNTAKEN_RPCS);
    c.receive(&shouts(2 + packets as u32, &[(0, g, 5)])).unwrap();
    assert_eq!(numbers(&c.take_rpcs(), SHOUT), vec![5], "taken, the next calls come again");
}

/// `call_rpc` measures a call against an empty packet with everything its bunch carries — a
/// reliable call's 16-bit number too: at the edge a call that fits a packet unreliable is
/// refused reliable (`RpcTooLarge`), and the largest reliable call taken goes in one packet
/// within the MTU and arrives (a mutant that left the number out took a call no packet holds).
#[test]
fn a_reliable_calls_size_limit_counts_its_number() {
    // 50 u64 parameters and 60 u8 ones (7-bit handles): each u8 set adds 15 bits, finer than a
    // number's 16, so some count of them fits unreliable and not reliable.
    let decl = |d: RpcDecl| {
        let d = (0..50).fold(d, |d, i| d.param(PropertyDecl::new(format!("W{i}"), PropType::U64)));
        (0..60).fold(d, |d, i| d.param(PropertyDecl::new(format!("B{i}"), PropType::U8)))
    };
    let layout = ClassBuilder::new("Big")
        .rpc(decl(RpcDecl::multicast("Loud")))
        .rpc(decl(RpcDecl::multicast("LoudReliable").reliable()))
        .build()
        .unwrap();
    let mtu = 512;
    let mut w = World::with_layouts(vec![Arc::new(layout)], DriverConfig { mtu, ..DriverConfig::default() }, 3);
    w.add_client(false, LinkConfig::perfect(0));
    let id = w.spawn(0);
    for _ in 0..3 {
        w.step();
    }
    let args = |set: usize| -> Vec<Value> {
        let words = (0..50).map(|i| Value::U64(u64::MAX - i));
        words.chain((0..60).map(|i| Value::U8(if i < set { 0xa5 } else { 0 }))).collect()
    };
    let fits = |w: &mut World, name: &str, set: usize| match w.driver.call_rpc(
        w.classes[0],
        &w.stores[0],
        id,
        name,
        &args(set),
    ) {
        Ok(()) => true,
        Err(DriverError::RpcTooLarge { .. }) => false,
        Err(e) => panic!("{e}"),
    };
    let reliable = (0..=60).take_while(|&k| fits(&mut w, "LoudReliable", k)).last().expect("a reliable call fits");
    assert!(reliable < 60, "the parameters reach past a packet");
    assert!(
        fits(&mut w, "Loud", reliable + 1),
        "unreliable, one more parameter still fits: the number is the difference"
    );
    // Every call taken above goes; the largest reliable one is in a packet of its own, within the MTU.
    let conn = w.clients[0].conn;
    let mut stores: Vec<_> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).unwrap();
    let packets = w.driver.take_packets(conn).unwrap();
    assert!(packets.iter().all(|p| p.len() <= mtu), "{:?}", packets.iter().map(Vec::len).collect::<Vec<_>>());
    for p in &packets {
        w.clients[0].world.receive(p).unwrap();
    }
    let fb = w.clients[0].world.feedback();
    w.driver.receive_feedback(conn, &fb).unwrap();
    let got = w.clients[0].world.take_rpcs();
    let count = |name: &str| got.iter().filter(|e| e.name == name).count();
    assert_eq!((count("LoudReliable"), count("Loud")), (reliable + 1, 1));
    assert!(got.iter().any(|e| e.name == "LoudReliable" && e.args == args(reliable)));
}

/// At most `MAX_RELIABLE_RPCS` reliable calls wait or fly per connection — the client's window
/// places no honest number further ahead. With `ReliableOverflow::Drop` the next is dropped and
/// counted (`rpcs_overflowed`), the ones taken arrive once and in order, and once they are
/// acknowledged calls go again (a mutant letting one more in, or not counting the dropped,
/// lived).
#[test]
fn reliable_calls_past_the_window_are_dropped_and_counted_when_told_to_drop() {
    let cfg = DriverConfig { reliable_overflow: ReliableOverflow::Drop, ..DriverConfig::default() };
    let mut w = World::with_layouts(vec![pawn()], cfg, 11);
    w.add_client(false, LinkConfig::perfect(0));
    let ids = [w.spawn(0)];
    for _ in 0..3 {
        w.step();
    }
    let over = 6;
    for n in 0..MAX_RELIABLE_RPCS + over {
        call(&mut w, ids[0], SHOUT, n).unwrap();
    }
    w.step();
    let stats = w.driver.connection_stats(w.clients[0].conn).unwrap();
    assert_eq!(stats.rpcs_overflowed, u64::from(over));
    for _ in 0..3 {
        w.step();
    }
    call(&mut w, ids[0], SHOUT, 7777).unwrap();
    for _ in 0..3 {
        w.step();
    }
    let mut want: Vec<u32> = (0..MAX_RELIABLE_RPCS).collect();
    want.push(7777);
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), SHOUT), want);
    assert_eq!(w.driver.connection_stats(w.clients[0].conn).unwrap().rpcs_overflowed, u64::from(over));
}

/// By default (`ReliableOverflow::Close`, UE's way: its reliable buffer overflow closes the
/// connection) one reliable call past `MAX_RELIABLE_RPCS` fails its connection: at the end of
/// that tick the connection is removed — nothing more is written to it, calls naming it are
/// `UnknownConnection` — and `take_failed_connections` names it once, with its counters; a full
/// window is no failure, and another connection's calls go on.
#[test]
fn one_reliable_call_past_the_window_fails_its_connection_and_no_other() {
    let (mut w, ids, _) = owned_world(2, 2, LinkConfig::perfect(0));
    let (lost, kept) = (w.clients[0].conn, w.clients[1].conn);
    // The first client goes silent (the harness steps only the second from here): its reliable
    // calls stay in flight.
    w.clients.remove(0);
    for n in 0..MAX_RELIABLE_RPCS {
        call(&mut w, ids[0], WHISPER, n).unwrap();
    }
    w.step();
    assert!(w.failed.is_empty(), "a full window is not an overflow");
    call(&mut w, ids[0], WHISPER, MAX_RELIABLE_RPCS).unwrap();
    call(&mut w, ids[1], WHISPER, 5).unwrap();
    w.step();
    // (The harness takes the driver's failed connections after each tick.)
    let failed = std::mem::take(&mut w.failed);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!((failed[0].conn, failed[0].why), (lost, ConnectionFailure::ReliableOverflow));
    assert_eq!(failed[0].stats.rpcs_overflowed, 1);
    assert!(
        failed[0].stats.rpcs_sent >= u64::from(MAX_RELIABLE_RPCS),
        "its counters as they stood: {:?}",
        failed[0].stats
    );
    assert_eq!(w.driver.connection_stats(lost), Err(DriverError::UnknownConnection(lost)));
    assert_eq!(w.driver.take_packets(lost).unwrap_err(), DriverError::UnknownConnection(lost));
    assert!(w.driver.connections().eq([kept]), "the other connection stays");
    for _ in 0..3 {
        w.step();
    }
    assert!(w.failed.is_empty() && w.driver.take_failed_connections().is_empty(), "a failure is told once");
    assert_eq!(numbers(&w.clients[0].world.take_rpcs(), WHISPER), vec![5]);
    assert_eq!(w.driver.connection_stats(kept).unwrap().rpcs_overflowed, 0);
}
