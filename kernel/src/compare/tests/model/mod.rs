//! A model of the compare, run against it on random classes, actors, writes and drivers.
//!
//! A run builds a random class (scalars, structs, static and dynamic arrays, structs holding a
//! dynamic array; a few properties, or more than 63 parents), spawns actors, and for a dozen
//! frames writes, marks, spawns and despawns (`world`), then lets each of a few drivers — which
//! join, leave and skip frames — compare the whole store, a lane selection (`compare_lanes`) or
//! the selected lanes of listed pages (`compare_selected`), each time with a random diff table
//! ([`Kernels`]), push mode, thread setting, push validation and dirty statistics; some writes
//! land between two drivers' compares of a tick. Beside each driver a plain model (`expect`: per
//! slot and leaf the bytes last seen, per slot the marks not yet consumed, the validation shadow,
//! the statistics) says what each compare must report and leave behind, and every compare is
//! checked against it: the leaf masks and page lanes reported, the shadow bytes of every occupied
//! lane (dynamic arrays too), the driver's marks and its dirty list, the unmarked changes found by
//! validation, the dirty statistics. `runs` holds the cases.
//!
//! This file: the random classes and values, where a slot's bytes sit, and a bulk write of one lane.

use super::super::*;
use crate::schema::{ClassBuilder, PlaneWidth, PropType, PropertyDecl, StructType, VectorQuant};
use crate::store::read_lane;
use crate::store::BitIter;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::ops::{Range, RangeInclusive};

mod expect;
mod runs;
mod world;

/// One slot's bytes: its fixed leaves' plane bytes end to end, and each dynamic array's element
/// bytes.
#[derive(Clone, Default)]
struct Slot {
    fixed: Vec<u8>,
    arrays: Vec<Vec<u8>>,
}

/// Where a leaf's bytes sit in a [`Slot`].
enum LeafAt {
    /// A fixed leaf: these bytes of `fixed`, its planes' lane bytes one after the other.
    Fixed(Range<usize>),
    /// A dynamic array: this one of `arrays`.
    Array(usize),
}

impl Slot {
    fn leaf(&self, at: &LeafAt) -> &[u8] {
        match at {
            LeafAt::Fixed(bytes) => &self.fixed[bytes.clone()],
            LeafAt::Array(a) => &self.arrays[*a],
        }
    }

    /// Takes a leaf's bytes from `from`.
    fn take_leaf(&mut self, at: &LeafAt, from: &Slot) {
        match at {
            LeafAt::Fixed(bytes) => self.fixed[bytes.clone()].copy_from_slice(&from.fixed[bytes.clone()]),
            LeafAt::Array(a) => self.arrays[*a].clone_from(&from.arrays[*a]),
        }
    }
}

/// Which entry point a compare goes through.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `compare`: every lane.
    Whole,
    /// `compare_lanes`: the selected lanes.
    Lanes,
    /// `compare_selected`: the selected lanes of the listed pages.
    Selected,
}

/// A random class, where its leaves sit in a [`Slot`], and what its new actors hold.
struct Class {
    layout: Arc<ClassLayout>,
    /// Per leaf, where its bytes sit.
    at: Vec<LeafAt>,
    /// The bytes of a slot's fixed leaves.
    fixed_bytes: usize,
    /// A new actor's bytes: the class defaults.
    defaults: Slot,
}

impl Class {
    /// A class of a random number of properties in `properties`, each push-based or not; with
    /// `dims`, a fifth of them static arrays (2–3 parents each); with `arrays`, dynamic arrays.
    fn random(rng: &mut ChaCha8Rng, properties: RangeInclusive<usize>, dims: bool, arrays: bool) -> Self {
        let mut builder = ClassBuilder::new("Model");
        for i in 0..rng.random_range(properties) {
            let ty = prop(rng, arrays);
            let dim = if dims && rng.random_bool(0.2) { rng.random_range(2..4) } else { 1 };
            builder = builder.property(PropertyDecl::new(format!("P{i}"), ty).dim(dim).push(rng.random_bool(0.6)));
        }
        let layout = Arc::new(builder.build().expect("random properties make a valid class"));
        assert!(layout.parents.len() <= 128, "the model keeps a slot's marks in a u128");
        let mut fixed_bytes = 0;
        let at = layout
            .leaves
            .iter()
            .map(|leaf| match leaf.array {
                Some(a) => LeafAt::Array(a),
                None => {
                    let start = fixed_bytes;
                    fixed_bytes +=
                        layout.planes[leaf.planes.clone()].iter().map(|p| p.width.lane_bytes()).sum::<usize>();
                    LeafAt::Fixed(start..fixed_bytes)
                }
            })
            .collect();
        let mut class = Self { layout: layout.clone(), at, fixed_bytes, defaults: Slot::default() };
        // The defaults as the store writes them: an actor spawned into a new store.
        let mut scratch = ClassStore::new(layout);
        let actor = scratch.spawn();
        class.defaults = class.live_slot(&scratch, actor.index as usize);
        class
    }

    /// Slot `slot` of `store`.
    fn live_slot(&self, store: &ClassStore, slot: usize) -> Slot {
        let (page, lane) = (slot / PAGE_LANES, slot % PAGE_LANES);
        self.read_slot(store.live().page(page), lane, |a| store.array_bytes(slot as u32, a))
    }

    /// Lane `lane` of a page (live or shadow) and its dynamic arrays (`array(a)`: array `a`'s
    /// element bytes).
    fn read_slot<'a>(&self, page: &[u8], lane: usize, array: impl Fn(usize) -> &'a [u8]) -> Slot {
        let mut fixed = vec![0; self.fixed_bytes];
        for (leaf, at) in self.layout.leaves.iter().zip(&self.at) {
            let LeafAt::Fixed(bytes) = at else { continue };
            let mut start = bytes.start;
            for plane in &self.layout.planes[leaf.planes.clone()] {
                let end = start + plane.width.lane_bytes();
                read_lane(page, plane.page_offset, plane.width, lane, &mut fixed[start..end]);
                start = end;
            }
        }
        Slot { fixed, arrays: (0..self.layout.arrays.len()).map(|a| array(a).to_vec()).collect() }
    }

    /// Whether a compare in `push` mode considers `parent`'s fixed leaves only where marked.
    fn push_ruled(&self, push: PushMode, parent: usize) -> bool {
        match push {
            PushMode::Off => false,
            PushMode::Declared => self.layout.parents[parent].push,
            PushMode::All => true,
        }
    }

    /// Whether validation in `push` mode has anything to check: a push-ruled fixed leaf with planes.
    fn validates(&self, push: PushMode) -> bool {
        let layout = &self.layout;
        (0..layout.parents.len()).any(|p| {
            self.push_ruled(push, p)
                && layout.leaves[layout.parents[p].leaves.clone()]
                    .iter()
                    .any(|l| l.array.is_none() && !l.planes.is_empty())
        })
    }

    /// Every parent's mark bit: a new actor's marks.
    fn all_parents(&self) -> u128 {
        u128::MAX >> (128 - self.layout.parents.len())
    }
}

/// Writes `first` and then zeros into lane `lane` of byte plane `plane` on page `page`, as a bulk
/// system writes a column (`plane_mut`), marking nothing.
fn write_plane_lane(store: &mut ClassStore, plane: usize, page: usize, lane: usize, first: u8) {
    fn put<const N: usize>(store: &mut ClassStore, plane: usize, page: usize, lane: usize, first: u8) {
        let mut bytes = [0; N];
        bytes[0] = first;
        store.plane_mut::<[u8; N]>(plane).expect("a byte plane of N bytes a lane").page(page)[lane] = bytes;
    }
    match store.layout().planes[plane].width {
        PlaneWidth::B1 => put::<1>(store, plane, page, lane, first),
        PlaneWidth::B2 => put::<2>(store, plane, page, lane, first),
        PlaneWidth::B4 => put::<4>(store, plane, page, lane, first),
        PlaneWidth::B8 => put::<8>(store, plane, page, lane, first),
        PlaneWidth::B12 => put::<12>(store, plane, page, lane, first),
        PlaneWidth::Bit => unreachable!("bulk writes pick byte planes"),
    }
}

/// Every diff table this machine runs: each ISA with each page scan, with and without the
/// prefetch of a changed page's next page.
fn tables() -> Vec<Kernels> {
    Isa::ALL
        .into_iter()
        .filter_map(Kernels::for_isa)
        .flat_map(|k| PageScan::ALL.map(|scan| k.with_scan(scan)))
        .flat_map(|k| NextPage::ALL.map(|n| k.with_next_page(n)))
        .collect()
}

/// A random property type: mostly scalars; structs; with `arrays`, dynamic arrays and structs
/// holding one.
fn prop(rng: &mut ChaCha8Rng, arrays: bool) -> PropType {
    match rng.random_range(0..20) {
        0..12 => scalar(rng),
        12..15 => {
            let mut s = StructType::new("S");
            for i in 0..rng.random_range(1..4) {
                s = s.field(format!("F{i}"), scalar(rng));
            }
            PropType::Struct(s)
        }
        _ if !arrays => scalar(rng),
        15..17 => PropType::Array { element: Box::new(scalar(rng)), max_len: rng.random_range(1..=4) },
        _ => {
            let mut s = StructType::new("SA")
                .field("A", scalar(rng))
                .field("Arr", PropType::Array { element: Box::new(scalar(rng)), max_len: 3 });
            if rng.random_bool(0.5) {
                s = s.field("B", scalar(rng));
            }
            PropType::Struct(s)
        }
    }
}

/// A random scalar type, of every plane width (bools on bit planes, opaque blobs of 1–20 bytes
/// over several planes).
fn scalar(rng: &mut ChaCha8Rng) -> PropType {
    match rng.random_range(0..11) {
        0 | 1 => PropType::Bool,
        2 => PropType::U8,
        3 => PropType::U16,
        4 => PropType::U32,
        5 => PropType::F32,
        6 => PropType::U64,
        7 => PropType::Vector(VectorQuant::None),
        8 => PropType::Rotator,
        9 => PropType::Enum { bits: rng.random_range(1..=8) },
        _ => PropType::Opaque { name: "Blob".into(), size: rng.random_range(1..=20) },
    }
}

/// A random value of `ty`, drawn from a few so that writes often leave a value as it was (and
/// with `-0.0` beside `0.0`, which compare as different bytes).
fn value(ty: &PropType, rng: &mut ChaCha8Rng) -> Value {
    let f = |rng: &mut ChaCha8Rng| [0.0f32, -0.0, 1.0, 2.5][rng.random_range(0..4)];
    match ty {
        PropType::Bool => Value::Bool(rng.random()),
        PropType::U8 => Value::U8(rng.random_range(0..3)),
        PropType::U16 => Value::U16(rng.random_range(0..3) * 300),
        PropType::U32 => Value::U32(rng.random_range(0..3) << 20),
        PropType::U64 => Value::U64(rng.random_range(0..3) << 40),
        PropType::F32 => Value::F32(f(rng)),
        PropType::Enum { bits } => Value::Enum(rng.random_range(0..(1u16 << bits).min(256)) as u8),
        PropType::Vector(_) => Value::Vector([f(rng), f(rng), f(rng)]),
        PropType::Rotator => Value::Rotator([f(rng), f(rng), f(rng)]),
        PropType::Opaque { size, .. } => Value::Opaque((0..*size).map(|_| rng.random_range(0..2)).collect()),
        PropType::Struct(s) => Value::Struct(s.fields.iter().map(|(_, t)| value(t, rng)).collect()),
        PropType::Array { element, max_len } => {
            let n = rng.random_range(0..=*max_len as usize);
            Value::Array((0..n).map(|_| value(element, rng)).collect())
        }
        other => unreachable!("the random classes hold no {other:?}"),
    }
}
