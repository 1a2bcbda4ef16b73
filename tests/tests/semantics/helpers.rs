//! Shared helpers of the semantics tests: one-class worlds, captured and decoded server packets,
//! hand-made packets.

use shadowrep::client::{ClientWorld, Receipt};
pub(crate) use shadowrep::ids::NetGuid;
use shadowrep::ids::Seq;
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, ClassLayout, LeafKind};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use shadowrep::wire::bunch::{decode_packet, write_leaf_record, Packet, Resolve};
use shadowrep::wire::packet::{begin_packet, end_packet_continued, write_bunch_after, write_close_after};
use shadowrep::wire::{BitWriter, WireError};
use shadowrep_tests::World;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Clients of the condition and privacy scenarios: 0 and 1 are game clients, 2 records a replay.
pub(crate) const REPLAY_CLIENT: usize = 2;
pub(crate) const CLIENTS: usize = 3;

pub(crate) fn build(b: ClassBuilder) -> Arc<ClassLayout> {
    Arc::new(b.build().expect("valid layout"))
}

/// The handle of parent `parent`'s first leaf.
pub(crate) fn handle(layout: &ClassLayout, parent: usize) -> u16 {
    layout.leaves[layout.parents[parent].leaves.start].handle
}

/// A world with one class and one client per entry of `replays` (true: a replay connection), all
/// on perfect links.
pub(crate) fn world_with(layout: &Arc<ClassLayout>, replays: &[bool]) -> World {
    let mut w = World::with_layouts(vec![layout.clone()], DriverConfig::default(), 7);
    for &replay in replays {
        w.add_client(replay, LinkConfig::perfect(1));
    }
    w
}

/// Writes a value on the server and marks it dirty.
pub(crate) fn set(w: &mut World, store: usize, id: ActorId, parent: usize, v: Value) {
    w.stores[store].set(id, parent, &v).expect("valid value");
    w.stores[store].mark_dirty(id, parent).expect("live actor");
}

pub(crate) fn set_owner(w: &mut World, id: ActorId, owner: Option<usize>, autonomous: bool) {
    w.set_owner(0, id, owner, autonomous);
}

/// Like [`World::step`], but returns the packets the server produced for each client. Every
/// packet the server produces must be accepted by its client.
pub(crate) fn step_capture(w: &mut World) -> Vec<Vec<Vec<u8>>> {
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    let mut out = Vec::new();
    for (ci, c) in w.clients.iter_mut().enumerate() {
        let packets = w.driver.take_packets(c.conn).expect("connection");
        for p in &packets {
            c.down.send(p.clone());
        }
        for p in c.down.tick() {
            if let Err(e) = c.world.receive(&p) {
                panic!("client {ci} refused a server packet: {e}");
            }
        }
        c.up.send(c.world.feedback());
        for f in c.up.tick() {
            w.driver.receive_feedback(c.conn, &f).expect("feedback decodes");
        }
        out.push(packets);
    }
    out
}

/// Decodes a server packet with a resolver mapping each actor GUID to its class layout.
pub(crate) fn decode(bytes: &[u8], layouts: &HashMap<NetGuid, Arc<ClassLayout>>) -> Packet {
    decode_packet(bytes, |guid, _| {
        layouts.get(&guid).map(|l| Resolve::Layout(l)).ok_or(WireError::Invalid("GUID not in the test's map"))
    })
    .expect("server packet decodes")
}

/// Runs `frames` frames and returns every (client, actor GUID, record handle) that was sent.
pub(crate) fn run_and_collect(
    w: &mut World,
    frames: usize,
    layouts: &HashMap<NetGuid, Arc<ClassLayout>>,
) -> HashSet<(usize, NetGuid, u16)> {
    let mut sent = HashSet::new();
    for _ in 0..frames {
        for (ci, packets) in step_capture(w).iter().enumerate() {
            for p in packets {
                for b in decode(p, layouts).bunches {
                    for r in &b.records {
                        sent.insert((ci, b.guid, r.handle));
                    }
                }
            }
        }
    }
    sent
}

pub(crate) fn u32s(c: &ClientWorld, guid: NetGuid, parents: usize) -> Vec<u32> {
    (0..parents)
        .map(|p| match c.value(guid, p) {
            Some(Value::U32(v)) => v,
            other => panic!("actor {guid} parent {p}: expected a u32, got {other:?}"),
        })
        .collect()
}

/// A hand-made packet being written: its bits and the GUID of its last bunch (the next one's
/// GUID is a step from it).
pub(crate) struct Craft {
    w: BitWriter,
    prev: NetGuid,
}

impl std::ops::Deref for Craft {
    type Target = BitWriter;
    fn deref(&self) -> &BitWriter {
        &self.w
    }
}

impl std::ops::DerefMut for Craft {
    fn deref_mut(&mut self) -> &mut BitWriter {
        &mut self.w
    }
}

/// A hand-made packet: `body` writes the bunches.
pub(crate) fn craft(seq: u32, body: impl FnOnce(&mut Craft)) -> Vec<u8> {
    craft_continued(seq, false, body)
}

/// A hand-made packet whose last bunch goes on in the next packet when `continues`.
pub(crate) fn craft_continued(seq: u32, continues: bool, body: impl FnOnce(&mut Craft)) -> Vec<u8> {
    let mut c = Craft { w: BitWriter::new(), prev: NetGuid(0) };
    begin_packet(&mut c.w, Seq(seq));
    body(&mut c);
    end_packet_continued(&mut c.w, continues);
    c.w.into_bytes()
}

/// A hand-made sized bunch for `guid` (any receiver may step over it): `records` writes its
/// records.
pub(crate) fn bunch(w: &mut Craft, guid: NetGuid, open: Option<u32>, records: impl FnOnce(&mut BitWriter)) {
    let mut body = BitWriter::new();
    records(&mut body);
    write_bunch_after(&mut w.w, w.prev, guid, open.map(shadowrep::wire::open::OpenHeader::spawn).as_ref(), &body);
    w.prev = guid;
}

/// A hand-made close bunch.
pub(crate) fn close(w: &mut Craft, guid: NetGuid) {
    write_close_after(&mut w.w, w.prev, guid, shadowrep::wire::open::CloseReason::Destroyed, None);
    w.prev = guid;
}

/// A bunch of `u32` leaf records (handle, value) of a `layout` actor, in handle order.
pub(crate) fn u32_bunch(w: &mut Craft, layout: &ClassLayout, guid: NetGuid, open: Option<u32>, records: &[(u16, u32)]) {
    let bits = shadowrep::wire::bunch::handle_bits(layout);
    bunch(w, guid, open, |b| {
        for &(h, v) in records {
            write_leaf_record(b, bits, h, LeafKind::U32, &v.to_le_bytes());
        }
    });
}

/// What `receive` says of a packet whose `n` bunches all applied.
pub(crate) fn applied(n: usize) -> Result<Receipt, shadowrep::client::ReceiveError> {
    Ok(Receipt::Applied { bunches: n, skipped: 0 })
}

/// One class at MTU 512 (an open of a few hundred bytes spans packets), one connection and its
/// client, driven frame by frame with chosen packets lost.
pub(crate) struct SmallMtu {
    pub store: ClassStore,
    pub driver: shadowrep::net::NetDriver,
    pub conn: shadowrep::ids::ConnectionId,
    pub client: ClientWorld,
}

impl SmallMtu {
    pub fn new(layout: &Arc<ClassLayout>) -> Self {
        let mut store = ClassStore::new(layout.clone());
        let cfg = DriverConfig { mtu: 512, ..DriverConfig::default() };
        let mut driver = shadowrep::net::NetDriver::new(cfg).expect("valid config");
        driver.register_class(&mut store).expect("registered");
        let conn = driver.add_connection(false);
        let client = ClientWorld::new(std::slice::from_ref(layout), &driver.checksums()).expect("client");
        Self { store, driver, conn, client }
    }

    /// One frame: the server's packets reach the client but those `lost` names (by index), and
    /// its feedback comes back. Returns the packets sent.
    pub fn frame(&mut self, lost: impl Fn(usize) -> bool) -> usize {
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        let packets = self.driver.take_packets(self.conn).expect("connection");
        for (i, p) in packets.iter().enumerate().filter(|(i, _)| !lost(*i)) {
            self.client.receive(p).unwrap_or_else(|e| panic!("packet {i} refused: {e}"));
        }
        self.driver.receive_feedback(self.conn, &self.client.feedback()).expect("feedback");
        packets.len()
    }

    /// Makes the connection the owner of `id` (an autonomous proxy), or no one.
    pub fn set_owner(&mut self, id: ActorId, owned: bool) {
        let owner = owned.then_some(self.conn);
        self.driver.set_owner(shadowrep::ids::ClassId(0), &self.store, id, owner, owned).expect("owner set");
    }

    /// The client's only actor.
    pub fn guid(&self) -> NetGuid {
        self.client.actors().next().expect("an actor opened").0
    }
}
