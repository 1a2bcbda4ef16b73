//! Relevancy asked where UE asks it. UE's `ServerReplicateActors` calls
//! `IsActorRelevantToConnection` for a due actor with no channel (in `PrioritizeActors`), for a
//! channel last found relevant a second ago or more (in `ProcessPrioritizedActors`, and for the
//! leftovers of a saturated connection) — never for a channel found relevant within the last
//! second. The reference asks the same: each answer the first time the frame needs it
//! ([`Asker::ask`], kept per due actor), and the timed frame pays for no other.
//!
//! The cross-check with the kernel needs each connection's whole relevant set, so the answers
//! the frame did not need are asked at the end of each connection's frame as an audit
//! ([`Asker::audit`]), timed apart ([`super::ReferenceTick::audit_seconds`]) and left out of the
//! reference's frame time: charging the reference for relevancy UE never asks would flatter the
//! kernel (until session 71 it asked every due actor, open channels too; in battle_royale that
//! was ~3 % of its instructions: most due actors have no channel on a connection, and UE asks
//! those).

use super::condition_map;
use super::connection::ConnView;
use crate::ids::NetGuid;
use crate::net::relevancy::relevant_to_connection;
use crate::net::{NetGroups, ReplicationFlags};

/// Not asked yet (else 0 or 1: the answer).
const UNASKED: u8 = 2;

/// What one connection's relevancy answers read (its frame, and whether it is a replay
/// connection), and the answers so far (per due actor).
pub(super) struct Asker<'a> {
    v: ConnView<'a>,
    replay: bool,
    known: Vec<u8>,
}

impl<'a> Asker<'a> {
    pub(super) fn new(v: ConnView<'a>, replay: bool) -> Self {
        Asker { v, replay, known: vec![UNASKED; v.due.len()] }
    }

    /// Whether due actor `i` is relevant to the connection: a sub-object's condition allows it
    /// and UE's rules say so (asked once a frame).
    pub(super) fn ask(&mut self, i: usize) -> bool {
        if self.known[i] == UNASKED {
            self.known[i] = u8::from(self.answer(i));
        }
        self.known[i] == 1
    }

    /// [`Self::ask`] with the answer made by `answer` where the caller has its inputs at hand
    /// (the walk: flags, the condition, the hook). The walk asks nearly every due actor (most
    /// have no channel on a connection): through [`Self::ask`] its answers cost ~80
    /// instructions more each, `answer` inlined or not (callgrind, session 71).
    pub(super) fn ask_with(&mut self, i: usize, answer: impl FnOnce() -> bool) -> bool {
        if self.known[i] == UNASKED {
            self.known[i] = u8::from(answer());
        }
        self.known[i] == 1
    }

    fn answer(&self, i: usize) -> bool {
        let v = self.v;
        let (c, s) = v.due[i];
        let a = v.actor(c, s);
        let class = &v.driver.classes[c as usize];
        let net = &class.actors[s as usize];
        let owned = net.owner == Some(v.ci as u32);
        let flags = rep_flags(net, owned, self.replay, v.dc.net_groups);
        let allowed = class.cols.sub_condition[s as usize].is_none_or(|c| condition_map(c, flags, true));
        let lookup = |g: NetGuid| v.link(g).map(|l| &l.0);
        let hook = class.cols.hook.as_ref();
        allowed && relevant_to_connection(&a.link.0, owned, &v.dc.viewers, hook, &lookup, &|g| v.hook_of(g))
    }

    /// The connection's whole relevant set, sorted: the answers the frame asked and, asked now,
    /// the rest (the cross-check's, not UE's).
    pub(super) fn audit(mut self) -> Vec<NetGuid> {
        let v = self.v;
        let mut relevant: Vec<NetGuid> = (0..v.due.len())
            .filter(|&i| self.ask(i))
            .map(|i| {
                let (c, s) = v.due[i];
                v.actor(c, s).guid
            })
            .collect();
        relevant.sort_unstable();
        relevant
    }
}

/// UE's `FReplicationFlags` of an actor's channel on a connection, as a sub-object's condition
/// reads them (`owned`: the connection owns the actor; a sub-object's are its owner's).
pub(super) fn rep_flags(
    net: &crate::net::actors::ActorNet,
    owned: bool,
    replay: bool,
    groups: NetGroups,
) -> ReplicationFlags {
    ReplicationFlags { owner: owned, autonomous: net.autonomous, physics: net.physics, replay, groups }
}
