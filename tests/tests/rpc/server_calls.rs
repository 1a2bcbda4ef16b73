//! Server calls, client to server: once and in order through loss, refused on actors the
//! connection does not own, the errors a game can meet, the largest call and the feedback's budget.

use crate::common::*;
use shadowrep::ids::NetGuid;
use shadowrep::link::LinkConfig;
use shadowrep::net::{DriverConfig, DriverError};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl, RpcDecl};
use shadowrep::store::ActorId;
use shadowrep::value::{Value, ValueError};
use shadowrep::wire::rpc::{encode_call, MAX_RELIABLE_RPCS};
use shadowrep_tests::World;
use std::sync::Arc;

#[test]
fn server_calls_reach_the_game_once_and_in_order_through_loss() {
    let (mut w, ids) = world(3, 3, LinkConfig::perfect(1));
    for (c, &id) in ids.iter().enumerate() {
        w.set_owner(0, id, Some(c), true);
    }
    for _ in 0..4 {
        w.step();
    }
    let guids: Vec<NetGuid> = ids.iter().map(|&id| w.guid(0, id)).collect();
    w.set_links(lossy(9));
    let mut got = Vec::new();
    let calls = 200u32;
    for n in 0..calls {
        for (c, &g) in guids.iter().enumerate() {
            let client = &mut w.clients[c].world;
            client.call_server_rpc(g, USE, &[Value::U32(n)]).unwrap();
            client.call_server_rpc(g, FIRE, &[Value::U32(n)]).unwrap();
        }
        w.step();
        got.extend(w.driver.take_server_rpcs());
    }
    w.set_links(LinkConfig::perfect(1));
    for _ in 0..20 {
        w.step();
    }
    got.extend(w.driver.take_server_rpcs());
    for (c, &g) in guids.iter().enumerate() {
        let conn = w.clients[c].conn;
        assert_eq!(
            server_numbers(&got, conn, USE),
            (0..calls).collect::<Vec<_>>(),
            "client {c}: reliable once, in order"
        );
        // Unreliable: at most once each (a repeated feedback datagram brings none twice), in
        // the order the datagrams came (the link reorders them).
        let mut fire = server_numbers(&got, conn, FIRE);
        let n = fire.len();
        fire.sort_unstable();
        fire.dedup();
        assert!(fire.len() == n && n > calls as usize / 3, "client {c}: {n} unreliable calls, {} distinct", fire.len());
        assert!(got
            .iter()
            .filter(|e| e.conn == conn)
            .all(|e| e.guid == g && e.id == ids[c] && e.reliable == (e.name == USE)));
        assert_eq!(w.clients[c].world.server_calls_unacknowledged(), 0, "client {c}: every call acknowledged");
        let stats = w.driver.connection_stats(conn).unwrap();
        assert!(stats.server_rpcs_stale > 0, "client {c}: resent until acknowledged");
        assert_eq!(stats.server_rpcs_refused, 0);
    }
    // Acknowledged, the client sends none again: its feedback is the plain one.
    w.step();
    let fb = w.clients[0].world.feedback();
    assert!(shadowrep::wire::feedback::read_feedback(&fb).unwrap().calls.is_empty());
}

#[test]
fn a_server_call_on_an_actor_another_connection_owns_is_refused_and_the_stream_goes_on() {
    let (mut w, ids, guids) = owned_world(2, 2, LinkConfig::perfect(1));
    let (mine, theirs) = (guids[1], guids[0]);
    let client = &mut w.clients[1].world;
    client.call_server_rpc(theirs, USE, &[Value::U32(1)]).unwrap();
    client.call_server_rpc(theirs, FIRE, &[Value::U32(2)]).unwrap();
    client.call_server_rpc(mine, USE, &[Value::U32(3)]).unwrap();
    for _ in 0..4 {
        w.step();
    }
    let got = w.driver.take_server_rpcs();
    let conn = w.clients[1].conn;
    assert_eq!(server_numbers(&got, conn, USE), vec![3]);
    assert!(server_numbers(&got, conn, FIRE).is_empty());
    assert_eq!(w.driver.connection_stats(conn).unwrap().server_rpcs_refused, 2);
    assert_eq!(w.clients[1].world.server_calls_unacknowledged(), 0, "the refused call's number was used");
    // Ownership given, the same call goes.
    w.set_owner(0, ids[0], Some(1), true);
    w.clients[1].world.call_server_rpc(theirs, USE, &[Value::U32(4)]).unwrap();
    for _ in 0..3 {
        w.step();
    }
    assert_eq!(server_numbers(&w.driver.take_server_rpcs(), conn, USE), vec![4]);
}

#[test]
fn server_calls_a_game_gets_wrong_are_refused() {
    use shadowrep::client::{ClientError, MAX_OUTGOING_CALLS};
    let (mut w, ids) = world(1, 1, LinkConfig::perfect(1));
    w.set_owner(0, ids[0], Some(0), true);
    w.step();
    w.step();
    let g = w.guid(0, ids[0]);
    assert_eq!(
        call(&mut w, ids[0], USE, 1).unwrap_err(),
        DriverError::ServerRpc(USE.into()),
        "the server does not call a Server call"
    );
    let client = &mut w.clients[0].world;
    assert_eq!(
        client.call_server_rpc(NetGuid(4000), USE, &[Value::U32(1)]),
        Err(ClientError::UnknownActor(NetGuid(4000)))
    );
    assert_eq!(client.call_server_rpc(g, SHOUT, &[Value::U32(1)]), Err(ClientError::UnknownServerRpc(SHOUT.into())));
    assert!(matches!(client.call_server_rpc(g, USE, &[]), Err(ClientError::RpcArgs(ValueError::ArgCount { .. }))));
    for i in 0..MAX_OUTGOING_CALLS {
        client.call_server_rpc(g, FIRE, &[Value::U32(i as u32)]).unwrap();
    }
    assert_eq!(client.call_server_rpc(g, FIRE, &[Value::U32(0)]), Err(ClientError::TooManyCalls));
    for i in 0..MAX_RELIABLE_RPCS {
        client.call_server_rpc(g, USE, &[Value::U32(i)]).unwrap();
    }
    assert_eq!(client.call_server_rpc(g, USE, &[Value::U32(0)]), Err(ClientError::TooManyCalls));
    // They all go, a feedback's worth at a time, and are acknowledged.
    for _ in 0..200 {
        w.step();
    }
    let got = w.driver.take_server_rpcs();
    let conn = w.clients[0].conn;
    assert_eq!(server_numbers(&got, conn, USE), (0..MAX_RELIABLE_RPCS).collect::<Vec<_>>());
    assert_eq!(server_numbers(&got, conn, FIRE).len(), MAX_OUTGOING_CALLS);
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 0);
}

/// A torn-off actor is its clients' own: no Server call on it runs (a review found them
/// delivered to the old owner's game).
#[test]
fn server_calls_on_a_torn_off_actor_do_not_run() {
    let (mut w, ids, guids) = owned_world(1, 1, LinkConfig::perfect(1));
    let g = guids[0];
    w.driver.tear_off(w.classes[0], &w.stores[0], ids[0]).unwrap();
    for _ in 0..4 {
        w.step();
    }
    w.clients[0].world.call_server_rpc(g, USE, &[Value::U32(7)]).unwrap();
    for _ in 0..3 {
        w.step();
    }
    assert!(w.driver.take_server_rpcs().is_empty());
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 0, "refused, its number used");
}

/// A world of one client owning one actor of each of `layouts`, their opens acknowledged; the
/// actors' GUIDs.
fn owning_world(layouts: Vec<ClassLayout>) -> (World, Vec<NetGuid>) {
    let n = layouts.len();
    let mut w = World::with_layouts(layouts.into_iter().map(Arc::new).collect(), DriverConfig::default(), 5);
    w.add_client(false, LinkConfig::perfect(0));
    let ids: Vec<ActorId> = (0..n).map(|s| w.spawn(s)).collect();
    for (s, &id) in ids.iter().enumerate() {
        w.set_owner(s, id, Some(0), true);
    }
    for _ in 0..3 {
        w.step();
    }
    let guids = ids.iter().enumerate().map(|(s, &id)| w.guid(s, id)).collect();
    (w, guids)
}

/// A Server call of exactly `MAX_CLIENT_CALL_BITS` is taken by the client (one bit more is
/// refused) and goes, alone in a feedback past the feedback's budget for calls, to the server's
/// game (mutants refusing the largest call, or holding it for a feedback it never fits, lived).
#[test]
fn a_server_call_of_the_largest_size_goes() {
    use shadowrep::client::ClientError;
    use shadowrep::wire::feedback::MAX_CLIENT_CALL_BITS;
    let opaque = |size: u16| PropType::Opaque { name: format!("Blob{size}"), size };
    let blob = |name: &str, sizes: [u16; 4]| {
        let call = sizes.iter().enumerate().fold(RpcDecl::server("ServerBlob").reliable(), |d, (i, &s)| {
            d.param(PropertyDecl::new(format!("P{i}"), opaque(s)))
        });
        ClassBuilder::new(name).rpc(call).build().unwrap()
    };
    // Four leaves (2-bit handles), no index bits (one call): 4 × 2 + 8 × 1 023 = 8 192 bits.
    let (largest, over) = (blob("Blob", [256, 256, 256, 255]), blob("Blob2", [256; 4]));
    let args =
        |sizes: [u16; 4]| -> Vec<Value> { sizes.iter().map(|&s| Value::Opaque(vec![0xa5; s as usize])).collect() };
    assert_eq!(encode_call(&largest, 0, &args([256, 256, 256, 255])).unwrap().len_bits(), MAX_CLIENT_CALL_BITS);
    let (mut w, guids) = owning_world(vec![largest, over]);
    let client = &mut w.clients[0].world;
    assert_eq!(
        client.call_server_rpc(guids[1], "ServerBlob", &args([256; 4])),
        Err(ClientError::RpcTooLarge(8 * 1024 + 8))
    );
    client.call_server_rpc(guids[0], "ServerBlob", &args([256, 256, 256, 255])).unwrap();
    for _ in 0..3 {
        w.step();
    }
    let got = w.driver.take_server_rpcs();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].guid, &got[0].args), (guids[0], &args([256, 256, 256, 255])));
    assert_eq!(w.clients[0].world.server_calls_unacknowledged(), 0);
}

/// A feedback carries the client's calls up to `MAX_FEEDBACK_CALL_BITS` of them, that bit
/// included: four calls whose bits on the wire sum to exactly the budget go in one feedback, a
/// fifth waits until they are acknowledged (a mutant stopping one bit short held the fourth
/// back; one counting a bit fewer per call put the sum one call's bit short of the budget).
#[test]
fn a_feedback_carries_calls_up_to_exactly_its_budget() {
    use shadowrep::client::MAX_FEEDBACK_CALL_BITS;
    use shadowrep::wire::feedback::{feedback_call_bits, read_feedback};
    let opaque = |size: u16| PropType::Opaque { name: format!("Bytes{size}"), size };
    let sack = ClassBuilder::new("Sack")
        .rpc(RpcDecl::server("ServerA").reliable().param(PropertyDecl::new("A", opaque(251))))
        .rpc(RpcDecl::server("ServerB").reliable().param(PropertyDecl::new("B", opaque(250))))
        .build()
        .unwrap();
    let (mut w, guids) = owning_world(vec![sack]);
    let client = &mut w.clients[0].world;
    let fb = client.feedback();
    assert!(read_feedback(&fb).unwrap().calls.is_empty());
    // Each on the wire: 1 + 16 + GUID (8) + length (16) + index (1) + 8 × size bits.
    for (name, size) in [("ServerA", 251), ("ServerA", 251), ("ServerA", 251), ("ServerB", 250), ("ServerA", 251)] {
        client.call_server_rpc(guids[0], name, &[Value::Opaque(vec![7; size])]).unwrap();
    }
    let calls = read_feedback(&client.feedback()).unwrap().calls;
    assert_eq!(calls.len(), 4, "four calls fill the budget exactly");
    assert_eq!(calls.iter().map(feedback_call_bits).sum::<usize>(), MAX_FEEDBACK_CALL_BITS);
    // Unacknowledged, the same four go again; acknowledged, the fifth follows.
    assert_eq!(read_feedback(&client.feedback()).unwrap().calls, calls);
    for _ in 0..4 {
        w.step();
    }
    let names: Vec<String> = w.driver.take_server_rpcs().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["ServerA", "ServerA", "ServerA", "ServerB", "ServerA"]);
}

/// A feedback carries the client's unacknowledged reliable calls first, oldest first, then its
/// unreliable ones; what does not fit waits — an unreliable call too, though it would fit
/// beside the reliable ones that went: it does not overtake a reliable call made before it
/// that waits for room (a mutant letting it lived).
#[test]
fn an_unreliable_server_call_does_not_overtake_a_reliable_one_waiting_for_room() {
    use shadowrep::wire::feedback::read_feedback;
    let big = PropType::Opaque { name: "Big".into(), size: 256 };
    let mixed = ClassBuilder::new("Mixed")
        .rpc(RpcDecl::server("ServerBig").reliable().param(PropertyDecl::new("B", big)))
        .rpc(RpcDecl::server("ServerPing").param(PropertyDecl::new("N", PropType::U8)))
        .build()
        .unwrap();
    let (mut w, guids) = owning_world(vec![mixed]);
    let client = &mut w.clients[0].world;
    for _ in 0..4 {
        client.call_server_rpc(guids[0], "ServerBig", &[Value::Opaque(vec![1; 256])]).unwrap();
    }
    client.call_server_rpc(guids[0], "ServerPing", &[Value::U8(9)]).unwrap();
    let fb = client.feedback();
    let calls = read_feedback(&fb).unwrap().calls;
    assert_eq!(calls.iter().map(|c| c.reliable).collect::<Vec<_>>(), [true; 3], "three fit; the rest wait");
    let conn = w.clients[0].conn;
    w.driver.receive_feedback(conn, &fb).unwrap();
    for _ in 0..4 {
        w.step();
    }
    let names: Vec<String> = w.driver.take_server_rpcs().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["ServerBig", "ServerBig", "ServerBig", "ServerBig", "ServerPing"]);
}

/// With owner chains (`ActorLevelConfig::owner_chain_connections`) a rifle whose owner actor is
/// a pawn its player owns takes that player's Server calls and refuses the other's, as UE's
/// `GetNetConnection` walks `Owner`; the pawn handed to the other player hands the rifle over
/// with it, and once the pawn is despawned nobody owns the rifle. Without the switch the rifle
/// is nobody's throughout: only `set_owner` makes an owner.
#[test]
fn with_owner_chains_a_rifle_takes_the_server_calls_of_its_pawns_player() {
    use shadowrep::client::ClientWorld;
    use shadowrep::net::{ActorLevelConfig, NetDriver};
    use shadowrep::store::ClassStore;
    for chains in [true, false] {
        let layout = pawn();
        let mut store = ClassStore::new(layout.clone());
        let level = ActorLevelConfig { owner_chain_connections: chains, ..ActorLevelConfig::default() };
        let mut driver = NetDriver::new(DriverConfig { actor_level: Some(level), ..DriverConfig::default() }).unwrap();
        let class = driver.register_class(&mut store).unwrap();
        let conns = [driver.add_connection(false), driver.add_connection(false)];
        let highest = ClientWorld::new(&[layout], &driver.checksums()).unwrap().highest_received();
        let (pawn_id, rifle) = (store.spawn(), store.spawn());
        let pawn_guid = driver.assign_guid(class, &store, pawn_id).unwrap();
        let rifle_guid = driver.assign_guid(class, &store, rifle).unwrap();
        driver.set_owner(class, &store, pawn_id, Some(conns[0]), true).unwrap();
        driver.set_owner_actor(class, &store, rifle, Some(pawn_guid), None).unwrap();
        // (A first tick: a connection's calls before it are a forger's, dropped.)
        driver.tick(&mut [&mut store]).unwrap();
        let (mut seq, mut n) = (0u16, 0);
        // Each connection calls `USE` on the rifle: the connections whose call ran.
        let mut calls = |driver: &mut NetDriver| -> Vec<usize> {
            let mut ran = Vec::new();
            for (c, &conn) in conns.iter().enumerate() {
                n += 1;
                driver
                    .receive_feedback(conn, &calls_feedback(highest, &[client_call(rifle_guid, USE, seq, n)]))
                    .unwrap();
                if server_numbers(&driver.take_server_rpcs(), conn, USE) == [n] {
                    ran.push(c);
                }
            }
            seq += 1;
            ran
        };
        let owner = |chains: bool, c: usize| if chains { vec![c] } else { vec![] };
        assert_eq!(calls(&mut driver), owner(chains, 0), "chains {chains}: the pawn's player");
        driver.set_owner(class, &store, pawn_id, Some(conns[1]), true).unwrap();
        assert_eq!(calls(&mut driver), owner(chains, 1), "chains {chains}: handed over with the pawn");
        store.despawn(pawn_id).unwrap();
        driver.tick(&mut [&mut store]).unwrap();
        assert_eq!(calls(&mut driver), Vec::<usize>::new(), "chains {chains}: the pawn gone, nobody's");
        driver.set_owner(class, &store, rifle, Some(conns[0]), false).unwrap();
        assert_eq!(calls(&mut driver), vec![0], "chains {chains}: its own owner");
    }
}
