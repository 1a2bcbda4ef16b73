//! Replicating one candidate on one connection's frame (what its pair owes, its open, its fast
//! arrays) and UE's leftovers of a saturated frame.
//!
//! ```text
//! at rest (nothing changed, nothing owed, open acknowledged)   → nothing written
//! clean, owing exactly the frame's shared bunch, and it fits   → the bunch copied (`copy_clean`)
//! else                                                         → planned (`plan_pair`), written
//! then its fast arrays, if it has any
//! ```

use super::{relevant_until, rows, rows_in, Cand, LevelCtx};
use crate::ids::{Frame, LeafMask};
use crate::net::connection::{pair, Connection};
use crate::net::fastarrays::OwnerChannel;
use crate::net::plan::plan_pair;
use crate::net::relevancy::DueActor;
use crate::net::reliability::SentEntry;
use crate::net::send::FrameWrite;

/// Plans and writes what the pair in row `row` owes.
pub(super) fn replicate(
    ctx: &LevelCtx<'_>,
    ci: u32,
    conn: &mut Connection,
    st: &mut FrameWrite,
    row: usize,
    d: u32,
    first_opens: &mut Vec<u32>,
) {
    let due = &ctx.due[d as usize];
    let c = &ctx.write.classes[due.class as usize];
    let actor = &due.actor;
    let replay = conn.replay;
    let ps = &mut rows_in(&mut conn.pairs)[row].state;
    let key = crate::net::pairs::pair_key(due.class, due.slot);
    let role = conn.roles.owed(key, actor.guid, ps.epoch);
    // Open acknowledged, nothing to resend, no role owed: the pair owes what changed, no more.
    let clean = ps.resend.is_empty() && ps.flags & pair::OPEN_ACKED != 0 && !role;
    let changes = changes_owed(ps.sent_through, due);
    // The common case of an actor at rest on an open channel: nothing owed, no lookups.
    let at_rest = clean && changes == (LeafMask::EMPTY, false) && ps.sent_through == due.since;
    let mut parked = LeafMask::EMPTY;
    let item = if at_rest {
        ps.sent_through = ctx.time.frame;
        None
    } else if clean && copy_clean(ctx, ci, conn, st, row, due, changes) {
        None
    } else {
        let ps = &mut rows_in(&mut conn.pairs)[row].state;
        let (this_frame, catch_up) = changes;
        let (at, frame) = ((due.class, due.slot), ctx.time.frame);
        let unsent = |epoch| conn.unsent_initial.get(key, epoch);
        plan_pair((ci, replay, role), ps, (c, unsent), at, actor, this_frame, catch_up, frame, &mut parked)
    };
    if !parked.is_empty() {
        conn.parked.push((due.class, due.slot, parked));
    }
    if let Some(item) = item {
        let shared = ctx.write.arena.and_then(|a| a.at(due.shared));
        // The actor's own bunches (not the exports written before them).
        let entries = conn.rel.entries.len();
        // An open's spawn info and records are the same for every connection that opens the
        // actor this frame: the third to open it encodes them for the rest ([`super::opens`]).
        let whole = item.leaves == c.fixed_leaves;
        let encode = |bits: &mut _| ctx.write.encode_open(&item, bits);
        let opened = item.open.then(|| ctx.opens.for_open(d, whole, first_opens, encode)).flatten();
        ctx.write.write(conn, st, &item, shared, opened);
        // Its newest bunch is in the open packet: a write that starts a packet leaves it open.
        // (One that finishes a packet and finds the window full records the number of a packet
        // not started: later than the real one, which only keeps the pair waiting longer.)
        if conn.rel.entries.len() > entries {
            let open = conn.rel.next_seq().0 as u16;
            let ps = &mut rows(conn)[row].state;
            ps.last_packet = open;
            if item.open {
                // What each of its bunches' entries would have marked (`WriteCtx::marks_opens`).
                ps.flags |= pair::OPEN_SENT | pair::EVER_OPENED;
                // UE adds a temporary actor to `SentTemporaries` right after the bunch.
                if due.temporary() {
                    conn.sent_temporaries.insert(actor.guid);
                }
            }
        }
    }
    // Its fast arrays follow its bunch — from the bunch that carries its open on, as UE
    // serializes them in the actor's first bunch; its row says (no lookup).
    if actor.fast {
        let ps = rows(conn)[row].state;
        let sent = ps.flags & (pair::OPEN_ACKED | pair::OPEN_SENT) != 0;
        let channel = if sent { OwnerChannel::Open(ps.epoch) } else { OwnerChannel::Missing };
        ctx.write.write_listed_fast_arrays((ci, conn), st, actor, ctx.fast_arrays_of(due), channel);
    }
}

/// The lane of a clean pair — its open acknowledged, nothing to resend, no role owed — that owes
/// exactly the frame's shared bunch, every leaf of it active here and none an object reference
/// to export (three sends in four of battle_royale's): the bunch is copied into the open packet
/// as planning and writing would write it, without building the send. What [`plan_pair`] would
/// set is set — the catch-up point; nothing was to resend, nothing is parked — and the row's
/// newest packet. False, with nothing done, when the pair owes anything else or the copy would
/// not land in the open packet (planning and writing decide those).
#[allow(clippy::too_many_arguments)]
fn copy_clean(
    ctx: &LevelCtx<'_>,
    ci: u32,
    conn: &mut Connection,
    st: &mut FrameWrite,
    row: usize,
    d: &DueActor,
    (this_frame, catch_up): (LeafMask, bool),
) -> bool {
    let Some(sh) = ctx.write.arena.and_then(|a| a.at(d.shared)) else { return false };
    let c = &ctx.write.classes[d.class as usize];
    let (actor, ps) = (&d.actor, rows(conn)[row].state);
    // As planning finds it ([`changes_owed`]; a pair the lane declines asks the history again
    // there — a pair behind, which is rare).
    let owed = if catch_up { this_frame | c.history.changed_since(d.slot, ps.sent_through) } else { this_frame };
    let send = owed & actor.active_leaves(&c.active, actor.flags(ci, conn.replay, false));
    if send.is_empty() || send != sh.leaves || !(send & c.object_leaves).is_empty() {
        return false;
    }
    let e = SentEntry {
        class: d.class,
        slot: d.slot,
        guid_low: actor.guid.0 as u32,
        epoch: ps.epoch,
        flags: 0,
        leaves: send,
    };
    if !ctx.write.copy_shared_here(conn, st, actor.guid, sh, e) {
        return false;
    }
    let open = conn.rel.next_seq().0 as u16;
    let ps = &mut rows(conn)[row].state;
    ps.sent_through = ctx.time.frame;
    ps.last_packet = open;
    true
}

/// What a pair whose last send was at `sent_through` owes of due actor `d`'s changes, as planning
/// takes them (`this_frame`, `catch_up`): a pair that replicated when the actor was last
/// considered owes what this frame's compare found (shared by every such connection); one
/// further behind — or never sent — asks the history, if the actor changed since.
fn changes_owed(sent_through: Frame, d: &DueActor) -> (LeafMask, bool) {
    if sent_through == d.since {
        (d.changed, false)
    } else {
        (LeafMask::EMPTY, sent_through == Frame(0) || d.last_changed > sent_through)
    }
}

/// UE's leftovers: a channel relevant within the last second, or an actor relevant now, is
/// considered again next frame — a relevant one's channel marked relevant for a while longer
/// (`RelevantTime = now + 0.5 · FRand`), as a relevancy check that says yes does.
pub(super) fn leftovers(
    ctx: &LevelCtx<'_>,
    ci: u32,
    conn: &mut Connection,
    cands: &[Cand],
    rest: impl Iterator<Item = u32>,
    pending: &mut Vec<u64>,
) {
    let now = ctx.time.now;
    let rows = rows(conn);
    // One bit per due actor (the frame's step ORs the connections' sets: no list to merge).
    pending.resize(ctx.due.len().div_ceil(64), 0);
    let mut mark = |d: u32| crate::net::relevancy::set_due(pending, d);
    for index in rest {
        let Cand { row, due: d, relevant_now } = cands[index as usize];
        let row = &mut rows[row as usize];
        let has_channel = row.state.flags & pair::CHANNEL != 0;
        if has_channel && now - row.relevant_time <= 1.0 {
            mark(d);
        } else if relevant_now {
            mark(d);
            if has_channel {
                row.relevant_time = relevant_until(now, ctx.due[d as usize].actor.guid, ci, ctx.time.frame);
            }
        }
    }
}
