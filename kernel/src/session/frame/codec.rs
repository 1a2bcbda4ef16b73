//! A datagram to bytes and back: every length is checked against what is left before it is read.

use super::{
    kind, Datagram, DigestAnswer, DigestStatus, DisconnectReason, FrameError, Hello, RejectReason, TicketRefusal,
    MAX_CLASSES, MAX_DATAGRAM, MAX_PAYLOAD, MIN_HELLO_BYTES, SESSION_HEADER_BYTES, TICKET_BYTES,
};
use crate::session::levels::{put_levels, read_levels};

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
        DisconnectReason::ReliableOverflow => 2,
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
                    2 => DisconnectReason::ReliableOverflow,
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
    use super::super::*;

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
            Datagram::Disconnect { token: 11, reason: DisconnectReason::ReliableOverflow },
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

    /// The disconnect's reason byte at its edge: 2 (`ReliableOverflow`, version 6) is the last
    /// code a reader takes; 3 and beyond are refused, not read as some reason (a decoder that
    /// mapped unknown codes to a reason, or forgot code 2, would fail here).
    #[test]
    fn a_disconnect_reason_past_the_last_code_is_refused() {
        let mut bytes = Datagram::Disconnect { token: 9, reason: DisconnectReason::ReliableOverflow }.encode();
        let at = bytes.len() - 1;
        assert_eq!(bytes[at], 2, "the reason is the disconnect's last byte");
        assert_eq!(
            Datagram::decode(&bytes),
            Ok(Datagram::Disconnect { token: 9, reason: DisconnectReason::ReliableOverflow })
        );
        for code in [3u8, 4, 0xff] {
            bytes[at] = code;
            assert_eq!(Datagram::decode(&bytes), Err(FrameError::BadCode(code)));
        }
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
