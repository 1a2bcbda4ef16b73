//! One actor's replication on one connection the UE way (`UActorChannel::ReplicateActor`): the
//! properties changed since the channel's last send that are active for this connection, encoded
//! for it alone, with the open until it is acknowledged; then the actor's fast arrays.

use super::*;
use crate::schema::LeafGroups;

/// Sends what a channel owes: the properties changed since its last send that are active for
/// this connection, and the open until it is acknowledged; then the actor's fast arrays.
#[allow(clippy::too_many_arguments)]
pub(super) fn replicate(
    driver: &NetDriver,
    write: &WriteCtx<'_>,
    conn: &mut Connection,
    st: &mut crate::net::send::FrameWrite,
    ch: &mut RefChannel,
    a: &RefActor,
    ci: u32,
    frame: Frame,
) {
    let class = &driver.classes[ch.class as usize];
    let net = &class.actors[ch.slot as usize];
    let open_bunch = !ch.open_acked && !ch.open_sent;
    let f = net.flags(ci, conn.replay, open_bunch);
    let active = net.active_leaves(&class.active, f);
    // What the connection's roles let through outside the initial bunch: what changed while
    // inactive comes back by a role, not by a lost open's bunch sent again as the initial one
    // (that one carries what the lost one did, with the current values, as UE's reliable open
    // bunch goes again with what it had).
    let by_role = net.active_leaves(&class.active, net.flags(ci, conn.replay, false));
    let changed = changed_since(a, &class.layout.groups, ch.sent_through);
    // What changed while inactive waits for the leaf to come back.
    ch.inactive |= changed & !active;
    // What a lost packet carried goes again if active here now, or if it is an initial value
    // the client never got on this channel; the rest was sent for a role this connection has
    // lost, and waits with what changed while inactive.
    let resent = ch.resend & (active | ch.unsent_initial);
    ch.inactive |= ch.resend & !resent;
    ch.resend = LeafMask::EMPTY;
    let send = (changed & active) | (ch.inactive & by_role) | resent;
    ch.inactive &= !by_role;
    let since = ch.sent_through;
    ch.sent_through = frame;
    // The client's role here (UE's `RemoteRole`, downgraded for non-owners), compared with what
    // it was told: a change goes in the open, sent again.
    let autonomous = f & crate::net::condition::flags::SIMULATED == 0;
    let role = ch.role.is_some_and(|told| told != autonomous) || ch.role_resend;
    if !send.is_empty() || open_bunch || role {
        // Arrays go as the kernel sends them: whole while the open is owed and when under a
        // condition, else the elements changed since the channel's last send.
        let whole = class.whole_arrays(send, !ch.open_acked) | resent;
        let (class, slot, guid, open) = (ch.class, ch.slot, a.guid, !ch.open_acked || role);
        let epoch = ch.epoch;
        let initial = open_bunch;
        // Initial values owed, resent: lost or held back, owed again.
        let initial_values = !(resent & !active).is_empty();
        let item = SendItem {
            class,
            slot,
            guid,
            leaves: send,
            open,
            initial,
            initial_values,
            epoch,
            whole,
            since,
            autonomous,
            role,
        };
        let entries = conn.rel.entries.len();
        conn.held_back = LeafMask::EMPTY;
        write.write(conn, st, &item, None, None);
        // What a full window held back is owed (as initial values, of the bunch that sends the
        // open); an open went only if a bunch of it did.
        let held = std::mem::take(&mut conn.held_back);
        ch.resend |= held;
        if open_bunch || initial_values {
            ch.unsent_initial |= held & driver.classes[ch.class as usize].active.initial_only();
        }
        if conn.rel.entries.len() > entries {
            // Its newest bunch is in the packet being written.
            ch.last_packet = conn.rel.next_seq().0 as u16;
            if !ch.open_acked {
                ch.open_sent = true;
                ch.ever_opened = true;
            }
            // An actor's open told the client its role (a sub-object's carries none).
            if open && !write.outers.contains_key(&guid) {
                ch.role = Some(autonomous);
                ch.role_resend = false;
            }
        }
    }
    // Its fast arrays ride its channel, right after its bunch (once the client has it).
    if net.fast {
        let channel = if ch.open_acked || ch.open_sent { OwnerChannel::Open(ch.epoch) } else { OwnerChannel::Missing };
        write.write_fast_arrays_for((ci, conn), st, a.guid, channel);
    }
}

/// The leaves of `a` its compares found changed after frame `since`, as the groups of its
/// class (`groups`) that hold them.
pub(super) fn changed_since(a: &RefActor, groups: &LeafGroups, since: Frame) -> LeafMask {
    let mut changed = LeafMask::EMPTY;
    for (leaf, &at) in a.last_changed.iter().enumerate() {
        if at > since.0 {
            changed |= groups.bit(leaf);
        }
    }
    changed
}
