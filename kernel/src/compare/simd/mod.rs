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

mod generic;
mod scalar;
mod wide;
mod x86;

#[cfg(test)]
mod tests;

pub(crate) use generic::Routines;
pub use scalar::scalar;
pub(crate) use x86::prefetch_addr;

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

/// A table of diff routines for one ISA.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Which ISA the table runs on.
    pub isa: Isa,
    pub(crate) routines: Routines,
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
        Some(Kernels { isa, routines })
    }

    /// The fastest table this CPU runs, detected once.
    pub fn best() -> Kernels {
        static BEST: OnceLock<Kernels> = OnceLock::new();
        *BEST.get_or_init(|| {
            [Isa::Avx512, Isa::Avx2, Isa::Wide, Isa::Scalar]
                .into_iter()
                .find_map(Kernels::for_isa)
                .expect("the scalar table is always available")
        })
    }
}
