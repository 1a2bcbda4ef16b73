//! Level visibility over a session: the client tells the server which sublevels it has loaded
//! (UE's `ServerUpdateLevelVisibility`, acknowledged as UE 5's `ClientAckUpdateLevelVisibility`),
//! so the server opens channels only to actors the client can hold
//! ([`crate::net::sublevels`]).
//!
//! ```text
//! 0x15 levels     | 15 | token u64 | seq u32 | n u16 | sublevel u16 × n |   client → server
//!                   every sublevel the client has loaded now (the persistent level, always
//!                   loaded, not listed), strictly increasing, n ≤ MAX_LEVELS
//! 0x16 levels ack | 16 | token u64 | seq u32 |                             server → client
//!                   the newest seq the server applied: 13 bytes, never more than the levels
//!                   datagram that caused it (15 bytes at least)
//! ```
//!
//! The message is state, not a change: each carries the whole set under a sequence number the
//! client raises with every change (going round past `u32::MAX` to 1, compared as serial
//! numbers), and the server applies a set only if its number is newer than the last one it
//! applied. So a lost, duplicated or late datagram changes nothing — the client sends its newest set
//! ([`super::SessionClient::levels`], once a tick) until an ack of exactly that number comes —
//! and a set is applied at most once. A server answers each levels datagram of its session
//! with an ack of the newest number it applied, no larger than the datagram — except a newer
//! set it throttles ([`super::MIN_LEVELS_INTERVAL`]): that one gets nothing, and goes again.
//!
//! Hostile input: the list is capped at [`MAX_LEVELS`] and refused unless strictly increasing
//! (so no duplicates), checked before anything is allocated; an ack of a number the client never
//! sent is dropped. A plain session's token guards against blind third parties only (as for
//! feedback): one who reads the traffic could send a set with a far higher number and freeze
//! the client's later sets out — a sealed session rules that out.

use super::frame::FrameError;
use crate::net::SublevelId;
use std::collections::BTreeSet;
use std::fmt;

/// Most sublevels a levels datagram lists (beside the persistent level).
pub const MAX_LEVELS: usize = 1024;

/// Bytes of a levels ack.
pub const LEVELS_ACK_BYTES: usize = 1 + 8 + 4;

/// Bytes of the smallest levels datagram (an empty list).
pub const MIN_LEVELS_BYTES: usize = 1 + 8 + 4 + 2;

const _: () = assert!(LEVELS_ACK_BYTES <= MIN_LEVELS_BYTES);
const _: () = assert!(MIN_LEVELS_BYTES + 2 * MAX_LEVELS <= super::frame::MAX_PLAIN_DATAGRAM);

/// Why a client's level set refused a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelError {
    /// The persistent level cannot be unloaded.
    Persistent,
    /// Loading it would list more than [`MAX_LEVELS`] sublevels.
    TooMany,
}

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelError::Persistent => write!(f, "the persistent level cannot be unloaded"),
            LevelError::TooMany => write!(f, "more than {MAX_LEVELS} sublevels loaded"),
        }
    }
}

impl std::error::Error for LevelError {}

/// A client's loaded sublevels, numbered, and the newest number the server acknowledged.
#[derive(Clone, Debug, Default)]
pub(crate) struct LevelSet {
    loaded: BTreeSet<SublevelId>,
    /// Raised by every change (0: none yet, nothing to tell).
    seq: u32,
    acked: u32,
}

impl LevelSet {
    /// Loads or unloads `l`; whether that changed the set (and so its number).
    pub fn set(&mut self, l: SublevelId, loaded: bool) -> Result<bool, LevelError> {
        if l == SublevelId::PERSISTENT {
            return if loaded { Ok(false) } else { Err(LevelError::Persistent) };
        }
        if loaded && !self.loaded.contains(&l) && self.loaded.len() >= MAX_LEVELS {
            return Err(LevelError::TooMany);
        }
        let changed = if loaded { self.loaded.insert(l) } else { self.loaded.remove(&l) };
        if changed {
            self.seq = self.seq.wrapping_add(1).max(1);
        }
        Ok(changed)
    }

    /// Whether `l` is loaded.
    pub fn is_loaded(&self, l: SublevelId) -> bool {
        l == SublevelId::PERSISTENT || self.loaded.contains(&l)
    }

    /// The loaded sublevels (not the persistent level), in order.
    pub fn loaded(&self) -> impl Iterator<Item = SublevelId> + '_ {
        self.loaded.iter().copied()
    }

    /// The set to send, with its number, while the server has not acknowledged it.
    pub fn unacked(&self) -> Option<(u32, Vec<SublevelId>)> {
        (self.seq != self.acked).then(|| (self.seq, self.loaded().collect()))
    }

    /// The server acknowledged `seq`: false (and nothing changes) for a number never sent (0,
    /// or one after the newest).
    pub fn ack(&mut self, seq: u32) -> bool {
        if seq == 0 || self.seq == 0 || newer(seq, self.seq) {
            return false;
        }
        if newer(seq, self.acked) {
            self.acked = seq;
        }
        true
    }
}

/// Whether levels number `a` comes after `b`: numbers go round past `u32::MAX` (to 1, 0 being
/// "none yet"), so `a` is newer when it is less than half the circle ahead (RFC 1982 serial
/// numbers). A client's numbers are never half the circle apart from the last one the server
/// applied: that takes two billion changes in one round trip.
pub(super) fn newer(a: u32, b: u32) -> bool {
    // The packets' serial arithmetic, on another counter.
    crate::ids::Seq(a).ahead_of(crate::ids::Seq(b)) > 0
}

/// Appends a levels datagram's list: its count, then each sublevel.
pub(super) fn put_levels(out: &mut Vec<u8>, levels: &[SublevelId]) {
    // Encoding is for our own values (at most MAX_LEVELS, in order); the count is clamped so
    // the bytes stay self-consistent.
    let n = levels.len().min(MAX_LEVELS);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    for l in &levels[..n] {
        out.extend_from_slice(&l.0.to_le_bytes());
    }
}

/// Reads a levels datagram's list from `bytes` (the rest of the datagram after its number):
/// the count, then exactly that many strictly increasing sublevels — nothing allocated before
/// the length is checked.
pub(super) fn read_levels(kind: u8, bytes: &[u8]) -> Result<Vec<SublevelId>, FrameError> {
    let (count, list) = bytes.split_first_chunk::<2>().ok_or(FrameError::Truncated(kind))?;
    let n = u16::from_le_bytes(*count) as usize;
    if n > MAX_LEVELS {
        return Err(FrameError::TooManyLevels(n));
    }
    match list.len().cmp(&(2 * n)) {
        std::cmp::Ordering::Less => return Err(FrameError::Truncated(kind)),
        std::cmp::Ordering::Greater => return Err(FrameError::Trailing(kind)),
        std::cmp::Ordering::Equal => {}
    }
    let levels: Vec<SublevelId> = list.chunks_exact(2).map(|b| SublevelId(u16::from_le_bytes([b[0], b[1]]))).collect();
    if levels.first() == Some(&SublevelId::PERSISTENT) || levels.windows(2).any(|w| w[0] >= w[1]) {
        return Err(FrameError::UnorderedLevels);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_raises_the_number_and_an_ack_of_it_or_later_silences_the_set() {
        let mut s = LevelSet::default();
        assert_eq!(s.unacked(), None, "nothing to tell yet");
        assert_eq!(s.set(SublevelId(3), true), Ok(true));
        assert_eq!(s.set(SublevelId(3), true), Ok(false), "no change, no number");
        assert_eq!(s.set(SublevelId(1), true), Ok(true));
        assert_eq!(s.unacked(), Some((2, vec![SublevelId(1), SublevelId(3)])));
        assert!(!s.ack(3), "never sent");
        assert!(s.ack(1));
        assert_eq!(s.unacked().map(|u| u.0), Some(2), "an older ack leaves the newest owed");
        assert!(s.ack(2));
        assert_eq!(s.unacked(), None);
        assert!(s.ack(1), "a late older ack changes nothing");
        assert_eq!(s.unacked(), None);
        assert_eq!(s.set(SublevelId(3), false), Ok(true));
        assert_eq!(s.unacked(), Some((3, vec![SublevelId(1)])));
        assert!(s.is_loaded(SublevelId::PERSISTENT) && s.is_loaded(SublevelId(1)) && !s.is_loaded(SublevelId(3)));
    }

    #[test]
    fn the_numbers_go_round_past_the_largest_to_1_and_acks_follow() {
        let mut s = LevelSet { seq: u32::MAX - 1, acked: u32::MAX - 1, ..LevelSet::default() };
        assert_eq!(s.set(SublevelId(3), true), Ok(true));
        assert_eq!(s.unacked().map(|u| u.0), Some(u32::MAX));
        assert!(s.ack(u32::MAX));
        assert_eq!(s.unacked(), None);
        assert_eq!(s.set(SublevelId(3), false), Ok(true));
        assert_eq!(s.unacked().map(|u| u.0), Some(1), "0 is skipped: it means none yet");
        assert!(!s.ack(2) && !s.ack(0), "never sent");
        assert!(s.ack(u32::MAX - 1), "a late ack from before the turn is old");
        assert_eq!(s.unacked().map(|u| u.0), Some(1), "and silences nothing");
        assert!(s.ack(1));
        assert_eq!(s.unacked(), None);
        assert!(newer(1, u32::MAX) && !newer(u32::MAX, 1) && newer(0x7fff_ffff, 0) && !newer(0x8000_0000, 0));
    }

    #[test]
    fn the_persistent_level_stays_and_the_set_is_capped() {
        let mut s = LevelSet::default();
        assert_eq!(s.set(SublevelId::PERSISTENT, false), Err(LevelError::Persistent));
        assert_eq!(s.set(SublevelId::PERSISTENT, true), Ok(false));
        for l in 1..=MAX_LEVELS as u16 {
            assert_eq!(s.set(SublevelId(l), true), Ok(true));
        }
        let before = s.unacked();
        assert_eq!(s.set(SublevelId(5000), true), Err(LevelError::TooMany));
        assert_eq!(s.unacked(), before, "a refused change loses nothing and changes nothing");
        assert_eq!(s.set(SublevelId(7), true), Ok(false), "one already loaded is no change");
        assert_eq!(s.set(SublevelId(7), false), Ok(true));
        assert_eq!(s.set(SublevelId(5000), true), Ok(true));
    }

    #[test]
    fn lists_that_are_not_strictly_increasing_or_too_long_or_cut_are_refused() {
        let list = |n: u16, items: &[u16]| {
            let mut b = n.to_le_bytes().to_vec();
            items.iter().for_each(|i| b.extend_from_slice(&i.to_le_bytes()));
            b
        };
        assert_eq!(read_levels(0x15, &list(2, &[1, 9])), Ok(vec![SublevelId(1), SublevelId(9)]));
        assert_eq!(read_levels(0x15, &list(0, &[])), Ok(vec![]));
        assert_eq!(read_levels(0x15, &list(2, &[9, 1])), Err(FrameError::UnorderedLevels));
        assert_eq!(read_levels(0x15, &list(2, &[4, 4])), Err(FrameError::UnorderedLevels));
        assert_eq!(read_levels(0x15, &list(1, &[0])), Err(FrameError::UnorderedLevels), "the persistent level");
        assert_eq!(read_levels(0x15, &list(3, &[1, 2])), Err(FrameError::Truncated(0x15)));
        assert_eq!(read_levels(0x15, &list(1, &[1, 2])), Err(FrameError::Trailing(0x15)));
        assert_eq!(read_levels(0x15, &[1]), Err(FrameError::Truncated(0x15)));
        let n = MAX_LEVELS as u16 + 1;
        assert_eq!(read_levels(0x15, &list(n, &[])), Err(FrameError::TooManyLevels(n as usize)));
        let mut out = Vec::new();
        put_levels(&mut out, &[SublevelId(2), SublevelId(40_000)]);
        assert_eq!(read_levels(0x15, &out), Ok(vec![SublevelId(2), SublevelId(40_000)]));
    }
}
