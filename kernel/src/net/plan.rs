//! Planning: what one connection gets this frame.
//!
//! ```text
//! merge the frame's changed actors (sorted) with the connection's pending pairs (sorted);
//! per pair:
//!   a clean pair (open acknowledged, nothing owed, nothing missed: one bit of `DenseTable`)
//!           sends this frame's changed active leaves; its state is not loaded. Otherwise:
//!   flags   = owner / autonomous / replay / physics, and INITIAL for the bunch that sends the
//!             open (the first, or the next after one carrying it was lost: UE's bNetInitial)
//!   active  = condition map[flags] − the actor's switched-off Custom leaves
//!   owed    = condition map[flags ∪ INITIAL] − switched-off: resent leaves a lost packet carried
//!             stay owed even when the open was acknowledged by another packet, so an
//!             InitialOnly value is settled only by the ack of a packet that carried it —
//!             − leaves a role change turned off here, unless a lost open carried them and no
//!             delivered bunch has since: an InitialOrOwner value lost while the connection
//!             owned the actor was an owner's value, not an initial one (UE's open bunch is
//!             reliable, its later ones are filtered by the conditions of the moment)
//!   send    = ((changed ∪ changed since the pair's last send) ∩ active) ∪ (resend ∩ owed)
//!   parked  = resend − owed: lost while now inactive, recorded as owed when they come back
//!   an actor whose open is not acknowledged is sent with its open (class) on every bunch
//! ```
//!
//! Planning moves the pair's catch-up point to this frame and empties its resend set, and hands
//! the send straight to packet writing (no list of a connection's sends is built and read back:
//! 2 500 sends × 100 connections × 32 bytes a frame, cold by the next frame); what packet writing
//! cannot send (a full window) goes back through `Connection::owe`.

use super::actors::{ActorNet, ChangedActor, ChangedNet, ClassNet};
use super::condition::flags;
use super::connection::{pair, Connection, PairState};
use crate::ids::{Frame, LeafMask, NetGuid};

/// One actor to send to one connection this frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendItem {
    pub class: u32,
    pub slot: u32,
    pub guid: NetGuid,
    pub leaves: LeafMask,
    /// The bunch carries the channel open (the open is not acknowledged yet).
    pub open: bool,
    /// The bunch is the one that sends the open (UE's `bNetInitial`), with the initial values:
    /// what a full window holds back of it is owed as initial values
    /// ([`super::connection::UnsentInitial`]).
    pub initial: bool,
    /// The bunch resends initial values owed (InitialOnly leaves a lost open carried, or that
    /// changed while the channel slept): lost or held back, they are owed again, as the open's
    /// are — an earlier part of the same resend, delivered, has settled them.
    pub initial_values: bool,
    /// The pair's channel epoch ([`PairState::epoch`]).
    pub epoch: u8,
    /// Dynamic arrays among `leaves` that go whole (count and every element): while the open is
    /// owed, when resent (a lost packet carried them, a full window held them back), and always
    /// for an array under a condition (one that comes back by a role change may have missed
    /// changes that "changed since the last send" does not name). The others send their count
    /// and the element leaves that changed after `since` (the pair's last send), by nested
    /// handle, as UE does.
    pub whole: LeafMask,
    /// The pair's last send before this one (see `whole`).
    pub since: Frame,
    /// The role an actor's open gives the client: it holds an autonomous proxy
    /// ([`super::proxy_roles`]).
    pub autonomous: bool,
    /// The pair owes its role: the bunch carries the open (`open`) though it was acknowledged,
    /// and goes even with no leaves.
    pub role: bool,
}

/// How many changed actors ahead planning prefetches pair states.
const PAIR_PREFETCH: usize = 16;

/// Decides what connection `ci` gets this frame, in actor order, handing each send to `emit` as
/// soon as it is decided.
pub(crate) fn plan_connection(
    ci: u32,
    conn: &mut Connection,
    classes: &[ClassNet],
    (changed, changed_actors): (&[ChangedActor], &[ChangedNet]),
    frame: Frame,
    mut emit: impl FnMut(&mut Connection, &SendItem),
) {
    if conn.removed {
        return;
    }
    conn.pairs.begin_plan(frame);
    let mut pending = std::mem::take(&mut conn.pending);
    pending.sort_unstable();
    pending.dedup();
    let (mut i, mut j) = (0, 0);
    loop {
        // Pair states are scattered (one per actor per connection); start loading the ones a
        // few iterations ahead so their cache misses overlap.
        if let Some(c) = changed.get(i + PAIR_PREFETCH).filter(|c| !conn.pairs.is_clean(c.class, c.slot)) {
            if let Some(p) = conn.pair_ref(c.class, c.slot) {
                crate::compare::prefetch_addr(p as *const PairState as usize);
            }
        }
        let a = changed.get(i).map(|c| (c.class, c.slot));
        let b = pending.get(j).copied();
        let take_changed = match (a, b) {
            (Some(a), Some(b)) => {
                if a == b {
                    j += 1;
                }
                a <= b
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let (class, slot, leaves, known) = if take_changed {
            i += 1;
            let c = &changed[i - 1];
            (c.class, c.slot, c.leaves, Some(&changed_actors[i - 1]))
        } else {
            j += 1;
            let (class, slot) = pending[j - 1];
            (class, slot, LeafMask::EMPTY, None)
        };
        let c = &classes[class as usize];
        let Some(actor) =
            known.map(|k| &k.actor).or_else(|| c.actors.get(slot as usize)).filter(|a| a.alive && !a.torn_off)
        else {
            continue;
        };
        let replay = conn.replay;
        if known.is_some() && conn.pairs.is_clean(class, slot) {
            // A clean pair sends this frame's changed active leaves; its state stays untouched
            // (see `DenseTable`): what `plan_pair` would do with an acknowledged open, nothing
            // owed and nothing missed.
            let f = actor.flags(ci, replay, false);
            let send = leaves & actor.active_leaves(&c.active, f);
            if !send.is_empty() {
                // Clean: sent everything through the last frame (an array's elements changed
                // before this frame went then).
                let since = Frame(frame.0.saturating_sub(1));
                let whole = c.whole_arrays(send, false);
                let item = SendItem {
                    class,
                    slot,
                    guid: actor.guid,
                    leaves: send,
                    open: false,
                    initial: false,
                    initial_values: false,
                    epoch: 0,
                    whole,
                    since,
                    autonomous: false,
                    role: false,
                };
                emit(conn, &item);
            }
            continue;
        }
        let ps = conn.pairs.get_or_insert(class, slot);
        ps.flags &= !pair::PENDING;
        let before = known.map_or_else(|| c.history.changed_before(slot, frame), |k| k.before);
        let catch_up = ps.sent_through == Frame(0) || (before > ps.sent_through && before < frame);
        let mut parked = LeafMask::EMPTY;
        let key = super::pairs::pair_key(class, slot);
        let unsent = |epoch| conn.unsent_initial.get(key, epoch);
        let role = conn.roles.owed(key, actor.guid, ps.epoch);
        let item =
            plan_pair((ci, replay, role), ps, (c, unsent), (class, slot), actor, leaves, catch_up, frame, &mut parked);
        // Sent everything through this frame, open acknowledged, nothing owed: clean from now
        // on (a write that cannot send it owes it, which ends that at once).
        if ps.flags & pair::OPEN_ACKED != 0 && ps.epoch == 0 {
            conn.pairs.set_clean(class, slot);
        }
        if !parked.is_empty() {
            conn.parked.push((class, slot, parked));
        }
        if let Some(item) = item {
            emit(conn, &item);
        }
    }
    // Pairs owed back while writing (a full window) were queued meanwhile: they stay pending.
    let owed = std::mem::replace(&mut conn.pending, pending);
    conn.pending.clear();
    conn.pending.extend_from_slice(&owed);
}

/// What one pair sends this frame, if anything: `this_frame` are the leaves that changed this
/// frame; `catch_up` says the pair may have missed earlier changes (history is asked only
/// then). Moves the pair's catch-up point to `frame` and empties its resend set: lost leaves
/// that are inactive here now (a packet reported lost after a role change turned them off) go
/// to `parked`, for the caller to record with the connection's inactive leaves (UE's inactive
/// changelist): they are owed when they come back. `role`: the pair owes its client role
/// ([`super::proxy_roles`]): the bunch carries the open, and goes with no leaves too. `unsent` tells, for the pair's channel
/// epoch, the initial values no delivered bunch of this channel has carried
/// ([`super::connection::UnsentInitial`]); it is asked only when a lost initial-only leaf is
/// owed.
///
/// Inlined: called out of line, its `SendItem` came back through memory written field by field
/// and was read back whole — a store-forwarding stall on every planned pair (the shared frame of
/// ShooterCharacter 50k × 100 at 5 % ran 0.3–0.4 ms slower).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn plan_pair(
    (ci, replay, role): (u32, bool, bool),
    ps: &mut PairState,
    (c, unsent): (&ClassNet, impl FnOnce(u8) -> LeafMask),
    (class, slot): (u32, u32),
    actor: &ActorNet,
    this_frame: LeafMask,
    catch_up: bool,
    frame: Frame,
    parked: &mut LeafMask,
) -> Option<SendItem> {
    let open = ps.flags & pair::OPEN_ACKED == 0;
    // The bunch that sends the open (the first, or the next after one carrying it was lost) is
    // the initial one; the others before its acknowledgement carry the open's header only.
    let open_bunch = open && ps.flags & pair::OPEN_SENT == 0;
    let f = actor.flags(ci, replay, open_bunch);
    let active = actor.active_leaves(&c.active, f);
    let mut owed = actor.active_leaves(&c.active, f | flags::INITIAL);
    // Lost leaves owed only as initial values (InitialOnly; InitialOrOwner for a non-owner) are
    // owed again only while the client has had none of them on this channel (UE's reliable open
    // bunch: once a delivered initial bunch carried them, no later bunch does). The others were
    // sent for a role (an owner's InitialOrOwner update) or are the client's already: parked as
    // any leaf gone off is, owed if a role brings them back.
    let initial_only = ps.resend & owed & !active;
    if !initial_only.is_empty() {
        owed &= !(initial_only & !unsent(ps.epoch));
    }
    let mut changed_leaves = this_frame;
    if catch_up {
        changed_leaves |= c.history.changed_since(slot, ps.sent_through);
    }
    let resent = ps.resend & owed;
    *parked = ps.resend & !owed;
    let send = (changed_leaves & active) | resent;
    let since = ps.sent_through;
    ps.resend = LeafMask::EMPTY;
    ps.sent_through = frame;
    if send.is_empty() && !open_bunch && !role {
        return None;
    }
    let whole = c.whole_arrays(send, open) | resent;
    let (guid, initial, epoch, autonomous) = (actor.guid, open_bunch, ps.epoch, f & flags::SIMULATED == 0);
    Some(SendItem {
        class,
        slot,
        guid,
        leaves: send,
        open: open || role,
        initial,
        initial_values: !(resent & !active).is_empty(),
        epoch,
        whole,
        since,
        autonomous,
        role,
    })
}
