//! What a client holds once everything sent to it is acknowledged: a read-only view of a
//! connection for state digests ([`crate::session::digest`]) and debugging.
//!
//! ```text
//! held_actors(conn):
//!   every pair of the connection (dense tables, or the actor level's channel rows)
//!     whose open the client acknowledged (OPEN_ACKED), not closed for dormancy, whose actor
//!     is alive and not torn off
//!   → (GUID, class, actor id, leaves the client may have received: active under the pair's
//!      flags with INITIAL set — every condition is monotone in INITIAL, so this is what the
//!      open and every later send together may carry — minus Custom parents switched off)
//! ```
//!
//! Dormant channels are left out: the client keeps what it last acknowledged, which the server
//! does not remember.
//!
//! [`NetDriver::is_settled`] says when that view is the client's: nothing in flight, nothing
//! queued to send (pending pairs: opens, resends of lost leaves, newly active leaves; closes;
//! exports), and no pair owing a resend.

use super::condition::flags;
use super::connection::{pair, PairState};
use super::pairs::{split_key, Pairs};
use super::{DriverError, NetDriver};
use crate::ids::{ClassId, ConnectionId, LeafMask, NetGuid};
use crate::store::ActorId;

/// One actor a client holds ([`NetDriver::held_actors`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldActor {
    /// Its NetGUID.
    pub guid: NetGuid,
    /// Its class.
    pub class: ClassId,
    /// The actor in its store.
    pub id: ActorId,
    /// The leaves the connection may receive of it (the rest stay at the class default on the
    /// client, as long as the pair's flags did not change while the client held it), as the
    /// groups of its class's layout (`layout.groups.leaves_in(leaves)`: the leaves themselves up
    /// to 64 leaves, [`crate::schema::groups`]).
    pub leaves: LeafMask,
    /// The client's role for it (a sub-object's: its owner's, whose flags it follows).
    pub role: crate::ids::NetRole,
}

impl NetDriver {
    /// The actors connection `conn` has acknowledged and holds, by GUID, with the leaves it may
    /// receive of each (see the module documentation). Once nothing is in flight
    /// ([`Self::in_flight`] is 0), this is the client's world as the server sees it.
    pub fn held_actors(&self, conn: ConnectionId) -> Result<Vec<HeldActor>, DriverError> {
        let c = self.conn(conn)?;
        // An actor's owner is a connection's slot (its id may differ: a slot is reused).
        let ci = self.live(conn)? as u32;
        let mut out = Vec::new();
        let mut visit = |class: u32, slot: u32, st: &PairState| {
            // A torn-off owner's row held for its sub-objects: the client owns that copy.
            if st.flags & pair::OPEN_ACKED == 0 || st.flags & (pair::DORMANT | pair::TORN) != 0 {
                return;
            }
            let Some(cn) = self.classes.get(class as usize) else { return };
            let Some(a) = cn.actors.get(slot as usize).filter(|a| a.alive && !a.torn_off) else { return };
            let f = a.flags(ci, c.replay, false) | flags::INITIAL;
            out.push(HeldActor {
                guid: a.guid,
                class: ClassId(class),
                id: ActorId { index: slot, generation: a.generation },
                leaves: a.active_leaves(&cn.active, f),
                role: if f & flags::SIMULATED == 0 {
                    crate::ids::NetRole::AutonomousProxy
                } else {
                    crate::ids::NetRole::SimulatedProxy
                },
            });
        };
        match &c.pairs {
            Pairs::Dense(tables) => {
                for (class, table) in tables.iter().enumerate() {
                    for (slot, st) in table.iter().enumerate() {
                        visit(class as u32, slot as u32, st);
                    }
                }
            }
            Pairs::Channels { rows, .. } => {
                for r in rows {
                    let (class, slot) = split_key(r.key);
                    visit(class, slot, &r.state);
                }
            }
        }
        out.sort_unstable_by_key(|h| h.guid);
        Ok(out)
    }

    /// Whether connection `conn` owes its client nothing: no packet in flight, no pair
    /// pending (an open, a resend, newly active leaves), no close or export queued, no leaf
    /// owed a resend. Changes the game makes later, and actors not yet due or cut by the
    /// bandwidth budget, are not counted (the driver learns of them at the next tick).
    pub fn is_settled(&self, conn: ConnectionId) -> Result<bool, DriverError> {
        let c = self.conn(conn)?;
        if c.rel.in_flight() > 0 || !c.pending.is_empty() || !c.closes.queued.is_empty() || !c.exports.is_empty() {
            return Ok(false);
        }
        // (A torn-off owner's row held for its sub-objects owes nothing: its channel is closed.)
        let owes =
            |st: &PairState| st.flags & pair::TORN == 0 && (!st.resend.is_empty() || st.flags & pair::PENDING != 0);
        Ok(match &c.pairs {
            Pairs::Dense(tables) => !tables.iter().flat_map(|t| t.iter()).any(owes),
            Pairs::Channels { rows, .. } => !rows.iter().any(|r| owes(&r.state)),
        })
    }
}
