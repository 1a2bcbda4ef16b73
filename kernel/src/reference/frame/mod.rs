//! The actor level the straightforward UE way: the oracle for [`crate::net::level`] and the
//! baseline it is measured against.
//!
//! ```text
//! per frame (after the driver's tick, on the same stores and the driver's inputs):
//!   wakes          the game's wakes: their dormant copies channels again (woken), before any
//!                  close, as the driver wakes them at the call
//!   actor list     one object per live actor: new ones get an object, destroyed ones queue a
//!                  close on every connection with a channel or a dormant copy — looked at where
//!                  the driver logged a spawn, a destruction or a tear-off, as UE's network
//!                  object list hears of them (`lifecycle.rs`)
//!   game's calls   forced updates, and dormancy's: awake (a wake is a forced update too),
//!                  asleep at once (a static actor's Initial)
//!   dormant look   each connection about once a second (and in its first frame) wakes every
//!                  sleeping actor within its cull distance of a viewer (where it fell asleep)
//!                  that it holds no copy of — a walk over every actor (`dormancy.rs`)
//!   consider list  every awake actor (the active list, UE's `ActiveNetworkObjects`: a sleeper
//!                  is off it) whose clock is due (or pending) and that replicates (not
//!                  switched off by `set_replicates`); each is compared property by
//!                  property — read from the store into its object, compared with its own shadow
//!                  (push-based properties and dynamic arrays only where marked) — and its next
//!                  time scheduled
//!   per connection, one after the other:
//!     sublevels    the client's unloads since the last frame close its channels (and dormant
//!                  copies) to the sublevel's actors; its loads tell the sublevel's destroyed
//!                  static actors again (UE's UpdateLevelVisibility, `lifecycle.rs`)
//!     ready?       heard from within the ready timeout
//!     closes       of destroyed actors, and of torn-off ones no connection left over
//!     prioritize   for every due actor: skip it if it has no channel and is not relevant
//!                  (UE's IsActorRelevantToConnection, asked actor by actor) or its sublevel is
//!                  not loaded on the client (IsLevelInitializedForActor), or if it is
//!                  temporary (bNetTemporary) and its channel's open went, or it has no
//!                  channel and an earlier one's did (UE's SentTemporaries), or if it is an
//!                  initial-only sub-object whose open went (an initial-only one opens only
//!                  while its owner's open is not acknowledged); priority = max over the
//!                  viewers of GetNetPriority; sort everything
//!     process      in order: relevancy recheck, open / replicate / close (a tearing actor's
//!                  channel right after its bunch), a settled channel of an actor that wants
//!                  dormancy closed Dormant (the client keeps its copy), stop when the budget is
//!                  spent, leftovers pending (UE's ServerReplicateActors_ProcessPrioritizedActors)
//!     replicate    the changed properties since the channel's last send, active under the
//!                  condition map, encoded for this connection alone; then the actor's fast
//!                  arrays (bases of the reference's own in the driver's arrays)
//! fall asleep      a due actor that wants dormancy, relevant by distance alone, not
//!                  temporary, that no connection holds awake (an open channel, or relevant
//!                  without one)
//! receive_feedback the client's feedback (the bytes the driver got): lost properties owed again,
//!                  lost opens sent again as the initial bunch, lost closes again (`feedback.rs`)
//! acknowledge_all  or a perfect link: every packet arrives, every open is acknowledged
//! ```
//!
//! It decides everything itself — relevancy per actor, the full sort, per-property change
//! detection, per-channel state — from the same inputs as the kernel: the stores, the net
//! settings, owners, viewers, net speeds and ready times the game gave the driver. What it shares
//! with the kernel is UE's per-actor formulas ([`crate::net::relevancy::relevant_to_connection`],
//! [`crate::net::priority::actor_priority`], [`crate::net::consider::ConsiderClock`],
//! [`crate::net::budget::Budget`]) and the packet writer, so each actor is charged exactly the
//! bits the kernel's encoder writes and both saturate at the same place (keep it so when the wire
//! changes: the reference writes its bunches through the kernel's writer).
//!
//! Equal decisions need equal histories: give the reference each feedback the kernel's clients
//! return ([`ReferenceFrame::receive_feedback`], the same bytes the driver gets — a lossy link
//! then loses the same packets for both, as they write the same packets), or, on a perfect link,
//! call [`ReferenceFrame::acknowledge_all`] where the clients would answer. The reference keeps
//! the kernel's bookkeeping of packets in flight (sequence numbers, what each packet carried);
//! what a loss means for a channel it decides itself. Dormancy is the kernel's (`net::dormancy`)
//! decided the plain way: a copy held dormant is a channel in a second map, a sleeping actor off
//! the consider list's active list, and the once-a-second look a test of every sleeper against
//! every viewer — no cells, no sorted rows; the game's calls that wake or put to sleep are
//! replayed from the driver's log of them, as its forced updates are.
//!
//! This module holds the frame; `consider.rs` the consider list; `lifecycle.rs` the actor list across
//! frames (new and gone actors, tear-offs, orphaned sub-objects), as the kernel's
//! `net::lifecycle` does; `connection.rs` the connections across frames and one connection's
//! frame, as the kernel's
//! `net::channels` does, in its steps: `prioritize.rs` (the walk, relevancy asked where UE asks
//! it in `asked.rs`, priorities, the sort), `process.rs` (the candidates in send order until the
//! budget is spent, the leftovers), `replicate.rs` (one actor's bunch); `dormancy.rs` sleep and
//! waking, as the kernel's `net::dormancy` does; `feedback.rs` what the client's feedback means
//! for the channels.

use crate::ids::{Frame, LeafMask, NetGuid, Seq};
use crate::ids::{GuidMap, GuidSet};
use crate::net::budget::Budget;
use crate::net::channels::{close_reason, relevant_until, Action, FrameDecisions, SendDecision};
use crate::net::connection::{Connection, PendingClose};
use crate::net::consider::{ConsiderClock, ServerTime};
use crate::net::fastarrays::{FastSent, OwnerChannel, Side};
use crate::net::pairs::Pairs;
use crate::net::plan::SendItem;
use crate::net::priority::{
    actor_priority, priority_key, send_order, Candidate, PriorityInput, SPAWN_PRIORITY_SECONDS,
};
use crate::net::relevancy::{owned_by_viewers, relevant_to_connection, ActorRelevancy};
use crate::net::send::WriteCtx;
use crate::net::sublevels::ConnSublevels;
use crate::net::{ConnectionId, DriverError, NetDriver, ReplicationFlags};
use crate::store::{ClassStore, WatcherId};
use crate::wire::open::CloseReason;
use std::time::Instant;

mod asked;
mod calls;
mod connection;
mod consider;
mod dormancy;
mod feedback;
mod lifecycle;
mod prioritize;
mod process;
mod replicate;
use consider::ActiveList;

/// One actor as an object of its own.
struct RefActor {
    guid: NetGuid,
    generation: u32,
    /// The replicated properties, array-of-structs (`ClassLayout::record_bytes`).
    object: Vec<u8>,
    shadow: Vec<u8>,
    shadow_arrays: Vec<Vec<u8>>,
    /// Per leaf, the frame its compare last found it changed (0: never).
    last_changed: Vec<u32>,
    clock: ConsiderClock,
    /// Not compared yet: every property is looked at, marks or not.
    fresh: bool,
    /// What relevancy and priority read this frame, and its net priority (what an owner chain
    /// reads of it): refreshed for the frames that can ask (`consider.rs`).
    link: (ActorRelevancy, f32),
    /// The frame `link` was last refreshed in.
    linked: Option<Frame>,
    /// The game tore it off, and a frame has replicated it since: its tear-off ends once no
    /// connection left it over.
    tear_seen: bool,
    /// Its tear-off ended: never replicated again.
    torn: bool,
    /// Tearing: the connections whose full window held back some of its last update when they
    /// last replicated it — its tear-off waits for them (for at most a window's worth of frames).
    deferred: Vec<u32>,
    /// The driver's frame when the game tore it off (the frame before this first saw it).
    tear_since: Frame,
    /// As a sub-object, its owner (kept: the driver forgets the link when the owner goes).
    owner: Option<NetGuid>,
    /// Asleep, where it fell asleep and its squared cull distance then: where a connection's
    /// look meets it (`None`: a static actor's Initial sleep, which only a wake ends).
    sleep_at: Option<([f32; 3], f32)>,
    /// Which connections it serves, as of its last frame ([`Serve`]).
    serve: Serve,
}

/// What decides which connections' frames serve an actor (its owning connection, autonomous
/// proxy, sub-object condition, owner-only setting), as of the last frame it lived in: a tearing
/// actor gone with its slot already reused (the driver's columns are the new occupant's) is still
/// judged by its own.
#[derive(Clone, Copy, Debug, Default)]
struct Serve {
    owner: Option<u32>,
    autonomous: bool,
    physics: bool,
    sub_condition: Option<crate::net::SubObjectCondition>,
    only_relevant_to_owner: bool,
}

impl Serve {
    /// The driver's columns for the actor in `slot` of `class` now.
    fn of(class: &crate::net::actors::ClassNet, slot: usize) -> Serve {
        let net = &class.actors[slot];
        Serve {
            owner: net.owner,
            autonomous: net.autonomous,
            physics: net.physics,
            sub_condition: class.cols.sub_condition[slot],
            only_relevant_to_owner: class.cols.settings[slot].only_relevant_to_owner,
        }
    }
}

/// Whether an actor replicates (`NetDriver::set_replicates`; UE: a `RemoteRole` of none drops it
/// from the consider list): a sub-object (`owner`: its owner) goes in its owner's update, so by
/// its owner's switch, read here, not its own copy; any other actor by its own (`net`: the
/// driver's record of it, if it still has one).
fn switched_on(driver: &NetDriver, owner: Option<NetGuid>, net: Option<&crate::net::actors::ActorNet>) -> bool {
    match owner {
        Some(owner) => driver
            .guids
            .get(&owner)
            .is_none_or(|&(oc, os)| !driver.classes[oc as usize].actors[os as usize].not_replicated),
        None => net.is_none_or(|a| !a.not_replicated),
    }
}

/// UE's condition map for a sub-object under `cond` on a channel with replication flags `f`
/// (`initial`: its owner's channel is in its initial bunch): `ConditionMap[NetCondition]`, built
/// from the flags as the properties' is (`condition_active`) — the reference's own reading, not
/// the kernel's `SubObjectCondition` methods — and a net group by the connection's groups.
fn condition_map(cond: crate::net::SubObjectCondition, f: ReplicationFlags, initial: bool) -> bool {
    use crate::net::condition::{condition_active, flags};
    use crate::net::SubObjectCondition as S;
    use crate::schema::Condition as C;
    let twin = match cond {
        S::NetGroup(_) => return cond.allows(f),
        S::None => C::None,
        S::OwnerOnly => C::OwnerOnly,
        S::SkipOwner => C::SkipOwner,
        S::SimulatedOnly => C::SimulatedOnly,
        S::AutonomousOnly => C::AutonomousOnly,
        S::ReplayOrOwner => C::ReplayOrOwner,
        S::ReplayOnly => C::ReplayOnly,
        S::SkipReplay => C::SkipReplay,
        S::Never => C::Never,
        S::InitialOnly => C::InitialOnly,
        S::InitialOrOwner => C::InitialOrOwner,
        S::SimulatedOrPhysics => C::SimulatedOrPhysics,
        S::SimulatedOnlyNoReplay => C::SimulatedOnlyNoReplay,
        S::SimulatedOrPhysicsNoReplay => C::SimulatedOrPhysicsNoReplay,
    };
    let bit = |on: bool, b: u8| if on { b } else { 0 };
    let simulated = !(f.owner && f.autonomous);
    let bits = bit(initial, flags::INITIAL)
        | bit(f.owner, flags::OWNER)
        | bit(simulated, flags::SIMULATED)
        | bit(f.replay, flags::REPLAY)
        | bit(f.physics, flags::PHYSICS);
    condition_active(twin, bits)
}

/// One actor channel of a connection.
#[derive(Clone, Copy, Debug)]
struct RefChannel {
    class: u32,
    slot: u32,
    /// A bunch carrying the open is in flight or was delivered (reset when one is reported
    /// lost before the acknowledgement: the next bunch is the initial one again).
    open_sent: bool,
    open_acked: bool,
    /// A packet carried the open, delivered or not: the client may have the actor, so the
    /// channel's end is told.
    ever_opened: bool,
    sent_through: Frame,
    relevant_time: f64,
    last_update: f64,
    /// Which channel of its actor this is: the fast arrays riding an earlier one went with the
    /// client's copy.
    epoch: u8,
    /// The newest packet sent before it opened: a settled bunch is this channel's only if its
    /// packet is newer (UE acknowledges a channel's own bunches; the 8-bit epoch comes round —
    /// seed 316816, where a silent client's late acknowledgement of an earlier channel's open
    /// acknowledged the one 256 channels later).
    opened_after: Seq,
    /// Leaves that changed while inactive for this connection, sent when they come back (UE's
    /// `InactiveChangelist`).
    inactive: LeafMask,
    /// Leaves a lost packet carried: sent again, with their current values, when the actor next
    /// replicates here (UE's NAK of a changelist).
    resend: LeafMask,
    /// Initial values (InitialOnly, a non-owner's InitialOrOwner) a lost bunch that sent the
    /// open carried and no delivered bunch has carried since: owed as initial values whatever
    /// the conditions say meanwhile (UE's open bunch is reliable).
    unsent_initial: LeafMask,
    /// Woken from dormancy and not replicated since (UE closed the channel when the actor went
    /// dormant: it ranks as an actor without one, and its first bunch is an initial one).
    woken: bool,
    /// The sequence number of the last packet that carried a bunch of it: the channel goes
    /// dormant only once that packet is settled.
    last_packet: u16,
    /// The client role (autonomous) the last bunch carrying the open gave (none before one):
    /// UE's `RemoteRole` as this connection got it, compared with its role now each time the
    /// actor replicates here.
    role: Option<bool>,
    /// A bunch that sent a changed role was lost: the role goes again (UE's NAK of a property).
    role_resend: bool,
}

impl RefChannel {
    /// A new channel to the actor in (`class`, `slot`): nothing sent yet, its open owed.
    fn new((class, slot): (u32, u32), epoch: u8, opened_after: Seq) -> Self {
        RefChannel {
            class,
            slot,
            open_sent: false,
            open_acked: false,
            ever_opened: false,
            sent_through: Frame(0),
            relevant_time: 0.0,
            last_update: 0.0,
            epoch,
            opened_after,
            inactive: LeafMask::EMPTY,
            resend: LeafMask::EMPTY,
            unsent_initial: LeafMask::EMPTY,
            woken: false,
            last_packet: 0,
            role: None,
            role_resend: false,
        }
    }
}

/// One connection.
struct RefConn {
    /// The driver's connection in this slot it follows (a new id in the slot: a new connection).
    id: ConnectionId,
    conn: Connection,
    /// UE's actor channel map (`ActorChannelMap`, a `TMap` keyed by the actor's pointer, hashed
    /// by a cheap mix of its bits): the driver's own GUID hash, not std's keyed SipHash — a
    /// reference paying ~150 instructions a lookup would flatter the kernel (session 71: 19
    /// million lookups in 30 battle_royale frames, a quarter of the reference's instructions).
    channels: GuidMap<RefChannel>,
    budget: Budget,
    decisions: FrameDecisions,
    /// Fast array bunches the perfect link delivered, settled at the next frame (the arrays
    /// are the driver's, reached through it then).
    fast_delivered: Vec<FastSent>,
    /// Owners whose last close the perfect link delivered: their fast arrays' marks that the
    /// client may hold them go at the next frame, with `fast_delivered`.
    owner_closes_delivered: Vec<NetGuid>,
    /// The next channel's epoch.
    next_epoch: u8,
    /// Owners closed TornOff here whose tearing sub-object's last update a full window held
    /// back: the client keeps the owner, so the update still finds it, until the owner's
    /// tear-off ends.
    held_torn: GuidSet,
    /// Channels closed for dormancy: the copies the client keeps (`woken`: woken and not sent
    /// to, dormant again — stale, it owes what changed).
    dormant: GuidMap<RefChannel>,
    /// Its first look at the sleeping actors is done.
    looked: bool,
    /// UE's `SentTemporaries`: temporary actors whose open went here, until they are gone.
    sent_temporaries: GuidSet,
}

impl RefConn {
    /// Where a call stands with channel `ch` of actor `guid` (the writer's rule, with this
    /// connection's channels: one held for a torn-off owner's sub-objects is closed).
    fn call_chan(&self, guid: NetGuid, ch: &RefChannel) -> crate::net::rpc::Chan {
        use crate::net::rpc::Chan;
        match ch {
            _ if self.held_torn.contains(&guid) => Chan::Closed,
            ch if ch.open_acked => Chan::Acked,
            ch if ch.ever_opened => Chan::Opened,
            _ => Chan::Owed,
        }
    }

    /// Channel `ch` of actor `guid` closes this frame (taken out of `channels` by the caller):
    /// this tick's calls made while it was open still go (the kernel's `net::rpc::note_close`).
    fn note_close(&mut self, guid: NetGuid, ch: &RefChannel) {
        let chan = self.call_chan(guid, ch);
        if matches!(chan, crate::net::rpc::Chan::Opened | crate::net::rpc::Chan::Acked) {
            self.conn.closes.ending.push(crate::net::rpc::Ended { guid, chan, epoch: ch.epoch });
        }
    }

    /// Every packet sent so far arrived: its opens, fast array bunches and exports with it.
    fn acknowledge(&mut self) {
        self.fast_delivered.extend(self.conn.rel.fast.drain(..));
        let closed: Vec<NetGuid> =
            self.conn.rel.closes.iter().filter(|c| c.reason.destroys_copy()).map(|c| c.guid).collect();
        self.conn.rpcs.acknowledge_in_flight();
        self.conn.rel.acknowledge_everything();
        let last = closed.into_iter().filter(|&g| !self.conn.close_pending(g));
        self.owner_closes_delivered.extend(last);
        let exporting: Vec<NetGuid> = self.conn.exporting.drain().collect();
        self.conn.exported.extend(exporting);
        for ch in self.channels.values_mut() {
            ch.open_acked |= ch.open_sent;
        }
    }
}

/// What one reference frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReferenceTick {
    /// Wall time of the frame, seconds, without its audit.
    pub seconds: f64,
    /// Wall time of the relevancy answers the frame asked only for the cross-check with the
    /// kernel (each connection's whole relevant set; UE asks an open channel's relevancy once a
    /// second), and of the actor list's audit (every slot the driver's log did not name looked
    /// at, to prove it needed nothing), seconds: within the call, not in `seconds`.
    pub audit_seconds: f64,
    /// Slots whose actor changed without the driver's log naming them (`Level::touched`), found
    /// by the audit and tracked after the others, over every frame so far: a bug if not 0 (the
    /// sims and the profiles' cross-check fail on it).
    pub missed_slots: usize,
    /// Actors on the consider list.
    pub due_actors: usize,
    /// Bytes written over every connection.
    pub bytes: usize,
}

/// See the module documentation.
pub struct ReferenceFrame {
    watchers: Vec<WatcherId>,
    /// Per class, per slot.
    actors: Vec<Vec<Option<RefActor>>>,
    /// The entries awake (not dormant wherever they are held): the consider list's members.
    active: ActiveList,
    conns: Vec<RefConn>,
    frame: Frame,
    /// Tearing actors whose last update a connection's full window held back (class, slot).
    deferring: std::collections::HashSet<(u32, u32)>,
    /// How many of the driver's destroyed static actors the connections were told of.
    statics_told: usize,
    /// This frame's relevancy audit (the answers UE never asks, for the cross-check: `asked`)
    /// and actor list audit (`lifecycle`).
    audit_seconds: f64,
    /// The actor list has been walked whole once (its first frame).
    tracked_once: bool,
    /// Entries the last frame left tearing (class, slot): tracked again this frame.
    unsettled: Vec<(u32, u32)>,
    /// See [`ReferenceTick::missed_slots`].
    missed_slots: usize,
    /// How many of the driver's fast array removals of its frame (the driver's frame then) a
    /// feedback's catch-up told already.
    fast_told: (Frame, usize),
}

impl ReferenceFrame {
    /// A reference for `driver` (which must run the actor level), watching its stores' push
    /// marks: create it right after the driver's classes are registered, before any tick, with
    /// the stores in any order.
    pub fn new(driver: &NetDriver, stores: &mut [&mut ClassStore]) -> Result<ReferenceFrame, DriverError> {
        driver.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        let mut watchers = vec![None; driver.classes.len()];
        for s in stores.iter_mut() {
            let &c = driver.by_store.get(&s.id()).ok_or(DriverError::UnknownStore)?;
            watchers[c as usize] = Some(s.add_watcher());
        }
        let watchers = watchers
            .into_iter()
            .enumerate()
            .map(|(c, w)| w.ok_or(DriverError::MissingStore(crate::ids::ClassId(c as u32))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReferenceFrame {
            watchers,
            actors: (0..driver.classes.len()).map(|_| Vec::new()).collect(),
            active: ActiveList::new(driver.classes.len()),
            conns: Vec::new(),
            frame: Frame(0),
            deferring: Default::default(),
            statics_told: 0,
            audit_seconds: 0.0,
            tracked_once: false,
            unsettled: Vec::new(),
            missed_slots: 0,
            fast_told: (Frame(0), 0),
        })
    }

    /// The decisions of the last frame for `conn`.
    pub fn decisions(&self, conn: ConnectionId) -> Option<&FrameDecisions> {
        self.conns.iter().find(|c| c.id == conn).map(|c| &c.decisions)
    }

    /// The packets the last frame wrote for `conn` (nothing for an unknown connection): the
    /// same bytes as the kernel's when both decided alike and wrote the same values.
    pub fn packets(&self, conn: ConnectionId) -> impl Iterator<Item = &[u8]> + '_ {
        self.conns.iter().filter(move |c| c.id == conn).flat_map(|c| c.conn.packets())
    }

    /// A perfect link: every packet sent so far arrived, every open is acknowledged. (What that
    /// means for the fast arrays — bunches delivered, owners' closes that took a client's arrays
    /// — is settled at the next frame: a fast array the game removes before then is judged by
    /// the reference's state of it before this call, and its close may go to a client that no
    /// longer holds it.)
    pub fn acknowledge_all(&mut self) {
        self.conns.iter_mut().for_each(RefConn::acknowledge);
    }

    /// The same for connection `conn` alone: a client whose answers were held back (the kernel's
    /// client sent no feedback meanwhile) answers for everything at once. An unknown connection
    /// is ignored.
    pub fn acknowledge(&mut self, conn: ConnectionId) {
        if let Some(c) = self.conns.iter_mut().find(|c| c.id == conn) {
            c.acknowledge();
        }
    }

    /// Runs the frame the driver just ticked, on the same stores (any order).
    pub fn tick(&mut self, driver: &NetDriver, stores: &mut [&mut ClassStore]) -> Result<ReferenceTick, DriverError> {
        let start = Instant::now();
        let level = driver.level.as_ref().ok_or(DriverError::ActorLevelOff)?;
        let mut order = vec![usize::MAX; driver.classes.len()];
        for (i, s) in stores.iter().enumerate() {
            let &c = driver.by_store.get(&s.id()).ok_or(DriverError::UnknownStore)?;
            order[c as usize] = i;
        }
        if let Some(missing) = order.iter().position(|&i| i == usize::MAX) {
            return Err(DriverError::MissingStore(crate::ids::ClassId(missing as u32)));
        }
        self.frame = driver.frame;
        self.audit_seconds = 0.0;
        let time = level.time;
        let cfg = &level.cfg;
        self.follow_connections(driver);
        // The game's wakes since the last frame: their copies are channels again before the
        // actor list closes any (the driver woke them at the game's call).
        self.wake_copies(driver, &level.dormancy_calls.last_tick);
        let new_subs = self.track_actors(driver, stores, &order);
        // The game's dormancy calls since the last frame (a wake is a forced update too).
        self.replay_dormancy_calls(&level.dormancy_calls.last_tick);
        // The game's ForceNetUpdate calls since the last frame.
        for &(c, s, at) in &level.forced.last_tick {
            if let Some(a) = self.actors[c as usize].get_mut(s as usize).and_then(Option::as_mut) {
                a.clock.force_net_update(at);
            }
        }
        // A new sub-object is due with its owner (the driver copies the owner's clock when it is
        // registered; a force either side of that reaches both).
        for (c, s) in new_subs {
            let guid = self.actors[c as usize][s as usize].as_ref().map(|a| a.guid);
            let owner = guid.and_then(|g| driver.owner_of(g)).and_then(|o| driver.guids.get(&o).copied());
            let clock = owner.and_then(|(oc, os)| self.actors[oc as usize].get(os as usize)?.as_ref().map(|o| o.clock));
            if let (Some(clock), Some(a)) = (clock, self.actors[c as usize][s as usize].as_mut()) {
                a.clock = clock;
            }
        }
        for (rc, dc) in self.conns.iter_mut().zip(&driver.conns) {
            rc.budget.net_speed = dc.budget.net_speed;
            rc.budget.packet_overhead = dc.budget.packet_overhead;
            rc.budget.tick(time.tick, cfg.tick_rate);
        }
        // The connections whose look is due meet the sleeping actors near their viewers.
        self.look_for_sleepers(driver, &time);
        let due = self.consider(driver, stores, &order, &time);

        let ordered: Vec<&ClassStore> = order.iter().map(|&i| &*stores[i]).collect();
        // Fast arrays are the driver's; the reference keeps bases of its own in them.
        for (ci, rc) in self.conns.iter_mut().enumerate() {
            for sent in rc.fast_delivered.drain(..) {
                driver.fast.settle(Side::Reference, ci, sent, true);
            }
            for owner in rc.owner_closes_delivered.drain(..).filter(|&g| driver.fast.has_arrays(g)) {
                driver.fast.owner_close_delivered(Side::Reference, ci, owner);
            }
        }
        let write = WriteCtx {
            classes: &driver.classes,
            stores: &ordered,
            arena: None,
            keep_alive_frames: driver.cfg.keep_alive_frames,
            statics: &driver.statics,
            outers: &driver.subs.outer,
            guids: &driver.guids,
            fast: &driver.fast,
            marks_opens: false,
            calls: &driver.rpcs.frame,
        };
        let mut bytes = 0;
        // Due actors that may fall asleep, and those some connection holds awake.
        let sleepy: Vec<u32> = (0..due.len() as u32).filter(|&i| dormancy::sleepy(driver, due[i as usize])).collect();
        let mut awake = vec![false; due.len()];
        for ci in 0..self.conns.len() {
            bytes += self.replicate_connection(driver, &write, &due, ci, &time, (&sleepy, &mut awake));
        }
        self.fall_asleep(driver, &due, &sleepy, &awake);
        if level.cfg.adaptive_frequency {
            // UE's send-time rule, per actor, from the connections its ReplicateActor wrote to.
            let mut sends: GuidMap<u32> = GuidMap::default();
            for s in self.conns.iter().flat_map(|rc| &rc.decisions.sends) {
                if matches!(s.action, Action::Replicated { .. }) && s.bits > 0 {
                    *sends.entry(s.guid).or_default() += 1;
                }
            }
            for (guid, n) in sends {
                let Some(&(c, s)) = driver.guids.get(&guid) else { continue };
                if let Some(a) = self.actors[c as usize].get_mut(s as usize).and_then(Option::as_mut) {
                    a.clock.replicated(time.now, &driver.classes[c as usize].cols.settings[s as usize].frequency, n);
                }
            }
        }
        let audit_seconds = self.audit_seconds;
        Ok(ReferenceTick {
            seconds: start.elapsed().as_secs_f64() - audit_seconds,
            audit_seconds,
            missed_slots: self.missed_slots,
            due_actors: due.len(),
            bytes,
        })
    }
}
