//! Declaring a replicated class: the [`replicated_class!`](crate::replicated_class) macro and the
//! [`ReplicatedClass`] trait every declared class implements.
//!
//! ```text
//! replicated_class! {
//!     /// Docs of the class.
//!     pub class ShooterCharacter extends Actor {
//!         /// Docs of the getter.
//!         inventory: Vec<ObjectRef> = "Inventory",
//!         current_weapon: ObjectRef = "CurrentWeapon" [notify = OnChangedWithOld],
//!         is_targeting: bool = "bIsTargeting" [cond = SkipOwner],
//!         health: f32 = "Health" [push],
//!     }
//! }
//! ```
//!
//! A class may declare remote procedure calls after its properties, each
//! `rust_name = "WireName" (param: RustType, …) [target, options]` — the target `client` (the
//! owning connection), `multicast` (every connection with the actor's channel open) or `server`
//! (the owning client calls it), then `reliable` if it is — ended by semicolons:
//!
//! ```text
//! replicated_class! {
//!     pub class Turret extends Actor {
//!         yaw: f32 = "Yaw",
//!     }
//!     rpcs {
//!         fire_effect = "MulticastFireEffect" (muzzle: u8) [multicast];
//!         hit_confirmed = "ClientHitConfirmed" (damage: u16, headshot: bool) [client, reliable];
//!     }
//! }
//! ```
//!
//! Each generates `call_<rust_name>(&mut driver, class, &store, id, typed args…)` — for a
//! `server` call `call_<rust_name>(&mut client, guid, typed args…)` — and
//! `<rust_name>_args(&call) -> Option<(typed args…)>` for the delivered call
//! ([`shadowrep::client::RpcEvent`], [`shadowrep::net::ServerRpcEvent`]).
//!
//! Each property is `rust_name: RustType = "WireName" [options]`; the options are any of
//! `cond = <Condition variant>`, `notify = <Notify variant>`, `push` and `default = <value>` (the
//! class default, one token: a literal, or an expression in parentheses), comma separated, and
//! the whole bracket is optional. `RustType` is any [`RepType`](crate::RepType). `extends Base` is
//! optional; `Base` must itself be declared with this macro.
//!
//! The macro generates a unit struct with:
//!
//! | item | meaning |
//! | ---- | ------- |
//! | `CLASS_NAME`, `BASE_PARENT_COUNT`, `PARENT_COUNT`, `PROPERTY_NAMES` | consts: the class name (the struct's name), the base class's parent count, this class's (base + own), and the wire names this class declares itself |
//! | `HEALTH: usize` | per property, its parent index: `BASE_PARENT_COUNT` + position (the field name upper-cased) |
//! | `try_layout()` | the layout, built once; `Err` if the declaration is invalid |
//! | `layout()` | the same, panicking on an invalid declaration |
//! | `new_store()` | an empty [`ClassStore`] of this class |
//! | `health(&store, id)` | typed getter |
//! | `set_health(&mut store, id, v)` | plain setter: never marks (polled properties need no mark) |
//! | `mark_health_dirty(&mut store, id)` | UE's `MARK_PROPERTY_DIRTY` |
//! | `set_health_and_mark_dirty(&mut store, id, v)` | writes and marks only if the value changed; returns whether it did |
//! | `health_notify(&client_world, &notify)` | a client's notify of the property, typed: `Some((old, new))` (`old` with `OnChangedWithOld`), `None` for another property's |
//!
//! so the names above (and `layout`, `try_layout`, `new_store`) are not available as property
//! names.
//!
//! **Subclasses.** A subclass keeps its base's parents at the same indices, so the base's
//! accessors work on a subclass's store: `Actor::location(&shooter_store, id)`. Every accessor
//! checks that the store's parent at its index has its wire name, so an accessor of an unrelated
//! class returns an error instead of touching another property.

use shadowrep::schema::{ClassLayout, LayoutError};
use shadowrep::store::ClassStore;
use std::sync::Arc;

use crate::accessors::expect_layout;

/// What every class declared with [`replicated_class!`](crate::replicated_class) provides, for
/// code generic over classes. The generated inherent functions of the same names do the same.
pub trait ReplicatedClass {
    /// The class name.
    const CLASS_NAME: &'static str;
    /// The base class's name, if any.
    const BASE_NAME: Option<&'static str>;
    /// Parents of the class, its base's included.
    const PARENT_COUNT: usize;

    /// The class layout, built on first use; `Err` if the declaration is invalid.
    fn try_layout() -> Result<&'static Arc<ClassLayout>, LayoutError>;

    /// The class layout.
    ///
    /// # Panics
    /// If the declaration is invalid (see [`Self::try_layout`]).
    fn layout() -> &'static Arc<ClassLayout> {
        expect_layout(Self::CLASS_NAME, Self::try_layout())
    }

    /// An empty store of this class.
    ///
    /// # Panics
    /// If the declaration is invalid (see [`Self::try_layout`]).
    fn new_store() -> ClassStore {
        ClassStore::new(Self::layout().clone())
    }
}

/// Declares a replicated class: a layout built once, plus typed accessors.
///
/// See [the module documentation](crate::class) for the syntax and the generated items.
///
/// ```
/// use shadowrep_layouts::prelude::*;
/// use shadowrep_layouts::classes::Actor;
///
/// replicated_class! {
///     /// A door.
///     pub class Door extends Actor {
///         /// How far open, 0 to 1.
///         openness: f32 = "Openness" [push, notify = OnChanged],
///         locked: bool = "bLocked" [cond = OwnerOnly, default = true],
///         /// Hinges, each a stiffness; a new door has three.
///         hinges: Vec<u8> = "Hinges" [default = (vec![5, 5, 5])],
///     }
/// }
///
/// assert_eq!(Door::OPENNESS, Actor::PARENT_COUNT);
/// assert_eq!(Door::layout().parents[Door::LOCKED].name, "bLocked");
///
/// let mut store = Door::new_store();
/// let id = store.spawn();
/// assert!(Door::set_openness_and_mark_dirty(&mut store, id, 0.5).unwrap());
/// assert!(!Door::set_openness_and_mark_dirty(&mut store, id, 0.5).unwrap());
/// assert_eq!(Door::openness(&store, id).unwrap(), 0.5);
/// assert!(Door::locked(&store, id).unwrap(), "a new door holds its class default");
/// assert_eq!(Door::hinges(&store, id).unwrap(), vec![5, 5, 5]);
/// // Base-class accessors work on the subclass's store.
/// Actor::set_hidden(&mut store, id, true).unwrap();
/// assert!(Actor::hidden(&store, id).unwrap());
/// ```
///
/// With remote procedure calls, typed on both sides:
///
/// ```
/// use shadowrep::client::ClientWorld;
/// use shadowrep::net::{DriverConfig, NetDriver};
/// use shadowrep_layouts::prelude::*;
///
/// replicated_class! {
///     pub class Turret {
///         yaw: f32 = "Yaw",
///     }
///     rpcs {
///         /// A muzzle flash for everyone who sees the turret.
///         fire_effect = "MulticastFireEffect" (muzzle: u8) [multicast];
///         hit_confirmed = "ClientHitConfirmed" (damage: u16, headshot: bool) [client, reliable];
///         /// The owning player aims (a Server call: the client calls it).
///         aim = "ServerAim" (yaw: f32) [server, reliable];
///     }
/// }
///
/// let mut store = Turret::new_store();
/// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
/// let class = driver.register_class(&mut store).unwrap();
/// let conn = driver.add_connection(false);
/// let mut client = ClientWorld::new(&[Turret::layout().clone()], &driver.checksums()).unwrap();
/// let turret = store.spawn();
/// driver.set_owner(class, &store, turret, Some(conn), false).unwrap();
/// for frame in 0..3 {
///     if frame == 1 {
///         Turret::call_hit_confirmed(&mut driver, class, &store, turret, 35, true).unwrap();
///         Turret::call_fire_effect(&mut driver, class, &store, turret, 2).unwrap();
///     }
///     driver.tick(&mut [&mut store]).unwrap();
///     for packet in driver.take_packets(conn).unwrap() {
///         client.receive(&packet).unwrap();
///     }
///     driver.receive_feedback(conn, &client.feedback()).unwrap();
/// }
/// let calls = client.take_rpcs();
/// assert_eq!(Turret::hit_confirmed_args(&calls[0]), Some((35, true)));
/// assert_eq!(Turret::fire_effect_args(&calls[1]), Some((2,)));
/// assert_eq!(Turret::fire_effect_args(&calls[0]), None, "another call");
/// // The owner's client calls the Server call; the server takes it.
/// let guid = driver.guid_of(class, turret).unwrap();
/// Turret::call_aim(&mut client, guid, 90.0).unwrap();
/// driver.receive_feedback(conn, &client.feedback()).unwrap();
/// let taken = driver.take_server_rpcs();
/// assert_eq!((taken[0].id, Turret::aim_args(&taken[0])), (turret, Some((90.0,))));
/// ```
#[macro_export]
macro_rules! replicated_class {
    // ---- internal rules -------------------------------------------------------------------
    (@opt [$ty:ty] cond = $c:ident) => { $crate::__private::PropOpt::Condition($crate::__private::Condition::$c) };
    (@opt [$ty:ty] notify = $n:ident) => { $crate::__private::PropOpt::Notify($crate::__private::Notify::$n) };
    (@opt [$ty:ty] push) => { $crate::__private::PropOpt::Push };
    (@opt [$ty:ty] default = $v:tt) => {
        $crate::__private::PropOpt::Default(<$ty as $crate::RepType>::to_value(&$v))
    };
    (@opt [$ty:ty] $($other:tt)*) => {
        compile_error!(concat!(
            "unknown property option `", stringify!($($other)*),
            "`: expected `cond = <Condition>`, `notify = <Notify>` or `push`"
        ))
    };
    (@builder $name:expr;) => {
        ::core::result::Result::<_, $crate::__private::LayoutError>::Ok($crate::__private::ClassBuilder::new($name))
    };
    (@builder $name:expr; $Base:path) => {
        <$Base>::try_layout().map(|base| $crate::__private::ClassBuilder::extends($name, base))
    };
    (@base_count) => { 0 };
    (@base_count $Base:path) => { <$Base>::PARENT_COUNT };
    (@rpc_target client) => { $crate::__private::RpcDecl::client };
    (@rpc_target multicast) => { $crate::__private::RpcDecl::multicast };
    (@rpc_target server) => { $crate::__private::RpcDecl::server };
    (@rpc_target $($other:tt)*) => {
        compile_error!(concat!(
            "unknown call target `", stringify!($($other)*), "`: expected `client`, `multicast` or `server` first"
        ))
    };
    // A call's typed caller: the server's for Client and Multicast calls, the client's for Server
    // calls.
    (@rpc_call server [$($meta:tt)*] $call:ident $rname:literal ($($pname:ident : $pty:ty),*) [$($how:tt)*]) => {
        $($meta)*
        #[doc = ""]
        #[doc = concat!(
            "Calls `", $rname, "` (", stringify!($($how)*), ") on actor `guid` from `client`: ",
            "[`ClientWorld::call_server_rpc`](shadowrep::client::ClientWorld::call_server_rpc) with typed arguments."
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $call(
            client: &mut $crate::__private::ClientWorld,
            guid: $crate::__private::NetGuid,
            $($pname: $pty),*
        ) -> ::core::result::Result<(), $crate::__private::ClientError> {
            client.call_server_rpc(guid, $rname, &[$(<$pty as $crate::RepType>::to_value(&$pname)),*])
        }
    };
    (@rpc_call $target:ident [$($meta:tt)*] $call:ident $rname:literal ($($pname:ident : $pty:ty),*) [$($how:tt)*]) => {
        $($meta)*
        #[doc = ""]
        #[doc = concat!(
            "Calls `", $rname, "` (", stringify!($($how)*), ") on actor `id` of `class` ",
            "(this class's id in `driver`): [`NetDriver::call_rpc`](shadowrep::net::NetDriver::call_rpc) ",
            "with typed arguments."
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $call(
            driver: &mut $crate::__private::NetDriver,
            class: $crate::__private::ClassId,
            store: &$crate::__private::ClassStore,
            id: $crate::__private::ActorId,
            $($pname: $pty),*
        ) -> ::core::result::Result<(), $crate::__private::DriverError> {
            driver.call_rpc(class, store, id, $rname, &[$(<$pty as $crate::RepType>::to_value(&$pname)),*])
        }
    };
    (@rpc_opt $d:expr; reliable) => { $d.reliable() };
    (@rpc_opt $d:expr; $($other:tt)*) => {
        compile_error!(concat!("unknown call option `", stringify!($($other)*), "`: expected `reliable`"))
    };
    (@base_name) => { ::core::option::Option::None };
    (@base_name $Base:path) => { ::core::option::Option::Some(<$Base>::CLASS_NAME) };

    // ---- the declaration ----------------------------------------------------------------
    (
        $(#[$cmeta:meta])*
        $vis:vis class $Class:ident $(extends $Base:path)? {
            $(
                $(#[$pmeta:meta])*
                $field:ident : $ty:ty = $name:literal $([ $($opt:ident $(= $val:tt)?),* $(,)? ])?
            ),* $(,)?
        }
        $(rpcs {
            $(
                $(#[$rmeta:meta])*
                $rfn:ident = $rname:literal ( $($pname:ident : $pty:ty),* $(,)? ) [ $target:ident $(, $ropt:ident)* $(,)? ]
            );* $(;)?
        })?
    ) => { $crate::__private::paste! {
        $(#[$cmeta])*
        ///
        /// # Replicated properties
        ///
        /// | wire name | Rust type | options | parent index |
        /// | --------- | --------- | ------- | ------------ |
        $(
            #[doc = concat!(
                "| `", $name, "` | `", stringify!($ty), "` | ", stringify!($($($opt $(= $val)?),*)?),
                " | [`", stringify!([<$field:upper>]), "`](Self::", stringify!([<$field:upper>]), ") |"
            )]
        )*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #[allow(dead_code)]
        $vis struct $Class;

        #[allow(dead_code)]
        impl $Class {
            /// The class name.
            pub const CLASS_NAME: &'static str = stringify!($Class);
            /// Parents of the base class (0 without one); this class's own parents start here.
            pub const BASE_PARENT_COUNT: usize = $crate::replicated_class!(@base_count $($Base)?);
            /// Wire names of the properties this class declares itself, in order.
            pub const PROPERTY_NAMES: &'static [&'static str] = &[$($name),*];
            /// Parents of this class, its base's included.
            pub const PARENT_COUNT: usize = Self::BASE_PARENT_COUNT + Self::PROPERTY_NAMES.len();

            $(
                #[doc = concat!("Parent index of `", $name, "`.")]
                pub const [<$field:upper>]: usize =
                    Self::BASE_PARENT_COUNT + $crate::__private::position(Self::PROPERTY_NAMES, $name);
            )*

            /// The class layout, built on first use and kept for the life of the process.
            ///
            /// # Errors
            /// The [`LayoutError`](shadowrep::schema::LayoutError) of an invalid declaration (a
            /// duplicate wire name, a nested array, …) or of the base class's.
            pub fn try_layout() -> ::core::result::Result<
                &'static ::std::sync::Arc<$crate::__private::ClassLayout>,
                $crate::__private::LayoutError,
            > {
                static LAYOUT: ::std::sync::OnceLock<::core::result::Result<
                    ::std::sync::Arc<$crate::__private::ClassLayout>,
                    $crate::__private::LayoutError,
                >> = ::std::sync::OnceLock::new();
                LAYOUT
                    .get_or_init(|| {
                        let builder = $crate::replicated_class!(@builder Self::CLASS_NAME; $($Base)?)?
                            $(.property($crate::__private::decl(
                                $name,
                                <$ty as $crate::RepType>::prop_type(),
                                &[$($($crate::replicated_class!(@opt [$ty] $opt $(= $val)?)),*)?],
                            )))*
                            $($(.rpc({
                                let d = $crate::replicated_class!(@rpc_target $target)($rname)
                                    $(.param($crate::__private::PropertyDecl::new(
                                        stringify!($pname),
                                        <$pty as $crate::RepType>::prop_type(),
                                    )))*;
                                $(let d = $crate::replicated_class!(@rpc_opt d; $ropt);)*
                                d
                            }))*)?;
                        $crate::__private::finish(builder, Self::BASE_PARENT_COUNT, Self::PROPERTY_NAMES)
                    })
                    .as_ref()
                    .map_err(::core::clone::Clone::clone)
            }

            /// The class layout.
            ///
            /// # Panics
            /// If the declaration is invalid; [`Self::try_layout`] returns that as an error.
            pub fn layout() -> &'static ::std::sync::Arc<$crate::__private::ClassLayout> {
                $crate::__private::expect_layout(Self::CLASS_NAME, Self::try_layout())
            }

            /// An empty store of this class.
            ///
            /// # Panics
            /// If the declaration is invalid (see [`Self::try_layout`]).
            pub fn new_store() -> $crate::__private::ClassStore {
                $crate::__private::ClassStore::new(::std::sync::Arc::clone(Self::layout()))
            }

            $(
                $(#[$pmeta])*
                #[doc = ""]
                #[doc = concat!(
                    "Reads `", $name, "` of actor `id` from a store of this class or of a subclass."
                )]
                pub fn $field(
                    store: &$crate::__private::ClassStore,
                    id: $crate::__private::ActorId,
                ) -> ::core::result::Result<$ty, $crate::__private::StoreError> {
                    $crate::__private::get(store, id, Self::CLASS_NAME, $name, Self::[<$field:upper>])
                }

                #[doc = concat!(
                    "Writes `", $name, "` of actor `id` without marking it dirty (a push-based ",
                    "property written this way is not seen by the compare; array writes are always seen)."
                )]
                pub fn [<set_ $field>](
                    store: &mut $crate::__private::ClassStore,
                    id: $crate::__private::ActorId,
                    value: $ty,
                ) -> ::core::result::Result<(), $crate::__private::StoreError> {
                    $crate::__private::set(store, id, Self::CLASS_NAME, $name, Self::[<$field:upper>], &value)
                }

                #[doc = concat!("Marks `", $name, "` of actor `id` dirty for every watching driver.")]
                pub fn [<mark_ $field _dirty>](
                    store: &mut $crate::__private::ClassStore,
                    id: $crate::__private::ActorId,
                ) -> ::core::result::Result<(), $crate::__private::StoreError> {
                    $crate::__private::mark_dirty(store, id, Self::CLASS_NAME, $name, Self::[<$field:upper>])
                }

                #[doc = concat!(
                    "Writes `", $name, "` of actor `id` and marks it dirty only if the value changed ",
                    "(bitwise; UE's `Set<Prop>AndMarkDirty`). Returns whether it changed."
                )]
                pub fn [<set_ $field _and_mark_dirty>](
                    store: &mut $crate::__private::ClassStore,
                    id: $crate::__private::ActorId,
                    value: $ty,
                ) -> ::core::result::Result<bool, $crate::__private::StoreError> {
                    $crate::__private::set_and_mark(store, id, Self::CLASS_NAME, $name, Self::[<$field:upper>], &value)
                }

                #[doc = concat!(
                    "A client's notify of `", $name, "` (`ClientWorld::take_notifies`), typed: `(old, new)` — ",
                    "`old` when the notify is declared with it (`OnChangedWithOld`). `None` for a notify of ",
                    "another property, or of a class that is neither this one nor a subclass."
                )]
                pub fn [<$field _notify>](
                    world: &$crate::__private::ClientWorld,
                    event: &$crate::__private::NotifyEvent,
                ) -> ::core::option::Option<(::core::option::Option<$ty>, $ty)> {
                    $crate::__private::notify(world, event, $name, Self::[<$field:upper>])
                }
            )*

            $($(
                $crate::replicated_class!(@rpc_call $target [$(#[$rmeta])*] [<call_ $rfn>] $rname ($($pname: $pty),*)
                    [$target $(, $ropt)*]);

                #[doc = concat!(
                    "The arguments of a delivered `", $rname, "` call (a client's ",
                    "[`RpcEvent`](shadowrep::client::RpcEvent), or the server's ",
                    "[`ServerRpcEvent`](shadowrep::net::ServerRpcEvent)), typed; `None` for another call ",
                    "(or arguments of other types: another class's call of the same name)."
                )]
                pub fn [<$rfn _args>](
                    call: &impl $crate::__private::DeliveredCall,
                ) -> ::core::option::Option<($($pty,)*)> {
                    if call.call_name() != $rname {
                        return ::core::option::Option::None;
                    }
                    #[allow(unused_mut, unused_variables)]
                    let mut args = call.call_args().iter();
                    ::core::option::Option::Some(($(<$pty as $crate::RepType>::from_value(args.next()?)?,)*))
                }
            )*)?
        }

        impl $crate::ReplicatedClass for $Class {
            const CLASS_NAME: &'static str = <$Class>::CLASS_NAME;
            const BASE_NAME: ::core::option::Option<&'static str> = $crate::replicated_class!(@base_name $($Base)?);
            const PARENT_COUNT: usize = <$Class>::PARENT_COUNT;

            fn try_layout() -> ::core::result::Result<
                &'static ::std::sync::Arc<$crate::__private::ClassLayout>,
                $crate::__private::LayoutError,
            > {
                <$Class>::try_layout()
            }
        }
    }};
}
