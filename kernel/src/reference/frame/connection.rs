//! The connections across frames (`follow_connections`: joins, and what each is told of before
//! its frame), and one connection's frame the UE way (`ServerReplicateActors`' per-connection
//! part): ready,
//! closes, prioritize (`prioritize.rs`: relevancy asked actor by actor, a full sort), process in
//! order until the budget is spent (`process.rs`), each actor's replication (`replicate.rs`: the
//! changed properties active for this connection, encoded for it alone), the leftovers, the
//! tick's calls.

use super::asked::Asker;
use super::*;
use crate::net::rpc::Chan;
use crate::net::settings::ActorLevelConfig;
use crate::net::RelevancyHook;

impl ReferenceFrame {
    /// A static actor's end goes to every connection, a channel or not (its client loaded it
    /// with the level; UE's destruction infos of startup actors), and a connection that joins
    /// later is told of every one destroyed before (a torn-off one is its clients' own). Told
    /// as soon as the reference hears from the driver — its tick, or a client's feedback that
    /// arrives after the game's call (the driver queued the close at the call: a close the
    /// feedback sends again goes after it, as there).
    pub(super) fn tell_destroyed_statics(&mut self, driver: &NetDriver) {
        for (rc, _) in self.conns.iter_mut().zip(&driver.conns).filter(|(_, dc)| !dc.removed) {
            let newly = &driver.statics.destroyed[self.statics_told.min(driver.statics.destroyed.len())..];
            rc.conn.closes.queued.extend(newly.iter().map(|&g| PendingClose::destroyed(g)));
        }
        self.statics_told = driver.statics.destroyed.len();
    }

    /// Fast arrays the game removed (`removed`, the driver's log; the first `skip` told
    /// already): a client that may hold one (by the reference's own state of it, logged by slot
    /// as the array went) gets its close, as the driver's got theirs at the call — told to the
    /// connection the reference last saw in the slot, before a new one there replaces it.
    fn tell_fast_removals(&mut self, removed: &[(NetGuid, Vec<u32>)], skip: usize) {
        for (guid, slots) in removed.iter().skip(skip) {
            for &ci in slots {
                if let Some(rc) = self.conns.get_mut(ci as usize) {
                    rc.conn.closes.push(PendingClose::destroyed(*guid));
                }
            }
        }
    }

    /// What the game did since the last frame that the driver applied at its calls and a
    /// client's feedback arriving now must find done, as the driver's finds it: destroyed
    /// static actors' closes and removed fast arrays' closes queued (a close the feedback sends
    /// again goes after them, as there). The frame tells the rest.
    pub(super) fn catch_up(&mut self, driver: &NetDriver) {
        self.tell_destroyed_statics(driver);
        let Some(level) = driver.level.as_ref() else { return };
        // Removals logged since the driver's frame began (its next frame's `_last_tick`).
        let skip = if self.fast_told.0 == driver.frame { self.fast_told.1 } else { 0 };
        self.tell_fast_removals(&level.fast_removed.current, skip);
        self.fast_told = (driver.frame, level.fast_removed.current.len());
    }

    /// The driver's connections as this frame finds them: a static actor's end told to every
    /// connection, the game's fast array removals to the clients that may hold them, and a new
    /// connection (in a new slot, or in the slot of one removed) given its state.
    pub(super) fn follow_connections(&mut self, driver: &NetDriver) {
        let level = driver.level.as_ref().expect("checked by tick");
        self.tell_destroyed_statics(driver);
        // (Before a new connection replaces one the removals were logged for.)
        let told = std::mem::take(&mut self.fast_told);
        let skip = if told.0 .0 + 1 == self.frame.0 { told.1 } else { 0 };
        self.tell_fast_removals(&level.fast_removed.last_tick, skip);
        for (ci, c) in driver.conns.iter().enumerate() {
            if self.conns.get(ci).is_some_and(|rc| rc.id == c.id) {
                continue;
            }
            // A new connection, in a new slot or in the slot of one removed.
            let mut conn = Connection::new(c.replay, Pairs::channels(), driver.cfg.mtu, c.rel.first);
            conn.id = c.id;
            conn.closes.queued.extend(driver.statics.destroyed.iter().map(|&g| PendingClose::destroyed(g)));
            driver.fast.reset_reference_connection(ci);
            let rc = RefConn {
                id: c.id,
                conn,
                channels: GuidMap::default(),
                budget: Budget {
                    packet_overhead: level.cfg.packet_overhead,
                    ..Budget::new(level.cfg.net_speed, c.replay)
                },
                decisions: FrameDecisions::default(),
                fast_delivered: Vec::new(),
                owner_closes_delivered: Vec::new(),
                next_epoch: 0,
                held_torn: Default::default(),
                dormant: GuidMap::default(),
                looked: false,
                sent_temporaries: Default::default(),
            };
            if ci < self.conns.len() {
                self.conns[ci] = rc;
            } else {
                self.conns.push(rc);
            }
        }
    }
}

/// What the steps of one connection's frame read: the driver and its connection, the
/// reference's actors, the frame's due list and clock.
#[derive(Clone, Copy)]
pub(super) struct ConnView<'a> {
    pub(super) driver: &'a NetDriver,
    pub(super) actors: &'a [Vec<Option<RefActor>>],
    /// The frame's due actors (class, slot), in consider order.
    pub(super) due: &'a [(u32, u32)],
    /// The connection's slot.
    pub(super) ci: usize,
    pub(super) time: &'a ServerTime,
    pub(super) cfg: &'a ActorLevelConfig,
    /// The driver's connection in slot `ci`: viewers, sublevels, groups, ready time.
    pub(super) dc: &'a Connection,
}

impl<'a> ConnView<'a> {
    /// The reference's object of a live actor.
    pub(super) fn actor(&self, c: u32, s: u32) -> &'a RefActor {
        self.actors[c as usize][s as usize].as_ref().expect("due actors are live")
    }

    /// Actor `g`'s relevancy data and net priority: owner chains are followed actor to actor,
    /// as UE follows `Owner` pointers.
    pub(super) fn link(&self, g: NetGuid) -> Option<&'a (ActorRelevancy, f32)> {
        let &(c, s) = self.driver.guids.get(&g)?;
        self.actors.get(c as usize)?.get(s as usize)?.as_ref().map(|a| &a.link)
    }

    /// Actor `g`'s class hook: it answers for `g` when owner relevancy asks it.
    pub(super) fn hook_of(&self, g: NetGuid) -> Option<&'a RelevancyHook> {
        let &(c, _) = self.driver.guids.get(&g)?;
        self.driver.classes[c as usize].cols.hook.as_ref()
    }
}

/// A candidate of the prioritize walk: its class and slot, and its channel's (woken, last
/// update) as the walk found it — UE keeps the channel `PrioritizeActors` found
/// (`FActorPriority::Channel`).
#[derive(Clone, Copy)]
pub(super) struct Listed {
    pub(super) cand: Candidate,
    pub(super) class: u32,
    pub(super) slot: u32,
    pub(super) found: Option<(bool, f64)>,
}

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
        let ready = !dc.removed && time.now - dc.heard <= cfg.ready_timeout;
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
        let v = ConnView { driver, actors, due, ci, time, cfg, dc };
        let mut pending = Vec::new();
        // Tearing actors replicated here: (class, slot, whether the window held some back).
        let mut tearing: Vec<(u32, u32, bool)> = Vec::new();
        // Relevancy, asked where UE asks it (`asked`).
        let mut asker = Asker::new(v, rc.conn.replay);
        if ready {
            let list = rc.prioritize(&v, &mut asker);
            // Its closes (destroyed and torn-off actors, owner-only channels it gave up) and those
            // the writer queued (a fast array its condition no longer allows), written as the
            // kernel writes its queue: after the candidates, before any send.
            write.write_closes_if(&mut rc.conn, &mut st, |_, g| rc.dormant.contains_key(&g));
            if let Some(from) = rc.process(&v, &mut asker, (write, &mut st), &list, &mut tearing) {
                pending = rc.leftovers(&v, &mut asker, &list[from..]);
                if !write.calls.is_empty() {
                    rc.open_for_calls(&v, &mut asker, (write, &mut st), &list[from..]);
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
            Some(_) => Chan::Owed,
            None => Chan::Closed,
        };
        let saturated = rc.decisions.saturated;
        write.write_rpcs(&mut rc.conn, &mut st, write.calls, (saturated, ready), &chan);
        let written = write.end(&mut rc.conn, st, true);
        rc.budget.sent(written.bytes, written.packets);
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
