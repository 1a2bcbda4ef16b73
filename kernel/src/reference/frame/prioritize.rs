//! One connection's prioritize step the UE way (`ServerReplicateActors_PrioritizeActors`): a walk
//! over every due actor — owner-only filter, dormant copies, `SentTemporaries`, then relevancy
//! for an actor with no channel — each one listed with the channel the walk found, its priority
//! the max over the viewers of `GetNetPriority`, and everything sorted.

use super::asked::{rep_flags, Asker};
use super::connection::{ConnView, Listed};
use super::*;

impl RefConn {
    /// The connection's candidates in send order: every due actor with a channel here, or
    /// relevant (asked of `asker`), each with its priority key.
    pub(super) fn prioritize(&mut self, v: &ConnView<'_>, asker: &mut Asker<'_>) -> Vec<Listed> {
        let ConnView { driver, due, ci, time, cfg, dc, .. } = *v;
        let (now, viewers) = (time.now, &dc.viewers[..]);
        let lookup = |g: NetGuid| v.link(g).map(|l| &l.0);
        let hook_of = |g: NetGuid| v.hook_of(g);
        // Each candidate with its channel's (woken, last update) as the walk found it: UE
        // keeps the channel found in `PrioritizeActors` (`FActorPriority::Channel`).
        let mut list: Vec<Listed> = Vec::new();
        // Owners whose channel this walk ended (owner-only, given up).
        let mut ended: Vec<NetGuid> = Vec::new();
        for (i, &(c, s)) in due.iter().enumerate() {
            let a = v.actor(c, s);
            let class = &driver.classes[c as usize];
            let hook = class.cols.hook.as_ref();
            let net = &class.actors[s as usize];
            let owned = net.owner == Some(ci as u32);
            // A sub-object's condition, with its owner's ownership (the driver keeps the two
            // the same), comes before any rule.
            let flags = rep_flags(net, owned, self.conn.replay, dc.net_groups);
            let allowed = class.cols.sub_condition[s as usize].is_none_or(|c| condition_map(c, flags, true));
            // UE's owner-only filter: an owner-only actor this connection does not own is
            // skipped, its channel closed once its relevancy has lapsed (unless a viewer has no
            // view target yet; a startup actor keeps its channel).
            let settings = &class.cols.settings[s as usize];
            // Sent once where its open went: a temporary actor, and a sub-object initial-only
            // here — its condition allows it in its owner's initial bunch only (UE's
            // `COND_InitialOnly`, and `COND_InitialOrOwner` on a connection that does not own
            // it).
            let once = settings.net_temporary
                || class.cols.sub_condition[s as usize]
                    .is_some_and(|c| condition_map(c, flags, true) && !condition_map(c, flags, false));
            if settings.only_relevant_to_owner && !owned && !owned_by_viewers(&a.link.0, viewers, &lookup) {
                let lapsed =
                    self.channels.get(&a.guid).is_some_and(|ch| now - ch.relevant_time >= cfg.relevant_timeout);
                if lapsed && !settings.startup_for(a.guid) && viewers.iter().all(|v| v.view_target.is_some()) {
                    if let Some(ch) = self.channels.remove(&a.guid).filter(|ch| ch.ever_opened) {
                        let reason = close_reason(net.tearing);
                        self.conn.closes.push(PendingClose { guid: a.guid, reason });
                        self.note_close(a.guid, &ch);
                    }
                    if !net.tearing {
                        // Its sub-objects' channels end with it, and its fast arrays' bases.
                        self.end_owner(driver, ci, a.guid, close_reason(false));
                        ended.push(a.guid);
                    }
                }
                continue;
            }
            // A sub-object of such an owner, not relevant here, is skipped with it (UE sends it
            // inside the owner's channel): it closes when the owner's does, never on its own
            // clock (the kernel's `candidates::owner_unowned`). (Relevant — its owner's
            // relevancy is the distance rule's — it is a candidate, as ever.)
            // (One its condition leaves out is a candidate: it closes at once, as anywhere.)
            let owners_owner_only = allowed
                && class.cols.sub_condition[s as usize].is_some()
                && driver.owner_of(a.guid).and_then(|o| driver.guids.get(&o)).is_some_and(|&(oc, os)| {
                    driver.classes[oc as usize].cols.settings[os as usize].only_relevant_to_owner
                })
                && !asker.ask(i);
            if owners_owner_only && !owned && !owned_by_viewers(&a.link.0, viewers, &lookup) {
                continue;
            }
            // A copy held dormant is not replicated until the actor wakes — but a stale one
            // (woken, not sent to, dormant again: it owes what changed) is a channel again
            // when the actor is relevant (not when it is tearing off).
            // (A copy is in one map or the other; a lookup in an empty map hashes nothing.)
            if let Some(d) = self.dormant.get(&a.guid) {
                if !(d.woken && !net.tearing && asker.ask(i)) {
                    continue;
                }
                // A temporary actor's (or initial-only sub-object's) copy whose open went stays
                // as it is (skipped below).
                if once && (d.open_sent || d.open_acked) {
                    continue;
                }
                let ch = self.dormant.remove(&a.guid).expect("found above");
                self.channels.insert(a.guid, ch);
            }
            // UE's `SentTemporaries`: a temporary actor (`bNetTemporary`) whose channel here
            // has sent its open is skipped — after the owner-only and dormancy checks, before
            // relevancy — so it is never updated nor closed for relevancy. Its open reported
            // lost (`open_sent` cleared, not acknowledged) makes it a candidate again. With no
            // channel (it ended: its sublevel unloaded, its owner-only owner given up), one
            // whose open went here before is skipped all the same — but not a sub-object
            // whose owner's channel this walk ended (the kernel lists it, its row still there).
            if once {
                let sent = match self.channels.get(&a.guid) {
                    Some(ch) => ch.open_sent || ch.open_acked,
                    None => {
                        settings.net_temporary
                            && self.sent_temporaries.contains(&a.guid)
                            && driver.owner_of(a.guid).is_none_or(|o| !ended.contains(&o))
                    }
                };
                if sent {
                    continue;
                }
            }
            // A tearing actor opens no channel.
            let channel = self.channels.get(&a.guid);
            // Nor one whose sublevel the client has not loaded (UE's
            // IsLevelInitializedForActor).
            let loaded = || dc.sublevels.is_loaded(class.cols.sublevel[s as usize]);
            // (Relevancy asked last, for an actor with no channel only: UE's `PrioritizeActors`.)
            let relevant = || allowed && relevant_to_connection(&a.link.0, owned, viewers, hook, &lookup, &hook_of);
            if channel.is_none() && (net.tearing || !loaded() || !asker.ask_with(i, relevant)) {
                continue;
            }
            let found = channel.map(|ch| (ch.woken, ch.last_update));
            list.push(Listed { cand: Candidate { key: 0, guid: a.guid, index: i as u32 }, class: c, slot: s, found });
        }
        // (A world without priority hooks asks for none: the reference's time is UE's.)
        let any_priority_hook = driver.classes.iter().any(|c| c.cols.priority_hook.is_some());
        let plookup = |g: NetGuid| v.link(g);
        // Priorities once every candidate is listed: an owner-only owner whose channel this
        // walk gave up ended its sub-objects' channels with it, and a sub-object listed
        // before it (its class registered first) ranks as one without a channel, as one
        // listed after it does.
        for Listed { cand, class: c, slot: s, found } in &mut list {
            let a = v.actor(*c, *s);
            // No channel, or one woken from dormancy (UE closed it then): the spawn priority.
            // (Found again only when an owner this walk gave up may have ended its channel.)
            let channel = if ended.is_empty() {
                *found
            } else {
                self.channels.get(&cand.guid).map(|ch| (ch.woken, ch.last_update))
            };
            let t = channel
                .filter(|&(woken, _)| !woken)
                .map_or(SPAWN_PRIORITY_SECONDS, |(_, last_update)| (now - last_update) as f32);
            let (rel, np) = &a.link;
            // UE's `GetNetPriority` is virtual: the first class on the owner-relevancy chain
            // with its own answers (`PriorityHook`).
            let priority_hook_of = |g: NetGuid| {
                let &(c, _) = driver.guids.get(&g)?;
                driver.classes[c as usize].cols.priority_hook.as_ref()
            };
            let hooked = any_priority_hook.then(|| PriorityInput::resolve_hooked(rel, *np, &plookup, priority_hook_of));
            let best = match hooked {
                Some((input, Some(hook))) => viewers.iter().map(|v| hook(&input, t, v)).fold(0.0f32, f32::max),
                _ => viewers.iter().map(|v| actor_priority(rel, *np, t, v, &plookup)).fold(0.0f32, f32::max),
            };
            cand.key = priority_key(best);
        }
        // (An unstable sort, as UE's introsort: the send order is total, GUIDs breaking ties.)
        list.sort_unstable_by(|a, b| send_order(&a.cand, &b.cand));
        list
    }
}
