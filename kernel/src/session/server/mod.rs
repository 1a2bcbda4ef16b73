//! The server's side of sessions: the stateless handshake, the address → session table, and
//! the framing of everything a session sends.
//!
//! ```text
//! handle(from, bytes, now):
//!   not a datagram                        → Dropped(Malformed)
//!   hello, no session for `from`          → Reply(reject) if version/classes/checksums differ,
//!                                           else Reply(challenge: cookie)   — nothing is kept
//!   hello with cookie                     → the cookie is checked (this period or the last);
//!                                           bad → Reply(a fresh challenge), counted as a bad
//!                                           cookie (a client holding a stale or forged
//!                                           cookie gets a good one); full → Reply(reject);
//!                                           good → Join: the game opens a connection and
//!                                           calls accept(), which creates the session and
//!                                           returns the welcome
//!   hello with cookie from a session's    → Reply(the same welcome) (it was lost)
//!     address and nonce
//!   …and another nonce                    → Disconnected (the client restarted; its next
//!                                           hello joins), or Reply(reject: AddressInUse)
//!                                           for a sealed session without a new ticket of
//!                                           its player (see join.rs)
//!   packet-layer datagram from an address → Dropped(UnknownAddress) — but a sealed one that
//!     without a session                     opens with the keys of the session its token
//!                                           names moves that session to the address
//!                                           (a NAT's new mapping; counted as moved)
//!   …with another token                   → Dropped(BadToken)
//!   feedback / digest request / disconnect → Feedback / DigestRequest / Disconnected
//!   levels with a newer number            → Levels (with its ack), or Dropped(Throttled)
//!                                           sooner than MIN_LEVELS_INTERVAL after the last
//!   levels with no newer number           → Reply(ack of the newest applied)
//!   anything a server never receives      → Dropped(Unexpected)
//! ```
//!
//! With [`ServerConfig::tickets`] the server seals its sessions ([`super::seal`]): a hello must
//! carry a join ticket that opens with the key and has not expired (else a reject naming
//! why, sent once the cookie came back: the address has proved itself), the welcome and
//! everything after are sealed with keys of the session derived from the ticket's, and a session datagram that does not
//! open (`Dropped(Forged)`), comes again (`Dropped(Replayed)`) or comes plain
//! (`Dropped(Unsealed)`: a forger who read the token) is dropped before anything reads it.
//! Only datagrams that opened count as hearing from a sealed session's client (a copier
//! repeating its hello cannot keep a session alive), and a ticket is taken from one address
//! while its session lives ([`TicketRefusal::InUse`](super::frame::TicketRefusal::InUse) for a copy sent from another; once the
//! session ended, the ticket may join again from anywhere until it expires). A sealed
//! session follows its client to a new address; a plain one cannot (anyone who read its
//! token could take it): seal sessions whose clients sit behind NATs that remap.
//!
//! Every reply to a datagram from an address that has not proved itself (a challenge or a
//! reject) is at most as large as that datagram (hellos are at least
//! [`MIN_HELLO_BYTES`](super::frame::MIN_HELLO_BYTES)). Sessions are capped
//! ([`ServerConfig::max_sessions`]); a session nobody heard from for
//! [`ServerConfig::idle_timeout`] is ended by [`SessionServer::expire`].

use super::cookie::{CookieJar, Keyed};
use super::digest::StateDigest;
use super::frame::{Datagram, DigestAnswer, DigestStatus, Hello, RejectReason, PROTOCOL_VERSION};
use super::seal::{SealError, Sealer, SEALED};
use super::ticket::TicketKey;
use crate::ids::ConnectionId;
use crate::net::SublevelId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod ends;
mod incoming;
mod join;
pub use incoming::{Dropped, Incoming, JoinRequest, ServerStats};

/// What a [`SessionServer`] accepts.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The driver's layout checksums (`NetDriver::checksums`): a client must have the same.
    pub checksums: Vec<u64>,
    /// Server ticks per second (told to clients in the welcome).
    pub tick_rate: u16,
    /// Most sessions at once; a hello beyond gets [`RejectReason::Full`].
    pub max_sessions: usize,
    /// A session not heard from for this long is ended by [`SessionServer::expire`].
    pub idle_timeout: Duration,
    /// A secret mixed into the cookie and token key besides the random one (0: none).
    pub secret: u128,
    /// The deployment's ticket key: when set, every session is sealed and a hello needs a join
    /// ticket the key opens ([`super::ticket`]), issued for [`ServerConfig::server_id`].
    pub tickets: Option<TicketKey>,
    /// This server's id among the deployment's: a ticket issued for another is refused.
    pub server_id: u64,
}

impl ServerConfig {
    /// Defaults for a driver's checksums: 30 Hz, 256 sessions, 5 s idle timeout.
    pub fn new(checksums: Vec<u64>) -> Self {
        Self {
            checksums,
            tick_rate: 30,
            max_sessions: 256,
            idle_timeout: Duration::from_secs(5),
            secret: 0,
            tickets: None,
            server_id: 0,
        }
    }

    /// Defaults for `driver`: its checksums, and the tick rate its actor level runs at (rounded;
    /// 30 without an actor level) — the rate the welcome tells clients is then the driver's.
    pub fn for_driver(driver: &crate::net::NetDriver) -> Self {
        let rate = driver.actor_level_tick_rate().map_or(30, |r| r.round().clamp(1.0, f64::from(u16::MAX)) as u16);
        Self { tick_rate: rate, ..Self::new(driver.checksums()) }
    }

    /// The same, sealing every session with the keys of tickets `key` opens that were issued
    /// for server `server_id`.
    pub fn sealed(mut self, key: TicketKey, server_id: u64) -> Self {
        self.tickets = Some(key);
        self.server_id = server_id;
        self
    }
}

/// Why a [`ServerConfig`] was refused by [`SessionServer::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfigError {
    /// More classes than a hello or welcome can name ([`super::frame::MAX_CLASSES`]): no client
    /// could ever match the server's checksums.
    TooManyClasses {
        /// The driver's classes.
        classes: usize,
    },
    /// A tick rate of 0: clients are told how often the server ticks.
    ZeroTickRate,
    /// An idle timeout of zero: every session would end at the next [`SessionServer::expire`].
    ZeroIdleTimeout,
}

impl std::fmt::Display for ServerConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerConfigError::TooManyClasses { classes } => write!(
                f,
                "{classes} classes: a session names at most {} (no client could join)",
                super::frame::MAX_CLASSES
            ),
            ServerConfigError::ZeroTickRate => {
                write!(f, "a tick rate of 0 (ServerConfig::for_driver takes the driver's actor level rate)")
            }
            ServerConfigError::ZeroIdleTimeout => {
                write!(f, "an idle timeout of zero: every session would end at once")
            }
        }
    }
}

impl std::error::Error for ServerConfigError {}

/// Least time between two digest requests of a session that the server passes on: a session
/// holder cannot make the game digest its world more often than this (bots ask every 200 ms).
pub const MIN_DIGEST_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Least time between two level sets of a session that the server passes on: a session
/// holder cannot make the game reload and unload a thousand sublevels more often than this
/// (a level takes far longer to stream in). A set that comes sooner is dropped unacknowledged,
/// and the client's next send of it gets through.
pub const MIN_LEVELS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Most tickets a server remembers as taken (each until it expires); past that, joins are
/// refused as full.
pub const MAX_USED_TICKETS: usize = 1 << 16;

struct Session {
    conn: ConnectionId,
    token: u64,
    nonce: u64,
    heard: Instant,
    /// Sequence number of the last packet sent (0: none).
    last_seq: u32,
    /// When the last digest request passed on arrived.
    last_digest: Option<Instant>,
    /// A sealed session's keys at work.
    sealer: Option<Sealer>,
    /// A sealed session's ticket: its fingerprint and player.
    ticket: Option<([u8; 16], u64)>,
    /// The number of the newest levels datagram applied (0: none), and when it came.
    levels_seq: u32,
    last_levels: Option<Instant>,
}

impl Session {
    /// A datagram this session sends: sealed when the session is.
    fn frame(&mut self, d: &Datagram<'_>) -> Vec<u8> {
        super::seal::frame(self.sealer.as_mut(), d)
    }

    /// Whether a digest request goes on to the game: not sooner than [`MIN_DIGEST_INTERVAL`]
    /// after the last passed on.
    fn digest_allowed(&mut self, now: Instant) -> bool {
        if self.last_digest.is_some_and(|t| now.saturating_duration_since(t) < MIN_DIGEST_INTERVAL) {
            return false;
        }
        self.last_digest = Some(now);
        true
    }
}

/// See the module documentation.
pub struct SessionServer {
    cfg: ServerConfig,
    jar: CookieJar,
    tokens: Keyed,
    minted: u64,
    sessions: HashMap<SocketAddr, Session>,
    by_conn: HashMap<ConnectionId, SocketAddr>,
    /// Sealed sessions' addresses by token: where a sealed datagram from a new address may
    /// belong (the client's address changed under it).
    by_token: HashMap<u64, SocketAddr>,
    /// Tickets taken, by fingerprint: the address of the live session that holds each (none
    /// once it ended), and when it expires.
    used: HashMap<[u8; 16], (Option<SocketAddr>, u64)>,
    /// The earliest expiry in `used` (`u64::MAX`: none): until then nothing there has expired,
    /// and forgetting costs one compare, not a pass over up to [`MAX_USED_TICKETS`] entries at
    /// every accept and every `expire`.
    first_expiry: u64,
    stats: ServerStats,
}

impl SessionServer {
    /// A server whose cookie periods start at `now`; refused when no client could ever join it
    /// ([`ServerConfigError`]).
    pub fn new(cfg: ServerConfig, now: Instant) -> Result<Self, ServerConfigError> {
        if cfg.checksums.len() > super::frame::MAX_CLASSES {
            return Err(ServerConfigError::TooManyClasses { classes: cfg.checksums.len() });
        }
        if cfg.tick_rate == 0 {
            return Err(ServerConfigError::ZeroTickRate);
        }
        if cfg.idle_timeout.is_zero() {
            return Err(ServerConfigError::ZeroIdleTimeout);
        }
        let jar = CookieJar::new(cfg.secret, now);
        let tokens = Keyed::new(cfg.secret);
        Ok(Self {
            cfg,
            jar,
            tokens,
            minted: 0,
            sessions: HashMap::new(),
            by_conn: HashMap::new(),
            by_token: HashMap::new(),
            used: HashMap::new(),
            first_expiry: u64::MAX,
            stats: ServerStats::default(),
        })
    }

    /// Counters.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Sessions open.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Every session's connection and address.
    pub fn sessions(&self) -> impl Iterator<Item = (ConnectionId, SocketAddr)> + '_ {
        self.sessions.iter().map(|(&a, s)| (s.conn, a))
    }

    /// The address of a session's connection.
    pub fn addr_of(&self, conn: ConnectionId) -> Option<SocketAddr> {
        self.by_conn.get(&conn).copied()
    }

    fn reject(&mut self, nonce: u64, reason: RejectReason) -> Incoming<'static> {
        self.stats.rejects += 1;
        Incoming::Reply(Datagram::Reject { nonce, reason, server_version: PROTOCOL_VERSION }.encode())
    }

    /// Why a hello is refused, if it is.
    fn check_hello(&self, h: &Hello) -> Option<RejectReason> {
        if h.version != PROTOCOL_VERSION {
            return Some(RejectReason::Version);
        }
        if h.checksums.len() != self.cfg.checksums.len() {
            return Some(RejectReason::ClassCount { server: self.cfg.checksums.len() as u16 });
        }
        let class = h.checksums.iter().zip(&self.cfg.checksums).position(|(a, b)| a != b)?;
        Some(RejectReason::Checksum { class: class as u16 })
    }

    /// Handles one datagram from `from` (see the module documentation).
    pub fn handle<'a>(&mut self, from: SocketAddr, bytes: &'a [u8], now: Instant) -> Incoming<'a> {
        if bytes.first().is_some_and(|&t| t & SEALED != 0) {
            return self.handle_sealed(from, bytes, now);
        }
        let d = match Datagram::decode(bytes) {
            Ok(d) => d,
            Err(_) => {
                self.stats.malformed += 1;
                return Incoming::Dropped(Dropped::Malformed);
            }
        };
        let token = match &d {
            Datagram::Hello(h) => return self.hello(from, h, now),
            Datagram::Feedback { token, .. }
            | Datagram::DigestRequest { token, .. }
            | Datagram::Levels { token, .. }
            | Datagram::Disconnect { token, .. } => *token,
            _ => {
                self.stats.unexpected += 1;
                return Incoming::Dropped(Dropped::Unexpected);
            }
        };
        let Some(s) = self.sessions.get_mut(&from) else {
            self.stats.unknown_address += 1;
            return Incoming::Dropped(Dropped::UnknownAddress);
        };
        if s.token != token {
            self.stats.bad_token += 1;
            return Incoming::Dropped(Dropped::BadToken);
        }
        if s.sealer.is_some() {
            self.stats.unsealed += 1;
            return Incoming::Dropped(Dropped::Unsealed);
        }
        let r = Self::session_datagram(s, d, now, &mut self.stats);
        self.end_if_disconnected(r)
    }

    /// A levels datagram of session `s`: passed on if its number is newer than the last
    /// applied (and [`MIN_LEVELS_INTERVAL`] has passed since), answered with an ack of the
    /// newest applied (not when throttled).
    fn levels(
        s: &mut Session,
        (seq, levels): (u32, Vec<SublevelId>),
        now: Instant,
        stats: &mut ServerStats,
    ) -> Incoming<'static> {
        let fresh = super::levels::newer(seq, s.levels_seq);
        if fresh && s.last_levels.is_some_and(|t| now.saturating_duration_since(t) < MIN_LEVELS_INTERVAL) {
            stats.levels_throttled += 1;
            return Incoming::Dropped(Dropped::Throttled);
        }
        if fresh {
            (s.levels_seq, s.last_levels) = (seq, Some(now));
        } else {
            stats.levels_repeated += 1;
        }
        let ack = s.frame(&Datagram::LevelsAck { token: s.token, seq: s.levels_seq });
        if fresh {
            Incoming::Levels { conn: s.conn, levels, ack }
        } else {
            Incoming::Reply(ack)
        }
    }

    /// What an accepted datagram (plain, or opened) of session `s` asks of the game: the client
    /// was heard from; a digest request sooner than [`MIN_DIGEST_INTERVAL`] after the last
    /// passed on is dropped; a levels datagram goes to [`Self::levels`]; a disconnect (the only
    /// other kind the callers accept) ends the session once the caller sees it.
    fn session_datagram<'a>(s: &mut Session, d: Datagram<'a>, now: Instant, stats: &mut ServerStats) -> Incoming<'a> {
        s.heard = now;
        let conn = s.conn;
        match d {
            Datagram::Feedback { payload, .. } => Incoming::Feedback { conn, payload: Cow::Borrowed(payload) },
            Datagram::DigestRequest { id, .. } if s.digest_allowed(now) => Incoming::DigestRequest { conn, id },
            Datagram::DigestRequest { .. } => {
                stats.digests_throttled += 1;
                Incoming::Dropped(Dropped::Throttled)
            }
            Datagram::Levels { seq, levels, .. } => Self::levels(s, (seq, levels), now, stats),
            _ => Incoming::Disconnected { conn },
        }
    }

    /// `r`, after ending its session if it is a disconnect.
    fn end_if_disconnected<'a>(&mut self, r: Incoming<'a>) -> Incoming<'a> {
        if let Incoming::Disconnected { conn } = r {
            self.end(conn);
        }
        r
    }

    /// A sealed datagram: its session's, opened, or dropped.
    fn handle_sealed<'a>(&mut self, from: SocketAddr, bytes: &'a [u8], now: Instant) -> Incoming<'a> {
        // The session token the header names (`None`: no sealed datagram's header), read once,
        // before any opening.
        let token = super::seal::sealed_header(bytes).map(|(_, token)| token);
        // From an address without a session, the sealed session its token names, if any: the
        // client's address may have changed under it (a NAT's new mapping).
        let home = match self.sessions.contains_key(&from) {
            true => Some(from),
            false => token.and_then(|token| self.by_token.get(&token).copied()),
        };
        let Some(s) = home.and_then(|home| self.sessions.get_mut(&home)) else {
            self.stats.unknown_address += 1;
            return Incoming::Dropped(Dropped::UnknownAddress);
        };
        let Some(sealer) = &mut s.sealer else {
            self.stats.forged += 1;
            return Incoming::Dropped(Dropped::Forged);
        };
        match token {
            Some(token) if token != s.token => {
                self.stats.bad_token += 1;
                return Incoming::Dropped(Dropped::BadToken);
            }
            Some(_) => {}
            None => {
                self.stats.malformed += 1;
                return Incoming::Dropped(Dropped::Malformed);
            }
        }
        let plain = match sealer.open(bytes) {
            Ok(p) => p,
            Err(SealError::Replayed) => {
                self.stats.replayed += 1;
                return Incoming::Dropped(Dropped::Replayed);
            }
            Err(SealError::Forged | SealError::Malformed) => {
                self.stats.forged += 1;
                return Incoming::Dropped(Dropped::Forged);
            }
        };
        let d = match Datagram::decode(&plain) {
            // A client only seals what it may send; an opened hello or server datagram is a
            // client bug, dropped as unexpected.
            Ok(
                d @ (Datagram::Feedback { .. }
                | Datagram::DigestRequest { .. }
                | Datagram::Levels { .. }
                | Datagram::Disconnect { .. }),
            ) => d,
            Ok(_) => {
                self.stats.unexpected += 1;
                return Incoming::Dropped(Dropped::Unexpected);
            }
            Err(_) => {
                self.stats.malformed += 1;
                return Incoming::Dropped(Dropped::Malformed);
            }
        };
        let r = Self::session_datagram(s, d, now, &mut self.stats).into_static();
        if let Some(home) = home.filter(|&home| home != from) {
            // It opened: only the session's client can seal it, so the client is at `from` now.
            self.move_session(home, from);
        }
        self.end_if_disconnected(r)
    }

    /// A kernel packet for `conn`, framed: (where to send it, the datagram). `None` if `conn`
    /// has no session.
    pub fn packet(&mut self, conn: ConnectionId, payload: &[u8]) -> Option<(SocketAddr, Vec<u8>)> {
        let addr = *self.by_conn.get(&conn)?;
        let s = self.sessions.get_mut(&addr)?;
        // A kernel packet starts with its sequence number (packed); the digest answer names it.
        if let Ok(seq) = crate::wire::BitReader::new(payload).read_packed() {
            s.last_seq = u32::try_from(seq).unwrap_or(s.last_seq);
        }
        let token = s.token;
        Some((addr, s.frame(&Datagram::Packet { token, payload })))
    }

    /// The answer to a digest request of `conn`: `Some(digest)` makes it
    /// [`DigestStatus::Ready`] with the sequence number of the last packet sent; `None` with
    /// `status` Live or Busy.
    pub fn digest_answer(
        &mut self,
        conn: ConnectionId,
        id: u32,
        status: DigestStatus,
        digest: Option<StateDigest>,
    ) -> Option<(SocketAddr, Vec<u8>)> {
        let addr = *self.by_conn.get(&conn)?;
        let s = self.sessions.get_mut(&addr)?;
        let d = digest.unwrap_or_default();
        let answer = DigestAnswer { id, status, seq: s.last_seq, actors: d.actors, digest: d.hash };
        let token = s.token;
        Some((addr, s.frame(&Datagram::DigestAnswer { token, answer })))
    }
}

/// The welcome of a session.
fn welcome(cfg: &ServerConfig, nonce: u64, token: u64) -> Datagram<'static> {
    Datagram::Welcome { nonce, token, tick_rate: cfg.tick_rate, checksums: cfg.checksums.clone() }
}
