//! What a client's feedback does ([`NetDriver::receive_feedback`]): decoded, classified against
//! the sequence window ([`reliability`](super::reliability)), its packets settled — acks retire,
//! naks resend — its reopen requests honoured at most once per round trip, and its Server calls
//! taken.

use super::connection::pair;
use super::reliability::{self, Intake};
use super::{ConnectionId, DriverError, Frame, NetDriver, NetGuid};
use crate::wire::feedback::read_feedback;

/// What [`NetDriver::receive_feedback`] did with a feedback message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedbackOutcome {
    /// It settled this many packets in flight.
    Applied(usize),
    /// It reports nothing newer than what was already settled (a duplicate, a reordered or
    /// repeated feedback): its acks are ignored (its reopen requests still count).
    Stale,
    /// It names a packet up to [`ACK_WINDOW`](crate::wire::feedback::ACK_WINDOW) past the newest
    /// one sent (the client accepted a forged packet numbered ahead of the server): it settled
    /// this many packets in flight, by what it says of them.
    Ahead(usize),
    /// It names a packet never sent: ignored entirely.
    NeverSent,
}

impl NetDriver {
    /// Applies a client's feedback (see [`crate::wire::feedback`]): packets it received are
    /// retired, packets it missed have their content resent, actors it asks for are opened
    /// again. Feedback that is stale (duplicated, reordered, repeated) or names packets never
    /// sent changes nothing and is counted; feedback a little ahead of the newest packet sent
    /// (its client took a forged packet) settles the packets sent by what it says of them;
    /// bytes that do not decode are an error (and counted). Its Server calls go to the game
    /// ([`Self::take_server_rpcs`]) — but not those of a connection added since the last tick,
    /// which was sent nothing and owns nothing to call on (dropped, counted refused). Feedback
    /// that arrives between the game's calls and the next tick is judged by the channels as the
    /// client knows them (README "Feedback between a game's call and the tick").
    ///
    /// ```
    /// use shadowrep::client::ClientWorld;
    /// use shadowrep::net::{DriverConfig, NetDriver};
    /// use shadowrep::prelude::*;
    /// use std::sync::Arc;
    ///
    /// let layout = Arc::new(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)).build().unwrap());
    /// let mut store = ClassStore::new(layout.clone());
    /// let mut driver = NetDriver::new(DriverConfig::default()).unwrap();
    /// let class = driver.register_class(&mut store).unwrap();
    /// let conn = driver.add_connection(false);
    /// let mut client = ClientWorld::new(&[layout], &driver.checksums()).unwrap();
    /// let id = store.spawn();
    /// store.set(id, 0, &Value::U16(100)).unwrap();
    /// let guid = driver.assign_guid(class, &store, id).unwrap();
    /// use shadowrep::net::FeedbackOutcome;
    ///
    /// driver.tick(&mut [&mut store]).unwrap();
    /// let packets = driver.take_packets(conn).unwrap();
    /// for packet in &packets {
    ///     client.receive(packet).unwrap();
    /// }
    /// // Once per frame in which packets arrived (`client.feedback_due()`), back to the server:
    /// let outcome = driver.receive_feedback(conn, &client.feedback()).unwrap();
    /// assert_eq!(outcome, FeedbackOutcome::Applied(packets.len()));
    /// assert_eq!(driver.in_flight(conn), 0);
    /// // The same feedback again (a duplicate on the wire) changes nothing.
    /// assert_eq!(driver.receive_feedback(conn, &client.feedback()).unwrap(), FeedbackOutcome::Stale);
    /// # let _ = guid;
    /// ```
    pub fn receive_feedback(&mut self, conn: ConnectionId, bytes: &[u8]) -> Result<FeedbackOutcome, DriverError> {
        let ci = self.live(conn)?;
        let fb = match read_feedback(bytes) {
            Ok(fb) => fb,
            Err(e) => {
                self.conns[ci].stats.feedback_malformed += 1;
                return Err(DriverError::Feedback(e));
            }
        };
        self.conns[ci].heard = self.server_time();
        let outcome = match self.conns[ci].rel.classify(&fb) {
            Intake::NeverSent => {
                self.conns[ci].stats.feedback_forged += 1;
                return Ok(FeedbackOutcome::NeverSent);
            }
            Intake::Stale => {
                self.conns[ci].stats.feedback_stale += 1;
                FeedbackOutcome::Stale
            }
            Intake::Settle => FeedbackOutcome::Applied(self.settle(ci, &fb)),
            Intake::Ahead => {
                // Only what it says of packets we sent counts (see `reliability`).
                self.conns[ci].stats.feedback_ahead += 1;
                let rebased = self.conns[ci].rel.as_of_newest(&fb);
                FeedbackOutcome::Ahead(self.settle(ci, &rebased))
            }
        };
        for &guid in &fb.reopen {
            self.reopen(ci, guid);
        }
        if !fb.calls.is_empty() {
            if self.conns[ci].since_tick.joined {
                // Nothing sent to it yet (`SinceTick::joined`): a forger's calls.
                self.conns[ci].stats.server_rpcs_refused += fb.calls.len() as u64;
            } else {
                self.receive_calls(ci, fb.calls);
            }
        }
        Ok(outcome)
    }

    /// Settles the packets in flight that `fb` (classified [`Intake::Settle`], or re-based on
    /// the newest packet sent) describes: each is retired or has its content queued again.
    /// Returns how many were settled.
    fn settle(&mut self, ci: usize, fb: &crate::wire::feedback::Feedback) -> usize {
        let (classes, guids, c) = (&self.classes, &self.guids, &mut self.conns[ci]);
        let fast = &self.fast;
        let retired = self.level.as_ref().map_or(&[][..], |l| &l.retired[..]);
        let lookup = reliability::Lookup { classes, guids, retired };
        let mut settled = 0;
        let mut entries = std::mem::take(&mut c.settled);
        while let Some((rec, delivered)) = c.rel.settle_next(fb) {
            reliability::apply_settled((ci, c), lookup, fast, rec, delivered, &mut entries);
            settled += 1;
        }
        reliability::apply_entries(c, &mut entries);
        c.settled = entries;
        c.rel.settled(fb);
        c.opened_after.settled_through(c.rel.acked());
        c.stats.feedback_applied += 1;
        settled
    }

    /// A client got a bunch for `guid` but does not have the actor: open it again, if the
    /// server believes the open acknowledged (otherwise one is already on its way). Honoured at
    /// most once per round trip: the reopen clears the acknowledgement until a packet carrying
    /// the new open is acknowledged.
    fn reopen(&mut self, ci: usize, guid: NetGuid) {
        let c = &mut self.conns[ci];
        if let Some(slot) = self.fast.slot_of(guid) {
            c.quiet.forget_at(slot, guid);
            if self.fast.reopen(super::fastarrays::Side::Driver, ci, guid) {
                c.stats.reopens_honoured += 1;
            } else {
                c.stats.reopens_ignored += 1;
            }
            return;
        }
        // A copy held dormant is the client's (it got the dormancy close after the open): a
        // request for it is late or forged, and an open now would wake it behind the game's
        // back — as the reference, which looks only among open channels.
        let open = |flags: u8| flags & pair::OPEN_ACKED != 0 && flags & pair::DORMANT == 0;
        let Some(&(class, slot)) = self.guids.get(&guid) else {
            // Gone since the last tick (the game despawned it): its channel lasts to the tick,
            // as the reference's does — its rows, kept while the slot's retirement waits, or,
            // where the game's call dropped them (a static actor, an orphaned sub-object), the
            // record of the channel's end. It loses its acknowledgement, and with it the
            // reliable calls made on it this tick; nothing is sent again (its close is due). One
            // a call woke since the tick, before it went, is the client's dormant copy still
            // (`SinceTick::woken`). (Past `SinceTick::MAX_LOOKUPS` requests a tick, ignored: a
            // flood's.)
            let retired = self.level.as_ref().map_or(&[][..], |l| &l.retired[..]);
            let look = !(retired.is_empty() && c.closes.ending.is_empty())
                && c.since_tick.may_look()
                && !c.since_tick.woken.contains(&guid);
            let rows = look.then(|| reliability::retiring_slot(retired, guid)).flatten();
            let honoured = match rows.and_then(|(c_, s)| c.pairs.get_mut(c_, s)) {
                Some(ps) if ps.flags & pair::CHANNEL != 0 && open(ps.flags) => {
                    ps.flags &= !(pair::OPEN_ACKED | pair::OPEN_SENT);
                    true
                }
                _ => look && c.closes.reopened(guid),
            };
            if honoured {
                c.stats.reopens_honoured += 1;
                self.fast.owner_reopened(super::fastarrays::Side::Driver, ci, guid, Some(&mut c.quiet));
            } else {
                c.stats.reopens_ignored += 1;
            }
            return;
        };
        // Woken by a game call since the last tick: the client's copy is still the dormant one
        // (`SinceTick::woken`; past `MAX_LOOKUPS` requests a tick, taken as woken: ignored).
        let since = &mut c.since_tick;
        let woken = !since.woken.is_empty() && (!since.may_look() || since.woken.contains(&guid));
        let Some(ps) = c.pairs.get_mut(class, slot).filter(|ps| open(ps.flags) && !woken) else {
            c.stats.reopens_ignored += 1;
            return;
        };
        ps.flags &= !(pair::OPEN_ACKED | pair::OPEN_SENT);
        ps.sent_through = Frame(0);
        c.queue(class, slot);
        c.stats.reopens_honoured += 1;
        // The client has no copy of the owner, so none of its fast arrays: they start again
        // from nothing behind its open (the channel keeps its epoch, which would not tell) —
        // unless the request is late or forged, and the client holds them: marked stale.
        self.fast.owner_reopened(super::fastarrays::Side::Driver, ci, guid, Some(&mut c.quiet));
        // Sent again from nothing: what it lacked while inactive comes back as never sent.
        self.forget_inactive(class, slot, ci);
    }
}
