//! The kernel's condition map against UE's, written out as a literal table in
//! `shadowrep_tests::expect` (not computed by kernel code): every condition × every one of the 32
//! combinations of the replication flags, then [`ActiveLeaves`] of small classes against the
//! same table.

use shadowrep::net::condition::{condition_active, flags, ActiveLeaves};
use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, PropType, PropertyDecl, StructType, VectorQuant};
use shadowrep_tests::expect::{table_active, RepFlags, UE_CONDITION_TABLE};

/// The kernel's flag bits for `f`, built from the kernel's named constants.
fn kernel_flags(f: RepFlags) -> u8 {
    let mut k = 0;
    if f.initial {
        k |= flags::INITIAL;
    }
    if f.owner {
        k |= flags::OWNER;
    }
    if f.simulated {
        k |= flags::SIMULATED;
    }
    if f.replay {
        k |= flags::REPLAY;
    }
    if f.physics {
        k |= flags::PHYSICS;
    }
    k
}

#[test]
fn the_kernel_flag_bits_are_distinct_and_cover_the_combinations() {
    let bits = [flags::INITIAL, flags::OWNER, flags::SIMULATED, flags::REPLAY, flags::PHYSICS];
    for (i, a) in bits.iter().enumerate() {
        assert_eq!(a.count_ones(), 1, "flag {a:#x} is one bit");
        for b in &bits[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert!(RepFlags::all().all(|f| (kernel_flags(f) as usize) < flags::COMBINATIONS));
    assert_eq!(flags::COMBINATIONS, 32);
}

#[test]
fn condition_map_matches_ues_table_for_every_flag_combination() {
    assert_eq!(UE_CONDITION_TABLE.len(), Condition::ALL.len());
    let mut wrong = Vec::new();
    for c in Condition::ALL {
        for f in RepFlags::all() {
            let want = table_active(c, f);
            if condition_active(c, kernel_flags(f)) != want {
                wrong.push(format!("{c:?} {f:?}: UE {want}"));
            }
        }
    }
    assert!(wrong.is_empty(), "the kernel's condition map differs from UE's:\n{}", wrong.join("\n"));
}

/// The positive cases of the conditions that only a few combinations switch on, spelt out by
/// hand so a table that lost them would be noticed too.
#[test]
fn rare_positive_cases_are_active() {
    use flags::*;
    use Condition::*;
    let on = [
        (SimulatedOnly, SIMULATED),
        (SimulatedOnly, SIMULATED | OWNER),
        (SimulatedOrPhysics, SIMULATED),
        (SimulatedOrPhysics, PHYSICS),
        (SimulatedOrPhysics, OWNER | PHYSICS),
        (SimulatedOrPhysicsNoReplay, OWNER | PHYSICS),
        (SimulatedOnlyNoReplay, SIMULATED),
        (ReplayOnly, REPLAY),
        (ReplayOnly, REPLAY | SIMULATED),
        (ReplayOrOwner, REPLAY),
        (SkipReplay, 0),
        (SkipReplay, SIMULATED | PHYSICS | OWNER | INITIAL),
        (AutonomousOnly, OWNER),
        (InitialOnly, INITIAL | SIMULATED),
        (InitialOrOwner, OWNER),
        (SkipOwner, SIMULATED),
    ];
    let off = [
        (SimulatedOnly, OWNER),
        (SimulatedOrPhysics, OWNER),
        (SimulatedOnlyNoReplay, SIMULATED | REPLAY),
        (SimulatedOrPhysicsNoReplay, PHYSICS | REPLAY),
        (ReplayOnly, SIMULATED | OWNER | INITIAL | PHYSICS),
        (SkipReplay, REPLAY),
        (AutonomousOnly, SIMULATED | OWNER),
        (SkipOwner, OWNER | SIMULATED),
        (Never, INITIAL | OWNER | SIMULATED | REPLAY | PHYSICS),
    ];
    for (c, f) in on {
        assert!(condition_active(c, f), "{c:?} must be active for flags {f:#07b}");
    }
    for (c, f) in off {
        assert!(!condition_active(c, f), "{c:?} must be inactive for flags {f:#07b}");
    }
}

/// A class with one parent per condition; some parents flatten into several leaves.
fn one_parent_per_condition() -> ClassLayout {
    let pair = PropType::Struct(StructType::new("Pair").field("A", PropType::U32).field("B", PropType::F32));
    let mut b = ClassBuilder::new("EveryCondition");
    for (i, c) in Condition::ALL.into_iter().enumerate() {
        let ty = match i % 4 {
            0 => PropType::U32,
            1 => pair.clone(),
            2 => PropType::Vector(VectorQuant::Q10),
            _ => PropType::Bool,
        };
        b = b.property(PropertyDecl::new(format!("P{i}"), ty).condition(c));
    }
    b.build().expect("valid layout")
}

/// `ActiveLeaves` of `layout`, per flag combination, against the table.
fn check_active_leaves(layout: &ClassLayout) {
    let active = ActiveLeaves::new(layout);
    for (p, parent) in layout.parents.iter().enumerate() {
        let want: u64 = parent.leaves.clone().map(|l| 1u64 << l).sum();
        assert_eq!(active.parent(p).0, want, "parent {p}'s leaves");
    }
    for f in RepFlags::all() {
        let want = layout
            .parents
            .iter()
            .filter(|p| table_active(p.condition, f))
            .flat_map(|p| p.leaves.clone())
            .fold(0u64, |m, l| m | 1 << l);
        assert_eq!(active.get(kernel_flags(f)).0, want, "{}: active leaves for {f:?}", layout.name);
    }
}

#[test]
fn active_leaves_match_the_table() {
    let layout = one_parent_per_condition();
    assert!(layout.leaves.len() > Condition::ALL.len(), "some parents have several leaves");
    check_active_leaves(&layout);

    // A subclass whose handles continue after its parent's, with conditions in another order.
    let sub = ClassBuilder::extends("Sub", &layout)
        .property(PropertyDecl::new("Owned", PropType::Rotator).condition(Condition::OwnerOnly))
        .property(PropertyDecl::new("Physics", PropType::U16).condition(Condition::SimulatedOrPhysics))
        .property(PropertyDecl::new("ReplayOnly", PropType::U8).condition(Condition::ReplayOnly))
        .build()
        .expect("valid subclass");
    check_active_leaves(&sub);
}
