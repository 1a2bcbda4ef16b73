//! The sample game classes: UE's `AActor` base state, ShooterGame's character, the push-model
//! examples from UE's documentation, and three lean classes for scale tests.
//!
//! | class | base | parents | push-based |
//! | ----- | ---- | ------- | ---------- |
//! | [`Actor`] | — | 8 | `Owner`, `Instigator`, `Role`, `RemoteRole`, `bHidden` |
//! | [`ShooterCharacter`] | `Actor` | 8 + 6 | as `Actor` |
//! | [`LootContainer`] | `Actor` | 8 + 2 | as `Actor`, plus both of its own |
//! | [`ExampleActor`] | `Actor` | 8 + 2 | as `Actor`, plus `PushValue` |
//! | [`Projectile`] | — | 4 | `Damage`, `Instigator` |
//! | [`ShooterWeapon`] | — | 4 | `MyPawn` |
//! | [`Pickup`] | — | 4 | all (the class takes the all-push fast path) |
//! | [`Counter`] | — | 1 | none |
//!
//! Choices:
//! - `Actor` splits UE's `ReplicatedMovement` struct into three parents, `Location`, `Rotation` and
//!   `LinearVelocity`, so a movement system can write (and a compare can report) each on its own.
//!   They are polled: a moving actor changes them nearly every frame, and bulk writers
//!   (`ClassStore::plane_mut`) do not mark, so polling is what catches their writes. They keep UE's
//!   condition (`SimulatedOrPhysics`) and notify (`Always`).
//! - `Owner`, `Instigator`, `Role`, `RemoteRole` and `bHidden` change rarely and only through
//!   setters (UE 5 marks them dirty in `SetOwner`, `SetRole`, `SetActorHiddenInGame`, …), so they
//!   are push-based as in UE 5: write them with `set_*_and_mark_dirty`, or a plain `set_*`
//!   followed by `mark_*_dirty`.
//! - `LootContainer`'s `ContainerOwnInfo` is one struct parent whose first field is a dynamic
//!   array, as in UE: leaves `ContainerOwnInfo.PlayerIdArray` (an array command),
//!   `ContainerOwnInfo.StartTime` and `ContainerOwnInfo.OwnDuration`.
//! - `ShooterCharacter` declares ShooterGame's two Server calls, `ServerSetTargeting` and
//!   `ServerSetRunning` (reliable): the owner's client predicts aiming and sprinting, tells the
//!   server, and the server replicates `bIsTargeting` and `bWantsToRun` to everyone else
//!   (`SkipOwner`). `shadowrep bots` calls them; `shadowrep serve` applies them. With
//!   `shadowrep run --calls` the server also multicasts a muzzle effect per shot
//!   (`MulticastFireEffect`, unreliable) and calls the weapon's `ClientStartReload` (reliable)
//!   when a clip runs dry.
//! - `ShooterWeapon` is ShooterGame's `AShooterWeapon`, replicated as a sub-object of its
//!   character (`NetDriver::register_sub_object`): the burst counter everyone sees (it drives the
//!   muzzle effects), the ammo only its owner sees.
//! - `Projectile`, `Pickup` and `Counter` have no base: they stand for lean, numerous objects, and
//!   `Counter` is a single-property class for comparisons with other replication systems.

use crate::types::{NetQuantize10, NetQuantize100, PackedU32, Rotator};
use shadowrep::value::ObjectRef;

crate::replicated_enum! {
    /// UE's `ENetRole`: an actor's network role on one machine (2 bits on the wire).
    pub enum ENetRole {
        /// No role (a fresh actor).
        None,
        /// A client-side copy driven by the server's replicated state.
        SimulatedProxy,
        /// A client-side copy the local player controls.
        AutonomousProxy,
        /// The machine that owns the actor's state.
        Authority,
    }
}

crate::replicated_class! {
    /// UE's `AActor`: the replicated state every actor has.
    pub class Actor {
        /// Position (UE's `ReplicatedMovement.Location`).
        location: NetQuantize100 = "Location" [cond = SimulatedOrPhysics, notify = Always],
        /// Orientation (UE's `ReplicatedMovement.Rotation`).
        rotation: Rotator = "Rotation" [cond = SimulatedOrPhysics, notify = Always],
        /// Velocity (UE's `ReplicatedMovement.LinearVelocity`).
        linear_velocity: NetQuantize10 = "LinearVelocity" [cond = SimulatedOrPhysics, notify = Always],
        /// The owning actor (usually a player controller).
        owner: ObjectRef = "Owner" [notify = OnChanged, push],
        /// The pawn responsible for damage this actor causes.
        instigator: ObjectRef = "Instigator" [notify = OnChanged, push],
        /// The role on the sending machine (UE's class default: Authority, the server's).
        role: ENetRole = "Role" [push, default = (ENetRole::Authority)],
        /// The role on the receiving machine (UE's class default for a replicated actor:
        /// SimulatedProxy). The client's own role comes with each actor's open
        /// (`ClientWorld::role`); these two replicate as plain values, unswapped.
        remote_role: ENetRole = "RemoteRole" [push, default = (ENetRole::SimulatedProxy)],
        /// Hidden in game.
        hidden: bool = "bHidden" [push],
    }
}

crate::replicated_struct! {
    /// ShooterGame's `FTakeHitInfo`: the last hit a character took.
    pub struct TakeHitInfo {
        /// Damage dealt.
        pub actual_damage: f32 = "ActualDamage",
        /// The damage type's class.
        pub damage_type_class: ObjectRef = "DamageTypeClass",
    }
}

crate::replicated_class! {
    /// ShooterGame's `AShooterCharacter`.
    pub class ShooterCharacter extends Actor {
        /// Weapons carried.
        inventory: Vec<ObjectRef> = "Inventory",
        /// The weapon in hand; the notify receives the previous weapon.
        current_weapon: ObjectRef = "CurrentWeapon" [notify = OnChangedWithOld],
        /// The last hit taken, for hit effects on other clients.
        last_take_hit_info: TakeHitInfo = "LastTakeHitInfo" [notify = OnChanged],
        /// Aiming down sights (the owner predicts it locally).
        is_targeting: bool = "bIsTargeting" [cond = SkipOwner],
        /// Sprinting (the owner predicts it locally).
        wants_to_run: bool = "bWantsToRun" [cond = SkipOwner],
        /// Hit points.
        health: f32 = "Health",
    }
    rpcs {
        /// The owning player starts or stops aiming (its client predicts it; the server sets
        /// `bIsTargeting`, which every other client gets).
        server_set_targeting = "ServerSetTargeting" (new_targeting: bool) [server, reliable];
        /// The owning player starts or stops sprinting (`bWantsToRun` likewise).
        server_set_running = "ServerSetRunning" (new_running: bool, toggle: bool) [server, reliable];
        /// A shot's muzzle effect for everyone who sees the shooter, `muzzle` naming the
        /// effect: not ShooterGame's (its effects follow the weapon's `BurstCounter`), but what
        /// a game driving effects by gameplay cues sends, one unreliable multicast per shot
        /// (`shadowrep run --calls`).
        multicast_fire_effect = "MulticastFireEffect" (muzzle: u8) [multicast];
    }
}

crate::replicated_struct! {
    /// The ownership state of UE's push-model loot container example (`FContainerOwnInfo`). Its
    /// array flattens into an array leaf inside the struct parent.
    pub struct ContainerOwnInfo {
        /// The owning players.
        pub player_id_array: Vec<u64> = "PlayerIdArray",
        /// When the ownership started.
        pub start_time: f32 = "StartTime",
        /// How long it lasts.
        pub own_duration: f32 = "OwnDuration",
    }
}

crate::replicated_class! {
    /// The loot container of UE's push-model documentation: everything it adds is push-based.
    pub class LootContainer extends Actor {
        /// Whether a player currently owns the container.
        is_container_owned: bool = "bIsContainerOwned" [notify = OnChanged, push],
        /// Who owns it, since when and for how long.
        container_own_info: ContainerOwnInfo = "ContainerOwnInfo" [notify = OnChanged, push],
    }
}

crate::replicated_class! {
    /// The example actor of UE's push-model documentation: one polled and one push-based value.
    pub class ExampleActor extends Actor {
        /// Compared every time the actor is considered.
        polled_value: i32 = "PolledValue",
        /// Compared only when marked dirty.
        push_value: i32 = "PushValue" [push],
    }
}

crate::replicated_class! {
    /// A lean projectile: it moves every frame (polled), its damage and instigator are set once
    /// at spawn (push-based).
    pub class Projectile {
        /// Position.
        location: NetQuantize100 = "Location",
        /// Velocity.
        velocity: NetQuantize10 = "Velocity",
        /// Damage on impact.
        damage: f32 = "Damage" [push],
        /// Who fired it.
        instigator: ObjectRef = "Instigator" [push],
    }
}

crate::replicated_class! {
    /// ShooterGame's weapon: a sub-object of the character carrying it.
    pub class ShooterWeapon {
        /// The character carrying it.
        my_pawn: ObjectRef = "MyPawn" [notify = OnChanged, push],
        /// Shots of the current burst: clients play the firing effects when it changes.
        burst_counter: i32 = "BurstCounter" [notify = OnChanged],
        /// Ammo left: its owner's only.
        current_ammo: i32 = "CurrentAmmo" [cond = OwnerOnly],
        /// Ammo in the clip: its owner's only.
        current_ammo_in_clip: i32 = "CurrentAmmoInClip" [cond = OwnerOnly],
    }
    rpcs {
        /// The server starts a reload on the owner's client (ShooterGame's reliable Client
        /// call; `shadowrep run --calls` makes it when a clip runs dry).
        client_start_reload = "ClientStartReload" () [client, reliable];
    }
}

crate::replicated_class! {
    /// A lean pickup that rarely changes: every property is push-based, so the class takes the
    /// kernel's dirty-bits-only path.
    pub class Pickup {
        /// Item type.
        item_id: u32 = "ItemId" [push],
        /// Stack size.
        count: u16 = "Count" [push],
        /// Whether it can be picked up.
        available: bool = "bAvailable" [push],
        /// Position.
        location: NetQuantize100 = "Location" [push],
    }
}

crate::replicated_class! {
    /// A single polled counter, for comparisons with other replication systems (its count is
    /// declared packed: counts stay small).
    pub class Counter {
        /// The count.
        count: PackedU32 = "Count",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReplicatedClass;
    use shadowrep::schema::{LayoutError, PropType};
    use shadowrep::store::StoreError;
    use shadowrep::value::{Value, ValueError};

    #[test]
    fn parent_indices_continue_after_the_base() {
        assert_eq!(Actor::PARENT_COUNT, 8);
        assert_eq!((Actor::LOCATION, Actor::HIDDEN), (0, 7));
        assert_eq!(ShooterCharacter::BASE_PARENT_COUNT, 8);
        assert_eq!(ShooterCharacter::INVENTORY, 8);
        assert_eq!(ShooterCharacter::HEALTH, 13);
        assert_eq!(LootContainer::CONTAINER_OWN_INFO, 9);
        assert_eq!(ExampleActor::PUSH_VALUE, 9);
        assert_eq!((Counter::COUNT, Counter::PARENT_COUNT), (0, 1));

        let actor = Actor::layout();
        let shooter = ShooterCharacter::layout();
        assert_eq!(shooter.base.as_deref(), Some("Actor"));
        for (i, p) in actor.parents.iter().enumerate() {
            assert_eq!(shooter.parents[i].name, p.name);
            assert_eq!(shooter.parents[i].leaves, p.leaves);
        }
        // Handles: Actor has 8 leaves; the subclass's first leaf is handle 9.
        assert_eq!(actor.handle_count(), 8);
        let first = &shooter.leaves[shooter.parents[ShooterCharacter::INVENTORY].leaves.start];
        assert_eq!((first.handle, first.path.as_str()), (9, "Inventory"));
        let hit: Vec<_> = shooter.parents[ShooterCharacter::LAST_TAKE_HIT_INFO]
            .leaves
            .clone()
            .map(|l| (shooter.leaves[l].handle, shooter.leaves[l].path.as_str()))
            .collect();
        assert_eq!(hit, [(11, "LastTakeHitInfo.ActualDamage"), (12, "LastTakeHitInfo.DamageTypeClass")]);
        assert_eq!(shooter.leaf_by_handle(15).map(|l| l.path.as_str()), Some("Health"));
        assert_eq!(shooter.handle_count(), 15);
    }

    #[test]
    fn declared_options_reach_the_layout() {
        use shadowrep::schema::{Condition, Notify, VectorQuant};
        let a = Actor::layout();
        assert_eq!(a.parents[Actor::LOCATION].ty, PropType::Vector(VectorQuant::Q100));
        assert_eq!(a.parents[Actor::LINEAR_VELOCITY].ty, PropType::Vector(VectorQuant::Q10));
        assert_eq!(a.parents[Actor::ROLE].ty, PropType::Enum { bits: 2 });
        assert_eq!(a.parents[Actor::LOCATION].condition, Condition::SimulatedOrPhysics);
        assert!(!a.parents[Actor::LOCATION].push && a.parents[Actor::OWNER].push);
        let s = ShooterCharacter::layout();
        assert_eq!(s.parents[ShooterCharacter::CURRENT_WEAPON].notify, Notify::OnChangedWithOld);
        assert_eq!(s.parents[ShooterCharacter::IS_TARGETING].condition, Condition::SkipOwner);
        assert_eq!(s.parents[ShooterCharacter::INVENTORY].ty, PropType::array(PropType::Object));
        let e = ExampleActor::layout();
        assert!(!e.parents[ExampleActor::POLLED_VALUE].push && e.parents[ExampleActor::PUSH_VALUE].push);
        assert!(Pickup::layout().all_push());
        assert!(!Counter::layout().all_push());
    }

    #[test]
    fn enum_widths() {
        assert_eq!((ENetRole::MAX, ENetRole::BITS), (3, 2));
        assert_eq!(ENetRole::from_u8(2), Some(ENetRole::AutonomousProxy));
    }

    #[test]
    fn typed_accessors_round_trip() {
        let mut s = ShooterCharacter::new_store();
        let other = s.spawn();
        let id = s.spawn();
        // A fresh actor reads back defaults through every accessor.
        assert_eq!(ShooterCharacter::health(&s, id).unwrap(), 0.0);
        assert_eq!(ShooterCharacter::inventory(&s, id).unwrap(), Vec::<ObjectRef>::new());
        // Roles start at UE's class defaults (the server's Authority, a simulated remote).
        assert_eq!(Actor::role(&s, id).unwrap(), ENetRole::Authority);
        assert_eq!(Actor::remote_role(&s, id).unwrap(), ENetRole::SimulatedProxy);
        assert_eq!(
            ShooterCharacter::last_take_hit_info(&s, id).unwrap(),
            TakeHitInfo { actual_damage: 0.0, damage_type_class: ObjectRef(0) }
        );

        ShooterCharacter::set_health(&mut s, id, 87.5).unwrap();
        ShooterCharacter::set_inventory(&mut s, id, vec![ObjectRef(3), ObjectRef(4)]).unwrap();
        let hit = TakeHitInfo { actual_damage: 12.0, damage_type_class: ObjectRef(9) };
        ShooterCharacter::set_last_take_hit_info(&mut s, id, hit.clone()).unwrap();
        ShooterCharacter::set_is_targeting(&mut s, id, true).unwrap();
        Actor::set_location(&mut s, id, NetQuantize100::new(1.25, -2.5, 100.0)).unwrap();
        Actor::set_role(&mut s, id, ENetRole::Authority).unwrap();

        assert_eq!(ShooterCharacter::health(&s, id).unwrap(), 87.5);
        assert_eq!(ShooterCharacter::inventory(&s, id).unwrap(), vec![ObjectRef(3), ObjectRef(4)]);
        assert_eq!(ShooterCharacter::last_take_hit_info(&s, id).unwrap(), hit);
        assert!(ShooterCharacter::is_targeting(&s, id).unwrap());
        assert!(!ShooterCharacter::wants_to_run(&s, id).unwrap());
        assert_eq!(Actor::location(&s, id).unwrap(), NetQuantize100::new(1.25, -2.5, 100.0));
        assert_eq!(Actor::role(&s, id).unwrap(), ENetRole::Authority);
        // The untyped view agrees, and the neighbour is untouched.
        assert_eq!(s.get(id, ShooterCharacter::HEALTH).unwrap(), Value::F32(87.5));
        assert_eq!(ShooterCharacter::health(&s, other).unwrap(), 0.0);

        s.despawn(id).unwrap();
        assert_eq!(ShooterCharacter::health(&s, id), Err(StoreError::StaleId(id)));
    }

    #[test]
    fn loot_container_struct_with_an_array_round_trips() {
        let l = LootContainer::layout();
        let leaves: Vec<_> = l.leaves[8..].iter().map(|x| (x.handle, x.path.as_str(), x.parent)).collect();
        assert_eq!(
            leaves,
            [
                (9, "bIsContainerOwned", 8),
                (10, "ContainerOwnInfo.PlayerIdArray", 9),
                (11, "ContainerOwnInfo.StartTime", 9),
                (12, "ContainerOwnInfo.OwnDuration", 9),
            ]
        );

        let mut s = LootContainer::new_store();
        let w = s.add_watcher();
        let id = s.spawn();
        let empty = ContainerOwnInfo { player_id_array: vec![], start_time: 0.0, own_duration: 0.0 };
        assert_eq!(LootContainer::container_own_info(&s, id).unwrap(), empty);
        let info = ContainerOwnInfo { player_id_array: vec![7, u64::MAX], start_time: 3.5, own_duration: 60.0 };
        assert!(LootContainer::set_container_own_info_and_mark_dirty(&mut s, id, info.clone()).unwrap());
        assert!(LootContainer::set_is_container_owned_and_mark_dirty(&mut s, id, true).unwrap());
        assert_eq!(LootContainer::container_own_info(&s, id).unwrap(), info);
        assert!(LootContainer::is_container_owned(&s, id).unwrap());
        s.begin_tick();
        assert_eq!(s.dirty(&w).masks[LootContainer::CONTAINER_OWN_INFO], 1);

        // Equal again (array included): no change, no mark.
        let fresh = s.add_watcher();
        assert!(!LootContainer::set_container_own_info_and_mark_dirty(&mut s, id, info.clone()).unwrap());
        let longer = ContainerOwnInfo { player_id_array: vec![7, u64::MAX, 1], ..info };
        s.begin_tick();
        assert!(!s.dirty(&fresh).page_dirty(0));
        assert!(LootContainer::set_container_own_info_and_mark_dirty(&mut s, id, longer.clone()).unwrap());
        assert_eq!(LootContainer::container_own_info(&s, id).unwrap(), longer);
    }

    #[test]
    fn set_and_mark_dirty_marks_only_on_change() {
        let mut s = ExampleActor::new_store();
        let w = s.add_watcher();
        let ids: Vec<_> = (0..70).map(|_| s.spawn()).collect();
        let id = ids[66]; // page 1, lane 2
        let parents = s.layout().parents.len();
        let mask =
            |s: &shadowrep::store::ClassStore, page: usize, parent: usize| s.dirty(&w).masks[page * parents + parent];

        // Equal to the current (default) value: no change, no mark.
        assert!(!ExampleActor::set_push_value_and_mark_dirty(&mut s, id, 0).unwrap());
        s.begin_tick();
        assert!(!s.dirty(&w).page_dirty(1));
        assert_eq!(mask(&s, 1, ExampleActor::PUSH_VALUE), 0);

        // A change marks exactly this lane of this parent.
        assert!(ExampleActor::set_push_value_and_mark_dirty(&mut s, id, 5).unwrap());
        s.begin_tick();
        assert!(s.dirty(&w).page_dirty(1) && !s.dirty(&w).page_dirty(0));
        assert_eq!(mask(&s, 1, ExampleActor::PUSH_VALUE), 1 << 2);
        assert_eq!(mask(&s, 1, ExampleActor::POLLED_VALUE), 0);
        assert_eq!(ExampleActor::push_value(&s, id).unwrap(), 5);

        // Writing the same value again does not mark (nor does a plain set of a scalar).
        let mut s = ExampleActor::new_store();
        let w = s.add_watcher();
        let id = s.spawn();
        ExampleActor::set_push_value(&mut s, id, 5).unwrap();
        assert!(!ExampleActor::set_push_value_and_mark_dirty(&mut s, id, 5).unwrap());
        s.begin_tick();
        assert!(!s.dirty(&w).page_dirty(0));
        ExampleActor::mark_push_value_dirty(&mut s, id).unwrap();
        s.begin_tick();
        assert_eq!(s.dirty(&w).masks[ExampleActor::PUSH_VALUE], 1);

        // Arrays compare element-wise, floats bitwise.
        let mut s = ShooterCharacter::new_store();
        let w = s.add_watcher();
        let id = s.spawn();
        ShooterCharacter::set_inventory(&mut s, id, vec![ObjectRef(1)]).unwrap();
        ShooterCharacter::set_health(&mut s, id, -0.0).unwrap();
        s.begin_tick();
        // The kernel records every array write for compare, even a plain one.
        assert_eq!(s.dirty(&w).masks[ShooterCharacter::INVENTORY], 1);
        let fresh = s.add_watcher();
        assert!(!ShooterCharacter::set_inventory_and_mark_dirty(&mut s, id, vec![ObjectRef(1)]).unwrap());
        assert!(ShooterCharacter::set_health_and_mark_dirty(&mut s, id, 0.0).unwrap(), "-0.0 and 0.0 differ bitwise");
        s.begin_tick();
        assert_eq!(s.dirty(&fresh).masks[ShooterCharacter::INVENTORY], 0);
        assert_eq!(s.dirty(&fresh).masks[ShooterCharacter::HEALTH], 1);
    }

    #[test]
    fn accessors_refuse_a_store_of_an_unrelated_class() {
        let mut s = Counter::new_store();
        let id = s.spawn();
        // Actor::LOCATION is parent 0, but Counter's parent 0 is `Count`.
        let err = Actor::location(&s, id).unwrap_err();
        assert!(
            matches!(&err, StoreError::Value(ValueError::TypeMismatch { expected }) if expected.contains("Counter")),
            "{err}"
        );
        assert!(Actor::set_hidden(&mut s, id, true).is_err());
        assert!(Actor::mark_owner_dirty(&mut s, id).is_err());
        assert_eq!(Actor::remote_role(&s, id), Err(StoreError::Value(ValueError::NoSuchProperty(Actor::REMOTE_ROLE))));
        // A base store cannot serve subclass accessors either.
        let mut a = Actor::new_store();
        let id = a.spawn();
        assert!(ShooterCharacter::health(&a, id).is_err());
        assert_eq!(Counter::count(&s, s.ids().next().unwrap()).unwrap(), PackedU32(0));
    }

    crate::replicated_class! {
        /// A subclass that adds nothing keeps its base's layout under its own name.
        class Marker extends Actor {}
    }

    #[test]
    fn a_subclass_may_add_nothing() {
        assert_eq!(Marker::PARENT_COUNT, Actor::PARENT_COUNT);
        let l = Marker::layout();
        assert_eq!((l.name.as_str(), l.base.as_deref()), ("Marker", Some("Actor")));
        assert_eq!(l.handle_count(), Actor::layout().handle_count());
        assert_ne!(l.checksum, Actor::layout().checksum, "the class name is part of the checksum");
    }

    crate::replicated_class! {
        class Duplicate {
            a: u8 = "A",
            b: u16 = "A",
        }
    }

    crate::replicated_class! {
        class ShadowsBase extends Actor {
            location: crate::types::Vec3 = "Location",
        }
    }

    crate::replicated_class! {
        class NestedArray {
            grid: Vec<Vec<u8>> = "Grid",
        }
    }

    crate::replicated_class! {
        class OnBrokenBase extends Duplicate {
            c: u8 = "C",
        }
    }

    #[test]
    fn invalid_declarations_are_errors_not_panics() {
        assert_eq!(Duplicate::try_layout().unwrap_err(), LayoutError::DuplicateName("A".into()));
        assert_eq!(ShadowsBase::try_layout().unwrap_err(), LayoutError::DuplicateName("Location".into()));
        assert_eq!(NestedArray::try_layout().unwrap_err(), LayoutError::NestedArray("Grid".into()));
        assert_eq!(OnBrokenBase::try_layout().unwrap_err(), LayoutError::DuplicateName("A".into()));
        // The error is cached like a layout: asking twice gives the same answer.
        assert!(Duplicate::try_layout().is_err());
        assert_eq!(<Duplicate as ReplicatedClass>::try_layout().unwrap_err(), LayoutError::DuplicateName("A".into()));
    }

    #[test]
    #[should_panic(
        expected = "replicated class `Duplicate` has an invalid declaration: property `A` is declared twice"
    )]
    fn layout_panics_with_a_clear_message_on_an_invalid_declaration() {
        let _ = Duplicate::layout();
    }
}
