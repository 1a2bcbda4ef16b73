//! Sessions over datagrams: a stateless handshake, a session token, and framing that lets a
//! transport tell every kind of datagram apart on one socket — and, with a join ticket from the
//! game's backend, sealed sessions that nobody on the path can read, forge, alter or replay
//! ([`ticket`], [`seal`]). The kernel's packets and feedback ride inside; the transport (a
//! `UdpSocket`, anything that moves datagrams) is the game's.
//!
//! # Handshake (UE's stateless handshake)
//! ```text
//! client                                   server
//!   hello(version, nonce, checksums) ──→   version/classes/checksums differ → reject(reason)
//!                                          else challenge: cookie = H_k(addr, nonce, period)
//!                                          — nothing is kept: a spoofed hello costs the
//!                                          server a hash and gets a reply no larger than
//!                                          itself (hellos are padded to MIN_HELLO_BYTES)
//!   ←── challenge(nonce, cookie)
//!   hello+cookie ──────────────────────→   cookie checked (this period or the last): the
//!                                          client can receive at its address; now the game
//!                                          opens a connection (NetDriver::add_connection)
//!   ←── welcome(nonce, token, tick rate,   the client builds ClientWorld::new(layouts,
//!        server checksums)                 checksums); the token is a random u64
//!   ←── packet(token, …) / feedback(token, …) ──→   every later datagram carries the token
//! ```
//!
//! # Datagrams
//! One type byte, then fields, little-endian:
//! ```text
//! 0x01 hello          | 01 | version u16 | nonce u64 | n u16 | checksum u64 × n | ticket length u16 (0 or 129) | ticket | 00… to 48 bytes |
//! 0x02 challenge      | 02 | nonce u64 | cookie u64 |                                    17 bytes
//! 0x03 hello+cookie   | 03 | version u16 | nonce u64 | cookie u64 | n u16 | checksum u64 × n | ticket length u16 | ticket | 00… to 48 |
//! 0x04 welcome        | 04 | nonce u64 | token u64 | tick rate u16 | n u16 | checksum u64 × n |
//! 0x05 reject         | 05 | nonce u64 | reason u8 | server version u16 | detail u16 | 14 bytes
//!                       reason: 1 version, 2 class count (detail: the server's),
//!                       3 checksum (detail: the first class that differs), 4 full,
//!                       5 address in use, 6 ticket (detail: 0 missing, 1 server does not
//!                       seal, 2 forged or another deployment's, 3 expired, 4 held by a live session at another
//!                       address, 5 for another server)
//! 0x10 packet         | 10 | token u64 | kernel packet (1..=8192 bytes) |
//! 0x11 feedback       | 11 | token u64 | kernel feedback (1..=8192 bytes) |
//! 0x12 digest request | 12 | token u64 | id u32 |
//! 0x13 digest answer  | 13 | token u64 | id u32 | status u8 | seq u32 | actors u32 | digest u64 |
//!                       status: 0 live (world still changing), 1 busy (packets in flight),
//!                       2 ready (digest of what the client should hold once it has every
//!                       packet up to seq)
//! 0x14 disconnect     | 14 | token u64 | reason u8 (0 closed, 1 timed out) |
//! 0x15 levels         | 15 | token u64 | seq u32 | n u16 | sublevel u16 × n |   (see [`levels`])
//! 0x16 levels ack     | 16 | token u64 | seq u32 |
//! 0x84, 0x90…0x96     the welcome and 0x10…0x16 sealed: | type|0x80 | token u64 |
//!                       counter u64 | encrypted fields | tag [u8; 16] |   (see [`seal`])
//! ```
//!
//! Everything received is hostile: [`frame::Datagram::decode`] checks every length before
//! reading it, caps the checksum list at [`frame::MAX_CLASSES`] and a datagram at
//! [`frame::MAX_DATAGRAM`], and returns an error value for anything else; [`SessionServer`]
//! and [`SessionClient`] drop and count what does not belong (unknown address, wrong token,
//! wrong nonce; a bad cookie gets a fresh challenge). A server keeps nothing for a client before its cookie comes back,
//! at most [`ServerConfig::max_sessions`] sessions after, and ends idle ones
//! ([`SessionServer::expire`]). Tokens and cookies are keyed hashes, **not cryptography**
//! ([`cookie`] says what they are good for): a plain session is safe from a blind third party,
//! not from one who reads the traffic. A sealed session ([`ServerConfig::sealed`],
//! [`SessionClient::with_ticket`]) is: AES-256-GCM under a key per session and direction,
//! derived from a join ticket's keys, a counter per datagram and a replay window.
//!
//! ```
//! use shadowrep::session::{ticket, SessionKeys, TicketKey};
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//!
//! // The backend and the game servers share a key (from the deployment's secret store).
//! let key = TicketKey::from_bytes([0x5a; 32]);
//! // A player is matched: the backend issues a ticket good for a minute, and its keys...
//! let keys = SessionKeys::generate()?;
//! let expires = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 60;
//! let t = ticket::issue(&key, 1234, 7, expires, &keys)?; // player 1234, on game server 7
//! // ...sends both to the player over HTTPS; the client says hello with
//! // `SessionClient::with_ticket(layouts, nonce, t, &keys)`, the server, built with
//! // `ServerConfig::new(checksums).sealed(key, 7)`, opens the ticket:
//! let claims = ticket::open(&key, &t, SystemTime::now())?;
//! assert_eq!((claims.player, claims.server), (1234, 7));
//! assert!(ticket::open(&key, &t, SystemTime::now() + Duration::from_secs(61)).is_err());
//! # Ok::<(), shadowrep::session::TicketError>(())
//! ```
//!
//! # A session's end, a restart, a new address
//! A session ends when the client says so, when the server ends it
//! ([`SessionServer::disconnect`]), or when one side hears nothing for its timeout (the
//! server's [`SessionServer::expire_with_notice`], the client's [`SessionClient::expire`]). A
//! client restarted on the same address joins again at once: its new handshake ends the old
//! session (a sealed one only for a new ticket of its player). A sealed session follows its
//! client to a new address (the first datagram that opens there moves it); a plain one cannot.
//!
//! # State digests
//! [`digest`] reduces "what a client holds" to one number the server can compute for a
//! connection and the client for its world; a server freezes its world, waits until nothing is
//! in flight, and answers digest requests, so bots can check they converged
//! (`shadowrep bots`).
//!
//! `kernel/examples/udp_server.rs` and `udp_client.rs` embed all of it over `UdpSocket`s.

pub mod client;
pub mod cookie;
pub mod digest;
pub mod frame;
pub mod levels;
pub mod seal;
pub mod server;
pub mod ticket;

pub use client::{ClientIncoming, ClientState, SessionClient};
pub use cookie::random_u64;
pub use digest::{client_digest, expected_digest, StateDigest};
pub use frame::{
    Datagram, DigestAnswer, DigestStatus, DisconnectReason, RejectReason, TicketRefusal, MAX_DATAGRAM, PROTOCOL_VERSION,
};
pub use levels::{LevelError, MAX_LEVELS};
pub use seal::{SealError, Sealer};
pub use server::{
    Incoming, JoinRequest, ServerConfig, ServerConfigError, SessionServer, MIN_DIGEST_INTERVAL, MIN_LEVELS_INTERVAL,
};
pub use ticket::{SessionKeys, TicketClaims, TicketError, TicketKey};
