//! The client's side of a session: hello until welcomed, then a [`ClientWorld`] fed by packets.
//!
//! ```text
//! Connecting ── hello() ───────────────→ server         (send again until answered)
//!            ←─ challenge(cookie) ─────                  cookie kept
//!            ── hello() (with cookie) ─→                 (send again until answered)
//!            ←─ welcome(token, checksums)                ClientWorld::new(layouts, checksums)
//! Connected  ←─ packet(token) ─────────                  ClientWorld::receive
//!            ── feedback() ────────────→                 when ClientWorld::feedback_due, and
//!                                                        every keep-alive interval
//!            ── digest_request(id) ────→ / ←─ answer     compare with digest::client_digest
//!            ── levels() ──────────────→ / ←─ ack        each tick while set_sublevel_loaded's
//!                                                        newest set is not acknowledged
//!            (nothing from the server for a while)     expire(now, timeout) → Closed(TimedOut)
//! Rejected / Failed / Closed                             final
//! ```
//!
//! A handshake reply whose nonce is not this client's, and a session datagram whose token is
//! not the session's, is dropped and counted; so is anything that does not decode.
//!
//! A client made [`SessionClient::with_ticket`] asks for a sealed session ([`super::seal`]):
//! its hello carries the join ticket, and from the welcome on it takes only datagrams sealed
//! with the session's keys (derived from the ticket's) — a plain welcome, packet, digest answer or disconnect (a forger's:
//! the server of a sealed session sends none) is dropped as `Unsealed`, one that does not open
//! as `Forged`, one that came before as `Replayed` — and seals everything it sends.

use super::digest::{client_digest, StateDigest};
use super::frame::{Datagram, DigestAnswer, DisconnectReason, Hello, RejectReason, PROTOCOL_VERSION};
use super::levels::{LevelError, LevelSet};
use super::seal::{frame, SealError, Sealer, SEALED};
use super::ticket::{SessionKeys, TicketError, TICKET_BYTES};
use crate::client::{ClientError, ClientWorld, Receipt, ReceiveError};
use crate::net::SublevelId;
use crate::schema::ClassLayout;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a client's session stands.
pub enum ClientState {
    /// Saying hello (with the server's cookie once it came).
    Connecting {
        /// The challenge's cookie.
        cookie: Option<u64>,
    },
    /// Welcomed: packets are applied to the world.
    Connected {
        /// The session token.
        token: u64,
        /// Server ticks per second.
        tick_rate: u16,
        /// The replicated world.
        world: Box<ClientWorld>,
    },
    /// The server refused the hello.
    Rejected(RejectReason),
    /// The server's welcome named layouts this client cannot build a world from.
    Failed(ClientError),
    /// The session ended.
    Closed(DisconnectReason),
}

/// What a datagram did.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientIncoming {
    /// A challenge: send [`SessionClient::hello`] again (it carries the cookie now).
    Challenge,
    /// Welcomed: the world exists.
    Welcome,
    /// Refused (final).
    Rejected(RejectReason),
    /// The welcome's checksums do not build a world (final).
    Failed(ClientError),
    /// A packet, and what the world did with it.
    Packet(Result<Receipt, ReceiveError>),
    /// The answer to a digest request.
    DigestAnswer(DigestAnswer),
    /// The newest level set the server has applied is numbered `seq` (a number the client
    /// sent; one older than its newest set silences nothing: that set goes on being sent).
    LevelsAcked(u32),
    /// The server ended the session (final).
    Disconnected(DisconnectReason),
    /// Dropped: not a datagram, not for this client, or not expected now.
    Dropped(ClientDropped),
}

/// Why a client dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientDropped {
    /// Not a datagram.
    Malformed,
    /// A handshake reply with another nonce.
    BadNonce,
    /// A session datagram with another token.
    BadToken,
    /// Not expected in this state (a packet before the welcome, a hello…).
    Unexpected,
    /// Sealed, and does not open with the session's key (or sealed to a client without one).
    Forged,
    /// Sealed, and its counter came before.
    Replayed,
    /// Plain, in a sealed session.
    Unsealed,
}

/// Counters of a [`SessionClient`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionClientStats {
    /// Datagrams dropped as malformed.
    pub malformed: u64,
    /// Handshake replies with another nonce.
    pub bad_nonce: u64,
    /// Session datagrams with another token.
    pub bad_token: u64,
    /// Datagrams not expected in the state the client was in.
    pub unexpected: u64,
    /// Packets the world refused as malformed.
    pub packets_refused: u64,
    /// Sealed datagrams that did not open.
    pub forged: u64,
    /// Sealed datagrams whose counter came before.
    pub replayed: u64,
    /// Plain datagrams in a sealed session.
    pub unsealed: u64,
}

/// See the module documentation.
pub struct SessionClient {
    layouts: Vec<Arc<ClassLayout>>,
    nonce: u64,
    state: ClientState,
    stats: SessionClientStats,
    /// A sealed session's ticket (sent in the hello) and keys at work.
    ticket: Option<Vec<u8>>,
    sealer: Option<Sealer>,
    levels: LevelSet,
    /// When the session last heard from the server: the welcome, then each datagram of the
    /// session taken (sealed: each that opened).
    heard: Option<Instant>,
}

impl SessionClient {
    /// A client with `layouts` (in the server's class-id order) and a random `nonce`
    /// ([`super::random_u64`]).
    pub fn new(layouts: Vec<Arc<ClassLayout>>, nonce: u64) -> Self {
        Self {
            layouts,
            nonce,
            state: ClientState::Connecting { cookie: None },
            stats: SessionClientStats::default(),
            ticket: None,
            sealer: None,
            levels: LevelSet::default(),
            heard: None,
        }
    }

    /// A client of a sealed session: `ticket` and `keys` as the game's backend issued them
    /// ([`super::ticket::issue`]). A ticket of another length than
    /// [`TICKET_BYTES`] is refused here (a server would drop its
    /// hello without an answer).
    ///
    /// `nonce` must be random and new for each attempt, as for [`SessionClient::new`]: a
    /// client that reused one with the same ticket would accept a replayed welcome of the
    /// earlier session (its nonce inside, sealed under the ticket) and seal its own datagrams
    /// under that session's key from counter 1 again.
    ///
    /// The handshake's challenge and rejects come before any key and are plain: someone on the
    /// path can forge them. A forged challenge costs a round trip (the server answers the
    /// wrong cookie with a fresh challenge); a forged reject ends the attempt, as dropping the
    /// datagrams would — try again (with a new ticket after
    /// [`TicketRefusal::InUse`](super::TicketRefusal::InUse): someone else brought this one
    /// first), and never answer a reject by connecting without a ticket.
    pub fn with_ticket(
        layouts: Vec<Arc<ClassLayout>>,
        nonce: u64,
        ticket: Vec<u8>,
        keys: &SessionKeys,
    ) -> Result<Self, TicketError> {
        if ticket.len() != TICKET_BYTES {
            return Err(TicketError::Malformed);
        }
        Ok(Self { ticket: Some(ticket), sealer: Some(Sealer::client(keys)), ..Self::new(layouts, nonce) })
    }

    /// Whether the session is sealed.
    pub fn is_sealed(&self) -> bool {
        self.sealer.is_some()
    }

    /// Where the session stands.
    pub fn state(&self) -> &ClientState {
        &self.state
    }

    /// Counters.
    pub fn stats(&self) -> SessionClientStats {
        self.stats
    }

    /// The world, once welcomed.
    pub fn world(&self) -> Option<&ClientWorld> {
        match &self.state {
            ClientState::Connected { world, .. } => Some(world),
            _ => None,
        }
    }

    /// The world, once welcomed, to read events and notifies from.
    pub fn world_mut(&mut self) -> Option<&mut ClientWorld> {
        match &mut self.state {
            ClientState::Connected { world, .. } => Some(world),
            _ => None,
        }
    }

    fn token(&self) -> Option<u64> {
        match &self.state {
            ClientState::Connected { token, .. } => Some(*token),
            _ => None,
        }
    }

    /// While connecting: the hello to send (with the cookie once the challenge came), padded
    /// to [`super::frame::MIN_HELLO_BYTES`]. Send it again until the state changes.
    pub fn hello(&self) -> Option<Vec<u8>> {
        let ClientState::Connecting { cookie } = self.state else { return None };
        let checksums = self.layouts.iter().map(|l| l.checksum).collect();
        let ticket = self.ticket.clone();
        Some(
            Datagram::Hello(Hello { version: PROTOCOL_VERSION, nonce: self.nonce, cookie, checksums, ticket }).encode(),
        )
    }

    /// Feedback for the server, framed (once connected). Send it when the world's
    /// `feedback_due` says so, and every keep-alive interval otherwise — a few times a second:
    /// the server sends nothing but keep-alives to a client not heard from for
    /// `ActorLevelConfig::ready_timeout` (1.5 s), and ends a session silent for
    /// `ServerConfig::idle_timeout`.
    pub fn feedback(&mut self) -> Option<Vec<u8>> {
        let ClientState::Connected { token, world, .. } = &mut self.state else { return None };
        let (token, payload) = (*token, world.feedback());
        Some(frame(self.sealer.as_mut(), &Datagram::Feedback { token, payload: &payload }))
    }

    /// The client's game loaded (`true`) or unloaded `sublevel` (UE's streaming levels; unload
    /// its static actors from the world first, `ClientWorld::unload_static_actor`): the server
    /// is told by [`Self::levels`], and opens channels only to actors in the sublevels loaded
    /// ([`crate::net::sublevels`]). Whether the set changed; the persistent level cannot be
    /// unloaded, and at most [`super::MAX_LEVELS`] sublevels are loaded at once (refused
    /// changes change nothing). May be called before the welcome: the set goes once connected.
    /// The set belongs to this session: a game that reconnects with a new client declares its
    /// loaded sublevels on that one again (the server's new connection starts with the
    /// persistent level only).
    ///
    /// ```
    /// use shadowrep::net::SublevelId;
    /// use shadowrep::session::{LevelError, SessionClient};
    ///
    /// let mut client = SessionClient::new(Vec::new(), 7);
    /// assert_eq!(client.set_sublevel_loaded(SublevelId(2), true), Ok(true));
    /// assert!(client.sublevel_loaded(SublevelId(2)));
    /// assert_eq!(client.set_sublevel_loaded(SublevelId::PERSISTENT, false), Err(LevelError::Persistent));
    /// assert_eq!(client.levels(), None, "not connected yet: nothing to send");
    /// ```
    pub fn set_sublevel_loaded(&mut self, sublevel: SublevelId, loaded: bool) -> Result<bool, LevelError> {
        self.levels.set(sublevel, loaded)
    }

    /// Whether `sublevel` is loaded here (the persistent level always is).
    pub fn sublevel_loaded(&self, sublevel: SublevelId) -> bool {
        self.levels.is_loaded(sublevel)
    }

    /// The sublevels loaded here (not the persistent level), in order.
    pub fn loaded_sublevels(&self) -> impl Iterator<Item = SublevelId> + '_ {
        self.levels.loaded()
    }

    /// Once connected, while the server has not acknowledged the newest level set: that set,
    /// framed ([`super::levels`]). Send it once a tick (with the feedback) until `None`; a lost
    /// one is simply sent again, and the server applies each set once.
    pub fn levels(&mut self) -> Option<Vec<u8>> {
        let token = self.token()?;
        let (seq, levels) = self.levels.unacked()?;
        Some(frame(self.sealer.as_mut(), &Datagram::Levels { token, seq, levels }))
    }

    /// A digest request, framed (once connected).
    pub fn digest_request(&mut self, id: u32) -> Option<Vec<u8>> {
        let token = self.token()?;
        Some(frame(self.sealer.as_mut(), &Datagram::DigestRequest { token, id }))
    }

    /// A disconnect, framed; the session is closed here.
    pub fn disconnect(&mut self) -> Option<Vec<u8>> {
        let token = self.token()?;
        self.state = ClientState::Closed(DisconnectReason::Closed);
        Some(frame(self.sealer.as_mut(), &Datagram::Disconnect { token, reason: DisconnectReason::Closed }))
    }

    /// The digest of the world as it is ([`client_digest`]).
    pub fn digest(&self) -> Option<StateDigest> {
        self.world().map(client_digest)
    }

    fn drop(&mut self, why: ClientDropped) -> ClientIncoming {
        match why {
            ClientDropped::Malformed => self.stats.malformed += 1,
            ClientDropped::BadNonce => self.stats.bad_nonce += 1,
            ClientDropped::BadToken => self.stats.bad_token += 1,
            ClientDropped::Unexpected => self.stats.unexpected += 1,
            ClientDropped::Forged => self.stats.forged += 1,
            ClientDropped::Replayed => self.stats.replayed += 1,
            ClientDropped::Unsealed => self.stats.unsealed += 1,
        }
        ClientIncoming::Dropped(why)
    }

    /// Handles one datagram from the server (see the module documentation), received now.
    pub fn handle(&mut self, bytes: &[u8]) -> ClientIncoming {
        self.handle_at(bytes, Instant::now())
    }

    /// [`Self::handle`], for a datagram received at `now` (the clock [`Self::expire`] reads).
    pub fn handle_at(&mut self, bytes: &[u8], now: Instant) -> ClientIncoming {
        let r = self.take(bytes);
        let heard = matches!(
            r,
            ClientIncoming::Welcome
                | ClientIncoming::Packet(_)
                | ClientIncoming::DigestAnswer(_)
                | ClientIncoming::LevelsAcked(_)
        );
        if heard {
            self.heard = Some(now);
        }
        r
    }

    /// How long the session has heard nothing from the server at `now` (since the welcome or
    /// its last datagram taken); `None` unless connected.
    pub fn silent_for(&self, now: Instant) -> Option<Duration> {
        self.token()?;
        self.heard.map(|t| now.saturating_duration_since(t))
    }

    /// Closes a connected session that has heard nothing from the server for longer than
    /// `timeout` at `now` — the client's side of the server's idle timeout: the server sends a
    /// settled client a keep-alive every `DriverConfig::keep_alive_frames`, so a few times that
    /// interval with nothing means the server or the path is gone. The state becomes
    /// `Closed(TimedOut)` (join again with a new client); whether it did.
    ///
    /// ```
    /// use shadowrep::session::{ClientState, SessionClient};
    /// use std::time::{Duration, Instant};
    ///
    /// let mut client = SessionClient::new(Vec::new(), 7);
    /// // Not connected: nothing to time out (a connecting client sends its hello again).
    /// assert!(!client.expire(Instant::now(), Duration::from_secs(3)));
    /// assert!(matches!(client.state(), ClientState::Connecting { .. }));
    /// ```
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> bool {
        if self.silent_for(now).is_none_or(|silent| silent <= timeout) {
            return false;
        }
        self.state = ClientState::Closed(DisconnectReason::TimedOut);
        true
    }

    fn take(&mut self, bytes: &[u8]) -> ClientIncoming {
        let sealed = bytes.first().is_some_and(|&t| t & SEALED != 0);
        let opened;
        // Once connected, a sealed datagram names the session's token before anything is
        // opened: another session's (an earlier one on this ticket, say) would move the
        // replay window past this one's own counters.
        if let (true, Some(t)) = (sealed, self.token()) {
            if super::seal::sealed_header(bytes).is_some_and(|(_, id)| id != t) {
                return self.drop(ClientDropped::BadToken);
            }
        }
        let bytes = match (sealed, &mut self.sealer) {
            (false, _) => bytes,
            (true, None) => return self.drop(ClientDropped::Forged),
            (true, Some(sealer)) => match sealer.open(bytes) {
                Ok(plain) => {
                    opened = plain;
                    &opened[..]
                }
                Err(SealError::Replayed) => return self.drop(ClientDropped::Replayed),
                Err(SealError::Forged) => return self.drop(ClientDropped::Forged),
                Err(SealError::Malformed) => return self.drop(ClientDropped::Malformed),
            },
        };
        let Ok(d) = Datagram::decode(bytes) else { return self.drop(ClientDropped::Malformed) };
        // In a sealed session the server seals the welcome and everything after: the same
        // datagrams plain are a forger's (challenges and rejects come before any key).
        let needs_seal = matches!(
            d,
            Datagram::Welcome { .. }
                | Datagram::Packet { .. }
                | Datagram::DigestAnswer { .. }
                | Datagram::LevelsAck { .. }
                | Datagram::Disconnect { .. }
        );
        if self.sealer.is_some() && needs_seal && !sealed {
            return self.drop(ClientDropped::Unsealed);
        }
        let connecting = matches!(self.state, ClientState::Connecting { .. });
        match d {
            Datagram::Challenge { nonce, .. } | Datagram::Welcome { nonce, .. } | Datagram::Reject { nonce, .. }
                if nonce != self.nonce =>
            {
                self.drop(ClientDropped::BadNonce)
            }
            Datagram::Challenge { cookie, .. } if connecting => {
                self.state = ClientState::Connecting { cookie: Some(cookie) };
                ClientIncoming::Challenge
            }
            Datagram::Welcome { token, tick_rate, checksums, .. } if connecting => {
                match ClientWorld::new(&self.layouts, &checksums) {
                    Ok(world) => {
                        // Its own welcome: the session's keys and a fresh replay window.
                        if let Some(sealer) = &mut self.sealer {
                            sealer.bind(token);
                        }
                        self.state = ClientState::Connected { token, tick_rate, world: Box::new(world) };
                        ClientIncoming::Welcome
                    }
                    Err(e) => {
                        self.state = ClientState::Failed(e.clone());
                        ClientIncoming::Failed(e)
                    }
                }
            }
            Datagram::Reject { reason, .. } if connecting => {
                self.state = ClientState::Rejected(reason);
                ClientIncoming::Rejected(reason)
            }
            Datagram::Packet { token, payload } => match &mut self.state {
                ClientState::Connected { token: t, world, .. } if *t == token => {
                    let r = world.receive(payload);
                    if r.is_err() {
                        self.stats.packets_refused += 1;
                    }
                    ClientIncoming::Packet(r)
                }
                ClientState::Connected { .. } => self.drop(ClientDropped::BadToken),
                _ => self.drop(ClientDropped::Unexpected),
            },
            Datagram::DigestAnswer { token, answer } => match self.token() {
                Some(t) if t == token => ClientIncoming::DigestAnswer(answer),
                Some(_) => self.drop(ClientDropped::BadToken),
                None => self.drop(ClientDropped::Unexpected),
            },
            Datagram::LevelsAck { token, seq } => match self.token() {
                // An ack of a number never sent is not the server's.
                Some(t) if t == token && self.levels.ack(seq) => ClientIncoming::LevelsAcked(seq),
                Some(t) if t == token => self.drop(ClientDropped::Unexpected),
                Some(_) => self.drop(ClientDropped::BadToken),
                None => self.drop(ClientDropped::Unexpected),
            },
            Datagram::Disconnect { token, reason } => match self.token() {
                Some(t) if t == token => {
                    self.state = ClientState::Closed(reason);
                    ClientIncoming::Disconnected(reason)
                }
                Some(_) => self.drop(ClientDropped::BadToken),
                None => self.drop(ClientDropped::Unexpected),
            },
            _ => self.drop(ClientDropped::Unexpected),
        }
    }
}
