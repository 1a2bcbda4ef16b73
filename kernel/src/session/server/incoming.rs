//! What [`SessionServer::handle`](super::SessionServer::handle) hands the game: what to do with
//! a datagram ([`Incoming`]), why one was dropped ([`Dropped`]), a client waiting to join
//! ([`JoinRequest`]), and the server's counters ([`ServerStats`]).

use crate::ids::ConnectionId;
use crate::net::SublevelId;
use crate::session::ticket::TicketClaims;
use std::borrow::Cow;
use std::net::SocketAddr;

/// What the game does with a datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// Send these bytes back to the sender.
    Reply(Vec<u8>),
    /// A client proved its address and has the server's layouts: open a connection for it and
    /// call [`SessionServer::accept`](super::SessionServer::accept) (or
    /// [`SessionServer::refuse`](super::SessionServer::refuse)).
    Join(JoinRequest),
    /// Kernel feedback for `NetDriver::receive_feedback` (the client was heard from).
    Feedback {
        /// The session's connection.
        conn: ConnectionId,
        /// The feedback (opened, in a sealed session).
        payload: Cow<'a, [u8]>,
    },
    /// The client asks for the digest of what it should hold: answer with
    /// [`SessionServer::digest_answer`](super::SessionServer::digest_answer).
    DigestRequest {
        /// The session's connection.
        conn: ConnectionId,
        /// The request's id.
        id: u32,
    },
    /// The client's loaded sublevels changed ([`crate::session::levels`]): call
    /// `NetDriver::set_loaded_sublevels(conn, &levels)`, then send `ack` back (a levels
    /// datagram with nothing newer is answered as [`Incoming::Reply`], with no work for the game).
    Levels {
        /// The session's connection.
        conn: ConnectionId,
        /// Every sublevel the client has loaded (beside the persistent level), in order.
        levels: Vec<SublevelId>,
        /// The ack to send to the client.
        ack: Vec<u8>,
    },
    /// The client left: its session is gone; remove its connection. Also when the client
    /// restarted: a hello with a good cookie and a new nonce from the session's address (a
    /// sealed session's with a new ticket of its player) ends the old session, and the
    /// client's next hello joins.
    Disconnected {
        /// The session's connection.
        conn: ConnectionId,
    },
    /// Nothing to do (counted in [`ServerStats`]).
    Dropped(Dropped),
}

/// Why a datagram was dropped without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Not a datagram ([`crate::session::frame::FrameError`]).
    Malformed,
    /// A session datagram from an address without a session.
    UnknownAddress,
    /// A session datagram with another session's token.
    BadToken,
    /// A datagram only a server sends.
    Unexpected,
    /// A sealed datagram that does not open with its session's key (or a sealed one to a
    /// server that does not seal).
    Forged,
    /// A sealed datagram whose counter came before.
    Replayed,
    /// A plain session datagram in a sealed session.
    Unsealed,
    /// A digest request sooner than [`MIN_DIGEST_INTERVAL`](super::MIN_DIGEST_INTERVAL) after
    /// the session's last one that was passed on (each answer may cost the game a digest of
    /// everything the client holds), or a new level set sooner than
    /// [`MIN_LEVELS_INTERVAL`](super::MIN_LEVELS_INTERVAL) after the last passed on (not
    /// acknowledged: the client sends it again).
    Throttled,
}

/// A client waiting for [`SessionServer::accept`](super::SessionServer::accept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinRequest {
    /// Where it is.
    pub addr: SocketAddr,
    /// Its hello's nonce.
    pub nonce: u64,
    /// What its join ticket says (a sealing server's joins all have one): the player the
    /// backend issued it to, for the game to map the connection to. One player may hold
    /// several tickets (each join with its own): what a second session of a player means is
    /// the game's to decide.
    pub ticket: Option<TicketClaims>,
}

/// Counters of a [`SessionServer`](super::SessionServer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Hellos answered with a challenge.
    pub challenges: u64,
    /// Hellos answered with a reject.
    pub rejects: u64,
    /// Sessions created.
    pub joins: u64,
    /// Welcomes sent again (the first was lost).
    pub welcomes_repeated: u64,
    /// Datagrams dropped: malformed.
    pub malformed: u64,
    /// Hellos with a cookie this server did not give (or gave too long ago), answered with a
    /// fresh challenge.
    pub bad_cookies: u64,
    /// Datagrams dropped: from an address without a session.
    pub unknown_address: u64,
    /// Datagrams dropped: wrong token.
    pub bad_token: u64,
    /// Datagrams dropped: of a kind only a server sends.
    pub unexpected: u64,
    /// Sessions ended by a new handshake from their address (the client restarted: see
    /// [`Incoming::Disconnected`]).
    pub restarts: u64,
    /// Sealed sessions moved to a new address: a datagram of theirs opened from there (a NAT
    /// gave the client a new mapping).
    pub moved: u64,
    /// Sessions ended (by the client, by
    /// [`SessionServer::expire`](super::SessionServer::expire) or by the game).
    pub ended: u64,
    /// Datagrams dropped: sealed, and did not open.
    pub forged: u64,
    /// Datagrams dropped: sealed, counter seen before.
    pub replayed: u64,
    /// Datagrams dropped: plain, in a sealed session.
    pub unsealed: u64,
    /// Digest requests dropped: sooner than [`MIN_DIGEST_INTERVAL`](super::MIN_DIGEST_INTERVAL)
    /// after the last passed on.
    pub digests_throttled: u64,
    /// Levels datagrams with no newer number than the session's last applied: answered with
    /// an ack, not passed on.
    pub levels_repeated: u64,
    /// New level sets dropped: sooner than [`MIN_LEVELS_INTERVAL`](super::MIN_LEVELS_INTERVAL)
    /// after the last passed on.
    pub levels_throttled: u64,
}

impl Incoming<'_> {
    /// The same, owning its bytes.
    pub(super) fn into_static(self) -> Incoming<'static> {
        match self {
            Incoming::Reply(b) => Incoming::Reply(b),
            Incoming::Join(j) => Incoming::Join(j),
            Incoming::Feedback { conn, payload } => {
                Incoming::Feedback { conn, payload: Cow::Owned(payload.into_owned()) }
            }
            Incoming::DigestRequest { conn, id } => Incoming::DigestRequest { conn, id },
            Incoming::Levels { conn, levels, ack } => Incoming::Levels { conn, levels, ack },
            Incoming::Disconnected { conn } => Incoming::Disconnected { conn },
            Incoming::Dropped(d) => Incoming::Dropped(d),
        }
    }
}
