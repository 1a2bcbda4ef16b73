//! Remote procedure calls' worlds for the `rpc` criterion bench and `--example rpc_fanout`: what
//! a frame's calls cost the server, the same frames timed with and without them.
//!
//! ```text
//! FanOut        5 000 actors, 100 connections (every channel open, perfect links); a frame:
//!               `calls` multicast calls on random actors (a quarter reliable), the tick (timed),
//!               every packet to its client, every feedback back
//! ServerCalls   100 clients each owning a pawn; a frame: the tick, the packets, `calls` Server
//!               calls per client (half reliable), every feedback taken (timed), the calls taken
//! ```

use shadowrep::client::ClientWorld;
use shadowrep::net::{ClassId, ConnectionId, DriverConfig, NetDriver, NetGuid};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl, RpcDecl};
use shadowrep::store::{ActorId, ClassStore};
use shadowrep::value::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections (and clients) of both worlds.
pub const CONNECTIONS: usize = 100;
/// Actors of the fan-out world.
pub const ACTORS: usize = 5_000;

/// A world of one class with [`CONNECTIONS`] connections and a client each.
struct Base {
    store: ClassStore,
    driver: NetDriver,
    class: ClassId,
    conns: Vec<ConnectionId>,
    clients: Vec<ClientWorld>,
}

impl Base {
    fn new(layout: ClassLayout) -> Base {
        let layout = Arc::new(layout);
        let mut store = ClassStore::new(layout.clone());
        let mut driver = NetDriver::new(DriverConfig::default()).expect("valid config");
        let class = driver.register_class(&mut store).expect("registers");
        let conns: Vec<_> = (0..CONNECTIONS).map(|_| driver.add_connection(false)).collect();
        let checksums = driver.checksums();
        let clients =
            conns.iter().map(|_| ClientWorld::new(std::slice::from_ref(&layout), &checksums).unwrap()).collect();
        Base { store, driver, class, conns, clients }
    }

    /// The tick, timed.
    fn tick(&mut self) -> Duration {
        let t = Instant::now();
        self.driver.tick(&mut [&mut self.store]).expect("tick");
        t.elapsed()
    }

    /// Every connection's packets to its client; their bytes.
    fn deliver(&mut self) -> usize {
        let mut bytes = 0;
        for (conn, client) in self.conns.iter().zip(self.clients.iter_mut()) {
            for p in self.driver.take_packets(*conn).expect("live") {
                bytes += p.len();
                client.receive(&p).expect("applies");
            }
        }
        bytes
    }
}

/// The server's calls fanned out: see the module documentation.
pub struct FanOut {
    base: Base,
    ids: Vec<ActorId>,
    rng: u64,
}

impl Default for FanOut {
    fn default() -> Self {
        Self::new()
    }
}

impl FanOut {
    /// The world, every channel open and acknowledged.
    pub fn new() -> FanOut {
        let mut base = Base::new(
            ClassBuilder::new("Prop")
                .property(PropertyDecl::new("Hp", PropType::U16))
                .rpc(RpcDecl::multicast("Effect").param(PropertyDecl::new("Kind", PropType::U8)))
                .rpc(RpcDecl::multicast("Event").reliable().param(PropertyDecl::new("Id", PropType::U32)))
                .build()
                .expect("valid layout"),
        );
        let ids = (0..ACTORS).map(|_| base.store.spawn()).collect();
        let mut w = FanOut { base, ids, rng: 0x9e37_79b9_7f4a_7c15 };
        for _ in 0..5 {
            w.frame(0);
        }
        w
    }

    /// One frame with `calls` calls: its tick's time, and the bytes the clients received.
    pub fn frame(&mut self, calls: usize) -> (Duration, usize) {
        let b = &mut self.base;
        for i in 0..calls {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let id = self.ids[self.rng as usize % self.ids.len()];
            let (name, arg) = if i % 4 == 0 { ("Event", Value::U32(i as u32)) } else { ("Effect", Value::U8(i as u8)) };
            b.driver.call_rpc(b.class, &b.store, id, name, &[arg]).expect("a valid call");
        }
        let tick = b.tick();
        let bytes = b.deliver();
        for (conn, client) in b.conns.iter().zip(b.clients.iter_mut()) {
            client.take_rpcs();
            b.driver.receive_feedback(*conn, &client.feedback()).expect("decodes");
        }
        (tick, bytes)
    }
}

/// The clients' Server calls taken: see the module documentation.
pub struct ServerCalls {
    base: Base,
    pawns: Vec<NetGuid>,
    frame: usize,
}

impl Default for ServerCalls {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerCalls {
    /// The world, each client's pawn owned by its connection and held by its client.
    pub fn new() -> ServerCalls {
        let mut base = Base::new(
            ClassBuilder::new("Pawn")
                .property(PropertyDecl::new("Hp", PropType::U16))
                .rpc(
                    RpcDecl::server("ServerMove")
                        .param(PropertyDecl::new("X", PropType::F32))
                        .param(PropertyDecl::new("Y", PropType::F32))
                        .param(PropertyDecl::new("Yaw", PropType::U16)),
                )
                .rpc(RpcDecl::server("ServerFire").reliable().param(PropertyDecl::new("Shot", PropType::U32)))
                .build()
                .expect("valid layout"),
        );
        let pawns = (0..CONNECTIONS)
            .map(|i| {
                let id = base.store.spawn();
                base.driver.set_owner(base.class, &base.store, id, Some(base.conns[i]), true).unwrap();
                base.driver.assign_guid(base.class, &base.store, id).unwrap()
            })
            .collect();
        let mut w = ServerCalls { base, pawns, frame: 0 };
        for _ in 0..4 {
            w.frame(0);
        }
        w
    }

    /// One frame with `calls` Server calls per client: the time of taking the feedbacks and
    /// the calls, and how many calls the game took.
    pub fn frame(&mut self, calls: usize) -> (Duration, usize) {
        self.frame += 1;
        let (b, f) = (&mut self.base, self.frame);
        b.tick();
        b.deliver();
        let mut feedbacks = Vec::with_capacity(CONNECTIONS);
        for (i, client) in b.clients.iter_mut().enumerate() {
            for k in 0..calls {
                let (name, args) = match k % 2 {
                    0 => ("ServerMove", vec![Value::F32(f as f32), Value::F32(i as f32), Value::U16(k as u16)]),
                    _ => ("ServerFire", vec![Value::U32((f * calls + k) as u32)]),
                };
                client.call_server_rpc(self.pawns[i], name, &args).expect("a valid call");
            }
            feedbacks.push(client.feedback());
        }
        let t = Instant::now();
        for (conn, fb) in b.conns.iter().zip(&feedbacks) {
            b.driver.receive_feedback(*conn, fb).expect("decodes");
        }
        let taken = b.driver.take_server_rpcs().len();
        (t.elapsed(), taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worlds measure what they say: calls written and received, every Server call taken.
    #[test]
    fn the_worlds_make_the_calls_they_time() {
        let mut fan = FanOut::new();
        let (_, quiet) = fan.frame(0);
        let (_, busy) = fan.frame(200);
        assert!(busy > quiet + 200 * CONNECTIONS, "{busy} bytes with calls against {quiet}");
        let mut server = ServerCalls::new();
        assert_eq!(server.frame(4).1, 4 * CONNECTIONS);
        assert_eq!(server.frame(0).1, 0);
    }
}
