//! What remote procedure calls cost the server, side by side in one run with the same frames
//! without them. `cargo run --release -p shadowrep-benches --example rpc_fanout [calls]`:
//! - the server's calls (default): a world of 5 000 actors and 100 connections (every channel
//!   open and acknowledged, perfect links), quiet, then with `calls` multicast calls a frame (a
//!   quarter reliable, default 1 000) on random actors — each fanned out to every connection,
//!   written after the actors and, reliable ones, settled by feedback. Prints the median tick
//!   with and without calls and the bytes they add.
//! - `server [calls]`: the clients' Server calls — each of 100 clients makes `calls` a frame
//!   (half reliable, default 4) on the actor its connection owns; prints the median time of the
//!   frame's `receive_feedback`s (which decode, order and deliver them) and `take_server_rpcs`,
//!   against the same frames' feedback without calls.

use shadowrep::client::ClientWorld;
use shadowrep::net::{ConnectionId, DriverConfig, NetDriver};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl, RpcDecl};
use shadowrep::store::ClassStore;
use shadowrep::value::Value;
use std::sync::Arc;
use std::time::Instant;

const CONNECTIONS: usize = 100;
const FRAMES: usize = 40;

/// A world of `layout`'s class with [`CONNECTIONS`] connections and a client each.
struct World {
    layout: Arc<ClassLayout>,
    store: ClassStore,
    driver: NetDriver,
    class: shadowrep::net::ClassId,
    conns: Vec<ConnectionId>,
    clients: Vec<ClientWorld>,
}

impl World {
    fn new(layout: ClassLayout) -> World {
        let layout = Arc::new(layout);
        let mut store = ClassStore::new(layout.clone());
        let mut driver = NetDriver::new(DriverConfig::default()).expect("valid config");
        let class = driver.register_class(&mut store).expect("registers");
        let conns: Vec<_> = (0..CONNECTIONS).map(|_| driver.add_connection(false)).collect();
        let checksums = driver.checksums();
        let clients =
            conns.iter().map(|_| ClientWorld::new(std::slice::from_ref(&layout), &checksums).unwrap()).collect();
        World { layout, store, driver, class, conns, clients }
    }

    /// Every connection's packets to its client.
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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let server = args.next_if(|a| a == "server").is_some();
    let calls: Option<usize> = args.next().and_then(|a| a.parse().ok());
    if server {
        server_calls(calls.unwrap_or(4));
    } else {
        fan_out(calls.unwrap_or(1_000));
    }
}

fn fan_out(calls: usize) {
    const ACTORS: usize = 5_000;
    let mut w = World::new(
        ClassBuilder::new("Prop")
            .property(PropertyDecl::new("Hp", PropType::U16))
            .rpc(RpcDecl::multicast("Effect").param(PropertyDecl::new("Kind", PropType::U8)))
            .rpc(RpcDecl::multicast("Event").reliable().param(PropertyDecl::new("Id", PropType::U32)))
            .build()
            .expect("valid layout"),
    );
    let ids: Vec<_> = (0..ACTORS).map(|_| w.store.spawn()).collect();
    let frame = |w: &mut World| {
        let t = Instant::now();
        w.driver.tick(&mut [&mut w.store]).expect("tick");
        let tick = t.elapsed().as_secs_f64() * 1e3;
        let bytes = w.deliver();
        for (conn, client) in w.conns.iter().zip(w.clients.iter_mut()) {
            client.take_rpcs();
            w.driver.receive_feedback(*conn, &client.feedback()).expect("decodes");
        }
        (tick, bytes)
    };
    for _ in 0..5 {
        frame(&mut w);
    }
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut quiet, mut calling) = (Vec::new(), Vec::new());
    let (mut quiet_bytes, mut calling_bytes) = (0, 0);
    for f in 0..2 * FRAMES {
        let with_calls = f % 2 == 1;
        if with_calls {
            for i in 0..calls {
                let id = ids[next() as usize % ids.len()];
                let (name, arg) =
                    if i % 4 == 0 { ("Event", Value::U32(i as u32)) } else { ("Effect", Value::U8(i as u8)) };
                w.driver.call_rpc(w.class, &w.store, id, name, &[arg]).expect("a valid call");
            }
        }
        let (tick, bytes) = frame(&mut w);
        if with_calls {
            calling.push(tick);
            calling_bytes += bytes;
        } else {
            quiet.push(tick);
            quiet_bytes += bytes;
        }
    }
    let (q, c) = (median(&mut quiet), median(&mut calling));
    let per_conn = (calling_bytes - quiet_bytes) as f64 / (FRAMES * CONNECTIONS) as f64;
    println!(
        "{ACTORS} actors, {CONNECTIONS} connections, {calls} multicast calls a frame (a quarter reliable): \
         tick {c:.3} ms against {q:.3} ms quiet ({:.1} ns a call and connection); {per_conn:.0} B a connection a frame",
        (c - q) * 1e6 / (calls * CONNECTIONS) as f64
    );
}

fn server_calls(calls: usize) {
    let mut w = World::new(
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
    let pawns: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let id = w.store.spawn();
            w.driver.set_owner(w.class, &w.store, id, Some(w.conns[i]), true).unwrap();
            w.driver.assign_guid(w.class, &w.store, id).unwrap()
        })
        .collect();
    let (mut quiet, mut calling) = (Vec::new(), Vec::new());
    let mut taken = 0;
    for f in 0..2 * FRAMES + 4 {
        w.driver.tick(&mut [&mut w.store]).expect("tick");
        w.deliver();
        let with_calls = f >= 4 && f % 2 == 1;
        let mut feedbacks = Vec::with_capacity(CONNECTIONS);
        for (i, client) in w.clients.iter_mut().enumerate() {
            for k in (0..calls).filter(|_| with_calls) {
                let (name, args) = match k % 2 {
                    0 => ("ServerMove", vec![Value::F32(f as f32), Value::F32(i as f32), Value::U16(k as u16)]),
                    _ => ("ServerFire", vec![Value::U32((f * calls + k) as u32)]),
                };
                client.call_server_rpc(pawns[i], name, &args).expect("a valid call");
            }
            feedbacks.push(client.feedback());
        }
        let t = Instant::now();
        for (conn, fb) in w.conns.iter().zip(&feedbacks) {
            w.driver.receive_feedback(*conn, fb).expect("decodes");
        }
        let n = w.driver.take_server_rpcs().len();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match (f >= 4, with_calls) {
            (true, true) => {
                calling.push(ms);
                taken = n;
            }
            (true, false) => quiet.push(ms),
            _ => {}
        }
    }
    let (q, c) = (median(&mut quiet), median(&mut calling));
    println!(
        "{CONNECTIONS} clients, {calls} Server calls each a frame (half reliable, class {}): feedback {c:.3} ms against \
         {q:.3} ms without ({taken} calls taken; {:.0} ns a call)",
        w.layout.name,
        (c - q) * 1e6 / (calls * CONNECTIONS) as f64
    );
}
