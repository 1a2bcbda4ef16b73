//! Expectations written independently of the kernel, for convergence and condition tests.
//!
//! - [`UE_CONDITION_TABLE`]: UE's condition map (`BuildConditionMapFromRepFlags`) written out as
//!   a literal table over the 32 combinations of the five replication flags, and
//!   [`expected_active`], which asks it for a viewer [`Role`].
//!
//! - [`leaf_matches`]: whether a client's bytes of one leaf are what the server's bytes should
//!   become on the wire: exact for every raw kind, within a stated tolerance for quantised
//!   vectors and rotators.
//!
//! Nothing here calls the kernel's condition map or codec: the point is to have something to
//! compare them with.

use shadowrep::schema::{Condition, LeafKind, VectorQuant};

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

// ---------------------------------------------------------------------------------------------
// Leaf values after a trip over the wire
// ---------------------------------------------------------------------------------------------

/// One rotator step: a 16-bit short is 1/65536 of a turn.
pub const ROTATOR_STEP_DEG: f64 = 360.0 / 65536.0;

/// Whether `client` holds what `server`'s value of a `kind` leaf becomes on the wire.
///
/// - Raw kinds (integers, `f32`/`f64`, enums, names, objects, opaque structs, full-precision
///   vectors): the same bytes, bit for bit (NaN payloads and `-0.0` included). A bool: the
///   client holds 1 exactly when the server's byte is non-zero, else 0.
/// - NetQuantize / 10 / 100 (UE's `<scale, MaxBits>` = `<1, 20>`, `<10, 24>`, `<100, 30>`), per
///   component: the server value clamped into `[-2^MaxBits, 2^MaxBits - 1] / scale`; the client
///   value finite, inside that range, on the `1/scale` grid, and within half a step of the
///   clamped server value, plus `f32` slack (`2^-22` relative, for the `f32` the value and its
///   scaled form are held in).
/// - NetQuantizeNormal, per component: the server value clamped into [−1, 1]; the client value
///   inside [−1, 1] and within half a step (1/32767) of it, plus `2^-22`.
/// - Rotators, per axis, on the circle: the client angle inside [0, 360) and at most one step
///   (360/65536°) from the server angle modulo 360, plus `f32` slack (`|angle| · 2^-22`). One step
///   rather than half: the axis is compressed from the `f32` angle, whose rounding near a tie may
///   pick either neighbouring short; two steps off is wrong.
/// - Non-finite server components (NaN, ±inf) of vectors and rotators travel as 0: the client
///   must hold exactly +0.0 there. Finite components are judged as above.
/// - Dynamic arrays are compared element by element elsewhere; here both sides must be equal.
pub fn leaf_matches(kind: LeafKind, server: &[u8], client: &[u8]) -> Result<(), String> {
    let size = kind_size(kind);
    if server.len() != size || client.len() != size {
        return Err(format!(
            "{kind:?}: {} server bytes and {} client bytes, expected {size}",
            server.len(),
            client.len()
        ));
    }
    match kind {
        LeafKind::Bool => {
            let want = (server[0] != 0) as u8;
            if client[0] == want {
                Ok(())
            } else {
                Err(format!("bool: server byte {} must arrive as {want}, client holds {}", server[0], client[0]))
            }
        }
        LeafKind::Vector(VectorQuant::Q1) => packed_vector(1.0, 20, server, client),
        LeafKind::Vector(VectorQuant::Q10) => packed_vector(10.0, 24, server, client),
        LeafKind::Vector(VectorQuant::Q100) => packed_vector(100.0, 30, server, client),
        LeafKind::Vector(VectorQuant::Normal) => {
            for i in 0..3 {
                let (s, c) = (component(server, i), component(client, i));
                let want = if s.is_finite() { s.clamp(-1.0, 1.0) } else { 0.0 };
                let tol = 0.5 / 32767.0 + 2f64.powi(-22);
                check(c.is_finite() && (-1.0..=1.0).contains(&c), || {
                    format!("normal[{i}]: client {c} outside [-1, 1]")
                })?;
                nonfinite_is_zero("normal", i, s, c)?;
                check((c - want).abs() <= tol, || {
                    format!("normal[{i}]: server {s} (clamped {want}), client {c}: off by {} > {tol}", (c - want).abs())
                })?;
            }
            Ok(())
        }
        LeafKind::Rotator => {
            for i in 0..3 {
                let (s, c) = (component(server, i), component(client, i));
                check(c.is_finite() && (0.0..360.0).contains(&c), || {
                    format!("rotator[{i}]: client {c} outside [0, 360)")
                })?;
                nonfinite_is_zero("rotator", i, s, c)?;
                if s.is_finite() {
                    let off = (c - s).rem_euclid(360.0);
                    let off = off.min(360.0 - off);
                    let tol = ROTATOR_STEP_DEG + s.abs() * 2f64.powi(-22) + 1e-9;
                    check(off <= tol, || {
                        format!(
                            "rotator[{i}]: server {s}°, client {c}°: {off}° apart on the circle ({} steps), tolerance one step",
                            off / ROTATOR_STEP_DEG
                        )
                    })?;
                }
            }
            Ok(())
        }
        _ => {
            if server == client {
                Ok(())
            } else {
                Err(format!("{kind:?}: server bytes {server:02x?}, client bytes {client:02x?} (must be equal)"))
            }
        }
    }
}

/// Byte size of a leaf's value (written here, not taken from the kernel).
fn kind_size(kind: LeafKind) -> usize {
    match kind {
        LeafKind::Bool | LeafKind::U8 | LeafKind::I8 | LeafKind::Enum(_) => 1,
        LeafKind::U16 | LeafKind::I16 => 2,
        LeafKind::U32 | LeafKind::PackedU32 | LeafKind::I32 | LeafKind::F32 | LeafKind::Name => 4,
        LeafKind::U64 | LeafKind::I64 | LeafKind::F64 | LeafKind::Object => 8,
        LeafKind::Vector(_) | LeafKind::Rotator => 12,
        LeafKind::Opaque(n) => n as usize,
        LeafKind::Array => 0,
    }
}

fn component(b: &[u8], i: usize) -> f64 {
    f32::from_le_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]]) as f64
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(msg())
    }
}

fn nonfinite_is_zero(what: &str, i: usize, s: f64, c: f64) -> Result<(), String> {
    check(s.is_finite() || (c == 0.0 && c.is_sign_positive()), || {
        format!("{what}[{i}]: non-finite server value {s} must travel as +0, client holds {c}")
    })
}

fn packed_vector(scale: f64, max_bits: i32, server: &[u8], client: &[u8]) -> Result<(), String> {
    let lo = -(2f64.powi(max_bits)) / scale;
    let hi = (2f64.powi(max_bits) - 1.0) / scale;
    for i in 0..3 {
        let (s, c) = (component(server, i), component(client, i));
        let what = format!("NetQuantize<{scale}, {max_bits}>[{i}]");
        // The range ends as f32 values, as the client can hold them.
        let (lo32, hi32) = (lo as f32 as f64, hi as f32 as f64);
        check(c.is_finite() && (lo32..=hi32).contains(&c), || format!("{what}: client {c} outside [{lo}, {hi}]"))?;
        nonfinite_is_zero(&what, i, s, c)?;
        if !s.is_finite() {
            continue;
        }
        let slack = |v: f64| v.abs() * 2f64.powi(-22) + 1e-9;
        let grid = c * scale;
        check((grid - grid.round()).abs() <= slack(grid), || {
            format!("{what}: client {c} is not on the 1/{scale} grid")
        })?;
        let want = s.clamp(lo, hi);
        let tol = 0.5 / scale + slack(want);
        check((c - want).abs() <= tol, || {
            format!("{what}: server {s} (clamped {want}), client {c}: off by {} > {tol}", (c - want).abs())
        })?;
    }
    Ok(())
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

    // -----------------------------------------------------------------------------------------
    // leaf_matches
    // -----------------------------------------------------------------------------------------

    use rand::{Rng, RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn v3(c: [f32; 3]) -> Vec<u8> {
        c.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    const RAW: [LeafKind; 17] = [
        LeafKind::U8,
        LeafKind::I8,
        LeafKind::U16,
        LeafKind::I16,
        LeafKind::U32,
        LeafKind::I32,
        LeafKind::U64,
        LeafKind::I64,
        LeafKind::F32,
        LeafKind::F64,
        LeafKind::Enum(3),
        LeafKind::Enum(8),
        LeafKind::Name,
        LeafKind::Object,
        LeafKind::Opaque(1),
        LeafKind::Opaque(20),
        LeafKind::Vector(VectorQuant::None),
    ];

    #[test]
    fn raw_kinds_must_match_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xe4_0001);
        for kind in RAW {
            for _ in 0..20 {
                let mut server = vec![0u8; kind_size(kind)];
                rng.fill_bytes(&mut server);
                assert_eq!(leaf_matches(kind, &server, &server), Ok(()), "{kind:?}");
                for bit in 0..server.len() * 8 {
                    let mut client = server.clone();
                    client[bit / 8] ^= 1 << (bit % 8);
                    assert!(leaf_matches(kind, &server, &client).is_err(), "{kind:?}: bit {bit} flipped passed");
                }
            }
        }
    }

    #[test]
    fn a_float_missing_its_low_bits_fails() {
        let x = 1234.5678f32;
        assert_ne!(x.to_bits() & 0xffff, 0);
        let truncated = f32::from_bits(x.to_bits() & 0xffff_0000);
        assert!(leaf_matches(LeafKind::F32, &x.to_le_bytes(), &truncated.to_le_bytes()).is_err());
        let y = 1234.5678f64;
        let truncated = f64::from_bits(y.to_bits() & !0xffff_ffff);
        assert!(leaf_matches(LeafKind::F64, &y.to_le_bytes(), &truncated.to_le_bytes()).is_err());
        // -0.0 is not 0.0, and NaN payloads count.
        assert!(leaf_matches(LeafKind::F32, &(-0.0f32).to_le_bytes(), &0.0f32.to_le_bytes()).is_err());
        let (n1, n2) = (f32::from_bits(0x7fc0_0001), f32::from_bits(0x7fc0_0002));
        assert!(leaf_matches(LeafKind::F32, &n1.to_le_bytes(), &n2.to_le_bytes()).is_err());
        assert_eq!(leaf_matches(LeafKind::F32, &n1.to_le_bytes(), &n1.to_le_bytes()), Ok(()));
        let full = LeafKind::Vector(VectorQuant::None);
        assert!(leaf_matches(full, &v3([1.0, 2.0, x]), &v3([1.0, 2.0, truncated as f32])).is_err());
    }

    #[test]
    fn bools_and_sizes() {
        assert_eq!(leaf_matches(LeafKind::Bool, &[1], &[1]), Ok(()));
        assert_eq!(leaf_matches(LeafKind::Bool, &[7], &[1]), Ok(()));
        assert_eq!(leaf_matches(LeafKind::Bool, &[0], &[0]), Ok(()));
        assert!(leaf_matches(LeafKind::Bool, &[0], &[1]).is_err());
        assert!(leaf_matches(LeafKind::Bool, &[1], &[0]).is_err());
        assert!(leaf_matches(LeafKind::Bool, &[7], &[7]).is_err(), "a bool arrives as 0 or 1");
        assert!(leaf_matches(LeafKind::U32, &[0; 4], &[0; 8]).is_err());
        assert!(leaf_matches(LeafKind::Rotator, &[0; 8], &[0; 8]).is_err());
    }

    #[test]
    fn packed_vectors_within_half_a_step() {
        let q10 = LeafKind::Vector(VectorQuant::Q10);
        let ok = |k, s: [f32; 3], c: [f32; 3]| leaf_matches(k, &v3(s), &v3(c));
        assert_eq!(ok(q10, [1.04, -2.0, 0.0], [1.0, -2.0, 0.0]), Ok(()));
        assert_eq!(ok(q10, [1.05, 0.0, 0.0], [1.1, 0.0, 0.0]), Ok(()), "a tie rounds either way");
        assert_eq!(ok(q10, [1.05, 0.0, 0.0], [1.0, 0.0, 0.0]), Ok(()), "a tie rounds either way");
        assert!(ok(q10, [1.04, 0.0, 0.0], [1.1, 0.0, 0.0]).is_err(), "0.06 off");
        assert!(ok(q10, [1.0, 0.0, 0.0], [1.0, 0.0, 0.1]).is_err(), "one step off in z");
        assert!(ok(q10, [1.0, 0.0, 0.0], [1.03, 0.0, 0.0]).is_err(), "off the grid");
        let q1 = LeafKind::Vector(VectorQuant::Q1);
        assert_eq!(ok(q1, [1e9, -1e9, 3.4e38], [1048575.0, -1048576.0, 1048575.0]), Ok(()), "clamped");
        assert!(ok(q1, [1e9, 0.0, 0.0], [1e9, 0.0, 0.0]).is_err(), "beyond the range");
        assert!(ok(q1, [2e6, 0.0, 0.0], [1048574.0, 0.0, 0.0]).is_err(), "not the range end");
        assert_eq!(ok(q1, [f32::NAN, f32::INFINITY, 7.2], [0.0, 0.0, 7.0]), Ok(()));
        assert!(ok(q1, [f32::NAN, 0.0, 0.0], [1.0, 0.0, 0.0]).is_err());
        assert!(ok(q1, [f32::NAN, 0.0, 0.0], [-0.0, 0.0, 0.0]).is_err(), "non-finite travels as +0");
        assert!(ok(q1, [1.0, 0.0, 0.0], [f32::NAN, 0.0, 0.0]).is_err());
        let q100 = LeafKind::Vector(VectorQuant::Q100);
        assert_eq!(ok(q100, [0.125, 0.0, 0.0], [0.13, 0.0, 0.0]), Ok(()));
        assert!(ok(q100, [0.125, 0.0, 0.0], [0.14, 0.0, 0.0]).is_err());
        let normal = LeafKind::Vector(VectorQuant::Normal);
        assert_eq!(ok(normal, [2.0, -0.5, 0.3], [1.0, -0.5, 0.3]), Ok(()));
        assert!(ok(normal, [1.0, 0.0, 0.0], [0.999, 0.0, 0.0]).is_err());
        assert!(ok(normal, [0.0, 0.0, 0.0], [1.01, 0.0, 0.0]).is_err());
    }

    #[test]
    fn rotators_within_one_step_on_the_circle() {
        let step = ROTATOR_STEP_DEG as f32;
        let rot = |s: [f32; 3], c: [f32; 3]| leaf_matches(LeafKind::Rotator, &v3(s), &v3(c));
        let base = 8192.0 * step; // 45°, on the grid
        assert_eq!(rot([base, 0.0, 0.0], [base, 0.0, 0.0]), Ok(()));
        assert_eq!(rot([base, 0.0, 0.0], [base + step, 0.0, 0.0]), Ok(()), "one step off passes");
        assert_eq!(rot([base, 0.0, 0.0], [base - step, 0.0, 0.0]), Ok(()), "one step off passes");
        assert!(rot([base, 0.0, 0.0], [base + 3.0 * step, 0.0, 0.0]).is_err(), "three steps off fails");
        assert!(rot([0.0, base, 0.0], [0.0, base - 3.0 * step, 0.0]).is_err(), "three steps off fails");
        assert_eq!(rot([-90.0, 720.0, -0.001], [270.0, 0.0, 0.0]), Ok(()), "angles wrap");
        assert_eq!(rot([359.999, 0.0, 0.0], [0.0, 0.0, 0.0]), Ok(()), "across 360");
        assert!(rot([90.0, 0.0, 0.0], [-270.0, 0.0, 0.0]).is_err(), "the client holds [0, 360)");
        assert!(rot([90.0, 0.0, 0.0], [450.0, 0.0, 0.0]).is_err(), "the client holds [0, 360)");
        assert_eq!(rot([f32::NAN, 0.0, f32::NEG_INFINITY], [0.0, 0.0, 0.0]), Ok(()));
        assert!(rot([f32::NAN, 0.0, 0.0], [step, 0.0, 0.0]).is_err());
    }

    /// The expectation accepts what the kernel's codec actually delivers, and rejects it moved
    /// by two steps (the codec is only used here, as the thing under test).
    #[test]
    fn the_kernels_codec_output_matches_and_two_steps_off_does_not() {
        use shadowrep::wire::{read_leaf, write_leaf, BitReader, BitWriter};
        let trip = |kind: LeafKind, b: &[u8]| {
            let mut w = BitWriter::new();
            write_leaf(&mut w, kind, b);
            let mut out = vec![0u8; kind_size(kind)];
            read_leaf(&mut BitReader::with_len(w.bytes(), w.len_bits()), kind, &mut out).expect("decodes");
            out
        };
        let mut rng = ChaCha8Rng::seed_from_u64(0xe4_0002);
        let kinds = [
            (LeafKind::Vector(VectorQuant::Q1), 1.0),
            (LeafKind::Vector(VectorQuant::Q10), 0.1),
            (LeafKind::Vector(VectorQuant::Q100), 0.01),
            (LeafKind::Vector(VectorQuant::Normal), 1.0 / 32767.0),
            (LeafKind::Rotator, ROTATOR_STEP_DEG),
        ];
        for (kind, step) in kinds {
            for case in 0..2000 {
                let span = [1.0f32, 100.0, 1e4, 2e6][case % 4];
                let server: [f32; 3] = std::array::from_fn(|_| match rng.random_range(0..10) {
                    0 => f32::from_bits(rng.next_u32()),
                    _ => rng.random_range(-span..span),
                });
                let client = trip(kind, &v3(server));
                assert_eq!(leaf_matches(kind, &v3(server), &client), Ok(()), "{kind:?} {server:?}");
                // Two steps off in one component, where the f32 can still tell.
                let mut moved = [0f32; 3];
                for (i, m) in moved.iter_mut().enumerate() {
                    *m = component(&client, i) as f32;
                }
                let i = case % 3;
                let shifted = moved[i] as f64 + if moved[i] > 0.0 { -2.0 * step } else { 2.0 * step };
                if server[i].is_finite()
                    && server[i].abs() < 1e4
                    && (shifted as f32 as f64 - shifted).abs() < step / 8.0
                {
                    moved[i] = shifted as f32;
                    assert!(leaf_matches(kind, &v3(server), &v3(moved)).is_err(), "{kind:?} {server:?} → {moved:?}");
                }
            }
        }
        for kind in RAW {
            let mut b = vec![0u8; kind_size(kind)];
            rng.fill_bytes(&mut b);
            if let LeafKind::Enum(bits) = kind {
                b[0] &= ((1u16 << bits) - 1) as u8;
            }
            assert_eq!(leaf_matches(kind, &b, &trip(kind, &b)), Ok(()), "{kind:?}");
        }
    }
}
