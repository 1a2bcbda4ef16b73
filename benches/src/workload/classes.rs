//! Which class a workload instantiates, and which of its properties change: the sample classes
//! (`shadowrep_layouts`) by name, or a class of the caller's own registered with
//! [`register_class`] — so `run_compare`, `run_replicate` and the scaling run measure a game's
//! own layout as they measure the samples (`benches/examples/custom_class.rs`).

use shadowrep::schema::{ClassLayout, PropType};
use std::sync::{Arc, Mutex};

/// Parents that change every time an actor changes: movement, and a weapon's shot (its burst
/// counter and the round it takes from the clip).
const HOT: [&str; 6] = ["Location", "Rotation", "LinearVelocity", "Velocity", "BurstCounter", "CurrentAmmoInClip"];
/// Parents one changed actor in ten also changes.
const OCCASIONAL: [&str; 5] = ["Health", "bIsTargeting", "bWantsToRun", "bHidden", "CurrentAmmo"];

/// A class a workload can instantiate: its layout and the parents its changes write.
#[derive(Clone)]
pub(super) struct WorkloadClass {
    pub layout: Arc<ClassLayout>,
    /// Written on every change of an actor.
    pub hot: Vec<usize>,
    /// One of these also, on one change in ten.
    pub occasional: Vec<usize>,
    /// The one hot parent is a count: index at spawn, +1 per change.
    pub counting: bool,
}

/// Classes registered with [`register_class`], by name.
static REGISTERED: Mutex<Vec<(String, WorkloadClass)>> = Mutex::new(Vec::new());

/// Makes `layout` a class every workload of this process can instantiate by its name (as
/// `CompareOptions::class`, `ReplicateOptions::class`, `ScalingOptions::class`), ahead of a sample
/// class of the same name. Each change of an actor writes new random values of its type to
/// every property named in `hot`, and on one change in ten to one of `occasional` too. With
/// `hot` empty the samples' rule applies: the movement properties a sample class has
/// (`Location`, `Rotation`, `LinearVelocity`, `Velocity`, `BurstCounter`, `CurrentAmmoInClip`),
/// else its first property that is neither an array nor an object reference (a lone `u32`
/// counts: it starts at the actor's index and grows by one); `Health`, `bIsTargeting`,
/// `bWantsToRun`, `bHidden`, `CurrentAmmo` are the occasional ones.
///
/// ```
/// use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
/// use shadowrep_benches::workload::{register_class, CompareWorkload};
/// use std::sync::Arc;
///
/// let crate_ = ClassBuilder::new("Crate")
///     .property(PropertyDecl::new("Weight", PropType::F32))
///     .property(PropertyDecl::new("Owner", PropType::Object))
///     .build()
///     .unwrap();
/// register_class(Arc::new(crate_), &["Weight"], &[]).unwrap();
/// let mut w = CompareWorkload::new("Crate", 1000, 7, false).unwrap();
/// assert_eq!(w.mutate(0.1, false), 100);
/// assert!(register_class(w.layout.clone(), &["Colour"], &[]).is_err(), "no such property");
/// ```
pub fn register_class(layout: Arc<ClassLayout>, hot: &[&str], occasional: &[&str]) -> Result<(), String> {
    let class = layout.name.clone();
    let index =
        |name: &&str| layout.parent_index(name).ok_or_else(|| format!("class `{class}` has no property `{name}`"));
    let hot = hot.iter().map(index).collect::<Result<Vec<_>, _>>()?;
    let occasional = occasional.iter().map(index).collect::<Result<Vec<_>, _>>()?;
    let entry =
        if hot.is_empty() { WorkloadClass::of(layout)? } else { WorkloadClass::with_changes(layout, hot, occasional) };
    let mut registered = REGISTERED.lock().map_err(|_| "the class registry is poisoned".to_string())?;
    registered.retain(|(name, _)| *name != class);
    registered.push((class, entry));
    Ok(())
}

impl WorkloadClass {
    /// Class `class`: registered, or a sample.
    pub fn by_name(class: &str) -> Result<Self, String> {
        let registered = REGISTERED.lock().map_err(|_| "the class registry is poisoned".to_string())?;
        if let Some((_, c)) = registered.iter().find(|(name, _)| name == class) {
            return Ok(c.clone());
        }
        drop(registered);
        let layout = shadowrep_layouts::layout_by_name(class).ok_or_else(|| {
            format!(
                "unknown class `{class}`; known: {} (a class of your own: `workload::register_class`)",
                shadowrep_layouts::class_names().join(", ")
            )
        })?;
        Self::of(layout.clone())
    }

    /// `layout` with the samples' rule for what changes (see [`register_class`]).
    fn of(layout: Arc<ClassLayout>) -> Result<Self, String> {
        let find = |names: &[&str]| -> Vec<usize> { names.iter().filter_map(|n| layout.parent_index(n)).collect() };
        let mut hot = find(&HOT);
        let named = !hot.is_empty();
        if !named {
            // A class with none of those (Counter): its first fixed parent is what changes — not an
            // object reference, which has no other actor to point at here and would never change.
            hot.extend(layout.parents.iter().position(|p| !matches!(p.ty, PropType::Array { .. } | PropType::Object)));
        }
        if hot.is_empty() {
            return Err(format!(
                "class `{}` has no property this workload can change (every one is an object reference or an array)",
                layout.name
            ));
        }
        let occasional = find(&OCCASIONAL);
        Ok(if named {
            Self { layout, hot, occasional, counting: false }
        } else {
            Self::with_changes(layout, hot, occasional)
        })
    }

    /// `hot` and `occasional` as given: a lone `u32` counts (values stay small, as real
    /// counters' do).
    fn with_changes(layout: Arc<ClassLayout>, hot: Vec<usize>, occasional: Vec<usize>) -> Self {
        let counting = hot.len() == 1 && matches!(layout.parents[hot[0]].ty, PropType::U32 | PropType::PackedU32);
        Self { layout, hot, occasional, counting }
    }
}

#[cfg(test)]
mod tests {
    use super::register_class;
    use crate::workload::CompareWorkload;
    use shadowrep::schema::{ClassBuilder, PropType, PropertyDecl};
    use std::sync::Arc;

    /// Which of parents 0 and 1 a mutation of every actor of `class` changed.
    fn changed(class: &str) -> [bool; 2] {
        let mut w = CompareWorkload::new(class, 50, 1, false).unwrap();
        let ids: Vec<_> = w.store.ids().collect();
        let values =
            |w: &CompareWorkload, p: usize| -> Vec<_> { ids.iter().map(|&id| w.store.get(id, p).unwrap()).collect() };
        let before = [values(&w, 0), values(&w, 1)];
        assert_eq!(w.mutate(1.0, false), 50);
        [values(&w, 0) != before[0], values(&w, 1) != before[1]]
    }

    #[test]
    fn a_registered_class_changes_what_it_names_and_a_second_registration_replaces_the_first() {
        let probe = ClassBuilder::new("RegisterProbe")
            .property(PropertyDecl::new("A", PropType::F32))
            .property(PropertyDecl::new("B", PropType::F32))
            .build()
            .unwrap();
        let probe = Arc::new(probe);
        // Named: B, not the first fixed property the samples' rule would pick.
        register_class(probe.clone(), &["B"], &[]).unwrap();
        assert_eq!(changed("RegisterProbe"), [false, true]);
        // Registered again: the new choice applies.
        register_class(probe.clone(), &["A"], &[]).unwrap();
        assert_eq!(changed("RegisterProbe"), [true, false]);
        // With none named, the samples' rule: the first fixed property.
        register_class(probe, &[], &[]).unwrap();
        assert_eq!(changed("RegisterProbe"), [true, false]);
    }
}
