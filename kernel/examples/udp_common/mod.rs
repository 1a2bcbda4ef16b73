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

/// `[ADDR] [--seconds S]`: the address to bind or connect to, and how long to run.
pub fn args(default_seconds: u64) -> (SocketAddr, Duration) {
    let mut addr: SocketAddr = "127.0.0.1:7777".parse().expect("an address");
    let mut seconds = default_seconds;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--seconds" {
            seconds = it.next().and_then(|s| s.parse().ok()).expect("--seconds takes a whole number");
        } else {
            addr = a.parse().expect("the first argument is an address such as 127.0.0.1:7777");
        }
    }
    (addr, Duration::from_secs(seconds))
}
