//! What the actor level decided for a connection's frame, as a team debugging its server reads
//! it (`--dump-frame`, `NetDriver::frame_decisions`) and as the UE-style reference decides it
//! too: the relevant set and the send order, each actor with its priority, what was done and the
//! bits it cost.

use crate::ids::{Frame, NetGuid};

/// What a connection did with one actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Replicated (maybe nothing was owed: `bits` is 0), opening its channel if `opened`.
    Replicated {
        /// This frame opened the channel.
        opened: bool,
    },
    /// Its channel was opened, and the actor replicated, for a call of the tick that found
    /// none (after a saturated frame, outside the budget: UE's `InternalProcessRemoteFunction`,
    /// [`crate::net::channels`]'s `calls.rs`). It stays a leftover.
    OpenedForCall,
    /// Its channel was closed: not relevant for the relevant timeout.
    Closed,
    /// Its channel was closed with reason TornOff (after this frame's replication of it, if it
    /// was recently relevant: the entry just before): the client keeps it.
    TornOff,
    /// Its channel was closed for dormancy (after this frame's replication of it, which has an
    /// entry of its own just before): the client keeps it.
    Dormant,
}

/// One actor in a connection's send order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendDecision {
    /// The actor.
    pub guid: NetGuid,
    /// Its priority key (`round(65536 × priority)`, max over the viewers).
    pub priority: u32,
    /// What was done.
    pub action: Action,
    /// Bits written for it (bunch headers, and packet headers of packets it started).
    pub bits: u32,
}

/// A connection's last frame, as the actor level decided it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameDecisions {
    /// The frame.
    pub frame: Frame,
    /// Heard from within the ready timeout (otherwise nothing was considered).
    pub ready: bool,
    /// Queued bits at the start of the frame, after the tick's allowance.
    pub queued_bits: f64,
    /// The due actors relevant to the viewers this frame, ascending.
    pub relevant: Vec<NetGuid>,
    /// What was done, in send order.
    pub sends: Vec<SendDecision>,
    /// The budget ran out before the candidates did.
    pub saturated: bool,
}
