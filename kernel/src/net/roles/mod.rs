//! An actor's role for each connection, as the game sets it: its owning connection (given, or
//! derived from its owner chain: [`chains`]) and autonomy, physics, and Custom condition
//! overrides. Each changes the actor's condition flags per
//! connection ([`condition`](super::condition)).
//!
//! ```text
//! a leaf goes inactive for a connection   → recorded with the pair's last send (and what the
//!                                            pair still owed of it): UE's inactive changelist,
//!                                            kept as a frame — the history tells what changed
//! a packet carrying it is reported lost    → planning parks the leaf (inactive: not sent) and
//!   while it is inactive                     the record takes it as owed
//! it comes back                           → owed what changed after that send (never active
//!                                            on this channel: everything that ever changed)
//! ```
//!
//! So a client gets exactly what changed while the property was off for it, as UE's
//! `FRepLayout` sends (its `InactiveChangelist`): no value is lost, and none it has is sent again.

mod chains;

pub(crate) use chains::OwnerChains;

use super::actors::ActorNet;
use super::connection::pair;
use super::{ClassId, ConnectionId, DriverError, Frame, NetDriver};
use crate::ids::LeafMask;
use crate::schema::Condition;
use crate::store::{ActorId, ClassStore};

/// The most records an actor keeps (an item passed from player to player leaves one per former
/// owner): beyond, the oldest goes, and that connection gets everything that ever changed of
/// those leaves if they come back — more bytes, never a lost value.
const MAX_INACTIVE_PER_ACTOR: usize = 64;

/// Frames between two prunings of the connections' role records ([`super::proxy_roles`]).
const PRUNE_ROLES_EVERY: u32 = 64;

/// Leaves of one actor inactive for one connection since a role change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inactive {
    conn: u32,
    leaves: LeafMask,
    /// The pair's last send when they went inactive: what changed after it is owed when they
    /// come back.
    since: Frame,
    /// What the pair still owed of them then (a lost packet's leaves), and what a loss reported
    /// while they are off adds (planning parks those: `park_inactive_losses`) — owed again (if
    /// they ever changed).
    owed: LeafMask,
    /// The pair's channel then: a channel opened since knows nothing of them.
    epoch: u8,
}

/// Per actor (class, slot), the records of leaves inactive for a connection since a role change.
pub(crate) type InactiveLeaves = std::collections::HashMap<(u32, u32), Vec<Inactive>>;

impl NetDriver {
    fn actor_mut(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<&mut ActorNet, DriverError> {
        self.assign_guid(class, store, id)?;
        Ok(&mut self.classes[class.0 as usize].actors[id.index as usize])
    }

    /// Sets which connection owns an actor (`None`: nobody) and whether the owner holds an
    /// autonomous proxy. Properties that become active for a connection are sent to it. With
    /// [`ActorLevelConfig::owner_chain_connections`](super::ActorLevelConfig::owner_chain_connections)
    /// the connection given is the actor's own: `None` leaves it the one its owner chain gives
    /// ([`Self::set_owner_actor`]), and the actors whose chains pass through it follow.
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// // The player controlling it: owner-only and autonomous-only properties reach `conn` alone.
    /// driver.set_owner(class, &store, id, Some(conn), true).unwrap();
    /// assert_eq!(driver.owning_connection(class, id), Some(conn));
    /// driver.set_owner(class, &store, id, None, false).unwrap();
    /// assert_eq!(driver.owning_connection(class, id), None);
    /// # let _ = (guid, &mut client);
    /// ```
    pub fn set_owner(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        owner: Option<ConnectionId>,
        autonomous: bool,
    ) -> Result<(), DriverError> {
        // The owner is kept as the connection's slot, which every check compares with (not its
        // id: once a removed connection's slot serves a new one they differ, and the id named
        // nobody, or a later connection in the slot of that number).
        let slot = owner.map(|o| self.live(o).map(|s| s as u32)).transpose()?;
        self.class_for(class, store)?;
        self.not_a_sub_object(class, id)?;
        let guid = self.actor_mut(class, store, id)?.guid;
        // With owner chains the connection given is the actor's own: with none it takes its
        // owner chain's, and the actors below it derive theirs again.
        if let Some(chains) = self.chains.as_mut() {
            chains.set_explicit(guid, slot);
        }
        let owner = self.chains.as_ref().map_or(slot, |chains| self.chain_owner(chains, guid));
        self.apply_owner(class.0, id.index, owner, autonomous);
        self.derive_owners_from(guid, false);
        Ok(())
    }

    /// Makes the connection in slot `owner` the owner of the actor in `slot` (and of its
    /// sub-objects), with the actor's autonomy: the roles and proxies that change are owed
    /// ([`Self::set_roles`], [`Self::proxy_changed`]).
    pub(in crate::net) fn apply_owner(&mut self, class: u32, slot: u32, owner: Option<u32>, autonomous: bool) {
        let a = &self.classes[class as usize].actors[slot as usize];
        // A torn-off actor is the clients' own (Authority) and never planned again: nothing to
        // tell (an owed role would stay owed for as long as the actor lives).
        let (guid, torn_off) = (a.guid, a.torn_off);
        let was = a.autonomous_owner().filter(|_| !torn_off);
        // Only the old and the new owner's flags can move (a sub-object's owner is its owner's).
        let mut owners: Vec<u32> = [a.owner, owner].into_iter().flatten().collect();
        owners.dedup();
        // Its sub-objects are owned by whoever owns it.
        self.set_roles_with_sub_objects(class, slot, guid, Some(&owners), |a| {
            a.owner = owner;
            a.autonomous = autonomous;
        });
        self.proxy_changed(class, slot, guid, was, owner.filter(|_| autonomous && !torn_off));
    }

    /// The connection holding an autonomous proxy of the actor in `slot` went from `was` to
    /// `now`: each of the two whose client was told another role owes it
    /// ([`super::proxy_roles`]).
    fn proxy_changed(&mut self, class: u32, slot: u32, guid: super::NetGuid, was: Option<u32>, now: Option<u32>) {
        if was == now {
            return;
        }
        let key = super::pairs::pair_key(class, slot);
        for ci in [was, now].into_iter().flatten() {
            let Some(conn) = self.conns.get_mut(ci as usize).filter(|c| !c.removed) else { continue };
            let Some(ps) = conn.pair_ref(class, slot).copied() else { continue };
            let opened = ps.flags & pair::EVER_OPENED != 0;
            if conn.roles.changed(key, guid, ps.epoch, opened, now == Some(ci)) {
                conn.queue(class, slot);
            }
        }
    }

    /// The role the client of `conn` holds for an actor, as the server's settings give it
    /// ([`Self::set_owner`]): [`NetRole::AutonomousProxy`](super::NetRole) for the owner of an
    /// actor set autonomous, [`NetRole::SimulatedProxy`](super::NetRole) for every other
    /// connection (UE's downgrade of `RemoteRole` for non-owners), `Authority` once torn off.
    /// `None` for an actor the driver has not given a GUID yet, a stale one, or an unknown
    /// connection. The client gets it with the actor's open, and again when it changes
    /// ([`crate::client::ClientWorld::role`]).
    pub fn client_role(&self, class: ClassId, id: ActorId, conn: ConnectionId) -> Option<super::NetRole> {
        self.guid_of(class, id)?;
        let ci = self.live(conn).ok()?;
        let a = &self.classes[class.0 as usize].actors[id.index as usize];
        Some(if a.torn() {
            super::NetRole::Authority
        } else if a.autonomous_owner() == Some(ci as u32) {
            super::NetRole::AutonomousProxy
        } else {
            super::NetRole::SimulatedProxy
        })
    }

    /// Whether the owner holds an autonomous proxy of an actor, its owner kept (UE's
    /// `SetAutonomousProxy`: `RemoteRole` autonomous or simulated). The owner's client is told
    /// its new role with the actor's next bunch ([`crate::client::ClientWorld::role`]).
    ///
    /// ```
    /// use shadowrep::net::{DriverConfig, NetDriver, NetRole};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Pawn").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout);
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let pawn = store.spawn();
    /// driver.set_owner(class, &store, pawn, Some(conn), false).unwrap();
    /// assert_eq!(driver.client_role(class, pawn, conn), Some(NetRole::SimulatedProxy));
    /// driver.set_autonomous_proxy(class, &store, pawn, true).unwrap();
    /// assert_eq!(driver.client_role(class, pawn, conn), Some(NetRole::AutonomousProxy));
    /// assert_eq!(driver.owning_connection(class, pawn), Some(conn));
    /// ```
    pub fn set_autonomous_proxy(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        autonomous: bool,
    ) -> Result<(), DriverError> {
        self.class_for(class, store)?;
        // The actor's own owner kept (with owner chains, not the one its chain gives it).
        let owner = match (self.chains.as_ref(), self.guid_of(class, id)) {
            (Some(chains), Some(guid)) => chains.explicit(guid).map(|s| self.conns[s as usize].id),
            _ => self.owning_connection(class, id),
        };
        self.set_owner(class, store, id, owner, autonomous)
    }

    /// The connection that owns an actor ([`Self::set_owner`]; with owner chains, the one its
    /// chain gives it when it has none of its own), if any.
    pub fn owning_connection(&self, class: ClassId, id: ActorId) -> Option<ConnectionId> {
        self.guid_of(class, id)?;
        let slot = self.classes[class.0 as usize].actors[id.index as usize].owner?;
        self.conns.get(slot as usize).map(|c| c.id)
    }

    /// Sets whether an actor replicates physics (the SimulatedOrPhysics conditions) — for its
    /// sub-objects too, whose conditions follow their owner's flags (UE's sub-objects take the
    /// actor channel's replication flags).
    pub fn set_physics(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        physics: bool,
    ) -> Result<(), DriverError> {
        self.class_for(class, store)?;
        self.not_a_sub_object(class, id)?;
        let guid = self.actor_mut(class, store, id)?.guid;
        self.set_roles_with_sub_objects(class.0, id.index, guid, None, |a| a.physics = physics);
        Ok(())
    }

    /// Switches a property of one actor on or off (UE's `DOREPLIFETIME_ACTIVE_OVERRIDE`).
    /// Switching it on sends each connection what changed while it was off there. Meant for
    /// Custom and Dynamic properties (active until switched off); on a property under another
    /// condition the switch gates that condition too, as UE's active flag gates every property
    /// (an owner-only property switched off goes to no one, its owner included). In a class of
    /// more than 64 leaves, a parent that shares a leaf group with another
    /// ([`crate::schema::groups`]: never a Custom or Dynamic one) is refused.
    pub fn set_custom_active(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        parent: usize,
        active: bool,
    ) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let c = &self.classes[ci];
        let Some(p) = c.layout.parents.get(parent) else { return Err(DriverError::NoSuchParent(parent)) };
        if !c.layout.groups.alone(p.leaves.clone()) {
            return Err(DriverError::SharedLeafGroup { class: c.layout.name.clone(), parent });
        }
        let leaves = c.active.parent(parent);
        self.actor_mut(class, store, id)?;
        self.set_roles(ci as u32, id.index, |a| {
            if active {
                a.custom_inactive &= !leaves;
            } else {
                a.custom_inactive |= leaves;
            }
        });
        Ok(())
    }

    /// Gives one actor its own condition for a parent declared [`Condition::Dynamic`] (UE's
    /// `SetDynamicCondition`, e.g. `DOREPLIFETIME_CHANGE_CONDITION`): from now on the property
    /// goes to the connections `condition` allows for this actor, and each connection it comes
    /// back to is sent what changed while it was off there, as a role change does.
    /// `Condition::Dynamic` gives the parent back to the class's rule (active everywhere, unless
    /// [`Self::set_custom_active`] switched it off); `None` and `Custom` are active everywhere
    /// too. The initial-only conditions (`InitialOnly`, `InitialOrOwner`) are refused
    /// ([`DriverError::BadDynamicCondition`]): what only an open carries is the class's to
    /// declare. A parent not declared Dynamic is refused too ([`DriverError::NotDynamic`]).
    ///
    /// ```
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use shadowrep::schema::Condition;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(
    ///     ClassBuilder::new("Effects")
    ///         .property(PropertyDecl::new("Active", PropType::U32).condition(Condition::Dynamic))
    ///         .build()
    ///         .unwrap(),
    /// );
    /// let mut store = ClassStore::new(layout);
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let id = store.spawn();
    /// // This container replicates its effects to its owner only (GAS's "minimal" mode).
    /// driver.set_dynamic_condition(class, &store, id, 0, Condition::OwnerOnly).unwrap();
    /// assert_eq!(driver.dynamic_condition(class, id, 0), Some(Condition::OwnerOnly));
    /// driver.set_dynamic_condition(class, &store, id, 0, Condition::Dynamic).unwrap();
    /// assert_eq!(driver.dynamic_condition(class, id, 0), Some(Condition::Dynamic));
    /// ```
    pub fn set_dynamic_condition(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        parent: usize,
        condition: Condition,
    ) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let layout = &self.classes[ci].layout;
        let declared = layout.parents.get(parent).ok_or(DriverError::NoSuchParent(parent))?.condition;
        if declared != Condition::Dynamic {
            return Err(DriverError::NotDynamic(parent));
        }
        if matches!(condition, Condition::InitialOnly | Condition::InitialOrOwner) {
            return Err(DriverError::BadDynamicCondition(condition));
        }
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        // Everything is checked before the actor gets a GUID: a refused call changes nothing.
        let now =
            if self.guid_of(class, id).is_some() { self.classes[ci].actors[id.index as usize].dynamic } else { 0 };
        let c = &mut self.classes[ci];
        let mut conditions: Vec<(usize, Condition)> =
            c.active.dynamic_conditions(now).iter().copied().filter(|&(p, _)| p != parent).collect();
        if condition != Condition::Dynamic {
            conditions.push((parent, condition));
        }
        let set = c.active.dynamic_set(&conditions).ok_or(DriverError::TooManyDynamicSets(class))?;
        self.actor_mut(class, store, id)?;
        self.set_roles(ci as u32, id.index, |a| a.dynamic = set);
        Ok(())
    }

    /// The condition parent `parent` of an actor follows: its own
    /// ([`Self::set_dynamic_condition`]) or the class's declared one. `None` for an actor the
    /// driver has not given a GUID yet (or a stale one) and for a parent out of range.
    pub fn dynamic_condition(&self, class: ClassId, id: ActorId, parent: usize) -> Option<Condition> {
        self.guid_of(class, id)?;
        let c = &self.classes[class.0 as usize];
        let declared = c.layout.parents.get(parent)?.condition;
        let own = c.active.dynamic_conditions(c.actors[id.index as usize].dynamic);
        Some(own.iter().find(|&&(p, _)| p == parent).map_or(declared, |&(_, cond)| cond))
    }

    /// The leaves of the actor in `slot` active for connection `ci` (condition flags with its
    /// channel's state, and Custom overrides).
    fn active_for(&self, class: u32, slot: u32, ci: usize) -> LeafMask {
        let c = &self.conns[ci];
        let a = &self.classes[class as usize].actors[slot as usize];
        // Initial until a bunch has sent the open (as planning's flags).
        let sent = c.pair_ref(class, slot).is_some_and(|p| p.flags & (pair::OPEN_ACKED | pair::OPEN_SENT) != 0);
        a.active_leaves(&self.classes[class as usize].active, a.flags(ci as u32, c.replay, !sent))
    }

    /// [`Self::set_roles`] of actor `guid` in `slot` and of each of its sub-objects, whose roles
    /// are their owner's.
    fn set_roles_with_sub_objects(
        &mut self,
        class: u32,
        slot: u32,
        guid: super::NetGuid,
        among: Option<&[u32]>,
        change: impl Fn(&mut ActorNet),
    ) {
        let subs = self.sub_slots(guid).into_iter().map(|(c, s, _)| (c, s));
        for (c, s) in std::iter::once((class, slot)).chain(subs) {
            self.set_roles_among(c, s, among, &change);
        }
    }

    /// Changes the roles of the actor in `slot` with `change`, then, per connection: leaves that
    /// went inactive are recorded with the pair's last send, and leaves that came back are owed
    /// what changed while they were away (see the module documentation).
    fn set_roles(&mut self, class: u32, slot: u32, change: impl FnOnce(&mut ActorNet)) {
        self.set_roles_among(class, slot, None, change);
    }

    /// [`Self::set_roles`] looking only at the connections in slots `among` (when given): the
    /// only ones whose flags `change` can move (an owner change moves the old and new owners'
    /// alone), so a change a game makes for each spawn — a projectile's owner through its chain
    /// — costs its two owners, not every connection.
    fn set_roles_among(&mut self, class: u32, slot: u32, among: Option<&[u32]>, change: impl FnOnce(&mut ActorNet)) {
        let live = |c: &super::connection::Connection| !c.removed;
        let conns: Vec<usize> = match among {
            Some(list) => list.iter().map(|&c| c as usize).filter(|&c| c < self.conns.len()).collect(),
            None => (0..self.conns.len()).collect(),
        };
        let before: Vec<(usize, LeafMask)> = conns
            .iter()
            .filter(|&&ci| live(&self.conns[ci]))
            .map(|&ci| (ci, self.active_for(class, slot, ci)))
            .collect();
        change(&mut self.classes[class as usize].actors[slot as usize]);
        for &(ci, was) in &before {
            let now = self.active_for(class, slot, ci);
            let (lost, gained) = (was & !now, now & !was);
            let conn = &self.conns[ci];
            // No pair: the client has nothing of the actor, and its open brings what is active.
            let Some(ps) = conn.pair_ref(class, slot).copied().filter(|_| !(lost | gained).is_empty()) else {
                continue;
            };
            let since = if conn.pairs.is_clean(class, slot) { self.frame } else { ps.sent_through };
            let history = &self.classes[class as usize].history;
            let list = self.inactive.entry((class, slot)).or_default();
            let mine = |e: &Inactive| e.conn == ci as u32;
            // Records of another channel of this pair tell nothing about this one.
            list.retain(|e| !mine(e) || e.epoch == ps.epoch);
            let mut owe = LeafMask::EMPTY;
            let mut rest = gained;
            let ever = history.changed_since(slot, Frame(0));
            for e in list.iter_mut().filter(|e| mine(e)) {
                let back = e.leaves & gained;
                owe |= (history.changed_since(slot, e.since) | (e.owed & ever)) & back;
                e.leaves &= !back;
                rest &= !back;
            }
            // Inactive since the channel opened: everything that ever changed.
            owe |= ever & rest;
            list.retain(|e| !e.leaves.is_empty());
            if !lost.is_empty() {
                // What a lost packet still owed of them; a bunch whose fate is unknown and is
                // reported lost later has its leaves parked by planning and recorded then
                // (`park_inactive_losses`): owed back only if really lost, as UE's.
                let owed = ps.resend & lost;
                list.push(Inactive { conn: ci as u32, leaves: lost, since, owed, epoch: ps.epoch });
                if list.len() > MAX_INACTIVE_PER_ACTOR {
                    list.remove(0);
                }
            }
            if list.is_empty() {
                self.inactive.remove(&(class, slot));
            }
            if !owe.is_empty() {
                self.conns[ci].owe(class, slot, owe);
            }
        }
    }

    /// Every [`PRUNE_ROLES_EVERY`] frames, drops the connections' role records of channels that
    /// closed and actors that went ([`super::proxy_roles`]).
    pub(super) fn prune_proxy_roles(&mut self) {
        if !self.frame.0.is_multiple_of(PRUNE_ROLES_EVERY) {
            return;
        }
        let classes = &self.classes;
        for conn in self.conns.iter_mut().filter(|c| c.roles.len() > 0) {
            let pairs = &conn.pairs;
            conn.roles.prune(|key, guid, epoch| {
                let (class, slot) = super::pairs::split_key(key);
                let actor = classes.get(class as usize).and_then(|c| c.actors.get(slot as usize));
                actor.is_some_and(|a| a.alive && !a.torn_off && a.guid.0 as u32 == guid)
                    && pairs.get(class, slot).is_some_and(|ps| ps.epoch == epoch)
            });
        }
    }

    /// Records the lost leaves each connection's planning found inactive this frame
    /// ([`Connection::parked`](super::connection::Connection)): owed when they come back, with
    /// the record of their channel (a new one if the pair has none).
    pub(super) fn park_inactive_losses(&mut self) {
        for ci in 0..self.conns.len() {
            if self.conns[ci].parked.is_empty() {
                continue;
            }
            let parked = std::mem::take(&mut self.conns[ci].parked);
            for &(class, slot, leaves) in &parked {
                let Some(ps) = self.conns[ci].pair_ref(class, slot).copied() else { continue };
                let list = self.inactive.entry((class, slot)).or_default();
                match list.iter_mut().find(|e| e.conn == ci as u32 && e.epoch == ps.epoch) {
                    Some(e) => {
                        e.leaves |= leaves;
                        e.owed |= leaves;
                    }
                    None => {
                        list.push(Inactive {
                            conn: ci as u32,
                            leaves,
                            since: ps.sent_through,
                            owed: leaves,
                            epoch: ps.epoch,
                        });
                        if list.len() > MAX_INACTIVE_PER_ACTOR {
                            list.remove(0);
                        }
                    }
                }
            }
            // The list's buffer goes back for the next frame.
            let mut parked = parked;
            parked.clear();
            self.conns[ci].parked = parked;
        }
    }

    /// Connection `ci` is gone: its records go.
    pub(super) fn forget_inactive_connection(&mut self, ci: usize) {
        self.inactive.retain(|_, list| {
            list.retain(|e| e.conn != ci as u32);
            !list.is_empty()
        });
    }

    /// Forgets what connection `ci` was owed of the actor in `slot` when leaves come back (its
    /// channel opens again from nothing).
    pub(super) fn forget_inactive(&mut self, class: u32, slot: u32, ci: usize) {
        if let Some(list) = self.inactive.get_mut(&(class, slot)) {
            list.retain(|e| e.conn != ci as u32);
            if list.is_empty() {
                self.inactive.remove(&(class, slot));
            }
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod chain_tests;

#[cfg(test)]
mod level_tests;
