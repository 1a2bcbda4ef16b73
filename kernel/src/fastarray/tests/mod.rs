//! FastArray tests: callback order, the caps at their edges, loss, lateness, the log bound.
//! Convergence under random loss and reordering, and hostile-bytes fuzzing, are property tests
//! in `tests/tests/fastarray.rs`. This module holds the shared fixtures (the item layout, writing
//! and syncing deltas, comparing the server's items with a client's); the tests are in its topic
//! files.

use super::*;
use crate::schema::{PropType, StructType};
use crate::wire::BitWriter;
use std::collections::HashMap;
use std::sync::Arc;

mod callbacks;
mod delivery;
mod encoding;
mod items;

/// Items of `{ Count: u16, Durability: u8 }` (4 bytes with a padding byte, 24 bits on the wire).
fn layout() -> Arc<ArrayLayout> {
    let s = StructType::new("Slot").field("Count", PropType::U16).field("Durability", PropType::U8);
    Arc::new(item_layout("Inventory", PropType::Struct(s)).unwrap())
}

const ITEM_BITS: usize = 24;

fn item(v: u16) -> [u8; 4] {
    let b = v.to_le_bytes();
    [b[0], b[1], v as u8 ^ 0x5a, 0]
}

/// Writes one delta, or `None` when there is nothing to send.
fn write(server: &mut FastArray, conn: BaseId) -> Option<(DeltaToken, Vec<u8>, usize)> {
    let mut w = BitWriter::new();
    let t = server.write_delta(conn, &mut w).unwrap()?;
    let bits = w.len_bits();
    Some((t, w.into_bytes(), bits))
}

/// Delivers and acknowledges deltas until the connection is synced; returns the events and the
/// number of deltas.
fn sync(server: &mut FastArray, conn: BaseId, client: &mut FastArrayReceiver) -> (Vec<FastArrayEvent>, usize) {
    let mut events = Vec::new();
    let mut n = 0;
    while let Some((t, bytes, _)) = write(server, conn) {
        client.receive(&bytes, &mut events).unwrap();
        assert!(server.acked(conn, t));
        n += 1;
    }
    assert!(server.is_synced(conn));
    (events, n)
}

fn items_of<'a>(it: impl Iterator<Item = (ReplicationId, &'a [u8])>) -> HashMap<ReplicationId, Vec<u8>> {
    it.map(|(id, b)| (id, b.to_vec())).collect()
}

fn assert_same(server: &FastArray, client: &FastArrayReceiver) {
    let (s, c) = (items_of(server.iter()), items_of(client.iter()));
    let differ = s.iter().find(|(id, v)| c.get(id) != Some(v)).map(|(id, _)| *id);
    assert!(s == c, "server {} items, client {}; first differing id {differ:?}", s.len(), c.len());
}

fn inventory(n: u16) -> (FastArray, BaseId, FastArrayReceiver) {
    let mut s = FastArray::new(layout());
    for v in 0..n {
        s.add(&item(v)).unwrap();
    }
    let conn = s.connect();
    (s, conn, FastArrayReceiver::new(layout()))
}
