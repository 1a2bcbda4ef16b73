//! Dormancy the plain way (the kernel's is `net::dormancy`): a sleeping actor is a flag the
//! consider list skips; a copy held dormant is a channel kept in a second map; a connection's
//! look at the sleepers tests every one of them against every viewer.
//!
//! ```text
//! game's calls     woken: awake, due now, every copy held dormant a channel again (woken:
//!                  ranked as new, its first bunch initial); roused: awake, copies left dormant;
//!                  asleep at once: a static actor's Initial
//! look             a connection's first frame with viewers, then every DORMANT_CHECK_SECONDS
//!                  (staggered by connection): every sleeper within its cull distance of a
//!                  viewer, from where it fell asleep, that the connection holds no copy of
//!                  (a stale copy is none) wakes, due now
//! per connection   a settled channel of an actor that wants dormancy there closes Dormant;
//!                  a woken copy not relevant is dormant again, stale; a sub-object follows its
//!                  owner (see `connection.rs`)
//! fall asleep      a due actor that wants dormancy, relevant by distance alone, not tearing
//!                  nor temporary, that no connection holds awake: off the consider list, its
//!                  place kept
//! ```

use super::*;
use crate::net::dormancy::{wants_dormancy_for, Dormancy, DormancyCall, Logged, DORMANT_CHECK_SECONDS};
use crate::net::relevancy::within_cull_distance;

impl ReferenceFrame {
    /// The copies the game's wakes since the last frame made channels again: every copy held
    /// dormant of a woken actor is a channel (woken) on its connection. Applied before the
    /// actor list's closes, as the driver applies a wake when the game calls it: a copy woken
    /// and then closed in the same tick (its actor destroyed, or a sub-object orphaned by its
    /// owner's end) carries this tick's calls down its channel as any channel the tick closes
    /// does — woken after the closes, it was a dormant copy there, and the reference dropped a
    /// call the driver sent (reference sweep seed 5379 with owner chains, dormancy, sublevels
    /// and calls, lossless).
    pub(super) fn wake_copies(&mut self, driver: &NetDriver, calls: &[Logged]) {
        for &Logged { class, slot, guid, call, .. } in calls {
            // (Of that actor: its slot may hold another by now.)
            let entry = self.actors[class as usize].get(slot as usize).and_then(Option::as_ref);
            if call != DormancyCall::Wake || entry.is_none_or(|a| a.guid != guid) {
                continue;
            }
            for (rc, dc) in self.conns.iter_mut().zip(&driver.conns) {
                if dc.removed {
                    continue;
                }
                if let Some(mut ch) = rc.dormant.remove(&guid) {
                    ch.woken = true;
                    rc.channels.insert(guid, ch);
                }
            }
        }
    }

    /// Replays the game's dormancy calls the driver logged since the last frame, in call order,
    /// on the actors (their copies: [`Self::wake_copies`]).
    pub(super) fn replay_dormancy_calls(&mut self, calls: &[Logged]) {
        for &Logged { class, slot, guid, at, call } in calls {
            // (Of that actor: its slot may hold another by now.)
            let entry = self.actors[class as usize].get_mut(slot as usize).and_then(Option::as_mut);
            let Some(a) = entry.filter(|a| a.guid == guid) else { continue };
            a.sleep_at = None;
            match call {
                DormancyCall::Sleep => self.active.set(class, slot as usize, false),
                DormancyCall::Rouse | DormancyCall::Wake => {
                    self.active.set(class, slot as usize, true);
                    a.clock.force_net_update(at);
                }
            }
        }
    }

    /// The connections whose look is due wake the sleeping actors within their cull distance of
    /// a viewer that they hold no copy of.
    pub(super) fn look_for_sleepers(&mut self, driver: &NetDriver, time: &ServerTime) {
        let level = driver.level.as_ref().expect("checked by tick");
        let interval = (DORMANT_CHECK_SECONDS * level.cfg.tick_rate).round().max(1.0) as u64;
        let frame = time.frame.0 as u64;
        let mut looking = Vec::new();
        for (ci, (rc, dc)) in self.conns.iter_mut().zip(&driver.conns).enumerate() {
            if dc.removed || dc.viewers.is_empty() {
                continue;
            }
            // (A sublevel loaded since the last tick is looked at at once.)
            let loaded_one = dc.sublevels.changes_at(time.frame).iter().any(|c| c.loaded);
            let first = !std::mem::replace(&mut rc.looked, true) || loaded_one;
            if first || (frame + ci as u64).is_multiple_of(interval) {
                looking.push(ci);
            }
        }
        if looking.is_empty() {
            return;
        }
        // Every sleeper, once a frame (class, slot).
        let sleepers: Vec<(usize, usize)> = (self.actors.iter().enumerate())
            .flat_map(|(c, t)| t.iter().enumerate().map(move |(s, a)| (c, s, a)))
            .filter(|&(c, s, a)| a.as_ref().is_some_and(|a| a.sleep_at.is_some()) && !self.active.contains(c, s))
            .map(|(c, s, _)| (c, s))
            .collect();
        for ci in looking {
            let (rc, dc) = (&self.conns[ci], &driver.conns[ci]);
            for &(c, s) in &sleepers {
                let Some(a) = self.actors[c][s].as_mut() else { continue };
                let Some((at, cull_sq)) = a.sleep_at.filter(|_| !self.active.contains(c, s)) else { continue };
                let near = dc.viewers.iter().any(|v| within_cull_distance(at, cull_sq, v.location));
                let held = rc.channels.contains_key(&a.guid) || rc.dormant.get(&a.guid).is_some_and(|d| !d.woken);
                // A client that has not loaded its sublevel would not be opened a channel.
                let loaded = dc.sublevels.is_loaded(driver.classes[c].cols.sublevel[s]);
                if near && !held && loaded {
                    self.active.set(c as u32, s, true);
                    a.sleep_at = None;
                    a.clock.force_net_update(time.now);
                }
            }
        }
    }

    /// Due actors that may sleep (`sleepy`: their indices in `due`) and that no connection held
    /// awake (`awake`, parallel to `due`) fall asleep.
    pub(super) fn fall_asleep(&mut self, driver: &NetDriver, due: &[(u32, u32)], sleepy: &[u32], awake: &[bool]) {
        for &i in sleepy {
            let (c, s) = due[i as usize];
            if awake[i as usize] {
                continue;
            }
            let Some(a) = self.actors[c as usize][s as usize].as_mut() else { continue };
            self.active.set(c, s as usize, false);
            a.clock.pending_net_update = false;
            let initial_static =
                driver.classes[c as usize].cols.dormancy[s as usize] == Dormancy::Initial && a.guid.is_static();
            let rel = &a.link.0;
            a.sleep_at = (!initial_static).then_some((rel.location, rel.cull_distance_squared));
        }
    }
}

/// Whether the actor in (`c`, `s`) may fall asleep: it wants dormancy, it is relevant by
/// distance alone (no owner, instigator, owning connection, rule settings or class hook), it
/// is not tearing off, and it is not temporary (a connection that got its open skips its
/// channel, which so never goes dormant: it keeps the actor awake).
pub(super) fn sleepy(driver: &NetDriver, (c, s): (u32, u32)) -> bool {
    let class = &driver.classes[c as usize];
    let (cols, s) = (&class.cols, s as usize);
    let net = &class.actors[s];
    let rules = cols.settings[s].needs_rules() || cols.hook.is_some();
    cols.dormancy[s].dormant()
        && !rules
        && cols.owner_actor[s].is_none()
        && cols.instigator[s].is_none()
        && net.owner.is_none()
        && !net.tearing
        && !cols.settings[s].net_temporary
}

/// Whether the actor in (`c`, `s`), `guid`, wants to be dormant for the connection in slot `ci`
/// by its own setting.
pub(super) fn wants_dormancy(driver: &NetDriver, c: u32, s: u32, guid: NetGuid, ci: u32) -> bool {
    let cols = &driver.classes[c as usize].cols;
    wants_dormancy_for(cols.dormancy[s as usize], cols.dormancy_hook.as_ref(), guid, driver.conns[ci as usize].id)
}

/// How a sub-object's owner's copy is held on a connection, as far as dormancy goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Not a sub-object, or its owner is neither of the below.
    No,
    /// The owner's copy is held dormant (stale or not).
    Dormant,
    /// The owner's channel was woken and nothing was sent to it since.
    Woken,
}

impl RefConn {
    /// How sub-object `guid`'s owner is held here (not a sub-object: [`Hold::No`]).
    pub(super) fn owner_hold(&self, driver: &NetDriver, sub_object: bool, guid: NetGuid) -> Hold {
        if !sub_object {
            return Hold::No;
        }
        let Some(owner) = driver.owner_of(guid) else { return Hold::No };
        if self.dormant.contains_key(&owner) {
            Hold::Dormant
        } else if self.channels.get(&owner).is_some_and(|ch| ch.woken) {
            Hold::Woken
        } else {
            Hold::No
        }
    }

    /// Closes actor `a`'s channel for dormancy once it is settled (open acknowledged, nothing
    /// owed that this connection would be sent now — a resend active here or an initial value
    /// a lost open owes, a change or what waited out an inactive spell active here now — its
    /// last packet answered, its fast arrays settled); the channel moves to the dormant copies.
    /// Returns whether it did.
    pub(super) fn go_dormant(
        &mut self,
        driver: &NetDriver,
        write: &WriteCtx<'_>,
        st: &mut crate::net::send::FrameWrite,
        a: &RefActor,
        ci: usize,
    ) -> bool {
        let guid = a.guid;
        let Some(ch) = self.channels.get(&guid) else { return false };
        let class = &driver.classes[ch.class as usize];
        let net = &class.actors[ch.slot as usize];
        let active = net.active_leaves(&class.active, net.flags(ci as u32, self.conn.replay, false));
        let waiting = ch.inactive | super::replicate::changed_since(a, &class.layout.groups, ch.sent_through);
        let owed = (ch.resend & (active | ch.unsent_initial)) | (waiting & active);
        let settled = ch.open_acked
            && owed.is_empty()
            && !self.conn.rel.carries(ch.last_packet)
            && driver.fast.settled_on(Side::Reference, guid, ci);
        let close = PendingClose { guid, reason: CloseReason::Dormant };
        if !(settled && write.write_close(&mut self.conn, st, close)) {
            return false;
        }
        let ch = self.channels.remove(&guid).expect("found above");
        self.note_close(guid, &ch);
        self.dormant.insert(guid, ch);
        true
    }
}
