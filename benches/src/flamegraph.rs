//! `--flamegraph FILE.svg [--flamegraph-phase kernel|reference|whole]`: a pprof flamegraph of
//! the phase a command measures.
//!
//! A profiler guard samples the whole process (at 997 Hz of CPU time), and the
//! profiler keeps only the samples taken inside the chosen phase: at each
//! [`PhaseProbe::enter`] it reads the guard's sample counts, at the matching `leave` it reads
//! them again and adds the difference. (A guard per window would not do: pprof's timer starts
//! afresh with each guard and fires only after a whole period of CPU time, so phases shorter
//! than a period — a 1 % compare takes about a millisecond — would never be sampled, and the
//! first period of every window would be missed.) Reading the counts gets slower as pprof's
//! collector fills, so every 32 windows the guard is restarted, between two windows.
//! Until the phase has `MIN_SAMPLES` (1000) samples the workloads run extra, untimed frames of it
//! (at most [`crate::phase::EXTRA_SECONDS`]); the report says how many samples the SVG holds.
//!
//! pprof is an optional dependency (feature `flamegraph`, off for the command alone so the main
//! job builds lean; on in every workspace build); without it, [`PhaseProfiler::start`] refuses
//! with the command that builds it.

use crate::phase::{Phase, PhaseProbe};
use std::path::Path;

/// Whether this build has flamegraphs (the `flamegraph` feature).
pub fn available() -> bool {
    cfg!(feature = "flamegraph")
}

/// Sampling frequency, Hz (prime, so sampling does not beat with periodic work).
#[cfg(feature = "flamegraph")]
const FREQUENCY: i32 = 997;

/// Windows of the phase between two restarts of the guard.
#[cfg(feature = "flamegraph")]
const RESTART_WINDOWS: usize = 32;

/// Samples a profile of one phase should hold: extra frames run until it does.
#[cfg(feature = "flamegraph")]
const MIN_SAMPLES: usize = 1000;

/// Records the samples taken inside one phase.
#[cfg(feature = "flamegraph")]
pub struct PhaseProfiler {
    /// None only after a failed restart (`error` says why).
    guard: Option<pprof::ProfilerGuard<'static>>,
    /// Windows of the phase so far.
    windows: usize,
    phase: Phase,
    /// The guard's counts when the phase was entered, while inside it.
    at_enter: Option<pprof::UnresolvedReport>,
    /// Samples taken inside the phase so far, by stack.
    inside: pprof::UnresolvedReport,
    samples: usize,
    error: Option<String>,
}

#[cfg(feature = "flamegraph")]
impl PhaseProfiler {
    /// Starts sampling; only `phase` will be kept.
    pub fn start(phase: Phase) -> Result<Self, String> {
        let guard = pprof::ProfilerGuard::new(FREQUENCY).map_err(|e| format!("cannot start the profiler: {e}"))?;
        let mut inside = guard.report().build_unresolved().map_err(|e| format!("profiler: {e}"))?;
        inside.data.clear();
        Ok(Self { guard: Some(guard), windows: 0, phase, at_enter: None, inside, samples: 0, error: None })
    }

    /// Writes the kept samples as a flamegraph SVG to `path`; returns how many it holds.
    pub fn write(self, path: &Path) -> Result<usize, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut data = std::collections::HashMap::new();
        for (stack, n) in self.inside.data {
            *data.entry(pprof::Frames::from(stack)).or_insert(0) += n;
        }
        drop(self.guard);
        let report = pprof::Report { data, timing: self.inside.timing };
        let file = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        report.flamegraph(std::io::BufWriter::new(file)).map_err(|e| format!("flamegraph: {e}"))?;
        Ok(self.samples)
    }

    fn counts(&mut self) -> Option<pprof::UnresolvedReport> {
        match self.guard.as_ref()?.report().build_unresolved() {
            Ok(r) => Some(r),
            Err(e) => {
                self.error.get_or_insert(format!("profiler: {e}"));
                None
            }
        }
    }
}

#[cfg(feature = "flamegraph")]
impl PhaseProbe for PhaseProfiler {
    fn enter(&mut self, phase: Phase) {
        if phase == self.phase && self.at_enter.is_none() {
            self.at_enter = self.counts();
        }
    }

    fn leave(&mut self, phase: Phase) {
        if phase != self.phase {
            return;
        }
        let (Some(before), Some(after)) = (self.at_enter.take(), self.counts()) else { return };
        for (stack, n) in after.data {
            let new = n - before.data.get(&stack).copied().unwrap_or(0);
            if new > 0 {
                self.samples += new as usize;
                *self.inside.data.entry(stack).or_insert(0) += new;
            }
        }
        // Reading the counts costs more as pprof's collector fills (its evicted entries go to a
        // file that every read goes through again): start a fresh guard now and then. Its timer
        // starts afresh, but between windows, so the phase's samples stay where they fall.
        self.windows += 1;
        if self.windows.is_multiple_of(RESTART_WINDOWS) {
            self.guard = None;
            match pprof::ProfilerGuard::new(FREQUENCY) {
                Ok(g) => self.guard = Some(g),
                Err(e) => {
                    self.error.get_or_insert(format!("cannot restart the profiler: {e}"));
                }
            }
        }
    }

    fn wants_more(&self) -> bool {
        self.phase != Phase::Whole && self.samples < MIN_SAMPLES && self.error.is_none()
    }

    fn watches(&self, phase: Phase) -> bool {
        phase == self.phase
    }
}

/// Without the `flamegraph` feature: `--flamegraph` is refused.
#[cfg(not(feature = "flamegraph"))]
pub struct PhaseProfiler {
    _never: std::convert::Infallible,
}

#[cfg(not(feature = "flamegraph"))]
impl PhaseProfiler {
    /// Refuses: this build has no profiler.
    pub fn start(_phase: Phase) -> Result<Self, String> {
        Err("this shadowrep was built without flamegraphs; build it with the `flamegraph` feature: \
             cargo run --release --features flamegraph -- <command> --flamegraph FILE.svg"
            .into())
    }

    /// Writes the flamegraph.
    pub fn write(self, _path: &Path) -> Result<usize, String> {
        match self._never {}
    }
}

#[cfg(not(feature = "flamegraph"))]
impl PhaseProbe for PhaseProfiler {
    fn enter(&mut self, _: Phase) {
        match self._never {}
    }
    fn leave(&mut self, _: Phase) {
        match self._never {}
    }
}
