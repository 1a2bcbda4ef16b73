//! Remote procedure calls: UE's `Client` and `NetMulticast` functions the server calls, reliable or
//! not, and the `Server` functions its clients call ([`crate::schema::rpc`] declares them,
//! [`crate::wire::rpc`] writes them; a client's ride its feedback, [`crate::wire::feedback`]).
//!
//! ```text
//! call_rpc(actor, "Name", args)   the arguments checked and encoded once (the call's bits)
//! tick, per connection, after the frame's actors:
//!   fan out       this tick's calls reaching the connection: a Client call its owning
//!                 connection, a Multicast call every connection — each only where the actor's
//!                 channel is open (its open has gone); elsewhere dropped, as UE drops a call
//!                 for an actor without a channel
//!   number        reliable calls wait until their channel's open is acknowledged (the client
//!                 has the actor), then take the connection's next reliable number, in call order
//!   write         the acknowledgement of the client's Server calls, when one is owed and none
//!                 flies; numbered calls not in flight (lost ones first: lowest numbers), then
//!                 this tick's unreliable ones unless the connection saturated; one bunch each,
//!                 after the actors' bunches
//! feedback        a delivered packet's reliable calls are done; a lost one's are written again;
//!                 the client's Server calls are taken (receive_calls: owned actors only, reliable
//!                 ones through the same window the client uses, each owing an acknowledgement)
//! ```
//!
//! A reliable call goes once per packet until a packet carrying it is acknowledged, and the
//! client applies each number once, in order (it holds later ones until the gap fills:
//! [`crate::client`]), so reliable calls arrive exactly once and in number order: each actor's in
//! call order (UE's per-channel order), and across actors in call order too, but for a call on
//! an actor whose open is not acknowledged yet, numbered when it is. Waiting for the open's
//! acknowledgement keeps a reliable call from reaching a client whose copy of the actor is still
//! on its way (an open lost while the call's packet arrived would leave nothing to call); it costs
//! a call on an actor opened in the same frame a round trip. At most
//! [`MAX_RELIABLE_RPCS`] calls wait or fly per connection
//! (UE closes a connection whose reliable buffer overflows; here the call is dropped and counted,
//! [`ConnectionStats::rpcs_overflowed`](super::ConnectionStats::rpcs_overflowed)). An unreliable
//! call goes in its tick's packets or never.
//!
//! Calls are written after the actors' bunches and fast arrays, so an actor a frame opens is open
//! before a call of that frame reaches it, and the call sees the state the frame sent. Their bytes
//! count against the connection's bandwidth like any other: reliable calls are written whatever
//! the budget (UE sends RPCs as they are called, outside the priority list), unreliable ones not
//! on a saturated connection (UE's `IsNetReady` check).

use super::connection::{pair, Connection};
use super::send::{FrameWrite, WriteCtx};
use super::{ClassId, DriverError, NetDriver, NetGuid};
use crate::schema::RpcTarget;
use crate::store::{ActorId, ClassStore};
use crate::value::Value;
use crate::wire::rpc::{decode_call, Arrival, CallRun, EncodedCall, ReliableWindow, RpcBunch, MAX_RELIABLE_RPCS};
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
}

impl Call {
    /// Whether the call goes to connection `conn` (where its actor's channel is open): a Client
    /// call to its owner's, a Multicast call to every one.
    fn reaches(&self, conn: super::ConnectionId) -> bool {
        match self.target {
            RpcTarget::Client => self.owner == Some(conn),
            RpcTarget::Multicast => true,
            RpcTarget::Server => false,
        }
    }
}

/// A tick's calls, and what every connection's writing needs of them found once: each call's
/// live actor as a pair key, the keys sorted, so a connection reads its pairs of the calls'
/// actors in one forward walk ([`CallChannels::frame_chans`]).
#[derive(Default)]
pub(crate) struct FrameCalls {
    pub calls: Vec<Arc<Call>>,
    /// (pair key, call index) of each call whose actor is live, by key.
    by_key: Vec<(u64, u32)>,
    /// The unreliable calls' bunches in call order, for every connection to copy runs of, and
    /// each call's place in it (reliable calls: none).
    run: CallRun,
    run_index: Vec<u32>,
}

impl FrameCalls {
    /// A tick's calls, their unreliable ones' bunches laid in a run; their actors not found yet
    /// ([`Self::resolve`]).
    pub fn new(calls: Vec<Arc<Call>>) -> Self {
        let mut run = CallRun::default();
        let mut place = |c: &Arc<Call>| match c.reliable {
            true => u32::MAX,
            false => {
                run.push(&c.encoded);
                run.len() as u32 - 1
            }
        };
        let run_index = calls.iter().map(&mut place).collect();
        Self { calls, by_key: Vec::new(), run, run_index }
    }

    /// Finds each call's actor among the live ones (`guids`, as the frame writes them).
    pub fn resolve(&mut self, guids: &crate::ids::GuidMap<(u32, u32)>) {
        self.by_key.clear();
        let found = self.calls.iter().enumerate().filter_map(|(i, c)| guids.get(&c.guid).map(|&(cl, s)| (cl, s, i)));
        self.by_key.extend(found.map(|(cl, s, i)| (super::pairs::pair_key(cl, s), i as u32)));
        self.by_key.sort_unstable();
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// Where a connection stands with the actors of a frame's calls: the driver's pair tables
/// ([`PairChannels`]) or, for the reference, its own channels (any `Fn(&Connection, NetGuid) ->
/// Chan`).
pub(crate) trait CallChannels {
    /// Connection `conn`'s channel of actor `guid`.
    fn chan(&self, conn: &Connection, guid: NetGuid) -> Chan;

    /// `out[i]`: `conn`'s channel of call `i`'s actor, for every call reaching it (the others:
    /// [`Chan::Closed`]).
    fn frame_chans(&self, conn: &Connection, calls: &FrameCalls, out: &mut Vec<Chan>) {
        out.clear();
        out.extend(calls.calls.iter().map(|c| if c.reaches(conn.id) { self.chan(conn, c.guid) } else { Chan::Closed }));
    }
}

impl<F: Fn(&Connection, NetGuid) -> Chan> CallChannels for F {
    fn chan(&self, conn: &Connection, guid: NetGuid) -> Chan {
        self(conn, guid)
    }
}

/// The driver's channels: its connections' pair tables, the live actors by GUID.
pub(crate) struct PairChannels<'a>(pub &'a crate::ids::GuidMap<(u32, u32)>);

impl CallChannels for PairChannels<'_> {
    fn chan(&self, conn: &Connection, guid: NetGuid) -> Chan {
        chan_of(conn.pair_of(self.0, guid))
    }

    /// One forward walk of the connection's pairs in the calls' key order.
    fn frame_chans(&self, conn: &Connection, calls: &FrameCalls, out: &mut Vec<Chan>) {
        out.clear();
        out.resize(calls.calls.len(), Chan::Closed);
        let reaching = calls.by_key.iter().filter(|&&(_, i)| calls.calls[i as usize].reaches(conn.id));
        conn.pairs.for_each_sorted(reaching.copied(), |i, ps| out[i as usize] = chan_of(ps));
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
}

/// A Server call a client made, as the server received it ([`NetDriver::take_server_rpcs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRpcEvent {
    /// The connection whose client called it (it owns the actor).
    pub conn: super::ConnectionId,
    /// The actor called.
    pub guid: NetGuid,
    /// Its class.
    pub class: ClassId,
    /// Its id in its class's store.
    pub id: ActorId,
    /// The call's index in its class.
    pub rpc: usize,
    /// The call's name.
    pub name: String,
    /// Its arguments, one per parameter, in order.
    pub args: Vec<Value>,
    /// A reliable call.
    pub reliable: bool,
}

/// Most Server calls of one connection delivered and not taken ([`NetDriver::take_server_rpcs`]):
/// past it an unreliable call is dropped and counted
/// ([`ConnectionStats::server_rpcs_refused`](super::ConnectionStats::server_rpcs_refused)), and a
/// reliable one is not taken at all — its number not used, not acknowledged, so its client sends
/// it again — while fewer than its held calls and itself fit. Per connection: one client's flood
/// costs no other client a call.
pub const MAX_UNTAKEN_SERVER_RPCS: usize = 8 * 1024;

/// Where a connection stands with an actor's channel, for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chan {
    /// No channel, or one whose open has not gone (or a dormant or torn-off one).
    Closed,
    /// Its open has gone, not yet acknowledged.
    Opened,
    /// Its open is acknowledged: the client has the actor.
    Acked,
}

/// The channel state a connection's pair gives (the driver's channels; the reference has its own).
fn chan_of(pair: Option<&super::connection::PairState>) -> Chan {
    match pair {
        Some(ps) if ps.flags & (pair::DORMANT | pair::TORN) != 0 => Chan::Closed,
        Some(ps) if ps.flags & pair::OPEN_ACKED != 0 => Chan::Acked,
        Some(ps) if ps.flags & pair::EVER_OPENED != 0 => Chan::Opened,
        _ => Chan::Closed,
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
    /// The client has reliable calls the server's packets have not acknowledged yet.
    ack_pending: bool,
    /// An acknowledgement is in flight.
    ack_in_flight: bool,
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
    /// Scratch: the connection's channel of each of this tick's calls' actors, and the indices
    /// of the tick's calls it put in `waiting`.
    chans: Vec<Chan>,
    fresh: Vec<u32>,
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

    /// Takes the client's reliable Server call `call` into the window (`tag`: its actor, if
    /// this connection owned it on arrival); `deliver` gets the calls it releases, in order. A
    /// call in order, or a resend (the client did not hear the acknowledgement), owes an
    /// acknowledgement; one whose number came with other bits or far from the window (only a
    /// hostile client sends that, and it could send a new call as well) is delivered like any.
    fn accept_call(
        &mut self,
        call: RpcBunch,
        tag: Option<NetGuid>,
        deliver: impl FnMut(RpcBunch, Option<NetGuid>),
    ) -> Arrival {
        let arrival = self.incoming.accept(call, tag, deliver);
        if arrival != Arrival::Conflict {
            self.ack_pending = true;
        }
        arrival
    }

    /// Whether the client's unreliable call numbered `seq` is one not taken before: newer than
    /// the newest (by less than half the number space), or one of the 255 before it not seen.
    fn unreliable_fresh(&mut self, seq: u16) -> bool {
        let Some(newest) = self.unreliable_newest else {
            self.unreliable_newest = Some(seq);
            self.unreliable_seen = crate::wire::feedback::AckBits::default();
            self.unreliable_seen.set(0);
            return true;
        };
        let ahead = seq.wrapping_sub(newest);
        if ahead != 0 && ahead < 0x8000 {
            self.unreliable_seen.shift(u32::from(ahead));
            self.unreliable_seen.set(0);
            self.unreliable_newest = Some(seq);
            return true;
        }
        let back = u32::from(newest.wrapping_sub(seq));
        if back < crate::wire::feedback::ACK_WINDOW && !self.unreliable_seen.get(back) {
            self.unreliable_seen.set(back);
            return true;
        }
        false
    }

    /// The fate of a settled packet's acknowledgement of the client's calls (`next`: the
    /// number it gave).
    pub fn settle_ack(&mut self, next: u16, delivered: bool) {
        self.ack_in_flight = false;
        if delivered && next == self.incoming.expected() as u16 {
            self.ack_pending = false;
        }
    }

    /// Every call in flight delivered (the reference's perfect link).
    pub fn acknowledge_in_flight(&mut self) {
        if self.ack_in_flight {
            self.ack_in_flight = false;
            self.ack_pending = false;
        }
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
    /// tick, which sends it after the frame's actors ([`self`](crate::net::rpc)). The arguments
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
        self.rpcs.next.push(Arc::new(Call { guid, owner, target: decl.target, reliable: decl.reliable, encoded }));
        Ok(())
    }
}

impl NetDriver {
    /// The clients' Server calls received since the last call, in arrival order (a reliable
    /// call once, after every reliable call its client numbered before it).
    ///
    /// A call reaches the game only from the connection that owns its actor when the call
    /// arrives ([`Self::set_owner`]; a sub-object's owner's) — UE drops a Server RPC from any
    /// other — on an actor still live when its turn comes, decoded with the actor's class and
    /// declared `Server`; anything else is dropped and counted
    /// ([`ConnectionStats::server_rpcs_refused`](super::ConnectionStats::server_rpcs_refused)).
    pub fn take_server_rpcs(&mut self) -> Vec<ServerRpcEvent> {
        for c in &mut self.conns {
            c.rpcs.untaken = 0;
        }
        std::mem::take(&mut self.rpcs.server)
    }

    /// A feedback's Server calls from connection `ci`'s client.
    pub(crate) fn receive_calls(&mut self, ci: usize, calls: Vec<RpcBunch>) {
        let mut out = std::mem::take(&mut self.rpcs.server);
        let owned = |guid: NetGuid| self.owned_by(ci, guid);
        let tags: Vec<Option<NetGuid>> = calls.iter().map(|c| owned(c.target).then_some(c.target)).collect();
        let mut rpcs = std::mem::take(&mut self.conns[ci].rpcs);
        rpcs.not_taken.clear();
        for (i, (call, tag)) in calls.into_iter().zip(tags).enumerate() {
            if !call.reliable {
                if rpcs.unreliable_fresh(call.seq.unwrap_or(0)) {
                    self.deliver_server_call(ci, &mut rpcs, &call, tag, false, &mut out);
                } else {
                    self.conns[ci].stats.server_rpcs_stale += 1;
                }
                continue;
            }
            // Room for it and every call it may release (the game takes them every frame; one
            // that does not, or a flood, leaves the client resending instead).
            if rpcs.untaken + rpcs.incoming.held() + 1 > MAX_UNTAKEN_SERVER_RPCS {
                rpcs.not_taken.push(i);
                self.conns[ci].stats.server_rpcs_no_room += 1;
                continue;
            }
            let mut delivered = Vec::new();
            if rpcs.accept_call(call, tag, |call, tag| delivered.push((call, tag))) == Arrival::Stale {
                self.conns[ci].stats.server_rpcs_stale += 1;
            }
            for (call, tag) in delivered {
                self.deliver_server_call(ci, &mut rpcs, &call, tag, true, &mut out);
            }
        }
        self.conns[ci].rpcs = rpcs;
        self.rpcs.server = out;
    }

    /// Whether connection `ci` owns live actor `guid` (a sub-object: its owner's owner), not torn
    /// off (its clients' own: no channel, no call).
    fn owned_by(&self, ci: usize, guid: NetGuid) -> bool {
        let Some(&(c, s)) = self.guids.get(&guid) else { return false };
        self.classes[c as usize].actors.get(s as usize).is_some_and(|a| a.owner == Some(ci as u32) && !a.torn())
    }

    /// Decodes a Server call whose actor was `tag` when it arrived (none: not owned then) and
    /// delivers it — if the connection still owns the actor (a call held back while it did must
    /// not run once another player has it) and has room — or counts it refused.
    fn deliver_server_call(
        &mut self,
        ci: usize,
        rpcs: &mut ConnRpcs,
        call: &RpcBunch,
        tag: Option<NetGuid>,
        reliable: bool,
        out: &mut Vec<ServerRpcEvent>,
    ) {
        let room = rpcs.untaken < MAX_UNTAKEN_SERVER_RPCS;
        let event = tag.filter(|&g| room && self.owned_by(ci, g)).and_then(|guid| {
            let &(c, s) = self.guids.get(&guid)?;
            let class = &self.classes[c as usize];
            let (rpc, args) = decode_call(&class.layout, call).ok()?;
            let decl = &class.layout.rpcs[rpc];
            let a = class.actors.get(s as usize)?;
            (decl.target == RpcTarget::Server && decl.reliable == reliable).then(|| ServerRpcEvent {
                conn: self.conns[ci].id,
                guid,
                class: ClassId(c),
                id: ActorId { index: s, generation: a.generation },
                rpc,
                name: decl.name.clone(),
                args,
                reliable,
            })
        });
        let stats = &mut self.conns[ci].stats;
        match event {
            Some(e) => {
                out.push(e);
                rpcs.untaken += 1;
                stats.server_rpcs_delivered += 1;
            }
            None => stats.server_rpcs_refused += 1,
        }
    }
}

/// Keeps connection `conn`'s reliable Server-call window as the driver's (the reference, which
/// has connections of its own, takes the same feedback's calls: its acknowledgements are then
/// the same bytes). Owned or not, every reliable call takes its number.
pub(crate) fn track_calls(conn: &mut Connection, calls: &[RpcBunch], not_taken: &[usize]) {
    for (_, call) in calls.iter().enumerate().filter(|(i, c)| c.reliable && !not_taken.contains(i)) {
        conn.rpcs.accept_call(call.clone(), None, |_, _| {});
    }
}

impl WriteCtx<'_> {
    /// A connection's calls at the end of its frame (see the module documentation): this
    /// tick's `calls` fanned out by `channels` (where the connection stands with each actor's
    /// channel), reliable ones numbered once their channel is acknowledged, then written —
    /// numbered ones not in flight, then the unreliable ones unless `saturated`. `write`: false
    /// when the connection is written nothing this frame (not ready): reliable calls keep
    /// waiting, unreliable ones are dropped.
    pub(crate) fn write_rpcs(
        &self,
        conn: &mut Connection,
        st: &mut FrameWrite,
        calls: &FrameCalls,
        (saturated, write): (bool, bool),
        channels: &impl CallChannels,
    ) {
        if calls.is_empty() && conn.rpcs.outstanding() == 0 && !conn.rpcs.ack_pending {
            return;
        }
        let mut rpcs = std::mem::take(&mut conn.rpcs);
        let (mut chans, mut fresh) = (std::mem::take(&mut rpcs.chans), std::mem::take(&mut rpcs.fresh));
        if !calls.is_empty() {
            channels.frame_chans(conn, calls, &mut chans);
        }
        let earlier = rpcs.waiting.len();
        for (i, call) in calls.calls.iter().enumerate() {
            if !call.reaches(conn.id) {
                continue;
            }
            if chans[i] == Chan::Closed {
                conn.stats.rpcs_dropped += 1;
            } else if !call.reliable {
                rpcs.unreliable.push(i as u32);
            } else if rpcs.outstanding() >= MAX_RELIABLE_RPCS as usize {
                conn.stats.rpcs_overflowed += 1;
            } else {
                rpcs.waiting.push(call.clone());
                fresh.push(i as u32);
            }
        }
        // Number the reliable calls whose channel the client has, in call order (this tick's
        // channels known already; earlier calls' looked up).
        let mut waiting = std::mem::replace(&mut rpcs.waiting, std::mem::take(&mut rpcs.spare));
        for (at, call) in waiting.drain(..).enumerate() {
            let chan = match at.checked_sub(earlier) {
                None => channels.chan(conn, call.guid),
                Some(k) => chans[fresh[k] as usize],
            };
            match chan {
                Chan::Acked => {
                    rpcs.stream.push_back(Numbered { seq: rpcs.next, call, in_flight: false, acked: false });
                    rpcs.next = rpcs.next.wrapping_add(1);
                }
                Chan::Opened => rpcs.waiting.push(call),
                Chan::Closed => conn.stats.rpcs_dropped += 1,
            }
        }
        rpcs.spare = waiting;
        fresh.clear();
        (rpcs.chans, rpcs.fresh) = (chans, fresh);
        if write && rpcs.ack_pending && !rpcs.ack_in_flight {
            let next = rpcs.incoming.expected() as u16;
            if !st.full && self.ensure_in(conn, st, |c| c.writer.calls_ack_fits(&c.out)) {
                conn.writer.write_calls_ack(&mut conn.out, next);
                st.wrote_calls_ack();
                conn.rel.calls_acks.push_back(next);
                rpcs.ack_in_flight = true;
            } else {
                st.full = true;
            }
        }
        if write {
            for n in rpcs.stream.iter_mut().filter(|n| !n.in_flight && !n.acked) {
                if !self.write_rpc(conn, st, Some(n.seq as u16), &n.call) {
                    break;
                }
                conn.rel.rpcs.push_back(n.seq);
                n.in_flight = true;
            }
        }
        let mut sent = 0;
        if write && !saturated {
            sent = self.write_unreliable(conn, st, calls, &rpcs.unreliable);
        }
        conn.stats.rpcs_dropped += (rpcs.unreliable.len() - sent) as u64;
        rpcs.unreliable.clear();
        conn.rpcs = rpcs;
    }

    /// Writes the tick's unreliable calls `list` (their indices, in call order) until the window
    /// is full; returns how many went. Each call starting a packet is written alone, then those
    /// after it in the frame's run that this connection gets too, as many as fit, in one copy.
    fn write_unreliable(&self, conn: &mut Connection, st: &mut FrameWrite, calls: &FrameCalls, list: &[u32]) -> usize {
        let mut k = 0;
        while k < list.len() {
            let i = list[k] as usize;
            if !self.write_rpc(conn, st, None, &calls.calls[i]) {
                break;
            }
            k += 1;
            let first = calls.run_index[i] as usize + 1;
            let follow = list[k..].iter().zip(first..).take_while(|&(&j, r)| calls.run_index[j as usize] as usize == r);
            let n = conn.writer.write_call_run(&mut conn.out, &calls.run, first, follow.count());
            st.wrote_calls(n);
            conn.stats.rpcs_sent += n as u64;
            k += n;
        }
        k
    }

    /// Writes one call bunch; false when the window is full.
    fn write_rpc(&self, conn: &mut Connection, st: &mut FrameWrite, seq: Option<u16>, call: &Call) -> bool {
        if st.full || !self.ensure_in(conn, st, |c| c.writer.call_fits(&c.out, &call.encoded)) {
            st.full = true;
            return false;
        }
        conn.writer.write_call(&mut conn.out, &call.encoded, seq);
        st.wrote_rpc(seq.is_some());
        conn.stats.rpcs_sent += 1;
        true
    }
}
