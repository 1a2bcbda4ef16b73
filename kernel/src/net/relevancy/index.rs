//! The frame's relevancy index: which of the frame's due actors each connection's viewers see,
//! answered per connection at the cost of the actors near its viewers, not of the world.
//!
//! ```text
//! built once per frame from the due actors (the consider list), sorted by (class, slot):
//!   plain actors   only rule 1 (owner / view target / instigator) and the distance rule can
//!                  decide them → the spatial grid (home cell, SIMD sweep), plus link lists
//!   owned          (owner GUID on the actor's owner chain, due index), sorted by GUID
//!   instigated     (instigator GUID, due index), sorted by GUID
//!   by connection  (owning connection, due index), sorted
//!   (links hold plain actors only)
//!   followers      owner relevancy and nothing else that could decide (sub-objects, attached
//!                  items): relevant exactly when their owner is, or when a viewer views them
//!   rule actors    always relevant, owner only, hidden without collision, no root, or a class
//!                  hook → UE's rules one by one (few: controllers, game state)
//! per connection:  grid hits ∪ links of each viewer's view target and real viewer ∪ owned by
//!                  the connection ∪ rule actors that pass → bits over the due list; then
//!                  followers whose owner's bit is set (an owner not due this frame, or with a
//!                  class hook: UE's rules for the follower); one scan of the bits → ascending
//!                  due indices
//! ```
//!
//! A follower's answer is UE's: rule 1 for it is "it is the view target or real viewer" (its
//! owner chain is its owner's, which rule 1 of the owner covers), its instigator is none, and
//! then owner relevancy hands the question to its owner — which, without a hook, is what the
//! owner's own answer already says (owned by the connection included: ownership is the owner's).
//!
//! The union is exactly "relevant to some viewer by UE's rules": a plain actor has a root, and
//! is visible or collides, so rules 2–5 cannot fire and rule 6 is the distance test; the grid
//! returns exactly the brute-force distance answer ([`crate::net::spatial`]); rule 1 is the
//! links. The UE-style reference asks [`super::relevant_to_connection`] per actor and must agree.

use super::{relevant_to_connection, ActorRelevancy, RelevancyHook, Viewer, MAX_OWNER_DEPTH};
use crate::ids::NetGuid;
use crate::net::priority::PriorityInput;
use crate::net::spatial::{GridConfig, GridConfigError, SpatialGrid};
use crate::net::ReplicationFlags;

/// Bits of [`DueActor::flags`].
pub(crate) mod due_flags {
    /// [`super::DueActor::startup`].
    pub const STARTUP: u8 = 1;
    /// [`super::DueActor::temporary`].
    pub const TEMPORARY: u8 = 2;
    /// [`super::DueActor::owner_only`].
    pub const OWNER_ONLY: u8 = 4;
}

/// One actor of the frame's consider list.
///
/// Laid out for the send loop, which reads one record per send in priority order, all over the
/// list: what it and a replication read sit in the first [`DUE_HOT_BYTES`] (the record's
/// replication state, place and changes first, then its sharing, dormancy and sub-object
/// fields), what relevancy and the dump read (`rel`) after them, so a send asks for those bytes
/// and not the whole record. The record starts a cache line (aligned to 64 bytes, 192 long),
/// so those bytes are exactly its first two lines: a send touches two lines, asked for by two
/// prefetches. Unaligned (176 bytes), the same bytes straddled three lines in three records
/// of four, and the look-ahead asked for them in a loop whose trip count (two or three) a branch
/// guessed: the write stage took 6 % longer (session 59, battle_royale, AMD EPYC Zen 5). The
/// loop reads the actor's GUID from `actor`, not `rel`.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct DueActor {
    /// Its replication state, among it the connection that owns it (`owner`,
    /// [`crate::net::NetDriver::set_owner`]) and whether it is an autonomous proxy there: a copy
    /// (nothing changes it while a frame runs), so a send reads this record and not the class's
    /// actor table too.
    pub actor: crate::net::actors::ActorNet,
    pub class: u32,
    pub slot: u32,
    /// The frame it was last considered before this one (its last compare).
    pub since: crate::ids::Frame,
    /// The last frame that changed it (its history's stamp), likewise.
    pub last_changed: crate::ids::Frame,
    /// Its leaves that changed since then (found by this frame's compare).
    pub changed: crate::ids::LeafMask,
    /// Its key in the frame's shared arena (`level::NOT_SHARED`: none).
    pub shared: u32,
    /// [`due_flags`] bits: what its settings say of its channels.
    pub flags: u8,
    /// Its dormancy.
    pub dormancy: crate::net::dormancy::Dormancy,
    /// It wants dormancy and may sleep (relevant by distance alone: see [`crate::net::dormancy`]).
    pub sleepy: bool,
    /// Decided by UE's rules one by one, not by the grid.
    pub rules: bool,
    /// A sub-object's owner's (class, slot), while the owner lives.
    pub owner_slot: Option<(u32, u32)>,
    /// Its fast arrays with their versions, read once a frame: a range of the level's
    /// `fast_arrays` (empty when it has none).
    pub fast_arrays: (u32, u32),
    pub net_priority: f32,
    /// A sub-object's condition (whether its owner is an autonomous proxy on the owning
    /// connection is `actor.autonomous`).
    pub condition: Option<crate::net::lifecycle::SubObjectCondition>,
    /// What relevancy and priority read (GUID, location, owner, instigator, flags).
    pub rel: ActorRelevancy,
}

// The send loop's fields within the first two lines (see above), the record three lines long.
const _: () = assert!(
    std::mem::offset_of!(DueActor, condition)
        + std::mem::size_of::<Option<crate::net::lifecycle::SubObjectCondition>>()
        <= DUE_HOT_BYTES
);
const _: () = assert!(std::mem::size_of::<DueActor>() == 192 && std::mem::align_of::<DueActor>() == 64);

/// Bytes at the start of a [`DueActor`] that hold what the send loop reads: its first two cache
/// lines (see there).
pub(crate) const DUE_HOT_BYTES: usize = 128;

impl DueActor {
    /// A record to be overwritten before anything reads it (the consider list grows by these).
    pub fn placeholder() -> Self {
        DueActor {
            class: 0,
            slot: 0,
            rel: ActorRelevancy::at(NetGuid::NULL, [0.0; 3]),
            net_priority: 0.0,
            flags: 0,
            rules: false,
            since: crate::ids::Frame::default(),
            changed: crate::ids::LeafMask::EMPTY,
            shared: 0,
            dormancy: crate::net::dormancy::Dormancy::default(),
            sleepy: false,
            condition: None,
            owner_slot: None,
            actor: crate::net::actors::ActorNet::default(),
            last_changed: crate::ids::Frame::default(),
            fast_arrays: (0, 0),
        }
    }

    /// `bOnlyRelevantToOwner`: the [`due_flags`] copy of `rel.only_relevant_to_owner`, which
    /// the send loop reads (`rel` is past the bytes it asks for).
    pub fn owner_only(&self) -> bool {
        self.flags & due_flags::OWNER_ONLY != 0
    }

    /// Loaded with the level: never closed for relevancy.
    pub fn startup(&self) -> bool {
        self.flags & due_flags::STARTUP != 0
    }

    /// `bNetTemporary` ([`crate::net::NetSettings::net_temporary`]): skipped by a connection
    /// once its open went there.
    pub fn temporary(&self) -> bool {
        self.flags & due_flags::TEMPORARY != 0
    }

    /// A sub-object whose condition is initial-only for some connection
    /// ([`crate::net::SubObjectCondition::initial`]): what the frame counts.
    pub fn initial_only(&self) -> bool {
        self.condition.is_some_and(|c| c.initial())
    }

    /// A sub-object that goes to connection `ci` with its owner's initial bunch only
    /// ([`crate::net::SubObjectCondition::initial_window`]: `InitialOnly`, and `InitialOrOwner`
    /// where `ci` does not own the owner), skipped there once its own open went.
    pub fn initial_only_for(&self, ci: u32) -> bool {
        self.condition.is_some_and(|c| c.initial_window(self.actor.owner == Some(ci)))
    }

    /// Whether connection `ci` (`replay`: a replay connection; `groups`: its net groups) may have
    /// it at all: a sub-object's condition; every other actor: yes.
    pub fn allowed_for(&self, ci: u32, replay: bool, groups: crate::net::NetGroups) -> bool {
        self.condition.is_none_or(|c| c.allows(ReplicationFlags::of(&self.actor, ci, replay, groups)))
    }
}

/// See the module documentation.
pub(crate) struct RelevancyIndex {
    grid: SpatialGrid,
    /// Grid row `i` is due actor `grid_due[i]`.
    grid_due: Vec<u32>,
    positions: Vec<[f32; 3]>,
    cull_sq: Vec<f32>,
    rules: Vec<u32>,
    followers: Vec<Follower>,
    owned: Vec<(NetGuid, u32)>,
    instigated: Vec<(NetGuid, u32)>,
    by_conn: Vec<(u32, u32)>,
    /// The radix sorts' buffers for `owned` and `instigated`, and for `by_conn`.
    sort_scratch: Vec<(NetGuid, u32)>,
    conn_scratch: Vec<(u32, u32)>,
    /// Actors on the owner chains of due actors (due or not), for the rules' lookups.
    pub linked: crate::ids::GuidMap<(ActorRelevancy, f32)>,
    /// The class of each actor in `linked` whose class has a relevancy hook (owner relevancy
    /// asks it).
    hooked_links: crate::ids::GuidMap<u32>,
    /// Per due actor, what its priority reads, owner chain followed: what each connection's
    /// ranking reads instead of the wide [`DueActor`] and the owner lookups.
    pub priority: Vec<PriorityInput>,
    /// Per due actor, the class whose priority hook ranks it ([`NO_PRIORITY_HOOK`]: UE's
    /// formula); empty when no class has one.
    pub priority_hook: Vec<u32>,
    /// The class of each actor in `linked` whose class has a priority hook.
    priority_links: crate::ids::GuidMap<u32>,
}

/// [`RelevancyIndex::priority_hook`] of an actor UE's formula ranks.
pub(crate) const NO_PRIORITY_HOOK: u32 = u32::MAX;

/// A follower, resolved once a frame: what each connection's query reads of it, so the query
/// does not read the wide due records of the follower and its owner per connection.
#[derive(Clone, Copy, Debug)]
struct Follower {
    /// Its due index.
    due: u32,
    /// Its owner's due index when the owner's answer is the follower's: the owner is due, no
    /// class hook on either, the owner does not hand its question on (owner relevancy: depth and
    /// order), it is not owner-only (its answer holds the owner-only filter, which UE applies to
    /// the actor a connection considers, not to the owner its question is handed to), and both
    /// are owned by the same connection (the owner's answer counts that ownership), and the
    /// follower's chain ends within `MAX_OWNER_DEPTH` links (the owner's answer reaches one link
    /// further). Such an owner is no follower, so its bit is final before any follower's is set.
    /// `None`: UE's rules for the follower.
    owner: Option<u32>,
    guid: NetGuid,
    /// The connection that owns it.
    conn: Option<u32>,
}

impl RelevancyIndex {
    pub fn new(grid: GridConfig) -> Result<Self, GridConfigError> {
        Ok(Self {
            grid: SpatialGrid::new(grid)?,
            grid_due: Vec::new(),
            positions: Vec::new(),
            cull_sq: Vec::new(),
            rules: Vec::new(),
            followers: Vec::new(),
            owned: Vec::new(),
            instigated: Vec::new(),
            by_conn: Vec::new(),
            sort_scratch: Vec::new(),
            conn_scratch: Vec::new(),
            linked: Default::default(),
            hooked_links: Default::default(),
            priority: Vec::new(),
            priority_hook: Vec::new(),
            priority_links: Default::default(),
        })
    }

    /// Builds the index over `due`. `find` gives any live actor's relevancy data, net priority
    /// and class by GUID (owner chains leave the consider list); `hooked` tells whether a class
    /// has a relevancy hook, `priority_hooked` whether it has a priority hook (`None`: no
    /// class has one).
    pub fn build(
        &mut self,
        due: &[DueActor],
        find: impl Fn(NetGuid) -> Option<(ActorRelevancy, f32, u32)>,
        due_of: impl Fn(NetGuid) -> Option<u32>,
        hooked: impl Fn(u32) -> bool,
        priority_hooked: Option<&dyn Fn(u32) -> bool>,
    ) {
        self.grid_due.clear();
        self.positions.clear();
        self.cull_sq.clear();
        self.rules.clear();
        self.followers.clear();
        self.owned.clear();
        self.instigated.clear();
        self.by_conn.clear();
        self.linked.clear();
        self.hooked_links.clear();
        self.priority.clear();
        self.priority.reserve(due.len());
        self.priority_hook.clear();
        self.priority_links.clear();
        // One pass over the wide records (a second one for the priority inputs read them all
        // again: mmo's 20 MB).
        for (i, d) in due.iter().enumerate() {
            let i = i as u32;
            // Rule actors answer every rule themselves (rule 1 included); plain ones through
            // the grid and the links.
            let plain = !d.rules;
            if plain {
                self.grid_due.push(i);
                self.positions.push(d.rel.location);
                self.cull_sq.push(d.rel.cull_distance_squared);
                if let Some(c) = d.actor.owner {
                    self.by_conn.push((c, i));
                }
                if let Some(g) = d.rel.instigator {
                    self.instigated.push((g, i));
                }
            } else if let Some(owner) = follows(d) {
                let owner = due_of(owner).filter(|&o| {
                    let od = &due[o as usize];
                    !hooked(od.class)
                        && !hooked(d.class)
                        && !od.rel.use_owner_relevancy
                        && !od.rel.only_relevant_to_owner
                        && od.actor.owner == d.actor.owner
                });
                self.followers.push(Follower { due: i, owner, guid: d.rel.guid, conn: d.actor.owner });
            } else {
                self.rules.push(i);
            }
            let mut link = d.rel.owner;
            for _ in 0..MAX_OWNER_DEPTH {
                let Some(g) = link else { break };
                if plain {
                    self.owned.push((g, i));
                }
                let owner = match self.linked.get(&g) {
                    Some(o) => Some(*o),
                    None => find(g).map(|(rel, priority, class)| {
                        self.linked.insert(g, (rel, priority));
                        if hooked(class) {
                            self.hooked_links.insert(g, class);
                        }
                        if priority_hooked.is_some_and(|h| h(class)) {
                            self.priority_links.insert(g, class);
                        }
                        (rel, priority)
                    }),
                };
                link = owner.and_then(|o| o.0.owner);
            }
            if link.is_some() {
                // A link past the reach: the owner's own answer looked at it (its 16 links are
                // the follower's 17), the follower's rules do not (see `relevancy` above).
                if let Some(f) = self.followers.last_mut().filter(|f| f.due == i) {
                    f.owner = None;
                }
            }
            // Its owner chain is in `linked` now (a link the walk did not find is not alive),
            // and that is all its priority follows.
            let lookup = |g: NetGuid| self.linked.get(&g);
            match priority_hooked {
                None => self.priority.push(PriorityInput::resolve(&d.rel, d.net_priority, &lookup)),
                Some(h) => {
                    // The actor's own class first, then the chain's (as UE's virtual call).
                    let hook_of = |g: NetGuid| {
                        if g == d.rel.guid {
                            h(d.class).then_some(d.class)
                        } else {
                            self.priority_links.get(&g).copied()
                        }
                    };
                    let (input, hook) = PriorityInput::resolve_hooked(&d.rel, d.net_priority, &lookup, hook_of);
                    self.priority.push(input);
                    self.priority_hook.push(hook.unwrap_or(NO_PRIORITY_HOOK));
                }
            }
        }
        super::radix::sort_pairs(&mut self.owned, &mut self.sort_scratch, |g| g.0);
        self.owned.dedup();
        super::radix::sort_pairs(&mut self.instigated, &mut self.sort_scratch, |g| g.0);
        super::radix::sort_pairs(&mut self.by_conn, &mut self.conn_scratch, u64::from);
        self.grid.rebuild(&self.positions, &self.cull_sq, |_| true);
    }

    /// The due actors relevant to connection `conn` with `viewers`: a bit each in `scratch`
    /// ([`Scratch::bits`]), and their due indices ascending in `out` if asked for. `due_of`
    /// gives the due index of an actor by GUID, if it is due.
    ///
    /// Every answer (grid hits, links, rule actors, followers) sets its bit in a bitset over the
    /// due list (`due.len()` bits, zeroed once per connection), and a scan of it lists
    /// them ascending without duplicates: no sort of the grid's interleaved cell runs and no
    /// merges. The candidates walk of a plain frame reads the bits themselves (no list).
    #[allow(clippy::too_many_arguments)]
    pub fn relevant_for(
        &self,
        due: &[DueActor],
        due_of: impl Fn(NetGuid) -> Option<u32>,
        conn: u32,
        viewers: &[Viewer],
        hooks: &[Option<RelevancyHook>],
        scratch: &mut Scratch,
        mut out: Option<&mut Vec<u32>>,
    ) {
        if let Some(out) = out.as_deref_mut() {
            out.clear();
        }
        let Scratch { locations, hits, bits } = scratch;
        bits.clear();
        if viewers.is_empty() {
            return;
        }
        locations.clear();
        locations.extend(viewers.iter().map(|v| v.location));
        self.grid.relevant_unsorted(locations, hits);
        bits.resize(due.len().div_ceil(64), 0);
        for &row in hits.iter() {
            set_due(bits, self.grid_due[row as usize]);
        }
        let range = |list: &[(NetGuid, u32)], g: NetGuid| {
            let start = list.partition_point(|e| e.0 < g);
            let end = list.partition_point(|e| e.0 <= g);
            start..end
        };
        for v in viewers {
            for g in [v.view_target, v.real_viewer].into_iter().flatten() {
                // The view target or real viewer itself (rule actors answer for themselves).
                if let Some(i) = due_of(g).filter(|&i| !due[i as usize].rules) {
                    set_due(bits, i);
                }
                for e in &self.owned[range(&self.owned, g)] {
                    set_due(bits, e.1);
                }
            }
            if let Some(t) = v.view_target {
                for e in &self.instigated[range(&self.instigated, t)] {
                    set_due(bits, e.1);
                }
            }
        }
        let start = self.by_conn.partition_point(|e| e.0 < conn);
        for e in self.by_conn[start..].iter().take_while(|e| e.0 == conn) {
            set_due(bits, e.1);
        }
        let lookup = |g: NetGuid| self.linked.get(&g).map(|l| &l.0);
        let hook_of = |g: NetGuid| self.hooked_links.get(&g).and_then(|&c| hooks.get(c as usize)?.as_ref());
        let by_rules = |i: u32| {
            let d = &due[i as usize];
            let hook = hooks.get(d.class as usize).and_then(Option::as_ref);
            relevant_to_connection(&d.rel, d.actor.owner == Some(conn), viewers, hook, &lookup, &hook_of)
        };
        for &i in &self.rules {
            if by_rules(i) {
                set_due(bits, i);
            }
        }
        let viewed = |g: NetGuid| viewers.iter().any(|v| v.view_target == Some(g) || v.real_viewer == Some(g));
        for f in &self.followers {
            // The owner's own answer (see `Follower::owner`), or UE's rules.
            let relevant = match f.owner {
                Some(o) => has_due(bits, o) || viewed(f.guid) || f.conn == Some(conn),
                None => by_rules(f.due),
            };
            if relevant {
                set_due(bits, f.due);
            }
        }
        if let Some(out) = out {
            out.extend(due_in(bits));
        }
    }
}

/// Sets due actor `d`'s bit in a bitset over the due list.
pub(crate) fn set_due(bits: &mut [u64], d: u32) {
    bits[d as usize / 64] |= 1 << (d % 64);
}

/// Whether due actor `d`'s bit is set in a bitset over the due list.
pub(crate) fn has_due(bits: &[u64], d: u32) -> bool {
    bits[d as usize / 64] >> (d % 64) & 1 != 0
}

/// The due indices whose bit is set in `bits`, ascending.
pub(crate) fn due_in(bits: &[u64]) -> impl Iterator<Item = u32> + '_ {
    bits.iter().enumerate().flat_map(|(w, &word)| crate::store::BitIter(word).map(move |b| (w * 64 + b) as u32))
}

impl RelevancyIndex {
    /// Whether connection `conn` with `viewers` owns due actor `d` (UE's owner-only filter, see
    /// [`super::owned_by_viewers`]): an owner-only actor it does not own is none of its business.
    pub fn owns(&self, d: &DueActor, conn: u32, viewers: &[Viewer]) -> bool {
        let lookup = |g: NetGuid| self.linked.get(&g).map(|l| &l.0);
        d.actor.owner == Some(conn) || super::owned_by_viewers(&d.rel, viewers, &lookup)
    }
}

/// Whether `d` follows its owner's relevancy and nothing else could decide for it (see the
/// module documentation): its owner, if so. (An owner-only actor does not: UE's owner-only
/// filter comes before every rule — [`super::relevant_to_connection`].)
fn follows(d: &DueActor) -> Option<NetGuid> {
    let r = &d.rel;
    let only_owner_rules =
        r.use_owner_relevancy && !r.always_relevant && r.instigator.is_none() && !r.only_relevant_to_owner;
    r.owner.filter(|_| only_owner_rules)
}

/// Buffers one connection's query reuses from frame to frame.
#[derive(Default)]
pub(crate) struct Scratch {
    locations: Vec<[f32; 3]>,
    /// The grid's hits (its rows).
    hits: Vec<u32>,
    /// One bit per due actor: relevant (empty for a connection without viewers).
    bits: Vec<u64>,
}

impl Scratch {
    /// The last query's answer: one bit per due actor, set when relevant (empty when the
    /// connection had no viewers) — until a plain frame's candidates walk clears the bits its
    /// rows match ([`Self::bits_mut`]).
    pub(crate) fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// [`Self::bits`], to clear as they are used.
    pub(crate) fn bits_mut(&mut self) -> &mut [u64] {
        &mut self.bits
    }
}
