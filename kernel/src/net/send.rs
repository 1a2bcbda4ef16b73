//! Packet writing for one connection: closes, then one bunch per planned actor, into packets of
//! at most `mtu` bytes, each recorded in flight.
//!
//! ```text
//! closes first (by GUID), then per SendItem (in actor order):
//!   exactly the shared leaves of an open channel → a plain bunch: its lead (GUID step) written
//!            here, the arena's body (record count and records) copied
//!   otherwise build a bunch — sized with the open while one is owed, plain after: fixed leaves
//!            copied from the arena's record spans or encoded here, dynamic arrays encoded here
//!            and split between elements across packets; an open's header and records copied
//!            from the frame's encoding of that open when the actor level has one
//!            ([`super::opens`]), in one copy when it owes every fixed leaf and fits
//!   a record that does not fit ends the bunch and the packet; the actor continues in a new
//!   bunch of a new packet (each part decodes alone and carries the open while it is owed; the
//!   ended packet says it goes on, so the client applies the parts together)
//! no packet may start while the sequence window is full: what is left goes back to the pairs
//! a quiet connection with content in flight sends a keep-alive (or repeats its newest packet)
//! ```
//!
//! The grammar and the MTU budget are the wire's ([`crate::wire::packet::PacketWriter`]); this
//! module decides what goes where and what each packet carried.

use super::actors::ClassNet;
use super::connection::{pair, Connection, PendingClose};
use super::opens::OpenBits;
use super::plan::SendItem;
use super::reliability::SentEntry;
use super::shared::{SharedActor, SharedArena};
use crate::ids::LeafMask;
use crate::ids::{GuidMap, NetGuid};
use crate::store::ClassStore;
use crate::wire::bunch::{end_array, handle_bits, write_array_element, write_array_head, write_leaf_record};
use crate::wire::open::{EncodedOpen, OpenHeader, OpenKind};
use crate::wire::packet::packed_bits;
use crate::wire::BitWriter;
use std::borrow::Cow;

/// Body bits a new bunch should have room for, or it starts in the next packet.
const MIN_BODY_BITS: usize = 64;

/// What packet writing reads.
pub(crate) struct WriteCtx<'a> {
    pub classes: &'a [ClassNet],
    pub stores: &'a [&'a ClassStore],
    pub arena: Option<&'a SharedArena>,
    pub keep_alive_frames: u32,
    /// Static actors' and objects' paths (their opens and exports, and the closes of destroyed
    /// actors).
    pub statics: &'a super::lifecycle::Statics,
    /// Sub-objects' owners (their opens).
    pub outers: &'a GuidMap<NetGuid>,
    /// Live actors by GUID.
    pub guids: &'a GuidMap<(u32, u32)>,
    /// Fast arrays ([`super::fastarrays`]).
    pub fast: &'a super::fastarrays::FastArrays,
    /// The caller marks a written open on its pair itself (the actor level holds the row it
    /// writes for): a bunch's entry leaves the pair table alone — for an open it had searched
    /// the connection's rows for the pair.
    pub marks_opens: bool,
}

/// What one connection's writing produced.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Written {
    pub bunches: usize,
    pub packets: usize,
    pub bytes: usize,
}

/// One connection's frame being written.
#[derive(Default)]
pub(crate) struct FrameWrite {
    open: Open,
    bunches: usize,
    /// The window filled: nothing more may be written this frame.
    pub full: bool,
}

/// The packet being filled: what it carries so far.
#[derive(Default)]
struct Open {
    entries: u32,
    closes: u32,
    exports: u32,
    fast: u32,
}

impl FrameWrite {
    /// Counts a fast array bunch just written into the open packet.
    pub fn wrote_fast(&mut self) {
        self.open.fast += 1;
        self.bunches += 1;
    }
}

/// Whether a packet could be started (false: the sequence window is full).
type Room = bool;

impl WriteCtx<'_> {
    /// Writes one planned send with its shared encoding, if the arena has one: sends come in
    /// actor order, so `cursor` (0 at the start of a connection's frame) walks the arena forward.
    pub fn write_planned(&self, conn: &mut Connection, st: &mut FrameWrite, cursor: &mut usize, item: &SendItem) {
        let shared = self.arena.and_then(|a| a.find(cursor, item.class, item.slot));
        self.write(conn, st, item, shared, None);
    }

    /// Ends connection `ci`'s frame of planned sends: its fast arrays, then [`Self::end`].
    pub fn end_connection(&self, ci: u32, conn: &mut Connection, mut st: FrameWrite) -> Written {
        if !self.fast.is_empty() {
            self.write_all_fast_arrays(ci, conn, &mut st);
        }
        self.end(conn, st, false)
    }

    /// Starts a connection's frame: no packets yet.
    pub fn begin(&self, conn: &mut Connection) -> FrameWrite {
        conn.out.clear();
        conn.out_ends.clear();
        FrameWrite::default()
    }

    /// Writes the queued closes, by GUID (each a small step from the one before), and the exports
    /// lost before (those that fit the window; the rest stay queued).
    pub fn write_closes(&self, conn: &mut Connection, st: &mut FrameWrite) {
        self.write_closes_if(conn, st, |conn, guid| conn.dormant_here(self.guids, guid));
    }

    /// [`Self::write_closes`], asking `dormant_here` whether a connection still holds an actor
    /// dormant (the reference keeps its channels apart from the connection's pairs).
    pub(crate) fn write_closes_if(
        &self,
        conn: &mut Connection,
        st: &mut FrameWrite,
        dormant_here: impl Fn(&Connection, NetGuid) -> bool,
    ) {
        let mut closes = std::mem::take(&mut conn.closes);
        // A dormancy close queued again (its packet was lost) whose actor has woken since: its
        // channel is open again and sending, so the close goes no more — written now, ahead of
        // the actor's bunches, it would leave the client holding a stale dormant copy. (The
        // rule that queued it again, applied once more.)
        closes.retain(|c| c.reason != crate::wire::open::CloseReason::Dormant || dormant_here(conn, c.guid));
        closes.sort_by_key(|c| c.guid);
        let written = closes.iter().take_while(|&&close| self.write_close(conn, st, close)).count();
        conn.closes = closes;
        conn.closes.drain(..written);
        let exports = std::mem::take(&mut conn.exports);
        let written = exports.iter().take_while(|&&guid| self.write_export(conn, st, guid)).count();
        conn.exports = exports;
        conn.exports.drain(..written);
    }

    /// Writes the export of static object `guid` (its path) unless the client has it or it is
    /// in flight; false when the window is full.
    pub(crate) fn write_export(&self, conn: &mut Connection, st: &mut FrameWrite, guid: NetGuid) -> bool {
        // Only live static actors and static objects (a destroyed actor's path stays for late
        // joiners' closes).
        let Some(path) = self.statics.export_path(guid, || self.live(guid)) else { return true };
        if conn.exported.contains(&guid) || conn.exporting.contains(&guid) {
            return true;
        }
        if st.full || !self.ensure(conn, &mut st.open, |c| c.writer.export_fits(&c.out, guid, path)) {
            st.full = true;
            return false;
        }
        conn.writer.write_export(&mut conn.out, guid, path);
        conn.rel.exports.push_back(guid);
        conn.exporting.insert(guid);
        st.open.exports += 1;
        st.bunches += 1;
        true
    }

    /// Exports the static objects `item`'s object references name that the client may not know
    /// yet, before the item's bunch (an export that does not fit waits for the next frame; the
    /// reference waits on the client meanwhile).
    fn export_references(&self, conn: &mut Connection, st: &mut FrameWrite, item: &SendItem) {
        let c = &self.classes[item.class as usize];
        let refs = item.leaves & c.object_leaves;
        if refs.is_empty() || self.statics.paths.is_empty() {
            return;
        }
        let store = self.stores[item.class as usize];
        let mut export = |g: NetGuid| {
            if g.is_static() && !self.write_export(conn, st, g) {
                conn.exports.push(g);
            }
        };
        for leaf in refs.iter() {
            let l = &c.layout.leaves[leaf];
            match l.array {
                None => {
                    let mut b = [0u8; 8];
                    store.read_leaf(item.slot, leaf, &mut b);
                    export(NetGuid(u64::from_le_bytes(b)));
                }
                Some(a) => {
                    let array = &c.layout.arrays[a];
                    for element in store.array_bytes(item.slot, a).chunks_exact(array.stride) {
                        element_references(array, element).for_each(&mut export);
                    }
                }
            }
        }
    }

    /// Writes one close; false when the window is full.
    pub fn write_close(&self, conn: &mut Connection, st: &mut FrameWrite, close: PendingClose) -> bool {
        let PendingClose { guid, reason } = close;
        let path = guid.is_static().then(|| self.statics.paths.get(&guid)).flatten().map(|p| &**p);
        if st.full || !self.ensure(conn, &mut st.open, |c| c.writer.close_fits(&c.out, guid, reason, path)) {
            st.full = true;
            return false;
        }
        conn.writer.write_close(&mut conn.out, guid, reason, path);
        conn.rel.closes.push_back(close);
        st.open.closes += 1;
        st.bunches += 1;
        true
    }

    /// Writes one planned send (`opened`: its open and records encoded this frame, when it
    /// carries an open); with the window full, hands it back to the pair.
    pub fn write(
        &self,
        conn: &mut Connection,
        st: &mut FrameWrite,
        item: &SendItem,
        shared: Option<SharedActor<'_>>,
        opened: Option<&OpenBits>,
    ) {
        if st.full {
            self.defer(conn, item, item.leaves);
            return;
        }
        self.export_references(conn, st, item);
        match self.write_item(conn, &mut st.open, item, shared, opened) {
            Some(n) => st.bunches += n,
            None => st.full = true,
        }
    }

    /// `leaves` of `item` could not be written (a full window): owed, as initial values when
    /// `item` sends the open ([`super::connection::UnsentInitial`]).
    fn defer(&self, conn: &mut Connection, item: &SendItem, leaves: LeafMask) {
        conn.held_back |= leaves;
        if item.initial {
            let initial_only = self.classes[item.class as usize].active.initial_only();
            let key = super::pairs::pair_key(item.class, item.slot);
            conn.unsent_initial.lost_open(key, item.epoch, leaves, initial_only);
        }
        conn.owe(item.class, item.slot, leaves);
    }

    /// Bits written this frame so far (finished packets and the open one's bunches).
    pub fn bits_written(&self, conn: &Connection) -> usize {
        conn.out.len_bits()
    }

    /// Ends the frame: finishes the open packet, sends a keep-alive if one is due (`always`: even
    /// with nothing in flight, so a client with nothing relevant still hears from the server and
    /// answers), keeps the newest packet and counts.
    pub fn end(&self, conn: &mut Connection, mut st: FrameWrite, always: bool) -> Written {
        let open = &mut st.open;
        if conn.writer.packet_open() {
            if conn.writer.bunches() > 0 {
                self.finish(conn, open);
            } else {
                conn.writer.abandon_packet(&mut conn.out);
            }
        }
        if st.full {
            conn.stats.window_full_frames += 1;
        }
        if conn.out_ends.is_empty() {
            conn.rel.idle_frames += 1;
            if conn.rel.keep_alive_due(self.keep_alive_frames, always) {
                self.keep_alive(conn, open);
            }
        }
        if let Some(&end) = conn.out_ends.last() {
            let start = conn.out_ends.len().checked_sub(2).map_or(0, |i| conn.out_ends[i]);
            conn.rel.remember_newest(&conn.out.bytes()[start..end]);
        }
        let bytes = conn.out_ends.last().copied().unwrap_or(0);
        conn.stats.bytes_sent += bytes as u64;
        conn.stats.packets_sent += conn.out_ends.len() as u64;
        Written { bunches: st.bunches, packets: conn.out_ends.len(), bytes }
    }

    /// Sends an empty packet so the client's feedback reveals what was lost before it, or —
    /// with the window full — the newest packet again.
    fn keep_alive(&self, conn: &mut Connection, open: &mut Open) {
        if conn.rel.room() > 0 {
            conn.writer.begin_packet(&mut conn.out, conn.rel.next_seq());
            self.finish(conn, open);
            conn.stats.keep_alives += 1;
        } else {
            let bytes = conn.rel.repeat();
            conn.out.write_from(bytes, 0, bytes.len() * 8);
            conn.out_ends.push(conn.out.len_bits() / 8);
            conn.stats.repeats += 1;
        }
    }

    /// [`Self::ensure`] for the frame being written.
    pub fn ensure_in(&self, conn: &mut Connection, st: &mut FrameWrite, fits: impl Fn(&Connection) -> bool) -> Room {
        self.ensure(conn, &mut st.open, fits)
    }

    /// Makes sure a packet is open and `fits` it, finishing the current one and starting
    /// another if needed; false when no packet may start.
    fn ensure(&self, conn: &mut Connection, open: &mut Open, fits: impl Fn(&Connection) -> bool) -> Room {
        if conn.writer.packet_open() {
            if fits(conn) {
                return true;
            }
            if conn.writer.bunches() == 0 {
                // Nothing this module asks for is larger than an empty packet (registration
                // bounds records; copied plain bunches by `plain_fits_empty`).
                debug_assert!(false, "asked to fit more than an empty packet holds");
                return true;
            }
            self.finish(conn, open);
        }
        if conn.rel.room() == 0 {
            return false;
        }
        conn.writer.begin_packet(&mut conn.out, conn.rel.next_seq());
        true
    }

    /// Ends the open packet and records it in flight.
    fn finish(&self, conn: &mut Connection, open: &mut Open) {
        self.finish_continued(conn, open, false);
    }

    /// [`Self::finish`], saying whether the packet's last bunch goes on in the next packet.
    fn finish_continued(&self, conn: &mut Connection, open: &mut Open, continues: bool) {
        let end = conn.writer.finish_packet_continued(&mut conn.out, continues);
        conn.out_ends.push(end);
        conn.rel.sent(open.entries, open.closes, open.exports, open.fast);
        *open = Open::default();
    }

    /// Writes one actor; returns the bunches written, or `None` when the window filled (what
    /// was not written went back to the pair).
    fn write_item(
        &self,
        conn: &mut Connection,
        open: &mut Open,
        item: &SendItem,
        shared: Option<SharedActor<'_>>,
        opened: Option<&OpenBits>,
    ) -> Option<usize> {
        // The common case: exactly the shared leaves of an open channel, one copy of the bunch
        // (unless the bunch is larger than a packet: then it is built and split record by record).
        // The copy lands exactly where building it would: in this packet if a bunch may start
        // here and the whole of it fits, else at the start of the next — and where building would
        // split it (a bunch may start here but the rest does not fit), it is built, so shared and
        // per-connection encoding write the same packets.
        let c = &self.classes[item.class as usize];
        let handle_width = handle_bits(&c.layout);
        // An open is owed: a sized bunch (any client can step over it); else a plain one.
        let opened = opened.filter(|_| item.open);
        let class_open = item.open.then(|| match opened {
            Some(o) => Cow::Borrowed(o.header()),
            None => Cow::Owned(self.open_header(item).encode()),
        });
        let mut part = BunchPart { item, class_open, handle_width, leaves: LeafMask::EMPTY, bunches: 0 };
        let whole = shared.filter(|sh| !item.open && item.leaves == sh.leaves);
        if let Some((src, start, bits)) = whole.map(|sh| sh.bunch()) {
            // Room for the whole of it, and for a bunch to start (what building asks).
            let need = bits.max(part.plain_start_bits());
            let here = conn.writer.packet_open() && conn.writer.plain_fits(&conn.out, item.guid, need);
            let splits_here = !here && conn.writer.packet_open() && part.fits_start(conn);
            if here || (!splits_here && conn.writer.plain_fits_empty(item.guid, need)) {
                if !here && !self.ensure(conn, open, |c| c.writer.plain_fits(&c.out, item.guid, need)) {
                    self.defer(conn, item, item.leaves);
                    return None;
                }
                conn.writer.write_plain(&mut conn.out, item.guid, src, start, bits);
                self.entry(conn, open, item, item.leaves);
                return Some(1);
            }
        }
        if !self.ensure(conn, open, |c| part.fits_start(c)) {
            self.defer(conn, item, item.leaves);
            return None;
        }
        part.begin(conn);
        // An open owing every fixed leaf, encoded this frame, that fits: its records in one
        // copy (the same bits leaf by leaf; the arena's records of this frame's changes are
        // encoded from the same values).
        if let Some((records, bits)) = opened.and_then(|o| o.whole(item.leaves)) {
            if conn.writer.body_fits(&conn.out, bits) {
                conn.writer.body().write_from(records, 0, bits);
                part.leaves = item.leaves;
                self.end_part(conn, open, &mut part);
                return Some(part.bunches);
            }
        }
        let mut done = LeafMask::EMPTY;
        let mut buf = [0u8; 256];
        for leaf in item.leaves.iter() {
            let l = &c.layout.leaves[leaf];
            let ok = match l.array {
                Some(a) => {
                    let since = (!item.whole.contains(leaf)).then_some(item.since);
                    self.write_array(conn, open, &mut part, leaf, a, since)
                }
                None => match shared
                    .filter(|sh| sh.leaves.contains(leaf))
                    .map(|sh| sh.record(leaf))
                    .or_else(|| opened.map(|o| o.record(leaf)))
                {
                    // Shared: bit-copy the record encoded once for every connection (this
                    // frame's change, or the open's).
                    Some((src, start, bits)) => {
                        if !conn.writer.body_fits(&conn.out, bits) && !self.split(conn, open, &mut part) {
                            false
                        } else {
                            conn.writer.body().write_from(src, start, bits);
                            true
                        }
                    }
                    // This connection's own: encode straight into the bunch, again in the next
                    // packet if it did not fit.
                    None => {
                        let n = l.kind.byte_size();
                        self.stores[item.class as usize].read_leaf(item.slot, leaf, &mut buf[..n]);
                        let before = conn.writer.body_bits();
                        write_leaf_record(conn.writer.body(), handle_width, l.handle, l.kind, &buf[..n]);
                        if conn.writer.body_fits(&conn.out, 0) {
                            true
                        } else {
                            conn.writer.body().truncate(before);
                            let room = self.split(conn, open, &mut part);
                            if room {
                                write_leaf_record(conn.writer.body(), handle_width, l.handle, l.kind, &buf[..n]);
                            }
                            room
                        }
                    }
                },
            };
            if !ok {
                self.defer(conn, item, item.leaves & !done);
                return None;
            }
            part.leaves |= LeafMask::leaf(leaf);
            done |= LeafMask::leaf(leaf);
        }
        self.end_part(conn, open, &mut part);
        Some(part.bunches)
    }

    /// Whether `guid` names a live actor.
    fn live(&self, guid: NetGuid) -> bool {
        self.guids.contains_key(&guid)
    }

    /// How `item`'s channel opens: a static actor by its path, a dynamic one from its spawn info.
    pub(super) fn open_header(&self, item: &SendItem) -> OpenHeader {
        let kind = match (self.statics.paths.get(&item.guid), self.outers.get(&item.guid)) {
            (Some(path), _) => OpenKind::Static(path.clone()),
            (None, Some(&owner)) => OpenKind::SubObject { owner },
            (None, None) => {
                let c = &self.classes[item.class as usize];
                OpenKind::Spawn(super::level::spawn_info(c, self.stores[item.class as usize], item.slot))
            }
        };
        OpenHeader { class: item.class, kind, autonomous: item.autonomous }
    }

    /// Records that the open packet carries `leaves` (and the open, if owed) of `item`.
    fn entry(&self, conn: &mut Connection, open: &mut Open, item: &SendItem, leaves: LeafMask) {
        let e = SentEntry {
            class: item.class,
            slot: item.slot,
            guid_low: item.guid.0 as u32,
            epoch: item.epoch,
            open: item.open,
            initial: item.initial,
            role: item.role,
            leaves,
        };
        conn.rel.entries.push_back(e);
        open.entries += 1;
        // What the open told the client of its role, where that is not "simulated, nothing
        // owed" (an actor's open: a sub-object's carries no role).
        if item.open && (item.autonomous || item.role) && !self.outers.contains_key(&item.guid) {
            let key = super::pairs::pair_key(item.class, item.slot);
            conn.roles.written(key, item.guid, item.epoch, item.autonomous);
        }
        // Only an open touches the pair here: the actor level records its rows' newest packet
        // itself (it holds the row), and per-slot pairs do not (nothing reads it without the
        // actor level's dormancy) — a pair state per bunch was a cache miss each, an eighth of a
        // shared frame.
        if item.open && !self.marks_opens {
            conn.pair(item.class, item.slot).flags |= pair::OPEN_SENT | pair::EVER_OPENED;
        }
    }

    /// Ends the bunch being built (dropping it if it carries nothing) and records it.
    fn end_part(&self, conn: &mut Connection, open: &mut Open, part: &mut BunchPart<'_>) {
        if conn.writer.body_bits() == 0 && part.class_open.is_none() {
            conn.writer.abandon_bunch();
        } else {
            conn.writer.end_bunch(&mut conn.out, part.leaves.count());
            self.entry(conn, open, part.item, part.leaves);
            part.bunches += 1;
        }
        part.leaves = LeafMask::EMPTY;
    }

    /// Ends the bunch and the packet, and continues the actor in a new bunch of a new packet;
    /// false when no packet may start. The packet says its last bunch goes on when it does: it
    /// ended with this actor's bunch and the window has room for the next packet, whose first
    /// bunch is the continuation (the client holds the parts and applies them together).
    fn split(&self, conn: &mut Connection, open: &mut Open, part: &mut BunchPart<'_>) -> Room {
        let before = part.bunches;
        self.end_part(conn, open, part);
        if conn.writer.bunches() > 0 {
            // `room` counts the open packet: one more must fit after it.
            let continues = part.bunches > before && conn.rel.room() > 1;
            self.finish_continued(conn, open, continues);
        }
        if !self.ensure(conn, open, |_| true) {
            return false;
        }
        part.begin(conn);
        true
    }

    /// Writes a dynamic array: its count and, `since` a frame, the element leaves that changed
    /// after it (by nested handle; the client keeps the rest), else every element — split
    /// between elements across packets.
    fn write_array(
        &self,
        conn: &mut Connection,
        open: &mut Open,
        part: &mut BunchPart<'_>,
        leaf: usize,
        a: usize,
        since: Option<crate::ids::Frame>,
    ) -> Room {
        let item = part.item;
        let c = &self.classes[item.class as usize];
        let layout = &c.layout;
        let array = &layout.arrays[a];
        let handle = layout.leaves[leaf].handle;
        let bytes = self.stores[item.class as usize].array_bytes(item.slot, a);
        let count = bytes.len() / array.stride;
        let per = array.elements.len();
        // Which element leaves go: all, or those changed after `since`. The history holds a
        // frame per element leaf as long as the array was when last compared; should it not
        // match the array now, everything goes.
        let frames = since.map(|_| c.history.element_frames(item.slot, leaf)).filter(|f| f.len() == count * per);
        let wanted = |e: usize, i: usize| match (since, frames) {
            (Some(s), Some(f)) => f[e * per + i] > s.0,
            _ => true,
        };
        let head = handle_bits(layout) as usize + packed_bits(count as u64) + 8;
        let mut el = BitWriter::new();
        // The next element at or after `e` with a leaf to send (`count` when none), encoded.
        let next = |el: &mut BitWriter, mut e: usize| {
            el.clear();
            while e < count && !(0..per).any(|i| wanted(e, i)) {
                e += 1;
            }
            if e < count {
                let element = &bytes[e * array.stride..(e + 1) * array.stride];
                write_array_element(el, array, e, element, |i| wanted(e, i));
            }
            e
        };
        let mut e = next(&mut el, 0);
        loop {
            // The head and at least the next element, or a new packet.
            if !conn.writer.body_fits(&conn.out, head + el.len_bits()) {
                let fresh = conn.writer.body_bits() == 0 && conn.writer.bunches() <= 1;
                if fresh || !self.split(conn, open, part) {
                    // Registration guarantees one element fits an empty packet; a full window
                    // leaves the array to be sent again.
                    return false;
                }
            }
            write_array_head(conn.writer.body(), handle_bits(layout), handle, count);
            part.leaves |= LeafMask::leaf(leaf);
            while e < count && conn.writer.body_fits(&conn.out, el.len_bits() + 8) {
                conn.writer.body().write_from(el.bytes(), 0, el.len_bits());
                e = next(&mut el, e + 1);
            }
            end_array(conn.writer.body());
            if e >= count {
                return true;
            }
            // The rest goes in a new record for the same array, in a continuation bunch.
            if !self.split(conn, open, part) {
                return false;
            }
        }
    }
}

/// The object references in one element of `array` (a dynamic array's element, a fast array's
/// item), in element-leaf order.
pub(crate) fn element_references<'a>(
    array: &'a crate::schema::ArrayLayout,
    element: &'a [u8],
) -> impl Iterator<Item = NetGuid> + 'a {
    let objects = array.elements.iter().filter(|e| e.kind == crate::schema::LeafKind::Object);
    objects.map(|e| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&element[e.offset..e.offset + 8]);
        NetGuid(u64::from_le_bytes(b))
    })
}

/// The actor being written and what its current bunch carries.
struct BunchPart<'a> {
    item: &'a SendItem,
    /// The open, while one is owed: the bunch is sized. Without, it is plain.
    class_open: Option<Cow<'a, EncodedOpen>>,
    /// The class's handle width (a plain bunch's record count has as many bits).
    handle_width: u32,
    leaves: LeafMask,
    bunches: usize,
}

impl BunchPart<'_> {
    /// Body bits a plain bunch of this actor must have room for to start: its record count and
    /// some records.
    fn plain_start_bits(&self) -> usize {
        self.handle_width as usize + MIN_BODY_BITS
    }

    /// Whether a bunch of this actor may start in `conn`'s open packet with room for some body.
    fn fits_start(&self, conn: &Connection) -> bool {
        match &self.class_open {
            Some(header) => conn.writer.bunch_fits(&conn.out, self.item.guid, Some(header), MIN_BODY_BITS),
            None => conn.writer.plain_fits(&conn.out, self.item.guid, self.plain_start_bits()),
        }
    }

    /// Starts this actor's next bunch in `conn`'s open packet.
    fn begin(&self, conn: &mut Connection) {
        match &self.class_open {
            Some(header) => conn.writer.begin_bunch(self.item.guid, Some(header), self.item.autonomous),
            None => conn.writer.begin_plain(self.item.guid, self.handle_width),
        }
    }
}
