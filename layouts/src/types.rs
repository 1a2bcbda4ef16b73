//! Rust types that can be replicated: the [`RepType`] trait and its implementations.
//!
//! A [`RepType`] knows three things: the kernel [`PropType`] it is declared as, how to turn a value
//! into the kernel's dynamic [`Value`], and how to read one back. The generated accessors of
//! [`replicated_class!`](crate::replicated_class) use exactly these three functions.
//!
//! | Rust type                                   | [`PropType`]                              |
//! | ------------------------------------------- | ----------------------------------------- |
//! | `bool`, `u8` … `i64`, `f32`, `f64`          | the scalar of the same name               |
//! | [`ObjectRef`]                               | [`PropType::Object`]                      |
//! | [`Name`]                                    | [`PropType::Name`]                        |
//! | [`Vec3`]                                    | [`PropType::Vector`]`(VectorQuant::None)` |
//! | [`NetQuantize`], [`NetQuantize10`], [`NetQuantize100`], [`NetQuantizeNormal`] | [`PropType::Vector`] with `Q1`, `Q10`, `Q100`, `Normal` |
//! | [`Rotator`]                                 | [`PropType::Rotator`]                     |
//! | `Vec<T>`                                    | [`PropType::array`]`(T::prop_type())`     |
//! | a [`replicated_enum!`](crate::replicated_enum)     | [`PropType::Enum`] with the smallest width that holds its largest discriminant |
//! | a [`replicated_struct!`](crate::replicated_struct) | [`PropType::Struct`]: every field becomes a leaf of its own |
//! | a [`replicated_opaque!`](crate::replicated_opaque) | [`PropType::Opaque`]: one leaf of raw bytes |
//!
//! `Vec<Vec<T>>` compiles but is not a valid property: building the layout returns
//! [`LayoutError::NestedArray`](shadowrep::schema::LayoutError::NestedArray).
//!
//! The vector newtypes only select the wire quantisation; the store keeps all three components as
//! full `f32`, so a value reads back exactly as it was written.

use shadowrep::schema::{PropType, VectorQuant};
use shadowrep::value::{ObjectRef, Value};

/// A Rust type that maps to one kernel property type.
///
/// Implemented for the scalars, [`ObjectRef`], the newtypes of this module, `Vec<T>`, and every
/// type declared with [`replicated_enum!`](crate::replicated_enum),
/// [`replicated_struct!`](crate::replicated_struct) or [`replicated_opaque!`](crate::replicated_opaque).
///
/// `from_value(&to_value(x))` returns `Some(x)` for every `x`, and `from_value` of
/// `Value::default_for(&prop_type())` (what a fresh actor holds) returns `Some` for every type
/// except an enum without a variant whose discriminant is 0.
pub trait RepType: Sized {
    /// The property type this Rust type is declared as.
    fn prop_type() -> PropType;
    /// This value in the kernel's dynamic form.
    fn to_value(&self) -> Value;
    /// Reads a value back; `None` if `v` does not have this type's shape.
    fn from_value(v: &Value) -> Option<Self>;
}

macro_rules! scalar_rep_types {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl RepType for $t {
            fn prop_type() -> PropType {
                PropType::$variant
            }
            fn to_value(&self) -> Value {
                Value::$variant(*self)
            }
            fn from_value(v: &Value) -> Option<Self> {
                match v {
                    Value::$variant(x) => Some(*x),
                    _ => None,
                }
            }
        }
    )*};
}

scalar_rep_types! {
    bool => Bool,
    u8 => U8,
    i8 => I8,
    u16 => U16,
    i16 => I16,
    u32 => U32,
    i32 => I32,
    u64 => U64,
    i64 => I64,
    f32 => F32,
    f64 => F64,
}

impl RepType for ObjectRef {
    fn prop_type() -> PropType {
        PropType::Object
    }
    fn to_value(&self) -> Value {
        Value::Object(*self)
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Object(x) => Some(*x),
            _ => None,
        }
    }
}

/// A `u32` written packed on the wire ([`PropType::PackedU32`]: 7 bits a byte), for values that
/// stay small — counts, ids, scores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackedU32(pub u32);

impl RepType for PackedU32 {
    fn prop_type() -> PropType {
        PropType::PackedU32
    }
    fn to_value(&self) -> Value {
        Value::U32(self.0)
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::U32(x) => Some(PackedU32(*x)),
            _ => None,
        }
    }
}

/// An index into the name table (UE's `FName`), replicated as [`PropType::Name`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(pub u32);

impl RepType for Name {
    fn prop_type() -> PropType {
        PropType::Name
    }
    fn to_value(&self) -> Value {
        Value::Name(self.0)
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Name(x) => Some(Name(*x)),
            _ => None,
        }
    }
}

macro_rules! vector_types {
    ($($(#[$doc:meta])* $name:ident => $quant:expr, $value:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name(pub [f32; 3]);

        impl $name {
            /// A value from its three components.
            pub const fn new(x: f32, y: f32, z: f32) -> Self {
                Self([x, y, z])
            }
        }

        impl From<[f32; 3]> for $name {
            fn from(c: [f32; 3]) -> Self {
                Self(c)
            }
        }

        impl From<$name> for [f32; 3] {
            fn from(v: $name) -> Self {
                v.0
            }
        }

        impl RepType for $name {
            fn prop_type() -> PropType {
                $quant
            }
            fn to_value(&self) -> Value {
                Value::$value(self.0)
            }
            fn from_value(v: &Value) -> Option<Self> {
                match v {
                    Value::$value(c) => Some(Self(*c)),
                    _ => None,
                }
            }
        }
    )*};
}

vector_types! {
    /// A full-precision vector (UE's `FVector`): three raw `f32` on the wire.
    Vec3 => PropType::Vector(VectorQuant::None), Vector;
    /// A vector rounded to whole units on the wire (UE's `FVector_NetQuantize`).
    NetQuantize => PropType::Vector(VectorQuant::Q1), Vector;
    /// A vector with one decimal on the wire (UE's `FVector_NetQuantize10`).
    NetQuantize10 => PropType::Vector(VectorQuant::Q10), Vector;
    /// A vector with two decimals on the wire (UE's `FVector_NetQuantize100`).
    NetQuantize100 => PropType::Vector(VectorQuant::Q100), Vector;
    /// A unit vector, 16 bits per component on the wire (UE's `FVector_NetQuantizeNormal`).
    NetQuantizeNormal => PropType::Vector(VectorQuant::Normal), Vector;
    /// Pitch, yaw and roll in degrees (UE's `FRotator`), 16 bits per axis on the wire.
    Rotator => PropType::Rotator, Rotator;
}

impl<T: RepType> RepType for Vec<T> {
    fn prop_type() -> PropType {
        PropType::array(T::prop_type())
    }
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(RepType::to_value).collect())
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Array(items) => items.iter().map(T::from_value).collect(),
            _ => None,
        }
    }
}

/// Declares a fieldless Rust enum replicated as [`PropType::Enum`].
///
/// The enum gets `#[repr(u8)]`, derives `Clone, Copy, Debug, PartialEq, Eq, Hash` (add others,
/// such as `Default` with a `#[default]` variant, yourself), and these associated items:
/// `VARIANTS` (every variant in declaration order), `MAX` (the largest discriminant), `BITS` (the
/// wire width: the bit length of `MAX`, at least 1 and at most 8) and `from_u8`.
///
/// Give the variant a fresh actor should read back discriminant 0 (the first variant has it unless
/// you number them): the store zero-initialises every property.
///
/// ```
/// use shadowrep_layouts::{replicated_enum, RepType};
/// use shadowrep::schema::PropType;
///
/// replicated_enum! {
///     /// A door's state.
///     pub enum DoorState {
///         /// Shut.
///         Closed,
///         /// Moving.
///         Opening,
///         /// Fully open; explicit discriminants are allowed.
///         Open = 5,
///     }
/// }
///
/// assert_eq!(DoorState::BITS, 3);
/// assert_eq!(DoorState::prop_type(), PropType::Enum { bits: 3 });
/// assert_eq!(DoorState::from_u8(5), Some(DoorState::Open));
/// assert_eq!(DoorState::from_value(&DoorState::Opening.to_value()), Some(DoorState::Opening));
/// ```
#[macro_export]
macro_rules! replicated_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident {
            $( $(#[$vmeta:meta])* $variant:ident $(= $disc:expr)? ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        $vis enum $Enum {
            $( $(#[$vmeta])* $variant $(= $disc)? ),+
        }

        #[allow(dead_code)]
        impl $Enum {
            /// Every variant, in declaration order.
            pub const VARIANTS: &'static [Self] = &[$(Self::$variant),+];
            /// The largest discriminant.
            pub const MAX: u8 = $crate::__private::max_u8(&[$(Self::$variant as u8),+]);
            /// Wire width in bits: the bit length of [`Self::MAX`], at least 1.
            pub const BITS: u8 = $crate::enum_bits(Self::MAX);

            /// The variant with discriminant `d`, if any.
            pub fn from_u8(d: u8) -> Option<Self> {
                Self::VARIANTS.iter().copied().find(|v| *v as u8 == d)
            }
        }

        impl $crate::RepType for $Enum {
            fn prop_type() -> $crate::__private::PropType {
                $crate::__private::PropType::Enum { bits: Self::BITS }
            }
            fn to_value(&self) -> $crate::__private::Value {
                $crate::__private::Value::Enum(*self as u8)
            }
            fn from_value(v: &$crate::__private::Value) -> Option<Self> {
                match v {
                    $crate::__private::Value::Enum(d) => Self::from_u8(*d),
                    _ => None,
                }
            }
        }
    };
}

/// The wire width of an enum whose largest discriminant is `max`: `ceil(log2(max + 1))`, at least
/// 1 (the kernel accepts 1..=8 bits), and at most 8 because `max` is a `u8`.
pub const fn enum_bits(max: u8) -> u8 {
    if max == 0 {
        1
    } else {
        (u8::BITS - max.leading_zeros()) as u8
    }
}

/// Declares a Rust struct replicated as [`PropType::Struct`]: each field flattens into leaves of
/// its own, with the dotted path `Parent.FieldName`.
///
/// Every field names its wire name after `=`. The struct derives `Clone, Debug, PartialEq`; add
/// others yourself. A field may be any [`RepType`], including another struct.
///
/// A `Vec` field becomes an array leaf inside the struct parent (arrays inside an array's
/// elements are rejected by the layout build).
///
/// ```
/// use shadowrep_layouts::{replicated_struct, RepType};
/// use shadowrep::value::ObjectRef;
///
/// replicated_struct! {
///     /// What hit us.
///     pub struct TakeHit {
///         /// Damage dealt.
///         pub damage: f32 = "ActualDamage",
///         /// The damage type.
///         pub damage_type: ObjectRef = "DamageTypeClass",
///     }
/// }
///
/// let hit = TakeHit { damage: 12.5, damage_type: ObjectRef(3) };
/// assert_eq!(TakeHit::from_value(&hit.to_value()), Some(hit));
/// ```
#[macro_export]
macro_rules! replicated_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $Struct:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty = $name:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $Struct {
            $( $(#[$fmeta])* $fvis $field: $ty ),+
        }

        impl $crate::RepType for $Struct {
            fn prop_type() -> $crate::__private::PropType {
                $crate::__private::PropType::Struct(
                    $crate::__private::StructType::new(stringify!($Struct))
                        $( .field($name, <$ty as $crate::RepType>::prop_type()) )+
                )
            }
            fn to_value(&self) -> $crate::__private::Value {
                $crate::__private::Value::Struct(vec![$( $crate::RepType::to_value(&self.$field) ),+])
            }
            fn from_value(v: &$crate::__private::Value) -> Option<Self> {
                let $crate::__private::Value::Struct(fields) = v else { return None };
                let mut fields = fields.iter();
                let s = Self { $( $field: <$ty as $crate::RepType>::from_value(fields.next()?)? ),+ };
                fields.next().is_none().then_some(s)
            }
        }
    };
}

/// Declares a byte-array newtype replicated as one opaque leaf ([`PropType::Opaque`], UE's
/// `NetSerialize` structs). The size must be in 1..=256 or building a layout that uses it fails.
///
/// ```
/// use shadowrep_layouts::{replicated_opaque, RepType};
/// use shadowrep::schema::PropType;
///
/// replicated_opaque! {
///     /// A platform user id.
///     pub struct UniqueNetId([u8; 16]);
/// }
///
/// assert_eq!(UniqueNetId::prop_type(), PropType::Opaque { name: "UniqueNetId".into(), size: 16 });
/// let id = UniqueNetId([7; 16]);
/// assert_eq!(UniqueNetId::from_value(&id.to_value()), Some(id));
/// ```
#[macro_export]
macro_rules! replicated_opaque {
    (
        $(#[$meta:meta])*
        $vis:vis struct $Opaque:ident([u8; $size:literal]);
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis struct $Opaque(pub [u8; $size]);

        impl $crate::RepType for $Opaque {
            fn prop_type() -> $crate::__private::PropType {
                $crate::__private::PropType::Opaque { name: stringify!($Opaque).into(), size: $size }
            }
            fn to_value(&self) -> $crate::__private::Value {
                $crate::__private::Value::Opaque(self.0.to_vec())
            }
            fn from_value(v: &$crate::__private::Value) -> Option<Self> {
                match v {
                    $crate::__private::Value::Opaque(b) => b.as_slice().try_into().ok().map(Self),
                    _ => None,
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: RepType + PartialEq + std::fmt::Debug + Clone>(x: T) {
        let v = x.to_value();
        assert_eq!(T::from_value(&v), Some(x.clone()), "{v:?}");
        // A fresh actor's value of the type reads back too.
        assert!(T::from_value(&Value::default_for(&T::prop_type())).is_some());
    }

    #[test]
    fn scalars_and_newtypes_round_trip() {
        round_trip(true);
        round_trip(200u8);
        round_trip(-5i8);
        round_trip(60_000u16);
        round_trip(-300i16);
        round_trip(4_000_000_000u32);
        round_trip(-7i32);
        round_trip(u64::MAX);
        round_trip(i64::MIN);
        round_trip(1.5f32);
        round_trip(-2.25f64);
        round_trip(ObjectRef(42));
        round_trip(Name(9));
        round_trip(Vec3::new(1.0, 2.0, 3.0));
        round_trip(NetQuantize100::new(0.01, -0.02, 3.0));
        round_trip(Rotator::new(90.0, 0.0, -45.0));
        round_trip(vec![ObjectRef(1), ObjectRef(2)]);
        round_trip(Vec::<u64>::new());
        assert_eq!(u8::from_value(&Value::I8(1)), None);
        assert_eq!(Rotator::from_value(&Value::Vector([0.0; 3])), None);
        assert_eq!(Vec::<u8>::from_value(&Value::Array(vec![Value::U8(1), Value::U16(2)])), None);
    }

    #[test]
    fn vector_newtypes_select_their_quantisation() {
        let quants = [
            Vec3::prop_type(),
            NetQuantize::prop_type(),
            NetQuantize10::prop_type(),
            NetQuantize100::prop_type(),
            NetQuantizeNormal::prop_type(),
        ];
        let expected = [VectorQuant::None, VectorQuant::Q1, VectorQuant::Q10, VectorQuant::Q100, VectorQuant::Normal];
        for (t, q) in quants.into_iter().zip(expected) {
            assert_eq!(t, PropType::Vector(q));
        }
        assert_eq!(Vec::<Vec<u8>>::prop_type(), PropType::array(PropType::array(PropType::U8)));
    }

    #[test]
    fn enum_widths_are_the_bit_length_of_the_largest_discriminant() {
        let expected = [(0u8, 1u8), (1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (127, 7), (128, 8), (255, 8)];
        for (max, bits) in expected {
            assert_eq!(enum_bits(max), bits, "max {max}");
        }

        replicated_enum! {
            enum One { Only }
        }
        replicated_enum! {
            enum Sparse { A = 3, B = 1, C = 200 }
        }
        assert_eq!((One::MAX, One::BITS), (0, 1));
        assert_eq!(One::prop_type(), PropType::Enum { bits: 1 });
        assert_eq!((Sparse::MAX, Sparse::BITS), (200, 8));
        assert_eq!(Sparse::VARIANTS, &[Sparse::A, Sparse::B, Sparse::C]);
        assert_eq!(Sparse::from_value(&Value::Enum(1)), Some(Sparse::B));
        assert_eq!(Sparse::from_value(&Value::Enum(0)), None);
        assert_eq!(Sparse::from_value(&Value::U8(1)), None);
        assert_eq!(Sparse::from_value(&Sparse::C.to_value()), Some(Sparse::C));
        round_trip(One::Only);
    }

    #[test]
    fn structs_flatten_field_types_in_order() {
        replicated_struct! {
            struct Inner { a: u8 = "A" }
        }
        replicated_struct! {
            struct Outer { inner: Inner = "Inner", v: NetQuantize10 = "V", ids: Vec<u64> = "Ids" }
        }
        let t = Outer::prop_type();
        let PropType::Struct(s) = &t else { panic!("{t:?}") };
        assert_eq!(s.name, "Outer");
        let names: Vec<_> = s.fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Inner", "V", "Ids"]);
        assert_eq!(s.fields[0].1, Inner::prop_type());
        round_trip(Outer { inner: Inner { a: 4 }, v: NetQuantize10::new(1.0, 2.0, 3.0), ids: vec![5, 6] });
        // Wrong arity is rejected rather than padded or truncated.
        assert_eq!(Inner::from_value(&Value::Struct(vec![Value::U8(1), Value::U8(2)])), None);
        assert_eq!(Inner::from_value(&Value::Struct(vec![])), None);
    }

    #[test]
    fn opaque_needs_exactly_its_size() {
        replicated_opaque! {
            struct Blob([u8; 4]);
        }
        round_trip(Blob([1, 2, 3, 4]));
        assert_eq!(Blob::from_value(&Value::Opaque(vec![1, 2, 3])), None);
    }
}
