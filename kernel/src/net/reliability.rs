//! Reliability: sequence numbers, what each packet in flight carried, and what feedback does.
//!
//! ```text
//! window     a packet may be started only while next_seq − acked ≤ ACK_WINDOW (256), where
//!            acked is the newest packet the client reported; so one feedback always describes
//!            every packet in flight, and an honest packet is never more than ACK_WINDOW ahead
//!            of what the client has (which is all the jump a client accepts)
//! feedback   newer than acked and not past the newest packet sent: every packet in flight up
//!            to its `highest` is settled — delivered (retired; an open becomes acknowledged) or
//!            missing (its leaves go back to the pair's resend set, an open is sent again, a
//!            close is queued again); acked = highest
//!            about nothing newer than acked (duplicated, reordered, repeated): ignored, counted
//!            ahead of the newest packet sent by at most ACK_WINDOW: the client accepted a
//!            forged packet numbered past ours (it takes jumps of up to ACK_WINDOW); what it
//!            says of the packets we did send is still true, so it settles them as the same
//!            feedback re-based on our newest would (acked = newest), counted
//!            further ahead: names a packet never sent: ignored, counted — it can neither
//!            settle nor resend
//! keep-alive a connection with content in flight that sent nothing for `keep_alive_frames`
//!            sends an empty packet, so the client's next feedback reveals a lost tail (UE's
//!            keep-alive does the same); with the window full, the newest packet is sent again
//!            byte for byte instead, as a new sequence number would be refused
//! ```
//!
//! Each packet is settled exactly once, so no feedback — forged, repeated or random — can make
//! the server send a packet's content more than once per loss the client reports for a packet
//! really in flight.
//!
//! Why feedback ahead of the newest packet is settled rather than ignored: a forged packet
//! numbered up to ACK_WINDOW past the client's newest is accepted, and while the server's acked
//! lags the client (feedback one round trip behind: the normal state) the server can never
//! reach that number, so ignoring every feedback naming it would leave the window full for
//! good. Re-based on the newest packet sent ([`Reliability::as_of_newest`]) such a feedback is
//! one a client could send with a `highest` we accept, so it gives a forger nothing the
//! forger could not already do; and it moves acked only to our newest packet, never to the
//! number the client claims, so the server still sends nothing past what a client holding a
//! real packet of ours accepts. The client then drops our packets below its forged number as
//! late and reports them missing until our numbering reaches it and our packet replaces the
//! forged one: at most ACK_WINDOW packets of stall, as for a forged jump with acked current.
//!
//! There are no timeouts: a client that stops sending feedback stops the connection at a full
//! window (the embedding server decides when a silent client is gone).

use super::actors::ClassNet;
use super::connection::{pair, Connection, PendingClose};
use super::fastarrays::{FastArrays, FastSent};
use crate::ids::{LeafMask, NetGuid, Seq};
use crate::wire::feedback::{Feedback, ACK_WINDOW};
use crate::wire::open::CloseReason;
use std::collections::VecDeque;

/// A packet in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PacketRecord {
    pub seq: Seq,
    /// Entries of this packet, at the front of [`Reliability::entries`] once the packets before
    /// it are settled.
    pub entries: u32,
    /// Closes of this packet, likewise in [`Reliability::closes`].
    pub closes: u32,
    /// Exports of this packet, likewise in [`Reliability::exports`].
    pub exports: u32,
    /// Fast array bunches of this packet, likewise in [`Reliability::fast`].
    pub fast: u32,
    /// Reliable calls of this packet, likewise in [`Reliability::rpcs`].
    pub rpcs: u32,
    /// Acknowledgements of the client's calls in this packet (0 or 1), likewise in
    /// [`Reliability::calls_acks`].
    pub acks: u32,
}

/// What one packet carried for one actor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SentEntry {
    pub class: u32,
    pub slot: u32,
    /// The low 32 bits of the actor's GUID: a slot reused while the entry is in flight holds an
    /// actor with another GUID, and two GUIDs that agree in their low 32 bits are 2³¹
    /// assignments apart. (24 bytes an entry instead of 32: a frame writes one per bunch on
    /// every connection.)
    pub guid_low: u32,
    /// The channel epoch of the pair when sent.
    pub epoch: u8,
    /// [`entry`] bits.
    pub flags: u8,
    /// The leaf groups the bunch carried, whole or in part.
    pub leaves: LeafMask,
}

/// [`SentEntry::flags`] bits.
pub(crate) mod entry {
    /// The bunch sent the open.
    pub const OPEN: u8 = 1;
    /// The bunch carried initial values: the open's ([`crate::net::plan::SendItem::initial`])
    /// or owed ones resent ([`crate::net::plan::SendItem::initial_values`]). Lost, its
    /// initial-only groups are owed again.
    pub const INITIAL: u8 = 2;
    /// The bunch carried the open for a role the pair owed ([`crate::net::plan::SendItem::role`]):
    /// if lost, the role is owed again.
    pub const ROLE: u8 = 4;
    /// Its lowest group (a leaf group or a dynamic array) began in an earlier bunch: the actor
    /// was split across packets there.
    pub const CONTINUED: u8 = 8;
    /// Its highest group goes on past it: in the next bunch (the actor was split inside the
    /// group), or nowhere (a full window held the rest back).
    pub const UNFINISHED: u8 = 16;
}

const _: () = assert!(std::mem::size_of::<SentEntry>() == 24);

impl SentEntry {
    /// Whether `guid` is the actor this entry was sent for.
    pub fn names(&self, guid: NetGuid) -> bool {
        guid.0 as u32 == self.guid_low
    }

    /// The bunch sent the open.
    pub fn open(&self) -> bool {
        self.flags & entry::OPEN != 0
    }

    /// The bunch carried initial values ([`entry::INITIAL`]).
    pub fn initial(&self) -> bool {
        self.flags & entry::INITIAL != 0
    }

    /// The bunch carried the open for a role the pair owed.
    pub fn role(&self) -> bool {
        self.flags & entry::ROLE != 0
    }

    /// The groups whose initial values its delivery settles: those it carried whole. A group (or
    /// an array) split between bunches is settled by none of its parts: a part's delivery says
    /// nothing of the others, and a later part's loss may not owe it again (an owner's update
    /// carries its InitialOrOwner values as plain ones, not initial values). Left owed, such a
    /// group sends nothing by itself: it only lets a lost copy of it be resent as initial values
    /// where they no longer reach, until a bunch that carries it whole is delivered.
    pub fn settles(&self) -> LeafMask {
        let mut leaves = self.leaves;
        if self.flags & entry::CONTINUED != 0 {
            leaves.0 &= leaves.0.wrapping_sub(1);
        }
        if self.flags & entry::UNFINISHED != 0 && !leaves.is_empty() {
            leaves.0 &= !(1u64 << (63 - leaves.0.leading_zeros()));
        }
        leaves
    }
}

/// How a feedback relates to what was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intake {
    /// It settles the packets in flight up to its `highest`.
    Settle,
    /// Its `highest` is past the newest packet sent, by at most [`ACK_WINDOW`]: the client
    /// accepted a forged packet. It settles the packets in flight once re-based on the newest
    /// ([`Reliability::as_of_newest`]).
    Ahead,
    /// Nothing newer than what was already settled.
    Stale,
    /// It names a packet never sent.
    NeverSent,
}

/// Sequence numbers and packets in flight of one connection.
pub(crate) struct Reliability {
    next_seq: Seq,
    /// The newest packet the client reported: the window's base.
    acked: Seq,
    in_flight: VecDeque<PacketRecord>,
    /// What each packet in flight carried, in packet order.
    pub entries: VecDeque<SentEntry>,
    pub closes: VecDeque<PendingClose>,
    pub exports: VecDeque<NetGuid>,
    pub fast: VecDeque<FastSent>,
    /// Reliable calls' numbers ([`super::rpc`]).
    pub rpcs: VecDeque<u32>,
    /// The numbers acknowledgements of the client's calls gave.
    pub calls_acks: VecDeque<u16>,
    /// Packets in flight that carry content: entries, closes, exports, fast array bunches,
    /// reliable calls or call acknowledgements.
    content: u32,
    /// The newest packet sent, kept to be sent again while the window is full.
    last_packet: Vec<u8>,
    /// Frames since the last packet was sent.
    pub idle_frames: u32,
}

impl Reliability {
    pub fn new(first: Seq) -> Self {
        Self {
            next_seq: first,
            acked: first.back(1),
            in_flight: VecDeque::new(),
            entries: VecDeque::new(),
            closes: VecDeque::new(),
            exports: VecDeque::new(),
            fast: VecDeque::new(),
            rpcs: VecDeque::new(),
            calls_acks: VecDeque::new(),
            content: 0,
            last_packet: Vec::new(),
            idle_frames: 0,
        }
    }

    /// Sequence number of the next packet.
    pub fn next_seq(&self) -> Seq {
        self.next_seq
    }

    /// The newest packet the client reported: every packet up to it is settled.
    pub fn acked(&self) -> Seq {
        self.acked
    }

    /// Packets that may still be started before the window is full.
    pub fn room(&self) -> u32 {
        (ACK_WINDOW as i64 + 1 - self.next_seq.ahead_of(self.acked)).clamp(0, ACK_WINDOW as i64) as u32
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether the packet whose sequence number ends in the 16 bits `low` may still be in
    /// flight: it is the open packet (the next sequence number) or one of the packets in
    /// flight, which are the ones just before it. At most [`ACK_WINDOW`] packets are in flight,
    /// so a packet sent 65 536 or more packets ago reads as in flight only while the window
    /// holds the few numbers that share its 16 bits — until the next packets move on.
    pub fn carries(&self, low: u16) -> bool {
        let back = (self.next_seq.0 as u16).wrapping_sub(low);
        usize::from(back) <= self.in_flight.len()
    }

    /// Records the packet just written with sequence [`Self::next_seq`] (its entries and closes
    /// already pushed).
    pub fn sent(&mut self, entries: u32, closes: u32, exports: u32, fast: u32, (rpcs, acks): (u32, u32)) {
        debug_assert!(self.room() > 0);
        self.in_flight.push_back(PacketRecord { seq: self.next_seq, entries, closes, exports, fast, rpcs, acks });
        self.content += (entries + closes + exports + fast + rpcs + acks > 0) as u32;
        self.next_seq = self.next_seq.next();
        self.idle_frames = 0;
    }

    /// Keeps the newest packet sent (the last of a frame), to send again while the window is
    /// full. Called once per frame that sent anything, not once per packet.
    pub fn remember_newest(&mut self, bytes: &[u8]) {
        self.last_packet.clear();
        self.last_packet.extend_from_slice(bytes);
    }

    /// Whether a quiet connection should send a keep-alive now.
    /// `always`: even with nothing in flight (the actor level keeps every client hearing from
    /// the server, so it answers and stays ready).
    pub fn keep_alive_due(&self, keep_alive_frames: u32, always: bool) -> bool {
        self.idle_frames >= keep_alive_frames
            && (always || !self.in_flight.is_empty() && (self.content > 0 || self.room() == 0))
    }

    /// The newest packet sent, to send again while the window is full.
    pub fn repeat(&mut self) -> &[u8] {
        self.idle_frames = 0;
        &self.last_packet
    }

    /// How `fb` relates to what was sent.
    pub fn classify(&self, fb: &Feedback) -> Intake {
        let newest = self.next_seq.back(1);
        match fb.highest.ahead_of(newest) {
            // No client takes a jump of more than ACK_WINDOW past a packet we sent.
            d if d > ACK_WINDOW as i64 => Intake::NeverSent,
            d if d > 0 => Intake::Ahead,
            _ if fb.highest.ahead_of(self.acked) <= 0 => Intake::Stale,
            _ => Intake::Settle,
        }
    }

    /// `fb` (classified [`Intake::Ahead`]) as said of the newest packet sent: `highest` is that
    /// packet and each bit keeps the packet it stood for; the packets of ours `fb` no longer
    /// reached read as missing (their content goes again, the safe side). What `fb` says past
    /// the newest packet is dropped: it is about packets we never sent.
    pub fn as_of_newest(&self, fb: &Feedback) -> Feedback {
        let newest = self.next_seq.back(1);
        let ahead = fb.highest.ahead_of(newest).clamp(0, ACK_WINDOW as i64) as u32;
        let mut received = fb.received;
        received.unshift(ahead);
        Feedback { highest: newest, received, reopen: Vec::new(), calls: Vec::new() }
    }

    /// Takes the next packet `fb` settles, with whether it was delivered; call while it
    /// returns something, after [`Self::classify`] said [`Intake::Settle`].
    pub fn settle_next(&mut self, fb: &Feedback) -> Option<(PacketRecord, bool)> {
        let front = self.in_flight.front()?;
        let back = fb.highest.ahead_of(front.seq);
        if back < 0 {
            self.acked = fb.highest;
            return None;
        }
        let rec = self.in_flight.pop_front()?;
        self.content -= (rec.entries + rec.closes + rec.exports + rec.fast + rec.rpcs + rec.acks > 0) as u32;
        Some((rec, fb.received.get(back as u32)))
    }

    /// Settles every packet in flight as delivered, without a feedback message (a perfect link:
    /// the UE-style reference frame's model). Returns the packets settled.
    pub fn acknowledge_everything(&mut self) -> usize {
        let n = self.in_flight.len();
        self.in_flight.clear();
        self.entries.clear();
        self.closes.clear();
        self.exports.clear();
        self.fast.clear();
        self.rpcs.clear();
        self.calls_acks.clear();
        self.content = 0;
        self.acked = self.next_seq.back(1);
        n
    }

    /// Marks `fb` fully settled (call when [`Self::settle_next`] returned `None`).
    pub fn settled(&mut self, fb: &Feedback) {
        if fb.highest.ahead_of(self.acked) > 0 {
            self.acked = fb.highest;
        }
    }
}

/// One entry of a settled packet, waiting for [`apply_entries`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SettledEntry {
    /// Its place among the feedback's settled entries (packet order).
    order: u32,
    delivered: bool,
    entry: SentEntry,
    /// Sent on an earlier channel of its pair than the one open now (closed while it flew, its
    /// epoch come round since): it neither acknowledges nor loses the open of this one.
    earlier: bool,
}

/// Applies the fate of one settled packet to the connection: its entries go to `entries`
/// (applied together by [`apply_entries`] once every packet of the feedback is settled), its
/// closes, fast array bunches and exports are applied here.
///
/// A lost close is queued again unless its actor has a channel again on this connection whose
/// open has gone (the actor level closed it for relevancy and has reopened it since: the open
/// replaced the close),
/// or its fast array was opened there again ([`FastArrays::close_lost`]).
/// Entries touch only their own pair's state, which no close, fast array or export reads, so
/// applying them after the rest changes nothing but the cost.
pub(crate) fn apply_settled(
    (ci, conn): (usize, &mut Connection),
    classes: &[ClassNet],
    guids: &crate::ids::GuidMap<(u32, u32)>,
    fast: &FastArrays,
    rec: PacketRecord,
    delivered: bool,
    entries: &mut Vec<SettledEntry>,
) {
    if delivered {
        conn.stats.packets_acked += 1;
    } else {
        conn.stats.packets_lost += 1;
    }
    // A pair counts nothing in flight (its newest packet tells), so a delivered entry without
    // an open changes nothing but the leaves of lost opens it delivers (the packets settle in
    // order: a lost open is noted before any later bunch delivers its leaves): only the others
    // wait to be applied (sorted, then walked).
    for _ in 0..rec.entries {
        let Some(e) = conn.rel.entries.pop_front() else { break };
        let key = super::pairs::pair_key(e.class, e.slot);
        let unsent = &mut conn.unsent_initial;
        if delivered && !e.open() && !unsent.has(key) {
            continue;
        }
        let c = &classes[e.class as usize];
        let Some(a) = c.actors.get(e.slot as usize) else { continue };
        if !(a.alive && e.names(a.guid)) {
            continue;
        }
        // A bunch of an earlier channel of the pair (see `OpenedAfter`) is nothing to this
        // one's initial values either.
        let earlier = conn.opened_after.earlier(key, rec.seq);
        if !earlier {
            if delivered {
                unsent.delivered(key, e.epoch, e.settles());
            } else if e.initial() {
                unsent.lost_open(key, e.epoch, e.leaves, c.active.initial_only());
            }
        }
        if delivered && !e.open() {
            continue;
        }
        entries.push(SettledEntry { order: entries.len() as u32, delivered, entry: e, earlier });
    }
    for _ in 0..rec.closes {
        let Some(close) = conn.rel.closes.pop_front() else { break };
        if delivered {
            continue;
        }
        // A lost close goes again unless the channel is back: a torn-off actor's always; a
        // destroyed (or relevancy, or sublevel) close unless the client may hold the actor's
        // copy of a channel opened since (its open went, or it is held dormant — a row whose
        // open has not gone yet leaves the old copy to this close); a dormancy close while the
        // row is still dormant.
        let again = match close.reason {
            CloseReason::Destroyed => {
                !conn.holds_copy(guids, close.guid) && fast.close_lost(super::fastarrays::Side::Driver, ci, close.guid)
            }
            CloseReason::LevelUnloaded => !conn.holds_copy(guids, close.guid),
            CloseReason::Dormant => conn.dormant_here(guids, close.guid),
            CloseReason::TornOff => true,
        };
        if again {
            conn.closes.push(close);
        }
    }
    for _ in 0..rec.fast {
        let Some(sent) = conn.rel.fast.pop_front() else { break };
        conn.quiet.forget_sent(&sent);
        if let Some(guid) = fast.settle(super::fastarrays::Side::Driver, ci, sent, delivered) {
            conn.closes.push(PendingClose::destroyed(guid));
        }
    }
    super::rpc::settle_packet(conn, (rec.rpcs, rec.acks), delivered);
    // An export the client acknowledged is never sent again; a lost one goes at the next frame
    // (the references it serves may have arrived without it: they wait on the client).
    for _ in 0..rec.exports {
        let Some(guid) = conn.rel.exports.pop_front() else { break };
        conn.exporting.remove(&guid);
        if delivered {
            conn.exported.insert(guid);
        } else if !conn.exported.contains(&guid) {
            conn.exports.push(guid);
        }
    }
}

/// Applies the settled packets' entries to their pairs (and empties `entries`): a delivered
/// open is acknowledged; a lost entry's leaves go back to the pair's resend set and a lost open
/// that was not acknowledged meanwhile is sent again.
///
/// One feedback settles a few packets of a hundred bunches each, scattered over the
/// connection's channel table in send (priority) order. Sorted by pair, then packet order (one
/// pair's entries keep theirs: a lost open then a delivered one is not the same as the reverse),
/// they are applied in one forward walk over the table instead of one binary search each.
pub(crate) fn apply_entries(conn: &mut Connection, entries: &mut Vec<SettledEntry>) {
    entries.sort_unstable_by_key(|s| (super::pairs::pair_key(s.entry.class, s.entry.slot), s.order));
    let mut cursor = 0;
    for SettledEntry { entry: e, delivered, earlier, .. } in entries.drain(..) {
        let Some(ps) = conn.pairs.get_mut_from(&mut cursor, e.class, e.slot) else { continue };
        // An open is its channel's: one of an earlier channel of the pair (closed and opened
        // again while it was in flight) acknowledges nothing of this one's, nor is its loss this
        // one's (the client may have that open and then the close after it).
        let this_channel = ps.epoch == e.epoch && !earlier;
        if delivered {
            if e.open() && this_channel {
                ps.flags |= pair::OPEN_ACKED;
                // Planned on every change since (sent with its open until now), owing nothing:
                // clean from here (see `DenseTable`).
                if ps.resend.is_empty() && ps.flags & pair::PENDING == 0 && ps.epoch == 0 && ps.sent_through.0 != 0 {
                    conn.pairs.set_clean(e.class, e.slot);
                }
            }
            continue;
        }
        if e.open() && this_channel && ps.flags & pair::OPEN_ACKED == 0 {
            ps.flags &= !pair::OPEN_SENT;
        }
        if e.role() && this_channel {
            let key = super::pairs::pair_key(e.class, e.slot);
            let epoch = ps.epoch;
            conn.roles.lost(key, e.guid_low, epoch);
            // Per-slot pairs are planned from the pending list (the actor level replicates the
            // pair when its actor is next due, and asks then).
            conn.queue(e.class, e.slot);
        }
        conn.stats.leaves_resent += u64::from(e.leaves.count());
        conn.owe(e.class, e.slot, e.leaves);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::feedback::AckBits;

    fn feedback(highest: u32, received: &[u32]) -> Feedback {
        let mut bits = AckBits::default();
        for &r in received {
            bits.set(highest.wrapping_sub(r));
        }
        Feedback { highest: Seq(highest), received: bits, reopen: Vec::new(), calls: Vec::new() }
    }

    fn send(r: &mut Reliability, n: u32) {
        for _ in 0..n {
            r.sent(1, 0, 0, 0, (0, 0));
        }
    }

    #[test]
    fn settled_entries_reach_their_pairs_in_packet_order_whatever_the_table_order() {
        use crate::net::pairs::Pairs;
        let mut conn = Connection::new(false, Pairs::channels(), crate::wire::packet::MIN_MTU, Seq(1));
        let pair = |conn: &mut Connection, class, slot, flags, epoch| {
            let ps = conn.pairs.get_or_insert(class, slot);
            (ps.flags, ps.epoch) = (flags, epoch);
        };
        pair(&mut conn, 0, 3, pair::OPEN_SENT, 1);
        pair(&mut conn, 0, 9, pair::OPEN_SENT, 4);
        pair(&mut conn, 0, 11, pair::OPEN_SENT, 6);
        pair(&mut conn, 1, 2, pair::OPEN_ACKED, 0);
        pair(&mut conn, 2, 7, pair::OPEN_ACKED, 0);
        let entry = |class, slot, epoch, open, leaf| SentEntry {
            class,
            slot,
            guid_low: 0,
            epoch,
            flags: if open { entry::OPEN | entry::INITIAL } else { 0 },
            leaves: LeafMask::leaf(leaf),
        };
        let mut entries = Vec::new();
        let mut push = |e: SentEntry, delivered| {
            let order = entries.len() as u32;
            entries.push(SettledEntry { order, delivered, entry: e, earlier: false });
        };
        // Packet 1, lost, in send order: (2, 7), (0, 3)'s open, (1, 2), (0, 5) which has no pair.
        push(entry(2, 7, 0, false, 1), false);
        push(entry(0, 3, 1, true, 0), false);
        push(entry(1, 2, 0, false, 2), false);
        push(entry(0, 5, 0, false, 0), false);
        // Packet 2, delivered: (0, 3)'s open again, (0, 9)'s open of an older channel, (1, 2)
        // (an entry `apply_settled` drops, applied here to show it changes nothing). Packet 3,
        // lost: (0, 11)'s open of an older channel.
        push(entry(0, 3, 1, true, 0), true);
        push(entry(0, 9, 3, true, 0), true);
        push(entry(1, 2, 0, false, 2), true);
        push(entry(0, 11, 5, true, 0), false);
        apply_entries(&mut conn, &mut entries);
        assert!(entries.is_empty());
        let ps = |conn: &Connection, class, slot| *conn.pairs.get(class, slot).unwrap();
        // The lost open was sent again, then the second open was acknowledged: in that order
        // the open is acknowledged and not owed (the reverse would leave it `OPEN_SENT`).
        let a = ps(&conn, 0, 3);
        assert_eq!((a.flags, a.resend), (pair::OPEN_ACKED, LeafMask::leaf(0)));
        assert_eq!(ps(&conn, 0, 9).flags, pair::OPEN_SENT, "an older channel's open acknowledges nothing");
        assert_eq!(ps(&conn, 0, 11).flags, pair::OPEN_SENT, "an older channel's lost open is not this one's");
        assert_eq!(ps(&conn, 1, 2).resend, LeafMask::leaf(2));
        assert_eq!(ps(&conn, 2, 7).resend, LeafMask::leaf(1));
        assert!(conn.pairs.get(0, 5).is_none(), "a settled entry creates no pair");
        assert_eq!(conn.stats.leaves_resent, 4);
    }

    #[test]
    fn the_window_holds_256_packets_past_the_newest_reported() {
        let mut r = Reliability::new(Seq(u32::MAX - 10));
        assert_eq!(r.room(), ACK_WINDOW);
        send(&mut r, ACK_WINDOW);
        assert_eq!(r.room(), 0);
        let top = (u32::MAX - 10).wrapping_add(100);
        let fb = feedback(top, &[top]);
        assert_eq!(r.classify(&fb), Intake::Settle);
        let mut settled = 0;
        while let Some((_, delivered)) = r.settle_next(&fb) {
            settled += 1;
            assert_eq!(delivered, settled == 101, "only the newest was received");
        }
        r.settled(&fb);
        assert_eq!(settled, 101);
        assert_eq!(r.room(), 101, "settling across the wrap frees the window");
    }

    #[test]
    fn feedback_about_nothing_new_or_never_sent_is_refused() {
        let mut r = Reliability::new(Seq(1));
        assert_eq!(r.classify(&feedback(1 + ACK_WINDOW, &[])), Intake::NeverSent, "nothing sent yet");
        assert_eq!(r.classify(&feedback(0, &[])), Intake::Stale);
        send(&mut r, 10);
        for forged in [11 + ACK_WINDOW, 1000] {
            assert_eq!(r.classify(&feedback(forged, &[])), Intake::NeverSent, "{forged}");
        }
        for behind in [u32::MAX, 10 + (1 << 31)] {
            assert_eq!(r.classify(&feedback(behind, &[])), Intake::Stale, "{behind}: behind, by wrapping distance");
        }
        let fb = feedback(5, &[5, 4]);
        assert_eq!(r.classify(&fb), Intake::Settle);
        while r.settle_next(&fb).is_some() {}
        r.settled(&fb);
        assert_eq!(r.in_flight(), 5);
        for again in [5, 4, 1] {
            assert_eq!(r.classify(&feedback(again, &[again])), Intake::Stale, "{again} is settled");
        }
    }

    /// Feedback up to ACK_WINDOW past the newest packet sent (its client took a forged jump)
    /// settles the packets sent exactly as the same bits said of our newest packet would, moves
    /// acked to our newest packet and no further, and the packets it no longer reaches are lost.
    #[test]
    fn feedback_ahead_of_the_newest_settles_what_it_says_of_the_packets_sent() {
        let mut r = Reliability::new(Seq(u32::MAX - 5));
        assert_eq!(r.classify(&feedback(u32::MAX - 5, &[])), Intake::Ahead, "nothing sent yet");
        let idle = r.as_of_newest(&feedback(u32::MAX - 5, &[]));
        assert_eq!(r.settle_next(&idle).map(|s| s.0.seq), None, "settles nothing");
        send(&mut r, 10); // u32::MAX − 5 ..= 3, across the wrap
        let newest = 3u32;
        for (ahead, got) in [(1u32, vec![3, 1, u32::MAX]), (200, vec![2, 0]), (ACK_WINDOW - 2, vec![3, 2, 1])] {
            let highest = newest.wrapping_add(ahead);
            let fb = feedback(highest, &[&[highest][..], &got].concat());
            assert_eq!(r.classify(&fb), Intake::Ahead, "{ahead}");
            let rebased = r.as_of_newest(&fb);
            assert_eq!(rebased.highest, Seq(newest));
            let mut check = Reliability::new(Seq(u32::MAX - 5));
            send(&mut check, 10);
            while let Some((rec, delivered)) = check.settle_next(&rebased) {
                // Reached by the feedback's window: as it says; beyond it: lost.
                let back = highest.wrapping_sub(rec.seq.0);
                assert_eq!(delivered, back < ACK_WINDOW && got.contains(&rec.seq.0), "{ahead}: {:?}", rec.seq);
            }
            check.settled(&rebased);
            assert_eq!((check.in_flight(), check.room()), (0, ACK_WINDOW), "acked is our newest, not {highest}");
        }
        let edge = feedback(newest + ACK_WINDOW, &[newest + ACK_WINDOW]);
        assert_eq!(r.classify(&edge), Intake::Ahead, "a jump of exactly the window");
        let rebased = r.as_of_newest(&edge);
        assert_eq!(rebased.received, AckBits::default(), "reaches none of ours: all lost");
        assert_eq!(r.classify(&feedback(newest + ACK_WINDOW + 1, &[])), Intake::NeverSent);
    }

    #[test]
    fn a_packet_is_carried_while_open_or_in_flight_and_not_after() {
        // Sequence numbers across the 16-bit wrap of the pairs' record.
        let mut r = Reliability::new(Seq(0x1_fffe));
        let low = |s: u32| s as u16;
        assert!(r.carries(low(0x1_fffe)), "the open packet");
        assert!(!r.carries(low(0x1_fffd)), "nothing in flight before it");
        send(&mut r, 3);
        for s in 0x1_fffe..=0x2_0001 {
            assert!(r.carries(low(s)), "{s:#x}: sent and not settled, or open");
        }
        assert!(!r.carries(low(0x1_fffd)));
        let mut bits = AckBits::default();
        bits.set(0);
        bits.set(1);
        let fb = Feedback { highest: Seq(0x1_ffff), received: bits, reopen: Vec::new(), calls: Vec::new() };
        while r.settle_next(&fb).is_some() {}
        r.settled(&fb);
        assert!(!r.carries(low(0x1_fffe)) && !r.carries(low(0x1_ffff)), "settled");
        assert!(r.carries(low(0x2_0000)) && r.carries(low(0x2_0001)), "still in flight, and open");
        // A packet 65 536 back shares its 16 bits with the open one: read as in flight.
        assert!(r.carries(low(0x1_0001)));
    }

    #[test]
    fn keep_alives_are_due_only_with_content_in_flight() {
        let mut r = Reliability::new(Seq(1));
        r.idle_frames = 100;
        assert!(!r.keep_alive_due(6, false), "nothing in flight");
        r.sent(0, 0, 0, 0, (0, 0));
        r.idle_frames = 100;
        assert!(!r.keep_alive_due(6, false), "only a keep-alive in flight");
        r.sent(1, 0, 0, 0, (0, 0));
        r.idle_frames = 5;
        assert!(!r.keep_alive_due(6, false));
        r.idle_frames = 6;
        assert!(r.keep_alive_due(6, false));
        let mut quiet = Reliability::new(Seq(1));
        quiet.idle_frames = 5;
        assert!(!quiet.keep_alive_due(6, true));
        quiet.idle_frames = 6;
        assert!(quiet.keep_alive_due(6, true), "the actor level keeps a quiet client hearing from us");
    }

    #[test]
    fn settling_the_content_stops_keep_alives() {
        let mut r = Reliability::new(Seq(1));
        r.sent(1, 0, 0, 0, (0, 0)); // 1: content
        r.sent(0, 0, 0, 0, (0, 0)); // 2: a keep-alive
        let fb = feedback(1, &[1]);
        assert_eq!(r.classify(&fb), Intake::Settle);
        while r.settle_next(&fb).is_some() {}
        r.settled(&fb);
        assert_eq!(r.in_flight(), 1);
        r.idle_frames = 100;
        assert!(!r.keep_alive_due(6, false), "only a keep-alive is left in flight");
        // A lost content packet is settled too: its content goes back to the pairs.
        r.sent(1, 0, 0, 0, (0, 0)); // 3: content
        r.idle_frames = 100;
        assert!(r.keep_alive_due(6, false));
        let fb = feedback(3, &[]);
        while r.settle_next(&fb).is_some() {}
        r.settled(&fb);
        assert_eq!(r.in_flight(), 0);
        r.sent(0, 0, 0, 0, (0, 0));
        r.idle_frames = 100;
        assert!(!r.keep_alive_due(6, false), "the lost packet's content is no longer in flight");
    }
}
