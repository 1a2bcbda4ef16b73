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
//!       budget; relevant_time = now + 0.5 · jitter, as UE's frame marks the channel the call
//!       opened before it; it stays a leftover (considered next frame)
//! ```
//!
//! Without this a reliable call on an actor a saturated frame left unopened — a projectile's
//! `MulticastExplode` in the hot drop's crowd, a Client call on a pickup just spawned beside a
//! busy player — found no channel and was lost. The calls are written after the frame's actors
//! ([`crate::net::rpc`]), so the channel they need opens there too, where UE opens it before the
//! frame; a frame that did not saturate left no relevant actor without a channel (one whose
//! open found the window full has its channel, the open owed: a reliable call waits for it,
//! [`crate::net::rpc`]'s `Chan::Owed`). Actors not considered this frame, dormant copies and
//! sub-objects still get no channel for a call (the README's departures).

use super::process::{open_row, Run};
use super::replicate::replicate;
use super::{rows, Action, LevelCtx, Scratch, SendDecision};
use crate::net::connection::{pair, Connection};
use crate::net::pairs::find;
use crate::net::relevancy::has_due;

/// Opens, replicates and records the channels this saturated connection's leftovers need for
/// the tick's calls (see the module documentation). The calls that could open one on a due
/// actor are listed once a frame, in call order ([`crate::net::rpc::FrameCalls::openers`]):
/// each reaching this connection is matched against its leftovers' bits (`out.pending`), then
/// its actor's row — a few steps a call, never a pass over the leftovers (thousands a
/// connection in a hot drop).
pub(super) fn open_for_calls(ctx: &LevelCtx<'_>, run: &mut Run<'_>, conn: &mut Connection, scratch: &Scratch) {
    let calls = ctx.write.calls;
    let Run { ci, st, out, decisions } = run;
    let now = ctx.time.now;
    for &(i, d, key) in calls.openers() {
        // A leftover: pending, and (with no channel) relevant now.
        if !has_due(&out.pending, d) || !calls.reaches(i as usize, conn.id) {
            continue;
        }
        // Not a sub-object (it rides its owner's channel), not tearing off (a tearing actor
        // without a channel has no candidate row: kept as the rule, should that change).
        let due = &ctx.due[d as usize];
        if due.condition.is_some() || due.actor.tearing {
            continue;
        }
        // No channel (a channel an earlier call opened: its actor's first call did). A dormant
        // row has CHANNEL too, and a torn-off one is never a leftover: the bits say the rule.
        let Some(ri) = find(rows(conn), key) else { continue };
        if rows(conn)[ri].state.flags & (pair::CHANNEL | pair::DORMANT | pair::TORN) != 0 {
            continue;
        }
        open_row(conn, ri, due);
        let row = &mut rows(conn)[ri];
        // UE's channel, opened at the call before the frame, is among the frame's candidates,
        // and the frame — reaching it or leaving it over — finds it relevant and marks it so for
        // a while (`RelevantTime = now + 0.5 · FRand`). (With UE's fresh channel's 0, a channel
        // whose actor left the viewer's range closed at the next frame that reached it, and the
        // reliable call still waiting for its open's acknowledgement was lost: a review's find.)
        row.relevant_time = super::relevant_until(now, due.actor.guid, *ci, ctx.time.frame);
        row.last_update = now;
        if due.actor.fast {
            let arrays = ctx.fast_arrays_of(due).iter().copied();
            ctx.write.fast.restart_for_connection(*ci as usize, &mut conn.quiet, arrays);
        }
        let before = ctx.write.bits_written(conn);
        replicate(ctx, *ci, conn, st, ri, d, &mut out.first_opens);
        out.processed += 1;
        conn.stats.channels_opened_for_calls += 1;
        if let Some(dec) = decisions.as_deref_mut() {
            let bits = (ctx.write.bits_written(conn) - before) as u32;
            // Its priority key, as ranked (recorded decisions only: a look through the list).
            let at = scratch.cands.iter().position(|c| c.row == ri as u32);
            let priority = at.map_or(0, |k| scratch.keys[k]);
            dec.sends.push(SendDecision { guid: due.actor.guid, priority, action: Action::OpenedForCall, bits });
        }
    }
}
