//! What the fuzz targets share: a recorded server run (built once per process) and the input
//! format (length-prefixed packets).

use shadowrep::client::ClientWorld;
use shadowrep::ids::Seq;
use shadowrep::schema::{ArrayLayout, ClassLayout};
use shadowrep::store::ClassStore;
use shadowrep::value::Value;
use shadowrep_tests::{mixed_layouts, mixed_world, World};
use std::sync::{Arc, OnceLock};

pub mod level;

/// One server run: a client's packets and feedbacks, and what that client needs to have been
/// made with (classes, fast array kinds, the static actors it loads).
pub struct Recording {
    pub layouts: Vec<Arc<ClassLayout>>,
    pub checksums: Vec<u64>,
    pub fast_kinds: Vec<Arc<ArrayLayout>>,
    pub fast_checksums: Vec<u64>,
    /// (path, class) of each static actor the client loads.
    pub statics: Vec<(String, u32)>,
    pub packets: Vec<Vec<u8>>,
    pub feedbacks: Vec<Vec<u8>>,
}

impl Recording {
    /// A client as this run's client was made, having applied the first `k` packets.
    pub fn client_after(&self, k: usize) -> ClientWorld {
        let c = ClientWorld::new(&self.layouts, &self.checksums).expect("the recording's layouts");
        let mut c = c.with_fast_array_kinds(&self.fast_kinds, &self.fast_checksums).expect("the recording's kinds");
        for (path, class) in &self.statics {
            c.load_static_actor(path, *class).expect("a static actor of the recording");
        }
        for p in &self.packets[..k] {
            c.receive(p).expect("a recorded packet applies");
        }
        c
    }
}

/// The mixed world's recording ([`world`]), made on first use.
pub fn recording() -> &'static Recording {
    static REC: OnceLock<Recording> = OnceLock::new();
    REC.get_or_init(record)
}

/// The actor level's recording ([`level::record`]), made on first use.
pub fn level_recording() -> &'static Recording {
    static REC: OnceLock<Recording> = OnceLock::new();
    REC.get_or_init(level::record)
}

/// The recording an input's first byte picks (its top bit) and the prefix of its packets to
/// apply first (the other bits).
pub fn pick(first: u8) -> (&'static Recording, usize) {
    let rec = if first & 0x80 != 0 { level_recording() } else { recording() };
    (rec, (first & 0x7f) as usize % (rec.packets.len() + 1))
}

/// A world of the mixed layouts (every property kind, arrays, conditions), changed, spawned into
/// and despawned from over 16 frames; its packets all apply on a client.
pub fn world() -> World {
    mixed_world(11)
}

/// Frames of [`world`] recorded.
pub const FRAMES: usize = 16;

/// Runs frame `frame` of [`world`]'s script: client 0's packets, applied, and its feedback,
/// given to the server.
pub fn step(w: &mut World, frame: usize) -> (Vec<Vec<u8>>, Vec<u8>) {
    w.mutate(0.7);
    if frame % 5 == 4 {
        w.despawn(1);
        w.spawn(frame % 2);
    }
    w.call_some(frame);
    deliver(w, true)
}

/// Ticks [`world`] and gives client 0 the packets (each must apply if `strict`), and the server
/// the client's feedback; returns both.
fn deliver(w: &mut World, strict: bool) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut stores: Vec<&mut ClassStore> = w.stores.iter_mut().collect();
    w.driver.tick(&mut stores).expect("tick");
    w.note_failures();
    if w.has_failed(w.clients[0].conn) {
        // The driver ended the connection (hostile feedback that never acknowledged 1 024
        // reliable calls): a legitimate end, nothing more to deliver.
        return (Vec::new(), Vec::new());
    }
    let c = &mut w.clients[0];
    let packets = w.driver.take_packets(c.conn).expect("connection");
    for p in &packets {
        let r = c.world.receive(p);
        assert!(!strict || r.is_ok(), "a server packet applies: {r:?}");
    }
    let fb = c.world.feedback();
    let fed = w.driver.receive_feedback(c.conn, &fb);
    assert!(!strict || fed.is_ok(), "the client's feedback decodes: {fed:?}");
    (packets, fb)
}

fn record() -> Recording {
    let mut w = world();
    let (mut packets, mut feedbacks) = (Vec::new(), Vec::new());
    for frame in 0..FRAMES {
        let (p, fb) = step(&mut w, frame);
        packets.extend(p);
        feedbacks.push(fb);
    }
    w.assert_converged();
    let layouts = mixed_layouts();
    let checksums = layouts.iter().map(|l| l.checksum).collect();
    let (fast_kinds, fast_checksums, statics) = (Vec::new(), Vec::new(), Vec::new());
    Recording { layouts, checksums, fast_kinds, fast_checksums, statics, packets, feedbacks }
}

/// The messages of an input: each a little-endian `u16` length and that many bytes (a short
/// last one ends the input).
pub fn split(mut data: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (len, rest) = data.split_first_chunk::<2>()?;
        let n = (u16::from_le_bytes(*len) as usize).min(rest.len());
        let (m, tail) = rest.split_at(n);
        data = tail;
        Some(m)
    })
}

/// The input format of [`split`], for seeding a corpus.
pub fn join<'a>(prefix: u8, messages: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![prefix];
    for m in messages {
        out.extend_from_slice(&(m.len() as u16).to_le_bytes());
        out.extend_from_slice(m);
    }
    out
}

/// One frame of [`world`] with the client's packets delivered and its feedback returned, but
/// nothing required to apply: after hostile input the server may send what a client refuses
/// (and asks about). `mutate`: whether the world's values change this frame. Returns the packets.
pub fn tolerant_step(w: &mut World, mutate: bool) -> Vec<Vec<u8>> {
    if mutate {
        w.mutate(0.7);
    }
    deliver(w, false).0
}

/// Changes every value [`converged`] checks, on every live actor of [`world`] (so the server
/// sends each this frame, whatever a forger wrote into the client's copy).
pub fn touch_all(w: &mut World) {
    for &(s, id) in &w.actors {
        let parents: &[usize] = if s == 0 { &[0, 4, 5, 9] } else { &[0] };
        for &p in parents {
            let next = match w.stores[s].get(id, p).expect("a live actor's property") {
                Value::U32(v) => Value::U32(v.wrapping_add(1)),
                Value::Bool(b) => Value::Bool(!b),
                Value::Enum(e) => Value::Enum((e + 1) % 8),
                Value::U8(v) => Value::U8(v.wrapping_add(1)),
                other => unreachable!("the mixed layouts' checked properties: {other:?}"),
            };
            w.stores[s].set(id, p, &next).expect("a value of the property's type");
        }
    }
}

/// Whether client 0 holds the server's value of every live actor's integer and bool properties
/// (the mixed layouts' Health, Alive, Mode and Kills, and Small's Byte): the values a wedge
/// would leave stale, compared exactly (no quantisation, no references).
pub fn converged(w: &World) -> bool {
    let c = &w.clients[0].world;
    w.actors.iter().all(|&(s, id)| {
        let Some(guid) = w.driver.guid_of(w.classes[s], id) else { return false };
        let parents: &[usize] = if s == 0 { &[0, 4, 5, 9] } else { &[0] };
        parents.iter().all(|&p| c.value(guid, p) == w.stores[s].get(id, p).ok())
    })
}

/// A live world a target can drive: the mixed world ([`world`]) or the actor level's
/// ([`level::LevelWorld`]).
pub trait Live {
    /// One frame (the world changes if `mutate`); packets the client refuses are allowed.
    fn frame(&mut self, mutate: bool);
    /// The game's calls of the next frame (the world changes), without the tick: feedback that
    /// arrives now meets them before the tick does.
    fn calls(&mut self);
    /// One frame in which every value [`Live::values_converged`] checks changes; returns the
    /// client's packets.
    fn heal_frame(&mut self) -> Vec<Vec<u8>>;
    /// A hostile packet, straight to the client.
    fn hostile_packet(&mut self, bytes: &[u8]);
    /// The client's newest packet.
    fn client_highest(&self) -> Seq;
    /// Whether the client holds the server's values of what [`Live::heal_frame`] changes.
    fn values_converged(&self) -> bool;
    /// Hostile feedback for the client's connection, straight to the server.
    fn hostile_feedback(&mut self, bytes: &[u8]);
    /// Whether the client holds the server's values.
    fn converged(&self) -> bool;
    /// The connection's and the client's statistics, for a report.
    fn stats(&self) -> String;
}

impl Live for World {
    fn frame(&mut self, mutate: bool) {
        tolerant_step(self, mutate);
    }
    fn calls(&mut self) {
        self.mutate(0.7);
    }
    fn heal_frame(&mut self) -> Vec<Vec<u8>> {
        touch_all(self);
        tolerant_step(self, false)
    }
    fn hostile_packet(&mut self, bytes: &[u8]) {
        let c = &mut self.clients[0].world;
        let _ = c.receive(bytes);
        let _ = c.take_notifies();
    }
    fn client_highest(&self) -> Seq {
        self.clients[0].world.highest_received()
    }
    fn values_converged(&self) -> bool {
        converged(self)
    }
    fn hostile_feedback(&mut self, bytes: &[u8]) {
        let _ = self.driver.receive_feedback(self.clients[0].conn, bytes);
    }
    fn converged(&self) -> bool {
        converged(self)
    }
    fn stats(&self) -> String {
        format!("{:?} {:?}", self.driver.connection_stats(self.clients[0].conn), self.clients[0].world.stats())
    }
}

impl Live for level::LevelWorld {
    fn frame(&mut self, mutate: bool) {
        self.step(mutate, false);
    }
    fn calls(&mut self) {
        self.change();
    }
    fn heal_frame(&mut self) -> Vec<Vec<u8>> {
        self.step(true, false).0
    }
    fn hostile_packet(&mut self, bytes: &[u8]) {
        let _ = self.client.receive(bytes);
        let _ = self.client.take_notifies();
    }
    fn client_highest(&self) -> Seq {
        self.client.highest_received()
    }
    fn values_converged(&self) -> bool {
        level::LevelWorld::values_converged(self)
    }
    fn hostile_feedback(&mut self, bytes: &[u8]) {
        let _ = self.driver.receive_feedback(self.conn, bytes);
    }
    fn converged(&self) -> bool {
        level::LevelWorld::converged(self)
    }
    fn stats(&self) -> String {
        format!("{:?} {:?}", self.driver.connection_stats(self.conn), self.client.stats())
    }
}

/// The live world an input's first byte picks (its top bit), with the frames to run before the
/// hostile input (its low five bits: the actor level's events run to frame 19).
pub fn pick_live(first: u8) -> (Box<dyn Live>, usize) {
    let w: Box<dyn Live> = if first & 0x80 != 0 { Box::new(level::LevelWorld::new()) } else { Box::new(world()) };
    (w, (first & 31) as usize)
}
