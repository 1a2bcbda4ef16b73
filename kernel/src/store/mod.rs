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

use crate::schema::{ClassLayout, PlaneWidth, PAGE_LANES};
use crate::value::{self, Value, ValueError};
use std::fmt;
use std::sync::Arc;

/// One 64-byte aligned block of page memory.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub struct Block(pub [u8; 64]);

/// Pages of one class, each `stride` blocks long, in one contiguous allocation.
#[derive(Clone, Debug, Default)]
pub struct PageArray {
    blocks: Vec<Block>,
    stride: usize,
}

impl PageArray {
    /// An empty array of pages with `stride` blocks each.
    pub fn new(stride: usize) -> Self {
        Self { blocks: Vec::new(), stride: stride.max(1) }
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.blocks.len() / self.stride
    }

    /// Whether there are no pages.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Blocks per page.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Appends a zeroed page. When the allocation grows, it moves to a new one (twice as large)
    /// that is advised onto huge pages (see [`crate::memory`]) before its pages are first
    /// touched — a reallocation in place would keep the old small pages.
    pub fn push_zeroed(&mut self) {
        let need = self.blocks.len() + self.stride;
        if need > self.blocks.capacity() {
            let capacity = need.max(2 * self.blocks.capacity());
            let bytes = capacity * std::mem::size_of::<Block>();
            if bytes >= crate::memory::HUGE_PAGE_BYTES {
                let mut grown: Vec<Block> = Vec::with_capacity(capacity);
                crate::memory::advise_huge_pages(grown.as_ptr().cast(), bytes);
                grown.extend_from_slice(&self.blocks);
                self.blocks = grown;
            }
        }
        self.blocks.resize(need, Block([0; 64]));
    }

    /// Page `p`'s bytes.
    pub fn page(&self, p: usize) -> &[u8] {
        bytemuck::cast_slice(&self.blocks[p * self.stride..(p + 1) * self.stride])
    }

    /// Page `p`'s bytes, mutable.
    pub fn page_mut(&mut self, p: usize) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.blocks[p * self.stride..(p + 1) * self.stride])
    }

    /// All pages' bytes.
    pub fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.blocks)
    }

    /// All pages' blocks (for `par_chunks(stride)`).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// All pages' blocks, mutable.
    pub fn blocks_mut(&mut self) -> &mut [Block] {
        &mut self.blocks
    }
}

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

/// Identifies one driver watching a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatcherId(pub(crate) usize);

/// The pages `p` with a lane in `lanes[p]`, ascending: the page list of a per-page lane
/// selection.
pub fn pages_with_lanes(lanes: &[u64]) -> Vec<u32> {
    (0..lanes.len() as u32).filter(|&p| lanes[p as usize] != 0).collect()
}

/// One driver's view of what was marked dirty: per (page, parent) lane masks, a per-page summary
/// so clean pages are skipped without touching their columns, and the list of marked pages.
///
/// The list is NetDirty's frame dirty list at page granularity: the first mark on a clean page
/// pushes the page, and the page's summary bit is its stamp, so a second mark on the same page
/// costs a bit test, not a push. A compare then visits the listed pages only (see
/// [`crate::compare`]), so a frame with few marks costs what its marks cost, not what the class
/// holds. Invariant: `list` holds exactly the pages whose summary bit is set, each once, and
/// `at[p]` is page `p`'s place in it, so clearing a page's last mark unlists it in O(1): a compare
/// of a few selected lanes costs those lanes, however many other pages keep marks (the push marks
/// of a world's dormant actors wait in their pages until the actors are due again).
#[derive(Clone, Debug, Default)]
pub struct DirtyState {
    /// `masks[page * parents + parent]`: lanes marked since the last compare.
    pub masks: Vec<u64>,
    /// Bit `p % 64` of word `p / 64`: page `p` has at least one mark.
    pub pages: Vec<u64>,
    /// Pages with a mark, each once (in no particular order).
    list: Vec<u32>,
    /// `at[p]`: where page `p` is in `list`, while its summary bit is set.
    at: Vec<u32>,
    parents: usize,
}

impl DirtyState {
    fn new(parents: usize) -> Self {
        Self { masks: Vec::new(), pages: Vec::new(), list: Vec::new(), at: Vec::new(), parents }
    }

    fn ensure_pages(&mut self, pages: usize) {
        self.masks.resize(pages * self.parents, 0);
        self.pages.resize(pages.div_ceil(64), 0);
        self.at.resize(pages, 0);
    }

    /// Marks `lanes` of `parent` on `page`.
    pub fn mark(&mut self, page: usize, parent: usize, lanes: u64) {
        if lanes == 0 {
            return;
        }
        self.masks[page * self.parents + parent] |= lanes;
        let (word, bit) = (&mut self.pages[page / 64], 1u64 << (page % 64));
        if *word & bit == 0 {
            *word |= bit;
            self.at[page] = self.list.len() as u32;
            self.list.push(page as u32);
        }
    }

    /// Takes page `p`, whose marks are all clear now, off the list and its summary bit.
    fn unlist(&mut self, p: usize) {
        self.pages[p / 64] &= !(1 << (p % 64));
        let i = self.at[p] as usize;
        self.list.swap_remove(i);
        if let Some(&moved) = self.list.get(i) {
            self.at[moved as usize] = i as u32;
        }
    }

    /// Whether page `p` has any mark.
    pub fn page_dirty(&self, p: usize) -> bool {
        self.pages.get(p / 64).is_some_and(|w| w >> (p % 64) & 1 != 0)
    }

    /// The pages with a mark, each once, in no particular order.
    pub fn dirty_pages(&self) -> &[u32] {
        &self.list
    }

    /// Marked lanes of every parent of page `p` (`parents` words).
    pub(crate) fn page_masks(&self, p: usize) -> &[u64] {
        &self.masks[p * self.parents..(p + 1) * self.parents]
    }

    /// Clears the marks of `lanes[p]` on each page `p` (pages past the slice keep theirs): the
    /// lanes a compare looked at.
    pub fn clear_lanes(&mut self, lanes: &[u64]) {
        self.clear_listed(lanes, &pages_with_lanes(lanes));
    }

    /// [`Self::clear_lanes`] on the pages `pages` only (those with a selected lane): costs them,
    /// not the marked pages or the class.
    pub fn clear_listed(&mut self, lanes: &[u64], pages: &[u32]) {
        let parents = self.parents;
        for &p in pages {
            let p = p as usize;
            let Some(&sel) = lanes.get(p) else { continue };
            if sel == 0 || !self.page_dirty(p) {
                continue;
            }
            let mut left = 0;
            for m in &mut self.masks[p * parents..(p + 1) * parents] {
                *m &= !sel;
                left |= *m;
            }
            if left == 0 {
                self.unlist(p);
            }
        }
    }

    /// Clears every mark.
    pub fn clear(&mut self) {
        // Only listed pages can hold non-zero masks.
        for p in self.list.drain(..) {
            let p = p as usize;
            self.masks[p * self.parents..(p + 1) * self.parents].fill(0);
            self.pages[p / 64] &= !(1 << (p % 64));
        }
    }
}

/// Lanes of one page's dynamic arrays: `lanes[array * 64 + lane]` holds the element bytes.
pub type PageArrays = Vec<Vec<u8>>;

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
    watchers: Vec<DirtyState>,
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

    /// The byte form of leaf `leaf` for the actor in `slot` (into `out`, `kind.byte_size()`
    /// bytes). Slot-level: callers that hold a live slot use it to serialize.
    pub fn leaf_bytes(&self, slot: u32, leaf: usize, out: &mut [u8]) {
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

    /// Spawns an actor with default (zero) state. Reuses the lowest recently freed slot first.
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
        for w in &mut self.watchers {
            w.ensure_pages(pages);
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
        let bytes = self.live.page_mut(page);
        for plane in &layout.planes {
            zero_lane(bytes, plane.page_offset, plane.width, lane);
        }
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

    /// Writes a value and marks the property dirty only if the value really changed (UE's generated
    /// `Set<Prop>AndMarkDirty`). Returns whether it changed.
    pub fn set_and_mark(&mut self, id: ActorId, parent: usize, v: &Value) -> Result<bool, StoreError> {
        let old = self.get(id, parent)?;
        if value_bits_eq(&old, v) {
            // Equal to a value read from the store, so it has the property's shape: nothing to do.
            return Ok(false);
        }
        self.set(id, parent, v)?;
        self.mark_dirty(id, parent)?;
        Ok(true)
    }

    /// Marks a property dirty for every watching driver (UE's `MARK_PROPERTY_DIRTY`).
    pub fn mark_dirty(&mut self, id: ActorId, parent: usize) -> Result<(), StoreError> {
        self.check(id)?;
        if parent >= self.layout.parents.len() {
            return Err(ValueError::NoSuchProperty(parent).into());
        }
        self.pending.mark(id.page(), parent, 1 << id.lane());
        Ok(())
    }

    /// Marks every property of an actor dirty.
    pub fn mark_all_dirty(&mut self, id: ActorId) -> Result<(), StoreError> {
        self.check(id)?;
        for parent in 0..self.layout.parents.len() {
            self.pending.mark(id.page(), parent, 1 << id.lane());
        }
        Ok(())
    }

    /// Marks `lanes` of `parent` on `page` dirty in bulk (for systems that wrote a column).
    pub fn mark_lanes_dirty(&mut self, page: usize, parent: usize, lanes: u64) {
        if page < self.page_count() && parent < self.layout.parents.len() {
            self.pending.mark(page, parent, lanes & self.occupied[page]);
        }
    }

    /// Registers a driver; it receives every mark made from the next [`Self::begin_tick`] on.
    pub fn add_watcher(&mut self) -> WatcherId {
        let mut d = DirtyState::new(self.layout.parents.len());
        d.ensure_pages(self.page_count());
        self.watchers.push(d);
        WatcherId(self.watchers.len() - 1)
    }

    /// Start of a tick: hands the marks made since the last tick to every watching driver.
    pub fn begin_tick(&mut self) {
        let parents = self.layout.parents.len();
        for &p in &self.pending.list {
            let p = p as usize;
            let src = &self.pending.masks[p * parents..(p + 1) * parents];
            for d in &mut self.watchers {
                for (parent, &lanes) in src.iter().enumerate() {
                    if lanes != 0 {
                        d.mark(p, parent, lanes);
                    }
                }
            }
        }
        self.pending.clear();
    }

    /// A watcher's dirty state (what its next compare will consider).
    pub fn dirty(&self, w: WatcherId) -> &DirtyState {
        &self.watchers[w.0]
    }

    /// Splits the store for a compare: the live state, and the watcher's dirty state to consume.
    pub(crate) fn split_for_compare(&mut self, w: WatcherId) -> (LiveView<'_>, &mut DirtyState) {
        let view = LiveView {
            live: &self.live,
            arrays: &self.arrays,
            occupied: &self.occupied,
            epochs: &self.epochs,
            structure: self.structure,
            generations: &self.generations,
        };
        (view, &mut self.watchers[w.0])
    }

    /// Lanes of plane `plane` on every page, as typed slices, for bulk systems (a movement system
    /// writes every position). Lanes of free slots are included; `occupied()` tells which are live.
    /// Writing through this does not mark anything dirty: polled properties need no marks, and
    /// push-based ones must be marked with [`Self::mark_lanes_dirty`].
    pub fn plane_mut<T: bytemuck::Pod>(&mut self, plane: usize) -> Result<PlanesMut<'_, T>, StoreError> {
        let pl = *self.layout.planes.get(plane).ok_or(StoreError::PlaneType { plane })?;
        if pl.width == PlaneWidth::Bit || std::mem::size_of::<T>() != pl.width.lane_bytes() {
            return Err(StoreError::PlaneType { plane });
        }
        let stride = self.live.stride() * 64;
        Ok(PlanesMut {
            bytes: bytemuck::cast_slice_mut(self.live.blocks_mut()),
            stride,
            offset: pl.page_offset,
            _t: std::marker::PhantomData,
        })
    }

    /// Read-only counterpart of [`Self::plane_mut`].
    pub fn plane<T: bytemuck::Pod>(&self, plane: usize, page: usize) -> Result<&[T], StoreError> {
        let pl = *self.layout.planes.get(plane).ok_or(StoreError::PlaneType { plane })?;
        if pl.width == PlaneWidth::Bit || std::mem::size_of::<T>() != pl.width.lane_bytes() || page >= self.page_count()
        {
            return Err(StoreError::PlaneType { plane });
        }
        let bytes = &self.live.page(page)[pl.page_offset..pl.page_offset + pl.width.page_bytes()];
        Ok(bytemuck::cast_slice(bytes))
    }
}

/// Iterator-like access to one plane across all pages.
pub struct PlanesMut<'a, T> {
    bytes: &'a mut [u8],
    stride: usize,
    offset: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: bytemuck::Pod> PlanesMut<'_, T> {
    /// Page `p`'s 64 lanes.
    pub fn page(&mut self, p: usize) -> &mut [T] {
        let start = p * self.stride + self.offset;
        bytemuck::cast_slice_mut(&mut self.bytes[start..start + 64 * std::mem::size_of::<T>()])
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.bytes.len() / self.stride
    }
}

/// Borrowed live state handed to the compare.
pub(crate) struct LiveView<'a> {
    pub live: &'a PageArray,
    pub arrays: &'a [PageArrays],
    pub occupied: &'a [u64],
    /// Bumped on every spawn and despawn in a page.
    pub epochs: &'a [u32],
    /// Bumped with every epoch ([`ClassStore`]'s count of spawns, despawns and pages).
    pub structure: u64,
    pub generations: &'a [u32],
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

/// Iterates the set bits of a `u64`, lowest first.
#[derive(Clone, Copy, Debug)]
pub struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// Gathers one lane's value of `parent` from a page (live or shadow) and its arrays.
pub(crate) fn read_parent(layout: &ClassLayout, page: &[u8], arrays: &PageArrays, lane: usize, parent: usize) -> Value {
    let p = &layout.parents[parent];
    let base = p.record_range.start;
    let mut record = vec![0u8; p.record_range.len() + 8];
    for l in p.leaves.clone() {
        let at = layout.leaves[l].record_offset - base;
        gather_leaf(layout, page, l, lane, &mut record[at..]);
    }
    value::decode_parent(layout, parent, &record, |a| arrays[a * PAGE_LANES + lane].as_slice())
}

/// Gathers leaf `leaf`'s byte form for lane `lane` from its planes (into the front of `out`).
fn gather_leaf(layout: &ClassLayout, page: &[u8], leaf: usize, lane: usize, out: &mut [u8]) {
    let mut at = 0;
    for plane in &layout.planes[layout.leaves[leaf].planes.clone()] {
        let n = plane.width.lane_bytes();
        read_lane(page, plane.page_offset, plane.width, lane, &mut out[at..at + n]);
        at += n;
    }
}

/// Scatters leaf `leaf`'s byte form (the front of `src`) into lane `lane` of its planes.
fn scatter_leaf(layout: &ClassLayout, page: &mut [u8], leaf: usize, lane: usize, src: &[u8]) {
    let mut at = 0;
    for plane in &layout.planes[layout.leaves[leaf].planes.clone()] {
        let n = plane.width.lane_bytes();
        write_lane(page, plane.page_offset, plane.width, lane, &src[at..at + n]);
        at += n;
    }
}

/// Reads lane `lane` of a plane into `out` (`width.lane_bytes()` bytes).
pub(crate) fn read_lane(page: &[u8], offset: usize, width: PlaneWidth, lane: usize, out: &mut [u8]) {
    match width {
        PlaneWidth::Bit => {
            let word = u64::from_le_bytes(page[offset..offset + 8].try_into().unwrap_or_default());
            out[0] = (word >> lane & 1) as u8;
        }
        PlaneWidth::B1 => out[0] = page[offset + lane],
        PlaneWidth::B2 => copy_n::<2>(&page[offset + lane * 2..], out),
        PlaneWidth::B4 => copy_n::<4>(&page[offset + lane * 4..], out),
        PlaneWidth::B8 => copy_n::<8>(&page[offset + lane * 8..], out),
        PlaneWidth::B12 => copy_n::<12>(&page[offset + lane * 12..], out),
    }
}

/// Copies exactly `N` bytes (a fixed-size copy the compiler turns into one load and store).
#[inline(always)]
fn copy_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    dst[..N].copy_from_slice(&src[..N]);
}

/// Writes lane `lane` of a plane from `src` (`width.lane_bytes()` bytes).
pub(crate) fn write_lane(page: &mut [u8], offset: usize, width: PlaneWidth, lane: usize, src: &[u8]) {
    match width {
        PlaneWidth::Bit => {
            let mut word = u64::from_le_bytes(page[offset..offset + 8].try_into().unwrap_or_default());
            word = (word & !(1 << lane)) | (((src[0] != 0) as u64) << lane);
            page[offset..offset + 8].copy_from_slice(&word.to_le_bytes());
        }
        w => {
            let n = w.lane_bytes();
            page[offset + lane * n..offset + (lane + 1) * n].copy_from_slice(&src[..n]);
        }
    }
}

/// Zeroes lane `lane` of a plane.
pub(crate) fn zero_lane(page: &mut [u8], offset: usize, width: PlaneWidth, lane: usize) {
    write_lane(page, offset, width, lane, &[0u8; 16]);
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

    /// The dirty list against a model (a set of marked (page, parent, lane)): after any mix of
    /// marks, lane clears and full clears, it lists exactly the pages with a mark, each once.
    #[test]
    fn the_dirty_list_names_exactly_the_marked_pages() {
        use rand::{Rng, SeedableRng};
        let (pages, parents) = (40, 3);
        for seed in 0..50 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut d = DirtyState::new(parents);
            d.ensure_pages(pages);
            let mut model = std::collections::HashSet::new();
            for step in 0..400 {
                match rng.random_range(0..10) {
                    0..=5 => {
                        let (p, parent, lanes) = (
                            rng.random_range(0..pages),
                            rng.random_range(0..parents),
                            rng.random::<u64>() & rng.random::<u64>(),
                        );
                        d.mark(p, parent, lanes);
                        for lane in BitIter(lanes) {
                            model.insert((p, parent, lane));
                        }
                    }
                    6..=8 => {
                        let lanes: Vec<u64> = (0..rng.random_range(0..=pages))
                            .map(|_| if rng.random_bool(0.3) { rng.random::<u64>() | rng.random::<u64>() } else { 0 })
                            .collect();
                        d.clear_lanes(&lanes);
                        model.retain(|&(p, _, lane)| lanes.get(p).is_none_or(|&l| l >> lane & 1 == 0));
                    }
                    _ => {
                        d.clear();
                        model.clear();
                    }
                }
                let mut listed = d.dirty_pages().to_vec();
                listed.sort_unstable();
                let mut want: Vec<u32> = model.iter().map(|&(p, _, _)| p as u32).collect();
                want.sort_unstable();
                want.dedup();
                assert_eq!(listed, want, "seed {seed} step {step}");
                for p in 0..pages {
                    assert_eq!(d.page_dirty(p), want.contains(&(p as u32)), "seed {seed} step {step} page {p}");
                    for parent in 0..parents {
                        let lanes = model
                            .iter()
                            .filter(|&&(q, r, _)| q == p && r == parent)
                            .fold(0u64, |m, &(_, _, l)| m | 1 << l);
                        assert_eq!(d.page_masks(p)[parent], lanes, "seed {seed} step {step}");
                    }
                }
            }
        }
    }

    #[test]
    fn marks_reach_every_watcher_at_tick_start() {
        let mut s = ClassStore::new(layout());
        let w1 = s.add_watcher();
        let a = s.spawn();
        let w2 = s.add_watcher();
        assert!(s.set_and_mark(a, 1, &Value::F32(1.0)).unwrap());
        assert!(!s.set_and_mark(a, 1, &Value::F32(1.0)).unwrap());
        assert!(!s.dirty(w1).page_dirty(0));
        s.begin_tick();
        for w in [w1, w2] {
            assert!(s.dirty(w).page_dirty(0));
            assert_eq!(s.dirty(w).masks[1], 1);
        }
    }
}
