//! Expectations written independently of the kernel, for convergence and condition tests.
//!
//! - [`UE_CONDITION_TABLE`]: UE's condition map (`BuildConditionMapFromRepFlags`) written out as
//!   a literal table over the 32 combinations of the five replication flags, and
//!   [`expected_active`], which asks it for a viewer [`Role`].
//!
//! Nothing here calls the kernel's condition map or codec: the point is to have something to
//! compare them with.

use shadowrep::schema::Condition;

/// The five replication flags UE's condition map reads, for one (connection, actor) pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RepFlags {
    /// `bNetInitial`: the first send of the actor to this connection.
    pub initial: bool,
    /// `bNetOwner`: the connection owns the actor.
    pub owner: bool,
    /// `bNetSimulated`: the connection gets a simulated proxy (the actor's remote role after
    /// the channel downgrades an autonomous proxy for non-owners).
    pub simulated: bool,
    /// `bReplay`: a replay connection.
    pub replay: bool,
    /// `bRepPhysics`: the actor replicates physics.
    pub physics: bool,
}

impl RepFlags {
    /// All 32 combinations, in table-column order.
    pub fn all() -> impl Iterator<Item = RepFlags> {
        (0..32usize).map(RepFlags::from_column)
    }

    /// The flags of table column `col` (`col = I + 2·O + 4·S + 8·R + 16·P`).
    pub fn from_column(col: usize) -> RepFlags {
        RepFlags {
            initial: col & 1 != 0,
            owner: col & 2 != 0,
            simulated: col & 4 != 0,
            replay: col & 8 != 0,
            physics: col & 16 != 0,
        }
    }

    /// This combination's column in [`UE_CONDITION_TABLE`].
    pub fn column(self) -> usize {
        self.initial as usize
            | (self.owner as usize) << 1
            | (self.simulated as usize) << 2
            | (self.replay as usize) << 3
            | (self.physics as usize) << 4
    }
}

/// UE's condition map, one row per condition. Column `c` of a row (spaces ignored) is whether a
/// property with that condition is sent to a pair whose flags are [`RepFlags::from_column`]`(c)`:
///
/// ```text
/// column = I + 2·O + 4·S + 8·R + 16·P   (Initial, Owner, Simulated, Replay, Physics)
/// groups of 8, left to right:  R=0 P=0 | R=1 P=0 | R=0 P=1 | R=1 P=1
/// within a group (S O I):      000 001 010 011 100 101 110 111
/// ```
///
/// From UE 5's `BuildConditionMapFromRepFlags`: None, Custom and Dynamic always (Custom and
/// Dynamic are then switched per object); InitialOnly = I; OwnerOnly = O; SkipOwner = ¬O;
/// SimulatedOnly = S; AutonomousOnly = ¬S; SimulatedOrPhysics = S ∨ P; InitialOrOwner = I ∨ O;
/// ReplayOrOwner = R ∨ O; ReplayOnly = R; SimulatedOnlyNoReplay = S ∧ ¬R;
/// SimulatedOrPhysicsNoReplay = (S ∨ P) ∧ ¬R; SkipReplay = ¬R; Never never.
pub const UE_CONDITION_TABLE: [(Condition, &str); 16] = [
    (Condition::None, /*                      */ "11111111 11111111 11111111 11111111"),
    (Condition::InitialOnly, /*               */ "01010101 01010101 01010101 01010101"),
    (Condition::OwnerOnly, /*                 */ "00110011 00110011 00110011 00110011"),
    (Condition::SkipOwner, /*                 */ "11001100 11001100 11001100 11001100"),
    (Condition::SimulatedOnly, /*             */ "00001111 00001111 00001111 00001111"),
    (Condition::AutonomousOnly, /*            */ "11110000 11110000 11110000 11110000"),
    (Condition::SimulatedOrPhysics, /*        */ "00001111 00001111 11111111 11111111"),
    (Condition::InitialOrOwner, /*            */ "01110111 01110111 01110111 01110111"),
    (Condition::Custom, /*                    */ "11111111 11111111 11111111 11111111"),
    (Condition::ReplayOrOwner, /*             */ "00110011 11111111 00110011 11111111"),
    (Condition::ReplayOnly, /*                */ "00000000 11111111 00000000 11111111"),
    (Condition::SimulatedOnlyNoReplay, /*     */ "00001111 00000000 00001111 00000000"),
    (Condition::SimulatedOrPhysicsNoReplay, /**/ "00001111 00000000 11111111 00000000"),
    (Condition::SkipReplay, /*                */ "11111111 00000000 11111111 00000000"),
    (Condition::Dynamic, /*                   */ "11111111 11111111 11111111 11111111"),
    (Condition::Never, /*                     */ "00000000 00000000 00000000 00000000"),
];

/// [`UE_CONDITION_TABLE`]'s answer for `cond` under `flags`.
pub fn table_active(cond: Condition, flags: RepFlags) -> bool {
    let (_, row) = UE_CONDITION_TABLE.iter().find(|(c, _)| *c == cond).expect("every condition has a row");
    let cells: Vec<u8> = row.bytes().filter(|b| *b != b' ').collect();
    assert_eq!(cells.len(), 32, "{cond:?}: a row has 32 cells");
    match cells[flags.column()] {
        b'1' => true,
        b'0' => false,
        other => panic!("{cond:?}: cell {:?}", other as char),
    }
}

/// How a connection sees an actor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Role {
    /// The connection owns the actor.
    pub owner: bool,
    /// The actor's remote role is an autonomous proxy (only its owner gets it as one; UE's
    /// channel downgrades it to a simulated proxy for everyone else).
    pub autonomous: bool,
    /// A replay connection.
    pub replay: bool,
    /// The actor replicates physics.
    pub physics: bool,
}

impl Role {
    /// The owner of an autonomous actor (its autonomous proxy).
    pub const OWNER: Role = Role { owner: true, autonomous: true, replay: false, physics: false };
    /// The owner of a non-autonomous actor (a simulated proxy that owns it).
    pub const OWNER_SIMULATED: Role = Role { owner: true, autonomous: false, replay: false, physics: false };
    /// Any other game connection (a simulated proxy).
    pub const SIMULATED: Role = Role { owner: false, autonomous: false, replay: false, physics: false };
    /// A simulated viewer of an actor that replicates physics.
    pub const PHYSICS: Role = Role { owner: false, autonomous: false, replay: false, physics: true };
    /// A replay connection that does not own the actor.
    pub const REPLAY: Role = Role { owner: false, autonomous: false, replay: true, physics: false };

    /// The same role for an actor that replicates physics.
    pub fn with_physics(self) -> Role {
        Role { physics: true, ..self }
    }

    /// The replication flags UE's actor channel builds for this role.
    pub fn flags(self, initial: bool) -> RepFlags {
        RepFlags {
            initial,
            owner: self.owner,
            simulated: !(self.owner && self.autonomous),
            replay: self.replay,
            physics: self.physics,
        }
    }
}

/// Whether UE sends a property with condition `cond` to a connection in `role` (`initial`: the
/// actor's first send to that connection). Custom and Dynamic answer their default (active).
pub fn expected_active(cond: Condition, role: Role, initial: bool) -> bool {
    table_active(cond, role.flags(initial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_has_one_well_formed_row() {
        for c in Condition::ALL {
            assert_eq!(UE_CONDITION_TABLE.iter().filter(|(r, _)| *r == c).count(), 1, "{c:?}");
            for f in RepFlags::all() {
                table_active(c, f);
            }
        }
        for col in 0..32 {
            assert_eq!(RepFlags::from_column(col).column(), col);
        }
    }

    /// The rows read back as the flags they are named after (a check of the table's layout,
    /// one flag at a time).
    #[test]
    fn single_flag_rows_follow_their_flag() {
        for f in RepFlags::all() {
            assert_eq!(table_active(Condition::InitialOnly, f), f.initial, "{f:?}");
            assert_eq!(table_active(Condition::OwnerOnly, f), f.owner, "{f:?}");
            assert_eq!(table_active(Condition::SimulatedOnly, f), f.simulated, "{f:?}");
            assert_eq!(table_active(Condition::ReplayOnly, f), f.replay, "{f:?}");
            assert!(table_active(Condition::None, f) && !table_active(Condition::Never, f));
        }
    }

    #[test]
    fn roles_by_hand() {
        use Condition::*;
        // (condition, owner, owner of a simulated actor, simulated, physics viewer, replay)
        let rows = [
            (None, [true, true, true, true, true]),
            (OwnerOnly, [true, true, false, false, false]),
            (SkipOwner, [false, false, true, true, true]),
            (SimulatedOnly, [false, true, true, true, true]),
            (AutonomousOnly, [true, false, false, false, false]),
            (SimulatedOrPhysics, [false, true, true, true, true]),
            (ReplayOrOwner, [true, true, false, false, true]),
            (ReplayOnly, [false, false, false, false, true]),
            (SimulatedOnlyNoReplay, [false, true, true, true, false]),
            (SimulatedOrPhysicsNoReplay, [false, true, true, true, false]),
            (SkipReplay, [true, true, true, true, false]),
            (Never, [false, false, false, false, false]),
        ];
        let roles = [Role::OWNER, Role::OWNER_SIMULATED, Role::SIMULATED, Role::PHYSICS, Role::REPLAY];
        for (c, want) in rows {
            for (role, want) in roles.into_iter().zip(want) {
                assert_eq!(expected_active(c, role, false), want, "{c:?} {role:?}");
            }
        }
        // Physics lets SimulatedOrPhysics reach the autonomous owner, but not through NoReplay
        // to a replay.
        assert!(expected_active(SimulatedOrPhysics, Role::OWNER.with_physics(), false));
        assert!(expected_active(SimulatedOrPhysicsNoReplay, Role::OWNER.with_physics(), false));
        assert!(!expected_active(SimulatedOrPhysicsNoReplay, Role::REPLAY.with_physics(), false));
        // Initial.
        assert!(!expected_active(InitialOnly, Role::SIMULATED, false));
        assert!(expected_active(InitialOnly, Role::SIMULATED, true));
        assert!(expected_active(InitialOrOwner, Role::OWNER, false));
        assert!(!expected_active(InitialOrOwner, Role::SIMULATED, false));
    }
}
