//! Object references inside fast array items, mapped as an actor's properties are: a reference
//! to an actor the client lacks reads null until the actor arrives, when the item's change
//! callback fires (UE's `PostReplicatedChange` of an item whose references were mapped); one to
//! an actor the client destroys reads null again until it returns; a static actor an item names
//! is exported, so the client binds its level copy.

use super::*;
use shadowrep::fastarray::{item_layout, FastArrayEvent, ReplicationId};
use shadowrep::net::SubObjectCondition;
use shadowrep::schema::{ArrayLayout, StructType};

/// Items of a count and a reference.
fn refs() -> Arc<ArrayLayout> {
    let item = StructType::new("Ref").field("Count", PropType::U16).field("Target", PropType::Object);
    Arc::new(item_layout("Refs", PropType::Struct(item)).unwrap())
}

/// An item's bytes.
fn item(count: u16, target: NetGuid) -> Vec<u8> {
    let l = refs();
    let mut b = vec![0u8; l.stride];
    b[l.elements[0].offset..l.elements[0].offset + 2].copy_from_slice(&count.to_le_bytes());
    b[l.elements[1].offset..l.elements[1].offset + 8].copy_from_slice(&target.0.to_le_bytes());
    b
}

/// The reference in client 0's copy of item `id`.
fn target_of(l: &Level, fa: NetGuid, id: ReplicationId) -> NetGuid {
    let bytes = l.client(0).fast_array(fa).expect("the array").item(id).expect("the item").to_vec();
    let at = refs().elements[1].offset;
    NetGuid(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()))
}

fn level() -> (Level, shadowrep::net::FastArrayKind) {
    let mut l = Level::new(every_frame(), 0);
    always_due(&mut l);
    let kind = l.driver.register_fast_array_kind(refs()).unwrap();
    l.fast_kinds.push(refs());
    l.add_client();
    (l, kind)
}

const FAR: [f32; 3] = [900_000.0, 0.0, 0.0];
const NEAR: [f32; 3] = [200.0, 0.0, 0.0];

/// An owner near client 0 whose fast array has one item naming a far actor (out of relevancy),
/// two frames on.
struct Named {
    l: Level,
    owner_id: ActorId,
    owner: NetGuid,
    target_id: ActorId,
    target: NetGuid,
    fa: NetGuid,
    id: ReplicationId,
}

fn named_far() -> Named {
    let (mut l, kind) = level();
    let (owner_id, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let (target_id, target) = l.spawn(FAR, 2);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    let id = l.driver.fast_array_mut(fa).unwrap().add(&item(3, target)).unwrap();
    l.run(2);
    Named { l, owner_id, owner, target_id, target, fa, id }
}

#[test]
fn a_reference_in_an_item_waits_for_its_actor_and_follows_it_out_and_back() {
    let Named { mut l, target_id, target, fa, id, .. } = named_far();
    assert!(!l.client(0).has(target), "out of relevancy");
    assert_eq!(target_of(&l, fa, id), NetGuid(0), "a reference to an actor the client lacks reads null");
    assert_eq!(l.client(0).unmapped_count(), 1);
    assert_eq!(l.clients[0].1.take_fast_array_events(), [(fa, FastArrayEvent::Added(id))]);

    // The target comes into relevancy: the reference is written, the item's callback fires once.
    l.move_to(target_id, NEAR);
    l.step();
    assert!(l.client(0).has(target));
    assert_eq!(target_of(&l, fa, id), target);
    assert_eq!(l.client(0).unmapped_count(), 0);
    assert_eq!(l.clients[0].1.take_fast_array_events(), [(fa, FastArrayEvent::Changed(id))]);

    // Out of relevancy past the timeout: its copy is destroyed, the reference reads null again
    // and waits (no callback, as UE's MoveMappedObjectToUnmapped); it comes back, written again.
    l.move_to(target_id, FAR);
    l.run(200);
    assert!(!l.client(0).has(target));
    assert_eq!(target_of(&l, fa, id), NetGuid(0));
    assert_eq!(l.client(0).unmapped_count(), 1);
    assert!(l.clients[0].1.take_fast_array_events().is_empty());
    l.move_to(target_id, NEAR);
    l.step();
    assert_eq!(target_of(&l, fa, id), target);
    assert_eq!(l.clients[0].1.take_fast_array_events(), [(fa, FastArrayEvent::Changed(id))]);

    // A removed item's reference is forgotten: the target leaving again touches nothing.
    l.driver.fast_array_mut(fa).unwrap().remove(id).unwrap();
    l.step();
    assert!(l.client(0).fast_array(fa).unwrap().item(id).is_none());
    l.clients[0].1.take_fast_array_events();
    l.move_to(target_id, FAR);
    l.run(200);
    assert!(!l.client(0).has(target));
    assert_eq!(l.client(0).unmapped_count(), 0);
    assert!(l.clients[0].1.take_fast_array_events().is_empty());
}

#[test]
fn references_waiting_in_an_array_go_with_it() {
    let (mut l, kind) = level();
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let (_, target) = l.spawn(FAR, 2);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    for n in 0..5 {
        l.driver.fast_array_mut(fa).unwrap().add(&item(n, target)).unwrap();
    }
    l.run(2);
    assert_eq!(l.client(0).unmapped_count(), 5);
    l.driver.remove_fast_array(fa).unwrap();
    l.run(2);
    assert!(l.client(0).fast_array(fa).is_none());
    assert_eq!(l.client(0).unmapped_count(), 0);
}

#[test]
fn a_static_actor_an_item_names_is_exported_and_bound() {
    const DOOR: &str = "/Game/Maps/Arena.Arena:PersistentLevel.Door_9";
    let (mut l, kind) = level();
    let door = l.store.spawn();
    l.move_to(door, FAR);
    let door = l.driver.register_static_actor(l.class, &l.store, door, DOOR).unwrap();
    l.clients[0].1.load_static_actor(DOOR, l.class.0).unwrap();
    let (_, owner) = l.spawn([100.0, 0.0, 0.0], 1);
    let fa = l.driver.add_fast_array(kind, owner, SubObjectCondition::None).unwrap();
    let id = l.driver.fast_array_mut(fa).unwrap().add(&item(1, door)).unwrap();
    l.run(2);
    assert!(
        l.events(0).contains(&ClientEvent::Bound { guid: door, class: l.class.0 }),
        "the door is far: only an export binds it"
    );
    assert_eq!(target_of(&l, fa, id), door);
    assert_eq!(l.client(0).unmapped_count(), 0);
}

#[test]
fn a_torn_off_owners_items_wait_for_nothing() {
    // Torn off, the actor and its arrays are the client's: their references no longer wait
    // (as its own properties' do not), so an arrival later fires nothing there.
    let Named { mut l, owner_id, owner, target_id, target, fa, id } = named_far();
    assert_eq!(l.client(0).unmapped_count(), 1);
    l.driver.tear_off(l.class, &l.store, owner_id).unwrap();
    l.run(3);
    assert!(l.client(0).is_torn_off(owner));
    assert_eq!(l.client(0).unmapped_count(), 0);
    l.clients[0].1.take_fast_array_events();
    l.move_to(target_id, NEAR);
    l.step();
    assert!(l.client(0).has(target));
    assert_eq!(target_of(&l, fa, id), NetGuid(0));
    assert!(l.clients[0].1.take_fast_array_events().is_empty());
}
