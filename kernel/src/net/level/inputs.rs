//! The actor level's inputs and what it shows: per-class and per-actor net settings, where an
//! actor is and who owns it, `force_net_update`, `set_replicates`, each connection's viewers,
//! net speed and "heard from", and the last frame's decisions, channels and budgets — the calls
//! a game makes between ticks (the frame itself is in [`super`]; the sublevels' calls in
//! [`crate::net::sublevels`]).

use super::{ChannelInfo, Level};
use crate::net::actors::ClassNet;
use crate::net::channels::FrameDecisions;
use crate::net::connection::Connection;
use crate::net::pairs::Pairs;
use crate::net::priority::PriorityHook;
use crate::net::relevancy::{RelevancyHook, Viewer};
use crate::net::settings::{NetSettings, SpawnLeaves};
use crate::net::{ClassId, ConnectionId, DriverError, NetDriver, NetGuid};
use crate::schema::LeafKind;
use crate::store::{ActorId, ClassStore};

impl NetDriver {
    pub(in crate::net) fn level(&self) -> Result<&Level, DriverError> {
        self.level.as_ref().ok_or(DriverError::ActorLevelOff)
    }

    fn level_class(&mut self, class: ClassId) -> Result<&mut ClassNet, DriverError> {
        self.classes.get_mut(class.0 as usize).ok_or(DriverError::UnknownClass(class))
    }

    /// Sets a class's default net settings; actors without their own settings take them.
    /// Settings [`NetSettings::validate`] refuses are refused ([`DriverError::BadNetSetting`]).
    pub fn set_class_settings(&mut self, class: ClassId, settings: NetSettings) -> Result<(), DriverError> {
        settings.validate()?;
        self.level()?;
        let c = self.level_class(class)?;
        c.cols.defaults = settings;
        for (s, &own) in c.cols.settings.iter_mut().zip(&c.cols.overridden) {
            if !own {
                *s = settings;
            }
        }
        // The sub-objects of the class's actors that take its defaults take them too.
        let takes_defaults = |g: &NetGuid| {
            self.guids
                .get(g)
                .is_some_and(|&(oc, os)| oc == class.0 && !self.classes[oc as usize].cols.overridden[os as usize])
        };
        let owners: Vec<NetGuid> = self.subs.inner.keys().filter(|g| takes_defaults(g)).copied().collect();
        for owner in owners {
            self.pass_settings_to_sub_objects(owner, settings);
        }
        Ok(())
    }

    /// Names the parent property that holds a class's replicated location (a vector, UE's
    /// `ReplicatedMovement.Location`): relevancy and priority read it from the store, so the
    /// game never sets positions of that class by hand.
    pub fn set_location_property(&mut self, class: ClassId, parent: usize) -> Result<(), DriverError> {
        let c = self.level_class(class)?;
        if parent >= c.layout.parents.len() {
            return Err(DriverError::NoSuchParent(parent));
        }
        let leaf = c.layout.leaves.iter().position(|l| l.parent == parent && matches!(l.kind, LeafKind::Vector(_)));
        match leaf {
            Some(leaf) if c.layout.leaves[leaf].array.is_none() => {
                c.cols.location_leaf = Some(leaf);
                Ok(())
            }
            _ => Err(DriverError::NotALocation { class: c.layout.name.clone(), parent }),
        }
    }

    /// Names the properties a class's spawn info reads besides its location (UE's spawn info:
    /// the root component's rotation, scale and velocity), by parent index: `rotation` a
    /// rotator, `scale` and `velocity` vectors; `None` leaves the default (unrotated, unit scale,
    /// at rest). A dynamic actor's open carries them, and the client creates the actor from them
    /// ([`crate::client::ClientWorld::spawn_info`]).
    pub fn set_spawn_properties(
        &mut self,
        class: ClassId,
        rotation: Option<usize>,
        scale: Option<usize>,
        velocity: Option<usize>,
    ) -> Result<(), DriverError> {
        let c = self.level_class(class)?;
        let find = |parent: Option<usize>, rotator: bool| -> Result<Option<usize>, DriverError> {
            let Some(parent) = parent else { return Ok(None) };
            if parent >= c.layout.parents.len() {
                return Err(DriverError::NoSuchParent(parent));
            }
            let fits = |k: LeafKind| if rotator { k == LeafKind::Rotator } else { matches!(k, LeafKind::Vector(_)) };
            let leaf = c.layout.leaves.iter().position(|l| l.parent == parent && l.array.is_none() && fits(l.kind));
            let what = if rotator { "rotator" } else { "vector" };
            leaf.map(Some).ok_or_else(|| DriverError::NotASpawnProperty { class: c.layout.name.clone(), parent, what })
        };
        let leaves = SpawnLeaves {
            rotation: find(rotation, true)?,
            scale: find(scale, false)?,
            velocity: find(velocity, false)?,
        };
        self.classes[class.0 as usize].cols.spawn_leaves = leaves;
        Ok(())
    }

    /// Gives a class its own relevancy rule (UE's `IsNetRelevantFor` override). Its actors are
    /// asked the hook wherever their relevancy is decided (and owner relevancy asks an owner's);
    /// those asleep go back to the consider list, as a hooked actor does not sleep.
    pub fn set_relevancy_hook(&mut self, class: ClassId, hook: Option<RelevancyHook>) -> Result<(), DriverError> {
        let now = self.server_time();
        self.level()?;
        let cols = &mut self.level_class(class)?.cols;
        // Only plain actors sleep (a viewer's distance wakes them); the hook must answer for
        // those already asleep: back to the consider list, their dormant rows left as they are.
        let mut roused = Vec::new();
        if hook.is_some() {
            roused.extend((0..cols.asleep.len()).filter(|&s| cols.asleep[s]));
            for &s in &roused {
                cols.set_asleep(s, false);
                cols.force_net_update(s, now);
            }
        }
        cols.hook = hook;
        for s in roused {
            // Its sub-objects are due with it, as a wake's and a forced update's are (one
            // registered since it fell asleep took its clock from before this).
            let guid = self.classes[class.0 as usize].actors[s].guid;
            for (sc, ss, _) in self.sub_slots(guid) {
                self.classes[sc as usize].cols.force_net_update(ss as usize, now);
                self.log_dormancy(sc as usize, ss as usize, now, crate::net::dormancy::DormancyCall::Rouse);
            }
            self.log_dormancy(class.0 as usize, s, now, crate::net::dormancy::DormancyCall::Rouse);
        }
        Ok(())
    }

    /// Gives a class its own priority (UE's `GetNetPriority` override, [`PriorityHook`]), or
    /// takes it back with `None`. Its actors, and those whose owner-relevancy chain reaches one
    /// of them first, are ranked by the hook from the next frame on; the kernel's send order
    /// and the UE-style reference's stay the same.
    ///
    /// ```
    /// use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, PriorityInput, Viewer};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Loot").property(PropertyDecl::new("Count", PropType::U32)).build().unwrap());
    /// let mut store = ClassStore::new(layout);
    /// let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    /// let mut driver = NetDriver::new(cfg).unwrap();
    /// let loot = driver.register_class(&mut store).unwrap();
    /// // Loot goes out at twice UE's priority.
    /// let hook = Arc::new(|input: &PriorityInput, t: f32, viewer: &Viewer| 2.0 * input.priority(t, viewer));
    /// driver.set_priority_hook(loot, Some(hook)).unwrap();
    /// ```
    pub fn set_priority_hook(&mut self, class: ClassId, hook: Option<PriorityHook>) -> Result<(), DriverError> {
        self.level()?;
        self.level_class(class)?.cols.priority_hook = hook;
        Ok(())
    }

    /// The actor's (class, slot) in the actor level's columns (a GUID given if it had none yet).
    pub(in crate::net) fn cols_slot(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
    ) -> Result<(usize, usize), DriverError> {
        self.level()?;
        self.assign_guid(class, store, id)?;
        Ok((class.0 as usize, id.index as usize))
    }

    /// Gives one actor its own net settings. Its sub-objects take them, their relevancy handed
    /// to it, as when they were registered (UE replicates them inside its update); a
    /// sub-object's own are refused ([`DriverError::FollowsOwner`]), and so are settings
    /// [`NetSettings::validate`] refuses ([`DriverError::BadNetSetting`]).
    pub fn set_net_settings(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        settings: NetSettings,
    ) -> Result<(), DriverError> {
        settings.validate()?;
        self.not_a_sub_object(class, id)?;
        let (c, s) = self.cols_slot(class, store, id)?;
        let cols = &mut self.classes[c].cols;
        cols.settings[s] = settings;
        cols.overridden[s] = true;
        self.pass_settings_to_sub_objects(self.classes[c].actors[s].guid, settings);
        Ok(())
    }

    /// `owner`'s sub-objects take its settings (see [`NetSettings::for_sub_object`]).
    fn pass_settings_to_sub_objects(&mut self, owner: NetGuid, settings: NetSettings) {
        for (sc, ss, _) in self.sub_slots(owner) {
            self.classes[sc as usize].cols.settings[ss as usize] = settings.for_sub_object();
        }
    }

    /// An actor's net settings (its own, or its class's).
    pub fn net_settings(&self, class: ClassId, id: ActorId) -> Option<NetSettings> {
        self.guid_of(class, id)?;
        self.classes[class.0 as usize].cols.settings.get(id.index as usize).copied()
    }

    /// Sets where an actor of a class without a location property is.
    pub fn set_position(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        at: [f32; 3],
    ) -> Result<(), DriverError> {
        let (c, s) = self.cols_slot(class, store, id)?;
        self.classes[c].cols.position[s] = at;
        Ok(())
    }

    /// Sets an actor's owner actor (UE's `Owner`: owner relevancy and "owned by the viewer"
    /// follow the chain, and with [`super::ActorLevelConfig::owner_chain_connections`] the owning
    /// connection) and instigator. A sub-object's owner actor is the one it was registered
    /// with ([`DriverError::FollowsOwner`]).
    pub fn set_owner_actor(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        owner: Option<NetGuid>,
        instigator: Option<NetGuid>,
    ) -> Result<(), DriverError> {
        self.not_a_sub_object(class, id)?;
        let (c, s) = self.cols_slot(class, store, id)?;
        let was = std::mem::replace(&mut self.classes[c].cols.owner_actor[s], owner);
        self.classes[c].cols.instigator[s] = instigator;
        if let Some(chains) = self.chains.as_mut() {
            // Owner chains: the actor (and what is below it) may be owned by another connection.
            let guid = self.classes[c].actors[s].guid;
            chains.relink(guid, was, owner);
            self.derive_owners_from(guid, true);
        }
        Ok(())
    }

    /// UE's `ForceNetUpdate`: the actor is considered on the next frame — a dormant one's
    /// dormancy flushed first ([`NetDriver::flush_net_dormancy`]), as UE's does — and so are its
    /// sub-objects, which UE replicates inside their owner's update. Asked of a sub-object, it
    /// forces its owner (and so the owner's other sub-objects): a sub-object goes with its owner
    /// (an orphaned one, whose owner was despawned, with none: [`DriverError::Orphaned`]).
    pub fn force_net_update(&mut self, class: ClassId, store: &ClassStore, id: ActorId) -> Result<(), DriverError> {
        self.not_orphaned(class, id)?;
        let (c, s) = self.cols_slot(class, store, id)?;
        let (c, s) = self.carrier(c, s);
        self.force_slot(c, s);
        for (sc, ss, _) in self.sub_slots(self.classes[c].actors[s].guid) {
            self.force_slot(sc as usize, ss as usize);
        }
        Ok(())
    }

    /// UE's `SetReplicates`: whether an actor replicates. Switched off, it leaves the consider
    /// list (UE sets its `RemoteRole` to none, and the next frame's consider list drops it): it
    /// is not compared nor replicated, and its channels are left as they are — not updated, not
    /// closed for relevancy — so every client keeps its copy as it was, and a client without one
    /// gets none; destroyed, it closes them as any actor (the clients destroy their copies).
    /// Switched on, it is due on the next frame (UE adds it to the network object list as a new
    /// entry, due at once): a channel that stayed open sends what changed since its last send,
    /// and a client without one gets it opened with its current state; a dormant actor's
    /// dormancy is flushed (the new entry is dormant on no connection; a startup actor dormant
    /// from the start stays so, as UE's consider list skips it); and it is a simulated proxy
    /// everywhere (UE's `SetReplicates(true)` sets the remote role so: autonomy is given again
    /// with [`Self::set_autonomous_proxy`]). Its sub-objects and fast arrays go with it, as UE
    /// replicates them inside its update (asked of a sub-object: [`DriverError::FollowsOwner`]).
    /// A tear-off waits while it is off (nothing replicates its last update). An actor spawned
    /// and switched off before its first tick reaches no client until switched on. Needs the
    /// actor level ([`DriverError::ActorLevelOff`]).
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, Viewer};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Door").property(PropertyDecl::new("Open", PropType::Bool)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    /// let mut driver = NetDriver::new(cfg).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// driver.set_viewers(conn, &[Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] }]).unwrap();
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let door = store.spawn();
    /// let guid = driver.assign_guid(class, &store, door).unwrap();
    /// // A pooled actor: held back until the game uses it.
    /// driver.set_replicates(class, &store, door, false).unwrap();
    /// let mut frame = |driver: &mut NetDriver, store: &mut ClassStore, client: &mut ClientWorld| {
    ///     driver.tick(&mut [store]).unwrap();
    ///     for p in driver.take_packets(conn).unwrap() {
    ///         client.receive(&p).unwrap();
    ///     }
    ///     driver.receive_feedback(conn, &client.feedback()).unwrap();
    /// };
    /// frame(&mut driver, &mut store, &mut client);
    /// assert!(!client.has(guid));
    /// store.set(door, 0, &Value::Bool(true)).unwrap();
    /// driver.set_replicates(class, &store, door, true).unwrap();
    /// assert_eq!(driver.replicates(class, door), Some(true));
    /// frame(&mut driver, &mut store, &mut client);
    /// assert_eq!(client.value(guid, 0), Some(Value::Bool(true)));
    /// ```
    pub fn set_replicates(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        replicates: bool,
    ) -> Result<(), DriverError> {
        self.not_a_sub_object(class, id)?;
        let (c, s) = self.cols_slot(class, store, id)?;
        if self.classes[c].actors[s].not_replicated != replicates {
            return Ok(());
        }
        let guid = self.classes[c].actors[s].guid;
        let slots: Vec<(usize, usize)> = std::iter::once((c, s))
            .chain(self.sub_slots(guid).into_iter().map(|(sc, ss, _)| (sc as usize, ss as usize)))
            .collect();
        for &(c, s) in &slots {
            self.classes[c].actors[s].not_replicated = !replicates;
        }
        if replicates {
            // UE's `SetReplicates(true)` sets the remote role to a simulated proxy: autonomy
            // is the game's to give again (`set_autonomous_proxy`), as UE's `SetAutonomousProxy`.
            if self.classes[c].actors[s].autonomous {
                self.set_autonomous_proxy(class, store, id, false)?;
            }
            // And adds it to the network object list as a new entry: due at once, dormant on no
            // connection — its dormancy flushed (but a startup actor's Initial, which UE's
            // consider list skips), the sub-objects with it.
            let d = self.classes[c].cols.dormancy[s];
            if d.dormant() && d != crate::net::Dormancy::Initial {
                self.flush_slot(c, s);
            }
            for (c, s) in slots {
                self.force_clock(c, s);
            }
        }
        Ok(())
    }

    /// Whether a live actor replicates ([`Self::set_replicates`]; a sub-object: its owner's
    /// answer); `None` for an actor the driver has not met.
    pub fn replicates(&self, class: ClassId, id: ActorId) -> Option<bool> {
        self.guid_of(class, id)?;
        Some(!self.classes[class.0 as usize].actors.get(id.index as usize)?.not_replicated)
    }

    /// [`Self::force_net_update`] of the actor in `slot` of class `c`.
    pub(crate) fn force_slot(&mut self, c: usize, s: usize) {
        if self.level.is_some() && self.classes[c].cols.dormancy[s].dormant() {
            self.flush_slot(c, s);
        }
        self.force_clock(c, s);
    }

    /// The actor in `slot` of class `c` due on the next frame (its dormancy left as it is),
    /// logged for the reference as a `ForceNetUpdate`.
    fn force_clock(&mut self, c: usize, s: usize) {
        let now = self.server_time();
        self.classes[c].cols.force_net_update(s, now);
        if let Some(l) = self.level.as_mut() {
            l.forced.push((c as u32, s as u32, now));
        }
    }

    /// Sets a connection's viewers: its own first, then its split-screen children's (each
    /// counts for the connection). A connection without viewers sees nothing.
    pub fn set_viewers(&mut self, conn: ConnectionId, viewers: &[Viewer]) -> Result<(), DriverError> {
        self.level()?;
        let ci = self.live(conn)?;
        self.conns[ci].viewers = viewers.to_vec();
        Ok(())
    }

    /// Sets a connection's bandwidth in bytes per second (UE's `CurrentNetSpeed`). At least 1:
    /// a connection of 0 bytes a second would never drain what it was sent
    /// ([`DriverError::BadNetSetting`]).
    pub fn set_net_speed(&mut self, conn: ConnectionId, bytes_per_second: u32) -> Result<(), DriverError> {
        self.level()?;
        crate::net::budget::check_net_speed(bytes_per_second)?;
        let ci = self.live(conn)?;
        self.conns[ci].budget.net_speed = bytes_per_second;
        Ok(())
    }

    /// The transport heard from the client (any packet): it stays ready to be replicated to.
    /// Feedback counts by itself. Without the actor level (where every connection is always
    /// replicated to) it only checks the connection, so a transport may call it in either mode.
    pub fn heard_from(&mut self, conn: ConnectionId) -> Result<(), DriverError> {
        let ci = self.live(conn)?;
        self.conns[ci].heard = self.server_time();
        Ok(())
    }

    /// Seconds of server time (frame / tick rate with the actor level; 0 without).
    pub fn server_time(&self) -> f64 {
        self.level.as_ref().map_or(0.0, |l| l.time.now)
    }

    /// The last frame's decisions for `conn` (with
    /// [`ActorLevelConfig::record_decisions`](crate::net::ActorLevelConfig::record_decisions)): its relevant set and its send order.
    pub fn decisions(&self, conn: ConnectionId) -> Result<Option<&FrameDecisions>, DriverError> {
        self.level()?;
        Ok(self.conn(conn)?.decisions.as_deref())
    }

    /// Records (or stops recording) every connection's decisions from the next frame on
    /// ([`NetDriver::decisions`]).
    pub fn set_record_decisions(&mut self, on: bool) -> Result<(), DriverError> {
        self.level.as_mut().ok_or(DriverError::ActorLevelOff)?.cfg.record_decisions = on;
        Ok(())
    }

    /// A connection's channels: actor, whether the client acknowledged the open, and the times
    /// priority and relevancy read.
    pub fn channel_info(&self, conn: ConnectionId) -> Result<Vec<ChannelInfo>, DriverError> {
        self.level()?;
        let Pairs::Channels { rows, .. } = &self.conn(conn)?.pairs else { return Ok(Vec::new()) };
        Ok(rows
            .iter()
            // A torn-off owner's row held for its sub-objects is not a channel.
            .filter(|r| r.state.flags & crate::net::connection::pair::TORN == 0)
            .filter_map(|r| {
                let (class, slot) = crate::net::pairs::split_key(r.key);
                let a = self.classes.get(class as usize)?.actors.get(slot as usize)?;
                Some(ChannelInfo {
                    guid: a.guid,
                    class: ClassId(class),
                    open_acked: r.state.flags & crate::net::connection::pair::OPEN_ACKED != 0,
                    last_update: r.last_update,
                    relevant_time: r.relevant_time,
                })
            })
            .collect())
    }

    /// A connection's bandwidth: bytes per second, and bits queued beyond its allowance
    /// (negative: credit).
    pub fn connection_budget(&self, conn: ConnectionId) -> Result<(u32, f64), DriverError> {
        let c = self.conn(conn)?;
        Ok((c.budget.net_speed, c.budget.queued_bits))
    }

    /// Where the actor level last saw an actor (its location when it was last due, or what
    /// [`NetDriver::set_position`] set), its owner actor and its instigator.
    pub fn actor_place(&self, class: ClassId, id: ActorId) -> Option<([f32; 3], Option<NetGuid>, Option<NetGuid>)> {
        self.guid_of(class, id)?;
        let cols = &self.classes[class.0 as usize].cols;
        let s = id.index as usize;
        Some((*cols.position.get(s)?, cols.owner_actor[s], cols.instigator[s]))
    }

    /// Channels a connection holds (open, opening or recently relevant) and their bytes.
    pub fn channels(&self, conn: ConnectionId) -> Result<(usize, usize), DriverError> {
        let c = self.conn(conn)?;
        Ok((c.pairs.len(), c.pairs.bytes()))
    }

    /// A new connection's state under the actor level.
    pub(in crate::net) fn level_connection(&self, c: &mut Connection) {
        if let Some(l) = &self.level {
            c.pairs = Pairs::channels();
            c.budget.net_speed = l.cfg.net_speed;
            c.budget.packet_overhead = l.cfg.packet_overhead;
            c.heard = l.time.now;
        }
    }
}
