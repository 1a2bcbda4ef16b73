//! An actor split across packets: a packet whose last bunch goes on in the next packet (its
//! `continues` bit, [`crate::wire::bunch`]) leaves that bunch here, held, and the next packet's
//! first bunch — its continuation — joins it; the update applies whole when its last part
//! arrives, so its notifies fire once, with the value before the update and after all of it
//! (UE's partial bunches). A part whose continuation does not come next (the packet between
//! was lost, or the next one starts with another actor) applies alone: the server resends what
//! the lost part carried, as for any lost packet. A refused packet (malformed: a forger's, say)
//! is not received, and changes nothing held. What one update holds is bounded.

use super::ClientWorld;
use crate::ids::{NetGuid, Seq};
use crate::wire::bunch::Bunch;
use crate::wire::open::OpenKind;
use std::collections::HashMap;

/// A bunch whose packet said it goes on in the next packet (an actor split across packets),
/// held until its continuation arrives so the update applies whole.
#[derive(Debug)]
pub(super) struct Partial {
    /// The packet that carried its last part.
    seq: Seq,
    class: u32,
    /// Its parts so far, records in the order they came.
    bunch: Bunch,
    /// Bytes of the packets its parts came in (bounded by [`MAX_PARTIAL_BYTES`]).
    bytes: usize,
}

/// Bytes of packets whose parts of one split update a client holds at most (UE's bound on a
/// partial bunch is the same 64 KiB): a longer chain — a hostile server's, or an honest array
/// larger than this — is applied in pieces of this size.
pub const MAX_PARTIAL_BYTES: usize = 64 * 1024;

/// What reading the packet after a held part needs to know of it.
#[derive(Clone, Copy)]
pub(super) struct Held {
    pub guid: NetGuid,
    pub class: u32,
    /// It opens its actor.
    pub opens: bool,
    /// It opens a sub-object.
    pub sub_object: bool,
}

impl ClientWorld {
    /// Before packet `seq` is read: a held part goes on in it only if it is the packet right
    /// after the part's own; else the continuation was lost (or `seq` replaces the part's own
    /// packet) and the part applies alone, now. Returns the part still held.
    pub(super) fn held_before(&mut self, seq: Seq) -> Option<Held> {
        if self.partial.as_ref().is_some_and(|p| seq != p.seq.next()) {
            self.release_partial();
        }
        self.partial.as_ref().map(|p| Held {
            guid: p.bunch.guid,
            class: p.class,
            opens: p.bunch.open.is_some(),
            sub_object: matches!(p.bunch.open.as_ref().map(|o| &o.kind), Some(OpenKind::SubObject { .. })),
        })
    }

    /// Joins the part held from the previous packet to `bunches` (this packet's, validated,
    /// numbered `seq`, nothing of it applied yet): merged into the first bunch if that continues
    /// it, else applied alone, now. Then, if this packet's last bunch goes on (`continues`) and is an actor's
    /// update, takes it out and holds it (`opened`: the classes of this packet's actors).
    pub(super) fn join_partial(
        &mut self,
        bunches: &mut Vec<Bunch>,
        seq: Seq,
        continues: bool,
        opened: &HashMap<NetGuid, u32>,
        packet_bytes: usize,
    ) {
        let mut held_bytes = 0;
        if let Some(p) = self.partial.take() {
            match bunches.first_mut() {
                Some(first) if first.guid == p.bunch.guid && first.close.is_none() => {
                    // The continuation: the parts' records in order (an array split between
                    // elements has a record per part), the open of the first part.
                    let mut records = p.bunch.records;
                    records.append(&mut first.records);
                    first.records = records;
                    first.open = p.bunch.open.or(first.open.take());
                    held_bytes = p.bytes;
                    if !(continues && bunches.len() == 1) {
                        self.stats.split_joined += 1;
                    }
                }
                _ => {
                    self.stats.split_broken += 1;
                    self.apply_one(p.bunch, Some(p.class), p.seq);
                }
            }
        }
        if !continues {
            return;
        }
        let Some(last) = bunches.last() else { return };
        let joined = if bunches.len() == 1 { held_bytes } else { 0 };
        let bytes = joined + packet_bytes;
        let Some(&class) = opened.get(&last.guid) else { return };
        if last.close.is_some() || last.delta.is_some() || bytes > MAX_PARTIAL_BYTES {
            if joined > 0 {
                self.stats.split_broken += 1;
            }
            return;
        }
        let bunch = bunches.pop().expect("a last bunch");
        self.partial = Some(Partial { seq, class, bunch, bytes });
    }

    /// Applies the held part of a split update alone (its continuation will not come).
    pub(super) fn release_partial(&mut self) {
        if let Some(p) = self.partial.take() {
            self.stats.split_broken += 1;
            self.apply_one(p.bunch, Some(p.class), p.seq);
        }
    }
}
