//! The broad phase: a bounded uniform grid whose cells hold, contiguously, the actors whose X/Y
//! lies in them (their home cell), with each cell's largest cull distance and the bounding box of
//! its actors' X/Y. See the [module docs](super) for the layout and the reasons.

use super::config::{GridConfig, GridConfigError};
use super::sweep::relevant_lanes;
use super::CellView;
use rayon::prelude::*;

/// Relative widening of an actor's cull radius in every broad-phase test (the cells its square
/// spans, a cell's reach). The exact f32 test can pass for a true distance a few ulps above
/// `sqrt(cull_sq)` (the squares round down); widening by far more than that keeps the broad
/// phase a superset of the exact test.
const SQUARE_PAD: f64 = 1e-6;

/// Absolute widening on top of [`SQUARE_PAD`]: with subnormal squares the f32 test's error is
/// absolute (up to ~3.5e-45 on `d²`, ~6e-23 on `d`), which no relative pad covers.
const ABS_PAD: f64 = 1e-20;

/// The broad phase's cull radius for `cull_sq`: never below any distance the exact test passes.
fn reach(cull_sq: f32) -> f64 {
    f64::from(cull_sq).sqrt() * (1.0 + SQUARE_PAD) + ABS_PAD
}

/// A cell's column and row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellKey {
    /// Column, `0..cells_x`.
    pub x: u32,
    /// Row, `0..cells_y`.
    pub y: u32,
}

/// Where one actor goes in a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Dead, or never relevant (non-finite position, cull distance not above 0 or NaN).
    Nowhere,
    /// Covers more than `max_cells_per_actor` cells.
    Large,
    /// In dense cell `cell` (the one holding its clamped X/Y); its widened cull square spans at
    /// most `span` cells from there along either axis.
    Home { cell: u32, span: u32 },
}

/// One cell: its rows of the entries and what a query asks of it before sweeping them. One
/// record, not a column each: a build's count visits one line per actor, not three (the cells
/// of a large world do not fit in the cache: mmo's are 32 761).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct Cell {
    /// Its rows, `start..end` (while a build counts, `end` is the count; while it scatters, the
    /// next row).
    start: u32,
    end: u32,
    /// The largest cull distance squared of its rows.
    cull: f32,
    /// `[min x, min y, max x, max y]` of its rows.
    bbox: [f32; 4],
}

impl Cell {
    /// A cell of no rows: any `min`/`max` with a finite point replaces its box.
    const EMPTY: Cell = Cell { start: 0, end: 0, cull: 0.0, bbox: EMPTY_BOX };

    fn rows(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// Parallel columns of actor entries: one row per placed actor.
#[derive(Clone, Debug, Default)]
struct Entries {
    indices: Vec<u32>,
    xs: Vec<f32>,
    ys: Vec<f32>,
    zs: Vec<f32>,
    cull_sq: Vec<f32>,
}

impl Entries {
    fn clear(&mut self) {
        self.indices.clear();
        self.xs.clear();
        self.ys.clear();
        self.zs.clear();
        self.cull_sq.clear();
    }

    fn resize(&mut self, len: usize) {
        self.indices.resize(len, 0);
        self.xs.resize(len, 0.0);
        self.ys.resize(len, 0.0);
        self.zs.resize(len, 0.0);
        self.cull_sq.resize(len, 0.0);
    }

    fn push(&mut self, index: u32, pos: [f32; 3], cull_sq: f32) {
        self.indices.push(index);
        self.xs.push(pos[0]);
        self.ys.push(pos[1]);
        self.zs.push(pos[2]);
        self.cull_sq.push(cull_sq);
    }

    /// Fills every row's columns from the actor its index names (rows in order: the writes
    /// stream, the reads are the random ones).
    fn fill(&mut self, positions: &[[f32; 3]], cull_sq: &[f32]) {
        let rows = self.indices.len();
        let (xs, ys, zs, cs) =
            (&mut self.xs[..rows], &mut self.ys[..rows], &mut self.zs[..rows], &mut self.cull_sq[..rows]);
        for (r, &i) in self.indices.iter().enumerate() {
            let (pos, c) = (positions[i as usize], cull_sq[i as usize]);
            xs[r] = pos[0];
            ys[r] = pos[1];
            zs[r] = pos[2];
            cs[r] = c;
        }
    }

    fn view(&self, rows: std::ops::Range<usize>) -> CellView<'_> {
        CellView {
            indices: &self.indices[rows.clone()],
            xs: &self.xs[rows.clone()],
            ys: &self.ys[rows.clone()],
            zs: &self.zs[rows.clone()],
            cull_sq: &self.cull_sq[rows],
        }
    }
}

/// A uniform 2D grid over actor positions, rebuilt from the caller's columns each frame.
///
/// Invariants after a build (and until the next `insert`/`update`/`remove`):
/// - cell `c`'s actors are rows `cells[c].rows()` of `entries`, ascending by index;
/// - every live actor with a finite position and a cull distance above 0 is either in its home
///   cell (the cell of its clamped X/Y) or in `large`, never both, and nowhere else;
/// - every other actor is in no cell: the exact test could not pass for it;
/// - for a non-empty cell `c`, `cells[c].cull` is the largest cull distance squared of its rows
///   and `cells[c].bbox` the bounding box of their X/Y (real, unclamped coordinates);
/// - `span` is the most cells any placed actor's widened cull square reaches from its home cell
///   along either axis (0 when no actor is placed).
#[derive(Clone, Debug)]
pub struct SpatialGrid {
    config: GridConfig,
    /// `1 / cell_size`: a cell index is a multiply, not a divide (six a placement).
    per_cell: f64,
    positions: Vec<[f32; 3]>,
    cull_sq: Vec<f32>,
    live: Vec<bool>,
    /// Scratch: each actor's placement in the last build (kept to reuse the allocation).
    placements: Vec<Placement>,
    cells: Vec<Cell>,
    span: u32,
    entries: Entries,
    large: Entries,
    stale: bool,
}

impl SpatialGrid {
    /// An empty grid of the given shape.
    pub fn new(config: GridConfig) -> Result<SpatialGrid, GridConfigError> {
        config.validate()?;
        let cells = (config.cells_x * config.cells_y) as usize;
        Ok(SpatialGrid {
            config,
            per_cell: 1.0 / f64::from(config.cell_size),
            positions: Vec::new(),
            cull_sq: Vec::new(),
            live: Vec::new(),
            placements: Vec::new(),
            cells: vec![Cell::EMPTY; cells],
            span: 0,
            entries: Entries::default(),
            large: Entries::default(),
            stale: false,
        })
    }

    /// The grid's shape.
    pub fn config(&self) -> &GridConfig {
        &self.config
    }

    /// Replaces every actor with the caller's columns and builds the cells: actor `i` is at
    /// `positions[i]` with `cull_sq[i]`, present when `live(i)`. The frame loop's path: one
    /// copy, one placement pass, one counting pass, one scatter; no allocation once the
    /// buffers have grown to the world's size.
    ///
    /// # Panics
    /// If the two columns differ in length or hold more than `u32::MAX` actors.
    pub fn rebuild(&mut self, positions: &[[f32; 3]], cull_sq: &[f32], live: impl Fn(u32) -> bool) {
        assert_eq!(positions.len(), cull_sq.len(), "one cull distance per position");
        assert!(positions.len() <= u32::MAX as usize, "actor indices are u32");
        self.positions.clear();
        self.positions.extend_from_slice(positions);
        self.cull_sq.clear();
        self.cull_sq.extend_from_slice(cull_sq);
        self.live.clear();
        self.live.extend((0..positions.len() as u32).map(live));
        self.build();
    }

    /// Places actor `index` (growing the table with absent actors if needed). Takes effect at
    /// the next [`refresh`](Self::refresh).
    pub fn insert(&mut self, index: u32, pos: [f32; 3], cull_sq: f32) {
        let i = index as usize;
        if i >= self.live.len() {
            self.positions.resize(i + 1, [0.0; 3]);
            self.cull_sq.resize(i + 1, 0.0);
            self.live.resize(i + 1, false);
        }
        self.positions[i] = pos;
        self.cull_sq[i] = cull_sq;
        self.live[i] = true;
        self.stale = true;
    }

    /// Moves a present actor; returns `false` (and changes nothing) if `index` is absent.
    /// Takes effect at the next [`refresh`](Self::refresh).
    pub fn update(&mut self, index: u32, pos: [f32; 3], cull_sq: f32) -> bool {
        if !self.contains(index) {
            return false;
        }
        self.insert(index, pos, cull_sq);
        true
    }

    /// Removes an actor; returns whether it was present. Takes effect at the next
    /// [`refresh`](Self::refresh).
    pub fn remove(&mut self, index: u32) -> bool {
        if !self.contains(index) {
            return false;
        }
        self.live[index as usize] = false;
        self.stale = true;
        true
    }

    /// Whether actor `index` is present.
    pub fn contains(&self, index: u32) -> bool {
        self.live.get(index as usize).copied().unwrap_or(false)
    }

    /// Rebuilds the cells if `insert`, `update` or `remove` ran since the last build. Queries
    /// panic until then, so a stale grid is never read.
    pub fn refresh(&mut self) {
        if self.stale {
            self.build();
        }
    }

    /// The cell containing `view` (X/Y clamped into the grid), or `None` if a coordinate is NaN
    /// (no distance to a NaN viewer is below anything).
    pub fn cell_of(&self, view: [f32; 3]) -> Option<CellKey> {
        if view.iter().any(|c| c.is_nan()) {
            return None;
        }
        Some(CellKey {
            x: self.axis_cell(view[0], self.config.origin[0], self.config.cells_x),
            y: self.axis_cell(view[1], self.config.origin[1], self.config.cells_y),
        })
    }

    /// The actors whose home is the cell containing `view` (not every actor relevant there:
    /// [`relevant`](Self::relevant) also visits the neighbouring cells that reach `view`).
    /// Empty if a coordinate of `view` is NaN.
    ///
    /// # Panics
    /// If the grid is stale (see [`refresh`](Self::refresh)).
    pub fn gather(&self, view: [f32; 3]) -> CellView<'_> {
        self.assert_fresh();
        match self.cell_of(view) {
            Some(key) => self.cell(key),
            None => self.entries.view(0..0),
        }
    }

    /// The actors whose home is one cell.
    ///
    /// # Panics
    /// If the grid is stale or `key` is outside it.
    pub fn cell(&self, key: CellKey) -> CellView<'_> {
        self.assert_fresh();
        assert!(key.x < self.config.cells_x && key.y < self.config.cells_y, "cell outside grid");
        let c = (key.y * self.config.cells_x + key.x) as usize;
        self.entries.view(self.cells[c].rows())
    }

    /// The large-radius actors: every query sweeps them whatever the viewer's cell.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn large(&self) -> CellView<'_> {
        self.assert_fresh();
        self.large.view(0..self.large.indices.len())
    }

    /// Rows in all cells plus the large list — one per placed actor: the memory the build wrote,
    /// 20 bytes a row.
    pub fn entry_count(&self) -> usize {
        self.entries.indices.len() + self.large.indices.len()
    }

    /// The most cells a viewer looks past its own along either axis: the largest reach of any
    /// placed actor's widened cull square from its home cell.
    pub fn span(&self) -> u32 {
        self.span
    }

    /// Rows [`relevant`](Self::relevant) would sweep for `viewers` (the cells it visits plus the
    /// large list): the broad phase's cost, for measurement.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn swept_rows(&self, viewers: &[[f32; 3]]) -> usize {
        self.assert_fresh();
        let mut rows = 0;
        self.for_each_visited_cell(viewers, |cell| rows += cell.len());
        if viewers.is_empty() {
            rows
        } else {
            rows + self.large.indices.len()
        }
    }

    /// Writes into `out` (cleared first), ascending and without duplicates, every actor relevant
    /// to at least one of `viewers` — a connection and its split-screen children: every cell
    /// within [`span`](Self::span) of a viewer's cell whose actors' reach covers the viewer,
    /// once, and the large list, swept against all viewers.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn relevant(&self, viewers: &[[f32; 3]], out: &mut Vec<u32>) {
        let sweeps = self.relevant_unsorted(viewers, out);
        // Each cell's hits are ascending and an actor is in one cell or the large list, but the
        // runs of different cells interleave.
        if sweeps > 1 {
            out.sort_unstable();
            out.dedup();
        }
    }

    /// [`relevant`](Self::relevant)'s actors in the order the sweeps found them (ascending within
    /// each cell, the cells' runs interleaved): for a caller that orders them its own way (an
    /// actor is in one cell or the large list, and each is swept once, so none repeats). Returns
    /// how many cells (and the large list) were swept.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn relevant_unsorted(&self, viewers: &[[f32; 3]], out: &mut Vec<u32>) -> usize {
        self.assert_fresh();
        out.clear();
        let mut sweeps = 0;
        self.for_each_visited_cell(viewers, |cell| {
            relevant_lanes(cell, viewers, out);
            sweeps += 1;
        });
        if !self.large.indices.is_empty() {
            relevant_lanes(self.large(), viewers, out);
            sweeps += 1;
        }
        sweeps
    }

    /// Calls `f` once for every non-empty cell that some viewer visits: within `span` of the
    /// viewer's cell on both axes, and the viewer within the cell's reach (its largest cull
    /// radius, widened) of the cell's bounding box. Every actor relevant to a viewer is in such a
    /// cell: its square's cells (monotone, clamped) contain the viewer's cell, so the viewer's
    /// cell is within `span` of its home cell; and the viewer's X/Y is within its radius of its
    /// X/Y, which is inside the box.
    fn for_each_visited_cell<'s>(&'s self, viewers: &[[f32; 3]], mut f: impl FnMut(CellView<'s>)) {
        let cx = self.config.cells_x;
        for (i, &view) in viewers.iter().enumerate() {
            let Some(key) = self.cell_of(view) else { continue };
            let (xs, ys) = (self.near(key.x, cx), self.near(key.y, self.config.cells_y));
            for y in ys.clone() {
                for x in xs.clone() {
                    let c = (y * cx + x) as usize;
                    if !self.visits(c, view) {
                        continue;
                    }
                    let earlier = viewers[..i].iter().any(|&w| {
                        self.cell_of(w).is_some_and(|k| {
                            self.near(k.x, cx).contains(&x) && self.near(k.y, self.config.cells_y).contains(&y)
                        }) && self.visits(c, w)
                    });
                    if !earlier {
                        f(self.entries.view(self.cells[c].rows()));
                    }
                }
            }
        }
    }

    /// Cells `k − span ..= k + span` along an axis of `cells`, clamped into the grid.
    fn near(&self, k: u32, cells: u32) -> std::ops::RangeInclusive<u32> {
        k.saturating_sub(self.span)..=k.saturating_add(self.span).min(cells - 1)
    }

    /// Whether cell `c` has rows and `view`'s X/Y is within the cell's widened largest cull
    /// radius of its bounding box (computed in f64; an infinite coordinate is infinitely far).
    fn visits(&self, c: usize, view: [f32; 3]) -> bool {
        let cell = &self.cells[c];
        if cell.start == cell.end {
            return false;
        }
        let [x0, y0, x1, y1] = cell.bbox;
        let gap = |v: f32, lo: f32, hi: f32| {
            let v = f64::from(v);
            (f64::from(lo) - v).max(v - f64::from(hi)).max(0.0)
        };
        let (dx, dy) = (gap(view[0], x0, x1), gap(view[1], y0, y1));
        let r = reach(cell.cull);
        dx * dx + dy * dy <= r * r
    }

    fn assert_fresh(&self) {
        assert!(!self.stale, "SpatialGrid read after insert/update/remove without refresh()");
    }

    /// The column or row of world coordinate `v`, clamped into `0..cells`. Computed in f64 and
    /// monotone in `v` (a product with a positive constant rounds monotonically, as a quotient
    /// does), so a point inside an actor's square maps inside the square's cells; actors and
    /// viewers are placed by this one function. A multiply by the reciprocal, not a divide:
    /// placing mmo's 121 000 due actors on one thread took 1.38–1.43 ms with the divide and
    /// 1.16–1.19 ms with this (probe, AMD EPYC).
    fn axis_cell(&self, v: impl Into<f64>, origin: f32, cells: u32) -> u32 {
        cell_index((v.into() - f64::from(origin)) * self.per_cell, cells)
    }

    /// Where actor `index` lives in the grid. `memo` holds the last cull distance's reach (the
    /// actors of a class share one: a square root once per run of them, not per actor).
    fn place(&self, index: usize, memo: &mut (u32, f64)) -> Placement {
        let (pos, cull_sq) = (self.positions[index], self.cull_sq[index]);
        if !self.live[index] || !pos.iter().all(|c| c.is_finite()) || cull_sq.is_nan() || cull_sq <= 0.0 {
            return Placement::Nowhere;
        }
        if cull_sq.to_bits() != memo.0 {
            *memo = (cull_sq.to_bits(), reach(cull_sq));
        }
        let r = memo.1;
        let (x, y) = (f64::from(pos[0]), f64::from(pos[1]));
        let [ox, oy] = self.config.origin;
        let (cx, cy) = (self.config.cells_x, self.config.cells_y);
        let (hx, hy) = (self.axis_cell(x, ox, cx), self.axis_cell(y, oy, cy));
        let (lx, ly) = (self.axis_cell(x - r, ox, cx), self.axis_cell(y - r, oy, cy));
        let (ux, uy) = (self.axis_cell(x + r, ox, cx), self.axis_cell(y + r, oy, cy));
        let covered = u64::from(ux - lx + 1) * u64::from(uy - ly + 1);
        if covered > u64::from(self.config.max_cells_per_actor) {
            Placement::Large
        } else {
            let span = (hx - lx).max(ux - hx).max(hy - ly).max(uy - hy);
            Placement::Home { cell: hy * cx + hx, span }
        }
    }

    /// Counting sort of actors by home cell: place (parallel), count (with each cell's largest
    /// cull distance and bounding box), prefix-sum, scatter the indices in index order so a
    /// cell's rows stay ascending, then fill the rows' columns in row order.
    fn build(&mut self) {
        let n = self.live.len();
        let mut placements = std::mem::take(&mut self.placements);
        placements.clear();
        placements.resize(n, Placement::Nowhere);
        placements.par_chunks_mut(PLACE_RUN).enumerate().for_each(|(k, out)| {
            // (A NaN's bits: no cull distance placed yet.)
            let mut memo = (f32::NAN.to_bits(), 0.0);
            for (j, p) in out.iter_mut().enumerate() {
                *p = self.place(k * PLACE_RUN + j, &mut memo);
            }
        });
        let cells = (self.config.cells_x * self.config.cells_y) as usize;

        self.cells.clear();
        self.cells.resize(cells, Cell::EMPTY);
        self.large.clear();
        self.span = 0;
        for (i, p) in placements.iter().enumerate() {
            match *p {
                Placement::Home { cell, span } => {
                    let c = &mut self.cells[cell as usize];
                    let (pos, cull_sq) = (self.positions[i], self.cull_sq[i]);
                    c.end += 1;
                    self.span = self.span.max(span);
                    c.cull = c.cull.max(cull_sq);
                    let b = &mut c.bbox;
                    *b = [b[0].min(pos[0]), b[1].min(pos[1]), b[2].max(pos[0]), b[3].max(pos[1])];
                }
                Placement::Large => self.large.push(i as u32, self.positions[i], self.cull_sq[i]),
                Placement::Nowhere => {}
            }
        }
        // Each cell's first row; `end` becomes the scatter's cursor (and is the cell's end after).
        let mut rows = 0;
        for c in &mut self.cells {
            let count = c.end;
            (c.start, c.end) = (rows, rows);
            rows += count;
        }

        // The scatter writes the indices alone, in actor order so a cell's rows stay ascending;
        // the other columns are filled after it in row order: one random write an actor, not
        // five. Every row is overwritten, so growing need not clear first.
        self.entries.resize(rows as usize);
        for (i, p) in placements.iter().enumerate() {
            if let Placement::Home { cell, .. } = *p {
                let c = &mut self.cells[cell as usize];
                self.entries.indices[c.end as usize] = i as u32;
                c.end += 1;
            }
        }
        self.entries.fill(&self.positions, &self.cull_sq);
        self.placements = placements;
        self.stale = false;
    }
}

/// Actors placed per job of a build (their reach memoised along the run).
const PLACE_RUN: usize = 1024;

/// The bounding box of no rows: any `min`/`max` with a finite point replaces it.
const EMPTY_BOX: [f32; 4] = [f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY];

/// `floor(t)` clamped into `0..cells` (NaN: 0). The saturating cast does it without a call to a
/// software `floor` (the x86-64 baseline has no rounding instruction; that call and its clamp
/// were about a fifth of the grid's build): a negative `t` or NaN casts to 0, which is the clamp's answer, and from 0
/// up truncation is the floor.
pub(super) fn cell_index(t: f64, cells: u32) -> u32 {
    (t as u32).min(cells - 1)
}
