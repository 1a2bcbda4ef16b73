//! Lane diff primitives: which of a page's 64 lanes differ between a live and a shadow plane.
//!
//! ```text
//! diff_w(live: [u8; 64*w], shadow: [u8; 64*w]) -> u64   bit i set <=> lane i differs bitwise
//! ```
//!
//! One routine per lane width (1, 2, 4, 8, 12 bytes), each written three or four times: a scalar
//! reference (one lane at a time, the oracle), a portable `wide` version (SSE2/NEON/scalar at the
//! crate's compile-time features), and AVX2 / AVX-512 versions in [`super::x86`]. The CPU is asked
//! once; [`Kernels::best`] caches the fastest table in a `OnceLock`, so dispatch is one indirect call
//! per plane. Bit planes need no routine: their diff is `live ^ shadow`.
//!
//! Property tests at the bottom prove every table agrees with the scalar reference.

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
    pub(crate) d1: fn(&[u8; 64], &[u8; 64]) -> u64,
    pub(crate) d2: fn(&[u8; 128], &[u8; 128]) -> u64,
    pub(crate) d4: fn(&[u8; 256], &[u8; 256]) -> u64,
    pub(crate) d8: fn(&[u8; 512], &[u8; 512]) -> u64,
    pub(crate) d12: fn(&[u8; 768], &[u8; 768]) -> u64,
    /// Run versions: `out[i]` = diff of the `i`-th plane of consecutive planes (one call per run
    /// of same-width planes, so the loop stays inside one target-feature function).
    pub(crate) r1: RunFn,
    pub(crate) r2: RunFn,
    pub(crate) r4: RunFn,
    pub(crate) r8: RunFn,
    pub(crate) r12: RunFn,
}

/// Diffs `out.len()` consecutive planes of `live` and `shadow`; planes beyond the shorter input
/// are left untouched.
pub(crate) type RunFn = fn(&[u8], &[u8], &mut [u64]);

/// Applies a one-plane diff to each plane of a run.
#[inline(always)]
pub(crate) fn run<const N: usize>(d: impl Fn(&[u8; N], &[u8; N]) -> u64, live: &[u8], shadow: &[u8], out: &mut [u64]) {
    for ((l, s), o) in live.chunks_exact(N).zip(shadow.chunks_exact(N)).zip(out) {
        if let (Ok(l), Ok(s)) = (l.try_into(), s.try_into()) {
            *o = d(l, s);
        }
    }
}

macro_rules! run_fns {
    ($d1:path, $d2:path, $d4:path, $d8:path, $d12:path) => {
        (
            |l: &[u8], s: &[u8], o: &mut [u64]| run::<64>($d1, l, s, o),
            |l: &[u8], s: &[u8], o: &mut [u64]| run::<128>($d2, l, s, o),
            |l: &[u8], s: &[u8], o: &mut [u64]| run::<256>($d4, l, s, o),
            |l: &[u8], s: &[u8], o: &mut [u64]| run::<512>($d8, l, s, o),
            |l: &[u8], s: &[u8], o: &mut [u64]| run::<768>($d12, l, s, o),
        )
    };
}

/// Lanes of a 12-byte plane that differ, from the plane's 192 four-byte "equal" bits (bit `i` of
/// the 192-bit string `eq` is set when the `i`-th `u32` of live and shadow are equal): lane `j`
/// is unchanged iff bits `3j`, `3j+1`, `3j+2` are all set.
///
/// Eight lanes are 24 bits: AND each bit with its two upper neighbours, then gather every third
/// bit with three shift-or-mask steps (bits 0,3,…,21 → 0..8).
#[inline(always)]
pub(crate) fn lanes_of_12(eq: &[u64; 3]) -> u64 {
    let mut changed = 0u64;
    for k in 0..8 {
        let start = 24 * k;
        let (w, off) = (start / 64, start % 64);
        let mut bits = eq[w] >> off;
        if off > 40 && w + 1 < 3 {
            bits |= eq[w + 1] << (64 - off);
        }
        let m = bits & 0xff_ffff;
        let mut x = m & (m >> 1) & (m >> 2) & 0x24_9249;
        x = (x | (x >> 2)) & 0x0c_30c3;
        x = (x | (x >> 4)) & 0xf00f;
        x = (x | (x >> 8)) & 0xff;
        changed |= (!x & 0xff) << (8 * k);
    }
    changed
}

impl Kernels {
    /// The table for `isa`, or `None` when this CPU lacks it.
    pub fn for_isa(isa: Isa) -> Option<Kernels> {
        match isa {
            Isa::Scalar => Some(SCALAR),
            Isa::Wide => {
                let (r1, r2, r4, r8, r12) = run_fns!(wide_d1, wide_d2, wide_d4, wide_d8, wide_d12);
                Some(Kernels {
                    isa,
                    d1: wide_d1,
                    d2: wide_d2,
                    d4: wide_d4,
                    d8: wide_d8,
                    d12: wide_d12,
                    r1,
                    r2,
                    r4,
                    r8,
                    r12,
                })
            }
            Isa::Avx2 => super::x86::avx2_kernels(),
            Isa::Avx512 => super::x86::avx512_kernels(),
        }
    }

    /// The fastest table this CPU runs, detected once.
    pub fn best() -> Kernels {
        static BEST: OnceLock<Kernels> = OnceLock::new();
        *BEST.get_or_init(|| {
            [Isa::Avx512, Isa::Avx2, Isa::Wide].into_iter().find_map(Kernels::for_isa).unwrap_or(SCALAR)
        })
    }
}

const SCALAR: Kernels = {
    let (r1, r2, r4, r8, r12) =
        run_fns!(scalar::<64, 1>, scalar::<128, 2>, scalar::<256, 4>, scalar::<512, 8>, scalar::<768, 12>);
    Kernels {
        isa: Isa::Scalar,
        d1: scalar::<64, 1>,
        d2: scalar::<128, 2>,
        d4: scalar::<256, 4>,
        d8: scalar::<512, 8>,
        d12: scalar::<768, 12>,
        r1,
        r2,
        r4,
        r8,
        r12,
    }
};

/// Reference: lane `i` differs iff its `W` bytes differ.
pub fn scalar<const N: usize, const W: usize>(live: &[u8; N], shadow: &[u8; N]) -> u64 {
    let mut m = 0u64;
    for (i, (a, b)) in live.chunks_exact(W).zip(shadow.chunks_exact(W)).enumerate() {
        m |= ((a != b) as u64) << i;
    }
    m
}

fn wide_d1(live: &[u8; 64], shadow: &[u8; 64]) -> u64 {
    let mut m = 0u64;
    for i in 0..2 {
        let a = wide::u8x32::from(arr::<32>(&live[i * 32..]));
        let b = wide::u8x32::from(arr::<32>(&shadow[i * 32..]));
        m |= (!a.simd_eq(b).to_bitmask() as u64 & 0xffff_ffff) << (i * 32);
    }
    m
}

fn wide_d2(live: &[u8; 128], shadow: &[u8; 128]) -> u64 {
    let mut m = 0u64;
    for i in 0..4 {
        let a = wide::u16x16::from(bytemuck::cast::<[u8; 32], [u16; 16]>(arr::<32>(&live[i * 32..])));
        let b = wide::u16x16::from(bytemuck::cast::<[u8; 32], [u16; 16]>(arr::<32>(&shadow[i * 32..])));
        m |= (!a.simd_eq(b).to_bitmask() as u64 & 0xffff) << (i * 16);
    }
    m
}

fn wide_d4(live: &[u8; 256], shadow: &[u8; 256]) -> u64 {
    let mut m = 0u64;
    for i in 0..8 {
        let a = wide::u32x8::from(bytemuck::cast::<[u8; 32], [u32; 8]>(arr::<32>(&live[i * 32..])));
        let b = wide::u32x8::from(bytemuck::cast::<[u8; 32], [u32; 8]>(arr::<32>(&shadow[i * 32..])));
        m |= (!a.simd_eq(b).to_bitmask() as u64 & 0xff) << (i * 8);
    }
    m
}

fn wide_d8(live: &[u8; 512], shadow: &[u8; 512]) -> u64 {
    let mut m = 0u64;
    for i in 0..16 {
        let a = wide::u64x4::from(bytemuck::cast::<[u8; 32], [u64; 4]>(arr::<32>(&live[i * 32..])));
        let b = wide::u64x4::from(bytemuck::cast::<[u8; 32], [u64; 4]>(arr::<32>(&shadow[i * 32..])));
        m |= (!a.simd_eq(b).to_bitmask() as u64 & 0xf) << (i * 4);
    }
    m
}

fn wide_d12(live: &[u8; 768], shadow: &[u8; 768]) -> u64 {
    let mut eq = [0u64; 3];
    for i in 0..24 {
        let a = wide::u32x8::from(bytemuck::cast::<[u8; 32], [u32; 8]>(arr::<32>(&live[i * 32..])));
        let b = wide::u32x8::from(bytemuck::cast::<[u8; 32], [u32; 8]>(arr::<32>(&shadow[i * 32..])));
        eq[i / 8] |= (a.simd_eq(b).to_bitmask() as u64 & 0xff) << (8 * (i % 8));
    }
    lanes_of_12(&eq)
}

#[inline(always)]
fn arr<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&s[..N]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Mutates `flips` random bytes of a copy of `live`: sparse differences exercise single lanes,
    /// dense ones whole vectors.
    fn pair<const N: usize>() -> impl Strategy<Value = ([u8; N], [u8; N])> {
        (
            proptest::collection::vec(any::<u8>(), N),
            proptest::collection::vec((0..N, any::<u8>()), 0..20),
            any::<bool>(),
        )
            .prop_map(|(live, flips, dense)| {
                let live: [u8; N] = live.try_into().unwrap();
                let mut shadow = live;
                for (i, x) in flips {
                    shadow[i] = x;
                }
                if dense {
                    for (i, b) in shadow.iter_mut().enumerate() {
                        if i % 3 == 0 {
                            *b = b.wrapping_add(1);
                        }
                    }
                }
                (live, shadow)
            })
    }

    fn tables() -> Vec<Kernels> {
        Isa::ALL.into_iter().filter_map(Kernels::for_isa).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn every_isa_agrees_with_scalar_1((l, s) in pair::<64>()) {
            for k in tables() { prop_assert_eq!((k.d1)(&l, &s), scalar::<64, 1>(&l, &s), "{:?}", k.isa); }
        }
        #[test]
        fn every_isa_agrees_with_scalar_2((l, s) in pair::<128>()) {
            for k in tables() { prop_assert_eq!((k.d2)(&l, &s), scalar::<128, 2>(&l, &s), "{:?}", k.isa); }
        }
        #[test]
        fn every_isa_agrees_with_scalar_4((l, s) in pair::<256>()) {
            for k in tables() { prop_assert_eq!((k.d4)(&l, &s), scalar::<256, 4>(&l, &s), "{:?}", k.isa); }
        }
        #[test]
        fn every_isa_agrees_with_scalar_8((l, s) in pair::<512>()) {
            for k in tables() { prop_assert_eq!((k.d8)(&l, &s), scalar::<512, 8>(&l, &s), "{:?}", k.isa); }
        }
        #[test]
        fn every_isa_agrees_with_scalar_12((l, s) in pair::<768>()) {
            for k in tables() { prop_assert_eq!((k.d12)(&l, &s), scalar::<768, 12>(&l, &s), "{:?}", k.isa); }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn runs_equal_plane_by_plane(planes in 1usize..5, seed in proptest::collection::vec(any::<u8>(), 768 * 5), flips in proptest::collection::vec((0usize..768 * 5, any::<u8>()), 0..30)) {
            let live = seed.clone();
            let mut shadow = seed;
            for (i, x) in flips { shadow[i] = x; }
            for k in tables() {
                for (w, r) in [(64usize, k.r1), (128, k.r2), (256, k.r4), (512, k.r8), (768, k.r12)] {
                    let n = planes * w;
                    let mut out = vec![0u64; planes];
                    r(&live[..n], &shadow[..n], &mut out);
                    for (i, &m) in out.iter().enumerate() {
                        let (l, s) = (&live[i * w..(i + 1) * w], &shadow[i * w..(i + 1) * w]);
                        let expected = l.chunks_exact(w / 64).zip(s.chunks_exact(w / 64)).enumerate()
                            .fold(0u64, |acc, (lane, (a, b))| acc | (((a != b) as u64) << lane));
                        prop_assert_eq!(m, expected, "{:?} width {}", k.isa, w / 64);
                    }
                }
            }
        }
    }

    #[test]
    fn last_byte_of_each_lane_counts() {
        for k in tables() {
            for lane in [0usize, 31, 32, 63] {
                let l = [0u8; 256];
                let mut s = [0u8; 256];
                s[lane * 4 + 3] = 1;
                assert_eq!((k.d4)(&l, &s), 1 << lane, "{:?}", k.isa);
                let l = [0u8; 512];
                let mut s = [0u8; 512];
                s[lane * 8 + 7] = 0x80;
                assert_eq!((k.d8)(&l, &s), 1 << lane, "{:?}", k.isa);
                let l = [0u8; 128];
                let mut s = [0u8; 128];
                s[lane * 2 + 1] = 0x80;
                assert_eq!((k.d2)(&l, &s), 1 << lane, "{:?}", k.isa);
                for byte in [0, 5, 11] {
                    let l = [0u8; 768];
                    let mut s = [0u8; 768];
                    s[lane * 12 + byte] = 1;
                    assert_eq!((k.d12)(&l, &s), 1 << lane, "{:?} byte {byte}", k.isa);
                }
            }
        }
    }

    #[test]
    fn best_is_available() {
        assert!(Kernels::best().isa.available());
        assert_eq!(Isa::parse("avx2"), Some(Isa::Avx2));
    }
}
