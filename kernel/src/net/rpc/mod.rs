//! Remote procedure calls: UE's `Client` and `NetMulticast` functions the server calls, reliable or
//! not, and the `Server` functions its clients call ([`crate::schema::rpc`] declares them,
//! [`crate::wire::rpc`] writes them; a client's ride its feedback, [`crate::wire::feedback`]).
//!
//! ```text
//! call_rpc(actor, "Name", args)   the arguments checked, the call's bunch encoded once
//! tick, once (write.rs)     the calls' actors found and sorted; the unreliable calls' bunches
//!                           laid end to end in one run
//! tick, per connection, while its frame closes channels (destroyed, torn off, dormant, not
//!   relevant, sublevel unloaded, owner's closed): each channel a close ends is noted with where
//!   a call stood with it (`note_close`; a lost close's resend is not)
//! tick, per connection, after the frame's actors (write.rs):
//!   fan out       this tick's calls reaching the connection: a Client call its owning
//!                 connection, a Multicast call every connection — each only where the actor's
//!                 channel is open (its open has gone), or was until this tick closed it (the
//!                 noted closes: only a connection with one looks), or whose channel a
//!                 saturated frame opened for it (UE opens a channel for a call that finds
//!                 none: `crate::net::channels`, its `calls.rs`); elsewhere not sent (counted
//!                 `rpcs_without_channel`)
//!   number        reliable calls wait until their channel's open is acknowledged (the client
//!                 has the actor) — an open the full window held back too — then take the
//!                 connection's next reliable number, in call order
//!   write         the acknowledgement of the client's Server calls, when one is owed and none
//!                 flies; numbered calls not in flight (lost ones first: lowest numbers), then
//!                 this tick's unreliable ones unless the connection saturated; one bunch each,
//!                 after the actors' bunches (consecutive unreliable ones copied from the run)
//! feedback        a delivered packet's reliable calls are done; a lost one's are written again;
//!                 the client's Server calls are taken (server.rs: owned actors only, reliable
//!                 ones through the same window the client uses, each owing an acknowledgement)
//! ```
//!
//! What a call costs the server per connection is a copy of bits: the fan-out meets the
//! connection's channel rows and the calls' sorted actors in one galloping walk (looked up in
//! call order, each was a cache miss: 82 ns a call and connection in `--example rpc_fanout`,
//! 27–28 ns now), so a call whose actor has no channel there costs the connection nothing of
//! its own — in an mmo frame, most of ~900 calls at each of 1 000 connections.
//!
//! A reliable call goes once per packet until a packet carrying it is acknowledged, and the
//! client applies each number once, in order (it holds later ones until the gap fills:
//! [`crate::client`]), so reliable calls arrive exactly once and in number order: each actor's in
//! call order (UE's per-channel order), and across actors in call order too, but for a call on
//! an actor whose open is not acknowledged yet, numbered when it is. Waiting for the open's
//! acknowledgement keeps a reliable call from reaching a client whose copy of the actor is still
//! on its way (an open lost while the call's packet arrived would leave nothing to call); it costs
//! a call on an actor opened in the same frame a round trip. At most
//! [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) calls wait or fly per connection;
//! one more fails the connection, as UE's "outgoing reliable buffer overflow" closes it — the call
//! is counted ([`ConnectionStats::rpcs_overflowed`](super::ConnectionStats::rpcs_overflowed)), the
//! connection removed at the end of the tick and named by
//! [`NetDriver::take_failed_connections`] for the game to end its session — unless
//! [`DriverConfig::reliable_overflow`](super::DriverConfig::reliable_overflow) is
//! [`ReliableOverflow::Drop`], which drops the call and goes on. An unreliable call goes in its
//! tick's packets or never.
//!
//! Calls are written after the actors' bunches and fast arrays, so an actor a frame opens is open
//! before a call of that frame reaches it, and the call sees the state the frame sent. A call
//! made between two ticks on an actor whose channel was open when the tick began still goes down
//! it when the tick closes that channel (UE's `MulticastDeath(); TearOff();`, a call then
//! `Destroy()` or `SetNetDormancy`, or the frame its relevancy lapses or its sublevel unloads):
//! UE sends an RPC at call time, down the channel open then, before the close. Here the call is
//! written after the close, in the same frame — a reliable one numbered as any (where the open
//! was acknowledged: a closing channel's never will be), an unreliable one where the packet has
//! room — and the client delivers it after the close: on a torn-off or dormant actor it keeps, or
//! on one it destroyed with the class it remembers ([`crate::client`]). A call made after
//! `set_net_dormancy` in the same frame goes the same way (the channel is open until the tick
//! closes it); one made after [`NetDriver::tear_off`] is refused ([`DriverError::TornOff`]).
//!
//! Calls' bytes count against the connection's bandwidth like any other: reliable calls are
//! written whatever the budget (UE sends RPCs as they are called, outside the priority list),
//! unreliable ones not on a saturated connection (UE's `IsNetReady` check).

mod server;
mod write;

pub(crate) use server::track_calls;
pub use server::{ServerRpcEvent, MAX_UNTAKEN_SERVER_RPCS};
pub(crate) use write::{note_close, Chan, Closing, Ended, FrameCalls, PairChannels};

use super::connection::Connection;
use super::{ClassId, ConnectionId, ConnectionStats, DriverError, NetDriver, NetGuid};
use crate::schema::RpcTarget;
use crate::store::{ActorId, ClassStore};
use crate::value::Value;
use crate::wire::rpc::{EncodedCall, ReliableWindow};
use std::collections::VecDeque;
use std::sync::Arc;

/// One call: its actor, who it reaches, and its bits (index and arguments), encoded once.
#[derive(Debug)]
pub(crate) struct Call {
    pub guid: NetGuid,
    /// The owning connection when called (a Client call's target): its id, never given again
    /// (a slot may serve another connection by the tick).
    pub owner: Option<super::ConnectionId>,
    pub target: RpcTarget,
    pub reliable: bool,
    /// Its bunch after the header, encoded once.
    pub encoded: EncodedCall,
    /// The static objects its arguments name: exported to a connection ahead of the call that
    /// has not acknowledged them, as a property's references are (UE serialises a call's object
    /// parameters through the package map, `SerializeObject`, which exports them).
    pub statics: Vec<NetGuid>,
}

/// Appends the static objects `value` names (objects in structs and arrays too) to `out`.
fn static_references(value: &Value, out: &mut Vec<NetGuid>) {
    match value {
        Value::Object(o) if NetGuid(o.0).is_static() && !out.contains(&NetGuid(o.0)) => out.push(NetGuid(o.0)),
        Value::Struct(fields) | Value::Array(fields) => fields.iter().for_each(|f| static_references(f, out)),
        _ => {}
    }
}

/// Calls made since the last tick, and the tick's own; the clients' Server calls not taken.
#[derive(Default)]
pub(crate) struct Calls {
    /// Made since the last tick.
    pub next: Vec<Arc<Call>>,
    /// This tick's (moved from `next` when the tick starts).
    pub frame: FrameCalls,
    /// The clients' Server calls delivered and not taken ([`NetDriver::take_server_rpcs`]).
    pub server: Vec<ServerRpcEvent>,
    /// Client calls made on an actor with no owning connection ([`NetDriver::rpcs_without_owner`]).
    pub without_owner: u64,
}

/// What a connection does when a reliable call finds
/// [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) calls waiting or in flight on it
/// ([`DriverConfig::reliable_overflow`](super::DriverConfig::reliable_overflow)): a client that
/// acknowledges nothing for that long is gone, hostile, or so far behind that the game's
/// reliable calls cannot all reach it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReliableOverflow {
    /// UE's way: the connection fails. The call is counted
    /// ([`ConnectionStats::rpcs_overflowed`](super::ConnectionStats::rpcs_overflowed)); at the
    /// end of the tick the connection is removed — nothing more is written to it, and a later
    /// call naming it is [`DriverError::UnknownConnection`] — and
    /// [`NetDriver::take_failed_connections`] names it, for the game to end its session.
    #[default]
    Close,
    /// The call is dropped and counted, and the connection goes on: its client never gets that
    /// call, and is not told — what "reliable" promises no longer holds for it.
    Drop,
}

/// Why the driver ended a connection ([`FailedConnection`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionFailure {
    /// A reliable call found [`MAX_RELIABLE_RPCS`](crate::wire::rpc::MAX_RELIABLE_RPCS) waiting
    /// or in flight ([`ReliableOverflow::Close`]).
    ReliableOverflow,
}

/// A connection the driver ended ([`NetDriver::take_failed_connections`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailedConnection {
    /// The connection (removed: the driver knows it no more).
    pub conn: ConnectionId,
    /// Why.
    pub why: ConnectionFailure,
    /// Its counters when it ended.
    pub stats: ConnectionStats,
}

impl NetDriver {
    /// Client calls made on an actor with no owning connection at the call, in all: they reach
    /// nobody. UE runs such a call on the server itself (`GetFunctionCallspace`), and logs "no
    /// owning connection" if it gets as far as the net driver: here the game runs it, if it
    /// wants it run, and this count tells it that it happened.
    pub fn rpcs_without_owner(&self) -> u64 {
        self.rpcs.without_owner
    }

    /// The connections the driver ended since the last call ([`ReliableOverflow::Close`]),
    /// oldest first. Each was removed at the end of the tick that failed it; end its session
    /// (`ServerSession::disconnect` with
    /// [`DisconnectReason::ReliableOverflow`](crate::session::DisconnectReason::ReliableOverflow)
    /// over UDP). Holds at most one entry per connection ever added.
    pub fn take_failed_connections(&mut self) -> Vec<FailedConnection> {
        std::mem::take(&mut self.failed)
    }

    /// At the end of a tick: removes the connections whose reliable calls overflowed this tick,
    /// under [`ReliableOverflow::Close`] (under it, a live connection's overflow count is this
    /// tick's: its first overflow ends it).
    pub(super) fn fail_overflowed(&mut self) {
        if self.cfg.reliable_overflow != ReliableOverflow::Close {
            return;
        }
        let over: Vec<ConnectionId> =
            self.conns.iter().filter(|c| !c.removed && c.stats.rpcs_overflowed > 0).map(|c| c.id).collect();
        for conn in over {
            let Ok(stats) = self.connection_stats(conn) else { continue };
            if self.remove_connection(conn).is_ok() {
                self.failed.push(FailedConnection { conn, why: ConnectionFailure::ReliableOverflow, stats });
            }
        }
    }
}

/// A numbered reliable call.
#[derive(Debug)]
struct Numbered {
    seq: u32,
    call: Arc<Call>,
    in_flight: bool,
    acked: bool,
}

/// One connection's reliable calls: those waiting for their channel, and the numbered stream;
/// and its client's Server calls as received.
#[derive(Debug, Default)]
pub(crate) struct ConnRpcs {
    /// The client's reliable Server calls, each tagged with its actor's GUID when it arrived if
    /// this connection owned the actor then (none: refused, its number used).
    incoming: ReliableWindow<Option<NetGuid>>,
    /// An acknowledgement of the client's reliable calls is owed: one arrived that the newest
    /// acknowledgement in flight does not cover (a new call, or a resend once none is in flight:
    /// the client did not hear it), or that acknowledgement was lost.
    ack_pending: bool,
    /// The newest acknowledgement written (the number it gives), while its packet is in flight.
    /// Each new number is acknowledged at once, whatever older ones fly: a client resends a
    /// call whose acknowledgement is late (`client::rpcs`), so one acknowledgement a round trip
    /// cost the client's calls copies.
    ack_in_flight: Option<u16>,
    /// The client's unreliable Server calls: the newest number taken and which of the
    /// [`ACK_WINDOW`](crate::wire::feedback::ACK_WINDOW) before it were (a repeated feedback
    /// datagram brings them again).
    unreliable_newest: Option<u16>,
    unreliable_seen: crate::wire::feedback::AckBits,
    /// Its Server calls delivered and not taken.
    untaken: usize,
    /// The reliable calls of the last feedback not taken for want of room (by their place among
    /// its calls): the reference's window skips them too.
    pub(crate) not_taken: Vec<usize>,
    /// The next reliable number.
    next: u32,
    /// Reliable calls whose channel's open is not acknowledged yet, in call order.
    waiting: Vec<Arc<Call>>,
    /// Numbered and not acknowledged, by number.
    stream: VecDeque<Numbered>,
    /// This tick's unreliable calls for the connection, by index in the tick's calls (scratch:
    /// no reference count is touched per call and connection).
    unreliable: Vec<u32>,
    /// Scratch: this tick's calls with a channel here (index, channel), the same by call (the
    /// fan-out's way back to call order), and the channels of those it put in `waiting`.
    chans: Vec<(u32, Chan)>,
    by_call: Vec<Chan>,
    fresh: Vec<Chan>,
    /// Scratch: `waiting`'s other buffer (its calls move, their counts untouched).
    spare: Vec<Arc<Call>>,
}

impl ConnRpcs {
    /// Reliable calls waiting or not acknowledged.
    pub fn outstanding(&self) -> usize {
        self.waiting.len() + self.stream.len()
    }

    /// The fate of reliable call `seq` (one of a settled packet's).
    pub fn settle(&mut self, seq: u32, delivered: bool) {
        let Some(front) = self.stream.front().map(|n| n.seq) else { return };
        let Some(n) = self.stream.get_mut(seq.wrapping_sub(front) as usize) else { return };
        debug_assert_eq!(n.seq, seq);
        if delivered {
            n.acked = true;
        } else if !n.acked {
            n.in_flight = false;
        }
        self.pop_acked();
    }

    /// Drops the acknowledged calls at the stream's front: it stays one number after another
    /// (`settle` indexes it by number).
    fn pop_acked(&mut self) {
        while self.stream.front().is_some_and(|n| n.acked) {
            self.stream.pop_front();
        }
    }
    /// The fate of a settled packet's acknowledgement of the client's calls (`next`: the
    /// number it gave).
    pub fn settle_ack(&mut self, next: u16, delivered: bool) {
        // An older one's fate changes nothing: a newer one flies.
        if self.ack_in_flight == Some(next) {
            self.ack_in_flight = None;
            self.ack_pending |= !delivered;
        }
    }

    /// Every call in flight delivered (the reference's perfect link).
    pub fn acknowledge_in_flight(&mut self) {
        self.ack_in_flight = None;
        for n in self.stream.iter_mut().filter(|n| n.in_flight) {
            n.acked = true;
        }
        self.pop_acked();
    }
}

/// The fate of a settled packet's `count` reliable calls (the front of the connection's
/// [`Reliability::rpcs`](super::reliability::Reliability::rpcs)): delivered, they are done; lost,
/// they go again.
pub(crate) fn settle_packet(conn: &mut Connection, (count, acks): (u32, u32), delivered: bool) {
    for _ in 0..acks {
        let Some(next) = conn.rel.calls_acks.pop_front() else { break };
        conn.rpcs.settle_ack(next, delivered);
    }
    for _ in 0..count {
        let Some(seq) = conn.rel.rpcs.pop_front() else { break };
        conn.rpcs.settle(seq, delivered);
        if !delivered {
            conn.stats.rpcs_resent += 1;
        }
    }
}

impl NetDriver {
    /// Calls remote procedure `rpc` of actor `id` with `args` (one per declared parameter, in
    /// order): a `Client` call reaches the actor's owning connection ([`Self::set_owner`]), a
    /// `NetMulticast` call every connection — each where the actor's channel is open at the next
    /// tick, or was when it began (a channel the tick closes still carries the calls made before
    /// it), which sends it after the frame's actors ([`self`](crate::net::rpc)). The arguments
    /// are checked and encoded now, once for every connection. Refused, changing nothing: an
    /// unknown call ([`DriverError::UnknownRpc`]), a Server call ([`DriverError::ServerRpc`]: a
    /// client calls it), arguments that do not fit its parameters ([`DriverError::RpcArgs`]), a
    /// call larger than a packet ([`DriverError::RpcTooLarge`]), a torn-off actor
    /// ([`DriverError::TornOff`]: it is its clients' own).
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(
    ///     ClassBuilder::new("Pawn")
    ///         .property(PropertyDecl::new("Hp", PropType::U16))
    ///         .rpc(RpcDecl::multicast("PlayHitEffect").reliable().param(PropertyDecl::new("Bone", PropType::U8)))
    ///         .build()
    ///         .unwrap(),
    /// );
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let pawn = store.spawn();
    /// let guid = driver.assign_guid(class, &store, pawn).unwrap();
    /// let mut frame = |driver: &mut NetDriver, store: &mut ClassStore, client: &mut ClientWorld| {
    ///     driver.tick(&mut [store]).unwrap();
    ///     for packet in driver.take_packets(conn).unwrap() {
    ///         client.receive(&packet).unwrap();
    ///     }
    ///     driver.receive_feedback(conn, &client.feedback()).unwrap();
    /// };
    /// frame(&mut driver, &mut store, &mut client); // the pawn's open, acknowledged
    /// driver.call_rpc(class, &store, pawn, "PlayHitEffect", &[Value::U8(7)]).unwrap();
    /// frame(&mut driver, &mut store, &mut client);
    /// let calls = client.take_rpcs();
    /// assert_eq!(calls.len(), 1);
    /// assert_eq!((calls[0].guid, calls[0].name.as_str()), (guid, "PlayHitEffect"));
    /// assert_eq!(calls[0].args, vec![Value::U8(7)]);
    /// assert!(driver.call_rpc(class, &store, pawn, "PlayHitEffect", &[]).is_err());
    /// ```
    pub fn call_rpc(
        &mut self,
        class: ClassId,
        store: &ClassStore,
        id: ActorId,
        rpc: &str,
        args: &[Value],
    ) -> Result<(), DriverError> {
        let ci = self.class_for(class, store)?;
        let layout = self.classes[ci].layout.clone();
        let unknown = || DriverError::UnknownRpc { class: layout.name.clone(), rpc: rpc.to_string() };
        let index = layout.rpc_index(rpc).ok_or_else(unknown)?;
        let decl = &layout.rpcs[index];
        if decl.target == RpcTarget::Server {
            return Err(DriverError::ServerRpc(rpc.to_string()));
        }
        let bits = crate::wire::rpc::encode_call(&layout, index, args).map_err(DriverError::RpcArgs)?;
        let worst = Some(u16::MAX).filter(|_| decl.reliable);
        let fits = crate::wire::packet::PacketWriter::new(self.cfg.mtu).rpc_fits_empty(worst, NetGuid(u64::MAX), &bits);
        if !fits {
            return Err(DriverError::RpcTooLarge { rpc: rpc.to_string(), bits: bits.len_bits() });
        }
        // Checked before a GUID is given: a refused call changes nothing (a torn-off actor has
        // one already).
        if let Some(g) = self.guid_of(class, id).filter(|_| self.classes[ci].actors[id.index as usize].torn()) {
            return Err(DriverError::TornOff(g));
        }
        let guid = self.assign_guid(class, store, id)?;
        let a = &self.classes[ci].actors[id.index as usize];
        let owner = a.owner.map(|slot| self.conns[slot as usize].id);
        let encoded = EncodedCall::new(guid, decl.reliable, &bits);
        if decl.target == RpcTarget::Client && owner.is_none() {
            self.rpcs.without_owner += 1;
        }
        let mut statics = Vec::new();
        if !self.statics.paths.is_empty() {
            args.iter().for_each(|a| static_references(a, &mut statics));
        }
        let (target, reliable) = (decl.target, decl.reliable);
        self.rpcs.next.push(Arc::new(Call { guid, owner, target, reliable, encoded, statics }));
        Ok(())
    }
}
