//! Minimal in-memory world implementing naia 0.25's WorldRefType / WorldMutType
//! (adapted from the shape of naia's own demo_world; naia ships no published world crate).
use std::{any::Any, collections::HashMap};

use naia_shared::{
    ComponentFieldUpdate, ComponentKind, ComponentKinds, ComponentUpdate,
    EntityAndGlobalEntityConverter, GlobalWorldManagerType, LocalEntityAndGlobalEntityConverter,
    ReplicaDynMutWrapper, ReplicaDynRefWrapper, ReplicaMutTrait, ReplicaMutWrapper,
    ReplicaRefTrait, ReplicaRefWrapper, Replicate, ReplicatedComponent, SerdeErr, WorldMutType,
    WorldRefType,
};

#[derive(Clone, Copy, Eq, PartialEq, Hash, Debug, PartialOrd, Ord)]
pub struct Ent(pub u64);

#[derive(Default)]
pub struct World {
    next: u64,
    pub entities: HashMap<u64, HashMap<ComponentKind, Box<dyn Replicate>>>,
}

impl World {
    pub fn proxy(&self) -> WorldRef<'_> {
        WorldRef { world: self }
    }
    pub fn proxy_mut(&mut self) -> WorldMut<'_> {
        WorldMut { world: self }
    }
    pub fn get<R: Replicate>(&self, e: &Ent) -> Option<&R> {
        self.entities
            .get(&e.0)?
            .get(&ComponentKind::of::<R>())?
            .to_any()
            .downcast_ref::<R>()
    }
}

pub struct WorldRef<'w> {
    world: &'w World,
}
pub struct WorldMut<'w> {
    world: &'w mut World,
}

fn has_component_of_kind(w: &World, e: &Ent, k: &ComponentKind) -> bool {
    w.entities.get(&e.0).is_some_and(|c| c.contains_key(k))
}
fn component<'a, R: ReplicatedComponent>(w: &'a World, e: &Ent) -> Option<ReplicaRefWrapper<'a, R>> {
    let raw = w.get::<R>(e)?;
    Some(ReplicaRefWrapper::new(CRef { inner: raw }))
}
fn component_of_kind<'a>(w: &'a World, e: &Ent, k: &ComponentKind) -> Option<ReplicaDynRefWrapper<'a>> {
    let c = w.entities.get(&e.0)?.get(k)?;
    Some(ReplicaDynRefWrapper::new(c.dyn_ref()))
}

macro_rules! impl_ref {
    ($t:ty) => {
        impl WorldRefType<Ent> for $t {
            fn has_entity(&self, e: &Ent) -> bool {
                self.world.entities.contains_key(&e.0)
            }
            fn entities(&self) -> Vec<Ent> {
                self.world.entities.keys().map(|k| Ent(*k)).collect()
            }
            fn has_component<R: ReplicatedComponent>(&self, e: &Ent) -> bool {
                has_component_of_kind(&self.world, e, &ComponentKind::of::<R>())
            }
            fn has_component_of_kind(&self, e: &Ent, k: &ComponentKind) -> bool {
                has_component_of_kind(&self.world, e, k)
            }
            fn component<'a, R: ReplicatedComponent>(&'a self, e: &Ent) -> Option<ReplicaRefWrapper<'a, R>> {
                component(&self.world, e)
            }
            fn component_of_kind<'a>(&'a self, e: &Ent, k: &ComponentKind) -> Option<ReplicaDynRefWrapper<'a>> {
                component_of_kind(&self.world, e, k)
            }
        }
    };
}
impl_ref!(WorldRef<'_>);
impl_ref!(WorldMut<'_>);

impl WorldMutType<Ent> for WorldMut<'_> {
    fn spawn_entity(&mut self) -> Ent {
        let id = self.world.next;
        self.world.next += 1;
        self.world.entities.insert(id, HashMap::new());
        Ent(id)
    }
    fn local_duplicate_entity(&mut self, e: &Ent) -> Ent {
        let n = self.spawn_entity();
        self.local_duplicate_components(&n, e);
        n
    }
    fn local_duplicate_components(&mut self, m: &Ent, i: &Ent) {
        for k in self.component_kinds(i) {
            let b = self.world.entities[&i.0][&k].copy_to_box();
            self.insert_boxed_component(m, b);
        }
    }
    fn despawn_entity(&mut self, e: &Ent) {
        self.world.entities.remove(&e.0);
    }
    fn component_kinds(&mut self, e: &Ent) -> Vec<ComponentKind> {
        self.world.entities.get(&e.0).map(|c| c.keys().copied().collect()).unwrap_or_default()
    }
    fn component_mut<'a, R: ReplicatedComponent>(&'a mut self, e: &Ent) -> Option<ReplicaMutWrapper<'a, R>> {
        let c = self.world.entities.get_mut(&e.0)?.get_mut(&ComponentKind::of::<R>())?;
        let raw = c.to_any_mut().downcast_mut::<R>()?;
        Some(ReplicaMutWrapper::new(CMut { inner: raw }))
    }
    fn component_mut_of_kind<'a>(&'a mut self, e: &Ent, k: &ComponentKind) -> Option<ReplicaDynMutWrapper<'a>> {
        let c = self.world.entities.get_mut(&e.0)?.get_mut(k)?;
        Some(ReplicaDynMutWrapper::new(c.dyn_mut()))
    }
    fn component_apply_update(
        &mut self,
        converter: &dyn LocalEntityAndGlobalEntityConverter,
        e: &Ent,
        k: &ComponentKind,
        update: ComponentUpdate,
    ) -> Result<(), SerdeErr> {
        if let Some(mut c) = self.component_mut_of_kind(e, k) {
            c.read_apply_update(converter, update)?;
        }
        Ok(())
    }
    fn component_apply_field_update(
        &mut self,
        converter: &dyn LocalEntityAndGlobalEntityConverter,
        e: &Ent,
        k: &ComponentKind,
        update: ComponentFieldUpdate,
    ) -> Result<(), SerdeErr> {
        if let Some(mut c) = self.component_mut_of_kind(e, k) {
            c.read_apply_field_update(converter, update)?;
        }
        Ok(())
    }
    fn mirror_entities(&mut self, m: &Ent, i: &Ent) {
        for k in self.component_kinds(i) {
            self.mirror_components(m, i, &k);
        }
    }
    fn mirror_components(&mut self, m: &Ent, i: &Ent, k: &ComponentKind) {
        let src = self.world.entities.get(&i.0).and_then(|c| c.get(k)).map(|c| c.copy_to_box());
        if let Some(src) = src {
            if let Some(dst) = self.world.entities.get_mut(&m.0).and_then(|c| c.get_mut(k)) {
                dst.mirror(src.as_ref());
            }
        }
    }
    fn insert_component<R: ReplicatedComponent>(&mut self, e: &Ent, c: R) {
        self.world.entities.get_mut(&e.0).expect("no entity").insert(ComponentKind::of::<R>(), Box::new(c));
    }
    fn insert_boxed_component(&mut self, e: &Ent, c: Box<dyn Replicate>) {
        let k = c.kind();
        self.world.entities.get_mut(&e.0).expect("no entity").insert(k, c);
    }
    fn remove_component<R: ReplicatedComponent>(&mut self, e: &Ent) -> Option<R> {
        let c = self.world.entities.get_mut(&e.0)?.remove(&ComponentKind::of::<R>())?;
        Box::<dyn Any>::downcast::<R>(c.to_boxed_any()).ok().map(|b| *b)
    }
    fn remove_component_of_kind(&mut self, e: &Ent, k: &ComponentKind) -> Option<Box<dyn Replicate>> {
        self.world.entities.get_mut(&e.0)?.remove(k)
    }
    fn entity_publish(
        &mut self,
        kinds: &ComponentKinds,
        conv: &dyn EntityAndGlobalEntityConverter<Ent>,
        gwm: &dyn GlobalWorldManagerType,
        e: &Ent,
    ) {
        for k in self.component_kinds(e) {
            self.component_publish(kinds, conv, gwm, e, &k);
        }
    }
    fn component_publish(
        &mut self,
        kinds: &ComponentKinds,
        conv: &dyn EntityAndGlobalEntityConverter<Ent>,
        gwm: &dyn GlobalWorldManagerType,
        e: &Ent,
        k: &ComponentKind,
    ) {
        let Ok(ge) = conv.entity_to_global_entity(e) else { return };
        if let Some(c) = self.world.entities.get_mut(&e.0).and_then(|c| c.get_mut(k)) {
            let mutator = gwm.register_component(kinds, &ge, k, c.diff_mask_size());
            c.publish(&mutator);
        }
    }
    fn entity_unpublish(&mut self, e: &Ent) {
        for k in self.component_kinds(e) {
            self.component_unpublish(e, &k);
        }
    }
    fn component_unpublish(&mut self, e: &Ent, k: &ComponentKind) {
        if let Some(c) = self.world.entities.get_mut(&e.0).and_then(|c| c.get_mut(k)) {
            c.unpublish();
        }
    }
    fn entity_enable_delegation(
        &mut self,
        _kinds: &ComponentKinds,
        _conv: &dyn EntityAndGlobalEntityConverter<Ent>,
        _gwm: &dyn GlobalWorldManagerType,
        _e: &Ent,
    ) {
        unimplemented!("delegation not used in this benchmark")
    }
    fn component_enable_delegation(
        &mut self,
        _kinds: &ComponentKinds,
        _conv: &dyn EntityAndGlobalEntityConverter<Ent>,
        _gwm: &dyn GlobalWorldManagerType,
        _e: &Ent,
        _k: &ComponentKind,
    ) {
        unimplemented!("delegation not used in this benchmark")
    }
    fn entity_disable_delegation(&mut self, _e: &Ent) {}
    fn component_disable_delegation(&mut self, _e: &Ent, _k: &ComponentKind) {}
}

struct CRef<'a, R: Replicate> {
    inner: &'a R,
}
impl<R: Replicate> ReplicaRefTrait<R> for CRef<'_, R> {
    fn to_ref(&self) -> &R {
        self.inner
    }
}
struct CMut<'a, R: Replicate> {
    inner: &'a mut R,
}
impl<R: Replicate> ReplicaRefTrait<R> for CMut<'_, R> {
    fn to_ref(&self) -> &R {
        self.inner
    }
}
impl<R: Replicate> ReplicaMutTrait<R> for CMut<'_, R> {
    fn to_mut(&mut self) -> &mut R {
        self.inner
    }
}
