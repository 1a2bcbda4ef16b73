//! Shared serialization: each changed actor's changed fixed leaves encoded once per frame, for
//! every connection (UE's `ShareSerializedData`).
//!
//! ```text
//! keys     (class, slot, changed fixed leaves a simulated proxy receives) for every changed
//!          actor, in the order given
//! per key  one plain bunch body (record count, records) into a chunk's bits, and one span
//!          per record inside it (rayon over chunks of CHUNK actors)
//! heads    per key: its leaves, its body's span, where its record spans start
//! ```
//!
//! A connection that gets exactly a key's leaves for an open channel writes the bunch's lead (its
//! GUID is a step from the bunch before it in that connection's packet, so it cannot be shared)
//! and copies the body; one
//! that gets a subset or a superset (conditions, resends, first sends) copies record spans into
//! its own bunch and encodes the rest itself. Dynamic arrays are never shared (they are written
//! per connection, split across packets when large), nor leaves that reach only an owner, an
//! autonomous proxy, a first send or a replay (`ClassNet::shared_leaves`): the one or two
//! connections that get them encode them, instead of the arena encoding them every frame.

use super::actors::{ChangedActor, ClassNet};
use crate::ids::LeafMask;
use crate::schema::LeafGroups;
use crate::store::ClassStore;
use crate::wire::bunch::{handle_bits, write_leaf_record, write_record_count};
use crate::wire::BitWriter;
use rayon::prelude::*;

/// Actors per encoding chunk (one rayon task each).
const CHUNK: usize = 256;

/// A run of bits in one of the arena's chunks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub chunk: u32,
    pub start: u32,
    pub bits: u32,
}

/// The frame's shared encodings.
#[derive(Default)]
pub(crate) struct SharedArena {
    /// Actors and the fixed leaves encoded for them, sorted by (class, slot).
    pub keys: Vec<ChangedActor>,
    /// Per key, what a send reads first: its leaves, its plain body's span and where its record
    /// spans start — one line for the common send of exactly the key's leaves (with the leaves,
    /// the index into `spans` and the span read from three arrays, each a miss of its own, a
    /// connection's send waited on three dependent loads before the bytes).
    pub heads: Vec<Head>,
    /// Per key, its record spans in leaf order.
    pub spans: Vec<Span>,
    pub chunks: Vec<BitWriter>,
}

/// A key's entry in [`SharedArena::heads`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Head {
    pub leaves: LeafMask,
    /// The plain body (record count and records).
    pub body: Span,
    /// Index of its first record's span.
    pub records: u32,
}

/// What one connection finds in the arena for one actor.
#[derive(Clone, Copy)]
pub(crate) struct SharedActor<'a> {
    arena: &'a SharedArena,
    pub leaves: LeafMask,
    body: Span,
    records: u32,
}

impl<'a> SharedActor<'a> {
    /// The plain bunch's body (record count and records): (chunk bytes, start bit, bits).
    pub fn bunch(&self) -> (&'a [u8], usize, usize) {
        self.arena.bits_of(self.body)
    }

    /// The record of `leaf` (whose group, of the class's `groups`, must be in `leaves`).
    pub fn record(&self, leaf: usize, groups: &LeafGroups) -> (&'a [u8], usize, usize) {
        self.arena.bits_of(self.arena.spans[(self.records + groups.rank(self.leaves, leaf)) as usize])
    }
}

/// Writes the record of fixed leaf `leaf` of the actor in `slot` as `store` holds it (`buf`:
/// scratch for its bytes), with handles of `handle_width` bits: what the arena and the actor
/// level's open encodings ([`super::opens`]) copy into every connection's bunches.
pub(crate) fn encode_leaf(
    w: &mut BitWriter,
    store: &ClassStore,
    slot: u32,
    layout: &crate::schema::ClassLayout,
    leaf: usize,
    handle_width: u32,
    buf: &mut [u8; 256],
) {
    let l = &layout.leaves[leaf];
    let n = l.kind.byte_size();
    store.read_leaf(slot, leaf, &mut buf[..n]);
    write_leaf_record(w, handle_width, l.handle, l.kind, &buf[..n]);
}

impl SharedArena {
    /// Encodes the fixed leaves of every changed actor, once.
    pub fn encode(
        &mut self,
        changed: &[ChangedActor],
        classes: &[ClassNet],
        stores: &[&ClassStore],
        parallel: bool,
    ) -> usize {
        // One key per entry, in order (the actor level finds an actor's by its index in the
        // list); an entry with no shared leaf keeps an empty key.
        self.keys.clear();
        self.keys.extend(
            changed.iter().map(|c| ChangedActor { leaves: c.leaves & classes[c.class as usize].shared_leaves, ..*c }),
        );
        let encode = |keys: &[ChangedActor]| {
            let mut w = BitWriter::new();
            let mut spans = Vec::with_capacity(keys.len() * 4);
            let mut buf = [0u8; 256];
            for k in keys {
                if k.leaves.is_empty() {
                    spans.push((0, 0));
                    continue;
                }
                let c = &classes[k.class as usize];
                let bits = handle_bits(&c.layout);
                let body_start = w.len_bits();
                write_record_count(&mut w, bits, c.layout.groups.count(k.leaves));
                let whole = spans.len();
                spans.push((body_start as u32, 0));
                for leaf in c.layout.groups.leaves_in(k.leaves) {
                    let start = w.len_bits();
                    encode_leaf(&mut w, stores[k.class as usize], k.slot, &c.layout, leaf, bits, &mut buf);
                    spans.push((start as u32, (w.len_bits() - start) as u32));
                }
                spans[whole].1 = (w.len_bits() - body_start) as u32;
            }
            (w, spans)
        };
        let chunks: Vec<(BitWriter, Vec<(u32, u32)>)> = if parallel && self.keys.len() > CHUNK {
            self.keys.par_chunks(CHUNK).map(encode).collect()
        } else {
            self.keys.chunks(CHUNK).map(encode).collect()
        };
        self.spans.clear();
        self.heads.clear();
        self.chunks.clear();
        for (chunk, ((w, spans), keys)) in chunks.into_iter().zip(self.keys.chunks(CHUNK)).enumerate() {
            let mut it = spans.into_iter();
            let mut span = || {
                let (start, bits) = it.next().unwrap_or_default();
                Span { chunk: chunk as u32, start, bits }
            };
            for k in keys {
                let body = span();
                self.heads.push(Head { leaves: k.leaves, body, records: self.spans.len() as u32 });
                for _ in 0..classes[k.class as usize].layout.groups.count(k.leaves) {
                    self.spans.push(span());
                }
            }
            self.chunks.push(w);
        }
        self.spans.len()
    }

    /// The bits of a span: (chunk bytes, start bit, bits).
    fn bits_of(&self, s: Span) -> (&[u8], usize, usize) {
        (self.chunks[s.chunk as usize].bytes(), s.start as usize, s.bits as usize)
    }

    /// Empties the arena (a frame without sharing).
    pub fn clear(&mut self) {
        self.keys.clear();
        self.heads.clear();
        self.spans.clear();
        self.chunks.clear();
    }

    /// The shared encodings of key `i` (the `i`-th entry of the list given to
    /// [`SharedArena::encode`]).
    pub fn at(&self, i: u32) -> Option<SharedActor<'_>> {
        self.heads.get(i as usize).map(|h| self.actor(h))
    }

    /// Asks for key `i`'s head ahead of [`Self::at`].
    pub fn prefetch(&self, i: u32) {
        if let Some(h) = self.heads.get(i as usize) {
            crate::compare::prefetch_addr(h as *const Head as usize);
        }
    }

    fn actor(&self, h: &Head) -> SharedActor<'_> {
        SharedActor { arena: self, leaves: h.leaves, body: h.body, records: h.records }
    }

    /// The shared encodings of actor (`class`, `slot`), given a cursor into the sorted keys that
    /// only moves forward (callers visit actors in order).
    pub fn find(&self, cursor: &mut usize, class: u32, slot: u32) -> Option<SharedActor<'_>> {
        while self.keys.get(*cursor).is_some_and(|k| (k.class, k.slot) < (class, slot)) {
            *cursor += 1;
        }
        self.keys.get(*cursor).filter(|k| (k.class, k.slot) == (class, slot))?;
        Some(self.actor(&self.heads[*cursor]))
    }
}
