//! The datagrams of a session as bytes: [`Datagram::encode`] and the validating
//! [`Datagram::decode`]. The layouts are drawn in the [module documentation](super).
//!
//! Decoding never panics and never allocates more than [`MAX_CLASSES`] checksums or
//! [`MAX_LEVELS`] sublevels: every length is checked against what is left before it is read,
//! trailing bytes are refused (except a hello's zero padding), and unknown type bytes, reasons
//! and statuses are errors.

use super::levels::{put_levels, read_levels, MAX_LEVELS};
use crate::net::SublevelId;
use std::fmt;

/// The protocol version a hello carries; a server refuses any other.
/// Version 2: hellos carry a join ticket field (empty, or [`TICKET_BYTES`] bytes), and a session
/// may be sealed ([`super::seal`]). Version 3: sealed datagrams are AES-256-GCM under a key per
/// session and direction (version 2 sealed them with XChaCha20-Poly1305 under the ticket's keys).
/// Version 4: level visibility ([`super::levels`]: the levels datagram and its ack).
pub const PROTOCOL_VERSION: u16 = 4;

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
    /// The address already has a session started by another hello.
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
    /// The server took it from another address (a copy of someone's ticket): get a new one.
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
                write!(f, "layout checksum mismatch at class {class}: the builds do not interoperate")
            }
            RejectReason::Full => write!(f, "the server is full"),
            RejectReason::AddressInUse => write!(f, "this address already has a session"),
            RejectReason::Ticket(TicketRefusal::Missing) => write!(f, "the server needs a join ticket"),
            RejectReason::Ticket(TicketRefusal::NotSealed) => write!(f, "the server does not take join tickets"),
            RejectReason::Ticket(TicketRefusal::Forged) => write!(f, "the join ticket is not the server's"),
            RejectReason::Ticket(TicketRefusal::Expired) => write!(f, "the join ticket has expired"),
            RejectReason::Ticket(TicketRefusal::InUse) => write!(f, "the join ticket is in use from another address"),
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

/// A server's answer to a digest request.
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

/// Reads fields front to back; every read checks what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    kind: u8,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or(FrameError::Truncated(self.kind))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, FrameError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, FrameError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.bytes[self.at..];
        self.at = self.bytes.len();
        s
    }
    fn checksums(&mut self) -> Result<Vec<u64>, FrameError> {
        let n = self.u16()? as usize;
        if n > MAX_CLASSES {
            return Err(FrameError::TooManyClasses(n));
        }
        // The bytes are there before anything is allocated for them.
        if self.bytes.len() - self.at < 8 * n {
            return Err(FrameError::Truncated(self.kind));
        }
        (0..n).map(|_| self.u64()).collect()
    }
    fn end(&self) -> Result<(), FrameError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(FrameError::Trailing(self.kind))
        }
    }
}

fn put_checksums(out: &mut Vec<u8>, checksums: &[u64]) {
    // Encoding is for our own values: more than MAX_CLASSES is a caller bug the decoder of the
    // other side refuses; the count is clamped so the bytes stay self-consistent.
    let n = checksums.len().min(MAX_CLASSES);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    for c in &checksums[..n] {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

fn reject_code(r: RejectReason) -> (u8, u16) {
    match r {
        RejectReason::Version => (1, 0),
        RejectReason::ClassCount { server } => (2, server),
        RejectReason::Checksum { class } => (3, class),
        RejectReason::Full => (4, 0),
        RejectReason::AddressInUse => (5, 0),
        RejectReason::Ticket(t) => (
            6,
            match t {
                TicketRefusal::Missing => 0,
                TicketRefusal::NotSealed => 1,
                TicketRefusal::Forged => 2,
                TicketRefusal::Expired => 3,
                TicketRefusal::InUse => 4,
                TicketRefusal::OtherServer => 5,
            },
        ),
    }
}

fn status_code(s: DigestStatus) -> u8 {
    match s {
        DigestStatus::Live => 0,
        DigestStatus::Busy => 1,
        DigestStatus::Ready => 2,
    }
}

fn disconnect_code(r: DisconnectReason) -> u8 {
    match r {
        DisconnectReason::Closed => 0,
        DisconnectReason::TimedOut => 1,
    }
}

impl Datagram<'_> {
    /// The datagram's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        match self {
            Datagram::Hello(h) => {
                out.push(if h.cookie.is_some() { kind::HELLO_COOKIE } else { kind::HELLO });
                out.extend_from_slice(&h.version.to_le_bytes());
                out.extend_from_slice(&h.nonce.to_le_bytes());
                if let Some(c) = h.cookie {
                    out.extend_from_slice(&c.to_le_bytes());
                }
                put_checksums(&mut out, &h.checksums);
                // A ticket of another length is a caller bug the other side refuses.
                let ticket = h.ticket.as_deref().unwrap_or_default();
                out.extend_from_slice(&(ticket.len() as u16).to_le_bytes());
                out.extend_from_slice(ticket);
                if out.len() < MIN_HELLO_BYTES {
                    out.resize(MIN_HELLO_BYTES, 0);
                }
            }
            Datagram::Challenge { nonce, cookie } => {
                out.push(kind::CHALLENGE);
                out.extend_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(&cookie.to_le_bytes());
            }
            Datagram::Welcome { nonce, token, tick_rate, checksums } => {
                out.push(kind::WELCOME);
                out.extend_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&tick_rate.to_le_bytes());
                put_checksums(&mut out, checksums);
            }
            Datagram::Reject { nonce, reason, server_version } => {
                let (code, detail) = reject_code(*reason);
                out.push(kind::REJECT);
                out.extend_from_slice(&nonce.to_le_bytes());
                out.push(code);
                out.extend_from_slice(&server_version.to_le_bytes());
                out.extend_from_slice(&detail.to_le_bytes());
            }
            Datagram::Packet { token, payload } | Datagram::Feedback { token, payload } => {
                out.reserve(payload.len() + SESSION_HEADER_BYTES);
                out.push(if matches!(self, Datagram::Packet { .. }) { kind::PACKET } else { kind::FEEDBACK });
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(payload);
            }
            Datagram::DigestRequest { token, id } => {
                out.push(kind::DIGEST_REQUEST);
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&id.to_le_bytes());
            }
            Datagram::DigestAnswer { token, answer } => {
                out.push(kind::DIGEST_ANSWER);
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&answer.id.to_le_bytes());
                out.push(status_code(answer.status));
                out.extend_from_slice(&answer.seq.to_le_bytes());
                out.extend_from_slice(&answer.actors.to_le_bytes());
                out.extend_from_slice(&answer.digest.to_le_bytes());
            }
            Datagram::Disconnect { token, reason } => {
                out.push(kind::DISCONNECT);
                out.extend_from_slice(&token.to_le_bytes());
                out.push(disconnect_code(*reason));
            }
            Datagram::Levels { token, seq, levels } => {
                out.push(kind::LEVELS);
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&seq.to_le_bytes());
                put_levels(&mut out, levels);
            }
            Datagram::LevelsAck { token, seq } => {
                out.push(kind::LEVELS_ACK);
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&seq.to_le_bytes());
            }
        }
        out
    }
}

impl<'a> Datagram<'a> {
    /// Decodes and validates one datagram (see the module documentation for what is refused).
    pub fn decode(bytes: &'a [u8]) -> Result<Datagram<'a>, FrameError> {
        let (&t, _) = bytes.split_first().ok_or(FrameError::Empty)?;
        if bytes.len() > MAX_DATAGRAM {
            return Err(FrameError::TooLong(bytes.len()));
        }
        let mut r = Reader { bytes, at: 1, kind: t };
        let d = match t {
            kind::HELLO | kind::HELLO_COOKIE => {
                if bytes.len() < MIN_HELLO_BYTES {
                    return Err(FrameError::BadPadding);
                }
                let version = r.u16()?;
                let nonce = r.u64()?;
                let cookie = if t == kind::HELLO_COOKIE { Some(r.u64()?) } else { None };
                let checksums = r.checksums()?;
                let ticket = match r.u16()? as usize {
                    0 => None,
                    TICKET_BYTES => Some(r.take(TICKET_BYTES)?.to_vec()),
                    n => return Err(FrameError::BadTicket(n)),
                };
                if r.rest().iter().any(|&b| b != 0) {
                    return Err(FrameError::BadPadding);
                }
                Datagram::Hello(Hello { version, nonce, cookie, checksums, ticket })
            }
            kind::CHALLENGE => Datagram::Challenge { nonce: r.u64()?, cookie: r.u64()? },
            kind::WELCOME => {
                Datagram::Welcome { nonce: r.u64()?, token: r.u64()?, tick_rate: r.u16()?, checksums: r.checksums()? }
            }
            kind::REJECT => {
                let nonce = r.u64()?;
                let code = r.u8()?;
                let server_version = r.u16()?;
                let detail = r.u16()?;
                let reason = match code {
                    1 => RejectReason::Version,
                    2 => RejectReason::ClassCount { server: detail },
                    3 => RejectReason::Checksum { class: detail },
                    4 => RejectReason::Full,
                    5 => RejectReason::AddressInUse,
                    6 => RejectReason::Ticket(match detail {
                        0 => TicketRefusal::Missing,
                        1 => TicketRefusal::NotSealed,
                        2 => TicketRefusal::Forged,
                        3 => TicketRefusal::Expired,
                        4 => TicketRefusal::InUse,
                        5 => TicketRefusal::OtherServer,
                        _ => return Err(FrameError::BadCode(6)),
                    }),
                    c => return Err(FrameError::BadCode(c)),
                };
                Datagram::Reject { nonce, reason, server_version }
            }
            kind::PACKET | kind::FEEDBACK => {
                let token = r.u64()?;
                let payload = r.rest();
                if payload.is_empty() || payload.len() > MAX_PAYLOAD {
                    return Err(FrameError::BadPayload(payload.len()));
                }
                if t == kind::PACKET {
                    Datagram::Packet { token, payload }
                } else {
                    Datagram::Feedback { token, payload }
                }
            }
            kind::DIGEST_REQUEST => Datagram::DigestRequest { token: r.u64()?, id: r.u32()? },
            kind::DIGEST_ANSWER => {
                let token = r.u64()?;
                let id = r.u32()?;
                let status = match r.u8()? {
                    0 => DigestStatus::Live,
                    1 => DigestStatus::Busy,
                    2 => DigestStatus::Ready,
                    c => return Err(FrameError::BadCode(c)),
                };
                let answer = DigestAnswer { id, status, seq: r.u32()?, actors: r.u32()?, digest: r.u64()? };
                Datagram::DigestAnswer { token, answer }
            }
            kind::DISCONNECT => {
                let token = r.u64()?;
                let reason = match r.u8()? {
                    0 => DisconnectReason::Closed,
                    1 => DisconnectReason::TimedOut,
                    c => return Err(FrameError::BadCode(c)),
                };
                Datagram::Disconnect { token, reason }
            }
            kind::LEVELS => {
                let (token, seq) = (r.u64()?, r.u32()?);
                Datagram::Levels { token, seq, levels: read_levels(t, r.rest())? }
            }
            kind::LEVELS_ACK => Datagram::LevelsAck { token: r.u64()?, seq: r.u32()? },
            other => return Err(FrameError::UnknownType(other)),
        };
        r.end()?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Datagram<'static>> {
        vec![
            Datagram::Hello(Hello { version: 1, nonce: 7, cookie: None, checksums: vec![1, 2, 3], ticket: None }),
            Datagram::Hello(Hello {
                version: 1,
                nonce: 7,
                cookie: Some(9),
                checksums: vec![u64::MAX; 8],
                ticket: None,
            }),
            Datagram::Hello(Hello {
                version: PROTOCOL_VERSION,
                nonce: 7,
                cookie: Some(9),
                checksums: vec![3; 2],
                ticket: Some(vec![0xab; TICKET_BYTES]),
            }),
            Datagram::Challenge { nonce: 7, cookie: 9 },
            Datagram::Welcome { nonce: 7, token: 11, tick_rate: 30, checksums: vec![5] },
            Datagram::Reject { nonce: 7, reason: RejectReason::Checksum { class: 3 }, server_version: 1 },
            Datagram::Reject {
                nonce: 7,
                reason: RejectReason::Ticket(TicketRefusal::Expired),
                server_version: PROTOCOL_VERSION,
            },
            Datagram::Packet { token: 11, payload: &[1, 2, 3] },
            Datagram::Feedback { token: 11, payload: &[4] },
            Datagram::DigestRequest { token: 11, id: 2 },
            Datagram::DigestAnswer {
                token: 11,
                answer: DigestAnswer { id: 2, status: DigestStatus::Ready, seq: 40, actors: 3, digest: 99 },
            },
            Datagram::Disconnect { token: 11, reason: DisconnectReason::TimedOut },
            Datagram::Levels { token: 11, seq: 3, levels: vec![SublevelId(1), SublevelId(700)] },
            Datagram::Levels { token: 11, seq: 0, levels: vec![] },
            Datagram::LevelsAck { token: 11, seq: 3 },
        ]
    }

    #[test]
    fn every_datagram_round_trips_and_every_truncation_is_refused() {
        for d in samples() {
            let bytes = d.encode();
            assert_eq!(Datagram::decode(&bytes).as_ref(), Ok(&d));
            for n in 0..bytes.len() {
                // A shorter hello is still a hello only while its padding is what was cut.
                let cut = Datagram::decode(&bytes[..n]);
                if let Ok(c) = cut {
                    assert!(matches!(d, Datagram::Hello(_) | Datagram::Packet { .. } | Datagram::Feedback { .. }));
                    assert!(n >= MIN_HELLO_BYTES || !matches!(c, Datagram::Hello(_)));
                }
            }
        }
    }

    #[test]
    fn sizes_are_what_the_constants_say() {
        let s = samples();
        assert_eq!(s[0].encode().len(), MIN_HELLO_BYTES);
        assert_eq!(s[3].encode().len(), CHALLENGE_BYTES);
        assert_eq!(s[5].encode().len(), REJECT_BYTES);
        assert_eq!(s[6].encode().len(), REJECT_BYTES);
        assert_eq!(s[10].encode().len(), DIGEST_ANSWER_BYTES);
    }

    #[test]
    fn limits_are_enforced_at_their_edges() {
        let hello = |n: usize| {
            Datagram::Hello(Hello { version: 1, nonce: 0, cookie: None, checksums: vec![0; n], ticket: None })
        };
        assert!(Datagram::decode(&hello(MAX_CLASSES).encode()).is_ok());
        let mut over = hello(MAX_CLASSES).encode();
        over[11..13].copy_from_slice(&(MAX_CLASSES as u16 + 1).to_le_bytes());
        over.extend_from_slice(&[0; 8]);
        assert_eq!(Datagram::decode(&over), Err(FrameError::TooManyClasses(MAX_CLASSES + 1)));
        let big = vec![7u8; MAX_PAYLOAD];
        assert!(Datagram::decode(&Datagram::Packet { token: 1, payload: &big }.encode()).is_ok());
        let mut too_big = Datagram::Packet { token: 1, payload: &big }.encode();
        too_big.push(0);
        assert_eq!(Datagram::decode(&too_big), Err(FrameError::BadPayload(MAX_PAYLOAD + 1)));
        too_big.resize(MAX_DATAGRAM + 1, 0);
        assert_eq!(Datagram::decode(&too_big), Err(FrameError::TooLong(MAX_DATAGRAM + 1)));
        let mut ticketed = hello(0).encode();
        ticketed[13..15].copy_from_slice(&(TICKET_BYTES as u16 - 1).to_le_bytes());
        assert_eq!(Datagram::decode(&ticketed), Err(FrameError::BadTicket(TICKET_BYTES - 1)));
        assert_eq!(Datagram::decode(&[kind::PACKET, 0, 0, 0, 0, 0, 0, 0, 0]), Err(FrameError::BadPayload(0)));
        let mut padded = hello(0).encode();
        *padded.last_mut().unwrap() = 1;
        assert_eq!(Datagram::decode(&padded), Err(FrameError::BadPadding));
        assert_eq!(Datagram::decode(&[]), Err(FrameError::Empty));
        assert_eq!(Datagram::decode(&[0xee]), Err(FrameError::UnknownType(0xee)));
    }
}
