//! A channel's life beyond open-update-close: static actors, tear-off and dormancy.
//!
//! ```text
//! static actor   placed in the level, known to both ends by its path: an odd NetGUID; its open
//!                carries the path and the client binds the copy it loaded; its channel never
//!                closes for relevancy; destroyed → a close with its path to every connection,
//!                and to every connection that joins later
//! tear-off       the channel closes with reason TornOff on every connection that may have the
//!                actor; clients keep their copies; the driver never replicates it again
//! ```
//!
//! Dynamic actors' opens carry spawn info (location, rotation, scale, velocity: see
//! [`NetDriver::set_spawn_properties`]); the wire side is [`crate::wire::open`].

use super::connection::PendingClose;
use super::pairs::Pairs;
use super::{ClassId, DriverError, NetDriver, NetGuid};
use crate::store::{ActorId, ClassStore};
use crate::wire::open::{CloseReason, MAX_PATH_BYTES};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Static actors as the driver knows them.
pub(crate) struct Statics {
    /// Paths by GUID, of live and destroyed static actors.
    pub paths: HashMap<NetGuid, Arc<str>>,
    /// Paths in use.
    taken: HashSet<Arc<str>>,
    /// The next static GUID (odd; 1 is UE's "default object" and stays unused).
    next: NetGuid,
    /// Destroyed static actors, in order: a connection that joins later gets their closes.
    pub destroyed: Vec<NetGuid>,
}

impl Default for Statics {
    fn default() -> Self {
        Self { paths: HashMap::new(), taken: HashSet::new(), next: NetGuid(3), destroyed: Vec::new() }
    }
}

impl NetDriver {
    /// Makes a live actor a static actor: one placed in the level, which every client loads
    /// itself (`ClientWorld::load_static_actor` with the same path) before any packet. It gets
    /// an odd NetGUID; its open carries `path` instead of spawn info and the client binds its own
    /// copy; its channel is never closed for relevancy (UE's `bNetStartup`); when it is destroyed
    /// every connection is told, including those that join later. Call it before a tick (or
    /// [`Self::assign_guid`]) gives the actor a dynamic GUID.
    pub fn register_static_actor(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        path: &str,
    ) -> Result<NetGuid, DriverError> {
        let ci = self.class_for(class, store)?;
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        if self.classes[ci].actors.get(id.index as usize).is_some_and(|a| a.alive && a.generation == id.generation) {
            return Err(DriverError::AlreadyReplicated(id));
        }
        if path.is_empty() || path.len() > MAX_PATH_BYTES {
            return Err(DriverError::BadStaticPath(format!(
                "`{path}` must be 1 to {MAX_PATH_BYTES} bytes, not {}",
                path.len()
            )));
        }
        if self.statics.taken.contains(path) {
            return Err(DriverError::BadStaticPath(format!("`{path}` names another static actor")));
        }
        let guid = self.statics.next;
        self.statics.next = NetGuid(guid.0 + 2);
        let path: Arc<str> = path.into();
        self.statics.taken.insert(path.clone());
        self.statics.paths.insert(guid, path);
        let a = self.classes[ci].actors.get(id.index as usize).copied().unwrap_or_default();
        if a.alive {
            // The slot's previous actor died unseen: close it first.
            self.retire_actor(ci as u32, id.index);
        }
        self.adopt(ci as u32, id.index, id.generation, guid);
        Ok(guid)
    }

    /// Tears an actor off (UE's `TearOff`): every connection that may have it gets a close with
    /// reason TornOff, its client keeps its copy and owns it from then on, and the driver never
    /// replicates the actor again (it stays in the store for the game). What a client has is
    /// what it last received. A second call does nothing.
    pub fn tear_off(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let guid = self.guid_of(class, id).ok_or(DriverError::StaleActor(id))?;
        let a = &mut self.classes[ci].actors[id.index as usize];
        if std::mem::replace(&mut a.torn_off, true) {
            return Ok(());
        }
        self.classes[ci].cols.set_awake_lane(id.index as usize, false);
        for conn in self.conns.iter_mut().filter(|c| !c.removed) {
            let ps = conn.drop_pair(ci as u32, id.index);
            if ps.flags & super::connection::pair::EVER_OPENED != 0 {
                conn.closes.push(PendingClose { guid, reason: CloseReason::TornOff });
            }
            if let Pairs::Dense(_) = conn.pairs {
                // A dense pair left in the pending list is skipped when planned (torn off).
                conn.pending.retain(|&(c, s)| (c, s) != (ci as u32, id.index));
            }
        }
        Ok(())
    }
}
