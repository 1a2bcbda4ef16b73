//! Choosing the diff table from the compare's own frames.
//!
//! ```text
//! a full frame (every page walked) of at least TUNE_MIN_PAGES pages, with `Kernels::best()`:
//!     the first one:              warm-up, not timed (page faults, a new shadow)
//!     the next 2 × TRIALS × (tables − 1):
//!                                 pairs of frames, each vector table with each page scan and
//!                                 each next-page rule against the first of them (the baseline),
//!                                 one after the other, in turns which goes first; timed per page
//!     then:                       the table with the lowest median of its times over the
//!                                 baseline's in the same pair (the baseline's is 1)
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
//! Why pairs: on a host whose memory slows and speeds up with its neighbours' load from second to
//! second, a table's own times say more about the minute it ran in than about the table. Each
//! was ranked by its best of five frames spread over the round until session 63, and on an AMD
//! EPYC Zen 3 (1M ShooterCharacter, 100 % changed) that kept `first-difference` in two runs of
//! three although it was 8 % slower than `lanes` side by side (`--example compare_ab`); two frames
//! a few milliseconds apart see the same memory, and their ratio is the table's cost.

use super::simd::{Isa, Kernels, NextPage, PageScan};

/// Frames with fewer pages are not timed: too short to rank the tables, and cached.
pub const TUNE_MIN_PAGES: usize = 1024;

/// Timed pairs per table (other than the baseline): its rank is the median of as many ratios, so
/// two pairs spoiled by a burst of load cannot move it.
pub const TRIALS: usize = 5;

/// Trial frames in a round over `tables` tables (with each page scan and next-page rule): a pair
/// for each table but the baseline, [`TRIALS`] times.
pub const fn round_frames(tables: usize) -> usize {
    2 * TRIALS * tables.saturating_sub(1)
}

/// Eligible frames between two rounds of trials once a table is kept (two minutes of full frames
/// at 30 Hz; a round runs the other tables on `TRIALS` pairs each).
pub const RETRY_EVERY: usize = 3600;

/// One class's choice of table, made over its first large full frames and checked again every
/// [`RETRY_EVERY`] of them.
#[derive(Debug, Default)]
pub(super) struct IsaTuner {
    /// The vector tables this CPU runs, widest first, each with each page scan and each
    /// next-page rule (filled at the first eligible frame; never fewer than six: `wide` runs
    /// everywhere). The first is the baseline every other one is timed against.
    tables: Vec<Kernels>,
    /// Per table: its time per page over the baseline's in the same pair, one per pair (the
    /// baseline's own entry stays empty).
    ratios: Vec<Vec<f64>>,
    /// The first frame of the pair under way: its table and time per page.
    pending: Option<(usize, f64)>,
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
            self.ratios = vec![Vec::new(); self.tables.len()];
        }
        // `frames` counts the eligible frames since the last choice (or since the start).
        self.frames += 1;
        match self.chosen {
            None if self.frames == 1 => (asked, None),
            None => self.trial(self.frames - 2),
            Some(k) if self.frames <= RETRY_EVERY => (k, None),
            Some(_) => self.trial(self.frames - RETRY_EVERY - 1),
        }
    }

    /// The `k`-th trial frame of a round: pair `k / 2` puts challenger `c` (the tables after the
    /// baseline in turn) beside the baseline, the baseline first in every other pair of `c`'s.
    fn trial(&self, k: usize) -> (Kernels, Option<usize>) {
        // At least six tables (see `tables`): five challengers or more.
        let challengers = self.tables.len() - 1;
        let (pair, second) = (k / 2, k % 2 == 1);
        let (c, round) = (1 + pair % challengers, pair / challengers);
        let baseline_first = (round + c) % 2 == 0;
        let i = if second == baseline_first { c } else { 0 };
        (self.tables[i], Some(i))
    }

    /// Records trial `i`'s time; the second frame of a pair (the baseline and one other table)
    /// adds the other's ratio. Once every table has [`TRIALS`] ratios the fastest is kept (until
    /// the next round, [`RETRY_EVERY`] eligible frames on).
    ///
    /// Each table is ranked by the median of its ratios: a burst of load on the host slows one
    /// frame, and spoils one pair of the five.
    pub(super) fn record(&mut self, i: usize, nanos: u64, pages: usize) {
        if i >= self.tables.len() {
            return;
        }
        let per_page = nanos as f64 / pages.max(1) as f64;
        match self.pending.take() {
            // The baseline and a challenger, in either order: the challenger's ratio.
            Some((j, first)) if (i == 0) != (j == 0) => {
                let (c, t_c, t_b) = if i == 0 { (j, first, per_page) } else { (i, per_page, first) };
                self.ratios[c].push(t_c / t_b.max(f64::MIN_POSITIVE));
            }
            // Not a pair (a trial frame went unrecorded): this frame starts the next one.
            _ => self.pending = Some((i, per_page)),
        }
        if self.ratios.iter().skip(1).all(|r| r.len() >= TRIALS) {
            let score = |r: &Vec<f64>| if r.is_empty() { 1.0 } else { median(r) };
            let scores: Vec<f64> = self.ratios.iter().map(score).collect();
            let best = (0..scores.len()).min_by(|&a, &b| scores[a].total_cmp(&scores[b]));
            self.chosen = best.map(|b| self.tables[b]);
            self.ratios.iter_mut().for_each(Vec::clear);
            self.pending = None;
            self.frames = 0;
        }
    }

    /// The table kept (with its page scan and next-page rule), once the trials are done.
    pub(super) fn chosen(&self) -> Option<Kernels> {
        self.chosen
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
            assert_eq!((k.isa, trial), (best.isa, None));
        }
        assert_eq!(t.chosen().map(candidate), None);
    }

    /// A candidate's (table, scan, next-page rule), as the test names them.
    type Candidate = (Isa, PageScan, NextPage);

    fn candidate(k: Kernels) -> Candidate {
        (k.isa, k.scan, k.next_page)
    }

    /// Runs one round of trials: `nanos(table, pair)` is a trial frame's time for 1000 pages.
    /// Returns how many frames each table ran, checking that each frame runs the table it names,
    /// that every pair is the baseline (table 0) and one other, and that the table kept before
    /// the round (`before`) stays the choice until the round's last frame.
    fn round(
        t: &mut IsaTuner,
        tables: &[Candidate],
        before: Option<Candidate>,
        nanos: impl Fn(Candidate, usize) -> u64,
    ) -> Vec<usize> {
        let best = Kernels::best();
        let mut tried = vec![0; tables.len()];
        let frames = round_frames(tables.len());
        let mut pair = Vec::new();
        for frame in 0..frames {
            assert_eq!(t.chosen().map(candidate), before, "frame {frame} of the round");
            let (k, trial) = t.pick(best, true);
            let i = trial.expect("a trial frame");
            assert_eq!(candidate(k), tables[i]);
            tried[i] += 1;
            pair.push(i);
            if frame % 2 == 1 {
                assert_eq!(
                    pair.iter().filter(|&&i| i == 0).count(),
                    1,
                    "a pair is the baseline and one other: {pair:?}"
                );
                pair.clear();
            }
            t.record(i, nanos(candidate(k), frame / 2), 1000);
        }
        tried
    }

    fn every_candidate() -> Vec<Candidate> {
        [Isa::Avx512, Isa::Avx2, Isa::Wide]
            .into_iter()
            .filter(|i| i.available())
            .flat_map(|i| PageScan::ALL.map(|s| (i, s)))
            .flat_map(|(i, s)| NextPage::ALL.map(|n| (i, s, n)))
            .collect()
    }

    #[test]
    fn every_table_is_tried_with_each_scan_and_next_page_rule_and_the_fastest_per_page_kept() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let tables = every_candidate();
        assert!(tables.len() >= 6, "wide with every scan and both next-page rules at least");
        // The warm-up frame runs the calibrated table, untimed.
        let (k, trial) = t.pick(best, true);
        assert_eq!((candidate(k), trial), (candidate(best), None));
        // The narrowest table reading pages whole and leaving the next page to the hardware is
        // made the fastest: 100 ns a page against 130 for the others.
        let fastest = (Isa::Wide, PageScan::Whole, NextPage::Hardware);
        let tried = round(&mut t, &tables, None, |c, _| if c == fastest { 100_000 } else { 130_000 });
        let mut want = vec![TRIALS; tables.len()];
        want[0] = TRIALS * (tables.len() - 1);
        assert_eq!(tried, want, "the baseline in every pair, each other table in {TRIALS}");
        assert_eq!(t.chosen().map(candidate), Some(fastest));
        // From then on the kept table runs, eligible or not, untimed, until the next round.
        let _ = t.pick(best, false);
        for _ in 0..RETRY_EVERY {
            let (k, trial) = t.pick(best, true);
            assert_eq!((candidate(k), trial), (fastest, None));
        }
        // The next round: the baseline itself (the widest table stopping at the first
        // difference and prefetching) is the fastest now, and is kept; meanwhile the last choice
        // still reads as the tuned table.
        let widest = tables[0];
        assert_eq!((widest.1, widest.2), (PageScan::FirstDifference, NextPage::Prefetch));
        let tried = round(&mut t, &tables, Some(fastest), |c, _| if c == widest { 100_000 } else { 130_000 });
        assert_eq!(tried, want);
        assert_eq!(t.chosen().map(candidate), Some(widest));
        let k = t.pick(best, true).0;
        assert_eq!(candidate(k), widest);
    }

    /// Catches a tuner that ranks tables by their own times (best or median) instead of beside
    /// the baseline: the host slows down pair by pair — its memory takes 1× to 2.2× as long —
    /// and the fastest table (10 % ahead of every other) happens to run in the slow pairs. Its
    /// best frame (108 at least) loses to the others' (100: they met a quiet minute); its
    /// ratios (0.9) win. One of its pairs is also spoiled by a burst on its own frame (×3),
    /// which the median leaves out.
    #[test]
    fn a_table_is_ranked_beside_the_baseline_whatever_the_host_does_meanwhile() {
        let mut t = IsaTuner::default();
        let best = Kernels::best();
        let _ = t.pick(best, true);
        let tables = every_candidate();
        let fastest = tables[tables.len() / 2];
        let challengers = tables.len() - 1;
        let _ = round(&mut t, &tables, None, |c, pair| {
            let own = 1 + pair % challengers == tables.iter().position(|&x| x == fastest).unwrap();
            // The host's pace: the fastest table's pairs in slow minutes, the others' in quiet ones.
            let pace = if own { 1.2 + 1.2 * ((pair / challengers) as f64 / TRIALS as f64) } else { 1.0 };
            let cost = if c == fastest { 90.0 } else { 100.0 };
            let burst = if c == fastest && own && pair / challengers == 2 { 3.0 } else { 1.0 };
            (cost * pace * burst * 1000.0) as u64
        });
        assert_eq!(t.chosen().map(candidate), Some(fastest));
    }
}
