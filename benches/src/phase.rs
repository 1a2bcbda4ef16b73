//! The phases of a measured run, and the probe told when each starts and ends.
//!
//! The command's `--flamegraph-phase` profiles one phase only: the workloads call
//! [`PhaseProbe::enter`] right before and [`PhaseProbe::leave`] right after each timed piece of
//! work (the kernel's compare or tick, the UE-style reference's), and a profiler records only
//! the samples taken between the two. A workload that finished its timed frames asks
//! [`PhaseProbe::wants_more`] and keeps running the phase (untimed, unreported) until the probe
//! has what it needs.

/// What a run measures, for a profiler to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The kernel's timed work: the SIMD compare (`compare`), the shared-serialization server
    /// frame (`replicate`), the driver's tick (`run`).
    Kernel,
    /// The baseline's timed work: the UE-style reference's compare or frame; in `replicate`,
    /// the per-connection-encoding driver's frame (it has no UE-style reference).
    Reference,
    /// Everything the command does, set-up included.
    Whole,
}

impl Phase {
    /// Every phase, in the order `--help` lists them.
    pub const ALL: [Phase; 3] = [Phase::Kernel, Phase::Reference, Phase::Whole];

    /// The name the command takes.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Kernel => "kernel",
            Phase::Reference => "reference",
            Phase::Whole => "whole",
        }
    }

    /// The phase of that name.
    pub fn parse(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Told when a timed phase starts and ends.
pub trait PhaseProbe {
    /// `phase` starts now.
    fn enter(&mut self, phase: Phase);
    /// `phase` ended now.
    fn leave(&mut self, phase: Phase);
    /// Whether the probe wants more of its phase: a workload runs extra, untimed frames of it
    /// after its timed ones while this holds (each workload caps them).
    fn wants_more(&self) -> bool {
        false
    }
    /// Whether the probe records `phase` (extra frames skip the work of phases nobody
    /// watches).
    fn watches(&self, phase: Phase) -> bool {
        let _ = phase;
        false
    }
}

/// A probe that does nothing: an unprofiled run.
pub struct NoProbe;

impl PhaseProbe for NoProbe {
    fn enter(&mut self, _: Phase) {}
    fn leave(&mut self, _: Phase) {}
}

/// A probe seen by a pass that runs only some phases: it forwards everything, but asks for
/// extra frames only when the probe watches one of the phases the pass runs (a kernel-only pass
/// must not loop for a reference profile).
pub struct Scoped<'a> {
    /// The probe.
    pub inner: &'a mut dyn PhaseProbe,
    /// The phases the pass runs.
    pub runs: &'static [Phase],
}

impl PhaseProbe for Scoped<'_> {
    fn enter(&mut self, phase: Phase) {
        self.inner.enter(phase);
    }
    fn leave(&mut self, phase: Phase) {
        self.inner.leave(phase);
    }
    fn wants_more(&self) -> bool {
        self.inner.wants_more() && self.runs.iter().any(|&p| self.inner.watches(p))
    }
    fn watches(&self, phase: Phase) -> bool {
        self.inner.watches(phase)
    }
}

/// Runs `f` as `phase`, telling `probe`.
pub fn within<R>(probe: &mut dyn PhaseProbe, phase: Phase, f: impl FnOnce() -> R) -> R {
    probe.enter(phase);
    let r = f();
    probe.leave(phase);
    r
}

/// The most extra frames a workload runs for a probe that wants more (so a phase that takes
/// no samples cannot loop for ever); see also [`EXTRA_SECONDS`].
pub const EXTRA_FRAMES: usize = 200_000;

/// The most wall time a workload spends on extra frames for a probe, seconds.
pub const EXTRA_SECONDS: f64 = 60.0;

/// Counts extra frames against [`EXTRA_FRAMES`] and [`EXTRA_SECONDS`].
pub struct ExtraFrames {
    started: std::time::Instant,
    frames: usize,
}

impl Default for ExtraFrames {
    fn default() -> Self {
        Self::new()
    }
}

impl ExtraFrames {
    /// Starts counting now.
    pub fn new() -> Self {
        Self { started: std::time::Instant::now(), frames: 0 }
    }

    /// Whether another extra frame should run for `probe`; counts it.
    pub fn another(&mut self, probe: &dyn PhaseProbe) -> bool {
        let go =
            probe.wants_more() && self.frames < EXTRA_FRAMES && self.started.elapsed().as_secs_f64() < EXTRA_SECONDS;
        self.frames += go as usize;
        go
    }

    /// Extra frames run so far.
    pub fn frames(&self) -> usize {
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting {
        entered: Vec<Phase>,
        left: Vec<Phase>,
        budget: usize,
    }

    impl PhaseProbe for Counting {
        fn enter(&mut self, phase: Phase) {
            self.entered.push(phase);
        }
        fn leave(&mut self, phase: Phase) {
            self.left.push(phase);
            self.budget = self.budget.saturating_sub(1);
        }
        fn wants_more(&self) -> bool {
            self.budget > 0
        }
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for p in Phase::ALL {
            assert_eq!(Phase::parse(p.name()), Some(p));
        }
        assert_eq!(Phase::parse("kernels"), None);
        assert_eq!(Phase::parse(""), None);
    }

    #[test]
    fn extra_frames_stop_when_the_probe_has_enough() {
        let mut probe = Counting { entered: Vec::new(), left: Vec::new(), budget: 3 };
        let mut extra = ExtraFrames::new();
        while extra.another(&probe) {
            within(&mut probe, Phase::Kernel, || ());
        }
        assert_eq!(extra.frames(), 3);
        assert_eq!(probe.entered, vec![Phase::Kernel; 3]);
        assert_eq!(probe.left, probe.entered);
        assert!(!ExtraFrames::new().another(&NoProbe));
    }

    #[test]
    fn a_scoped_probe_asks_for_more_only_for_phases_its_pass_runs() {
        struct Watching(Phase);
        impl PhaseProbe for Watching {
            fn enter(&mut self, _: Phase) {}
            fn leave(&mut self, _: Phase) {}
            fn wants_more(&self) -> bool {
                true
            }
            fn watches(&self, phase: Phase) -> bool {
                phase == self.0
            }
        }
        let mut reference = Watching(Phase::Reference);
        assert!(!Scoped { inner: &mut reference, runs: &[Phase::Kernel] }.wants_more());
        assert!(Scoped { inner: &mut reference, runs: &[Phase::Kernel, Phase::Reference] }.wants_more());
    }
}
