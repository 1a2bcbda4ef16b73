//! The send loop of one connection's frame (UE's `ServerReplicateActors_ProcessPrioritizedActors`):
//! the ranked candidates in send order, batch by batch — relevancy rechecked, channels opened,
//! replicated, closed or put to sleep — until the bandwidth is spent, then the leftovers.

use super::*;

/// Candidates ranked per batch: the first batch is this many, each next one twice the last.
const FIRST_BATCH: usize = 32;

/// How many sends ahead the send loop prefetches a due record.
const PREFETCH_AHEAD: usize = 6;

/// How many sends ahead the send loop prefetches what a due record names (the record itself
/// asked for `PREFETCH_AHEAD` sends ahead is in the cache by then).
const FOLLOW_AHEAD: usize = 3;

/// One connection's frame in progress.
pub(super) struct Run<'r> {
    pub ci: u32,
    pub st: &'r mut crate::net::send::FrameWrite,
    pub out: &'r mut Outcome,
    pub decisions: Option<&'r mut FrameDecisions>,
}

/// Processes the candidates in send order until the budget is spent.
pub(super) fn process(ctx: &LevelCtx<'_>, run: &mut Run<'_>, conn: &mut Connection, scratch: &mut Scratch) {
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
    let bits_at_start = ctx.write.bits_charged(conn, &conn.budget);
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
            let owner_dormant = opens_with_dormant_owner(conn, &last, due);
            let row = &mut rows_in(&mut conn.pairs)[ri as usize];
            let has_channel = row.state.flags & pair::CHANNEL != 0;
            let recheck = !has_channel || now - row.relevant_time >= recheck_after;
            let relevant = recheck && relevant_now;
            // (The later of the two: a sub-object met before its owner — ranked first — reads the
            // owner's clock before the owner's recheck this frame renews it; with the owner's
            // clock alone it closed whenever that clock had just lapsed and its own recheck was
            // not due, though the owner stayed. Its own clock, while fresh, keeps it till then.)
            let clock = owner_time.map_or(row.relevant_time, |t| t.max(row.relevant_time));
            // A sub-object rides its owner's channel (UE): while the owner is held dormant here —
            // its channel closed, the client keeping its copy — none opens for the sub-object
            // (one its condition newly allows, one registered since): it opens with the owner
            // when the owner wakes. (An open sent here had given a dormant actor's client a part
            // of it, traffic dormancy promises not to send.)
            let opens_asleep = !has_channel && owner_dormant;
            let recently =
                allowed && !opens_asleep && (relevant || (has_channel && now - clock < ctx.cfg.relevant_timeout));
            let tearing = due.actor.tearing;
            if recently {
                if !has_channel {
                    open_row(conn, ri as usize, due);
                }
                let row = &mut rows_in(&mut conn.pairs)[ri as usize];
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
                let charged = ctx.write.bits_charged(conn, &conn.budget);
                if charged as i64 > ready_limit {
                    if saturated_by.is_none() {
                        out.saturated = true;
                        *bits_per_send = (charged - bits_at_start) as f64 / out.processed.max(1) as f64;
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
                    let state = rows(conn)[ri as usize].state;
                    conn.closes.note(guid, &state);
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

/// Opens a channel on row `ri` for due actor `due` (it had none): numbered with the
/// connection's next epoch.
pub(super) fn open_row(conn: &mut Connection, ri: usize, due: &DueActor) {
    let row = &mut rows_in(&mut conn.pairs)[ri];
    row.state.flags |= pair::CHANNEL;
    row.state.epoch = candidates::number(&mut conn.next_epoch);
    let key = crate::net::pairs::pair_key(due.class, due.slot);
    // A new channel: its open tells the client its role; a record of an earlier channel of the
    // pair (the 8-bit epoch comes round) tells nothing of it.
    conn.roles.forget(key);
    conn.opened_after.opened(key, conn.rel.next_seq().back(1), conn.rel.acked());
}
