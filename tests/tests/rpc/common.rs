//! Shared helpers of the rpc tests: the call names, the `Pawn` worlds, and hand-made calls in
//! either direction (forged server packets, hostile clients' feedback).

use shadowrep::client::{ClientWorld, RpcEvent};
use shadowrep::ids::{NetGuid, Seq};
use shadowrep::link::LinkConfig;
use shadowrep::net::{DriverConfig, DriverError, NetDriver};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::open::{OpenHeader, EXPORT_GUID};
use shadowrep::wire::packet::{begin_packet, end_packet, write_bunch, write_bunch_after};
use shadowrep::wire::rpc::{encode_call, write_rpc_body};
use shadowrep::wire::BitWriter;
use shadowrep_tests::random_world::{with_calls, CALLS, SERVER_CALLS};
use shadowrep_tests::World;
use std::sync::Arc;

pub(crate) const PING: &str = CALLS[0];
pub(crate) const SHOUT: &str = CALLS[1];
pub(crate) const HINT: &str = CALLS[2];
pub(crate) const WHISPER: &str = CALLS[3];

pub(crate) fn pawn() -> Arc<ClassLayout> {
    let b = ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16));
    Arc::new(with_calls(b).build().expect("valid layout"))
}

/// A world of `pawns` pawns and `clients` clients on `link`.
pub(crate) fn world(pawns: usize, clients: usize, link: LinkConfig) -> (World, Vec<ActorId>) {
    let mut w = World::with_layouts(vec![pawn()], DriverConfig::default(), 11);
    for i in 0..clients {
        w.add_client(false, LinkConfig { seed: link.seed + i as u64 * 17, ..link });
    }
    let ids = (0..pawns).map(|_| w.spawn(0)).collect();
    (w, ids)
}

/// [`world`], pawn `i` owned by client `i` (as many as both have) and three frames run (every
/// open acknowledged on a perfect link); and each pawn's GUID.
pub(crate) fn owned_world(pawns: usize, clients: usize, link: LinkConfig) -> (World, Vec<ActorId>, Vec<NetGuid>) {
    let (mut w, ids) = world(pawns, clients, link);
    for (c, &id) in ids.iter().enumerate().take(clients) {
        w.set_owner(0, id, Some(c), true);
    }
    for _ in 0..3 {
        w.step();
    }
    let guids = ids.iter().map(|&id| w.guid(0, id)).collect();
    (w, ids, guids)
}

pub(crate) fn call(w: &mut World, id: ActorId, name: &str, n: u32) -> Result<(), DriverError> {
    w.driver.call_rpc(w.classes[0], &w.stores[0], id, name, &[Value::U32(n)])
}

/// The numbers of a client's delivered calls named `name`, in delivery order.
pub(crate) fn numbers(events: &[RpcEvent], name: &str) -> Vec<u32> {
    events
        .iter()
        .filter(|e| e.name == name)
        .map(|e| match e.args[..] {
            [Value::U32(n)] => n,
            _ => panic!("one u32 argument: {e:?}"),
        })
        .collect()
}

pub(crate) fn lossy(seed: u64) -> LinkConfig {
    LinkConfig { loss: 0.3, duplicate: 0.05, reorder: 0.1, latency: 1, jitter: 1, seed }
}

/// A client of [`pawn`] that opened actor `guid` with packet 1; then `packets` applied.
pub(crate) fn crafted_client(guid: NetGuid, packets: &[Vec<u8>]) -> ClientWorld {
    let layout = pawn();
    let mut client = ClientWorld::new(std::slice::from_ref(&layout), &[layout.checksum]).unwrap();
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(1));
    write_bunch(&mut w, guid, Some(&OpenHeader::spawn(0)), &BitWriter::new());
    end_packet(&mut w);
    client.receive(&w.into_bytes()).unwrap();
    for p in packets {
        client.receive(p).unwrap();
    }
    client
}

/// A packet `seq` of reliable `Shout` calls: (number, target, argument) each.
pub(crate) fn shouts(seq: u32, calls: &[(u32, NetGuid, u32)]) -> Vec<u8> {
    let layout = pawn();
    let index = layout.rpc_index(SHOUT).unwrap();
    let mut w = BitWriter::new();
    begin_packet(&mut w, Seq(seq));
    for (i, &(n, target, arg)) in calls.iter().enumerate() {
        let bits = encode_call(&layout, index, &[Value::U32(arg)]).unwrap();
        let mut body = BitWriter::new();
        write_rpc_body(&mut body, Some(n as u16), target, &bits);
        let prev = if i == 0 { NetGuid(0) } else { EXPORT_GUID };
        write_bunch_after(&mut w, prev, EXPORT_GUID, None, &body);
    }
    end_packet(&mut w);
    w.into_bytes()
}

pub(crate) const FIRE: &str = SERVER_CALLS[0];
pub(crate) const USE: &str = SERVER_CALLS[1];

/// The numbers of Server calls named `name` from connection `conn`, in delivery order.
pub(crate) fn server_numbers(
    events: &[shadowrep::net::ServerRpcEvent],
    conn: shadowrep::ids::ConnectionId,
    name: &str,
) -> Vec<u32> {
    events
        .iter()
        .filter(|e| e.conn == conn && e.name == name)
        .map(|e| match e.args[..] {
            [Value::U32(n)] => n,
            _ => panic!("one u32 argument: {e:?}"),
        })
        .collect()
}

/// A client's call of `name` on `target`, numbered `seq` in its stream.
pub(crate) fn client_call(target: NetGuid, name: &str, seq: u16, n: u32) -> shadowrep::wire::rpc::RpcBunch {
    let l = pawn();
    let i = l.rpc_index(name).unwrap();
    let b = encode_call(&l, i, &[Value::U32(n)]).unwrap();
    shadowrep::wire::rpc::RpcBunch {
        target,
        seq: Some(seq),
        bits: b.len_bits(),
        call: b.into_bytes(),
        reliable: l.rpcs[i].reliable,
    }
}

/// Feedback naming `highest` (nothing new) with `calls`, as a hostile client writes it.
pub(crate) fn calls_feedback(highest: Seq, calls: &[shadowrep::wire::rpc::RpcBunch]) -> Vec<u8> {
    use shadowrep::wire::feedback::{write_feedback, write_feedback_calls, AckBits};
    let mut f = BitWriter::new();
    write_feedback(&mut f, highest, &AckBits([u64::MAX; 4]), &[]);
    write_feedback_calls(&mut f, calls);
    f.into_bytes()
}

/// A driver with one pawn its one connection owns, and that connection's client (driven by
/// hand: the Server-call timing tests choose which feedback arrives, and when); the pawn's GUID.
pub(crate) fn one_owned_pawn() -> (NetDriver, ClassStore, ClientWorld, shadowrep::ids::ConnectionId, NetGuid) {
    let layout = pawn();
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    let class = driver.register_class(&mut store).unwrap();
    let conn = driver.add_connection(false);
    let client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    let id = store.spawn();
    driver.set_owner(class, &store, id, Some(conn), true).unwrap();
    let guid = driver.assign_guid(class, &store, id).unwrap();
    (driver, store, client, conn, guid)
}
