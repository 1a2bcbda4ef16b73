//! Dormancy (UE's `NetDormancy`): actors at rest leave the frame, and connections keep their
//! copies without a channel.
//!
//! ```text
//! per connection, when a due actor that wants dormancy there (DormantAll, Initial, or
//! DormantPartial and the class hook says so) has everything acknowledged — open acked,
//! nothing owed, no bunch in flight — its channel closes with reason Dormant: the client keeps
//! the actor, the row stays (flag DORMANT: what the client has, as `sent_through`)
//! after the connections: a due actor that wants dormancy and is held awake by no connection
//! (no open non-dormant channel, no relevant connection still waiting for it) falls asleep:
//! off the consider list — not compared (push marks kept), nothing per connection — and into
//! the dormant cells, where connections look for it:
//! before gather, each connection about once a second (and in its first frame) asks the dormant
//! cells for sleeping actors relevant to its viewers that it has no row for: those wake for one
//! consideration, so a connection that joins or comes near later still gets the current state
//! once (it then goes dormant there too)
//! wake (set Awake/Never) or flush: every dormant row of the actor (and of its sub-objects)
//! becomes a channel again and the actor is due now: each connection it is relevant to gets
//! every property changed since its row's sent_through (history), so changes made while dormant
//! are never lost; a flushed DormantAll actor goes dormant again once that is acknowledged; a
//! connection it is not relevant to keeps its copy dormant, stale (DORMANT | WOKEN: nothing was
//! sent), until the actor is relevant there again (UE's channel stays closed there too)
//! sub-objects: dormant where their owner is held dormant, once settled (UE's ride the owner's
//! channel); owner-only actors never go dormant (UE asks only for the others); nor does a
//! temporary actor (`NetSettings::net_temporary`) where its open went: the connection skips its
//! channel, so it never settles there (a copy held dormant when it became temporary is left as
//! the client has it, woken or not)
//! ```
//!
//! Only "plain" actors sleep (relevant by distance alone: no owner, instigator, owning
//! connection, rule settings or class hook; not temporary, whose open channels are never
//! dormant); the others stay on the consider list while dormant,
//! so their dormant rows cost a skip per due frame and owner rules keep working. A sleeping
//! actor's position is where it fell asleep. A static actor with `Initial` dormancy sleeps from
//! its registration and never opens until woken: its clients loaded it with the level.

mod cells;

pub(crate) use cells::DormantCells;
use cells::Sleeper;

use super::level::Level;
use super::pairs::pair_key;
use super::relevancy::DueActor;
use super::{ClassId, ConnectionId, DriverError, NetDriver, NetGuid};
use crate::store::{ActorId, ClassStore};
use std::sync::Arc;

/// An actor's dormancy (UE's `ENetDormancy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dormancy {
    /// Never dormant.
    Never,
    /// Awake now; may be made dormant later (UE's default, `DORM_Awake`).
    #[default]
    Awake,
    /// Dormant on every connection.
    DormantAll,
    /// Dormant on the connections the class's [`DormancyHook`] names.
    DormantPartial,
    /// A static actor that never opens until woken (clients loaded it with the level); for a
    /// dynamic actor, the same as `DormantAll`.
    Initial,
}

impl Dormancy {
    /// Whether this asks for dormancy at all.
    pub fn dormant(self) -> bool {
        matches!(self, Dormancy::DormantAll | Dormancy::DormantPartial | Dormancy::Initial)
    }
}

/// What a game's call did to an actor's sleep, as the driver logs it for a reference to replay
/// (`Level::dormancy_calls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DormancyCall {
    /// Woken (set awake, flushed, or forced while dormant): due now, and its copies held
    /// dormant channels again.
    Wake,
    /// Back on the consider list, its copies left dormant (its class got a relevancy hook).
    Rouse,
    /// Asleep at once (`Initial` on a static actor in the frame it was registered).
    Sleep,
}

/// One logged [`DormancyCall`]: on which actor (class, slot and GUID — the slot may hold another
/// actor by the next tick) and at what server time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Logged {
    pub class: u32,
    pub slot: u32,
    pub guid: NetGuid,
    pub at: f64,
    pub call: DormancyCall,
}

/// A class's answer for a `DormantPartial` actor: whether it is dormant for the connection
/// (UE's `GetNetDormancy` override).
pub type DormancyHook = Arc<dyn Fn(NetGuid, ConnectionId) -> bool + Send + Sync>;

/// Seconds between a connection's looks at the dormant cells. Ours: UE rechecks an actor without
/// a channel whenever it is considered, so a connection may meet a sleeper up to this much later
/// than in UE (a look costs a sweep of the cells near its viewers).
pub const DORMANT_CHECK_SECONDS: f64 = 1.0;

/// Whether `due` wants to be dormant for connection `conn`.
pub(crate) fn dormant_for(due: &DueActor, conn: ConnectionId, hooks: &[Option<DormancyHook>]) -> bool {
    let hook = hooks.get(due.class as usize).and_then(Option::as_ref);
    wants_dormancy_for(due.dormancy, hook, due.actor.guid, conn)
}

/// Whether an actor `guid` of `dormancy`, its class's `hook` given, wants to be dormant for
/// connection `conn` (the reference asks it too).
pub(crate) fn wants_dormancy_for(
    dormancy: Dormancy,
    hook: Option<&DormancyHook>,
    guid: NetGuid,
    conn: ConnectionId,
) -> bool {
    match dormancy {
        Dormancy::DormantAll | Dormancy::Initial => true,
        Dormancy::DormantPartial => hook.is_some_and(|h| h(guid, conn)),
        Dormancy::Never | Dormancy::Awake => false,
    }
}

impl Level {
    /// Frames between a connection's looks at the dormant cells.
    fn check_interval(&self) -> u64 {
        (DORMANT_CHECK_SECONDS * self.cfg.tick_rate).round().max(1.0) as u64
    }
}

impl NetDriver {
    /// Sets an actor's dormancy (UE's `SetNetDormancy`). `Awake` or `Never` wakes it: every
    /// connection holding it dormant gets what changed while it slept. A dormant setting takes
    /// effect per connection once everything sent there is acknowledged. `Initial` is for a
    /// static actor not yet replicated: it sleeps at once and never opens until woken. A
    /// sub-object's dormancy is its owner's ([`DriverError::FollowsOwner`]).
    pub fn set_net_dormancy(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        dormancy: Dormancy,
    ) -> Result<(), DriverError> {
        self.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        let ci = self.class_for(class, store)?;
        // It rides its owner's channel: the owner's dormancy is its own.
        self.not_a_sub_object(class, id)?;
        // An actor no tick has seen yet gets its GUID now (a pickup spawned dormant).
        let guid = self.assign_guid(class, store, id)?;
        let slot = id.index as usize;
        let fresh = self.classes[ci].actors[slot].adopted == self.frame;
        let now = self.server_time();
        let cols = &mut self.classes[ci].cols;
        cols.dormancy[slot] = dormancy;
        match dormancy {
            Dormancy::Never | Dormancy::Awake => self.wake(ci, slot),
            Dormancy::Initial if guid.is_static() && fresh => {
                cols.set_asleep(slot, true);
                self.log_dormancy(ci, slot, now, DormancyCall::Sleep);
            }
            _ => {}
        }
        Ok(())
    }

    /// An actor's dormancy.
    pub fn net_dormancy(&self, class: ClassId, id: ActorId) -> Option<Dormancy> {
        self.guid_of(class, id)?;
        self.classes[class.0 as usize].cols.dormancy.get(id.index as usize).copied()
    }

    /// Replicates a dormant actor once more (UE's `FlushNetDormancy`): every connection holding
    /// it dormant gets what changed since, then it goes dormant again. `Initial` becomes
    /// `DormantAll`, as in UE. An actor that is not dormant (`Never`, `Awake`) is left as it is,
    /// as UE returns early for it (`force_net_update` is the call that makes it due). Asked of a
    /// sub-object, it flushes its owner (they sleep and wake together); of an orphaned one,
    /// whose owner was despawned, [`DriverError::Orphaned`].
    pub fn flush_net_dormancy(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<(), DriverError> {
        self.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        self.not_orphaned(class, id)?;
        let ci = self.class_for(class, store)?;
        self.assign_guid(class, store, id)?;
        // A sub-object sleeps and wakes with its owner: flushing it flushes the owner.
        let (ci, slot) = self.carrier(ci, id.index as usize);
        if self.classes[ci].cols.dormancy[slot].dormant() {
            self.flush_slot(ci, slot);
        }
        Ok(())
    }

    /// [`Self::flush_net_dormancy`] of the actor in `slot` of class `ci`.
    pub(super) fn flush_slot(&mut self, ci: usize, slot: usize) {
        let d = &mut self.classes[ci].cols.dormancy[slot];
        if *d == Dormancy::Initial {
            *d = Dormancy::DormantAll;
        }
        self.wake(ci, slot);
    }

    /// Gives a class its per-connection dormancy answer for `DormantPartial` actors.
    pub fn set_dormancy_hook(&mut self, class: ClassId, hook: Option<DormancyHook>) -> Result<(), DriverError> {
        self.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        self.classes.get_mut(class.0 as usize).ok_or(DriverError::UnknownClass(class))?.cols.dormancy_hook = hook;
        Ok(())
    }

    /// Whether an actor is asleep: dormant wherever it is held, off the consider list.
    pub fn is_asleep(&self, class: ClassId, id: ActorId) -> bool {
        self.guid_of(class, id).is_some() && self.classes[class.0 as usize].cols.asleep[id.index as usize]
    }

    /// Actors asleep, over every class.
    pub fn asleep_actors(&self) -> usize {
        self.classes.iter().map(|c| c.cols.asleep.iter().filter(|&&a| a).count()).sum()
    }

    /// Wakes an actor: due now, and every dormant row of it a channel again — its sub-objects'
    /// too (they went dormant with it). A slot whose previous actor's retirement waits for the
    /// frame (it was despawned, and this actor spawned into its slot since) holds that actor's
    /// rows until then: its dormant copies are not this actor's to wake (woken, they were open
    /// channels when the frame retired them, and the calls made on the old actor while it was
    /// dormant went down them).
    fn wake(&mut self, ci: usize, slot: usize) {
        let now = self.server_time();
        let guid = self.classes[ci].actors[slot].guid;
        let subs = self.sub_slots(guid).into_iter().map(|(c, s, _)| (c, s));
        for (c, s) in std::iter::once((ci as u32, slot as u32)).chain(subs) {
            let cols = &mut self.classes[c as usize].cols;
            cols.set_asleep(s as usize, false);
            cols.force_net_update(s as usize, now);
            let key = pair_key(c, s);
            let retiring = self.level.as_ref().is_some_and(|l| l.retired.iter().any(|&(k, _)| k == key));
            let g = self.classes[c as usize].actors[s as usize].guid;
            for conn in self.conns.iter_mut().filter(|c| !c.removed && !retiring) {
                if conn.pairs.wake(key) {
                    conn.since_tick.woken.push(g);
                }
            }
            self.log_dormancy(c as usize, s as usize, now, DormancyCall::Wake);
        }
    }

    /// Logs what a game's call did to an actor's sleep, for a reference to replay.
    pub(super) fn log_dormancy(&mut self, c: usize, slot: usize, at: f64, call: DormancyCall) {
        let guid = self.classes[c].actors[slot].guid;
        if let Some(level) = self.level.as_mut() {
            level.dormancy_calls.push(Logged { class: c as u32, slot: slot as u32, guid, at, call });
        }
    }

    /// Before gather: connections whose look is due wake the sleeping actors relevant to them
    /// that they do not hold.
    pub(super) fn wake_for_viewers(&mut self) {
        let Some(level) = self.level.as_mut() else { return };
        if level.dormant.entries == 0 {
            // Nothing to meet: a first look finds nothing, and is done.
            for conn in self.conns.iter_mut().filter(|c| !c.removed && !c.viewers.is_empty()) {
                conn.dormant_look = false;
            }
            return;
        }
        let (frame, interval, now) = (level.time.frame.0 as u64, level.check_interval(), level.time.now);
        let (mut near, mut keys, mut packed) = (Vec::new(), Vec::new(), Vec::new());
        for (ci, conn) in self.conns.iter_mut().enumerate() {
            if conn.removed || conn.viewers.is_empty() {
                continue;
            }
            // (A sublevel loaded since the last tick is looked at at once.)
            let loaded_one = conn.sublevels.changes_at(self.frame).iter().any(|c| c.loaded);
            let due =
                std::mem::take(&mut conn.dormant_look) || loaded_one || (frame + ci as u64).is_multiple_of(interval);
            if !due {
                continue;
            }
            level.dormant.near(&conn.viewers, &mut near);
            // Most sleepers near a viewer are held already (a channel or a dormant copy): their
            // keys, sorted, are matched against the connection's sorted rows in one forward walk
            // (cell by cell, each walk would cross the rows again), and only the rest are looked
            // up in the world's columns.
            sorted_keys(&near, &mut packed, &mut keys);
            conn.pairs.retain_unheld(&mut keys);
            for &(key, i) in &keys {
                // (An actor's stale entries, from sleeps before it last woke, may be near too:
                // each is checked, and the first still asleep wakes it.)
                if !still_asleep(&self.classes, &near[i as usize]) {
                    continue;
                }
                let (c, slot) = super::pairs::split_key(key);
                let cols = &mut self.classes[c as usize].cols;
                // Not for a client that has not loaded its sublevel (it would not be opened).
                if level.sublevels && !conn.sublevels.is_loaded(cols.sublevel[slot as usize]) {
                    continue;
                }
                cols.set_asleep(slot as usize, false);
                cols.force_net_update(slot as usize, now);
            }
        }
    }

    /// After the connections: due actors that want dormancy and that no connection holds awake
    /// fall asleep.
    pub(super) fn sleep_settled(&mut self, awake: &[bool]) {
        let Some(level) = self.level.as_mut() else { return };
        let mut fell = 0;
        for &d in &level.sleepy {
            if awake[d as usize] {
                continue;
            }
            let due = &level.due[d as usize];
            let cols = &mut self.classes[due.class as usize].cols;
            cols.set_asleep(due.slot as usize, true);
            cols.set_pending(due.slot as usize, false);
            let sleep = &mut cols.sleeps[due.slot as usize];
            *sleep = sleep.wrapping_add(1);
            if due.dormancy != Dormancy::Initial || due.rel.guid.is_dynamic() {
                let key = pair_key(due.class, due.slot);
                level.dormant.insert(Sleeper {
                    key,
                    guid: due.rel.guid,
                    sleep: *sleep,
                    at: due.rel.location,
                    cull_sq: due.rel.cull_distance_squared,
                });
            }
            fell += 1;
        }
        if fell > 0 {
            let classes = &self.classes;
            level.dormant.compact(|s| still_asleep(classes, s));
        }
    }
}

/// The keys of `near` with each one's index, sorted by key. Packed into one `u64` each (key
/// above, index below) when they fit, as they do short of 65 536 classes and entries: a sort of
/// plain integers takes half the time of one of pairs.
fn sorted_keys(near: &[Sleeper], packed: &mut Vec<u64>, keys: &mut Vec<(u64, u32)>) {
    keys.clear();
    if near.len() <= 1 << 16 && near.iter().all(|s| s.key >> 48 == 0) {
        packed.clear();
        packed.extend(near.iter().enumerate().map(|(i, s)| s.key << 16 | i as u64));
        packed.sort_unstable();
        keys.extend(packed.iter().map(|&p| (p >> 16, (p & 0xffff) as u32)));
    } else {
        keys.extend(near.iter().enumerate().map(|(i, s)| (s.key, i as u32)));
        keys.sort_unstable();
    }
}

/// Whether the actor a cell entry names is still the one that fell asleep, and in the same sleep
/// (entries are dropped lazily: one made before the actor last woke may be in another cell).
fn still_asleep(classes: &[super::actors::ClassNet], s: &Sleeper) -> bool {
    let (c, slot) = super::pairs::split_key(s.key);
    let class = &classes[c as usize];
    let (slot, cols) = (slot as usize, &class.cols);
    class.actors.get(slot).is_some_and(|a| a.alive && a.guid == s.guid)
        && cols.asleep[slot]
        && cols.sleeps[slot] == s.sleep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_keys_sort_alike_packed_or_as_pairs() {
        let sleeper = |key: u64| Sleeper { key, guid: NetGuid(2), sleep: 1, at: [0.0; 3], cull_sq: 1.0 };
        let small: Vec<Sleeper> =
            [pair_key(3, 9), pair_key(0, 5), pair_key(3, 9), pair_key(1, 0)].map(sleeper).to_vec();
        let (mut packed, mut keys) = (Vec::new(), Vec::new());
        sorted_keys(&small, &mut packed, &mut keys);
        let expected = [(pair_key(0, 5), 1), (pair_key(1, 0), 3), (pair_key(3, 9), 0), (pair_key(3, 9), 2)];
        assert_eq!(keys, expected);
        assert_eq!(packed.len(), 4, "packed");
        // A class past 65 535: sorted as pairs.
        let mut large = small.clone();
        large.push(sleeper(pair_key(70_000, 1)));
        packed.clear();
        sorted_keys(&large, &mut packed, &mut keys);
        assert!(packed.is_empty(), "not packed");
        assert_eq!(keys[..4], expected);
        assert_eq!(keys[4], (pair_key(70_000, 1), 4));
    }
}
