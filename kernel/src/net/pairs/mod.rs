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
//! The dense tables themselves are in `dense.rs`.

mod dense;

pub(crate) use dense::DenseTable;

use super::connection::PairState;

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
    gallop_by(rows, from, key, |r| r.key)
}

/// [`gallop`] over any sorted slice, by `key_of` each item.
fn gallop_by<X>(xs: &[X], from: usize, key: u64, key_of: impl Fn(&X) -> u64) -> usize {
    let (mut lo, mut step) = (from, 1);
    while lo < xs.len() && key_of(&xs[lo]) < key {
        let hi = (lo + step).min(xs.len());
        if key_of(&xs[hi - 1]) >= key {
            return lo + xs[lo..hi].partition_point(|x| key_of(x) < key);
        }
        lo = hi;
        step *= 2;
    }
    lo
}

/// The index of `key` in sorted `rows`.
pub(crate) fn find(rows: &[Channel], key: u64) -> Option<usize> {
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

    /// The channel row of a pair at the actor level (open, opening or recently relevant; not a
    /// dormant copy); `None` for the property path's pairs.
    pub fn channel(&self, class: u32, slot: u32) -> Option<&Channel> {
        match self {
            Pairs::Dense(_) => None,
            Pairs::Channels { rows, .. } => find(rows, pair_key(class, slot)).map(|i| &rows[i]),
        }
    }

    /// Keeps the entries of `keys` (a key and the caller's tag) whose key has no pair here — or
    /// only a stale dormant copy (flagged `DORMANT | WOKEN`: woken, never sent to, dormant
    /// again; it owes what changed), which a relevant actor wakes. An ascending run of keys
    /// walks both sorted tables forward once (a dormancy look asks this of hundreds of sleepers
    /// at a time, their keys sorted); a key below the one before starts the walk over, so any
    /// order is answered right.
    /// Dense pairs answer as [`Pairs::get`] does.
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
                    let stale = super::connection::pair::DORMANT | super::connection::pair::WOKEN;
                    rows.get(r).is_none_or(|x| x.key != k)
                        && dormant.get(d).is_none_or(|x| x.key != k || x.state.flags & stale == stale)
                });
            }
        }
    }

    /// `f(tag, state)` for each entry of `keys` (ascending; a key may repeat) that names a
    /// channel row — an open, opening or recently relevant channel, not a dormant copy (a
    /// frame's calls go down no dormant channel) — in `keys`' order. The two sorted sides meet
    /// in a galloping intersection, each side jumping ahead to the other's key, so a
    /// connection's few hundred rows meet a frame's thousand calls in about
    /// rows · log(calls / rows) steps, and a few calls meet thousands of rows in
    /// calls · log(rows / calls): never a step per call and per row. Dense pairs answer for
    /// every key they hold, as [`Pairs::get`] does.
    pub fn for_each_channel_among<T: Copy>(&self, keys: &[(u64, T)], mut f: impl FnMut(T, &PairState)) {
        match self {
            Pairs::Dense(_) => {
                for &(k, t) in keys {
                    let (c, slot) = split_key(k);
                    if let Some(ps) = self.get(c, slot) {
                        f(t, ps);
                    }
                }
            }
            Pairs::Channels { rows, .. } => {
                let (mut i, mut r) = (0, 0);
                while i < keys.len() && r < rows.len() {
                    let (k, row) = (keys[i].0, &rows[r]);
                    if k < row.key {
                        i = gallop_by(keys, i, row.key, |e| e.0);
                    } else if row.key < k {
                        r = gallop(rows, r, k);
                    } else {
                        while let Some(&(_, t)) = keys.get(i).filter(|e| e.0 == k) {
                            f(t, &row.state);
                            i += 1;
                        }
                        r += 1;
                    }
                }
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
    /// again (flag `DORMANT` cleared, `WOKEN` set: it ranks as an actor without a channel until
    /// it is sent). Returns whether there was one.
    pub fn wake(&mut self, key: u64) -> bool {
        use super::connection::pair::{DORMANT, WOKEN};
        let Pairs::Channels { rows, dormant } = self else { return false };
        let Some(i) = find(dormant, key) else { return false };
        let mut row = dormant.remove(i);
        row.state.flags = row.state.flags & !DORMANT | WOKEN;
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

/// Merges `new` rows (sorted by key, none already present) into `rows` (sorted), from the back:
/// each new row's place found by a binary search, and the old rows between two new ones moved
/// as one block. (A connection's frame merges a dozen new rows into hundreds; moved one by one,
/// with a compare each, the merge was a fifth of the candidates walk, battle_royale.)
pub(crate) fn merge_rows(rows: &mut Vec<Channel>, new: &[Channel]) {
    if new.is_empty() {
        return;
    }
    let old = rows.len();
    rows.resize(old + new.len(), Channel::default());
    // Old rows `..end` are still in place; the new ones `..j` are still to go.
    let mut end = old;
    for (j, row) in new.iter().enumerate().rev() {
        let at = rows[..end].partition_point(|r| r.key < row.key);
        rows.copy_within(at..end, at + j + 1);
        rows[at + j] = *row;
        end = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The block merge against a sort of the union (a block moved to the wrong place, or a
    /// new row placed one off, breaks the order or loses a row).
    #[test]
    fn merged_rows_are_the_sorted_union() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for _ in 0..2000 {
            let mut keys: Vec<u64> = (0..rng.random_range(0..60)).map(|_| rng.random_range(0..200)).collect();
            keys.sort_unstable();
            keys.dedup();
            let (mut rows, mut new) = (Vec::new(), Vec::new());
            for k in &keys {
                let row = Channel { key: *k, relevant_time: *k as f64, ..Channel::default() };
                if rng.random_bool(0.3) {
                    new.push(row)
                } else {
                    rows.push(row)
                }
            }
            merge_rows(&mut rows, &new);
            let got: Vec<(u64, f64)> = rows.iter().map(|r| (r.key, r.relevant_time)).collect();
            let want: Vec<(u64, f64)> = keys.iter().map(|&k| (k, k as f64)).collect();
            assert_eq!(got, want);
        }
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
        assert_eq!(p.get(0, 4).map(|s| s.flags), Some(1 | crate::net::connection::pair::WOKEN));
        p.get_mut(0, 9).unwrap().flags |= DORMANT;
        p.settle_dormant(&mut Vec::new());
        assert_eq!(p.remove(0, 9).flags, 1 | DORMANT);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn a_walk_among_keys_answers_as_channel_does_with_repeated_keys_and_both_tables() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(55);
        for round in 0..300 {
            let sparse = round % 4 != 0;
            let mut p = Pairs::new(sparse, 3);
            let span = rng.random_range(1..600u32);
            for _ in 0..rng.random_range(0..400) {
                let (c, s) = (rng.random_range(0..3), rng.random_range(0..span));
                p.get_or_insert(c, s).flags = rng.random_range(1..=u8::MAX);
            }
            if let Pairs::Channels { rows, dormant } = &mut p {
                let k = rng.random_range(2..7);
                let (awake, asleep): (Vec<Channel>, Vec<Channel>) = rows.iter().partition(|r| r.key % k != 0);
                (*rows, *dormant) = (awake, asleep);
                // A key in both tables (rows first, as get).
                if let (Some(a), true) = (dormant.first().copied(), rng.random_bool(0.3)) {
                    let mut b = a;
                    b.state.flags = 0x42;
                    let at = rows.partition_point(|r| r.key < a.key);
                    rows.insert(at, b);
                }
            }
            let mut keys: Vec<(u64, usize)> = (0..rng.random_range(0..300))
                .map(|i| (pair_key(rng.random_range(0..3), rng.random_range(0..span + 5)), i))
                .collect();
            // Repeats: a key asked two and three times.
            let extra: Vec<(u64, usize)> = keys.iter().take(20).map(|&(k, i)| (k, i + 1000)).collect();
            keys.extend(extra);
            keys.sort_unstable();
            let mut got = Vec::new();
            p.for_each_channel_among(&keys, |i, ps| got.push((i, *ps)));
            // A channel row where there is one (never the dormant table); dense: any pair.
            let want: Vec<_> = keys
                .iter()
                .filter_map(|&(k, i)| {
                    let (c, s) = split_key(k);
                    let ps = if sparse { p.channel(c, s).map(|ch| ch.state) } else { p.get(c, s).copied() };
                    ps.map(|ps| (i, ps))
                })
                .collect();
            assert_eq!(got, want, "round {round}");
        }
    }
}
