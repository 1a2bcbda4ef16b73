//! Remote procedure calls as the client receives them ([`crate::net`]'s `rpc` sends them).
//!
//! ```text
//! a packet applied: its bunches first, then its call bunches in order
//!   unreliable     decoded with the target's class and delivered, or dropped (the client lacks
//!                  the actor, or the call does not decode)
//!   reliable n     placed in the reliable window: n = expected + (low 16 bits − expected's) mod
//!                  2¹⁶, accepted while that is below MAX_RELIABLE_RPCS ahead; held until every
//!                  number before it arrived, then delivered in number order — once each (a number
//!                  already delivered or held is a duplicate: the server's resend of a call whose
//!                  acknowledgement was lost)
//! ```
//!
//! A held call keeps its bits (at most a packet), not its decoded arguments, and is decoded when
//! its turn comes: the window holds at most [`MAX_RELIABLE_RPCS`] of them, a few megabytes at
//! worst, whatever a forger sends. A reliable call whose actor the client lacks when its turn
//! comes (destroyed meanwhile) uses its number and delivers nothing, as UE drops a call for a
//! channel that is gone. Calls are taken with [`ClientWorld::take_rpcs`].

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
#[derive(Debug, Default)]
pub(super) struct Rpcs {
    /// The next reliable number to deliver.
    expected: u32,
    /// Reliable calls numbered past `expected`, waiting for the ones before them.
    held: BTreeMap<u32, RpcBunch>,
    /// Delivered, not taken.
    delivered: Vec<RpcEvent>,
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
        let ahead = u32::from(low.wrapping_sub(self.rpcs.expected as u16));
        if ahead >= MAX_RELIABLE_RPCS {
            // Delivered before (its acknowledgement was lost), or further than an honest server
            // goes: forged.
            self.stats.rpcs_stale += 1;
            return;
        }
        let n = self.rpcs.expected.wrapping_add(ahead);
        if self.rpcs.held.contains_key(&n) {
            self.stats.rpcs_stale += 1;
            return;
        }
        self.rpcs.held.insert(n, call);
        while let Some(next) = self.rpcs.held.remove(&self.rpcs.expected) {
            self.rpcs.expected = self.rpcs.expected.wrapping_add(1);
            self.deliver_rpc(&next, true);
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
