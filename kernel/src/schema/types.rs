//! What a game programmer declares: property types ([`PropType`], [`StructType`]), send
//! conditions, notify modes and vector quantisation, and one [`PropertyDecl`] per property —
//! the input of [`super::ClassBuilder`], before anything is flattened.

use super::MAX_ARRAY_ELEMENTS;

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
    /// The class default (UE's class default object): what a new actor holds before the game
    /// writes it, on the server and on every client; `None`: zero.
    pub default: Option<crate::value::Value>,
}

impl PropertyDecl {
    /// A plain, always-sent, polled property.
    pub fn new(name: impl Into<String>, ty: PropType) -> Self {
        Self {
            name: name.into(),
            ty,
            dim: 1,
            condition: Condition::None,
            notify: Notify::None,
            push: false,
            default: None,
        }
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
    /// Declares the class default (UE's class default object, the value a constructor sets): a
    /// new actor holds it from its spawn, on the server and on every client, so its open sends
    /// only what differs from it. A static array's elements each start with it; a dynamic
    /// array's default is the elements it starts with. Checked when the class is built
    /// ([`LayoutError::BadDefault`](super::LayoutError::BadDefault)): the value must fit the type
    /// (a dynamic array's within its cap), and an object reference — alone, in a struct or in an
    /// array — must be null (a class default cannot name an object).
    ///
    /// ```
    /// use shadowrep::prelude::*;
    ///
    /// let slots = Value::Array(vec![Value::U16(0), Value::U16(0), Value::U16(0)]);
    /// let layout = ClassBuilder::new("Pawn")
    ///     .property(PropertyDecl::new("Health", PropType::U16).default_value(Value::U16(100)))
    ///     .property(PropertyDecl::new("Slots", PropType::array(PropType::U16)).default_value(slots.clone()))
    ///     .build()
    ///     .unwrap();
    /// let mut store = ClassStore::new(std::sync::Arc::new(layout));
    /// let id = store.spawn();
    /// assert_eq!(store.get(id, 0).unwrap(), Value::U16(100));
    /// assert_eq!(store.get(id, 1).unwrap(), slots);
    /// ```
    pub fn default_value(mut self, value: crate::value::Value) -> Self {
        self.default = Some(value);
        self
    }
}
