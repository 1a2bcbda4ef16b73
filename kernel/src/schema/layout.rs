//! What a built layout is made of: parents, leaves and their kinds, planes and plane runs,
//! dynamic arrays' element layouts, and the [`ClassLayout`] that holds them with its lookups.
//! [`super::ClassBuilder`] produces it; the stores, compare and wire read it.

use super::{Condition, Notify, PropType, VectorQuant, PAGE_LANES};
use std::collections::HashMap;

/// The primitive kind of one leaf: what is compared and what the wire writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeafKind {
    /// Bit.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `u32`, packed on the wire ([`PropType::PackedU32`]).
    PackedU32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// Enum with a bit width.
    Enum(u8),
    /// Quantised vector.
    Vector(VectorQuant),
    /// Rotator.
    Rotator,
    /// Name index.
    Name,
    /// Object reference.
    Object,
    /// Opaque struct of the given byte size.
    Opaque(u16),
    /// A dynamic array command (its elements are described by [`ArrayLayout`]).
    Array,
}

impl LeafKind {
    /// Bytes this leaf occupies in an array-of-structs record (a bool takes one byte there).
    pub fn byte_size(self) -> usize {
        match self {
            LeafKind::Bool | LeafKind::U8 | LeafKind::I8 | LeafKind::Enum(_) => 1,
            LeafKind::U16 | LeafKind::I16 => 2,
            LeafKind::U32 | LeafKind::PackedU32 | LeafKind::I32 | LeafKind::F32 | LeafKind::Name => 4,
            LeafKind::U64 | LeafKind::I64 | LeafKind::F64 | LeafKind::Object => 8,
            LeafKind::Vector(_) | LeafKind::Rotator => 12,
            LeafKind::Opaque(n) => n as usize,
            LeafKind::Array => 0,
        }
    }

    /// Natural alignment in an array-of-structs record.
    pub fn align(self) -> usize {
        match self {
            LeafKind::Vector(_) | LeafKind::Rotator => 4,
            LeafKind::Opaque(_) => 1,
            LeafKind::Array => 1,
            k => k.byte_size(),
        }
    }

    /// The planes one actor's value of this leaf is split into, as (width, count).
    pub(super) fn planes(self) -> (PlaneWidth, usize) {
        match self {
            LeafKind::Bool => (PlaneWidth::Bit, 1),
            LeafKind::U8 | LeafKind::I8 | LeafKind::Enum(_) => (PlaneWidth::B1, 1),
            LeafKind::U16 | LeafKind::I16 => (PlaneWidth::B2, 1),
            LeafKind::U32 | LeafKind::PackedU32 | LeafKind::I32 | LeafKind::F32 | LeafKind::Name => (PlaneWidth::B4, 1),
            LeafKind::U64 | LeafKind::I64 | LeafKind::F64 | LeafKind::Object => (PlaneWidth::B8, 1),
            // One interleaved 12-byte lane: a dirty actor's vector is one cache line, not three.
            LeafKind::Vector(_) | LeafKind::Rotator => (PlaneWidth::B12, 1),
            LeafKind::Opaque(n) => {
                let n = n as usize;
                if n.is_multiple_of(8) {
                    (PlaneWidth::B8, n / 8)
                } else if n.is_multiple_of(4) {
                    (PlaneWidth::B4, n / 4)
                } else if n.is_multiple_of(2) {
                    (PlaneWidth::B2, n / 2)
                } else {
                    (PlaneWidth::B1, n)
                }
            }
            LeafKind::Array => (PlaneWidth::Bit, 0),
        }
    }
}

/// Lane width of one plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlaneWidth {
    /// One bit per actor: the page's plane is a single `u64`.
    Bit,
    /// One byte per actor.
    B1,
    /// Two bytes per actor.
    B2,
    /// Four bytes per actor.
    B4,
    /// Eight bytes per actor.
    B8,
    /// Twelve bytes per actor (a vector or rotator, components interleaved).
    B12,
}

impl PlaneWidth {
    /// Bytes one page of this plane takes before alignment padding.
    pub fn page_bytes(self) -> usize {
        match self {
            PlaneWidth::Bit => 8,
            PlaneWidth::B1 => PAGE_LANES,
            PlaneWidth::B2 => 2 * PAGE_LANES,
            PlaneWidth::B4 => 4 * PAGE_LANES,
            PlaneWidth::B8 => 8 * PAGE_LANES,
            PlaneWidth::B12 => 12 * PAGE_LANES,
        }
    }

    /// Bytes of one lane (bits round up to one byte for value transfer).
    pub fn lane_bytes(self) -> usize {
        match self {
            PlaneWidth::Bit | PlaneWidth::B1 => 1,
            PlaneWidth::B2 => 2,
            PlaneWidth::B4 => 4,
            PlaneWidth::B8 => 8,
            PlaneWidth::B12 => 12,
        }
    }

    /// Bytes a read of one lane touches: [`Self::lane_bytes`], except a bit plane's, whose lane
    /// is read as its plane's 8-byte word.
    pub(crate) fn read_bytes(self) -> usize {
        match self {
            PlaneWidth::Bit => 8,
            w => w.lane_bytes(),
        }
    }

    /// Bytes between the reads of two neighbouring lanes: lane `l`'s read starts `l ×` this past
    /// the plane's offset — [`Self::lane_bytes`], except a bit plane's 0 (every lane reads the
    /// plane's one word).
    pub fn read_stride(self) -> usize {
        match self {
            PlaneWidth::Bit => 0,
            w => w.lane_bytes(),
        }
    }
}

/// One plane of a page: a lane per actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plane {
    /// Lane width.
    pub width: PlaneWidth,
    /// Byte offset of this plane inside a page (a multiple of 64).
    pub page_offset: usize,
}

/// Consecutive planes of one width: `planes.len()` planes starting at byte `offset` of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaneRun {
    /// Lane width of every plane in the run.
    pub width: PlaneWidth,
    /// Byte offset of the first plane in a page.
    pub offset: usize,
    /// Plane indices (into [`ClassLayout::planes`]), consecutive in page order.
    pub planes: std::ops::Range<usize>,
}

/// One leaf command.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    /// 1-based handle.
    pub handle: u16,
    /// Dotted path from the parent, e.g. `LastTakeHitInfo.ActualDamage`.
    pub path: String,
    /// Primitive kind.
    pub kind: LeafKind,
    /// Index of the parent property this leaf belongs to.
    pub parent: usize,
    /// Planes of this leaf, first index into [`ClassLayout::planes`] and count (0 for arrays).
    pub planes: std::ops::Range<usize>,
    /// Byte offset inside the array-of-structs replicated record (used by the reference path and by
    /// value transfer; padded to natural alignment).
    pub record_offset: usize,
    /// Index into [`ClassLayout::arrays`] when `kind` is [`LeafKind::Array`].
    pub array: Option<usize>,
}

/// A dynamic array's element layout.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayLayout {
    /// The array command's leaf index.
    pub leaf: usize,
    /// The parent owning this array.
    pub parent: usize,
    /// Element leaves; element leaf `i` of element `e` has nested handle `e * leaves.len() + i + 1`.
    pub elements: Vec<ElementLeaf>,
    /// Byte stride of one element in array storage.
    pub stride: usize,
    /// Largest element count accepted.
    pub max_len: u16,
}

/// One leaf inside an array element.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementLeaf {
    /// Dotted path inside the element (empty for a scalar element).
    pub path: String,
    /// Primitive kind (never `Array`).
    pub kind: LeafKind,
    /// Byte offset inside the element.
    pub offset: usize,
}

/// One declared property (or one element of a static array).
#[derive(Clone, Debug, PartialEq)]
pub struct Parent {
    /// Name; static array elements are named `Name[i]`.
    pub name: String,
    /// Declared type.
    pub ty: PropType,
    /// Send condition.
    pub condition: Condition,
    /// Client notify mode.
    pub notify: Notify,
    /// Push-based: compared only when marked dirty.
    pub push: bool,
    /// This parent's leaves (indices into [`ClassLayout::leaves`]).
    pub leaves: std::ops::Range<usize>,
    /// Index within a static array (0 otherwise).
    pub array_index: u16,
    /// Byte range in the replicated record.
    pub record_range: std::ops::Range<usize>,
    /// The declared class default ([`super::PropertyDecl::default_value`]); `None`: zero.
    pub default: Option<crate::value::Value>,
}

/// A complete, validated class layout.
#[derive(Clone, Debug)]
pub struct ClassLayout {
    /// Class name.
    pub name: String,
    /// Base class name, if any.
    pub base: Option<String>,
    /// Parents in handle order (base class parents first).
    pub parents: Vec<Parent>,
    /// Leaves in handle order: `leaves[h - 1].handle == h`.
    pub leaves: Vec<Leaf>,
    /// Planes of all fixed-size leaves, in page order (grouped by width; see [`PlaneRun`]).
    pub planes: Vec<Plane>,
    /// Dynamic arrays.
    pub arrays: Vec<ArrayLayout>,
    /// Bytes of one page (byte planes 64-byte aligned, bit planes packed after them).
    pub page_bytes: usize,
    /// The page's planes as contiguous runs of one width, in page order.
    pub plane_runs: Vec<PlaneRun>,
    /// Bytes of the array-of-structs replicated record.
    pub record_bytes: usize,
    /// The class defaults in the replicated record's form (zeros where none is declared): a
    /// new object's shadow on the reference paths.
    pub default_record: Vec<u8>,
    /// The class defaults as one lane of each plane that holds a non-zero default: (plane index,
    /// the lane's bytes). What a spawn writes into its lane, and a new actor's shadow lane
    /// holds; empty for a class without defaults.
    pub default_planes: Vec<(usize, [u8; 16])>,
    /// Per dynamic array (by array index), the element bytes a new actor's array holds: its
    /// class default, empty where none is declared (or the class declares none at all). A spawn
    /// fills its arrays with them, and a new actor's shadow arrays hold them.
    pub default_arrays: Vec<Vec<u8>>,
    /// How the net layer's 64-bit leaf masks cover the leaves ([`super::groups`]): one leaf a
    /// bit up to 64 leaves, groups of leaves treated alike beyond.
    pub groups: super::LeafGroups,
    /// Its remote procedure calls ([`super::rpc`]), inherited ones first.
    pub rpcs: Vec<super::RpcLayout>,
    /// Checksum over everything that must agree for two sides to interoperate.
    pub checksum: u64,
    pub(super) by_name: HashMap<String, usize>,
}

impl ClassLayout {
    /// The leaf with this handle, or `None` (a direct table lookup).
    pub fn leaf_by_handle(&self, handle: u16) -> Option<&Leaf> {
        (handle as usize).checked_sub(1).and_then(|i| self.leaves.get(i))
    }

    /// The parent index with this name (`Name[i]` for static array elements).
    pub fn parent_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The leaf index with this dotted path (`LastTakeHitInfo.ActualDamage`).
    pub fn leaf_index(&self, path: &str) -> Option<usize> {
        self.leaves.iter().position(|l| l.path == path)
    }

    /// Whether every parent is push-based (the class takes the dirty-bits-only fast path).
    pub fn all_push(&self) -> bool {
        self.parents.iter().all(|p| p.push)
    }

    /// Number of top-level handles.
    pub fn handle_count(&self) -> usize {
        self.leaves.len()
    }

    /// Number of 64-byte blocks in one page.
    pub fn page_blocks(&self) -> usize {
        self.page_bytes / 64
    }
}
