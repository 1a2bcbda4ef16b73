//! The straightforward UE algorithm, kept as the oracle and the baseline.
//!
//! Every object is its own heap allocation, shaped like a UObject: a header, then the class's
//! properties at their offsets with non-replicated fields between them ([`ObjectShape`]). Each
//! object has its own shadow buffer holding only the replicated properties, packed in handle
//! order (UE's `FRepStateStaticBuffer`). The compare walks parents, then leaf commands, reading each
//! property by its type and comparing it with the shadow (UE's `CompareProperties_r`), and emits a
//! sorted `u16` changelist per object:
//!
//! ```text
//! handle, handle, …, array_handle, count, nested handles…, 0, …, 0
//! ```
//!
//! The semantics are the documented ones, decided here without the kernel's shortcuts: every
//! property of every live object that is not push-based (under the [`PushMode`]) is compared by
//! value every frame — fixed fields and dynamic arrays alike; a push-based one only when marked.
//! Floats compare by their bits (see [`crate::compare`]). Writes that the store records as marks
//! are marks here too: [`RefWorld::set`] of a parent reaching a dynamic array marks it, as
//! [`crate::store::ClassStore::set`] does, while [`RefWorld::write_leaf`] (a bulk system's write)
//! marks nothing. A new object starts with its class defaults in its memory and its shadow (UE's
//! class default object), and every parent considered.

pub mod frame;

use crate::compare::PushMode;
use crate::schema::{ArrayLayout, ClassLayout, LeafKind};
use crate::store::StoreError;
use crate::value::{self, Value, ValueError};
use std::sync::Arc;

/// Where the replicated properties sit inside a reference object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectShape {
    /// Bytes before the first property (vtable, flags, name, outer, …).
    pub header: usize,
    /// Non-replicated bytes before each parent property.
    pub gap: usize,
    /// Smallest object size; real actors are hundreds of bytes.
    pub min_size: usize,
}

impl Default for ObjectShape {
    /// 128-byte header, 16 bytes of other state before each property, at least 512 bytes.
    fn default() -> Self {
        Self { header: 128, gap: 16, min_size: 512 }
    }
}

/// One object: its memory, its dynamic arrays, its shadow and its push-model dirty bits.
#[derive(Debug)]
struct RefObject {
    data: Box<[u8]>,
    arrays: Vec<Vec<u8>>,
    shadow: Box<[u8]>,
    shadow_arrays: Vec<Vec<u8>>,
    dirty: Vec<u64>,
    alive: bool,
}

/// Changelists of one compare: a flat buffer and one range per object.
#[derive(Clone, Debug, Default)]
pub struct RefChanges {
    buf: Vec<u16>,
    ranges: Vec<(u32, u32)>,
}

impl RefChanges {
    /// Object `obj`'s changelist (empty when nothing changed).
    pub fn changelist(&self, obj: usize) -> &[u16] {
        self.ranges.get(obj).map_or(&[], |&(a, b)| &self.buf[a as usize..b as usize])
    }

    /// Objects with a non-empty changelist.
    pub fn changed_objects(&self) -> usize {
        self.ranges.iter().filter(|(a, b)| a != b).count()
    }
}

/// A world of reference objects of one class.
#[derive(Debug)]
pub struct RefWorld {
    layout: Arc<ClassLayout>,
    /// Offset of each parent's record start inside an object.
    parent_offsets: Vec<usize>,
    object_size: usize,
    objects: Vec<RefObject>,
}

impl RefWorld {
    /// An empty world with the default object shape.
    pub fn new(layout: Arc<ClassLayout>) -> Self {
        Self::with_shape(layout, ObjectShape::default())
    }

    /// An empty world whose objects have `shape`.
    pub fn with_shape(layout: Arc<ClassLayout>, shape: ObjectShape) -> Self {
        let header = shape.header.next_multiple_of(8);
        let gap = shape.gap.next_multiple_of(8);
        // Adding a multiple of 8 to each record offset keeps every leaf at its natural alignment.
        let parent_offsets: Vec<usize> =
            layout.parents.iter().enumerate().map(|(i, p)| header + (i + 1) * gap + p.record_range.start).collect();
        let end = header + (layout.parents.len() + 1) * gap + layout.record_bytes;
        Self { parent_offsets, object_size: end.max(shape.min_size).next_multiple_of(8), layout, objects: Vec::new() }
    }

    /// Spawns an object with default state (its class defaults, as a constructor leaves it);
    /// returns its index.
    pub fn spawn(&mut self) -> usize {
        let mut data = vec![0u8; self.object_size].into_boxed_slice();
        for (p, &at) in self.layout.parents.iter().zip(&self.parent_offsets) {
            data[at..at + p.record_range.len()].copy_from_slice(&self.layout.default_record[p.record_range.clone()]);
        }
        self.objects.push(RefObject {
            data,
            arrays: self.layout.default_arrays.clone(),
            shadow: self.layout.default_record.clone().into_boxed_slice(),
            shadow_arrays: self.layout.default_arrays.clone(),
            dirty: vec![!0u64; self.layout.parents.len().div_ceil(64)],
            alive: true,
        });
        self.objects.len() - 1
    }

    /// Destroys an object: it is never compared again.
    pub fn destroy(&mut self, obj: usize) {
        if let Some(o) = self.objects.get_mut(obj) {
            o.alive = false;
        }
    }

    fn object(&self, obj: usize) -> Result<&RefObject, StoreError> {
        self.objects.get(obj).filter(|o| o.alive).ok_or(StoreError::Value(ValueError::NoSuchProperty(obj)))
    }

    /// Writes a parent's value (a write reaching a dynamic array also marks the parent dirty, as
    /// the store does).
    pub fn set(&mut self, obj: usize, parent: usize, v: &Value) -> Result<(), StoreError> {
        self.object(obj)?;
        let encoded = value::encode_parent(&self.layout, parent, v)?;
        let at = self.parent_offsets[parent];
        let o = &mut self.objects[obj];
        o.data[at..at + encoded.record.len()].copy_from_slice(&encoded.record);
        if !encoded.arrays.is_empty() {
            for (a, data) in encoded.arrays {
                o.arrays[a] = data;
            }
            o.dirty[parent / 64] |= 1 << (parent % 64);
        }
        Ok(())
    }

    /// Reads a parent's value.
    pub fn get(&self, obj: usize, parent: usize) -> Result<Value, StoreError> {
        let o = self.object(obj)?;
        let p = self.layout.parents.get(parent).ok_or(ValueError::NoSuchProperty(parent))?;
        let at = self.parent_offsets[parent];
        let record = &o.data[at..at + p.record_range.len()];
        Ok(value::decode_parent(&self.layout, parent, record, |a| o.arrays[a].as_slice()))
    }

    /// Writes one fixed leaf from its byte form without marking anything: what a bulk system
    /// writing a column does ([`crate::store::ClassStore::plane_mut`]). Dynamic-array leaves are
    /// refused (their writes always go through [`Self::set`]).
    pub fn write_leaf(&mut self, obj: usize, leaf: usize, bytes: &[u8]) -> Result<(), StoreError> {
        self.object(obj)?;
        let l = self.layout.leaves.get(leaf).filter(|l| l.array.is_none()).ok_or(ValueError::NoSuchProperty(leaf))?;
        let n = l.kind.byte_size();
        let src =
            bytes.get(..n).ok_or_else(|| ValueError::TypeMismatch { expected: format!("{n} bytes for {}", l.path) })?;
        let p = &self.layout.parents[l.parent];
        let at = self.parent_offsets[l.parent] - p.record_range.start + l.record_offset;
        self.objects[obj].data[at..at + n].copy_from_slice(src);
        Ok(())
    }

    /// Reads a parent's value from the object's shadow buffer.
    pub fn shadow_value(&self, obj: usize, parent: usize) -> Result<Value, StoreError> {
        let o = self.object(obj)?;
        let p = self.layout.parents.get(parent).ok_or(ValueError::NoSuchProperty(parent))?;
        let record = &o.shadow[p.record_range.clone()];
        Ok(value::decode_parent(&self.layout, parent, record, |a| o.shadow_arrays[a].as_slice()))
    }

    /// Marks a push-based parent dirty.
    pub fn mark_dirty(&mut self, obj: usize, parent: usize) {
        if let Some(o) = self.objects.get_mut(obj) {
            if parent < self.layout.parents.len() {
                o.dirty[parent / 64] |= 1 << (parent % 64);
            }
        }
    }

    /// Compares every live object with its shadow, filling `out` with one changelist per object.
    pub fn compare(&mut self, push: PushMode, out: &mut RefChanges) {
        out.buf.clear();
        out.ranges.clear();
        let layout = &*self.layout;
        for o in &mut self.objects {
            let start = out.buf.len() as u32;
            if o.alive {
                compare_object(layout, &self.parent_offsets, push, o, &mut out.buf);
            }
            out.ranges.push((start, out.buf.len() as u32));
        }
    }
}

/// UE's per-object compare: parents, then leaf commands by type.
fn compare_object(
    layout: &ClassLayout,
    parent_offsets: &[usize],
    push: PushMode,
    o: &mut RefObject,
    out: &mut Vec<u16>,
) {
    let start = out.len();
    for (pi, parent) in layout.parents.iter().enumerate() {
        // UE's generic path: a polled property is compared by value every frame, whatever it
        // holds; a push-based one only when marked.
        let push_based = match push {
            PushMode::Off => false,
            PushMode::Declared => parent.push,
            PushMode::All => true,
        };
        if push_based && o.dirty[pi / 64] >> (pi % 64) & 1 == 0 {
            continue;
        }
        let base = parent_offsets[pi] - parent.record_range.start;
        for leaf in &layout.leaves[parent.leaves.clone()] {
            if let Some(a) = leaf.array {
                compare_array(&layout.arrays[a], leaf.handle, &o.arrays[a], &mut o.shadow_arrays[a], out);
                continue;
            }
            let (at, so, n) = (base + leaf.record_offset, leaf.record_offset, leaf.kind.byte_size());
            if !identical(leaf.kind, &o.data[at..at + n], &o.shadow[so..so + n]) {
                out.push(leaf.handle);
                o.shadow[so..so + n].copy_from_slice(&o.data[at..at + n]);
            }
        }
    }
    for w in &mut o.dirty {
        *w = 0;
    }
    if out.len() > start {
        out.push(0);
    }
}

fn compare_array(array: &ArrayLayout, handle: u16, live: &[u8], shadow: &mut Vec<u8>, out: &mut Vec<u16>) {
    let (nl, ns) = (live.len() / array.stride, shadow.len() / array.stride);
    let header = out.len();
    out.extend_from_slice(&[handle, 0]);
    let n = array.elements.len();
    for e in 0..nl {
        for (i, el) in array.elements.iter().enumerate() {
            let r = e * array.stride + el.offset..e * array.stride + el.offset + el.kind.byte_size();
            if e >= ns || !identical(el.kind, &live[r.clone()], &shadow[r]) {
                out.push((e * n + i + 1) as u16);
            }
        }
    }
    let count = out.len() - header - 2;
    if count == 0 && nl == ns {
        out.truncate(header);
        return;
    }
    out[header + 1] = count as u16;
    out.push(0);
    shadow.clear();
    shadow.extend_from_slice(live);
}

/// Compares one property of `kind` by reading it as its type (floats by their bits).
fn identical(kind: LeafKind, a: &[u8], b: &[u8]) -> bool {
    fn rd<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
        let mut x = [0u8; N];
        x.copy_from_slice(&s[at..at + N]);
        x
    }
    match kind {
        LeafKind::Bool => (a[0] != 0) == (b[0] != 0),
        LeafKind::U8 | LeafKind::I8 | LeafKind::Enum(_) => a[0] == b[0],
        LeafKind::U16 | LeafKind::I16 => u16::from_le_bytes(rd(a, 0)) == u16::from_le_bytes(rd(b, 0)),
        LeafKind::U32 | LeafKind::PackedU32 | LeafKind::I32 | LeafKind::Name => {
            u32::from_le_bytes(rd(a, 0)) == u32::from_le_bytes(rd(b, 0))
        }
        LeafKind::F32 => f32::from_le_bytes(rd(a, 0)).to_bits() == f32::from_le_bytes(rd(b, 0)).to_bits(),
        LeafKind::U64 | LeafKind::I64 | LeafKind::Object => {
            u64::from_le_bytes(rd(a, 0)) == u64::from_le_bytes(rd(b, 0))
        }
        LeafKind::F64 => f64::from_le_bytes(rd(a, 0)).to_bits() == f64::from_le_bytes(rd(b, 0)).to_bits(),
        LeafKind::Vector(_) | LeafKind::Rotator => {
            (0..3).all(|i| f32::from_le_bytes(rd(a, i * 4)).to_bits() == f32::from_le_bytes(rd(b, i * 4)).to_bits())
        }
        LeafKind::Opaque(n) => a[..n as usize] == b[..n as usize],
        LeafKind::Array => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ClassBuilder, PropType, PropertyDecl, StructType};

    fn layout() -> Arc<ClassLayout> {
        let s = StructType::new("S").field("A", PropType::U16).field("Inv", PropType::array(PropType::U32));
        Arc::new(
            ClassBuilder::new("T")
                .property(PropertyDecl::new("Hp", PropType::F32))
                .property(PropertyDecl::new("S", PropType::Struct(s)))
                .property(PropertyDecl::new("Ammo", PropType::U8).push(true))
                .build()
                .unwrap(),
        )
    }

    /// The object shape only moves properties around: any header and gap give the same values
    /// and changelists (a wrong offset would make writes overlap).
    #[test]
    fn object_shape_does_not_change_what_is_found() {
        let worlds = [ObjectShape::default(), ObjectShape { header: 0, gap: 0, min_size: 0 }];
        let mut found = Vec::new();
        for shape in worlds {
            let mut w = RefWorld::with_shape(layout(), shape);
            let o = w.spawn();
            w.set(o, 0, &Value::F32(-0.0)).unwrap();
            let s = Value::Struct(vec![Value::U16(9), Value::Array(vec![Value::U32(1), Value::U32(2)])]);
            w.set(o, 1, &s).unwrap();
            w.set(o, 2, &Value::U8(3)).unwrap();
            assert_eq!(w.get(o, 1).unwrap(), s);
            let mut c = RefChanges::default();
            w.compare(PushMode::Declared, &mut c);
            found.push(c.changelist(o).to_vec());
        }
        assert_eq!(found[0], vec![1, 2, 3, 2, 1, 2, 0, 4, 0]);
        assert_eq!(found[0], found[1]);
    }

    /// A bulk write marks nothing: a push-based leaf written that way is not found until marked,
    /// and an array leaf cannot be written that way.
    #[test]
    fn write_leaf_marks_nothing_and_refuses_arrays() {
        let mut w = RefWorld::new(layout());
        let o = w.spawn();
        let mut c = RefChanges::default();
        w.compare(PushMode::Declared, &mut c);
        let ammo = w.layout.leaf_index("Ammo").unwrap();
        w.write_leaf(o, ammo, &[7]).unwrap();
        w.compare(PushMode::Declared, &mut c);
        assert!(c.changelist(o).is_empty());
        w.mark_dirty(o, 2);
        w.compare(PushMode::Declared, &mut c);
        assert_eq!(c.changelist(o), [4, 0]);
        let inv = w.layout.leaf_index("S.Inv").unwrap();
        assert!(w.write_leaf(o, inv, &[0; 8]).is_err());
        assert!(w.write_leaf(o, 0, &[0; 2]).is_err(), "too few bytes for an f32");
    }
}
