//! Remote procedure calls as the client receives them ([`crate::net`]'s `rpc` sends them).
//!
//! ```text
//! a packet applied: its bunches first, then its call bunches in order
//!   unreliable     decoded with the target's class and delivered, or dropped (the client lacks
//!                  the actor, or the call does not decode)
//!   reliable n     n = expected + (low 16 bits − expected's) mod 2¹⁶:
//!     within MAX_RELIABLE_RPCS ahead   held until every number before it arrived, then
//!                                      delivered in number order
//!     seen with the same bits          the server's resend (a lost acknowledgement): dropped
//!     anything else                    delivered at once (see "Forged calls")
//! ```
//!
//! The server numbers a connection's reliable calls as it sends them — each actor's in call
//! order, UE's per-channel order; across actors in call order but for a call on an actor whose
//! open the client has not acknowledged yet, numbered when it is — and never has more than
//! [`MAX_RELIABLE_RPCS`] numbered and unacknowledged, so an honest call is never more than that
//! ahead of the next number expected, nor a resend more than that behind.
//!
//! A call's target is looked up when the call arrives: a held call is delivered in its turn even
//! if a later packet destroyed its actor meanwhile (the server made it while the actor was
//! there; UE would have run it before the channel's close) — the game gets it after the
//! actor's `Destroyed` event. A call naming an actor the client lacks when it arrives (its
//! channel is gone) uses its number and delivers nothing, as UE drops a call for a channel that
//! is gone, so the stream never waits on a destroyed actor.
//!
//! **Forged calls.** Without packet authentication (a sealed session has it,
//! [`crate::session`]) a forged packet can carry a call, delivered like any — an event cannot be
//! taken back as a forged value is overwritten. What a forger must not do is make the client
//! drop one of the server's calls. So a reliable call is dropped only when its exact bits were
//! seen under its number: each number keeps the hash of its bits (held, with the call; delivered,
//! for the last [`MAX_RELIABLE_RPCS`] numbers), and a call whose number came with other bits is
//! delivered too — in its turn if the number is still held (two calls a number at most), at once
//! otherwise. A call further from the window than an honest server goes (forged calls delivered
//! in order can move the window past the server's numbers) is delivered at once too. A forger
//! can thus inject calls and disorder the server's, never silence them; with sealed sessions
//! neither. Memory stays bounded: at most 2 × [`MAX_RELIABLE_RPCS`] held calls, kept as bits (at
//! most a packet each) and decoded when their turn comes. Calls are taken with
//! [`ClientWorld::take_rpcs`].

use super::ClientWorld;
use crate::ids::NetGuid;
use crate::value::Value;
use crate::wire::rpc::{decode_call, RpcBunch, MAX_RELIABLE_RPCS};
use std::collections::BTreeMap;

/// Most calls delivered and not taken ([`ClientWorld::take_rpcs`]): past it a call is dropped
/// and counted (a game takes them every frame; a forged packet carries a few hundred).
pub const MAX_UNTAKEN_RPCS: usize = 65_536;

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
    /// Reliable calls numbered past `expected`, waiting for the ones before them: the hash of
    /// their bits, the call, and its actor's class when it arrived (none: the client lacked it).
    held: BTreeMap<u32, Vec<(u64, RpcBunch, Option<u32>)>>,
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

    /// One call bunch of an applied packet (or of a late one whose number came with other
    /// bytes: its reliable calls).
    pub(super) fn receive_rpc(&mut self, call: RpcBunch) {
        let class = self.actors.get(&call.target).map(|a| a.0);
        let Some(low) = call.seq else {
            self.deliver_rpc(&call, class, false);
            return;
        };
        let hash = call_hash(&call);
        let window = MAX_RELIABLE_RPCS;
        let ahead = u32::from(low.wrapping_sub(self.rpcs.expected as u16));
        if ahead < window {
            let n = self.rpcs.expected.wrapping_add(ahead);
            let entry = self.rpcs.held.entry(n).or_default();
            if entry.iter().any(|&(h, _, _)| h == hash) {
                self.stats.rpcs_stale += 1;
                return;
            }
            if !entry.is_empty() {
                self.stats.rpcs_conflicts += 1;
            }
            if entry.len() >= 2 {
                // Forged twice over: delivered now rather than kept (memory stays bounded).
                self.deliver_rpc(&call, class, true);
                return;
            }
            entry.push((hash, call, class));
            while let Some(calls) = self.rpcs.held.remove(&self.rpcs.expected) {
                let slot = &mut self.rpcs.done[(self.rpcs.expected % window) as usize];
                *slot = [calls[0].0, calls.get(1).map_or(0, |c| c.0)];
                self.rpcs.expected = self.rpcs.expected.wrapping_add(1);
                for (_, call, class) in calls {
                    self.deliver_rpc(&call, class, true);
                }
            }
            return;
        }
        let behind = u32::from((self.rpcs.expected as u16).wrapping_sub(low));
        if behind <= window {
            let n = self.rpcs.expected.wrapping_sub(behind);
            let slot = &mut self.rpcs.done[(n % window) as usize];
            if slot.contains(&hash) {
                // The server's resend of a call delivered (its acknowledgement was lost).
                self.stats.rpcs_stale += 1;
                return;
            }
            if slot[0] != 0 && slot[1] == 0 {
                slot[1] = hash;
            }
        }
        // Other bits under a delivered number, or further than an honest server goes: one of
        // the calls was forged, and this one may be the server's (see the module docs).
        self.stats.rpcs_conflicts += 1;
        self.deliver_rpc(&call, class, true);
    }

    /// Decodes a call with `class`, its actor's when it arrived, and delivers it, or counts it
    /// dropped.
    fn deliver_rpc(&mut self, call: &RpcBunch, class: Option<u32>, reliable: bool) {
        let Some(class) = class else {
            self.stats.rpcs_dropped += 1;
            return;
        };
        let layout = &self.classes[class as usize].layout;
        if self.rpcs.delivered.len() >= MAX_UNTAKEN_RPCS {
            self.stats.rpcs_dropped += 1;
            return;
        }
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
