//! Class layouts: what a replicated class looks like to the kernel.
//!
//! A user declares *parent* properties (what a game programmer writes: `Health`, `LastTakeHitInfo`,
//! `Inventory`). The layout flattens them into *leaf commands* — the unit that is compared, recorded
//! in a changelist and written on the wire — exactly as UE's `FRepLayout` does:
//!
//! ```text
//! parent  Health: f32                 -> leaf handle 7   (one leaf)
//! parent  LastTakeHitInfo: struct {   -> leaf handle 8   ActualDamage: f32
//!             ActualDamage, DamageType}  leaf handle 9   DamageTypeClass: object
//! parent  Inventory: [object]         -> leaf handle 10  the array command; its element leaves have
//!                                                        their own handles 1.. inside each element
//! parent  Ammo[3]: u16 (static array) -> three parents `Ammo[0]`..`Ammo[2]`, one leaf each
//! ```
//!
//! Handles are 1-based `u16` (0 terminates a changelist). A subclass starts from its base class's
//! layout and continues its handles. Lookup from handle to leaf is a direct table.
//!
//! For the structure-of-arrays stores, every fixed-size leaf is split further into *planes*: one
//! plane is one primitive lane per actor (a bit, or 1, 2, 4, 8 or 12 bytes). A vector is one
//! 12-byte plane (its three `f32` interleaved), a bool is a bit plane. A page of 64 actors holds
//! each plane contiguous (see [`crate::store`]); the compare kernel diffs planes lane-wise.
//!
//! Byte planes start on 64-byte boundaries, grouped by width (widest first) into runs; bit planes
//! are packed 8 bytes apart after them.
//!
//! Invariants a built [`ClassLayout`] guarantees (checked in [`ClassBuilder::build`], never by a
//! panic): unique parent names, at most [`MAX_HANDLES`] top-level handles, every dynamic array's
//! worst-case nested handle count fits in a `u16`, no array directly inside an array element, enum
//! widths in 1..=8 bits, and non-empty structs.

use std::collections::HashMap;
use std::fmt;

/// Actors per page: one `u64` holds a page's lane mask.
pub const PAGE_LANES: usize = 64;
/// Largest handle a `u16` handle space can hold (0 is the terminator).
pub const MAX_HANDLES: usize = u16::MAX as usize;
/// UE's `net.MaxRepArraySize`: the default and the largest element count of a dynamic array.
pub const MAX_ARRAY_ELEMENTS: u16 = 2048;
/// UE's `net.MaxRepArrayMemory`: the largest byte size of one dynamic array's contents.
pub const MAX_ARRAY_BYTES: usize = 65535;

/// When a property is sent to a connection (UE's `ELifetimeCondition`, numbered as in UE 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Condition {
    /// Always sent.
    #[default]
    None = 0,
    /// Only in the first send to a connection.
    InitialOnly = 1,
    /// Only to the actor's owner.
    OwnerOnly = 2,
    /// To everyone but the owner.
    SkipOwner = 3,
    /// Only to simulated proxies.
    SimulatedOnly = 4,
    /// Only to the autonomous proxy.
    AutonomousOnly = 5,
    /// To simulated proxies, or when physics replication is on.
    SimulatedOrPhysics = 6,
    /// On the first send, or to the owner.
    InitialOrOwner = 7,
    /// Sent unless a per-object override switches it off.
    Custom = 8,
    /// To replays, or to the owner.
    ReplayOrOwner = 9,
    /// Only to replays.
    ReplayOnly = 10,
    /// To simulated proxies, never to replays.
    SimulatedOnlyNoReplay = 11,
    /// Simulated or physics, never to replays.
    SimulatedOrPhysicsNoReplay = 12,
    /// Never to replays.
    SkipReplay = 13,
    /// Like Custom: active unless overridden (UE's `COND_Dynamic`).
    Dynamic = 14,
    /// Never sent.
    Never = 15,
}

impl Condition {
    /// Every condition, in UE's numbering order.
    pub const ALL: [Condition; 16] = [
        Condition::None,
        Condition::InitialOnly,
        Condition::OwnerOnly,
        Condition::SkipOwner,
        Condition::SimulatedOnly,
        Condition::AutonomousOnly,
        Condition::SimulatedOrPhysics,
        Condition::InitialOrOwner,
        Condition::Custom,
        Condition::ReplayOrOwner,
        Condition::ReplayOnly,
        Condition::SimulatedOnlyNoReplay,
        Condition::SimulatedOrPhysicsNoReplay,
        Condition::SkipReplay,
        Condition::Dynamic,
        Condition::Never,
    ];
}

/// When the client fires a property's notify (UE's `ELifetimeRepNotifyCondition` plus whether the
/// notify takes the previous value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Notify {
    /// No notify.
    #[default]
    None,
    /// Fires when a received value differs from the local one.
    OnChanged,
    /// Like `OnChanged`, passing the previous value.
    OnChangedWithOld,
    /// Fires on every receive.
    Always,
    /// Like `Always`, passing the previous value.
    AlwaysWithOld,
}

/// How a vector is quantised on the wire (UE's `FVector_NetQuantize*` family).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum VectorQuant {
    /// Full precision: three raw `f32`.
    #[default]
    None,
    /// Rounded to whole units (`FVector_NetQuantize`, scale 1, 20 bits per component).
    Q1,
    /// One decimal (`FVector_NetQuantize10`, scale 10, 24 bits).
    Q10,
    /// Two decimals (`FVector_NetQuantize100`, scale 100, 30 bits).
    Q100,
    /// Unit vector, 16 bits per component (`FVector_NetQuantizeNormal`).
    Normal,
}

/// The type of a declared property: a scalar, or a composite that flattens into several leaves.
#[derive(Clone, Debug, PartialEq)]
pub enum PropType {
    /// One bit on the wire.
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
    /// A `u32` written with UE's packed encoding (`SerializeIntPacked`: 7 bits a byte), for
    /// values that stay small — counts, ids: a value below 128 takes 8 bits, below 16 384 16.
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
    /// An enum stored as a `u8`, written with `bits` bits (1..=8).
    Enum {
        /// Wire width.
        bits: u8,
    },
    /// Three `f32` components.
    Vector(VectorQuant),
    /// Pitch, yaw, roll in degrees; compressed to 16 bits per axis on the wire.
    Rotator,
    /// A name-table index.
    Name,
    /// A reference to another replicated object (a NetGUID on the wire).
    Object,
    /// A struct whose fields become leaves of their own.
    Struct(StructType),
    /// A struct serialized as one opaque value of `size` bytes (UE's `NetSerialize` structs).
    Opaque {
        /// Struct name (part of the checksum).
        name: String,
        /// Byte size, 1..=256.
        size: u16,
    },
    /// A dynamic array of elements of one type.
    Array {
        /// Element type (not itself an array).
        element: Box<PropType>,
        /// Largest element count accepted (default [`MAX_ARRAY_ELEMENTS`]).
        max_len: u16,
    },
}

impl PropType {
    /// A dynamic array with the default element cap.
    pub fn array(element: PropType) -> PropType {
        PropType::Array { element: Box::new(element), max_len: MAX_ARRAY_ELEMENTS }
    }
}

/// A named struct type: its fields in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct StructType {
    /// Struct name.
    pub name: String,
    /// Fields in declaration order.
    pub fields: Vec<(String, PropType)>,
}

impl StructType {
    /// A struct named `name` with no fields yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), fields: Vec::new() }
    }

    /// Adds a field.
    pub fn field(mut self, name: impl Into<String>, ty: PropType) -> Self {
        self.fields.push((name.into(), ty));
        self
    }
}

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
    fn planes(self) -> (PlaneWidth, usize) {
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
}

/// A property as declared, before flattening.
#[derive(Clone, Debug, PartialEq)]
pub struct PropertyDecl {
    /// Property name.
    pub name: String,
    /// Type.
    pub ty: PropType,
    /// Static array dimension (1 for a plain property).
    pub dim: u16,
    /// Condition.
    pub condition: Condition,
    /// Notify.
    pub notify: Notify,
    /// Push-based.
    pub push: bool,
}

impl PropertyDecl {
    /// A plain, always-sent, polled property.
    pub fn new(name: impl Into<String>, ty: PropType) -> Self {
        Self { name: name.into(), ty, dim: 1, condition: Condition::None, notify: Notify::None, push: false }
    }
    /// Sets the condition.
    pub fn condition(mut self, c: Condition) -> Self {
        self.condition = c;
        self
    }
    /// Sets the notify mode.
    pub fn notify(mut self, n: Notify) -> Self {
        self.notify = n;
        self
    }
    /// Marks the property push-based.
    pub fn push(mut self, push: bool) -> Self {
        self.push = push;
        self
    }
    /// Makes the property a static array of `dim` elements (one parent per element).
    pub fn dim(mut self, dim: u16) -> Self {
        self.dim = dim;
        self
    }
}

/// Why a layout could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Two parents share a name.
    DuplicateName(String),
    /// The class has more leaf handles than a `u16` handle can address.
    TooManyHandles {
        /// Class name.
        class: String,
        /// Handles needed.
        needed: usize,
    },
    /// A dynamic array's element is (or contains) a dynamic array.
    NestedArray(String),
    /// An array's worst case `max_len × element leaves` overflows the nested `u16` handle space, or
    /// its byte size overflows [`MAX_ARRAY_BYTES`].
    ArrayTooLarge(String),
    /// An enum width outside 1..=8 bits.
    BadEnumBits(String, u8),
    /// A struct with no fields.
    EmptyStruct(String),
    /// An opaque struct size outside 1..=256.
    BadOpaqueSize(String, u16),
    /// A static array dimension of 0.
    ZeroDim(String),
    /// An empty property or class name.
    EmptyName,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::DuplicateName(n) => write!(f, "property `{n}` is declared twice"),
            LayoutError::TooManyHandles { class, needed } => {
                write!(f, "class `{class}` needs {needed} handles; a u16 handle addresses {MAX_HANDLES}")
            }
            LayoutError::NestedArray(n) => write!(f, "property `{n}`: arrays of arrays are not supported"),
            LayoutError::ArrayTooLarge(n) => write!(
                f,
                "array `{n}`: max length × element leaves exceeds the u16 nested handle space, \
                 or its contents exceed {MAX_ARRAY_BYTES} bytes"
            ),
            LayoutError::BadEnumBits(n, b) => write!(f, "enum `{n}`: width {b} bits is outside 1..=8"),
            LayoutError::EmptyStruct(n) => write!(f, "struct `{n}` has no fields"),
            LayoutError::BadOpaqueSize(n, s) => write!(f, "opaque struct `{n}`: size {s} is outside 1..=256"),
            LayoutError::ZeroDim(n) => write!(f, "static array `{n}` has dimension 0"),
            LayoutError::EmptyName => write!(f, "a class or property name is empty"),
        }
    }
}

impl std::error::Error for LayoutError {}

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
    /// Checksum over everything that must agree for two sides to interoperate.
    pub checksum: u64,
    by_name: HashMap<String, usize>,
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

/// Builds a [`ClassLayout`]; all validation happens in [`ClassBuilder::build`].
#[derive(Clone, Debug)]
pub struct ClassBuilder {
    name: String,
    base: Option<ClassLayout>,
    props: Vec<PropertyDecl>,
}

impl ClassBuilder {
    /// A new class with no base.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), base: None, props: Vec::new() }
    }

    /// A subclass of `base`: it starts with the base's parents and continues its handles.
    pub fn extends(name: impl Into<String>, base: &ClassLayout) -> Self {
        Self { name: name.into(), base: Some(base.clone()), props: Vec::new() }
    }

    /// Declares a property.
    pub fn property(mut self, decl: PropertyDecl) -> Self {
        self.props.push(decl);
        self
    }

    /// Validates and flattens the declarations.
    pub fn build(self) -> Result<ClassLayout, LayoutError> {
        if self.name.is_empty() {
            return Err(LayoutError::EmptyName);
        }
        let mut decls: Vec<(PropertyDecl, u16)> = Vec::new();
        if let Some(base) = &self.base {
            for p in &base.parents {
                let decl = PropertyDecl {
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                    dim: 1,
                    condition: p.condition,
                    notify: p.notify,
                    push: p.push,
                };
                decls.push((decl, p.array_index));
            }
        }
        for d in &self.props {
            if d.name.is_empty() {
                return Err(LayoutError::EmptyName);
            }
            if d.dim == 0 {
                return Err(LayoutError::ZeroDim(d.name.clone()));
            }
            validate_type(&d.name, &d.ty, false)?;
            for i in 0..d.dim {
                let mut e = d.clone();
                if d.dim > 1 {
                    e.name = format!("{}[{i}]", d.name);
                }
                e.dim = 1;
                decls.push((e, i));
            }
        }
        let mut b = Flattener::default();
        for (d, index) in decls {
            if b.by_name.insert(d.name.clone(), b.parents.len()).is_some() {
                return Err(LayoutError::DuplicateName(d.name));
            }
            b.add_parent(d, index);
        }
        if b.leaves.len() > MAX_HANDLES {
            return Err(LayoutError::TooManyHandles { class: self.name, needed: b.leaves.len() });
        }
        b.place_planes();
        let page_bytes = b.page_bytes;
        let record_bytes = b.record_bytes.next_multiple_of(8);
        let mut layout = ClassLayout {
            name: self.name,
            base: self.base.map(|b| b.name),
            parents: b.parents,
            leaves: b.leaves,
            planes: b.planes,
            arrays: b.arrays,
            page_bytes,
            plane_runs: b.runs,
            record_bytes,
            checksum: 0,
            by_name: b.by_name,
        };
        layout.checksum = checksum(&layout);
        Ok(layout)
    }
}

fn validate_type(name: &str, ty: &PropType, in_array: bool) -> Result<(), LayoutError> {
    match ty {
        PropType::Enum { bits } if !(1..=8).contains(bits) => Err(LayoutError::BadEnumBits(name.into(), *bits)),
        PropType::Opaque { size, .. } if !(1..=256).contains(size) => {
            Err(LayoutError::BadOpaqueSize(name.into(), *size))
        }
        PropType::Struct(s) => {
            if s.fields.is_empty() {
                return Err(LayoutError::EmptyStruct(s.name.clone()));
            }
            let mut seen = std::collections::HashSet::new();
            for (f, t) in &s.fields {
                if !seen.insert(f.as_str()) {
                    return Err(LayoutError::DuplicateName(format!("{name}.{f}")));
                }
                validate_type(&format!("{name}.{f}"), t, in_array)?;
            }
            Ok(())
        }
        PropType::Array { element, max_len } => {
            if in_array {
                return Err(LayoutError::NestedArray(name.into()));
            }
            validate_type(name, element, true)?;
            let mut leaves = Vec::new();
            let mut stride = 0;
            flatten_element(element, "", &mut leaves, &mut stride);
            if *max_len as usize * leaves.len() > MAX_HANDLES || *max_len as usize * stride > MAX_ARRAY_BYTES {
                return Err(LayoutError::ArrayTooLarge(name.into()));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The leaf kind of a scalar type; `None` for structs and arrays.
pub(crate) fn leaf_kind(ty: &PropType) -> Option<LeafKind> {
    Some(match ty {
        PropType::Bool => LeafKind::Bool,
        PropType::U8 => LeafKind::U8,
        PropType::I8 => LeafKind::I8,
        PropType::U16 => LeafKind::U16,
        PropType::I16 => LeafKind::I16,
        PropType::U32 => LeafKind::U32,
        PropType::PackedU32 => LeafKind::PackedU32,
        PropType::I32 => LeafKind::I32,
        PropType::U64 => LeafKind::U64,
        PropType::I64 => LeafKind::I64,
        PropType::F32 => LeafKind::F32,
        PropType::F64 => LeafKind::F64,
        PropType::Enum { bits } => LeafKind::Enum(*bits),
        PropType::Vector(q) => LeafKind::Vector(*q),
        PropType::Rotator => LeafKind::Rotator,
        PropType::Name => LeafKind::Name,
        PropType::Object => LeafKind::Object,
        PropType::Opaque { size, .. } => LeafKind::Opaque(*size),
        PropType::Struct(_) | PropType::Array { .. } => return None,
    })
}

fn flatten_element(ty: &PropType, path: &str, out: &mut Vec<ElementLeaf>, offset: &mut usize) {
    match ty {
        PropType::Struct(s) => {
            for (f, t) in &s.fields {
                let p = if path.is_empty() { f.clone() } else { format!("{path}.{f}") };
                flatten_element(t, &p, out, offset);
            }
        }
        t => {
            // validate_type rejected arrays inside elements before this runs.
            let kind = leaf_kind(t).unwrap_or(LeafKind::U8);
            *offset = offset.next_multiple_of(kind.align());
            out.push(ElementLeaf { path: path.to_owned(), kind, offset: *offset });
            *offset += kind.byte_size();
        }
    }
}

#[derive(Default)]
struct Flattener {
    parents: Vec<Parent>,
    leaves: Vec<Leaf>,
    planes: Vec<Plane>,
    arrays: Vec<ArrayLayout>,
    runs: Vec<PlaneRun>,
    page_bytes: usize,
    record_bytes: usize,
    by_name: HashMap<String, usize>,
}

impl Flattener {
    fn add_parent(&mut self, d: PropertyDecl, array_index: u16) {
        let parent = self.parents.len();
        let first_leaf = self.leaves.len();
        let record_start = self.record_bytes;
        self.add_leaves(&d.ty, &d.name, parent);
        self.parents.push(Parent {
            name: d.name,
            ty: d.ty,
            condition: d.condition,
            notify: d.notify,
            push: d.push,
            leaves: first_leaf..self.leaves.len(),
            array_index,
            record_range: record_start..self.record_bytes,
        });
    }

    fn add_leaves(&mut self, ty: &PropType, path: &str, parent: usize) {
        match ty {
            PropType::Struct(s) => {
                for (f, t) in &s.fields {
                    self.add_leaves(t, &format!("{path}.{f}"), parent);
                }
            }
            PropType::Array { element, max_len } => {
                let leaf = self.leaves.len();
                let mut elements = Vec::new();
                let mut stride = 0;
                flatten_element(element, "", &mut elements, &mut stride);
                let align = elements.iter().map(|e| e.kind.align()).max().unwrap_or(1);
                let stride = stride.next_multiple_of(align).max(1);
                self.arrays.push(ArrayLayout { leaf, parent, elements, stride, max_len: *max_len });
                self.push_leaf(path, LeafKind::Array, parent, Some(self.arrays.len() - 1));
            }
            t => {
                let kind = leaf_kind(t).unwrap_or(LeafKind::U8);
                self.push_leaf(path, kind, parent, None);
            }
        }
    }

    /// Lays the planes out in a page: byte planes first, each starting on a 64-byte boundary (a
    /// cache line, and one AVX-512 vector), then every bit plane packed 8 bytes apart — a page's
    /// bool column is one `u64`, so eight bools share one cache line instead of taking one each.
    ///
    /// Planes are grouped by width, widest first, and renumbered in page order: each width forms
    /// one contiguous run of plane indices and bytes that a full compare diffs in a single call
    /// ([`PlaneRun`]). The grouping is stable, so a leaf's planes (all of one width) stay
    /// consecutive.
    fn place_planes(&mut self) {
        const ORDER: [PlaneWidth; 6] =
            [PlaneWidth::B12, PlaneWidth::B8, PlaneWidth::B4, PlaneWidth::B2, PlaneWidth::B1, PlaneWidth::Bit];
        let rank = |w: PlaneWidth| ORDER.iter().position(|&x| x == w).unwrap_or(ORDER.len());
        // Leaves in their new plane order; each leaf's planes move as one block.
        let mut order: Vec<usize> = (0..self.leaves.len()).collect();
        order.sort_by_key(|&l| {
            let leaf = &self.leaves[l];
            let width = self.planes.get(leaf.planes.start).map_or(ORDER.len(), |p| rank(p.width));
            (width, l)
        });
        let mut planes = Vec::with_capacity(self.planes.len());
        let mut at = 0;
        for l in order {
            let leaf = &mut self.leaves[l];
            let first = planes.len();
            for p in &self.planes[leaf.planes.clone()] {
                planes.push(Plane { width: p.width, page_offset: at });
                at += if p.width == PlaneWidth::Bit { 8 } else { p.width.page_bytes() };
            }
            leaf.planes = first..planes.len();
        }
        self.planes = planes;
        for (i, p) in self.planes.iter().enumerate() {
            match self.runs.last_mut() {
                Some(run) if run.width == p.width => run.planes.end = i + 1,
                _ => self.runs.push(PlaneRun { width: p.width, offset: p.page_offset, planes: i..i + 1 }),
            }
        }
        self.page_bytes = at.next_multiple_of(64);
    }

    fn push_leaf(&mut self, path: &str, kind: LeafKind, parent: usize, array: Option<usize>) {
        let (width, count) = kind.planes();
        let first_plane = self.planes.len();
        for _ in 0..count {
            // Offsets are assigned in `place_planes` once every plane is known.
            self.planes.push(Plane { width, page_offset: 0 });
        }
        self.record_bytes = self.record_bytes.next_multiple_of(kind.align());
        let record_offset = self.record_bytes;
        self.record_bytes += kind.byte_size();
        self.leaves.push(Leaf {
            handle: (self.leaves.len() + 1).min(MAX_HANDLES) as u16,
            path: path.to_owned(),
            kind,
            parent,
            planes: first_plane..self.planes.len(),
            record_offset,
            array,
        });
    }
}

/// FNV-1a over the wire-relevant description: class name, leaf handles, paths and kinds, array
/// element layouts and caps. Conditions and notifies do not change what a bunch means, so two
/// builds that differ only there interoperate and share a checksum.
fn checksum(layout: &ClassLayout) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.str(&layout.name);
    for leaf in &layout.leaves {
        h.bytes(&leaf.handle.to_le_bytes());
        h.str(&leaf.path);
        h.str(&format!("{:?}", leaf.kind));
        if let Some(a) = leaf.array {
            let a = &layout.arrays[a];
            h.bytes(&a.max_len.to_le_bytes());
            for e in &a.elements {
                h.str(&e.path);
                h.str(&format!("{:?}", e.kind));
            }
        }
    }
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn str(&mut self, s: &str) {
        self.bytes(&(s.len() as u32).to_le_bytes());
        self.bytes(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit_info() -> PropType {
        PropType::Struct(
            StructType::new("TakeHitInfo")
                .field("ActualDamage", PropType::F32)
                .field("DamageTypeClass", PropType::Object),
        )
    }

    #[test]
    fn parents_flatten_to_one_based_leaf_handles() {
        let l = ClassBuilder::new("C")
            .property(PropertyDecl::new("Health", PropType::F32))
            .property(PropertyDecl::new("Hit", hit_info()))
            .property(PropertyDecl::new("Inv", PropType::array(PropType::Object)))
            .property(PropertyDecl::new("Ammo", PropType::U16).dim(3))
            .build()
            .unwrap();
        let paths: Vec<_> = l.leaves.iter().map(|x| (x.handle, x.path.as_str())).collect();
        assert_eq!(
            paths,
            [
                (1, "Health"),
                (2, "Hit.ActualDamage"),
                (3, "Hit.DamageTypeClass"),
                (4, "Inv"),
                (5, "Ammo[0]"),
                (6, "Ammo[1]"),
                (7, "Ammo[2]")
            ]
        );
        assert_eq!(l.parents.len(), 6);
        assert_eq!(l.parent_index("Ammo[2]"), Some(5));
        assert_eq!(l.leaf_by_handle(3).unwrap().path, "Hit.DamageTypeClass");
        assert!(l.leaf_by_handle(0).is_none() && l.leaf_by_handle(8).is_none());
        assert!(l.planes.iter().all(|p| p.page_offset % if p.width == PlaneWidth::Bit { 8 } else { 64 } == 0));
    }

    #[test]
    fn subclass_continues_handles_and_checksum_differs() {
        let base = ClassBuilder::new("Base").property(PropertyDecl::new("A", PropType::U32)).build().unwrap();
        let sub = ClassBuilder::extends("Sub", &base).property(PropertyDecl::new("B", PropType::Bool)).build().unwrap();
        assert_eq!(sub.leaves[1].handle, 2);
        assert_eq!(sub.base.as_deref(), Some("Base"));
        let other = ClassBuilder::extends("Sub", &base).property(PropertyDecl::new("B", PropType::U8)).build().unwrap();
        assert_ne!(sub.checksum, other.checksum);
        let same = ClassBuilder::extends("Sub", &base)
            .property(PropertyDecl::new("B", PropType::Bool).notify(Notify::Always))
            .build()
            .unwrap();
        assert_eq!(sub.checksum, same.checksum);
    }

    #[test]
    fn invalid_declarations_are_errors() {
        let dup = ClassBuilder::new("C")
            .property(PropertyDecl::new("A", PropType::U8))
            .property(PropertyDecl::new("A", PropType::U8))
            .build();
        assert_eq!(dup.unwrap_err(), LayoutError::DuplicateName("A".into()));
        let nested = ClassBuilder::new("C")
            .property(PropertyDecl::new("A", PropType::array(PropType::array(PropType::U8))))
            .build();
        assert_eq!(nested.unwrap_err(), LayoutError::NestedArray("A".into()));
        let many = ClassBuilder::new("C")
            .property(PropertyDecl::new("A", PropType::U8).dim(u16::MAX))
            .property(PropertyDecl::new("B", PropType::U8))
            .build();
        assert!(matches!(many.unwrap_err(), LayoutError::TooManyHandles { needed: 65536, .. }));
        let bits = ClassBuilder::new("C").property(PropertyDecl::new("E", PropType::Enum { bits: 9 })).build();
        assert_eq!(bits.unwrap_err(), LayoutError::BadEnumBits("E".into(), 9));
        let big = ClassBuilder::new("C")
            .property(PropertyDecl::new(
                "A",
                PropType::Array {
                    element: Box::new(PropType::Opaque { name: "Blob".into(), size: 64 }),
                    max_len: 2048,
                },
            ))
            .build();
        assert_eq!(big.unwrap_err(), LayoutError::ArrayTooLarge("A".into()));
    }
}
