//! The shape of a [`SpatialGrid`](super::SpatialGrid) — cell size, cells per axis, origin, the cap on
//! the cells one actor may cover — with its defaults (the replication graph's) and its checks.

use std::fmt;

/// The replication graph's basic grid cell size, in world units.
pub const DEFAULT_CELL_SIZE: f32 = 10_000.0;
/// Cells per axis of [`GridConfig::default`]: 256 × 10000 = 2.56 million units a side, centred
/// on the origin.
pub const DEFAULT_CELLS_PER_AXIS: u32 = 256;
/// The most cells a grid may have (`cells_x × cells_y`): bounds the per-frame cell table.
pub const MAX_GRID_CELLS: u64 = 1 << 22;
/// Default cap on the cells one actor's cull square may cover; an actor whose square covers more
/// goes to the large-radius list instead.
pub const DEFAULT_MAX_CELLS_PER_ACTOR: u32 = 64;
/// UE's default `NetCullDistanceSquared`: 15000².
pub const UE_DEFAULT_CULL_DISTANCE_SQUARED: f32 = 225_000_000.0;

/// The shape of a [`SpatialGrid`](super::SpatialGrid).
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
    /// which every query sweeps; at least 1. This bounds how many cells around its own a
    /// viewer visits.
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

    /// Refuses a shape no grid can have: a cell size that is not finite and positive, no cells,
    /// more than [`MAX_GRID_CELLS`], a non-finite origin, or a cap of no cell per actor.
    pub(super) fn validate(&self) -> Result<(), GridConfigError> {
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
