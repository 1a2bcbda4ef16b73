//! Acknowledgement feedback: which of the last [`ACK_WINDOW`] packets a client received, which
//! actors it asks the server to open again, and the client's Server calls ([`super::rpc`]).
//!
//! ```text
//! feedback := highest:packed  runs:packed { run:packed }*  reopens:packed { guid:packed }*
//!             [ calls:packed(1..=MAX_FEEDBACK_CALLS) { call }* ]       left out when none
//! call     := reliable:bit  seq:16  target:packed  bits:packed(≤ MAX_CLIENT_CALL_BITS)  bit{bits}
//!             a client's Server call (crate::wire::rpc): its number in its stream (reliable or
//!             unreliable: the server drops an unreliable one it has seen, feedback having no
//!             numbers of its own to drop a repeated datagram by), its index and parameters
//! ```
//!
//! `highest` is the newest packet received. The runs describe the `ACK_WINDOW − 1` packets below
//! it, newest first, as alternating lengths: received, missing, received, … (only the first run
//! may be 0). A packet the runs do not reach was not received. A clean link is one run — a few
//! bytes — and one feedback always covers every packet a server may have in flight, since a
//! server keeps at most [`ACK_WINDOW`] packets past the newest one the client reported (UE's
//! largest ack history is 256 packets too).
//!
//! A client should send feedback at least once per server frame in which it received packets
//! (more is harmless: a repeat changes nothing), and at least every keep-alive interval
//! otherwise; the server settles nothing it has not heard about.
//!
//! Decoding is strict: more runs than the window holds, runs past the window, a non-canonical
//! zero run, too many reopen GUIDs or a null one, an empty call list, more than
//! [`MAX_FEEDBACK_CALLS`] calls, a call longer than [`MAX_CLIENT_CALL_BITS`] or with a null
//! target, and trailing garbage are errors. Nothing is allocated beyond [`MAX_REOPENS`] GUIDs and
//! [`MAX_FEEDBACK_CALLS`] calls of at most [`MAX_CLIENT_CALL_BITS`] bits.
//! that lost its level copy of one (a forged close took it) asks for it like any other, and
//! refusing that feedback whole had left every packet unacknowledged for good.

use super::{BitReader, BitWriter, WireError};
use crate::ids::{NetGuid, Seq};

/// Packets one feedback describes: the newest received and the 255 before it.
pub const ACK_WINDOW: u32 = 256;

/// Reopen requests one feedback may carry.
pub const MAX_REOPENS: usize = 64;

/// Which of the [`ACK_WINDOW`] packets ending at some newest one were received: bit `i` stands
/// for the packet `i` before the newest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckBits(pub [u64; 4]);

impl AckBits {
    /// Whether the packet `back` before the newest was received.
    pub fn get(&self, back: u32) -> bool {
        back < ACK_WINDOW && self.0[(back / 64) as usize] >> (back % 64) & 1 != 0
    }

    /// Marks the packet `back` before the newest as received.
    pub fn set(&mut self, back: u32) {
        if back < ACK_WINDOW {
            self.0[(back / 64) as usize] |= 1 << (back % 64);
        }
    }

    /// Moves the window `n` packets forward: every bit ages by `n`, new packets are missing.
    pub fn shift(&mut self, n: u32) {
        if n >= ACK_WINDOW {
            self.0 = [0; 4];
            return;
        }
        let (words, bits) = ((n / 64) as usize, n % 64);
        let old = self.0;
        for i in (0..4usize).rev() {
            let lo = i.checked_sub(words).map_or(0, |j| old[j]);
            let below = i.checked_sub(words + 1).map_or(0, |j| old[j]);
            self.0[i] = if bits == 0 { lo } else { lo << bits | below >> (64 - bits) };
        }
    }

    /// The same packets described from `n` packets before the newest (the reverse of
    /// [`Self::shift`]): the newest `n` bits leave, every other bit is `n` packets newer, and
    /// the oldest `n` packets, which these bits never described, read as missing.
    pub fn unshift(&mut self, n: u32) {
        if n >= ACK_WINDOW {
            self.0 = [0; 4];
            return;
        }
        let (words, bits) = ((n / 64) as usize, n % 64);
        let old = self.0;
        for i in 0..4usize {
            let hi = old.get(i + words).copied().unwrap_or(0);
            let above = old.get(i + words + 1).copied().unwrap_or(0);
            self.0[i] = if bits == 0 { hi } else { hi >> bits | above << (64 - bits) };
        }
    }
}

/// One decoded feedback message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Feedback {
    /// Newest packet received.
    pub highest: Seq,
    /// Which packets up to `highest` were received (bit 0 is `highest` itself).
    pub received: AckBits,
    /// Actors the client got a bunch for but does not have: the server should open them again.
    pub reopen: Vec<NetGuid>,
    /// The client's Server calls ([`super::rpc`]).
    pub calls: Vec<super::rpc::RpcBunch>,
}

/// Calls one feedback may carry.
pub const MAX_FEEDBACK_CALLS: usize = 64;

/// Bits of one client call's index and parameters at most (a client refuses a larger call).
pub const MAX_CLIENT_CALL_BITS: usize = 8 * 1024;

/// Appends `calls` to feedback just written ([`write_feedback`]); none writes nothing.
pub fn write_feedback_calls(w: &mut BitWriter, calls: &[super::rpc::RpcBunch]) {
    let calls = &calls[..calls.len().min(MAX_FEEDBACK_CALLS)];
    if calls.is_empty() {
        return;
    }
    w.write_packed(calls.len() as u64);
    for c in calls {
        w.write_bool(c.reliable);
        w.write_bits(u64::from(c.seq.unwrap_or(0)), 16);
        w.write_packed(c.target.0);
        w.write_packed(c.bits as u64);
        w.write_from(&c.call, 0, c.bits);
    }
}

/// Bits [`write_feedback_calls`] adds for one call (besides the count).
pub fn feedback_call_bits(c: &super::rpc::RpcBunch) -> usize {
    let packed = super::packet::packed_bits;
    1 + 16 + packed(c.target.0) + packed(c.bits as u64) + c.bits
}

/// Writes feedback.
pub fn write_feedback(w: &mut BitWriter, highest: Seq, received: &AckBits, reopen: &[NetGuid]) {
    w.write_packed(highest.0 as u64);
    // Run lengths over backs 1..ACK_WINDOW, starting with a received run; a trailing missing
    // run is left out (what the runs do not reach is missing).
    let mut runs = [0u16; ACK_WINDOW as usize];
    let mut n = 0;
    let mut state = true;
    let mut len = 0u16;
    for back in 1..ACK_WINDOW {
        if received.get(back) == state {
            len += 1;
        } else {
            runs[n] = len;
            n += 1;
            state = !state;
            len = 1;
        }
    }
    if state {
        runs[n] = len;
        n += 1;
    }
    w.write_packed(n as u64);
    for &r in &runs[..n] {
        w.write_packed(r as u64);
    }
    let reopen = &reopen[..reopen.len().min(MAX_REOPENS)];
    w.write_packed(reopen.len() as u64);
    for g in reopen {
        w.write_packed(g.0);
    }
}

/// Feedback saying every packet up to and including `packet` (a packet's bytes) arrived — for
/// benchmarks and tests that stand in for a perfect client.
pub fn ack_everything(packet: &[u8]) -> Result<Vec<u8>, WireError> {
    let seq =
        u32::try_from(BitReader::new(packet).read_packed()?).map_err(|_| WireError::Invalid("sequence number"))?;
    let all = AckBits([u64::MAX; 4]);
    let mut w = BitWriter::new();
    write_feedback(&mut w, Seq(seq), &all, &[]);
    Ok(w.into_bytes())
}

/// Reads feedback, refusing anything malformed.
pub fn read_feedback(bytes: &[u8]) -> Result<Feedback, WireError> {
    let mut r = BitReader::new(bytes);
    let highest = Seq(u32::try_from(r.read_packed()?).map_err(|_| WireError::Invalid("sequence number"))?);
    let mut received = AckBits::default();
    received.set(0);
    let runs = r.read_packed()?;
    if runs > (ACK_WINDOW - 1) as u64 {
        return Err(WireError::Invalid("feedback runs"));
    }
    let mut back = 1u64;
    for i in 0..runs {
        let len = r.read_packed()?;
        if len == 0 && i > 0 {
            return Err(WireError::Invalid("empty feedback run"));
        }
        if len > ACK_WINDOW as u64 || back + len > ACK_WINDOW as u64 {
            return Err(WireError::Invalid("feedback runs past the window"));
        }
        if i % 2 == 0 {
            for b in back..back + len {
                received.set(b as u32);
            }
        }
        back += len;
    }
    let count = r.read_packed()?;
    if count > MAX_REOPENS as u64 {
        return Err(WireError::OutOfRange { value: count, max: MAX_REOPENS as u64 + 1 });
    }
    let mut reopen = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let g = NetGuid(r.read_packed()?);
        if g.is_null() {
            return Err(WireError::Invalid("null reopen GUID"));
        }
        reopen.push(g);
    }
    let mut calls = Vec::new();
    if r.remaining() >= 8 {
        let count = r.read_packed()?;
        if count == 0 {
            // A writer leaves an empty call list out: this is a byte after the feedback.
            return Err(WireError::Invalid("bytes after the feedback"));
        }
        if count > MAX_FEEDBACK_CALLS as u64 {
            return Err(WireError::OutOfRange { value: count, max: MAX_FEEDBACK_CALLS as u64 + 1 });
        }
        for _ in 0..count {
            let reliable = r.read_bool()?;
            let seq = Some(r.read_bits(16)? as u16);
            let target = NetGuid(r.read_packed()?);
            if target.is_null() {
                return Err(WireError::Invalid("call target"));
            }
            let bits = r.read_packed()?;
            if bits > MAX_CLIENT_CALL_BITS as u64 || bits > r.remaining() as u64 {
                return Err(WireError::Invalid("call length"));
            }
            let bits = bits as usize;
            let call = r.read_to_bytes(bits)?;
            calls.push(super::rpc::RpcBunch { target, seq, call, bits, reliable });
        }
    }
    if r.remaining() >= 8 || (r.remaining() > 0 && r.read_bits(r.remaining() as u32)? != 0) {
        return Err(WireError::Invalid("bytes after the feedback"));
    }
    Ok(Feedback { highest, received, reopen, calls })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(f: &Feedback) -> Feedback {
        let mut w = BitWriter::new();
        write_feedback(&mut w, f.highest, &f.received, &f.reopen);
        write_feedback_calls(&mut w, &f.calls);
        read_feedback(&w.into_bytes()).unwrap()
    }

    #[test]
    fn calls_ride_feedback_and_bad_ones_are_refused() {
        use super::super::rpc::RpcBunch;
        let call = |seq: Option<u16>, bits: usize| RpcBunch {
            target: NetGuid(6),
            seq: Some(seq.unwrap_or(7)),
            call: vec![0xa5; bits.div_ceil(8)],
            bits,
            reliable: seq.is_some(),
        };
        let mut f =
            Feedback { highest: Seq(9), received: AckBits([1, 0, 0, 0]), reopen: vec![NetGuid(4)], calls: Vec::new() };
        assert_eq!(round_trip(&f), f);
        f.calls = vec![call(Some(65535), 13), call(None, 0), call(Some(0), 64)];
        // The bits past each call's length are the writer's zeros.
        let mut back = round_trip(&f);
        for (b, c) in back.calls.iter_mut().zip(&f.calls) {
            assert_eq!((b.target, b.seq, b.bits, b.reliable), (c.target, c.seq, c.bits, c.reliable));
            b.call = c.call.clone();
        }
        assert_eq!(back, f);
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
        let base = w.len_bits();
        w.write_packed(0);
        assert!(read_feedback(w.bytes()).is_err(), "an empty call list is written as none");
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
        write_feedback_calls(&mut w, &[call(None, 12)]);
        let full = w.into_bytes();
        for cut in base.div_ceil(8) + 1..full.len() {
            assert!(read_feedback(&full[..cut]).is_err(), "cut at {cut}");
        }
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
        w.write_packed(1);
        w.write_bool(false);
        w.write_bits(0, 16);
        w.write_packed(6);
        w.write_packed(MAX_CLIENT_CALL_BITS as u64 + 1);
        assert_eq!(read_feedback(w.bytes()).unwrap_err(), WireError::Invalid("call length"));
        // At the limits: a call of MAX_CLIENT_CALL_BITS, MAX_FEEDBACK_CALLS calls; one more of
        // either is refused (the writer never writes more calls than the limit).
        let longest = call(Some(3), MAX_CLIENT_CALL_BITS);
        let many = |n: usize| {
            let mut w = BitWriter::new();
            write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
            w.write_packed(n as u64);
            for _ in 0..n {
                w.write_bool(false);
                w.write_bits(7, 16);
                w.write_packed(6);
                w.write_packed(1);
                w.write_bool(true);
            }
            w.into_bytes()
        };
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
        write_feedback_calls(&mut w, std::slice::from_ref(&longest));
        assert_eq!(read_feedback(w.bytes()).map(|f| f.calls[0].bits), Ok(MAX_CLIENT_CALL_BITS));
        assert_eq!(read_feedback(&many(MAX_FEEDBACK_CALLS)).map(|f| f.calls.len()), Ok(MAX_FEEDBACK_CALLS));
        assert!(matches!(read_feedback(&many(MAX_FEEDBACK_CALLS + 1)), Err(WireError::OutOfRange { .. })));
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits([1, 0, 0, 0]), &[]);
        write_feedback_calls(&mut w, &vec![call(None, 1); MAX_FEEDBACK_CALLS + 5]);
        assert_eq!(
            read_feedback(w.bytes()).map(|f| f.calls.len()),
            Ok(MAX_FEEDBACK_CALLS),
            "the writer keeps to the limit"
        );
    }

    #[test]
    fn every_pattern_of_the_window_round_trips() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..300 {
            let mut bits = AckBits::default();
            bits.set(0);
            for back in 1..ACK_WINDOW {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Vary the density from all-missing to all-received.
                if (x % 300) < case {
                    bits.set(back);
                }
            }
            let f = Feedback {
                highest: Seq(case as u32 * 977),
                received: bits,
                reopen: vec![NetGuid(2), NetGuid(8)],
                calls: Vec::new(),
            };
            assert_eq!(round_trip(&f), f);
        }
    }

    #[test]
    fn a_clean_window_is_a_few_bytes() {
        let mut bits = AckBits::default();
        for b in 0..ACK_WINDOW {
            bits.set(b);
        }
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(1000), &bits, &[]);
        assert!(w.bytes().len() <= 6, "{} bytes", w.bytes().len());
    }

    #[test]
    fn shifting_ages_every_bit() {
        let mut bits = AckBits::default();
        for b in [0, 1, 63, 64, 130, 255] {
            bits.set(b);
        }
        for n in [0, 1, 5, 63, 64, 65, 128, 200, 255, 256, 1000] {
            let mut s = bits;
            s.shift(n);
            for b in 0..ACK_WINDOW {
                let want = b >= n && bits.get(b - n);
                assert_eq!(s.get(b), want, "shift {n}, bit {b}");
            }
        }
    }

    #[test]
    fn unshifting_makes_every_bit_newer() {
        let mut bits = AckBits::default();
        for b in [0, 1, 63, 64, 130, 191, 192, 255] {
            bits.set(b);
        }
        for n in [0, 1, 5, 63, 64, 65, 128, 200, 255, 256, 1000] {
            let mut s = bits;
            s.unshift(n);
            for b in 0..ACK_WINDOW {
                let want = b + n < ACK_WINDOW && bits.get(b + n);
                assert_eq!(s.get(b), want, "unshift {n}, bit {b}");
            }
        }
    }

    #[test]
    fn malformed_feedback_is_refused() {
        let bad = |f: &dyn Fn(&mut BitWriter)| {
            let mut w = BitWriter::new();
            f(&mut w);
            read_feedback(&w.into_bytes())
        };
        assert!(bad(&|w| w.write_packed(1 << 40)).is_err(), "sequence over 32 bits");
        assert!(bad(&|w| {
            w.write_packed(9);
            w.write_packed(300);
        })
        .is_err());
        assert!(bad(&|w| {
            w.write_packed(9);
            w.write_packed(2);
            w.write_packed(200);
            w.write_packed(100);
        })
        .is_err());
        assert!(bad(&|w| {
            w.write_packed(9);
            w.write_packed(2);
            w.write_packed(3);
            w.write_packed(0);
        })
        .is_err());
        assert!(
            bad(&|w| {
                w.write_packed(9);
                w.write_packed(1);
                w.write_packed(u64::MAX);
            })
            .is_err(),
            "a run length that would overflow"
        );
        assert!(bad(&|w| {
            w.write_packed(9);
            w.write_packed(0);
            w.write_packed(65);
        })
        .is_err());
        assert!(
            bad(&|w| {
                w.write_packed(9);
                w.write_packed(0);
                w.write_packed(1);
                w.write_packed(0);
            })
            .is_err(),
            "null reopen GUID"
        );
        let static_reopen = {
            let mut w = BitWriter::new();
            write_feedback(&mut w, Seq(9), &AckBits::default(), &[NetGuid(3)]);
            w.into_bytes()
        };
        assert_eq!(read_feedback(&static_reopen).map(|f| f.reopen), Ok(vec![NetGuid(3)]), "a static actor's reopen");
        assert!(
            bad(&|w| {
                w.write_packed(9);
                w.write_packed(0);
                w.write_packed(0);
                w.write_packed(7);
            })
            .is_err(),
            "trailing bytes"
        );
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(5), &AckBits::default(), &[]);
        let bytes = w.into_bytes();
        for cut in 0..bytes.len() {
            assert!(read_feedback(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn bits_outside_the_window_are_neither_set_nor_read() {
        let mut bits = AckBits::default();
        for back in [0, 255, 256, 300, u32::MAX] {
            bits.set(back);
        }
        let mut want = AckBits::default();
        want.0[0] = 1;
        want.0[3] = 1 << 63;
        assert_eq!(bits, want);
        for back in [256, 257, 511, 512, u32::MAX] {
            assert!(!bits.get(back), "{back}");
        }
    }

    #[test]
    fn the_encoding_leaves_out_a_trailing_missing_run() {
        let encode = |received: &[u32]| {
            let mut bits = AckBits::default();
            for &b in received {
                bits.set(b);
            }
            let mut w = BitWriter::new();
            write_feedback(&mut w, Seq(9), &bits, &[]);
            w.into_bytes()
        };
        let packed = |values: &[u64]| {
            let mut w = BitWriter::new();
            for &v in values {
                w.write_packed(v);
            }
            w.into_bytes()
        };
        // Only the newest: one empty received run, the missing rest implied.
        assert_eq!(encode(&[0]), packed(&[9, 1, 0, 0]));
        // Received 1..=2, missing 3..=5, received 6, missing after: runs 2, 3, 1.
        assert_eq!(encode(&[0, 1, 2, 6]), packed(&[9, 3, 2, 3, 1, 0]));
    }

    #[test]
    fn feedback_at_its_limits_is_accepted_and_one_past_them_refused() {
        let decode = |f: &dyn Fn(&mut BitWriter)| {
            let mut w = BitWriter::new();
            w.write_packed(9);
            f(&mut w);
            read_feedback(&w.into_bytes())
        };
        let runs = |lens: Vec<u64>| {
            move |w: &mut BitWriter| {
                w.write_packed(lens.len() as u64);
                for &l in &lens {
                    w.write_packed(l);
                }
                w.write_packed(0);
            }
        };
        // One run over the whole window, and one packet more.
        assert!(decode(&runs(vec![255])).is_ok());
        assert_eq!(decode(&runs(vec![256])), Err(WireError::Invalid("feedback runs past the window")));
        // 255 runs of one packet fill the window; an empty first run makes 256 runs, too many.
        assert!(decode(&runs(vec![1; 255])).is_ok());
        let mut many = vec![0u64];
        many.extend([1; 255]);
        assert_eq!(decode(&runs(many)), Err(WireError::Invalid("feedback runs")));
        // MAX_REOPENS reopens, and one more.
        let reopens = |n: u64| {
            move |w: &mut BitWriter| {
                w.write_packed(0);
                w.write_packed(n);
                for i in 0..n {
                    w.write_packed(2 * (i + 1));
                }
            }
        };
        assert_eq!(decode(&reopens(MAX_REOPENS as u64)).map(|f| f.reopen.len()), Ok(MAX_REOPENS));
        assert!(matches!(decode(&reopens(MAX_REOPENS as u64 + 1)), Err(WireError::OutOfRange { .. })));
        // A trailing zero byte is garbage too (only padding to the byte is allowed).
        let mut w = BitWriter::new();
        write_feedback(&mut w, Seq(9), &AckBits::default(), &[]);
        let mut bytes = w.into_bytes();
        assert!(read_feedback(&bytes).is_ok());
        bytes.push(0);
        assert_eq!(read_feedback(&bytes), Err(WireError::Invalid("bytes after the feedback")));
    }
}
