//! The frame's calls beside [`Sim::play`]: inventories' items, remote procedures (the server's
//! and the clients'), and the classes' priority hooks.

use super::Sim;
use rand::Rng;
use shadowrep::ids::NetGuid;
use shadowrep::value::Value;
use std::sync::Arc;

impl Sim {
    /// Calls a few actors' remote procedures, of every kind ([`crate::random_world::CALLS`]), each
    /// with the next number; a torn-off actor refuses.
    pub(in crate::random_world) fn play_rpcs(&mut self) {
        for _ in 0..self.rpc_rng.random_range(0..12) {
            let (c, id) = self.live[self.rpc_rng.random_range(0..self.live.len())];
            let name = crate::random_world::CALLS[self.rpc_rng.random_range(0..crate::random_world::CALLS.len())];
            let store = if c == self.thing { &self.things } else { &self.bags };
            match self.driver.call_rpc(c, store, id, name, &[Value::U32(self.rpcs_called)]) {
                Ok(()) => self.rpcs_called += 1,
                Err(shadowrep::net::DriverError::TornOff(_)) => {}
                Err(e) => panic!("call {name} on {id:?}: {e}"),
            }
        }
        // The clients' Server calls: mostly on an actor their connection owns, now and then on
        // one it does not (refused on both sides alike, its number used).
        for ci in 0..self.clients.len() {
            if !self.rpc_rng.random_bool(0.6) {
                continue;
            }
            let conn = self.clients[ci].0;
            let (driver, rng) = (&self.driver, &mut self.rpc_rng);
            let owned: Vec<NetGuid> = self
                .live
                .iter()
                .filter(|&&(c, id)| rng.random_bool(0.05) || driver.owning_connection(c, id) == Some(conn))
                .filter_map(|&(c, id)| driver.guid_of(c, id))
                .collect();
            let world = &mut self.clients[ci].1;
            let owned: Vec<NetGuid> = owned.into_iter().filter(|&g| world.has(g)).collect();
            if owned.is_empty() {
                continue;
            }
            let guid = owned[self.rpc_rng.random_range(0..owned.len())];
            let name = crate::random_world::SERVER_CALLS[self.rpc_rng.random_range(0..2)];
            match world.call_server_rpc(guid, name, &[Value::U32(self.rpcs_called)]) {
                Ok(()) => self.rpcs_called += 1,
                Err(shadowrep::client::ClientError::TooManyCalls) => {}
                Err(e) => panic!("client call {name} on {guid}: {e}"),
            }
        }
    }

    /// Changes, adds and removes items of a few inventories (dropping those whose owner is gone);
    /// with [`crate::random_world::Spec::remove_fast_arrays`], now and then removes an inventory
    /// from its live owner (`NetDriver::remove_fast_array`: clients that may hold it get a close).
    pub(in crate::random_world) fn play_inventories(&mut self) {
        let driver = &mut self.driver;
        self.arrays.retain(|&fa| driver.fast_array_mut(fa).is_ok());
        if self.remove_arrays && !self.arrays.is_empty() && self.removal_rng.random_bool(0.06) {
            let fa = self.arrays.swap_remove(self.removal_rng.random_range(0..self.arrays.len()));
            let owner = self.array_owners[&fa];
            self.driver.remove_fast_array(fa).unwrap();
            self.removed_arrays.push((fa, owner));
        }
        for _ in 0..self.arrays.len() / 4 {
            let fa = self.arrays[self.rng.random_range(0..self.arrays.len())];
            let mut items = self.driver.fast_array_mut(fa).unwrap();
            let ids: Vec<_> = items.iter().map(|(id, _)| id).collect();
            match self.rng.random_range(0..4) {
                0 => drop(items.add(&self.rng.random::<u32>().to_le_bytes()).unwrap()),
                1 if !ids.is_empty() => items.remove(ids[self.rng.random_range(0..ids.len())]).unwrap(),
                _ if !ids.is_empty() => {
                    let id = ids[self.rng.random_range(0..ids.len())];
                    items.set(id, &self.rng.random::<u32>().to_le_bytes()).unwrap();
                }
                _ => {}
            }
        }
    }

    /// The classes' priority hooks at `frame` ([`crate::random_world::Spec::priority_hooks`]).
    pub(in crate::random_world) fn priority_hooks(&mut self, frame: u32) {
        use shadowrep::net::PriorityHook;
        if frame == 20 {
            let hook: PriorityHook = Arc::new(|p, t, v| {
                let base = p.priority(t, v);
                match p.actor.0 % 6 {
                    0 => base * 3.0,
                    1 => -1.0,
                    2 => f32::NAN,
                    3 => base + f32::from(u8::from(v.location[0] > 0.0)),
                    4 => 0.5,
                    _ => base,
                }
            });
            self.driver.set_priority_hook(self.thing, Some(hook)).unwrap();
        } else if frame == 60 {
            let hook: PriorityHook =
                Arc::new(|p, t, v| 0.5 * p.priority(t, v) + if p.source != p.actor { 0.25 } else { 0.0 });
            self.driver.set_priority_hook(self.bag, Some(hook)).unwrap();
        } else if frame == 180 {
            self.driver.set_priority_hook(self.thing, None).unwrap();
        }
    }
}
