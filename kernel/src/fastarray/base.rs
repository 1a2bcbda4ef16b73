//! One connection's base: what its client is known to hold, and the deltas in flight.
//!
//! ```text
//! acked      every item with key ≤ acked is on the client with its current value, and every
//!            removal ≤ acked is applied there (UE's acknowledged id → key map, as one cursor)
//! sent       optimistic: the next delta starts after it
//! in flight  token → (from, to], acked or not, in writing order (at most MAX_IN_FLIGHT_DELTAS)
//! delivered  the newest array key of a delta the client is known to have applied: its
//!            receiver's newest key is at least this (a short key is read against that)
//!
//! on_sent((from, to], key):  remember it (key: the delta's array key; none for a range settled
//!                       with nothing to send); sent = to
//! acked(token):         mark it; delivered = max(delivered, its key); while some acked delta
//!                       has from ≤ acked < to: acked = to;
//!                       forget deltas with to ≤ acked; sent = max(sent, acked)
//! lost(token):          forget it; sent = acked     (the next delta covers the lost range again)
//! ```
//!
//! Deltas after a rollback start at the acknowledged cursor, so acknowledged deltas always chain
//! from it: a range acknowledged out of order waits ("parked") until the ranges before it are
//! acknowledged, or is covered again by a later delta. Forgetting a delta that is still in flight
//! (the cap) rolls back as a loss does, so no range is ever left unreachable.

use super::{ArrayKey, DeltaToken, MAX_IN_FLIGHT_DELTAS};
use std::collections::VecDeque;

/// The array keys one delta covers: `(from, to]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyRange {
    /// The cursor the delta starts after.
    pub from: ArrayKey,
    /// The last key it covers.
    pub to: ArrayKey,
}

/// One delta written and not yet settled.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    token: DeltaToken,
    range: KeyRange,
    /// The array key the delta carried; `None` for a range settled without a delta.
    key: Option<ArrayKey>,
    acked: bool,
}

/// One connection's base in a fast array.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionBase {
    /// The array key when the connection was added: removals at or before it never reach it.
    joined: ArrayKey,
    acked: ArrayKey,
    /// The newest array key of a delta acknowledged (see the module docs). Not `acked`: a range
    /// with nothing for this client (removals from before it joined) is settled without a
    /// delta, so `acked` can run far ahead of what the client's receiver has seen.
    delivered: ArrayKey,
    sent: ArrayKey,
    in_flight: VecDeque<InFlight>,
    next_token: u32,
    /// The change log dropped removals this base lacked ([`super::MAX_PINNED_REMOVALS`]): it
    /// cannot write a delta any more.
    expired: bool,
}

impl ConnectionBase {
    /// A connection added when the array key was `joined`: its client holds nothing.
    pub fn new(joined: ArrayKey) -> Self {
        Self {
            joined,
            acked: ArrayKey(0),
            delivered: ArrayKey(0),
            sent: ArrayKey(0),
            in_flight: VecDeque::new(),
            next_token: 0,
            expired: false,
        }
    }

    /// The array key when the connection was added.
    pub fn joined(&self) -> ArrayKey {
        self.joined
    }

    /// The acknowledged cursor.
    pub fn acked_key(&self) -> ArrayKey {
        self.acked
    }

    /// The newest array key of a delta acknowledged: the client's receiver has applied at least
    /// this key (0 before any).
    pub fn delivered_key(&self) -> ArrayKey {
        self.delivered
    }

    /// The optimistic cursor the next delta starts after.
    pub fn sent_key(&self) -> ArrayKey {
        self.sent
    }

    /// Removals at or before this key are never needed by this connection again.
    pub fn floor(&self) -> ArrayKey {
        self.acked.max(self.joined)
    }

    /// Whether the change log dropped removals this base lacked.
    pub fn expired(&self) -> bool {
        self.expired
    }

    /// The change log is about to drop the removals this base lacks.
    pub fn expire(&mut self) {
        self.expired = true;
    }

    /// Deltas in flight (or acknowledged out of order and parked).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Makes room for one more delta: at [`MAX_IN_FLIGHT_DELTAS`] the oldest is forgotten and the
    /// connection rolls back to its acknowledged cursor.
    pub fn make_room(&mut self) {
        while self.in_flight.len() >= MAX_IN_FLIGHT_DELTAS {
            self.in_flight.pop_front();
            self.sent = self.acked;
        }
    }

    /// Remembers a delta covering `range` (which starts at the sent cursor) and carrying array
    /// key `key` (`None`: the range is settled with nothing sent) and returns its token.
    pub fn on_sent(&mut self, range: KeyRange, key: Option<ArrayKey>) -> DeltaToken {
        debug_assert_eq!(range.from, self.sent);
        let token = DeltaToken(self.next_token);
        self.next_token = self.next_token.wrapping_add(1);
        self.in_flight.push_back(InFlight { token, range, key, acked: false });
        self.sent = range.to;
        token
    }

    /// The packet carrying `token` was acknowledged. False for a token not in flight (settled,
    /// forgotten or never written), which changes nothing.
    pub fn acked(&mut self, token: DeltaToken) -> bool {
        let Some(f) = self.in_flight.iter_mut().find(|f| f.token == token) else { return false };
        f.acked = true;
        // Applied by the client now, even if parked behind an earlier range.
        self.delivered = self.delivered.max(f.key.unwrap_or_default());
        loop {
            let next = self.in_flight.iter().find(|f| f.acked && f.range.from <= self.acked && f.range.to > self.acked);
            match next {
                Some(f) => self.acked = f.range.to,
                None => break,
            }
        }
        let acked = self.acked;
        self.in_flight.retain(|f| f.range.to > acked);
        self.sent = self.sent.max(self.acked);
        true
    }

    /// The packet carrying `token` was lost: the next delta starts at the acknowledged cursor.
    /// False for a token not in flight (its range is already acknowledged, or it was forgotten).
    pub fn lost(&mut self, token: DeltaToken) -> bool {
        let Some(at) = self.in_flight.iter().position(|f| f.token == token) else { return false };
        self.in_flight.remove(at);
        self.sent = self.acked;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: u64, to: u64) -> KeyRange {
        KeyRange { from: ArrayKey(from), to: ArrayKey(to) }
    }

    #[test]
    fn the_base_advances_on_ack_not_on_send() {
        let mut b = ConnectionBase::new(ArrayKey(0));
        let t = b.on_sent(range(0, 10), None);
        assert_eq!((b.acked_key(), b.sent_key()), (ArrayKey(0), ArrayKey(10)));
        assert!(b.acked(t));
        assert_eq!(b.acked_key(), ArrayKey(10));
        assert!(!b.acked(t), "settled");
        assert!(!b.lost(t), "a loss after the ack changes nothing");
        assert_eq!(b.sent_key(), ArrayKey(10));
    }

    #[test]
    fn a_loss_rolls_back_and_a_later_ack_waits_for_the_gap() {
        let mut b = ConnectionBase::new(ArrayKey(0));
        let t1 = b.on_sent(range(0, 10), None);
        let t2 = b.on_sent(range(10, 20), None);
        assert!(b.acked(t2));
        assert_eq!(b.acked_key(), ArrayKey(0), "(10, 20] is parked: (0, 10] is not acknowledged");
        assert!(b.lost(t1));
        assert_eq!(b.sent_key(), ArrayKey(0), "the next delta covers (0, 10] again");
        let t3 = b.on_sent(range(0, 15), None);
        assert!(b.acked(t3));
        assert_eq!(b.acked_key(), ArrayKey(20), "the parked (10, 20] chains on");
        assert_eq!(b.sent_key(), ArrayKey(20));
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn acks_in_any_order_end_at_the_last_key() {
        let mut b = ConnectionBase::new(ArrayKey(0));
        let tokens: Vec<_> = (0..5).map(|i| b.on_sent(range(i * 10, i * 10 + 10), None)).collect();
        for &t in tokens.iter().rev() {
            assert!(b.acked(t));
        }
        assert_eq!(b.acked_key(), ArrayKey(50));
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn the_in_flight_cap_forgets_the_oldest_and_rolls_back() {
        let mut b = ConnectionBase::new(ArrayKey(0));
        let mut first = None;
        for i in 0..MAX_IN_FLIGHT_DELTAS as u64 {
            b.make_room();
            let t = b.on_sent(range(i, i + 1), None);
            first.get_or_insert(t);
        }
        assert_eq!(b.in_flight(), MAX_IN_FLIGHT_DELTAS, "at the cap, nothing forgotten yet");
        assert_eq!(b.sent_key(), ArrayKey(MAX_IN_FLIGHT_DELTAS as u64));
        b.make_room();
        assert_eq!(b.in_flight(), MAX_IN_FLIGHT_DELTAS - 1);
        assert_eq!(b.sent_key(), ArrayKey(0), "rolled back");
        assert!(!b.acked(first.unwrap()), "the forgotten delta's ack is ignored");
        assert_eq!(b.acked_key(), ArrayKey(0));
    }
}
