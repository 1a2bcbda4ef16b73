//! Settling: what each packet a feedback settles does to its connection, delivered or lost —
//! its entries to their pairs (an open acknowledged or sent again, leaves owed again, initial
//! values and roles owed), its closes queued again, its exports done or sent again, its fast
//! array bunches and reliable calls settled. Which packets a feedback settles, and whether each
//! was delivered, is the window's ([`Reliability::settle_next`](super::Reliability::settle_next)).

use super::{PacketRecord, SentEntry};
use crate::net::actors::ClassNet;
use crate::net::connection::{pair, Connection, PendingClose};
use crate::net::fastarrays::{self, FastArrays};
use crate::net::{pairs, rpc};
use crate::wire::open::CloseReason;

/// Where settling finds an entry's or a close's actor: its class, the live actors by GUID, and
/// the actors whose slot the game reused since the last tick (`Level::retired`), whose rows
/// stay theirs until the tick.
#[derive(Clone, Copy)]
pub(crate) struct Lookup<'a> {
    pub classes: &'a [ClassNet],
    pub guids: &'a crate::ids::GuidMap<(u32, u32)>,
    pub retired: &'a [(u64, crate::ids::NetGuid)],
}

/// The (class, slot) whose rows are still those of `guid`, an actor the game despawned since the
/// last tick, its slot's retirement waiting for the tick (`Level::retired`) — the first actor of
/// its slot to go since (a slot reused twice keeps its first occupant's rows).
pub(crate) fn retiring_slot(retired: &[(u64, crate::ids::NetGuid)], guid: crate::ids::NetGuid) -> Option<(u32, u32)> {
    let &(key, _) = retired.iter().find(|&&(_, g)| g == guid)?;
    let &(_, first) = retired.iter().find(|&&(k, _)| k == key)?;
    (first == guid).then(|| pairs::split_key(key))
}

/// One entry of a settled packet, waiting for [`apply_entries`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SettledEntry {
    /// Its place among the feedback's settled entries (packet order).
    pub(super) order: u32,
    pub(super) delivered: bool,
    pub(super) entry: SentEntry,
    /// Sent on an earlier channel of its pair than the one open now (closed while it flew, its
    /// epoch come round since): it neither acknowledges nor loses the open of this one.
    pub(super) earlier: bool,
}

/// Applies the fate of one settled packet to the connection: its entries go to `entries`
/// (applied together by [`apply_entries`] once every packet of the feedback is settled), its
/// closes, fast array bunches and exports are applied here.
///
/// A lost close is queued again unless a close of the same actor is queued since (it ends
/// whatever copy the client has), or its actor has a channel again on this connection whose
/// open has gone (the actor level closed it for relevancy and has reopened it since: the open
/// replaced the close — the channel of an actor whose slot the game reused since the last tick
/// counts, its rows the actor's until the tick), or its fast array was opened there again
/// ([`FastArrays::close_lost`]).
/// Entries touch only their own pair's state, which no close, fast array or export reads, so
/// applying them after the rest changes nothing but the cost.
pub(crate) fn apply_settled(
    (ci, conn): (usize, &mut Connection),
    Lookup { classes, guids, retired }: Lookup<'_>,
    fast: &FastArrays,
    rec: PacketRecord,
    delivered: bool,
    entries: &mut Vec<SettledEntry>,
) {
    if delivered {
        conn.stats.packets_acked += 1;
    } else {
        conn.stats.packets_lost += 1;
    }
    // A pair counts nothing in flight (its newest packet tells), so a delivered entry without
    // an open changes nothing but the leaves of lost opens it delivers (the packets settle in
    // order: a lost open is noted before any later bunch delivers its leaves): only the others
    // wait to be applied (sorted, then walked).
    for _ in 0..rec.entries {
        let Some(e) = conn.rel.entries.pop_front() else { break };
        let key = pairs::pair_key(e.class, e.slot);
        let unsent = &mut conn.unsent_initial;
        if delivered && !e.open() && !unsent.has(key) {
            continue;
        }
        let c = &classes[e.class as usize];
        let Some(a) = c.actors.get(e.slot as usize) else { continue };
        // Its actor, or the one whose slot the game reused since the last tick: its rows are
        // its own until the tick retires them, and what the client says of them still counts.
        let retiring = || retired.iter().any(|&(k, g)| k == key && e.names(g));
        if !(a.alive && e.names(a.guid) || retiring()) {
            continue;
        }
        // A bunch of an earlier channel of the pair (see `OpenedAfter`) is nothing to this
        // one's initial values either.
        let earlier = conn.opened_after.earlier(key, rec.seq);
        if delivered && e.open() && !earlier && !conn.closes.ending.is_empty() {
            conn.closes.open_delivered(|g| e.names(g), e.epoch);
        }
        if !earlier {
            if delivered {
                unsent.delivered(key, e.epoch, e.settles());
            } else if e.initial() {
                unsent.lost_open(key, e.epoch, e.leaves, c.active.initial_only());
            }
        }
        if delivered && !e.open() {
            continue;
        }
        entries.push(SettledEntry { order: entries.len() as u32, delivered, entry: e, earlier });
    }
    for _ in 0..rec.closes {
        let Some(close) = conn.rel.closes.pop_front() else { break };
        if delivered {
            fast.close_delivered(fastarrays::Side::Driver, ci, conn, &close);
            continue;
        }
        // A lost close goes again unless the channel is back: a torn-off actor's always; a
        // destroyed (or relevancy, or sublevel) close unless the client may hold the actor's
        // copy of a channel opened since (its open went, or it is held dormant — a row whose
        // open has not gone yet leaves the old copy to this close); a dormancy close while the
        // row is still dormant.
        let again = match close.reason {
            // A close of the actor queued since (the game destroyed it, or another channel of
            // it ended) ends whatever copy the client has.
            CloseReason::Destroyed | CloseReason::LevelUnloaded if conn.closes.is_queued(close.guid) => false,
            CloseReason::Destroyed | CloseReason::LevelUnloaded if conn.holds_copy(guids, retired, close.guid) => {
                // Not again, but the client may keep the fast arrays of that copy.
                fast.owner_close_dropped(fastarrays::Side::Driver, ci, close.guid, Some(&mut conn.quiet));
                false
            }
            CloseReason::Destroyed => fast.close_lost(fastarrays::Side::Driver, ci, close.guid),
            CloseReason::LevelUnloaded => true,
            CloseReason::Dormant => conn.dormant_here(guids, close.guid),
            CloseReason::TornOff => true,
        };
        if again {
            conn.closes.push(close);
        }
    }
    for _ in 0..rec.fast {
        let Some(sent) = conn.rel.fast.pop_front() else { break };
        conn.quiet.forget_sent(&sent);
        if let Some(guid) = fast.settle(fastarrays::Side::Driver, ci, sent, delivered) {
            conn.closes.push(PendingClose::destroyed(guid));
        }
    }
    rpc::settle_packet(conn, (rec.rpcs, rec.acks), delivered);
    // An export the client acknowledged is never sent again; a lost one goes at the next frame
    // (the references it serves may have arrived without it: they wait on the client).
    for _ in 0..rec.exports {
        let Some(guid) = conn.rel.exports.pop_front() else { break };
        conn.exporting.remove(&guid);
        if delivered {
            conn.exported.insert(guid);
        } else if !conn.exported.contains(&guid) {
            conn.exports.push(guid);
        }
    }
}

/// Applies the settled packets' entries to their pairs (and empties `entries`): a delivered
/// open is acknowledged; a lost entry's leaves go back to the pair's resend set and a lost open
/// that was not acknowledged meanwhile is sent again.
///
/// One feedback settles a few packets of a hundred bunches each, scattered over the
/// connection's channel table in send (priority) order. Sorted by pair, then packet order (one
/// pair's entries keep theirs: a lost open then a delivered one is not the same as the reverse),
/// they are applied in one forward walk over the table instead of one binary search each.
pub(crate) fn apply_entries(conn: &mut Connection, entries: &mut Vec<SettledEntry>) {
    entries.sort_unstable_by_key(|s| (pairs::pair_key(s.entry.class, s.entry.slot), s.order));
    let mut cursor = 0;
    for SettledEntry { entry: e, delivered, earlier, .. } in entries.drain(..) {
        let Some(ps) = conn.pairs.get_mut_from(&mut cursor, e.class, e.slot) else { continue };
        // An open is its channel's: one of an earlier channel of the pair (closed and opened
        // again while it was in flight) acknowledges nothing of this one's, nor is its loss this
        // one's (the client may have that open and then the close after it).
        let this_channel = ps.epoch == e.epoch && !earlier;
        if delivered {
            if e.open() && this_channel {
                ps.flags |= pair::OPEN_ACKED;
                // Planned on every change since (sent with its open until now), owing nothing:
                // clean from here (see `DenseTable`).
                if ps.resend.is_empty() && ps.flags & pair::PENDING == 0 && ps.epoch == 0 && ps.sent_through.0 != 0 {
                    conn.pairs.set_clean(e.class, e.slot);
                }
            }
            continue;
        }
        if e.open() && this_channel && ps.flags & pair::OPEN_ACKED == 0 {
            ps.flags &= !pair::OPEN_SENT;
        }
        if e.role() && this_channel {
            let key = pairs::pair_key(e.class, e.slot);
            let epoch = ps.epoch;
            conn.roles.lost(key, e.guid_low, epoch);
            // Per-slot pairs are planned from the pending list (the actor level replicates the
            // pair when its actor is next due, and asks then).
            conn.queue(e.class, e.slot);
        }
        conn.stats.leaves_resent += u64::from(e.leaves.count());
        conn.owe(e.class, e.slot, e.leaves);
    }
}
