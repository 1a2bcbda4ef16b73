//! `shadowrep serve` and `shadowrep bots`: a profile's world over real UDP, and headless
//! clients that join it, apply what it sends and check at the end that they hold what the
//! server says they should (see `shadowrep::session`).

mod bots;
mod game;
mod serve;

pub use bots::{bots, BotsArgs};
pub use serve::{serve, ServeArgs};

use shadowrep::session::TicketKey;
use std::time::{Duration, Instant};

/// `--ticket-key`: the deployment's ticket key as 64 hexadecimal digits (`serve` seals its
/// sessions with it; `bots` plays the backend and issues each bot a ticket under it).
fn ticket_key_arg(s: &str) -> Result<TicketKey, String> {
    let s = s.trim();
    if let Some((at, c)) = s.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(format!("not a hexadecimal digit at {at}: {c:?}"));
    }
    if s.len() != 64 {
        return Err(format!("a ticket key is 64 hexadecimal digits (32 bytes), got {} characters", s.len()));
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(TicketKey::from_bytes(key))
}

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
