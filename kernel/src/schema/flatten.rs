//! Flattening: parents into leaves with 1-based handles, dynamic array elements into element
//! leaves, leaves into planes laid out in a page (grouped by width into runs), and the offsets of
//! the array-of-structs record. [`super::ClassBuilder::build`] runs it on validated declarations.

use super::{
    ArrayLayout, ElementLeaf, Leaf, LeafKind, Parent, Plane, PlaneRun, PlaneWidth, PropType, PropertyDecl, MAX_HANDLES,
};
use std::collections::HashMap;

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

pub(super) fn flatten_element(ty: &PropType, path: &str, out: &mut Vec<ElementLeaf>, offset: &mut usize) {
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
pub(super) struct Flattener {
    pub(super) parents: Vec<Parent>,
    pub(super) leaves: Vec<Leaf>,
    pub(super) planes: Vec<Plane>,
    pub(super) arrays: Vec<ArrayLayout>,
    pub(super) runs: Vec<PlaneRun>,
    pub(super) page_bytes: usize,
    pub(super) record_bytes: usize,
    pub(super) by_name: HashMap<String, usize>,
}

impl Flattener {
    pub(super) fn add_parent(&mut self, d: PropertyDecl, array_index: u16) {
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
            default: d.default,
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
    pub(super) fn place_planes(&mut self) {
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
