//! The first half of a connection's frame: its candidates — one walk over its channel rows
//! merged with the relevant actors and the frame's gone actors — and each candidate's priority
//! key (see the module above for the whole frame).

use super::ends::retire;
use super::{close_reason, LevelCtx, Scratch};
use crate::net::connection::{pair, Connection, PendingClose};
use crate::net::level::NOT_DUE;
use crate::net::pairs::{merge_rows, split_key, Channel, Pairs};
use crate::net::priority::{priorities, priority_key, LANES, SPAWN_PRIORITY_SECONDS};

/// One candidate of the frame: a row whose actor is due.
#[derive(Clone, Copy)]
pub(super) struct Cand {
    pub(super) row: u32,
    pub(super) due: u32,
    pub(super) relevant_now: bool,
}

/// Lists the candidates — the rows whose actor is due, and a scratch row for every relevant
/// actor without one (but an actor whose copy is held dormant) — in one walk over the rows, the
/// relevant actors and the frame's gone actors, all in key order (a gone actor's row becomes a
/// scratch row, its open channel's close queued). A row's index once the scratch rows are merged in is
/// its index now plus the scratch rows before it, so the candidates name their rows as they will
/// be. (A first walk that added the scratch rows and a second that listed the merged rows read
/// every row twice.) A [`plain`] frame (`plain`: the caller asked [`plain`] once, and had the
/// relevancy query list its answer only when not) takes [`plain_candidates`] instead. Returns
/// how many actors are relevant.
pub(super) fn candidates(
    ctx: &LevelCtx<'_>,
    ci: u32,
    conn: &mut Connection,
    scratch: &mut Scratch,
    closed: &mut Vec<(u32, u32)>,
    plain: bool,
) -> usize {
    if plain {
        return plain_candidates(ctx, ci, conn, scratch);
    }
    let Scratch { relevant, fresh, cands, .. } = scratch;
    let (closes, viewers, sent_temporaries) = (&mut conn.closes, &conn.viewers, &conn.sent_temporaries);
    let (replay, net_groups) = (conn.replay, conn.net_groups);
    let Pairs::Channels { rows, dormant } = &mut conn.pairs else { unreachable!("the actor level keeps channel rows") };
    fresh.clear();
    cands.clear();
    // Owners whose channel the walk closes: their sub-objects' channels end after it.
    let mut ended: Vec<crate::ids::NetGuid> = Vec::new();
    // A copy held dormant is not replicated (and needs no new row) until the actor wakes — but a
    // stale one (woken, not sent to, dormant again: it owes what changed) goes back to the rows
    // when the actor is relevant. Nor does a tearing actor get a row: it only closes the
    // channels it has.
    let tearing = |d: u32| ctx.tearing > 0 && ctx.due[d as usize].actor.tearing;
    // Nor does an actor whose sublevel the client has not loaded (UE's
    // IsLevelInitializedForActor: no channel is opened to it; one open stays).
    let sublevels = &conn.sublevels;
    let unloaded = |d: u32| {
        let due = &ctx.due[d as usize];
        ctx.sublevels && !sublevels.is_loaded(ctx.write.classes[due.class as usize].cols.sublevel[due.slot as usize])
    };
    let no_channel = |d: u32| tearing(d) || unloaded(d);
    let add = |(key, d): (u64, u32),
               at: usize,
               fresh: &mut Vec<Channel>,
               cands: &mut Vec<Cand>,
               dormant: &mut Vec<Channel>,
               ended: &[crate::ids::NetGuid]| {
        if no_channel(d) {
            return;
        }
        if let Some(row) = fresh_row(ctx, ci, (key, d), dormant, sent_temporaries, ended) {
            fresh.push(row);
            cands.push(Cand { row: at as u32, due: d, relevant_now: true });
        }
    };
    // The relevant actors by key, and the frame's gone actors, each met by a cursor as the rows
    // go by (plain indices: the walk's few compares a row, no iterator state to test).
    let rel_key = |r: usize| relevant.get(r).map_or(u64::MAX, |&d| ctx.keys[d as usize]);
    let (mut r, mut next_rel) = (0, rel_key(0));
    let mut gone = Gone { retired: ctx.retired, at: 0 };
    let mut due_of = DueOf::new(ctx);
    for (ri, row) in rows.iter_mut().enumerate() {
        // A gone actor's row: its channel closes (if a packet carried the open), and the row
        // stays as a scratch row, which a new actor in the same slot takes below.
        gone.meet(row, closes);
        while next_rel < row.key {
            add((next_rel, relevant[r]), ri + fresh.len(), fresh, cands, dormant, &ended);
            r += 1;
            next_rel = rel_key(r);
        }
        let at = (ri + fresh.len()) as u32;
        // An owner closed TornOff whose row stays for its sub-objects: no candidate.
        let torn = row.state.flags & pair::TORN != 0;
        if r < relevant.len() && next_rel == row.key {
            let d = relevant[r];
            r += 1;
            next_rel = rel_key(r);
            if torn {
                continue;
            }
            // A gone actor's row left as a scratch row (no flags: between frames every row is a
            // channel): a new actor in its slot takes it (numbered, as a fresh row, if it
            // becomes a channel).
            if row.state.flags == 0 && no_channel(d) {
                continue;
            }
            if skipped_once(ctx, ci, row.state.flags, d, &ended) {
                continue;
            }
            cands.push(Cand { row: at, due: d, relevant_now: true });
            continue;
        }
        // Not relevant now. A gone actor's scratch row whose slot's new actor is not relevant
        // here: no candidate.
        if row.state.flags == 0 || torn {
            continue;
        }
        let d = due_of.get(row.key);
        if d == NOT_DUE {
            continue;
        }
        if ctx.owner_only > 0 && unowned(ctx, ci, viewers, d) {
            // UE's PrioritizeActors skips an owner-only actor this connection does not own (it
            // sends it nothing), and closes its channel once its relevancy has lapsed — unless
            // some viewer has no view target yet, so every connection may still come to own it.
            // (A level's startup actor keeps its channel, as everywhere here.)
            let due = &ctx.due[d as usize];
            let lapsed = ctx.time.now - row.relevant_time >= ctx.cfg.relevant_timeout;
            if lapsed && !due.startup() && viewers.iter().all(|v| v.view_target.is_some()) {
                if row.state.flags & pair::EVER_OPENED != 0 {
                    let close = PendingClose { guid: due.actor.guid, reason: close_reason(due.actor.tearing) };
                    closes.end(close, &row.state);
                }
                row.state.flags = 0;
                if !due.actor.tearing {
                    ended.push(due.actor.guid);
                }
                if ctx.report_closes {
                    closed.push((due.class, due.slot));
                }
            }
            continue;
        }
        // A sub-object of such an owner (not relevant here: one relevant — its owner's
        // relevancy is the distance rule's — is a candidate above): UE sends it inside its
        // owner's channel, so it is skipped with the owner — neither updated nor closed on its
        // own clock: it closes when its owner's channel does (`ended`, below), and stays while
        // the owner's does (a viewer without a view target keeps it). As a candidate it closed
        // for relevancy while the owner's channel stayed: the client kept the owner without its
        // sub-objects. (One its condition leaves out is a candidate: it closes at once, as
        // anywhere.)
        if ctx.owner_only > 0
            && owner_unowned(ctx, ci, viewers, d)
            && ctx.due[d as usize].allowed_for(ci, replay, net_groups)
        {
            continue;
        }
        if skipped_once(ctx, ci, row.state.flags, d, &ended) {
            continue;
        }
        cands.push(Cand { row: at, due: d, relevant_now: false });
    }
    for &d in &relevant[r..] {
        add((ctx.keys[d as usize], d), rows.len() + fresh.len(), fresh, cands, dormant, &ended);
    }
    merge_rows(rows, fresh);
    for owner in ended {
        let reason = close_reason(false);
        super::end_sub_channels(ctx, ci as usize, (rows, dormant, closes), (owner, reason), closed);
    }
    relevant.len()
}

/// The frame's gone actors (sorted by key), met by a cursor as a walk's rows go by in key order.
struct Gone<'a> {
    retired: &'a [(u64, crate::ids::NetGuid)],
    at: usize,
}

impl Gone<'_> {
    /// Retires `row` if its actor is gone: its channel's close queued (if a packet carried the
    /// open), the row left as a scratch row for a new actor in the same slot.
    #[inline]
    fn meet(&mut self, row: &mut Channel, closes: &mut crate::net::connection::Closes) {
        if self.at < self.retired.len() {
            while self.retired.get(self.at).is_some_and(|&(key, _)| key < row.key) {
                self.at += 1;
            }
            if let Some(&(_, guid)) = self.retired.get(self.at).filter(|&&(key, _)| key == row.key) {
                retire(row, guid, closes);
                self.at += 1;
            }
        }
    }
}

/// A row's due index by its key, for rows met in key order: the class's due lanes and index
/// taken as the class changes, the index read only for a due lane (the lanes' bitset stays in
/// the cache; the index would be a miss a row).
pub(super) struct DueOf<'a> {
    ctx: &'a LevelCtx<'a>,
    class: u32,
    index: &'a [u32],
    lanes: &'a [u64],
}

impl<'a> DueOf<'a> {
    pub(super) fn new(ctx: &'a LevelCtx<'a>) -> Self {
        Self { ctx, class: u32::MAX, index: &[], lanes: &[] }
    }

    /// The due index of the actor of pair `key`, or [`NOT_DUE`].
    #[inline]
    pub(super) fn get(&mut self, key: u64) -> u32 {
        let (c, slot) = split_key(key);
        if c != self.class {
            self.class = c;
            self.index = self.ctx.due_index.get(c as usize).map_or(&[], |v| &v[..]);
            self.lanes = self.ctx.selected.get(c as usize).map_or(&[], |v| &v[..]);
        }
        if lane_set(self.lanes, slot) {
            self.index.get(slot as usize).copied().unwrap_or(NOT_DUE)
        } else {
            NOT_DUE
        }
    }
}

/// Whether `slot`'s bit is set in a per-page lane bitset.
fn lane_set(bits: &[u64], slot: u32) -> bool {
    let slot = slot as usize;
    bits.get(slot / crate::schema::PAGE_LANES).is_some_and(|w| w >> (slot % crate::schema::PAGE_LANES) & 1 != 0)
}

/// The row a relevant actor without one gets (its key `key`, due index `d`): a scratch row — or
/// its copy held dormant here, if the actor woke, taken back from `dormant` — but none for a copy
/// held dormant (not replicated until the actor wakes), nor for a temporary actor whose open
/// went here before (UE's `SentTemporaries` outlives the channel).
fn fresh_row(
    ctx: &LevelCtx<'_>,
    ci: u32,
    (key, d): (u64, u32),
    dormant: &mut Vec<Channel>,
    sent_temporaries: &crate::ids::GuidSet,
    ended: &[crate::ids::NetGuid],
) -> Option<Channel> {
    match dormant.binary_search_by_key(&key, |r: &Channel| r.key) {
        // (A temporary actor's copy whose open went stays as it is: skipped.)
        Ok(i) if skipped_once(ctx, ci, dormant[i].state.flags, d, ended) => None,
        Ok(i) if dormant[i].state.flags & pair::WOKEN != 0 => {
            let mut row = dormant.remove(i);
            row.state.flags &= !pair::DORMANT;
            Some(row)
        }
        Ok(_) => None,
        Err(_) if sent_before(ctx, sent_temporaries, d) => None,
        // (Numbered when it becomes a channel: `number`.)
        Err(_) => Some(Channel { key, ..Channel::default() }),
    }
}

/// Due actors up to which a plain frame takes [`plain_candidates`]: it reads a row's due index
/// for every row and scans the relevancy bits (one per due actor) for the actors without a row,
/// which is cheap while the due list is small; mmo's ~115 000 due actors made both cost more than
/// the general walk's merge (17.2 ms a frame against 16.2–16.6, the index a cache miss a row).
const PLAIN_WALK_MAX_DUE: usize = 1 << 14;

/// Whether the frame is plain for the candidates walk: its due list small enough, and no due
/// actor owner-only, temporary, initial-only for a connection, tearing off, outside the
/// persistent level, or a sub-object with a condition — so a row's fate is its actor's due bit,
/// its relevancy and its own flags ([`plain_candidates`]).
pub(super) fn plain(ctx: &LevelCtx<'_>) -> bool {
    ctx.due.len() <= PLAIN_WALK_MAX_DUE
        && ctx.owner_only == 0
        && ctx.temporary == 0
        && ctx.initial_only == 0
        && ctx.tearing == 0
        && ctx.conditioned == 0
        && !ctx.sublevels
}

/// [`candidates`] of a [`plain`] frame, from the relevancy query's bits (one per due actor)
/// rather than its list: each row looks its actor up in the due index (through the due lanes'
/// bitset) and its relevancy in the bits (clearing it), and is a candidate or not without a
/// branch — the general walk's merge of the rows with the relevant list took a branch per row
/// that went either way, and its rules for owner-only, temporary and tearing actors are void
/// here. The relevant actors no row matched are the ones without a row (the bits left once each
/// match is cleared — the query's bits are not read again; no copy, no count of a large due
/// list's words): their scratch rows are merged in after, and the candidates' row numbers moved
/// by the scratch rows before them. The candidates come in row order, the new rows' last (the
/// send order does not depend on it; a priority hook is asked in this order). Returns how many
/// actors are relevant (matched and left).
fn plain_candidates(ctx: &LevelCtx<'_>, ci: u32, conn: &mut Connection, scratch: &mut Scratch) -> usize {
    let Scratch { query, fresh, cands, .. } = scratch;
    // Each bit a row matches is cleared as it is met: what is left are the relevant actors
    // without a row.
    let relevant = query.bits_mut();
    let (closes, sent_temporaries) = (&mut conn.closes, &conn.sent_temporaries);
    let Pairs::Channels { rows, dormant } = &mut conn.pairs else { unreachable!("the actor level keeps channel rows") };
    fresh.clear();
    // Written at `n` for every row, kept by moving `n` on: room for a candidate per row.
    if cands.len() < rows.len() {
        cands.resize(rows.len(), Cand { row: 0, due: NOT_DUE, relevant_now: false });
    }
    let (mut n, mut matched) = (0, 0);
    let mut gone = Gone { retired: ctx.retired, at: 0 };
    let mut due_of = DueOf::new(ctx);
    for (ri, row) in rows.iter_mut().enumerate() {
        // A gone actor's row: as in `candidates`.
        gone.meet(row, closes);
        let d = due_of.get(row.key);
        // (`NOT_DUE`'s word is past the bits: not relevant.)
        let (word, bit) = (d as usize / 64, d % 64);
        let rel = relevant.get(word).is_some_and(|w| w >> bit & 1 != 0);
        if let Some(w) = relevant.get_mut(word) {
            *w &= !(u64::from(rel) << bit);
        }
        matched += usize::from(rel);
        // A torn owner's row stays for its sub-objects: no candidate. A gone actor's scratch
        // row (no flags) is one only for a relevant new actor in its slot.
        let flags = row.state.flags;
        let cand = (d != NOT_DUE) & (flags & pair::TORN == 0) & (rel | (flags != 0));
        cands[n] = Cand { row: ri as u32, due: d, relevant_now: rel };
        n += usize::from(cand);
    }
    cands.truncate(n);
    let mut unmatched = 0;
    for d in crate::net::relevancy::due_in(relevant) {
        unmatched += 1;
        if let Some(row) = fresh_row(ctx, ci, (ctx.keys[d as usize], d), dormant, sent_temporaries, &[]) {
            fresh.push(row);
            // Its row number once merged: set below.
            cands.push(Cand { row: 0, due: d, relevant_now: true });
        }
    }
    if !fresh.is_empty() {
        // A row's number once merged is its number now plus the scratch rows before it; a
        // scratch row's, its place among the scratch rows plus the rows before it.
        let mut f = 0;
        for c in &mut cands[..n] {
            let key = rows[c.row as usize].key;
            while fresh.get(f).is_some_and(|r| r.key < key) {
                f += 1;
            }
            c.row += f as u32;
        }
        for (j, (c, r)) in cands[n..].iter_mut().zip(fresh.iter()).enumerate() {
            c.row = (j + rows.partition_point(|row| row.key < r.key)) as u32;
        }
    }
    merge_rows(rows, fresh);
    matched + unmatched
}

/// Each candidate's priority key — the max over the viewers of UE's `GetNetPriority` — with
/// its actor's GUID rank and its index in the candidates, as the send order (the GUID itself only
/// for the wide order). Reads the frame's per-due-actor
/// [`super::priority::PriorityInput`] (owner chains followed once per frame, not per connection).
pub(super) fn rank(ctx: &LevelCtx<'_>, conn: &Connection, scratch: &mut Scratch) {
    let now = ctx.time.now;
    let viewers = &conn.viewers[..];
    let rows = super::rows_of(conn);
    let Scratch { cands, order, keys, cutoff, .. } = scratch;
    let time = |c: &Cand| {
        let row = &rows[c.row as usize];
        // No channel yet, or one woken from dormancy (UE closed it then): UE's spawn priority.
        if row.state.flags & (pair::CHANNEL | pair::WOKEN) == pair::CHANNEL {
            (now - row.last_update) as f32
        } else {
            SPAWN_PRIORITY_SECONDS
        }
    };
    let input = |c: &Cand| &ctx.index.priority[c.due as usize];
    // Empty when no class has a priority hook; past every class for `NO_PRIORITY_HOOK`.
    let hooks = &ctx.index.priority_hook[..];
    keys.clear();
    match (hooks.is_empty(), viewers) {
        // One viewer (no split screen) and UE's formula for every class: the keys a batch of
        // candidates at a time, side by side.
        (true, [v]) => {
            for batch in cands.chunks(LANES) {
                let p = priorities(batch.len(), |k| (input(&batch[k]), time(&batch[k])), v);
                keys.extend(p[..batch.len()].iter().map(|&p| priority_key(0.0f32.max(p))));
            }
        }
        _ => keys.extend(cands.iter().map(|c| {
            let (p, t) = (input(c), time(c));
            let hook = hooks.get(c.due as usize).and_then(|&h| ctx.priority_hooks.get(h as usize)?.as_ref());
            let best = match hook {
                None => viewers.iter().map(|v| p.priority(t, v)).fold(0.0f32, f32::max),
                Some(hook) => viewers.iter().map(|v| hook(p, t, v)).fold(0.0f32, f32::max),
            };
            priority_key(best)
        })),
    }
    let rank = |i: usize| ctx.guid_rank.ranks[cands[i].due as usize];
    order.fill(keys, ctx.guid_rank.bits, rank, |i| input(&cands[i]).actor, *cutoff);
}

/// The epoch of a connection's next channel (see [`super::connection::PairState::epoch`]),
/// counting on. Numbered as a row becomes a channel, in send order, as the reference numbers its
/// channels — not as a row is listed: every relevant actor without a channel got a number each
/// frame, and on a busy connection the 256 epochs came round in a second or two, so a channel
/// closed and opened again (its sublevel unloaded and loaded) could get its old number back
/// while its old open was still in flight over a dark link, and that open's late
/// acknowledgement acknowledged the new one (seed 2022 of the random worlds with sublevels, 4
/// connections at 20 % loss with dormancy).
pub(super) fn number(next_epoch: &mut u8) -> u8 {
    let epoch = *next_epoch;
    *next_epoch = epoch.wrapping_add(1);
    epoch
}

/// UE's `SentTemporaries`: whether due actor `d` is temporary (`bNetTemporary`) — or a
/// sub-object initial-only here (`COND_InitialOnly`, a non-owner's `COND_InitialOrOwner`: sent
/// with its owner's initial bunch only) — and
/// its channel here (`flags`) has sent its open: the connection skips it, after the owner-only
/// rule and before relevancy, so it is neither updated nor closed for relevancy (its open
/// reported lost clears `OPEN_SENT`: it is a candidate again, its bunch the initial one).
fn sent_once(ctx: &LevelCtx<'_>, ci: u32, flags: u8, d: u32) -> bool {
    // (The frame's counts first: most worlds have neither, and the due record stays unread.)
    let once = |due: &crate::net::relevancy::DueActor| {
        // An initial-only sub-object likewise: its open was the initial bunch it goes with.
        ctx.temporary > 0 && due.temporary() || ctx.initial_only > 0 && due.initial_only_for(ci)
    };
    (ctx.temporary > 0 || ctx.initial_only > 0)
        && flags & (pair::OPEN_SENT | pair::OPEN_ACKED) != 0
        && once(&ctx.due[d as usize])
}

/// Whether due actor `d`, with no channel here, is a temporary actor whose open went here on an
/// earlier channel: in `sent` ([`Connection::sent_temporaries`]).
fn sent_before(ctx: &LevelCtx<'_>, sent: &crate::ids::GuidSet, d: u32) -> bool {
    let due = &ctx.due[d as usize];
    ctx.temporary > 0 && !sent.is_empty() && due.temporary() && sent.contains(&due.actor.guid)
}

/// [`sent_once`], but a sub-object whose owner's channel this walk already gave up (`ended`:
/// an owner-only owner this connection no longer owns, met earlier in key order) is not skipped:
/// its channel ends with the owner's, so it is one without a channel, listed if relevant — as
/// the reference, which ends the owner's sub-objects as it meets the owner, lists it (seed 5439
/// of the random worlds with temporaries, dormancy, net groups, dynamic conditions and class
/// defaults, lossless: the reference left a relevant sub-object over that the kernel skipped).
fn skipped_once(ctx: &LevelCtx<'_>, ci: u32, flags: u8, d: u32, ended: &[crate::ids::NetGuid]) -> bool {
    let sub_of_ended = |due: &crate::net::relevancy::DueActor| {
        due.condition.is_some() && due.rel.owner.is_some_and(|o| ended.contains(&o))
    };
    sent_once(ctx, ci, flags, d) && (ended.is_empty() || !sub_of_ended(&ctx.due[d as usize]))
}

/// Whether due actor `d` is a sub-object whose owner is owner-only and connection `ci` with
/// `viewers` does not own it (the driver gives a sub-object its owner's owner: the sub-object's
/// ownership is its owner's).
fn owner_unowned(ctx: &LevelCtx<'_>, ci: u32, viewers: &[crate::net::relevancy::Viewer], d: u32) -> bool {
    let due = &ctx.due[d as usize];
    due.owner_slot.is_some_and(|o| crate::net::actors::owner_only_at(ctx.write.classes, o))
        && !ctx.index.owns(due, ci, viewers)
}

/// Whether due actor `d` is owner-only and connection `ci` with `viewers` does not own it.
fn unowned(ctx: &LevelCtx<'_>, ci: u32, viewers: &[crate::net::relevancy::Viewer], d: u32) -> bool {
    let due = &ctx.due[d as usize];
    due.owner_only() && !ctx.index.owns(due, ci, viewers)
}
