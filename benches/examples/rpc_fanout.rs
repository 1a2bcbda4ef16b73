//! What a frame's remote procedure calls cost the server: a world of 5 000 actors and 100
//! connections (every channel open and acknowledged, perfect links), quiet, then with `calls`
//! multicast calls a frame (a quarter reliable) on random actors — each fanned out to every
//! connection, written after the actors and, reliable ones, settled by feedback. Prints the
//! median tick with and without calls, side by side in one run, and the bytes they add.
//! `cargo run --release -p shadowrep-benches --example rpc_fanout [calls]` (default 1 000).

use shadowrep::client::ClientWorld;
use shadowrep::net::{DriverConfig, NetDriver};
use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl, RpcDecl};
use shadowrep::store::ClassStore;
use shadowrep::value::Value;
use std::sync::Arc;
use std::time::Instant;

const ACTORS: usize = 5_000;
const CONNECTIONS: usize = 100;
const FRAMES: usize = 40;

fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let layout = Arc::new(
        ClassBuilder::new("Prop")
            .property(PropertyDecl::new("Hp", PropType::U16))
            .rpc(RpcDecl::multicast("Effect").param(PropertyDecl::new("Kind", PropType::U8)))
            .rpc(RpcDecl::multicast("Event").reliable().param(PropertyDecl::new("Id", PropType::U32)))
            .build()
            .expect("valid layout"),
    );
    let mut store = ClassStore::new(layout.clone());
    let mut driver = NetDriver::new(DriverConfig::default()).expect("valid config");
    let class = driver.register_class(&mut store).expect("registers");
    let conns: Vec<_> = (0..CONNECTIONS).map(|_| driver.add_connection(false)).collect();
    let mut clients: Vec<ClientWorld> =
        conns.iter().map(|_| ClientWorld::new(std::slice::from_ref(&layout), &driver.checksums()).unwrap()).collect();
    let ids: Vec<_> = (0..ACTORS).map(|_| store.spawn()).collect();
    let frame = |driver: &mut NetDriver, store: &mut ClassStore, clients: &mut [ClientWorld]| {
        let t = Instant::now();
        driver.tick(&mut [store]).expect("tick");
        let tick = t.elapsed().as_secs_f64() * 1e3;
        let mut bytes = 0;
        for (conn, client) in conns.iter().zip(clients.iter_mut()) {
            for p in driver.take_packets(*conn).expect("live") {
                bytes += p.len();
                client.receive(&p).expect("applies");
            }
            client.take_rpcs();
            driver.receive_feedback(*conn, &client.feedback()).expect("decodes");
        }
        (tick, bytes)
    };
    for _ in 0..5 {
        frame(&mut driver, &mut store, &mut clients);
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
                driver.call_rpc(class, &store, id, name, &[arg]).expect("a valid call");
            }
        }
        let (tick, bytes) = frame(&mut driver, &mut store, &mut clients);
        if with_calls {
            calling.push(tick);
            calling_bytes += bytes;
        } else {
            quiet.push(tick);
            quiet_bytes += bytes;
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (q, c) = (median(&mut quiet), median(&mut calling));
    let per_conn = (calling_bytes - quiet_bytes) as f64 / (FRAMES * CONNECTIONS) as f64;
    println!(
        "{ACTORS} actors, {CONNECTIONS} connections, {calls} multicast calls a frame (a quarter reliable): \
         tick {c:.3} ms against {q:.3} ms quiet ({:.1} ns a call and connection); {per_conn:.0} B a connection a frame",
        (c - q) * 1e6 / (calls * CONNECTIONS) as f64
    );
}
