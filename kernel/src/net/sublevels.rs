//! Sublevels: the parts of a map a client streams in and out (UE's streaming levels), and UE's
//! rule that a connection is opened no channel to an actor whose level its client has not loaded.
//!
//! ```text
//! an actor lives in one sublevel (NetDriver::set_sublevel; the persistent level, 0, by default;
//!   a sub-object in its owner's)
//! a connection has the persistent level and the sublevels its client said it loaded
//!   (NetDriver::set_sublevel_loaded: UE's ServerUpdateLevelVisibility)
//! prioritize: an actor without a channel whose sublevel is not loaded here → skipped (no open),
//!   before any relevancy answer counts (UE's IsLevelInitializedForActor in PrioritizeActors)
//! a sublevel unloaded since the last tick → at the tick, every channel here of an actor in it
//!   (and every copy held dormant) closes with reason LevelUnloaded (the client unloaded them
//!   itself; a copy it still has goes); its sub-objects end with it
//! a sublevel loaded since the last tick (and loaded at the tick) → the closes of its static
//!   actors destroyed meanwhile go again (the client loaded them with the sublevel: UE sends a
//!   level's destruction infos when the client makes it visible)
//! ```
//!
//! The tick applies what changed since the last one — the UE-style reference, which runs the
//! same frame after the driver's tick, reads the same record (`ConnSublevels::changes_at`).

use super::channels::{drop_scratch_rows, end_sub_channels, retire_rows, LevelCtx};
use super::connection::{pair, Connection, PendingClose};
use super::pairs::{split_key, Pairs};
use super::{ClassId, ConnectionId, DriverError, NetDriver};
use crate::ids::{Frame, NetGuid};
use crate::store::{ActorId, ClassStore};
use crate::wire::open::CloseReason;

/// A sublevel of the map (UE: a streaming level). [`SublevelId::PERSISTENT`] is the map's own
/// level, which every client has loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SublevelId(pub u16);

impl SublevelId {
    /// The persistent level: loaded on every client, always.
    pub const PERSISTENT: SublevelId = SublevelId(0);
}

/// What a connection's client did with one sublevel since the last tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SublevelChange {
    pub sublevel: SublevelId,
    /// Unloaded at some point (its channels close, even if it was loaded again).
    pub unloaded: bool,
    /// Loaded at some point (its destroyed static actors' closes go again if it is loaded now).
    pub loaded: bool,
}

/// The sublevels a connection's client has loaded, and what changed since the last tick.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnSublevels {
    /// Bit `l % 64` of word `l / 64`: sublevel `l` is loaded (the persistent level is, always,
    /// whatever its bit says).
    loaded: Vec<u64>,
    /// The changes made since the tick before `for_frame`, for the tick of `for_frame`; one
    /// entry per sublevel, so at most one per sublevel there is, sorted by sublevel (a
    /// connection's rows each look their sublevel up at an unload: a client's set of a thousand
    /// sublevels must not cost a thousand compares a row).
    changes: Vec<SublevelChange>,
    for_frame: Frame,
}

impl ConnSublevels {
    /// Whether sublevel `l` is loaded.
    pub fn is_loaded(&self, l: SublevelId) -> bool {
        l == SublevelId::PERSISTENT || self.loaded.get(l.0 as usize / 64).is_some_and(|w| w >> (l.0 % 64) & 1 != 0)
    }

    /// Loads or unloads sublevel `l` (not the persistent level) as of the tick of frame `next`.
    /// False when it already was.
    pub fn set(&mut self, l: SublevelId, loaded: bool, next: Frame) -> bool {
        debug_assert_ne!(l, SublevelId::PERSISTENT);
        if self.is_loaded(l) == loaded {
            return false;
        }
        let (word, bit) = (l.0 as usize / 64, l.0 % 64);
        if self.loaded.len() <= word {
            self.loaded.resize(word + 1, 0);
        }
        self.loaded[word] ^= 1 << bit;
        if self.for_frame != next {
            self.changes.clear();
            self.for_frame = next;
        }
        let at = match self.changes.binary_search_by_key(&l, |c| c.sublevel) {
            Ok(at) => at,
            Err(at) => {
                self.changes.insert(at, SublevelChange { sublevel: l, unloaded: false, loaded: false });
                at
            }
        };
        let change = &mut self.changes[at];
        if loaded {
            change.loaded = true;
        } else {
            change.unloaded = true;
        }
        true
    }

    /// The loaded sublevels but the persistent level, in order.
    pub fn loaded(&self) -> impl Iterator<Item = SublevelId> + '_ {
        self.loaded
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| {
                (0..64u32).filter(move |b| bits >> b & 1 != 0).map(move |b| SublevelId((w * 64) as u16 + b as u16))
            })
            .filter(|&l| l != SublevelId::PERSISTENT)
    }

    /// What changed for the tick of `frame` (nothing if no call came since the tick before),
    /// sorted by sublevel.
    pub fn changes_at(&self, frame: Frame) -> &[SublevelChange] {
        if self.for_frame == frame {
            &self.changes
        } else {
            &[]
        }
    }

    /// The closes of static actors destroyed in a sublevel loaded since the tick before `frame`
    /// (and loaded now), from `destroyed` in order with `sublevel_of` each one's sublevel.
    pub fn destroyed_to_retell<'a>(
        &'a self,
        frame: Frame,
        destroyed: &'a [NetGuid],
        sublevel_of: impl Fn(NetGuid) -> SublevelId + 'a,
    ) -> impl Iterator<Item = NetGuid> + 'a {
        let changes = self.changes_at(frame);
        let retell = move |l: SublevelId| self.is_loaded(l) && change_of(changes, l).is_some_and(|c| c.loaded);
        destroyed.iter().copied().filter(move |&g| !changes.is_empty() && retell(sublevel_of(g)))
    }
}

/// Sublevel `l`'s entry in `changes` (sorted by sublevel, as [`ConnSublevels::changes_at`]).
pub(crate) fn change_of(changes: &[SublevelChange], l: SublevelId) -> Option<&SublevelChange> {
    changes.binary_search_by_key(&l, |c| c.sublevel).ok().map(|i| &changes[i])
}

/// At the tick, what the client of connection `conn` (in slot `ci`) did with its sublevels since
/// the last one: the closes of static actors destroyed in a sublevel it loaded go again, and its
/// channels to the actors of a sublevel it unloaded close — copies held dormant too — with their
/// sub-objects' (reported in `closed` when the frame reports closes).
pub(crate) fn apply_changes(ctx: &LevelCtx<'_>, ci: u32, conn: &mut Connection, closed: &mut Vec<(u32, u32)>) {
    let frame = ctx.time.frame;
    let changes = conn.sublevels.changes_at(frame).to_vec();
    if changes.is_empty() {
        return;
    }
    let statics = ctx.statics;
    let retell = conn.sublevels.destroyed_to_retell(frame, &statics.destroyed, |g| statics.sublevel_of(g));
    conn.closes.queued.extend(retell.map(PendingClose::destroyed));
    if !changes.iter().any(|c| c.unloaded) {
        return;
    }
    // The gone actors' rows are retired first (a frame that replicates would retire them in its
    // walk for the candidates): a new actor in a gone one's slot may be a sub-object whose
    // owner closes here, and the rows left are the live actors'.
    retire_rows(conn, ctx.retired, false);
    let classes = ctx.write.classes;
    // The actor of `key` if it is to close here: in an unloaded sublevel, and not a sub-object
    // (it ends with its owner). A tearing actor's channel closes too: the client has no copy to
    // keep (and a torn-off one's it keeps whatever the close), and no last update is owed
    // where no channel is left.
    let closing = |key: u64| {
        let (c, s) = split_key(key);
        let (class, slot) = (&classes[c as usize], s as usize);
        let sublevel = class.cols.sublevel[slot];
        let unloaded = change_of(&changes, sublevel).is_some_and(|ch| ch.unloaded);
        (unloaded && class.cols.sub_condition[slot].is_none()).then_some(class.actors[slot].guid)
    };
    let Pairs::Channels { rows, dormant } = &mut conn.pairs else { return };
    let mut ended: Vec<NetGuid> = Vec::new();
    for row in rows.iter_mut().filter(|r| r.state.flags & pair::CHANNEL != 0) {
        let Some(guid) = closing(row.key) else { continue };
        if row.state.flags & pair::EVER_OPENED != 0 {
            conn.closes.end(PendingClose { guid, reason: CloseReason::LevelUnloaded }, &row.state);
        }
        row.state.flags = 0;
        ended.push(guid);
        if ctx.report_closes {
            closed.push(split_key(row.key));
        }
    }
    dormant.retain(|row| {
        let Some(guid) = closing(row.key) else { return true };
        // The client holds the copy: told whatever the open's fate.
        conn.closes.push(PendingClose { guid, reason: CloseReason::LevelUnloaded });
        ended.push(guid);
        if ctx.report_closes {
            closed.push(split_key(row.key));
        }
        false
    });
    for owner in ended {
        let ends = (&mut rows[..], &mut *dormant, &mut conn.closes);
        end_sub_channels(ctx, ci as usize, ends, (owner, CloseReason::LevelUnloaded), closed);
    }
    drop_scratch_rows(conn);
}

/// The game's calls: where an actor lives, which sublevels each client has loaded.
impl NetDriver {
    /// Places an actor in a sublevel of the map (UE: the streaming level it was spawned in or
    /// placed in; [`SublevelId::PERSISTENT`] by default): a connection whose client has not
    /// loaded that sublevel is opened no channel to it ([`crate::net::sublevels`]). Its
    /// sub-objects are in it too. Call it before the tick that first replicates the actor
    /// ([`DriverError::SublevelFixed`] after); a sub-object's own is refused
    /// ([`DriverError::FollowsOwner`]).
    ///
    /// ```
    /// use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, SublevelId, Viewer};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Lamp").property(PropertyDecl::new("On", PropType::Bool)).build().unwrap());
    /// let mut store = ClassStore::new(layout);
    /// let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    /// let mut driver = NetDriver::new(cfg).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let viewer = Viewer { real_viewer: None, view_target: None, location: [0.0; 3], direction: [1.0, 0.0, 0.0] };
    /// driver.set_viewers(conn, &[viewer]).unwrap();
    /// let lamp = store.spawn();
    /// driver.set_position(class, &store, lamp, [100.0, 0.0, 0.0]).unwrap();
    /// driver.set_sublevel(class, &store, lamp, SublevelId(1)).unwrap();
    /// driver.tick(&mut [&mut store]).unwrap();
    /// assert_eq!(driver.channels(conn).unwrap().0, 0, "its client has not loaded sublevel 1");
    /// driver.set_sublevel_loaded(conn, SublevelId(1), true).unwrap();
    /// driver.tick(&mut [&mut store]).unwrap();
    /// assert_eq!(driver.channels(conn).unwrap().0, 1);
    /// ```
    pub fn set_sublevel(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        sublevel: SublevelId,
    ) -> Result<(), DriverError> {
        self.not_a_sub_object(class, id)?;
        let (c, s) = self.cols_slot(class, store, id)?;
        let guid = self.classes[c].actors[s].guid;
        if self.classes[c].actors[s].adopted != self.frame {
            return Err(DriverError::SublevelFixed(guid));
        }
        self.classes[c].cols.sublevel[s] = sublevel;
        for (sc, ss, _) in self.sub_slots(guid) {
            self.classes[sc as usize].cols.sublevel[ss as usize] = sublevel;
        }
        if guid.is_static() {
            self.statics.sublevels.insert(guid, sublevel);
        }
        if sublevel != SublevelId::PERSISTENT {
            self.level.as_mut().expect("checked by cols_slot").sublevels = true;
        }
        Ok(())
    }

    /// The sublevel an actor is in.
    pub fn sublevel(&self, class: ClassId, id: ActorId) -> Option<SublevelId> {
        self.guid_of(class, id)?;
        self.classes[class.0 as usize].cols.sublevel.get(id.index as usize).copied()
    }

    /// The client of `conn` loaded (`true`) or unloaded sublevel `sublevel` (UE's
    /// `ServerUpdateLevelVisibility`; a client's game unloads a level's static actors itself,
    /// `ClientWorld::unload_static_actor`, then tells the server). At the next tick: an unload
    /// closes the connection's channels to the sublevel's actors (reason `LevelUnloaded`); a
    /// load lets them open (with their current state) and sends again the closes of the
    /// sublevel's destroyed static actors. A new connection has only the persistent level,
    /// which cannot be unloaded ([`DriverError::PersistentSublevel`]).
    pub fn set_sublevel_loaded(
        &mut self,
        conn: ConnectionId,
        sublevel: SublevelId,
        loaded: bool,
    ) -> Result<(), DriverError> {
        self.level()?;
        let ci = self.live(conn)?;
        if sublevel == SublevelId::PERSISTENT {
            return if loaded { Ok(()) } else { Err(DriverError::PersistentSublevel) };
        }
        let next = crate::ids::Frame(self.frame.0 + 1);
        self.conns[ci].sublevels.set(sublevel, loaded, next);
        Ok(())
    }

    /// The client of `conn` has exactly the sublevels `loaded` (and the persistent level)
    /// loaded: each listed one not loaded is loaded, each loaded one not listed unloaded, as by
    /// [`Self::set_sublevel_loaded`] — what a session's `Incoming::Levels` asks
    /// ([`crate::session::levels`]). The persistent level may be listed (it is loaded anyway);
    /// duplicates count once. Returns how many sublevels changed.
    ///
    /// ```
    /// use shadowrep::net::{ActorLevelConfig, DriverConfig, NetDriver, SublevelId};
    ///
    /// let cfg = DriverConfig { actor_level: Some(ActorLevelConfig::default()), ..DriverConfig::default() };
    /// let mut driver = NetDriver::new(cfg).unwrap();
    /// let conn = driver.add_connection(false);
    /// assert_eq!(driver.set_loaded_sublevels(conn, &[SublevelId(1), SublevelId(4)]).unwrap(), 2);
    /// assert_eq!(driver.set_loaded_sublevels(conn, &[SublevelId(4), SublevelId(9)]).unwrap(), 2, "1 out, 9 in");
    /// assert!(!driver.sublevel_loaded(conn, SublevelId(1)).unwrap());
    /// assert!(driver.sublevel_loaded(conn, SublevelId(9)).unwrap());
    /// assert_eq!(driver.loaded_sublevels(conn).unwrap(), [SublevelId(4), SublevelId(9)]);
    /// ```
    pub fn set_loaded_sublevels(&mut self, conn: ConnectionId, loaded: &[SublevelId]) -> Result<usize, DriverError> {
        self.level()?;
        let ci = self.live(conn)?;
        let next = crate::ids::Frame(self.frame.0 + 1);
        let mut want = loaded.to_vec();
        want.sort_unstable();
        let sublevels = &mut self.conns[ci].sublevels;
        let gone: Vec<SublevelId> = sublevels.loaded().filter(|l| want.binary_search(l).is_err()).collect();
        let mut changed = 0;
        for l in gone {
            changed += sublevels.set(l, false, next) as usize;
        }
        for &l in want.iter().filter(|&&l| l != SublevelId::PERSISTENT) {
            changed += sublevels.set(l, true, next) as usize;
        }
        Ok(changed)
    }

    /// Whether the client of `conn` has sublevel `sublevel` loaded (as the game last said).
    pub fn sublevel_loaded(&self, conn: ConnectionId, sublevel: SublevelId) -> Result<bool, DriverError> {
        let ci = self.live(conn)?;
        Ok(self.conns[ci].sublevels.is_loaded(sublevel))
    }

    /// The sublevels `conn`'s client has loaded as of the next tick, in order (the persistent
    /// level, always loaded, left out): what [`Self::set_sublevel_loaded`] and
    /// [`Self::set_loaded_sublevels`] told, for a team checking what its server believes.
    pub fn loaded_sublevels(&self, conn: ConnectionId) -> Result<Vec<SublevelId>, DriverError> {
        let ci = self.live(conn)?;
        Ok(self.conns[ci].sublevels.loaded().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_persistent_level_is_always_loaded_and_changes_are_kept_for_the_next_tick_only() {
        let mut s = ConnSublevels::default();
        assert!(s.is_loaded(SublevelId::PERSISTENT));
        assert!(!s.is_loaded(SublevelId(70)));
        assert!(s.set(SublevelId(70), true, Frame(3)));
        assert!(!s.set(SublevelId(70), true, Frame(3)), "already loaded");
        assert!(s.is_loaded(SublevelId(70)) && !s.is_loaded(SublevelId(6)));
        assert!(s.set(SublevelId(70), false, Frame(3)));
        assert!(s.set(SublevelId(70), true, Frame(3)));
        assert_eq!(s.changes_at(Frame(3)), [SublevelChange { sublevel: SublevelId(70), unloaded: true, loaded: true }]);
        assert!(s.changes_at(Frame(4)).is_empty() && s.changes_at(Frame(2)).is_empty());
        // The first change for a later tick forgets the earlier tick's.
        assert!(s.set(SublevelId(2), true, Frame(5)));
        assert_eq!(s.changes_at(Frame(5)), [SublevelChange { sublevel: SublevelId(2), unloaded: false, loaded: true }]);
        assert!(s.changes_at(Frame(3)).is_empty());
        assert!(s.is_loaded(SublevelId(70)) && s.is_loaded(SublevelId(2)));
    }

    #[test]
    fn only_a_sublevel_loaded_since_the_last_tick_and_loaded_now_retells_its_destroyed_statics() {
        let mut s = ConnSublevels::default();
        let destroyed = [NetGuid(3), NetGuid(5), NetGuid(7)];
        let of = |g: NetGuid| SublevelId((g.0 % 3) as u16); // 3 → 0, 5 → 2, 7 → 1
        assert_eq!(s.destroyed_to_retell(Frame(1), &destroyed, of).count(), 0);
        s.set(SublevelId(2), true, Frame(1));
        s.set(SublevelId(1), true, Frame(1));
        s.set(SublevelId(1), false, Frame(1));
        assert_eq!(s.destroyed_to_retell(Frame(1), &destroyed, of).collect::<Vec<_>>(), [NetGuid(5)]);
        assert_eq!(s.destroyed_to_retell(Frame(2), &destroyed, of).count(), 0);
    }
}
