//! The write path of fast arrays: what a connection is owed of an owner's arrays, written when
//! the owner is (see the parent module's table), and the quiet record that lets most writes skip
//! the array's lock.

use super::{
    lock, ArrayStamp, FaConn, FastSent, Left, OwnerChannel, Quiet, Side, MAX_DELTAS_PER_FRAME, OPEN_ACKED, OPEN_SENT,
    STALE,
};
use crate::fastarray::{ArrayKey, BaseId, FastArray};
use crate::ids::NetGuid;
use crate::net::actors::ActorNet;
use crate::net::connection::{pair, Connection, PendingClose};
use crate::net::send::{element_references, FrameWrite, WriteCtx};
use crate::net::ReplicationFlags;
use crate::schema::LeafKind;
use crate::wire::open::{OpenHeader, OpenKind};

impl WriteCtx<'_> {
    /// Writes what the UE-style reference's connection `ci` is owed of `owner`'s fast arrays (the
    /// owner was just replicated to it; its channel there is `channel`), looking up the owner's
    /// arrays and their versions as it goes. The reference keeps no quiet record: every array is
    /// looked at.
    pub(crate) fn write_fast_arrays_for(
        &self,
        (ci, conn): (u32, &mut Connection),
        st: &mut FrameWrite,
        owner: NetGuid,
        channel: OwnerChannel,
    ) {
        self.write_owned(Side::Reference, (ci, conn), st, None, self.fast.versions_of(owner), channel);
    }

    /// Writes what the driver's connection `ci` is owed of an owner's fast arrays (the owner was
    /// just replicated to it; its channel there is `channel`), from what the frame read once: the
    /// owner's record as the consider step copied it, and its arrays with their versions (the
    /// actor level's `fast_arrays`).
    pub(crate) fn write_listed_fast_arrays(
        &self,
        (ci, conn): (u32, &mut Connection),
        st: &mut FrameWrite,
        owner: &ActorNet,
        arrays: &[(NetGuid, Option<ArrayStamp>)],
        channel: OwnerChannel,
    ) {
        self.write_owned(Side::Driver, (ci, conn), st, Some(*owner), arrays.iter().copied(), channel);
    }

    /// Writes each of `arrays` (GUID, version and slot if the array exists) to `side`'s connection `ci`,
    /// skipping the ones its quiet record says are unchanged for it — when `owner`, the owner's
    /// record, is given (the driver's side) and alive and not torn off, and the owner's channel
    /// is open there.
    fn write_owned(
        &self,
        side: Side,
        (ci, conn): (u32, &mut Connection),
        st: &mut FrameWrite,
        owner: Option<ActorNet>,
        arrays: impl Iterator<Item = (NetGuid, Option<ArrayStamp>)>,
        channel: OwnerChannel,
    ) {
        // What a record rests on but the array's version.
        let groups = conn.groups_changed;
        let basis = match channel {
            OwnerChannel::Open(epoch) => owner.filter(|a| a.alive && !a.torn_off).map(|a| Quiet {
                epoch,
                version: None,
                owned: a.owner == Some(ci),
                autonomous: a.autonomous,
                physics: a.physics,
                groups,
            }),
            _ => None,
        };
        for (g, stamp) in arrays {
            let now = basis.and_then(|q| Some(Quiet { version: Some(stamp?.version), ..q }));
            if let (Some(now), Some(s)) = (now, stamp) {
                if let Some(was) = conn.quiet.get(s.slot, g) {
                    if *was == now || *was == (Quiet { version: None, ..now }) {
                        continue;
                    }
                }
            }
            let left = self.write_fast_array(side, ci, conn, st, g, Some(channel));
            match (now, stamp, left) {
                (Some(q), Some(s), Left::Synced) => conn.quiet.set(s.slot, g, q),
                (Some(q), Some(s), Left::Excluded) => conn.quiet.set(s.slot, g, Quiet { version: None, ..q }),
                (_, Some(s), _) => conn.quiet.forget_at(s.slot, g),
                (_, None, _) => conn.quiet.forget(g),
            }
        }
    }

    /// Writes what connection `ci` is owed of every fast array.
    pub(crate) fn write_all_fast_arrays(&self, ci: u32, conn: &mut Connection, st: &mut FrameWrite) {
        for &g in self.fast.arrays.keys() {
            // Without the actor level no answer is recorded: every array is looked at, locked.
            let _ = self.write_fast_array(Side::Driver, ci, conn, st, g, None);
        }
    }

    /// Exports the static actors that `array`'s items not acknowledged by `base` name and the
    /// client may not know yet, as an actor's references are ([`WriteCtx::write_export`]; a
    /// static exported once is not again). The delta about to be written picks its items
    /// itself, so every item it may carry is looked at — only for a kind with object references
    /// while the level has static actors. Once the window is full the scan stops: the next
    /// frame's write scans again (the reference waits on the client meanwhile).
    fn export_item_references(&self, conn: &mut Connection, st: &mut FrameWrite, array: &FastArray, base: BaseId) {
        if self.statics.paths.is_empty() || st.full {
            return;
        }
        let layout = array.layout();
        if !layout.elements.iter().any(|e| e.kind == LeafKind::Object) {
            return;
        }
        let acked = array.acked_key(base).unwrap_or(ArrayKey(0));
        for item in array.items_after(acked) {
            for g in element_references(layout, item) {
                if g.is_static() && !self.write_export(conn, st, g) {
                    return;
                }
            }
        }
    }

    /// Writes fast array `guid`'s bunches to `side`'s connection `ci`; `channel`: its owner's
    /// channel there (`None`: read from the connection's pairs). Returns how it ended: with nothing
    /// left to do (excluded by the condition, or synced), a call would do nothing until the owner's
    /// channel or ownership, this connection's feedback of the array, or (synced) the array
    /// changes.
    fn write_fast_array(
        &self,
        side: Side,
        ci: u32,
        conn: &mut Connection,
        st: &mut FrameWrite,
        guid: NetGuid,
        channel: Option<OwnerChannel>,
    ) -> Left {
        let Some(m) = self.fast.arrays.get(&guid) else { return Left::Busy };
        let mut fa = lock(m);
        let fa = &mut *fa;
        let Some(&(class, slot)) = self.guids.get(&fa.owner) else { return Left::Busy };
        let Some(actor) = self.classes[class as usize]
            .actors
            .get(slot as usize)
            .filter(|a| a.alive && !a.torn_off && a.guid == fa.owner)
        else {
            return Left::Busy;
        };
        let i = side.slot(ci as usize);
        if fa.conns.len() <= i {
            fa.conns.resize(i + 1, FaConn::default());
        }
        let channel = channel.unwrap_or_else(|| match conn.pair_ref(class, slot) {
            Some(ps) if ps.flags & pair::DORMANT != 0 => OwnerChannel::Dormant,
            Some(ps) if ps.flags & (pair::OPEN_ACKED | pair::OPEN_SENT) != 0 => OwnerChannel::Open(ps.epoch),
            _ => OwnerChannel::Missing,
        });
        let epoch = match channel {
            OwnerChannel::Dormant => return Left::Busy,
            OwnerChannel::Open(epoch) => epoch,
            // The client has not got the owner yet, or no more (closed, or asked to open it
            // again): a base from an earlier channel of the owner went with the client's copy.
            OwnerChannel::Missing => {
                if fa.conns[i].base.is_some() {
                    fa.reset(i);
                }
                return Left::Busy;
            }
        };
        if !m.condition.allows(ReplicationFlags::of(actor, ci, conn.replay, conn.net_groups)) {
            let fc = fa.conns[i];
            if fc.base.is_some() || fc.flags & STALE != 0 {
                // The client may hold the array: opened here, in flight, or left from an earlier
                // channel of the owner whose close was lost (`STALE`).
                if fc.flags & (OPEN_SENT | OPEN_ACKED | STALE) != 0 || fc.in_flight > 0 {
                    conn.closes.push(PendingClose::destroyed(guid));
                }
                fa.reset(i);
                fa.conns[i].flags &= !STALE;
            }
            // No base: until the owner's ownership changes, every call ends here.
            return Left::Excluded;
        }
        if fa.conns[i].base.is_some() && fa.conns[i].owner_epoch != epoch {
            fa.reset(i);
        }
        if fa.conns[i].base.is_some_and(|b| fa.array.is_expired(b)) {
            // The connection fell so far behind (its packets all lost, say, while it stayed
            // connected) that the array's change log dropped removals it lacked: it starts
            // again from nothing, its new open replacing the client's copy.
            fa.reset(i);
        }
        let base = match fa.conns[i].base {
            Some(base) => base,
            None => {
                let base = fa.array.connect();
                fa.conns[i] = FaConn { base: Some(base), owner_epoch: epoch, ..fa.conns[i] };
                base
            }
        };
        if fa.conns[i].flags & OPEN_SENT == 0 || fa.array.has_unsent(base) {
            self.export_item_references(conn, st, &fa.array, base);
        }
        for _ in 0..MAX_DELTAS_PER_FRAME {
            let opening = fa.conns[i].flags & OPEN_SENT == 0;
            if st.full {
                return Left::Busy;
            }
            if !opening && !fa.array.has_unsent(base) {
                return Left::Synced;
            }
            let header = opening.then(|| {
                OpenHeader { class: fa.kind, kind: OpenKind::FastArray { owner: fa.owner }, autonomous: false }.encode()
            });
            // The whole delta in one bunch where it fits a packet — in a new one if not in this
            // one (UE writes it inside the owner's update): the client gets it at once, not in
            // slices. A larger one is cut to the room left, and goes on in the next delta.
            let need = if fa.array.has_unsent(base) {
                // The length field is sized for the whole packet (`body_room`): a little slack.
                let whole = fa.array.next_delta_bits(base) + 16;
                if conn.writer.bunch_fits_empty(guid, header.as_ref(), whole) {
                    whole
                } else {
                    fa.array.min_delta_bits()
                }
            } else {
                0
            };
            if !self.ensure_in(conn, st, |c| c.writer.bunch_fits(&c.out, guid, header.as_ref(), need)) {
                st.full = true;
                return Left::Busy;
            }
            conn.writer.begin_bunch(guid, header.as_ref(), false);
            let room = conn.writer.body_room(&conn.out);
            // The base exists and the room was checked: an error here is a bug; send nothing.
            let token = fa.array.write_delta_within(base, conn.writer.body(), room).unwrap_or(None);
            if token.is_none() && !opening {
                conn.writer.abandon_bunch();
                return Left::Busy;
            }
            conn.writer.end_bunch(&mut conn.out, 0);
            let fc = &mut fa.conns[i];
            conn.rel.fast.push_back(FastSent { guid, slot: m.slot, generation: fc.generation, token, open: opening });
            st.wrote_fast();
            fc.flags |= OPEN_SENT;
            fc.in_flight = fc.in_flight.saturating_add(1);
            if token.is_none() {
                return Left::Busy;
            }
        }
        Left::Busy
    }
}
