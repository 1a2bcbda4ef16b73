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
//!   rule actors    always relevant, owner relevancy, owner only, hidden without collision, no
//!                  root, or a class hook → UE's rules one by one (few: controllers, game state,
//!                  attached items)
//! per connection:  grid hits ∪ links of each viewer's view target and real viewer ∪ owned by
//!                  the connection ∪ rule actors that pass → sorted due indices
//! ```
//!
//! The union is exactly "relevant to some viewer by UE's rules": a plain actor has a root, and
//! is visible or collides, so rules 2–5 cannot fire and rule 6 is the distance test; the grid
//! returns exactly the brute-force distance answer ([`crate::net::spatial`]); rule 1 is the
//! links. The UE-style reference asks [`super::relevant_to_connection`] per actor and must agree.

use super::{relevant_to_connection, ActorRelevancy, RelevancyHook, Viewer, MAX_OWNER_DEPTH};
use crate::ids::NetGuid;
use crate::net::spatial::{GridConfig, GridConfigError, SpatialGrid};
use std::collections::HashMap;

/// One actor of the frame's consider list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DueActor {
    pub class: u32,
    pub slot: u32,
    /// What relevancy and priority read (GUID, location, owner, instigator, flags).
    pub rel: ActorRelevancy,
    pub net_priority: f32,
    /// The connection that owns it ([`crate::net::NetDriver::set_owner`]).
    pub owner_conn: Option<u32>,
    /// Loaded with the level: never closed for relevancy.
    pub startup: bool,
    /// Decided by UE's rules one by one, not by the grid.
    pub rules: bool,
    /// The frame it was last considered before this one (its last compare).
    pub since: crate::ids::Frame,
    /// Its leaves that changed since then (found by this frame's compare).
    pub changed: crate::ids::LeafMask,
    /// Its key in the frame's shared arena (`level::NOT_SHARED`: none).
    pub shared: u32,
    /// Its dormancy.
    pub dormancy: crate::net::dormancy::Dormancy,
    /// It wants dormancy and may sleep (relevant by distance alone: see [`crate::net::dormancy`]).
    pub sleepy: bool,
}

/// See the module documentation.
pub(crate) struct RelevancyIndex {
    grid: SpatialGrid,
    /// Grid row `i` is due actor `grid_due[i]`.
    grid_due: Vec<u32>,
    positions: Vec<[f32; 3]>,
    cull_sq: Vec<f32>,
    rules: Vec<u32>,
    owned: Vec<(NetGuid, u32)>,
    instigated: Vec<(NetGuid, u32)>,
    by_conn: Vec<(u32, u32)>,
    /// Actors on the owner chains of due actors (due or not), for the rules' lookups.
    pub linked: HashMap<NetGuid, (ActorRelevancy, f32)>,
}

impl RelevancyIndex {
    pub fn new(grid: GridConfig) -> Result<Self, GridConfigError> {
        Ok(Self {
            grid: SpatialGrid::new(grid)?,
            grid_due: Vec::new(),
            positions: Vec::new(),
            cull_sq: Vec::new(),
            rules: Vec::new(),
            owned: Vec::new(),
            instigated: Vec::new(),
            by_conn: Vec::new(),
            linked: HashMap::new(),
        })
    }

    /// Builds the index over `due`. `find` gives any live actor's relevancy data and net
    /// priority by GUID (owner chains leave the consider list).
    pub fn build(&mut self, due: &[DueActor], find: impl Fn(NetGuid) -> Option<(ActorRelevancy, f32)>) {
        self.grid_due.clear();
        self.positions.clear();
        self.cull_sq.clear();
        self.rules.clear();
        self.owned.clear();
        self.instigated.clear();
        self.by_conn.clear();
        self.linked.clear();
        for (i, d) in due.iter().enumerate() {
            let i = i as u32;
            // Rule actors answer every rule themselves (rule 1 included); plain ones through
            // the grid and the links.
            let plain = !d.rules;
            if plain {
                self.grid_due.push(i);
                self.positions.push(d.rel.location);
                self.cull_sq.push(d.rel.cull_distance_squared);
                if let Some(c) = d.owner_conn {
                    self.by_conn.push((c, i));
                }
                if let Some(g) = d.rel.instigator {
                    self.instigated.push((g, i));
                }
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
                    None => find(g).inspect(|o| {
                        self.linked.insert(g, *o);
                    }),
                };
                link = owner.and_then(|o| o.0.owner);
            }
        }
        self.owned.sort_unstable();
        self.owned.dedup();
        self.instigated.sort_unstable();
        self.by_conn.sort_unstable();
        self.grid.rebuild(&self.positions, &self.cull_sq, |_| true);
    }

    /// The due indices relevant to connection `conn` with `viewers`, ascending, into `out`.
    /// `due_of` gives the due index of an actor by GUID, if it is due.
    #[allow(clippy::too_many_arguments)]
    pub fn relevant_for(
        &self,
        due: &[DueActor],
        due_of: impl Fn(NetGuid) -> Option<u32>,
        conn: u32,
        viewers: &[Viewer],
        hooks: &[Option<RelevancyHook>],
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        if viewers.is_empty() {
            return;
        }
        scratch.locations.clear();
        scratch.locations.extend(viewers.iter().map(|v| v.location));
        self.grid.relevant(&scratch.locations, out);
        // Grid rows are in due order, so the mapped hits stay ascending.
        for hit in out.iter_mut() {
            *hit = self.grid_due[*hit as usize];
        }
        let range = |list: &[(NetGuid, u32)], g: NetGuid| {
            let start = list.partition_point(|e| e.0 < g);
            let end = list.partition_point(|e| e.0 <= g);
            start..end
        };
        let extra = &mut scratch.extra;
        extra.clear();
        for v in viewers {
            for g in [v.view_target, v.real_viewer].into_iter().flatten() {
                // The view target or real viewer itself (rule actors answer for themselves).
                extra.extend(due_of(g).filter(|&i| !due[i as usize].rules));
                extra.extend(self.owned[range(&self.owned, g)].iter().map(|e| e.1));
            }
            if let Some(t) = v.view_target {
                extra.extend(self.instigated[range(&self.instigated, t)].iter().map(|e| e.1));
            }
        }
        let start = self.by_conn.partition_point(|e| e.0 < conn);
        extra.extend(self.by_conn[start..].iter().take_while(|e| e.0 == conn).map(|e| e.1));
        let lookup = |g: NetGuid| self.linked.get(&g).map(|l| &l.0);
        for &i in &self.rules {
            let d = &due[i as usize];
            let hook = hooks.get(d.class as usize).and_then(Option::as_ref);
            if relevant_to_connection(&d.rel, d.owner_conn == Some(conn), viewers, hook, &lookup) {
                extra.push(i);
            }
        }
        if extra.is_empty() {
            return;
        }
        // The few link and rule hits, sorted, merged into the grid's sorted hits.
        extra.sort_unstable();
        let merged = &mut scratch.merged;
        merged.clear();
        merged.reserve(out.len() + extra.len());
        let (mut i, mut j) = (0, 0);
        while i < out.len() || j < extra.len() {
            let next = match (out.get(i), extra.get(j)) {
                (Some(&a), Some(&b)) if a <= b => {
                    i += 1;
                    j += (a == b) as usize;
                    a
                }
                (_, Some(&b)) => {
                    j += 1;
                    b
                }
                (Some(&a), None) => {
                    i += 1;
                    a
                }
                (None, None) => unreachable!(),
            };
            if merged.last() != Some(&next) {
                merged.push(next);
            }
        }
        std::mem::swap(out, merged);
    }
}

/// Buffers one connection's query reuses from frame to frame.
#[derive(Default)]
pub(crate) struct Scratch {
    locations: Vec<[f32; 3]>,
    extra: Vec<u32>,
    merged: Vec<u32>,
}
