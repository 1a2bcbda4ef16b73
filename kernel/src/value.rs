//! Property values as a small dynamic tree, and their byte form.
//!
//! [`Value`] is how typed accessors, tests and the reference path talk about one parent's value
//! without knowing its Rust type. Every fixed-size leaf has a little-endian byte form of
//! [`LeafKind::byte_size`] bytes (a bool is one byte, 0 or 1); a parent's fixed leaves are written
//! into a *record* at each leaf's `record_offset`, and a dynamic array's elements into a buffer of
//! `count × stride` bytes. Stores split records into planes, the reference path keeps them whole.

use crate::schema::{ArrayLayout, ClassLayout, LeafKind, PropType};
use std::fmt;

/// A reference to a replicated object: 0 is null. On the wire it becomes a NetGUID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct ObjectRef(pub u64);

/// One parent's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Bool.
    Bool(bool),
    /// u8.
    U8(u8),
    /// i8.
    I8(i8),
    /// u16.
    U16(u16),
    /// i16.
    I16(i16),
    /// u32.
    U32(u32),
    /// i32.
    I32(i32),
    /// u64.
    U64(u64),
    /// i64.
    I64(i64),
    /// f32.
    F32(f32),
    /// f64.
    F64(f64),
    /// Enum discriminant.
    Enum(u8),
    /// Vector components.
    Vector([f32; 3]),
    /// Pitch, yaw, roll.
    Rotator([f32; 3]),
    /// Name-table index.
    Name(u32),
    /// Object reference.
    Object(ObjectRef),
    /// Opaque struct bytes.
    Opaque(Vec<u8>),
    /// Struct fields in declaration order.
    Struct(Vec<Value>),
    /// Array elements.
    Array(Vec<Value>),
}

/// A value that does not fit the declared type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueError {
    /// The value's shape is not the property's type.
    TypeMismatch {
        /// What the layout declares.
        expected: String,
    },
    /// An enum value wider than its bit width.
    EnumOutOfRange {
        /// Declared width.
        bits: u8,
        /// Value given.
        value: u8,
    },
    /// An array longer than its cap.
    ArrayTooLong {
        /// Declared cap.
        max: u16,
        /// Length given.
        len: usize,
    },
    /// No parent or leaf with that index.
    NoSuchProperty(usize),
    /// A call given another number of arguments than it declares parameters.
    ArgCount {
        /// Parameters declared.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::TypeMismatch { expected } => write!(f, "value does not match the declared type {expected}"),
            ValueError::EnumOutOfRange { bits, value } => write!(f, "enum value {value} does not fit in {bits} bits"),
            ValueError::ArrayTooLong { max, len } => write!(f, "array of {len} elements exceeds its cap of {max}"),
            ValueError::NoSuchProperty(i) => write!(f, "no property with index {i}"),
            ValueError::ArgCount { expected, got } => write!(f, "{got} arguments given; the call declares {expected}"),
        }
    }
}

impl std::error::Error for ValueError {}

fn mismatch(ty: &PropType) -> ValueError {
    ValueError::TypeMismatch { expected: format!("{ty:?}") }
}

/// Writes a value of type `ty` as consecutive leaves laid out like a record: each leaf at its
/// natural alignment relative to the buffer start. Dynamic arrays take no record bytes; their
/// values are collected, in leaf order, into `arrays` with their element type.
fn write_fixed<'v>(
    ty: &'v PropType,
    v: &'v Value,
    out: &mut Vec<u8>,
    arrays: &mut Vec<(&'v PropType, &'v Value)>,
) -> Result<(), ValueError> {
    match (ty, v) {
        (PropType::Struct(s), Value::Struct(fields)) if fields.len() == s.fields.len() => {
            for ((_, t), f) in s.fields.iter().zip(fields) {
                write_fixed(t, f, out, arrays)?;
            }
            Ok(())
        }
        (PropType::Array { element, .. }, Value::Array(_)) => {
            arrays.push((element, v));
            Ok(())
        }
        (PropType::Array { .. }, _) | (PropType::Struct(_), _) => Err(mismatch(ty)),
        (t, v) => {
            let kind = leaf_kind_of(t);
            let start = out.len().next_multiple_of(kind.align());
            out.resize(start, 0);
            write_leaf(kind, v, out).ok_or_else(|| mismatch(ty))?;
            if let (LeafKind::Enum(bits), Value::Enum(e)) = (kind, v) {
                if bits < 8 && *e >> bits != 0 {
                    return Err(ValueError::EnumOutOfRange { bits, value: *e });
                }
            }
            Ok(())
        }
    }
}

/// Appends one leaf's byte form; `None` if `v` is not of that kind.
pub(crate) fn write_leaf(kind: LeafKind, v: &Value, out: &mut Vec<u8>) -> Option<()> {
    match (kind, v) {
        (LeafKind::Bool, Value::Bool(b)) => out.push(*b as u8),
        (LeafKind::U8, Value::U8(x)) => out.push(*x),
        (LeafKind::I8, Value::I8(x)) => out.push(*x as u8),
        (LeafKind::Enum(_), Value::Enum(x)) => out.push(*x),
        (LeafKind::U16, Value::U16(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::I16, Value::I16(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::U32 | LeafKind::PackedU32, Value::U32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::I32, Value::I32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::Name, Value::Name(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::F32, Value::F32(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::U64, Value::U64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::I64, Value::I64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::F64, Value::F64(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (LeafKind::Object, Value::Object(x)) => out.extend_from_slice(&x.0.to_le_bytes()),
        (LeafKind::Vector(_), Value::Vector(c)) | (LeafKind::Rotator, Value::Rotator(c)) => {
            for x in c {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        (LeafKind::Opaque(n), Value::Opaque(b)) if b.len() == n as usize => out.extend_from_slice(b),
        _ => return None,
    }
    Some(())
}

/// Reads one leaf from its byte form (`bytes` holds at least `kind.byte_size()` bytes).
pub(crate) fn read_leaf(kind: LeafKind, bytes: &[u8]) -> Value {
    let b = |n: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&bytes[..n]);
        a
    };
    let f3 = || {
        let mut c = [0f32; 3];
        for (i, x) in c.iter_mut().enumerate() {
            *x = f32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or_default());
        }
        c
    };
    match kind {
        LeafKind::Bool => Value::Bool(bytes[0] != 0),
        LeafKind::U8 => Value::U8(bytes[0]),
        LeafKind::I8 => Value::I8(bytes[0] as i8),
        LeafKind::Enum(_) => Value::Enum(bytes[0]),
        LeafKind::U16 => Value::U16(u16::from_le_bytes([bytes[0], bytes[1]])),
        LeafKind::I16 => Value::I16(i16::from_le_bytes([bytes[0], bytes[1]])),
        LeafKind::U32 | LeafKind::PackedU32 => Value::U32(u32::from_le_bytes(b(4)[..4].try_into().unwrap_or_default())),
        LeafKind::I32 => Value::I32(i32::from_le_bytes(b(4)[..4].try_into().unwrap_or_default())),
        LeafKind::Name => Value::Name(u32::from_le_bytes(b(4)[..4].try_into().unwrap_or_default())),
        LeafKind::F32 => Value::F32(f32::from_le_bytes(b(4)[..4].try_into().unwrap_or_default())),
        LeafKind::U64 => Value::U64(u64::from_le_bytes(b(8))),
        LeafKind::I64 => Value::I64(i64::from_le_bytes(b(8))),
        LeafKind::F64 => Value::F64(f64::from_le_bytes(b(8))),
        LeafKind::Object => Value::Object(ObjectRef(u64::from_le_bytes(b(8)))),
        LeafKind::Vector(_) => Value::Vector(f3()),
        LeafKind::Rotator => Value::Rotator(f3()),
        LeafKind::Opaque(n) => Value::Opaque(bytes[..n as usize].to_vec()),
        LeafKind::Array => Value::Array(Vec::new()),
    }
}

/// Reads a value of type `ty` from a record starting at `*offset`; dynamic arrays take their
/// element bytes, in leaf order, from `arrays`.
fn read_fixed<'a>(
    ty: &PropType,
    bytes: &[u8],
    offset: &mut usize,
    arrays: &mut dyn Iterator<Item = (&'a ArrayLayout, &'a [u8])>,
) -> Value {
    match ty {
        PropType::Struct(s) => {
            Value::Struct(s.fields.iter().map(|(_, t)| read_fixed(t, bytes, offset, arrays)).collect())
        }
        PropType::Array { element, .. } => match arrays.next() {
            Some((layout, data)) => read_array(layout, element, data),
            None => Value::Array(Vec::new()),
        },
        t => {
            let kind = leaf_kind_of(t);
            *offset = offset.next_multiple_of(kind.align());
            let v = read_leaf(kind, &bytes[*offset..]);
            *offset += kind.byte_size();
            v
        }
    }
}

/// The leaf kind of a scalar type (`Array` stands in for composites, which callers match first).
fn leaf_kind_of(ty: &PropType) -> LeafKind {
    crate::schema::leaf_kind(ty).unwrap_or(LeafKind::Array)
}

/// Encodes an array value into element bytes (`len × stride`).
fn write_array(array: &ArrayLayout, element: &PropType, v: &Value) -> Result<Vec<u8>, ValueError> {
    let Value::Array(items) = v else {
        return Err(ValueError::TypeMismatch { expected: format!("array of {element:?}") });
    };
    if items.len() > array.max_len as usize {
        return Err(ValueError::ArrayTooLong { max: array.max_len, len: items.len() });
    }
    let mut out = Vec::with_capacity(items.len() * array.stride);
    let mut tmp = Vec::with_capacity(array.stride);
    let mut nested = Vec::new();
    for item in items {
        tmp.clear();
        write_fixed(element, item, &mut tmp, &mut nested)?;
        tmp.resize(array.stride, 0);
        out.extend_from_slice(&tmp);
    }
    Ok(out)
}

/// Decodes element bytes into an array value.
fn read_array(array: &ArrayLayout, element: &PropType, bytes: &[u8]) -> Value {
    Value::Array(
        bytes
            .chunks_exact(array.stride)
            .map(|e| {
                let mut off = 0;
                read_fixed(element, e, &mut off, &mut std::iter::empty())
            })
            .collect(),
    )
}

/// One parent's value in byte form.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ParentBytes {
    /// The fixed leaves, relative to the parent's record start (`record_range.len()` bytes).
    pub record: Vec<u8>,
    /// Element bytes of each dynamic array of the parent, in leaf order, with its array index.
    pub arrays: Vec<(usize, Vec<u8>)>,
}

/// The array indices of parent `parent`'s dynamic-array leaves, in leaf order.
pub(crate) fn parent_arrays(layout: &ClassLayout, parent: usize) -> impl Iterator<Item = usize> + '_ {
    layout.parents[parent].leaves.clone().filter_map(|l| layout.leaves[l].array)
}

/// Encodes parent `parent`'s value, type-checked against the layout.
pub(crate) fn encode_parent(layout: &ClassLayout, parent: usize, v: &Value) -> Result<ParentBytes, ValueError> {
    let p = layout.parents.get(parent).ok_or(ValueError::NoSuchProperty(parent))?;
    // Leaves align relative to offset 0 of the whole record; a buffer that starts with the record
    // start's residue mod 8 reproduces the same alignment, since no leaf aligns beyond 8.
    let pad = p.record_range.start % 8;
    let mut record = vec![0u8; pad];
    let mut found = Vec::new();
    write_fixed(&p.ty, v, &mut record, &mut found)?;
    record.drain(..pad);
    record.resize(p.record_range.len(), 0);
    let mut arrays = Vec::with_capacity(found.len());
    for (a, (element, value)) in parent_arrays(layout, parent).zip(found) {
        arrays.push((a, write_array(&layout.arrays[a], element, value)?));
    }
    Ok(ParentBytes { record, arrays })
}

/// Decodes parent `parent`'s value from its record bytes (relative to its record start) and the
/// element bytes of its arrays (by array index, through `array_bytes`).
pub(crate) fn decode_parent<'a>(
    layout: &'a ClassLayout,
    parent: usize,
    record: &[u8],
    array_bytes: impl Fn(usize) -> &'a [u8],
) -> Value {
    let p = &layout.parents[parent];
    let pad = p.record_range.start % 8;
    let mut aligned = vec![0u8; pad];
    aligned.extend_from_slice(record);
    aligned.resize(pad + p.record_range.len() + 8, 0);
    let mut off = pad;
    let mut arrays = parent_arrays(layout, parent).map(|a| (&layout.arrays[a], array_bytes(a)));
    read_fixed(&p.ty, &aligned, &mut off, &mut arrays)
}

impl Value {
    /// The zero value of a type, as a fresh actor holds it.
    pub fn default_for(ty: &PropType) -> Value {
        match ty {
            PropType::Struct(s) => Value::Struct(s.fields.iter().map(|(_, t)| Value::default_for(t)).collect()),
            PropType::Array { .. } => Value::Array(Vec::new()),
            t => read_leaf(leaf_kind_of(t), &[0u8; 256]),
        }
    }
}
