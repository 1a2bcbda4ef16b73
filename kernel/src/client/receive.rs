//! Receiving a packet: the sequence-number verdict, decoding with each bunch's class resolved
//! ([`super::resolve`]), and the checks that decide which bunches can apply (opens that match their GUID's parity,
//! owners that are here, static actors that were loaded) before anything changes; then the
//! bunches go to [`super::apply`] in order, and actors the client lacks are asked for again.

use super::resolve::{Found, Resolver};
use super::{ClientWorld, Receipt, ReceiveError, Reopen, SeqVerdict, MAX_IGNORED};
use crate::ids::{NetGuid, Seq};
use crate::wire::bunch::{decode_packet, Bunch, Resolve, PLAIN_FOR_MISSING};
use crate::wire::feedback::MAX_REOPENS;
use crate::wire::open::{CloseReason, OpenKind};
use crate::wire::packet::MAX_MTU;
use crate::wire::WireError;
use std::collections::{HashMap, HashSet};

impl ClientWorld {
    /// Decodes, validates and applies one packet. A malformed packet is an error and changes
    /// nothing; a duplicate, late or too-far packet is dropped ([`Receipt::Dropped`]) — though a
    /// late one that proves a forged packet (its number came with other bytes, or several never
    /// received in a row behind a jump ahead) may ask for actors again or take the receive window
    /// back ([`ClientStats::late_conflicts`](super::ClientStats::late_conflicts),
    /// [`ClientStats::window_rollbacks`](super::ClientStats::window_rollbacks)).
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
    /// use shadowrep::client::{Receipt, SeqVerdict};
    ///
    /// driver.tick(&mut [&mut store]).unwrap();
    /// let packet = driver.take_packets(conn).unwrap().remove(0);
    /// assert_eq!(client.receive(&packet), Ok(Receipt::Applied { bunches: 1, skipped: 0 }));
    /// assert_eq!(client.receive(&packet), Ok(Receipt::Dropped(SeqVerdict::Duplicate)));
    /// assert!(client.receive(&packet[..1]).is_err(), "truncated: refused");
    /// assert_eq!(client.value(guid, 0), Some(Value::U16(100)));
    /// ```
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Receipt, ReceiveError> {
        if bytes.len() > MAX_MTU {
            self.stats.refused += 1;
            return Err(ReceiveError::Wire(WireError::Invalid("packet larger than the largest MTU")));
        }
        let seq = match crate::wire::BitReader::new(bytes).read_packed().map(u32::try_from) {
            Ok(Ok(s)) => Seq(s),
            _ => {
                self.stats.refused += 1;
                return Err(ReceiveError::Wire(WireError::Invalid("sequence number")));
            }
        };
        // A packet not newer than the newest received is a duplicate or late: dropped before
        // decoding, since the actors it names may be gone by now.
        // Only a packet that may be applied — a new one, or the newest number with other bytes —
        // is hashed.
        let verdict = self.window.verdict(seq);
        if verdict == SeqVerdict::Late && self.window.late_differs(seq, || packet_hash(bytes)) == Some(true) {
            self.ask_for_named(bytes);
        }
        let hash = match verdict {
            SeqVerdict::Late | SeqVerdict::TooFar => 0,
            SeqVerdict::New | SeqVerdict::Duplicate => packet_hash(bytes),
        };
        // Whether this packet has the newest number but other bytes (see `window`): if it fails,
        // that number is forgotten, not left acknowledged.
        let replacing = verdict == SeqVerdict::Duplicate;
        match verdict {
            SeqVerdict::New => {}
            SeqVerdict::Duplicate if self.window.differs(hash) => self.stats.replaced += 1,
            SeqVerdict::Duplicate => {
                self.stats.duplicates += 1;
                return Ok(Receipt::Dropped(verdict));
            }
            SeqVerdict::Late => {
                if !self.window.was_received(seq) && self.window.late_unreceived(seq) {
                    // The server's packets behind a forged jump ahead (see `window`): its next
                    // one is new again; what these carried is reported missing and resent.
                    self.stats.window_rollbacks += 1;
                    self.unreported = true;
                    // A tear-off in a packet gone back past was forged with it: left, it would
                    // hold against the server's packets, all numbered before it.
                    let top = self.window.highest();
                    let forged: Vec<NetGuid> =
                        self.torn.iter().filter(|(_, t)| t.at.ahead_of(top) > 0).map(|(&g, _)| g).collect();
                    for guid in forged {
                        if self.undo_tear_off(guid) {
                            self.request_reopen(guid);
                        }
                    }
                }
                self.stats.late += 1;
                return Ok(Receipt::Dropped(verdict));
            }
            SeqVerdict::TooFar => {
                self.stats.too_far += 1;
                return Ok(Receipt::Dropped(verdict));
            }
        }
        let mut opened: HashMap<NetGuid, u32> = HashMap::new();
        // A held part (see `partial`): this packet is read as if it had applied — its actor has
        // its class, and an open it carries counts for the bunches after it.
        let held = self.held_before(seq);
        if let Some(h) = held {
            opened.insert(h.guid, h.class);
        }
        // Each bunch's class, against the world before this packet (`resolve`).
        let mut resolver = Resolver::new(self, seq, opened);
        let decoded = decode_packet(bytes, |guid, open| resolver.resolve(guid, open));
        let Found { opened, fast_opened, missing, last_update, conflicts, untorn, ignored_used, asked_again } =
            resolver.found;
        let mut packet = match decoded {
            Ok(p) => p,
            Err(e) => {
                if e == WireError::Invalid(PLAIN_FOR_MISSING) {
                    // An update of an actor this client does not have, which cannot be stepped
                    // over: the packet is refused (the server sends its content again, as for a
                    // lost one) and the actor asked for, so the next bunch opens it.
                    // Asked for already (its request still rides in the feedbacks), the same
                    // refusal again is suspect: it may be the wrong bits after a misread update
                    // (see below) naming a GUID the server does not have, which would ignore the
                    // request for good — so the actor read before it is asked for too. (A real
                    // missing actor's packets sent before its reopen arrives cost that actor's
                    // neighbour a reopen; such packets only follow hostile input.)
                    if let Some(&guid) = missing.last() {
                        let again = self.reopen.iter().any(|r| r.guid == guid);
                        self.request_reopen(guid);
                        if let Some(update) = last_update.filter(|_| again) {
                            self.request_reopen(update);
                        }
                    }
                } else if let Some(guid) = last_update {
                    // The packet broke off after an update of an actor the client has, which was
                    // read with its copy's class — and a forged close and open can make that
                    // another than the server's (a plain bunch does not name its class): the
                    // update's records then end elsewhere, and what follows is read from the
                    // wrong bits, up to an error (in a record, a class id, a length). The server
                    // would resend the update, plain, into the same refusal for as long as the
                    // actor changes — every packet carrying it refused, the other actors' updates
                    // in them too. Asked for again, the server opens it anew: the open names the
                    // class, and a conflicting copy is replaced (`heal_conflict`). An honest
                    // server's packets are refused only after hostile input or corruption, so
                    // only those cost a reopen. (When the wrong bits name an actor the client
                    // lacks, that one is asked for first, as any missing actor is; above.)
                    self.request_reopen(guid);
                }
                return self.refuse(replacing, e);
            }
        };
        let mut skipped = packet.skipped.len();
        // Every open must say what its GUID's parity says: a dynamic actor spawns from spawn
        // info, a static one is found by its path among the actors loaded with the level.
        for b in &packet.bunches {
            match b.open.as_ref().map(|o| &o.kind) {
                Some(OpenKind::Spawn(_)) if !b.guid.is_dynamic() => {
                    return self.refuse(replacing, WireError::Invalid("a static GUID opened with spawn info"));
                }
                Some(OpenKind::Static(_)) if !b.guid.is_static() => {
                    return self.refuse(replacing, WireError::Invalid("a dynamic GUID opened by path"));
                }
                Some(OpenKind::FastArray { .. }) if !b.guid.is_dynamic() => {
                    return self.refuse(replacing, WireError::Invalid("a static GUID opened as a fast array"));
                }
                _ => {}
            }
        }
        // Actors must exist when their bunch runs: a close within this packet ends an actor, and
        // only an open brings one back; a bunch naming a static object the client does not know
        // cannot be applied either, nor an open of a static actor the client did not load.
        let mut gone: HashSet<NetGuid> = HashSet::new();
        let (level, actors) = (&self.level, &self.actors);
        let gone_statics = &self.gone_statics;
        let mut unknown_statics = 0;
        let mut opened_here: HashSet<NetGuid> = HashSet::new();
        let mut sub_opened_here: HashSet<NetGuid> = HashSet::new();
        if let Some(h) = held.filter(|h| h.opens) {
            opened_here.insert(h.guid);
            if h.sub_object {
                sub_opened_here.insert(h.guid);
            }
        }
        let subs = &self.subs;
        // Opens set aside for want of their owner, with the class the open named (a
        // sub-object's; none for a fast array).
        let mut orphans: Vec<(NetGuid, Option<u32>)> = Vec::new();
        let mut not_loaded: Vec<(NetGuid, u32)> = Vec::new();
        let mut keep = |b: &Bunch| {
            if let Some(close) = &b.close {
                // A dormancy close keeps the copy (dormant): a sub-object's open after it, in
                // the same packet, still has its owner — set aside, it was lost for good while
                // the server counted the owner's woken copy and the part's channel held (the RPC
                // ownership review's seed 453: a reliable call on the part never delivered).
                if close.reason != CloseReason::Dormant {
                    gone.insert(b.guid);
                }
                return true;
            }
            if let Some(open) = &b.open {
                if let OpenKind::Static(path) = &open.kind {
                    // Bound to another GUID or not, the path is this open's (a server gives a
                    // path one GUID: one of the two was forged, and the newest open takes it —
                    // the server's, asked for again, heals a forged binding).
                    let loaded = level
                        .get(path)
                        .is_some_and(|&(c, _, _)| c == open.class && actors.get(&b.guid).is_none_or(|a| a.0 == c))
                        || (gone_statics.get(path) == Some(&(open.class, b.guid)) && !actors.contains_key(&b.guid));
                    if !loaded {
                        unknown_statics += 1;
                        skipped += 1;
                        not_loaded.push((b.guid, open.class));
                        return false;
                    }
                }
                if let OpenKind::FastArray { owner } = open.kind {
                    // An actor's (a static one's too), never a sub-object's nor a fast array's.
                    let present =
                        (actors.contains_key(&owner) && !gone.contains(&owner)) || opened_here.contains(&owner);
                    if subs.contains(owner) || sub_opened_here.contains(&owner) || fast_opened.contains_key(&owner) {
                        skipped += 1;
                        return false;
                    }
                    if !present {
                        // Its owner is not here (yet): the server sends the open again.
                        skipped += 1;
                        orphans.push((b.guid, None));
                        return false;
                    }
                    gone.remove(&b.guid);
                    return true;
                }
                if let OpenKind::SubObject { owner } = open.kind {
                    // An owner is an actor, never a sub-object (no chains: the server makes none).
                    if !owner.is_dynamic() || subs.contains(owner) || sub_opened_here.contains(&owner) {
                        skipped += 1;
                        return false;
                    }
                    let present =
                        (actors.contains_key(&owner) && !gone.contains(&owner)) || opened_here.contains(&owner);
                    if !present || owner == b.guid {
                        // Its owner is not here (yet): the server sends the open again.
                        skipped += 1;
                        orphans.push((b.guid, Some(open.class)));
                        return false;
                    }
                }
                opened_here.insert(b.guid);
                if matches!(open.kind, OpenKind::SubObject { .. }) {
                    sub_opened_here.insert(b.guid);
                }
                gone.remove(&b.guid);
            } else if gone.contains(&b.guid) {
                skipped += 1;
                return false;
            }
            true
        };
        // Whether the packet's last bunch passes (only then can it be held for its continuation).
        let (last, mut seen, mut last_kept) = (packet.bunches.len(), 0, false);
        packet.bunches.retain(|b| {
            seen += 1;
            let k = keep(b);
            if seen == last {
                last_kept = k;
            }
            k
        });
        // The part held from the packet before joins this packet's first bunch, or applies
        // alone now — before this packet changes anything, as it was checked against the world
        // before this packet — and this packet's last part is held if it goes on.
        let n = packet.bunches.len();
        self.join_partial(&mut packet.bunches, packet.seq, packet.continues && last_kept, &opened, bytes.len());
        self.window.accept(packet.seq, hash);
        self.unreported = true;
        self.stats.packets_applied += 1;
        self.stats.bunches_skipped += skipped as u64;
        self.stats.unknown_statics += unknown_statics;
        for guid in missing {
            self.request_reopen(guid);
        }
        // Asked for again after the bunches: a bunch for an actor cancels a request for it.
        let reask: Vec<NetGuid> = untorn.into_iter().filter(|&g| self.undo_tear_off(g)).collect();
        for guid in conflicts {
            self.heal_conflict(guid);
        }
        for guid in ignored_used {
            self.ignored.touch(guid, MAX_IGNORED);
        }
        for (guid, class) in not_loaded {
            if self.ignored.insert(guid, class, MAX_IGNORED) {
                self.stats.ignored_evicted += 1;
            }
            // An open of a static actor this client did not load, under the GUID of an actor it
            // holds: a server gives a GUID one object, so one of the two opens was forged. The
            // newest is believed (the actor's updates are read past), and the actor is asked for
            // again — the server's open heals a forged one; read past for good, the copy stayed
            // stale for good (found by `fuzz/`'s `client_heal`).
            if self.actors.contains_key(&guid) {
                self.request_reopen(guid);
            }
        }
        // Exports first: the static objects this packet's references name.
        for (guid, path) in std::mem::take(&mut packet.exports) {
            self.bind_export(guid, &path);
        }
        self.rpcs.closed_now.clear();
        for b in packet.bunches {
            let class = opened.get(&b.guid).copied();
            self.apply_one(b, class, packet.seq);
        }
        // Reliable calls held for a sub-object set aside whose open this packet applied.
        self.release_held_rpcs();
        // A sub-object's open set aside is one the server may count delivered: its owner's open
        // went in an earlier packet, lost, and the sub-object's went on in a later one before
        // the server knew (it sends a sub-object once its owner has a channel, its open not yet
        // acknowledged). Asked for again below — but the request rides a few feedbacks only,
        // and should they all be lost, the next one acknowledges this packet without it: the
        // server then sends the sub-object's changes as plain bunches, which cannot be stepped
        // over without its class. Each was a refused packet (the server sent it again whole,
        // the other actors' bunches in it too): the lifecycle review's random worlds, in order,
        // refused a packet so in about 12 seeds of 300 at 30–50 % loss. UE's client drops
        // an unreliable bunch of a channel it has not opened and reads the rest of the packet
        // (its sub-objects ride their owner's channel, whose reliable open comes first): the
        // GUID is recorded with the class its open named, its updates read past and each asking
        // for it again, until its open (which the server sends on the request) or its close
        // ends the record (`apply_one`). A fast array's open set aside likewise (recorded
        // without a class: its bunches are stepped over by their length), so that one that
        // never changes asks again on the same schedule when its request goes unanswered.
        // (Recorded before it is asked for: a request that finds the reopen list full leaves the
        // record to ask again later — `request_reopen`.)
        for &(guid, class) in &orphans {
            let held = self.actors.contains_key(&guid) || self.fast.kind_of(guid).is_some();
            if !held && self.ignored.insert_asking(guid, class, MAX_IGNORED) {
                self.stats.ignored_evicted += 1;
            }
        }
        // Opens set aside for a missing owner are asked for after the bunches too, and firmly: a
        // close of the actor's earlier channel in this packet (before the open), or an open
        // arriving before the server's answer, must not take the request back — the server
        // believes the open acknowledged, and what the set-aside bunch carried delivered. So is
        // an actor whose forged tear-off was undone: it dropped the references waiting for their
        // target, which the server's plain updates do not carry again, only its open.
        for guid in reask.into_iter().chain(orphans.into_iter().map(|o| o.0)).chain(asked_again) {
            self.request_reopen_firm(guid);
        }
        // Calls after the actors: an actor this packet opens is there, and a call sees the state
        // its frame sent.
        for call in packet.rpcs {
            self.receive_rpc(call);
        }
        self.rpcs.closed_now.clear();
        if let Some(next) = packet.calls_ack {
            self.calls_acked(next);
        }
        Ok(Receipt::Applied { bunches: n, skipped })
    }

    /// Applies one validated bunch of packet `seq` (`class`: its actor's, or none for a fast
    /// array's): a bunch for an actor cancels a request for it (not a firm one:
    /// `Reopen::firm`), an open or a close (not a dormancy close) ends its being ignored (see
    /// `ignored`).
    pub(super) fn apply_one(&mut self, b: Bunch, class: Option<u32>, seq: Seq) {
        self.reopen.retain(|r| r.guid != b.guid || r.firm);
        // A dormancy close ends nothing: the server believes the client keeps the copy, and
        // sends it plain updates once it wakes (an ignored actor's are still read past; an
        // orphaned sub-object's, refused, cost a packet — the review's rich worlds, seed 146).
        if b.open.is_some() || b.close.as_ref().is_some_and(|c| c.reason != CloseReason::Dormant) {
            self.ignored.remove(b.guid);
        }
        if let Some(close) = b.close {
            self.close(b.guid, close, seq);
            return;
        }
        match class {
            Some(class) => self.apply_bunch(class, b),
            None => self.apply_fast(b),
        }
    }

    /// A late packet whose number came with other bytes: one of the two packets was forged, and
    /// the client cannot tell which. If the one it applied was, the server counts its own packet
    /// — this one — delivered: an open in it would never come again (and a forged open with
    /// another class before it would read the server's plain updates with the wrong class, often
    /// without an error), nor its values until they change. So every dynamic actor and fast array
    /// it names is asked for again, and so is every static one — bound or not: the late packet may
    /// be the server's, with the open of a static actor a forged open under its number made the
    /// client step over and ignore (read as far as it decodes with the classes the client knows; the server's reopen carries the
    /// whole state and names the class, and `heal_conflict` replaces a copy of another class) —
    /// while fewer than half a feedback's reopens ride, so a forger's late packets never crowd out
    /// the rest.
    /// Closes and exports are not named (a close lost this way leaves the client's copy until the
    /// actor's next open); its reliable calls go to the reliable window. Costs reopens only after
    /// hostile input: an honest server repeats a packet byte for byte.
    fn ask_for_named(&mut self, bytes: &[u8]) {
        self.stats.late_conflicts += 1;
        let mut named: Vec<NetGuid> = Vec::new();
        let mut scratch = HashMap::new();
        let (classes, actors, fast) = (&self.classes, &self.actors, &self.fast);
        let decoded = decode_packet(bytes, |guid, open| {
            if named.len() < MAX_REOPENS / 2 && !guid.is_null() && !named.contains(&guid) {
                named.push(guid);
            }
            if let Some(r) = fast.resolve(guid, open, actors.contains_key(&guid), &mut scratch)? {
                return Ok(r);
            }
            let class = open.map(|o| o.class).or_else(|| actors.get(&guid).map(|a| a.0));
            Ok(match class.and_then(|c| classes.get(c as usize)) {
                Some(c) => Resolve::Layout(&c.layout),
                None => Resolve::Skip,
            })
        });
        // Firm: the server's plain updates carry what changed, not what a forged packet may
        // have left in the copies.
        for guid in named {
            if self.reopen.len() >= MAX_REOPENS / 2 {
                break;
            }
            self.request_reopen_firm(guid);
        }
        // Its reliable calls: the server counts them delivered with the number, and would never
        // send them again. The reliable window keeps each once (a call seen under its number
        // with the same bits is not delivered twice); unreliable ones are let go.
        if let Ok(packet) = decoded {
            for call in packet.rpcs.into_iter().filter(|c| c.seq.is_some()) {
                self.receive_rpc(call);
            }
        }
    }

    /// Refuses the packet being received for `e`. If it had the newest number with other bytes
    /// (`replacing`), that number is forgotten (`ReceiveWindow::restore`): left acknowledged, the
    /// server would never resend what this packet carried.
    fn refuse(&mut self, replacing: bool, e: WireError) -> Result<Receipt, ReceiveError> {
        self.stats.refused += 1;
        // A part held for its continuation stays held: a refused packet is not received (the
        // server's own packet with that number may still come and continue it; if the number
        // was lost, the next packet shows the gap).
        if replacing && self.window.restore() {
            self.stats.restored += 1;
            self.unreported = true;
        }
        Err(ReceiveError::Wire(e))
    }

    /// An open named actor `guid` with another class than the client's copy: one of the two
    /// opens was forged, and the client cannot tell which. A dynamic actor's copy is destroyed
    /// and the actor asked for again: the server answers with its own open, which then meets no
    /// copy, so whichever open was forged, the client ends with the server's class — no more
    /// than a forged close could do. A static actor's class is the level's, loaded by the client
    /// itself: its copy stays, the open was stepped over.
    /// An open of a dynamic object the client closed with another class ([`super::closed`]) is
    /// healed the same way: its record is forgotten, so the server's own open takes; so is an
    /// actor's open under a fast array's GUID: the fast array goes.
    fn heal_conflict(&mut self, guid: NetGuid) {
        self.stats.open_conflicts += 1;
        self.closed.remove(guid);
        if guid.is_dynamic() {
            if self.fast.remove(guid) {
                self.forget_references(guid);
            }
            self.destroy(guid);
            self.request_reopen_firm(guid);
        }
    }

    /// A bunch for torn-off actor `guid` came in a packet numbered from its tear-off's on, which
    /// an honest server never writes: the tear-off was forged. The actor replicates again.
    /// Returns whether it must be asked for again: the tear-off dropped references waiting for
    /// their target, which only its open carries again. Undoing gives a forger nothing: the
    /// server's own bunches are what undo it.
    fn undo_tear_off(&mut self, guid: NetGuid) -> bool {
        let Some(t) = self.torn.remove(&guid) else { return false };
        self.stats.tear_offs_undone += 1;
        t.dropped_refs
    }

    /// Asks the server to open actor `guid` again (in the next feedbacks); a request already
    /// riding rides its feedbacks again from now.
    pub(super) fn request_reopen(&mut self, guid: NetGuid) {
        self.ask(guid, false);
    }

    /// As [`Self::request_reopen`], and the request rides all its feedbacks: no bunch for the
    /// actor ends it (see `Reopen::firm`).
    pub(super) fn request_reopen_firm(&mut self, guid: NetGuid) {
        self.ask(guid, true);
    }

    fn ask(&mut self, guid: NetGuid, firm: bool) {
        // Asked again while the request rides: it rides its feedbacks from now. The server
        // honours a request only once the open it last sent is acknowledged (before, one is on
        // its way); that open set aside again, the request made for the one before may have
        // ridden out before the acknowledgement of this one (the ownership sweep's seed 3972: a
        // fast array opened four times while its owner's open was lost, never there).
        if let Some(r) = self.reopen.iter_mut().find(|r| r.guid == guid) {
            r.firm |= firm;
            r.tries = 0;
            return;
        }
        if self.reopen.len() < MAX_REOPENS {
            self.reopen.push(Reopen { guid, tries: 0, firm });
            self.stats.reopens_requested += 1;
        } else {
            // No place: a set-aside sub-object asks again later (`ignored`).
            self.ignored.turned_away(guid, self.feedbacks);
        }
    }
}

/// A hash of a packet's bytes (to tell a repeat from a different packet with the same number).
fn packet_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}
