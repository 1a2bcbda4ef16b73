//! Remote procedure calls as the client receives them ([`crate::net`]'s `rpc` sends them).
//!
//! ```text
//! a packet applied: its bunches first, then its call bunches in order
//!   unreliable     decoded with the target's class and delivered, or dropped (the client lacks
//!                  the actor, or the call does not decode)
//!   reliable n     placed in the reliable window: n = expected + (low 16 bits − expected's) mod
//!                  2¹⁶, accepted while that is below MAX_RELIABLE_RPCS ahead; held until every
//!                  number before it arrived, then delivered in number order — once each: a
//!                  number delivered or held already, with the same bits, is the server's resend
//!                  of a call whose acknowledgement was lost (dropped)
//! ```
//!
//! **Forged calls.** Without packet authentication (a sealed session has it,
//! [`crate::session`]) a forged packet can carry a call, delivered like any — an event cannot be
//! taken back as a forged value is overwritten. What a forger must not do is make the client
//! drop one of the server's calls: a forged call under the number of a server's call still to
//! come would otherwise turn the real one into a "duplicate". So the window remembers a hash of
//! each number's bits (delivered: the last [`MAX_RELIABLE_RPCS`] numbers; held: with the call),
//! and a call whose number came with other bits is delivered too — the server's own call always
//! arrives, at the cost of the forger's being delivered beside it (which it is anyway). A number
//! holds at most two calls (the first and one other: more is forged twice over and dropped).
//!
//! A held call keeps its bits (at most a packet), not its decoded arguments, and is decoded when
//! its turn comes: the window holds at most 2 × [`MAX_RELIABLE_RPCS`] calls, whatever a forger
//! sends. A reliable call whose actor the client lacks when its turn comes (destroyed meanwhile)
//! uses its number and delivers nothing, as UE drops a call for a channel that is gone. Calls are
//! taken with [`ClientWorld::take_rpcs`].

use super::ClientWorld;
use crate::ids::NetGuid;
use crate::value::Value;
use crate::wire::rpc::{decode_call, RpcBunch, MAX_RELIABLE_RPCS};
use std::collections::BTreeMap;

/// A call the server made on an actor, as delivered.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcEvent {
    /// The actor called.
    pub guid: NetGuid,
    /// Its class.
    pub class: u32,
    /// The call's index in its class ([`crate::schema::ClassLayout::rpcs`]).
    pub rpc: usize,
    /// The call's name.
    pub name: String,
    /// Its arguments, one per parameter, in order.
    pub args: Vec<Value>,
    /// A reliable call.
    pub reliable: bool,
}

/// The client's reliable window and the calls delivered and not taken.
#[derive(Debug)]
pub(super) struct Rpcs {
    /// The next reliable number to deliver.
    expected: u32,
    /// Reliable calls numbered past `expected`, waiting for the ones before them (with the
    /// hash of their bits; a second entry when the number came with other bits).
    held: BTreeMap<u32, Vec<(u64, RpcBunch)>>,
    /// The hashes of the bits delivered under the last [`MAX_RELIABLE_RPCS`] numbers, by number
    /// modulo the window (two where a number came with two).
    done: Vec<[u64; 2]>,
    /// Delivered, not taken.
    delivered: Vec<RpcEvent>,
}

impl Default for Rpcs {
    fn default() -> Self {
        Rpcs {
            expected: 0,
            held: BTreeMap::new(),
            done: vec![[0; 2]; MAX_RELIABLE_RPCS as usize],
            delivered: Vec::new(),
        }
    }
}

/// A call's hash: its target and bits (never 0, which marks an empty slot of `done`).
fn call_hash(call: &RpcBunch) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (call.target, &call.call, call.bits).hash(&mut h);
    h.finish() | 1
}

impl ClientWorld {
    /// Calls delivered since the last call, in delivery order.
    pub fn take_rpcs(&mut self) -> Vec<RpcEvent> {
        std::mem::take(&mut self.rpcs.delivered)
    }

    /// One call bunch of an applied packet.
    pub(super) fn receive_rpc(&mut self, call: RpcBunch) {
        let Some(low) = call.seq else {
            self.deliver_rpc(&call, false);
            return;
        };
        let hash = call_hash(&call);
        let window = MAX_RELIABLE_RPCS;
        let ahead = u32::from(low.wrapping_sub(self.rpcs.expected as u16));
        if ahead >= window {
            // Behind: delivered already. The same bits are the server's resend; other bits mean
            // one of the two was forged, and this one is delivered too (see the module docs).
            let behind = u32::from((self.rpcs.expected as u16).wrapping_sub(low));
            let n = self.rpcs.expected.wrapping_sub(behind);
            let slot = &mut self.rpcs.done[(n % window) as usize];
            if behind <= window && slot[0] != 0 && !slot.contains(&hash) && slot[1] == 0 {
                slot[1] = hash;
                self.stats.rpcs_conflicts += 1;
                self.deliver_rpc(&call, true);
            } else {
                // A resend, or further ahead than an honest server goes (forged).
                self.stats.rpcs_stale += 1;
            }
            return;
        }
        let n = self.rpcs.expected.wrapping_add(ahead);
        let entry = self.rpcs.held.entry(n).or_default();
        if entry.iter().any(|&(h, _)| h == hash) || entry.len() >= 2 {
            self.stats.rpcs_stale += 1;
            return;
        }
        if !entry.is_empty() {
            self.stats.rpcs_conflicts += 1;
        }
        entry.push((hash, call));
        while let Some(calls) = self.rpcs.held.remove(&self.rpcs.expected) {
            let slot = &mut self.rpcs.done[(self.rpcs.expected % window) as usize];
            *slot = [calls[0].0, calls.get(1).map_or(0, |c| c.0)];
            self.rpcs.expected = self.rpcs.expected.wrapping_add(1);
            for (_, call) in calls {
                self.deliver_rpc(&call, true);
            }
        }
    }

    /// Decodes a call with its actor's class and delivers it, or counts it dropped.
    fn deliver_rpc(&mut self, call: &RpcBunch, reliable: bool) {
        let Some(&(class, _)) = self.actors.get(&call.target) else {
            self.stats.rpcs_dropped += 1;
            return;
        };
        let layout = &self.classes[class as usize].layout;
        match decode_call(layout, call) {
            Ok((rpc, args)) => {
                let name = layout.rpcs[rpc].name.clone();
                self.rpcs.delivered.push(RpcEvent { guid: call.target, class, rpc, name, args, reliable });
                self.stats.rpcs_delivered += 1;
            }
            Err(_) => self.stats.rpcs_dropped += 1,
        }
    }
}
