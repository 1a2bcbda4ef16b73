//! The stateless handshake's cookie, session tokens and client nonces: keyed hashes.
//!
//! ```text
//! cookie(addr, nonce, t) = H_k(addr, nonce, ⌊(t − start) / COOKIE_PERIOD⌋)
//! valid ⇔ the echo equals the cookie of the current period or of the one before
//!        (a cookie lives COOKIE_PERIOD to 2 × COOKIE_PERIOD)
//! ```
//!
//! `H_k` is the standard library's `RandomState` hasher (SipHash-1-3 today), whose 128-bit key
//! the standard library draws from the operating system's random source; an embedder can mix a
//! secret of its own in too. **This is not a cryptographic MAC:** the standard library does not
//! promise the algorithm, and SipHash-1-3 has fewer rounds than the designers' SipHash-2-4. It is
//! enough for what it is for: a third party that cannot read the traffic between a client and
//! the server cannot guess a cookie (to open sessions from spoofed addresses) or a token (to
//! inject packets). Anyone on the path can read both: against them, seal the session
//! ([`super::seal`]).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a cookie period lasts: a cookie is accepted for one to two periods.
pub const COOKIE_PERIOD: Duration = Duration::from_secs(10);

/// A keyed hash with a random key.
pub struct Keyed {
    state: RandomState,
    secret: u128,
}

impl Keyed {
    /// A hash keyed from the operating system's random source, and `secret` mixed in.
    pub fn new(secret: u128) -> Self {
        Self { state: RandomState::new(), secret }
    }

    /// The keyed hash of `value`.
    pub fn hash<T: Hash + ?Sized>(&self, value: &T) -> u64 {
        let mut h = self.state.build_hasher();
        self.secret.hash(&mut h);
        value.hash(&mut h);
        h.finish()
    }
}

/// Makes and checks cookies: the only thing a server keeps for a client before the client
/// proved its address is nothing — this key is the same for every client.
pub struct CookieJar {
    key: Keyed,
    start: Instant,
}

impl CookieJar {
    /// A jar whose periods count from `start`.
    pub fn new(secret: u128, start: Instant) -> Self {
        Self { key: Keyed::new(secret), start }
    }

    fn period(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_secs() / COOKIE_PERIOD.as_secs()
    }

    fn cookie_at(&self, addr: SocketAddr, nonce: u64, period: u64) -> u64 {
        self.key.hash(&(addr, nonce, period))
    }

    /// The cookie for a hello from `addr` with `nonce` at `now`.
    pub fn cookie(&self, addr: SocketAddr, nonce: u64, now: Instant) -> u64 {
        self.cookie_at(addr, nonce, self.period(now))
    }

    /// Whether `cookie` is one this jar gave `addr` for `nonce`, this period or the one before.
    pub fn check(&self, addr: SocketAddr, nonce: u64, cookie: u64, now: Instant) -> bool {
        let p = self.period(now);
        cookie == self.cookie_at(addr, nonce, p) || (p > 0 && cookie == self.cookie_at(addr, nonce, p - 1))
    }
}

/// A random `u64` for a client's nonce (from the same keyed hash over the time and a counter).
pub fn random_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    Keyed::new(0).hash(&(n, t))
}
