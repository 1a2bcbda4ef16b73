//! A channel's life beyond open-update-close: static actors, tear-off and dormancy.
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

use super::connection::PendingClose;
use super::pairs::Pairs;
use super::{ClassId, DriverError, NetDriver, NetGuid};
use crate::ids::Frame;
use crate::store::{ActorId, ClassStore};
use crate::wire::open::{CloseReason, MAX_PATH_BYTES};
use std::collections::HashSet;
use std::sync::Arc;

/// Which connections get a sub-object (UE 5's registered sub-object list conditions, evaluated
/// with its owner actor's ownership), among those its owner is relevant to. A connection the
/// condition leaves out gets no channel, and one it has is closed at once (an inventory that
/// changes hands stops reaching its old owner on the next consideration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SubObjectCondition {
    /// Every connection its owner is relevant to.
    #[default]
    None,
    /// Only the connection that owns the owner actor (an inventory, say).
    OwnerOnly,
    /// Every connection but the owner's.
    SkipOwner,
    /// Connections where the owner is a simulated proxy (all but an autonomous owner's).
    SimulatedOnly,
    /// Only the owner's connection, and only when it holds an autonomous proxy.
    AutonomousOnly,
    /// Replay connections and the owner's.
    ReplayOrOwner,
    /// Replay connections only.
    ReplayOnly,
    /// Every connection but replays.
    SkipReplay,
    /// No connection.
    Never,
    /// The connections in one of its groups (UE 5's `COND_NetGroup`: a team's view of an
    /// inventory, say): those [`NetDriver::set_connection_net_groups`] put in one of them; with
    /// [`NetGroups::OWNER`], its owner's connection; with [`NetGroups::REPLAY`], replay
    /// connections. A sub-object's groups change with [`NetDriver::set_sub_object_condition`].
    NetGroup(NetGroups),
}

/// A set of net condition groups ([`SubObjectCondition::NetGroup`]): the game's groups 0 to 61,
/// and UE's two special ones, [`Self::OWNER`] and [`Self::REPLAY`].
///
/// ```
/// use shadowrep::net::NetGroups;
///
/// let red = NetGroups::group(0).unwrap();
/// let blue = NetGroups::group(1).unwrap();
/// let both = red | blue;
/// assert!(both.intersects(red) && !red.intersects(blue));
/// assert_eq!(NetGroups::group(62), None, "62 and 63 are OWNER and REPLAY");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NetGroups(u64);

impl NetGroups {
    /// No group.
    pub const EMPTY: NetGroups = NetGroups(0);
    /// UE's `NetGroupOwner`: every owner's connection is in it (for its own sub-objects).
    pub const OWNER: NetGroups = NetGroups(1 << 62);
    /// UE's `NetGroupReplay`: every replay connection is in it.
    pub const REPLAY: NetGroups = NetGroups(1 << 63);
    /// The game's groups: 0 to `GAME_GROUPS - 1`.
    pub const GAME_GROUPS: u8 = 62;

    /// The game's group `n`; `None` past [`Self::GAME_GROUPS`].
    pub const fn group(n: u8) -> Option<NetGroups> {
        if n < Self::GAME_GROUPS {
            Some(NetGroups(1 << n))
        } else {
            None
        }
    }

    /// Whether the two sets share a group.
    pub const fn intersects(self, other: NetGroups) -> bool {
        self.0 & other.0 != 0
    }

    /// The game's groups of this set (without [`Self::OWNER`] and [`Self::REPLAY`]).
    pub const fn game_groups(self) -> NetGroups {
        NetGroups(self.0 & !(Self::OWNER.0 | Self::REPLAY.0))
    }
}

impl std::ops::BitOr for NetGroups {
    type Output = NetGroups;
    fn bitor(self, rhs: NetGroups) -> NetGroups {
        NetGroups(self.0 | rhs.0)
    }
}

impl SubObjectCondition {
    /// Whether a connection gets the sub-object: `owner` — it owns the owner actor;
    /// `autonomous` — the owner is its autonomous proxy there; `replay` — a replay connection;
    /// `groups` — the game's groups it is in ([`NetDriver::set_connection_net_groups`]).
    pub fn allows(self, owner: bool, autonomous: bool, replay: bool, groups: NetGroups) -> bool {
        match self {
            SubObjectCondition::None => true,
            SubObjectCondition::OwnerOnly => owner,
            SubObjectCondition::SkipOwner => !owner,
            SubObjectCondition::SimulatedOnly => !(owner && autonomous),
            SubObjectCondition::AutonomousOnly => owner && autonomous,
            SubObjectCondition::ReplayOrOwner => replay || owner,
            SubObjectCondition::ReplayOnly => replay,
            SubObjectCondition::SkipReplay => !replay,
            SubObjectCondition::Never => false,
            SubObjectCondition::NetGroup(of) => {
                let special = |yes: bool, g: NetGroups| if yes { g } else { NetGroups::EMPTY };
                of.intersects(
                    groups.game_groups() | special(owner, NetGroups::OWNER) | special(replay, NetGroups::REPLAY),
                )
            }
        }
    }
}

/// Sub-objects and their owners.
#[derive(Default)]
pub(crate) struct SubObjects {
    /// Sub-object → owner.
    pub outer: crate::ids::GuidMap<NetGuid>,
    /// Owner → its sub-objects.
    pub inner: crate::ids::GuidMap<Vec<NetGuid>>,
    /// Sub-objects orphaned lately (their owner retired first), kept a frame past the tick that
    /// met them: a slot's next occupant, spawned in the same tick, overwrites the flags that say
    /// so, and the UE-style reference closes an actor it finds gone by them.
    pub orphaned: Vec<Orphaned>,
}

/// A sub-object whose owner retired while it lived ([`SubObjects::orphaned`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Orphaned {
    pub guid: NetGuid,
    /// It was tearing off with its owner.
    pub tearing: bool,
    /// The driver's frame then.
    pub frame: Frame,
}

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
    pub(super) deferred: Vec<u32>,
}

impl Tearing {
    /// The tearing actor: (class, slot, GUID).
    pub(crate) fn actor(&self) -> (u32, u32, NetGuid) {
        (self.class, self.slot, self.guid)
    }
}

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

    /// Changes a sub-object's condition ([`Self::register_sub_object`]): a connection it no
    /// longer allows gets a close at the sub-object's next consideration, one it allows now an
    /// open with its current state — as an ownership change does. With
    /// [`SubObjectCondition::NetGroup`], this is how a sub-object changes its groups.
    /// ([`DriverError::NotASubObject`] for an actor that is not one.)
    ///
    /// ```
    /// use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, NetGroups, SubObjectCondition};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Thing").property(PropertyDecl::new("N", PropType::U8)).build().unwrap());
    /// let (mut pawns, mut bags) = (ClassStore::new(layout.clone()), ClassStore::new(layout));
    /// let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    /// let mut driver = NetDriver::new(cfg).unwrap();
    /// let (pawn_class, bag_class) = (driver.register_class(&mut pawns).unwrap(), driver.register_class(&mut bags).unwrap());
    /// let pawn = pawns.spawn();
    /// let owner = driver.assign_guid(pawn_class, &pawns, pawn).unwrap();
    /// let bag = bags.spawn();
    /// driver.register_sub_object(bag_class, &bags, bag, owner, SubObjectCondition::None).unwrap();
    /// // The red team sees this inventory, and so does its owner.
    /// let red = NetGroups::group(0).unwrap();
    /// let only_red = SubObjectCondition::NetGroup(red | NetGroups::OWNER);
    /// driver.set_sub_object_condition(bag_class, &bags, bag, only_red).unwrap();
    /// let teammate = driver.add_connection(false);
    /// driver.set_connection_net_groups(teammate, red).unwrap();
    /// ```
    pub fn set_sub_object_condition(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        condition: SubObjectCondition,
    ) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        let guid = self.guid_of(class, id).filter(|g| self.subs.outer.contains_key(g));
        let slot = id.index as usize;
        match (guid, self.classes[ci].cols.sub_condition.get_mut(slot)) {
            (Some(_), Some(Some(c))) => *c = condition,
            _ => return Err(DriverError::NotASubObject(id)),
        }
        Ok(())
    }

    /// Puts a connection in the game's net condition groups `groups` (UE's
    /// `IncludeInNetConditionGroup`, all at once; [`NetGroups::OWNER`] and [`NetGroups::REPLAY`]
    /// are not the game's to give: every owner and every replay connection is in those). The
    /// sub-objects [`SubObjectCondition::NetGroup`] puts in one of them reach it from their next
    /// consideration on, and those in none of them close there.
    pub fn set_connection_net_groups(
        &mut self,
        conn: crate::ids::ConnectionId,
        groups: NetGroups,
    ) -> Result<(), DriverError> {
        let ci = self.live(conn)?;
        let c = &mut self.conns[ci];
        if c.net_groups != groups.game_groups() {
            c.net_groups = groups.game_groups();
            c.groups_changed = c.groups_changed.wrapping_add(1);
        }
        Ok(())
    }

    /// The game's net condition groups connection `conn` is in.
    pub fn connection_net_groups(&self, conn: crate::ids::ConnectionId) -> Result<NetGroups, DriverError> {
        Ok(self.conns[self.live(conn)?].net_groups)
    }

    /// Makes a live actor of a registered class a sub-object of `owner` (an actor of another
    /// registered class): a weapon of a character, a component, an inventory. It keeps its own
    /// class, store and NetGUID (an object reference may name it) and replicates as a content
    /// block of its own to exactly the connections its owner is relevant to — with
    /// [`SubObjectCondition::OwnerOnly`], only to the connection owning the owner — with the
    /// owner's net settings (priority, update frequency; relevancy handed to the owner; its own
    /// dormancy dropped), ownership and physics (roles and property conditions follow [`Self::set_owner`]
    /// and [`Self::set_physics`] of the owner; asked of the sub-object, these and
    /// [`Self::set_net_settings`], [`Self::set_owner_actor`] and [`Self::tear_off`] are refused
    /// with [`DriverError::FollowsOwner`]). Its open names the owner: a client creates it on
    /// first sight, linked to the owner, and destroys it with the owner. Despawning it removes it
    /// from the owner (clients get a close); despawning the owner ends it (clients destroyed it
    /// with the owner; the driver stops replicating it). Needs the actor level; call before the
    /// sub-object's first tick. A torn-off (or tearing) owner is refused
    /// ([`DriverError::TornOffOwner`]).
    pub fn register_sub_object(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        owner: NetGuid,
        condition: SubObjectCondition,
    ) -> Result<NetGuid, DriverError> {
        self.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        let ci = self.class_for(class, store)?;
        if !store.contains(id) {
            return Err(DriverError::StaleActor(id));
        }
        let &(oc, os) = self.guids.get(&owner).ok_or(DriverError::UnknownOwner(owner))?;
        // Everything is checked before the actor gets a GUID: a refused call changes nothing.
        if let Some(guid) = self.guid_of(class, id) {
            // Already known to clients as an actor of its own (or as a static actor, or as
            // another owner's sub-object): they would never link it.
            let opened = self.classes[ci].actors[id.index as usize].adopted != self.frame;
            if guid == owner {
                return Err(DriverError::SubObjectChain(owner));
            }
            if guid.is_static() || opened || self.subs.outer.contains_key(&guid) {
                return Err(DriverError::AlreadyReplicated(id));
            }
            // A sub-object owns no sub-objects, nor fast arrays: a client accepts a fast array's
            // open only under an actor, and stepped over every open of this one for good.
            if self.subs.inner.contains_key(&guid) || !self.fast_arrays_of(guid).is_empty() {
                return Err(DriverError::SubObjectChain(guid));
            }
        }
        if self.subs.outer.contains_key(&owner) || !owner.is_dynamic() {
            return Err(DriverError::SubObjectChain(owner));
        }
        if self.classes[oc as usize].actors[os as usize].torn() {
            return Err(DriverError::TornOffOwner(owner));
        }
        let guid = self.assign_guid(class, store, id)?;
        self.subs.outer.insert(guid, owner);
        self.subs.inner.entry(owner).or_default().push(guid);
        let (owner_net, owner_settings, owner_clock, owner_sublevel) = {
            let o = &self.classes[oc as usize];
            let os = os as usize;
            (o.actors[os], o.cols.settings[os], o.cols.clock[os], o.cols.sublevel[os])
        };
        let slot = id.index as usize;
        let c = &mut self.classes[ci];
        c.cols.settings[slot] = owner_settings.for_sub_object();
        c.cols.overridden[slot] = true;
        // It sleeps and wakes with its owner: a dormancy set on it before is dropped.
        c.cols.dormancy[slot] = Default::default();
        c.cols.sub_condition[slot] = Some(condition);
        c.cols.owner_actor[slot] = Some(owner);
        c.cols.sublevel[slot] = owner_sublevel;
        // Due with its owner from the start (then on its owner's frames: `clock_key`), as UE
        // replicates a new sub-object in its owner's next update.
        c.cols.clock[slot] = owner_clock;
        c.cols.due_at[slot] = owner_clock.due_at();
        let a = &mut c.actors[slot];
        a.owner = owner_net.owner;
        a.autonomous = owner_net.autonomous;
        a.physics = owner_net.physics;
        Ok(guid)
    }

    /// The owner of sub-object `guid`.
    pub fn owner_of(&self, guid: NetGuid) -> Option<NetGuid> {
        self.subs.outer.get(&guid).copied()
    }

    /// The (class, slot) that carries the actor in `slot` of class `ci`: a sub-object goes with
    /// its owner, every other actor with itself.
    pub(super) fn carrier(&self, ci: usize, slot: usize) -> (usize, usize) {
        match self.owner_of(self.classes[ci].actors[slot].guid).and_then(|o| self.guids.get(&o)) {
            Some(&(oc, os)) => (oc as usize, os as usize),
            None => (ci, slot),
        }
    }

    /// Refuses a call that would set on a sub-object what it takes from its owner.
    pub(super) fn not_a_sub_object(&self, class: ClassId, id: ActorId) -> Result<(), DriverError> {
        match self.guid_of(class, id).and_then(|sub| Some((sub, self.owner_of(sub)?))) {
            Some((sub, owner)) => Err(DriverError::FollowsOwner { sub, owner }),
            None => Ok(()),
        }
    }

    /// Actor `owner`'s sub-objects, in registration order.
    pub fn sub_objects(&self, owner: NetGuid) -> &[NetGuid] {
        self.subs.inner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// Actor `owner`'s live sub-objects as (class, slot, GUID), in registration order (a list
    /// of its own: the caller changes the driver as it walks them).
    pub(super) fn sub_slots(&self, owner: NetGuid) -> Vec<(u32, u32, NetGuid)> {
        self.sub_objects(owner).iter().filter_map(|&g| self.guids.get(&g).map(|&(c, s)| (c, s, g))).collect()
    }

    /// An actor is gone: as a sub-object it leaves its owner's list; as an owner its sub-objects
    /// stop replicating (each client destroyed them with the owner) and their rows go — but an
    /// owner gone while its tear-off waits may be torn off on a client already (no Destroyed
    /// close goes there: the client owns its copy), so a tearing sub-object's channel still
    /// open closes with reason TornOff there — only there: where the owner's channel is still
    /// open, its Destroyed close follows and takes the sub-object with it (a TornOff of the
    /// sub-object first would tell the game it was torn off). The reference closes alike.
    pub(super) fn forget_sub_objects(&mut self, guid: NetGuid) {
        let owner = self.guids.get(&guid).copied();
        if let Some(owner) = self.subs.outer.remove(&guid) {
            if let Some(list) = self.subs.inner.get_mut(&owner) {
                list.retain(|&g| g != guid);
            }
            if let Some(&(c, s)) = self.guids.get(&guid) {
                self.classes[c as usize].cols.sub_condition[s as usize] = None;
            }
        }
        for sub in self.subs.inner.remove(&guid).unwrap_or_default() {
            self.subs.outer.remove(&sub);
            let Some(&(c, s)) = self.guids.get(&sub) else { continue };
            let class = &mut self.classes[c as usize];
            class.cols.sub_condition[s as usize] = None;
            let tearing = class.actors[s as usize].tearing;
            self.subs.orphaned.push(Orphaned { guid: sub, tearing, frame: self.frame });
            class.actors[s as usize].torn_off = true;
            class.actors[s as usize].orphaned = true;
            class.cols.set_awake_lane(s as usize, false);
            // The slot's rows are its previous occupant's while that one's retirement waits for
            // the connections' frames (a sub-object spawned into its slot and orphaned before
            // any frame met it): they go there, with its close (dropped here, the close was lost
            // and the clients kept a copy of an actor gone — seed 2226 of the reference's
            // random worlds).
            let key = super::pairs::pair_key(c, s);
            if self.level.as_ref().is_some_and(|l| l.retired.iter().any(|&(k, _)| k == key)) {
                continue;
            }
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                let ps = conn.drop_pair(c, s);
                use super::connection::pair::{EVER_OPENED, TORN};
                let owner_open = owner
                    .and_then(|(oc, os)| conn.pair_ref(oc, os))
                    .is_some_and(|o| o.flags & EVER_OPENED != 0 && o.flags & TORN == 0);
                if tearing && ps.flags & EVER_OPENED != 0 && !owner_open {
                    conn.closes.push(PendingClose { guid: sub, reason: CloseReason::TornOff });
                }
            }
        }
    }

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
    ///     /// ```
    pub fn tear_off(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let guid = self.known_guid(class, store, id)?;
        // A sub-object is torn off with its owner (UE tears off actors).
        self.not_a_sub_object(class, id)?;
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
    pub(super) fn note_tear_deferrals(&mut self, replicated: &[(u32, u32, u32, bool)]) {
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
    pub(super) fn finish_tear_offs(&mut self) {
        self.finish_tear_offs_as_of(self.frame, None);
    }

    /// The slot's actor, if live, died unseen between ticks (the game despawned it and spawned
    /// another there, whose GUID is asked for now): it is closed first — as the next tick's
    /// gather would find it gone, after that tick's start ended its tear-off if it was due to
    /// end (otherwise a reused slot made a tear-off that had ended close Destroyed: seed 44 of
    /// the reference's random worlds). Its sub-objects' own tear-offs are left to the tick, as
    /// there (orphaned by then).
    pub(super) fn retire_unseen(&mut self, class: u32, slot: u32) {
        let Some(&a) = self.classes[class as usize].actors.get(slot as usize) else { return };
        if !a.alive {
            return;
        }
        if a.tearing {
            self.finish_tear_offs_as_of(Frame(self.frame.0 + 1), Some(a.guid));
        }
        self.retire_actor(class, slot);
    }

    /// [`Self::finish_tear_offs`] at the start of `frame`; with `only`, for that actor alone.
    fn finish_tear_offs_as_of(&mut self, frame: Frame, only: Option<NetGuid>) {
        if self.tearing.is_empty() {
            return;
        }
        // (tearing, owes, finishes), decided first for all: an owner waits for its sub-objects.
        let mut decided = Vec::with_capacity(self.tearing.len());
        for t in std::mem::take(&mut self.tearing) {
            let class = &self.classes[t.class as usize];
            let Some(a) = class.actors.get(t.slot as usize) else { continue };
            // Gone (destroyed as usual), or an orphaned sub-object (its clients destroyed it).
            if !a.alive || a.guid != t.guid || a.torn_off {
                continue;
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
            let owed = |ci: usize, c: &super::connection::Connection| match self.level {
                None => c.pair_ref(t.class, t.slot).is_some_and(|ps| !ps.resend.is_empty()),
                Some(_) => {
                    t.deferred.contains(&(ci as u32))
                        && self.serves(t.class, t.slot, ci)
                        && c.pairs
                            .channel(t.class, t.slot)
                            .is_some_and(|row| row.state.flags & super::connection::pair::CHANNEL != 0)
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
        if !c.cols.sub_condition[s].is_none_or(|cond| cond.allows(owned, a.autonomous, replay, groups)) {
            return false;
        }
        if !c.cols.settings[s].only_relevant_to_owner || owned {
            return true;
        }
        let owner_of = |g: NetGuid| {
            self.guids.get(&g).and_then(|&(oc, os)| self.classes[oc as usize].cols.owner_actor[os as usize])
        };
        super::relevancy::chain_viewed(a.guid, c.cols.owner_actor[s], &self.conns[ci].viewers, &owner_of)
    }

    /// Marks the actor in `slot` torn off and closes its channels with reason TornOff.
    fn tear_off_slot(&mut self, ci: usize, slot: u32, guid: NetGuid) {
        let a = &mut self.classes[ci].actors[slot as usize];
        a.torn_off = true;
        self.classes[ci].cols.set_awake_lane(slot as usize, false);
        let key = super::pairs::pair_key(ci as u32, slot);
        for conn in self.conns.iter_mut().filter(|c| !c.removed) {
            // A row held for its sub-objects ([`super::connection::pair::TORN`]) goes now.
            if let Ok(i) = conn.held_torn.binary_search(&key) {
                conn.held_torn.remove(i);
            }
            let ps = conn.drop_pair(ci as u32, slot);
            if ps.flags & super::connection::pair::EVER_OPENED != 0 {
                conn.closes.push(PendingClose { guid, reason: CloseReason::TornOff });
            }
            if let Pairs::Dense(_) = conn.pairs {
                // A dense pair left in the pending list is skipped when planned (torn off).
                conn.pending.retain(|&(c, s)| (c, s) != (ci as u32, slot));
            }
        }
    }
}
