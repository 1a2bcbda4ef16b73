//! The gather step of a frame: per class, compare, find spawned and despawned actors (NetGUIDs,
//! opens, closes), record history, and list the frame's changed actors for every connection.
//!
//! ```text
//! per class   begin_tick → compare → ChangeSet
//!             pages whose spawn epoch moved: new generations get a NetGUID and an open on every
//!             connection; vanished ones are retired (a close where the client may have them)
//!             history.record(frame)
//! changed     (class, slot, changed leaves) of every actor that changed, sorted, with a copy of
//!             its replication state, so per-connection planning reads them in order
//! ```

use super::condition::{flags, ActiveLeaves};
use super::connection::{pair, PendingClose};
use super::settings::Columns;
use super::NetDriver;
use crate::compare::{ChangeSet, ShadowState};
use crate::history::History;
use crate::ids::{Frame, LeafMask, NetGuid};
use crate::schema::{ClassLayout, PAGE_LANES};
use crate::store::ClassStore;
use std::sync::Arc;

/// Replication state of one actor slot.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ActorNet {
    pub guid: NetGuid,
    pub generation: u32,
    pub alive: bool,
    /// Index of the owning connection.
    pub owner: Option<u32>,
    pub autonomous: bool,
    pub physics: bool,
    /// Leaves of Custom/Dynamic parents switched off for this actor.
    pub custom_inactive: LeafMask,
    /// Its own conditions for Dynamic parents: a set of the class's
    /// ([`ActiveLeaves::dynamic_set`]; 0: none).
    pub dynamic: u16,
    /// The game tore it off ([`NetDriver::tear_off`]): replicated once more, then closed with
    /// reason TornOff (set from the call on, for good).
    pub tearing: bool,
    /// Torn off: still in the store, never replicated again.
    pub torn_off: bool,
    /// Torn off because it was a sub-object whose owner is gone (no close: clients destroyed it
    /// with the owner).
    pub orphaned: bool,
    /// It owns fast arrays ([`NetDriver::add_fast_array`]): written after it when it replicates.
    pub fast: bool,
    /// The game stopped replicating it ([`NetDriver::set_replicates`], UE's `SetReplicates(false)`:
    /// `RemoteRole` none, off the consider list): never due, so neither compared nor replicated
    /// nor closed for relevancy — every client keeps its copy as it was. A sub-object's is its
    /// owner's.
    pub not_replicated: bool,
    /// The frame before the first tick that may replicate it (the driver's frame when a call
    /// gave it its GUID between ticks; the frame before the tick whose gather met it): until that
    /// tick no connection has it.
    pub adopted: crate::ids::Frame,
}

// Copied into every due record: one more flag fits the padding.
const _: () = assert!(std::mem::size_of::<ActorNet>() <= 48);

impl ActorNet {
    /// The replication flags of this actor for connection `conn`; `initial`: for a bunch that
    /// sends the channel's open (UE's `bNetInitial`).
    pub fn flags(&self, conn: u32, replay: bool, initial: bool) -> u8 {
        let owner = self.owner == Some(conn);
        let mut f = 0;
        if initial {
            f |= flags::INITIAL;
        }
        if owner {
            f |= flags::OWNER;
        }
        if self.autonomous_owner() != Some(conn) {
            f |= flags::SIMULATED;
        }
        if replay {
            f |= flags::REPLAY;
        }
        if self.physics {
            f |= flags::PHYSICS;
        }
        f
    }

    /// The connection whose client holds an autonomous proxy of it (its owner, when set
    /// autonomous); every other connection's is simulated.
    #[inline]
    pub fn autonomous_owner(&self) -> Option<u32> {
        self.owner.filter(|_| self.autonomous)
    }

    /// Torn off, or tearing off (replicated once more at most): nothing replicates with it
    /// after that.
    #[inline]
    pub fn torn(&self) -> bool {
        self.tearing || self.torn_off
    }

    /// The leaves a bunch with replication flags `f` (from [`flags`](Self::flags)) carries for
    /// this actor: the class's condition table at those flags, less the Custom/Dynamic parents
    /// the game switched off for it.
    #[inline]
    pub fn active_leaves(&self, table: &ActiveLeaves, f: u8) -> LeafMask {
        table.get_for(f, self.dynamic) & !self.custom_inactive
    }
}

/// One registered class: its shadow, history and actors.
pub(crate) struct ClassNet {
    pub layout: Arc<ClassLayout>,
    pub store_id: u64,
    pub shadow: ShadowState,
    pub history: History,
    pub changes: ChangeSet,
    pub active: ActiveLeaves,
    pub actors: Vec<ActorNet>,
    pub seen_epochs: Vec<u32>,
    /// The store's structure count when `seen_epochs` was last brought in line.
    pub seen_structure: Option<u64>,
    /// Leaves that are dynamic arrays (written per connection, not shared).
    pub array_leaves: LeafMask,
    /// Dynamic arrays under a condition: always sent whole ([`ClassNet::whole_arrays`]).
    pub conditioned_arrays: LeafMask,
    /// Every other leaf (an open owing all of them copies a shared encoding whole).
    pub fixed_leaves: LeafMask,
    /// Fixed leaves the shared arena encodes: those a simulated proxy receives (see
    /// [`super::shared`]).
    pub shared_leaves: LeafMask,
    /// Arrays whose changed elements the shared arena encodes: those a simulated proxy
    /// receives, under no condition (a conditioned array always goes whole).
    pub shared_arrays: LeafMask,
    /// Leaves that hold object references (fixed, or arrays with a reference in their element):
    /// a static object they name is exported to a connection before it is sent there.
    pub object_leaves: LeafMask,
    /// The actor level's per-actor columns.
    pub cols: Columns,
}

/// Whether the actor in `slot` of class `class` is owner-only (`only_relevant_to_owner`): what
/// a sub-object of it follows (the sub-object's own setting is never owner-only).
pub(crate) fn owner_only_at(classes: &[ClassNet], (class, slot): (u32, u32)) -> bool {
    classes[class as usize].cols.settings.get(slot as usize).is_some_and(|s| s.only_relevant_to_owner)
}

impl ClassNet {
    /// The dynamic arrays among `send` that go whole rather than as their changed elements:
    /// all of them while the channel's `open` is owed, else those under a condition (see
    /// [`super::plan::SendItem::whole`]; a resend adds its own). The kernel and the UE-style
    /// reference both ask this, so they write the same bits.
    pub fn whole_arrays(&self, send: LeafMask, open: bool) -> LeafMask {
        if open {
            send
        } else {
            send & self.conditioned_arrays
        }
    }
}

/// What planning reads of a changed actor, gathered once a frame rather than once a connection
/// (every connection visits the same changed actors: a random read of the actor table and of
/// the history per actor, not per pair).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChangedNet {
    pub actor: ActorNet,
    /// The actor's last change before this frame (0: none): a pair that last sent before it
    /// missed that change.
    pub before: Frame,
}

/// One changed actor of the frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChangedActor {
    pub class: u32,
    pub slot: u32,
    pub leaves: LeafMask,
}

impl NetDriver {
    /// The tick's gather: every class's spawns and despawns first, then each class's compare
    /// and history.
    ///
    /// Slots are tracked first, so a new actor's history starts empty before this frame's
    /// compare records its first values — and for every class before any is compared, so an
    /// owner gone this tick has orphaned its sub-objects (and a gone actor has retired) whatever
    /// the order the classes were registered in: an owner's class registered after its
    /// sub-objects' had left a sub-object of a gone owner due, and relevant by its owner, this
    /// frame. Under the actor level only the due actors' lanes are compared (UE compares an
    /// actor when it replicates it); the others keep their shadow and push marks until they are
    /// due.
    pub(super) fn gather(&mut self, stores: &mut [&mut ClassStore], order: &[usize]) -> Result<(), super::DriverError> {
        for (ci, &si) in order.iter().enumerate() {
            stores[si].begin_tick();
            self.track_slots(ci as u32, stores[si]);
        }
        for (ci, &si) in order.iter().enumerate() {
            self.compare_class(ci, stores[si])?;
        }
        Ok(())
    }

    /// Compares class `ci` against its shadow (its due actors' lanes under the actor level) and
    /// records history.
    fn compare_class(&mut self, ci: usize, store: &mut ClassStore) -> Result<(), super::DriverError> {
        if let Some(level) = self.level.as_mut() {
            level.select_due(ci, &self.classes[ci], self.cfg.parallel, self.warm);
        }
        let c = &mut self.classes[ci];
        // A warm frame's pool costs no wake-up: the due actors' few pages go to it sooner
        // (battle_royale, Intel Xeon, session 61: gather 0.20 → 0.175 ms from 32 pages).
        let mut cfg = self.cfg.compare;
        if self.warm {
            cfg.min_parallel_pages = cfg.min_parallel_pages.min(WARM_MIN_PAGES);
        }
        match self.level.as_ref() {
            Some(l) => {
                c.shadow.compare_selected(store, &cfg, &l.selected[ci], &l.selected_pages[ci], &mut c.changes)?
            }
            None => c.shadow.compare(store, &self.cfg.compare, &mut c.changes)?,
        }
        c.history.record(self.frame, &c.changes);
        Ok(())
    }

    /// Finds actors spawned and despawned since the last tick (pages whose epoch moved).
    fn track_slots(&mut self, class: u32, store: &ClassStore) {
        let epochs = store.epochs();
        let c = &mut self.classes[class as usize];
        // Nothing spawned or despawned since the last look: no epoch to compare.
        if c.seen_structure.replace(store.structure()) == Some(store.structure()) {
            return;
        }
        c.seen_epochs.resize(epochs.len(), u32::MAX);
        let mut changed_pages = Vec::new();
        for (p, (&e, seen)) in epochs.iter().zip(c.seen_epochs.iter_mut()).enumerate() {
            if e != *seen {
                *seen = e;
                changed_pages.push(p);
            }
        }
        for p in changed_pages {
            let occupied = store.occupied()[p];
            for lane in 0..PAGE_LANES {
                let slot = (p * PAGE_LANES + lane) as u32;
                let Some(&generation) = store.generations().get(slot as usize) else { break };
                let live = occupied >> lane & 1 != 0;
                let known = self.classes[class as usize].actors.get(slot as usize).copied().unwrap_or_default();
                if known.alive && (!live || known.generation != generation) {
                    self.retire_actor(class, slot);
                }
                if live {
                    // Met by this tick: it may replicate in it (the frame before is its "adopted").
                    self.ensure_actor(class, slot, generation, Frame(self.frame.0.wrapping_sub(1)));
                }
            }
        }
    }

    /// The GUID of the actor in `slot` with `generation`, announcing it to every connection if it
    /// is new to the driver (`adopted`: the frame before the first tick that may replicate it).
    pub(super) fn ensure_actor(&mut self, class: u32, slot: u32, generation: u32, adopted: Frame) -> NetGuid {
        let c = &mut self.classes[class as usize];
        if c.actors.len() <= slot as usize {
            c.actors.resize(slot as usize + 1, ActorNet::default());
        }
        let a = c.actors[slot as usize];
        if a.alive && a.generation == generation {
            return a.guid;
        }
        // The slot's previous actor died unseen: close it first.
        self.retire_unseen(class, slot);
        let guid = self.next_guid;
        self.next_guid = guid.next_dynamic();
        self.adopt(class, slot, generation, guid, adopted);
        guid
    }

    /// Starts replicating the actor in `slot` under `guid`: every connection will meet it.
    pub(super) fn adopt(&mut self, class: u32, slot: u32, generation: u32, guid: NetGuid, adopted: Frame) {
        self.touch(class, slot);
        let c = &mut self.classes[class as usize];
        if c.actors.len() <= slot as usize {
            c.actors.resize(slot as usize + 1, ActorNet::default());
        }
        self.guids.insert(guid, (class, slot));
        let c = &mut self.classes[class as usize];
        c.actors[slot as usize] = ActorNet { guid, generation, alive: true, adopted, ..ActorNet::default() };
        c.history.clear_slot(slot);
        c.cols.reset(slot as usize);
        // Under the actor level a connection meets a new actor when it becomes relevant; the
        // slot's old rows went with the retired list.
        if self.level.is_none() {
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                conn.drop_pair(class, slot);
                conn.queue(class, slot);
            }
        }
    }

    /// Logs a slot whose actor's life as a reference's actor list sees it changed now
    /// (`Level::touched`): adopted, retired, made or orphaned as a sub-object, torn off.
    pub(super) fn touch(&mut self, class: u32, slot: u32) {
        if let Some(level) = self.level.as_mut() {
            level.touched.push((class, slot));
        }
    }

    /// The actor in `slot` is gone: connections that may have it get a close (every connection,
    /// for a static actor: its client loaded it with the level; none for a torn-off one: its
    /// clients own their copies).
    pub(super) fn retire_actor(&mut self, class: u32, slot: u32) {
        self.touch(class, slot);
        let c = &mut self.classes[class as usize];
        let a = &mut c.actors[slot as usize];
        a.alive = false;
        let (guid, torn_off) = (a.guid, std::mem::take(&mut a.torn_off));
        c.history.clear_slot(slot);
        c.cols.set_awake_lane(slot as usize, false);
        self.inactive.remove(&(class, slot));
        let below = self.unchain_retired(class, slot, guid);
        self.forget_sub_objects(guid);
        self.guids.remove(&guid);
        // With owner chains, the actors that named it (or its sub-objects) their owner: their
        // walks end here now.
        self.derive_owners_below(&below, true);
        if torn_off {
            return;
        }
        if guid.is_static() {
            self.statics.destroyed.push(guid);
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                let ps = conn.drop_pair(class, slot);
                conn.closes.end(PendingClose::destroyed(guid), &ps);
            }
            if let Some(level) = self.level.as_mut() {
                // The rows are gone already; the retired list still clears the slot's due state.
                level.retired.push((super::pairs::pair_key(class, slot), guid));
            }
            return;
        }
        if let Some(level) = self.level.as_mut() {
            // Each connection drops its row (and closes the channel) in its next frame: no
            // per-connection work here, where spawns and despawns happen by the thousand.
            level.retired.push((super::pairs::pair_key(class, slot), guid));
            return;
        }
        for conn in self.conns.iter_mut().filter(|c| !c.removed) {
            let ps = conn.drop_pair(class, slot);
            if ps.flags & pair::EVER_OPENED != 0 {
                conn.closes.end(PendingClose::destroyed(guid), &ps);
            }
        }
    }

    /// The frame's changed actors with their changed leaves, sorted by (class, slot).
    pub(super) fn collect_changed(&mut self) {
        self.changed.clear();
        self.changed_actors.clear();
        for (ci, c) in self.classes.iter().enumerate() {
            let leaves = c.layout.leaves.len();
            for p in 0..c.changes.pages() {
                let lanes = c.changes.page_lanes(p);
                if lanes.is_empty() {
                    continue;
                }
                let mut per_lane = [LeafMask::EMPTY; PAGE_LANES];
                for leaf in 0..leaves {
                    let bit = c.layout.groups.bit(leaf);
                    for lane in c.changes.leaf_mask(p, leaf).iter() {
                        per_lane[lane] |= bit;
                    }
                }
                for lane in lanes.iter() {
                    let slot = p * PAGE_LANES + lane;
                    self.changed.push(ChangedActor { class: ci as u32, slot: slot as u32, leaves: per_lane[lane] });
                    let actor = c.actors.get(slot).copied().unwrap_or_default();
                    self.changed_actors
                        .push(ChangedNet { actor, before: c.history.changed_before(slot as u32, self.frame) });
                }
            }
        }
    }
}

/// Selected pages from which a warm frame's compare of the due actors goes to the pool (at
/// most; [`crate::compare::CompareConfig::min_parallel_pages`] may say fewer).
const WARM_MIN_PAGES: usize = 32;
