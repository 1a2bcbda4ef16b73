//! An actor's role for each connection, as the game sets it: its owning connection and autonomy,
//! physics, and Custom condition overrides. Each changes the actor's condition flags per
//! connection ([`condition`](super::condition)); a leaf that becomes active for a connection is
//! sent to it.

use super::actors::ActorNet;
use super::connection::pair;
use super::{ClassId, ConnectionId, DriverError, Frame, NetDriver};
use crate::store::{ActorId, ClassStore};

impl NetDriver {
    fn actor_mut(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<&mut ActorNet, DriverError> {
        self.assign_guid(class, store, id)?;
        Ok(&mut self.classes[class.0 as usize].actors[id.index as usize])
    }

    /// Sets which connection owns an actor (`None`: nobody) and whether the owner holds an
    /// autonomous proxy. Properties that become active for a connection are sent to it.
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
        if let Some(o) = owner {
            self.live(o)?;
        }
        self.class_for(class, store)?;
        let before = self.all_pair_flags(class.0, id.index);
        let a = self.actor_mut(class, store, id)?;
        a.owner = owner.map(|o| o.0);
        a.autonomous = autonomous;
        let guid = a.guid;
        self.wake_newly_active(class.0, id.index, &before);
        self.own_sub_objects(guid, owner.map(|o| o.0), autonomous);
        Ok(())
    }

    /// The connection that owns an actor ([`Self::set_owner`]), if any.
    pub fn owning_connection(&self, class: ClassId, id: ActorId) -> Option<ConnectionId> {
        self.guid_of(class, id)?;
        self.classes[class.0 as usize].actors[id.index as usize].owner.map(ConnectionId)
    }

    /// Sets whether an actor replicates physics (the SimulatedOrPhysics conditions).
    pub fn set_physics(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        physics: bool,
    ) -> Result<(), DriverError> {
        self.class_for(class, store)?;
        let before = self.all_pair_flags(class.0, id.index);
        self.actor_mut(class, store, id)?.physics = physics;
        self.wake_newly_active(class.0, id.index, &before);
        Ok(())
    }

    /// Switches a Custom (or Dynamic) condition property of one actor on or off (UE's
    /// `DOREPLIFETIME_ACTIVE_OVERRIDE`). Switching it on sends its current value.
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
        if parent >= c.layout.parents.len() {
            return Err(DriverError::NoSuchParent(parent));
        }
        let leaves = c.active.parent(parent);
        let a = self.actor_mut(class, store, id)?;
        let was_inactive = !(a.custom_inactive & leaves).is_empty();
        if active {
            a.custom_inactive &= !leaves;
        } else {
            a.custom_inactive |= leaves;
        }
        if active && was_inactive {
            let ever = self.classes[ci].history.changed_since(id.index, Frame(0)) & leaves;
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                conn.owe(class.0, id.index, ever);
            }
        }
        Ok(())
    }

    fn all_pair_flags(&self, class: u32, slot: u32) -> Vec<u8> {
        (0..self.conns.len()).map(|c| self.pair_flags(class, slot, c)).collect()
    }

    fn pair_flags(&self, class: u32, slot: u32, conn: usize) -> u8 {
        let Some(a) = self.classes.get(class as usize).and_then(|c| c.actors.get(slot as usize)) else { return 0 };
        let Some(c) = self.conns.get(conn).filter(|c| !c.removed) else { return 0 };
        let acked = c.pair_ref(class, slot).is_some_and(|p| p.flags & pair::OPEN_ACKED != 0);
        a.flags(conn as u32, c.replay, acked)
    }

    /// After flags changed: leaves that became active for a connection are sent to it.
    fn wake_newly_active(&mut self, class: u32, slot: u32, before: &[u8]) {
        let ever = self.classes[class as usize].history.changed_since(slot, Frame(0));
        for (ci, &was) in before.iter().enumerate() {
            let now = self.pair_flags(class, slot, ci);
            let c = &self.classes[class as usize];
            let custom = c.actors[slot as usize].custom_inactive;
            let newly = c.active.get(now) & !c.active.get(was) & !custom & ever;
            if !newly.is_empty() && !self.conns[ci].removed {
                self.conns[ci].owe(class, slot, newly);
            }
        }
    }
}
