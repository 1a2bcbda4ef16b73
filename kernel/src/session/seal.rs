//! Sealed sessions: every datagram after the hello encrypted and authenticated with keys from
//! a join ticket ([`super::ticket`]), so whoever reads the traffic can neither read it nor
//! forge, alter or replay a datagram of it — the network can then only drop or delay.
//!
//! A sealed datagram is the plain one ([`super::frame`]) with the `0x80` bit set on its type,
//! the session's token first, a counter, the other fields encrypted, and a tag:
//!
//! ```text
//! plain    | type | token u64 | fields… |
//! sealed   | type|0x80 | token u64 | counter u64 | AES-256-GCM(fields…) | GCM tag [u8; 16] |
//! welcome  | 04 | nonce u64 | token u64 | fields… |  →  | 84 | token u64 | 0 u64 | AES-256-GCM(nonce u64 | fields…) | tag |
//!            key   = HChaCha20(the ticket's key for this direction, token | "shadowrp")
//!            nonce = counter | type (without 0x80) | 0 0 0      associated data = the first 17 bytes
//! ```
//!
//! Each direction has its own key per session: the ticket's key for that direction and the
//! session's token, derived once by HChaCha20 (the key derivation of XChaCha20). The server
//! makes each session's token a keyed hash of a counter of its sessions, the client's address
//! and nonce (under a random key per process), so sessions on one ticket share a key only if
//! two 64-bit tokens collide (the welcome's token is the server's, not the client's nonce,
//! which a copier of the hello can repeat). Under it the sender counts from 1 (the welcome,
//! sent again unchanged when it was lost, is 0): a nonce is never used twice under one key. A
//! receiver opens a datagram before it believes any of it, then keeps its counter in a window
//! of the last [`REPLAY_WINDOW`]: a counter seen before, or older than the window, is a replay
//! and is dropped. The window belongs to the session an end is bound to ([`Sealer::bind`]):
//! only that session's datagrams open, and any session's welcome (a connecting client has
//! none bound yet) — so no other session's datagram, an earlier one's on the same ticket say,
//! moves it.
//!
//! Why AES-256-GCM (UE's `AESGCMHandlerComponent` cipher) and not XChaCha20-Poly1305 per
//! datagram, as protocol version 2 had it: with the AES and carry-less-multiply instructions
//! (AES-NI and PCLMULQDQ on x86-64, the crypto extensions on 64-bit ARM servers) it seals a
//! 64-byte datagram in 0.14 µs instead of 1.48 µs and battle_royale's 2 626-byte packet in 0.95
//! µs instead of 4.01 µs (`cargo bench -p shadowrep-benches --bench seal`, AMD EPYC Zen 5, the
//! two builds). Its 96-bit nonce has no room for the token, hence the key per session; a
//! Poly1305 key per datagram is what made the small ones slow. (Without those instructions the
//! `aes` crate's constant-time software path is slower than ChaCha20's.)

use aes_gcm::aead::Nonce;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Tag};
use std::fmt;

use super::frame::kind;
use super::ticket::SessionKeys;

/// Set on the type byte of a sealed datagram.
pub const SEALED: u8 = 0x80;

/// Bytes a sealed datagram adds to the plain one: the counter and the tag.
pub const SEAL_OVERHEAD: usize = 8 + 16;

/// Counters a receiver remembers: an older one is dropped as a replay.
pub const REPLAY_WINDOW: u64 = 256;

/// Why a sealed datagram was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealError {
    /// Not a sealed datagram: too short, or a type that is never sealed.
    Malformed,
    /// It does not open with the session's key: forged, altered, or another session's.
    Forged,
    /// Its counter was seen before, or is older than the window.
    Replayed,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::Malformed => write!(f, "not a sealed datagram"),
            SealError::Forged => write!(f, "sealed datagram does not open with the session's key"),
            SealError::Replayed => write!(f, "sealed datagram replayed (counter seen or too old)"),
        }
    }
}

impl std::error::Error for SealError {}

/// The types a session seals: the welcome and everything after it.
fn sealable(t: u8) -> bool {
    t == kind::WELCOME || (kind::PACKET..=kind::LEVELS_ACK).contains(&t)
}

/// The type and id of a sealed datagram, read before opening it (a server finds the session
/// by address and checks the token first, so a stranger's datagram costs no decryption);
/// `None` for anything else, shorter than a header and tag or longer than
/// [`MAX_DATAGRAM`](super::frame::MAX_DATAGRAM).
pub fn sealed_header(bytes: &[u8]) -> Option<(u8, u64)> {
    let t = *bytes.first()?;
    let size = 1 + 8 + SEAL_OVERHEAD..=super::frame::MAX_DATAGRAM;
    if t & SEALED == 0 || !sealable(t & !SEALED) || !size.contains(&bytes.len()) {
        return None;
    }
    Some((t & !SEALED, u64::from_le_bytes(bytes[1..9].try_into().ok()?)))
}

/// The bytes of a datagram one end sends: `d` encoded, and sealed when the session is
/// (`sealer`). Server and client frame everything they send through this.
pub(super) fn frame(sealer: Option<&mut Sealer>, d: &super::frame::Datagram<'_>) -> Vec<u8> {
    let plain = d.encode();
    match sealer {
        Some(s) => s.seal(&plain).expect("a session seals only the datagrams it sends"),
        None => plain,
    }
}

/// Counters seen, the newest [`REPLAY_WINDOW`] of them.
#[derive(Clone, Debug, Default)]
struct ReplayWindow {
    highest: u64,
    /// Bit `i` of word `i / 64`: counter `highest - i` was seen.
    seen: [u64; (REPLAY_WINDOW / 64) as usize],
}

impl ReplayWindow {
    fn fresh(&self, c: u64) -> bool {
        if c > self.highest {
            return true;
        }
        let back = self.highest - c;
        back < REPLAY_WINDOW && self.seen[(back / 64) as usize] >> (back % 64) & 1 == 0
    }

    fn mark(&mut self, c: u64) {
        if c > self.highest {
            let shift = c - self.highest;
            self.highest = c;
            if shift >= REPLAY_WINDOW {
                self.seen = Default::default();
            } else {
                // Shift the whole bit string by `shift` towards older counters.
                let (words, bits) = ((shift / 64) as usize, (shift % 64) as u32);
                let n = self.seen.len();
                for i in (0..n).rev() {
                    let lo = i.checked_sub(words).map_or(0, |j| self.seen[j]);
                    let carry = match (bits, i.checked_sub(words + 1)) {
                        (0, _) | (_, None) => 0,
                        (b, Some(j)) => self.seen[j] >> (64 - b),
                    };
                    self.seen[i] = lo.checked_shl(bits).unwrap_or(0) | carry;
                }
            }
        }
        let back = self.highest - c;
        self.seen[(back / 64) as usize] |= 1 << (back % 64);
    }
}

/// One end of a sealed session: seals what it sends, opens what it receives.
pub struct Sealer {
    /// The ticket's keys, (send, receive): what each session's keys are derived from.
    base: ([u8; 32], [u8; 32]),
    /// The ciphers of the session this end is bound to ([`Sealer::bind`]).
    ciphers: Option<Box<Ciphers>>,
    sent: u64,
    window: ReplayWindow,
}

/// One session's keys, each direction's ready to use.
struct Ciphers {
    token: u64,
    send: Aes256Gcm,
    receive: Aes256Gcm,
}

/// Eight bytes of the key derivation's input beside the token: keys for this and nothing else.
const KEY_LABEL: &[u8; 8] = b"shadowrp";

/// The session key of the direction whose ticket key is `base`, for the session `token`.
fn session_key(base: &[u8; 32], token: u64) -> Aes256Gcm {
    let mut input = [0u8; 16];
    input[..8].copy_from_slice(&token.to_le_bytes());
    input[8..].copy_from_slice(KEY_LABEL);
    let key = chacha20::hchacha::<chacha20::R20>(&(*base).into(), &input.into());
    Aes256Gcm::new(&key.0.into())
}

impl Ciphers {
    fn derive(base: &([u8; 32], [u8; 32]), token: u64) -> Box<Self> {
        Box::new(Ciphers { token, send: session_key(&base.0, token), receive: session_key(&base.1, token) })
    }
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer").field("sent", &self.sent).field("highest", &self.window.highest).finish()
    }
}

fn nonce(t: u8, counter: u64) -> Nonce<Aes256Gcm> {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&counter.to_le_bytes());
    n[8] = t;
    Nonce::<Aes256Gcm>::from(n)
}

impl Sealer {
    /// The client's end.
    pub fn client(keys: &SessionKeys) -> Self {
        Self::new(keys.client_to_server, keys.server_to_client)
    }

    /// The server's end.
    pub fn server(keys: &SessionKeys) -> Self {
        Self::new(keys.server_to_client, keys.client_to_server)
    }

    fn new(send: [u8; 32], receive: [u8; 32]) -> Self {
        Self { base: (send, receive), ciphers: None, sent: 0, window: ReplayWindow::default() }
    }

    /// Binds this end to session `token`: its keys derived (if they are not the ones at hand)
    /// and, for a session other than the bound one, a fresh replay window — the window belongs
    /// to a session, and only the bound session's datagrams other than the welcome open
    /// ([`Sealer::open`]). A server's end binds by sealing its welcome; a client's binds when
    /// it accepts the welcome ([`super::SessionClient`] does both).
    pub fn bind(&mut self, token: u64) {
        if self.ciphers.as_ref().is_none_or(|c| c.token != token) {
            self.ciphers = Some(Ciphers::derive(&self.base, token));
            self.window = ReplayWindow::default();
        }
    }

    /// The ciphers of session `token`, bound to it first.
    fn ciphers(&mut self, token: u64) -> &Ciphers {
        self.bind(token);
        self.ciphers.as_ref().expect("bound above")
    }

    /// Seals a plain datagram of a sealable type (`plain` as [`super::frame::Datagram::encode`]
    /// wrote it); `None` for any other bytes (a caller bug: the session seals only its own).
    pub fn seal(&mut self, plain: &[u8]) -> Option<Vec<u8>> {
        let t = *plain.first()?;
        if !sealable(t) || plain.len() < 9 || (t == kind::WELCOME && plain.len() < 17) {
            return None;
        }
        let welcome = t == kind::WELCOME;
        // The welcome's token goes first, its nonce inside (see the module documentation).
        let (id, fields): (&[u8], [&[u8]; 2]) =
            if welcome { (&plain[9..17], [&plain[1..9], &plain[17..]]) } else { (&plain[1..9], [&plain[9..], &[]]) };
        let counter = if welcome {
            0
        } else {
            self.sent += 1;
            self.sent
        };
        let mut out = Vec::with_capacity(plain.len() + SEAL_OVERHEAD);
        out.push(t | SEALED);
        out.extend_from_slice(id);
        out.extend_from_slice(&counter.to_le_bytes());
        fields.iter().for_each(|f| out.extend_from_slice(f));
        let id = u64::from_le_bytes(id.try_into().ok()?);
        let (head, body) = out.split_at_mut(17);
        let tag = self.ciphers(id).send.encrypt_inout_detached(&nonce(t, counter), head, body.into()).ok()?;
        out.extend_from_slice(&tag);
        Some(out)
    }

    /// Opens a sealed datagram: the plain datagram's bytes, or why not. The counter is kept
    /// only once the datagram opened, so a forger cannot move the window.
    pub fn open(&mut self, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        let (t, id) = sealed_header(sealed).ok_or(SealError::Malformed)?;
        let counter = u64::from_le_bytes(sealed[9..17].try_into().map_err(|_| SealError::Malformed)?);
        // The welcome is counter 0 and nothing else is; the window holds the rest.
        let welcome = t == kind::WELCOME;
        if welcome != (counter == 0) || (!welcome && !self.window.fresh(counter)) {
            return Err(SealError::Replayed);
        }
        let (body, tag) = sealed[17..].split_at(sealed.len() - 17 - 16);
        if welcome && body.len() < 8 {
            return Err(SealError::Malformed);
        }
        let tag = Tag::try_from(tag).map_err(|_| SealError::Malformed)?;
        // Decrypted where the plain datagram keeps its fields: after the type and token.
        let mut plain = [&[t][..], &id.to_le_bytes(), body].concat();
        // Only the bound session's datagrams open, and a welcome of any session on this ticket
        // (a connecting client has no session yet; its keys are derived aside and not kept:
        // the client binds once the welcome proves to be its own). So no other session's
        // datagram — an earlier one's late packet, a replayed welcome — can move the window.
        // (Opening needs only the receiving key: that one alone is derived aside.)
        let aside;
        let receive = match self.ciphers.as_deref().filter(|c| c.token == id) {
            Some(bound) => &bound.receive,
            None if welcome => {
                aside = session_key(&self.base.1, id);
                &aside
            }
            None => return Err(SealError::Forged),
        };
        receive
            .decrypt_inout_detached(&nonce(t, counter), &sealed[..17], (&mut plain[9..]).into(), &tag)
            .map_err(|_| SealError::Forged)?;
        if welcome {
            // | 04 | token | nonce | fields | → | 04 | nonce | token | fields |
            plain[1..17].rotate_left(8);
        } else {
            self.window.mark(counter);
        }
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Sealer, Sealer) {
        let keys = SessionKeys::generate().unwrap();
        (Sealer::client(&keys), Sealer::server(&keys))
    }

    fn packet(token: u64, payload: &[u8]) -> Vec<u8> {
        [&[kind::PACKET][..], &token.to_le_bytes(), payload].concat()
    }

    #[test]
    fn what_one_end_seals_the_other_opens_once() {
        let (mut c, mut s) = pair();
        c.bind(9);
        let plain = packet(9, b"hello world");
        let sealed = s.seal(&plain).unwrap();
        assert_eq!(sealed.len(), plain.len() + SEAL_OVERHEAD);
        assert!(!sealed.windows(5).any(|w| w == b"hello"), "the payload is encrypted");
        assert_eq!(c.open(&sealed).unwrap(), plain);
        assert_eq!(c.open(&sealed), Err(SealError::Replayed));
        // A client cannot open its own datagrams as the server's (per-direction keys).
        let feedback = [&[kind::FEEDBACK][..], &9u64.to_le_bytes(), b"x"].concat();
        let (first, second) = (c.seal(&feedback).unwrap(), c.seal(&feedback).unwrap());
        assert_eq!(c.open(&second), Err(SealError::Forged), "counter 2 is fresh here, the key is not");
        assert!(s.open(&first).is_ok() && s.open(&second).is_ok());
    }

    #[test]
    fn a_sealed_packet_is_aes_256_gcm_under_the_sessions_key() {
        // The bytes an independent model of the module documentation's construction gives
        // (`python3 testdata/seal_model.py`: HChaCha20 written out, AES-256-GCM from Python's
        // `cryptography`): the key derivation, the nonce and the associated data pinned, for a
        // server packet, the welcome's layout (counter 0, the token first, the client's nonce
        // inside) and the client's direction.
        let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let keys = SessionKeys { client_to_server: [0x22; 32], server_to_client: [0x11; 32] };
        let token = 0x0123_4567_89ab_cdef_u64;
        let (mut s, mut c) = (Sealer::server(&keys), Sealer::client(&keys));
        let welcome = [&[kind::WELCOME][..], &77u64.to_le_bytes(), &token.to_le_bytes(), &[30, 1, 5]].concat();
        let sealed_welcome = s.seal(&welcome).unwrap();
        assert_eq!(
            hex(&sealed_welcome),
            "84efcdab89674523010000000000000000e6f215767085c4a73cc5bf78a60da2b0a53ef2faa11abba4dea5eb"
        );
        let plain = packet(token, b"sealed by protocol 3");
        let sealed = s.seal(&plain).unwrap();
        assert_eq!(
            hex(&sealed),
            "90efcdab896745230101000000000000006cf6be30b03bf52df50289421223af075d52675aa5999e13b18076be5c3b596342859508"
        );
        assert_eq!(c.open(&sealed_welcome).unwrap(), welcome);
        c.bind(token);
        assert_eq!(c.open(&sealed).unwrap(), plain);
        let feedback = [&[kind::FEEDBACK][..], &token.to_le_bytes(), b"ack"].concat();
        let sealed_feedback = c.seal(&feedback).unwrap();
        assert_eq!(hex(&sealed_feedback), "91efcdab896745230101000000000000000172d968ac96f35247b353714d9e30f1a1282b");
        assert_eq!(s.open(&sealed_feedback).unwrap(), feedback);
    }

    #[test]
    fn sessions_on_one_ticket_have_keys_of_their_own() {
        // Two sessions on one ticket (a reconnect, or a copied hello) both seal counter 1: under
        // one key that would be one keystream twice.
        let keys = SessionKeys::generate().unwrap();
        let (mut a, mut b) = (Sealer::server(&keys), Sealer::server(&keys));
        let (x, y) = (a.seal(&packet(1, &[0; 64])).unwrap(), b.seal(&packet(2, &[0; 64])).unwrap());
        let same = x[17..81].iter().zip(&y[17..81]).filter(|(p, q)| p == q).count();
        assert!(same < 8, "{same} of 64 bytes alike: a shared keystream");
        // Each session's client opens its datagrams, after a stranger's relabelled copy.
        let (mut c, mut d) = (Sealer::client(&keys), Sealer::client(&keys));
        c.bind(1);
        d.bind(2);
        let mut relabelled = x.clone();
        relabelled[1..9].copy_from_slice(&2u64.to_le_bytes());
        assert_eq!(d.open(&relabelled), Err(SealError::Forged));
        assert!(c.open(&x).is_ok() && d.open(&y).is_ok());
    }

    #[test]
    fn every_altered_byte_is_refused() {
        let (mut c, mut s) = pair();
        c.bind(3);
        let sealed = s.seal(&packet(3, &[1, 2, 3, 4])).unwrap();
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x40;
            assert!(c.open(&bad).is_err(), "byte {i}");
        }
        assert!(c.open(&sealed).is_ok(), "the forgeries moved nothing");
    }

    #[test]
    fn truncated_and_oversized_datagrams_are_refused_at_their_limits() {
        let (mut c, mut s) = pair();
        c.bind(5);
        // The largest packet sealed is exactly the largest datagram, and opens.
        let big = s.seal(&packet(5, &[7; super::super::frame::MAX_PAYLOAD])).unwrap();
        assert_eq!(big.len(), super::super::frame::MAX_DATAGRAM);
        let small = s.seal(&packet(5, &[1])).unwrap();
        // Every truncation of a real one is refused, none panics, none moves the window.
        for n in 0..small.len() {
            assert!(c.open(&small[..n]).is_err(), "cut to {n}");
        }
        // One byte more than the largest datagram is not looked at.
        let mut over = big.clone();
        over.push(0);
        assert_eq!(sealed_header(&over), None);
        assert_eq!(c.open(&over), Err(SealError::Malformed));
        assert!(c.open(&big).is_ok() && c.open(&small).is_ok());
    }

    #[test]
    fn the_window_takes_late_datagrams_once_and_drops_old_ones() {
        let (mut c, mut s) = pair();
        c.bind(1);
        let sealed: Vec<Vec<u8>> = (0..600).map(|i| s.seal(&packet(1, &[i as u8])).unwrap()).collect();
        // Counters 1..=600: take 300 first, then late ones inside and outside the window.
        assert!(c.open(&sealed[299]).is_ok());
        assert!(c.open(&sealed[100]).is_ok(), "counter 101 is 199 behind: inside");
        assert_eq!(c.open(&sealed[100]), Err(SealError::Replayed));
        assert_eq!(c.open(&sealed[20]), Err(SealError::Replayed), "counter 21 is 279 behind: outside");
        for i in [300, 302, 301, 599, 400, 350] {
            assert!(c.open(&sealed[i]).is_ok(), "{i}");
        }
        for i in [300, 599, 400, 350, 343 - 1] {
            assert_eq!(c.open(&sealed[i]), Err(SealError::Replayed), "{i}");
        }
        assert!(c.open(&sealed[598]).is_ok());
    }

    #[test]
    fn a_welcome_is_counter_zero_and_sent_again_unchanged() {
        let (mut c, mut s) = pair();
        let welcome = [&[kind::WELCOME][..], &77u64.to_le_bytes(), &88u64.to_le_bytes(), &[5; 20]].concat();
        let a = s.seal(&welcome).unwrap();
        assert_eq!(s.seal(&welcome).unwrap(), a, "the same welcome, the same bytes");
        assert_eq!(u64::from_le_bytes(a[1..9].try_into().unwrap()), 88, "the token leads, the nonce is inside");
        assert!(!a.windows(8).any(|w| w == 77u64.to_le_bytes()));
        assert_eq!(c.open(&a).unwrap(), welcome);
        // Another session's welcome for the same client nonce (a copied hello, one ticket): its
        // own token, so its own nonce — not the same keystream.
        let other = [&[kind::WELCOME][..], &77u64.to_le_bytes(), &99u64.to_le_bytes(), &[5; 20]].concat();
        let b = s.seal(&other).unwrap();
        let xor: Vec<u8> = a[17..a.len() - 16].iter().zip(&b[17..b.len() - 16]).map(|(x, y)| x ^ y).collect();
        assert!(xor.iter().filter(|&&x| x != 0).count() > 16, "the two welcomes share no keystream");
        assert_eq!(s.seal(&[kind::HELLO; 48]), None, "a hello is never sealed");
        let p = s.seal(&packet(1, b"p")).unwrap();
        assert_eq!(u64::from_le_bytes(p[9..17].try_into().unwrap()), 1, "packets count from 1");
    }

    #[test]
    fn another_sessions_datagrams_do_not_move_the_window() {
        // A client reconnecting on one ticket: the old session got to counter 500; a late
        // packet of it reaches the new session's client while it connects, and again once it
        // is connected, beside a replayed old welcome. (They had opened and moved the window
        // past the new session's counters, which then came back `Replayed`.)
        let keys = SessionKeys::generate().unwrap();
        let (mut old, mut new, mut c) = (Sealer::server(&keys), Sealer::server(&keys), Sealer::client(&keys));
        let welcome = |token: u64| [&[kind::WELCOME][..], &7u64.to_le_bytes(), &token.to_le_bytes(), &[1]].concat();
        let old_welcome = old.seal(&welcome(1)).unwrap();
        let late = (0..500).map(|_| old.seal(&packet(1, b"old")).unwrap()).last().unwrap();
        assert_eq!(c.open(&late), Err(SealError::Forged), "no session bound yet");
        assert_eq!(c.open(&new.seal(&welcome(2)).unwrap()).unwrap(), welcome(2), "a welcome opens aside");
        c.bind(2);
        assert!(c.open(&old_welcome).is_ok(), "a replayed welcome opens, and binds nothing");
        assert_eq!(c.open(&late), Err(SealError::Forged));
        assert_eq!(c.open(&new.seal(&packet(2, b"new")).unwrap()).unwrap(), packet(2, b"new"), "counter 1 is fresh");
    }

    #[test]
    fn the_window_matches_a_set_of_seen_counters() {
        // The bit window against a plain set, over shifts of every size.
        let mut w = ReplayWindow::default();
        let mut seen = std::collections::BTreeSet::new();
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly near the top, now and then far ahead (shifts of 64, 128, 255, 256 and more).
            let c = if x.is_multiple_of(50) {
                w.highest + [1, 63, 64, 65, 128, 255, 256, 257, 1000][(x / 50 % 9) as usize]
            } else {
                (w.highest + 40).saturating_sub(x % 400).max(1)
            };
            let expect = !seen.contains(&c) && c + REPLAY_WINDOW > w.highest.max(c);
            assert_eq!(w.fresh(c), expect, "counter {c}, highest {}", w.highest);
            if expect {
                w.mark(c);
                seen.insert(c);
            }
        }
    }
}
