//! Join tickets: how a client gets the keys of a sealed session ([`super::seal`]) without the
//! server keeping anything before the handshake — netcode.io's connect tokens, UE's
//! encryption-token hand-off.
//!
//! ```text
//! backend (matchmaker)                client                       game server
//!   keys = SessionKeys::generate()
//!   ticket = ticket::issue(master, player, server, expires, keys)
//!   ── (ticket, keys) over the game's own secure channel (HTTPS) ──→
//!                                     hello(…, ticket) ─────────→  Ticket::open(master):
//!                                                                  expired / forged → reject
//!                                     ←── sealed welcome ───────   the session seals with keys
//! ```
//!
//! The backend and every game server of a deployment share a 32-byte [`TicketKey`]. A ticket
//! is the player's id, the id of the one game server it is for (each server is configured with
//! its own), an expiry and the session's two keys, sealed under it with XChaCha20-Poly1305 and a
//! random 24-byte nonce:
//!
//! ```text
//! | version u8 = 1 | expires u64 (Unix seconds) | nonce [u8; 24] | sealed(player u64 | server u64 | client→server key [u8; 32] | server→client key [u8; 32]) | tag [u8; 16] |
//! ```
//!
//! (A ticket good on every server would let someone who copies a hello take it to another
//! server of the deployment, whose welcome the client would open with its keys: a session
//! with a server the client never asked for.)
//!
//! (version and expiry are authenticated as associated data, so neither can be changed.) An
//! eavesdropper who copies a ticket learns neither key: a session it opens with the ticket can
//! neither read the server's datagrams nor send one the server accepts, and ends when it times
//! out (only datagrams that open count as hearing from a client); a server takes a ticket
//! from one address only, so a copy sent from elsewhere is refused while the first session's
//! record lasts (until the ticket expires). A ticket is good on every server holding the key
//! until it expires: keep expiries short (tens of seconds: long enough to connect).

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of a ticket.
pub const TICKET_BYTES: usize = 1 + 8 + 24 + PLAIN_BYTES + 16;

const TICKET_VERSION: u8 = 1;
const PLAIN_BYTES: usize = 8 + 8 + 32 + 32;
/// Bound into every ticket's associated data: a ticket is not any other sealed message.
const CONTEXT: &[u8] = b"shadowrep join ticket";

/// `n` bytes from the operating system's cryptographic random source.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], TicketError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|_| TicketError::NoRandomness)?;
    Ok(b)
}

/// The secret a deployment's backend and game servers share: it seals and opens tickets.
#[derive(Clone)]
pub struct TicketKey([u8; 32]);

impl TicketKey {
    /// A key from 32 secret bytes (from the deployment's secret store).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A new random key.
    pub fn generate() -> Result<Self, TicketError> {
        Ok(Self(random_bytes()?))
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }
}

impl fmt::Debug for TicketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TicketKey(..)")
    }
}

/// The two keys of a sealed session, one per direction.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SessionKeys {
    /// Seals what the client sends.
    pub client_to_server: [u8; 32],
    /// Seals what the server sends.
    pub server_to_client: [u8; 32],
}

impl SessionKeys {
    /// Two new random keys.
    pub fn generate() -> Result<Self, TicketError> {
        Ok(Self { client_to_server: random_bytes()?, server_to_client: random_bytes()? })
    }
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKeys(..)")
    }
}

/// What a server learns from a ticket it opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TicketClaims {
    /// The player the backend issued it to (the game's own id).
    pub player: u64,
    /// The game server it is for.
    pub server: u64,
    /// When it stops being accepted (Unix seconds).
    pub expires: u64,
    /// The session's keys.
    pub keys: SessionKeys,
    /// The ticket's own tag: what tells it from every other ticket (a server takes a ticket
    /// from one address only).
    pub fingerprint: [u8; 16],
}

/// Why a ticket was not issued or not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TicketError {
    /// Not [`TICKET_BYTES`] bytes, or another version.
    Malformed,
    /// It does not open with this key: forged, altered, or for another deployment.
    Forged,
    /// Its expiry has passed.
    Expired,
    /// The operating system gave no random bytes.
    NoRandomness,
}

impl fmt::Display for TicketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TicketError::Malformed => write!(f, "not a join ticket ({TICKET_BYTES} bytes, version {TICKET_VERSION})"),
            TicketError::Forged => write!(f, "the join ticket does not open with this server's key"),
            TicketError::Expired => write!(f, "the join ticket has expired"),
            TicketError::NoRandomness => write!(f, "the operating system's random source failed"),
        }
    }
}

impl std::error::Error for TicketError {}

fn associated(header: &[u8]) -> Vec<u8> {
    [CONTEXT, header].concat()
}

/// Seals a ticket for `player` on game server `server`, good until `expires` (Unix seconds),
/// carrying `keys`.
pub fn issue(
    key: &TicketKey,
    player: u64,
    server: u64,
    expires: u64,
    keys: &SessionKeys,
) -> Result<Vec<u8>, TicketError> {
    let nonce: [u8; 24] = random_bytes()?;
    let mut out = Vec::with_capacity(TICKET_BYTES);
    out.push(TICKET_VERSION);
    out.extend_from_slice(&expires.to_le_bytes());
    out.extend_from_slice(&nonce);
    let body = out.len();
    out.extend_from_slice(&player.to_le_bytes());
    out.extend_from_slice(&server.to_le_bytes());
    out.extend_from_slice(&keys.client_to_server);
    out.extend_from_slice(&keys.server_to_client);
    let ad = associated(&out[..9]);
    let tag = key
        .cipher()
        .encrypt_inout_detached(&XNonce::from(nonce), &ad, (&mut out[body..]).into())
        .map_err(|_| TicketError::Malformed)?;
    out.extend_from_slice(&tag);
    Ok(out)
}

/// Opens a ticket with the deployment's key, checking its expiry against `now`.
pub fn open(key: &TicketKey, ticket: &[u8], now: SystemTime) -> Result<TicketClaims, TicketError> {
    if ticket.len() != TICKET_BYTES || ticket[0] != TICKET_VERSION {
        return Err(TicketError::Malformed);
    }
    let (header, rest) = ticket.split_at(9);
    let (nonce, rest) = rest.split_at(24);
    let (sealed, tag) = rest.split_at(PLAIN_BYTES);
    let mut plain = [0u8; PLAIN_BYTES];
    plain.copy_from_slice(sealed);
    let nonce: [u8; 24] = nonce.try_into().map_err(|_| TicketError::Malformed)?;
    let fingerprint: [u8; 16] = tag.try_into().map_err(|_| TicketError::Malformed)?;
    let tag = Tag::from(fingerprint);
    key.cipher()
        .decrypt_inout_detached(&XNonce::from(nonce), &associated(header), (&mut plain[..]).into(), &tag)
        .map_err(|_| TicketError::Forged)?;
    let expires = u64::from_le_bytes(header[1..9].try_into().map_err(|_| TicketError::Malformed)?);
    let unix = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if unix >= expires {
        return Err(TicketError::Expired);
    }
    let word = |r: std::ops::Range<usize>| -> [u8; 32] { plain[r].try_into().unwrap_or([0; 32]) };
    let int = |r: std::ops::Range<usize>| u64::from_le_bytes(plain[r].try_into().unwrap_or([0; 8]));
    Ok(TicketClaims {
        player: int(0..8),
        server: int(8..16),
        expires,
        keys: SessionKeys { client_to_server: word(16..48), server_to_client: word(48..80) },
        fingerprint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_ticket_opens_with_its_key_until_it_expires() {
        let key = TicketKey::generate().unwrap();
        let keys = SessionKeys::generate().unwrap();
        let t = issue(&key, 42, 3, 1_000, &keys).unwrap();
        assert_eq!(t.len(), TICKET_BYTES);
        let claims = open(&key, &t, at(999)).unwrap();
        assert_eq!((claims.player, claims.server, claims.expires), (42, 3, 1_000));
        assert!(claims.keys == keys);
        assert_eq!(open(&key, &t, at(1_000)), Err(TicketError::Expired));
        assert_eq!(open(&TicketKey::generate().unwrap(), &t, at(0)), Err(TicketError::Forged));
    }

    #[test]
    fn every_altered_byte_is_refused() {
        let key = TicketKey::from_bytes([7; 32]);
        let t = issue(&key, 1, 1, u64::MAX, &SessionKeys::generate().unwrap()).unwrap();
        for i in 0..t.len() {
            let mut bad = t.clone();
            bad[i] ^= 0x01;
            let e = open(&key, &bad, at(0)).unwrap_err();
            assert!(matches!(e, TicketError::Forged | TicketError::Malformed), "byte {i}: {e:?}");
        }
        assert_eq!(open(&key, &t[..t.len() - 1], at(0)), Err(TicketError::Malformed));
        assert_eq!(open(&key, &[], at(0)), Err(TicketError::Malformed));
    }
}
