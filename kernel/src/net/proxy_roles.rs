//! What each client was told of its role for the actors it holds: UE's `RemoteRole` as that
//! connection gets it — autonomous for the owner of an actor whose owner holds an autonomous
//! proxy ([`NetDriver::set_owner`](super::NetDriver::set_owner) with `autonomous`), simulated
//! for every other connection (UE's downgrade of `RemoteRole` for non-owners in
//! `ReplicateActor`). The client swaps it into its local role ([`crate::client::ClientWorld::role`]).
//!
//! ```text
//! an actor's open goes           the role bit at its end gives the client the role the
//!                                connection has now (crate::wire::open)
//! the role changes for a         the pair owes its role (UE compares RemoteRole per connection):
//!   connection whose channel's   its next bunch carries the open again with the new role, sized
//!   open went                    — at the pair's next replication, even with nothing else to say
//!   (and changes back before     owes nothing: the client still has the role it was told
//!   that)
//! a bunch that owed it is lost   owed again, the current role (UE's NAK resend of a property)
//! ```
//!
//! So a client's role is the server's within a round trip of the actor's next replication, as
//! UE's property is, and a connection that loses a packet pays one more open, not a stream of
//! them. A client applies the role of each open it reads (packets apply in order: a late one is
//! dropped), so a repeated open never takes an older role back.
//!
//! State exists only where it differs from "told simulated, nothing owed" — a map per
//! connection holding its autonomous proxies (one pawn, typically) and the roles owed — none in a
//! pair's 16 bytes; a role owed is read by planning only while the connection owes one somewhere.

use crate::ids::{GuidHasher, NetGuid};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// What a connection was told of one channel's role, when it is not "simulated, nothing owed".
#[derive(Clone, Copy, Debug)]
struct Told {
    /// The channel: a record of an earlier channel of the pair (or of an earlier actor in the
    /// slot) tells nothing of this one. The GUID's low 32 bits, as a sent entry names its actor
    /// ([`super::reliability::SentEntry`]).
    guid: u32,
    epoch: u8,
    /// The role the last bunch carrying the open gave.
    autonomous: bool,
    /// A bunch that owed the role was lost: it goes again.
    resend: bool,
    /// The pair's next bunch carries its open, for the role.
    owed: bool,
}

/// One connection's record of the roles it told its client (see the module documentation).
#[derive(Default)]
pub(crate) struct ProxyRoles {
    told: HashMap<u64, Told, BuildHasherDefault<GuidHasher>>,
    /// Records with `owed` (of any channel: a stale one counts until [`Self::prune`]).
    owed: u32,
}

impl ProxyRoles {
    fn record(&self, key: u64, guid: u32, epoch: u8) -> Option<&Told> {
        self.told.get(&key).filter(|t| t.guid == guid && t.epoch == epoch)
    }

    /// Whether the pair `key` (actor `guid`, channel `epoch`) owes its role: its next bunch
    /// carries the open. Free while the connection owes none.
    #[inline]
    pub fn owed(&self, key: u64, guid: NetGuid, epoch: u8) -> bool {
        self.owed != 0 && self.record(key, guid.0 as u32, epoch).is_some_and(|t| t.owed)
    }

    fn set(&mut self, key: u64, told: Told) {
        let was = self.told.insert(key, told).is_some_and(|t| t.owed);
        self.owed = self.owed + u32::from(told.owed) - u32::from(was);
    }

    fn remove(&mut self, key: u64) {
        if self.told.remove(&key).is_some_and(|t| t.owed) {
            self.owed -= 1;
        }
    }

    /// The connection's role for the pair changed to `autonomous`: it owes its role if the
    /// client was told another (`opened`: a bunch has carried the channel's open, which told
    /// the client — simulated where no record says otherwise); with no open gone yet, the open
    /// will tell. Returns whether it owes it.
    pub fn changed(&mut self, key: u64, guid: NetGuid, epoch: u8, opened: bool, autonomous: bool) -> bool {
        let guid = guid.0 as u32;
        let told = match self.record(key, guid, epoch) {
            Some(&t) => Some(t),
            None if opened => Some(Told { guid, epoch, autonomous: false, resend: false, owed: false }),
            None => None,
        };
        let Some(mut t) = told else { return false };
        t.owed = t.resend || t.autonomous != autonomous;
        if t.owed || t.autonomous {
            self.set(key, t);
        } else {
            self.remove(key);
        }
        t.owed
    }

    /// Pair `key` opens a new channel: what earlier channels were told is no longer this one's.
    pub fn forget(&mut self, key: u64) {
        if !self.told.is_empty() {
            self.remove(key);
        }
    }

    /// A bunch carrying the pair's open was written, giving the role `autonomous`.
    pub fn written(&mut self, key: u64, guid: NetGuid, epoch: u8, autonomous: bool) {
        if autonomous {
            self.set(key, Told { guid: guid.0 as u32, epoch, autonomous, resend: false, owed: false });
        } else {
            // Told simulated, nothing owed: what no record says.
            self.remove(key);
        }
    }

    /// A bunch that owed the role of the pair `key` (actor `guid_low`, the low 32 bits of its
    /// GUID; channel `epoch`) was reported lost: the role goes again (the current one,
    /// whatever the lost bunch said).
    pub fn lost(&mut self, key: u64, guid_low: u32, epoch: u8) {
        let autonomous = self.record(key, guid_low, epoch).is_some_and(|t| t.autonomous);
        self.set(key, Told { guid: guid_low, epoch, autonomous, resend: true, owed: true });
    }

    /// Keeps the records whose channel `live` still knows (pair key, the GUID's low 32 bits,
    /// epoch): called now and then, so records of closed channels and destroyed actors do not
    /// pile up.
    pub fn prune(&mut self, live: impl Fn(u64, u32, u8) -> bool) {
        self.told.retain(|&k, t| live(k, t.guid, t.epoch));
        self.owed = self.told.values().filter(|t| t.owed).count() as u32;
    }

    /// Records owing a role (for tests).
    #[cfg(test)]
    pub fn owing(&self) -> u32 {
        self.owed
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.told.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_owed_while_it_differs_from_what_the_client_was_told() {
        let mut r = ProxyRoles::default();
        let (k, g) = (7, NetGuid(40));
        // No open gone yet: the open will tell.
        assert!(!r.changed(k, g, 0, false, true));
        assert_eq!(r.len(), 0);
        // The open told autonomous.
        r.written(k, g, 0, true);
        assert!(!r.owed(k, g, 0));
        // Downgraded, then back before anything went: nothing owed.
        assert!(r.changed(k, g, 0, true, false));
        assert!(r.owed(k, g, 0));
        assert!(!r.changed(k, g, 0, true, true));
        assert!(!r.owed(k, g, 0));
        // Another channel of the pair knows nothing of this one's record.
        assert!(!r.owed(k, g, 1));
        assert!(r.changed(k, g, 1, true, true), "a new channel told simulated owes autonomous");
        r.written(k, g, 1, true);
        assert!(!r.owed(k, g, 1));
        // A lost bunch that owed it: owed again, whatever the role now.
        r.lost(k, g.0 as u32, 1);
        assert!(r.owed(k, g, 1));
        assert!(r.changed(k, g, 1, true, true), "a resend stays owed across a change");
        r.written(k, g, 1, false);
        assert!(!r.owed(k, g, 1));
        assert_eq!((r.len(), r.owed), (0, 0), "told simulated with nothing owed: no record");
    }

    #[test]
    fn pruning_drops_closed_channels_and_recounts() {
        let mut r = ProxyRoles::default();
        for k in 0..10u64 {
            r.changed(k, NetGuid(k * 2 + 2), 0, true, true);
        }
        assert_eq!(r.owed, 10);
        r.prune(|k, _, _| k % 2 == 0);
        assert_eq!((r.len(), r.owed), (5, 5));
        assert!(r.owed(4, NetGuid(10), 0));
        assert!(!r.owed(3, NetGuid(8), 0));
        assert!(!r.owed(4, NetGuid(10 + (1 << 33)), 1), "another channel");
    }
}
