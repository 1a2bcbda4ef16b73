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

mod builder;
mod flatten;
pub mod groups;
mod layout;
pub mod rpc;
mod types;

pub use builder::{ClassBuilder, LayoutError};
pub(crate) use flatten::leaf_kind;
pub use groups::LeafGroups;
pub use layout::{ArrayLayout, ClassLayout, ElementLeaf, Leaf, LeafKind, Parent, Plane, PlaneRun, PlaneWidth};
pub use rpc::{RpcDecl, RpcLayout, RpcTarget, MAX_RPCS};
pub use types::{Condition, Notify, PropType, PropertyDecl, StructType, VectorQuant};

/// Actors per page: one `u64` holds a page's lane mask.
pub const PAGE_LANES: usize = 64;
/// Largest handle a `u16` handle space can hold (0 is the terminator).
pub const MAX_HANDLES: usize = u16::MAX as usize;
/// UE's `net.MaxRepArraySize`: the default and the largest element count of a dynamic array.
pub const MAX_ARRAY_ELEMENTS: u16 = 2048;
/// UE's `net.MaxRepArrayMemory`: the largest byte size of one dynamic array's contents.
pub const MAX_ARRAY_BYTES: usize = 65535;

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
