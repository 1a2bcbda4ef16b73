//! Fast arrays through the driver: opened with their owner, deltas of what changed, callbacks in
//! UE's order, conditions, relevancy and dormancy of the owner, removal, loss, hostile bytes. This
//! module holds the shared fixtures — the inventory kind and its items, a level whose clients know
//! it, an owned array, the items as the server and a client hold them — and the topic files the
//! tests.

use super::*;
use shadowrep::fastarray::{item_layout, ReplicationId};
use shadowrep::net::{ConnectionStats, FastArrayKind, SubObjectCondition};
use shadowrep::schema::{ArrayLayout, StructType};
use std::collections::BTreeMap;

mod deltas;
mod hostile;
mod loss;
mod owner;

fn slots() -> Arc<ArrayLayout> {
    let item = StructType::new("Slot").field("Count", PropType::U16).field("Durability", PropType::U8);
    Arc::new(item_layout("Inventory", PropType::Struct(item)).unwrap())
}

/// An item's bytes (the stride is 4: a padding byte, kept zero).
fn slot(count: u16, durability: u8) -> [u8; 4] {
    let c = count.to_le_bytes();
    [c[0], c[1], durability, 0]
}

/// A level whose clients know the inventory kind; every actor due every frame.
fn level(clients: usize) -> (Level, FastArrayKind) {
    let mut l = Level::new(every_frame(), 0);
    always_due(&mut l);
    let kind = l.driver.register_fast_array_kind(slots()).unwrap();
    l.fast_kinds.push(slots());
    for _ in 0..clients {
        l.add_client();
    }
    (l, kind)
}

type Items = BTreeMap<u32, Vec<u8>>;

fn server_items(l: &Level, fa: NetGuid) -> Items {
    l.driver.fast_array(fa).unwrap().iter().map(|(id, b)| (id.0, b.to_vec())).collect()
}

fn client_items(l: &Level, c: usize, fa: NetGuid) -> Option<Items> {
    l.client(c).fast_array(fa).map(|r| r.iter().map(|(id, b)| (id.0, b.to_vec())).collect())
}

/// One frame in which client `c`'s connection sends nothing but the actor level's keep-alive (an
/// empty packet, two bytes); returns the connection's statistics after it.
fn idle_step(l: &mut Level, c: usize) -> ConnectionStats {
    let conn = l.clients[c].0;
    let before = l.driver.connection_stats(conn).unwrap();
    l.step();
    let after = l.driver.connection_stats(conn).unwrap();
    assert_eq!(after.bytes_sent - before.bytes_sent, 2 * (after.keep_alives - before.keep_alives), "nothing to send");
    after
}

/// A level of two clients with an actor client 0 owns (an autonomous proxy there) carrying a
/// fast array of three items under `condition`, four frames on: the level, the actor, its GUID
/// and the array's.
fn owned_array(condition: SubObjectCondition) -> (Level, ActorId, NetGuid, NetGuid) {
    let (mut l, kind) = level(2);
    let (id, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    l.driver.set_owner(l.class, &l.store, id, Some(l.clients[0].0), true).unwrap();
    let fa = l.driver.add_fast_array(kind, owner, condition).unwrap();
    fill(&mut l, fa, 3);
    l.run(4);
    (l, id, owner, fa)
}

fn fill(l: &mut Level, fa: NetGuid, n: u16) -> Vec<ReplicationId> {
    let mut items = l.driver.fast_array_mut(fa).unwrap();
    (0..n).map(|i| items.add(&slot(i, 100)).unwrap()).collect()
}
