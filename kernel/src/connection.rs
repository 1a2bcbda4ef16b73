//! Per-connection send state: replication flags, the condition map, and the 16-byte state kept for
//! every (connection, actor) pair.
//!
//! A connection sees an actor through five flags (UE's `FReplicationFlags` subset that conditions
//! read): *initial* (the actor's channel open is not acknowledged yet), *owner* (the connection
//! owns the actor), *simulated* (the connection holds a simulated proxy: anyone but an owner of an
//! autonomous actor), *replay* (a replay connection) and *physics* (the actor replicates physics).
//! [`condition_active`] is UE's condition map over them; [`ActiveLeaves`] turns it into one leaf
//! mask per flag combination, computed once per class, so the per-pair question "which leaves may
//! this connection receive?" is one table lookup.
//!
//! [`PairState`] is all a connection keeps per actor: where its catch-up stands (the frame it last
//! sent), what to resend after a NAK, and channel flags — 16 bytes, Iris's figure.

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
    by_flags: [u64; flags::COMBINATIONS],
    /// Leaves of Custom/Dynamic parents, per parent (for per-actor overrides).
    parent_leaves: Vec<u64>,
}

impl ActiveLeaves {
    /// Builds the table for a class of at most 64 leaves.
    pub fn new(layout: &ClassLayout) -> Self {
        let parent_leaves: Vec<u64> =
            layout.parents.iter().map(|p| p.leaves.clone().filter(|&l| l < 64).fold(0u64, |m, l| m | 1 << l)).collect();
        let mut by_flags = [0u64; flags::COMBINATIONS];
        for (f, mask) in by_flags.iter_mut().enumerate() {
            for (p, parent) in layout.parents.iter().enumerate() {
                if condition_active(parent.condition, f as u8) {
                    *mask |= parent_leaves[p];
                }
            }
        }
        Self { by_flags, parent_leaves }
    }

    /// Active leaves for a pair with flags `f`.
    pub fn get(&self, f: u8) -> u64 {
        self.by_flags[f as usize % flags::COMBINATIONS]
    }

    /// The leaves of parent `p`.
    pub fn parent(&self, p: usize) -> u64 {
        self.parent_leaves.get(p).copied().unwrap_or(0)
    }
}

/// Bits of [`PairState::flags`].
pub mod pair {
    /// A bunch carrying this actor's channel open has been sent since the last loss of one.
    pub const OPEN_SENT: u8 = 1;
    /// A packet carrying the open was acknowledged: the client has the actor.
    pub const OPEN_ACKED: u8 = 2;
    /// The pair is queued in its connection's pending list.
    pub const PENDING: u8 = 4;
    /// Some packet carried this actor's open: the client may have it, so its end needs a close
    /// (kept even when that packet is later lost, as another may still deliver the open).
    pub const EVER_OPENED: u8 = 8;
}

/// What one connection keeps for one actor: 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PairState {
    /// Leaves (bit = leaf index) whose packet was lost: their current value is sent next.
    pub resend: u64,
    /// The frame this pair last sent; everything that changed up to it was sent (0: never).
    pub sent_through: u32,
    /// [`pair`] bits.
    pub flags: u8,
    _pad: [u8; 3],
}

const _: () = assert!(std::mem::size_of::<PairState>() == 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_state_packs_into_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<PairState>(), 16);
        assert_eq!(memoffset::offset_of!(PairState, resend), 0);
        assert_eq!(memoffset::offset_of!(PairState, sent_through), 8);
        assert_eq!(memoffset::offset_of!(PairState, flags), 12);
    }

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
