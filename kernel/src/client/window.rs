//! Which packets a client has received: the sequence-number window behind its feedback.
//!
//! ```text
//! d = seq − highest (wrapping)
//! d == 0 or d < 0    duplicate or late: dropped (if it was missing, feedback keeps saying so and
//!                    the server resends current values: nothing stale is applied)
//! d > ACK_WINDOW     too far ahead (measured from the reach, see below): dropped. An honest
//!                    server never gets that far ahead of what the client reported, so one
//!                    forged packet can move `highest` at most ACK_WINDOW ahead, stalling the
//!                    connection for at most that many packets
//! otherwise          accepted (once the packet decoded): the window moves d forward
//! ```
//!
//! The newest packet's hash is kept: a packet with the newest sequence number but other bytes
//! means one of the two was forged (an honest server repeats a packet byte for byte). The
//! arriving one is applied too, so a forged jump to sequence N is undone by the server's own
//! packet N rather than making the client acknowledge content it never saw.
//!
//! The hashes of the other packets in the window are kept too: a *late* packet whose number was
//! received with other bytes means the same, after the fact (a forger who numbers two packets
//! as the server's next two gets the server's first dropped as late, and acknowledged for the
//! forged one — [`ReceiveWindow::late_differs`]).
//!
//! A forged jump ahead makes every packet of the server's late until its numbering reaches the
//! forged number — up to the window, and a chain of forged jumps (each up to the window past the
//! last) multiplies that. So the window keeps its state from before each packet it accepted (the
//! last [`ACK_WINDOW`] of them): [`ROLLBACK_STREAK`] late packets in a row whose numbers it never
//! received, rising, at least [`ROLLBACK_DISTANCE`] behind the newest, with nothing accepted
//! between them — the server's, sent behind a forged number — make it go back to its state before
//! the first packet it accepted numbered after the first of them
//! ([`ReceiveWindow::late_unreceived`]). The server's next packet is new again; what the dropped
//! ones carried is reported missing and resent. A rollback in honest traffic is not harmless: the
//! packets it makes new again are older than ones already applied and acknowledged, so their
//! values would overwrite newer ones the server will not send again. Honest reordering — a
//! frame's packets overtaken by the next frame's, a burst of them at a small MTU — put three late
//! packets in a row often enough (session 53's soak at MTU 512 found it), and at a small MTU a
//! burst can pass half the window; but then the packets accepted after the late ones are the
//! overtaking frame's, nearly every number, where a forged jump is a packet or a few over the
//! numbers it skipped: a rollback also needs those to be sparse ([`ROLLBACK_SPARSE`]). A forged
//! jump shorter than half the window stalls the connection for fewer packets than that anyway.
//! (Heuristics both: a client that applied a late packet's values only where nothing newer had
//! written them would need no guess; left for later.)
//!
//! If that second packet N fails to decode or validate (the first one, forged, closed an actor
//! it updates, say), N must not stay acknowledged: its content would be lost for good. So the
//! window keeps its state from before it first accepted a packet numbered N, and
//! [`ReceiveWindow::restore`] goes back to it: N is reported missing and the server sends its
//! content again. The reach — how far ahead a packet is accepted — is not restored: it stays
//! ACK_WINDOW past N, so the server's packets after N, which it may send because the client
//! reported N, are still accepted (after a forged jump of the whole window they would
//! otherwise be too far from the restored newest, and the connection would stall for good).

use crate::ids::Seq;
use crate::wire::feedback::{AckBits, ACK_WINDOW};
use std::collections::VecDeque;

/// Late packets never received, in a row and rising, that make the window go back.
pub const ROLLBACK_STREAK: u8 = 3;

/// A rollback also needs the packets accepted numbered after the streak to be sparse: fewer than
/// one in this many of the numbers between the streak and the newest. A forged jump of the whole
/// window is one packet over 256 numbers; a frame's burst overtaken by the next frame's is the
/// next frame's packets, nearly every number.
pub const ROLLBACK_SPARSE: i64 = 8;

/// How far behind the newest received a late packet must be to count toward a rollback: half
/// the window. A forged jump smaller than this stalls the connection for fewer packets than it,
/// without a rollback; honest reordering — a frame's packets overtaken by the next frame's —
/// mostly stays within it, and where a burst at a small MTU does not, [`ROLLBACK_SPARSE`] tells
/// it apart.
pub const ROLLBACK_DISTANCE: u32 = ACK_WINDOW / 2;

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

/// What the window says: the newest packet received, which of the ones before it arrived, and
/// the hash of the newest one's bytes.
#[derive(Clone, Copy, Debug)]
struct WindowState {
    highest: Seq,
    received: AckBits,
    newest: u64,
}

/// The newest packet received and which of the ones before it arrived.
#[derive(Clone, Debug)]
pub(crate) struct ReceiveWindow {
    now: WindowState,
    /// The state before the first packet numbered `now.highest` was accepted (see
    /// [`Self::restore`]); none once restored.
    before: Option<WindowState>,
    /// The newest sequence number ever accepted: packets are accepted up to [`ACK_WINDOW`] past
    /// it. It equals `now.highest` unless the window was restored.
    reach: Seq,
    /// (sequence number, hash) of the packets accepted, by number modulo [`ACK_WINDOW`]: a slot
    /// speaks for a number only while it holds that number.
    hashes: Box<[(u32, u64)]>,
    /// (number, state before it) of the last [`ACK_WINDOW`] packets accepted with a new number.
    history: VecDeque<(Seq, WindowState)>,
    /// The late packets never received since the last one accepted: (first number, last
    /// number, how many), numbers rising.
    streak: Option<(Seq, Seq, u8)>,
}

impl ReceiveWindow {
    /// A window expecting `first` as the first packet.
    pub fn new(first: Seq) -> Self {
        let now = WindowState { highest: first.back(1), received: AckBits::default(), newest: 0 };
        // Slots hold a number that does not index them until written: none speaks for a number.
        let hashes = (0..ACK_WINDOW).map(|i| (i + 1, 0)).collect();
        Self { now, before: None, reach: now.highest, hashes, history: VecDeque::new(), streak: None }
    }

    /// Whether late packet `seq`'s number was received with other bytes than `hash` (one of the
    /// two packets was forged: an honest server repeats a packet byte for byte). `None` when it
    /// was not received, is out of the window, or its slot holds a newer number (a restored
    /// number's successor took it): nothing to compare with, so the caller hashes only packets
    /// it can judge.
    pub fn late_differs(&self, seq: Seq, hash: impl FnOnce() -> u64) -> Option<bool> {
        let back = u32::try_from(self.now.highest.ahead_of(seq)).ok().filter(|&b| b > 0 && b < ACK_WINDOW)?;
        let (number, kept) = self.hashes[(seq.0 % ACK_WINDOW) as usize];
        (self.now.received.get(back) && number == seq.0).then(|| kept != hash())
    }

    /// Judges `seq`.
    pub fn verdict(&self, seq: Seq) -> SeqVerdict {
        match seq.ahead_of(self.now.highest) {
            0 => SeqVerdict::Duplicate,
            d if d < 0 => SeqVerdict::Late,
            _ if seq.ahead_of(self.reach) > ACK_WINDOW as i64 => SeqVerdict::TooFar,
            _ => SeqVerdict::New,
        }
    }

    /// Whether packet `seq` was received (within the window; an older number is not known).
    pub fn was_received(&self, seq: Seq) -> bool {
        let back = self.now.highest.ahead_of(seq);
        (0..ACK_WINDOW as i64).contains(&back) && self.now.received.get(back as u32)
    }

    /// A late packet whose number was not received (see [`Self::was_received`]). One less than
    /// [`ROLLBACK_DISTANCE`] behind the newest ends any streak. The [`ROLLBACK_STREAK`]th such in
    /// a row, rising, with nothing accepted between, makes the window go back to its state before
    /// the first packet it accepted numbered after the first of them (or the oldest it kept) —
    /// if those it accepted are sparse ([`ROLLBACK_SPARSE`]): returns whether it did.
    pub fn late_unreceived(&mut self, seq: Seq) -> bool {
        if self.now.highest.ahead_of(seq) < i64::from(ROLLBACK_DISTANCE) {
            // Near the newest: reordering, not a forged jump (see `ROLLBACK_DISTANCE`).
            self.streak = None;
            return false;
        }
        let (first, n) = match self.streak {
            Some((first, last, n)) if seq.ahead_of(last) > 0 => (first, n + 1),
            _ => (seq, 1),
        };
        if n < ROLLBACK_STREAK {
            self.streak = Some((first, seq, n));
            return false;
        }
        self.streak = None;
        let at = self.history.iter().position(|(s, _)| s.ahead_of(first) > 0).unwrap_or(0);
        // What was accepted numbered after the streak: a forged jump is a packet or a few spread
        // over the numbers it skipped; honest reordering, the overtaking frame's packets, about
        // as many as the numbers (see `ROLLBACK_SPARSE`).
        let above = (self.history.len() - at) as i64;
        if above * ROLLBACK_SPARSE >= self.now.highest.ahead_of(first) {
            return false;
        }
        let Some(&(_, state)) = self.history.get(at) else { return false };
        self.now = state;
        self.history.truncate(at);
        self.before = None;
        true
    }

    /// Whether a packet judged [`SeqVerdict::Duplicate`] differs from the newest one received.
    pub fn differs(&self, hash: u64) -> bool {
        self.now.received.get(0) && hash != self.now.newest
    }

    /// Records `seq` (which [`Self::verdict`] judged new, or a differing duplicate) as received.
    pub fn accept(&mut self, seq: Seq, hash: u64) {
        let d = seq.ahead_of(self.now.highest);
        debug_assert!(d >= 0 && seq.ahead_of(self.reach) <= ACK_WINDOW as i64);
        if d > 0 {
            // A differing duplicate (d = 0) keeps the state from before the number's first packet.
            self.before = Some(self.now);
            if self.history.len() == ACK_WINDOW as usize {
                self.history.pop_front();
            }
            self.history.push_back((seq, self.now));
        }
        self.streak = None;
        if seq.ahead_of(self.reach) > 0 {
            self.reach = seq;
        }
        self.now.received.shift(d.clamp(0, ACK_WINDOW as i64) as u32);
        self.now.received.set(0);
        self.now.highest = seq;
        self.now.newest = hash;
        self.hashes[(seq.0 % ACK_WINDOW) as usize] = (seq.0, hash);
    }

    /// A differing duplicate of the newest packet failed to decode or validate: one of the two
    /// packets with that number was forged, and which one the client cannot tell, so the
    /// number is forgotten — the window goes back to its state before the first of them, and
    /// the number is reported missing (the server sends that packet's content again). Returns
    /// whether it did (not twice in a row: the state before that is not kept).
    pub fn restore(&mut self) -> bool {
        match self.before.take() {
            Some(before) => {
                // The number forgotten is no state to go back past.
                if self.history.back().is_some_and(|&(s, _)| s == self.now.highest) {
                    self.history.pop_back();
                }
                self.now = before;
                true
            }
            None => false,
        }
    }

    /// The newest packet received (the one before the first, if none was).
    pub fn highest(&self) -> Seq {
        self.now.highest
    }

    /// Which packets up to [`Self::highest`] arrived.
    pub fn received(&self) -> &AckBits {
        &self.now.received
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

    #[test]
    fn a_late_packet_is_judged_against_the_hash_its_number_came_with() {
        let mut w = ReceiveWindow::new(Seq(u32::MAX - 2));
        for (s, h) in [(u32::MAX - 2, 10), (u32::MAX, 11), (1, 12), (2, 13)] {
            w.accept(Seq(s), h);
        }
        assert_eq!(w.late_differs(Seq(1), || 12), Some(false), "the same bytes again");
        assert_eq!(w.late_differs(Seq(1), || 99), Some(true));
        assert_eq!(w.late_differs(Seq(u32::MAX - 2), || 99), Some(true), "across the wrap");
        assert_eq!(w.late_differs(Seq(u32::MAX - 1), || 99), None, "never received");
        assert_eq!(w.late_differs(Seq(0), || 99), None, "never received, its slot unwritten");
        assert_eq!(w.late_differs(Seq(2), || 99), None, "the newest: not late");
        w.accept(Seq(2 + ACK_WINDOW - 1), 14);
        assert_eq!(w.late_differs(Seq(2), || 99), Some(true), "the last number in the window");
        w.accept(Seq(2 + ACK_WINDOW), 15);
        assert_eq!(w.late_differs(Seq(2), || 99), None, "out of the window: its slot holds another number");
    }

    /// A chain of forged jumps, then the server's packets behind them: the third late one in a
    /// row takes the window back to before the first jump.
    #[test]
    fn late_packets_never_received_take_the_window_back_past_forged_jumps() {
        let mut w = ReceiveWindow::new(Seq(10));
        for s in 10..14 {
            w.accept(Seq(s), u64::from(s));
        }
        for k in 1..=4 {
            w.accept(Seq(13 + k * ACK_WINDOW), 99);
        }
        assert_eq!(w.verdict(Seq(14)), SeqVerdict::Late);
        assert!(!w.was_received(Seq(14)));
        assert!(!w.late_unreceived(Seq(14)));
        assert!(!w.late_unreceived(Seq(14)), "not rising: a streak of one again");
        assert!(!w.late_unreceived(Seq(15)));
        assert!(w.late_unreceived(Seq(16)), "the third, rising");
        assert_eq!(w.highest(), Seq(13), "back to before the first jump");
        assert!(w.received().get(0) && w.received().get(3));
        assert_eq!(w.verdict(Seq(17)), SeqVerdict::New);
        // Something accepted breaks a streak.
        w.accept(Seq(17), 17);
        assert!(!w.late_unreceived(Seq(14)) && !w.late_unreceived(Seq(15)));
        w.accept(Seq(18), 18);
        assert!(!w.late_unreceived(Seq(16)), "a new streak");
    }

    /// Honest reordering: a frame's packets overtaken by the next frame's arrive late in a row,
    /// rising — applied over the newer ones they would undo what those set, for good (the server
    /// settled the newer packets as delivered). Within half the window they never roll it back;
    /// a late one that near the newest ends a streak of far ones.
    #[test]
    fn late_packets_near_the_newest_never_take_the_window_back() {
        let mut w = ReceiveWindow::new(Seq(10));
        w.accept(Seq(10), 10);
        for s in 40..60 {
            w.accept(Seq(s), u64::from(s));
        }
        for s in 11..40 {
            assert!(!w.late_unreceived(Seq(s)), "{s}: reordering, not a forged jump");
        }
        assert_eq!(w.highest(), Seq(59));
        let far = 70 + ROLLBACK_DISTANCE;
        w.accept(Seq(far), 1);
        assert!(!w.late_unreceived(Seq(60)) && !w.late_unreceived(Seq(61)));
        assert!(!w.late_unreceived(Seq(far - 1)), "near: the streak ends");
        assert!(!w.late_unreceived(Seq(62)), "a streak of one again");
        assert!(!w.late_unreceived(Seq(63)));
        assert!(w.late_unreceived(Seq(64)), "three far behind, rising");
        assert_eq!(w.highest(), Seq(59));
    }

    /// The two limits exactly: a late packet [`ROLLBACK_DISTANCE`] behind the newest counts, one
    /// nearer does not; with the packets accepted after the streak one number in
    /// [`ROLLBACK_SPARSE`] the window stays, with them one fewer it goes back.
    #[test]
    fn the_rollback_limits_hold_at_their_edges() {
        let window = |accepted: u32| {
            let mut w = ReceiveWindow::new(Seq(10));
            w.accept(Seq(10), 10);
            for s in 200..200 + accepted {
                w.accept(Seq(s), u64::from(s));
            }
            w
        };
        // 20 accepted at 200..=219: a streak from 219 − 160 spans 160 = 20 × 8 numbers.
        let newest = 219;
        let mut w = window(20);
        assert!(!w.late_unreceived(Seq(newest - ROLLBACK_DISTANCE + 1)), "one short of the distance");
        let first = newest - 20 * ROLLBACK_SPARSE as u32;
        assert!(!w.late_unreceived(Seq(first)) && !w.late_unreceived(Seq(first + 1)));
        assert!(!w.late_unreceived(Seq(first + 2)), "dense: one accepted in every 8 numbers");
        assert_eq!(w.highest(), Seq(newest));
        let mut w = window(20);
        assert!(!w.late_unreceived(Seq(first - 1)) && !w.late_unreceived(Seq(first)));
        assert!(w.late_unreceived(Seq(first + 1)), "sparse: one number more");
        assert_eq!(w.highest(), Seq(10));
        let mut w = window(1);
        let far = 200 - ROLLBACK_DISTANCE;
        assert!(!w.late_unreceived(Seq(far - 2)) && !w.late_unreceived(Seq(far - 1)));
        assert!(w.late_unreceived(Seq(far)), "exactly the distance behind counts");
    }

    /// After a forged jump of the whole window and a failed packet with its number, the window is
    /// back where it was, with the number missing, and still reaches ACK_WINDOW past it.
    #[test]
    fn a_restored_window_forgets_the_number_and_keeps_its_reach() {
        let mut w = ReceiveWindow::new(Seq(10));
        w.accept(Seq(10), 1);
        w.accept(Seq(11), 2);
        let forged = 11 + ACK_WINDOW;
        w.accept(Seq(forged), 3);
        assert!(w.differs(4), "the server's packet with the forged number");
        w.accept(Seq(forged), 4);
        assert!(w.restore(), "…failed: back to before the first packet numbered {forged}");
        assert_eq!(w.highest(), Seq(11));
        assert!(w.received().get(0) && w.received().get(1));
        assert!(!w.differs(2), "packet 11 is the newest again");
        assert_eq!(w.verdict(Seq(forged)), SeqVerdict::New, "the number is missing");
        assert_eq!(w.verdict(Seq(forged + ACK_WINDOW)), SeqVerdict::New, "the reach stays");
        assert_eq!(w.verdict(Seq(forged + ACK_WINDOW + 1)), SeqVerdict::TooFar);
        assert!(!w.restore(), "once");
        w.accept(Seq(forged + 1), 5);
        assert!(!w.received().get(1) && w.received().get(0), "{forged} reported missing, 11 out of reach");
        assert!(w.restore(), "a new number keeps a state to go back to");
        assert_eq!(w.highest(), Seq(11));
    }
}
