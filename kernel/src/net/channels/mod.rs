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
//! rows without a channel (scratch, or closed) are dropped
//! ```

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

mod candidates;
mod dormant;
mod ends;
mod owners;
mod replicate;
use candidates::{candidates, rank, Cand};
use dormant::{go_dormant, held_awake, held_awake_idle, wants_dormancy};
pub(crate) use ends::{close_reason, drop_scratch_rows, end_sub_channels, retire_rows};
use owners::{held, hold, hold_torn_owner, initial_window, Held, LastActor};
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

/// Candidates ranked per batch: the first batch is this many, each next one twice the last.
const FIRST_BATCH: usize = 32;

/// How many sends ahead the send loop prefetches a due record.
const PREFETCH_AHEAD: usize = 6;

/// How many sends ahead the send loop prefetches what a due record names (the record itself
/// asked for `PREFETCH_AHEAD` sends ahead is in the cache by then).
const FOLLOW_AHEAD: usize = 3;

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
    conn.budget.sent(out.written.bytes);
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

/// One connection's frame in progress.
struct Run<'r> {
    ci: u32,
    st: &'r mut super::send::FrameWrite,
    out: &'r mut Outcome,
    decisions: Option<&'r mut FrameDecisions>,
}

/// Processes the candidates in send order until the budget is spent.
fn process(ctx: &LevelCtx<'_>, run: &mut Run<'_>, conn: &mut Connection, scratch: &mut Scratch) {
    let Run { ci, st, out, decisions } = run;
    let ci = *ci;
    let now = ctx.time.now;
    let recheck_after = ctx.cfg.relevant_timeout.min(1.0);
    let Scratch { cands, order, sends, bits_per_send, cutoff, .. } = scratch;
    let replay = conn.replay;
    let mut start = 0;
    // The first batch: what the budget's credit carries at last frame's bits per send, and a
    // quarter more; each next batch twice the last.
    let credit = -conn.budget.queued_bits;
    let mut batch = if *bits_per_send > 0.0 && credit > 0.0 && !conn.budget.replay {
        ((credit / *bits_per_send * 1.25) as usize).max(FIRST_BATCH)
    } else {
        FIRST_BATCH
    };
    let bits_at_start = ctx.write.bits_written(conn);
    // UE's first test (`ProcessPrioritizedActors`): a connection that is not net-ready when its
    // frame starts sends nothing, and every candidate is a leftover.
    if !conn.budget.ready(bits_at_start as f64) {
        out.saturated = true;
        leftovers(ctx, ci, conn, cands, 0..cands.len() as u32, &mut out.pending);
        return;
    }
    // The actor whose send saturated the connection (class, slot) and its place in the order:
    // the frame ends there, once the sub-objects ranked right behind it went too (UE writes
    // sub-objects inside their owner's update, and checks the budget after the whole of it).
    let mut saturated_by: Option<(u32, u32, usize)> = None;
    // The budget is counted after the frame: until then "ready" is one integer compare.
    let ready_limit = conn.budget.ready_limit();
    let mut last = LastActor::default();
    'frame: while start < order.len() {
        let n = order.select(start, batch);
        // The batch in send order, each with its key: read by the loop and, ahead of it, by the
        // prefetches (one pass, not three lookups through the order a send).
        sends.clear();
        sends.extend((start..start + n).map(|i| {
            let (key, index) = order.get(i);
            (key, cands[index as usize])
        }));
        // The due records are read in priority order, all over the frame's list: each is asked
        // for a few sends ahead (the part the loop reads), while the ones before it are written.
        let fetch = |j: usize| {
            let due = &ctx.due[sends[j].1.due as usize];
            // The record starts a line: its hot part is whole lines, one prefetch each (a loop of
            // a constant two trips, unrolled).
            let at = due as *const DueActor as usize;
            for line in (0..DUE_HOT_BYTES).step_by(64) {
                prefetch_addr(at + line);
            }
        };
        (0..n).take(PREFETCH_AHEAD).for_each(fetch);
        for (j, &(key, cand)) in sends.iter().enumerate() {
            // Its place in the whole order.
            let i = start + j;
            if j + PREFETCH_AHEAD < n {
                fetch(j + PREFETCH_AHEAD);
            }
            if let Some(ahead) = sends.get(j + FOLLOW_AHEAD) {
                // That send's record, asked for a few sends ago, is at hand: ask for what it names
                // — its shared encoding's head and its fast arrays' quiet records (this
                // connection's, cold since its last frame).
                let due = &ctx.due[ahead.1.due as usize];
                if let Some(a) = ctx.write.arena {
                    a.prefetch(due.shared);
                }
                for (_, stamp) in ctx.fast_arrays_of(due) {
                    if let Some(s) = stamp {
                        conn.quiet.prefetch(s.slot);
                    }
                }
            }
            let Cand { row: ri, due: d, relevant_now } = cand;
            let due = &ctx.due[d as usize];
            if saturated_by.is_some_and(|(c, s, _)| due.owner_slot != Some((c, s))) {
                break 'frame;
            }
            last.processing(due, cand);
            let guid = due.actor.guid;
            // A sub-object its condition leaves out closes at once; one whose owner has no
            // channel here (not opened yet, or closed) waits for it (UE sends sub-objects in
            // their owner's channel).
            let allowed = (ctx.conditioned == 0 || due.allowed_for(ci, replay, conn.net_groups))
                && (due.condition.is_none() || held(last.owner_flags(conn, due)))
                && (ctx.initial_only == 0
                    || !due.initial_only_for(ci)
                    || initial_window(conn, ri, last.owner_flags(conn, due)));
            // A sub-object's channel lasts as long as its owner's relevancy does (its own clock,
            // jittered by its own GUID, would lapse frames before or after the owner's).
            let owner_time = last.owner_relevant_time(conn, due);
            let row = &mut rows_in(&mut conn.pairs)[ri as usize];
            let has_channel = row.state.flags & pair::CHANNEL != 0;
            let recheck = !has_channel || now - row.relevant_time >= recheck_after;
            let relevant = recheck && relevant_now;
            // (The later of the two: a sub-object met before its owner — ranked first — reads the
            // owner's clock before the owner's recheck this frame renews it; with the owner's
            // clock alone it closed whenever that clock had just lapsed and its own recheck was
            // not due, though the owner stayed. Its own clock, while fresh, keeps it till then.)
            let clock = owner_time.map_or(row.relevant_time, |t| t.max(row.relevant_time));
            let recently = allowed && (relevant || (has_channel && now - clock < ctx.cfg.relevant_timeout));
            let tearing = due.actor.tearing;
            if recently {
                if !has_channel {
                    row.state.flags |= pair::CHANNEL;
                    row.state.epoch = candidates::number(&mut conn.next_epoch);
                    let key = crate::net::pairs::pair_key(due.class, due.slot);
                    // A new channel: its open tells the client its role; a record of an earlier
                    // channel of the pair (the 8-bit epoch comes round) tells nothing of it.
                    conn.roles.forget(key);
                    conn.opened_after.opened(key, conn.rel.next_seq().back(1), conn.rel.acked());
                }
                if relevant {
                    row.relevant_time = relevant_until(now, guid, ci, ctx.time.frame);
                }
                row.last_update = now;
                let mut woken = None;
                if row.state.flags & pair::WOKEN != 0 && row.state.flags & pair::OPEN_ACKED != 0 {
                    // Woken from dormancy: UE opens the channel anew, its first bunch initial —
                    // the initial-only values changed while the actor slept are owed as initial
                    // values, until a delivered bunch carries them.
                    let c = &ctx.write.classes[due.class as usize];
                    let slept = c.history.changed_since(due.slot, row.state.sent_through) & c.active.initial_only();
                    row.state.resend |= slept;
                    woken = Some((row.state.epoch, slept, c.active.initial_only()));
                }
                row.state.flags &= !pair::WOKEN;
                if let Some((epoch, slept, initial_only)) = woken.filter(|w| !w.1.is_empty()) {
                    let key = crate::net::pairs::pair_key(due.class, due.slot);
                    conn.unsent_initial.lost_open(key, epoch, slept, initial_only);
                }
                if !has_channel && due.actor.fast {
                    // A new channel: the client has none of the owner's fast arrays.
                    ctx.write.fast.restart_for_connection(
                        ci as usize,
                        &mut conn.quiet,
                        ctx.fast_arrays_of(due).iter().copied(),
                    );
                }
                let (before, full_before) = (ctx.write.bits_written(conn), st.full);
                replicate(ctx, ci, conn, st, ri as usize, d, &mut out.first_opens);
                let bits = (ctx.write.bits_written(conn) - before) as u32;
                out.processed += 1;
                if tearing {
                    // What the window held back: leaves (planning emptied the resend set: those
                    // in it now), or what fills no resend set — a fast array's delta, an open
                    // owed with no leaves: the window filled with this actor, or was full and
                    // it owes its open or its fast arrays are not settled here.
                    let row = rows(conn)[ri as usize].state;
                    let open_owed = row.flags & (pair::OPEN_SENT | pair::OPEN_ACKED) == 0;
                    let deferred = !row.resend.is_empty()
                        || st.full && (!full_before || open_owed || !ctx.write.fast.settled_for(guid, ci as usize));
                    out.tearing.push((d, deferred));
                    if deferred {
                        hold_torn_owner(conn, due);
                    }
                }
                if ctx.cfg.adaptive_frequency && bits > 0 {
                    out.replicated.push(d);
                }
                if let Some(dec) = decisions.as_deref_mut() {
                    let action = Action::Replicated { opened: !has_channel };
                    dec.sends.push(SendDecision { guid, priority: key, action, bits });
                }
                // UE asks about dormancy only for actors that are not owner-only
                // (`ServerReplicateActors_PrioritizeActors`: its `else if` after the owner test):
                // an owner-only actor keeps replicating, whatever its setting.
                // A sub-object rides its owner's channel in UE, closed with it for dormancy: it
                // goes dormant where its owner is held dormant, whatever its own setting.
                let may_sleep = !tearing && !due.owner_only();
                let wants = |conn: &Connection| {
                    hold(last.owner_flags(conn, due)) == Held::Dormant || wants_dormancy(ctx, conn.id, due)
                };
                if may_sleep && has_channel && wants(conn) {
                    let before = ctx.write.bits_written(conn);
                    if go_dormant(ctx, ci, conn, st, ri as usize, due) {
                        out.went_dormant += 1;
                        if let Some(dec) = decisions.as_deref_mut() {
                            let bits = (ctx.write.bits_written(conn) - before) as u32;
                            dec.sends.push(SendDecision { guid, priority: key, action: Action::Dormant, bits });
                        }
                    }
                }
                if ctx.write.bits_written(conn) as i64 > ready_limit {
                    if saturated_by.is_none() {
                        out.saturated = true;
                        *bits_per_send =
                            (ctx.write.bits_written(conn) - bits_at_start) as f64 / out.processed.max(1) as f64;
                        saturated_by = Some((due.class, due.slot, i));
                        *cutoff = Some(key);
                    }
                    continue;
                }
            }
            // UE closes a channel that is not recently relevant (a startup actor's stays, but not
            // a sub-object its condition or its owner's channel no longer allows) or whose actor
            // is torn off — right after its last bunch. A sub-object whose owner is
            // held dormant here stays with it (the client keeps the owner): it goes dormant too,
            // once settled.
            let open = |conn: &mut Connection| rows(conn)[ri as usize].state.flags & pair::CHANNEL != 0;
            // A copy woken (flushed) on a connection it is not relevant to, and not sent to
            // since: UE's channel stayed closed and the client keeps its dormant copy. Nothing
            // went out since the dormancy close, so it is dormant again as it is, silently (it
            // had been closed for relevancy — a dynamic actor destroyed on that client, a static
            // one's channel held open for good, keeping the actor awake).
            let woken = rows(conn)[ri as usize].state.flags & pair::WOKEN != 0;
            // A sub-object's owner held dormant here, or woken and not sent to since (it may yet
            // go back to dormant, stale): the client keeps the owner, and the sub-object with it.
            let owner = if !tearing && !recently { hold(last.owner_flags(conn, due)) } else { Held::No };
            if !tearing && !recently && woken && (owner != Held::No || wants_dormancy(ctx, conn.id, due)) {
                // Stale (`DORMANT | WOKEN`): the first frame the actor is relevant here again
                // wakes it and sends what changed (see `candidates`).
                rows(conn)[ri as usize].state.flags |= pair::DORMANT;
                out.went_dormant += 1;
                if let Some(dec) = decisions.as_deref_mut() {
                    dec.sends.push(SendDecision { guid, priority: key, action: Action::Dormant, bits: 0 });
                }
            } else if owner != Held::No {
                // Dormant with its owner once settled; until then what it owes goes out (it would
                // never settle otherwise: not relevant, it is not replicated). An owner only woken
                // leaves it as it is until the owner's fate here is known.
                if owner == Held::Dormant && open(conn) {
                    if go_dormant(ctx, ci, conn, st, ri as usize, due) {
                        out.went_dormant += 1;
                    } else {
                        replicate(ctx, ci, conn, st, ri as usize, d, &mut out.first_opens);
                    }
                }
            } else if (tearing || (!recently && (!due.startup() || !allowed))) && open(conn) {
                let before = ctx.write.bits_written(conn);
                let close = PendingClose { guid, reason: close_reason(tearing) };
                if ctx.write.write_close(conn, st, close) {
                    let flags = rows(conn)[ri as usize].state.flags;
                    conn.closes.note(guid, flags);
                    // A torn row stays marked until the frame's end: its sub-objects, ranked
                    // after it, still find their owner on the client.
                    rows(conn)[ri as usize].state.flags = if tearing { pair::TORN } else { 0 };
                    if !tearing {
                        let Pairs::Channels { rows, dormant } = &mut conn.pairs else {
                            unreachable!("the actor level keeps channel rows")
                        };
                        end_sub_channels(
                            ctx,
                            ci as usize,
                            (rows, dormant, &mut conn.closes),
                            (guid, close.reason),
                            &mut out.closed,
                        );
                    }
                    if ctx.report_closes {
                        out.closed.push((due.class, due.slot));
                    }
                    let bits = (ctx.write.bits_written(conn) - before) as u32;
                    if let Some(dec) = decisions.as_deref_mut() {
                        let action = if tearing { Action::TornOff } else { Action::Closed };
                        dec.sends.push(SendDecision { guid, priority: key, action, bits });
                    }
                }
            }
        }
        start += n;
        batch *= 2;
    }
    match saturated_by {
        // UE returns the index of the actor that saturated the connection, and its leftovers
        // start there: that actor is considered next frame too.
        Some((_, _, from)) => {
            leftovers(ctx, ci, conn, cands, (from..order.len()).map(|j| order.get(j).1), &mut out.pending)
        }
        None => *cutoff = None,
    }
}
