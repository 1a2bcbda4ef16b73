//! Live actor state of one class, in structure-of-arrays pages.
//!
//! ```text
//! ClassStore
//!   slots      index = page * 64 + lane, a generation per slot; ActorId = (index, generation)
//!   live       PageArray: page p = blocks [p*stride, (p+1)*stride), byte planes 64-byte aligned, bit planes packed
//!   arrays     per page: one element buffer per (array, lane) — the side arena of dynamic arrays
//!   pending    per (page, parent) u64: push marks from the generated setters, and array writes,
//!              with the list of marked pages (a page is listed at its first mark of the tick)
//!   watchers   each driver's DirtyState; `begin_tick` ORs the listed pages of `pending` into
//!              every one, then clears them
//! ```
//!
//! Invariants: a lane's occupied bit is set exactly while an actor lives in it; an [`ActorId`]
//! whose generation differs from its slot's is stale and every accessor refuses it; despawn bumps
//! the generation and zeroes the lane, so a slot's next actor starts from the class defaults.
//! Every write to a dynamic array goes through this module, which marks the lane in `pending`: the
//! compare therefore visits only arrays that were written (and still diffs them element-wise).
//!
//! Shadows are not here: each driver owns its own [`crate::compare::ShadowState`], as UE keeps one
//! changelist manager per net driver, so a game driver and a replay driver can watch one store.

mod dirty;
mod lanes;
mod pages;

pub(crate) use dirty::LiveView;
pub use dirty::{pages_with_lanes, DirtyState, WatcherId};
use lanes::gather_leaf;
pub use lanes::BitIter;
pub(crate) use lanes::{read_lane, read_parent, scatter_leaf, write_default_arrays, write_defaults, zero_lanes};
pub use pages::{Block, PageArray, PageArrays, PlanesMut};

use crate::schema::{ClassLayout, PAGE_LANES};
use crate::value::{self, Value, ValueError};
use std::fmt;
use std::sync::Arc;

/// A generation-checked actor id: slot index and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId {
    /// Slot index: `page * 64 + lane`.
    pub index: u32,
    /// Generation of the slot when this actor was spawned.
    pub generation: u32,
}

impl ActorId {
    /// Page of this actor.
    pub fn page(self) -> usize {
        self.index as usize / PAGE_LANES
    }
    /// Lane within its page.
    pub fn lane(self) -> usize {
        self.index as usize % PAGE_LANES
    }
}

/// Why a store operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The id's actor was despawned (or never existed).
    StaleId(ActorId),
    /// The value does not fit the property.
    Value(ValueError),
    /// The plane's lane type does not match the requested Rust type.
    PlaneType {
        /// Plane index.
        plane: usize,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::StaleId(id) => {
                write!(f, "actor {}:{} does not exist (stale or never spawned)", id.index, id.generation)
            }
            StoreError::Value(e) => write!(f, "{e}"),
            StoreError::PlaneType { plane } => write!(f, "plane {plane} does not hold lanes of the requested type"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<ValueError> for StoreError {
    fn from(e: ValueError) -> Self {
        StoreError::Value(e)
    }
}

/// The live state of every actor of one class.
#[derive(Debug)]
pub struct ClassStore {
    id: u64,
    layout: Arc<ClassLayout>,
    live: PageArray,
    arrays: Vec<PageArrays>,
    occupied: Vec<u64>,
    epochs: Vec<u32>,
    /// Bumped with every epoch (every spawn, despawn and new page): a compare that saw this
    /// value has nothing to bring in line, without looking at each page's epoch.
    structure: u64,
    generations: Vec<u32>,
    free: Vec<u32>,
    len: usize,
    pending: DirtyState,
    watchers: Vec<dirty::Watcher>,
}

impl ClassStore {
    /// An empty store for `layout`.
    pub fn new(layout: Arc<ClassLayout>) -> Self {
        let parents = layout.parents.len();
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            live: PageArray::new(layout.page_blocks()),
            arrays: Vec::new(),
            occupied: Vec::new(),
            epochs: Vec::new(),
            structure: 0,
            generations: Vec::new(),
            free: Vec::new(),
            len: 0,
            pending: DirtyState::new(parents),
            watchers: Vec::new(),
            layout,
        }
    }

    /// A process-unique id of this store (shadows check they compare the store they watch).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The class layout.
    pub fn layout(&self) -> &Arc<ClassLayout> {
        &self.layout
    }

    /// Live actors.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no actor lives here.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pages allocated.
    pub fn page_count(&self) -> usize {
        self.occupied.len()
    }

    /// Occupied lanes of each page.
    pub fn occupied(&self) -> &[u64] {
        &self.occupied
    }

    /// Per page, a counter bumped by every spawn and despawn there (to find changed pages cheaply).
    pub fn epochs(&self) -> &[u32] {
        &self.epochs
    }

    /// A count of every spawn, despawn and new page: while it stays the same, no slot changed
    /// hands (a watcher skips its pass over the page epochs).
    pub fn structure(&self) -> u64 {
        self.structure
    }

    /// The byte form of leaf `leaf` for the actor in `slot` (into the front of `out`,
    /// `kind.byte_size()` bytes): false, and `out` untouched, when the slot is past the store's
    /// pages, the leaf past the class's leaves, or `out` too short. Slot-level: it reads whatever
    /// the slot holds, live or not.
    #[must_use]
    pub fn leaf_bytes(&self, slot: u32, leaf: usize, out: &mut [u8]) -> bool {
        let fits = self.layout.leaves.get(leaf).is_some_and(|l| out.len() >= l.kind.byte_size());
        let page = slot as usize / PAGE_LANES;
        if !fits || page >= self.live.len() {
            return false;
        }
        self.read_leaf(slot, leaf, out);
        true
    }

    /// [`Self::leaf_bytes`] for the kernel's serializers, which hold a slot and leaf of this
    /// class and a buffer of the leaf's size (a bad one panics on its slice bounds).
    pub(crate) fn read_leaf(&self, slot: u32, leaf: usize, out: &mut [u8]) {
        let (page, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        gather_leaf(&self.layout, self.live.page(page), leaf, lane, out);
    }

    /// The element bytes of dynamic array `array` for the actor in `slot`.
    pub fn array_bytes(&self, slot: u32, array: usize) -> &[u8] {
        let (page, lane) = (slot as usize / PAGE_LANES, slot as usize % PAGE_LANES);
        self.arrays.get(page).and_then(|p| p.get(array * PAGE_LANES + lane)).map_or(&[], |v| v.as_slice())
    }

    /// Writes leaf `leaf` of actor `id` from its byte form (the receiver's apply).
    pub(crate) fn write_leaf_bytes(&mut self, id: ActorId, leaf: usize, src: &[u8]) -> Result<(), StoreError> {
        self.check(id)?;
        scatter_leaf(&self.layout, self.live.page_mut(id.page()), leaf, id.lane(), src);
        Ok(())
    }

    /// The element bytes of dynamic array `array` of actor `id`, to edit in place (the receiver's
    /// apply). The edit is recorded for compare like any array write.
    pub(crate) fn array_bytes_mut(&mut self, id: ActorId, array: usize) -> Result<&mut Vec<u8>, StoreError> {
        self.check(id)?;
        let parent = self.layout.arrays[array].parent;
        self.pending.mark(id.page(), parent, 1 << id.lane());
        Ok(&mut self.arrays[id.page()][array * PAGE_LANES + id.lane()])
    }

    /// Generation of each slot.
    pub fn generations(&self) -> &[u32] {
        &self.generations
    }

    /// Live pages.
    pub fn live(&self) -> &PageArray {
        &self.live
    }

    /// Dynamic-array contents per page.
    pub fn arrays(&self) -> &[PageArrays] {
        &self.arrays
    }

    /// Spawns an actor holding its class defaults (zero where none is declared), whatever a bulk
    /// write left in its free lane. Reuses the lowest recently freed slot first.
    pub fn spawn(&mut self) -> ActorId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = self.generations.len() as u32;
                if (i as usize).is_multiple_of(PAGE_LANES) {
                    self.add_page();
                }
                self.generations.push(0);
                i
            }
        };
        let id = ActorId { index, generation: self.generations[index as usize] };
        // The class defaults go in over the whole lane: a free lane is not necessarily zero (a
        // bulk system's `plane_mut` writes free lanes too, after the despawn that zeroed it).
        let layout = self.layout.clone();
        let bytes = self.live.page_mut(id.page());
        zero_lanes(&layout, bytes, id.lane());
        write_defaults(&layout, bytes, id.lane());
        // Its dynamic arrays hold their class defaults (a despawn left them empty).
        write_default_arrays(&layout, &mut self.arrays[id.page()], id.lane());
        self.occupied[id.page()] |= 1 << id.lane();
        self.epochs[id.page()] = self.epochs[id.page()].wrapping_add(1);
        self.structure += 1;
        self.len += 1;
        id
    }

    fn add_page(&mut self) {
        self.live.push_zeroed();
        self.arrays.push(vec![Vec::new(); self.layout.arrays.len() * PAGE_LANES]);
        self.occupied.push(0);
        self.epochs.push(0);
        self.structure += 1;
        let pages = self.occupied.len();
        self.pending.ensure_pages(pages);
        for w in self.watchers.iter_mut().filter(|w| w.alive.strong_count() > 0) {
            w.dirty.ensure_pages(pages);
        }
    }

    /// Despawns an actor: its id (and every copy of it) goes stale, its lane returns to defaults.
    pub fn despawn(&mut self, id: ActorId) -> Result<(), StoreError> {
        self.check(id)?;
        let (page, lane) = (id.page(), id.lane());
        self.generations[id.index as usize] = self.generations[id.index as usize].wrapping_add(1);
        self.occupied[page] &= !(1 << lane);
        self.epochs[page] = self.epochs[page].wrapping_add(1);
        self.structure += 1;
        let layout = self.layout.clone();
        zero_lanes(&layout, self.live.page_mut(page), lane);
        for a in 0..layout.arrays.len() {
            self.arrays[page][a * PAGE_LANES + lane] = Vec::new();
        }
        self.free.push(id.index);
        self.len -= 1;
        Ok(())
    }

    /// Whether `id` names a live actor.
    pub fn contains(&self, id: ActorId) -> bool {
        self.check(id).is_ok()
    }

    fn check(&self, id: ActorId) -> Result<(), StoreError> {
        let live = self.generations.get(id.index as usize) == Some(&id.generation)
            && self.occupied[id.page()] >> id.lane() & 1 != 0;
        if live {
            Ok(())
        } else {
            Err(StoreError::StaleId(id))
        }
    }

    /// Every live actor id, in slot order.
    pub fn ids(&self) -> impl Iterator<Item = ActorId> + '_ {
        self.occupied.iter().enumerate().flat_map(move |(p, &occ)| {
            BitIter(occ).map(move |lane| {
                let index = (p * PAGE_LANES + lane) as u32;
                ActorId { index, generation: self.generations[index as usize] }
            })
        })
    }

    /// Reads parent `parent` of actor `id`.
    pub fn get(&self, id: ActorId, parent: usize) -> Result<Value, StoreError> {
        self.check(id)?;
        if parent >= self.layout.parents.len() {
            return Err(ValueError::NoSuchProperty(parent).into());
        }
        Ok(read_parent(&self.layout, self.live.page(id.page()), &self.arrays[id.page()], id.lane(), parent))
    }

    /// Writes parent `parent` of actor `id`. Does not mark it dirty (see [`Self::set_and_mark`]),
    /// except that a write reaching a dynamic array is always recorded for the compare.
    pub fn set(&mut self, id: ActorId, parent: usize, v: &Value) -> Result<(), StoreError> {
        self.check(id)?;
        let layout = self.layout.clone();
        let encoded = value::encode_parent(&layout, parent, v)?;
        let p = &layout.parents[parent];
        let (page, lane) = (id.page(), id.lane());
        let base = p.record_range.start;
        let bytes = self.live.page_mut(page);
        for l in p.leaves.clone() {
            let at = layout.leaves[l].record_offset - base;
            scatter_leaf(&layout, bytes, l, lane, &encoded.record[at..]);
        }
        if !encoded.arrays.is_empty() {
            for (a, data) in encoded.arrays {
                self.arrays[page][a * PAGE_LANES + lane] = data;
            }
            self.pending.mark(page, parent, 1 << lane);
        }
        Ok(())
    }
}

/// Bitwise equality of two values (floats by their bits, as the compare does).
pub fn value_bits_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        (Value::Vector(x), Value::Vector(y)) | (Value::Rotator(x), Value::Rotator(y)) => {
            x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        (Value::Struct(x), Value::Struct(y)) | (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| value_bits_eq(p, q))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};

    fn layout() -> Arc<ClassLayout> {
        Arc::new(
            ClassBuilder::new("T")
                .property(PropertyDecl::new("Flag", PropType::Bool))
                .property(PropertyDecl::new("Hp", PropType::F32).push(true))
                .property(PropertyDecl::new(
                    "S",
                    PropType::Struct(
                        StructType::new("S").field("A", PropType::U8).field("B", PropType::Vector(Default::default())),
                    ),
                ))
                .property(PropertyDecl::new("Arr", PropType::array(PropType::U16)))
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn values_round_trip_through_planes() {
        let mut s = ClassStore::new(layout());
        let ids: Vec<_> = (0..70).map(|_| s.spawn()).collect();
        let id = ids[65];
        s.set(id, 0, &Value::Bool(true)).unwrap();
        s.set(id, 1, &Value::F32(-2.5)).unwrap();
        let st = Value::Struct(vec![Value::U8(7), Value::Vector([1.0, 2.0, 3.0])]);
        s.set(id, 2, &st).unwrap();
        let arr = Value::Array(vec![Value::U16(3), Value::U16(9)]);
        s.set(id, 3, &arr).unwrap();
        assert_eq!(s.get(id, 0).unwrap(), Value::Bool(true));
        assert_eq!(s.get(id, 1).unwrap(), Value::F32(-2.5));
        assert_eq!(s.get(id, 2).unwrap(), st);
        assert_eq!(s.get(id, 3).unwrap(), arr);
        assert_eq!(s.get(ids[64], 2).unwrap(), Value::default_for(&s.layout().parents[2].ty));
        assert!(matches!(s.set(id, 1, &Value::U8(1)), Err(StoreError::Value(ValueError::TypeMismatch { .. }))));
    }

    #[test]
    fn stale_ids_never_touch_the_new_actor() {
        let mut s = ClassStore::new(layout());
        let a = s.spawn();
        s.set(a, 1, &Value::F32(5.0)).unwrap();
        s.despawn(a).unwrap();
        let b = s.spawn();
        assert_eq!(a.index, b.index);
        assert_ne!(a.generation, b.generation);
        assert_eq!(s.set(a, 1, &Value::F32(1.0)), Err(StoreError::StaleId(a)));
        assert_eq!(s.despawn(a), Err(StoreError::StaleId(a)));
        assert_eq!(s.get(b, 1).unwrap(), Value::F32(0.0));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn marks_reach_every_watcher_at_tick_start() {
        let mut s = ClassStore::new(layout());
        let w1 = s.add_watcher();
        let a = s.spawn();
        let w2 = s.add_watcher();
        assert!(s.set_and_mark(a, 1, &Value::F32(1.0)).unwrap());
        assert!(!s.set_and_mark(a, 1, &Value::F32(1.0)).unwrap());
        assert!(!s.dirty(&w1).page_dirty(0));
        s.begin_tick();
        for w in [&w1, &w2] {
            assert!(s.dirty(w).page_dirty(0));
            assert_eq!(s.dirty(w).masks[1], 1);
        }
    }
}

#[cfg(test)]
mod default_tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl};

    /// A bulk system writes every lane of a plane, free ones included (`plane_mut` hands them
    /// out): the next actor spawned in a free lane still starts from its class defaults — in a
    /// plane with a non-zero default and in one without.
    #[test]
    fn a_spawn_after_a_bulk_write_over_free_lanes_holds_the_class_defaults() {
        let layout = Arc::new(
            ClassBuilder::new("T")
                .property(PropertyDecl::new("Hp", PropType::U16).default_value(Value::U16(100)))
                .property(PropertyDecl::new("Speed", PropType::F32))
                .build()
                .unwrap(),
        );
        let mut s = ClassStore::new(layout.clone());
        let a = s.spawn();
        let b = s.spawn();
        s.despawn(b).unwrap();
        let (hp, speed) = (layout.leaves[0].planes.start, layout.leaves[1].planes.start);
        s.plane_mut::<u16>(hp).unwrap().page(0).fill(7);
        s.plane_mut::<f32>(speed).unwrap().page(0).fill(3.5);
        assert_eq!(s.get(a, 1).unwrap(), Value::F32(3.5));
        // The freed slot (reused first) and a lane never used before.
        for id in [s.spawn(), s.spawn()] {
            assert_eq!(s.get(id, 0).unwrap(), Value::U16(100), "slot {}", id.index);
            assert_eq!(s.get(id, 1).unwrap(), Value::F32(0.0), "slot {}", id.index);
        }
    }
}
