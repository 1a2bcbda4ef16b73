//! One actor's bunches: a plain bunch copied from the frame's shared encoding, or one built
//! here (the open while one is owed, fixed leaves, dynamic arrays split between elements), each
//! part recorded for the acknowledgement; a record that does not fit ends the packet and the
//! actor goes on in the next one.

use super::{Open, Room, WriteCtx};
use crate::ids::{LeafMask, NetGuid};
use crate::net::connection::{pair, Connection};
use crate::net::opens::OpenBits;
use crate::net::plan::SendItem;
use crate::net::reliability::{entry, SentEntry};
use crate::net::shared::{SharedActor, SharedElements};
use crate::wire::bunch::{end_array, handle_bits, write_array_element, write_array_head, write_leaf_record};
use crate::wire::open::EncodedOpen;
use crate::wire::packet::packed_bits;
use crate::wire::BitWriter;
use std::borrow::Cow;

/// Body bits a new bunch should have room for, or it starts in the next packet.
const MIN_BODY_BITS: usize = 64;

/// The entry recording a bunch of `item` that carries `leaves` (and the open, if owed);
/// `continued`: its lowest group began in an earlier bunch; `unfinished`: its highest goes on
/// past it.
fn sent_entry(item: &SendItem, leaves: LeafMask, (continued, unfinished): (bool, bool)) -> SentEntry {
    let flag = |on: bool, bit: u8| if on { bit } else { 0 };
    SentEntry {
        class: item.class,
        slot: item.slot,
        guid_low: item.guid.0 as u32,
        epoch: item.epoch,
        flags: flag(item.open, entry::OPEN)
            | flag(item.initial || item.initial_values, entry::INITIAL)
            | flag(item.role, entry::ROLE)
            | flag(continued, entry::CONTINUED)
            | flag(unfinished, entry::UNFINISHED),
        leaves,
    }
}

/// Records entry `e` for the open packet.
fn record(conn: &mut Connection, open: &mut Open, e: SentEntry) {
    conn.rel.entries.push_back(e);
    open.entries += 1;
}

/// Copies the shared plain bunch `(src, start, bits)` of actor `guid` into the open packet (which
/// has room for it) and records it with entry `e` (a plain bunch's: no open, no role).
fn copy_plain(
    conn: &mut Connection,
    open: &mut Open,
    guid: NetGuid,
    (src, start, bits): (&[u8], usize, usize),
    e: SentEntry,
) {
    conn.writer.write_plain(&mut conn.out, guid, src, start, bits);
    record(conn, open, e);
}

/// Body bits a plain bunch of a class whose handles take `handle_width` bits must have room for
/// to start: its record count and some records.
fn plain_start_bits(handle_width: u32) -> usize {
    handle_width as usize + MIN_BODY_BITS
}

/// The room a copy of a shared plain bunch of `bits` needs in a packet: the whole of it, and
/// what a bunch needs to start there (what building it would ask).
fn copy_bits(bits: usize, handle_width: u32) -> usize {
    bits.max(plain_start_bits(handle_width))
}

impl WriteCtx<'_> {
    /// Writes one actor; returns the bunches written, or `None` when the window filled (what
    /// was not written went back to the pair).
    pub(super) fn write_item(
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
        let mut part = BunchPart {
            item,
            class_open,
            handle_width,
            leaves: LeafMask::EMPTY,
            records: 0,
            in_group: false,
            continued: false,
            bunches: 0,
        };
        let whole = shared.filter(|sh| !item.open && item.leaves == sh.leaves);
        if let Some((src, start, bits)) = whole.map(|sh| sh.bunch()) {
            let need = copy_bits(bits, handle_width);
            let here = conn.writer.packet_open() && conn.writer.plain_fits(&conn.out, item.guid, need);
            let splits_here = !here && conn.writer.packet_open() && part.fits_start(conn);
            if here || (!splits_here && conn.writer.plain_fits_empty(item.guid, need)) {
                if !here && !self.ensure(conn, open, |c| c.writer.plain_fits(&c.out, item.guid, need)) {
                    self.defer(conn, item, item.leaves);
                    return None;
                }
                // (Not an open: nothing to record of a role.)
                copy_plain(conn, open, item.guid, (src, start, bits), sent_entry(item, item.leaves, (false, false)));
                return Some(1);
            }
        }
        if !self.ensure(conn, open, |c| part.fits_start(c)) {
            self.defer(conn, item, item.leaves);
            return None;
        }
        // An open owing every fixed leaf, encoded this frame, that fits whole: written straight
        // into the packet, its header with this connection's role and its records in one copy
        // each (the same bits leaf by leaf; the arena's records of this frame's changes are
        // encoded from the same values), not staged as a bunch being built first.
        if let Some((header, (records, bits))) = opened.and_then(|o| Some((o.header(), o.whole(item.leaves)?))) {
            if conn.writer.bunch_fits(&conn.out, item.guid, Some(header), bits) {
                conn.writer.write_open_bunch(&mut conn.out, item.guid, (header, item.autonomous), records, bits);
                self.entry(conn, open, item, item.leaves, (false, false));
                return Some(1);
            }
        }
        part.begin(conn);
        // Group by group (a leaf each, up to 64 leaves: `schema::groups`); a group split between
        // packets is owed whole again if the rest does not fit.
        let groups = &c.layout.groups;
        let mut done = LeafMask::EMPTY;
        let mut buf = [0u8; 256];
        for bit in item.leaves.iter() {
            let group = LeafMask::leaf(bit);
            for leaf in groups.leaves(bit) {
                let l = &c.layout.leaves[leaf];
                let ok = match l.array {
                    Some(a) => {
                        let since = (item.whole & group).is_empty().then_some(item.since);
                        self.write_array(conn, open, &mut part, (leaf, a, since), shared)
                    }
                    None => match shared
                        .filter(|sh| !(sh.leaves & group).is_empty())
                        .map(|sh| sh.record(leaf, groups))
                        .or_else(|| opened.map(|o| o.record(leaf)))
                    {
                        // Shared: bit-copy the record encoded once for every connection (this
                        // frame's change, or the open's).
                        Some((src, start, bits)) => {
                            if !conn.writer.body_fits(&conn.out, bits) && !self.split(conn, open, &mut part) {
                                false
                            } else {
                                conn.writer.body().write_from(src, start, bits);
                                part.records += 1;
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
                            let room = conn.writer.body_fits(&conn.out, 0) || {
                                conn.writer.body().truncate(before);
                                let room = self.split(conn, open, &mut part);
                                if room {
                                    write_leaf_record(conn.writer.body(), handle_width, l.handle, l.kind, &buf[..n]);
                                }
                                room
                            };
                            part.records += u32::from(room);
                            room
                        }
                    },
                };
                if !ok {
                    self.defer(conn, item, item.leaves & !done);
                    return None;
                }
                part.leaves |= group;
                part.in_group = true;
            }
            part.in_group = false;
            done |= group;
        }
        self.end_part(conn, open, &mut part);
        Some(part.bunches)
    }

    /// Records that the open packet carries `leaves` (and the open, if owed) of `item`; `parts`:
    /// (continued, unfinished), see [`sent_entry`]. An open's bunch tells the client its role.
    fn entry(&self, conn: &mut Connection, open: &mut Open, item: &SendItem, leaves: LeafMask, parts: (bool, bool)) {
        record(conn, open, sent_entry(item, leaves, parts));
        // What the open told the client of its role, where that is not "simulated, nothing
        // owed" (an actor's open: a sub-object's carries no role).
        if item.open && (item.autonomous || item.role) && !self.outers.contains_key(&item.guid) {
            let key = crate::net::pairs::pair_key(item.class, item.slot);
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

    /// The clean pair's lane (`net::channels`): copies `sh`, the frame's shared bunch of the
    /// actor `e` records — a plain bunch, no open, no initial values — into the open packet when
    /// the whole of it fits there, which is where [`Self::write`] would put it, and records it.
    /// False, with nothing written, when it would go anywhere else (the next packet, built and
    /// split, or nowhere with the window full): `write` decides those.
    pub(crate) fn copy_shared_here(
        &self,
        conn: &mut Connection,
        st: &mut super::FrameWrite,
        guid: NetGuid,
        sh: SharedActor<'_>,
        e: SentEntry,
    ) -> bool {
        let (src, start, bits) = sh.bunch();
        let need = copy_bits(bits, handle_bits(&self.classes[e.class as usize].layout));
        if st.full || !conn.writer.packet_open() || !conn.writer.plain_fits(&conn.out, guid, need) {
            return false;
        }
        copy_plain(conn, &mut st.open, guid, (src, start, bits), e);
        st.bunches += 1;
        true
    }

    /// Ends the bunch being built (dropping it if it carries nothing) and records it — as
    /// unfinished while a group is being written (a split inside it, or a full window after).
    fn end_part(&self, conn: &mut Connection, open: &mut Open, part: &mut BunchPart<'_>) {
        if conn.writer.body_bits() == 0 && part.class_open.is_none() {
            conn.writer.abandon_bunch();
        } else {
            conn.writer.end_bunch(&mut conn.out, part.records);
            self.entry(conn, open, part.item, part.leaves, (part.continued, part.in_group));
            part.bunches += 1;
        }
        part.leaves = LeafMask::EMPTY;
        part.records = 0;
        part.continued = false;
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
        // Split inside a group (or an array): the new bunch continues it.
        part.continued = part.in_group;
        true
    }

    /// Writes a dynamic array: its count and, `since` a frame, the element leaves that changed
    /// after it (by nested handle; the client keeps the rest), else every element — split
    /// between elements across packets. Elements the frame's shared encoding holds for this
    /// send ([`SharedActor::array`]) are copied from it, the same bits.
    fn write_array(
        &self,
        conn: &mut Connection,
        open: &mut Open,
        part: &mut BunchPart<'_>,
        (leaf, a, since): (usize, usize, Option<crate::ids::Frame>),
        shared: Option<SharedActor<'_>>,
    ) -> Room {
        let item = part.item;
        let c = &self.classes[item.class as usize];
        let layout = &c.layout;
        let array = &layout.arrays[a];
        let handle = layout.leaves[leaf].handle;
        let bytes = self.stores[item.class as usize].array_bytes(item.slot, a);
        let count = bytes.len() / array.stride;
        let per = array.elements.len();
        let arena = since.zip(shared).and_then(|(s, sh)| sh.array(leaf, s, count));
        // Which element leaves go: all, or those changed after `since`. The history holds a
        // frame per element leaf as long as the array was when last compared; should it not
        // match the array now, everything goes.
        let frames = since
            .filter(|_| arena.is_none())
            .map(|_| c.history.element_frames(item.slot, leaf))
            .filter(|f| f.len() == count * per);
        let wanted = |e: usize, i: usize| match (since, frames) {
            (Some(s), Some(f)) => f[e * per + i] > s.0,
            _ => true,
        };
        let head = handle_bits(layout) as usize + packed_bits(count as u64) + 8;
        let mut el = BitWriter::new();
        // The next element at or after `e` with a leaf to send (`count` when none): encoded into
        // `el`, or found at the arena's `k`-th.
        let next = |el: &mut BitWriter, k: &mut usize, mut e: usize| match arena {
            Some(sh) => {
                while sh.elements.get(*k).is_some_and(|&(x, _)| (x as usize) < e) {
                    *k += 1;
                }
                sh.elements.get(*k).map_or(count, |&(x, _)| x as usize)
            }
            None => {
                el.clear();
                while e < count && !(0..per).any(|i| wanted(e, i)) {
                    e += 1;
                }
                if e < count {
                    let element = &bytes[e * array.stride..(e + 1) * array.stride];
                    write_array_element(el, array, e, element, |i| wanted(e, i));
                }
                e
            }
        };
        let mut k = 0;
        let mut e = next(&mut el, &mut k, 0);
        let len = |el: &BitWriter, k: usize, e: usize| if e < count { element_bits(arena, el, k).2 } else { 0 };
        loop {
            // The head and at least the next element, or a new packet.
            if !conn.writer.body_fits(&conn.out, head + len(&el, k, e)) {
                let fresh = conn.writer.body_bits() == 0 && conn.writer.bunches() <= 1;
                if fresh || !self.split(conn, open, part) {
                    // Registration guarantees one element fits an empty packet; a full window
                    // leaves the array to be sent again.
                    return false;
                }
            }
            write_array_head(conn.writer.body(), handle_bits(layout), handle, count);
            part.leaves |= layout.groups.bit(leaf);
            part.records += 1;
            part.in_group = true;
            while e < count && conn.writer.body_fits(&conn.out, len(&el, k, e) + 8) {
                let (src, start, n) = element_bits(arena, &el, k);
                conn.writer.body().write_from(src, start, n);
                e = next(&mut el, &mut k, e + 1);
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

/// The bits of the array element [`WriteCtx::write_array`] found: the arena's `k`-th, or the
/// one encoded into `el` — (source, start bit, bits).
fn element_bits<'a>(arena: Option<SharedElements<'a>>, el: &'a BitWriter, k: usize) -> (&'a [u8], usize, usize) {
    match arena {
        Some(sh) => sh.bits(k),
        None => (el.bytes(), 0, el.len_bits()),
    }
}

/// The actor being written and what its current bunch carries.
struct BunchPart<'a> {
    item: &'a SendItem,
    /// The open, while one is owed: the bunch is sized. Without, it is plain.
    class_open: Option<Cow<'a, EncodedOpen>>,
    /// The class's handle width (a plain bunch's record count has as many bits).
    handle_width: u32,
    /// The groups the bunch carries (a group split between packets is in both bunches).
    leaves: LeafMask,
    /// Records the bunch carries (a plain bunch says how many).
    records: u32,
    /// A record of the group being written (a leaf group, or an array's head) is written: a
    /// split from here continues the group in the next bunch.
    in_group: bool,
    /// The bunch's lowest group began in an earlier bunch ([`entry::CONTINUED`]).
    continued: bool,
    bunches: usize,
}

impl BunchPart<'_> {
    /// Whether a bunch of this actor may start in `conn`'s open packet with room for some body.
    fn fits_start(&self, conn: &Connection) -> bool {
        match &self.class_open {
            Some(header) => conn.writer.bunch_fits(&conn.out, self.item.guid, Some(header), MIN_BODY_BITS),
            None => conn.writer.plain_fits(&conn.out, self.item.guid, plain_start_bits(self.handle_width)),
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
