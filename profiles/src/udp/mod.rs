//! `shadowrep serve` and `shadowrep bots`: a profile's world over real UDP, and headless
//! clients that join it, apply what it sends and check at the end that they hold what the
//! server says they should (see `shadowrep::session`).

mod bots;
mod game;
mod serve;

pub use bots::{bots, BotsArgs};
pub use serve::{serve, ServeArgs};

use std::time::{Duration, Instant};

/// Tells when a once-a-second report is due.
struct PerSecond {
    start: Instant,
    next: Instant,
}

impl PerSecond {
    fn new(start: Instant) -> Self {
        Self { start, next: start + Duration::from_secs(1) }
    }

    /// Seconds since the start, when a report is due (then the next is a second later).
    fn due(&mut self, now: Instant) -> Option<f64> {
        if now < self.next {
            return None;
        }
        while self.next <= now {
            self.next += Duration::from_secs(1);
        }
        Some((now - self.start).as_secs_f64())
    }
}
