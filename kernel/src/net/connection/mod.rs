//! One client as the server sees it: the 16-byte state kept per (connection, actor) pair, the
//! pairs waiting for attention, the closes to send, and the connection's packets and reliability.
//!
//! [`PairState`] is all a connection keeps per actor: where its catch-up stands (the frame it last
//! sent), what to resend after a NAK, and channel flags — 16 bytes, Iris's figure. A pair that
//! needs sending although its actor did not change this frame (an open, a resend, a property
//! that became active) is *pending*: its flag is set and it sits once in the connection's pending list.

use super::budget::Budget;
use super::channels::FrameDecisions;
use super::pairs::Pairs;
use super::relevancy::Viewer;
use super::reliability::Reliability;
use crate::ids::{ConnectionId, Frame, LeafMask, NetGuid, Seq};
use crate::wire::packet::PacketWriter;
use crate::wire::BitWriter;

mod closes;
pub(crate) use closes::{Closes, PendingClose, SinceTick};

/// Bits of [`PairState::flags`].
pub mod pair {
    /// A bunch carrying this actor's channel open has been sent since the last loss of one.
    pub const OPEN_SENT: u8 = 1;
    /// A packet carrying the open was acknowledged: the client has the actor.
    pub const OPEN_ACKED: u8 = 2;
    /// The pair is queued in its connection's pending list.
    pub const PENDING: u8 = 4;
    /// Some packet carried this actor's open: the client may have it, so its end needs a close
    /// (kept even when that packet is later lost, as another may still deliver the open).
    pub const EVER_OPENED: u8 = 8;
    /// The actor level opened a channel for this pair (it was relevant when processed); pairs
    /// without it are a frame's scratch rows.
    pub const CHANNEL: u8 = 16;
    /// The channel is closed for dormancy: the client keeps the actor as last acknowledged, the
    /// row remembers what it has (`sent_through`), and nothing is sent until the actor wakes
    /// or is flushed.
    pub const DORMANT: u8 = 32;
    /// Woken from dormancy and not replicated since: UE closed the channel when the actor went
    /// dormant, so until it is sent again it ranks as an actor without one (T =
    /// `SpawnPrioritySeconds`, however long it slept or waits).
    pub const WOKEN: u8 = 64;
    /// The actor level closed this channel with reason TornOff: the client keeps the actor, so
    /// its sub-objects still have their owner there. The row goes at the frame's end — unless a
    /// sub-object's last update waits for the window (the connection's `held_torn`): then it
    /// stays, out of the candidates, until the owner's tear-off ends.
    pub const TORN: u8 = 128;
}

/// What one connection keeps for one actor: 16 bytes (all zero: a pair that never sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Zeroable)]
#[repr(C)]
pub struct PairState {
    /// Leaves whose packet was lost: their current value is sent next.
    pub resend: LeafMask,
    /// The frame this pair last sent; everything that changed up to it was sent (0: never).
    pub sent_through: Frame,
    /// [`pair`] bits.
    pub flags: u8,
    /// Which channel of this pair this is (a connection numbers the channels it opens, wrapping):
    /// a late acknowledgement of an earlier channel's open does not acknowledge this one's.
    pub epoch: u8,
    /// The low 16 bits of the sequence number of the newest packet that carries a bunch of this
    /// pair: the pair has a bunch whose fate is unknown exactly when that packet is still in
    /// flight (the connection's reliability state tells: `Reliability::carries`), and an actor
    /// goes dormant for a connection only when it is not and nothing is owed. Kept by the actor
    /// level, whose channels may go dormant, as it writes; a feedback never touches it, so a
    /// delivered bunch costs its pair nothing. Per-slot pairs (no dormancy) leave it at 0.
    pub last_packet: u16,
}

const _: () = assert!(std::mem::size_of::<PairState>() == 16);

/// Counters of one connection, for monitoring (see [`super::NetDriver::connection_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Bytes of packets sent (keep-alives and repeats included).
    pub bytes_sent: u64,
    /// Packets sent (keep-alives and repeats included).
    pub packets_sent: u64,
    /// Packets the client reported received.
    pub packets_acked: u64,
    /// Packets the client reported missing (their content was queued again).
    pub packets_lost: u64,
    /// Empty packets sent so a quiet connection's losses come to light.
    pub keep_alives: u64,
    /// Packets sent again byte for byte because the sequence window was full.
    pub repeats: u64,
    /// Feedback applied.
    pub feedback_applied: u64,
    /// Feedback about nothing new (duplicated, reordered or repeated): ignored.
    pub feedback_stale: u64,
    /// Feedback naming a packet never sent: ignored.
    pub feedback_forged: u64,
    /// Feedback whose newest packet is up to `ACK_WINDOW` past the newest one sent — its client
    /// accepted a forged packet numbered ahead of the server: the packets sent were settled by
    /// what it says of them (and counted in `feedback_applied` too).
    pub feedback_ahead: u64,
    /// Feedback that did not decode: refused.
    pub feedback_malformed: u64,
    /// Requests to open an actor again that were honoured.
    pub reopens_honoured: u64,
    /// Requests to open an actor again that were ignored (unknown actor, or its open is not
    /// acknowledged yet, so one is already on its way).
    pub reopens_ignored: u64,
    /// Frames in which the connection could start no packet because the window was full.
    pub window_full_frames: u64,
    /// Leaf values owed again because a packet carrying them was lost (UE resends current
    /// values, not old bytes: each goes out with the actor's next bunch). Counted by leaf group
    /// (`schema::groups`): a leaf each in a class of at most 64 leaves.
    pub leaves_resent: u64,
    /// Packets in flight (sent, fate unknown) when the counters were read.
    pub packets_in_flight: u64,
    /// Call bunches written ([`super::rpc`]), reliable ones each time they went.
    pub rpcs_sent: u64,
    /// Reliable calls written again because a packet carrying them was lost.
    pub rpcs_resent: u64,
    /// Calls for this connection that did not go: a reliable call whose channel closed before
    /// its open was acknowledged, an unreliable call on a saturated connection, a full window
    /// or a connection not ready.
    pub rpcs_dropped: u64,
    /// Calls not for this connection when the tick fanned them out: their actor had no open
    /// channel here (not relevant to it — a Multicast call on an actor it does not see —
    /// dormant, torn off, or its open not gone yet) and the frame opened none for it (a
    /// saturated frame opens one for a reliable call or a multicast on a relevant leftover, as
    /// UE opens a channel for a call: `crate::net::Action::OpenedForCall`).
    pub rpcs_without_channel: u64,
    /// Channels a saturated frame opened for a call that found none (UE's
    /// `InternalProcessRemoteFunction`; `crate::net::Action::OpenedForCall`): the actor's open
    /// written outside the budget.
    pub channels_opened_for_calls: u64,
    /// Reliable calls that found [`crate::wire::rpc::MAX_RELIABLE_RPCS`] waiting or in flight
    /// here, and were dropped. Under [`super::ReliableOverflow::Close`] (the default, UE's way)
    /// the first ends the connection at the end of its tick ([`super::FailedConnection`]).
    pub rpcs_overflowed: u64,
    /// The client's Server calls delivered to the game ([`super::NetDriver::take_server_rpcs`]).
    pub server_rpcs_delivered: u64,
    /// The client's Server calls dropped: on an actor this connection did not own when the call
    /// arrived or when its turn came, torn off, or gone; made before the server sent it
    /// anything (in a feedback that arrived before the connection's first tick); a call that does not decode, is not a
    /// Server call of the actor's class or not of its declared reliability; an unreliable one
    /// while [`super::rpc::MAX_UNTAKEN_SERVER_RPCS`] wait to be taken.
    pub server_rpcs_refused: u64,
    /// The client's Server calls received again (reliable: a resend, the acknowledgement not
    /// heard yet; unreliable: a repeated feedback datagram).
    pub server_rpcs_stale: u64,
    /// The client's reliable Server calls not taken for want of room (the game has not taken
    /// [`super::rpc::MAX_UNTAKEN_SERVER_RPCS`] of this connection's): not acknowledged, the
    /// client sends them again.
    pub server_rpcs_no_room: u64,
}

/// The server's state for one client.
pub(crate) struct Connection {
    /// The id the game knows it by (its slot in the driver's table may have served another).
    pub id: ConnectionId,
    pub replay: bool,
    /// The game's net condition groups it is in ([`super::NetDriver::set_connection_net_groups`]).
    pub net_groups: super::NetGroups,
    /// How many times `net_groups` changed (a fast array's quiet record holds the count it saw).
    pub groups_changed: u32,
    /// Removed by the game: keeps its id, holds nothing, sends nothing.
    pub removed: bool,
    /// Per-actor state ([`Pairs`]: dense, or only the channels that exist).
    pub pairs: Pairs,
    /// (class, slot) of pairs with the PENDING flag.
    pub pending: Vec<(u32, u32)>,
    /// Closes to send, and the channels this tick ended.
    pub closes: Closes,
    /// Static objects referenced by what was sent, whose export the client acknowledged /
    /// whose export is in flight / whose export was lost (written again at the next frame).
    pub exported: crate::ids::GuidSet,
    pub exporting: crate::ids::GuidSet,
    pub exports: Vec<NetGuid>,
    pub rel: Reliability,
    /// This frame's packets, back to back and byte-aligned, written in place;
    /// `out_ends[i]` is the byte where packet `i` ends.
    pub out: BitWriter,
    pub out_ends: Vec<usize>,
    pub writer: PacketWriter,
    pub stats: ConnectionStats,
    /// The actor level's view of the client: where it looks from (its split-screen children's
    /// viewers too), its bandwidth, when it was last heard from (server seconds), and the last
    /// frame's decisions when they are recorded.
    pub viewers: Vec<Viewer>,
    pub budget: Budget,
    pub heard: f64,
    pub decisions: Option<Box<FrameDecisions>>,
    /// The actor level's buffers, reused from frame to frame.
    pub scratch: Box<super::channels::Scratch>,
    /// Look for sleeping actors near the viewers at the next frame (a new connection does).
    pub dormant_look: bool,
    /// The sublevels its client has loaded ([`super::sublevels`]).
    pub sublevels: super::sublevels::ConnSublevels,
    /// The epoch the next channel row gets.
    pub next_epoch: u8,
    /// Channels opened while packets sent before them were in flight ([`OpenedAfter`]).
    pub opened_after: OpenedAfter,
    /// A feedback's settled entries, kept to be applied together (reused; no larger than the
    /// entries in flight).
    pub settled: Vec<super::reliability::SettledEntry>,
    /// Fast arrays with nothing to write here until something changes (skipped unlocked).
    pub quiet: super::fastarrays::QuietArrays,
    /// Pair keys of owners closed TornOff here whose rows stay ([`pair::TORN`]): a sub-object's
    /// last update, deferred by the full window right after the owner's close went out, still
    /// finds its owner on the client when it goes. Sorted; rarely more than a few.
    pub held_torn: Vec<u64>,
    /// UE's `SentTemporaries`: the temporary actors (`NetSettings::net_temporary`) whose open
    /// went here, kept until the actor is gone — past the end of their channel (a sublevel the
    /// client unloaded, an owner-only owner given up), so that none opens again here. Empty in
    /// a world without temporaries.
    pub sent_temporaries: crate::ids::GuidSet,
    /// What the game's calls since the last tick did to its channels ahead of the tick.
    pub since_tick: SinceTick,
    /// Lost leaves planning found inactive here (class, slot, leaves), recorded with the
    /// driver's inactive leaves after the frame ([`super::roles`]).
    pub parked: Vec<(u32, u32, crate::ids::LeafMask)>,
    /// Leaves of lost opens not delivered since ([`UnsentInitial`]).
    pub unsent_initial: UnsentInitial,
    /// What its client was told of its roles, where not "simulated, nothing owed"
    /// ([`super::proxy_roles`]).
    pub roles: super::proxy_roles::ProxyRoles,
    /// Leaves a full window held back since the last [`std::mem::take`] (the writer owes them
    /// to the pair as well): read by the UE-style reference, which keeps its own channels.
    pub held_back: crate::ids::LeafMask,
    /// Reliable calls waiting for their channel or not acknowledged ([`super::rpc`]).
    pub rpcs: super::rpc::ConnRpcs,
}

/// The channels of a connection opened while packets sent before them were in flight: pair
/// key → the newest packet finished before the open (the one being written then, if any, holds
/// no bunch of the pair's earlier channels: a frame writes a pair at most once, and a channel
/// closed after its bunch of a frame does not open again in that frame). A settled bunch of the pair in that packet or an earlier one
/// is an earlier channel's: it neither acknowledges nor loses this one's open
/// (UE acknowledges a channel's own bunches). The 8-bit epoch alone is not enough: the
/// connection numbers every channel it opens, so 256 opens while a silent client held back the
/// acknowledgement of an earlier channel's open let that late acknowledgement acknowledge the
/// new channel, whose open was lost — and the client got plain bunches for an actor it did not
/// have (seed 316816 of the random worlds, 1 connection at 30 % loss with dormancy and
/// sublevels). An entry goes once the client has reported its packet (every bunch still to
/// settle is newer then), so the map holds the last few frames' opens — none of a row's 16
/// bytes, nothing in a steady state without opens.
#[derive(Default)]
pub(crate) struct OpenedAfter(
    std::collections::HashMap<u64, Seq, std::hash::BuildHasherDefault<crate::ids::GuidHasher>>,
);

impl OpenedAfter {
    /// Pair `key`'s channel opens; `newest` is the newest packet finished so far, `acked` the
    /// newest the client reported (nothing in flight before the open: nothing to remember).
    pub fn opened(&mut self, key: u64, newest: Seq, acked: Seq) {
        if newest.ahead_of(acked) > 0 {
            self.0.insert(key, newest);
        } else if !self.0.is_empty() {
            self.0.remove(&key);
        }
    }

    /// Whether a bunch of pair `key` in packet `seq` went before the pair's channel opened.
    pub fn earlier(&self, key: u64, seq: Seq) -> bool {
        !self.0.is_empty() && self.0.get(&key).is_some_and(|&o| seq.ahead_of(o) <= 0)
    }

    /// The client has reported every packet up to `acked`: the opens after them go.
    pub fn settled_through(&mut self, acked: Seq) {
        if !self.0.is_empty() {
            self.0.retain(|_, o| o.ahead_of(acked) > 0);
        }
    }
}

/// Per pair, the leaves a lost bunch carrying the channel's open held that no delivered bunch
/// has carried since: the client has no value of them on this channel, so they stay owed as
/// initial values whatever roles change meanwhile — an InitialOrOwner value whose open was lost
/// is owed to its owner turned non-owner, where one lost later (an owner's update) is not
/// (`plan::plan_pair`). Sorted by (pair key, channel epoch): a pair's earlier channel may still
/// have bunches in flight when its new channel's open is held back, and what settles of one
/// never touches the other's. Empty unless opens lose something. Kept as packets settle, in
/// order ([`super::reliability::apply_settled`]), and as a full window holds back an open's
/// leaves; an entry goes when delivered bunches of its channel have carried its leaves, or with
/// its channel (`drop_pair`, the actor level's rows).
#[derive(Default)]
pub(crate) struct UnsentInitial(Vec<(u64, u8, LeafMask)>);

impl UnsentInitial {
    fn find(&self, key: u64, epoch: u8) -> Result<usize, usize> {
        self.0.binary_search_by_key(&(key, epoch), |e| (e.0, e.1))
    }

    /// A bunch of the pair's channel `epoch` that sent its open, with `leaves`, was lost (or a
    /// full window held back those leaves of it); `initial_only`: the class's leaves that only
    /// initial values bring ([`super::condition::ActiveLeaves::initial_only`]), the only ones
    /// kept.
    pub fn lost_open(&mut self, key: u64, epoch: u8, leaves: LeafMask, initial_only: LeafMask) {
        let leaves = leaves & initial_only;
        if leaves.is_empty() {
            return;
        }
        match self.find(key, epoch) {
            Ok(i) => self.0[i].2 |= leaves,
            Err(i) => self.0.insert(i, (key, epoch, leaves)),
        }
    }

    /// A bunch of the pair's channel `epoch` with `leaves` was delivered.
    pub fn delivered(&mut self, key: u64, epoch: u8, leaves: LeafMask) {
        if let Ok(i) = self.find(key, epoch) {
            self.0[i].2 &= !leaves;
            if self.0[i].2.is_empty() {
                self.0.remove(i);
            }
        }
    }

    /// The leaves of the pair's channel `epoch` still unsent.
    pub fn get(&self, key: u64, epoch: u8) -> LeafMask {
        if self.0.is_empty() {
            return LeafMask::EMPTY;
        }
        self.find(key, epoch).map_or(LeafMask::EMPTY, |i| self.0[i].2)
    }

    /// Whether the pair has an entry (of any channel).
    pub fn has(&self, key: u64) -> bool {
        let i = self.0.partition_point(|e| e.0 < key);
        self.0.get(i).is_some_and(|e| e.0 == key)
    }

    /// The pair is gone: the entries of all its channels.
    pub fn remove(&mut self, key: u64) {
        self.0.retain(|e| e.0 != key);
    }

    /// Keeps the entries of the channels `keep(key, epoch)` names.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, u8) -> bool) {
        self.0.retain(|&(key, epoch, _)| keep(key, epoch));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Connection {
    pub fn new(replay: bool, pairs: Pairs, mtu: usize, first_seq: Seq) -> Self {
        Self {
            id: ConnectionId(u32::MAX),
            replay,
            net_groups: super::NetGroups::EMPTY,
            groups_changed: 0,
            removed: false,
            pairs,
            pending: Vec::new(),
            closes: Closes::default(),
            exported: Default::default(),
            exporting: Default::default(),
            exports: Vec::new(),
            rel: Reliability::new(first_seq),
            out: BitWriter::new(),
            out_ends: Vec::new(),
            writer: PacketWriter::new(mtu),
            stats: ConnectionStats::default(),
            viewers: Vec::new(),
            budget: Budget::new(super::budget::DEFAULT_NET_SPEED, replay),
            heard: 0.0,
            decisions: None,
            scratch: Box::default(),
            dormant_look: true,
            sublevels: Default::default(),
            next_epoch: 0,
            opened_after: OpenedAfter::default(),
            settled: Vec::new(),
            quiet: Default::default(),
            held_torn: Vec::new(),
            sent_temporaries: Default::default(),
            parked: Vec::new(),
            unsent_initial: UnsentInitial::default(),
            since_tick: SinceTick::default(),
            roles: super::proxy_roles::ProxyRoles::default(),
            held_back: crate::ids::LeafMask::EMPTY,
            rpcs: Default::default(),
        }
    }

    /// Drops everything this connection holds; it keeps its place so other ids stay valid.
    pub fn remove(&mut self) {
        let id = self.id;
        *self = Connection::new(self.replay, Pairs::channels(), crate::wire::packet::MIN_MTU, Seq(0));
        self.id = id;
        self.removed = true;
    }

    /// Queues a pair for attention next frame (once). The actor level has no queue: a pair
    /// is looked at when its actor is due.
    pub fn queue(&mut self, class: u32, slot: u32) {
        if matches!(self.pairs, Pairs::Channels { .. }) {
            return;
        }
        let ps = self.pair(class, slot);
        if ps.flags & pair::PENDING == 0 {
            ps.flags |= pair::PENDING;
            self.pending.push((class, slot));
        }
    }

    /// `leaves` of a pair are owed to the client: their current values go out with the pair's
    /// next send (NAKs, window-full deferrals, newly active properties).
    /// A pair the actor level has closed is not created again: a reopen sends everything.
    pub fn owe(&mut self, class: u32, slot: u32, leaves: LeafMask) {
        if let Pairs::Channels { .. } = self.pairs {
            if let Some(ps) = self.pairs.get_mut(class, slot) {
                ps.resend |= leaves;
            }
            return;
        }
        self.pair(class, slot).resend |= leaves;
        self.queue(class, slot);
    }

    /// The state of a pair, created on first use.
    pub fn pair(&mut self, class: u32, slot: u32) -> &mut PairState {
        self.pairs.get_or_insert(class, slot)
    }

    /// The state of a pair, if it exists.
    pub fn pair_ref(&self, class: u32, slot: u32) -> Option<&PairState> {
        self.pairs.get(class, slot)
    }

    /// The state of live actor `guid`'s pair (`guids`: the live actors), if it exists.
    pub fn pair_of(&self, guids: &crate::ids::GuidMap<(u32, u32)>, guid: NetGuid) -> Option<&PairState> {
        guids.get(&guid).and_then(|&(c, s)| self.pair_ref(c, s))
    }

    /// Whether a dormancy close of `guid` is still due here: its copy is held dormant (an actor
    /// woken since has its channel open again, and sends).
    pub fn dormant_here(&self, guids: &crate::ids::GuidMap<(u32, u32)>, guid: NetGuid) -> bool {
        self.pair_of(guids, guid).is_some_and(|ps| ps.flags & pair::DORMANT != 0)
    }

    /// Whether the client may hold this channel's copy of actor `guid` — live (`guids`), or
    /// one whose slot the game reused since the last tick (`retired`: its rows are its own until
    /// the tick retires them): some packet carried the open of the channel it has now, or it
    /// holds the actor dormant — or a sub-object orphaned since the last tick held so
    /// ([`SinceTick::orphan_copies`]). A row the actor level opened but whose open has not gone yet
    /// (the window was full, the frame saturated) does not count: the client's copy, if any, is
    /// an earlier channel's, which a lost close must still end.
    pub fn holds_copy(
        &self,
        guids: &crate::ids::GuidMap<(u32, u32)>,
        retired: &[(u64, NetGuid)],
        guid: NetGuid,
    ) -> bool {
        let retiring = || {
            let (c, s) = super::reliability::retiring_slot(retired, guid)?;
            self.pair_ref(c, s)
        };
        self.pair_of(guids, guid)
            .or_else(retiring)
            .is_some_and(|ps| ps.flags & (pair::EVER_OPENED | pair::DORMANT) != 0)
            || self.since_tick.orphan_copies.contains(&guid)
    }

    /// Whether a close of `guid` is queued here or on its way (in a packet not settled yet).
    pub fn close_pending(&self, guid: NetGuid) -> bool {
        self.closes.is_queued(guid) || self.rel.closes.iter().any(|c| c.guid == guid)
    }

    /// Forgets a pair (its actor is gone, or its channel closed); returns what it held.
    pub fn drop_pair(&mut self, class: u32, slot: u32) -> PairState {
        if !self.unsent_initial.is_empty() {
            self.unsent_initial.remove(super::pairs::pair_key(class, slot));
        }
        self.pairs.remove(class, slot)
    }

    /// This frame's packets.
    pub fn packets(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.out_ends.iter().copied());
        let bytes = self.out.bytes();
        starts.zip(self.out_ends.iter().copied()).map(move |(a, b)| &bytes[a..b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_state_packs_into_sixteen_bytes() {
        assert_eq!(memoffset::offset_of!(PairState, resend), 0);
        assert_eq!(memoffset::offset_of!(PairState, sent_through), 8);
        assert_eq!(memoffset::offset_of!(PairState, flags), 12);
    }
}
