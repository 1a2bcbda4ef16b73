//! [`Session`]: what one invocation carries besides its arguments — the flamegraph profiler, if
//! `--flamegraph` asked for one (checked against the command, started before it runs, written
//! after it succeeds), and the JSON object a command prints.

use crate::{check_writable, Cli, Command};
use serde_json::json;
use shadowrep_benches::flamegraph::PhaseProfiler;
use shadowrep_benches::phase::{Phase, PhaseProbe};
use std::path::{Path, PathBuf};

/// What one invocation carries besides its arguments: the flamegraph, if asked for, and how
/// the command's JSON goes out.
pub(crate) struct Session {
    flamegraph: Option<Flamegraph>,
    written: Option<(PathBuf, Phase, usize)>,
}

struct Flamegraph {
    profiler: PhaseProfiler,
    path: PathBuf,
    phase: Phase,
}

impl Session {
    /// Checks the flamegraph flags against the command and starts the profiler.
    pub(crate) fn start(cli: &Cli) -> Result<Session, String> {
        let whole_only = matches!(cli.command, Some(Command::Serve(_) | Command::Bots(_) | Command::Sweep(_)));
        let Some(path) = &cli.flamegraph else {
            if cli.flamegraph_phase.is_some() {
                return Err("--flamegraph-phase needs --flamegraph FILE.svg".into());
            }
            return Ok(Session { flamegraph: None, written: None });
        };
        let phase = cli.flamegraph_phase.unwrap_or(if whole_only { Phase::Whole } else { Phase::Kernel });
        if whole_only && phase != Phase::Whole {
            return Err(format!(
                "--flamegraph-phase {}: serve, bots and sweep are profiled whole (--flamegraph-phase whole)",
                phase.name()
            ));
        }
        check_writable(path, true).map_err(|e| format!("--flamegraph: {e}"))?;
        let mut profiler = PhaseProfiler::start(phase)?;
        profiler.enter(Phase::Whole);
        Ok(Session { flamegraph: Some(Flamegraph { profiler, path: path.clone(), phase }), written: None })
    }

    /// Whether a flamegraph of `phase` is being taken.
    pub(crate) fn profiles(&self, phase: Phase) -> bool {
        self.flamegraph.as_ref().is_some_and(|f| f.phase == phase)
    }

    /// Writes the flamegraph, if one was asked for (once); returns its JSON description.
    pub(crate) fn finish(&mut self) -> Result<serde_json::Value, String> {
        if let Some(mut f) = self.flamegraph.take() {
            f.profiler.leave(Phase::Whole);
            let samples = f.profiler.write(&f.path)?;
            self.written = Some((f.path, f.phase, samples));
        }
        Ok(match &self.written {
            Some((path, phase, samples)) => json!({
                "file": path.display().to_string(),
                "phase": phase.name(),
                "samples": samples,
            }),
            None => serde_json::Value::Null,
        })
    }

    /// The flamegraph written: its file, phase and samples.
    pub(crate) fn written(&self) -> Option<(&Path, Phase, usize)> {
        self.written.as_ref().map(|(p, ph, n)| (p.as_path(), *ph, *n))
    }

    /// Prints a command's JSON object, with a `flamegraph` key (null without one), as one line.
    pub(crate) fn emit(&mut self, mut out: serde_json::Value) -> Result<(), String> {
        let flamegraph = self.finish()?;
        if let Some(map) = out.as_object_mut() {
            map.insert("flamegraph".into(), flamegraph);
        }
        println!("{out}");
        Ok(())
    }
}

impl PhaseProbe for Session {
    fn enter(&mut self, phase: Phase) {
        if let Some(f) = self.flamegraph.as_mut() {
            f.profiler.enter(phase);
        }
    }
    fn leave(&mut self, phase: Phase) {
        if let Some(f) = self.flamegraph.as_mut() {
            f.profiler.leave(phase);
        }
    }
    fn wants_more(&self) -> bool {
        self.flamegraph.as_ref().is_some_and(|f| f.profiler.wants_more())
    }
    fn watches(&self, phase: Phase) -> bool {
        self.profiles(phase)
    }
}
