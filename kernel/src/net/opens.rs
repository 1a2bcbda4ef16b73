//! Opens encoded once a frame for every connection that opens the actor (the actor level).
//!
//! ```text
//! per open that owes every fixed leaf of its actor, due actor d:
//!   first connection to open d this frame    encodes its own, straight into its packet
//!   second                                   likewise
//!   third                                    encodes d's header and every fixed leaf's record
//!                                            (OpenBits, a buffer from the pool) for the rest
//!   third and later                          copy them: the records in one copy if they fit
//! an open owing fewer leaves (a condition leaves some out) copies what a third made, if any
//! after the frame: the slots of the actors first opened this frame emptied into the pool
//! ```
//!
//! Why: a frame opens the same actor on many connections — a projectile on every player near
//! it, a loot crate on a hot drop's crowd — and each open read and encoded the spawn info and
//! every property again (battle_royale: 142 584 opens of 11 309 actors in its first 100 frames,
//! 4.4 opens an actor later; 93 % of opens owe every fixed leaf). In a large world nearly every
//! actor opens on one or two connections a frame (mmo: of 37 000 such opens in 30 frames,
//! 32 000 first and 4 700 second ones, nearly no third), where an encoding made by the first
//! opener for others cost more than the open itself, so the first two encode their own. An
//! open, timed from the slot's check through its write: battle_royale 447–721 → 337–520 ns
//! (three alternating runs), mmo level within the noise. Resetting every slot each frame cost
//! mmo 2 ms a frame: only the used ones are emptied.

use super::plan::SendItem;
use super::send::WriteCtx;
use super::shared::encode_leaf;
use crate::ids::LeafMask;
use crate::wire::bunch::handle_bits;
use crate::wire::open::EncodedOpen;
use crate::wire::BitWriter;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

/// An actor's open and its fixed leaves' records, as a connection's own encoding writes them.
#[derive(Default)]
pub(crate) struct OpenBits {
    header: EncodedOpen,
    records: BitWriter,
    /// Per leaf: (first bit in `records`, bits); `(0, 0)` for a dynamic array's (encoded per
    /// connection).
    spans: Vec<(u32, u32)>,
    /// The fixed leaves: an open that owes exactly these copies `records` whole.
    fixed: LeafMask,
}

impl OpenBits {
    /// The open's header.
    pub fn header(&self) -> &EncodedOpen {
        &self.header
    }

    /// Every fixed leaf's record in leaf order, when `leaves` are exactly the fixed leaves:
    /// (bytes, bits).
    pub fn whole(&self, leaves: LeafMask) -> Option<(&[u8], usize)> {
        (leaves == self.fixed).then(|| (self.records.bytes(), self.records.len_bits()))
    }

    /// Leaf `leaf`'s record: (bytes, first bit, bits).
    pub fn record(&self, leaf: usize) -> (&[u8], usize, usize) {
        let (start, bits) = self.spans[leaf];
        (self.records.bytes(), start as usize, bits as usize)
    }
}

impl WriteCtx<'_> {
    /// Encodes `item`'s open and the record of every fixed leaf of its actor as they are now
    /// (the same bits a connection's own encoding of the open writes) into `out`, its buffers
    /// reused.
    pub fn encode_open(&self, item: &SendItem, out: &mut OpenBits) {
        let c = &self.classes[item.class as usize];
        let handle_width = handle_bits(&c.layout);
        let store = self.stores[item.class as usize];
        let OpenBits { header, records, spans, fixed } = out;
        self.open_header(item).encode_into(header);
        records.clear();
        spans.clear();
        *fixed = c.fixed_leaves;
        let mut buf = [0u8; 256];
        for (leaf, l) in c.layout.leaves.iter().enumerate() {
            if l.array.is_some() {
                spans.push((0, 0));
                continue;
            }
            let start = records.len_bits();
            encode_leaf(records, store, item.slot, &c.layout, leaf, handle_width, &mut buf);
            spans.push((start as u32, (records.len_bits() - start) as u32));
        }
    }
}

/// A frame's open encodings, by due index. Every slot and bit is empty between frames.
#[derive(Default)]
pub(crate) struct OpenCache {
    slots: Vec<OnceLock<Box<OpenBits>>>,
    /// A bit per due actor: a connection opened it this frame, and another.
    once: Vec<AtomicU64>,
    twice: Vec<AtomicU64>,
    /// The buffers of emptied slots, for later frames' encodings.
    #[allow(clippy::vec_box)] // the boxes move between the pool and the slots as they are
    pool: Mutex<Vec<Box<OpenBits>>>,
}

impl OpenCache {
    /// Readies a slot for each of `due` actors.
    pub fn begin_frame(&mut self, due: usize) {
        if self.slots.len() < due {
            self.slots.resize_with(due, Default::default);
            self.once.resize_with(due.div_ceil(64), Default::default);
            self.twice.resize_with(due.div_ceil(64), Default::default);
        }
        debug_assert!(
            self.slots.iter().all(|s| s.get().is_none())
                && self.once.iter_mut().chain(self.twice.iter_mut()).all(|w| *w.get_mut() == 0),
            "an open left from the last frame"
        );
    }

    /// The encoding a connection opening due actor `d` copies, if any (see the module
    /// documentation). `whole`: the open owes every fixed leaf; the first such open of `d` in
    /// the frame pushes `d` onto `firsts`; the third calls `encode`.
    pub fn for_open(
        &self,
        d: u32,
        whole: bool,
        firsts: &mut Vec<u32>,
        encode: impl FnOnce(&mut OpenBits),
    ) -> Option<&OpenBits> {
        let (word, bit) = (d as usize / 64, 1u64 << (d % 64));
        if !whole {
            // The bit first: it stays in the cache, the slots of a large world do not.
            return (self.twice[word].load(Relaxed) & bit != 0)
                .then(|| self.slots[d as usize].get())
                .flatten()
                .map(|b| &**b);
        }
        // Each bit read before it is set: a bit set already (every open after an actor's first,
        // or second) is found by a read, which leaves the word's line shared between the cores
        // where a read-modify-write would take it from the other one every time.
        let set_first =
            |words: &[AtomicU64]| words[word].load(Relaxed) & bit == 0 && words[word].fetch_or(bit, Relaxed) & bit == 0;
        if set_first(&self.once) {
            firsts.push(d);
            return None;
        }
        if set_first(&self.twice) {
            return None;
        }
        Some(self.slots[d as usize].get_or_init(|| {
            let mut bits = self.pool.lock().ok().and_then(|mut pool| pool.pop()).unwrap_or_default();
            encode(&mut bits);
            bits
        }))
    }

    /// Empties the slots and bits of the actors the frame's connections opened first.
    pub fn end_frame<'a>(&mut self, firsts: impl Iterator<Item = &'a u32>) {
        let pool = self.pool.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        for &d in firsts {
            *self.once[d as usize / 64].get_mut() = 0;
            *self.twice[d as usize / 64].get_mut() = 0;
            pool.extend(self.slots[d as usize].take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches an encoding made for the first or second opener (what cost mmo ~30 % an open), a
    /// second encoding of one actor in a frame, an encoding shown to an open owing fewer leaves
    /// before one exists, and a slot or bit left set for the next frame.
    #[test]
    fn the_third_whole_open_of_an_actor_encodes_it_once_for_the_rest_and_the_frame_end_forgets_it() {
        let mut cache = OpenCache::default();
        cache.begin_frame(130);
        let (mut firsts, mut encodes) = (Vec::new(), 0);
        let mut open = |cache: &OpenCache, d: u32, whole: bool, firsts: &mut Vec<u32>| {
            cache.for_open(d, whole, firsts, |_| encodes += 1).is_some()
        };
        assert!(!open(&cache, 100, false, &mut firsts), "nothing encoded yet");
        assert!(!open(&cache, 100, true, &mut firsts), "the first encodes its own");
        assert_eq!(firsts, [100]);
        assert!(!open(&cache, 100, true, &mut firsts), "the second encodes its own");
        assert!(!open(&cache, 100, false, &mut firsts), "still nothing encoded");
        assert!(open(&cache, 100, true, &mut firsts), "the third encodes for the rest");
        assert!(open(&cache, 100, true, &mut firsts));
        assert!(open(&cache, 100, false, &mut firsts), "a partial open copies what is there");
        assert!(!open(&cache, 5, true, &mut firsts), "another actor starts afresh");
        assert_eq!(firsts, [100, 5], "only first opens are listed");
        assert_eq!(encodes, 1, "one encoding of actor 100 in the frame");
        cache.end_frame(firsts.iter());
        cache.begin_frame(130); // its debug check: every slot and bit empty
        let mut firsts = Vec::new();
        assert!(cache.for_open(100, true, &mut firsts, |_| unreachable!()).is_none());
        assert!(cache.for_open(100, false, &mut firsts, |_| unreachable!()).is_none());
        assert!(cache.for_open(100, true, &mut firsts, |_| unreachable!()).is_none(), "and second");
        assert_eq!(firsts, [100], "a new frame's first open");
    }
}
