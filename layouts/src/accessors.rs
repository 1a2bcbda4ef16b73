//! What the code [`replicated_class!`](crate::replicated_class) generates calls at run time:
//! property declarations from the parsed options, the layout's build and its checks, and the
//! typed accessors — each checks that the store (or the notify's class) has the declared
//! property at its parent index, so an accessor of an unrelated class returns an error (or
//! `None`) instead of reading another property. Not a stable API: reached through
//! `__private`.

use shadowrep::client::{ClientWorld, NotifyEvent};
use shadowrep::schema::{ClassLayout, Condition, LayoutError, Notify, PropType, PropertyDecl};
use shadowrep::store::{ActorId, ClassStore, StoreError};
use shadowrep::value::ValueError;
use std::sync::Arc;

use crate::RepType;

/// One option of a property declaration, as the macro parsed it.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum PropOpt {
    Condition(Condition),
    Notify(Notify),
    Push,
    Default(shadowrep::value::Value),
}

/// A property declaration with its options applied.
#[doc(hidden)]
pub fn decl(name: &str, ty: PropType, opts: &[PropOpt]) -> PropertyDecl {
    opts.iter().fold(PropertyDecl::new(name, ty), |d, o| match o {
        PropOpt::Condition(c) => d.condition(*c),
        PropOpt::Notify(n) => d.notify(*n),
        PropOpt::Push => d.push(true),
        PropOpt::Default(v) => d.default_value(v.clone()),
    })
}

/// Builds the layout and checks the parent indices the macro computed at compile time.
#[doc(hidden)]
pub fn finish(
    builder: shadowrep::schema::ClassBuilder,
    base_parents: usize,
    own: &[&str],
) -> Result<Arc<ClassLayout>, LayoutError> {
    let layout = builder.build()?;
    // Holds whenever the build succeeded: a declared property is exactly one parent, appended
    // after the base's, and names are unique.
    for (i, name) in own.iter().enumerate() {
        debug_assert_eq!(layout.parent_index(name), Some(base_parents + i), "parent index of `{name}`");
    }
    Ok(Arc::new(layout))
}

/// The layout, or a panic that says which declaration is invalid.
#[doc(hidden)]
pub fn expect_layout(class: &str, layout: Result<&'static Arc<ClassLayout>, LayoutError>) -> &'static Arc<ClassLayout> {
    match layout {
        Ok(l) => l,
        Err(e) => panic!("replicated class `{class}` has an invalid declaration: {e} (`{class}::try_layout()` returns this as an error)"),
    }
}

/// Index of `name` in `names` (a compile-time lookup for the generated index consts).
#[doc(hidden)]
pub const fn position(names: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("property name not declared")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Checks that the store's parent `parent` is the property `class.name`, i.e. that the store is of
/// `class` or a subclass (or of a class that happens to declare the same name at the same index).
fn check(store: &ClassStore, class: &str, name: &str, parent: usize) -> Result<(), StoreError> {
    let layout = store.layout();
    match layout.parents.get(parent) {
        Some(p) if p.name == name => Ok(()),
        Some(p) => Err(StoreError::Value(ValueError::TypeMismatch {
            expected: format!(
                "`{class}.{name}` at parent {parent}: this store holds class `{}`, whose parent {parent} is `{}`",
                layout.name, p.name
            ),
        })),
        None => Err(StoreError::Value(ValueError::NoSuchProperty(parent))),
    }
}

/// Typed read of one parent.
#[doc(hidden)]
pub fn get<T: RepType>(
    store: &ClassStore,
    id: ActorId,
    class: &str,
    name: &str,
    parent: usize,
) -> Result<T, StoreError> {
    check(store, class, name, parent)?;
    let v = store.get(id, parent)?;
    T::from_value(&v).ok_or_else(|| {
        StoreError::Value(ValueError::TypeMismatch { expected: format!("{:?} for `{class}.{name}`", T::prop_type()) })
    })
}

/// Typed write of one parent, without marking.
#[doc(hidden)]
pub fn set<T: RepType>(
    store: &mut ClassStore,
    id: ActorId,
    class: &str,
    name: &str,
    parent: usize,
    v: &T,
) -> Result<(), StoreError> {
    check(store, class, name, parent)?;
    store.set(id, parent, &v.to_value())
}

/// Marks one parent dirty.
#[doc(hidden)]
pub fn mark_dirty(
    store: &mut ClassStore,
    id: ActorId,
    class: &str,
    name: &str,
    parent: usize,
) -> Result<(), StoreError> {
    check(store, class, name, parent)?;
    store.mark_dirty(id, parent)
}

/// Typed write that marks only on a change.
#[doc(hidden)]
pub fn set_and_mark<T: RepType>(
    store: &mut ClassStore,
    id: ActorId,
    class: &str,
    name: &str,
    parent: usize,
    v: &T,
) -> Result<bool, StoreError> {
    check(store, class, name, parent)?;
    store.set_and_mark(id, parent, &v.to_value())
}

/// A notify of property `class.name` (parent `parent`), typed: `(old, new)`, `old` only when
/// the notify is declared with it; `None` for a notify of another property, or of a class that
/// does not have this one at `parent` (an unrelated class whose parent index is the same).
#[doc(hidden)]
pub fn notify<T: RepType>(
    world: &ClientWorld,
    event: &NotifyEvent,
    name: &str,
    parent: usize,
) -> Option<(Option<T>, T)> {
    if event.parent != parent || world.class_layout(event.class)?.parents.get(parent)?.name != name {
        return None;
    }
    let old = match &event.old {
        Some(v) => Some(T::from_value(v)?),
        None => None,
    };
    Some((old, T::from_value(&event.new)?))
}
