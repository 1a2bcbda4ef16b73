//! The condition map: which properties a connection may receive of an actor.
//!
//! A connection sees an actor through five flags (UE's `FReplicationFlags` subset that conditions
//! read): *initial* (the actor's channel open is not acknowledged yet), *owner* (the connection
//! owns the actor), *simulated* (the connection holds a simulated proxy: anyone but an owner of an
//! autonomous actor), *replay* (a replay connection) and *physics* (the actor replicates physics).
//! [`condition_active`] is UE's condition map over them; [`ActiveLeaves`] turns it into one leaf
//! mask per flag combination, computed once per class, so the per-pair question "which leaves may
//! this connection receive?" is one table lookup.

use crate::ids::LeafMask;
use crate::schema::{ClassLayout, Condition};

/// Replication flags of one (connection, actor) pair, as bits.
pub mod flags {
    /// The channel open is not acknowledged: InitialOnly properties are active.
    pub const INITIAL: u8 = 1;
    /// The connection owns the actor.
    pub const OWNER: u8 = 2;
    /// The connection holds a simulated proxy.
    pub const SIMULATED: u8 = 4;
    /// A replay connection.
    pub const REPLAY: u8 = 8;
    /// The actor replicates physics.
    pub const PHYSICS: u8 = 16;
    /// Number of flag combinations.
    pub const COMBINATIONS: usize = 32;
}

/// UE's condition map: whether a property with condition `c` goes to a pair with `f` flags.
pub fn condition_active(c: Condition, f: u8) -> bool {
    let initial = f & flags::INITIAL != 0;
    let owner = f & flags::OWNER != 0;
    let simulated = f & flags::SIMULATED != 0;
    let replay = f & flags::REPLAY != 0;
    let physics = f & flags::PHYSICS != 0;
    match c {
        Condition::None | Condition::Custom | Condition::Dynamic => true,
        Condition::InitialOnly => initial,
        Condition::OwnerOnly => owner,
        Condition::SkipOwner => !owner,
        Condition::SimulatedOnly => simulated,
        Condition::AutonomousOnly => !simulated,
        Condition::SimulatedOrPhysics => simulated || physics,
        Condition::InitialOrOwner => initial || owner,
        Condition::ReplayOrOwner => replay || owner,
        Condition::ReplayOnly => replay,
        Condition::SimulatedOnlyNoReplay => simulated && !replay,
        Condition::SimulatedOrPhysicsNoReplay => (simulated || physics) && !replay,
        Condition::SkipReplay => !replay,
        Condition::Never => false,
    }
}

/// Per flag combination, the union of the leaf masks whose condition is active there.
fn by_flags(masks: impl Iterator<Item = (LeafMask, Condition)> + Clone) -> [LeafMask; flags::COMBINATIONS] {
    let mut by_flags = [LeafMask::EMPTY; flags::COMBINATIONS];
    for (f, mask) in by_flags.iter_mut().enumerate() {
        for (leaves, c) in masks.clone() {
            if condition_active(c, f as u8) {
                *mask |= leaves;
            }
        }
    }
    by_flags
}

/// Per flag combination, the leaves (as their groups: bit = leaf index up to 64 leaves) whose
/// parent's condition is active.
#[derive(Clone, Debug)]
pub struct ActiveLeaves {
    by_flags: [LeafMask; flags::COMBINATIONS],
    /// The leaves of each parent (for per-actor overrides of Custom/Dynamic parents).
    parent_leaves: Vec<LeafMask>,
    /// Leaves some pair gets only as initial values (InitialOnly, InitialOrOwner).
    initial_only: LeafMask,
    /// The per-actor conditions of Dynamic parents in use ([`DynamicConditions`]), each set once:
    /// an actor names its set by number ([`Self::get_for`]; 0: none).
    dynamic: Vec<DynamicConditions>,
}

/// One actor's conditions for some of its class's Dynamic parents (UE's `SetDynamicCondition`):
/// the leaves they govern and, per flag combination, which of those are active — a lookup, as
/// the class's own conditions are.
#[derive(Clone, Debug, PartialEq)]
struct DynamicConditions {
    /// (parent, condition), by parent.
    conditions: Vec<(usize, Condition)>,
    leaves: LeafMask,
    by_flags: [LeafMask; flags::COMBINATIONS],
}

/// The most distinct sets of per-actor Dynamic conditions a class keeps (a game uses a few:
/// each is a combination of conditions across the class's Dynamic parents).
pub const MAX_DYNAMIC_SETS: usize = 4096;

impl ActiveLeaves {
    /// Builds the table for a class whose leaf groups fit a mask
    /// ([`crate::schema::LeafGroups::fits`]; each group has one condition).
    pub fn new(layout: &ClassLayout) -> Self {
        let parent_leaves: Vec<LeafMask> =
            layout.parents.iter().map(|p| layout.groups.of_leaves(p.leaves.clone())).collect();
        let by_flags = by_flags(layout.parents.iter().zip(&parent_leaves).map(|(p, &l)| (l, p.condition)));
        let initial_only = (0..flags::COMBINATIONS as u8)
            .map(|f| by_flags[(f | flags::INITIAL) as usize] & !by_flags[(f & !flags::INITIAL) as usize])
            .fold(LeafMask::EMPTY, |m, l| m | l);
        Self { by_flags, parent_leaves, initial_only, dynamic: Vec::new() }
    }

    /// Active leaves for a pair with flags `f` of an actor whose Dynamic parents follow set
    /// `dynamic` ([`Self::dynamic_set`]; 0: the class's own conditions).
    #[inline]
    pub fn get_for(&self, f: u8, dynamic: u16) -> LeafMask {
        let m = self.get(f);
        match dynamic.checked_sub(1).and_then(|i| self.dynamic.get(i as usize)) {
            None => m,
            Some(d) => (m & !d.leaves) | d.by_flags[f as usize % flags::COMBINATIONS],
        }
    }

    /// The number of the set of per-actor conditions `conditions` ((parent, condition), each
    /// parent once), made if it is new; 0 for none. `None` when the class already keeps
    /// [`MAX_DYNAMIC_SETS`] others.
    pub fn dynamic_set(&mut self, conditions: &[(usize, Condition)]) -> Option<u16> {
        if conditions.is_empty() {
            return Some(0);
        }
        let mut conditions = conditions.to_vec();
        conditions.sort_unstable_by_key(|&(p, _)| p);
        if let Some(i) = self.dynamic.iter().position(|d| d.conditions == conditions) {
            return Some(i as u16 + 1);
        }
        if self.dynamic.len() >= MAX_DYNAMIC_SETS {
            return None;
        }
        let leaves = conditions.iter().fold(LeafMask::EMPTY, |m, &(p, _)| m | self.parent(p));
        let by_flags = by_flags(conditions.iter().map(|&(p, c)| (self.parent(p), c)));
        self.dynamic.push(DynamicConditions { conditions, leaves, by_flags });
        Some(self.dynamic.len() as u16)
    }

    /// The per-actor conditions of set `dynamic` ((parent, condition), by parent).
    pub fn dynamic_conditions(&self, dynamic: u16) -> &[(usize, Condition)] {
        dynamic.checked_sub(1).and_then(|i| self.dynamic.get(i as usize)).map_or(&[], |d| &d.conditions)
    }

    /// Leaves some pair gets only as initial values (InitialOnly; InitialOrOwner for a
    /// non-owner).
    pub fn initial_only(&self) -> LeafMask {
        self.initial_only
    }

    /// Active leaves for a pair with flags `f`.
    pub fn get(&self, f: u8) -> LeafMask {
        self.by_flags[f as usize % flags::COMBINATIONS]
    }

    /// The leaves of parent `p`.
    pub fn parent(&self, p: usize) -> LeafMask {
        self.parent_leaves.get(p).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_map_matches_ue() {
        let owner_autonomous = flags::OWNER; // owner of an autonomous actor: not simulated
        let other = flags::SIMULATED;
        assert!(condition_active(Condition::OwnerOnly, owner_autonomous));
        assert!(!condition_active(Condition::OwnerOnly, other));
        assert!(!condition_active(Condition::SkipOwner, owner_autonomous));
        assert!(condition_active(Condition::AutonomousOnly, owner_autonomous));
        assert!(!condition_active(Condition::AutonomousOnly, other));
        assert!(condition_active(Condition::SimulatedOrPhysics, flags::PHYSICS));
        assert!(!condition_active(Condition::SimulatedOrPhysicsNoReplay, flags::PHYSICS | flags::REPLAY));
        assert!(condition_active(Condition::InitialOnly, flags::INITIAL | other));
        assert!(!condition_active(Condition::InitialOnly, other));
        assert!(condition_active(Condition::InitialOrOwner, owner_autonomous));
        assert!(condition_active(Condition::ReplayOrOwner, flags::REPLAY));
        assert!(!condition_active(Condition::ReplayOnly, other));
        assert!(!condition_active(Condition::SkipReplay, flags::REPLAY));
        assert!(!condition_active(Condition::SimulatedOnlyNoReplay, flags::SIMULATED | flags::REPLAY));
        for f in 0..32 {
            assert!(!condition_active(Condition::Never, f));
            assert!(condition_active(Condition::None, f) && condition_active(Condition::Custom, f));
        }
    }
}
