//! Building a layout: [`ClassBuilder`] collects declarations, validates them (every
//! [`LayoutError`] is found here, never by a panic), has them flattened ([`super::flatten`]) and
//! stamps the result with its checksum.

use super::flatten::{flatten_element, Flattener};
use super::{ClassLayout, PropType, PropertyDecl, MAX_ARRAY_BYTES, MAX_HANDLES};
use std::fmt;

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
    /// A class default ([`PropertyDecl::default_value`]) that does not fit its property: (the
    /// property, why).
    BadDefault(String, String),
    /// Two calls ([`super::RpcDecl`]) share a name (inherited ones included).
    DuplicateRpc(String),
    /// A call's parameter is not a plain property, or its parameters do not build: (call,
    /// parameter — empty when the parameters as a whole do not build — and why).
    BadRpcParam {
        /// The call.
        rpc: String,
        /// The parameter.
        param: String,
        /// Why.
        why: String,
    },
    /// A class declares (or inherits) more than [`super::MAX_RPCS`] calls.
    TooManyRpcs {
        /// Class name.
        class: String,
        /// Calls declared.
        rpcs: usize,
    },
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
            LayoutError::BadDefault(n, why) => write!(f, "property `{n}`: bad class default: {why}"),
            LayoutError::DuplicateRpc(n) => write!(f, "call `{n}` is declared twice"),
            LayoutError::BadRpcParam { rpc, param, why } if param.is_empty() => {
                write!(f, "call `{rpc}`: bad parameters: {why}")
            }
            LayoutError::BadRpcParam { rpc, param, why } => write!(f, "call `{rpc}`, parameter `{param}`: {why}"),
            LayoutError::TooManyRpcs { class, rpcs } => {
                write!(f, "class `{class}` declares {rpcs} calls; at most {} fit", super::MAX_RPCS)
            }
        }
    }
}

impl std::error::Error for LayoutError {}

/// Builds a [`ClassLayout`]; all validation happens in [`ClassBuilder::build`].
#[derive(Clone, Debug)]
pub struct ClassBuilder {
    name: String,
    base: Option<ClassLayout>,
    props: Vec<PropertyDecl>,
    rpcs: Vec<super::RpcDecl>,
}

impl ClassBuilder {
    /// A new class with no base.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), base: None, props: Vec::new(), rpcs: Vec::new() }
    }

    /// A subclass of `base`: it starts with the base's parents and continues its handles.
    pub fn extends(name: impl Into<String>, base: &ClassLayout) -> Self {
        Self { name: name.into(), base: Some(base.clone()), props: Vec::new(), rpcs: Vec::new() }
    }

    /// Declares a property.
    pub fn property(mut self, decl: PropertyDecl) -> Self {
        self.props.push(decl);
        self
    }

    /// Declares a remote procedure call ([`super::rpc`]).
    pub fn rpc(mut self, decl: super::RpcDecl) -> Self {
        self.rpcs.push(decl);
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
                    default: p.default.clone(),
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
        let inherited = self.base.as_ref().map_or(&[][..], |b| &b.rpcs[..]);
        let rpcs = super::rpc::build_rpcs(&self.name, inherited, &self.rpcs)?;
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
            default_record: Vec::new(),
            default_planes: Vec::new(),
            default_arrays: Vec::new(),
            groups: super::LeafGroups::default(),
            rpcs,
            checksum: 0,
            by_name: b.by_name,
        };
        layout.groups = super::LeafGroups::new(&layout);
        (layout.default_record, layout.default_planes, layout.default_arrays) = encode_defaults(&layout)?;
        layout.checksum = checksum(&layout);
        Ok(layout)
    }
}

/// The parents' class defaults as a replicated record, as one lane of each plane whose default
/// is not zero, and as each dynamic array's element bytes.
#[allow(clippy::type_complexity)]
fn encode_defaults(layout: &ClassLayout) -> Result<(Vec<u8>, Vec<(usize, [u8; 16])>, Vec<Vec<u8>>), LayoutError> {
    let mut record = vec![0u8; layout.record_bytes];
    let mut page = vec![0u8; layout.page_bytes];
    let mut arrays = vec![Vec::new(); layout.arrays.len()];
    let mut any = false;
    for (pi, p) in layout.parents.iter().enumerate() {
        let Some(v) = &p.default else { continue };
        let bad = |why: String| LayoutError::BadDefault(p.name.clone(), why);
        let encoded = crate::value::encode_parent(layout, pi, v).map_err(|e| bad(e.to_string()))?;
        for (a, data) in encoded.arrays {
            let array = &layout.arrays[a];
            let null_refs = data.chunks(array.stride.max(1)).all(|element| {
                array
                    .elements
                    .iter()
                    .filter(|e| e.kind == super::LeafKind::Object)
                    .all(|e| element[e.offset..e.offset + e.kind.byte_size()].iter().all(|&b| b == 0))
            });
            if !null_refs {
                return Err(bad("an object reference defaults to null".into()));
            }
            arrays[a] = data;
        }
        record[p.record_range.clone()].copy_from_slice(&encoded.record[..p.record_range.len()]);
        for l in p.leaves.clone() {
            let leaf = &layout.leaves[l];
            let bytes = &record[leaf.record_offset..leaf.record_offset + leaf.kind.byte_size()];
            if leaf.kind == super::LeafKind::Object && bytes.iter().any(|&b| b != 0) {
                return Err(bad("an object reference defaults to null".into()));
            }
            crate::store::scatter_leaf(layout, &mut page, l, 0, &record[leaf.record_offset..]);
        }
        any = true;
    }
    let mut planes = Vec::new();
    if any {
        for (i, plane) in layout.planes.iter().enumerate() {
            let mut lane = [0u8; 16];
            crate::store::read_lane(&page, plane.page_offset, plane.width, 0, &mut lane);
            if lane.iter().any(|&b| b != 0) {
                planes.push((i, lane));
            }
        }
    }
    Ok((record, planes, arrays))
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

/// FNV-1a over the wire-relevant description: class name, leaf handles, paths and kinds, array
/// element layouts and caps, and the class defaults where any is declared (a property left out
/// of an open means its default: both sides must hold the same). Conditions and notifies do not
/// change what a bunch means, so two builds that differ only there interoperate and share a
/// checksum.
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
    // Left out without defaults: the checksums of classes that declare none stay as they were.
    if layout.default_record.iter().any(|&b| b != 0) {
        h.bytes(&layout.default_record);
    }
    for (a, data) in layout.default_arrays.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
        h.bytes(&(a as u32).to_le_bytes());
        h.bytes(&(data.len() as u32).to_le_bytes());
        h.bytes(data);
    }
    // Likewise without calls.
    for r in &layout.rpcs {
        h.str(&r.name);
        h.bytes(&[r.target as u8, r.reliable as u8]);
        h.bytes(&r.params.checksum.to_le_bytes());
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
