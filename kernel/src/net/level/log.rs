//! What the game's calls between two ticks logged (a force, a dormancy call, a fast array
//! removed, a slot touched, a tearing actor's slot reused): inputs a reference replays at its
//! tick, as UE's driver hears of them when they happen.

use crate::net::NetGuid;

/// A log of the game's calls between two ticks, for a reference to replay: what was logged
/// since the last tick began (`current`), and what the last tick saw (`last_tick`, read by a
/// reference frame that runs after the driver's).
#[derive(Debug)]
pub struct TickLog<T> {
    /// Since the last tick began.
    pub current: Vec<T>,
    /// Before that, back to the tick before (what the last tick saw).
    pub last_tick: Vec<T>,
}

impl<T> Default for TickLog<T> {
    fn default() -> Self {
        TickLog { current: Vec::new(), last_tick: Vec::new() }
    }
}

impl<T> TickLog<T> {
    /// Logs one call.
    pub fn push(&mut self, item: T) {
        self.current.push(item);
    }

    /// A tick begins: what was logged becomes what it saw.
    pub(super) fn rotate(&mut self) {
        self.last_tick.clear();
        std::mem::swap(&mut self.current, &mut self.last_tick);
    }
}

/// A tearing actor despawned between ticks whose slot the game gave a new actor at once
/// (`NetDriver::retire_unseen`): its tear-off was judged at that call — whether a connection
/// whose full window deferred its last update still owes it — by the connections and the
/// actor's columns as they were then. What that judgment read, for a reference to judge it
/// alike at its tick (the game may move a viewer between the call and the tick).
#[derive(Clone, Debug)]
pub struct ReusedTearing {
    /// The actor's class.
    pub class: u32,
    /// Its slot (another actor's now).
    pub slot: u32,
    /// The actor.
    pub guid: NetGuid,
    /// The connections the judgment asked about (those whose window deferred the actor's last
    /// update): (connection slot, removed, viewers, net groups).
    pub conns: Vec<(u32, bool, Vec<crate::net::relevancy::Viewer>, crate::net::NetGroups)>,
    /// The actor's owning connection.
    pub owner: Option<u32>,
    /// It was its owner's autonomous proxy.
    pub autonomous: bool,
    /// It simulated physics.
    pub physics: bool,
    /// Its condition, as a sub-object.
    pub sub_condition: Option<crate::net::SubObjectCondition>,
    /// Its owner-only setting (`bOnlyRelevantToOwner`).
    pub only_relevant_to_owner: bool,
    /// Its owner actor (the owner chain's first link).
    pub owner_actor: Option<NetGuid>,
    /// A sub-object: its owner's tear-off went on, as the call judged it (left over, or owing a
    /// connection: a sub-object's tear-off goes on with its owner's). The judgment's answer, not
    /// its inputs: the owner, alive at the call, may be gone by the reference's tick (despawned
    /// in the same window, found gone by the tick's gather) — reference sweep seed 128040.
    pub owner_waits: bool,
}
