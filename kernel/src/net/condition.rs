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

/// Per flag combination, the leaves (bit = leaf index) whose parent's condition is active.
#[derive(Clone, Debug)]
pub struct ActiveLeaves {
    by_flags: [LeafMask; flags::COMBINATIONS],
    /// The leaves of each parent (for per-actor overrides of Custom/Dynamic parents).
    parent_leaves: Vec<LeafMask>,
    /// Leaves some pair gets only as initial values (InitialOnly, InitialOrOwner).
    initial_only: LeafMask,
}

impl ActiveLeaves {
    /// Builds the table for a class of at most 64 leaves.
    pub fn new(layout: &ClassLayout) -> Self {
        let parent_leaves: Vec<LeafMask> = layout
            .parents
            .iter()
            .map(|p| p.leaves.clone().filter(|&l| l < 64).fold(LeafMask::EMPTY, |m, l| m | LeafMask::leaf(l)))
            .collect();
        let mut by_flags = [LeafMask::EMPTY; flags::COMBINATIONS];
        for (f, mask) in by_flags.iter_mut().enumerate() {
            for (p, parent) in layout.parents.iter().enumerate() {
                if condition_active(parent.condition, f as u8) {
                    *mask |= parent_leaves[p];
                }
            }
        }
        let initial_only = (0..flags::COMBINATIONS as u8)
            .map(|f| by_flags[(f | flags::INITIAL) as usize] & !by_flags[(f & !flags::INITIAL) as usize])
            .fold(LeafMask::EMPTY, |m, l| m | l);
        Self { by_flags, parent_leaves, initial_only }
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
