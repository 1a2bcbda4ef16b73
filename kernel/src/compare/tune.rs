//! Choosing the diff table from the compare's own frames.
//!
//! ```text
//! a full frame (every page walked) of at least TUNE_MIN_PAGES pages, with `Kernels::best()`:
//!     the first one:              warm-up, not timed (page faults, a new shadow)
//!     the next TRIALS × tables:   each vector table with each page scan and each next-page
//!                                 rule in turn, timed per page walked
//!     then:                       the table with the lowest best-of-TRIALS time per page
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

use super::simd::{Isa, Kernels, NextPage, PageScan};

/// Frames with fewer pages are not timed: too short to rank the tables, and cached.
pub const TUNE_MIN_PAGES: usize = 1024;

/// Timed frames per table.
///
/// Five: the least of five frames is a table's cost in all but a very loud minute — with three,
/// on an AMD EPYC shared with busy guests, the whole-page scan (~10 % faster at 10 % changed in
/// every side-by-side run) lost its trials now and then.
pub const TRIALS: usize = 5;

/// Eligible frames between two rounds of trials once a table is kept (two minutes of full frames
/// at 30 Hz; a round runs the other tables on `TRIALS` frames each).
pub const RETRY_EVERY: usize = 3600;

/// One class's choice of table, made over its first large full frames and checked again every
/// [`RETRY_EVERY`] of them.
#[derive(Debug, Default)]
pub(super) struct IsaTuner {
    /// The vector tables this CPU runs, widest first, each with each page scan and each
    /// next-page rule (filled at the first eligible frame; never fewer than six: `wide` runs
    /// everywhere).
    tables: Vec<Kernels>,
    /// Per table: nanoseconds per page walked, one entry per timed frame.
    samples: Vec<Vec<f64>>,
    /// Eligible frames since the last choice, or since the start (whose first is the warm-up).
    frames: usize,
    /// The table kept after the last round of trials.
    chosen: Option<Kernels>,
}

impl IsaTuner {
    /// The table for this frame and, when it is a trial, the index to [`Self::record`] its time
    /// under. `eligible`: a full frame of at least [`TUNE_MIN_PAGES`] pages.
    pub(super) fn pick(&mut self, asked: Kernels, eligible: bool) -> (Kernels, Option<usize>) {
        if !asked.tuned() {
            return (asked, None);
        }
        if !eligible {
            return (self.chosen.unwrap_or(asked), None);
        }
        if self.tables.is_empty() {
            self.tables = [Isa::Avx512, Isa::Avx2, Isa::Wide]
                .into_iter()
                .filter_map(Kernels::for_isa)
                .flat_map(|k| PageScan::ALL.map(|scan| k.with_scan(scan)))
                .flat_map(|k| NextPage::ALL.map(|next| k.with_next_page(next)))
                .collect();
            self.samples = vec![Vec::new(); self.tables.len()];
        }
        // `frames` counts the eligible frames since the last choice (or since the start).
        self.frames += 1;
        let n = self.tables.len();
        match self.chosen {
            None if self.frames == 1 => (asked, None),
            None => self.trial((self.frames - 2) % n),
            Some(k) if self.frames <= RETRY_EVERY => (k, None),
            Some(_) => self.trial((self.frames - RETRY_EVERY - 1) % n),
        }
    }

    fn trial(&self, i: usize) -> (Kernels, Option<usize>) {
        (self.tables[i], Some(i))
    }

    /// Records trial `i`'s time; once every table has [`TRIALS`] the fastest is kept (until the
    /// next round, [`RETRY_EVERY`] eligible frames on).
    ///
    /// Each table is ranked by its best trial, not its median: a busy host only ever adds time to
    /// a frame, so the least a table took is the closest to its cost. (With medians of three, on
    /// an AMD EPYC shared with other guests, the table kept at 10 % changed flipped between the
    /// two page scans from run to run although one was ~10 % faster in every side-by-side run.)
    pub(super) fn record(&mut self, i: usize, nanos: u64, pages: usize) {
        let Some(samples) = self.samples.get_mut(i) else { return };
        samples.push(nanos as f64 / pages.max(1) as f64);
        if self.samples.iter().all(|s| s.len() >= TRIALS) {
            let least: Vec<f64> =
                self.samples.iter().map(|s| s.iter().copied().fold(f64::INFINITY, f64::min)).collect();
            let best = (0..least.len()).min_by(|&a, &b| least[a].total_cmp(&least[b]));
            self.chosen = best.map(|b| self.tables[b]);
            self.samples.iter_mut().for_each(Vec::clear);
            self.frames = 0;
        }
    }

    /// The table kept (with its page scan and next-page rule), once the trials are done.
    pub(super) fn chosen(&self) -> Option<Kernels> {
        self.chosen
    }
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
            assert_eq!((k.isa, trial), (best.isa, None));
        }
        assert_eq!(t.chosen().map(candidate), None);
    }

    /// A candidate's (table, scan, next-page rule), as the test names them.
    type Candidate = (Isa, PageScan, NextPage);

    fn candidate(k: Kernels) -> Candidate {
        (k.isa, k.scan, k.next_page)
    }

    #[test]
    fn every_table_is_tried_with_each_scan_and_next_page_rule_and_the_fastest_per_page_kept() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let tables: Vec<Candidate> = [Isa::Avx512, Isa::Avx2, Isa::Wide]
            .into_iter()
            .filter(|i| i.available())
            .flat_map(|i| PageScan::ALL.map(|s| (i, s)))
            .flat_map(|(i, s)| NextPage::ALL.map(|n| (i, s, n)))
            .collect();
        assert!(tables.len() >= 6, "wide with every scan and both next-page rules at least");
        // The warm-up frame runs the calibrated table, untimed.
        let (k, trial) = t.pick(best, true);
        assert_eq!((candidate(k), trial), (candidate(best), None));
        let mut tried = vec![0; tables.len()];
        // The narrowest table reading pages whole and leaving the next page to the hardware is
        // made the fastest: 100 ns a page against 130 for the others.
        let fastest = (Isa::Wide, PageScan::Whole, NextPage::Hardware);
        for _ in 0..TRIALS * tables.len() {
            let (k, trial) = t.pick(best, true);
            let i = trial.expect("a trial frame");
            assert_eq!(candidate(k), tables[i]);
            tried[i] += 1;
            assert_eq!(t.chosen().map(candidate), None);
            let nanos = if candidate(k) == fastest { 100 } else { 130 } * 2000;
            t.record(i, nanos, 2000);
        }
        assert!(tried.iter().all(|&n| n == TRIALS), "{tried:?}");
        assert_eq!(t.chosen().map(candidate), Some(fastest));
        // From then on the kept table runs, eligible or not, untimed, until the next round.
        let _ = t.pick(best, false);
        for _ in 0..RETRY_EVERY {
            let (k, trial) = t.pick(best, true);
            assert_eq!((candidate(k), trial), (fastest, None));
        }
        // The next round: the widest table stopping at the first difference and prefetching is
        // the fastest now, and is kept; meanwhile the last choice still reads as the tuned table.
        let widest = tables[0];
        assert_eq!((widest.1, widest.2), (PageScan::FirstDifference, NextPage::Prefetch));
        tried.iter_mut().for_each(|n| *n = 0);
        for _ in 0..TRIALS * tables.len() {
            assert_eq!(t.chosen().map(candidate), Some(fastest));
            let (k, trial) = t.pick(best, true);
            let i = trial.expect("a trial frame of the second round");
            assert_eq!(candidate(k), tables[i]);
            tried[i] += 1;
            t.record(i, if candidate(k) == widest { 100 } else { 130 } * 2000, 2000);
        }
        assert!(tried.iter().all(|&n| n == TRIALS), "{tried:?}");
        assert_eq!(t.chosen().map(candidate), Some(widest));
        let k = t.pick(best, true).0;
        assert_eq!(candidate(k), widest);
    }

    #[test]
    fn a_table_is_ranked_by_its_best_trial() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let _ = t.pick(best, true);
        let n = t.tables.len();
        // Table 0 has one quiet frame and two slowed by a busy host; every other table is steady
        // and slower than table 0's quiet frame (its median, 200, would lose to their 120).
        for round in 0..TRIALS {
            for _ in 0..n {
                let (_, trial) = t.pick(best, true);
                let i = trial.expect("a trial frame");
                let nanos = match (i, round) {
                    (0, 0) => 90,
                    (0, _) => 200,
                    _ => 120,
                };
                t.record(i, nanos * 1000, 1000);
            }
        }
        let kept = t.tables[0];
        assert_eq!(t.chosen().map(candidate), Some(candidate(kept)));
    }
}
