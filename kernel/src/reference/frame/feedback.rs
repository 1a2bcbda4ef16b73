//! What the client says it got, the reference's way: the same feedback the kernel's client sent,
//! applied to the reference's own channels.
//!
//! ```text
//! first        the game's calls since the last frame that the driver applied at the call and
//!              the feedback must find done (destroyed static actors' and removed fast arrays'
//!              closes queued: `catch_up`)
//! per packet the feedback settles, oldest first (the connection's reliability: which packets,
//! and what each carried — the bunches the shared writer recorded):
//!   delivered  an open acknowledges its channel; the leaves reach the client: no longer owed
//!              as initial values
//!   lost       the leaves are owed again (UE's NAK: the changelist resent with the current
//!              values when the actor next replicates); an open not acknowledged meanwhile goes
//!              again, its bunch the initial one; the initial values it carried stay owed as
//!              initial values until a delivered bunch carries them (UE's reliable open bunch)
//!   closes     a lost one goes again unless a close of its actor is queued since, or its
//!              actor has a channel again (a torn-off actor's always; a dormancy close while
//!              the copy is still held dormant)
//!   fast array bunches and GUID exports, as the driver's
//! reopen       a client that got a bunch for an actor it does not have: the channel starts over
//! ```
//!
//! Only the bookkeeping of packets in flight is shared with the kernel (sequence numbers, what
//! each packet carried); what a loss means for a channel is decided here, per channel in a map,
//! as UE's `UActorChannel` and `FRepLayout` do.

use super::*;
use crate::net::reliability::{Intake, SentEntry};
use crate::wire::feedback::read_feedback;

impl ReferenceFrame {
    /// The feedback the kernel's client sent for `conn` (the same bytes the driver got): the
    /// packets it settles are applied to the reference's channels. An unknown connection, or
    /// feedback about nothing new, changes nothing; malformed bytes are an error.
    pub fn receive_feedback(
        &mut self,
        driver: &NetDriver,
        conn: ConnectionId,
        bytes: &[u8],
    ) -> Result<(), DriverError> {
        let fb = read_feedback(bytes).map_err(DriverError::Feedback)?;
        let Some(ci) = self.conns.iter().position(|c| c.id == conn) else { return Ok(()) };
        // The game's calls since the last frame that the driver applied at once, before this.
        self.catch_up(driver);
        let rc = &mut self.conns[ci];
        let settling = match rc.conn.rel.classify(&fb) {
            Intake::NeverSent => return Ok(()),
            Intake::Stale => None,
            Intake::Settle => Some(fb.clone()),
            Intake::Ahead => Some(rc.conn.rel.as_of_newest(&fb)),
        };
        if let Some(settling) = settling {
            let actors = &self.actors;
            while let Some((rec, delivered)) = rc.conn.rel.settle_next(&settling) {
                for _ in 0..rec.entries {
                    let Some(e) = rc.conn.rel.entries.pop_front() else { break };
                    rc.settle_entry(driver, actors, e, rec.seq, delivered);
                }
                for _ in 0..rec.closes {
                    let Some(close) = rc.conn.rel.closes.pop_front() else { break };
                    // Again unless the channel is back with its open gone, or the copy is held
                    // dormant (a dormancy close: while the copy is still held dormant). A channel
                    // opened since whose open has not gone (the window was full) leaves the
                    // client's old copy to this close.
                    // (A fast array's: unless it was opened again, as the driver's.)
                    let holds = || {
                        rc.channels.get(&close.guid).is_some_and(|ch| ch.ever_opened)
                            || rc.dormant.contains_key(&close.guid)
                    };
                    let again = || match close.reason {
                        CloseReason::TornOff => true,
                        // A close of it queued since ends whatever copy the client has.
                        CloseReason::Destroyed | CloseReason::LevelUnloaded if rc.conn.closes.is_queued(close.guid) => {
                            false
                        }
                        CloseReason::Dormant => rc.dormant.contains_key(&close.guid),
                        CloseReason::Destroyed | CloseReason::LevelUnloaded if holds() => {
                            // Not again; the client may keep that copy's fast arrays (as the
                            // driver's).
                            driver.fast.owner_close_dropped(Side::Reference, ci, close.guid, None);
                            false
                        }
                        CloseReason::Destroyed => driver.fast.close_lost(Side::Reference, ci, close.guid),
                        CloseReason::LevelUnloaded => true,
                    };
                    if delivered {
                        driver.fast.close_delivered(Side::Reference, ci, &rc.conn, &close);
                    } else if again() {
                        rc.conn.closes.push(close);
                    }
                }
                for _ in 0..rec.fast {
                    let Some(sent) = rc.conn.rel.fast.pop_front() else { break };
                    if let Some(guid) = driver.fast.settle(Side::Reference, ci, sent, delivered) {
                        rc.conn.closes.push(PendingClose::destroyed(guid));
                    }
                }
                crate::net::rpc::settle_packet(&mut rc.conn, (rec.rpcs, rec.acks), delivered);
                for _ in 0..rec.exports {
                    let Some(guid) = rc.conn.rel.exports.pop_front() else { break };
                    rc.conn.exporting.remove(&guid);
                    if delivered {
                        rc.conn.exported.insert(guid);
                    } else if !rc.conn.exported.contains(&guid) {
                        rc.conn.exports.push(guid);
                    }
                }
            }
            rc.conn.rel.settled(&settling);
        }
        // The client's Server calls, after the settling as the driver takes them: the same
        // acknowledgements go out.
        let rc = &mut self.conns[ci];
        let not_taken = driver.conns.get(ci).map_or(&[][..], |dc| &dc.rpcs.not_taken[..]);
        crate::net::rpc::track_calls(&mut rc.conn, &fb.calls, not_taken);
        for guid in &fb.reopen {
            rc.reopen(driver, ci, *guid);
        }
        Ok(())
    }
}

impl RefConn {
    /// One bunch of a settled packet: `e` names its actor by class, slot and GUID.
    fn settle_entry(
        &mut self,
        driver: &NetDriver,
        actors: &[Vec<Option<RefActor>>],
        e: SentEntry,
        seq: Seq,
        delivered: bool,
    ) {
        let live = driver.classes[e.class as usize].actors.get(e.slot as usize).is_some_and(|a| a.alive);
        let Some(a) = actors[e.class as usize].get(e.slot as usize).and_then(Option::as_ref) else { return };
        if !live || !e.names(a.guid) {
            return;
        }
        let Some(ch) = (match self.channels.get_mut(&a.guid) {
            Some(ch) => Some(ch),
            None => self.dormant.get_mut(&a.guid),
        }) else {
            return;
        };
        // Of this channel, not of an earlier one of the actor closed while the bunch flew.
        let this = ch.epoch == e.epoch && seq.ahead_of(ch.opened_after) > 0;
        if delivered {
            if this {
                ch.open_acked |= e.open();
                ch.unsent_initial &= !e.settles();
            }
            return;
        }
        if this && e.initial() {
            ch.unsent_initial |= e.leaves & driver.classes[e.class as usize].active.initial_only();
        }
        if this && e.open() && !ch.open_acked {
            ch.open_sent = false;
        }
        if this && e.role() {
            ch.role_resend = true;
        }
        ch.resend |= e.leaves;
    }

    /// The client lacks `guid` (an actor, or a fast array whose owner it lacks — the owner's
    /// open lost, the array's delivered): if its open was acknowledged, it starts over from
    /// nothing (an actor's fast arrays too); otherwise an open is on its way.
    fn reopen(&mut self, driver: &NetDriver, ci: usize, guid: NetGuid) {
        if driver.fast.slot_of(guid).is_some() {
            driver.fast.reopen(Side::Reference, ci, guid);
            return;
        }
        let Some(ch) = self.channels.get_mut(&guid).filter(|ch| ch.open_acked) else { return };
        ch.open_acked = false;
        ch.open_sent = false;
        ch.sent_through = Frame(0);
        ch.inactive = LeafMask::EMPTY;
        // (Its arrays marked stale where the client may hold them: the kernel's rule.)
        driver.fast.owner_reopened(Side::Reference, ci, guid, None);
    }
}
