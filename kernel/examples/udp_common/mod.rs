//! What the UDP example server and client share: the class they replicate and their
//! command-line arguments.

use shadowrep::prelude::*;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A ball: where it is, and how often it bounced (with a notify).
pub fn ball_layout() -> Arc<ClassLayout> {
    Arc::new(
        ClassBuilder::new("Ball")
            .property(PropertyDecl::new("Location", PropType::Vector(VectorQuant::Q100)))
            .property(PropertyDecl::new("Bounces", PropType::U32).notify(Notify::OnChanged))
            .build()
            .expect("a valid layout"),
    )
}

/// The demo deployment's ticket key, for `--sealed`. A real deployment keeps its key in its
/// secret store, shared by its backend and game servers only — never in source.
pub const DEMO_TICKET_KEY: [u8; 32] = [0x42; 32];

/// The example server's id among the demo deployment's servers.
pub const DEMO_SERVER_ID: u64 = 1;

/// `[ADDR] [--seconds S] [--sealed]`: the address to bind or connect to, how long to run, and
/// whether the session is sealed (`shadowrep::session::seal`).
pub fn args(default_seconds: u64) -> (SocketAddr, Duration, bool) {
    let mut addr: SocketAddr = "127.0.0.1:7777".parse().expect("an address");
    let (mut seconds, mut sealed) = (default_seconds, false);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--seconds" {
            seconds = it.next().and_then(|s| s.parse().ok()).expect("--seconds takes a whole number");
        } else if a == "--sealed" {
            sealed = true;
        } else {
            addr = a.parse().expect("the first argument is an address such as 127.0.0.1:7777");
        }
    }
    (addr, Duration::from_secs(seconds), sealed)
}
