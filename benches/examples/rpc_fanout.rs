//! What remote procedure calls cost the server, side by side in one run with the same frames
//! without them (the worlds: `shadowrep_benches::calls`).
//! `cargo run --release -p shadowrep-benches --example rpc_fanout [server] [calls]`:
//! - the server's calls (default): 5 000 actors and 100 connections, quiet, then with `calls`
//!   multicast calls a frame (a quarter reliable, default 1 000) on random actors. Prints the
//!   median tick with and without calls and the bytes they add.
//! - `server [calls]`: the clients' Server calls — each of 100 clients makes `calls` a frame
//!   (half reliable, default 4); prints the median time of the frame's `receive_feedback`s and
//!   `take_server_rpcs` against the same frames' feedback without calls.

use shadowrep_benches::calls::{FanOut, ServerCalls, ACTORS, CONNECTIONS};
use std::time::Duration;

const FRAMES: usize = 40;

fn median(v: &mut [Duration]) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let server = args.next_if(|a| a == "server").is_some();
    let calls: Option<usize> = args.next().and_then(|a| a.parse().ok());
    let (mut quiet, mut calling) = (Vec::new(), Vec::new());
    if server {
        let calls = calls.unwrap_or(4);
        let mut w = ServerCalls::new();
        let mut taken = 0;
        for _ in 0..FRAMES {
            quiet.push(w.frame(0).0);
            let (t, n) = w.frame(calls);
            calling.push(t);
            taken = n;
        }
        let (q, c) = (median(&mut quiet), median(&mut calling));
        println!(
            "{CONNECTIONS} clients, {calls} Server calls each a frame (half reliable): feedback {c:.3} ms against \
             {q:.3} ms without ({taken} calls taken; {:.0} ns a call)",
            (c - q) * 1e6 / (calls * CONNECTIONS) as f64
        );
    } else {
        let calls = calls.unwrap_or(1_000);
        let mut w = FanOut::new();
        let (mut quiet_bytes, mut calling_bytes) = (0, 0);
        for _ in 0..FRAMES {
            let (t, bytes) = w.frame(0);
            quiet.push(t);
            quiet_bytes += bytes;
            let (t, bytes) = w.frame(calls);
            calling.push(t);
            calling_bytes += bytes;
        }
        let (q, c) = (median(&mut quiet), median(&mut calling));
        let per_conn = (calling_bytes - quiet_bytes) as f64 / (FRAMES * CONNECTIONS) as f64;
        println!(
            "{ACTORS} actors, {CONNECTIONS} connections, {calls} multicast calls a frame (a quarter reliable): \
             tick {c:.3} ms against {q:.3} ms quiet ({:.1} ns a call and connection); {per_conn:.0} B a connection a frame",
            (c - q) * 1e6 / (calls * CONNECTIONS) as f64
        );
    }
}
