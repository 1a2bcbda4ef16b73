//! Writing a tick's calls: found and encoded once for every connection ([`FrameCalls`]), then
//! fanned out, numbered and written per connection at the end of its frame
//! ([`WriteCtx::write_rpcs`]).

use super::{Call, Numbered};
use crate::net::connection::{pair, Connection, PairState};
use crate::net::send::{FrameWrite, WriteCtx};
use crate::net::{ConnectionId, NetGuid};
use crate::schema::RpcTarget;
use crate::wire::rpc::{CallRun, MAX_RELIABLE_RPCS};
use std::sync::Arc;

/// A tick's calls, and what every connection's writing needs of them found once: each call's
/// live actor as a pair key, the keys sorted, so a connection meets its channels of the calls'
/// actors in one walk of both sorted sides ([`CallChannels::frame_chans`]), and how many calls
/// reach each connection, so those that find no channel there are counted without a step each.
#[derive(Default)]
pub(crate) struct FrameCalls {
    pub calls: Vec<Arc<Call>>,
    /// (pair key, call index) of each call whose actor is live, by key.
    by_key: Vec<(u64, u32)>,
    /// The unreliable calls' bunches in call order, for every connection to copy runs of, and
    /// each call's place in it (reliable calls: none).
    run: CallRun,
    run_index: Vec<u32>,
    /// Whom each call goes to, side by side (every connection's fan-out reads it for every call:
    /// read through each call's own allocation, it cost a one-thread mmo frame with ~900 calls
    /// ~2.5 ms more).
    reach: Vec<Reach>,
    /// How many calls reach every connection (Multicast ones), and the owner of each Client
    /// call, sorted: how many reach a connection, without reading every call.
    multicasts: usize,
    owners: Vec<ConnectionId>,
    /// (actor, call index) of every call, by actor: the calls on a channel the tick closed
    /// ([`Self::add_closing`]).
    by_guid: Vec<(NetGuid, u32)>,
    /// The calls that would open a channel for their actor, on a due actor ([`Self::openers`]):
    /// a reliable call or a multicast — UE's `InternalProcessRemoteFunction` creates the channel
    /// and replicates the actor before it sends the call; an unreliable Client call it drops on
    /// a connection that is not net-ready, and a connection opens channels for calls only once
    /// saturated ([`crate::net::channels`]).
    openers: Vec<(u32, u32, u64)>,
}

/// Whom a call goes to (where its actor's channel is open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// Every connection: a Multicast call.
    Every,
    /// Its owner's connection: a Client call.
    Only(ConnectionId),
    /// No connection: a Client call on an actor nobody owned when called.
    Nobody,
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
        let reach = calls
            .iter()
            .map(|c| match (c.target, c.owner) {
                (RpcTarget::Multicast, _) => Reach::Every,
                (RpcTarget::Client, Some(owner)) => Reach::Only(owner),
                _ => Reach::Nobody,
            })
            .collect::<Vec<Reach>>();
        let multicasts = reach.iter().filter(|&&r| r == Reach::Every).count();
        let mut owners: Vec<ConnectionId> =
            reach.iter().filter_map(|&r| if let Reach::Only(c) = r { Some(c) } else { None }).collect();
        owners.sort_unstable();
        let mut by_guid: Vec<(NetGuid, u32)> = calls.iter().enumerate().map(|(i, c)| (c.guid, i as u32)).collect();
        by_guid.sort_unstable();
        Self { calls, by_key: Vec::new(), run, run_index, reach, multicasts, owners, by_guid, openers: Vec::new() }
    }

    /// Adds to `out` (connection `conn`'s calls with a channel, in call order) the calls reaching
    /// `conn` whose actor's channel the tick closed (`closing`: each with where a call stood with
    /// it before the close), still in call order: made before the tick, while the channel was
    /// open, they go down it as UE's would have at call time. A reliable one only where the
    /// open was acknowledged (the numbering rule: a closed channel's open never will be).
    fn add_closing(&self, conn: ConnectionId, closing: &[Ended], out: &mut Vec<(u32, Chan)>) {
        let before = out.len();
        for &Ended { guid, chan, .. } in closing {
            let first = self.by_guid.partition_point(|&(g, _)| g < guid);
            for &(_, i) in self.by_guid[first..].iter().take_while(|&&(g, _)| g == guid) {
                if self.reaches(i as usize, conn) && (chan == Chan::Acked || !self.calls[i as usize].reliable) {
                    out.push((i, chan));
                }
            }
        }
        if out.len() > before {
            // Stable: a call found with a channel open now keeps it (its actor's channel opened
            // again), and one closed twice is added once.
            out.sort_by_key(|&(i, _)| i);
            out.dedup_by_key(|&mut (i, _)| i);
        }
    }

    /// How many calls go to connection `conn` where their actor's channel is open.
    fn reaching(&self, conn: ConnectionId) -> usize {
        let first = self.owners.partition_point(|&c| c < conn);
        self.multicasts + self.owners[first..].partition_point(|&c| c == conn)
    }

    /// Whether call `i` goes to connection `conn` (where its actor's channel is open): a Client
    /// call to its owner's, a Multicast call to every one.
    pub fn reaches(&self, i: usize, conn: ConnectionId) -> bool {
        match self.reach[i] {
            Reach::Every => true,
            Reach::Only(owner) => owner == conn,
            Reach::Nobody => false,
        }
    }

    /// The calls that would open a channel for their actor where it has none — a reliable call
    /// or a multicast, reaching some connection — whose actor is due this frame: (call index, due index, pair key), in call order — found
    /// once a frame ([`Self::find_due`]) for every saturated connection to read.
    pub fn openers(&self) -> &[(u32, u32, u64)] {
        &self.openers
    }

    /// Finds the due actors of the calls that would open a channel for them ([`Self::openers`]):
    /// `due_index`, per class and slot, the actor's place in the frame's due list
    /// (`crate::net::level::NOT_DUE`: not due). After [`Self::resolve`].
    pub fn find_due(&mut self, due_index: &[Vec<u32>]) {
        self.openers.clear();
        for &(key, i) in &self.by_key {
            let call = &self.calls[i as usize];
            if self.reach[i as usize] == Reach::Nobody || !(call.reliable || call.target == RpcTarget::Multicast) {
                continue;
            }
            let (c, s) = crate::net::pairs::split_key(key);
            let d = due_index.get(c as usize).and_then(|d| d.get(s as usize)).copied();
            if let Some(d) = d.filter(|&d| d != crate::net::level::NOT_DUE) {
                self.openers.push((i, d, key));
            }
        }
        self.openers.sort_unstable();
    }

    /// Finds each call's actor among the live ones (`guids`, as the frame writes them).
    pub fn resolve(&mut self, guids: &crate::ids::GuidMap<(u32, u32)>) {
        self.by_key.clear();
        let found = self.calls.iter().enumerate().filter_map(|(i, c)| guids.get(&c.guid).map(|&(cl, s)| (cl, s, i)));
        self.by_key.extend(found.map(|(cl, s, i)| (crate::net::pairs::pair_key(cl, s), i as u32)));
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

    /// Into `out`, in call order: each call reaching `conn` whose actor's channel there is not
    /// [`Chan::Closed`], with that channel (`scratch`: a buffer).
    fn frame_chans(&self, conn: &Connection, calls: &FrameCalls, out: &mut Vec<(u32, Chan)>, _scratch: &mut Vec<Chan>) {
        out.clear();
        for (i, c) in calls.calls.iter().enumerate() {
            if calls.reaches(i, conn.id) {
                let chan = self.chan(conn, c.guid);
                if chan != Chan::Closed {
                    out.push((i as u32, chan));
                }
            }
        }
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

    /// The connection's channel rows and the calls' sorted actors met in one galloping walk
    /// (a step per row or per call, whichever side is shorter: an mmo connection holds a few
    /// hundred channels, a frame has ~900 calls, mostly elsewhere — read one by one, every call
    /// cost every connection ~4 ns), each call found kept both in a list and by call in
    /// `scratch`, then put in call order: the list sorted when it is short beside the calls
    /// (an mmo connection finds one or two), else `scratch` read back in order (sorting a
    /// thousand cost ~9 ns a call). A dormant copy is no channel for a call, so the dormant
    /// table is not read.
    fn frame_chans(&self, conn: &Connection, calls: &FrameCalls, out: &mut Vec<(u32, Chan)>, scratch: &mut Vec<Chan>) {
        out.clear();
        scratch.clear();
        scratch.resize(calls.calls.len(), Chan::Closed);
        let few = calls.calls.len() / FEW_HITS;
        let mut found = 0;
        conn.pairs.for_each_channel_among(&calls.by_key, |i, ps| {
            let chan = chan_of(Some(ps));
            if chan != Chan::Closed && calls.reaches(i as usize, conn.id) {
                scratch[i as usize] = chan;
                if found < few {
                    out.push((i, chan));
                }
                found += 1;
            }
        });
        if found < few {
            out.sort_unstable_by_key(|&(i, _)| i);
        } else {
            out.clear();
            let open = scratch.iter().enumerate().filter(|(_, &c)| c != Chan::Closed);
            out.extend(open.map(|(i, &c)| (i as u32, c)));
        }
    }
}

/// A connection that finds a channel for fewer than one in this many of the frame's calls sorts
/// them back into call order; more, and it reads them back from their places by call (the list
/// stops growing there).
const FEW_HITS: usize = 16;

/// Where a connection stands with an actor's channel, for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chan {
    /// No channel (or a dormant or torn-off one).
    Closed,
    /// A channel whose open has not gone yet (the connection's window was full): a reliable
    /// call waits for it, as UE's reliable stream holds it behind the open; an unreliable one
    /// cannot go (the client has no actor to call).
    Owed,
    /// Its open has gone, not yet acknowledged.
    Opened,
    /// Its open is acknowledged: the client has the actor.
    Acked,
}

/// The channel state a connection's pair gives (the driver's channels; the reference has its own).
fn chan_of(pair: Option<&PairState>) -> Chan {
    pair.map_or(Chan::Closed, |ps| chan_of_flags(ps.flags))
}

/// The channel state of a pair with `flags`.
fn chan_of_flags(flags: u8) -> Chan {
    match flags {
        f if f & (pair::DORMANT | pair::TORN) != 0 => Chan::Closed,
        f if f & pair::OPEN_ACKED != 0 => Chan::Acked,
        f if f & pair::EVER_OPENED != 0 => Chan::Opened,
        f if f & pair::CHANNEL != 0 => Chan::Owed,
        _ => Chan::Closed,
    }
}

/// The channels a connection closed this tick, each with where a call stood with it before
/// ([`note_close`]).
pub(crate) type Closing = Vec<Ended>;

/// A channel ended since its connection's calls were last fanned out ([`Closing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    /// Its actor.
    pub guid: NetGuid,
    /// Where a call stood with it as it ended — kept up to date by the feedback that comes
    /// before the tick where a game call ended it (a late acknowledgement of its open, a reopen
    /// request), as the reference's channel, which lasts to its tick ([`Closes::open_delivered`](crate::net::connection::Closes::open_delivered),
    /// [`Closes::reopened`](crate::net::connection::Closes::reopened)).
    pub chan: Chan,
    /// Its epoch (a delivered open of an earlier channel of the actor is not its own).
    pub epoch: u8,
}

/// A channel of actor `guid` closes (destroyed, torn off, dormant, not relevant, its sublevel
/// unloaded, its owner's closed), its pair's flags `flags` before: noted in the connection's
/// `closing` list ([`Closes::ending`](crate::net::connection::Closes)), so this tick's calls
/// made while it was open still go ([`WriteCtx::write_rpcs`]). Every close site that ends an
/// open channel notes it, through [`Closes::end`](crate::net::connection::Closes::end) or
/// [`Closes::note`](crate::net::connection::Closes::note) (resends of lost closes do not: their
/// channel closed in an earlier tick).
pub(crate) fn note_close(closing: &mut Closing, guid: NetGuid, state: &PairState) {
    let chan = chan_of_flags(state.flags);
    // (A channel whose open never went carries nothing: the client never had the actor.)
    if matches!(chan, Chan::Opened | Chan::Acked) {
        closing.push(Ended { guid, chan, epoch: state.epoch });
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
            conn.closes.ending.clear();
            return;
        }
        let mut rpcs = std::mem::take(&mut conn.rpcs);
        let (mut chans, mut fresh) = (std::mem::take(&mut rpcs.chans), std::mem::take(&mut rpcs.fresh));
        chans.clear();
        if !calls.is_empty() {
            channels.frame_chans(conn, calls, &mut chans, &mut rpcs.by_call);
            // A channel this tick closed still carries the calls made while it was open (only
            // a connection with such a close does this).
            if !conn.closes.ending.is_empty() {
                calls.add_closing(conn.id, &conn.closes.ending, &mut chans);
            }
            // The calls for this connection that found no channel: counted, not visited.
            conn.stats.rpcs_without_channel += (calls.reaching(conn.id) - chans.len()) as u64;
        }
        conn.closes.ending.clear();
        let earlier = rpcs.waiting.len();
        for &(i, chan) in &chans {
            let call = &calls.calls[i as usize];
            if !call.reliable && chan == Chan::Owed {
                conn.stats.rpcs_dropped += 1;
            } else if !call.reliable {
                rpcs.unreliable.push(i);
            } else if rpcs.outstanding() >= MAX_RELIABLE_RPCS as usize {
                conn.stats.rpcs_overflowed += 1;
            } else {
                rpcs.waiting.push(call.clone());
                fresh.push(chan);
            }
        }
        // Number the reliable calls whose channel the client has, in call order (this tick's
        // channels known already; earlier calls' looked up).
        let mut waiting = std::mem::replace(&mut rpcs.waiting, std::mem::take(&mut rpcs.spare));
        for (at, call) in waiting.drain(..).enumerate() {
            let chan = match at.checked_sub(earlier) {
                None => channels.chan(conn, call.guid),
                Some(k) => fresh[k],
            };
            match chan {
                Chan::Acked => {
                    rpcs.stream.push_back(Numbered { seq: rpcs.next, call, in_flight: false, acked: false });
                    rpcs.next = rpcs.next.wrapping_add(1);
                }
                Chan::Opened | Chan::Owed => rpcs.waiting.push(call),
                Chan::Closed => conn.stats.rpcs_dropped += 1,
            }
        }
        rpcs.spare = waiting;
        fresh.clear();
        (rpcs.chans, rpcs.fresh) = (chans, fresh);
        if write && rpcs.ack_pending {
            let next = rpcs.incoming.expected() as u16;
            if !st.full && self.ensure_in(conn, st, |c| c.writer.calls_ack_fits(&c.out)) {
                conn.writer.write_calls_ack(&mut conn.out, next);
                st.wrote_calls_ack();
                conn.rel.calls_acks.push_back(next);
                rpcs.ack_in_flight = Some(next);
                rpcs.ack_pending = false;
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
            // (A call that names static objects goes alone, after their exports.)
            let follow = list[k..].iter().zip(first..).take_while(|&(&j, r)| {
                calls.run_index[j as usize] as usize == r && calls.calls[j as usize].statics.is_empty()
            });
            let n = conn.writer.write_call_run(&mut conn.out, &calls.run, first, follow.count());
            st.wrote_calls(n);
            conn.stats.rpcs_sent += n as u64;
            k += n;
        }
        k
    }

    /// Writes one call bunch, after the exports of the static objects it names that the client
    /// may not have (one that does not fit waits for the next frame, as a property's); false
    /// when the window is full.
    fn write_rpc(&self, conn: &mut Connection, st: &mut FrameWrite, seq: Option<u16>, call: &Call) -> bool {
        for &g in &call.statics {
            if !self.write_export(conn, st, g) {
                conn.exports.push(g);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{GuidMap, Seq};
    use crate::net::pairs::Pairs;
    use crate::wire::rpc::EncodedCall;
    use crate::wire::BitWriter;
    use rand::{Rng, SeedableRng};

    /// The pair walk finds, in call order, exactly the calls a per-call lookup finds — with few
    /// calls found (the sorted list) and many (read back by call), dormant and torn rows, calls
    /// on actors gone, Client calls for this connection and for others — and counts the rest.
    #[test]
    fn the_pair_walk_finds_the_calls_a_lookup_per_call_finds() {
        use crate::net::connection::pair::*;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(56);
        let (mut sorted_rounds, mut scattered_rounds) = (0, 0);
        for round in 0..400 {
            let mut conn = Connection::new(false, Pairs::channels(), crate::wire::packet::MIN_MTU, Seq(1));
            conn.id = ConnectionId(3);
            let span = rng.random_range(1..2_000u32);
            let mut guids = GuidMap::default();
            for s in 0..span {
                guids.insert(NetGuid(2 * s as u64 + 10), (s % 3, s / 3));
            }
            let flags = [0, EVER_OPENED, EVER_OPENED | OPEN_SENT, EVER_OPENED | OPEN_ACKED, DORMANT, TORN | OPEN_ACKED];
            for _ in 0..rng.random_range(0..400) {
                let s = rng.random_range(0..span);
                conn.pairs.get_or_insert(s % 3, s / 3).flags = flags[rng.random_range(0..flags.len())];
            }
            let mut moving = Vec::new();
            conn.pairs.settle_dormant(&mut moving);
            let calls: Vec<Arc<Call>> = (0..rng.random_range(0..600))
                .map(|_| {
                    let (target, owner) = match rng.random_range(0..4) {
                        0 => (RpcTarget::Client, Some(ConnectionId(3))),
                        1 => (RpcTarget::Client, Some(ConnectionId(rng.random_range(0..6)))),
                        2 => (RpcTarget::Client, None),
                        _ => (RpcTarget::Multicast, None),
                    };
                    // Now and then an actor that is gone (a GUID nobody has).
                    let guid = NetGuid(2 * rng.random_range(0..span + 20) as u64 + 10);
                    let reliable = rng.random_bool(0.3);
                    Arc::new(Call {
                        guid,
                        owner,
                        target,
                        reliable,
                        encoded: EncodedCall::new(guid, reliable, &BitWriter::new()),
                        statics: Vec::new(),
                    })
                })
                .collect();
            let mut frame = FrameCalls::new(calls);
            frame.resolve(&guids);
            let (mut walked, mut scratch) = (Vec::new(), Vec::new());
            PairChannels(&guids).frame_chans(&conn, &frame, &mut walked, &mut scratch);
            let lookup = |c: &Connection, g: NetGuid| chan_of(c.pair_of(&guids, g));
            let mut looked = Vec::new();
            lookup.frame_chans(&conn, &frame, &mut looked, &mut scratch);
            assert_eq!(walked, looked, "round {round}");
            let reaching = (0..frame.calls.len()).filter(|&i| frame.reaches(i, conn.id)).count();
            assert_eq!(frame.reaching(conn.id), reaching, "round {round}");
            if walked.len() * FEW_HITS < frame.calls.len() {
                sorted_rounds += 1;
            } else {
                scattered_rounds += 1;
            }
        }
        assert!(sorted_rounds > 50 && scattered_rounds > 50, "both ways: {sorted_rounds} / {scattered_rounds}");
    }
}
