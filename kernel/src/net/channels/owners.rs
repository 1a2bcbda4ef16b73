//! A sub-object's owner on one connection's frame. UE sends sub-objects in their owner's
//! channel, so what a sub-object may do here follows its owner's pair: held (the client has the
//! owner), in its initial bunch, dormant or woken, torn off.
//!
//! Sub-objects rank right behind their owner (its priority, their GUIDs after its), so the
//! owner's row is nearly always that of the actor processed just before: [`LastActor`] carries
//! it, and only a sub-object whose owner went earlier in the frame, or not at all, looks the
//! owner up (a binary search in the rows, and one in the dormant copies when that misses).

use super::{rows_of, Cand};
use crate::net::connection::{pair, Connection};
use crate::net::relevancy::DueActor;

/// The last actor (not a sub-object) the send loop processed: its (class, slot) and its row.
#[derive(Clone, Copy, Default)]
pub(super) struct LastActor(Option<((u32, u32), u32)>);

impl LastActor {
    /// Candidate `cand` is being processed.
    #[inline]
    pub fn processing(&mut self, due: &DueActor, cand: Cand) {
        if due.owner_slot.is_none() {
            self.0 = Some(((due.class, due.slot), cand.row));
        }
    }

    /// The flags of sub-object `due`'s owner's pair on this connection — its channel row, or
    /// else its dormant copy — if it has one; `None` for an actor. Read anew at each call (the
    /// owner's row may have changed since its turn: closed, torn off, dormant).
    #[inline]
    pub fn owner_flags(&self, conn: &Connection, due: &DueActor) -> Option<u8> {
        let owner = due.owner_slot?;
        match self.0 {
            // The candidate's row is the pair's row (`Pairs::get` finds the rows first).
            Some((key, row)) if key == owner => Some(rows_of(conn)[row as usize].state.flags),
            _ => conn.pairs.get(owner.0, owner.1).map(|ps| ps.flags),
        }
    }

    /// The relevancy clock (`relevant_time`) of sub-object `due`'s owner's channel here, while
    /// that channel is open — not dormant, not torn off: what keeps the sub-object's channel
    /// (UE replicates a sub-object inside its owner's channel: it has no relevancy of its own,
    /// and closes with the owner, never before). `None` for an actor, or an owner without an
    /// open channel here.
    #[inline]
    pub fn owner_relevant_time(&self, conn: &Connection, due: &DueActor) -> Option<f64> {
        let owner = due.owner_slot?;
        let row = match self.0 {
            Some((key, row)) if key == owner => &rows_of(conn)[row as usize],
            _ => conn.pairs.channel(owner.0, owner.1)?,
        };
        let open = row.state.flags & (pair::CHANNEL | pair::DORMANT | pair::TORN) == pair::CHANNEL;
        open.then_some(row.relevant_time)
    }
}

/// How a sub-object's owner's copy is held on a connection, as far as dormancy goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Held {
    /// Not a sub-object, or its owner is neither of the below.
    No,
    /// The owner's channel is closed for dormancy: the client keeps it as it was.
    Dormant,
    /// The owner was woken (flushed) and nothing was sent to it since: it may go back to
    /// dormant here, stale, if it is not relevant.
    Woken,
}

/// How a sub-object's owner whose pair has `owner` flags is held (dormancy).
pub(super) fn hold(owner: Option<u8>) -> Held {
    match owner {
        Some(f) if f & pair::DORMANT != 0 => Held::Dormant,
        Some(f) if f & pair::WOKEN != 0 => Held::Woken,
        _ => Held::No,
    }
}

/// Whether sub-object `due` would open a channel under an owner held dormant on this connection
/// (its owner's pair flagged dormant, stale or not): it must not — it waits for the owner to wake
/// (UE sends sub-objects inside their owner's channel, closed for dormancy). False for an actor.
#[inline]
pub(super) fn opens_with_dormant_owner(conn: &Connection, last: &LastActor, due: &DueActor) -> bool {
    due.condition.is_some() && hold(last.owner_flags(conn, due)) == Held::Dormant
}

/// Whether the client has a sub-object's owner whose pair has `owner` flags: a channel (open,
/// opening, or torn off this frame) or a dormant copy.
pub(super) fn held(owner: Option<u8>) -> bool {
    owner.is_some_and(|f| f & (pair::CHANNEL | pair::DORMANT | pair::TORN) != 0)
}

/// Whether an initial-only sub-object (row `ri`; its owner's pair has `owner` flags) may go
/// here: while its owner's channel is in its initial bunch — open or opening, its open not
/// acknowledged (nor held dormant, nor torn off) — or, its own channel opened then, until its
/// open is delivered: a candidate with a channel owes its open (the skip took it otherwise),
/// lost after the owner's was acknowledged, and UE's initial bunch, reliable, would go again
/// with it.
pub(super) fn initial_window(conn: &Connection, ri: u32, owner: Option<u8>) -> bool {
    let initial = |f: u8| f & pair::CHANNEL != 0 && f & (pair::OPEN_ACKED | pair::DORMANT | pair::TORN) == 0;
    rows_of(conn)[ri as usize].state.flags & pair::CHANNEL != 0 || owner.is_some_and(initial)
}

/// Tearing sub-object `due`'s last update waits for the window here: if its owner's channel
/// closed TornOff (the client keeps the owner), the owner's row stays until its tear-off ends,
/// so the update still finds the owner when it goes (not only in this frame).
pub(super) fn hold_torn_owner(conn: &mut Connection, due: &DueActor) {
    let Some((c, s)) = due.owner_slot else { return };
    if conn.pairs.get(c, s).is_some_and(|ps| ps.flags & pair::TORN != 0) {
        let key = crate::net::pairs::pair_key(c, s);
        if let Err(i) = conn.held_torn.binary_search(&key) {
            conn.held_torn.insert(i, key);
        }
    }
}
