//! The SIMD sweep against its scalar twin, and grid + sweep against a brute-force scan.

use super::grid::cell_index;
use super::*;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// UE's rule, one actor and one viewer at a time: the oracle both paths are held to.
fn brute_force(positions: &[[f32; 3]], cull_sq: &[f32], live: &[bool], viewers: &[[f32; 3]]) -> Vec<u32> {
    (0..positions.len())
        .filter(|&i| {
            let p = positions[i];
            live[i]
                && viewers.iter().any(|v| {
                    let (dx, dy, dz) = (p[0] - v[0], p[1] - v[1], p[2] - v[2]);
                    dx * dx + dy * dy + dz * dz < cull_sq[i]
                })
        })
        .map(|i| i as u32)
        .collect()
}

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig { cases, rng_seed: RngSeed::Fixed(seed), ..ProptestConfig::default() }
}

/// A coordinate: mostly ordinary, sometimes hostile.
fn coordinate() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -40_000.0f32..40_000.0,
        1 => (-8i32..8).prop_map(|v| v as f32),
        1 => prop::sample::select(vec![
            0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, f32::MAX, f32::MIN,
        ]),
    ]
}

fn cull() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => 0.0f32..3e9,
        1 => prop::sample::select(vec![
            0.0, -1.0, f32::NAN, f32::INFINITY, 1e12, UE_DEFAULT_CULL_DISTANCE_SQUARED, 25.0,
        ]),
    ]
}

/// The grid's cell of a coordinate is `floor` clamped into the grid, for every value a position
/// may hold (the cast that replaced the `floor` call must agree with it everywhere).
#[test]
fn cell_index_is_the_clamped_floor() {
    let floor_clamp = |t: f64, cells: u32| t.floor().clamp(0.0, f64::from(cells - 1)) as u32;
    let mut values = vec![-1e300, -2.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.999, 1.0, 7.5, 63.99, 64.0, 65.5, 1e300];
    values.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, -f64::MIN_POSITIVE]);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    values.extend((0..10_000).map(|_| rng.random_range(-200.0..200.0)));
    for cells in [1, 2, 64, 1000] {
        for &t in &values {
            assert_eq!(cell_index(t, cells), floor_clamp(t, cells), "t = {t}, cells = {cells}");
        }
    }
}

proptest! {
    #![proptest_config(config(1024, 0x5a7_1a1))]

    /// Lengths around multiples of 8, hostile values, and lanes set exactly on the boundary.
    #[test]
    fn sweep_agrees_with_scalar(
        lanes in prop::collection::vec(([coordinate(), coordinate(), coordinate()], cull()), 0..70),
        viewers in prop::collection::vec([coordinate(), coordinate(), coordinate()], 0..4),
        on_boundary in prop::collection::vec(any::<bool>(), 70),
        below_boundary in prop::collection::vec(any::<bool>(), 70),
    ) {
        let indices: Vec<u32> = (0..lanes.len() as u32).map(|i| i * 3 + 1).collect();
        let xs: Vec<f32> = lanes.iter().map(|l| l.0[0]).collect();
        let ys: Vec<f32> = lanes.iter().map(|l| l.0[1]).collect();
        let zs: Vec<f32> = lanes.iter().map(|l| l.0[2]).collect();
        let mut cull_sq: Vec<f32> = lanes.iter().map(|l| l.1).collect();
        if let Some(v) = viewers.first() {
            for i in 0..lanes.len() {
                if on_boundary[i] {
                    let (dx, dy, dz) = (xs[i] - v[0], ys[i] - v[1], zs[i] - v[2]);
                    let d2 = dx * dx + dy * dy + dz * dz;
                    cull_sq[i] = if below_boundary[i] { d2.next_up() } else { d2 };
                }
            }
        }
        let cell = CellView::new(&indices, &xs, &ys, &zs, &cull_sq);
        let (mut simd, mut scalar) = (vec![7], vec![7]);
        relevant_lanes(cell, &viewers, &mut simd);
        relevant_lanes_scalar(cell, &viewers, &mut scalar);
        prop_assert_eq!(&simd, &scalar);
        let positions: Vec<[f32; 3]> = lanes.iter().map(|l| l.0).collect();
        let expected: Vec<u32> = brute_force(&positions, &cull_sq, &vec![true; lanes.len()], &viewers)
            .into_iter()
            .map(|i| indices[i as usize])
            .collect();
        prop_assert_eq!(&scalar[1..], &expected[..]);
    }
}

#[test]
fn exact_cull_distance_is_not_relevant() {
    // d² = 3² + 4² + 12² = 169 exactly.
    let viewer = [[1.0, 2.0, 3.0]];
    let (xs, ys, zs) = ([4.0; 9], [6.0; 9], [15.0; 9]);
    let mut cull_sq = [169.0f32; 9];
    cull_sq[8] = 169.0f32.next_up();
    let indices: Vec<u32> = (0..9).collect();
    for sweep in [relevant_lanes, relevant_lanes_scalar] {
        let mut out = Vec::new();
        sweep(CellView::new(&indices, &xs, &ys, &zs, &cull_sq), &viewer, &mut out);
        assert_eq!(out, [8], "equal distance is out, one ulp more cull is in");
    }

    let mut grid = SpatialGrid::new(GridConfig::default()).unwrap();
    grid.rebuild(&[[4.0, 6.0, 15.0], [4.0, 6.0, 15.0]], &[169.0, 169.0f32.next_up()], |_| true);
    let mut out = Vec::new();
    grid.relevant(&viewer, &mut out);
    assert_eq!(out, [1]);
}

/// One random world of `n` actors, checked against brute force: actors spread over (and
/// beyond) the grid, viewers anywhere, some exactly on cell boundaries, actors whose square
/// exactly touches a cell edge; each `run` actors in a row share a cull distance (as a class's
/// actors do: the build memoises the last one's reach).
fn check_world(cfg: GridConfig, seed: u64, n: usize, run: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cs = cfg.cell_size;
    let span = cs * cfg.cells_x.max(cfg.cells_y) as f32;
    let (ox, oy) = (cfg.origin[0], cfg.origin[1]);
    let mut positions = Vec::with_capacity(n);
    let mut cull_sq = Vec::with_capacity(n);
    let mut r = 0.0f32;
    for i in 0..n {
        if i % run == 0 {
            r = match rng.random_range(0..10) {
                0 => rng.random_range(0..4) as f32 * cs, // square edge on a cell edge
                1 => span * 4.0,                         // large-radius list
                _ => rng.random_range(0.0..cs * 2.5),
            };
        }
        let mut p = [
            rng.random_range(ox - span * 0.2..ox + span * 1.2),
            rng.random_range(oy - span * 0.2..oy + span * 1.2),
            rng.random_range(-cs..cs),
        ];
        if i % 5 == 0 {
            // Square edge exactly on a grid line: x = origin + k·cs + r.
            p[0] = ox + rng.random_range(0..cfg.cells_x) as f32 * cs + r.round();
            p[1] = oy + rng.random_range(0..cfg.cells_y) as f32 * cs - r.round();
            p[2] = 0.0;
        }
        match i % 97 {
            1 => p[0] = f32::NAN,
            2 => p[1] = f32::INFINITY,
            3 => p[0] = 1e30,
            _ => {}
        }
        positions.push(p);
        let c = r.round() * r.round();
        cull_sq.push(match i % 89 {
            1 => f32::NAN,
            2 => 0.0,
            3 => f32::INFINITY,
            _ => c,
        });
    }
    let live: Vec<bool> = (0..n).map(|i| i % 13 != 0).collect();
    let mut grid = SpatialGrid::new(cfg).unwrap();
    grid.rebuild(&positions, &cull_sq, |i| live[i as usize]);

    let mut out = Vec::new();
    for q in 0..300 {
        let viewer = |rng: &mut ChaCha8Rng| -> [f32; 3] {
            if q % 3 == 0 {
                // On a cell corner, or the square-touching actor's exact edge distance away.
                let a = positions[rng.random_range(0..n)];
                let k = rng.random_range(0..=cfg.cells_x) as f32;
                let j = rng.random_range(0..=cfg.cells_y) as f32;
                if q % 2 == 0 {
                    [ox + k * cs, oy + j * cs, 0.0]
                } else {
                    [ox + k * cs, a[1], a[2]]
                }
            } else {
                [
                    rng.random_range(ox - span * 0.2..ox + span * 1.2),
                    rng.random_range(oy - span * 0.2..oy + span * 1.2),
                    rng.random_range(-cs..cs),
                ]
            }
        };
        let count = 1 + q % 3;
        let viewers: Vec<[f32; 3]> = (0..count).map(|_| viewer(&mut rng)).collect();
        grid.relevant(&viewers, &mut out);
        assert_eq!(
            out,
            brute_force(&positions, &cull_sq, &live, &viewers),
            "cell size {cs}, seed {seed}, viewers {viewers:?}"
        );
    }
}

#[test]
fn grid_and_sweep_equal_brute_force() {
    for (seed, cell_size, cells) in
        [(1, 10_000.0, 16), (2, 1_000.0, 40), (3, 2_500.0, 7), (4, 333.0, 100), (5, 64.0, 1)]
    {
        check_world(GridConfig::centred(cell_size, cells), seed, 600, 1);
    }
    let mut off_centre = GridConfig::centred(500.0, 20);
    off_centre.origin = [-1234.5, 777.0];
    off_centre.max_cells_per_actor = 4;
    check_world(off_centre, 6, 600, 1);
}

#[test]
fn grid_and_sweep_equal_brute_force_over_runs_of_one_cull_distance() {
    // Past one placement job (1024 actors), with runs that cross the jobs' edges.
    for (seed, cell_size, cells, run) in [(7, 2_500.0, 7, 7), (8, 1_000.0, 40, 300), (9, 333.0, 100, 1)] {
        check_world(GridConfig::centred(cell_size, cells), seed, 2_600, run);
    }
}

#[test]
fn an_actor_is_in_its_home_cell_only_and_found_from_the_cells_its_square_overlaps() {
    let cfg = GridConfig { origin: [0.0, 0.0], ..GridConfig::centred(100.0, 10) };
    let mut grid = SpatialGrid::new(cfg).unwrap();
    // Square [200 − 49, 200 + 49] on both axes: cells 1..=2 each way; home cell (2, 2).
    grid.rebuild(&[[200.0, 200.0, 0.0]], &[49.0 * 49.0], |_| true);
    let holding: Vec<(u32, u32)> = (0..10)
        .flat_map(|y| (0..10).map(move |x| (x, y)))
        .filter(|&(x, y)| !grid.cell(CellKey { x, y }).is_empty())
        .collect();
    assert_eq!(holding, [(2, 2)]);
    assert_eq!(grid.entry_count(), 1);
    assert_eq!(grid.span(), 1);
    let mut out = Vec::new();
    // From the three other cells the square overlaps, just inside the cull distance.
    for v in [[152.0, 200.0, 0.0], [200.0, 152.0, 0.0], [166.0, 166.0, 0.0]] {
        grid.relevant(&[v], &mut out);
        assert_eq!(out, [0], "viewer {v:?}");
    }
    grid.relevant(&[[150.0, 200.0, 0.0]], &mut out);
    assert!(out.is_empty(), "a hair outside");
    // A square exactly on cell edges (100..=200) is widened a hair into the neighbours: the
    // broad phase errs on the side of a superset.
    grid.rebuild(&[[150.0, 150.0, 0.0]], &[50.0 * 50.0], |_| true);
    assert_eq!((grid.entry_count(), grid.span()), (1, 1));
    grid.rebuild(&[[150.0, 150.0, 0.0]], &[49.0 * 49.0], |_| true);
    assert_eq!(grid.span(), 0);
}

#[test]
fn a_viewer_visits_only_cells_whose_reach_covers_it() {
    let cfg = GridConfig { origin: [0.0, 0.0], ..GridConfig::centred(100.0, 10) };
    let mut grid = SpatialGrid::new(cfg).unwrap();
    // Actor 0 (cull 150, span 2) in cell (5, 5); actors 1, 2 (cull 10) in cells (4, 5), (7, 5).
    let positions = [[550.0, 550.0, 0.0], [410.0, 550.0, 0.0], [710.0, 550.0, 0.0]];
    grid.rebuild(&positions, &[150.0 * 150.0, 100.0, 100.0], |_| true);
    assert_eq!(grid.span(), 2);
    // Cells (4, 5) and (7, 5) are within span of (5, 5), but their actors' reach is 10.
    assert_eq!(grid.swept_rows(&[[550.0, 550.0, 0.0]]), 1);
    assert_eq!(grid.swept_rows(&[[495.0, 550.0, 0.0]]), 1);
    assert_eq!(grid.swept_rows(&[[405.0, 550.0, 0.0]]), 2);
    assert_eq!(grid.swept_rows(&[[380.0, 550.0, 0.0]]), 0, "beyond both reaches");
    // Two viewers near one cell sweep it once.
    assert_eq!(grid.swept_rows(&[[550.0, 550.0, 0.0], [560.0, 560.0, 0.0]]), 1);
    assert_eq!(grid.swept_rows(&[[405.0, 550.0, 0.0], [715.0, 550.0, 0.0]]), 3);
    let mut out = Vec::new();
    grid.relevant(&[[715.0, 550.0, 0.0], [405.0, 550.0, 0.0]], &mut out);
    assert_eq!(out, [0, 1, 2]);
}

#[test]
fn clamped_actors_are_found_by_viewers_beyond_the_edge() {
    // Cells cover −200..200; actors and viewers beyond it share the edge cells.
    let mut grid = SpatialGrid::new(GridConfig::centred(100.0, 4)).unwrap();
    let positions = [[10_000.0, 0.0, 0.0], [-10_000.0, -10_000.0, 0.0], [0.0, 0.0, 0.0]];
    grid.rebuild(&positions, &[15_000.0 * 15_000.0, 1_000.0 * 1_000.0, 1.0], |_| true);
    assert_eq!(grid.cell(CellKey { x: 3, y: 2 }).indices(), [0]);
    assert_eq!(grid.cell(CellKey { x: 0, y: 0 }).indices(), [1]);
    let mut out = Vec::new();
    // Same clamped cell, but 10 000 from its nominal square and 10 000 within reach of actor 0.
    grid.relevant(&[[20_000.0, 0.0, 0.0]], &mut out);
    assert_eq!(out, [0]);
    grid.relevant(&[[-10_500.0, -10_500.0, 0.0]], &mut out);
    assert_eq!(out, [1]);
    grid.relevant(&[[-11_000.0, -11_000.0, 0.0]], &mut out);
    assert!(out.is_empty());
    // From across the grid: actor 0's square spans every column from its clamped home.
    grid.relevant(&[[-4_000.0, 0.0, 0.0]], &mut out);
    assert_eq!(out, [0]);
    grid.relevant(&[[-5_000.0, 0.0, 0.0]], &mut out);
    assert!(out.is_empty(), "exactly 15 000 away is not relevant");
}

#[test]
fn a_cell_holds_its_actors_ascending_and_contiguous() {
    let mut grid = SpatialGrid::new(GridConfig::centred(100.0, 4)).unwrap();
    let positions = [[10.0, 10.0, 0.0], [-10.0, -10.0, 0.0], [20.0, 30.0, 5.0], [-150.0, 0.0, 0.0]];
    grid.rebuild(&positions, &[1.0; 4], |_| true);
    let cell = grid.gather([50.0, 50.0, 0.0]);
    assert_eq!(cell.indices(), [0, 2]);
    assert_eq!(
        (cell.xs, cell.ys, cell.zs, cell.cull_sq),
        (&[10.0, 20.0][..], &[10.0, 30.0][..], &[0.0, 5.0][..], &[1.0, 1.0][..])
    );
}

#[test]
fn huge_cull_distances_go_to_the_large_list_once() {
    let cfg = GridConfig::centred(10_000.0, 1024);
    let mut grid = SpatialGrid::new(cfg).unwrap();
    grid.rebuild(&[[0.0; 3], [5.0, 5.0, 5.0]], &[1e12 * 1e12, f32::INFINITY], |_| true);
    assert_eq!(grid.entry_count(), 2, "one row each, not millions");
    assert_eq!(grid.large().indices(), [0, 1]);
    let mut out = Vec::new();
    grid.relevant(&[[4e6, -4e6, 0.0]], &mut out);
    assert_eq!(out, [0, 1]);
}

#[test]
fn max_cells_per_actor_is_the_edge_of_the_large_list() {
    let cfg = GridConfig { origin: [0.0, 0.0], max_cells_per_actor: 9, ..GridConfig::centred(100.0, 10) };
    let mut grid = SpatialGrid::new(cfg).unwrap();
    // Half-width 100 around 450: cells 3..=5 (9 cells); around 400 it is 2..=5 (16 cells).
    grid.rebuild(&[[450.0, 450.0, 0.0], [400.0, 400.0, 0.0]], &[10_000.0, 10_000.0], |_| true);
    assert_eq!(grid.large().indices(), [1]);
    assert_eq!(grid.entry_count(), 2);
    assert_eq!(grid.span(), 1);
}

#[test]
fn hostile_positions_are_in_no_cell_or_clamped() {
    let mut grid = SpatialGrid::new(GridConfig::centred(100.0, 4)).unwrap();
    let positions =
        [[f32::NAN, 0.0, 0.0], [0.0, f32::INFINITY, 0.0], [0.0, 0.0, f32::NEG_INFINITY], [1e30, -1e30, 0.0]];
    grid.rebuild(&positions, &[1e6; 4], |_| true);
    assert_eq!(grid.entry_count(), 1, "only the finite 1e30 actor is placed");
    assert_eq!(grid.cell(CellKey { x: 3, y: 0 }).indices(), [3]);
    assert_eq!(grid.cell_of([1e30, -1e30, 0.0]), Some(CellKey { x: 3, y: 0 }));
    assert_eq!(grid.cell_of([0.0, 0.0, f32::NAN]), None);
    assert!(grid.gather([f32::NAN, 0.0, 0.0]).is_empty());
    let mut out = Vec::new();
    grid.relevant(&[[1e30, -1e30, 0.0]], &mut out);
    assert_eq!(out, [3]);
}

#[test]
fn actors_move_across_cells_by_rebuild_and_by_update() {
    let mut grid = SpatialGrid::new(GridConfig::centred(1_000.0, 8)).unwrap();
    let mut positions = vec![[100.0, 100.0, 0.0], [-2_500.0, 900.0, 0.0]];
    let cull_sq = [100.0 * 100.0, 100.0 * 100.0];
    let viewer = [[150.0, 150.0, 0.0]];
    let mut out = Vec::new();
    grid.rebuild(&positions, &cull_sq, |_| true);
    grid.relevant(&viewer, &mut out);
    assert_eq!(out, [0]);

    positions.swap(0, 1);
    grid.rebuild(&positions, &cull_sq, |_| true);
    grid.relevant(&viewer, &mut out);
    assert_eq!(out, [1]);
    assert!(grid.gather([100.0, 100.0, 0.0]).indices() == [1]);

    assert!(grid.update(0, [3_100.0, 3_100.0, 0.0], 1e4));
    assert!(grid.update(1, [3_150.0, 3_050.0, 0.0], 1e4));
    grid.refresh();
    grid.relevant(&viewer, &mut out);
    assert!(out.is_empty());
    grid.relevant(&[[3_120.0, 3_080.0, 0.0]], &mut out);
    assert_eq!(out, [0, 1]);
    assert!(grid.gather([150.0, 150.0, 0.0]).is_empty());
}

#[test]
fn insert_and_remove() {
    let mut grid = SpatialGrid::new(GridConfig::centred(1_000.0, 8)).unwrap();
    assert!(!grid.update(5, [0.0; 3], 1.0), "update of an absent actor is refused");
    grid.insert(5, [10.0, 10.0, 10.0], 100.0);
    grid.insert(2, [11.0, 10.0, 10.0], 100.0);
    grid.refresh();
    let mut out = Vec::new();
    grid.relevant(&[[12.0, 12.0, 12.0]], &mut out);
    assert_eq!(out, [2, 5]);
    assert!(grid.remove(5));
    assert!(!grid.remove(5));
    assert!(!grid.remove(99));
    grid.refresh();
    grid.relevant(&[[12.0, 12.0, 12.0]], &mut out);
    assert_eq!(out, [2]);
    assert!(!grid.contains(5) && grid.contains(2));
    grid.rebuild(&[[12.0; 3]; 3], &[1.0; 3], |i| i != 1);
    grid.relevant(&[[12.0; 3]], &mut out);
    assert_eq!(out, [0, 2], "dead actors are in no cell");
}

#[test]
#[should_panic(expected = "without refresh")]
fn a_stale_grid_is_not_read() {
    let mut grid = SpatialGrid::new(GridConfig::default()).unwrap();
    grid.insert(0, [0.0; 3], 1.0);
    grid.gather([0.0; 3]);
}

#[test]
fn split_screen_viewers_in_different_cells_union_without_duplicates() {
    let mut grid = SpatialGrid::new(GridConfig::centred(100.0, 10)).unwrap();
    let positions = [[10.0, 10.0, 0.0], [-210.0, 10.0, 0.0], [60.0, 10.0, 0.0]];
    grid.rebuild(&positions, &[2_500.0; 3], |_| true);
    let mut out = Vec::new();
    grid.relevant(&[[20.0, 10.0, 0.0], [-200.0, 10.0, 0.0], [90.0, 10.0, 0.0]], &mut out);
    assert_eq!(out, [0, 1, 2]);
    grid.relevant(&[], &mut out);
    assert!(out.is_empty());
}

#[test]
fn config_limits() {
    let ok = GridConfig { cells_x: 1 << 11, cells_y: 1 << 11, ..GridConfig::default() };
    assert!(SpatialGrid::new(ok).is_ok());
    let over = GridConfig { cells_y: (1 << 11) + 1, ..ok };
    assert_eq!(SpatialGrid::new(over).unwrap_err(), GridConfigError::Cells { x: 1 << 11, y: (1 << 11) + 1 });
    let zero = GridConfig { cells_x: 0, ..ok };
    assert!(matches!(SpatialGrid::new(zero), Err(GridConfigError::Cells { .. })));
    for size in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let bad = GridConfig { cell_size: size, ..ok };
        assert!(matches!(SpatialGrid::new(bad), Err(GridConfigError::CellSize(_))));
    }
    let bad = GridConfig { origin: [f32::NAN, 0.0], ..ok };
    assert!(matches!(SpatialGrid::new(bad), Err(GridConfigError::Origin(_))));
    let bad = GridConfig { max_cells_per_actor: 0, ..ok };
    assert_eq!(SpatialGrid::new(bad).unwrap_err(), GridConfigError::MaxCellsPerActor);
}

/// Rough cost on this machine; prints numbers, asserts the answer against brute force on a
/// sample. `cargo test --release -p shadowrep spatial::tests::measure -- --ignored --nocapture`
#[test]
#[ignore]
fn measure_rebuild_1m_and_relevant_1000_viewers() {
    use rayon::prelude::*;
    use std::time::Instant;
    let n = 1_000_000;
    for (cell_size, side) in [(10_000.0f32, 1_000_000.0f32), (30_000.0, 1_000_000.0)] {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let positions: Vec<[f32; 3]> = (0..n)
            .map(|_| {
                [
                    rng.random_range(-side / 2.0..side / 2.0),
                    rng.random_range(-side / 2.0..side / 2.0),
                    rng.random_range(-1000.0..1000.0),
                ]
            })
            .collect();
        let cull_sq: Vec<f32> =
            (0..n).map(|i| if i % 10 == 0 { 5000.0f32.powi(2) } else { UE_DEFAULT_CULL_DISTANCE_SQUARED }).collect();
        let viewers: Vec<[f32; 3]> = (0..1000)
            .map(|_| [rng.random_range(-side / 2.0..side / 2.0), rng.random_range(-side / 2.0..side / 2.0), 0.0])
            .collect();
        let cells = (side / cell_size).ceil() as u32 + 2;
        let mut grid = SpatialGrid::new(GridConfig::centred(cell_size, cells)).unwrap();
        grid.rebuild(&positions, &cull_sq, |_| true);
        let t = Instant::now();
        let reps = 5;
        for _ in 0..reps {
            grid.rebuild(&positions, &cull_sq, |_| true);
        }
        let rebuild = t.elapsed() / reps;
        let t = Instant::now();
        let mut total = 0;
        let mut out = Vec::new();
        for v in &viewers {
            grid.relevant(std::slice::from_ref(v), &mut out);
            total += out.len();
        }
        let serial = t.elapsed();
        let t = Instant::now();
        let par: usize = viewers
            .par_iter()
            .map_init(Vec::new, |out, v| {
                grid.relevant(std::slice::from_ref(v), out);
                out.len()
            })
            .sum();
        let parallel = t.elapsed();
        assert_eq!(par, total);
        for v in viewers.iter().take(3) {
            grid.relevant(std::slice::from_ref(v), &mut out);
            assert_eq!(out, brute_force(&positions, &cull_sq, &vec![true; n], std::slice::from_ref(v)));
        }
        let rows = grid.entry_count();
        println!(
            "cell {cell_size}, world {side}², {n} actors: rebuild {rebuild:?} ({rows} rows, {:.1}/actor, span {}); \
             1000 viewers: serial {serial:?}, rayon {parallel:?}; {:.0} relevant/viewer, {:.0} rows swept/viewer",
            rows as f64 / n as f64,
            grid.span(),
            total as f64 / 1000.0,
            viewers.iter().map(|&v| grid.swept_rows(&[v])).sum::<usize>() as f64 / 1000.0,
        );
    }
}
