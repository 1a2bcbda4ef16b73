//! A connection's dense pair tables: one [`PairState`] per slot of a class, in whole huge pages
//! once large, with a bit per *clean* pair that planning reads instead of the state (see
//! [`DenseTable`]).

use super::super::connection::PairState;
use crate::memory::HUGE_PAGE_BYTES;

/// Pairs in one block of a large dense table: one huge page.
const BLOCK_PAIRS: usize = HUGE_PAGE_BYTES / std::mem::size_of::<PairState>();

/// A dense table takes whole huge pages from this size on (512 KiB: 32 768 actors).
const LARGE_TABLE_BYTES: usize = HUGE_PAGE_BYTES / 4;

/// One huge page of pair states, aligned to its size so the OS can back it with one TLB entry.
#[derive(Clone, Copy, bytemuck::Zeroable)]
#[repr(C, align(2097152))]
struct PairBlock([PairState; BLOCK_PAIRS]);

const _: () = assert!(std::mem::size_of::<PairBlock>() == HUGE_PAGE_BYTES);

/// One connection's pair states of one class, by slot.
///
/// Planning touches one pair state per changed actor, at random in tables of 16 bytes per
/// actor: with 4 KiB memory pages nearly every touch of a large table also walks the page tables
/// (a connection's table of 50 000 actors spans 200 pages; a frame visits them for each of 100
/// connections — and in a VM every walk is two-dimensional). So a table from 512 KiB on lives in
/// whole 2 MiB blocks advised onto huge pages: on ShooterCharacter 50k × 100 at 5 % (Intel Xeon,
/// AVX-512, alternating runs) the shared frame went from 8.2–8.6 ms to 7.4–7.7 ms. The price: a
/// large table's resident size rounds up to whole 2 MiB pages (800 KB → 2 MiB here), at most
/// 2 MiB per connection and class; smaller tables stay plain vectors.
///
/// **Clean pairs.** Planning reads one bit per pair before its state: a *clean* pair has its
/// open acknowledged, nothing owed or pending, channel epoch 0, and every change of its actor
/// since it became clean was planned for it (planning visits every changed actor for every
/// connection each frame; anything not sent — a full window, a lost packet — goes through
/// [`Connection::owe`](super::connection::Connection::owe), which touches the pair). So a clean
/// pair sends exactly this frame's changed active leaves, and planning need not load its state:
/// the frame reads a bitset of 1 bit per actor (6 KB for 50 000) instead of a 64-byte line per
/// changed actor (250 000 lines a frame at 2 500 changed actors × 100 connections, cold in the
/// cache by the next frame). The one field planning would have written, `sent_through`, goes
/// stale while the pair is clean; any mutable access ([`Self::get_mut`], [`Self::get_or_insert`],
/// [`Self::remove`]) first clears the bit and sets `sent_through` to [`Self::clean_through`], the
/// frame planning last visited the connection's changes — through which a clean pair has sent
/// everything. [`Self::get`] shows the stored state as it is (stale `sent_through` included).
pub(crate) struct DenseTable {
    states: States,
    /// One bit per slot: the pair is clean.
    clean: Vec<u64>,
    /// The frame of the connection's latest planning (see above).
    pub clean_through: crate::ids::Frame,
}

/// A dense table's states.
enum States {
    /// Below [`LARGE_TABLE_BYTES`].
    Small(Vec<PairState>),
    /// Whole huge pages; slots below `len` are in use.
    Large { blocks: Vec<PairBlock>, len: usize },
}

impl Default for DenseTable {
    fn default() -> Self {
        DenseTable { states: States::Small(Vec::new()), clean: Vec::new(), clean_through: crate::ids::Frame(0) }
    }
}

impl DenseTable {
    /// Slots held.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Bytes allocated.
    pub fn bytes(&self) -> usize {
        self.states.bytes() + self.clean.capacity() * 8
    }

    /// Whether `slot`'s pair is clean.
    #[inline]
    pub fn is_clean(&self, slot: usize) -> bool {
        self.clean.get(slot / 64).is_some_and(|w| w >> (slot % 64) & 1 != 0)
    }

    /// Marks `slot`'s pair clean (the caller checked it is: see the type's notes).
    #[inline]
    pub fn set_clean(&mut self, slot: usize) {
        if let Some(w) = self.clean.get_mut(slot / 64) {
            *w |= 1 << (slot % 64);
        }
    }

    /// Ends `slot`'s clean spell, if it has one, bringing its `sent_through` up to date.
    #[inline]
    fn touch(&mut self, slot: usize) {
        if let Some(w) = self.clean.get_mut(slot / 64) {
            let bit = 1u64 << (slot % 64);
            if *w & bit != 0 {
                *w &= !bit;
                let through = self.clean_through;
                if let Some(st) = self.states.get_mut(slot) {
                    st.sent_through = through;
                }
            }
        }
    }

    /// The state of `slot`, if held (a clean pair's `sent_through` may be stale).
    #[inline]
    pub fn get(&self, slot: usize) -> Option<&PairState> {
        self.states.get(slot)
    }

    /// The state of `slot`, if held, to change (no longer clean).
    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> Option<&mut PairState> {
        self.touch(slot);
        self.states.get_mut(slot)
    }

    /// The state of `slot`, holding every slot up to it (new ones never sent; no longer clean).
    #[inline]
    pub fn get_or_insert(&mut self, slot: usize) -> &mut PairState {
        if slot >= self.len() {
            self.states.grow(slot + 1);
            self.clean.resize((slot + 1).div_ceil(64), 0);
        }
        self.touch(slot);
        self.states.get_mut(slot).expect("the table was grown to hold the slot")
    }

    /// Forgets `slot`'s pair (a never-sent state takes its place); returns what it held.
    pub fn remove(&mut self, slot: usize) -> PairState {
        self.touch(slot);
        self.states.get_mut(slot).map(std::mem::take).unwrap_or_default()
    }

    /// Every held slot's state, by slot (clean pairs' `sent_through` may be stale).
    pub fn iter(&self) -> impl Iterator<Item = &PairState> + '_ {
        self.states.iter()
    }
}

impl States {
    /// Slots held.
    fn len(&self) -> usize {
        match self {
            States::Small(v) => v.len(),
            States::Large { len, .. } => *len,
        }
    }

    /// Bytes allocated.
    fn bytes(&self) -> usize {
        match self {
            States::Small(v) => v.capacity() * std::mem::size_of::<PairState>(),
            States::Large { blocks, .. } => blocks.len() * HUGE_PAGE_BYTES,
        }
    }

    /// The state of `slot`, if held.
    #[inline]
    fn get(&self, slot: usize) -> Option<&PairState> {
        match self {
            States::Small(v) => v.get(slot),
            States::Large { blocks, len } => (slot < *len).then(|| &blocks[slot / BLOCK_PAIRS].0[slot % BLOCK_PAIRS]),
        }
    }

    /// The state of `slot`, if held, to change.
    #[inline]
    fn get_mut(&mut self, slot: usize) -> Option<&mut PairState> {
        match self {
            States::Small(v) => v.get_mut(slot),
            States::Large { blocks, len } => {
                (slot < *len).then(|| &mut blocks[slot / BLOCK_PAIRS].0[slot % BLOCK_PAIRS])
            }
        }
    }

    /// Holds slots below `n` (more than held now); a table reaching [`LARGE_TABLE_BYTES`] moves
    /// into huge-page blocks, and a large one doubles its blocks when it runs out.
    #[cold]
    fn grow(&mut self, n: usize) {
        match self {
            States::Small(v) if n * std::mem::size_of::<PairState>() < LARGE_TABLE_BYTES => {
                v.resize(n, PairState::default());
            }
            States::Small(v) => {
                let mut blocks: Vec<PairBlock> = crate::memory::zeroed_vec(n.div_ceil(BLOCK_PAIRS));
                for (i, st) in v.iter().enumerate() {
                    blocks[i / BLOCK_PAIRS].0[i % BLOCK_PAIRS] = *st;
                }
                *self = States::Large { blocks, len: n };
            }
            States::Large { blocks, len } => {
                if n > blocks.len() * BLOCK_PAIRS {
                    let want = n.div_ceil(BLOCK_PAIRS).max(2 * blocks.len());
                    let mut grown: Vec<PairBlock> = crate::memory::zeroed_vec(want);
                    grown[..blocks.len()].copy_from_slice(blocks);
                    *blocks = grown;
                }
                *len = n;
            }
        }
    }

    /// Every held slot's state, by slot.
    fn iter(&self) -> impl Iterator<Item = &PairState> + '_ {
        let (small, blocks, len) = match self {
            States::Small(v) => (&v[..], &[][..], 0),
            States::Large { blocks, len } => (&[][..], &blocks[..], *len),
        };
        small.iter().chain(blocks.iter().flat_map(|b| b.0.iter()).take(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Frame, LeafMask};

    #[test]
    fn a_clean_pair_gets_its_sent_through_back_at_its_first_change() {
        let mut t = DenseTable::default();
        t.get_or_insert(70).sent_through = Frame(3);
        t.get_or_insert(5).sent_through = Frame(3);
        t.set_clean(70);
        assert!(t.is_clean(70) && !t.is_clean(5) && !t.is_clean(71) && !t.is_clean(10_000));
        // Frames go by with the pair clean: its stored state is not written.
        t.clean_through = Frame(9);
        assert_eq!(t.get(70).map(|s| s.sent_through), Some(Frame(3)), "a look changes nothing");
        assert!(t.is_clean(70));
        // A change (a lost packet, a full window) ends it, caught up through the last planning.
        assert_eq!(t.get_mut(70).map(|s| s.sent_through), Some(Frame(9)));
        assert!(!t.is_clean(70));
        t.clean_through = Frame(12);
        assert_eq!(t.get_mut(70).map(|s| s.sent_through), Some(Frame(9)), "only a clean pair catches up");
        t.set_clean(70);
        assert_eq!(t.get_or_insert(70).sent_through, Frame(12));
        // Growing keeps the bits; removing ends the spell and leaves a never-sent pair.
        t.set_clean(5);
        t.get_or_insert(200_000);
        assert!(t.is_clean(5) && !t.is_clean(70));
        assert_eq!(t.remove(5), PairState { sent_through: Frame(12), ..PairState::default() });
        assert!(!t.is_clean(5));
        assert_eq!(t.get(5), Some(&PairState::default()));
        // Setting a slot the table does not hold does nothing.
        t.set_clean(300_000);
        assert!(!t.is_clean(300_000));
    }

    #[test]
    fn dense_tables_keep_every_state_when_they_move_into_huge_blocks() {
        let st = |i: usize| PairState {
            resend: LeafMask(i as u64),
            sent_through: Frame(i as u32 + 1),
            ..PairState::default()
        };
        let mut t = DenseTable::default();
        let small = LARGE_TABLE_BYTES / std::mem::size_of::<PairState>() - 1;
        for i in (0..small).step_by(97) {
            *t.get_or_insert(i) = st(i);
        }
        assert!(matches!(t.states, States::Small(_)));
        // Past the large size: blocks, the states written so far kept, new slots never sent.
        *t.get_or_insert(small + 10) = st(small + 10);
        assert!(matches!(t.states, States::Large { .. }));
        assert_eq!(t.len(), small + 11);
        assert_eq!(t.states.bytes(), HUGE_PAGE_BYTES);
        // Past the first block: the blocks double, the states stay.
        let far = BLOCK_PAIRS + 5;
        *t.get_or_insert(far) = st(far);
        assert_eq!((t.len(), t.states.bytes()), (far + 1, 2 * HUGE_PAGE_BYTES));
        for i in 0..=far {
            let want =
                if (i < small && i % 97 == 0) || i == small + 10 || i == far { st(i) } else { PairState::default() };
            assert_eq!(t.get(i), Some(&want), "slot {i}");
        }
        assert_eq!(t.get(far + 1), None);
        assert_eq!(t.get_mut(far + 1), None);
        let held: Vec<PairState> = t.iter().copied().collect();
        assert_eq!(held.len(), far + 1);
        assert_eq!((held[97], held[far]), (st(97), st(far)));
    }
}
