//! The exact test: which actors of a gathered cell are within their cull distance of any viewer.
//!
//! ```text
//! for each chunk of 8 lanes (the tail padded with never-relevant lanes):
//!     hit = 0
//!     for each viewer v:  d² = (x−vx)² + (y−vy)² + (z−vz)²      // same operation order as scalar
//!                         hit |= d² < cull_sq                     // IEEE: NaN compares false
//!     push indices[lane] for each set bit of movemask(hit), ascending
//! ```
//!
//! [`relevant_lanes`] is the `wide::f32x8` sweep, [`relevant_lanes_scalar`] its one-line twin;
//! a property test holds them equal bit for bit. Neither fuses multiply and add, so both round
//! the same way and agree even at the exact boundary.

use super::CellView;
use wide::f32x8;

/// Lanes per vector.
const LANES: usize = 8;

/// Appends to `out`, in lane order, the index of every actor of `cell` that is relevant to at
/// least one of `viewers`: `dx² + dy² + dz² < cull_sq`, strictly. A NaN anywhere in the sum
/// (a NaN coordinate, `inf − inf`) or a NaN cull distance makes a lane not relevant; so does an
/// equal distance. No viewers: nothing is relevant.
pub fn relevant_lanes(cell: CellView<'_>, viewers: &[[f32; 3]], out: &mut Vec<u32>) {
    if viewers.is_empty() {
        return;
    }
    let full = cell.len() / LANES * LANES;
    for base in (0..full).step_by(LANES) {
        let lanes = base..base + LANES;
        let hit = chunk_hits(
            load(&cell.xs[lanes.clone()]),
            load(&cell.ys[lanes.clone()]),
            load(&cell.zs[lanes.clone()]),
            load(&cell.cull_sq[lanes.clone()]),
            viewers,
        );
        push_hits(hit, &cell.indices[lanes], out);
    }
    let tail = full..cell.len();
    if !tail.is_empty() {
        // Padding lanes carry a NaN cull distance, which no distance is below.
        let pad = |column: &[f32], fill: f32| {
            let mut v = [fill; LANES];
            v[..column.len()].copy_from_slice(column);
            f32x8::from(v)
        };
        let hit = chunk_hits(
            pad(&cell.xs[tail.clone()], 0.0),
            pad(&cell.ys[tail.clone()], 0.0),
            pad(&cell.zs[tail.clone()], 0.0),
            pad(&cell.cull_sq[tail.clone()], f32::NAN),
            viewers,
        );
        push_hits(hit, &cell.indices[tail], out);
    }
}

/// The scalar twin of [`relevant_lanes`]: the same test, one lane at a time.
pub fn relevant_lanes_scalar(cell: CellView<'_>, viewers: &[[f32; 3]], out: &mut Vec<u32>) {
    for lane in 0..cell.len() {
        let (x, y, z, cull_sq) = (cell.xs[lane], cell.ys[lane], cell.zs[lane], cell.cull_sq[lane]);
        let relevant = viewers.iter().any(|v| {
            let (dx, dy, dz) = (x - v[0], y - v[1], z - v[2]);
            dx * dx + dy * dy + dz * dz < cull_sq
        });
        if relevant {
            out.push(cell.indices[lane]);
        }
    }
}

#[inline(always)]
fn load(column: &[f32]) -> f32x8 {
    let mut v = [0.0; LANES];
    v.copy_from_slice(column);
    f32x8::from(v)
}

/// Bit `i` set when lane `i` is within its cull distance of some viewer.
#[inline(always)]
fn chunk_hits(x: f32x8, y: f32x8, z: f32x8, cull_sq: f32x8, viewers: &[[f32; 3]]) -> u32 {
    let mut hit = f32x8::ZERO;
    for v in viewers {
        let dx = x - f32x8::splat(v[0]);
        let dy = y - f32x8::splat(v[1]);
        let dz = z - f32x8::splat(v[2]);
        hit |= (dx * dx + dy * dy + dz * dz).simd_lt(cull_sq);
    }
    hit.to_bitmask()
}

#[inline(always)]
fn push_hits(mut hit: u32, indices: &[u32], out: &mut Vec<u32>) {
    while hit != 0 {
        out.push(indices[hit.trailing_zeros() as usize]);
        hit &= hit - 1;
    }
}
