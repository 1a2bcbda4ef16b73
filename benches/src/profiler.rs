//! A criterion 0.8 [`Profiler`] over `pprof::ProfilerGuard`, so `cargo bench -- --profile-time 5`
//! writes `target/criterion/<bench>/profile/flamegraph.svg`.
//!
//! pprof ships an adapter of its own, but it is written against criterion 0.5's trait and does not
//! build with 0.8; this is the same idea in a few lines.

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
        if let Err(e) = write_flamegraph(&guard, &benchmark_dir.join("flamegraph.svg")) {
            eprintln!("flamegraph not written: {e}");
        }
    }
}

/// Writes the guard's samples so far as a flamegraph SVG at `path` (parent folders created).
pub fn write_flamegraph(guard: &ProfilerGuard<'_>, path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let report = guard.report().build().map_err(|e| e.to_string())?;
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    report.flamegraph(file).map_err(|e| e.to_string())
}
