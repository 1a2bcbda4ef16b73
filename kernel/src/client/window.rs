//! Which packets a client has received: the sequence-number window behind its feedback.
//!
//! ```text
//! d = seq − highest (wrapping)
//! d == 0 or d < 0    duplicate or late: dropped (if it was missing, feedback keeps saying so and
//!                    the server resends current values: nothing stale is applied)
//! d > ACK_WINDOW     too far ahead: dropped. An honest server never gets that far ahead of what
//!                    the client reported, so one forged packet can move `highest` at most
//!                    ACK_WINDOW ahead, stalling the connection for at most that many packets
//! otherwise          accepted (once the packet decoded): the window moves d forward
//! ```
//!
//! The newest packet's hash is kept: a packet with the newest sequence number but other bytes
//! means one of the two was forged (an honest server repeats a packet byte for byte). The
//! arriving one is applied too, so a forged jump to sequence N is undone by the server's own
//! packet N rather than making the client acknowledge content it never saw.

use crate::ids::Seq;
use crate::wire::feedback::{AckBits, ACK_WINDOW};

/// What the window says of an arriving sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqVerdict {
    /// Newer than anything received, within reach: apply it.
    New,
    /// The newest one again.
    Duplicate,
    /// Older than the newest received.
    Late,
    /// More than [`ACK_WINDOW`] ahead of the newest received.
    TooFar,
}

/// The newest packet received and which of the ones before it arrived.
#[derive(Clone, Debug)]
pub(crate) struct ReceiveWindow {
    highest: Seq,
    received: AckBits,
    /// Hash of the newest packet's bytes.
    newest: u64,
}

impl ReceiveWindow {
    /// A window expecting `first` as the first packet.
    pub fn new(first: Seq) -> Self {
        Self { highest: first.back(1), received: AckBits::default(), newest: 0 }
    }

    /// Judges `seq`.
    pub fn verdict(&self, seq: Seq) -> SeqVerdict {
        match seq.ahead_of(self.highest) {
            0 => SeqVerdict::Duplicate,
            d if d < 0 => SeqVerdict::Late,
            d if d > ACK_WINDOW as i64 => SeqVerdict::TooFar,
            _ => SeqVerdict::New,
        }
    }

    /// Whether a packet judged [`SeqVerdict::Duplicate`] differs from the newest one received.
    pub fn differs(&self, hash: u64) -> bool {
        self.received.get(0) && hash != self.newest
    }

    /// Records `seq` (which [`Self::verdict`] judged new, or a differing duplicate) as received.
    pub fn accept(&mut self, seq: Seq, hash: u64) {
        let d = seq.ahead_of(self.highest);
        debug_assert!((0..=ACK_WINDOW as i64).contains(&d));
        self.received.shift(d.clamp(0, ACK_WINDOW as i64) as u32);
        self.received.set(0);
        self.highest = seq;
        self.newest = hash;
    }

    /// The newest packet received (the one before the first, if none was).
    pub fn highest(&self) -> Seq {
        self.highest
    }

    /// Which packets up to [`Self::highest`] arrived.
    pub fn received(&self) -> &AckBits {
        &self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_accepts_only_newer_packets_within_reach() {
        let mut w = ReceiveWindow::new(Seq(u32::MAX - 1));
        assert_eq!(w.verdict(Seq(u32::MAX - 1)), SeqVerdict::New);
        assert_eq!(w.verdict(Seq(u32::MAX - 2)), SeqVerdict::Duplicate, "the one before the first");
        assert!(!w.differs(1), "nothing was received yet");
        w.accept(Seq(u32::MAX - 1), 1);
        assert_eq!(w.verdict(Seq(3)), SeqVerdict::New, "across the wrap");
        w.accept(Seq(3), 2);
        assert!(!w.differs(2) && w.differs(5));
        assert!(w.received().get(0) && w.received().get(5) && !w.received().get(1));
        assert_eq!(w.verdict(Seq(3)), SeqVerdict::Duplicate);
        assert_eq!(w.verdict(Seq(u32::MAX)), SeqVerdict::Late);
        assert_eq!(w.verdict(Seq(3 + ACK_WINDOW)), SeqVerdict::New);
        assert_eq!(w.verdict(Seq(3 + ACK_WINDOW + 1)), SeqVerdict::TooFar);
        assert_eq!(w.verdict(Seq(3u32.wrapping_add(1 << 31))), SeqVerdict::Late, "half the space away");
        assert_eq!(w.verdict(Seq(3u32.wrapping_add((1 << 31) - 1))), SeqVerdict::TooFar);
    }
}
