//! Where channels end: the rows of gone actors (and their copies held dormant), the channels
//! of an owner's sub-objects when the owner's own ends, the frame's scratch rows, and why a
//! channel closes. Each queues the closes the client needs, and only those: a close goes where
//! a packet carried the open (or the client holds the actor dormant).

use super::LevelCtx;
use crate::ids::NetGuid;
use crate::net::connection::{pair, Closes, Connection, PendingClose};
use crate::net::pairs::{Channel, Pairs};
use crate::wire::open::CloseReason;

/// Retires the copies held dormant of actors that are gone, and — in a frame that does not
/// replicate (not `ready`) — their rows (the sorted retired list merged with the sorted rows),
/// queueing a close where a packet carried the open. A frame that replicates retires the rows
/// in its walk for the candidates ([`super::candidates`]): a gone row becomes a scratch row in place —
/// what the frame's last pass drops, or the row of a new actor in the same slot — so the rows
/// are walked once and compacted once a frame. (A walk of its own cost two binary searches over
/// rows cold from memory per connection, 3 % of battle_royale's samples.)
pub(crate) fn retire_rows(conn: &mut Connection, retired: &[(u64, NetGuid)], ready: bool) {
    // A temporary actor gone is forgotten (UE's `NotifyActorDestroyed`).
    if !conn.sent_temporaries.is_empty() {
        for (_, guid) in retired {
            conn.sent_temporaries.remove(guid);
        }
    }
    let Pairs::Channels { rows, dormant } = &mut conn.pairs else { return };
    // Dormant copies of gone actors: the client keeps them until told (UE's destruction infos).
    for &(key, guid) in retired {
        if let Ok(i) = dormant.binary_search_by_key(&key, |r| r.key) {
            dormant.remove(i);
            if !guid.is_static() {
                conn.closes.push(PendingClose::destroyed(guid));
            }
        }
    }
    if ready {
        // The frame's walk over the rows for its candidates retires them (`candidates`).
        return;
    }
    let mut gone = false;
    // The sorted retired list merges with the rows of its key range, walked forward.
    let (Some(first), Some(last)) = (retired.first(), retired.last()) else { return };
    let mut r = rows.partition_point(|row| row.key < first.0);
    let end = rows.partition_point(|row| row.key <= last.0);
    for &(key, guid) in retired {
        while r < end && rows[r].key < key {
            r += 1;
        }
        if let Some(row) = rows[..end].get_mut(r).filter(|row| row.key == key) {
            retire(row, guid, &mut conn.closes);
            gone = true;
        }
    }
    if gone {
        rows.retain(|r| r.state.flags != 0);
    }
}

/// Makes the row of gone actor `guid` a scratch row (no flags: a frame's last pass drops it),
/// queueing its channel's close if a packet carried the open (a static actor's close went to
/// every connection when it was destroyed).
pub(super) fn retire(row: &mut Channel, guid: NetGuid, closes: &mut Closes) {
    if row.state.flags & pair::EVER_OPENED != 0 && !guid.is_static() {
        closes.end(PendingClose::destroyed(guid), &row.state);
    }
    *row = Channel { key: row.key, ..Channel::default() };
}

/// Owner `owner`'s channel here closed (not torn off) for `reason`: the client destroys the
/// owner and its sub-objects, so their channels end with it; each opens again, with its state,
/// behind its owner's next channel (UE's live in the owner's channel). A channel left open had
/// sent plain bunches to a client without the sub-object once the owner was back; so had a copy
/// held dormant (in `dormant`, which goes too: a sweep of the reference's worlds, seed 13982 —
/// woken with its owner's next channel, it went as a plain bunch).
///
/// Each sub-object the client was sent (or holds dormant) gets a close of its own in `closes`
/// too, though the owner's takes it: should the owner's close be lost while the owner has a
/// channel again (relevant again, or its sublevel loaded again, before the loss was known), it
/// does not go again, and the client keeps the owner's old copy with its sub-objects — one
/// destroyed, or no longer for this client, before the owner came back would stay there for
/// good. The sub-object's own close goes again while it has no channel. (A few bytes a close,
/// next frame; the reference sends the same.)
///
/// The owner's fast arrays go with it on the client too, so connection `ci`'s bases in them go
/// now: a base was kept until the owner's next channel here, and its acknowledged point pinned
/// every later removal in the array's change log for as long as the owner stayed away (a
/// shared array on an actor a player walked away from grew without bound). The next channel
/// starts them from nothing, as it did.
pub(crate) fn end_sub_channels(
    ctx: &LevelCtx<'_>,
    ci: usize,
    (rows, dormant, closes): (&mut [Channel], &mut Vec<Channel>, &mut Closes),
    (owner, reason): (NetGuid, CloseReason),
    closed: &mut Vec<(u32, u32)>,
) {
    ctx.write.fast.owner_ended(crate::net::fastarrays::Side::Driver, ci, owner);
    let Some(subs) = ctx.subs.get(&owner) else { return };
    for &g in subs {
        let Some(&(c, s)) = ctx.guids.get(&g) else { continue };
        let key = crate::net::pairs::pair_key(c, s);
        let (mut ended, mut sent) = (false, false);
        if let Ok(i) = rows.binary_search_by_key(&key, |r| r.key) {
            let flags = rows[i].state.flags;
            if flags & pair::CHANNEL != 0 {
                closes.note(g, &rows[i].state);
                rows[i].state.flags = 0;
                ended = true;
                sent = flags & pair::EVER_OPENED != 0;
            }
        }
        if let Ok(i) = dormant.binary_search_by_key(&key, |r| r.key) {
            dormant.remove(i);
            (ended, sent) = (true, true);
        }
        if sent {
            closes.push(PendingClose { guid: g, reason });
        }
        if ended && ctx.report_closes {
            closed.push((c, s));
        }
    }
}

/// Ends a frame's rows: the scratch rows go, and the rows of owners closed TornOff — but those
/// [`Connection::held_torn`] keeps, while a sub-object's last update waits for the window — and
/// with them what [`Connection::unsent_initial`] kept of their lost opens.
pub(crate) fn drop_scratch_rows(conn: &mut Connection) {
    let Pairs::Channels { rows, dormant } = &mut conn.pairs else { return };
    let held = &mut conn.held_torn;
    rows.retain(|r| {
        r.state.flags & pair::CHANNEL != 0 || r.state.flags & pair::TORN != 0 && held.binary_search(&r.key).is_ok()
    });
    // An owner gone meanwhile (its row retired) is held no more.
    held.retain(|&key| rows.binary_search_by_key(&key, |r| r.key).is_ok_and(|i| rows[i].state.flags & pair::TORN != 0));
    // What lost opens of channels now gone carried goes with them (a channel held dormant is
    // not gone: the client keeps its copy).
    if !conn.unsent_initial.is_empty() {
        let find = |rows: &[Channel], key| rows.binary_search_by_key(&key, |r| r.key).ok().map(|i| rows[i].state.epoch);
        let epoch_of = |key| find(rows, key).or_else(|| find(dormant, key));
        conn.unsent_initial.retain(|key, epoch| epoch_of(key) == Some(epoch));
    }
}

/// Why a channel closes when it is not relevant any more, or its actor is `tearing` off: torn
/// off (the client keeps its copy), or not (the client destroys it). The reference closes alike.
pub(crate) fn close_reason(tearing: bool) -> CloseReason {
    if tearing {
        CloseReason::TornOff
    } else {
        CloseReason::Destroyed
    }
}
