//! One connection's frame at the actor level (UE's `ServerReplicateActors_PrioritizeActors` and
//! `_ProcessPrioritizedActors`): candidates, priority, and channels opened, replicated and
//! closed in priority order until the bandwidth is spent.
//!
//! ```text
//! a sublevel the client unloaded since the last tick → its actors' channels and dormant copies
//!   close (LevelUnloaded), its sub-objects' with them; one it loaded → its destroyed static
//!   actors' closes again (`super::sublevels`)
//! not heard from within ready_timeout → nothing but a keep-alive (rows of gone actors dropped)
//! relevant   = the relevancy index's answer for the viewers (due actors only)
//! one walk over the rows, in key order, merged with the relevant actors and the gone ones (a
//!   plain frame of a small due list: each row's relevancy read in the answer's bits, the
//!   actors left in them given rows after — `candidates::plain_candidates`):
//!   rows of gone actors → scratch rows in place, their open channels' closes queued
//!   rows      += a scratch row for each relevant actor without one — but one whose sublevel
//!                the client has not loaded (a gone actor's scratch row in the slot is taken)
//!   candidates = rows whose actor is due (relevant ones and open channels) — but an owner-only
//!                actor's channel this connection does not own: sent nothing, and closed once
//!                its relevancy has lapsed (UE's PrioritizeActors); nor a temporary actor's
//!                (`bNetTemporary`) whose open went here (OPEN_SENT or OPEN_ACKED): never
//!                updated nor closed for relevancy (UE's SentTemporaries), until a loss of its
//!                open clears OPEN_SENT — nor opened again once its channel ended (the
//!                connection's `sent_temporaries`); an initial-only sub-object likewise
//!                (`COND_InitialOnly`), which opens only while its owner's open is not
//!                acknowledged (or, its channel opened then, until its own is delivered)
//! queued closes written (the gone actors' among them), before any send
//! priority   = max over viewers of GetNetPriority; T = now − last update (no channel: 1 s)
//! not net-ready when the sends begin → nothing sent, every candidate a leftover (UE's first test)
//! in send order (key desc, GUID asc), selected in batches (select_nth, then sort the batch):
//!   recheck relevancy if no channel or now − relevant_time ≥ min(timeout, 1 s)
//!   recently relevant (relevant now, or a channel relevant within the timeout):
//!       open the channel if none (numbered: the connection's next epoch); if relevant now:
//!       relevant_time = now + 0.5 · jitter
//!       replicate (what the pair owes: changes since its last send, resends, the open)
//!       last_update = now; stop if the budget is spent (saturated)
//!   else, a channel that is not a level's startup actor's → close it (the client destroys
//!       its copy)
//!   a tearing actor's channel (NetDriver::tear_off) → closed with reason TornOff right after
//!       its bunch (the client keeps its copy); a tearing actor gets no new channel
//! leftovers of a saturated frame, from the actor whose send saturated it (UE returns its index):
//!   a channel relevant within 1 s, or an actor relevant now (its channel, if any, then marked
//!   relevant_time = now + 0.5 · jitter) → pending (considered next frame whatever its clock)
//!   one without a channel that a tick's call needs → opened and replicated outside the budget
//!   (UE's `InternalProcessRemoteFunction`: `calls.rs`)
//! rows without a channel (scratch, or closed) are dropped
//! ```
//!
//! Here: the connection's frame as a whole (`replicate_connection`). `candidates.rs`: the walk
//! and the rank; `process.rs`: the send loop; `calls.rs`: the channels calls open;
//! `replicate.rs`: one candidate's send, and the
//! leftovers; `owners.rs`: what a sub-object reads of its owner; `dormant.rs`: dormancy's
//! closes; `ends.rs`: channels ended and rows retired.

use super::connection::{pair, Connection, PendingClose};
use super::consider::{jitter, ServerTime};
use super::dormancy::DormancyHook;
use super::level::NOT_DUE;
use super::pairs::{Channel, Pairs};
use super::priority::SendOrder;
use super::relevancy::{DueActor, RelevancyHook, RelevancyIndex, DUE_HOT_BYTES};
use super::send::{WriteCtx, Written};
use super::settings::ActorLevelConfig;
use crate::compare::prefetch_addr;
use crate::ids::{Frame, NetGuid};
use std::time::Instant;

pub use super::decisions::{Action, FrameDecisions, SendDecision};

mod calls;
mod candidates;
mod dormant;
mod ends;
mod owners;
mod process;
mod replicate;
use candidates::{candidates, rank, Cand};
use dormant::{go_dormant, held_awake, held_awake_idle, wants_dormancy};
pub(crate) use ends::{close_reason, drop_scratch_rows, end_sub_channels, retire_rows};
use owners::{held, hold, hold_torn_owner, initial_window, opens_with_dormant_owner, Held, LastActor};
use process::{process, Run};
use replicate::{leftovers, replicate};

/// What the per-connection step reads.
pub(crate) struct LevelCtx<'a> {
    pub write: &'a WriteCtx<'a>,
    pub due: &'a [DueActor],
    /// The due actors' pair keys, parallel to `due`, packed for the merges.
    pub keys: &'a [u64],
    pub due_index: &'a [Vec<u32>],
    /// Per class, per page: the lanes of the due actors (`due_index` as bits: a connection's
    /// rows of idle actors are told apart in a bitset that stays in the cache, without a miss in
    /// the index each).
    pub selected: &'a [Vec<u64>],
    /// Actors gone since the last frame, sorted by key.
    pub retired: &'a [(u64, NetGuid)],
    /// Live dynamic actors by GUID.
    pub guids: &'a crate::ids::GuidMap<(u32, u32)>,
    /// Owners' sub-objects.
    pub subs: &'a crate::ids::GuidMap<Vec<NetGuid>>,
    pub index: &'a RelevancyIndex,
    pub hooks: &'a [Option<RelevancyHook>],
    /// Per class, its priority hook.
    pub priority_hooks: &'a [Option<crate::net::priority::PriorityHook>],
    pub dormancy_hooks: &'a [Option<DormancyHook>],
    /// Due actors that may fall asleep this frame (none: no connection needs to say which it
    /// holds awake).
    pub sleepy: usize,
    /// Due sub-objects whose condition leaves some connections out.
    pub conditioned: usize,
    /// Due actors that are owner-only.
    pub owner_only: usize,
    /// Due actors that are tearing off.
    pub tearing: usize,
    /// Due actors that are temporary (`bNetTemporary`).
    pub temporary: usize,
    /// Due sub-objects that are initial-only for some connection (`SubObjectCondition::InitialOnly`,
    /// `InitialOrOwner`).
    pub initial_only: usize,
    /// Some actor keeps records of leaves inactive for a connection ([`super::roles`]): the
    /// channels closed are reported, so their records go with them.
    pub report_closes: bool,
    /// The due owners' fast arrays with their versions (`DueActor::fast_arrays` ranges).
    pub fast_arrays: &'a [(NetGuid, Option<super::fastarrays::ArrayStamp>)],
    /// The due actors' ranks by GUID: the send order's tie-break.
    pub guid_rank: &'a super::level::GuidRanks,
    /// The frame's open encodings, shared by the connections that open the same actor.
    pub opens: &'a super::opens::OpenCache,
    pub time: ServerTime,
    pub cfg: &'a ActorLevelConfig,
    /// Static actors (the destroyed ones' closes go again where their sublevel loads).
    pub statics: &'a super::lifecycle::Statics,
    /// Some actor is outside the persistent level: a candidate without a channel is checked
    /// against the connection's loaded sublevels ([`super::sublevels`]).
    pub sublevels: bool,
}

impl<'a> LevelCtx<'a> {
    /// Due actor `due`'s fast arrays with their versions and slots.
    fn fast_arrays_of(&self, due: &DueActor) -> &'a [(NetGuid, Option<super::fastarrays::ArrayStamp>)] {
        let (start, end) = due.fast_arrays;
        &self.fast_arrays[start as usize..end as usize]
    }
}

/// What one connection's frame produced.
#[derive(Default)]
pub(crate) struct Outcome {
    /// Leftovers to consider next frame: a bit per due actor (empty, or all zero, when there are
    /// none).
    pub pending: Vec<u64>,
    /// Due indices of actors that want dormancy but that this connection holds awake (an open
    /// channel not yet dormant, or relevant and waiting for one): they stay on the consider list.
    pub awake: Vec<u32>,
    /// Due indices of the actors this connection opened first this frame (their open slots
    /// are emptied after the frame: [`super::opens::OpenCache::end_frame`]).
    pub first_opens: Vec<u32>,
    /// With [`LevelCtx::report_closes`]: (class, slot) of the actors whose channel this
    /// connection closed or ended — a sub-object's with its owner's (the client destroyed its
    /// copy: what it lacked while inactive is everything now).
    pub closed: Vec<(u32, u32)>,
    /// Tearing actors this connection replicated: due index, and whether its full window
    /// deferred the update (it owes it: the tear-off waits, see `NetDriver::tear_off`).
    pub tearing: Vec<(u32, bool)>,
    /// With adaptive frequency: due indices of the actors this connection was sent something of
    /// (their `ReplicateActor` wrote a bunch), for [`super::consider::ConsiderClock::replicated`].
    pub replicated: Vec<u32>,
    pub written: Written,
    pub relevant: usize,
    pub processed: usize,
    /// Channels closed for dormancy this frame.
    pub went_dormant: usize,
    pub saturated: bool,
    /// Nanoseconds in the relevancy query, candidates and priority, and the send loop.
    pub nanos: [u64; 3],
}

/// A connection's channel rows.
fn rows(conn: &mut Connection) -> &mut Vec<Channel> {
    rows_in(&mut conn.pairs)
}

/// A connection's channel rows, to read.
fn rows_of(conn: &Connection) -> &[Channel] {
    match &conn.pairs {
        Pairs::Channels { rows, .. } => rows,
        Pairs::Dense(_) => unreachable!("the actor level keeps channel rows"),
    }
}

/// [`rows`] of a connection's pair table alone (its other fields stay free to borrow).
fn rows_in(pairs: &mut Pairs) -> &mut Vec<Channel> {
    match pairs {
        Pairs::Channels { rows, .. } => rows,
        Pairs::Dense(_) => unreachable!("the actor level keeps channel rows"),
    }
}

/// UE's `RelevantTime` after a relevancy check that said yes: `now + 0.5 · FRand`, the random
/// number a hash of (NetGUID salted by the connection, frame), so connections do not recheck in
/// step and any sharding gives the same answer.
pub(crate) fn relevant_until(now: f64, guid: NetGuid, ci: u32, frame: Frame) -> f64 {
    let salt = (ci as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93);
    now + 0.5 * jitter(NetGuid(guid.0 ^ salt), frame)
}

/// See the module documentation.
pub(crate) fn replicate_connection(ctx: &LevelCtx<'_>, ci: u32, conn: &mut Connection) -> Outcome {
    // Last frame's lists, emptied: a frame allocates nothing once the lists have grown.
    let (mut pending, mut awake) = (std::mem::take(&mut conn.scratch.pending), std::mem::take(&mut conn.scratch.awake));
    let mut first_opens = std::mem::take(&mut conn.scratch.first_opens);
    pending.clear();
    awake.clear();
    first_opens.clear();
    let mut out = Outcome { pending, awake, first_opens, ..Outcome::default() };
    let mut st = ctx.write.begin(conn);
    if conn.removed {
        return out;
    }
    let now = ctx.time.now;
    let ready = now - conn.heard <= ctx.cfg.ready_timeout;
    retire_rows(conn, ctx.retired, ready);
    super::sublevels::apply_changes(ctx, ci, conn, &mut out.closed);
    let record = ctx.cfg.record_decisions;
    let mut decisions = record.then(|| FrameDecisions {
        frame: ctx.time.frame,
        ready,
        queued_bits: conn.budget.queued_bits,
        ..FrameDecisions::default()
    });
    if ready {
        let t = Instant::now();
        let mut scratch = std::mem::take(&mut conn.scratch);
        let due_of = |g: NetGuid| {
            let &(c, s) = ctx.guids.get(&g)?;
            let d = *ctx.due_index.get(c as usize)?.get(s as usize)?;
            (d != NOT_DUE).then_some(d)
        };
        // A plain frame's walk reads the query's bits; the general one, its list.
        let plain = candidates::plain(ctx);
        let Scratch { relevant, query, .. } = &mut *scratch;
        ctx.index.relevant_for(ctx.due, due_of, ci, &conn.viewers, ctx.hooks, query, (!plain).then_some(relevant));
        if ctx.conditioned > 0 {
            let (replay, groups) = (conn.replay, conn.net_groups);
            relevant.retain(|&d| ctx.due[d as usize].allowed_for(ci, replay, groups));
        }
        out.nanos[0] = t.elapsed().as_nanos() as u64;
        let t = Instant::now();
        // (Listed before the walk: a plain frame's walk clears the bits as rows match them.)
        let bits = scratch.query.bits();
        if let Some(d) = &mut decisions {
            let guid = |i: u32| ctx.due[i as usize].rel.guid;
            d.relevant = if plain {
                crate::net::relevancy::due_in(bits).map(guid).collect()
            } else {
                scratch.relevant.iter().map(|&i| guid(i)).collect()
            };
            d.relevant.sort_unstable();
        }
        out.relevant = candidates(ctx, ci, conn, &mut scratch, &mut out.closed, plain);
        // Ranked before anything is written: a priority hook that panics (and a game that catches
        // it around `tick`) leaves this frame's closes queued, not in a packet never finished.
        rank(ctx, conn, &mut scratch);
        // The closes come first in the frame's packets, the gone actors' among them (found by
        // the walk just done): nothing before this point writes.
        ctx.write.write_closes(conn, &mut st);
        out.nanos[1] = t.elapsed().as_nanos() as u64;
        let t = Instant::now();
        let mut run = Run { ci, st: &mut st, out: &mut out, decisions: decisions.as_mut() };
        process(ctx, &mut run, conn, &mut scratch);
        if run.out.saturated && !ctx.write.calls.openers().is_empty() {
            calls::open_for_calls(ctx, &mut run, conn, &scratch);
        }
        if ctx.sleepy > 0 {
            held_awake(ctx, conn, &scratch.cands, &mut out.awake);
        }
        if out.went_dormant > 0 {
            conn.pairs.settle_dormant(&mut scratch.fresh);
        }
        drop_scratch_rows(conn);
        conn.scratch = scratch;
        out.nanos[2] = t.elapsed().as_nanos() as u64;
    }
    if !ready && ctx.sleepy > 0 {
        held_awake_idle(ctx, conn, &mut out.awake);
    }
    let channels = crate::net::rpc::PairChannels(ctx.guids);
    ctx.write.write_rpcs(conn, &mut st, ctx.write.calls, (out.saturated, ready), &channels);
    out.written = ctx.write.end(conn, st, true);
    conn.budget.sent(out.written.bytes, out.written.packets);
    if let Some(d) = &mut decisions {
        d.saturated = out.saturated;
    }
    conn.decisions = decisions.map(Box::new);
    out
}

/// A connection's buffers for its actor-level frame, kept from frame to frame.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The relevant due actors, listed (the general walk's; a plain frame's reads the query's
    /// bits).
    relevant: Vec<u32>,
    query: super::relevancy::Scratch,
    fresh: Vec<Channel>,
    cands: Vec<Cand>,
    /// The candidates' priority keys, in their order (`rank`).
    keys: Vec<u32>,
    order: SendOrder,
    /// The batch being sent: each candidate with its key, in send order.
    sends: Vec<(u32, Cand)>,
    /// Mean bits of a replicated pair in the last saturated frame: sizes the first ranked batch.
    bits_per_send: f64,
    /// The priority key at which the last frame that sent saturated (none if it ran through its
    /// candidates): where this frame's first batch likely ends ([`SendOrder::fill`]). Speed
    /// only: the order is exact whatever it holds.
    cutoff: Option<u32>,
    /// [`Outcome::pending`], [`Outcome::awake`] and [`Outcome::first_opens`], handed back by
    /// [`recycle`] after the frame.
    pending: Vec<u64>,
    awake: Vec<u32>,
    first_opens: Vec<u32>,
}

/// Hands a connection's outcome lists back to it, for its next frame to fill.
pub(crate) fn recycle(conn: &mut Connection, out: Outcome) {
    conn.scratch.pending = out.pending;
    conn.scratch.awake = out.awake;
    conn.scratch.first_opens = out.first_opens;
}
