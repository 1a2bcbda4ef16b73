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
//!
//! This file holds the window and what each packet in flight carried; what a settled packet
//! does to its connection ([`apply_settled`], [`apply_entries`]) is in `settle.rs`.

use super::connection::PendingClose;
use super::fastarrays::FastSent;
use crate::ids::{LeafMask, NetGuid, Seq};
use crate::wire::feedback::{Feedback, ACK_WINDOW};
use std::collections::VecDeque;

mod settle;

pub(crate) use settle::{apply_entries, apply_settled, retiring_slot, Lookup, SettledEntry};

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
    /// The number of its first packet (`NetDriver::add_connection_at`): the reference's copy of
    /// the connection, made at its first tick, starts there too.
    pub first: Seq,
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
            first,
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

#[cfg(test)]
mod tests;
