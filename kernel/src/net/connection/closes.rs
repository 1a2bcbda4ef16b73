//! A connection's closes: those queued for its next packets, the channels this tick ended (a call
//! made on one while it was open still goes down it), and what the game's calls since the last
//! tick did to its channels ahead of the tick.

use super::PairState;
use crate::ids::NetGuid;
use crate::net::rpc::{note_close, Chan, Closing};
use crate::wire::open::CloseReason;

/// A close to send (or in flight): the actor and why its channel ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingClose {
    pub guid: NetGuid,
    pub reason: CloseReason,
}

impl PendingClose {
    /// The close of a destroyed (or no longer relevant) actor.
    pub fn destroyed(guid: NetGuid) -> PendingClose {
        PendingClose { guid, reason: CloseReason::Destroyed }
    }
}

/// A connection's closes: those queued for its next packets, and the channels this tick ended
/// — a call made on one while it was open still goes down it ([`crate::net::rpc`]). Every site
/// that ends an open channel says so here ([`Self::end`], or [`Self::note`] where it writes the
/// close itself or owes none); a close that ends nothing now — a lost one sent again, a dormant
/// copy's, a fast array's, a static actor's destruction told again — is only queued
/// ([`Self::push`]).
#[derive(Debug, Default)]
pub(crate) struct Closes {
    /// Closes to send, in order.
    pub queued: Vec<PendingClose>,
    /// The channels ended since this connection's calls were last fanned out — in this tick,
    /// before its calls — each with where a call stood with it before ([`note_close`]).
    pub ending: Closing,
}

impl Closes {
    /// The channel of `close.guid` ends (its pair was `state`), its close queued.
    pub fn end(&mut self, close: PendingClose, state: &PairState) {
        self.note(close.guid, state);
        self.queued.push(close);
    }

    /// The channel of `guid` ends (its pair was `state`); the caller writes its close (or none
    /// is owed: no packet carried the open).
    pub fn note(&mut self, guid: NetGuid, state: &PairState) {
        note_close(&mut self.ending, guid, state);
    }

    /// A packet carrying the open of channel `epoch` of the actor `names` picks out was
    /// delivered (not one sent before its channel opened). A channel of it a game call ended
    /// since the last tick — its row gone, its calls still to go at the tick — has its open
    /// acknowledged now: a reliable call made on it goes, as down the reference's channel,
    /// which lasts to its tick.
    pub fn open_delivered(&mut self, names: impl Fn(NetGuid) -> bool, epoch: u8) {
        for e in self.ending.iter_mut().filter(|e| e.epoch == epoch && names(e.guid)) {
            e.chan = Chan::Acked;
        }
    }

    /// The client asks for actor `guid` again (it lacks it): a channel of it a game call
    /// ended since the last tick with its open acknowledged has it no longer — as the
    /// reference's channel, which lasts to its tick, takes the request. Whether there was one.
    pub fn reopened(&mut self, guid: NetGuid) -> bool {
        let mut any = false;
        for e in self.ending.iter_mut().filter(|e| e.guid == guid && e.chan == Chan::Acked) {
            e.chan = Chan::Opened;
            any = true;
        }
        any
    }

    /// Queues a close that ends no channel now.
    pub fn push(&mut self, close: PendingClose) {
        self.queued.push(close);
    }

    /// Whether a close of `guid` waits to be written.
    pub fn is_queued(&self, guid: NetGuid) -> bool {
        self.queued.iter().any(|c| c.guid == guid)
    }
}

/// What the game's calls since the last tick did at once to a connection's channels, where the
/// reference's channels change at its tick (UE's, as its frame replicates): feedback arriving
/// meanwhile — a late report, a late or forged request — is judged by the channels as the
/// client knows them, as the reference judges it. Cleared as each tick ends; rarely more than a
/// few entries.
#[derive(Debug, Default)]
pub(crate) struct SinceTick {
    /// Sub-objects orphaned (their owner retired) whose copy the client holds — a channel whose
    /// open went, or held dormant. Their rows went at the call, but until the tick the channel
    /// is theirs as the owner's close will end it: a loss report of an earlier close of theirs
    /// finds the copy ([`Connection::holds_copy`]; reference sweep seeds 102924, 107182 with
    /// late feedback).
    pub orphan_copies: Vec<NetGuid>,
    /// Actors whose copy held dormant here a call woke (`set_net_dormancy`, a flush): their rows
    /// are channels again at once, but until a frame replicates them the client's copy is the
    /// dormant one, and a request to open one again is stale (reference sweep seed 121010 with
    /// stale reopens and late feedback).
    pub woken: Vec<NetGuid>,
    /// The game added the connection since the last tick: nothing was sent to it, so its client
    /// owns nothing it could call a Server function on (UE's client calls through actors the
    /// server replicated first, its PlayerController) — calls in a feedback now are a forger's,
    /// dropped unacknowledged, as by the reference, which meets the connection at its first
    /// tick (a helper's witness, `actor_level/between_ticks/`).
    pub joined: bool,
    /// Reopen requests looked up in what changed since the last tick (the woken copies, the
    /// channels calls ended, the slots retiring): at most [`Self::MAX_LOOKUPS`] a tick, so a
    /// flood of requests — every feedback datagram may carry 64, a duplicate too — costs a hash
    /// lookup each beyond, not a walk of those lists.
    lookups: u32,
}

impl SinceTick {
    /// Reopen requests a tick looks up in what changed since the last one (two feedbacks' worth).
    pub const MAX_LOOKUPS: u32 = 2 * crate::wire::feedback::MAX_REOPENS as u32;

    /// Whether one more reopen request may be looked up this tick (counting it).
    pub fn may_look(&mut self) -> bool {
        self.lookups = self.lookups.saturating_add(1);
        self.lookups <= Self::MAX_LOOKUPS
    }

    pub fn clear(&mut self) {
        self.orphan_copies.clear();
        self.woken.clear();
        self.joined = false;
        self.lookups = 0;
    }
}
