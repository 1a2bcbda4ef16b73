//! Choosing the diff table from the compare's own frames.
//!
//! ```text
//! a full frame (every page walked) of at least TUNE_MIN_PAGES pages, with `Kernels::best()`:
//!     the first one:              warm-up, on the calibrated table (page faults, a new shadow)
//!     the next TRIALS:            trial frames: the pages in runs of TRIAL_PAGES, each run with
//!                                 one candidate (each vector table with each page scan and each
//!                                 next-page rule), every candidate in turn; each run timed from
//!                                 its second page; per frame, each candidate's time per page over
//!                                 the first candidate's (the baseline's is 1)
//!     then:                       the candidate with the lowest median of its ratios is kept
//!     every RETRY_EVERY frames:   the trials again (a choice made in a noisy minute, or for
//!                                 another mix of change, is not kept forever)
//! ```
//!
//! Why: the start-up calibration ([`super::Kernels::best`]) times the tables on cache-resident
//! pages, and a large compare is bound by memory, where the ranking can differ. On an Intel Xeon
//! with AVX-512 (2026-12-01) the calibration put AVX-512 50 % ahead of `wide`, yet on 1M actors
//! with 10 % changed AVX-512 compared 7–13 % slower than `wide`. Every table finds the same changes
//! (each is tested against the scalar reference), so trying them on real frames changes only the
//! time. A caller that names a table ([`super::Kernels::for_isa`]) gets that table, untried.
//!
//! The page scan ([`PageScan`]) is tried the same way, each with every table: whether reading a
//! page whole before its lane diffs pays depends on how the diff's cost compares with the
//! machine's memory (it did on an AMD EPYC Zen 3 with AVX2 only; see [`PageScan`]). So is the
//! paced prefetch of a changed page's next page ([`NextPage`]): it saved ~30 % of a frame at
//! 10 % changed on the machines it was tuned on and cost as much on an AMD EPYC Zen 4.
//!
//! Why every candidate in every trial frame: on a host whose memory slows and speeds up with its
//! neighbours' load, a candidate's time says more about the moment it ran in than about the
//! candidate. Until session 63 each was ranked by its best of five whole frames; then by the
//! median of five ratios to the baseline, each from a pair of whole frames run one after the
//! other. On an AMD EPYC Zen 3 (1M ShooterCharacter, 100 % changed, the `compare` command, whose
//! frames are ~250 ms apart: the UE-style reference runs between them) the pairs' ratios spread
//! from 0.5 to 1.6 (session 66), and the pairs kept `wide` twice in session 65 although
//! `avx2:lanes:prefetch` compared 20–26 % faster side by side (`--example compare_ab`). Runs of
//! 16 pages (~10 µs) a few microseconds apart see the same memory: a trial frame holds ~80 runs of
//! each of the 12 candidates, and their ratios moved by a few percent from frame to frame (at
//! 100 % changed: 0.79–0.94 for `avx2:lanes:prefetch`, 0.81–0.83 for `avx2:lanes:hardware`,
//! 0.98–1.05 for `wide:first-difference:hardware`; from the pairs before, in the same minutes:
//! 0.63–0.96, 0.52–1.10 and 0.99–1.34).
//!
//! Why timed from a run's second page: the candidate before it may have prefetched this run's
//! first page ([`NextPage::Prefetch`]) or not; from the second page on, the run's own rule has
//! had its say.

use super::jobs::Tally;
use super::simd::{Isa, Kernels, NextPage, PageScan};
use std::time::Instant;

/// Frames with fewer pages are not timed: too short to rank the tables, and cached.
pub const TUNE_MIN_PAGES: usize = 1024;

/// Trial frames in a round: each candidate's rank is the median of as many ratios, so two
/// frames spoiled by a burst of load cannot move it.
pub const TRIALS: usize = 5;

/// Pages a trial frame compares with one candidate before it moves to the next: long enough
/// that two clock reads (~50 ns) cost nothing beside the run (~10 µs at 1M ShooterCharacter),
/// short enough that a frame holds many runs of each candidate. A divisor of the pool's block
/// (`BLOCK_PAGES`), so that no run is cut between two threads.
pub const TRIAL_PAGES: usize = 16;

/// Eligible frames between two rounds of trials once a table is kept (two minutes of full frames
/// at 30 Hz).
pub const RETRY_EVERY: usize = 3600;

/// One candidate's timed pages in a trial frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TrialTime {
    pub(super) nanos: u64,
    pub(super) pages: u64,
}

/// One class's choice of table, made over its first large full frames and checked again every
/// [`RETRY_EVERY`] of them.
#[derive(Debug, Default)]
pub(super) struct IsaTuner {
    /// The vector tables this CPU runs, widest first, each with each page scan and each
    /// next-page rule (filled at the first eligible frame; never fewer than six: `wide` runs
    /// everywhere). The first is the baseline every other one is timed against.
    tables: Vec<Kernels>,
    /// Per candidate: its time per page over the baseline's, one per trial frame (the baseline's
    /// own entry stays empty).
    ratios: Vec<Vec<f64>>,
    /// Eligible frames since the last choice, or since the start (whose first is the warm-up).
    frames: usize,
    /// The table kept after the last round of trials.
    chosen: Option<Kernels>,
    /// The last round's candidates with their median ratios, as it ranked them.
    scores: Vec<(Kernels, f64)>,
}

impl IsaTuner {
    /// The table for this frame, and whether the frame is a trial: then its pages are compared
    /// with each of [`Self::tables`] in turn ([`walk_trial`]) and its times given to
    /// [`Self::record`]. `eligible`: a full frame of at least [`TUNE_MIN_PAGES`] pages.
    pub(super) fn pick(&mut self, asked: Kernels, eligible: bool) -> (Kernels, bool) {
        if !asked.tuned() {
            return (asked, false);
        }
        if !eligible {
            return (self.chosen.unwrap_or(asked), false);
        }
        if self.tables.is_empty() {
            self.tables = [Isa::Avx512, Isa::Avx2, Isa::Wide]
                .into_iter()
                .filter_map(Kernels::for_isa)
                .flat_map(|k| PageScan::ALL.map(|scan| k.with_scan(scan)))
                .flat_map(|k| NextPage::ALL.map(|next| k.with_next_page(next)))
                .collect();
            self.ratios = vec![Vec::new(); self.tables.len()];
        }
        // `frames` counts the eligible frames since the last choice (or since the start); trials
        // go on until [`Self::record`] has had enough of them to choose.
        self.frames += 1;
        match self.chosen {
            None if self.frames == 1 => (asked, false),
            None => (self.tables[0], true),
            Some(k) if self.frames <= RETRY_EVERY => (k, false),
            Some(_) => (self.tables[0], true),
        }
    }

    /// The candidates a trial frame runs, the baseline first.
    pub(super) fn tables(&self) -> &[Kernels] {
        &self.tables
    }

    /// Records a trial frame's times, one per candidate of [`Self::tables`]: each candidate's
    /// time per page over the baseline's. Once every candidate has [`TRIALS`] ratios, the one with
    /// the lowest median is kept (until the next round, [`RETRY_EVERY`] eligible frames on). A
    /// frame where some candidate timed no page counts for nothing.
    pub(super) fn record(&mut self, times: &[TrialTime]) {
        if times.len() != self.tables.len() || times.iter().any(|t| t.pages == 0) {
            return;
        }
        let per_page = |t: &TrialTime| t.nanos.max(1) as f64 / t.pages as f64;
        let baseline = per_page(&times[0]);
        for (ratios, t) in self.ratios.iter_mut().zip(times).skip(1) {
            ratios.push(per_page(t) / baseline);
        }
        if self.ratios.iter().skip(1).all(|r| r.len() >= TRIALS) {
            let score = |r: &Vec<f64>| if r.is_empty() { 1.0 } else { median(r) };
            self.scores = self.tables.iter().zip(&self.ratios).map(|(&k, r)| (k, score(r))).collect();
            self.scores.sort_by(|a, b| a.1.total_cmp(&b.1));
            self.chosen = self.scores.first().map(|&(k, _)| k);
            self.ratios.iter_mut().for_each(Vec::clear);
            self.frames = 0;
        }
    }

    /// The table kept (with its page scan and next-page rule), once the trials are done.
    pub(super) fn chosen(&self) -> Option<Kernels> {
        self.chosen
    }

    /// The last round's candidates, fastest first, each with the median of its times per page
    /// over the baseline's (the baseline's is 1); empty until a round is done.
    pub(super) fn scores(&self) -> &[(Kernels, f64)] {
        &self.scores
    }
}

/// The candidate a trial frame gives its run `run` (pages `run * TRIAL_PAGES..`), of
/// `candidates`: each candidate once in every `candidates` runs, their order turned and reversed
/// from one such cycle to the next, so that no candidate always follows the same one.
pub(super) fn candidate_of(run: usize, candidates: usize) -> usize {
    let n = candidates.max(1);
    let (cycle, j) = (run / n, run % n);
    let turn = (cycle / 2) % n;
    if cycle % 2 == 0 {
        (j + turn) % n
    } else {
        (n - 1 - j + turn) % n
    }
}

/// A trial frame's walk over pages `first..first + pages` of the class: each run of
/// [`TRIAL_PAGES`] (counted from the class's page 0) compared by `step(plan, tally, i)` — `i`
/// from 0, in order — with the plan of [`candidate_of`] the run, and timed from its second page
/// into `tally.trial`.
pub(super) fn walk_trial<P>(
    first: usize,
    pages: usize,
    plans: &[P],
    tally: &mut Tally,
    mut step: impl FnMut(&P, &mut Tally, usize),
) {
    let mut i = 0;
    while i < pages {
        let run = (first + i) / TRIAL_PAGES;
        let end = ((run + 1) * TRIAL_PAGES - first).min(pages);
        let k = candidate_of(run, plans.len());
        step(&plans[k], tally, i);
        let (at, before) = (Instant::now(), tally.pages);
        for j in i + 1..end {
            step(&plans[k], tally, j);
        }
        let nanos = at.elapsed().as_nanos() as u64;
        if let Some(t) = tally.trial.get_mut(k) {
            t.nanos += nanos;
            t.pages += tally.pages - before;
        }
        i = end;
    }
}

/// The median of a few ratios (the lower middle one of an even count).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_table_is_never_tried_and_small_frames_are_not_timed() {
        let mut t = IsaTuner::default();
        let scalar = Kernels::for_isa(Isa::Scalar).unwrap();
        for _ in 0..20 {
            assert_eq!(t.pick(scalar, true).0.isa, Isa::Scalar);
        }
        let best = Kernels::best();
        for _ in 0..20 {
            let (k, trial) = t.pick(best, false);
            assert_eq!((k.isa, trial), (best.isa, false));
        }
        assert_eq!(t.chosen().map(candidate), None);
        assert!(t.scores().is_empty());
    }

    /// A candidate's (table, scan, next-page rule), as the test names them.
    type Candidate = (Isa, PageScan, NextPage);

    fn candidate(k: Kernels) -> Candidate {
        (k.isa, k.scan, k.next_page)
    }

    fn every_candidate() -> Vec<Candidate> {
        [Isa::Avx512, Isa::Avx2, Isa::Wide]
            .into_iter()
            .filter(|i| i.available())
            .flat_map(|i| PageScan::ALL.map(|s| (i, s)))
            .flat_map(|(i, s)| NextPage::ALL.map(|n| (i, s, n)))
            .collect()
    }

    /// Runs one round of trial frames: `nanos(candidate, frame)` is a candidate's time for 100
    /// pages in trial frame `frame`. Checks that every frame of the round is a trial whose plan
    /// runs the baseline, with the candidates in `tables`' order, and that the table kept before
    /// the round (`before`) stays the choice until the round's last frame.
    fn round(
        t: &mut IsaTuner,
        tables: &[Candidate],
        before: Option<Candidate>,
        nanos: impl Fn(Candidate, usize) -> u64,
    ) {
        let best = Kernels::best();
        for frame in 0..TRIALS {
            assert_eq!(t.chosen().map(candidate), before, "frame {frame} of the round");
            let (k, trial) = t.pick(best, true);
            assert!(trial, "frame {frame} of the round is a trial");
            assert_eq!(candidate(k), tables[0], "the plan's own table is the baseline");
            assert_eq!(t.tables().iter().map(|&k| candidate(k)).collect::<Vec<_>>(), tables);
            let times: Vec<TrialTime> =
                tables.iter().map(|&c| TrialTime { nanos: nanos(c, frame), pages: 100 }).collect();
            t.record(&times);
        }
    }

    #[test]
    fn every_table_is_tried_with_each_scan_and_next_page_rule_and_the_fastest_per_page_kept() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let tables = every_candidate();
        assert!(tables.len() >= 6, "wide with every scan and both next-page rules at least");
        // The warm-up frame runs the calibrated table, untimed.
        let (k, trial) = t.pick(best, true);
        assert_eq!((candidate(k), trial), (candidate(best), false));
        // The narrowest table reading pages whole and leaving the next page to the hardware is
        // made the fastest: 100 ns a page against 130 for the others.
        let fastest = (Isa::Wide, PageScan::Whole, NextPage::Hardware);
        round(&mut t, &tables, None, |c, _| if c == fastest { 10_000 } else { 13_000 });
        assert_eq!(t.chosen().map(candidate), Some(fastest));
        // Its score is its time over the baseline's; every candidate is scored, fastest first.
        let scores = t.scores();
        assert_eq!(scores.len(), tables.len());
        assert_eq!((candidate(scores[0].0), scores[0].1), (fastest, 10.0 / 13.0));
        assert!(scores[1..].iter().all(|&(_, s)| s == 1.0), "{scores:?}");
        // From then on the kept table runs, eligible or not, untimed, until the next round.
        let _ = t.pick(best, false);
        for _ in 0..RETRY_EVERY {
            let (k, trial) = t.pick(best, true);
            assert_eq!((candidate(k), trial), (fastest, false));
        }
        // The next round: the baseline itself (the widest table stopping at the first
        // difference and prefetching) is the fastest now, and is kept; meanwhile the last choice
        // still reads as the tuned table.
        let widest = tables[0];
        assert_eq!((widest.1, widest.2), (PageScan::FirstDifference, NextPage::Prefetch));
        round(&mut t, &tables, Some(fastest), |c, _| if c == widest { 10_000 } else { 13_000 });
        assert_eq!(t.chosen().map(candidate), Some(widest));
        assert_eq!(candidate(t.pick(best, true).0), widest);
    }

    /// The host slows down frame by frame (its memory takes 1× to 2.2× as long), which moves
    /// every candidate of a frame alike; the fastest (10 % ahead of every other) is also hit
    /// by a burst of load in one frame (×3), which the median leaves out. A frame where a
    /// candidate timed no page, or the wrong count of candidates came back, counts for nothing.
    #[test]
    fn a_table_is_ranked_beside_the_baseline_by_the_median_of_its_frames() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let _ = t.pick(best, true);
        let tables = every_candidate();
        let fastest = tables[tables.len() / 2];
        // Not counted: a candidate without pages, and a short list.
        let _ = t.pick(best, true);
        let mut times = vec![TrialTime { nanos: 1000, pages: 10 }; tables.len()];
        times[3].pages = 0;
        t.record(&times);
        t.record(&times[1..]);
        assert!(t.ratios.iter().all(Vec::is_empty));
        round(&mut t, &tables, None, |c, frame| {
            let pace = 1.0 + 1.2 * frame as f64 / TRIALS as f64;
            let cost = if c == fastest { 90.0 } else { 100.0 };
            let burst = if c == fastest && frame == 2 { 3.0 } else { 1.0 };
            (cost * pace * burst * 100.0) as u64
        });
        assert_eq!(t.chosen().map(candidate), Some(fastest));
    }

    #[test]
    fn each_candidate_runs_once_a_cycle_and_follows_a_different_one_from_cycle_to_cycle() {
        for n in [1, 2, 6, 12, 18] {
            let mut before = vec![std::collections::HashSet::new(); n];
            for cycle in 0..2 * n {
                let mut seen: Vec<usize> = (0..n).map(|j| candidate_of(cycle * n + j, n)).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n}, cycle {cycle}");
                for run in cycle * n + 1..(cycle + 1) * n {
                    before[candidate_of(run, n)].insert(candidate_of(run - 1, n));
                }
            }
            for (k, b) in before.iter().enumerate() {
                assert!(n < 3 || b.len() >= 2, "n {n}: candidate {k} always follows {b:?}");
            }
        }
    }

    /// The walk steps every page once, in order, with its run's plan, and times each run from
    /// its second page: pages 5..75 of the class cut into runs 5..16, 16..32, 32..48, 48..64,
    /// 64..75 (a pool block need not start at a run).
    #[test]
    fn a_trial_walk_steps_each_page_once_with_its_runs_candidate() {
        let plans = [0usize, 1, 2];
        let mut tally = Tally::new(0).with_trials(plans.len());
        let mut stepped = Vec::new();
        walk_trial(5, 70, &plans, &mut tally, |&plan, t, i| {
            stepped.push((i, plan));
            t.pages += 1;
        });
        // Three candidates: runs 0–2 take them in order, runs 3–5 reversed.
        let runs = [(0, 11), (1, 16), (2, 16), (2, 16), (1, 11)];
        let want: Vec<(usize, usize)> =
            runs.iter().flat_map(|&(c, len)| std::iter::repeat_n(c, len)).enumerate().collect();
        assert_eq!(stepped, want);
        // Each run's pages but its first, per candidate: 10; 15 + 10; 15 + 15.
        assert_eq!(tally.trial.iter().map(|t| t.pages).collect::<Vec<_>>(), [10, 25, 30]);
        assert_eq!(tally.pages, 70);
    }
}
