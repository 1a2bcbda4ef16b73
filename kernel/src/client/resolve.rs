//! Decoding a packet: each bunch's GUID resolved to the class its bunch is read with — or
//! stepped over (a class conflict, an actor the client lacks), or read past (a torn-off actor's
//! last bunches, an ignored actor's updates) — with what the packet proves on the way, for
//! [`super::receive`] to act on once the whole packet decoded.

use super::closed::{Closed, Was};
use super::fastarrays::ClientFastArrays;
use super::ignored::Ignored;
use super::{ClientClass, ClientWorld, TearOff};
use crate::ids::{NetGuid, Seq};
use crate::store::ActorId;
use crate::wire::bunch::Resolve;
use crate::wire::open::{OpenHeader, OpenKind};
use crate::wire::WireError;
use std::collections::{HashMap, HashSet};

/// What resolving a packet's GUIDs found.
#[derive(Default)]
pub(super) struct Found {
    /// The actors the packet opens (and the one a held part opened), with their class.
    pub opened: HashMap<NetGuid, u32>,
    /// The fast arrays the packet opens, with their kind.
    pub fast_opened: HashMap<NetGuid, u32>,
    /// Actors the packet updates that the client does not have.
    pub missing: Vec<NetGuid>,
    /// The last update of an actor the client had before this packet (a plain bunch): a packet
    /// that fails to decode after it asks for that actor again (see `receive`).
    pub last_update: Option<NetGuid>,
    /// Opens of an actor the client has with another class (see `heal_conflict`), in order.
    pub conflicts: Vec<NetGuid>,
    /// Torn-off actors this packet proves were never torn off (see `undo_tear_off`), in order,
    /// each once.
    pub untorn: Vec<NetGuid>,
    /// Ignored actors whose updates this packet reads past (see `ignored`).
    pub ignored_used: Vec<NetGuid>,
    /// Of those, sub-objects set aside for want of their owner: asked for again.
    pub asked_again: Vec<NetGuid>,
}

/// Resolves the GUIDs of packet `seq` against the client's world as it was before the packet.
pub(super) struct Resolver<'a> {
    classes: &'a [ClientClass],
    actors: &'a HashMap<NetGuid, (u32, ActorId)>,
    fast: &'a ClientFastArrays,
    torn: &'a HashMap<NetGuid, TearOff>,
    ignored: &'a Ignored,
    closed: &'a Closed,
    seq: Seq,
    pub found: Found,
    /// `found.conflicts` and `found.untorn` as sets: each bunch asks, so a scan would cost
    /// bunches × conflicts.
    conflicting: HashSet<NetGuid>,
    untorn_set: HashSet<NetGuid>,
}

impl<'a> Resolver<'a> {
    /// A resolver for packet `seq` of `world`; `opened`: what a part held from the packet before
    /// opened (read as if it had applied).
    pub fn new(world: &'a ClientWorld, seq: Seq, opened: HashMap<NetGuid, u32>) -> Self {
        Resolver {
            classes: &world.classes,
            actors: &world.actors,
            fast: &world.fast,
            torn: &world.torn,
            ignored: &world.ignored,
            closed: &world.closed,
            seq,
            found: Found { opened, ..Found::default() },
            conflicting: HashSet::new(),
            untorn_set: HashSet::new(),
        }
    }

    /// How the bunch of `guid` (with `open`, if it opens) is read.
    pub fn resolve(&mut self, guid: NetGuid, open: Option<&OpenHeader>) -> Result<Resolve<'a>, WireError> {
        if guid.is_null() {
            return Err(WireError::Invalid("actor GUID"));
        }
        // An honest server writes nothing for a torn-off actor after its close (its last
        // bunch comes before it), nor in any packet numbered after it: a bunch in the packet
        // of a close this client applied, or a later one, proves the tear-off forged.
        let torn_off = match self.torn.get(&guid) {
            Some(t) if self.seq.ahead_of(t.at) >= 0 => {
                if self.untorn_set.insert(guid) {
                    self.found.untorn.push(guid);
                }
                false
            }
            t => t.is_some(),
        };
        // (An open earlier in this packet, or in the part held from the last one, ends the
        // record when it applies: the bunches after it are its.)
        let ignored_class =
            if open.is_none() && !self.found.opened.contains_key(&guid) { self.ignored.class(guid) } else { None };
        if torn_off || ignored_class.is_some() {
            // The server's last bunches before the tear-off (the actor is the client's now),
            // or updates of a static actor this client did not load, or of a sub-object whose
            // open it set aside: read past, not applied.
            if !torn_off {
                self.found.ignored_used.push(guid);
                if self.ignored.asks(guid) {
                    self.found.asked_again.push(guid);
                }
            }
            let class = self.actors.get(&guid).map(|a| a.0).or(ignored_class);
            return Ok(match class.and_then(|c| self.classes.get(c as usize)) {
                Some(c) if open.is_none() => Resolve::Discard(&c.layout),
                _ => Resolve::Skip,
            });
        }
        if open.is_none() && self.conflicting.contains(&guid) {
            // Its open was stepped over: the client has no actor of the server's class.
            self.found.missing.push(guid);
            return Ok(Resolve::Skip);
        }
        let known = self.found.opened.get(&guid).copied().or_else(|| self.actors.get(&guid).map(|a| a.0));
        if matches!(open.map(|o| &o.kind), Some(OpenKind::FastArray { .. }))
            && !self.found.opened.contains_key(&guid)
            && self.actors.contains_key(&guid)
        {
            // A fast array opened under the GUID of an actor the client has: one of the two
            // opens was forged (the server never gives a GUID to both). Stepped over and
            // healed as a class conflict (see below): refused, the server's open would be
            // refused with every packet resending it, and the connection with it.
            if self.conflicting.insert(guid) {
                self.found.conflicts.push(guid);
            }
            return Ok(Resolve::Skip);
        }
        if matches!(open.map(|o| &o.kind), Some(k) if !matches!(k, OpenKind::FastArray { .. }))
            && (self.found.fast_opened.contains_key(&guid) || self.fast.kind_of(guid).is_some())
        {
            // An actor opened under the GUID of a fast array the client has: the same
            // conflict the other way round (a forged fast array open at an actor's future
            // GUID, say). Refused, the server's open would be refused with every packet
            // resending it: stepped over, the fast array dropped and the GUID asked for. (A
            // fast array opened earlier in this packet — only a forged packet holds both —
            // is applied after the heal, which its open's bunch cancels; the server's own
            // open meets it later and heals it then.)
            if self.conflicting.insert(guid) {
                self.found.conflicts.push(guid);
            }
            return Ok(Resolve::Skip);
        }
        if let Some(o) = open.filter(|_| {
            known.is_none() && !self.found.fast_opened.contains_key(&guid) && self.fast.kind_of(guid).is_none()
        }) {
            // An open of a dynamic object the client closed, with another class or kind than
            // it had: forged, or the close before it was (the server never gives a GUID
            // another class). Stepped over and healed as a class conflict: the server's
            // open names the right class, and takes, the record forgotten (`closed`).
            let was = match o.kind {
                OpenKind::FastArray { .. } => Was::FastArray(o.class),
                _ => Was::Actor(o.class),
            };
            if self.closed.get(guid).is_some_and(|w| w != was) {
                if self.conflicting.insert(guid) {
                    self.found.conflicts.push(guid);
                }
                return Ok(Resolve::Skip);
            }
        }
        if let Some(r) = self.fast.resolve(guid, open, known.is_some(), &mut self.found.fast_opened)? {
            return Ok(r);
        }
        let class = match (open.map(|o| o.class), known) {
            (Some(c), Some(k)) if c != k => {
                // The server never reopens a GUID with another class: one of the two opens
                // was forged. Stepped over, not refused (refusing would refuse the server's
                // open, and every packet resending it, for good).
                self.found.conflicts.push(guid);
                self.conflicting.insert(guid);
                return Ok(Resolve::Skip);
            }
            (Some(c), _) => c,
            (None, Some(k)) => {
                if !self.found.opened.contains_key(&guid) {
                    self.found.last_update = Some(guid);
                }
                k
            }
            (None, None) => {
                self.found.missing.push(guid);
                return Ok(Resolve::Skip);
            }
        };
        let layout = self.classes.get(class as usize).map(|c| &*c.layout).ok_or(WireError::Invalid("class id"))?;
        self.found.opened.insert(guid, class);
        Ok(Resolve::Layout(layout))
    }
}
