//! Setting a driver up: a class's store registered (with the checks its layout must pass, and
//! what the driver keeps per class), connections added, listed and removed, and actors given
//! their NetGUIDs ahead of the tick that would.

use super::actors::ClassNet;
use super::condition::ActiveLeaves;
use super::connection::{self, Connection};
use super::pairs::Pairs;
use super::{condition, ClassId, ConnectionId, DriverError, NetDriver, NetGuid, Seq};
use crate::compare::{ChangeSet, ShadowState};
use crate::history::History;
use crate::schema::ClassLayout;
use crate::store::{ActorId, ClassStore};
use crate::wire::bunch::max_record_bits;
use crate::wire::packet::max_body_bits;
use std::sync::Arc;

impl NetDriver {
    /// Starts watching `store`; its class id is the registration index.
    pub fn register_class(&mut self, store: &mut ClassStore) -> Result<ClassId, DriverError> {
        if let Some(&c) = self.by_store.get(&store.id()) {
            return Err(DriverError::AlreadyRegistered(ClassId(c)));
        }
        let layout = store.layout().clone();
        if !layout.groups.fits() {
            return Err(DriverError::TooManyLeaves {
                class: layout.name.clone(),
                leaves: layout.leaves.len(),
                groups: layout.groups.len(),
            });
        }
        // Every record (and every array element with its record head) must fit an otherwise
        // empty packet.
        let largest = (0..layout.leaves.len()).map(|leaf| max_record_bits(&layout, leaf)).max().unwrap_or(0);
        if largest > max_body_bits(self.cfg.mtu) {
            return Err(DriverError::RecordTooLarge { class: layout.name.clone(), bits: largest });
        }
        // The leaves for which `keep` holds, as a mask (each group's leaves all hold it or none
        // does: arrays are groups of their own, and references are never grouped with others).
        let leaves_where = |keep: &dyn Fn(&crate::schema::Leaf) -> bool| {
            layout.groups.of_leaves(layout.leaves.iter().enumerate().filter(|(_, l)| keep(l)).map(|(i, _)| i))
        };
        let array_leaves = leaves_where(&|l| l.array.is_some());
        let fixed_leaves = leaves_where(&|_| true) & !array_leaves;
        // Arrays under a condition go whole: one coming back by a role change may have missed
        // changes that "changed since the last send" does not name.
        let conditioned_arrays = leaves_where(&|l| {
            l.array.is_some_and(|a| layout.parents[layout.arrays[a].parent].condition != crate::schema::Condition::None)
        });
        let object_leaves = leaves_where(&|l| match l.array {
            None => l.kind == crate::schema::LeafKind::Object,
            Some(a) => layout.arrays[a].elements.iter().any(|e| e.kind == crate::schema::LeafKind::Object),
        });
        let active = ActiveLeaves::new(&layout);
        // Encoded once for every connection: the fixed leaves a plain simulated proxy receives
        // (physics or not). Owner-only, autonomous-only, initial-only and replay-only leaves
        // reach a connection or two, which encode them themselves — the arena would encode them
        // for nobody most frames.
        use condition::flags::{PHYSICS, SIMULATED};
        let simulated = active.get(SIMULATED) | active.get(SIMULATED | PHYSICS);
        let shared_leaves = simulated & !array_leaves;
        let shared_arrays = simulated & array_leaves & !conditioned_arrays;
        let id = ClassId(self.classes.len() as u32);
        self.by_store.insert(store.id(), id.0);
        self.classes.push(ClassNet {
            store_id: store.id(),
            shadow: ShadowState::new(store),
            history: History::new(layout.clone()),
            changes: ChangeSet::new(),
            active,
            actors: Vec::new(),
            seen_epochs: Vec::new(),
            seen_structure: None,
            array_leaves,
            conditioned_arrays,
            fixed_leaves,
            shared_leaves,
            shared_arrays,
            object_leaves,
            layout,
            cols: Default::default(),
        });
        for c in &mut self.conns {
            c.pairs.add_class();
        }
        Ok(id)
    }

    /// The actor level's tick rate (`ActorLevelConfig::tick_rate`, ticks a second), if the
    /// driver has an actor level.
    pub fn actor_level_tick_rate(&self) -> Option<f64> {
        self.level.as_ref().map(|l| l.cfg.tick_rate)
    }

    /// Checksums of the registered layouts, in class-id order (a client must match them).
    pub fn checksums(&self) -> Vec<u64> {
        self.classes.iter().map(|c| c.layout.checksum).collect()
    }

    /// The registered layouts, in class-id order: what a client in the same process (a test, a
    /// replay recorder, a listen server's own view) is built with.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let crate_ = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let door = Arc::new(ClassBuilder::new("Door").property(PropertyDecl::new("Open", PropType::Bool)).build().unwrap());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// driver.register_class(&mut ClassStore::new(door.clone())).unwrap();
    /// driver.register_class(&mut ClassStore::new(crate_.clone())).unwrap();
    /// // Another order than the server's is refused, and the error says so.
    /// let wrong = ClientWorld::new(&[crate_, door], &driver.checksums());
    /// assert!(matches!(wrong, Err(shadowrep::client::ClientError::ClassOrder { class: 0, server_class: 1 })));
    /// assert!(ClientWorld::new(&driver.layouts(), &driver.checksums()).is_ok());
    /// ```
    pub fn layouts(&self) -> Vec<Arc<ClassLayout>> {
        self.classes.iter().map(|c| c.layout.clone()).collect()
    }

    /// Adds a connection whose first packet has sequence number 1; every live actor will be
    /// opened on it. `replay`: a replay recorder's connection (UE's demo connection:
    /// `COND_ReplayOnly` and `ReplayOrOwner` properties reach it, `COND_SkipReplay` ones do
    /// not); `false` for a player's.
    pub fn add_connection(&mut self, replay: bool) -> ConnectionId {
        self.add_connection_at(replay, Seq(1))
    }

    /// Adds a connection whose first packet has sequence number `first` (a handshake may pick
    /// it at random, as UE's does; the client must be told: [`crate::client::ClientWorld::with_first_seq`]).
    pub fn add_connection_at(&mut self, replay: bool, first: Seq) -> ConnectionId {
        let mut c = Connection::new(replay, Pairs::new(false, self.classes.len()), self.cfg.mtu, first);
        c.since_tick.joined = true;
        self.level_connection(&mut c);
        // Static actors destroyed before it joined: its client loaded them with the level.
        c.closes.queued.extend(self.statics.destroyed.iter().map(|&g| connection::PendingClose::destroyed(g)));
        for (ci, class) in self.classes.iter().enumerate().filter(|_| self.level.is_none()) {
            for (slot, a) in class.actors.iter().enumerate() {
                if a.alive {
                    c.queue(ci as u32, slot as u32);
                }
            }
        }
        // An id no live connection has (ids wrap after 2^32 connections).
        let mut id = self.next_conn_id;
        while self.conn_slots.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        self.next_conn_id = id.wrapping_add(1);
        c.id = ConnectionId(id);
        // A removed connection's slot, else a new one: a peer that joins and leaves without end
        // leaves nothing behind (every per-slot record went with its removal).
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.conns[slot as usize] = c;
                slot
            }
            None => {
                self.conns.push(c);
                self.conns.len() as u32 - 1
            }
        };
        self.conn_slots.insert(id, slot);
        ConnectionId(id)
    }

    /// Removes a connection: it sends nothing more and its state is freed. Its id is never
    /// given to another connection (later calls with it are [`DriverError::UnknownConnection`]);
    /// actors it owned are owned by nobody. Its slot in the driver's tables serves the next
    /// connection added.
    pub fn remove_connection(&mut self, conn: ConnectionId) -> Result<(), DriverError> {
        let ci = self.live(conn)?;
        self.conns[ci].remove();
        self.conn_slots.remove(&conn.0);
        self.free_slots.push(ci as u32);
        self.fast.remove_connection(ci);
        self.forget_inactive_connection(ci);
        for t in &mut self.tearing {
            t.deferred.retain(|&c| c as usize != ci);
        }
        let mut owned = Vec::new();
        for (class, c) in self.classes.iter_mut().enumerate() {
            for (slot, a) in c.actors.iter_mut().enumerate().filter(|(_, a)| a.owner == Some(ci as u32)) {
                a.owner = None;
                owned.push((class, slot, a.guid));
            }
        }
        // With owner chains, an actor it owned may be owned through its chain by another (one
        // walk for them all; a sub-object takes its owner's).
        if let Some(chains) = self.chains.as_mut() {
            chains.forget_connection(ci as u32);
            let roots: Vec<NetGuid> = owned
                .into_iter()
                .filter(|&(class, slot, _)| {
                    self.classes[class].cols.sub_condition.get(slot).is_some_and(|c| c.is_none())
                })
                .map(|(_, _, guid)| guid)
                .collect();
            self.derive_owners_below(&roots, true);
        }
        Ok(())
    }

    /// The connections that exist, in id order.
    pub fn connections(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        let mut ids: Vec<ConnectionId> = self.conns.iter().filter(|c| !c.removed).map(|c| c.id).collect();
        ids.sort_unstable();
        ids.into_iter()
    }

    /// The NetGUID of a live actor, assigning one now (and announcing the actor to every
    /// connection) if no tick has seen it yet. A tick assigns GUIDs to new actors by itself;
    /// call this to reference an actor in a property before that tick.
    pub fn assign_guid(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<NetGuid, DriverError> {
        let ci = self.class_for(class, store)?;
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        Ok(self.ensure_actor(ci as u32, id.index, id.generation, self.frame))
    }

    /// The NetGUID of an actor, if the driver has assigned one (no side effects).
    pub fn guid_of(&self, class: ClassId, id: ActorId) -> Option<NetGuid> {
        let a = self.classes.get(class.0 as usize)?.actors.get(id.index as usize)?;
        (a.alive && a.generation == id.generation).then_some(a.guid)
    }
}
