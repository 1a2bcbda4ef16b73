//! Dormancy's part of one connection's frame (see `net::dormancy` for the whole): a settled
//! channel closed with reason Dormant, and the due actors that want dormancy but that this
//! connection holds awake.

use super::{rows, Cand, LevelCtx};
use crate::net::connection::{pair, Connection, PendingClose};
use crate::net::dormancy::dormant_for;
use crate::net::level::NOT_DUE;
use crate::net::pairs::Pairs;
use crate::net::relevancy::DueActor;
use crate::net::send::FrameWrite;
use crate::wire::open::CloseReason;

/// Closes a channel for dormancy once it is settled — its open acknowledged, nothing owed that
/// this connection would be sent now (a resend of a leaf active here, or an initial value a
/// lost open owes; a change active here since its last send), no bunch in flight, its fast
/// arrays settled — so the copy the client keeps is the actor's current state as this
/// connection sees it; the row stays, flagged, as what the client keeps (with what it owes
/// for roles it may come to have). (A sub-object following its dormant owner while not
/// relevant sends what it owes first, as UE's channel closes only once every replicator on it
/// is up to date.)
pub(super) fn go_dormant(
    ctx: &LevelCtx<'_>,
    ci: u32,
    conn: &mut Connection,
    st: &mut FrameWrite,
    row: usize,
    due: &DueActor,
) -> bool {
    let guid = due.actor.guid;
    let ps = rows(conn)[row].state;
    let c = &ctx.write.classes[due.class as usize];
    let active = || due.actor.active_leaves(&c.active, due.actor.flags(ci, conn.replay, false));
    let owed = || {
        let key = crate::net::pairs::pair_key(due.class, due.slot);
        ps.resend & (active() | conn.unsent_initial.get(key, ps.epoch))
    };
    let pending = || !(c.history.changed_since(due.slot, ps.sent_through) & active()).is_empty();
    let settled = ps.flags & pair::OPEN_ACKED != 0
        && (ps.resend.is_empty() || owed().is_empty())
        && !conn.rel.carries(ps.last_packet)
        && ctx.write.fast.settled_for(guid, ci as usize)
        && (due.last_changed <= ps.sent_through || !pending());
    let closed = settled && ctx.write.write_close(conn, st, PendingClose { guid, reason: CloseReason::Dormant });
    if closed {
        conn.closes.note(guid, &ps);
        rows(conn)[row].state.flags |= pair::DORMANT;
    }
    closed
}

/// Reports the due actors that want dormancy and that this connection holds awake: a channel
/// open and not dormant, or relevant now without a channel (it must get the actor once).
pub(super) fn held_awake(ctx: &LevelCtx<'_>, conn: &mut Connection, cands: &[Cand], awake: &mut Vec<u32>) {
    let rows = rows(conn);
    for c in cands {
        if !ctx.due[c.due as usize].sleepy {
            continue;
        }
        let flags = rows[c.row as usize].state.flags;
        let open = flags & pair::CHANNEL != 0 && flags & pair::DORMANT == 0;
        if open || (flags & pair::CHANNEL == 0 && c.relevant_now) {
            awake.push(c.due);
        }
    }
}

/// The same for a connection that is not replicated to this frame (not heard from): its open
/// channels hold their actors awake.
pub(super) fn held_awake_idle(ctx: &LevelCtx<'_>, conn: &mut Connection, awake: &mut Vec<u32>) {
    let Pairs::Channels { rows, .. } = &conn.pairs else { return };
    // Between frames dormant copies live in the other table and every row here is a channel (a
    // frame that does not replicate drops its gone actors' rows at once): the filter is a guard.
    let mut due_of = super::candidates::DueOf::new(ctx);
    for r in rows.iter().filter(|r| r.state.flags & pair::CHANNEL != 0) {
        let d = due_of.get(r.key);
        if d != NOT_DUE && ctx.due[d as usize].sleepy {
            awake.push(d);
        }
    }
}

/// Whether `due` wants to be dormant for connection `conn` by its own setting.
pub(super) fn wants_dormancy(ctx: &LevelCtx<'_>, conn: crate::ids::ConnectionId, due: &DueActor) -> bool {
    due.dormancy.dormant() && dormant_for(due, conn, ctx.dormancy_hooks)
}
