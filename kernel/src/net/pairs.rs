//! Where a connection keeps its per-actor state: dense tables, or a sorted table of channels.
//!
//! ```text
//! Dense      per class, per slot: one PairState for every actor of the world (the mode where
//!            every actor goes to every connection: each has a pair anyway, and indexing by
//!            slot is the cheapest lookup, prefetched by planning)
//! Channels   one row per pair that exists — an open (or opening) channel, or one recently
//!            relevant — sorted by (class, slot): the actor level's mode, where a connection
//!            sees the actors near its viewers and 1M actors × 1000 connections × 16 bytes
//!            (16 GB) must never be allocated. A frame walks the rows in order; other lookups
//!            binary-search; a frame's new channels are merged in at once. Channels closed for
//!            dormancy move to a second sorted table the frame never walks (a connection may
//!            hold thousands of dormant copies); waking moves a row back.
//! ```
//!
//! A sparse hash map was measured first for both modes: on ShooterCharacter 50k × 100 at 5 %
//! its lookups (one cache miss each, no prefetch) took the frame from 18 ms to 33–38 ms. So the
//! dense mode stays dense, and the sparse mode is a sorted array the frame walks sequentially.

use super::connection::PairState;
use crate::memory::HUGE_PAGE_BYTES;

/// The key of a pair: class in the high half, slot in the low (sorting by it is sorting by
/// (class, slot)).
pub(crate) fn pair_key(class: u32, slot: u32) -> u64 {
    (class as u64) << 32 | slot as u64
}

/// The (class, slot) of a key.
pub(crate) fn split_key(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

/// One pair of the actor level: its send state and the times relevancy and priority need.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Channel {
    pub key: u64,
    pub state: PairState,
    /// Server time until which the actor counts as relevant without a recheck (UE's
    /// `RelevantTime`, plus its jitter).
    pub relevant_time: f64,
    /// Server time the channel last replicated (UE's `LastUpdateTime`): priority's T.
    pub last_update: f64,
}

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

/// A connection's pairs.
pub(crate) enum Pairs {
    /// Per class, per slot.
    Dense(Vec<DenseTable>),
    /// Rows sorted by key: the channels a frame walks, and the dormant ones it does not.
    Channels {
        /// Open, opening or recently relevant channels.
        rows: Vec<Channel>,
        /// Channels closed for dormancy (flag `DORMANT`): what the client keeps.
        dormant: Vec<Channel>,
    },
}

/// The first index at or after `from` of sorted `rows` whose key is not below `key`: steps of
/// doubling length from `from`, then a binary search inside the last one, so a walk over sorted
/// keys costs O(keys · log(gap)) — a linear merge when the keys are dense, a search when sparse.
fn gallop(rows: &[Channel], from: usize, key: u64) -> usize {
    let (mut lo, mut step) = (from, 1);
    while lo < rows.len() && rows[lo].key < key {
        let hi = (lo + step).min(rows.len());
        if rows[hi - 1].key >= key {
            return lo + rows[lo..hi].partition_point(|x| x.key < key);
        }
        lo = hi;
        step *= 2;
    }
    lo
}

/// The index of `key` in sorted `rows`.
fn find(rows: &[Channel], key: u64) -> Option<usize> {
    rows.binary_search_by_key(&key, |r| r.key).ok()
}

impl Pairs {
    /// An empty channel table.
    pub fn channels() -> Self {
        Pairs::Channels { rows: Vec::new(), dormant: Vec::new() }
    }

    /// Dense tables for `classes` classes, or an empty channel table.
    pub fn new(sparse: bool, classes: usize) -> Self {
        if sparse {
            Pairs::channels()
        } else {
            Pairs::Dense((0..classes).map(|_| DenseTable::default()).collect())
        }
    }

    /// Planning of `frame` begins: clean pairs are sent through it from now on (see
    /// [`DenseTable`]).
    pub fn begin_plan(&mut self, frame: crate::ids::Frame) {
        if let Pairs::Dense(d) = self {
            for t in d {
                t.clean_through = frame;
            }
        }
    }

    /// Whether pair (`class`, `slot`) is a clean dense pair (see [`DenseTable`]).
    #[inline]
    pub fn is_clean(&self, class: u32, slot: u32) -> bool {
        match self {
            Pairs::Dense(d) => d.get(class as usize).is_some_and(|t| t.is_clean(slot as usize)),
            Pairs::Channels { .. } => false,
        }
    }

    /// Marks dense pair (`class`, `slot`) clean (the caller checked it is).
    #[inline]
    pub fn set_clean(&mut self, class: u32, slot: u32) {
        if let Pairs::Dense(d) = self {
            if let Some(t) = d.get_mut(class as usize) {
                t.set_clean(slot as usize);
            }
        }
    }

    /// A class was registered.
    pub fn add_class(&mut self) {
        if let Pairs::Dense(d) = self {
            d.push(DenseTable::default());
        }
    }

    /// The state of a pair, created on first use.
    pub fn get_or_insert(&mut self, class: u32, slot: u32) -> &mut PairState {
        match self {
            Pairs::Dense(d) => d[class as usize].get_or_insert(slot as usize),
            Pairs::Channels { rows, dormant } => {
                let key = pair_key(class, slot);
                if let Some(i) = find(dormant, key) {
                    return &mut dormant[i].state;
                }
                let i = match rows.binary_search_by_key(&key, |r| r.key) {
                    Ok(i) => i,
                    Err(i) => {
                        rows.insert(i, Channel { key, ..Channel::default() });
                        i
                    }
                };
                &mut rows[i].state
            }
        }
    }

    /// The state of a pair, if it exists.
    pub fn get(&self, class: u32, slot: u32) -> Option<&PairState> {
        match self {
            Pairs::Dense(d) => d.get(class as usize)?.get(slot as usize),
            Pairs::Channels { rows, dormant } => {
                let key = pair_key(class, slot);
                match find(rows, key) {
                    Some(i) => Some(&rows[i].state),
                    None => find(dormant, key).map(|i| &dormant[i].state),
                }
            }
        }
    }

    /// Keeps the entries of `keys` (a key and the caller's tag) whose key has no pair here. An
    /// ascending run of keys walks both sorted tables forward once (a dormancy look asks this of
    /// hundreds of sleepers at a time, a sorted run per cell); a key below the one before starts
    /// the walk over. Dense pairs answer as [`Pairs::get`] does.
    pub fn retain_unheld<T>(&self, keys: &mut Vec<(u64, T)>) {
        match self {
            Pairs::Dense(_) => keys.retain(|&(k, _)| {
                let (c, slot) = split_key(k);
                self.get(c, slot).is_none()
            }),
            Pairs::Channels { rows, dormant } => {
                let (mut r, mut d, mut last) = (0, 0, 0);
                keys.retain(|&(k, _)| {
                    if k < last {
                        (r, d) = (0, 0);
                    }
                    last = k;
                    r = gallop(rows, r, k);
                    d = gallop(dormant, d, k);
                    rows.get(r).is_none_or(|x| x.key != k) && dormant.get(d).is_none_or(|x| x.key != k)
                });
            }
        }
    }

    /// The state of a pair, if it exists, to change.
    pub fn get_mut(&mut self, class: u32, slot: u32) -> Option<&mut PairState> {
        match self {
            Pairs::Dense(d) => d.get_mut(class as usize)?.get_mut(slot as usize),
            Pairs::Channels { rows, dormant } => {
                let key = pair_key(class, slot);
                match find(rows, key) {
                    Some(i) => Some(&mut rows[i].state),
                    None => find(dormant, key).map(|i| &mut dormant[i].state),
                }
            }
        }
    }

    /// The state of a pair, if it exists, to change — for a walk whose keys
    /// ([`pair_key`] of (`class`, `slot`)) never decrease from one call to the next: `cursor`
    /// (start it at 0) is where the last call stopped in the channel rows, so the walk gallops
    /// forward instead of searching the whole table each time.
    pub fn get_mut_from(&mut self, cursor: &mut usize, class: u32, slot: u32) -> Option<&mut PairState> {
        match self {
            Pairs::Dense(d) => d.get_mut(class as usize)?.get_mut(slot as usize),
            Pairs::Channels { rows, dormant } => {
                let key = pair_key(class, slot);
                *cursor = gallop(rows, *cursor, key);
                match rows.get(*cursor).is_some_and(|r| r.key == key) {
                    true => Some(&mut rows[*cursor].state),
                    false => find(dormant, key).map(|i| &mut dormant[i].state),
                }
            }
        }
    }

    /// Forgets a pair; returns what it held.
    pub fn remove(&mut self, class: u32, slot: u32) -> PairState {
        match self {
            Pairs::Dense(d) => d.get_mut(class as usize).map(|t| t.remove(slot as usize)).unwrap_or_default(),
            Pairs::Channels { rows, dormant } => {
                let key = pair_key(class, slot);
                match (find(rows, key), find(dormant, key)) {
                    (Some(i), _) => rows.remove(i).state,
                    (None, Some(i)) => dormant.remove(i).state,
                    (None, None) => PairState::default(),
                }
            }
        }
    }

    /// Pairs held (dense: slots allocated; channels: rows).
    pub fn len(&self) -> usize {
        match self {
            Pairs::Dense(d) => d.iter().map(DenseTable::len).sum(),
            Pairs::Channels { rows, dormant } => rows.len() + dormant.len(),
        }
    }

    /// Bytes the pairs take (allocated).
    pub fn bytes(&self) -> usize {
        match self {
            Pairs::Dense(d) => d.iter().map(DenseTable::bytes).sum(),
            Pairs::Channels { rows, dormant } => {
                (rows.capacity() + dormant.capacity()) * std::mem::size_of::<Channel>()
            }
        }
    }
}

impl Pairs {
    /// Wakes the dormant row of `key`, if there is one: it becomes a channel the frame walks
    /// again (flag `DORMANT` cleared). Returns whether there was one.
    pub fn wake(&mut self, key: u64) -> bool {
        let Pairs::Channels { rows, dormant } = self else { return false };
        let Some(i) = find(dormant, key) else { return false };
        let mut row = dormant.remove(i);
        row.state.flags &= !super::connection::pair::DORMANT;
        let at = rows.partition_point(|r| r.key < key);
        rows.insert(at, row);
        true
    }

    /// Moves the rows flagged `DORMANT` to the dormant table (`moving`: a buffer).
    pub fn settle_dormant(&mut self, moving: &mut Vec<Channel>) {
        let Pairs::Channels { rows, dormant } = self else { return };
        moving.clear();
        rows.retain(|r| {
            let d = r.state.flags & super::connection::pair::DORMANT != 0;
            if d {
                moving.push(*r);
            }
            !d
        });
        merge_rows(dormant, moving);
    }
}

/// Merges `new` rows (sorted by key, none already present) into `rows` (sorted), in one pass
/// from the back.
pub(crate) fn merge_rows(rows: &mut Vec<Channel>, new: &[Channel]) {
    if new.is_empty() {
        return;
    }
    let old = rows.len();
    rows.resize(old + new.len(), Channel::default());
    let (mut i, mut j, mut w) = (old, new.len(), old + new.len());
    while j > 0 {
        if i > 0 && rows[i - 1].key > new[j - 1].key {
            rows[w - 1] = rows[i - 1];
            i -= 1;
        } else {
            rows[w - 1] = new[j - 1];
            j -= 1;
        }
        w -= 1;
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

    #[test]
    fn merged_rows_stay_sorted_and_keep_every_row() {
        let row = |key| Channel { key, ..Channel::default() };
        let mut rows: Vec<Channel> = [2, 5, 9].into_iter().map(row).collect();
        merge_rows(&mut rows, &[row(1), row(6), row(7), row(12)]);
        let keys: Vec<u64> = rows.iter().map(|r| r.key).collect();
        assert_eq!(keys, [1, 2, 5, 6, 7, 9, 12]);
        merge_rows(&mut rows, &[]);
        assert_eq!(rows.len(), 7);
        let mut empty = Vec::new();
        merge_rows(&mut empty, &[row(3)]);
        assert_eq!(empty[0].key, 3);
    }

    #[test]
    fn a_forward_walk_finds_what_a_search_finds() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for sparse in [true, false] {
            let mut p = Pairs::new(sparse, 3);
            for _ in 0..300 {
                let (class, slot) = (rng.random_range(0..3), rng.random_range(0..400));
                p.get_or_insert(class, slot).flags = rng.random_range(1..=u8::MAX);
            }
            if let Pairs::Channels { rows, dormant } = &mut p {
                // Some rows sleep in the other table; the walk finds them there too.
                let (awake, asleep): (Vec<Channel>, Vec<Channel>) = rows.iter().partition(|r| r.key % 5 != 0);
                (*rows, *dormant) = (awake, asleep);
            }
            let mut queries: Vec<(u32, u32)> =
                (0..500).map(|_| (rng.random_range(0..3), rng.random_range(0..420))).collect();
            queries.sort_unstable();
            let mut cursor = 0;
            for (class, slot) in queries {
                let searched = p.get(class, slot).copied();
                let walked = p.get_mut_from(&mut cursor, class, slot).map(|ps| *ps);
                assert_eq!(walked, searched, "({class}, {slot}), sparse {sparse}");
            }
        }
    }

    #[test]
    fn both_modes_answer_alike() {
        for sparse in [false, true] {
            let mut p = Pairs::new(sparse, 2);
            assert!(!p.wake(pair_key(1, 70)));
            assert!(p.get(1, 70).is_none());
            p.get_or_insert(1, 70).flags = 3;
            p.get_or_insert(0, 5).flags = 1;
            assert_eq!(p.get(1, 70).map(|s| s.flags), Some(3));
            p.get_mut(0, 5).unwrap().flags = 9;
            assert_eq!(p.remove(0, 5).flags, 9);
            assert_eq!(p.get(0, 5).map(|s| s.flags).unwrap_or(0), 0);
            assert_eq!(p.remove(1, 99), PairState::default());
        }
    }

    #[test]
    fn unheld_keys_are_those_in_neither_table() {
        use crate::net::connection::pair::DORMANT;
        let mut p = Pairs::channels();
        for slot in [2, 5, 8, 11] {
            p.get_or_insert(0, slot).flags = 1;
        }
        p.get_mut(0, 5).unwrap().flags |= DORMANT;
        p.get_mut(0, 11).unwrap().flags |= DORMANT;
        p.settle_dormant(&mut Vec::new());
        let mut keys: Vec<(u64, usize)> =
            [0, 2, 3, 5, 5, 9, 11, 12].into_iter().enumerate().map(|(i, s)| (pair_key(0, s), i)).collect();
        p.retain_unheld(&mut keys);
        assert_eq!(keys, [(0, 0), (3, 2), (9, 5), (12, 7)].map(|(s, i)| (pair_key(0, s), i)));
        // Tables and key lists of every relative size, against a set.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..200 {
            let row = |key| Channel { key, ..Channel::default() };
            let span = rng.random_range(1..5000u64);
            let table = |rng: &mut rand_chacha::ChaCha8Rng, n: usize| {
                let mut v: Vec<u64> = (0..n).map(|_| rng.random_range(0..span)).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let (n, m) = (rng.random_range(0..300), rng.random_range(0..2000));
            let (rows, dormant) = (table(&mut rng, n), table(&mut rng, m));
            let held: std::collections::HashSet<u64> = rows.iter().chain(&dormant).copied().collect();
            let p = Pairs::Channels {
                rows: rows.into_iter().map(row).collect(),
                dormant: dormant.into_iter().map(row).collect(),
            };
            let mut keys: Vec<(u64, ())> =
                (0..rng.random_range(0..600)).map(|_| (rng.random_range(0..span), ())).collect();
            // Sorted runs (as a look's cells give them), or no order at all.
            match round % 3 {
                0 => keys.sort_unstable(),
                1 => keys.chunks_mut(37).for_each(|c| c.sort_unstable()),
                _ => {}
            }
            let want: Vec<(u64, ())> = keys.iter().copied().filter(|(k, _)| !held.contains(k)).collect();
            p.retain_unheld(&mut keys);
            assert_eq!(keys, want, "round {round}");
        }
    }

    #[test]
    fn dormant_rows_move_aside_and_back_and_are_still_found() {
        use crate::net::connection::pair::DORMANT;
        let mut p = Pairs::channels();
        for slot in [1, 4, 9] {
            p.get_or_insert(0, slot).flags = 1;
        }
        p.get_mut(0, 4).unwrap().flags |= DORMANT;
        p.settle_dormant(&mut Vec::new());
        let Pairs::Channels { rows, dormant } = &p else { unreachable!() };
        assert_eq!(rows.iter().map(|r| r.key).collect::<Vec<_>>(), [1, 9]);
        assert_eq!(dormant.iter().map(|r| r.key).collect::<Vec<_>>(), [4]);
        assert_eq!(p.get(0, 4).map(|s| s.flags), Some(1 | DORMANT));
        assert_eq!(p.len(), 3);
        assert!(p.wake(pair_key(0, 4)));
        assert!(!p.wake(pair_key(0, 4)));
        let Pairs::Channels { rows, dormant } = &p else { unreachable!() };
        assert_eq!(rows.iter().map(|r| r.key).collect::<Vec<_>>(), [1, 4, 9]);
        assert!(dormant.is_empty());
        assert_eq!(p.get(0, 4).map(|s| s.flags), Some(1));
        p.get_mut(0, 9).unwrap().flags |= DORMANT;
        p.settle_dormant(&mut Vec::new());
        assert_eq!(p.remove(0, 9).flags, 1 | DORMANT);
        assert_eq!(p.len(), 2);
    }
}
