//! Conditions changing as the world runs: the game's net groups (connections' and sub-objects'),
//! bags' dynamic conditions and fast arrays' conditions.

use super::Sim;
use crate::random_world::MOOD;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use shadowrep::store::ActorId;
use shadowrep::value::Value;

impl Sim {
    /// Some of the game's groups 0 to 2, drawn at random.
    pub(super) fn game_groups(r: &mut ChaCha8Rng) -> shadowrep::net::NetGroups {
        (0..3).filter(|_| r.random_bool(0.4)).fold(shadowrep::net::NetGroups::EMPTY, |g, n| {
            g | shadowrep::net::NetGroups::group(n).expect("a game group")
        })
    }

    /// A sub-object's groups: some of the game's, now and then the owner's and the replays'.
    pub(super) fn sub_object_groups(r: &mut ChaCha8Rng) -> shadowrep::net::NetGroups {
        use shadowrep::net::NetGroups;
        let special = |r: &mut ChaCha8Rng, p: f64, g: NetGroups| if r.random_bool(p) { g } else { NetGroups::EMPTY };
        Self::game_groups(r) | special(r, 0.3, NetGroups::OWNER) | special(r, 0.2, NetGroups::REPLAY)
    }

    /// Every fifth frame ([`crate::random_world::Spec::net_groups`]): a connection joins other
    /// groups, and a sub-object takes other groups (or leaves the groups for no condition, or comes
    /// back).
    pub(in crate::random_world) fn net_groups(&mut self, frame: u32) {
        use shadowrep::net::SubObjectCondition as C;
        if !frame.is_multiple_of(5) {
            return;
        }
        let r = &mut self.groups_rng;
        let (conn, _) = self.clients[r.random_range(0..self.clients.len())];
        self.driver.set_connection_net_groups(conn, Self::game_groups(r)).unwrap();
        let subs: Vec<ActorId> = self
            .live
            .iter()
            .filter(|&&(c, id)| {
                c == self.bag && self.driver.guid_of(c, id).and_then(|g| self.driver.owner_of(g)).is_some()
            })
            .map(|&(_, id)| id)
            .collect();
        if !subs.is_empty() {
            let r = &mut self.groups_rng;
            let id = subs[r.random_range(0..subs.len())];
            let condition = if r.random_bool(0.8) { C::NetGroup(Self::sub_object_groups(r)) } else { C::None };
            self.driver.set_sub_object_condition(self.bag, &self.bags, id, condition).unwrap();
            self.sub_object_conditions.insert(self.driver.guid_of(self.bag, id).expect("live"), condition);
        }
        self.group_changes += 1;
    }

    /// Every third frame ([`crate::random_world::Spec::dynamic_conditions`]): three bags get a new
    /// `Mood` and a new condition of their own for it.
    pub(in crate::random_world) fn dynamic_conditions(&mut self, frame: u32) {
        use shadowrep::schema::Condition as C;
        if !frame.is_multiple_of(3) {
            return;
        }
        let own = [
            C::Dynamic,
            C::None,
            C::OwnerOnly,
            C::SkipOwner,
            C::SimulatedOnly,
            C::AutonomousOnly,
            C::SimulatedOrPhysics,
            C::ReplayOrOwner,
            C::ReplayOnly,
            C::SimulatedOnlyNoReplay,
            C::SkipReplay,
            C::Never,
        ];
        let bags: Vec<ActorId> = self.live.iter().filter(|l| l.0 == self.bag).map(|l| l.1).collect();
        for _ in 0..3.min(bags.len()) {
            let r = &mut self.dynamic_rng;
            let id = bags[r.random_range(0..bags.len())];
            let mood = Value::U16(r.random_range(0..1000));
            let c = own[r.random_range(0..own.len())];
            self.bags.set(id, MOOD, &mood).unwrap();
            self.driver.set_dynamic_condition(self.bag, &self.bags, id, MOOD, c).unwrap();
            self.dynamic_changes += 1;
        }
        // And a fast array's condition (`set_fast_array_condition`), the same condition again
        // now and then (nothing changes).
        use shadowrep::net::SubObjectCondition as S;
        let fast = [
            S::None,
            S::OwnerOnly,
            S::SkipOwner,
            S::SimulatedOnly,
            S::AutonomousOnly,
            S::SimulatedOrPhysics,
            S::SimulatedOnlyNoReplay,
            S::SimulatedOrPhysicsNoReplay,
        ];
        if !self.arrays.is_empty() {
            let r = &mut self.fast_conditions_rng;
            let fa = self.arrays[r.random_range(0..self.arrays.len())];
            let c = fast[r.random_range(0..fast.len())];
            match self.driver.set_fast_array_condition(fa, c) {
                Ok(()) => self.fast_condition_changes += 1,
                // Removed with its owner.
                Err(shadowrep::net::DriverError::UnknownFastArray(_)) => {}
                Err(e) => panic!("a fast array's condition: {e}"),
            }
        }
    }
}
