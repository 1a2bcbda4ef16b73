//! How a session starts: a hello with the server's cookie becomes a [`Incoming::Join`] (its
//! join ticket opened first when the server seals its sessions), the game opens a connection
//! and [`SessionServer::accept`]s it — or [`SessionServer::refuse`]s it.
//!
//! A hello with a good cookie from an address that holds a session is one of three things:
//!
//! ```text
//! the session's own nonce                → Reply(the same welcome): the first was lost
//! another nonce, plain session           → Disconnected { conn }: the client restarted (or
//!                                           gave its session up) and proved it owns the
//!                                           address; the old session ends, the game removes
//!                                           its connection, and the client's next hello joins
//! another nonce, sealed session,         → the same, when the ticket opens and is a new one of
//!   with a ticket                          the session's player (nobody but the player and
//!                                           its backend holds one); the session's own ticket
//!                                           again, or another player's → Reject(AddressInUse)
//! ```
//!
//! So a client restarted on the same port joins again at once, where it waited for the idle
//! timeout before; a copier of a sealed session's hello, even one who can receive at its
//! address, cannot end the session with the copy.

use super::{welcome, Incoming, JoinRequest, Session, SessionServer, MAX_USED_TICKETS};
use crate::ids::ConnectionId;
use crate::session::frame::{Datagram, Hello, RejectReason, TicketRefusal, PROTOCOL_VERSION};
use crate::session::seal::Sealer;
use crate::session::ticket::{self, TicketClaims, TicketError};
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

impl SessionServer {
    pub(super) fn hello(&mut self, from: SocketAddr, h: &Hello, now: Instant) -> Incoming<'static> {
        if let Some(reason) = self.check_hello(h) {
            return self.reject(h.nonce, reason);
        }
        match (&self.cfg.tickets, &h.ticket) {
            (Some(_), None) => return self.reject(h.nonce, RejectReason::Ticket(TicketRefusal::Missing)),
            (None, Some(_)) => return self.reject(h.nonce, RejectReason::Ticket(TicketRefusal::NotSealed)),
            _ => {}
        }
        let Some(cookie) = h.cookie else {
            self.stats.challenges += 1;
            let cookie = self.jar.cookie(from, h.nonce, now);
            return Incoming::Reply(Datagram::Challenge { nonce: h.nonce, cookie }.encode());
        };
        if !self.jar.check(from, h.nonce, cookie, now) {
            // Stale (the handshake took more than a period) or not this server's (a forged
            // challenge replaced the real one): a fresh challenge, no larger than the hello.
            self.stats.bad_cookies += 1;
            let cookie = self.jar.cookie(from, h.nonce, now);
            return Incoming::Reply(Datagram::Challenge { nonce: h.nonce, cookie }.encode());
        }
        if let Some(s) = self.sessions.get_mut(&from).filter(|s| s.nonce == h.nonce) {
            // A plain hello proves nothing about a sealed session's client: only what opens
            // keeps such a session alive.
            if s.sealer.is_none() {
                s.heard = now;
            }
            self.stats.welcomes_repeated += 1;
            let welcome = welcome(&self.cfg, h.nonce, s.token);
            return Incoming::Reply(s.frame(&welcome));
        }
        // The address has proved itself: a ticket is worth opening now.
        let ticket = match self.open_ticket(from, h) {
            Ok(t) => t,
            Err(refusal) => return self.reject(h.nonce, RejectReason::Ticket(refusal)),
        };
        if self.sessions.contains_key(&from) {
            return match self.restart(from, ticket.as_ref()) {
                Some(conn) => Incoming::Disconnected { conn },
                None => self.reject(h.nonce, RejectReason::AddressInUse),
            };
        }
        // A new ticket needs room in the list of those taken (`accept` would refuse it).
        let no_room = |s: &Self| ticket.as_ref().is_some_and(|c| !s.room_for(&c.fingerprint));
        if no_room(self) {
            self.forget_expired_tickets();
        }
        if self.sessions.len() >= self.cfg.max_sessions || no_room(self) {
            return self.reject(h.nonce, RejectReason::Full);
        }
        Incoming::Join(JoinRequest { addr: from, nonce: h.nonce, ticket })
    }

    /// The claims of a hello's ticket (none when the server does not seal), or why it is
    /// refused.
    fn open_ticket(&self, from: SocketAddr, h: &Hello) -> Result<Option<TicketClaims>, TicketRefusal> {
        let (Some(key), Some(t)) = (&self.cfg.tickets, &h.ticket) else { return Ok(None) };
        match ticket::open(key, t, SystemTime::now()) {
            Ok(claims) if claims.server != self.cfg.server_id => Err(TicketRefusal::OtherServer),
            Ok(claims) if self.taken_elsewhere(&claims.fingerprint, from) => Err(TicketRefusal::InUse),
            Ok(claims) => Ok(Some(claims)),
            Err(TicketError::Expired) => Err(TicketRefusal::Expired),
            Err(_) => Err(TicketRefusal::Forged),
        }
    }

    /// Whether the list of taken tickets holds ticket `fingerprint` already or has room for it.
    fn room_for(&self, fingerprint: &[u8; 16]) -> bool {
        self.used.contains_key(fingerprint) || self.used.len() < MAX_USED_TICKETS
    }

    /// Whether a live session at another address than `from` holds the ticket `fingerprint`
    /// (a ticket whose session ended may be taken again, from anywhere, until it expires).
    fn taken_elsewhere(&self, fingerprint: &[u8; 16], from: SocketAddr) -> bool {
        self.used.get(fingerprint).is_some_and(|&(holder, _)| holder.is_some_and(|a| a != from))
    }

    /// Ends the session at `from` for a new handshake from there (see the module
    /// documentation) and returns its connection; `None` when the handshake may not end it.
    fn restart(&mut self, from: SocketAddr, ticket: Option<&TicketClaims>) -> Option<ConnectionId> {
        let s = self.sessions.get(&from)?;
        let fresh = match (s.ticket, ticket) {
            (None, None) => true,
            (Some((fingerprint, player)), Some(c)) => c.player == player && c.fingerprint != fingerprint,
            _ => false,
        };
        if !fresh {
            return None;
        }
        let conn = s.conn;
        self.end(conn);
        self.stats.restarts += 1;
        Some(conn)
    }

    /// Opens the session of `join` on connection `conn` and returns the welcome to send to
    /// `join.addr`. `None` if the address got a session in the meantime or the server is full.
    /// ([`Self::accept_with`] opens the connection only once the session is sure.)
    pub fn accept(&mut self, join: JoinRequest, conn: ConnectionId, now: Instant) -> Option<Vec<u8>> {
        self.admits(&join).ok()?;
        Some(self.open_session(join, conn, now))
    }

    /// The session of an admitted `join` on `conn`, made; its welcome.
    fn open_session(&mut self, join: JoinRequest, conn: ConnectionId, now: Instant) -> Vec<u8> {
        if let Some(t) = &join.ticket {
            self.used.insert(t.fingerprint, (Some(join.addr), t.expires));
            self.first_expiry = self.first_expiry.min(t.expires);
        }
        self.minted += 1;
        // A token is never 0, so an all-zero header never matches.
        let token = self.tokens.hash(&(self.minted, join.addr, join.nonce)).max(1);
        let sealer = join.ticket.as_ref().map(|t| Sealer::server(&t.keys));
        let mut session = Session {
            conn,
            token,
            nonce: join.nonce,
            heard: now,
            last_seq: 0,
            last_digest: None,
            sealer,
            ticket: join.ticket.map(|t| (t.fingerprint, t.player)),
            levels_seq: 0,
            last_levels: None,
        };
        let welcome = session.frame(&welcome(&self.cfg, join.nonce, token));
        if session.sealer.is_some() {
            self.by_token.insert(token, join.addr);
        }
        self.sessions.insert(join.addr, session);
        self.by_conn.insert(conn, join.addr);
        self.stats.joins += 1;
        welcome
    }

    /// [`Self::accept`], opening the game's connection only when the session will be made:
    /// `open` is called then (`None`: the game has no room). The connection and the welcome to
    /// send `join.addr`, or the reject to send it — nothing to undo either way.
    ///
    /// ```no_run
    /// # use shadowrep::net::{DriverConfig, NetDriver};
    /// # use shadowrep::session::{Incoming, ServerConfig, SessionServer};
    /// # use std::time::Instant;
    /// # let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// # let mut sessions = SessionServer::new(ServerConfig::for_driver(&driver), Instant::now()).unwrap();
    /// # let (from, datagram) = ("127.0.0.1:7777".parse().unwrap(), [0u8; 48]);
    /// # let send = |_: &[u8]| {};
    /// if let Incoming::Join(join) = sessions.handle(from, &datagram, Instant::now()) {
    ///     match sessions.accept_with(join, Instant::now(), || Some(driver.add_connection(false))) {
    ///         Ok((_conn, welcome)) => send(&welcome),
    ///         Err(reject) => send(&reject),
    ///     }
    /// }
    /// ```
    pub fn accept_with(
        &mut self,
        join: JoinRequest,
        now: Instant,
        open: impl FnOnce() -> Option<ConnectionId>,
    ) -> Result<(ConnectionId, Vec<u8>), Vec<u8>> {
        if let Err(reason) = self.admits(&join) {
            return Err(self.refuse(join, reason));
        }
        let Some(conn) = open() else { return Err(self.refuse(join, RejectReason::Full)) };
        Ok((conn, self.open_session(join, conn, now)))
    }

    /// Whether [`Self::accept`] would open `join`'s session — its address has none, the server
    /// has room, and its ticket (if any) is not held elsewhere and fits the list of those taken
    /// — or why not. (All checked at the hello; joins may interleave.)
    fn admits(&mut self, join: &JoinRequest) -> Result<(), RejectReason> {
        if self.sessions.contains_key(&join.addr) {
            return Err(RejectReason::AddressInUse);
        }
        if self.sessions.len() >= self.cfg.max_sessions {
            return Err(RejectReason::Full);
        }
        let Some(t) = &join.ticket else { return Ok(()) };
        self.forget_expired_tickets();
        if self.taken_elsewhere(&t.fingerprint, join.addr) {
            return Err(RejectReason::Ticket(TicketRefusal::InUse));
        }
        match self.room_for(&t.fingerprint) {
            true => Ok(()),
            false => Err(RejectReason::Full),
        }
    }

    /// The reject to send `join.addr` when the game has no room for it.
    pub fn refuse(&mut self, join: JoinRequest, reason: RejectReason) -> Vec<u8> {
        self.stats.rejects += 1;
        Datagram::Reject { nonce: join.nonce, reason, server_version: PROTOCOL_VERSION }.encode()
    }
}
