//! What a run reports: per-frame records reduced to medians and percentiles, per stage and per
//! second of the run.

use super::FrameRecord;
use crate::workload::median;

/// Medians of a stage, ms: the per-connection stages are CPU time summed over connections.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StagesMs {
    /// Compare, slot tracking and history, every class.
    pub gather: f64,
    /// The consider list.
    pub consider: f64,
    /// Dormancy's own work (looks for sleeping actors, falling asleep).
    pub dormancy: f64,
    /// The relevancy index (grid, links).
    pub relevancy_index: f64,
    /// Every connection's relevant set, summed over connections.
    pub relevancy_query: f64,
    /// Index plus queries (median of the per-frame sums).
    pub relevancy: f64,
    /// Shared serialization.
    pub share: f64,
    /// Candidates and priority keys, summed over connections.
    pub priority: f64,
    /// The send loop (rechecks, opens, closes, planning, packets), summed over connections.
    pub write: f64,
    /// The per-connection step, wall time.
    pub connections: f64,
    /// Applying the clients' feedback (outside `frame_ms`).
    pub feedback: f64,
}

/// Medians over some frames of what the actor level did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseSummary {
    /// Frames summarised.
    pub frames: usize,
    /// Median server frame, ms.
    pub frame_ms: f64,
    /// Median (connection, due actor) pairs relevant per frame.
    pub relevant_pairs: f64,
    /// Median pairs replicated per frame.
    pub sent_pairs: f64,
    /// Median saturated connections per frame.
    pub saturated_connections: f64,
    /// Median bytes per connection per frame.
    pub bytes_per_connection_frame: f64,
}

/// What `shadowrep run` reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Every timed frame.
    pub all: PhaseSummary,
    /// 99th percentile (nearest rank) of the frame, ms.
    pub frame_p99_ms: f64,
    /// Median frame / tick period.
    pub tick_share: f64,
    /// Stage medians.
    pub stages: StagesMs,
    /// Median actors on the consider list.
    pub due_actors: f64,
    /// Median of the server's prepare (the game's calls into it; not in the frame), ms.
    pub prepare_ms: f64,
    /// Median of frame plus prepare: the kernel's whole work per frame, ms.
    pub frame_with_prepare_ms: f64,
    /// Median of the game's own step (not in the frame), ms.
    pub game_ms: f64,
    /// The first second of timed frames (the hot drop, in battle_royale).
    pub first_second: PhaseSummary,
    /// The last second of timed frames.
    pub last_second: PhaseSummary,
    /// Each second of timed frames in turn (the last one may be short).
    pub per_second: Vec<PhaseSummary>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub(super) fn phase(records: &[FrameRecord], connections: usize) -> PhaseSummary {
    let m = |f: &dyn Fn(&FrameRecord) -> f64| median(records.iter().map(f).collect::<Vec<f64>>());
    PhaseSummary {
        frames: records.len(),
        frame_ms: m(&|r| ms(r.tick_ns)),
        relevant_pairs: m(&|r| r.stats.relevant_pairs as f64),
        sent_pairs: m(&|r| r.stats.sent_pairs as f64),
        saturated_connections: m(&|r| r.stats.saturated_connections as f64),
        bytes_per_connection_frame: m(&|r| r.stats.bytes as f64 / connections.max(1) as f64),
    }
}

/// Summarises timed frames of a world with `connections` connections at `tick_rate`.
pub fn summarize(records: &[FrameRecord], connections: usize, tick_rate: f64) -> RunSummary {
    let m = |f: &dyn Fn(&FrameRecord) -> f64| median(records.iter().map(f).collect::<Vec<f64>>());
    let s = |f: fn(&shadowrep::net::Stages) -> u64| m(&|r| ms(f(&r.stats.stages)));
    let mut frame: Vec<f64> = records.iter().map(|r| ms(r.tick_ns)).collect();
    frame.sort_unstable_by(f64::total_cmp);
    let p99 = frame.get(((frame.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    let second = (tick_rate.round() as usize).clamp(1, records.len().max(1));
    let all = phase(records, connections);
    RunSummary {
        all,
        frame_p99_ms: p99,
        tick_share: all.frame_ms / (1e3 / tick_rate),
        stages: StagesMs {
            gather: s(|x| x.gather),
            consider: s(|x| x.consider),
            dormancy: s(|x| x.dormancy),
            relevancy_index: s(|x| x.relevancy_index),
            relevancy_query: s(|x| x.relevancy_query),
            relevancy: s(|x| x.relevancy_index + x.relevancy_query),
            share: s(|x| x.share),
            priority: s(|x| x.priority),
            write: s(|x| x.write),
            connections: s(|x| x.connections),
            feedback: m(&|r| ms(r.feedback_ns)),
        },
        due_actors: m(&|r| r.stats.due_actors as f64),
        prepare_ms: m(&|r| ms(r.prepare_ns)),
        frame_with_prepare_ms: m(&|r| ms(r.tick_ns + r.prepare_ns)),
        game_ms: m(&|r| ms(r.game_ns)),
        first_second: phase(&records[..second.min(records.len())], connections),
        last_second: phase(&records[records.len().saturating_sub(second)..], connections),
        per_second: records.chunks(second).map(|c| phase(c, connections)).collect(),
    }
}

/// Peak resident memory of this process (`VmHWM`), bytes, where the OS tells.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}
