//! Remote procedure calls as the client receives them ([`crate::net::rpc`] sends them), and the
//! Server calls it makes ([`ClientWorld::call_server_rpc`]: they ride its feedback).
//!
//! ```text
//! a packet applied: its bunches first, then its call bunches in order
//!   unreliable     decoded with the target's class and delivered (an actor the same packet
//!                  closed: with the class it had), or dropped (the client lacks the actor, or
//!                  the call does not decode)
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
//! [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) numbered and unacknowledged, so an honest call is never more than that
//! ahead of the next number expected, nor a resend more than that behind.
//!
//! A call's target is looked up when the call arrives: a held call is delivered in its turn even
//! if a later packet destroyed its actor meanwhile (the server made it while the actor was
//! there; UE would have run it before the channel's close) — the game gets it after the
//! actor's `Destroyed` event. So is a reliable call whose actor the client closed (destroyed)
//! before the call came — its packet lost, the close's not: the server numbers a reliable call
//! only on a channel open and acknowledged, and UE's channel delivers its reliable bunches before
//! its close — with the class the client remembers for the closed GUID ([`super::closed`]; a
//! static actor's, or one forgotten past [`MAX_CLOSED`](super::MAX_CLOSED), is not kept). Any
//! other call naming an actor the client lacks when it arrives uses its number and delivers
//! nothing, so the stream never waits on a destroyed actor.
//!
//! A call the game made in the frame whose tick closed its actor's channel (a multicast, then
//! `TearOff`, `Destroy` or dormancy) comes after the close, in the same packet or a later one of
//! that frame ([`crate::net::rpc`]): the client applies the close (a torn-off or dormant copy
//! stays; a destroyed actor's `Destroyed` event), then delivers the call — a reliable one on a
//! destroyed actor as above, an unreliable one with the class the packet's close left in
//! [`super::closed`] if that very packet closed the actor. UE's client runs such a call before
//! the close; here it comes after it, once and in reliable order. Any other unreliable call on
//! an actor the client lacks is dropped, as UE drops one for a channel that is gone.
//!
//! **Forged calls.** Without packet authentication (a sealed session has it,
//! [`crate::session`]) a forged packet can carry a call, delivered like any — an event cannot be
//! taken back as a forged value is overwritten. What a forger must not do is make the client
//! drop one of the server's calls. So a reliable call is dropped only when its exact bits were
//! seen under its number: each number keeps the hash of its bits (held, with the call; delivered,
//! for the last [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) numbers), and a call whose number came with other bits is
//! delivered too — in its turn if the number is still held (two calls a number at most), at once
//! otherwise. A call further from the window than an honest server goes (forged calls delivered
//! in order can move the window past the server's numbers) is delivered at once too. A forger
//! can thus inject calls and disorder the server's, never silence them; with sealed sessions
//! neither. Memory stays bounded: at most 2 × [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) held calls, kept as bits (at
//! most a packet each) and decoded when their turn comes. Calls are taken with
//! [`ClientWorld::take_rpcs`].

use super::ClientWorld;
use crate::ids::NetGuid;
use crate::value::Value;
use crate::wire::rpc::{decode_call, encode_call, Arrival, ReliableWindow, RpcBunch};
use std::collections::VecDeque;

/// Most calls delivered and not taken ([`ClientWorld::take_rpcs`]): past it a call is dropped
/// and counted (a game takes them every frame; a forged packet carries a few hundred).
pub const MAX_UNTAKEN_RPCS: usize = 65_536;

/// Most reliable calls held for sub-objects the client set aside (a call on a sub-object whose
/// open waits for its owner is held until that open applies): past it a call is dropped and
/// counted in [`ClientStats::rpcs_dropped`](super::ClientStats::rpcs_dropped).
pub const MAX_HELD_RPCS: usize = 256;

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
    /// The server's reliable calls: held until their turn, each with its actor's class when it
    /// arrived (none: the client lacked it).
    window: ReliableWindow<Option<u32>>,
    /// Delivered, not taken.
    delivered: Vec<RpcEvent>,
    /// This client's Server calls: the next reliable number, the reliable ones the server has
    /// not acknowledged (by number), and the unreliable ones for the next feedback.
    next: u32,
    /// The next unreliable number.
    next_unreliable: u32,
    unacked: VecDeque<Outgoing>,
    unreliable: Vec<RpcBunch>,
    /// Feedback messages written: the clock of the reliable calls' resends.
    feedbacks: u32,
    /// The smoothed round trip, in feedbacks and eighths of one, from a reliable call's first
    /// feedback to the server's acknowledgement of it (none measured yet).
    round_trip: Option<u32>,
    /// Calls acknowledged in a row without a round trip timed (each one resent, so Karn's rule
    /// left it out): at [`UNTIMED_LIMIT`] the next is timed from its first feedback.
    untimed: u32,
    /// The acknowledged calls, newest last (at most [`MAX_RELIABLE_RPCS`] of them): an
    /// acknowledgement that says the server still lacks one (a forged one had retired it, or
    /// an older one came late) sends them again.
    ///
    /// [`MAX_RELIABLE_RPCS`]: crate::wire::rpc::MAX_RELIABLE_RPCS
    retired: VecDeque<RpcBunch>,
    /// The actors the packet being applied closed (destroyed): its unreliable calls on them are
    /// still delivered (the server sends a call of the frame that closes the channel after the
    /// close). Empty between packets.
    pub(super) closed_now: Vec<NetGuid>,
    /// Reliable calls, in order, on sub-objects whose open the client set aside (their owner's
    /// open was lost; `client::ignored`): the server counts the open acknowledged and numbers
    /// the calls, and UE's in-order channel would run each once the sub-object exists — each is
    /// delivered when its sub-object's open applies, dropped (and counted) if its record ends
    /// without one. At most [`MAX_HELD_RPCS`].
    held: Vec<RpcBunch>,
}

/// A reliable Server call the server has not acknowledged, and the feedbacks that carried it.
#[derive(Debug)]
struct Outgoing {
    call: RpcBunch,
    /// The first feedback that carried it (none: not sent yet), and the last.
    first: Option<u32>,
    last: u32,
    /// Sent more than once: its acknowledgement is not timed (Karn's rule).
    resent: bool,
}

/// Feedbacks at most between two sends of a reliable Server call the server has not
/// acknowledged (about a second at 30 frames a second), whatever round trip was measured.
pub const MAX_RESEND_GAP: u32 = 30;

/// Calls acknowledged in a row untimed after which one is timed from its first feedback anyway.
/// A round trip that grows past the resend gap has every call resent before its
/// acknowledgement comes, and Karn's rule would time none of them again: the estimate would stay
/// where it was for good (a helper's reading, session 56). Timed from its first feedback, such
/// a call gives the round trip — long when a copy was lost, never short. (TCP backs its timer
/// off instead; here that left a lossy link's resends up to the longest gap, and calls made in a
/// bot's last second at 30 % loss unacknowledged at its end.)
const UNTIMED_LIMIT: u32 = 8;

/// Most unreliable Server calls waiting for the next feedback.
pub const MAX_OUTGOING_CALLS: usize = 256;

/// Bits of Server calls one feedback carries at most (a kilobyte: the rest wait for the next
/// feedback).
pub const MAX_FEEDBACK_CALL_BITS: usize = 8 * 1024;

impl Rpcs {
    /// Feedbacks after which a reliable Server call the server has not acknowledged goes again:
    /// UE resends a reliable bunch when its packet is known lost; a feedback message has no
    /// acknowledgement of its own, so a call goes again once the server's has not come within
    /// a round trip and a half (and one feedback) of its last send — at least 2 feedbacks, at
    /// most [`MAX_RESEND_GAP`]; until a round trip is measured, in every feedback.
    fn resend_gap(&self) -> u32 {
        let Some(r) = self.round_trip else { return 1 };
        let rtt = r.div_ceil(8);
        (rtt + rtt / 2 + 1).clamp(2, MAX_RESEND_GAP)
    }
}

impl ClientWorld {
    /// Calls delivered since the last call, in delivery order.
    pub fn take_rpcs(&mut self) -> Vec<RpcEvent> {
        std::mem::take(&mut self.rpcs.delivered)
    }

    /// Calls Server procedure `rpc` of actor `guid` with `args` (one per declared parameter): it
    /// goes in the next feedback ([`Self::feedback`]) — a reliable one again whenever a packet
    /// of the server's has not acknowledged it within a round trip and a half (see
    /// [`Self::feedback`]), reliable calls numbered so the server runs each once, in call
    /// order. The server runs it only if this client's connection owns the actor (UE drops a
    /// Server RPC from any other). Refused: an actor the client lacks, a name its
    /// class does not declare as a Server call, arguments that do not fit, a call larger than
    /// [`MAX_CLIENT_CALL_BITS`](crate::wire::feedback::MAX_CLIENT_CALL_BITS), too many waiting
    /// ([`ClientError::TooManyCalls`](super::ClientError::TooManyCalls)).
    pub fn call_server_rpc(&mut self, guid: NetGuid, rpc: &str, args: &[Value]) -> Result<(), super::ClientError> {
        use super::ClientError;
        let &(class, _) = self.actors.get(&guid).ok_or(ClientError::UnknownActor(guid))?;
        let layout = &self.classes[class as usize].layout;
        let index = layout
            .rpc_index(rpc)
            .filter(|&i| layout.rpcs[i].target == crate::schema::RpcTarget::Server)
            .ok_or_else(|| ClientError::UnknownServerRpc(rpc.to_string()))?;
        let reliable = layout.rpcs[index].reliable;
        let bits = encode_call(layout, index, args).map_err(ClientError::RpcArgs)?;
        if bits.len_bits() > crate::wire::feedback::MAX_CLIENT_CALL_BITS {
            return Err(ClientError::RpcTooLarge(bits.len_bits()));
        }
        let out = &mut self.rpcs;
        let full = if reliable {
            out.unacked.len() >= crate::wire::rpc::MAX_RELIABLE_RPCS as usize
        } else {
            out.unreliable.len() >= MAX_OUTGOING_CALLS
        };
        if full {
            return Err(ClientError::TooManyCalls);
        }
        let counter = if reliable { &mut out.next } else { &mut out.next_unreliable };
        let seq = Some(*counter as u16);
        *counter = counter.wrapping_add(1);
        let call = RpcBunch { target: guid, seq, bits: bits.len_bits(), call: bits.into_bytes(), reliable };
        if reliable {
            out.unacked.push_back(Outgoing { call, first: None, last: 0, resent: false });
        } else {
            out.unreliable.push(call);
        }
        self.unreported = true;
        Ok(())
    }

    /// The Server calls for the next feedback: the reliable ones not acknowledged that are due
    /// (never sent, or sent [`Rpcs::resend_gap`] feedbacks ago or more; oldest first), then the
    /// unreliable ones (taken), within [`MAX_FEEDBACK_CALL_BITS`] and
    /// [`MAX_FEEDBACK_CALLS`](crate::wire::feedback::MAX_FEEDBACK_CALLS); what does not fit
    /// waits for the next.
    pub(super) fn calls_for_feedback(&mut self) -> (Vec<RpcBunch>, usize) {
        use crate::wire::feedback::{feedback_call_bits, MAX_FEEDBACK_CALLS};
        let out = &mut self.rpcs;
        let (now, gap) = (out.feedbacks, out.resend_gap());
        out.feedbacks = now.wrapping_add(1);
        let (mut calls, mut bits, mut full) = (Vec::new(), 0, false);
        let mut room = |c: &RpcBunch, n: usize| {
            let b = feedback_call_bits(c);
            let fits = n < MAX_FEEDBACK_CALLS && (n == 0 || bits + b <= MAX_FEEDBACK_CALL_BITS);
            if fits {
                bits += b;
            }
            fits
        };
        for c in &mut out.unacked {
            if c.first.is_some() && now.wrapping_sub(c.last) < gap {
                continue;
            }
            if !room(&c.call, calls.len()) {
                full = true;
                break;
            }
            calls.push(c.call.clone());
            if c.first.is_some() || c.resent {
                self.stats.server_calls_resent += 1;
                c.resent = true;
            }
            c.first.get_or_insert(now);
            c.last = now;
        }
        if full {
            return (calls, out.unreliable.len());
        }
        let mut taken = 0;
        for c in &out.unreliable {
            if !room(c, calls.len()) {
                break;
            }
            calls.push(c.clone());
            taken += 1;
        }
        out.unreliable.drain(..taken);
        (calls, out.unreliable.len())
    }

    /// The server's acknowledgement of this client's reliable calls in an applied packet:
    /// `next`, the low 16 bits of the first number it lacks. One that acknowledges more than
    /// was made is ignored (forged). One a forger writes within what was made is believed — the
    /// calls it names stop going — but not for good: the acknowledged calls are kept (the last
    /// [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS)), and the server's own
    /// acknowledgement, naming a number it still lacks, sends them again. (Before session 56 a
    /// forged acknowledgement of calls the server never got left its window waiting for them
    /// for good, every later reliable call held there, until the client refused new ones.) A
    /// forger can delay a plain session's calls, never silence them; a sealed session rules
    /// it out.
    pub(super) fn calls_acked(&mut self, next: u16) {
        let out = &mut self.rpcs;
        let first = out.next.wrapping_sub(out.unacked.len() as u32) as u16;
        let ahead = next.wrapping_sub(first) as i16;
        if ahead < 0 {
            // Calls acknowledged before that the server lacks: due again at once, not timed.
            let back = usize::from(ahead.unsigned_abs());
            if back <= out.retired.len() {
                for call in out.retired.drain(out.retired.len() - back..).rev() {
                    out.unacked.push_front(Outgoing { call, first: None, last: 0, resent: true });
                }
                self.stats.server_calls_restored += back as u64;
            }
            return;
        }
        let done = ahead as usize;
        if done <= out.unacked.len() {
            let (now, mut round_trip) = (out.feedbacks, out.round_trip);
            for c in out.unacked.drain(..done) {
                // Timed only for a call sent once (Karn's rule: a resend's acknowledgement
                // cannot be told from the first copy's, and timing from the first would take a
                // lost copy's wait for the round trip) — but the first measure, which every
                // copy of a call sent in every feedback would otherwise never give, and one
                // after UNTIMED_LIMIT untimed, are timed from the call's first feedback: long
                // under loss, never short.
                let timed = c.first.filter(|_| !c.resent || round_trip.is_none() || out.untimed >= UNTIMED_LIMIT);
                out.retired.push_back(c.call);
                let Some(sent) = timed else {
                    out.untimed += 1;
                    continue;
                };
                let sample = now.wrapping_sub(sent).clamp(1, MAX_RESEND_GAP);
                round_trip = Some(round_trip.map_or(8 * sample, |r| r - r / 8 + sample));
                out.untimed = 0;
            }
            out.round_trip = round_trip;
            let keep = crate::wire::rpc::MAX_RELIABLE_RPCS as usize;
            if out.retired.len() > keep {
                out.retired.drain(..out.retired.len() - keep);
            }
        }
    }

    /// Reliable Server calls the server has not acknowledged.
    pub fn server_calls_unacknowledged(&self) -> usize {
        self.rpcs.unacked.len()
    }

    /// The smoothed round trip of this client's reliable Server calls, in feedbacks (from a
    /// call's first feedback to the server packet acknowledging it): what their resends wait
    /// for. `None` until a call was acknowledged.
    pub fn server_calls_round_trip(&self) -> Option<f64> {
        self.rpcs.round_trip.map(|r| f64::from(r) / 8.0)
    }

    /// Whether Server calls wait to go or for the server's acknowledgement.
    pub(super) fn server_calls_waiting(&self) -> bool {
        !self.rpcs.unacked.is_empty() || !self.rpcs.unreliable.is_empty()
    }

    /// One call bunch of an applied packet (or of a late one whose number came with other
    /// bytes: its reliable calls).
    pub(super) fn receive_rpc(&mut self, call: RpcBunch) {
        let class = self.actors.get(&call.target).map(|a| a.0);
        if !call.reliable {
            // An unreliable call on an actor this very packet closed: the server made it while
            // the channel was open (it writes a call of the frame that closes a channel after
            // the close) and UE's client would have run it before the close — delivered with
            // the class the actor had. An actor closed by an earlier packet: dropped, as UE drops
            // a call for a channel that is gone.
            let closed_now = || match self.closed.get(call.target) {
                Some(super::closed::Was::Actor(c)) if self.rpcs.closed_now.contains(&call.target) => Some(c),
                _ => None,
            };
            let class = class.or_else(closed_now);
            self.deliver_rpc(&call, class, false);
            return;
        }
        // A reliable call whose actor this client closed (destroyed) is one the server numbered
        // while the channel was open and acknowledged — it numbers none on a closed channel —
        // whose packet was lost and whose close overtook its resend. UE sends both down the
        // channel in reliable order, so the client runs the call before the close: it is
        // delivered with the class the actor had (after its `Destroyed` event, as a held call
        // is). Dropped, a reliable call was lost for good by the order of two packets (a review,
        // session 66: `a_reliable_call_lost_before_its_actors_relevancy_close_is_still_delivered`).
        let class = class.or_else(|| match self.closed.get(call.target) {
            Some(super::closed::Was::Actor(c)) => Some(c),
            _ => None,
        });
        let mut window = std::mem::take(&mut self.rpcs.window);
        match window.accept(call, class, |call, class| self.deliver_rpc(&call, class, true)) {
            Arrival::InOrder => {}
            Arrival::Stale => self.stats.rpcs_stale += 1,
            Arrival::Conflict => self.stats.rpcs_conflicts += 1,
        }
        self.rpcs.window = window;
    }

    /// Decodes a call with `class`, its actor's when it arrived, and delivers it, or counts it
    /// dropped.
    fn deliver_rpc(&mut self, call: &RpcBunch, class: Option<u32>, reliable: bool) {
        // A reliable call held in the window since before its actor came (a sub-object set
        // aside, say) goes with the class the actor has now.
        let class = class.or_else(|| reliable.then(|| self.actors.get(&call.target).map(|a| a.0)).flatten());
        let Some(class) = class else {
            // A reliable call on a sub-object set aside: held for its open (`Rpcs::held`).
            if reliable && self.ignored.asks(call.target) && self.rpcs.held.len() < MAX_HELD_RPCS {
                self.rpcs.held.push(call.clone());
                return;
            }
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

    /// Offers the held calls again, in order (`Rpcs::held`): [`Self::deliver_rpc`] delivers
    /// those whose sub-object the packet just applied opened, holds those still set aside, and
    /// drops those whose record ended without an open.
    pub(super) fn release_held_rpcs(&mut self) {
        for call in std::mem::take(&mut self.rpcs.held) {
            self.deliver_rpc(&call, None, true);
        }
    }
}
