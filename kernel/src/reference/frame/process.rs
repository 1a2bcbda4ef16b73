//! One connection's process step the UE way (`ServerReplicateActors_ProcessPrioritizedActors`):
//! the candidates in send order — relevancy rechecked once a second, a channel opened,
//! replicated (`replicate.rs`), closed or left dormant — until the budget is spent; then the
//! leftovers, considered again next frame.

use super::asked::{rep_flags, Asker};
use super::connection::{ConnView, Listed};
use super::dormancy::{wants_dormancy, Hold};
use super::replicate::{changed_since, replicate};
use super::*;
use crate::net::send::FrameWrite;

impl RefConn {
    /// Processes `list` (in send order) until the connection saturates — nothing when it is
    /// not net-ready to begin with (UE's first test). Returns where the leftovers start, if it
    /// saturated; tearing actors replicated here go to `tearing` (class, slot, whether the
    /// window held some of the last update back).
    pub(super) fn process(
        &mut self,
        v: &ConnView<'_>,
        asker: &mut Asker<'_>,
        (write, st): (&WriteCtx<'_>, &mut FrameWrite),
        list: &[Listed],
        tearing: &mut Vec<(u32, u32, bool)>,
    ) -> Option<usize> {
        let ConnView { driver, ci, time, cfg, dc, .. } = *v;
        let now = time.now;
        let recheck_after = cfg.relevant_timeout.min(1.0);
        let mut leftovers_from = (!self.budget.ready(write.bits_charged(&self.conn, &self.budget) as f64)).then_some(0);
        let processed = if leftovers_from.is_some() { &list[..0] } else { list };
        // Channels this frame closed with reason TornOff: the client keeps the actor, so its
        // sub-objects ranked after it still find their owner there.
        let mut torn_here: Vec<NetGuid> = Vec::new();
        // The actor whose send saturated the connection: its sub-objects ranked right behind
        // it go too, then the frame ends (UE writes sub-objects inside their owner's update).
        let mut saturated_by: Option<NetGuid> = None;
        for (k, &Listed { cand, class: c, slot: s, .. }) in processed.iter().enumerate() {
            let guid = cand.guid;
            if saturated_by.is_some_and(|owner| driver.owner_of(guid) != Some(owner)) {
                break;
            }
            let channel = self.channels.get(&guid).copied();
            let recheck = channel.is_none_or(|ch| now - ch.relevant_time >= recheck_after);
            // (Asked again only at the recheck: UE's `ProcessPrioritizedActors`.)
            let relevant = recheck && asker.ask(cand.index as usize);
            let class = &driver.classes[c as usize];
            let net = &class.actors[s as usize];
            let owned = net.owner == Some(ci as u32);
            // The owner's channel here is in its initial bunch while its open is not
            // acknowledged (UE: `bNetInitial`) — and, for a sub-object whose own channel opened
            // then, until its open is delivered (a listed channel of one owes its open): UE's
            // initial bunch is reliable.
            let initial = channel.is_some()
                || driver.owner_of(guid).is_some_and(|o| self.channels.get(&o).is_some_and(|ch| !ch.open_acked));
            let flags = rep_flags(net, owned, self.conn.replay, dc.net_groups);
            let allowed = class.cols.sub_condition[s as usize].is_none_or(|cond| condition_map(cond, flags, initial));
            // A sub-object goes in its owner's channel: none here, none for it.
            let sub_object = class.cols.sub_condition[s as usize].is_some();
            let owner_open = !sub_object
                || driver.owner_of(guid).is_some_and(|o| {
                    self.channels.contains_key(&o)
                        || self.dormant.contains_key(&o)
                        || torn_here.contains(&o)
                        || self.held_torn.contains(&o)
                });
            // A sub-object's channel lasts as long as its owner's relevancy does, while the
            // owner's channel is open here (the kernel's rule: `LastActor::owner_relevant_time`).
            let owner_channel = sub_object.then(|| driver.owner_of(guid)).flatten().and_then(|o| self.channels.get(&o));
            // (The later of the two clocks: one met before its owner reads the owner's before
            // the owner's recheck renews it.)
            let clock =
                |ch: &RefChannel| owner_channel.map_or(ch.relevant_time, |o| o.relevant_time.max(ch.relevant_time));
            // None opens while its owner is held dormant here (stale or not): it opens with
            // the owner when the owner wakes (the kernel's `opens_with_dormant_owner`).
            let opens_asleep = channel.is_none() && self.owner_hold(driver, sub_object, guid) == Hold::Dormant;
            let recently = allowed
                && owner_open
                && !opens_asleep
                && (relevant || channel.is_some_and(|ch| now - clock(&ch) < cfg.relevant_timeout));
            let startup = class.cols.settings[s as usize].startup_for(guid);
            if recently {
                if channel.is_none() && net.fast {
                    // A new channel: its fast arrays start from nothing (the kernel's rule).
                    for &g in driver.fast_arrays_of(guid) {
                        write.fast.restart(Side::Reference, ci, g);
                    }
                }
                let mut ch = channel.unwrap_or_else(|| {
                    self.next_epoch = self.next_epoch.wrapping_add(1);
                    RefChannel::new((c, s), self.next_epoch, self.conn.rel.next_seq().back(1))
                });
                if relevant {
                    ch.relevant_time = relevant_until(now, guid, ci as u32, time.frame);
                }
                ch.last_update = now;
                let a = v.actor(c, s);
                if ch.woken && ch.open_acked {
                    // Woken from dormancy: UE opens the channel anew, its first bunch initial —
                    // the initial-only values changed while the actor slept are owed as
                    // initial values, until a delivered bunch carries them.
                    let slept = changed_since(a, &class.layout.groups, ch.sent_through) & class.active.initial_only();
                    ch.resend |= slept;
                    ch.unsent_initial |= slept;
                }
                ch.woken = false;
                let (before, full_before) = (write.bits_written(&self.conn), st.full);
                replicate(driver, write, &mut self.conn, st, &mut ch, a, ci as u32, time.frame);
                // UE's `SentTemporaries`: a temporary actor is added once a bunch of its
                // channel went (and stays, whatever becomes of the channel, until it is gone).
                if ch.ever_opened && class.cols.settings[s as usize].net_temporary {
                    self.sent_temporaries.insert(guid);
                }
                if net.tearing {
                    // Its last update: did the window hold some of it back (leaves, or what
                    // fills no resend set — its open, its fast arrays' deltas)?
                    let open_owed = !ch.open_sent && !ch.open_acked;
                    let deferred = !ch.resend.is_empty()
                        || st.full && (!full_before || open_owed || !driver.fast.settled_on(Side::Reference, guid, ci));
                    tearing.push((c, s, deferred));
                    // A sub-object's owner closed TornOff here stays for it.
                    let owner = driver.owner_of(guid).filter(|o| torn_here.contains(o) || self.held_torn.contains(o));
                    if let Some(o) = owner.filter(|_| deferred) {
                        self.held_torn.insert(o);
                    }
                }
                self.channels.insert(guid, ch);
                let bits = (write.bits_written(&self.conn) - before) as u32;
                let action = Action::Replicated { opened: channel.is_none() };
                self.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                // UE asks about dormancy only for actors that are not owner-only; a sub-object
                // goes dormant where its owner is held dormant, whatever its own setting.
                let may_sleep = !net.tearing && !class.cols.settings[s as usize].only_relevant_to_owner;
                let wants = |rc: &RefConn| {
                    rc.owner_hold(driver, sub_object, guid) == Hold::Dormant
                        || wants_dormancy(driver, c, s, guid, ci as u32)
                };
                if may_sleep && channel.is_some() && wants(self) {
                    let before = write.bits_written(&self.conn);
                    if self.go_dormant(driver, write, st, a, ci) {
                        let bits = (write.bits_written(&self.conn) - before) as u32;
                        let action = Action::Dormant;
                        self.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                    }
                }
                if !self.budget.ready(write.bits_charged(&self.conn, &self.budget) as f64) {
                    // UE returns this actor's index: the leftovers start with it.
                    if saturated_by.is_none() {
                        leftovers_from = Some(k);
                        saturated_by = Some(guid);
                    }
                    continue;
                }
            }
            // A channel not recently relevant closes (a startup actor's stays), and a torn-off
            // actor's right after its last bunch.
            // (A sub-object its condition or its owner's channel no longer allows closes, a
            // startup owner's or not.)
            let gone = !(recently || startup && allowed && owner_open);
            // A copy woken (flushed) on a connection it is not relevant to, and not sent to
            // since: UE's channel stayed closed, the client keeps its dormant copy — dormant
            // again as it is, stale (it owes what changed).
            let woken = !recently && !net.tearing && self.channels.get(&guid).is_some_and(|ch| ch.woken);
            // A sub-object whose owner is held dormant here, or woken and not sent to since:
            // the client keeps the owner, and the sub-object with it.
            let hold = if !net.tearing && !recently { self.owner_hold(driver, sub_object, guid) } else { Hold::No };
            if woken && (hold != Hold::No || wants_dormancy(driver, c, s, guid, ci as u32)) {
                let ch = self.channels.remove(&guid).expect("woken");
                self.dormant.insert(guid, ch);
                let action = Action::Dormant;
                self.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits: 0 });
            } else if hold != Hold::No {
                // Dormant with its owner once settled; until then what it owes goes out. An
                // owner only woken leaves it as it is.
                let a = v.actor(c, s);
                if hold == Hold::Dormant
                    && self.channels.contains_key(&guid)
                    && !self.go_dormant(driver, write, st, a, ci)
                {
                    let mut ch = self.channels[&guid];
                    replicate(driver, write, &mut self.conn, st, &mut ch, a, ci as u32, time.frame);
                    self.channels.insert(guid, ch);
                }
            } else if (net.tearing || gone) && self.channels.contains_key(&guid) {
                let before = write.bits_written(&self.conn);
                let reason = close_reason(net.tearing);
                if write.write_close(&mut self.conn, st, PendingClose { guid, reason }) {
                    if let Some(ch) = self.channels.remove(&guid) {
                        self.note_close(guid, &ch);
                    }
                    let bits = (write.bits_written(&self.conn) - before) as u32;
                    let action = if net.tearing {
                        torn_here.push(guid);
                        Action::TornOff
                    } else {
                        // The client destroys its sub-objects with it: their channels end, and
                        // their copies held dormant (and its fast arrays' bases go).
                        self.end_owner(driver, ci, guid, reason);
                        Action::Closed
                    };
                    self.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                }
            }
        }
        leftovers_from
    }

    /// UE's leftovers of a saturated connection (`rest`: the candidates from the one whose send
    /// saturated it): a channel relevant within the last second, or an actor relevant now (its
    /// channel then marked relevant a while longer), is considered next frame — returned, as
    /// (class, slot).
    pub(super) fn leftovers(&mut self, v: &ConnView<'_>, asker: &mut Asker<'_>, rest: &[Listed]) -> Vec<(u32, u32)> {
        let (now, ci, frame) = (v.time.now, v.ci as u32, v.time.frame);
        self.decisions.saturated = true;
        let mut pending = Vec::new();
        for &Listed { cand, .. } in rest {
            // (A channel closed for dormancy this frame is still one.)
            let ch = match self.channels.get_mut(&cand.guid) {
                Some(ch) => Some(ch),
                None => self.dormant.get_mut(&cand.guid),
            };
            match ch {
                Some(ch) if now - ch.relevant_time <= 1.0 => {}
                Some(ch) if asker.ask(cand.index as usize) => {
                    ch.relevant_time = relevant_until(now, cand.guid, ci, frame);
                }
                None if asker.ask(cand.index as usize) => {}
                _ => continue,
            }
            pending.push(v.due[cand.index as usize]);
        }
        pending
    }
}
