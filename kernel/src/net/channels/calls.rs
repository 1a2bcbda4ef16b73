//! Channels a saturated frame opens for the tick's calls (UE's `InternalProcessRemoteFunction`).
//!
//! ```text
//! UE, at a call on an actor with no channel on the connection (not being destroyed, its level
//!   loaded there): creates the channel and replicates the actor at once, outside the priority
//!   list and whatever the budget, then sends the call down it — for a reliable call, or a
//!   multicast where the actor is relevant (an unreliable Client call it drops on a connection
//!   that is not net-ready)
//! here, after the send loop of a frame that saturated, before the calls are written:
//!   each leftover actor without a channel (relevant now, not a sub-object, not tearing off)
//!   that a call of the tick opens for (reliable, or a multicast, reaching this connection),
//!   in the order of its first such call:
//!       open its channel, replicate it (its open, with every current value), outside the
//!       budget; relevant_time = 0, UE's fresh channel's (rechecked when next considered);
//!       it stays a leftover (considered next frame)
//! ```
//!
//! Without this a reliable call on an actor a saturated frame left unopened — a projectile's
//! `MulticastExplode` in the hot drop's crowd, a Client call on a pickup just spawned beside a
//! busy player — found no channel and was lost. The calls are written after the frame's actors
//! ([`crate::net::rpc`]), so the channel they need opens there too, where UE opens it before the
//! frame; a frame that did not saturate left no relevant actor without a channel. Actors not
//! considered this frame, and dormant copies, still get no channel for a call (the README's
//! departures).

use super::process::{open_row, Run};
use super::replicate::replicate;
use super::{rows, Action, Cand, LevelCtx, Scratch, SendDecision};
use crate::net::connection::{pair, Connection};

/// Opens, replicates and records the channels this connection's leftovers (from place `from` in
/// the send order) need for the tick's calls (see the module documentation).
pub(super) fn open_for_calls(
    ctx: &LevelCtx<'_>,
    run: &mut Run<'_>,
    conn: &mut Connection,
    scratch: &mut Scratch,
    from: usize,
) {
    let Scratch { cands, order, call_keys, call_opens, .. } = scratch;
    // The leftovers a call could open: no channel (nor a dormant or torn-off copy), relevant now,
    // not a sub-object (it rides its owner's channel), not tearing off — by key, each with its
    // place in `cands` and its priority key.
    call_keys.clear();
    let all = rows(conn);
    for j in from..order.len() {
        let (priority, index) = order.get(j);
        let Cand { row, due: d, relevant_now } = cands[index as usize];
        let due = &ctx.due[d as usize];
        let r = &all[row as usize];
        let closed = r.state.flags & (pair::CHANNEL | pair::DORMANT | pair::TORN) == 0;
        if closed && relevant_now && due.condition.is_none() && !due.actor.tearing {
            call_keys.push((r.key, index, priority));
        }
    }
    if call_keys.is_empty() {
        return;
    }
    call_keys.sort_unstable();
    ctx.write.calls.opening(conn.id, call_keys, |&(key, _, _)| key, call_opens);
    let Run { ci, st, out, decisions } = run;
    let now = ctx.time.now;
    for &(_, k) in call_opens.iter() {
        let (_, index, priority) = call_keys[k as usize];
        let Cand { row: ri, due: d, .. } = cands[index as usize];
        let due = &ctx.due[d as usize];
        open_row(conn, ri as usize, due);
        let row = &mut rows(conn)[ri as usize];
        row.relevant_time = 0.0;
        row.last_update = now;
        if due.actor.fast {
            let arrays = ctx.fast_arrays_of(due).iter().copied();
            ctx.write.fast.restart_for_connection(*ci as usize, &mut conn.quiet, arrays);
        }
        let before = ctx.write.bits_written(conn);
        replicate(ctx, *ci, conn, st, ri as usize, d, &mut out.first_opens);
        out.processed += 1;
        if let Some(dec) = decisions.as_deref_mut() {
            let bits = (ctx.write.bits_written(conn) - before) as u32;
            let action = Action::OpenedForCall;
            dec.sends.push(SendDecision { guid: due.actor.guid, priority, action, bits });
        }
    }
}
