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
//! module decides what goes where and what each packet carried: packets, closes, exports and
//! keep-alives here, one actor's bunches in `bunch.rs`.

use super::actors::ClassNet;
use super::connection::{Connection, PendingClose};
use super::opens::OpenBits;
use super::plan::SendItem;
use super::shared::{SharedActor, SharedArena};
use crate::ids::LeafMask;
use crate::ids::{GuidMap, NetGuid};
use crate::store::ClassStore;
use crate::wire::open::{OpenHeader, OpenKind};

mod bunch;

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
    /// This tick's remote procedure calls ([`super::rpc`]).
    pub calls: &'a super::rpc::FrameCalls,
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
    rpcs: u32,
    acks: u32,
}

impl FrameWrite {
    /// Counts a fast array bunch just written into the open packet.
    pub fn wrote_fast(&mut self) {
        self.open.fast += 1;
        self.bunches += 1;
    }

    /// Counts a call bunch just written into the open packet (a reliable one is recorded in
    /// flight).
    pub fn wrote_rpc(&mut self, reliable: bool) {
        self.open.rpcs += u32::from(reliable);
        self.bunches += 1;
    }

    /// Counts `n` unreliable call bunches just written into the open packet.
    pub fn wrote_calls(&mut self, n: usize) {
        self.bunches += n;
    }

    /// Counts an acknowledgement of the client's calls just written into the open packet.
    pub fn wrote_calls_ack(&mut self) {
        self.open.acks += 1;
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
        self.write_rpcs(conn, &mut st, self.calls, (false, true), &super::rpc::PairChannels(self.guids));
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
        let mut closes = std::mem::take(&mut conn.closes.queued);
        // A dormancy close queued again (its packet was lost) whose actor has woken since: its
        // channel is open again and sending, so the close goes no more — written now, ahead of
        // the actor's bunches, it would leave the client holding a stale dormant copy. (The
        // rule that queued it again, applied once more.)
        closes.retain(|c| c.reason != crate::wire::open::CloseReason::Dormant || dormant_here(conn, c.guid));
        closes.sort_by_key(|c| c.guid);
        let written = closes.iter().take_while(|&&close| self.write_close(conn, st, close)).count();
        conn.closes.queued = closes;
        conn.closes.queued.drain(..written);
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
        for leaf in c.layout.groups.leaves_in(refs) {
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
    /// `item` sends the open or resends owed ones ([`super::connection::UnsentInitial`]).
    fn defer(&self, conn: &mut Connection, item: &SendItem, leaves: LeafMask) {
        conn.held_back |= leaves;
        if item.initial || item.initial_values {
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

    /// What this frame's writing so far counts against `budget` (a connection's, or the
    /// reference's beside it): the bits written and each finished packet's overhead
    /// ([`super::budget::Budget::pending_bits`]).
    pub fn bits_charged(&self, conn: &Connection, budget: &super::budget::Budget) -> usize {
        budget.pending_bits(conn.out.len_bits(), conn.out_ends.len())
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
        conn.rel.sent(open.entries, open.closes, open.exports, open.fast, (open.rpcs, open.acks));
        *open = Open::default();
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
