//! Lane diffs and the choice among them: which of a page's 64 lanes differ between a live and a
//! shadow plane.
//!
//! ```text
//! diff_w(live: [u8; 64*w], shadow: [u8; 64*w]) -> u64   bit i set <=> lane i differs bitwise
//! ```
//!
//! Layout (memchr's `arch/` split):
//! - [`generic`]: the algorithm, once, over the private [`generic::LaneOps`] vector trait;
//! - [`scalar`]: the one-lane-at-a-time reference, the oracle of every other path;
//! - [`wide`]: the generic algorithm over the `wide` crate's portable vectors;
//! - [`x86`]: the generic algorithm over AVX2 and AVX-512 (the compare's only `unsafe`).
//!
//! This module only selects: [`Kernels::for_isa`] asks a backend for its table (x86 backends
//! detect their features first), and [`Kernels::best`] caches the fastest table in a `OnceLock`,
//! so dispatch is one indirect call per plane or run of planes. Bit planes need no routine:
//! their diff is `live ^ shadow`.
//!
//! "Fastest" is measured, not assumed: the widest vectors are not the fastest on every CPU (an
//! AVX-512 path has lost to the portable one), so `best` times every vector table the CPU runs on
//! a small synthetic page set (a cache-resident mix of equal pages and pages with changed lanes,
//! the routines a dense compare calls) and keeps the fastest; a wider ISA wins ties within
//! [`CALIBRATION_TIE`]. It costs well under a millisecond, once per process; the timings are in
//! [`Kernels::calibration`].
//!
//! A compare given `best` goes on to time the vector tables, each with each [`PageScan`], on its
//! own first large frames and may keep another (see `compare::tune`): on cached pages the ranking
//! can differ from out of cache.

mod generic;
mod scalar;
mod wide;
mod x86;

#[cfg(test)]
mod tests;

pub(crate) use generic::Routines;
pub use scalar::scalar;
pub use x86::{prefetch_addr, prefetch_l2_addr};

use std::sync::OnceLock;

/// An instruction set the compare can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// One lane at a time; the reference every other path is tested against.
    Scalar,
    /// The `wide` crate's portable vectors.
    Wide,
    /// x86-64 AVX2.
    Avx2,
    /// x86-64 AVX-512 (F + BW).
    Avx512,
}

impl Isa {
    /// Every ISA, slowest first.
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Wide, Isa::Avx2, Isa::Avx512];

    /// Whether this CPU can run it.
    pub fn available(self) -> bool {
        Kernels::for_isa(self).is_some()
    }

    /// Lower-case name (`scalar`, `wide`, `avx2`, `avx512`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Wide => "wide",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// Parses [`Isa::name`].
    pub fn parse(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|i| i.name() == s)
    }
}

/// How a full frame's page walk reads a page before its lane diffs: the "equal?" pass that tells
/// a page with no change from one to diff.
///
/// Which is faster depends on the machine, so a compare given [`Kernels::best`] tries each on its
/// own frames (see `compare::tune`). On an AMD EPYC Zen 3 with AVX2 only (2026-12-02; one
/// thread `memcmp`s 1M ShooterCharacter's 158 MB at ~24 GB/s) [`PageScan::Whole`] compared 1M
/// actors 8–15 % faster at 1–100 % changed (0.70 → 0.78 of `memcmp` at 1 %, 0.63 → 0.68 at 10
/// %) and level at 0.1 %: there a changed page's diff, streaming the page from memory, cost its
/// memory time plus its compute; read whole first, the memory time is spent at `memcmp`'s pace.
/// Where the lane diff is cheaper beside the memory stream (the AMD EPYC with AVX-512 the paced
/// prefetch of `Plan::diff_runs` was tuned on), stopping early saves the second pass. On the same
/// Zen 3 (2026-12-06, side by side on the same frames with `--example compare_ab`)
/// [`PageScan::Lanes`] with [`NextPage::Prefetch`] took 0.89 of the whole scan's time at 10 and
/// 100 % changed, 0.96 at 1 %, 0.99 at 0.1 % (`fraction_of_memcmp` 0.70 → 0.80 at 10 %, 0.66 →
/// 0.75 at 100 %): in L2 a changed page's compare fell from ~330 to ~245 ns at 10 % changed and
/// from ~420 to ~320 at 100 % (`--example compare_probe -- --actors 2048`), an equal page's rose
/// from ~137 to ~158. Copying each changed plane into the shadow inside the scan, right after
/// its mask (session 63), took another 3–5 % off at 10 % changed and 7 % at 100 % (level at 0.1
/// and 1 %; side by side, both tables): the copies now overlap the page's loads instead of
/// following them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageScan {
    /// Stop at the first block of bytes that differs; the lane diffs read the rest of a changed
    /// page from memory (each plane's lines of the next page asked for as they go).
    FirstDifference,
    /// Read every byte of the page's planes (an XOR/OR pass, one test per plane); the lane
    /// diffs of a changed page then read it from L1.
    Whole,
    /// Read every byte of the page's planes once, each vector compared lane by lane as it
    /// arrives: every plane's lane mask in the one read, no "equal?" pass and no second read of
    /// a changed page (an equal page pays a compare and a mask per vector instead of an XOR and
    /// an OR), each plane that differs copied into the shadow as soon as its mask is known (where
    /// every lane of the page is compared). For a dense plan only; another plan's pages are read
    /// as with `FirstDifference`.
    Lanes,
}

impl PageScan {
    /// Every scan, the default first.
    pub const ALL: [PageScan; 3] = [PageScan::FirstDifference, PageScan::Whole, PageScan::Lanes];

    /// Lower-case name (`first-difference`, `whole`, `lanes`).
    pub fn name(self) -> &'static str {
        match self {
            PageScan::FirstDifference => "first-difference",
            PageScan::Whole => "whole",
            PageScan::Lanes => "lanes",
        }
    }

    /// Parses [`PageScan::name`].
    pub fn parse(s: &str) -> Option<PageScan> {
        PageScan::ALL.into_iter().find(|scan| scan.name() == s)
    }
}

/// Whether a changed page's lane diffs, in a full frame's walk over consecutive pages, ask for
/// the next page's lines as they go.
///
/// Which is faster depends on the machine, so a compare given [`Kernels::best`] tries both with
/// every table and scan on its own frames (see `compare::tune`). The paced prefetch
/// (`Plan::diff_runs`) took 1M ShooterCharacter at 10 % changed from 480 to 340 ns a page on the
/// AMD EPYC with AVX-512 it was tuned on (session 26), and was worth ~0.15 of `memcmp` on an
/// AVX2-only Zen 3 (session 36): there the hardware prefetchers alone left a changed page's diff
/// and the memory stream one after the other. On an AMD EPYC Zen 4 (family 25, model 17;
/// 2026-12-04) it is the other way round: the same compare, one thread, ran 372–377 ns a page
/// with the hardware alone against 510–516 with the prefetch (0.81 against 0.59 of `memcmp`),
/// and prefetching two or three pages ahead, or into L2 only (hint T1), was slower still.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextPage {
    /// Each plane's lines of the next page are prefetched just before the plane's diff.
    Prefetch,
    /// The next page is left to the hardware prefetchers.
    Hardware,
}

impl NextPage {
    /// Both, the default first.
    pub const ALL: [NextPage; 2] = [NextPage::Prefetch, NextPage::Hardware];

    /// Lower-case name (`prefetch`, `hardware`).
    pub fn name(self) -> &'static str {
        match self {
            NextPage::Prefetch => "prefetch",
            NextPage::Hardware => "hardware",
        }
    }

    /// Parses [`NextPage::name`].
    pub fn parse(s: &str) -> Option<NextPage> {
        NextPage::ALL.into_iter().find(|n| n.name() == s)
    }
}

/// A table of diff routines for one ISA.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Which ISA the table runs on.
    pub isa: Isa,
    /// How a page is read before its lane diffs ([`PageScan::FirstDifference`] unless set with
    /// [`Kernels::with_scan`] or kept by a compare's tuning).
    pub scan: PageScan,
    /// Whether a changed page's diffs prefetch the next page ([`NextPage::Prefetch`] unless set
    /// with [`Kernels::with_next_page`] or kept by a compare's tuning).
    pub next_page: NextPage,
    pub(crate) routines: Routines,
    /// Whether a compare may try the other vector tables on its large full frames and keep the
    /// fastest (see [`crate::compare::tune`]); set by [`Kernels::best`], not by
    /// [`Kernels::for_isa`].
    tune: bool,
}

impl Kernels {
    /// The table for `isa`, or `None` when this CPU lacks it.
    pub fn for_isa(isa: Isa) -> Option<Kernels> {
        let routines = match isa {
            Isa::Scalar => scalar::ROUTINES,
            Isa::Wide => wide::ROUTINES,
            Isa::Avx2 => x86::avx2::routines()?,
            Isa::Avx512 => x86::avx512::routines()?,
        };
        Some(Kernels { isa, scan: PageScan::FirstDifference, next_page: NextPage::Prefetch, routines, tune: false })
    }

    /// The table's name as the `compare` command takes it apart: `isa:scan:next-page`, e.g.
    /// `avx2:lanes:prefetch`.
    pub fn name(self) -> String {
        format!("{}:{}:{}", self.isa.name(), self.scan.name(), self.next_page.name())
    }

    /// This table with `scan` as its page scan.
    pub fn with_scan(self, scan: PageScan) -> Kernels {
        Kernels { scan, ..self }
    }

    /// This table with `next_page` for a changed page's next page.
    pub fn with_next_page(self, next_page: NextPage) -> Kernels {
        Kernels { next_page, ..self }
    }

    /// The fastest table this CPU runs, chosen once per process by a short calibration (see the
    /// module docs); never a table slower than [`Isa::Wide`] in that calibration.
    ///
    /// A compare given this table times the vector tables, each with each [`PageScan`] and each
    /// [`NextPage`], on its first large full frames and keeps the fastest there (see
    /// [`crate::compare::tune`]; [`crate::compare::ShadowState::tuned_isa`],
    /// [`crate::compare::ShadowState::tuned_scan`] and
    /// [`crate::compare::ShadowState::tuned_next_page`] tell which); a table from
    /// [`Kernels::for_isa`] is used as given.
    pub fn best() -> Kernels {
        Kernels { tune: true, ..calibrated().0 }
    }

    /// Whether compares may replace this table by a faster one they measure ([`Kernels::best`]).
    pub fn tuned(self) -> bool {
        self.tune
    }

    /// What chose [`Kernels::best`]: each vector table this CPU runs with its best time (ns) for
    /// the calibration's synthetic pages, widest ISA first.
    pub fn calibration() -> &'static [(Isa, u64)] {
        &calibrated().1
    }
}

/// A wider ISA is kept over a faster narrower one when it is at most this much slower (ratio):
/// timing noise must not flip the choice between two equally fast tables.
pub const CALIBRATION_TIE: f64 = 1.03;

/// The calibrated choice and its timings, computed once.
fn calibrated() -> &'static (Kernels, Vec<(Isa, u64)>) {
    static BEST: OnceLock<(Kernels, Vec<(Isa, u64)>)> = OnceLock::new();
    BEST.get_or_init(|| {
        let candidates: Vec<Kernels> =
            [Isa::Avx512, Isa::Avx2, Isa::Wide].into_iter().filter_map(Kernels::for_isa).collect();
        let times = calibrate(&candidates);
        let fastest = times.iter().copied().min().unwrap_or(0);
        // Widest first: the first within the tie margin of the fastest.
        let pick = candidates
            .iter()
            .zip(&times)
            .find(|(_, &t)| t as f64 <= fastest as f64 * CALIBRATION_TIE)
            .map(|(k, _)| *k)
            .unwrap_or(scalar_kernels());
        (pick, candidates.iter().map(|k| k.isa).zip(times).collect())
    })
}

fn scalar_kernels() -> Kernels {
    Kernels {
        isa: Isa::Scalar,
        scan: PageScan::FirstDifference,
        next_page: NextPage::Prefetch,
        routines: scalar::ROUTINES,
        tune: false,
    }
}

/// Planes of one synthetic calibration page: (width in bytes, planes), widest first as a layout
/// places them (three movement vectors, object references, a float, two bytes).
const CALIBRATION_PAGE: [(usize, usize); 4] = [(12, 3), (8, 3), (4, 1), (1, 2)];
/// Pages of the calibration set: about 34 KB of live and shadow bytes, cache-resident.
const CALIBRATION_PAGES: usize = 8;

/// Best-of-rounds time (ns) of each table over the calibration pages; rounds alternate between
/// the tables so a burst of noise hits them alike.
fn calibrate(tables: &[Kernels]) -> Vec<u64> {
    let page_bytes: usize = CALIBRATION_PAGE.iter().map(|&(w, n)| 64 * w * n).sum();
    let live: Vec<u8> = (0..page_bytes * CALIBRATION_PAGES).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut shadow = live.clone();
    // Odd pages change: one lane of each movement plane in one page, several in another, a
    // float in a third; even pages are equal.
    for p in (1..CALIBRATION_PAGES).step_by(2) {
        let base = p * page_bytes;
        for lane in (0..64).step_by(p * 4) {
            shadow[base + lane * 12 + p % 12] ^= 1;
            shadow[base + 3 * 768 + 3 * 512 + lane * 4] ^= 0x80;
        }
    }
    let mut best = vec![u64::MAX; tables.len()];
    let mut masks = [0u64; 16];
    for _round in 0..7 {
        for (k, b) in tables.iter().zip(&mut best) {
            let t = std::time::Instant::now();
            for _ in 0..16 {
                for (l, s) in live.chunks_exact(page_bytes).zip(shadow.chunks_exact(page_bytes)) {
                    let (l, s) = (std::hint::black_box(l), std::hint::black_box(s));
                    if (k.routines.eq)(l, s) {
                        continue;
                    }
                    let mut at = 0;
                    for &(w, n) in &CALIBRATION_PAGE {
                        let r = &k.routines;
                        let f = match w {
                            12 => r.r12,
                            8 => r.r8,
                            4 => r.r4,
                            _ => r.r1,
                        };
                        let bytes = at..at + 64 * w * n;
                        f(&l[bytes.clone()], &s[bytes], &mut masks[..n]);
                        at += 64 * w * n;
                    }
                    std::hint::black_box(&masks);
                }
            }
            *b = (*b).min(t.elapsed().as_nanos() as u64);
        }
    }
    best
}
