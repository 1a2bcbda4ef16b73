//! A channel's life beyond open-update-close: static actors, sub-objects and tear-off (dormancy
//! has its own module, [`super::dormancy`]).
//!
//! ```text
//! static actor   placed in the level, known to both ends by its path: an odd NetGUID; its open
//!                carries the path and the client binds the copy it loaded; its channel never
//!                closes for relevancy; destroyed → a close with its path to every connection,
//!                and to every connection that joins later
//! tear-off       the next frame replicates the actor once more (what changed: "health 0, then
//!                TearOff()"), each channel closing with reason TornOff right after that bunch
//!                (at the actor level, on each connection as it gets to the actor; a tearing
//!                actor opens no new channel); clients keep their copies; once no connection
//!                waits for it (none left it over), the rest of its channels close the same way
//!                and the driver never replicates it again
//! sub-object     an object of its own class and store (a weapon, a component, an inventory),
//!                with its own NetGUID, linked to an owner actor: relevant exactly when its owner
//!                is (UE's sub-objects ride their owner's channel; here they use its relevancy
//!                and priority), to the owner's connection only if its condition says so, owned
//!                by whoever owns the owner; its open names the owner, the client creates it on
//!                first sight and destroys it with the owner; removed (despawned) → a close;
//!                the owner gone → the driver stops replicating it (clients destroyed it already)
//! ```
//!
//! Dynamic actors' opens carry spawn info (location, rotation, scale, velocity: see
//! [`NetDriver::set_spawn_properties`]); the wire side is [`crate::wire::open`].

mod subobjects;
mod tear_off;

pub(crate) use subobjects::SubObjects;
pub use subobjects::{NetGroups, ReplicationFlags, SubObjectCondition};
pub(crate) use tear_off::Tearing;

use super::{ClassId, DriverError, NetDriver, NetGuid};
use crate::store::{ActorId, ClassStore};
use crate::wire::open::MAX_PATH_BYTES;
use std::collections::HashSet;
use std::sync::Arc;

/// Static actors as the driver knows them.
pub(crate) struct Statics {
    /// Paths by GUID, of live and destroyed static actors and of static objects.
    pub paths: crate::ids::GuidMap<Arc<str>>,
    /// Static objects (assets, classes: [`NetDriver::register_static_object`]), exported by
    /// their path as static actors are; never destroyed.
    pub objects: HashSet<NetGuid>,
    /// Paths in use.
    taken: HashSet<Arc<str>>,
    /// The next static GUID (odd; 1 is UE's "default object" and stays unused).
    next: NetGuid,
    /// Destroyed static actors, in order: a connection that joins later gets their closes.
    pub destroyed: Vec<NetGuid>,
    /// The sublevels of static actors outside the persistent level (a destroyed one's close
    /// goes again to a client that loads its sublevel: [`super::sublevels`]).
    pub sublevels: crate::ids::GuidMap<super::sublevels::SublevelId>,
}

impl Statics {
    /// The path to export for static `guid` — a live static actor's (`live`) or a static
    /// object's — if it has one (a destroyed static actor's path stays only for its closes).
    pub fn export_path(&self, guid: NetGuid, live: impl FnOnce() -> bool) -> Option<&Arc<str>> {
        self.paths.get(&guid).filter(|_| self.objects.contains(&guid) || live())
    }

    /// Takes `path` for a new static actor or object and gives it the next static GUID.
    fn take(&mut self, path: &str) -> Result<NetGuid, DriverError> {
        if path.is_empty() || path.len() > MAX_PATH_BYTES {
            return Err(DriverError::BadStaticPath(format!(
                "`{path}` must be 1 to {MAX_PATH_BYTES} bytes, not {}",
                path.len()
            )));
        }
        if self.taken.contains(path) {
            // A destroyed static actor keeps its path: clients that join later load the level's
            // actor by it and are told it is gone by its GUID.
            return Err(DriverError::BadStaticPath(format!(
                "`{path}` names another static actor or object (live or destroyed: a path names one for the driver's life)"
            )));
        }
        let guid = self.next;
        self.next = NetGuid(guid.0 + 2);
        let path: Arc<str> = path.into();
        self.taken.insert(path.clone());
        self.paths.insert(guid, path);
        Ok(guid)
    }

    /// Static actor `guid`'s sublevel.
    pub fn sublevel_of(&self, guid: NetGuid) -> super::sublevels::SublevelId {
        self.sublevels.get(&guid).copied().unwrap_or_default()
    }
}

impl Default for Statics {
    fn default() -> Self {
        Self {
            paths: Default::default(),
            objects: HashSet::new(),
            taken: HashSet::new(),
            next: NetGuid(3),
            destroyed: Vec::new(),
            sublevels: Default::default(),
        }
    }
}

impl NetDriver {
    /// Makes a live actor a static actor: one placed in the level, which every client loads
    /// itself (`ClientWorld::load_static_actor` with the same path) before any packet. It gets
    /// an odd NetGUID; its open carries `path` instead of spawn info and the client binds its own
    /// copy; its channel is never closed for relevancy (UE's `bNetStartup`); when it is destroyed
    /// every connection is told, including those that join later. Call it before a tick (or
    /// [`Self::assign_guid`]) gives the actor a dynamic GUID. A path names one static actor for
    /// the driver's life, even after that actor is destroyed ([`DriverError::BadStaticPath`]):
    /// a level the server itself unloads and loads again registers its actors under new paths.
    /// (A client streaming a level out and in is [`Self::set_sublevel_loaded`]: the same actors,
    /// the same paths; place a static actor with [`Self::set_sublevel`].)
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
        let guid = self.statics.take(path)?;
        self.retire_unseen(ci as u32, id.index);
        self.adopt(ci as u32, id.index, id.generation, guid, self.frame);
        Ok(guid)
    }

    /// Registers a static object that is not an actor — an asset or a class both ends load
    /// themselves (a damage type, a mesh, a sound): UE's stably named objects, which its package
    /// map exports by path. It gets an odd NetGUID for object references to name; the first
    /// bunch that carries a reference to it to a connection goes after an export of the GUID
    /// with `path` (acknowledged, and sent again if lost), and a client that loaded `path`
    /// (`ClientWorld::load_static_object`) binds the GUID to it and resolves the reference
    /// (`ClientWorld::static_object_path`). A path names one static actor or object for the
    /// driver's life ([`DriverError::BadStaticPath`]).
    ///
    /// ```
    /// use shadowrep::net::{DriverConfig, NetDriver};
    ///
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let fire = driver.register_static_object("/Game/DamageTypes/Fire").unwrap();
    /// assert!(fire.is_static());
    /// assert!(driver.register_static_object("/Game/DamageTypes/Fire").is_err(), "a path names one object");
    /// ```
    pub fn register_static_object(&mut self, path: &str) -> Result<NetGuid, DriverError> {
        let guid = self.statics.take(path)?;
        self.statics.objects.insert(guid);
        Ok(guid)
    }
}
