//! Spatial relevancy: the broad phase and the exact distance test of UE's last relevancy rule,
//! `dist²(view, actor) < NetCullDistanceSquared` (strictly less; UE's default 15000² =
//! 225,000,000), against every viewer of a connection (split-screen children count).
//!
//! The module owns a [`SpatialGrid`] built from the caller's columns (actor `i`: position,
//! cull distance squared, liveness) and the SIMD sweep that runs the exact test over a gathered
//! cell. It knows nothing of classes, owners or always-relevant flags: the actor level decides
//! those first and asks this module only about distance. Actors are the caller's dense `u32`
//! indices (e.g. rows of its actor table); answers are those indices.
//!
//! ```text
//!  rebuild(positions, cull_sq, live)                       relevant(viewers of a connection)
//!
//!   world X/Y, cells of cell_size (replication           for each distinct cell holding a viewer,
//!   graph's basic grid: 10000)                          and once for the large-radius list:
//!   ┌────┬────┬────┬────┐
//!   │    │ ┌──┼──┐ │    │  actor A at *, cull square       cell c:  indices [a  b  d  …]
//!   ├────┼─┼──┼──┼─┼────┤  of half-width sqrt(cull_sq)             xs      [.. .. .. …]  contiguous
//!   │    │ │  *  │ │ V  │  → written into the 4 cells              ys      [.. .. .. …]  SoA rows
//!   ├────┼─┼──┼──┼─┼────┤    it overlaps                           zs      [.. .. .. …]  starts[c]..
//!   │    │ └──┼──┘ │    │                                          cull_sq [.. .. .. …]  starts[c+1]
//!   └────┴────┴────┴────┘  viewer V gathers ONE cell:                 │  f32x8, 8 lanes at a time
//!                          its own                                    ▼
//!                                                       hit = OR over viewers (d² < cull_sq)
//!                                                       → push indices of set bits → sort, dedup
//! ```
//!
//! # Invariants
//! - An actor can be relevant to a viewer only if it is in the viewer's cell or in the
//!   large-radius list ([`SpatialGrid::large`]): the cull square is widened by a relative 1e-6
//!   before rasterising, more than the rounding of the f32 test, and cell coordinates are
//!   computed in f64 by one monotone function for squares and viewers alike. So grid + sweep
//!   returns exactly the brute-force answer (the tests check this on random worlds).
//! - Within a cell, rows are ascending by actor index; an actor appears at most once per cell.
//! - After `insert`/`update`/`remove` the grid is stale until [`SpatialGrid::refresh`]; reads
//!   of a stale grid panic rather than answer from old cells.
//!
//! # Hostile numbers
//! - X/Y outside the grid's bounds (including ±inf and 1e30) are clamped to the edge cells, as
//!   the replication graph clamps to its bounds. Clamping is monotone, so it never loses a
//!   relevant pair; the edge cells just hold more.
//! - An actor with a NaN or infinite coordinate, or a cull distance not above 0 (or NaN), is in
//!   no cell: its `d²` is NaN or infinite for every viewer, or the bound is ≤ 0, so the exact
//!   test can never pass. A viewer with a NaN coordinate gathers nothing, for the same reason.
//! - An actor covering more than [`GridConfig::max_cells_per_actor`] cells (default
//!   [`DEFAULT_MAX_CELLS_PER_ACTOR`]), e.g. a near-always-relevant cull distance of 1e12 or
//!   `inf`, goes into the large-radius list once instead of into millions of cells; every query
//!   sweeps that list. So a build writes at most `live × max_cells_per_actor` rows, and the cell
//!   table is bounded by [`MAX_GRID_CELLS`].
//!
//! # Why these choices
//! - **One SoA for all cells, per-cell ranges rebuilt each frame** (a counting sort: place,
//!   count, prefix-sum, scatter), rather than a `Vec` per column per cell: dynamic actors are
//!   re-placed every frame anyway, so the frame path is a full rebuild; a counting sort writes
//!   every row once into memory that is reused from frame to frame, with no per-cell
//!   allocation or `Vec` headers (five per cell, 120 bytes × 65,536 cells for the default grid),
//!   and a gathered cell is five contiguous slices ready for the sweep. `insert`/`update`/
//!   `remove` are kept for sparse edits and tests; they mark the grid stale and the next
//!   `refresh` rebuilds — fine while rebuilds happen every frame anyway.
//! - **The build runs in parallel over bands of cell rows** (rayon, disjoint `split_at_mut`
//!   shards, no `unsafe`): each band scans the placements in index order and writes only its
//!   own cells, so rows stay ascending by index without a merge.
//! - **A bounded dense grid** rather than a hash map of cells: the cell of a point is
//!   arithmetic, the counting sort needs dense cell numbers, and the bound plus clamping is
//!   what keeps 1e30 from allocating anything.
//! - **Insert into every overlapped cell, gather one cell** (the replication graph's choice):
//!   a viewer's query costs one cell's rows, whatever the world's size; the build pays about
//!   `(1 + 2·r / cell_size)²` rows per actor, so the cell size trades build cost against
//!   sweep cost.
//! - **f32x8 from `wide`, no FMA**: portable, no `unsafe`, and rounding identical to the scalar
//!   twin so they agree at the exact boundary.

mod grid;
mod sweep;
#[cfg(test)]
mod tests;

pub use grid::{
    CellKey, GridConfig, GridConfigError, SpatialGrid, DEFAULT_CELLS_PER_AXIS, DEFAULT_CELL_SIZE,
    DEFAULT_MAX_CELLS_PER_ACTOR, MAX_GRID_CELLS, UE_DEFAULT_CULL_DISTANCE_SQUARED,
};
pub use sweep::{relevant_lanes, relevant_lanes_scalar};

/// The actors of a gathered cell as parallel columns: row `i` is actor `indices[i]` at
/// (`xs[i]`, `ys[i]`, `zs[i]`) with cull distance squared `cull_sq[i]`.
#[derive(Clone, Copy, Debug)]
pub struct CellView<'a> {
    indices: &'a [u32],
    xs: &'a [f32],
    ys: &'a [f32],
    zs: &'a [f32],
    cull_sq: &'a [f32],
}

impl<'a> CellView<'a> {
    /// Columns of equal length as a view (for sweeping columns the caller owns).
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn new(indices: &'a [u32], xs: &'a [f32], ys: &'a [f32], zs: &'a [f32], cull_sq: &'a [f32]) -> CellView<'a> {
        let n = indices.len();
        assert!(xs.len() == n && ys.len() == n && zs.len() == n && cull_sq.len() == n, "cell columns differ in length");
        CellView { indices, xs, ys, zs, cull_sq }
    }

    /// Rows in the cell.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether the cell has no rows.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The actor indices, one per row.
    pub fn indices(&self) -> &'a [u32] {
        self.indices
    }
}
