//! Every error a user can reach through the schema and the store, at its edge: the last valid
//! input builds or writes, the first invalid one is a clear error (and changes nothing).
//!
//! - `LayoutError` from `ClassBuilder::build`: empty names, static arrays of dimension 0,
//!   duplicate names (parents, struct fields, static array elements, a subclass redeclaring),
//!   enum widths outside 1..=8, opaque sizes outside 1..=256, empty structs, nested arrays,
//!   arrays too large for the nested handle space or 65535 bytes, more than 65535 handles.
//! - `ValueError` (through `StoreError::Value`) from `ClassStore::set` / `get` / `mark_dirty`:
//!   type mismatches of every shape, enum values wider than their width, arrays longer than their
//!   cap, property indices past the end; a refused write leaves the old value in place.
//! - `StoreError::StaleId` for despawned, reused and forged ids; `StoreError::PlaneType` for a
//!   plane of the wrong width or index.
//! - The 64-leaf limit of per-connection state: `ActiveLeaves` covers leaf 63 of a 64-leaf
//!   class. (A 65-leaf class is refused when registered with the driver, which is not tested
//!   here while the driver API changes.)

use shadowrep::net::condition::{flags, ActiveLeaves};
use shadowrep::schema::{
    ClassBuilder, ClassLayout, LayoutError, PropType, PropertyDecl, StructType, VectorQuant, MAX_ARRAY_BYTES,
    MAX_ARRAY_ELEMENTS, MAX_HANDLES,
};
use shadowrep::store::{ActorId, ClassStore, StoreError};
use shadowrep::value::{ObjectRef, Value, ValueError};
use std::sync::Arc;

fn class(props: Vec<PropertyDecl>) -> Result<ClassLayout, LayoutError> {
    props.into_iter().fold(ClassBuilder::new("C"), |b, p| b.property(p)).build()
}

fn one(name: &str, ty: PropType) -> Result<ClassLayout, LayoutError> {
    class(vec![PropertyDecl::new(name, ty)])
}

fn array(element: PropType, max_len: u16) -> PropType {
    PropType::Array { element: Box::new(element), max_len }
}

// ---------------------------------------------------------------------------------------------
// LayoutError
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_names_are_refused() {
    assert_eq!(ClassBuilder::new("").build().unwrap_err(), LayoutError::EmptyName);
    assert_eq!(one("", PropType::U8).unwrap_err(), LayoutError::EmptyName);
    assert!(ClassBuilder::new("C").build().is_ok(), "a class without properties is valid");
}

#[test]
fn static_arrays_need_a_dimension() {
    let zero = class(vec![PropertyDecl::new("A", PropType::U8).dim(0)]);
    assert_eq!(zero.unwrap_err(), LayoutError::ZeroDim("A".into()));
    let l = class(vec![PropertyDecl::new("A", PropType::U8).dim(1)]).unwrap();
    assert_eq!(l.parents.len(), 1);
    let l = class(vec![PropertyDecl::new("A", PropType::U8).dim(3)]).unwrap();
    assert_eq!(l.parents.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["A[0]", "A[1]", "A[2]"]);
}

#[test]
fn duplicate_names_are_refused() {
    let twice = class(vec![PropertyDecl::new("A", PropType::U8), PropertyDecl::new("A", PropType::U32)]);
    assert_eq!(twice.unwrap_err(), LayoutError::DuplicateName("A".into()));
    // A static array element's generated name collides with a declared one.
    let element = class(vec![PropertyDecl::new("A", PropType::U8).dim(2), PropertyDecl::new("A[1]", PropType::U8)]);
    assert_eq!(element.unwrap_err(), LayoutError::DuplicateName("A[1]".into()));
    // Struct fields.
    let s = StructType::new("S").field("X", PropType::U8).field("X", PropType::U16);
    assert_eq!(one("P", PropType::Struct(s)).unwrap_err(), LayoutError::DuplicateName("P.X".into()));
    // A subclass redeclaring its base's property.
    let base = one("A", PropType::U8).unwrap();
    let sub = ClassBuilder::extends("Sub", &base).property(PropertyDecl::new("A", PropType::U8)).build();
    assert_eq!(sub.unwrap_err(), LayoutError::DuplicateName("A".into()));
    // Same names in different scopes are fine.
    let s = StructType::new("S").field("A", PropType::U8);
    assert!(class(vec![PropertyDecl::new("A", PropType::U8), PropertyDecl::new("B", PropType::Struct(s))]).is_ok());
}

#[test]
fn enum_widths_are_one_to_eight_bits() {
    for bits in [0u8, 9, 16, 255] {
        assert_eq!(one("E", PropType::Enum { bits }).unwrap_err(), LayoutError::BadEnumBits("E".into(), bits));
    }
    for bits in 1..=8 {
        assert!(one("E", PropType::Enum { bits }).is_ok(), "{bits} bits");
    }
    // Also inside a struct and an array element.
    let s = StructType::new("S").field("E", PropType::Enum { bits: 0 });
    assert_eq!(one("P", PropType::Struct(s)).unwrap_err(), LayoutError::BadEnumBits("P.E".into(), 0));
    assert!(matches!(
        one("A", PropType::array(PropType::Enum { bits: 9 })).unwrap_err(),
        LayoutError::BadEnumBits(_, 9)
    ));
}

#[test]
fn opaque_sizes_are_one_to_256_bytes() {
    let opaque = |size| PropType::Opaque { name: "Blob".into(), size };
    for size in [0u16, 257, u16::MAX] {
        assert_eq!(one("O", opaque(size)).unwrap_err(), LayoutError::BadOpaqueSize("O".into(), size));
    }
    for size in [1u16, 256] {
        assert!(one("O", opaque(size)).is_ok(), "{size} bytes");
    }
}

#[test]
fn structs_need_fields() {
    assert_eq!(
        one("P", PropType::Struct(StructType::new("Empty"))).unwrap_err(),
        LayoutError::EmptyStruct("Empty".into())
    );
    let nested = StructType::new("Outer").field("In", PropType::Struct(StructType::new("Inner")));
    assert_eq!(one("P", PropType::Struct(nested)).unwrap_err(), LayoutError::EmptyStruct("Inner".into()));
    let in_array = PropType::array(PropType::Struct(StructType::new("E")));
    assert_eq!(one("A", in_array).unwrap_err(), LayoutError::EmptyStruct("E".into()));
}

#[test]
fn arrays_do_not_nest() {
    let direct = PropType::array(PropType::array(PropType::U8));
    assert_eq!(one("A", direct).unwrap_err(), LayoutError::NestedArray("A".into()));
    let via_struct =
        PropType::array(PropType::Struct(StructType::new("E").field("Inner", PropType::array(PropType::U8))));
    assert!(matches!(one("A", via_struct).unwrap_err(), LayoutError::NestedArray(_)));
    // An array inside a struct (not inside an array) is fine.
    let s = StructType::new("S").field("Items", PropType::array(PropType::U8));
    assert!(one("P", PropType::Struct(s)).is_ok());
}

#[test]
fn arrays_fit_the_nested_handle_space_and_byte_cap() {
    assert_eq!(MAX_ARRAY_BYTES, 65535);
    assert_eq!(MAX_ARRAY_ELEMENTS, 2048);
    // Bytes: u32 elements, 4 bytes each.
    let last = (MAX_ARRAY_BYTES / 4) as u16;
    assert!(one("A", array(PropType::U32, last)).is_ok(), "{last} × 4 bytes fits");
    assert_eq!(one("A", array(PropType::U32, last + 1)).unwrap_err(), LayoutError::ArrayTooLarge("A".into()));
    // Handles: an element of 3 one-byte leaves (3 bytes, 3 nested handles each).
    let e = PropType::Struct(
        StructType::new("E").field("A", PropType::U8).field("B", PropType::U8).field("C", PropType::U8),
    );
    let last = (MAX_HANDLES / 3) as u16;
    assert!(one("A", array(e.clone(), last)).is_ok(), "{last} × 3 handles fits");
    assert_eq!(one("A", array(e, last + 1)).unwrap_err(), LayoutError::ArrayTooLarge("A".into()));
    // One byte per element: the whole u16 range fits.
    assert!(one("A", array(PropType::U8, u16::MAX)).is_ok());
    // The default cap.
    assert!(matches!(PropType::array(PropType::U8), PropType::Array { max_len: 2048, .. }));
}

#[test]
fn a_class_has_at_most_65535_handles() {
    assert_eq!(MAX_HANDLES, 65535);
    let exactly = class(vec![PropertyDecl::new("A", PropType::U8).dim(u16::MAX)]).expect("65535 handles");
    assert_eq!(exactly.leaves.len(), 65535);
    assert_eq!(exactly.leaves.last().map(|l| l.handle), Some(u16::MAX));
    let over =
        class(vec![PropertyDecl::new("A", PropType::U8).dim(u16::MAX - 1), PropertyDecl::new("V", PropType::Rotator)]);
    assert!(over.is_ok(), "a rotator is one leaf");
    let pair = PropType::Struct(StructType::new("P").field("X", PropType::U8).field("Y", PropType::U8));
    let over = class(vec![PropertyDecl::new("A", PropType::U8).dim(u16::MAX - 1), PropertyDecl::new("S", pair)]);
    match over.unwrap_err() {
        LayoutError::TooManyHandles { class, needed } => {
            assert_eq!((class.as_str(), needed), ("C", 65536));
        }
        e => panic!("expected TooManyHandles, got {e:?}"),
    }
    // A subclass counts its base's handles.
    let base = class(vec![PropertyDecl::new("A", PropType::U8).dim(u16::MAX)]).unwrap();
    let sub = ClassBuilder::extends("Sub", &base).property(PropertyDecl::new("B", PropType::Bool)).build();
    assert!(matches!(sub.unwrap_err(), LayoutError::TooManyHandles { needed: 65536, .. }));
}

#[test]
fn layout_errors_say_what_is_wrong() {
    let msg = |r: Result<ClassLayout, LayoutError>| r.unwrap_err().to_string();
    assert!(msg(one("E", PropType::Enum { bits: 9 })).contains('9'));
    assert!(msg(one("Weird", PropType::Opaque { name: "B".into(), size: 0 })).contains("Weird"));
    assert!(msg(class(vec![PropertyDecl::new("Dup", PropType::U8), PropertyDecl::new("Dup", PropType::U8)]))
        .contains("Dup"));
}

// ---------------------------------------------------------------------------------------------
// ValueError through the store
// ---------------------------------------------------------------------------------------------

/// A class with one parent per shape of value.
fn store() -> (ClassStore, ActorId) {
    let s = StructType::new("S").field("A", PropType::U32).field("E", PropType::Enum { bits: 3 });
    let layout = class(vec![
        PropertyDecl::new("U32", PropType::U32),                                   // 0
        PropertyDecl::new("E3", PropType::Enum { bits: 3 }),                       // 1
        PropertyDecl::new("E8", PropType::Enum { bits: 8 }),                       // 2
        PropertyDecl::new("S", PropType::Struct(s.clone())),                       // 3
        PropertyDecl::new("Small", array(PropType::U16, 4)),                       // 4
        PropertyDecl::new("Big", PropType::array(PropType::Struct(s))),            // 5
        PropertyDecl::new("Blob", PropType::Opaque { name: "B".into(), size: 5 }), // 6
        PropertyDecl::new("Loc", PropType::Vector(VectorQuant::Q10)),              // 7
        PropertyDecl::new("Rot", PropType::Rotator),                               // 8
        PropertyDecl::new("Ref", PropType::Object),                                // 9
        PropertyDecl::new("Flag", PropType::Bool),                                 // 10
    ])
    .unwrap();
    let mut store = ClassStore::new(Arc::new(layout));
    let id = store.spawn();
    (store, id)
}

fn s(a: u32, e: u8) -> Value {
    Value::Struct(vec![Value::U32(a), Value::Enum(e)])
}

/// `set` must fail with `want`, leaving every parent as it was.
fn refused(store: &mut ClassStore, id: ActorId, parent: usize, v: Value, want: impl Fn(&StoreError) -> bool) {
    let before: Vec<Value> = (0..store.layout().parents.len()).map(|p| store.get(id, p).unwrap()).collect();
    let err = store.set(id, parent, &v).expect_err(&format!("parent {parent} took {v:?}"));
    assert!(want(&err), "parent {parent}, {v:?}: unexpected error {err:?}");
    assert!(!err.to_string().is_empty());
    let r = store.set_and_mark(id, parent, &v);
    assert!(r.is_err(), "set_and_mark took {v:?}");
    let after: Vec<Value> = (0..store.layout().parents.len()).map(|p| store.get(id, p).unwrap()).collect();
    assert_eq!(format!("{before:?}"), format!("{after:?}"), "a refused write changed the actor");
}

fn mismatch(e: &StoreError) -> bool {
    matches!(e, StoreError::Value(ValueError::TypeMismatch { .. }))
}

#[test]
fn values_of_the_wrong_shape_are_refused() {
    let (mut st, id) = store();
    // Give every parent a non-default value first, so an unwanted write would show.
    st.set(id, 0, &Value::U32(7)).unwrap();
    st.set(id, 3, &s(9, 5)).unwrap();
    st.set(id, 4, &Value::Array(vec![Value::U16(1), Value::U16(2)])).unwrap();
    st.set(id, 6, &Value::Opaque(vec![1, 2, 3, 4, 5])).unwrap();
    st.set(id, 7, &Value::Vector([1.0, 2.0, 3.0])).unwrap();

    let cases: Vec<(usize, Value)> = vec![
        (0, Value::U64(7)),
        (0, Value::I32(7)),
        (0, Value::F32(7.0)),
        (1, Value::U8(1)),
        (3, Value::U32(1)),
        (3, Value::Struct(vec![Value::U32(1)])), // too few fields
        (3, Value::Struct(vec![Value::U32(1), Value::Enum(1), Value::U8(0)])), // too many
        (3, Value::Struct(vec![Value::U32(1), Value::U8(1)])), // wrong field type
        (3, Value::Struct(vec![Value::Enum(1), Value::U32(1)])), // swapped
        (4, Value::U16(1)),                      // scalar for an array
        (4, Value::Array(vec![Value::U16(1), Value::U32(2)])), // a bad element
        (5, Value::Array(vec![s(1, 1), Value::U32(3)])),
        (6, Value::Opaque(vec![1, 2, 3, 4])),       // too short
        (6, Value::Opaque(vec![1, 2, 3, 4, 5, 6])), // too long
        (7, Value::Rotator([1.0, 2.0, 3.0])),       // a rotator is not a vector
        (8, Value::Vector([1.0, 2.0, 3.0])),
        (9, Value::U64(5)), // an object is not a u64
        (10, Value::U8(1)),
        (0, Value::Array(vec![])),
    ];
    for (parent, v) in cases {
        refused(&mut st, id, parent, v, mismatch);
    }
    st.set(id, 9, &Value::Object(ObjectRef(5))).expect("an object reference is an object");
}

#[test]
fn enum_values_must_fit_their_width() {
    let (mut st, id) = store();
    for v in 0..8u8 {
        st.set(id, 1, &Value::Enum(v)).expect("fits 3 bits");
    }
    let out_of_range =
        |bits, value| move |e: &StoreError| *e == StoreError::Value(ValueError::EnumOutOfRange { bits, value });
    for v in [8u8, 9, 128, 255] {
        refused(&mut st, id, 1, Value::Enum(v), out_of_range(3, v));
        // Inside a struct, and inside an array element.
        refused(&mut st, id, 3, s(1, v), out_of_range(3, v));
        refused(&mut st, id, 5, Value::Array(vec![s(1, 1), s(2, v)]), out_of_range(3, v));
    }
    for v in [0u8, 127, 255] {
        st.set(id, 2, &Value::Enum(v)).expect("any u8 fits 8 bits");
    }
    assert_eq!(st.get(id, 1).unwrap(), Value::Enum(7));
}

#[test]
fn arrays_are_capped() {
    let (mut st, id) = store();
    let u16s = |n: usize| Value::Array((0..n).map(|i| Value::U16(i as u16)).collect());
    st.set(id, 4, &u16s(4)).expect("4 of 4");
    refused(&mut st, id, 4, u16s(5), |e| *e == StoreError::Value(ValueError::ArrayTooLong { max: 4, len: 5 }));
    let structs = |n: usize| Value::Array((0..n).map(|i| s(i as u32, 1)).collect());
    st.set(id, 5, &structs(MAX_ARRAY_ELEMENTS as usize)).expect("the default cap");
    refused(&mut st, id, 5, structs(MAX_ARRAY_ELEMENTS as usize + 1), |e| {
        *e == StoreError::Value(ValueError::ArrayTooLong { max: 2048, len: 2049 })
    });
    assert!(StoreError::Value(ValueError::ArrayTooLong { max: 2048, len: 2049 }).to_string().contains("2048"));
    st.set(id, 5, &structs(0)).expect("empty");
}

#[test]
fn property_indices_past_the_end_are_refused() {
    let (mut st, id) = store();
    let n = st.layout().parents.len();
    let no_such = |e: &StoreError| *e == StoreError::Value(ValueError::NoSuchProperty(n));
    assert!(no_such(&st.get(id, n).unwrap_err()));
    assert!(no_such(&st.set(id, n, &Value::U32(1)).unwrap_err()));
    assert!(no_such(&st.set_and_mark(id, n, &Value::U32(1)).unwrap_err()));
    assert!(no_such(&st.mark_dirty(id, n).unwrap_err()));
    assert!(matches!(st.get(id, usize::MAX), Err(StoreError::Value(ValueError::NoSuchProperty(usize::MAX)))));
    st.get(id, n - 1).expect("the last parent");
    st.mark_dirty(id, n - 1).expect("the last parent");
}

// ---------------------------------------------------------------------------------------------
// StoreError
// ---------------------------------------------------------------------------------------------

#[test]
fn stale_and_forged_ids_are_refused() {
    let (mut st, a) = store();
    let b = st.spawn();
    st.set(b, 0, &Value::U32(11)).unwrap();
    st.despawn(a).unwrap();
    let stale = |r: Result<(), StoreError>| assert_eq!(r, Err(StoreError::StaleId(a)));
    stale(st.set(a, 0, &Value::U32(1)));
    stale(st.mark_dirty(a, 0));
    stale(st.mark_all_dirty(a));
    stale(st.despawn(a));
    assert_eq!(st.get(a, 0), Err(StoreError::StaleId(a)));
    assert_eq!(st.set_and_mark(a, 0, &Value::U32(1)), Err(StoreError::StaleId(a)));
    assert!(!st.contains(a));
    // The slot is reused under a new generation; the old id stays stale.
    let c = st.spawn();
    assert_eq!(c.index, a.index);
    assert_ne!(c.generation, a.generation);
    assert_eq!(st.get(a, 0), Err(StoreError::StaleId(a)));
    assert_eq!(st.get(c, 0), Ok(Value::U32(0)), "a reused slot starts from defaults");
    assert_eq!(st.get(b, 0), Ok(Value::U32(11)), "other actors are untouched");
    // Ids this store never handed out.
    for forged in [
        ActorId { index: b.index, generation: b.generation + 1 },
        ActorId { index: 63, generation: 0 },
        ActorId { index: 64 * 1000, generation: 0 },
        ActorId { index: u32::MAX, generation: u32::MAX },
    ] {
        assert_eq!(st.get(forged, 0), Err(StoreError::StaleId(forged)), "{forged:?}");
        assert_eq!(st.set(forged, 0, &Value::U32(1)), Err(StoreError::StaleId(forged)));
        assert_eq!(st.despawn(forged), Err(StoreError::StaleId(forged)));
        assert!(
            st.get(forged, 0).unwrap_err().to_string().contains(&forged.index.to_string()),
            "the text names the id"
        );
    }
}

#[test]
fn planes_of_the_wrong_width_or_index_are_refused() {
    let layout = class(vec![
        PropertyDecl::new("A", PropType::U32),
        PropertyDecl::new("B", PropType::U8),
        PropertyDecl::new("F", PropType::Bool),
    ])
    .unwrap();
    let planes = layout.planes.clone();
    let mut st = ClassStore::new(Arc::new(layout));
    st.spawn();
    let plane_of = |leaf: usize| st.layout().leaves[leaf].planes.start;
    let (a, b, f) = (plane_of(0), plane_of(1), plane_of(2));
    let wrong = |plane| StoreError::PlaneType { plane };
    assert_eq!(st.plane::<u32>(a, 0).map(|s| s.len()), Ok(64));
    assert_eq!(st.plane::<u8>(a, 0).unwrap_err(), wrong(a));
    assert_eq!(st.plane::<u64>(a, 0).unwrap_err(), wrong(a));
    assert_eq!(st.plane::<u8>(b, 0).map(|s| s.len()), Ok(64));
    assert_eq!(st.plane::<u16>(b, 0).unwrap_err(), wrong(b));
    assert_eq!(st.plane::<u8>(f, 0).unwrap_err(), wrong(f), "bit planes have no typed lanes");
    assert_eq!(st.plane::<u32>(a, 1).unwrap_err(), wrong(a), "page past the end");
    assert_eq!(st.plane::<u32>(planes.len(), 0).unwrap_err(), wrong(planes.len()));
    assert!(st.plane_mut::<u8>(a).is_err());
    assert!(st.plane_mut::<u32>(planes.len()).is_err());
    assert!(st.plane_mut::<u8>(f).is_err());
    assert_eq!(st.plane_mut::<u32>(a).map(|p| p.pages()).ok(), Some(1));
    assert!(wrong(a).to_string().contains(&a.to_string()));
}

// ---------------------------------------------------------------------------------------------
// The 64-leaf limit of per-connection state
// ---------------------------------------------------------------------------------------------

#[test]
fn active_leaves_cover_a_64_leaf_class() {
    let layout =
        class(vec![PropertyDecl::new("A", PropType::U8).dim(63), PropertyDecl::new("Last", PropType::U32)]).unwrap();
    assert_eq!(layout.leaves.len(), 64);
    let active = ActiveLeaves::new(&layout);
    assert_eq!(active.get(flags::SIMULATED).0, u64::MAX, "all 64 leaves, leaf 63 included");
    assert_eq!(active.parent(63).0, 1 << 63);
}
