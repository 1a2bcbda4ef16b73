//! # shadowrep-layouts
//!
//! Declaring replicated classes for [`shadowrep`], and the sample game classes the tests,
//! benchmarks and profiles use.
//!
//! - [`replicated_class!`] turns a struct-like declaration into a [`ClassLayout`] built once, and
//!   typed accessors over a [`ClassStore`] (see [`class`] for the syntax and what it generates);
//! - [`RepType`] maps Rust types to property types ([`types`]); [`replicated_enum!`],
//!   [`replicated_struct!`] and [`replicated_opaque!`] declare enums, structs and opaque blobs;
//! - [`classes`] holds the sample classes, and [`class_names`] / [`layout_by_name`] select them by
//!   name.
//!
//! ```
//! use shadowrep_layouts::prelude::*;
//! use shadowrep_layouts::classes::{Actor, ShooterCharacter, TakeHitInfo};
//!
//! let mut store = ShooterCharacter::new_store();
//! let id = store.spawn();
//! ShooterCharacter::set_health(&mut store, id, 100.0).unwrap();
//! ShooterCharacter::set_last_take_hit_info(
//!     &mut store,
//!     id,
//!     TakeHitInfo { actual_damage: 5.0, damage_type_class: ObjectRef(2) },
//! )
//! .unwrap();
//! // A subclass keeps its base's parent indices, so base accessors work on its store.
//! Actor::set_location(&mut store, id, NetQuantize100::new(1.0, 2.0, 3.0)).unwrap();
//! assert_eq!(ShooterCharacter::health(&store, id).unwrap(), 100.0);
//!
//! // Parent indices are consts; the subclass's own parents follow the base's.
//! assert_eq!(ShooterCharacter::INVENTORY, Actor::PARENT_COUNT);
//! assert_eq!(ShooterCharacter::HEALTH, 13);
//!
//! // Classes can be picked by name.
//! let layout = shadowrep_layouts::layout_by_name("ShooterCharacter").unwrap();
//! assert_eq!(layout.parents[ShooterCharacter::HEALTH].name, "Health");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod accessors;
pub mod class;
pub mod classes;
pub mod types;

pub use class::ReplicatedClass;
pub use types::{
    enum_bits, Name, NetQuantize, NetQuantize10, NetQuantize100, NetQuantizeNormal, PackedU32, RepType, Rotator, Vec3,
};

use shadowrep::schema::ClassLayout;
use shadowrep::store::ClassStore;
use std::fmt::Write as _;
use std::sync::Arc;

/// The names most users need: the macros, [`RepType`], [`ReplicatedClass`], the value newtypes
/// and the kernel types the generated accessors take.
pub mod prelude {
    pub use crate::types::{
        Name, NetQuantize, NetQuantize10, NetQuantize100, NetQuantizeNormal, PackedU32, RepType, Rotator, Vec3,
    };
    pub use crate::{replicated_class, replicated_enum, replicated_opaque, replicated_struct, ReplicatedClass};
    pub use shadowrep::schema::{ClassLayout, Condition, LayoutError, Notify, PropType};
    pub use shadowrep::store::{ActorId, ClassStore, StoreError};
    pub use shadowrep::value::{ObjectRef, Value};
}

/// Returns a class's layout.
type LayoutFn = fn() -> &'static Arc<ClassLayout>;

/// The sample classes by name, in a stable order.
const CLASSES: &[(&str, LayoutFn)] = &[
    ("Actor", classes::Actor::layout),
    ("ShooterCharacter", classes::ShooterCharacter::layout),
    ("LootContainer", classes::LootContainer::layout),
    ("ExampleActor", classes::ExampleActor::layout),
    ("Projectile", classes::Projectile::layout),
    ("ShooterWeapon", classes::ShooterWeapon::layout),
    ("Pickup", classes::Pickup::layout),
    ("Counter", classes::Counter::layout),
];

/// Names of the sample classes, in a stable order: `Actor`, `ShooterCharacter`, `LootContainer`,
/// `ExampleActor`, `Projectile`, `ShooterWeapon`, `Pickup`, `Counter`.
pub fn class_names() -> &'static [&'static str] {
    const NAMES: &[&str] = &{
        let mut names = [""; CLASSES.len()];
        let mut i = 0;
        while i < CLASSES.len() {
            names[i] = CLASSES[i].0;
            i += 1;
        }
        names
    };
    NAMES
}

/// The layout of the sample class with this exact (case-sensitive) name, or `None`.
///
/// Every sample class's declaration is valid (the tests build each one), so this never panics.
pub fn layout_by_name(name: &str) -> Option<&'static Arc<ClassLayout>> {
    CLASSES.iter().find(|(n, _)| *n == name).map(|(_, layout)| layout())
}

/// An empty store of the sample class with this exact name, or `None`.
pub fn new_store_by_name(name: &str) -> Option<ClassStore> {
    layout_by_name(name).map(|l| ClassStore::new(Arc::clone(l)))
}

/// A human-readable table of a layout: one line per parent with its index, name, type, options and
/// leaf handles — and, for a class of more than 64 leaves, its leaf groups
/// ([`shadowrep::schema::groups`]: a changed leaf sends its group).
///
/// ```
/// let text = shadowrep_layouts::describe(shadowrep_layouts::classes::Counter::layout());
/// assert!(text.contains("0  Count"));
/// ```
pub fn describe(layout: &ClassLayout) -> String {
    let mut out = String::new();
    let base = layout.base.as_deref().map(|b| format!(" extends {b}")).unwrap_or_default();
    let g = &layout.groups;
    let group_of = |leaf: usize| g.bit(leaf).iter().next();
    let groups = match (g.fits(), g.is_single()) {
        (false, _) => format!(", {} runs of leaves: more than the 64 a driver tells apart", g.len()),
        (true, true) => String::new(),
        (true, false) => format!(", {} leaf groups", g.len()),
    };
    let _ = writeln!(
        out,
        "class {}{base}: {} parents, {} handles{groups}, checksum {:016x}",
        layout.name,
        layout.parents.len(),
        layout.handle_count(),
        layout.checksum
    );
    for (i, p) in layout.parents.iter().enumerate() {
        let handles = match (layout.leaves.get(p.leaves.start), p.leaves.len()) {
            (Some(l), 1) => format!("handle {}", l.handle),
            (Some(l), n) => format!("handles {}..={}", l.handle, l.handle as usize + n - 1),
            (None, _) => "no handles".to_owned(),
        };
        let mut opts = Vec::new();
        if p.condition != shadowrep::schema::Condition::None {
            opts.push(format!("cond={:?}", p.condition));
        }
        if p.notify != shadowrep::schema::Notify::None {
            opts.push(format!("notify={:?}", p.notify));
        }
        if p.push {
            opts.push("push".to_owned());
        }
        let in_groups = match (g.is_single(), group_of(p.leaves.start), group_of(p.leaves.end.saturating_sub(1))) {
            (false, Some(a), Some(b)) if a == b => format!(", group {a}"),
            (false, Some(a), Some(b)) => format!(", groups {a}..={b}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{i:>3}  {:<20} {:<24} {:<38} {handles}{in_groups}",
            p.name,
            type_name(&p.ty),
            opts.join(" ")
        );
    }
    out
}

fn type_name(ty: &shadowrep::schema::PropType) -> String {
    use shadowrep::schema::PropType;
    match ty {
        PropType::Struct(s) => format!("struct {}", s.name),
        PropType::Opaque { name, size } => format!("opaque {name}[{size}]"),
        PropType::Array { element, .. } => format!("[{}]", type_name(element)),
        PropType::Enum { bits } => format!("enum:{bits}"),
        PropType::Vector(q) => format!("vector:{q:?}"),
        t => format!("{t:?}").to_lowercase(),
    }
}

/// What the macros expand to; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::accessors::{
        decl, expect_layout, finish, get, mark_dirty, notify, position, set, set_and_mark, PropOpt,
    };
    pub use pastey::paste;
    pub use shadowrep::client::{ClientError, ClientWorld, NotifyEvent, RpcEvent};
    pub use shadowrep::ids::NetGuid;

    /// A delivered call, on either side.
    pub trait DeliveredCall {
        /// Its name.
        fn call_name(&self) -> &str;
        /// Its arguments.
        fn call_args(&self) -> &[Value];
    }

    impl DeliveredCall for RpcEvent {
        fn call_name(&self) -> &str {
            &self.name
        }
        fn call_args(&self) -> &[Value] {
            &self.args
        }
    }

    impl DeliveredCall for shadowrep::net::ServerRpcEvent {
        fn call_name(&self) -> &str {
            &self.name
        }
        fn call_args(&self) -> &[Value] {
            &self.args
        }
    }
    pub use shadowrep::ids::ClassId;
    pub use shadowrep::net::{DriverError, NetDriver};
    pub use shadowrep::schema::{ClassBuilder, ClassLayout, Condition, LayoutError, Notify, PropType, StructType};
    pub use shadowrep::schema::{PropertyDecl, RpcDecl};
    pub use shadowrep::store::{ActorId, ClassStore, StoreError};
    pub use shadowrep::value::Value;

    /// The largest of `xs` (0 for none).
    pub const fn max_u8(xs: &[u8]) -> u8 {
        let mut m = 0;
        let mut i = 0;
        while i < xs.len() {
            if xs[i] > m {
                m = xs[i];
            }
            i += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_class_builds() {
        assert_eq!(
            class_names(),
            [
                "Actor",
                "ShooterCharacter",
                "LootContainer",
                "ExampleActor",
                "Projectile",
                "ShooterWeapon",
                "Pickup",
                "Counter"
            ]
        );
        for name in class_names() {
            let layout = layout_by_name(name).unwrap_or_else(|| panic!("{name} not registered"));
            assert_eq!(layout.name, *name);
            let mut store = new_store_by_name(name).unwrap();
            let id = store.spawn();
            for p in 0..layout.parents.len() {
                let v = store.get(id, p).unwrap();
                store.set(id, p, &v).unwrap();
            }
        }
        assert!(layout_by_name("actor").is_none());
        assert!(layout_by_name("").is_none());
        assert!(new_store_by_name("Nope").is_none());
    }

    #[test]
    fn registry_returns_the_class_layouts() {
        assert!(Arc::ptr_eq(layout_by_name("Pickup").unwrap(), classes::Pickup::layout()));
        assert!(Arc::ptr_eq(
            layout_by_name("ShooterCharacter").unwrap(),
            <classes::ShooterCharacter as ReplicatedClass>::layout()
        ));
        assert_eq!(<classes::ShooterCharacter as ReplicatedClass>::BASE_NAME, Some("Actor"));
        assert_eq!(<classes::Counter as ReplicatedClass>::BASE_NAME, None);
    }

    #[test]
    fn describe_lists_parents_with_handles() {
        for name in class_names() {
            println!("{}", describe(layout_by_name(name).unwrap()));
        }
        let text = describe(classes::ShooterCharacter::layout());
        assert!(text.starts_with("class ShooterCharacter extends Actor: 14 parents, 15 handles"));
        assert!(text.contains(" 10  LastTakeHitInfo"));
        assert!(text.contains("handles 11..=12"));
        assert!(!text.contains("group"), "a class of at most 64 leaves has no groups to show");
    }

    #[test]
    fn describe_shows_the_leaf_groups_of_a_wide_class() {
        use shadowrep::schema::{ClassBuilder, Condition, PropType, PropertyDecl, StructType};
        let three = StructType::new("Three").field("A", PropType::U8).field("B", PropType::U8).field("C", PropType::U8);
        let wide = (0..40)
            .fold(ClassBuilder::new("Wide"), |b, i| {
                b.property(PropertyDecl::new(format!("S{i}"), PropType::Struct(three.clone())))
            })
            .build()
            .unwrap();
        let text = describe(&wide);
        assert!(text.starts_with("class Wide: 40 parents, 120 handles, 64 leaf groups"), "{text}");
        assert!(text.contains("handles 1..=3, groups 0..=1"), "{text}");
        let over = (0..70)
            .fold(ClassBuilder::new("Over"), |b, i| {
                let c = if i % 2 == 0 { Condition::None } else { Condition::OwnerOnly };
                b.property(PropertyDecl::new(format!("P{i}"), PropType::U8).condition(c))
            })
            .build()
            .unwrap();
        let text = describe(&over);
        assert!(text.contains("70 runs of leaves: more than the 64 a driver tells apart"), "{text}");
    }
}
