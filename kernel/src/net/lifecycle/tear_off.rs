//! Tear-off (UE's `TearOff`): the last update, then a TornOff close on every connection.

use crate::ids::Frame;
use crate::net::connection::PendingClose;
use crate::net::pairs::Pairs;
use crate::net::{ClassId, DriverError, NetDriver, NetGuid, ReplicationFlags};
use crate::store::{ActorId, ClassStore};
use crate::wire::open::CloseReason;
use std::collections::HashSet;

/// An actor the game tore off whose tear-off is not finished.
pub(crate) struct Tearing {
    class: u32,
    slot: u32,
    guid: NetGuid,
    /// The driver's frame when the game called [`NetDriver::tear_off`]: the next one replicates
    /// it once more.
    since: Frame,
    /// At the actor level: the connections whose window was full when they last replicated the
    /// actor (they may owe it some of its update).
    pub(in crate::net) deferred: Vec<u32>,
}

impl Tearing {
    /// The tearing actor: (class, slot, GUID).
    pub(crate) fn actor(&self) -> (u32, u32, NetGuid) {
        (self.class, self.slot, self.guid)
    }
}

impl NetDriver {
    /// Tears an actor off (UE's `TearOff`): the next frame replicates it once more — so what the
    /// game changed with it (the usual "health 0, then TearOff()") reaches the clients, as UE's
    /// `ReplicateActor` before `Close(TearOff)` does — and each channel closes with reason
    /// TornOff right after that bunch; each client keeps its copy and owns it from then on, and
    /// the driver never replicates the actor again (it stays in the store for the game). Its
    /// sub-objects go the same way (a sub-object alone is refused: [`DriverError::FollowsOwner`]).
    /// A second call does nothing.
    ///
    /// At the actor level the actor is considered in the next frame (as `force_net_update`, a
    /// dormant one flushed) and each connection closes it when it gets to it; a connection whose
    /// frame saturates first leaves it over as any other actor, and gets it in a later frame.
    /// A tearing actor opens no new channel. A connection whose full sequence window deferred
    /// the last update owes it: the tear-off waits (up to a window's worth of frames), the actor
    /// considered each frame, until it went out, then the close. Once no connection left it over
    /// or owes it, its other channels (an owner-only actor's on a connection that no longer owns
    /// it) close with reason TornOff too, without the last update.
    /// A lost last update is not sent again (as UE's: its channel is closed); the close is.
    /// Despawned before its tear-off finishes, it is destroyed on the clients that have not torn
    /// it off yet.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let pawn = store.spawn();
    /// store.set(pawn, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, pawn).unwrap();
    /// let mut frame = |driver: &mut NetDriver, store: &mut ClassStore, client: &mut ClientWorld| {
    ///     driver.tick(&mut [store]).unwrap();
    ///     for packet in driver.take_packets(conn).unwrap() {
    ///         client.receive(&packet).unwrap();
    ///     }
    /// };
    /// frame(&mut driver, &mut store, &mut client);
    /// store.set(pawn, 0, &Value::U16(0)).unwrap(); // killed…
    /// driver.tear_off(class, &store, pawn).unwrap(); // …and left to the clients as a ragdoll
    /// frame(&mut driver, &mut store, &mut client); // its last update
    /// frame(&mut driver, &mut store, &mut client); // its close
    /// assert!(client.is_torn_off(guid));
    /// assert_eq!(client.value(guid, 0), Some(Value::U16(0)));
    /// store.set(pawn, 0, &Value::U16(50)).unwrap(); // the server's copy is its own now
    /// frame(&mut driver, &mut store, &mut client);
    /// assert_eq!(client.value(guid, 0), Some(Value::U16(0)));
    /// ```
    pub fn tear_off(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        // A sub-object is torn off with its owner (UE tears off actors).
        self.not_a_sub_object(class, id)?;
        // An actor no tick has seen yet gets its GUID now: it is never sent (a tearing actor
        // opens no channel), as UE's torn-off actor opens none.
        let guid = self.assign_guid(class, store, id)?;
        if self.classes[ci].actors[id.index as usize].torn() {
            return Ok(());
        }
        // Its sub-objects go with it (clients keep them, linked to the torn-off owner).
        for (sc, ss, sub) in self.sub_slots(guid) {
            self.begin_tear_off(sc as usize, ss, sub);
        }
        self.begin_tear_off(ci, id.index, guid);
        Ok(())
    }

    /// Marks the actor in `slot` tearing: replicated once more, in the next frame.
    fn begin_tear_off(&mut self, ci: usize, slot: u32, guid: NetGuid) {
        let a = &mut self.classes[ci].actors[slot as usize];
        if a.torn() {
            return;
        }
        a.tearing = true;
        self.tearing.push(Tearing { class: ci as u32, slot, guid, since: self.frame, deferred: Vec::new() });
        if self.level.is_some() {
            self.force_slot(ci, slot as usize);
        }
    }

    /// After a frame at the actor level: which connections' windows deferred the update of the
    /// tearing actors they replicated (`replicated`: connection, class, slot, deferred).
    pub(in crate::net) fn note_tear_deferrals(&mut self, replicated: &[(u32, u32, u32, bool)]) {
        if replicated.is_empty() {
            return;
        }
        // A round's end may tear off thousands, each reported by every connection: found by
        // (class, slot), not by a walk of the list per report.
        let at: std::collections::HashMap<(u32, u32), usize> =
            self.tearing.iter().enumerate().map(|(i, t)| ((t.class, t.slot), i)).collect();
        for &(ci, class, slot, deferred) in replicated {
            if let Some(&i) = at.get(&(class, slot)) {
                let t = &mut self.tearing[i];
                t.deferred.retain(|&c| c != ci);
                if deferred {
                    t.deferred.push(ci);
                }
            }
        }
    }

    /// At the start of a frame: the tear-offs whose last update went out end — the frame after
    /// the call replicated the actor, and (at the actor level) no connection left it over or
    /// owes it (nor owes one of its sub-objects, whose channels need the owner's). The channels
    /// still open close with reason TornOff.
    pub(in crate::net) fn finish_tear_offs(&mut self) {
        self.finish_tear_offs_as_of(self.frame, None);
    }

    /// The slot's actor, if live, died unseen between ticks (the game despawned it and spawned
    /// another there, whose GUID is asked for now): it is closed first — as the next tick's
    /// gather would find it gone, after that tick's start ended its tear-off if it was due to
    /// end (otherwise a reused slot made a tear-off that had ended close Destroyed: seed 44 of
    /// the reference's random worlds). Its sub-objects' own tear-offs are left to the tick, as
    /// there (orphaned by then).
    pub(in crate::net) fn retire_unseen(&mut self, class: u32, slot: u32) {
        let Some(&a) = self.classes[class as usize].actors.get(slot as usize) else { return };
        if !a.alive {
            return;
        }
        if a.tearing {
            self.log_reused_tearing(class, slot, a.guid);
            let owner_waits = self.finish_tear_offs_as_of(Frame(self.frame.0 + 1), Some(a.guid));
            let logged = self.level.as_mut().and_then(|l| l.reused_tearing.current.last_mut());
            if let Some(r) = logged.filter(|r| r.guid == a.guid) {
                r.owner_waits = owner_waits;
            }
        }
        self.retire_actor(class, slot);
    }

    /// Logs what [`Self::retire_unseen`]'s judgment of tearing actor `guid` reads
    /// ([`crate::net::level::ReusedTearing`]).
    fn log_reused_tearing(&mut self, class: u32, slot: u32, guid: NetGuid) {
        let Some(t) = self.tearing.iter().find(|t| t.guid == guid) else { return };
        let conns = (t.deferred.iter().filter_map(|&ci| self.conns.get(ci as usize).map(|c| (ci, c))))
            .map(|(ci, c)| (ci, c.removed, c.viewers.clone(), c.net_groups))
            .collect();
        let c = &self.classes[class as usize];
        let (a, s) = (&c.actors[slot as usize], slot as usize);
        let reused = crate::net::level::ReusedTearing {
            class,
            slot,
            guid,
            conns,
            owner: a.owner,
            autonomous: a.autonomous,
            physics: a.physics,
            sub_condition: c.cols.sub_condition[s],
            only_relevant_to_owner: c.cols.settings[s].only_relevant_to_owner,
            owner_actor: c.cols.owner_actor[s],
            owner_waits: false,
        };
        if let Some(level) = self.level.as_mut() {
            level.reused_tearing.push(reused);
        }
    }

    /// [`Self::finish_tear_offs`] at the start of `frame`; with `only`, for that actor alone —
    /// returning whether its owner's tear-off went on (what held a sub-object's back).
    fn finish_tear_offs_as_of(&mut self, frame: Frame, only: Option<NetGuid>) -> bool {
        let mut only_owner_waits = false;
        if self.tearing.is_empty() {
            return only_owner_waits;
        }
        // (tearing, owes, finishes), decided first for all: an owner waits for its sub-objects.
        let mut decided = Vec::with_capacity(self.tearing.len());
        for mut t in std::mem::take(&mut self.tearing) {
            let class = &self.classes[t.class as usize];
            let Some(a) = class.actors.get(t.slot as usize) else { continue };
            // Gone (destroyed as usual), or an orphaned sub-object (its clients destroyed it).
            if !a.alive || a.guid != t.guid || a.torn_off {
                continue;
            }
            // Switched off before the frame that replicates it (`set_replicates`): no frame
            // considers it, so its last update waits, and the tear-off with it — counted from
            // the frame it is switched on (UE: off the consider list, nothing goes).
            if a.not_replicated && frame.0 < t.since.0 + 2 {
                t.since = frame;
            }
            let replicated = frame.0 >= t.since.0 + 2;
            // Waited for: a connection whose full sequence window deferred the last update (it
            // owes it: the leaves wait in the pair's resend set, sent as soon as the window
            // opens) — for at most a window's worth of frames, as a client that far behind gets
            // the close anyway. At the actor level, one whose window was full when it last
            // replicated the actor (what it held back may be leaves, a fast array's delta or an
            // open; not a role's comeback owed since: nothing more goes to a torn-off actor's
            // channel, as in UE), whose channel is still open, and that it still serves (an
            // owner-only actor it owns, a sub-object whose condition lets it through: the others'
            // channels close at the end, without the update, as UE skips them); and one that
            // left it over.
            let owed = |ci: usize, c: &crate::net::connection::Connection| match self.level {
                None => c.pair_ref(t.class, t.slot).is_some_and(|ps| !ps.resend.is_empty()),
                Some(_) => {
                    t.deferred.contains(&(ci as u32))
                        && self.serves(t.class, t.slot, ci)
                        && c.pairs
                            .channel(t.class, t.slot)
                            .is_some_and(|row| row.state.flags & crate::net::connection::pair::CHANNEL != 0)
                }
            };
            let owes = frame.0 < t.since.0 + 1 + crate::wire::feedback::ACK_WINDOW
                && self.conns.iter().enumerate().any(|(ci, c)| !c.removed && owed(ci, c));
            let left_over = self.level.is_some() && class.cols.clock[t.slot as usize].pending_net_update;
            decided.push((t, owes, replicated && !owes && !left_over));
        }
        let owing_owners: HashSet<NetGuid> =
            decided.iter().filter(|d| d.1).filter_map(|(t, ..)| self.owner_of(t.guid)).collect();
        // A sub-object rides its owner's channel (it cannot tear off by itself, as in UE): while
        // its tearing owner's tear-off goes on, so does its own — a connection that left the
        // owner over gets the owner's close first, and the owner's Destroyed close takes the
        // sub-object if the owner goes meanwhile (its own TornOff first would have told the game
        // it was torn off: seeds 1597 and 3118 of a sweep of the reference's random worlds).
        let waiting_owners: HashSet<NetGuid> = decided
            .iter()
            .filter(|(t, _, finishes)| !finishes || owing_owners.contains(&t.guid))
            .map(|(t, ..)| t.guid)
            .collect();
        for (t, owes, finishes) in decided {
            if only.is_some_and(|g| t.guid != g) {
                self.tearing.push(t);
                continue;
            }
            let owner_waits = self.owner_of(t.guid).is_some_and(|o| waiting_owners.contains(&o));
            only_owner_waits |= only.is_some() && owner_waits;
            if finishes && !owing_owners.contains(&t.guid) && !owner_waits {
                self.tear_off_slot(t.class as usize, t.slot, t.guid);
            } else {
                if owes && self.level.is_some() {
                    // Considered again, so the connections that owe it send it, then close.
                    self.force_slot(t.class as usize, t.slot as usize);
                }
                self.tearing.push(t);
            }
        }
        only_owner_waits
    }

    /// Whether connection `ci`'s frames serve the actor in `slot` at all: an owner-only actor
    /// only its owning connection or one whose viewer's real viewer or view target is on its
    /// owner chain (UE's `IsActorOwnedByAndRelevantToConnection`, as the frame's candidates
    /// ask), a sub-object only connections its condition allows.
    fn serves(&self, class: u32, slot: u32, ci: usize) -> bool {
        let c = &self.classes[class as usize];
        let (a, s) = (&c.actors[slot as usize], slot as usize);
        let owned = a.owner == Some(ci as u32);
        let (replay, groups) = (self.conns[ci].replay, self.conns[ci].net_groups);
        if !c.cols.sub_condition[s].is_none_or(|cond| cond.allows(ReplicationFlags::of(a, ci as u32, replay, groups))) {
            return false;
        }
        if !c.cols.settings[s].only_relevant_to_owner || owned {
            return true;
        }
        let owner_of = |g: NetGuid| {
            self.guids.get(&g).and_then(|&(oc, os)| self.classes[oc as usize].cols.owner_actor[os as usize])
        };
        crate::net::relevancy::chain_viewed(a.guid, c.cols.owner_actor[s], &self.conns[ci].viewers, &owner_of)
    }

    /// Marks the actor in `slot` torn off and closes its channels with reason TornOff.
    fn tear_off_slot(&mut self, ci: usize, slot: u32, guid: NetGuid) {
        self.touch(ci as u32, slot);
        let a = &mut self.classes[ci].actors[slot as usize];
        a.torn_off = true;
        self.classes[ci].cols.set_awake_lane(slot as usize, false);
        let key = crate::net::pairs::pair_key(ci as u32, slot);
        for conn in self.conns.iter_mut().filter(|c| !c.removed) {
            // A row held for its sub-objects ([`crate::net::connection::pair::TORN`]) goes now.
            if let Ok(i) = conn.held_torn.binary_search(&key) {
                conn.held_torn.remove(i);
            }
            let ps = conn.drop_pair(ci as u32, slot);
            if ps.flags & crate::net::connection::pair::EVER_OPENED != 0 {
                conn.closes.end(PendingClose { guid, reason: CloseReason::TornOff }, &ps);
            }
            if let Pairs::Dense(_) = conn.pairs {
                // A dense pair left in the pending list is skipped when planned (torn off).
                conn.pending.retain(|&(c, s)| (c, s) != (ci as u32, slot));
            }
        }
    }
}
