//! The kernel's compare against the UE-style reference, on random layouts and random frames.
//!
//! The reference ([`shadowrep::reference`]) decides from the documented semantics, not from the
//! kernel's shortcuts: every polled property of every live object — fixed fields and dynamic arrays
//! alike — is compared by value every frame, and a push-based one only when marked. So any write
//! the kernel's compare misses (a bulk write beside an array, an array write the store failed to
//! record) shows up as a differing changelist.
//!
//! What a frame does, with a seeded ChaCha stream per case (proptest itself runs from a fixed seed,
//! so every run sees the same cases):
//! - despawns and spawns, reusing slots (stale ids must not leak into new actors);
//! - writes through every path the store offers: typed `set`, `set` + `mark_dirty`,
//!   `set_and_mark` (marks only on a real change), marks without a write, `plane_mut` bulk writes
//!   with and without `mark_lanes_dirty`, array writes up to their cap and refused writes past it;
//! - `begin_tick`, then every driver compares: every ISA this CPU runs, each sequential and
//!   parallel (with `min_parallel_pages` lowered so small worlds take the parallel path; worlds of
//!   32+ pages also split across rayon jobs), and one world big enough for the default threshold.
//!
//! After every compare, each live actor's changelist must equal the reference's, each driver's
//! shadow must hold what the reference's shadow holds, and under `PushMode::Off` the shadow must
//! equal live. Random layouts include structs that put polled fixed leaves beside arrays.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shadowrep::compare::{
    ChangeSet, CompareConfig, Isa, Kernels, NextPage, PageScan, PushMode, ShadowState, PARALLEL_MIN_PAGES,
};
use shadowrep::reference::{RefChanges, RefWorld};
use shadowrep::schema::{ClassBuilder, ClassLayout, PlaneWidth, PropType, PropertyDecl, StructType, VectorQuant};
use shadowrep::store::{value_bits_eq, ActorId, ClassStore, StoreError};
use shadowrep::value::{ObjectRef, Value, ValueError};
use std::sync::Arc;

fn scalar_type() -> impl Strategy<Value = PropType> {
    prop_oneof![
        Just(PropType::Bool),
        Just(PropType::U8),
        Just(PropType::I8),
        Just(PropType::U16),
        Just(PropType::I16),
        Just(PropType::U32),
        Just(PropType::PackedU32),
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

fn struct_of(fields: Vec<PropType>) -> PropType {
    let mut s = StructType::new("S");
    for (i, t) in fields.into_iter().enumerate() {
        s = s.field(format!("F{i}"), t);
    }
    PropType::Struct(s)
}

fn struct_type(fields: impl Strategy<Value = PropType>) -> impl Strategy<Value = PropType> {
    proptest::collection::vec(fields, 1..4).prop_map(struct_of)
}

fn element_type() -> impl Strategy<Value = PropType> {
    prop_oneof![3 => scalar_type(), 1 => struct_type(scalar_type())]
}

/// Arrays with small caps (writes reach the cap often) and the 16 the old oracle never reached.
fn array_type() -> impl Strategy<Value = PropType> {
    (element_type(), prop_oneof![1u16..=4, Just(16u16), 5u16..=20])
        .prop_map(|(e, max_len)| PropType::Array { element: Box::new(e), max_len })
}

/// A struct with at least one fixed leaf beside at least one dynamic array, in random order.
fn fixed_beside_array() -> impl Strategy<Value = PropType> {
    (proptest::collection::vec(scalar_type(), 1..3), array_type(), any::<bool>()).prop_map(|(mut f, a, first)| {
        if first {
            f.insert(0, a);
        } else {
            f.push(a);
        }
        struct_of(f)
    })
}

fn prop_type() -> impl Strategy<Value = PropType> {
    prop_oneof![
        6 => scalar_type(),
        2 => struct_type(prop_oneof![4 => scalar_type(), 1 => struct_type(scalar_type())]),
        1 => array_type(),
        1 => struct_type(prop_oneof![3 => scalar_type(), 1 => array_type()]),
        2 => fixed_beside_array(),
    ]
}

fn build_layout(decls: Vec<(PropType, u16, bool)>) -> ClassLayout {
    let mut b = ClassBuilder::new("Random");
    for (i, (ty, dim, push)) in decls.into_iter().enumerate() {
        b = b.property(PropertyDecl::new(format!("P{i}"), ty).dim(dim).push(push));
    }
    b.build().expect("generated layouts are valid")
}

fn layout() -> impl Strategy<Value = ClassLayout> {
    proptest::collection::vec((prop_type(), 1u16..=3, any::<bool>()), 1..10).prop_map(build_layout)
}

/// Whether a type may take a class default (no object reference, in an array or not: a class
/// default names no object; a dynamic array's default is its starting elements).
fn takes_default(ty: &PropType) -> bool {
    match ty {
        PropType::Object => false,
        PropType::Array { element, .. } => takes_default(element),
        PropType::Struct(s) => s.fields.iter().all(|(_, t)| takes_default(t)),
        _ => true,
    }
}

/// Random layouts whose properties mostly declare a class default (from the same small domain
/// the writes use, so writes back to the default happen).
fn layout_with_defaults() -> impl Strategy<Value = ClassLayout> {
    proptest::collection::vec((prop_type(), 1u16..=3, any::<bool>(), any::<u64>()), 1..10).prop_map(|decls| {
        let mut b = ClassBuilder::new("Defaults");
        for (i, (ty, dim, push, seed)) in decls.into_iter().enumerate() {
            let mut d = PropertyDecl::new(format!("P{i}"), ty.clone()).dim(dim).push(push);
            if takes_default(&ty) && seed % 4 != 0 {
                d = d.default_value(random_value(&ty, &mut ChaCha8Rng::seed_from_u64(seed)));
            }
            b = b.property(d);
        }
        b.build().expect("generated layouts with defaults are valid")
    })
}

/// A value from a small domain, so equal re-writes, `-0.0`/`0.0` and NaNs all happen. Arrays are
/// often empty or exactly at their cap.
fn random_value(ty: &PropType, rng: &mut ChaCha8Rng) -> Value {
    let f = |rng: &mut ChaCha8Rng| [0.0f32, -0.0, 1.0, 2.5, f32::NAN, 1e9][rng.random_range(0..6)];
    match ty {
        PropType::Bool => Value::Bool(rng.random()),
        PropType::U8 => Value::U8(rng.random_range(0..3)),
        PropType::I8 => Value::I8(rng.random_range(-1..2)),
        PropType::U16 => Value::U16(rng.random_range(0..3) * 300),
        PropType::I16 => Value::I16(rng.random_range(-1..2) * 300),
        PropType::U32 | PropType::PackedU32 => Value::U32(rng.random_range(0..3) << 20),
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
        PropType::Array { element, max_len } => {
            let n = match rng.random_range(0..4) {
                0 => 0,
                1 => *max_len as usize,
                _ => rng.random_range(0..=(*max_len as usize).min(6)),
            };
            Value::Array((0..n).map(|_| random_value(element, rng)).collect())
        }
    }
}

/// Bytes for one lane of a bulk write: small values (so rewrites are often equal, and a sign
/// byte makes `-0.0`) or the lane's current bytes.
fn random_lane_bytes(n: usize, rng: &mut ChaCha8Rng) -> Vec<u8> {
    match rng.random_range(0..3) {
        0 => vec![0; n],
        1 => (0..n).map(|_| [0u8, 1][rng.random_range(0..2)]).collect(),
        _ => (0..n).map(|i| if i + 1 == n { 0x80 } else { 0 }).collect(),
    }
}

/// Writes `bytes` into lane `lane` of page `page` of byte plane `plane` through `plane_mut`.
fn write_plane_lane(store: &mut ClassStore, plane: usize, page: usize, lane: usize, bytes: &[u8]) {
    match store.layout().planes[plane].width {
        PlaneWidth::B1 => store.plane_mut::<u8>(plane).unwrap().page(page)[lane] = bytes[0],
        PlaneWidth::B2 => store.plane_mut::<[u8; 2]>(plane).unwrap().page(page)[lane].copy_from_slice(bytes),
        PlaneWidth::B4 => store.plane_mut::<[u8; 4]>(plane).unwrap().page(page)[lane].copy_from_slice(bytes),
        PlaneWidth::B8 => store.plane_mut::<[u8; 8]>(plane).unwrap().page(page)[lane].copy_from_slice(bytes),
        PlaneWidth::B12 => store.plane_mut::<[u8; 12]>(plane).unwrap().page(page)[lane].copy_from_slice(bytes),
        PlaneWidth::Bit => unreachable!("bit planes have no typed lanes"),
    }
}

struct Driver {
    shadow: ShadowState,
    cfg: CompareConfig,
    changes: ChangeSet,
}

/// One oracle run: the kernel's store and drivers, the reference world, and the actors of both.
struct Sim {
    layout: Arc<ClassLayout>,
    push: PushMode,
    rng: ChaCha8Rng,
    store: ClassStore,
    world: RefWorld,
    drivers: Vec<Driver>,
    /// Live actors: kernel id and reference object.
    live: Vec<(ActorId, usize)>,
    /// Byte planes of fixed leaves: (plane, leaf), for bulk writes.
    byte_planes: Vec<(usize, usize)>,
    ref_changes: RefChanges,
}

impl Sim {
    fn new(layout: ClassLayout, push: PushMode, seed: u64, configs: &[CompareConfig]) -> Self {
        let layout = Arc::new(layout);
        let mut store = ClassStore::new(layout.clone());
        let drivers = configs
            .iter()
            .map(|&cfg| Driver { shadow: ShadowState::new(&mut store), cfg, changes: ChangeSet::new() })
            .collect();
        let byte_planes = layout
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, l)| l.array.is_none())
            .flat_map(|(li, l)| l.planes.clone().map(move |p| (p, li)))
            .filter(|&(p, _)| layout.planes[p].width != PlaneWidth::Bit)
            .collect();
        Self {
            world: RefWorld::new(layout.clone()),
            layout,
            push,
            rng: ChaCha8Rng::seed_from_u64(seed),
            store,
            drivers,
            live: Vec::new(),
            byte_planes,
            ref_changes: RefChanges::default(),
        }
    }

    fn spawn(&mut self, n: usize) {
        for _ in 0..n {
            self.live.push((self.store.spawn(), self.world.spawn()));
        }
    }

    /// Despawns a few actors and spawns a few, so slots are reused.
    fn churn(&mut self) {
        for _ in 0..self.rng.random_range(1..4usize) {
            if self.live.is_empty() {
                break;
            }
            let i = self.rng.random_range(0..self.live.len());
            let (id, obj) = self.live.swap_remove(i);
            self.store.despawn(id).unwrap();
            self.world.destroy(obj);
        }
        let n = self.rng.random_range(0..4);
        self.spawn(n);
    }

    /// `writes` random writes, each through a randomly chosen path.
    fn write(&mut self, writes: usize) {
        let parents = self.layout.parents.len();
        for _ in 0..writes {
            if self.live.is_empty() {
                return;
            }
            let (id, obj) = self.live[self.rng.random_range(0..self.live.len())];
            let parent = self.rng.random_range(0..parents);
            let ty = self.layout.parents[parent].ty.clone();
            match self.rng.random_range(0..10) {
                // Typed write, no mark (an array write is recorded by the store all the same).
                0..=2 => {
                    let v = random_value(&ty, &mut self.rng);
                    self.store.set(id, parent, &v).unwrap();
                    self.world.set(obj, parent, &v).unwrap();
                }
                // Typed write and mark.
                3 | 4 => {
                    let v = random_value(&ty, &mut self.rng);
                    self.store.set(id, parent, &v).unwrap();
                    self.store.mark_dirty(id, parent).unwrap();
                    self.world.set(obj, parent, &v).unwrap();
                    self.world.mark_dirty(obj, parent);
                }
                // The generated setter: marks only on a real change, which the reference decides
                // by value.
                5 => {
                    let v = random_value(&ty, &mut self.rng);
                    let differs = !value_bits_eq(&self.world.get(obj, parent).unwrap(), &v);
                    assert_eq!(self.store.set_and_mark(id, parent, &v).unwrap(), differs);
                    if differs {
                        self.world.set(obj, parent, &v).unwrap();
                        self.world.mark_dirty(obj, parent);
                    }
                }
                // A mark without a write.
                6 => {
                    self.store.mark_dirty(id, parent).unwrap();
                    self.world.mark_dirty(obj, parent);
                }
                // A bulk system writes one plane for several actors, and may mark them.
                7 | 8 => self.bulk_write(),
                // An array write past its cap is refused by both and changes nothing.
                _ => self.over_cap_write(id, obj, parent),
            }
        }
    }

    fn bulk_write(&mut self) {
        if self.byte_planes.is_empty() || self.live.is_empty() {
            return;
        }
        let (plane, leaf) = self.byte_planes[self.rng.random_range(0..self.byte_planes.len())];
        let parent = self.layout.leaves[leaf].parent;
        let width = self.layout.planes[plane].width.lane_bytes();
        let mark = self.rng.random_bool(0.5);
        let mut leaf_bytes = vec![0u8; self.layout.leaves[leaf].kind.byte_size()];
        for _ in 0..self.rng.random_range(1..8usize) {
            let (id, obj) = self.live[self.rng.random_range(0..self.live.len())];
            let bytes = random_lane_bytes(width, &mut self.rng);
            write_plane_lane(&mut self.store, plane, id.page(), id.lane(), &bytes);
            assert!(self.store.leaf_bytes(id.index, leaf, &mut leaf_bytes));
            self.world.write_leaf(obj, leaf, &leaf_bytes).unwrap();
            if mark {
                self.store.mark_lanes_dirty(id.page(), parent, 1 << id.lane());
                self.world.mark_dirty(obj, parent);
            }
        }
    }

    fn over_cap_write(&mut self, id: ActorId, obj: usize, parent: usize) {
        let PropType::Array { element, max_len } = self.layout.parents[parent].ty.clone() else { return };
        let items = (0..=max_len).map(|_| random_value(&element, &mut self.rng)).collect();
        let too_long = Value::Array(items);
        let before = self.store.get(id, parent).unwrap();
        let refused = Err(StoreError::Value(ValueError::ArrayTooLong { max: max_len, len: max_len as usize + 1 }));
        assert_eq!(self.store.set(id, parent, &too_long), refused);
        assert_eq!(self.world.set(obj, parent, &too_long), refused);
        assert!(value_bits_eq(&self.store.get(id, parent).unwrap(), &before), "a refused write changes nothing");
    }

    /// Ticks, compares every driver and the reference, and checks them against each other.
    fn compare_and_check(&mut self, frame: usize) -> Result<(), TestCaseError> {
        self.store.begin_tick();
        self.world.compare(self.push, &mut self.ref_changes);
        let parents = self.layout.parents.len();
        for d in &mut self.drivers {
            d.shadow.compare(&mut self.store, &d.cfg, &mut d.changes).unwrap();
            let at =
                |slot: u32| format!("frame {frame} slot {slot} {:?} parallel {}", d.cfg.kernels.isa, d.cfg.parallel);
            prop_assert_eq!(d.changes.changed_actors(), self.ref_changes.changed_objects(), "{}", at(0));
            for &(id, obj) in &self.live {
                let kernel = d.changes.changelist(&self.layout, id.index);
                prop_assert_eq!(kernel.as_slice(), self.ref_changes.changelist(obj), "{}", at(id.index));
                for parent in 0..parents {
                    let shadow = d.shadow.value(id.index, parent).unwrap();
                    let expected = self.world.shadow_value(obj, parent).unwrap();
                    prop_assert!(
                        value_bits_eq(&shadow, &expected),
                        "{} parent {}: shadow {:?}, reference shadow {:?}",
                        at(id.index),
                        parent,
                        shadow,
                        expected
                    );
                    if self.push == PushMode::Off {
                        let now = self.store.get(id, parent).unwrap();
                        prop_assert!(
                            value_bits_eq(&shadow, &now),
                            "{}: after a polled compare shadow = live",
                            at(id.index)
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

/// Every ISA this CPU runs with each page scan, sequential and parallel; the parallel one takes
/// the parallel path from one page on. The sequential one leaves a changed page's next page to
/// the hardware and the parallel one prefetches it, so each table and scan runs with each
/// [`NextPage`] rule (a prefetch is a hint: it must not change what is found).
fn every_isa(push: PushMode) -> Vec<CompareConfig> {
    let isas: Vec<Kernels> = Isa::ALL.into_iter().filter_map(Kernels::for_isa).collect();
    assert!(isas.iter().any(|k| k.isa == Isa::Wide), "the portable path always runs");
    isas.into_iter()
        .flat_map(|k| PageScan::ALL.map(|scan| k.with_scan(scan)))
        .flat_map(|kernels| {
            [(false, NextPage::Hardware), (true, NextPage::Prefetch)].map(|(parallel, next)| CompareConfig {
                push,
                kernels: kernels.with_next_page(next),
                parallel,
                min_parallel_pages: 1,
                ..CompareConfig::default()
            })
        })
        .collect()
}

fn run(layout: ClassLayout, actors: usize, push: PushMode, seed: u64) -> Result<(), TestCaseError> {
    run_with(layout, actors, push, seed, |live| live.clamp(1, 300) * 3)
}

/// [`run`] with at most `most(live actors)` writes a frame.
fn run_with(
    layout: ClassLayout,
    actors: usize,
    push: PushMode,
    seed: u64,
    most: impl Fn(usize) -> usize,
) -> Result<(), TestCaseError> {
    let mut sim = Sim::new(layout, push, seed, &every_isa(push));
    sim.spawn(actors);
    for frame in 0..4 {
        if frame > 0 && sim.rng.random_bool(0.5) {
            sim.churn();
        }
        let writes = sim.rng.random_range(0..most(sim.live.len()).max(1));
        sim.write(writes);
        sim.compare_and_check(frame)?;
    }
    Ok(())
}

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig { cases, rng_seed: RngSeed::Fixed(seed), ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(48, 0x5eed_0001))]

    #[test]
    fn kernel_changelists_equal_the_reference(
        layout in layout(),
        actors in prop_oneof![3 => 1usize..70, 3 => 120usize..400, 1 => 2048usize..2300],
        push in prop_oneof![Just(PushMode::Off), Just(PushMode::Declared), Just(PushMode::All)],
        seed in any::<u64>(),
    ) {
        run(layout, actors, push, seed)?;
    }
}

proptest! {
    #![proptest_config(config(32, 0x5eed_0003))]

    /// Class defaults: a new actor (spawned, or in a slot churn reused) holds them in the store
    /// and in the reference's object, and both shadows start from them — the same changelists.
    #[test]
    fn kernel_changelists_equal_the_reference_with_class_defaults(
        layout in layout_with_defaults(),
        actors in prop_oneof![3 => 1usize..70, 1 => 120usize..400],
        push in prop_oneof![Just(PushMode::Off), Just(PushMode::Declared), Just(PushMode::All)],
        seed in any::<u64>(),
    ) {
        run(layout, actors, push, seed)?;
    }
}

proptest! {
    #![proptest_config(config(24, 0x5eed_0002))]

    /// Push frames with few marks a page: most pages go to the batched push compare (a few
    /// marked lanes a parent), the rest to the page walk, in the same frame.
    #[test]
    fn sparse_push_frames_equal_the_reference(
        layout in layout(),
        actors in 300usize..2300,
        seed in any::<u64>(),
    ) {
        run_with(layout, actors, PushMode::All, seed, |live| live / 8)?;
    }
}

/// The layout the fixed tests use: polled and push-based fixed leaves beside arrays in one
/// struct, a vector, a bit and a capped array.
fn mixed_layout() -> ClassLayout {
    let beside = StructType::new("Beside")
        .field("A", PropType::F32)
        .field("Inv", PropType::Array { element: Box::new(PropType::U16), max_len: 3 })
        .field("B", PropType::Vector(VectorQuant::Q100));
    ClassBuilder::new("Mixed")
        .property(PropertyDecl::new("Loc", PropType::Vector(VectorQuant::None)))
        .property(PropertyDecl::new("Polled", PropType::Struct(beside.clone())))
        .property(PropertyDecl::new("Pushed", PropType::Struct(beside)).push(true))
        .property(PropertyDecl::new("Flag", PropType::Bool))
        .property(PropertyDecl::new("Hp", PropType::U16).push(true))
        .property(PropertyDecl::new("Items", PropType::array(PropType::U64)))
        .build()
        .unwrap()
}

#[test]
fn full_pages_and_a_dense_frame() {
    for push in [PushMode::Off, PushMode::Declared, PushMode::All] {
        run(mixed_layout(), 256, push, 7).unwrap();
    }
}

/// A world past the default parallel threshold, compared with the default configuration (so the
/// pages split across rayon jobs exactly as in production) beside a sequential scalar driver.
#[test]
fn a_world_big_enough_for_the_default_parallel_split() {
    let actors = PARALLEL_MIN_PAGES * 64 + 37;
    for push in [PushMode::Off, PushMode::Declared] {
        let parallel = CompareConfig { push, ..CompareConfig::default() };
        assert!(parallel.parallel && parallel.min_parallel_pages == PARALLEL_MIN_PAGES);
        let scalar =
            CompareConfig { push, kernels: Kernels::for_isa(Isa::Scalar).unwrap(), parallel: false, ..parallel };
        let mut sim = Sim::new(mixed_layout(), push, 11, &[parallel, scalar]);
        sim.spawn(actors);
        assert!(sim.store.page_count() >= PARALLEL_MIN_PAGES);
        for frame in 0..3 {
            if frame > 0 {
                sim.churn();
            }
            sim.write(actors / 4);
            sim.compare_and_check(frame).unwrap();
        }
    }
}
