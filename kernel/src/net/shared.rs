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
//! its own bunch and encodes the rest itself. Leaves that reach only an owner, an autonomous
//! proxy, a first send or a replay are not encoded here (`ClassNet::shared_leaves`): the one or
//! two connections that get them encode them, instead of the arena encoding them every frame.
//!
//! A changed dynamic array (one a simulated proxy receives, under no condition:
//! `ClassNet::shared_arrays`) has the elements that changed this frame encoded once, each its
//! own span ([`SharedArray`]): a connection whose last send of the actor came after every
//! earlier change of the array — so "changed after my last send" is "changed this frame" —
//! copies them element by element (the array is still split between elements across packets
//! where it does not fit); any other (a resend, an open, a send that missed a change) encodes
//! its own.

use super::actors::{ChangedActor, ClassNet};
use crate::ids::{Frame, LeafMask};
use crate::schema::LeafGroups;
use crate::store::ClassStore;
use crate::wire::bunch::{handle_bits, write_array_element, write_leaf_record, write_record_count};
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
    /// Per key, where its arrays start in `arrays` (one more entry than keys: the end).
    pub array_heads: Vec<u32>,
    /// The changed arrays' shared encodings, by key, in leaf order.
    pub arrays: Vec<SharedArray>,
    /// Their elements: (element index, its encoding), by array, in element order.
    pub elements: Vec<(u32, Span)>,
}

/// A changed array's elements that changed this frame, encoded once ([`SharedArena::arrays`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SharedArray {
    /// Its leaf.
    pub leaf: u32,
    /// Its element count.
    pub count: u32,
    /// The frame that changed them.
    pub frame: u32,
    /// The newest earlier frame that changed an element leaf of it (0: none): a connection whose
    /// last send came at or after it and before `frame` wants exactly these elements.
    pub before: u32,
    /// Its elements' range in [`SharedArena::elements`].
    pub first: u32,
    pub len: u32,
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
    key: u32,
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

    /// The shared elements of array leaf `leaf` for a send whose last send of the actor was
    /// `since`, if they are exactly what it wants: it came at or after every earlier change of
    /// the array and before this frame's, and the array still has `count` elements.
    pub fn array(&self, leaf: usize, since: crate::ids::Frame, count: usize) -> Option<SharedElements<'a>> {
        let a = self.arena;
        let range =
            *a.array_heads.get(self.key as usize)? as usize..*a.array_heads.get(self.key as usize + 1)? as usize;
        let sa = a.arrays[range].iter().find(|sa| sa.leaf as usize == leaf)?;
        (sa.before <= since.0 && since.0 < sa.frame && sa.count as usize == count).then(|| SharedElements {
            arena: a,
            elements: &a.elements[sa.first as usize..(sa.first + sa.len) as usize],
        })
    }
}

/// The elements of one shared array, in element order.
#[derive(Clone, Copy)]
pub(crate) struct SharedElements<'a> {
    arena: &'a SharedArena,
    pub elements: &'a [(u32, Span)],
}

impl<'a> SharedElements<'a> {
    /// The bits of the `k`-th: (chunk bytes, start bit, bits).
    pub fn bits(&self, k: usize) -> (&'a [u8], usize, usize) {
        self.arena.bits_of(self.elements[k].1)
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

/// One encoding chunk's output: its bits, its fixed records' (start, bits), its arrays (by key
/// index in the chunk; `first` counts in the chunk's elements) and their elements' (element,
/// start, bits).
#[derive(Default)]
struct Chunk {
    w: BitWriter,
    spans: Vec<(u32, u32)>,
    arrays: Vec<(u32, SharedArray)>,
    elements: Vec<(u32, u32, u32)>,
}

/// Encodes into `chunk` the elements `frame` changed of the arrays among `leaves` of the actor
/// in `slot` (key `key` of the chunk): those whose history has a frame per element leaf, as the
/// array is now (else a send encodes the whole array itself).
fn encode_arrays(
    chunk: &mut Chunk,
    (key, c, store, slot): (u32, &ClassNet, &ClassStore, u32),
    leaves: LeafMask,
    frame: u32,
) {
    for leaf in c.layout.groups.leaves_in(leaves) {
        let Some(a) = c.layout.leaves[leaf].array else { continue };
        let array = &c.layout.arrays[a];
        let bytes = store.array_bytes(slot, a);
        let (count, per) = (bytes.len() / array.stride, array.elements.len());
        let frames = c.history.element_frames(slot, leaf);
        if frames.len() != count * per {
            continue;
        }
        let before = frames.iter().copied().filter(|&f| f < frame).max().unwrap_or(0);
        let first = chunk.elements.len();
        for (e, stamps) in frames.chunks_exact(per.max(1)).enumerate() {
            if !stamps.contains(&frame) {
                continue;
            }
            let start = chunk.w.len_bits();
            let element = &bytes[e * array.stride..(e + 1) * array.stride];
            write_array_element(&mut chunk.w, array, e, element, |i| stamps[i] == frame);
            chunk.elements.push((e as u32, start as u32, (chunk.w.len_bits() - start) as u32));
        }
        let len = (chunk.elements.len() - first) as u32;
        chunk.arrays.push((
            key,
            SharedArray { leaf: leaf as u32, count: count as u32, frame, before, first: first as u32, len },
        ));
    }
}

impl SharedArena {
    /// Encodes the fixed leaves of every changed actor, once, and the elements of its changed
    /// arrays that `frame` changed.
    pub fn encode(
        &mut self,
        changed: &[ChangedActor],
        classes: &[ClassNet],
        stores: &[&ClassStore],
        (frame, parallel): (Frame, bool),
    ) -> usize {
        // One key per entry, in order (the actor level finds an actor's by its index in the
        // list); an entry with no shared leaf keeps an empty key.
        self.keys.clear();
        self.keys.extend(
            changed.iter().map(|c| ChangedActor { leaves: c.leaves & classes[c.class as usize].shared_leaves, ..*c }),
        );
        let encode = |(keys, entries): (&[ChangedActor], &[ChangedActor])| {
            let mut chunk = Chunk::default();
            let mut buf = [0u8; 256];
            for (j, (k, entry)) in keys.iter().zip(entries).enumerate() {
                let c = &classes[k.class as usize];
                let arrays = entry.leaves & c.shared_arrays;
                if !arrays.is_empty() {
                    let store = stores[k.class as usize];
                    encode_arrays(&mut chunk, (j as u32, c, store, k.slot), arrays, frame.0);
                }
                let w = &mut chunk.w;
                if k.leaves.is_empty() {
                    chunk.spans.push((0, 0));
                    continue;
                }
                let bits = handle_bits(&c.layout);
                let body_start = w.len_bits();
                write_record_count(w, bits, c.layout.groups.count(k.leaves));
                let whole = chunk.spans.len();
                chunk.spans.push((body_start as u32, 0));
                for leaf in c.layout.groups.leaves_in(k.leaves) {
                    let start = w.len_bits();
                    encode_leaf(w, stores[k.class as usize], k.slot, &c.layout, leaf, bits, &mut buf);
                    chunk.spans.push((start as u32, (w.len_bits() - start) as u32));
                }
                chunk.spans[whole].1 = (w.len_bits() - body_start) as u32;
            }
            chunk
        };
        let chunks: Vec<Chunk> = if parallel && self.keys.len() > CHUNK {
            self.keys.par_chunks(CHUNK).zip(changed.par_chunks(CHUNK)).map(encode).collect()
        } else {
            self.keys.chunks(CHUNK).zip(changed.chunks(CHUNK)).map(encode).collect()
        };
        self.spans.clear();
        self.heads.clear();
        self.chunks.clear();
        self.array_heads.clear();
        self.arrays.clear();
        self.elements.clear();
        for (chunk, (c, keys)) in chunks.into_iter().zip(self.keys.chunks(CHUNK)).enumerate() {
            let at = |(start, bits): (u32, u32)| Span { chunk: chunk as u32, start, bits };
            let mut it = c.spans.into_iter();
            let mut arrays = c.arrays.into_iter().peekable();
            for (j, k) in keys.iter().enumerate() {
                let body = at(it.next().unwrap_or_default());
                self.heads.push(Head { leaves: k.leaves, body, records: self.spans.len() as u32 });
                for _ in 0..classes[k.class as usize].layout.groups.count(k.leaves) {
                    self.spans.push(at(it.next().unwrap_or_default()));
                }
                self.array_heads.push(self.arrays.len() as u32);
                while let Some((_, sa)) = arrays.next_if(|(key, _)| *key == j as u32) {
                    let first = self.elements.len() as u32;
                    let elements = &c.elements[sa.first as usize..(sa.first + sa.len) as usize];
                    self.elements.extend(elements.iter().map(|&(e, start, bits)| (e, at((start, bits)))));
                    self.arrays.push(SharedArray { first, ..sa });
                }
            }
            self.chunks.push(c.w);
        }
        self.array_heads.push(self.arrays.len() as u32);
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
        self.array_heads.clear();
        self.arrays.clear();
        self.elements.clear();
    }

    /// The shared encodings of key `i` (the `i`-th entry of the list given to
    /// [`SharedArena::encode`]).
    pub fn at(&self, i: u32) -> Option<SharedActor<'_>> {
        (self.heads.len() > i as usize).then(|| self.actor(i as usize))
    }

    /// Asks for key `i`'s head ahead of [`Self::at`].
    pub fn prefetch(&self, i: u32) {
        if let Some(h) = self.heads.get(i as usize) {
            crate::compare::prefetch_addr(h as *const Head as usize);
        }
    }

    fn actor(&self, key: usize) -> SharedActor<'_> {
        let h = &self.heads[key];
        SharedActor { arena: self, leaves: h.leaves, body: h.body, records: h.records, key: key as u32 }
    }

    /// The shared encodings of actor (`class`, `slot`), given a cursor into the sorted keys that
    /// only moves forward (callers visit actors in order).
    pub fn find(&self, cursor: &mut usize, class: u32, slot: u32) -> Option<SharedActor<'_>> {
        while self.keys.get(*cursor).is_some_and(|k| (k.class, k.slot) < (class, slot)) {
            *cursor += 1;
        }
        self.keys.get(*cursor).filter(|k| (k.class, k.slot) == (class, slot))?;
        Some(self.actor(*cursor))
    }
}
