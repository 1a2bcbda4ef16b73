//! One connection's frame the UE way (`ServerReplicateActors`' per-connection part): ready,
//! closes, prioritize (relevancy asked actor by actor, a full sort), process in order until the
//! budget is spent, and each actor's replication — the changed properties active for this
//! connection, encoded for it alone.

use super::asked::{rep_flags, Asker};
use super::dormancy::{wants_dormancy, Hold};
use super::*;
use crate::net::rpc::Chan;
use crate::schema::LeafGroups;

impl ReferenceFrame {
    /// One connection's frame, UE's way. Returns the bytes written; marks in `awake` (parallel
    /// to `due`) which of the actors that may sleep (`sleepy`: indices in `due`) this connection
    /// holds awake.
    pub(super) fn replicate_connection(
        &mut self,
        driver: &NetDriver,
        write: &WriteCtx<'_>,
        due: &[(u32, u32)],
        ci: usize,
        time: &ServerTime,
        (sleepy, awake): (&[u32], &mut [bool]),
    ) -> usize {
        let level = driver.level.as_ref().expect("checked by tick");
        let cfg = &level.cfg;
        let dc = &driver.conns[ci];
        let rc = &mut self.conns[ci];
        // The game's groups for this connection, as the driver holds them (its writer asks them
        // of fast arrays under NetGroup conditions).
        (rc.conn.net_groups, rc.conn.groups_changed) = (dc.net_groups, dc.groups_changed);
        let actors = &self.actors;
        let mut st = write.begin(&mut rc.conn);
        let now = time.now;
        let ready = !dc.removed && now - dc.heard <= cfg.ready_timeout;
        rc.decisions = FrameDecisions {
            frame: time.frame,
            ready,
            queued_bits: rc.budget.queued_bits,
            ..FrameDecisions::default()
        };
        if dc.removed {
            return 0;
        }
        rc.sublevel_changes(driver, ci, &dc.sublevels, time.frame);
        let mut pending = Vec::new();
        // Tearing actors replicated here: (class, slot, whether the window held some back).
        let mut tearing: Vec<(u32, u32, bool)> = Vec::new();
        // Owner chains are followed actor to actor, as UE follows `Owner` pointers.
        let plookup = |g: NetGuid| {
            let &(c, s) = driver.guids.get(&g)?;
            actors.get(c as usize)?.get(s as usize)?.as_ref().map(|a| &a.link)
        };
        let lookup = |g: NetGuid| plookup(g).map(|l| &l.0);
        // An owner's class hook answers for it when owner relevancy asks it.
        let hook_of = |g: NetGuid| {
            let &(c, _) = driver.guids.get(&g)?;
            driver.classes[c as usize].cols.hook.as_ref()
        };
        let viewers = &dc.viewers;
        // Relevancy, asked where UE asks it (`asked`).
        let mut asker = Asker::new(driver, actors, due, ci, (rc.conn.replay, dc.net_groups), viewers);
        if ready {
            // Prioritize: every due actor with a channel, or relevant.
            // Each candidate with its channel's (woken, last update) as the walk found it: UE
            // keeps the channel found in `PrioritizeActors` (`FActorPriority::Channel`).
            let mut list: Vec<Listed> = Vec::new();
            // Owners whose channel this walk ended (owner-only, given up).
            let mut ended: Vec<NetGuid> = Vec::new();
            for (i, &(c, s)) in due.iter().enumerate() {
                let a = actors[c as usize][s as usize].as_ref().expect("due actors are live");
                let class = &driver.classes[c as usize];
                let hook = class.cols.hook.as_ref();
                let net = &class.actors[s as usize];
                let owned = net.owner == Some(ci as u32);
                // A sub-object's condition, with its owner's ownership (the driver keeps the two
                // the same), comes before any rule.
                let flags = rep_flags(net, owned, rc.conn.replay, dc.net_groups);
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
                        rc.channels.get(&a.guid).is_some_and(|ch| now - ch.relevant_time >= cfg.relevant_timeout);
                    if lapsed && !settings.startup_for(a.guid) && viewers.iter().all(|v| v.view_target.is_some()) {
                        if let Some(ch) = rc.channels.remove(&a.guid).filter(|ch| ch.ever_opened) {
                            let reason = close_reason(net.tearing);
                            rc.conn.closes.push(PendingClose { guid: a.guid, reason });
                            rc.note_close(a.guid, &ch);
                        }
                        if !net.tearing {
                            // Its sub-objects' channels end with it, and its fast arrays' bases.
                            rc.end_owner(driver, ci, a.guid, close_reason(false));
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
                if let Some(d) = rc.dormant.get(&a.guid) {
                    if !(d.woken && !net.tearing && asker.ask(i)) {
                        continue;
                    }
                    // A temporary actor's (or initial-only sub-object's) copy whose open went stays
                    // as it is (skipped below).
                    if once && (d.open_sent || d.open_acked) {
                        continue;
                    }
                    let ch = rc.dormant.remove(&a.guid).expect("found above");
                    rc.channels.insert(a.guid, ch);
                }
                // UE's `SentTemporaries`: a temporary actor (`bNetTemporary`) whose channel here
                // has sent its open is skipped — after the owner-only and dormancy checks, before
                // relevancy — so it is never updated nor closed for relevancy. Its open reported
                // lost (`open_sent` cleared, not acknowledged) makes it a candidate again. With no
                // channel (it ended: its sublevel unloaded, its owner-only owner given up), one
                // whose open went here before is skipped all the same — but not a sub-object
                // whose owner's channel this walk ended (the kernel lists it, its row still there).
                if once {
                    let sent = match rc.channels.get(&a.guid) {
                        Some(ch) => ch.open_sent || ch.open_acked,
                        None => {
                            settings.net_temporary
                                && rc.sent_temporaries.contains(&a.guid)
                                && driver.owner_of(a.guid).is_none_or(|o| !ended.contains(&o))
                        }
                    };
                    if sent {
                        continue;
                    }
                }
                // A tearing actor opens no channel.
                let channel = rc.channels.get(&a.guid);
                // Nor one whose sublevel the client has not loaded (UE's
                // IsLevelInitializedForActor).
                let loaded = || dc.sublevels.is_loaded(class.cols.sublevel[s as usize]);
                // (Relevancy asked last, for an actor with no channel only: UE's `PrioritizeActors`.)
                let relevant = || allowed && relevant_to_connection(&a.link.0, owned, viewers, hook, &lookup, &hook_of);
                if channel.is_none() && (net.tearing || !loaded() || !asker.ask_with(i, relevant)) {
                    continue;
                }
                let found = channel.map(|ch| (ch.woken, ch.last_update));
                list.push(Listed {
                    cand: Candidate { key: 0, guid: a.guid, index: i as u32 },
                    class: c,
                    slot: s,
                    found,
                });
            }
            // (A world without priority hooks asks for none: the reference's time is UE's.)
            let any_priority_hook = driver.classes.iter().any(|c| c.cols.priority_hook.is_some());
            // Priorities once every candidate is listed: an owner-only owner whose channel this
            // walk gave up ended its sub-objects' channels with it, and a sub-object listed
            // before it (its class registered first) ranks as one without a channel, as one
            // listed after it does.
            for Listed { cand, class: c, slot: s, found } in &mut list {
                let a = actors[*c as usize][*s as usize].as_ref().expect("due actors are live");
                // No channel, or one woken from dormancy (UE closed it then): the spawn priority.
                // (Found again only when an owner this walk gave up may have ended its channel.)
                let channel = if ended.is_empty() {
                    *found
                } else {
                    rc.channels.get(&cand.guid).map(|ch| (ch.woken, ch.last_update))
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
                let hooked =
                    any_priority_hook.then(|| PriorityInput::resolve_hooked(rel, *np, &plookup, priority_hook_of));
                let best = match hooked {
                    Some((input, Some(hook))) => viewers.iter().map(|v| hook(&input, t, v)).fold(0.0f32, f32::max),
                    _ => viewers.iter().map(|v| actor_priority(rel, *np, t, v, &plookup)).fold(0.0f32, f32::max),
                };
                cand.key = priority_key(best);
            }
            // (An unstable sort, as UE's introsort: the send order is total, GUIDs breaking ties.)
            list.sort_unstable_by(|a, b| send_order(&a.cand, &b.cand));
            // Its closes (destroyed and torn-off actors, owner-only channels it gave up) and those
            // the writer queued (a fast array its condition no longer allows), written as the
            // kernel writes its queue: after the candidates, before any send.
            write.write_closes_if(&mut rc.conn, &mut st, |_, g| rc.dormant.contains_key(&g));
            // Process: nothing when the connection is not net-ready to begin with (UE's first
            // test), and then actor by actor until it is not.
            let recheck_after = cfg.relevant_timeout.min(1.0);
            let mut leftovers_from = (!rc.budget.ready(write.bits_written(&rc.conn) as f64)).then_some(0);
            let processed = if leftovers_from.is_some() { &list[..0] } else { &list[..] };
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
                let channel = rc.channels.get(&guid).copied();
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
                    || driver.owner_of(guid).is_some_and(|o| rc.channels.get(&o).is_some_and(|ch| !ch.open_acked));
                let flags = rep_flags(net, owned, rc.conn.replay, dc.net_groups);
                let allowed =
                    class.cols.sub_condition[s as usize].is_none_or(|cond| condition_map(cond, flags, initial));
                // A sub-object goes in its owner's channel: none here, none for it.
                let sub_object = class.cols.sub_condition[s as usize].is_some();
                let owner_open = !sub_object
                    || driver.owner_of(guid).is_some_and(|o| {
                        rc.channels.contains_key(&o)
                            || rc.dormant.contains_key(&o)
                            || torn_here.contains(&o)
                            || rc.held_torn.contains(&o)
                    });
                // A sub-object's channel lasts as long as its owner's relevancy does, while the
                // owner's channel is open here (the kernel's rule: `LastActor::owner_relevant_time`).
                let owner_channel =
                    sub_object.then(|| driver.owner_of(guid)).flatten().and_then(|o| rc.channels.get(&o));
                // (The later of the two clocks: one met before its owner reads the owner's before
                // the owner's recheck renews it.)
                let clock =
                    |ch: &RefChannel| owner_channel.map_or(ch.relevant_time, |o| o.relevant_time.max(ch.relevant_time));
                // None opens while its owner is held dormant here (stale or not): it opens with
                // the owner when the owner wakes (the kernel's `opens_with_dormant_owner`).
                let opens_asleep = channel.is_none() && rc.owner_hold(driver, sub_object, guid) == Hold::Dormant;
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
                        rc.next_epoch = rc.next_epoch.wrapping_add(1);
                        RefChannel {
                            class: c,
                            slot: s,
                            open_sent: false,
                            open_acked: false,
                            ever_opened: false,
                            sent_through: Frame(0),
                            relevant_time: 0.0,
                            last_update: 0.0,
                            epoch: rc.next_epoch,
                            opened_after: rc.conn.rel.next_seq().back(1),
                            inactive: LeafMask::EMPTY,
                            resend: LeafMask::EMPTY,
                            unsent_initial: LeafMask::EMPTY,
                            woken: false,
                            last_packet: 0,
                            role: None,
                            role_resend: false,
                        }
                    });
                    if relevant {
                        ch.relevant_time = relevant_until(now, guid, ci as u32, time.frame);
                    }
                    ch.last_update = now;
                    let a = actors[c as usize][s as usize].as_ref().expect("due actors are live");
                    if ch.woken && ch.open_acked {
                        // Woken from dormancy: UE opens the channel anew, its first bunch initial —
                        // the initial-only values changed while the actor slept are owed as
                        // initial values, until a delivered bunch carries them.
                        let slept =
                            changed_since(a, &class.layout.groups, ch.sent_through) & class.active.initial_only();
                        ch.resend |= slept;
                        ch.unsent_initial |= slept;
                    }
                    ch.woken = false;
                    let (before, full_before) = (write.bits_written(&rc.conn), st.full);
                    replicate(driver, write, &mut rc.conn, &mut st, &mut ch, a, ci as u32, time.frame);
                    // UE's `SentTemporaries`: a temporary actor is added once a bunch of its
                    // channel went (and stays, whatever becomes of the channel, until it is gone).
                    if ch.ever_opened && class.cols.settings[s as usize].net_temporary {
                        rc.sent_temporaries.insert(guid);
                    }
                    if net.tearing {
                        // Its last update: did the window hold some of it back (leaves, or what
                        // fills no resend set — its open, its fast arrays' deltas)?
                        let open_owed = !ch.open_sent && !ch.open_acked;
                        let deferred = !ch.resend.is_empty()
                            || st.full
                                && (!full_before || open_owed || !driver.fast.settled_on(Side::Reference, guid, ci));
                        tearing.push((c, s, deferred));
                        // A sub-object's owner closed TornOff here stays for it.
                        let owner = driver.owner_of(guid).filter(|o| torn_here.contains(o) || rc.held_torn.contains(o));
                        if let Some(o) = owner.filter(|_| deferred) {
                            rc.held_torn.insert(o);
                        }
                    }
                    rc.channels.insert(guid, ch);
                    let bits = (write.bits_written(&rc.conn) - before) as u32;
                    let action = Action::Replicated { opened: channel.is_none() };
                    rc.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                    // UE asks about dormancy only for actors that are not owner-only; a sub-object
                    // goes dormant where its owner is held dormant, whatever its own setting.
                    let may_sleep = !net.tearing && !class.cols.settings[s as usize].only_relevant_to_owner;
                    let wants = || {
                        rc.owner_hold(driver, sub_object, guid) == Hold::Dormant
                            || wants_dormancy(driver, c, s, guid, ci as u32)
                    };
                    if may_sleep && channel.is_some() && wants() {
                        let before = write.bits_written(&rc.conn);
                        if rc.go_dormant(driver, write, &mut st, a, ci) {
                            let bits = (write.bits_written(&rc.conn) - before) as u32;
                            let action = Action::Dormant;
                            rc.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                        }
                    }
                    if !rc.budget.ready(write.bits_written(&rc.conn) as f64) {
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
                let woken = !recently && !net.tearing && rc.channels.get(&guid).is_some_and(|ch| ch.woken);
                // A sub-object whose owner is held dormant here, or woken and not sent to since:
                // the client keeps the owner, and the sub-object with it.
                let hold = if !net.tearing && !recently { rc.owner_hold(driver, sub_object, guid) } else { Hold::No };
                if woken && (hold != Hold::No || wants_dormancy(driver, c, s, guid, ci as u32)) {
                    let ch = rc.channels.remove(&guid).expect("woken");
                    rc.dormant.insert(guid, ch);
                    let action = Action::Dormant;
                    rc.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits: 0 });
                } else if hold != Hold::No {
                    // Dormant with its owner once settled; until then what it owes goes out. An
                    // owner only woken leaves it as it is.
                    let a = actors[c as usize][s as usize].as_ref().expect("due actors are live");
                    if hold == Hold::Dormant
                        && rc.channels.contains_key(&guid)
                        && !rc.go_dormant(driver, write, &mut st, a, ci)
                    {
                        let mut ch = rc.channels[&guid];
                        replicate(driver, write, &mut rc.conn, &mut st, &mut ch, a, ci as u32, time.frame);
                        rc.channels.insert(guid, ch);
                    }
                } else if (net.tearing || gone) && rc.channels.contains_key(&guid) {
                    let before = write.bits_written(&rc.conn);
                    let reason = close_reason(net.tearing);
                    if write.write_close(&mut rc.conn, &mut st, PendingClose { guid, reason }) {
                        if let Some(ch) = rc.channels.remove(&guid) {
                            rc.note_close(guid, &ch);
                        }
                        let bits = (write.bits_written(&rc.conn) - before) as u32;
                        let action = if net.tearing {
                            torn_here.push(guid);
                            Action::TornOff
                        } else {
                            // The client destroys its sub-objects with it: their channels end, and
                            // their copies held dormant (and its fast arrays' bases go).
                            rc.end_owner(driver, ci, guid, reason);
                            Action::Closed
                        };
                        rc.decisions.sends.push(SendDecision { guid, priority: cand.key, action, bits });
                    }
                }
            }
            // UE's leftovers: a channel relevant within the last second, or an actor relevant
            // now (its channel then marked relevant a while longer), is considered next frame.
            if let Some(from) = leftovers_from {
                rc.decisions.saturated = true;
                for &Listed { cand: rest, .. } in &list[from..] {
                    // (A channel closed for dormancy this frame is still one.)
                    let ch = match rc.channels.get_mut(&rest.guid) {
                        Some(ch) => Some(ch),
                        None => rc.dormant.get_mut(&rest.guid),
                    };
                    match ch {
                        Some(ch) if now - ch.relevant_time <= 1.0 => {}
                        Some(ch) if asker.ask(rest.index as usize) => {
                            ch.relevant_time = relevant_until(now, rest.guid, ci as u32, time.frame);
                        }
                        None if asker.ask(rest.index as usize) => {}
                        _ => continue,
                    }
                    pending.push(due[rest.index as usize]);
                }
            }
        }
        // The actors that may sleep that this connection holds awake: an open channel (not
        // dormant), or relevant without a copy (and in a sublevel its client has loaded); one
        // not replicated to this frame, its open channels.
        for &i in sleepy {
            let (i, (c, s)) = (i as usize, due[i as usize]);
            let Some(a) = actors[c as usize][s as usize].as_ref().filter(|_| !awake[i]) else { continue };
            let open = rc.channels.contains_key(&a.guid);
            let loaded = dc.sublevels.is_loaded(driver.classes[c as usize].cols.sublevel[s as usize]);
            let relevant_new = ready && !rc.dormant.contains_key(&a.guid) && loaded && asker.ask(i);
            awake[i] = open || relevant_new;
        }
        // The whole relevant set, for the cross-check with the kernel: the answers the frame did
        // not need asked now, timed apart (`asked`).
        if ready {
            let audit = Instant::now();
            rc.decisions.relevant = asker.audit();
            self.audit_seconds += audit.elapsed().as_secs_f64();
        }
        // The tick's calls, after the actors (the writer's rule, with this connection's channels).
        let (channels, held_torn) = (&rc.channels, &rc.held_torn);
        let chan = |_: &Connection, g: NetGuid| match channels.get(&g) {
            Some(_) if held_torn.contains(&g) => Chan::Closed,
            Some(ch) if ch.open_acked => Chan::Acked,
            Some(ch) if ch.ever_opened => Chan::Opened,
            _ => Chan::Closed,
        };
        let saturated = rc.decisions.saturated;
        write.write_rpcs(&mut rc.conn, &mut st, write.calls, (saturated, ready), &chan);
        let written = write.end(&mut rc.conn, st, true);
        rc.budget.sent(written.bytes);
        for (c, s) in pending {
            if let Some(a) = self.actors[c as usize][s as usize].as_mut() {
                a.clock.pending_net_update = true;
            }
        }
        for (c, s, deferred) in tearing {
            if let Some(a) = self.actors[c as usize][s as usize].as_mut() {
                a.deferred.retain(|&d| d != ci as u32);
                if deferred {
                    a.deferred.push(ci as u32);
                    self.deferring.insert((c, s));
                }
            }
        }
        written.bytes
    }
}

/// Sends what a channel owes: the properties changed since its last send that are active for
/// this connection, and the open until it is acknowledged; then the actor's fast arrays.
#[allow(clippy::too_many_arguments)]
fn replicate(
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

/// A candidate of the prioritize walk: its class and slot, and its channel's (woken, last
/// update) as the walk found it — UE keeps the channel `PrioritizeActors` found
/// (`FActorPriority::Channel`).
#[derive(Clone, Copy)]
struct Listed {
    cand: Candidate,
    class: u32,
    slot: u32,
    found: Option<(bool, f64)>,
}
