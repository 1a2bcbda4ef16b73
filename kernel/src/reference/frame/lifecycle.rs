//! The reference's actor list across frames: new actors get an object, gone ones close their
//! channels, tear-offs end once no connection owes their last update, sub-objects whose owner
//! went are settled — owners first, so a sub-object's close sees its owner's channel as this
//! frame leaves it.
//!
//! A frame looks at the slots where something happened, not at every slot of the world: UE's
//! network object list hears of an actor's spawn and destruction when they happen
//! (`AddNetworkActor`, `RemoveNetworkActor`), and the driver logs the same events by slot
//! (`Level::touched`: adopted, retired, made or orphaned as a sub-object, torn off). With them go
//! the tearing actors, whose tear-off is decided each frame until it ends. Every other slot is
//! audited right after them (timed apart, as the relevancy audit): one that needed tracking is a
//! slot the log missed, tracked then and counted in
//! [`super::ReferenceTick::missed_slots`] — the random worlds and the profiles fail on it. (Two
//! walks of every slot a frame were 16 % of battle_royale's reference frame, 50 000 actors, and
//! more than half of open_world's, 1 000 000: UE's frame walks neither.)

use super::*;
use crate::net::level::ReusedTearing;

impl ReferenceFrame {
    /// New actors get an object; destroyed ones are closed where they have a channel; tearing
    /// ones end their tear-off when it is due — in the slots the driver's log names (see the
    /// module documentation). Returns the new sub-objects (class, slot).
    pub(super) fn track_actors(
        &mut self,
        driver: &NetDriver,
        stores: &[&mut ClassStore],
        order: &[usize],
    ) -> Vec<(u32, u32)> {
        // Tearing actors whose tear-off goes on this frame (a connection left them over, or
        // this is the frame that replicates them): their sub-objects' tear-offs go on too (a
        // sub-object rides its owner's channel).
        // (The driver's list of tearing actors names them: no walk over every actor.) A tearing
        // actor also waits while a connection whose window held back its last update still
        // serves it with an open channel — for at most a window's worth of frames after the
        // game's call — and is considered each frame meanwhile; its owner waits with it.
        // (Its own list of tearing actors a window held back: the driver's tick may have
        // retired them since.)
        let reused = &driver.level.as_ref().expect("checked by tick").reused_tearing.last_tick;
        let mut owing = crate::ids::GuidSet::default();
        let mut owing_owners = crate::ids::GuidSet::default();
        self.deferring.retain(|&(c, s)| {
            self.actors[c as usize].get(s as usize).and_then(Option::as_ref).is_some_and(|e| !e.deferred.is_empty())
        });
        for &(c, s) in &self.deferring {
            let Some(e) = self.actors[c as usize][s as usize].as_ref() else { continue };
            let guid = e.guid;
            let within = self.frame.0 < e.tear_since.0 + 1 + crate::wire::feedback::ACK_WINDOW;
            let owes = within
                && e.tear_seen
                && !e.torn
                && e.deferred.iter().any(|&ci| {
                    let ci = ci as usize;
                    self.conns[ci].channels.contains_key(&guid) && serves(driver, &self.actors, reused, (c, s), ci)
                });
            if owes {
                owing.insert(guid);
                owing_owners.extend(e.owner);
            }
        }
        let waiting: crate::ids::GuidSet = driver
            .tearing
            .iter()
            .map(|t| t.actor())
            .filter_map(|(c, s, guid)| {
                let e = self.actors.get(c as usize)?.get(s as usize)?.as_ref().filter(|e| e.guid == guid)?;
                let a = driver.classes[c as usize].actors.get(s as usize).filter(|a| a.alive && a.guid == guid)?;
                let goes_on = !e.tear_seen || e.clock.pending_net_update || owing.contains(&guid);
                (a.tearing && !e.torn && (goes_on || owing_owners.contains(&guid))).then_some(guid)
            })
            .collect();
        let now = driver.level.as_ref().map_or(0.0, |l| l.time.now);
        // A tearing sub-object judged at the game's call that reused its slot: its owner's
        // tear-off went on as the driver judged it then (the owner may be gone by now).
        let owner_waited = reused.iter().map(|r| (r.guid, r.owner_waits)).collect();
        let track = Tracking { owing, owing_owners, waiting, owner_waited, now };
        for (c, class) in driver.classes.iter().enumerate() {
            let table = &mut self.actors[c];
            table.resize_with(class.actors.len().max(table.len()), || None);
            self.active.grow(c, table.len());
        }
        let slots = self.slots_to_track(driver);
        // Owners before sub-objects (two passes; a sub-object is an entry with an owner as the
        // frame begins): what a sub-object's close depends on — whether its owner's channel is
        // still open here — is then as this frame leaves it, whatever the order the classes
        // were registered in. Each pass in (class, slot) order, as a walk of every slot visits
        // them.
        let was_sub: Vec<bool> = slots
            .iter()
            .map(|&(c, s)| self.actors[c as usize][s as usize].as_ref().is_some_and(|e| e.owner.is_some()))
            .collect();
        let mut new_subs = Vec::new();
        for sub_objects in [false, true] {
            for (&(c, s), _) in slots.iter().zip(&was_sub).filter(|&(_, &sub)| sub == sub_objects) {
                self.track(driver, &*stores[order[c as usize]], &track, (c, s), &mut new_subs);
            }
        }
        // Still tearing: looked at again next frame (sorted, as `slots` is). Then the audit
        // (timed apart, as the relevancy audit is), before anything else of the frame: a slot
        // the driver's log did not name must need nothing.
        self.unsettled = slots.into_iter().filter(|&(c, s)| self.needs_track(driver, stores, order, c, s)).collect();
        let audit = Instant::now();
        let missed: Vec<(u32, u32)> = (0..driver.classes.len() as u32)
            .flat_map(|c| (0..self.actors[c as usize].len() as u32).map(move |s| (c, s)))
            .filter(|&(c, s)| {
                self.needs_track(driver, stores, order, c, s) && self.unsettled.binary_search(&(c, s)).is_err()
            })
            .collect();
        self.missed_slots += missed.len();
        debug_assert!(missed.is_empty(), "the driver's log missed slots {missed:?}");
        for &(c, s) in &missed {
            self.track(driver, &*stores[order[c as usize]], &track, (c, s), &mut new_subs);
        }
        // (Counted once: one still tearing is looked at from now on.)
        let still: Vec<(u32, u32)> =
            missed.into_iter().filter(|&(c, s)| self.needs_track(driver, stores, order, c, s)).collect();
        self.unsettled.extend(still);
        self.unsettled.sort_unstable();
        self.audit_seconds += audit.elapsed().as_secs_f64();
        new_subs
    }

    /// The slots whose entry may change this frame: those the driver's log names since the
    /// last frame (`Level::touched`), its tearing actors, the tearing actors a window held back
    /// (`deferring`), and the entries last frame left tearing (`unsettled`) — every slot on the
    /// first frame. Sorted, each once.
    fn slots_to_track(&mut self, driver: &NetDriver) -> Vec<(u32, u32)> {
        let level = driver.level.as_ref().expect("checked by tick");
        if !std::mem::replace(&mut self.tracked_once, true) {
            let sizes = self.actors.iter().map(Vec::len).enumerate();
            return sizes.flat_map(|(c, n)| (0..n as u32).map(move |s| (c as u32, s))).collect();
        }
        let mut slots: Vec<(u32, u32)> =
            level.touched.last_tick.iter().chain(&level.touched.current).copied().collect();
        slots.extend(driver.tearing.iter().map(|t| t.actor()).map(|(c, s, _)| (c, s)));
        slots.extend(self.deferring.iter().copied());
        slots.append(&mut self.unsettled);
        slots.retain(|&(c, s)| self.actors.get(c as usize).is_some_and(|t| (s as usize) < t.len()));
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Whether the entry in (`c`, `s`) would change if tracked now: an actor new or gone, a
    /// sub-object's owner not yet read, a tear-off or an orphan not yet settled.
    fn needs_track(&self, driver: &NetDriver, stores: &[&mut ClassStore], order: &[usize], c: u32, s: u32) -> bool {
        let (class, slot) = (&driver.classes[c as usize], s as usize);
        let entry = self.actors[c as usize][slot].as_ref();
        let a = class.actors.get(slot).filter(|a| a.alive);
        let live = a.is_some_and(|a| stores[order[c as usize]].generations().get(slot) == Some(&a.generation));
        match (entry, a) {
            (None, _) => live,
            (Some(_), None) => true,
            (Some(e), Some(a)) => {
                let owner_moved = class.cols.sub_condition[slot].is_some()
                    && driver.owner_of(e.guid).is_some_and(|o| e.owner != Some(o));
                a.guid != e.guid || !live || owner_moved || (!e.torn && (a.tearing || a.orphaned))
            }
        }
    }

    /// One slot of the actor list (see [`Self::track_actors`]).
    fn track(
        &mut self,
        driver: &NetDriver,
        store: &ClassStore,
        track: &Tracking,
        (c, slot): (u32, u32),
        new_subs: &mut Vec<(u32, u32)>,
    ) {
        let (class, slot, now) = (&driver.classes[c as usize], slot as usize, track.now);
        let tear_ends = |e: &RefActor| track.tear_ends(e);
        let owing = &track.owing;
        let entry = &mut self.actors[c as usize][slot];
        let a = class.actors.get(slot).filter(|a| a.alive);
        let live = a.is_some_and(|a| store.generations().get(slot) == Some(&a.generation));
        let same = entry.as_ref().is_some_and(|e| a.is_some_and(|a| a.guid == e.guid && live));
        if entry.is_some() && !same {
            let e = entry.take();
            self.active.set(c, slot, false);
            let gone = e.as_ref().map(|e| e.guid);
            // A sub-object the driver orphaned (its owner went first, in the same frame):
            // its clients destroy it with the owner, no close of its own. (The driver's
            // list of recent orphans says so when the slot has a new actor already.)
            let same_slot = class.actors.get(slot).filter(|a| Some(a.guid) == gone);
            let orphan = driver.subs.orphaned.iter().find(|o| Some(o.guid) == gone);
            let orphaned = same_slot.is_some_and(|a| a.orphaned) || orphan.is_some();
            // Torn off at the start of the frame that found it gone (its tear-off ended
            // first): its channels end with a TornOff close, as below, not a Destroyed.
            // (Not while a connection's full window holds back its last update or its
            // sub-object's, nor — a sub-object — while its owner's tear-off goes on:
            // then it is destroyed there as anywhere; reference sweep seed 92059.)
            let torn_now = e.as_ref().is_some_and(|e| !e.torn && tear_ends(e));
            // An orphan still tearing: closed TornOff where its owner's channel is not
            // open (a client that tore the owner off keeps the sub-object too).
            let tearing_orphan = orphaned
                && e.as_ref().is_some_and(|e| !e.torn)
                && (same_slot.is_some_and(|a| a.tearing) || orphan.is_some_and(|o| o.tearing));
            let owner = e.as_ref().and_then(|e| e.owner);
            for rc in &mut self.conns {
                let Some(g) = gone else { break };
                rc.sent_temporaries.remove(&g);
                // (A static actor's end was told to every connection above.) A copy held
                // dormant is the client's as a channel's is (UE's destruction infos).
                let open = rc.channels.remove(&g);
                let ch = open.or_else(|| rc.dormant.remove(&g));
                let opened = ch.is_some_and(|ch| ch.ever_opened);
                // An orphan's tear-off ending with it does not make it one of the
                // torn: where its owner's channel is open, the owner's Destroyed
                // close takes it (seed 112352 with dormancy and sublevels: a copy
                // held dormant got a TornOff close the driver never sends).
                let torn = if orphaned { tearing_orphan && !rc.owner_open(owner) } else { torn_now };
                if opened && torn {
                    rc.conn.closes.push(PendingClose { guid: g, reason: CloseReason::TornOff });
                } else if opened && !g.is_static() && !orphaned {
                    rc.conn.closes.push(PendingClose::destroyed(g));
                } else if !(opened && g.is_static()) {
                    // (A static actor's close went above; its channel closes here.)
                    continue;
                }
                if let Some(ch) = open {
                    rc.note_close(g, &ch);
                }
            }
        }
        if entry.is_none() && live {
            let a = a.expect("live");
            if class.cols.sub_condition[slot].is_some() {
                new_subs.push((c, slot as u32));
            }
            let layout = &class.layout;
            self.active.set(c, slot, true);
            *entry = Some(RefActor {
                guid: a.guid,
                generation: a.generation,
                object: vec![0; layout.record_bytes],
                // UE compares a new object with its class default object.
                shadow: layout.default_record.clone(),
                shadow_arrays: layout.default_arrays.clone(),
                last_changed: vec![0; layout.leaves.len()],
                clock: ConsiderClock::default(),
                fresh: true,
                link: (ActorRelevancy::at(a.guid, [0.0; 3]), 0.0),
                linked: None,
                tear_seen: false,
                torn: false,
                deferred: Vec::new(),
                tear_since: Frame(0),
                owner: None,
                sleep_at: None,
                serve: Serve::default(),
            });
        }
        if let Some(e) = entry.as_mut().filter(|_| class.cols.sub_condition[slot].is_some()) {
            e.owner = driver.owner_of(e.guid).or(e.owner);
        }
        // Torn off: replicated in the frame after the game's call (the first this sees
        // it), each channel closed right after; then, once no connection left it over,
        // its other channels end with a TornOff close (clients keep their copies). A
        // sub-object whose owner is gone: its channels end without one (clients destroyed
        // it with the owner) — with one if it was tearing (a client may have torn the
        // owner off and kept it).
        let orphaned = a.is_some_and(|a| a.orphaned);
        let tearing = a.is_some_and(|a| a.tearing);
        if let Some(e) = entry.as_mut().filter(|e| !e.torn && (tearing || orphaned)) {
            if tear_ends(e) || orphaned {
                e.torn = true;
                for rc in &mut self.conns {
                    let held = rc.held_torn.remove(&e.guid);
                    let open = rc.channels.remove(&e.guid);
                    let ch = open.or_else(|| rc.dormant.remove(&e.guid));
                    let opened = ch.is_some_and(|ch| ch.ever_opened);
                    // An orphan: where the gone owner's channel was open, its Destroyed
                    // close takes the sub-object with it (queued this frame, or to come in
                    // this pass). (A tear-off that ends closes every channel it has.)
                    let owner_open = orphaned && rc.owner_open(e.owner);
                    let torn_close = opened && tearing && !owner_open;
                    if torn_close {
                        rc.conn.closes.push(PendingClose { guid: e.guid, reason: CloseReason::TornOff });
                    }
                    // An orphan's channel ends with or without a close of its own:
                    // this tick's calls made while it was open still go.
                    if torn_close || orphaned {
                        if let Some(ch) = open.filter(|_| !held) {
                            rc.note_close(e.guid, &ch);
                        }
                    }
                }
            }
            if owing.contains(&e.guid) && !e.torn {
                e.clock.force_net_update(now);
            }
            // Switched off (a sub-object: its owner), it is not considered, so not
            // replicated: its tear-off waits, seen the first frame it is on.
            if !e.tear_seen && switched_on(driver, e.owner, a) {
                e.tear_since = Frame(self.frame.0.saturating_sub(1));
                e.tear_seen = true;
            }
        }
        if let Some(e) = entry.as_mut() {
            debug_assert_eq!(e.generation, a.map_or(0, |a| a.generation));
        }
    }
}

/// What a frame's tracking of the actor list reads of its tearing actors.
struct Tracking {
    /// Tearing actors a connection's full window held back, whose tear-off waits for it.
    owing: crate::ids::GuidSet,
    /// Their owners, which wait with them.
    owing_owners: crate::ids::GuidSet,
    /// Tearing actors whose tear-off goes on this frame.
    waiting: crate::ids::GuidSet,
    /// Tearing actors judged at the call that reused their slot (`Level::reused_tearing`):
    /// whether their owner's tear-off went on then.
    owner_waited: crate::ids::GuidMap<bool>,
    /// Server time.
    now: f64,
}

impl Tracking {
    /// A tearing actor's tear-off ends this frame: replicated since the game's call, not left
    /// over, no connection's window holding back its last update or a sub-object's, and — a
    /// sub-object — its owner's tear-off not going on.
    fn tear_ends(&self, e: &RefActor) -> bool {
        let waits = self.owing.contains(&e.guid) || self.owing_owners.contains(&e.guid);
        let owner_waits = match self.owner_waited.get(&e.guid) {
            Some(&waited) => waited,
            None => e.owner.is_some_and(|o| self.waiting.contains(&o)),
        };
        e.tear_seen && !e.clock.pending_net_update && !waits && !owner_waits
    }
}

impl RefConn {
    /// Owner `owner`'s channel on connection `ci` closed for `reason` (the client destroys its
    /// copy, sub-objects and all), as the kernel's `end_sub_channels`: its sub-objects' channels
    /// end, and their copies held dormant, each the client was sent getting a close of its own
    /// (should the owner's be lost while the owner has a channel again, a sub-object gone
    /// meanwhile would stay on the client); its fast arrays' bases here go (the next channel
    /// starts them from nothing either way; a base kept meanwhile pinned the arrays' change logs),
    /// each marked as one the client may hold until the owner's close is known delivered (a
    /// removal of the array then sends its own close), as the driver's.
    pub(super) fn end_owner(&mut self, driver: &NetDriver, ci: usize, owner: NetGuid, reason: CloseReason) {
        driver.fast.owner_ended(Side::Reference, ci, owner);
        for &sub in driver.sub_objects(owner) {
            let open = self.channels.remove(&sub);
            let sent = open.is_some_and(|ch| ch.ever_opened);
            if self.dormant.remove(&sub).is_some() || sent {
                self.conn.closes.push(PendingClose { guid: sub, reason });
            }
            if let Some(ch) = open {
                self.note_close(sub, &ch);
            }
        }
    }

    /// What the client did with its sublevels since the last frame (UE's
    /// `ServerUpdateLevelVisibility`, applied as it arrives): a sublevel it loaded (and has
    /// now) gets its destroyed static actors' closes again; one it unloaded closes every channel
    /// to an actor in it (a tearing one's too), copies held dormant too, the owner taking its
    /// sub-objects' along.
    pub(super) fn sublevel_changes(&mut self, driver: &NetDriver, ci: usize, sublevels: &ConnSublevels, frame: Frame) {
        let changes = sublevels.changes_at(frame);
        if changes.is_empty() {
            return;
        }
        let statics = &driver.statics;
        let retell = sublevels.destroyed_to_retell(frame, &statics.destroyed, |g| statics.sublevel_of(g));
        self.conn.closes.queued.extend(retell.map(PendingClose::destroyed));
        let closing = |guid: NetGuid| {
            let Some(&(c, s)) = driver.guids.get(&guid) else { return false };
            let (class, s) = (&driver.classes[c as usize], s as usize);
            let sublevel = class.cols.sublevel[s];
            crate::net::sublevels::change_of(changes, sublevel).is_some_and(|ch| ch.unloaded)
                && class.cols.sub_condition[s].is_none()
        };
        let open: Vec<NetGuid> = self.channels.keys().copied().filter(|&g| closing(g)).collect();
        let held: Vec<NetGuid> = self.dormant.keys().copied().filter(|&g| closing(g)).collect();
        for &guid in &open {
            let Some(ch) = self.channels.remove(&guid) else { continue };
            if ch.ever_opened {
                self.conn.closes.push(PendingClose { guid, reason: CloseReason::LevelUnloaded });
                self.note_close(guid, &ch);
            }
        }
        for &guid in &held {
            self.dormant.remove(&guid);
            self.conn.closes.push(PendingClose { guid, reason: CloseReason::LevelUnloaded });
        }
        for &owner in open.iter().chain(&held) {
            self.end_owner(driver, ci, owner, CloseReason::LevelUnloaded);
        }
    }

    /// Whether a gone sub-object's `owner` still has a channel here, or its Destroyed close
    /// is queued (this frame's pass takes owners first): that close takes the sub-object with
    /// it, no close of its own.
    fn owner_open(&self, owner: Option<NetGuid>) -> bool {
        owner.is_some_and(|o| {
            self.channels.get(&o).or_else(|| self.dormant.get(&o)).is_some_and(|ch| ch.ever_opened)
                || self.conn.closes.queued.iter().any(|c| c.guid == o && c.reason == CloseReason::Destroyed)
        })
    }
}

/// Whether connection `ci` is live and its frames serve the actor in (`c`, `s`) at all: an
/// owner-only actor only a connection that owns it or whose viewers are on its owner chain (UE's
/// `IsActorOwnedByAndRelevantToConnection`), a sub-object only where its condition lets it.
/// The actor is the reference's entry in (`c`, `s`). If the driver's slot holds another actor
/// already (it died and the game spawned a new one there between ticks: the driver judged its
/// tear-off at that call), it is judged as the driver judged it: by the connections and its
/// own columns at that call (`reused`, the driver's log of them) — or, not logged there, by its
/// own columns as of its last frame.
fn serves(
    driver: &NetDriver,
    actors: &[Vec<Option<RefActor>>],
    reused: &[ReusedTearing],
    (c, s): (u32, u32),
    ci: usize,
) -> bool {
    let class = &driver.classes[c as usize];
    let net = &class.actors[s as usize];
    let Some(a) = actors[c as usize][s as usize].as_ref() else { return false };
    let dc = &driver.conns[ci];
    // The owner chain's first link: the actor's `Owner`.
    let mut first = a.link.0.owner;
    let (serve, removed, viewers, groups) = if net.guid == a.guid {
        first = class.cols.owner_actor[s as usize];
        (Serve::of(class, s as usize), dc.removed, &dc.viewers[..], dc.net_groups)
    } else if let Some(r) = reused.iter().find(|r| (r.class, r.slot, r.guid) == (c, s, a.guid)) {
        let Some((_, removed, viewers, groups)) = r.conns.iter().find(|x| x.0 == ci as u32) else { return false };
        first = r.owner_actor;
        let serve = Serve {
            owner: r.owner,
            autonomous: r.autonomous,
            physics: r.physics,
            sub_condition: r.sub_condition,
            only_relevant_to_owner: r.only_relevant_to_owner,
        };
        (serve, *removed, &viewers[..], *groups)
    } else {
        (a.serve, dc.removed, &dc.viewers[..], dc.net_groups)
    };
    if removed {
        return false;
    }
    let owned = serve.owner == Some(ci as u32);
    let flags = ReplicationFlags {
        owner: owned,
        autonomous: serve.autonomous,
        physics: serve.physics,
        replay: dc.replay,
        groups,
    };
    // (An initial-only one is served: its owner's channel decides when.)
    if !serve.sub_condition.is_none_or(|cond| condition_map(cond, flags, true)) {
        return false;
    }
    if !serve.only_relevant_to_owner || owned {
        return true;
    }
    // The chain's links as they are now, read through each actor as UE reads `Owner` (its
    // links here are refreshed later in the frame, for the consider list: a chain the game broke
    // since the last frame was still whole in them — a tear-off waited on a connection the
    // driver no longer served).
    let owner_of = |g: NetGuid| {
        let &(c, s) = driver.guids.get(&g)?;
        driver.classes[c as usize].cols.owner_actor[s as usize]
    };
    crate::net::relevancy::chain_viewed(a.guid, first, viewers, &owner_of)
}
