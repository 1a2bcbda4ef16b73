//! The dormant cells: sleeping actors by square cell of the actor level's grid, where each
//! connection looks about once a second for sleepers near its viewers that it has not met.
//!
//! ```text
//! a cell     its sleepers sorted by key; what a look tests for every entry — position and
//!            cull distance, 16 bytes — in one column, who it is in another
//! a look     per viewer, the box of cells an entry within the largest cull distance of it may
//!            sit in (widened by a margin far above the rounding that placed the entries), each
//!            cell visited once (a cell in an earlier viewer's box was tested against every
//!            viewer): a cell whose rectangle is beyond its own largest cull distance from every
//!            viewer is skipped whole; the others test 64 entries at a time into a bit mask
//! large      sleepers whose cull radius reaches past MAX_CELL_REACH cells, or placed at a
//!            non-finite position or past MAX_CELL_INDEX cells: every look tests them all
//! ```
//!
//! Entries go lazily: a look hands out what its caller checks is still asleep, and a
//! compaction drops the rest once the entries have doubled since the last.

use super::super::relevancy::{within_cull_distance, Viewer};
use super::NetGuid;
use crate::ids::GuidHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Cells an actor's cull radius may reach from its own before the actor goes to the list every
/// look sweeps.
const MAX_CELL_REACH: f32 = 4.0;

/// How far from the origin, in cells, an entry may sit before it goes to the list every look
/// sweeps: cell indices stay exact in f32, and the division that finds an entry's cell accurate
/// to a tiny fraction of a cell.
const MAX_CELL_INDEX: f32 = 4_194_304.0;

/// One sleeping actor, where it fell asleep.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sleeper {
    pub key: u64,
    pub guid: NetGuid,
    /// Which of the actor's sleeps ([`crate::net::settings::Columns::sleeps`]) this entry is for.
    pub sleep: u32,
    pub at: [f32; 3],
    pub cull_sq: f32,
}

/// Who a cell entry is (its position and cull distance are in the cell's columns).
#[derive(Clone, Copy, Debug)]
struct Asleep {
    key: u64,
    guid: NetGuid,
    sleep: u32,
}

/// One cell's sleepers, sorted by key, as two columns: where (x, y, z and the squared cull
/// distance: one contiguous run a look reads whole) and who.
#[derive(Default)]
struct Cell {
    place: Vec<[f32; 4]>,
    who: Vec<Asleep>,
    /// At least the largest `cull_sq` here (exact after a compaction).
    max_cull_sq: f32,
}

impl Cell {
    fn len(&self) -> usize {
        self.who.len()
    }

    fn get(&self, i: usize) -> Sleeper {
        let Asleep { key, guid, sleep } = self.who[i];
        let [x, y, z, cull_sq] = self.place[i];
        Sleeper { key, guid, sleep, at: [x, y, z], cull_sq }
    }

    fn set(&mut self, i: usize, s: Sleeper) {
        self.who[i] = Asleep { key: s.key, guid: s.guid, sleep: s.sleep };
        self.place[i] = place(&s);
    }

    /// Adds `s` in key order; an entry of the same actor (asleep again where it slept before,
    /// woken for a connection that met it) takes the new one's values instead. True if added.
    fn insert(&mut self, s: Sleeper) -> bool {
        self.max_cull_sq = self.max_cull_sq.max(s.cull_sq);
        let at = self.who.partition_point(|e| e.key < s.key);
        let same = self.who[at..].iter().take_while(|e| e.key == s.key).position(|e| e.guid == s.guid);
        if let Some(i) = same {
            self.set(at + i, s);
            return false;
        }
        self.who.insert(at, Asleep { key: s.key, guid: s.guid, sleep: s.sleep });
        self.place.insert(at, place(&s));
        true
    }

    /// Keeps the entries `alive` says are still asleep, in order.
    fn retain(&mut self, alive: impl Fn(&Sleeper) -> bool) {
        let mut kept = 0;
        self.max_cull_sq = 0.0;
        for i in 0..self.len() {
            let s = self.get(i);
            if alive(&s) {
                self.set(kept, s);
                self.max_cull_sq = self.max_cull_sq.max(s.cull_sq);
                kept += 1;
            }
        }
        self.who.truncate(kept);
        self.place.truncate(kept);
    }

    /// Appends the entries within their cull distance of a viewer in `views` (finite
    /// locations), in key order.
    fn within(&self, views: &[[f32; 3]], out: &mut Vec<Sleeper>) {
        for (block, places) in self.place.chunks(64).enumerate() {
            let start = block * 64;
            let mut mask = views.iter().fold(0u64, |m, &v| m | within_mask(places, v));
            while mask != 0 {
                out.push(self.get(start + mask.trailing_zeros() as usize));
                mask &= mask - 1;
            }
        }
    }
}

/// Bit `j` set when entry `j` (of at most 64) is within its cull distance of `view` — the
/// test [`within_cull_distance`] makes, in the same operations, so the two always agree.
fn within_mask(places: &[[f32; 4]], view: [f32; 3]) -> u64 {
    let mut mask = 0u64;
    for (j, &[x, y, z, cull_sq]) in places.iter().take(64).enumerate() {
        let (dx, dy, dz) = (x - view[0], y - view[1], z - view[2]);
        mask |= u64::from(dx * dx + dy * dy + dz * dz < cull_sq) << j;
    }
    mask
}

/// A sleeper's place column entry.
fn place(s: &Sleeper) -> [f32; 4] {
    [s.at[0], s.at[1], s.at[2], s.cull_sq]
}

/// Sleeping actors by square cell of the actor level's grid size (see the module
/// documentation).
#[derive(Default)]
pub(crate) struct DormantCells {
    cell: f32,
    /// Keys are the game's positions, not the network's: the server's fast hasher.
    cells: HashMap<(i64, i64), Cell, BuildHasherDefault<GuidHasher>>,
    large: Vec<Sleeper>,
    pub entries: usize,
    /// Entries after the last compaction.
    compacted: usize,
    /// The largest cull distance of an entry in `cells` (a look visits the cells within it of
    /// a viewer).
    radius: f32,
}

impl DormantCells {
    pub fn new(cell: f32) -> DormantCells {
        DormantCells { cell, ..DormantCells::default() }
    }

    fn cell_of(&self, at: [f32; 3]) -> (i64, i64) {
        ((at[0] / self.cell).floor() as i64, (at[1] / self.cell).floor() as i64)
    }

    pub(super) fn insert(&mut self, s: Sleeper) {
        self.entries += 1;
        let radius = s.cull_sq.max(0.0).sqrt();
        let placed = s.at.iter().all(|c| c.is_finite())
            && (s.at[0] / self.cell).abs() < MAX_CELL_INDEX
            && (s.at[1] / self.cell).abs() < MAX_CELL_INDEX;
        if !(radius / self.cell <= MAX_CELL_REACH && placed) {
            self.large.push(s);
        } else {
            self.radius = self.radius.max(radius);
            let c = self.cell_of(s.at);
            if !self.cells.entry(c).or_default().insert(s) {
                self.entries -= 1;
            }
        }
    }

    /// Whether cell (`x`, `y`) may hold an entry within its cull distance of `view`: false
    /// when the cell's rectangle lies beyond its largest cull distance. (Its bounds are widened
    /// by a margin far above f32 rounding: an entry's cell was found by a division, the bounds
    /// here by products.)
    fn may_reach(&self, (x, y): (i64, i64), max_cull_sq: f32, view: [f32; 3]) -> bool {
        let gap = |lo: f32, v: f32| {
            let hi = lo + self.cell;
            let margin = 1e-4 * (lo.abs() + v.abs() + self.cell) + 1.0;
            (lo - margin - v).max(v - hi - margin).max(0.0)
        };
        let (dx, dy) = (gap(x as f32 * self.cell, view[0]), gap(y as f32 * self.cell, view[1]));
        dx * dx + dy * dy < max_cull_sq
    }

    /// The cells (`x0..=x1`, `y0..=y1`) an entry within its cull distance of `view` may sit
    /// in, or `None` when there is none. An entry within reach is within `radius` of the view
    /// (rounding aside: the margin covers f32's many times over) and the divisions placing
    /// entries and bounds are monotonic, so its cell lies inside.
    fn cells_around(&self, view: [f32; 3]) -> Option<[i64; 4]> {
        let reach = self.radius + 1e-4 * (view[0].abs().max(view[1].abs()) + self.radius + self.cell) + 1.0;
        let span = |v: f32| {
            let lo = ((v - reach) / self.cell).floor().max(-MAX_CELL_INDEX);
            let hi = ((v + reach) / self.cell).floor().min(MAX_CELL_INDEX);
            (lo <= hi).then_some((lo as i64, hi as i64))
        };
        let ((x0, x1), (y0, y1)) = (span(view[0])?, span(view[1])?);
        Some([x0, x1, y0, y1])
    }

    /// Sleepers within their cull distance of a viewer (maybe stale: the caller checks), cell
    /// by cell in key order.
    pub(super) fn near(&self, viewers: &[Viewer], out: &mut Vec<Sleeper>) {
        out.clear();
        // A viewer at a non-finite place is within nobody's cull distance.
        let views: Vec<[f32; 3]> =
            viewers.iter().map(|v| v.location).filter(|l| l.iter().all(|c| c.is_finite())).collect();
        let boxes: Vec<Option<[i64; 4]>> = views.iter().map(|&v| self.cells_around(v)).collect();
        // The cells to test, found first: a look is a few thousand entries scattered over cold
        // memory, so the lookups and the first touch of each cell's places go out together
        // (independent loads the core overlaps) instead of one cell's misses after another's.
        let mut visit: Vec<&Cell> = Vec::new();
        for (i, b) in boxes.iter().enumerate() {
            let Some([x0, x1, y0, y1]) = *b else { continue };
            for y in y0..=y1 {
                for x in x0..=x1 {
                    // A cell in an earlier viewer's box was tested against every viewer already.
                    let seen = boxes[..i]
                        .iter()
                        .flatten()
                        .any(|&[a0, a1, b0, b1]| (a0..=a1).contains(&x) && (b0..=b1).contains(&y));
                    if seen {
                        continue;
                    }
                    let Some(cell) = self.cells.get(&(x, y)) else { continue };
                    if views.iter().any(|&w| self.may_reach((x, y), cell.max_cull_sq, w)) {
                        visit.push(cell);
                    }
                }
            }
        }
        let touched = visit.iter().flat_map(|c| c.place.iter().step_by(4)).fold(0.0f32, |a, p| a + p[3]);
        std::hint::black_box(touched);
        for cell in visit {
            cell.within(&views, out);
        }
        let within = |s: &&Sleeper| views.iter().any(|&v| within_cull_distance(s.at, s.cull_sq, v));
        out.extend(self.large.iter().filter(within));
    }

    /// Drops entries `alive` says are gone, once the cells have doubled since the last
    /// compaction (so memory stays within twice the sleepers, at amortised O(1) per entry).
    pub(super) fn compact(&mut self, alive: impl Fn(&Sleeper) -> bool) {
        if self.entries <= 2 * self.compacted + 1024 {
            return;
        }
        self.cells.retain(|_, cell| {
            cell.retain(&alive);
            cell.len() > 0
        });
        self.large.retain(&alive);
        self.entries = self.cells.values().map(Cell::len).sum::<usize>() + self.large.len();
        self.compacted = self.entries;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sleeper(key: u64, at: [f32; 3], cull: f32) -> Sleeper {
        Sleeper { key, guid: NetGuid(key * 2), sleep: 1, at, cull_sq: cull * cull }
    }

    fn viewer(at: [f32; 3]) -> Viewer {
        Viewer { real_viewer: None, view_target: None, location: at, direction: [1.0, 0.0, 0.0] }
    }

    proptest! {
        /// A look hands out exactly the sleepers within their cull distance of some viewer (as
        /// the plain test over every entry finds them), each once, in key order cell by cell —
        /// whatever the cells skipped whole, the 64-entry masks (crowded cells hold several),
        /// the viewers sharing cells.
        #[test]
        fn a_look_finds_exactly_the_sleepers_a_plain_sweep_finds(
            places in prop::collection::vec((-1f32..1.0, -1f32..1.0, -500f32..500.0, 0f32..25_000.0), 0..400),
            spread in prop::sample::select(vec![3_000f32, 60_000.0]),
            views in prop::collection::vec((-70_000f32..70_000.0, -70_000f32..70_000.0, -500f32..500.0), 0..4),
            cell in prop::sample::select(vec![2_500f32, 10_000.0, 30_000.0]),
            bad_viewer in any::<bool>(),
        ) {
            let mut cells = DormantCells::new(cell);
            let all: Vec<Sleeper> =
                places.iter().enumerate().map(|(i, &(x, y, z, c))| sleeper(i as u64, [x * spread, y * spread, z], c)).collect();
            for &s in &all {
                cells.insert(s);
            }
            let mut viewers: Vec<Viewer> = views.iter().map(|&(x, y, z)| viewer([x, y, z])).collect();
            if bad_viewer {
                viewers.insert(0, viewer([f32::NAN, 0.0, 0.0]));
            }
            let mut out = Vec::new();
            cells.near(&viewers, &mut out);
            let mut found: Vec<u64> = out.iter().map(|s| s.key).collect();
            found.sort_unstable();
            let expected: Vec<u64> = all
                .iter()
                .filter(|s| viewers.iter().any(|v| within_cull_distance(s.at, s.cull_sq, v.location)))
                .map(|s| s.key)
                .collect();
            prop_assert_eq!(found, expected);
        }
    }

    #[test]
    fn a_sleeper_at_its_cull_distance_across_cell_edges_is_found_exactly_when_within() {
        // Viewer and sleeper stepped an f32 ulp at a time across cell edges, the sleeper at its
        // cull distance (either side of the viewer, the distance exact or a step off): however
        // the divisions that place them round, a look finds it exactly when the plain test says
        // it is within. (A look around the viewer's cell by a whole number of cells missed some:
        // the two cells can be one more apart than the cull distance's cells.)
        let step =
            |x: f32, n: i32| (0..n.unsigned_abs()).fold(x, |x, _| if n > 0 { x.next_up() } else { x.next_down() });
        for cell in [0.3f32, 2_500.0, 7_000.3, 10_000.0, 12_345.679, 30_000.0] {
            for reach in 1..=4 {
                let cull = reach as f32 * cell;
                for cull_sq in [cull * cull, (cull * cull).next_up(), (cull * cull).next_down()] {
                    for (k, sign) in [(-3, 1.0), (0, -1.0), (1, 1.0), (5, -1.0)] {
                        for dv in -6..6 {
                            let xv = step(k as f32 * cell, dv);
                            for de in -6..6 {
                                let xe = step(xv + sign * cull, de);
                                let within = within_cull_distance([xe, 0.0, 0.0], cull_sq, [xv, 0.0, 0.0]);
                                let mut cells = DormantCells::new(cell);
                                cells.insert(Sleeper { cull_sq, ..sleeper(1, [xe, 0.0, 0.0], 0.0) });
                                let mut out = Vec::new();
                                cells.near(&[viewer([xv, 0.0, 0.0])], &mut out);
                                assert_eq!(
                                    out.len(),
                                    usize::from(within),
                                    "cell {cell}, viewer {xv}, sleeper {xe}, {cull_sq}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sleepers_and_viewers_far_out_are_found_as_near_the_origin() {
        // Past MAX_CELL_INDEX cells from the origin a sleeper goes to the list every look tests
        // (a cell index there would overflow, or a division round by more than a cell).
        let mut cells = DormantCells::new(10_000.0);
        for (key, x) in [(1, 1.0e30f32), (2, -4.0e10), (3, 4.19e10), (4, 4.2e10)] {
            cells.insert(sleeper(key, [x, 0.0, 0.0], 1_000.0));
        }
        let mut out = Vec::new();
        for (x, key) in [(1.0e30f32, 1), (-4.0e10 + 500.0, 2), (4.19e10, 3), (4.2e10, 4)] {
            cells.near(&[viewer([x, 0.0, 0.0])], &mut out);
            assert_eq!(out.iter().map(|s| s.key).collect::<Vec<_>>(), [key], "viewer at {x}");
        }
        cells.near(&[viewer([f32::MAX, f32::MAX, 0.0]), viewer([0.0; 3])], &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn an_actor_asleep_again_in_its_cell_replaces_its_old_entry_and_compaction_drops_the_gone() {
        let mut cells = DormantCells::new(10_000.0);
        cells.insert(sleeper(7, [100.0, 100.0, 0.0], 5_000.0));
        cells.insert(Sleeper { sleep: 2, ..sleeper(7, [200.0, 100.0, 0.0], 5_000.0) });
        cells.insert(sleeper(3, [300.0, 100.0, 0.0], 5_000.0));
        assert_eq!(cells.entries, 2);
        let mut out = Vec::new();
        cells.near(&[viewer([0.0; 3])], &mut out);
        let seen: Vec<(u64, u32, f32)> = out.iter().map(|s| (s.key, s.sleep, s.at[0])).collect();
        assert_eq!(seen, [(3, 1, 300.0), (7, 2, 200.0)]);
        // Past the compaction threshold, entries of actors awake since go.
        for k in 10..2_100 {
            cells.insert(sleeper(k, [(k % 40) as f32 * 1_000.0, 0.0, 0.0], 1_000.0));
        }
        cells.compact(|s| s.key % 2 == 0);
        assert_eq!(cells.entries, cells.cells.values().map(Cell::len).sum::<usize>());
        assert_eq!(cells.entries, (10..2_100).filter(|k| k % 2 == 0).count());
        cells.near(&[viewer([0.0; 3])], &mut out);
        assert!(out.iter().all(|s| s.key % 2 == 0) && !out.is_empty());
    }
}
