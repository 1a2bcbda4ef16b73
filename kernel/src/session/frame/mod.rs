//! The datagrams of a session as bytes: what each carries (here) and their byte form — the
//! encoder [`Datagram::encode`] and the validating decoder [`Datagram::decode`] in `codec.rs`.
//! The layouts are drawn in the [module documentation](super).
//!
//! Decoding never panics and never allocates more than [`MAX_CLASSES`] checksums or
//! [`MAX_LEVELS`] sublevels: every length is checked against what is left before it is read,
//! trailing bytes are refused (except a hello's zero padding), and unknown type bytes, reasons
//! and statuses are errors.

use super::levels::MAX_LEVELS;
use crate::net::SublevelId;
use std::fmt;

mod codec;

/// The protocol version a hello carries; a server refuses any other.
/// Version 2: hellos carry a join ticket field (empty, or [`TICKET_BYTES`] bytes), and a session
/// may be sealed ([`super::seal`]). Version 3: sealed datagrams are AES-256-GCM under a key per
/// session and direction (version 2 sealed them with XChaCha20-Poly1305 under the ticket's keys).
/// Version 4: level visibility ([`super::levels`]: the levels datagram and its ack).
/// Version 5: remote procedure calls (`crate::wire::rpc`): in the kernel's packets an export's body
/// now starts with a 0 bit, a call's with a 1, and an export of GUID 0 acknowledges a client's
/// calls; a kernel feedback may end with the client's Server calls.
/// Version 6: a disconnect may give reason 2, [`DisconnectReason::ReliableOverflow`] (a version 5
/// client would refuse the datagram as a bad code and learn of the end only by its timeout).
pub const PROTOCOL_VERSION: u16 = 6;

/// The smallest hello (with or without cookie) a server answers: the hello is padded with zeros
/// to this size, so a reply to it (a challenge, [`CHALLENGE_BYTES`], or a reject,
/// [`REJECT_BYTES`]) is never larger than the request that caused it — a spoofed hello cannot
/// make the server an amplifier.
pub const MIN_HELLO_BYTES: usize = 48;

/// Bytes of a challenge.
pub const CHALLENGE_BYTES: usize = 1 + 8 + 8;

/// Bytes of a reject.
pub const REJECT_BYTES: usize = 1 + 8 + 1 + 2 + 2;

/// Bytes of a digest answer.
pub const DIGEST_ANSWER_BYTES: usize = 1 + 8 + 4 + 1 + 4 + 4 + 8;

/// Most classes a hello or welcome may list.
pub const MAX_CLASSES: usize = 1000;

/// Most payload bytes of a packet or feedback datagram (the kernel's largest MTU).
pub const MAX_PAYLOAD: usize = crate::wire::packet::MAX_MTU;

/// Bytes of the header of a packet or feedback datagram (type and token).
pub const SESSION_HEADER_BYTES: usize = 1 + 8;

/// The largest plain datagram: a packet of [`MAX_PAYLOAD`] bytes with its header (a hello of
/// [`MAX_CLASSES`] checksums and a ticket is smaller).
pub const MAX_PLAIN_DATAGRAM: usize = SESSION_HEADER_BYTES + MAX_PAYLOAD;

/// The largest datagram of a session: the largest plain one, sealed
/// ([`SEAL_OVERHEAD`](super::seal::SEAL_OVERHEAD) more). A transport's receive buffer needs
/// this much.
pub const MAX_DATAGRAM: usize = MAX_PLAIN_DATAGRAM + super::seal::SEAL_OVERHEAD;

pub use super::ticket::TICKET_BYTES;

const _: () = assert!(CHALLENGE_BYTES <= MIN_HELLO_BYTES && REJECT_BYTES <= MIN_HELLO_BYTES);
const _: () = assert!(1 + 2 + 8 + 8 + 2 + 8 * MAX_CLASSES + 2 + TICKET_BYTES <= MAX_PLAIN_DATAGRAM);

/// The type byte, first in every datagram.
pub mod kind {
    /// Client → server: version, nonce, layout checksums, padding.
    pub const HELLO: u8 = 0x01;
    /// Server → client: the cookie to echo (stateless).
    pub const CHALLENGE: u8 = 0x02;
    /// Client → server: the hello again, with the cookie.
    pub const HELLO_COOKIE: u8 = 0x03;
    /// Server → client: the session token and the server's checksums.
    pub const WELCOME: u8 = 0x04;
    /// Server → client: refused, with a reason.
    pub const REJECT: u8 = 0x05;
    /// Server → client: a kernel packet.
    pub const PACKET: u8 = 0x10;
    /// Client → server: kernel feedback.
    pub const FEEDBACK: u8 = 0x11;
    /// Client → server: "what should I hold?"
    pub const DIGEST_REQUEST: u8 = 0x12;
    /// Server → client: the digest of what the connection should hold.
    pub const DIGEST_ANSWER: u8 = 0x13;
    /// Either way: the session ends.
    pub const DISCONNECT: u8 = 0x14;
    /// Client → server: the sublevels the client has loaded ([`super::super::levels`]).
    pub const LEVELS: u8 = 0x15;
    /// Server → client: the newest levels number applied.
    pub const LEVELS_ACK: u8 = 0x16;
}

/// A hello (the first datagram of a client, and its echo of the cookie).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the client.
    pub version: u16,
    /// A random number of the client, echoed by every handshake reply (a reply without it is
    /// not for this client).
    pub nonce: u64,
    /// The cookie of the server's challenge: `None` in the first hello.
    pub cookie: Option<u64>,
    /// The client's layout checksums, in class-id order.
    pub checksums: Vec<u64>,
    /// The join ticket of a sealed session ([`super::ticket`]), as the backend issued it.
    pub ticket: Option<Vec<u8>>,
}

/// Why a server refused a hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// The client speaks another protocol version.
    Version,
    /// The client has another number of classes (`server`: the server's count).
    ClassCount {
        /// The server's class count.
        server: u16,
    },
    /// A layout differs (the first class whose checksum differs).
    Checksum {
        /// Class id.
        class: u16,
    },
    /// The server holds as many sessions as it may (or has no room in its game).
    Full,
    /// The address already has a sealed session started by another hello, and this one's
    /// ticket may not end it: a restarted client of a sealed session joins again with a new
    /// ticket of its player (or once the old session's idle timeout ended it).
    AddressInUse,
    /// The join ticket: see [`TicketRefusal`].
    Ticket(TicketRefusal),
}

/// What was wrong with a hello's join ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TicketRefusal {
    /// The server seals its sessions and the hello had no ticket.
    Missing,
    /// The server does not seal its sessions: a client that asked for a sealed one is told so
    /// rather than left on a plain one.
    NotSealed,
    /// It does not open with the server's key (forged, altered, another deployment's).
    Forged,
    /// It has expired.
    Expired,
    /// A live session at another address holds it (a copy of someone's ticket, or the same
    /// client joining from a new port while its old session lives): get a new one, or join
    /// once that session ended.
    InUse,
    /// It was issued for another game server of the deployment.
    OtherServer,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::Version => write!(f, "protocol version mismatch"),
            RejectReason::ClassCount { server } => write!(f, "class count mismatch (the server has {server})"),
            RejectReason::Checksum { class } => {
                write!(
                    f,
                    "layout checksum mismatch at class {class}: the builds do not interoperate, or the client lists \
                     the classes in another order than the server registered them (`NetDriver::layouts`)"
                )
            }
            RejectReason::Full => write!(f, "the server is full"),
            RejectReason::AddressInUse => write!(
                f,
                "this address already has a sealed session: join again with a new ticket, or after its idle timeout"
            ),
            RejectReason::Ticket(TicketRefusal::Missing) => write!(f, "the server needs a join ticket"),
            RejectReason::Ticket(TicketRefusal::NotSealed) => write!(f, "the server does not take join tickets"),
            RejectReason::Ticket(TicketRefusal::Forged) => write!(f, "the join ticket is not the server's"),
            RejectReason::Ticket(TicketRefusal::Expired) => write!(f, "the join ticket has expired"),
            RejectReason::Ticket(TicketRefusal::InUse) => {
                write!(f, "the join ticket is held by a live session at another address")
            }
            RejectReason::Ticket(TicketRefusal::OtherServer) => write!(f, "the join ticket is for another server"),
        }
    }
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectReason {
    /// The sender closes it (the client leaves, the server stops).
    Closed,
    /// Nothing was heard for too long.
    TimedOut,
    /// The server's reliable calls for this client overflowed: it acknowledged none of the last
    /// [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS), and the driver ended the
    /// connection ([`crate::net::ReliableOverflow::Close`], UE's way). Since protocol version 6.
    ReliableOverflow,
}

/// Where the server's answer to a digest request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestStatus {
    /// The world is still changing: no digest.
    Live,
    /// Packets are in flight to this client: ask again.
    Busy,
    /// The digest of what the client should hold, once it has every packet up to `seq`.
    Ready,
}

/// A server's answer to a digest request. When `Ready`, compare it with the client's own
/// digest ([`crate::client::client_digest`]) once the client's newest packet is `seq`
/// (`ClientWorld::highest_received`): the server answers only when nothing more is in flight,
/// so a client past `seq` got packets written after the answer (ask again), and one short of it
/// has packets still to come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DigestAnswer {
    /// The request's id.
    pub id: u32,
    /// See [`DigestStatus`]; `seq`, `actors` and `digest` mean something only when `Ready`.
    pub status: DigestStatus,
    /// The sequence number of the last packet the server sent the client (0: none).
    pub seq: u32,
    /// Actors the client should hold.
    pub actors: u32,
    /// Their digest ([`super::digest`]).
    pub digest: u64,
}

/// One datagram of a session, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// [`kind::HELLO`] or, with a cookie, [`kind::HELLO_COOKIE`].
    Hello(Hello),
    /// [`kind::CHALLENGE`].
    Challenge {
        /// The hello's nonce.
        nonce: u64,
        /// The cookie to echo.
        cookie: u64,
    },
    /// [`kind::WELCOME`].
    Welcome {
        /// The hello's nonce.
        nonce: u64,
        /// The session token every later datagram carries.
        token: u64,
        /// Server ticks per second.
        tick_rate: u16,
        /// The server's layout checksums (what `ClientWorld::new` checks).
        checksums: Vec<u64>,
    },
    /// [`kind::REJECT`].
    Reject {
        /// The hello's nonce.
        nonce: u64,
        /// Why.
        reason: RejectReason,
        /// The server's protocol version.
        server_version: u16,
    },
    /// [`kind::PACKET`]: a kernel packet for `ClientWorld::receive`.
    Packet {
        /// The session token.
        token: u64,
        /// The packet.
        payload: &'a [u8],
    },
    /// [`kind::FEEDBACK`]: kernel feedback for `NetDriver::receive_feedback`.
    Feedback {
        /// The session token.
        token: u64,
        /// The feedback.
        payload: &'a [u8],
    },
    /// [`kind::DIGEST_REQUEST`].
    DigestRequest {
        /// The session token.
        token: u64,
        /// Echoed by the answer.
        id: u32,
    },
    /// [`kind::DIGEST_ANSWER`].
    DigestAnswer {
        /// The session token.
        token: u64,
        /// The answer.
        answer: DigestAnswer,
    },
    /// [`kind::DISCONNECT`].
    Disconnect {
        /// The session token.
        token: u64,
        /// Why.
        reason: DisconnectReason,
    },
    /// [`kind::LEVELS`]: every sublevel the client has loaded, numbered ([`super::levels`]).
    Levels {
        /// The session token.
        token: u64,
        /// Raised by the client with every change of the set.
        seq: u32,
        /// The loaded sublevels, strictly increasing, without the persistent level.
        levels: Vec<SublevelId>,
    },
    /// [`kind::LEVELS_ACK`].
    LevelsAck {
        /// The session token.
        token: u64,
        /// The newest levels number the server applied.
        seq: u32,
    },
}

/// Why bytes are not a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// No bytes.
    Empty,
    /// More than [`MAX_DATAGRAM`] bytes.
    TooLong(usize),
    /// A type byte no datagram has.
    UnknownType(u8),
    /// Fewer bytes than the datagram's fields need.
    Truncated(u8),
    /// Bytes after the last field.
    Trailing(u8),
    /// A hello shorter than [`MIN_HELLO_BYTES`], or padded with something else than zeros.
    BadPadding,
    /// A class count above [`MAX_CLASSES`].
    TooManyClasses(usize),
    /// A packet or feedback without payload, or with more than [`MAX_PAYLOAD`] bytes.
    BadPayload(usize),
    /// A reject reason, disconnect reason or digest status that does not exist.
    BadCode(u8),
    /// A hello's ticket of another length than [`TICKET_BYTES`] (0: none).
    BadTicket(usize),
    /// A levels datagram listing more than [`MAX_LEVELS`] sublevels.
    TooManyLevels(usize),
    /// A levels datagram whose list is not strictly increasing, or names the persistent level.
    UnorderedLevels,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Empty => write!(f, "empty datagram"),
            FrameError::TooLong(n) => write!(f, "datagram of {n} bytes (at most {MAX_DATAGRAM})"),
            FrameError::UnknownType(t) => write!(f, "unknown datagram type {t:#04x}"),
            FrameError::Truncated(t) => write!(f, "datagram of type {t:#04x} is truncated"),
            FrameError::Trailing(t) => write!(f, "datagram of type {t:#04x} has trailing bytes"),
            FrameError::BadPadding => {
                write!(f, "hello shorter than {MIN_HELLO_BYTES} bytes or padded with other bytes than zeros")
            }
            FrameError::TooManyClasses(n) => write!(f, "{n} classes (at most {MAX_CLASSES})"),
            FrameError::BadPayload(n) => write!(f, "payload of {n} bytes (1..={MAX_PAYLOAD})"),
            FrameError::BadCode(c) => write!(f, "unknown reason or status code {c}"),
            FrameError::BadTicket(n) => write!(f, "join ticket of {n} bytes (0 or {TICKET_BYTES})"),
            FrameError::TooManyLevels(n) => write!(f, "{n} sublevels (at most {MAX_LEVELS})"),
            FrameError::UnorderedLevels => {
                write!(f, "sublevels not strictly increasing, or the persistent level listed")
            }
        }
    }
}

impl std::error::Error for FrameError {}
