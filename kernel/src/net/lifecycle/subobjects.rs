//! Sub-objects: objects of their own class linked to an owner actor, their conditions and net
//! groups, and what becomes of them when the owner goes.

use crate::ids::Frame;
use crate::net::connection::PendingClose;
use crate::net::{ClassId, DriverError, NetDriver, NetGuid};
use crate::store::{ActorId, ClassStore};
use crate::wire::open::CloseReason;

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
    /// UE's `COND_InitialOnly`: with its owner's initial bunch only — every connection that opens
    /// the owner's channel gets the sub-object once, as it is then, and nothing of it after (no
    /// update, no close for relevancy); one registered after the owner's open went to a
    /// connection never reaches it there, until the owner's channel there opens anew (its
    /// relevancy lapsed and came back, its sublevel streamed out and in). Here the owner's
    /// initial bunch lasts until the client acknowledged the owner's open (UE's, the one bunch
    /// that sends it). Not for fast arrays ([`DriverError::InitialOnlyFastArray`]).
    InitialOnly,
    /// UE's `COND_InitialOrOwner`: every update to the owner's connection; elsewhere with the
    /// owner's initial bunch only, as [`Self::InitialOnly`] (a connection that comes to own the
    /// owner gets it from then on, one that stops owning it keeps its copy and gets nothing
    /// more). Not for fast arrays ([`DriverError::InitialOnlyFastArray`]).
    InitialOrOwner,
    /// UE's `COND_SimulatedOrPhysics`: where the owner is a simulated proxy, or anywhere while
    /// the owner replicates physics ([`NetDriver::set_physics`]).
    SimulatedOrPhysics,
    /// UE's `COND_SimulatedOnlyNoReplay`: [`Self::SimulatedOnly`], but no replay connection.
    SimulatedOnlyNoReplay,
    /// UE's `COND_SimulatedOrPhysicsNoReplay`: [`Self::SimulatedOrPhysics`], but no replay
    /// connection.
    SimulatedOrPhysicsNoReplay,
}

/// What a sub-object's condition reads of one connection: UE's `FReplicationFlags` of the
/// owner actor's channel there, and the connection's net groups.
///
/// ```
/// use shadowrep::net::{NetGroups, ReplicationFlags, SubObjectCondition};
///
/// // A non-owning connection: the owner is a simulated proxy there.
/// let other = ReplicationFlags { owner: false, autonomous: true, physics: false, replay: false, groups: NetGroups::EMPTY };
/// assert!(SubObjectCondition::SimulatedOrPhysics.allows(other));
/// // The owner's connection, holding an autonomous proxy: only while the owner replicates physics.
/// let owner = ReplicationFlags { owner: true, ..other };
/// assert!(!SubObjectCondition::SimulatedOrPhysics.allows(owner));
/// assert!(SubObjectCondition::SimulatedOrPhysics.allows(ReplicationFlags { physics: true, ..owner }));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicationFlags {
    /// The connection owns the owner actor (UE's `bNetOwner`).
    pub owner: bool,
    /// The owner actor is set autonomous ([`NetDriver::set_autonomous_proxy`]): its owning
    /// connection holds an autonomous proxy, every other a simulated one (UE's `bNetSimulated`
    /// is `!(owner && autonomous)`).
    pub autonomous: bool,
    /// The owner actor replicates physics (UE's `bRepPhysics`, [`NetDriver::set_physics`]).
    pub physics: bool,
    /// A replay connection (UE's `bReplay`).
    pub replay: bool,
    /// The game's groups the connection is in ([`NetDriver::set_connection_net_groups`]).
    pub groups: NetGroups,
}

impl ReplicationFlags {
    /// An actor's flags on connection `ci` (a sub-object's are its owner's: the driver copies
    /// ownership, autonomy and physics to its sub-objects).
    pub(crate) fn of(actor: &crate::net::actors::ActorNet, ci: u32, replay: bool, groups: NetGroups) -> Self {
        ReplicationFlags {
            owner: actor.owner == Some(ci),
            autonomous: actor.autonomous,
            physics: actor.physics,
            replay,
            groups,
        }
    }

    /// UE's `bNetSimulated`: the owner is a simulated proxy on this connection.
    fn simulated(self) -> bool {
        !(self.owner && self.autonomous)
    }
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
    /// Whether a connection with replication flags `f` gets the sub-object (UE's condition map
    /// built from them). The initial-only conditions allow every connection: the owner's channel
    /// there decides when ([`Self::initial_window`]).
    pub fn allows(self, f: ReplicationFlags) -> bool {
        match self {
            SubObjectCondition::None => true,
            SubObjectCondition::OwnerOnly => f.owner,
            SubObjectCondition::SkipOwner => !f.owner,
            SubObjectCondition::SimulatedOnly => f.simulated(),
            SubObjectCondition::AutonomousOnly => !f.simulated(),
            SubObjectCondition::ReplayOrOwner => f.replay || f.owner,
            SubObjectCondition::ReplayOnly => f.replay,
            SubObjectCondition::SkipReplay => !f.replay,
            SubObjectCondition::Never => false,
            SubObjectCondition::InitialOnly | SubObjectCondition::InitialOrOwner => true,
            SubObjectCondition::SimulatedOrPhysics => f.simulated() || f.physics,
            SubObjectCondition::SimulatedOnlyNoReplay => f.simulated() && !f.replay,
            SubObjectCondition::SimulatedOrPhysicsNoReplay => (f.simulated() || f.physics) && !f.replay,
            SubObjectCondition::NetGroup(of) => {
                let special = |yes: bool, g: NetGroups| if yes { g } else { NetGroups::EMPTY };
                of.intersects(
                    f.groups.game_groups() | special(f.owner, NetGroups::OWNER) | special(f.replay, NetGroups::REPLAY),
                )
            }
        }
    }

    /// Whether the sub-object goes to a connection only with its owner's initial bunch there
    /// (`owner`: the connection owns the owner actor): [`Self::InitialOnly`] everywhere,
    /// [`Self::InitialOrOwner`] where the connection does not own it.
    pub fn initial_window(self, owner: bool) -> bool {
        match self {
            SubObjectCondition::InitialOnly => true,
            SubObjectCondition::InitialOrOwner => !owner,
            _ => false,
        }
    }

    /// [`Self::initial_window`] for some connection: the condition is one of the two.
    pub fn initial(self) -> bool {
        matches!(self, SubObjectCondition::InitialOnly | SubObjectCondition::InitialOrOwner)
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

impl NetDriver {
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
        self.touch(ci as u32, id.index);
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
        let old_link = c.cols.owner_actor[slot].replace(owner);
        c.cols.sublevel[slot] = owner_sublevel;
        // Due with its owner from the start (then on its owner's frames: `clock_key`), as UE
        // replicates a new sub-object in its owner's next update.
        c.cols.clock[slot] = owner_clock;
        c.cols.due_at[slot] = owner_clock.due_at();
        let a = &mut c.actors[slot];
        a.owner = owner_net.owner;
        a.autonomous = owner_net.autonomous;
        a.physics = owner_net.physics;
        a.not_replicated = owner_net.not_replicated;
        // With owner chains: its owner's connection is its own now, and the actors that name it
        // their owner actor walk through its owner.
        self.unchain_sub_object(guid, old_link);
        self.derive_owners_from(guid, false);
        Ok(guid)
    }

    /// The owner of sub-object `guid`.
    pub fn owner_of(&self, guid: NetGuid) -> Option<NetGuid> {
        self.subs.outer.get(&guid).copied()
    }

    /// The (class, slot) that carries the actor in `slot` of class `ci`: a sub-object goes with
    /// its owner, every other actor with itself.
    pub(in crate::net) fn carrier(&self, ci: usize, slot: usize) -> (usize, usize) {
        match self.owner_of(self.classes[ci].actors[slot].guid).and_then(|o| self.guids.get(&o)) {
            Some(&(oc, os)) => (oc as usize, os as usize),
            None => (ci, slot),
        }
    }

    /// Refuses a call that would set on a sub-object what it takes from its owner (or on an
    /// orphaned one anything at all).
    pub(in crate::net) fn not_a_sub_object(&self, class: ClassId, id: ActorId) -> Result<(), DriverError> {
        self.not_orphaned(class, id)?;
        match self.guid_of(class, id).and_then(|sub| Some((sub, self.owner_of(sub)?))) {
            Some((sub, owner)) => Err(DriverError::FollowsOwner { sub, owner }),
            None => Ok(()),
        }
    }

    /// Refuses a call on a sub-object whose owner was despawned ([`DriverError::Orphaned`]).
    pub(in crate::net) fn not_orphaned(&self, class: ClassId, id: ActorId) -> Result<(), DriverError> {
        let slot = self.classes.get(class.0 as usize).and_then(|c| c.actors.get(id.index as usize));
        match self.guid_of(class, id).filter(|_| slot.is_some_and(|a| a.orphaned)) {
            Some(sub) => Err(DriverError::Orphaned(sub)),
            None => Ok(()),
        }
    }

    /// Actor `owner`'s sub-objects, in registration order.
    pub fn sub_objects(&self, owner: NetGuid) -> &[NetGuid] {
        self.subs.inner.get(&owner).map_or(&[], |v| &v[..])
    }

    /// Actor `owner`'s live sub-objects as (class, slot, GUID), in registration order (a list
    /// of its own: the caller changes the driver as it walks them).
    pub(in crate::net) fn sub_slots(&self, owner: NetGuid) -> Vec<(u32, u32, NetGuid)> {
        self.sub_objects(owner).iter().filter_map(|&g| self.guids.get(&g).map(|&(c, s)| (c, s, g))).collect()
    }

    /// An actor is gone: as a sub-object it leaves its owner's list; as an owner its sub-objects
    /// stop replicating (each client destroyed them with the owner) and their rows go — but an
    /// owner gone while its tear-off waits may be torn off on a client already (no Destroyed
    /// close goes there: the client owns its copy), so a tearing sub-object's channel still
    /// open closes with reason TornOff there — only there: where the owner's channel is still
    /// open, its Destroyed close follows and takes the sub-object with it (a TornOff of the
    /// sub-object first would tell the game it was torn off). The reference closes alike.
    pub(in crate::net) fn forget_sub_objects(&mut self, guid: NetGuid) {
        let owner = self.guids.get(&guid).copied();
        if let Some(owner) = self.subs.outer.remove(&guid) {
            if let Some(list) = self.subs.inner.get_mut(&owner) {
                list.retain(|&g| g != guid);
            }
            if let Some(&(c, s)) = self.guids.get(&guid) {
                self.classes[c as usize].cols.sub_condition[s as usize] = None;
                self.touch(c, s);
            }
        }
        for sub in self.subs.inner.remove(&guid).unwrap_or_default() {
            self.subs.outer.remove(&sub);
            let Some(&(c, s)) = self.guids.get(&sub) else { continue };
            self.touch(c, s);
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
            let key = crate::net::pairs::pair_key(c, s);
            if self.level.as_ref().is_some_and(|l| l.retired.iter().any(|&(k, _)| k == key)) {
                continue;
            }
            for conn in self.conns.iter_mut().filter(|c| !c.removed) {
                let ps = conn.drop_pair(c, s);
                use crate::net::connection::pair::{DORMANT, EVER_OPENED, TORN};
                if ps.flags & (EVER_OPENED | DORMANT) != 0 {
                    conn.since_tick.orphan_copies.push(sub);
                }
                let owner_open = owner
                    .and_then(|(oc, os)| conn.pair_ref(oc, os))
                    .is_some_and(|o| o.flags & EVER_OPENED != 0 && o.flags & TORN == 0);
                if tearing && ps.flags & EVER_OPENED != 0 && !owner_open {
                    conn.closes.end(PendingClose { guid: sub, reason: CloseReason::TornOff }, &ps);
                } else {
                    // No close of its own (the owner's takes it), but its channel ends: a call
                    // made on it this tick while it was open still goes, after the owner's close
                    // (the client delivers it with the class it remembers) — UE sends it down the
                    // owner's channel before the close. It never went (the RPC ownership review).
                    conn.closes.note(sub, &ps);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{NetGroups, ReplicationFlags, SubObjectCondition as S};
    use crate::net::condition::{condition_active, flags};
    use crate::schema::Condition as P;

    /// A sub-object's condition is UE's condition map, as a property's is: every condition that
    /// has a property twin answers as the twin for every combination of flags — the initial-only
    /// ones by their window (a bunch of the owner's open, or not).
    #[test]
    fn every_sub_object_condition_is_ues_condition_map() {
        let twins = [
            (S::None, P::None),
            (S::OwnerOnly, P::OwnerOnly),
            (S::SkipOwner, P::SkipOwner),
            (S::SimulatedOnly, P::SimulatedOnly),
            (S::AutonomousOnly, P::AutonomousOnly),
            (S::ReplayOrOwner, P::ReplayOrOwner),
            (S::ReplayOnly, P::ReplayOnly),
            (S::SkipReplay, P::SkipReplay),
            (S::Never, P::Never),
            (S::InitialOnly, P::InitialOnly),
            (S::InitialOrOwner, P::InitialOrOwner),
            (S::SimulatedOrPhysics, P::SimulatedOrPhysics),
            (S::SimulatedOnlyNoReplay, P::SimulatedOnlyNoReplay),
            (S::SimulatedOrPhysicsNoReplay, P::SimulatedOrPhysicsNoReplay),
        ];
        for bits in 0..32u8 {
            let bit = |n: u8| bits >> n & 1 != 0;
            let (owner, autonomous, physics, replay, initial) = (bit(0), bit(1), bit(2), bit(3), bit(4));
            let f = ReplicationFlags { owner, autonomous, physics, replay, groups: NetGroups::EMPTY };
            let mut pf = 0;
            for (on, flag) in [
                (initial, flags::INITIAL),
                (owner, flags::OWNER),
                (!(owner && autonomous), flags::SIMULATED),
                (replay, flags::REPLAY),
                (physics, flags::PHYSICS),
            ] {
                pf |= if on { flag } else { 0 };
            }
            for (sub, prop) in twins {
                let sent = sub.allows(f) && (initial || !sub.initial_window(owner));
                assert_eq!(sent, condition_active(prop, pf), "{sub:?} with {f:?}, initial {initial}");
                assert_eq!(sub.initial(), sub.initial_window(false), "{sub:?}");
            }
        }
    }
}
