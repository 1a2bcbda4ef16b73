//! The clients' Server calls as the server takes them: each connection's reliable window and
//! unreliable dedupe, the ownership check on arrival and on delivery, the room per connection
//! ([`super`] has the rules).

use super::ConnRpcs;
use crate::net::connection::Connection;
use crate::net::{ClassId, NetDriver, NetGuid};
use crate::schema::RpcTarget;
use crate::store::ActorId;
use crate::value::Value;
use crate::wire::rpc::{decode_call, Arrival, RpcBunch};
/// A Server call a client made, as the server received it ([`NetDriver::take_server_rpcs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRpcEvent {
    /// The connection whose client called it (it owns the actor).
    pub conn: crate::net::ConnectionId,
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
/// ([`ConnectionStats::server_rpcs_refused`](crate::net::ConnectionStats::server_rpcs_refused)), and a
/// reliable one is not taken at all — its number not used, not acknowledged, so its client sends
/// it again — while fewer than its held calls and itself fit. Per connection: one client's flood
/// costs no other client a call.
pub const MAX_UNTAKEN_SERVER_RPCS: usize = 8 * 1024;

impl ConnRpcs {
    /// Takes the client's reliable Server call `call` into the window (`tag`: its actor, if
    /// this connection owned it on arrival); `deliver` gets the calls it releases, in order. A
    /// call in order, or a resend (the client did not hear the acknowledgement), owes an
    /// acknowledgement unless one of the number now expected flies already; one whose number
    /// came with other bits or far from the window (only a hostile client sends that, and it
    /// could send a new call as well) is delivered like any.
    fn accept_call(
        &mut self,
        call: RpcBunch,
        tag: Option<NetGuid>,
        deliver: impl FnMut(RpcBunch, Option<NetGuid>),
    ) -> Arrival {
        let arrival = self.incoming.accept(call, tag, deliver);
        if arrival != Arrival::Conflict && self.ack_in_flight != Some(self.incoming.expected() as u16) {
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
}

impl NetDriver {
    /// The clients' Server calls received since the last call, in arrival order (a reliable
    /// call once, after every reliable call its client numbered before it).
    ///
    /// A call reaches the game only from the connection that owns its actor when the call
    /// arrives ([`Self::set_owner`]; a sub-object's owner's) — UE drops a Server RPC from any
    /// other — on an actor still live when its turn comes, decoded with the actor's class and
    /// declared `Server`; anything else is dropped and counted
    /// ([`ConnectionStats::server_rpcs_refused`](crate::net::ConnectionStats::server_rpcs_refused)).
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
