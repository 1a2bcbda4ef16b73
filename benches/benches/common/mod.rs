//! What every criterion bench shares: the flamegraph profiler and the size limit.
//!
//! `FlamegraphProfiler` is a criterion 0.8 `Profiler` over `pprof::ProfilerGuard`, so
//! `cargo bench -- --profile-time 5` writes one flamegraph per benchmark to
//! `$CARGO_TARGET_DIR/criterion/<group>/<benchmark>/profile/flamegraph.svg` (`target/` when the
//! variable is unset). pprof ships an adapter of its own, but it is written against criterion
//! 0.5's trait and does not build with 0.8; this is the same idea in a few lines. criterion and
//! pprof are dev-dependencies: the workloads' library (and so the `shadowrep` command) builds
//! without them.

use criterion::profiler::Profiler;
use pprof::ProfilerGuard;
use std::fs::File;
use std::path::Path;

/// Samples the benchmark at `frequency` Hz while criterion profiles it.
pub struct FlamegraphProfiler<'a> {
    frequency: i32,
    active: Option<ProfilerGuard<'a>>,
}

impl FlamegraphProfiler<'_> {
    /// A profiler sampling at `frequency` Hz (100 is a good default).
    pub fn new(frequency: i32) -> Self {
        Self { frequency, active: None }
    }
}

impl Profiler for FlamegraphProfiler<'_> {
    fn start_profiling(&mut self, _benchmark_id: &str, _benchmark_dir: &Path) {
        match ProfilerGuard::new(self.frequency) {
            Ok(guard) => self.active = Some(guard),
            Err(e) => eprintln!("flamegraph profiler could not start: {e}"),
        }
    }

    fn stop_profiling(&mut self, _benchmark_id: &str, benchmark_dir: &Path) {
        let Some(guard) = self.active.take() else { return };
        let path = benchmark_dir.join("flamegraph.svg");
        match write_flamegraph(&guard, &path) {
            Ok(()) => eprintln!("flamegraph written to {}", path.display()),
            Err(e) => eprintln!("flamegraph not written: {e}"),
        }
    }
}

/// Writes the guard's samples so far as a flamegraph SVG at `path` (parent folders created).
fn write_flamegraph(guard: &ProfilerGuard<'_>, path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let report = guard.report().build().map_err(|e| e.to_string())?;
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    report.flamegraph(file).map_err(|e| e.to_string())
}

/// Actor counts from `SHADOWREP_BENCH_ACTORS` (comma-separated), if set: the sizes the compare
/// bench runs, and the most actors any other bench uses.
pub fn bench_actors() -> Option<Vec<usize>> {
    let v = std::env::var("SHADOWREP_BENCH_ACTORS").ok()?;
    let sizes: Vec<usize> = v.split(',').filter_map(|x| x.trim().parse().ok()).filter(|&n| n > 0).collect();
    assert!(!sizes.is_empty(), "SHADOWREP_BENCH_ACTORS={v}: expected actor counts such as 10000 or 10000,100000");
    Some(sizes)
}

/// `n`, capped by the largest of `SHADOWREP_BENCH_ACTORS` when it is set.
pub fn limited(n: usize) -> usize {
    bench_actors().and_then(|s| s.into_iter().max()).map_or(n, |cap| n.min(cap))
}
