//! Spawns: a dynamic actor with its net settings drawn at random, its owners, instigator,
//! sub-object registration or inventory, and sublevel.

use super::Sim;
use crate::random_world::LOCATION;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use shadowrep::net::{NetSettings, SublevelId};
use shadowrep::store::ActorId;
use shadowrep::value::Value;

impl Sim {
    /// Net settings drawn at random (a spawn's, or a later change's).
    pub(super) fn settings(r: &mut ChaCha8Rng) -> NetSettings {
        let mut s = NetSettings {
            net_priority: [1.0, 1.0, 3.0, 0.5][r.random_range(0..4)],
            cull_distance_squared: [225_000_000.0, 36_000_000.0][r.random_range(0..2)],
            always_relevant: r.random_bool(0.02),
            only_relevant_to_owner: r.random_bool(0.05),
            use_owner_relevancy: r.random_bool(0.05),
            hidden: r.random_bool(0.05),
            // Without a root component (never relevant by distance) or, hidden, without collision.
            has_root: r.random_bool(0.97),
            collision: r.random_bool(0.7),
            startup: r.random_bool(0.1),
            ..NetSettings::default()
        };
        s.frequency.net_update_frequency = [100.0, 30.0, 10.0, 2.0][r.random_range(0..4)];
        s.frequency.min_net_update_frequency = [2.0, 0.5][r.random_range(0..2)];
        s
    }

    pub(super) fn spawn(&mut self) {
        let at = self.pos();
        let is_bag = self.rng.random_bool(0.3);
        let (class, id) = if is_bag {
            let id = self.bags.spawn();
            self.driver.set_position(self.bag, &self.bags, id, at).unwrap();
            (self.bag, id)
        } else {
            let id = self.things.spawn();
            self.things.set(id, LOCATION, &Value::Vector(at)).unwrap();
            self.driver.assign_guid(self.thing, &self.things, id).unwrap();
            (self.thing, id)
        };
        let mut s = Self::settings(&mut self.rng);
        s.net_temporary = self.temporary && self.temporary_rng.random_bool(0.25);
        self.temporaries += s.net_temporary as usize;
        let r = &mut self.rng;
        let owner_actor =
            (r.random_bool(0.15) && !self.live.is_empty()).then(|| self.live[r.random_range(0..self.live.len())]);
        let owner_conn = r.random_bool(0.1).then(|| r.random_range(0..self.clients.len()));
        let store = if is_bag { &self.bags } else { &self.things };
        self.driver.set_net_settings(class, store, id, s).unwrap();
        // A quarter of the bags are sub-objects of a thing, under every condition.
        // (Owned by a dynamic thing: a static actor owns no sub-objects here.)
        let things: Vec<ActorId> = self
            .live
            .iter()
            .filter(|l| l.0 == self.thing && self.driver.guid_of(l.0, l.1).is_some_and(|g| g.is_dynamic()))
            .map(|l| l.1)
            .collect();
        if is_bag && !things.is_empty() && self.rng.random_bool(0.25) {
            use shadowrep::net::SubObjectCondition as C;
            let conditions = [
                C::None,
                C::OwnerOnly,
                C::SkipOwner,
                C::SimulatedOnly,
                C::AutonomousOnly,
                C::ReplayOrOwner,
                C::ReplayOnly,
                C::SkipReplay,
                C::Never,
            ];
            let condition = conditions[self.rng.random_range(0..conditions.len())];
            let owner = things[self.rng.random_range(0..things.len())];
            let owner = self.driver.guid_of(self.thing, owner).expect("live");
            self.driver.register_sub_object(class, &self.bags, id, owner, condition).unwrap();
            self.registered_subs.insert(self.driver.guid_of(class, id).expect("registered"));
            let mut condition = condition;
            if self.net_groups && self.groups_rng.random_bool(0.5) {
                condition = C::NetGroup(Self::sub_object_groups(&mut self.groups_rng));
                self.driver.set_sub_object_condition(class, &self.bags, id, condition).unwrap();
            }
            if self.initial_only && self.initial_rng.random_bool(0.5) {
                condition = C::InitialOnly;
                self.driver.set_sub_object_condition(class, &self.bags, id, condition).unwrap();
                self.initial_onlys += 1;
            }
            if self.sub_conditions && self.conditions_rng.random_bool(0.5) {
                let others =
                    [C::SimulatedOrPhysics, C::SimulatedOnlyNoReplay, C::SimulatedOrPhysicsNoReplay, C::InitialOrOwner];
                condition = others[self.conditions_rng.random_range(0..others.len())];
                self.driver.set_sub_object_condition(class, &self.bags, id, condition).unwrap();
                self.other_conditions += 1;
            }
            self.sub_object_conditions.insert(self.driver.guid_of(class, id).expect("registered"), condition);
            self.live.push((class, id));
            return;
        }
        let owner_guid = owner_actor.and_then(|(c, a)| self.driver.guid_of(c, a));
        // Some are instigated by another actor (a projectile by its shooter): relevant to the
        // viewers whose view target that is.
        let instigator = (self.rng.random_bool(0.1) && !self.live.is_empty())
            .then(|| self.live[self.rng.random_range(0..self.live.len())])
            .and_then(|(c, a)| self.driver.guid_of(c, a));
        self.driver.set_owner_actor(class, store, id, owner_guid, instigator).unwrap();
        if let Some(c) = owner_conn {
            let autonomous = self.rng.random_bool(0.5);
            self.driver.set_owner(class, store, id, Some(self.clients[c].0), autonomous).unwrap();
        }
        // A fifth of the things carry an inventory (a fast array), under a few conditions.
        if class == self.thing && self.rng.random_bool(0.2) {
            use shadowrep::net::SubObjectCondition as C;
            let mut condition = [C::None, C::OwnerOnly, C::SkipOwner][self.rng.random_range(0..3)];
            if self.net_groups && self.groups_rng.random_bool(0.3) {
                condition = C::NetGroup(Self::sub_object_groups(&mut self.groups_rng));
            }
            if self.sub_conditions && self.conditions_rng.random_bool(0.5) {
                // (Not the initial-only ones: a fast array refuses them.)
                let others = [C::SimulatedOrPhysics, C::SimulatedOnlyNoReplay, C::SimulatedOrPhysicsNoReplay];
                condition = others[self.conditions_rng.random_range(0..others.len())];
            }
            let owner = self.driver.guid_of(class, id).expect("live");
            let fa = self.driver.add_fast_array(self.kind, owner, condition).unwrap();
            self.array_owners.insert(fa, owner);
            let n = self.rng.random_range(0..40);
            let mut items = self.driver.fast_array_mut(fa).unwrap();
            for i in 0..n {
                items.add(&(i as u32).to_le_bytes()).unwrap();
            }
            self.arrays.push(fa);
        }
        if self.sublevels {
            let l = SublevelId(self.rng.random_range(0..3));
            self.driver.set_sublevel(class, store, id, l).unwrap();
        }
        self.live.push((class, id));
    }
}
