//! Writing a tick's calls: found and encoded once for every connection ([`FrameCalls`]), then
//! fanned out, numbered and written per connection at the end of its frame
//! ([`WriteCtx::write_rpcs`]).

use super::{Call, Numbered};
use crate::net::connection::{pair, Connection};
use crate::net::send::{FrameWrite, WriteCtx};
use crate::net::{ConnectionId, NetGuid};
use crate::schema::RpcTarget;
use crate::wire::rpc::{CallRun, MAX_RELIABLE_RPCS};
use std::sync::Arc;

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
    /// Whom each call goes to, side by side (every connection's fan-out reads it for every call:
    /// read through each call's own allocation, it cost a one-thread mmo frame with ~900 calls
    /// ~2.5 ms more).
    reach: Vec<Reach>,
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
            .collect();
        Self { calls, by_key: Vec::new(), run, run_index, reach }
    }

    /// Whether call `i` goes to connection `conn` (where its actor's channel is open): a Client
    /// call to its owner's, a Multicast call to every one.
    fn reaches(&self, i: usize, conn: ConnectionId) -> bool {
        match self.reach[i] {
            Reach::Every => true,
            Reach::Only(owner) => owner == conn,
            Reach::Nobody => false,
        }
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

    /// `out[i]`: `conn`'s channel of call `i`'s actor, for every call reaching it (the others:
    /// [`Chan::Closed`]).
    fn frame_chans(&self, conn: &Connection, calls: &FrameCalls, out: &mut Vec<Chan>) {
        out.clear();
        let chan = |(i, c): (usize, &Arc<Call>)| match calls.reaches(i, conn.id) {
            true => self.chan(conn, c.guid),
            false => Chan::Closed,
        };
        out.extend(calls.calls.iter().enumerate().map(chan));
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
        let reaching = calls.by_key.iter().filter(|&&(_, i)| calls.reaches(i as usize, conn.id));
        conn.pairs.for_each_sorted(reaching.copied(), |i, ps| out[i as usize] = chan_of(ps));
    }
}

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
fn chan_of(pair: Option<&crate::net::connection::PairState>) -> Chan {
    match pair {
        Some(ps) if ps.flags & (pair::DORMANT | pair::TORN) != 0 => Chan::Closed,
        Some(ps) if ps.flags & pair::OPEN_ACKED != 0 => Chan::Acked,
        Some(ps) if ps.flags & pair::EVER_OPENED != 0 => Chan::Opened,
        _ => Chan::Closed,
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
            if !calls.reaches(i, conn.id) {
                continue;
            }
            if chans[i] == Chan::Closed {
                conn.stats.rpcs_without_channel += 1;
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
