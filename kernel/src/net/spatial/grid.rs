//! The broad phase: a bounded uniform grid whose cells hold, contiguously, every actor whose cull
//! square overlaps them. See the [module docs](super) for the layout and the reasons.

use super::sweep::relevant_lanes;
use super::CellView;
use rayon::prelude::*;
use std::fmt;

/// The replication graph's basic grid cell size, in world units.
pub const DEFAULT_CELL_SIZE: f32 = 10_000.0;
/// Cells per axis of [`GridConfig::default`]: 256 × 10000 = 2.56 million units a side, centred
/// on the origin.
pub const DEFAULT_CELLS_PER_AXIS: u32 = 256;
/// The most cells a grid may have (`cells_x × cells_y`): bounds the per-frame cell table.
pub const MAX_GRID_CELLS: u64 = 1 << 22;
/// Default cap on the cells one actor is written into; an actor whose cull square covers more
/// goes to the large-radius list instead.
pub const DEFAULT_MAX_CELLS_PER_ACTOR: u32 = 64;
/// UE's default `NetCullDistanceSquared`: 15000².
pub const UE_DEFAULT_CULL_DISTANCE_SQUARED: f32 = 225_000_000.0;

/// Cell rows per parallel band of a build: a band's cells × 5 columns of write streams stay in
/// L2 for grids up to ~500 cells wide. Measured on the loaded 2-core box: 1, 4, 16 and 64 rows
/// all within noise of the serial build; every band rescans all placements, which is what
/// bucketing placements by band first would remove.
const BAND_ROWS: usize = 4;

/// Relative widening of an actor's cull square before it is rasterised into cells. The exact
/// f32 test can pass for a true distance a few ulps above `sqrt(cull_sq)` (the squares round
/// down); widening by far more than that keeps the broad phase a superset of the exact test.
const SQUARE_PAD: f64 = 1e-6;

/// The shape of a [`SpatialGrid`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridConfig {
    /// Side of a square cell, in world units; finite and positive.
    pub cell_size: f32,
    /// World X/Y of the corner of cell (0, 0); finite.
    pub origin: [f32; 2],
    /// Cells along X; at least 1.
    pub cells_x: u32,
    /// Cells along Y; at least 1; `cells_x × cells_y ≤` [`MAX_GRID_CELLS`].
    pub cells_y: u32,
    /// An actor whose cull square covers more cells than this goes to the large-radius list,
    /// which every query sweeps; at least 1.
    pub max_cells_per_actor: u32,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig::centred(DEFAULT_CELL_SIZE, DEFAULT_CELLS_PER_AXIS)
    }
}

impl GridConfig {
    /// A square grid of `cells_per_axis²` cells of `cell_size`, centred on the world origin.
    pub fn centred(cell_size: f32, cells_per_axis: u32) -> GridConfig {
        let half = -(cells_per_axis as f32 / 2.0) * cell_size;
        GridConfig {
            cell_size,
            origin: [half, half],
            cells_x: cells_per_axis,
            cells_y: cells_per_axis,
            max_cells_per_actor: DEFAULT_MAX_CELLS_PER_ACTOR,
        }
    }

    fn validate(&self) -> Result<(), GridConfigError> {
        if !(self.cell_size.is_finite() && self.cell_size > 0.0) {
            return Err(GridConfigError::CellSize(self.cell_size));
        }
        if !self.origin.iter().all(|o| o.is_finite()) {
            return Err(GridConfigError::Origin(self.origin));
        }
        let cells = u64::from(self.cells_x) * u64::from(self.cells_y);
        if cells == 0 || cells > MAX_GRID_CELLS {
            return Err(GridConfigError::Cells { x: self.cells_x, y: self.cells_y });
        }
        if self.max_cells_per_actor == 0 {
            return Err(GridConfigError::MaxCellsPerActor);
        }
        Ok(())
    }
}

/// Why a [`GridConfig`] was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridConfigError {
    /// The cell size is not finite and positive.
    CellSize(f32),
    /// The origin is not finite.
    Origin([f32; 2]),
    /// No cells, or more than [`MAX_GRID_CELLS`].
    Cells {
        /// Cells along X.
        x: u32,
        /// Cells along Y.
        y: u32,
    },
    /// `max_cells_per_actor` is 0.
    MaxCellsPerActor,
}

impl fmt::Display for GridConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridConfigError::CellSize(s) => write!(f, "cell size {s} is not finite and positive"),
            GridConfigError::Origin(o) => write!(f, "grid origin {o:?} is not finite"),
            GridConfigError::Cells { x, y } => {
                write!(f, "{x} × {y} cells: need between 1 and {MAX_GRID_CELLS}")
            }
            GridConfigError::MaxCellsPerActor => write!(f, "max_cells_per_actor must be at least 1"),
        }
    }
}

impl std::error::Error for GridConfigError {}

/// A cell's column and row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellKey {
    /// Column, `0..cells_x`.
    pub x: u32,
    /// Row, `0..cells_y`.
    pub y: u32,
}

/// The cells an actor's cull square covers, inclusive on both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CellRect {
    lo: CellKey,
    hi: CellKey,
}

/// Where one actor goes in a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Dead, or never relevant (non-finite position, cull distance not above 0 or NaN).
    Nowhere,
    /// Covers more than `max_cells_per_actor` cells.
    Large,
    Cells(CellRect),
}

/// Parallel columns of actor entries: one row per (actor, cell) pair.
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

    fn as_mut(&mut self) -> EntriesMut<'_> {
        EntriesMut {
            indices: &mut self.indices,
            xs: &mut self.xs,
            ys: &mut self.ys,
            zs: &mut self.zs,
            cull_sq: &mut self.cull_sq,
        }
    }

    fn push(&mut self, index: u32, pos: [f32; 3], cull_sq: f32) {
        self.indices.push(index);
        self.xs.push(pos[0]);
        self.ys.push(pos[1]);
        self.zs.push(pos[2]);
        self.cull_sq.push(cull_sq);
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

/// A band of rows of [`Entries`], borrowed mutably for one parallel task.
struct EntriesMut<'a> {
    indices: &'a mut [u32],
    xs: &'a mut [f32],
    ys: &'a mut [f32],
    zs: &'a mut [f32],
    cull_sq: &'a mut [f32],
}

impl<'a> EntriesMut<'a> {
    fn split_at(self, mid: usize) -> (EntriesMut<'a>, EntriesMut<'a>) {
        let (i0, i1) = self.indices.split_at_mut(mid);
        let (x0, x1) = self.xs.split_at_mut(mid);
        let (y0, y1) = self.ys.split_at_mut(mid);
        let (z0, z1) = self.zs.split_at_mut(mid);
        let (c0, c1) = self.cull_sq.split_at_mut(mid);
        let head = EntriesMut { indices: i0, xs: x0, ys: y0, zs: z0, cull_sq: c0 };
        (head, EntriesMut { indices: i1, xs: x1, ys: y1, zs: z1, cull_sq: c1 })
    }

    fn set(&mut self, row: usize, index: u32, pos: [f32; 3], cull_sq: f32) {
        self.indices[row] = index;
        self.xs[row] = pos[0];
        self.ys[row] = pos[1];
        self.zs[row] = pos[2];
        self.cull_sq[row] = cull_sq;
    }
}

/// A uniform 2D grid over actor positions, rebuilt from the caller's columns each frame.
///
/// Invariants after a build (and until the next `insert`/`update`/`remove`):
/// - cell `c`'s actors are rows `starts[c]..starts[c + 1]` of `entries`, ascending by index;
/// - every live actor with a finite position and a cull distance above 0 is either in every cell
///   its (slightly widened, clamped) cull square overlaps, or in `large`, never both;
/// - every other actor is in no cell: the exact test could not pass for it.
#[derive(Clone, Debug)]
pub struct SpatialGrid {
    config: GridConfig,
    positions: Vec<[f32; 3]>,
    cull_sq: Vec<f32>,
    live: Vec<bool>,
    /// Scratch: each actor's placement in the last build (kept to reuse the allocation).
    placements: Vec<Placement>,
    starts: Vec<usize>,
    cursor: Vec<usize>,
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
            positions: Vec::new(),
            cull_sq: Vec::new(),
            live: Vec::new(),
            placements: Vec::new(),
            starts: vec![0; cells + 1],
            cursor: Vec::new(),
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

    /// The actors written into the cell containing `view`: with [`large`](Self::large), every
    /// actor that can be relevant to a viewer there. Empty if a coordinate of `view` is NaN.
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

    /// The actors of one cell.
    ///
    /// # Panics
    /// If the grid is stale or `key` is outside it.
    pub fn cell(&self, key: CellKey) -> CellView<'_> {
        self.assert_fresh();
        assert!(key.x < self.config.cells_x && key.y < self.config.cells_y, "cell outside grid");
        let c = (key.y * self.config.cells_x + key.x) as usize;
        self.entries.view(self.starts[c]..self.starts[c + 1])
    }

    /// The large-radius actors: every query sweeps them whatever the viewer's cell.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn large(&self) -> CellView<'_> {
        self.assert_fresh();
        self.large.view(0..self.large.indices.len())
    }

    /// Rows in all cells (an actor counts once per cell it is in) plus the large list: the
    /// memory the build wrote, 20 bytes a row.
    pub fn entry_count(&self) -> usize {
        self.entries.indices.len() + self.large.indices.len()
    }

    /// Writes into `out` (cleared first), ascending and without duplicates, every actor relevant
    /// to at least one of `viewers` — a connection and its split-screen children: the cells
    /// containing the viewers and the large list, swept against all viewers.
    ///
    /// # Panics
    /// If the grid is stale.
    pub fn relevant(&self, viewers: &[[f32; 3]], out: &mut Vec<u32>) {
        self.assert_fresh();
        out.clear();
        let mut sweeps = 0;
        for (i, &view) in viewers.iter().enumerate() {
            let Some(key) = self.cell_of(view) else { continue };
            if viewers[..i].iter().any(|&v| self.cell_of(v) == Some(key)) {
                continue;
            }
            relevant_lanes(self.cell(key), viewers, out);
            sweeps += 1;
        }
        if !self.large.indices.is_empty() {
            relevant_lanes(self.large(), viewers, out);
            sweeps += 1;
        }
        if sweeps > 1 {
            out.sort_unstable();
            out.dedup();
        }
    }

    fn assert_fresh(&self) {
        assert!(!self.stale, "SpatialGrid read after insert/update/remove without refresh()");
    }

    /// The column or row of world coordinate `v`, clamped into `0..cells`. Computed in f64 and
    /// monotone in `v`, so a point inside an actor's square maps inside the square's cells.
    fn axis_cell(&self, v: impl Into<f64>, origin: f32, cells: u32) -> u32 {
        let t = ((v.into() - f64::from(origin)) / f64::from(self.config.cell_size)).floor();
        t.clamp(0.0, f64::from(cells - 1)) as u32
    }

    fn place(&self, index: usize) -> Placement {
        let (pos, cull_sq) = (self.positions[index], self.cull_sq[index]);
        if !self.live[index] || !pos.iter().all(|c| c.is_finite()) || cull_sq.is_nan() || cull_sq <= 0.0 {
            return Placement::Nowhere;
        }
        let r = f64::from(cull_sq).sqrt() * (1.0 + SQUARE_PAD);
        let (x, y) = (f64::from(pos[0]), f64::from(pos[1]));
        let [ox, oy] = self.config.origin;
        let (cx, cy) = (self.config.cells_x, self.config.cells_y);
        let rect = CellRect {
            lo: CellKey { x: self.axis_cell(x - r, ox, cx), y: self.axis_cell(y - r, oy, cy) },
            hi: CellKey { x: self.axis_cell(x + r, ox, cx), y: self.axis_cell(y + r, oy, cy) },
        };
        let covered = u64::from(rect.hi.x - rect.lo.x + 1) * u64::from(rect.hi.y - rect.lo.y + 1);
        if covered > u64::from(self.config.max_cells_per_actor) {
            Placement::Large
        } else {
            Placement::Cells(rect)
        }
    }

    /// Counting sort of (actor, cell) rows by cell, in parallel over bands of cell rows: each
    /// band scans every placement in index order (so a cell's rows stay ascending) and counts,
    /// then writes, only its own cells — few enough write streams to stay in cache.
    fn build(&mut self) {
        let n = self.live.len();
        let mut placements = std::mem::take(&mut self.placements);
        (0..n).into_par_iter().map(|i| self.place(i)).collect_into_vec(&mut placements);
        let cx = self.config.cells_x as usize;
        let cy = self.config.cells_y as usize;
        let cells = cx * cy;
        let band_rows = BAND_ROWS;
        let band_cells = band_rows * cx;

        self.starts.clear();
        self.starts.resize(cells + 1, 0);
        self.starts[1..].par_chunks_mut(band_cells).enumerate().for_each(|(band, counts)| {
            let y0 = band * band_rows;
            for_each_cell_in_band(&placements, y0, counts.len() / cx, |_, y, x| {
                counts[(y - y0) * cx + x] += 1;
            });
        });
        for c in 0..cells {
            self.starts[c + 1] += self.starts[c];
        }

        self.large.clear();
        for (i, p) in placements.iter().enumerate() {
            if *p == Placement::Large {
                self.large.push(i as u32, self.positions[i], self.cull_sq[i]);
            }
        }

        // Every row below is overwritten by the scatter, so growing need not clear first.
        self.entries.resize(self.starts[cells]);
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.starts[..cells]);
        let mut bands = Vec::with_capacity(cy.div_ceil(band_rows));
        let mut rest = self.entries.as_mut();
        let mut base = 0;
        for (band, cursor) in self.cursor.chunks_mut(band_cells).enumerate() {
            let end = self.starts[band * band_cells + cursor.len()];
            let (rows, tail) = rest.split_at(end - base);
            bands.push((band * band_rows, base, cursor, rows));
            rest = tail;
            base = end;
        }
        let (positions, cull_sq) = (&self.positions, &self.cull_sq);
        bands.into_par_iter().for_each(|(y0, base, cursor, mut rows)| {
            for_each_cell_in_band(&placements, y0, cursor.len() / cx, |i, y, x| {
                let row = &mut cursor[(y - y0) * cx + x];
                rows.set(*row - base, i as u32, positions[i], cull_sq[i]);
                *row += 1;
            });
        });
        self.placements = placements;
        self.stale = false;
    }
}

/// Calls `f(actor, y, x)` for every cell in rows `y0..y0 + rows` of every placed actor, actors
/// ascending.
#[inline(always)]
fn for_each_cell_in_band(placements: &[Placement], y0: usize, rows: usize, mut f: impl FnMut(usize, usize, usize)) {
    let y1 = y0 + rows;
    for (i, p) in placements.iter().enumerate() {
        let Placement::Cells(r) = *p else { continue };
        let (lo, hi) = ((r.lo.y as usize).max(y0), (r.hi.y as usize + 1).min(y1));
        for y in lo..hi {
            for x in r.lo.x as usize..=r.hi.x as usize {
                f(i, y, x);
            }
        }
    }
}
