//! The kernel's compare against the UE-style reference, on random layouts and random frames.
//!
//! Random layouts (every property kind, nested structs, structs holding arrays, arrays of structs,
//! static arrays, push and polled parents), random actor counts (partial pages), spawns and
//! despawns that reuse slots, random mutations with random dirty marks. Every frame, for every
//! dispatch path this CPU has (scalar, wide, AVX2, AVX-512) and both sequential and parallel
//! drivers, each actor's changelist must equal the reference's, and each shadow must hold what the
//! reference's shadow holds.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::compare::{ChangeSet, CompareConfig, Isa, Kernels, PushMode, ShadowState};
use shadowrep::reference::{RefChanges, RefWorld};
use shadowrep::schema::{ClassBuilder, ClassLayout, PropType, PropertyDecl, StructType, VectorQuant};
use shadowrep::store::{value_bits_eq, ActorId, ClassStore};
use shadowrep::value::{ObjectRef, Value};
use std::sync::Arc;

fn scalar_type() -> impl Strategy<Value = PropType> {
    prop_oneof![
        Just(PropType::Bool),
        Just(PropType::U8),
        Just(PropType::I8),
        Just(PropType::U16),
        Just(PropType::I16),
        Just(PropType::U32),
        Just(PropType::I32),
        Just(PropType::U64),
        Just(PropType::I64),
        Just(PropType::F32),
        Just(PropType::F64),
        (1u8..=8).prop_map(|bits| PropType::Enum { bits }),
        prop_oneof![
            Just(VectorQuant::None),
            Just(VectorQuant::Q1),
            Just(VectorQuant::Q10),
            Just(VectorQuant::Q100),
            Just(VectorQuant::Normal)
        ]
        .prop_map(PropType::Vector),
        Just(PropType::Rotator),
        Just(PropType::Name),
        Just(PropType::Object),
        (1u16..=20).prop_map(|size| PropType::Opaque { name: "Blob".into(), size }),
    ]
}

fn struct_of(fields: impl Strategy<Value = PropType>) -> impl Strategy<Value = PropType> {
    proptest::collection::vec(fields, 1..4).prop_map(|f| {
        let mut s = StructType::new("S");
        for (i, t) in f.into_iter().enumerate() {
            s = s.field(format!("F{i}"), t);
        }
        PropType::Struct(s)
    })
}

fn element_type() -> impl Strategy<Value = PropType> {
    prop_oneof![3 => scalar_type(), 1 => struct_of(scalar_type())]
}

fn array_type() -> impl Strategy<Value = PropType> {
    element_type().prop_map(|e| PropType::Array { element: Box::new(e), max_len: 16 })
}

fn prop_type() -> impl Strategy<Value = PropType> {
    prop_oneof![
        6 => scalar_type(),
        2 => struct_of(prop_oneof![4 => scalar_type(), 1 => struct_of(scalar_type())]),
        1 => array_type(),
        1 => struct_of(prop_oneof![3 => scalar_type(), 1 => array_type()]),
    ]
}

fn layout() -> impl Strategy<Value = ClassLayout> {
    proptest::collection::vec((prop_type(), 1u16..=3, any::<bool>()), 1..10).prop_map(|decls| {
        let mut b = ClassBuilder::new("Random");
        for (i, (ty, dim, push)) in decls.into_iter().enumerate() {
            b = b.property(PropertyDecl::new(format!("P{i}"), ty).dim(dim).push(push));
        }
        b.build().expect("generated layouts are valid")
    })
}

/// A value from a small domain, so equal re-writes, `-0.0`/`0.0` and NaNs all happen.
fn random_value(ty: &PropType, rng: &mut ChaCha8Rng) -> Value {
    let f = |rng: &mut ChaCha8Rng| [0.0f32, -0.0, 1.0, 2.5, f32::NAN, 1e9][rng.random_range(0..6)];
    match ty {
        PropType::Bool => Value::Bool(rng.random()),
        PropType::U8 => Value::U8(rng.random_range(0..3)),
        PropType::I8 => Value::I8(rng.random_range(-1..2)),
        PropType::U16 => Value::U16(rng.random_range(0..3) * 300),
        PropType::I16 => Value::I16(rng.random_range(-1..2) * 300),
        PropType::U32 => Value::U32(rng.random_range(0..3) << 20),
        PropType::I32 => Value::I32(rng.random_range(-1..2)),
        PropType::U64 => Value::U64(rng.random_range(0..3) << 40),
        PropType::I64 => Value::I64(rng.random_range(-1..2) << 40),
        PropType::F32 => Value::F32(f(rng)),
        PropType::F64 => Value::F64(f(rng) as f64),
        PropType::Enum { bits } => Value::Enum(rng.random_range(0..(1u16 << bits).min(256)) as u8),
        PropType::Vector(_) => Value::Vector([f(rng), f(rng), f(rng)]),
        PropType::Rotator => Value::Rotator([f(rng), f(rng), f(rng)]),
        PropType::Name => Value::Name(rng.random_range(0..3)),
        PropType::Object => Value::Object(ObjectRef(rng.random_range(0..3))),
        PropType::Opaque { size, .. } => Value::Opaque((0..*size).map(|_| rng.random_range(0..2)).collect()),
        PropType::Struct(s) => Value::Struct(s.fields.iter().map(|(_, t)| random_value(t, rng)).collect()),
        PropType::Array { element, .. } => {
            let n = rng.random_range(0..5);
            Value::Array((0..n).map(|_| random_value(element, rng)).collect())
        }
    }
}

struct Driver {
    shadow: ShadowState,
    cfg: CompareConfig,
    changes: ChangeSet,
}

fn run(layout: ClassLayout, actors: usize, push: PushMode, seed: u64) -> Result<(), TestCaseError> {
    let layout = Arc::new(layout);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut store = ClassStore::new(layout.clone());
    let mut world = RefWorld::new(layout.clone());
    let mut drivers: Vec<Driver> = Isa::ALL
        .into_iter()
        .filter_map(Kernels::for_isa)
        .flat_map(|kernels| {
            [false, true].map(|parallel| CompareConfig { push, kernels, parallel, min_parallel_pages: 0 })
        })
        .map(|cfg| Driver { shadow: ShadowState::new(&mut store), cfg, changes: ChangeSet::new() })
        .collect();
    // slot -> (actor id, reference object)
    let mut live: Vec<(ActorId, usize)> = Vec::new();
    for _ in 0..actors {
        live.push((store.spawn(), world.spawn()));
    }
    let parents = layout.parents.len();
    let mut ref_changes = RefChanges::default();
    for frame in 0..5 {
        // Despawn and respawn a few: slots are reused, stale ids must not leak into new actors.
        if frame > 0 && !live.is_empty() && rng.random_bool(0.5) {
            for _ in 0..rng.random_range(1..4usize) {
                let i = rng.random_range(0..live.len());
                let (id, obj) = live.swap_remove(i);
                store.despawn(id).unwrap();
                world.destroy(obj);
                if live.is_empty() {
                    break;
                }
            }
            for _ in 0..rng.random_range(0..4) {
                live.push((store.spawn(), world.spawn()));
            }
        }
        let writes = rng.random_range(0..live.len().max(1) * 3);
        for _ in 0..writes {
            if live.is_empty() {
                break;
            }
            let (id, obj) = live[rng.random_range(0..live.len())];
            let parent = rng.random_range(0..parents);
            if rng.random_bool(0.8) {
                let v = random_value(&layout.parents[parent].ty, &mut rng);
                store.set(id, parent, &v).unwrap();
                world.set(obj, parent, &v).unwrap();
            }
            if rng.random_bool(0.6) {
                store.mark_dirty(id, parent).unwrap();
                world.mark_dirty(obj, parent);
            }
        }
        store.begin_tick();
        world.compare(push, &mut ref_changes);
        for d in &mut drivers {
            d.shadow.compare(&mut store, &d.cfg, &mut d.changes).unwrap();
            for &(id, obj) in &live {
                let kernel = d.changes.changelist(&layout, id.index);
                prop_assert_eq!(
                    kernel.as_slice(),
                    ref_changes.changelist(obj),
                    "frame {} slot {} isa {:?} parallel {}",
                    frame,
                    id.index,
                    d.cfg.kernels.isa,
                    d.cfg.parallel
                );
                for parent in 0..parents {
                    let shadow = d.shadow.value(id.index, parent).unwrap();
                    let expected = world.shadow_value(obj, parent).unwrap();
                    prop_assert!(
                        value_bits_eq(&shadow, &expected),
                        "shadow of {} parent {}: {:?} vs {:?}",
                        id.index,
                        parent,
                        shadow,
                        expected
                    );
                    if push == PushMode::Off {
                        let now = store.get(id, parent).unwrap();
                        prop_assert!(value_bits_eq(&shadow, &now), "after compare the shadow equals live");
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn kernel_changelists_equal_the_reference(
        layout in layout(),
        actors in prop_oneof![1usize..70, 120usize..200],
        push in prop_oneof![Just(PushMode::Off), Just(PushMode::Declared), Just(PushMode::All)],
        seed in any::<u64>(),
    ) {
        run(layout, actors, push, seed)?;
    }
}

#[test]
fn full_pages_and_a_dense_frame() {
    let layout = ClassBuilder::new("Dense")
        .property(PropertyDecl::new("A", PropType::Vector(VectorQuant::Q100)))
        .property(PropertyDecl::new("B", PropType::Bool))
        .property(PropertyDecl::new("C", PropType::U16).push(true))
        .property(PropertyDecl::new("D", PropType::array(PropType::U64)))
        .build()
        .unwrap();
    for push in [PushMode::Off, PushMode::Declared, PushMode::All] {
        run(layout.clone(), 256, push, 7).unwrap();
    }
}
