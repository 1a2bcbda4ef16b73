//! The x86-64 backends — AVX2 and AVX-512 — and a prefetch hint: the only `unsafe` of the compare.
//!
//! Each backend is a zero-sized token implementing [`LaneOps`] with the ISA's intrinsics, and
//! the entry points [`backend!`] generates: the generic lane diff compiled for the ISA.
//!
//! ```text
//! AVX2     load: loadu_si256                     32 bytes / vector
//!          ne8:  cmpeq_epi8  + movemask_epi8     32 lanes
//!          ne16: cmpeq_epi16 + packs_epi16 + movemask_epi8 (each lane's byte twice; fold)   16 lanes
//!          ne32: cmpeq_epi32 + movemask_ps       8 lanes
//!          ne64: cmpeq_epi64 + movemask_pd       4 lanes
//! AVX-512  load: loadu_si512                     64 bytes / vector
//!          ne8/16/32/64: cmpneq_epi{8,16,32,64}_mask straight into a mask register
//! equal?   AVX2: or(acc, xor(a, b)), testz        AVX-512: or(acc, xor(a, b)), test_epi64_mask
//! ```
//!
//! Why this is sound, in three steps:
//! 1. A token ([`avx2::Avx2`], [`avx512::Avx512`]) is created only by its `detect`, after
//!    `is_x86_feature_detected!` confirmed every feature the backend uses. Its methods use
//!    intrinsics inside `unsafe {}` justified by the token's existence, and check that every load
//!    stays inside the slice it was given.
//! 2. The entry points are safe functions with `#[target_feature]` that take a token, so they
//!    can only be called with one in hand; calling them from code not compiled for the features
//!    needs an `unsafe {}` that points at the token.
//! 3. The routine tables hold plain safe functions that obtain a token (a cached feature check)
//!    and call the entry points.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use super::generic::LaneOps;

/// Hints the CPU to start loading the cache line at `addr`. A prefetch never faults and never
/// reads memory architecturally, so any address is allowed; a no-op off x86-64.
#[inline(always)]
pub fn prefetch_addr(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it does not fault on any address and has no effect visible to
    // the program; SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Hints the CPU to start loading the cache line at `addr` into the L2 cache (PREFETCHT1): for
/// lines wanted later than an L1 prefetch's. As [`prefetch_addr`], any address is allowed; a
/// no-op off x86-64.
#[inline(always)]
pub fn prefetch_l2_addr(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT1 is a hint: it does not fault on any address and has no effect visible to
    // the program; SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Generates, for a token type and its target features, the entry points compiled for those
/// features and `routines()`, the table of safe wrappers (or `None` without the features).
#[cfg(target_arch = "x86_64")]
macro_rules! backend {
    ($token:ident, $features:literal) => {
        use super::super::generic::{diff, diff12, equal, page_lanes, planes_differ, run, Routines};
        use crate::schema::PlaneRun;

        #[target_feature(enable = $features)]
        fn d1(t: $token, l: &[u8; 64], s: &[u8; 64]) -> u64 {
            diff::<_, 64, 1>(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn d2(t: $token, l: &[u8; 128], s: &[u8; 128]) -> u64 {
            diff::<_, 128, 2>(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn d4(t: $token, l: &[u8; 256], s: &[u8; 256]) -> u64 {
            diff::<_, 256, 4>(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn d8(t: $token, l: &[u8; 512], s: &[u8; 512]) -> u64 {
            diff::<_, 512, 8>(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn d12(t: $token, l: &[u8; 768], s: &[u8; 768]) -> u64 {
            diff12(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn eq(t: $token, l: &[u8], s: &[u8]) -> bool {
            equal(t, l, s)
        }
        #[target_feature(enable = $features)]
        fn differ(t: $token, l: &[u8], s: &[u8], p: &[(usize, usize)]) -> u64 {
            planes_differ(t, l, s, p)
        }
        #[target_feature(enable = $features)]
        fn lanes(t: $token, l: &[u8], s: &mut [u8], r: &[PlaneRun], o: &mut [u64], copy: bool) -> u64 {
            page_lanes(t, l, s, r, o, copy)
        }
        // The run loops carry the features themselves, so the plane diff inlines into them: one
        // call per run of planes, not one per plane.
        #[target_feature(enable = $features)]
        fn r1(t: $token, l: &[u8], s: &[u8], o: &mut [u64]) {
            run(|a, b| equal(t, a, b), |a, b| diff::<_, 64, 1>(t, a, b), l, s, o)
        }
        #[target_feature(enable = $features)]
        fn r2(t: $token, l: &[u8], s: &[u8], o: &mut [u64]) {
            run(|a, b| equal(t, a, b), |a, b| diff::<_, 128, 2>(t, a, b), l, s, o)
        }
        #[target_feature(enable = $features)]
        fn r4(t: $token, l: &[u8], s: &[u8], o: &mut [u64]) {
            run(|a, b| equal(t, a, b), |a, b| diff::<_, 256, 4>(t, a, b), l, s, o)
        }
        #[target_feature(enable = $features)]
        fn r8(t: $token, l: &[u8], s: &[u8], o: &mut [u64]) {
            run(|a, b| equal(t, a, b), |a, b| diff::<_, 512, 8>(t, a, b), l, s, o)
        }
        #[target_feature(enable = $features)]
        fn r12(t: $token, l: &[u8], s: &[u8], o: &mut [u64]) {
            run(|a, b| equal(t, a, b), |a, b| diff12(t, a, b), l, s, o)
        }

        /// A token for a table entry: the table exists only after detection succeeded, so this
        /// repeats a cached check that cannot fail.
        #[inline(always)]
        fn token() -> $token {
            $token::detect().expect("the table is handed out only after feature detection")
        }

        /// The table, or `None` when this CPU lacks the features.
        pub(crate) fn routines() -> Option<Routines> {
            $token::detect()?;
            // SAFETY (every entry below): `token()` proves the CPU has `$features`, which is all
            // the called entry point is compiled for.
            Some(Routines {
                d1: |l, s| unsafe { d1(token(), l, s) },
                d2: |l, s| unsafe { d2(token(), l, s) },
                d4: |l, s| unsafe { d4(token(), l, s) },
                d8: |l, s| unsafe { d8(token(), l, s) },
                d12: |l, s| unsafe { d12(token(), l, s) },
                r1: |l, s, o| unsafe { r1(token(), l, s, o) },
                r2: |l, s, o| unsafe { r2(token(), l, s, o) },
                r4: |l, s, o| unsafe { r4(token(), l, s, o) },
                r8: |l, s, o| unsafe { r8(token(), l, s, o) },
                r12: |l, s, o| unsafe { r12(token(), l, s, o) },
                eq: |l, s| unsafe { eq(token(), l, s) },
                planes_differ: |l, s, p| unsafe { differ(token(), l, s, p) },
                page_lanes: |l, s, r, o, c| unsafe { lanes(token(), l, s, r, o, c) },
            })
        }
    };
}

/// AVX2: 256-bit vectors, compare results gathered with `movemask`.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use super::LaneOps;
    use std::arch::x86_64::*;

    /// Proof that this CPU runs AVX2.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx2(());

    impl Avx2 {
        /// The token, if this CPU has AVX2.
        #[inline(always)]
        pub(crate) fn detect() -> Option<Self> {
            std::arch::is_x86_feature_detected!("avx2").then_some(Self(()))
        }
    }

    // SAFETY (every `unsafe {}` in this impl): a value of `Avx2` exists only after
    // `is_x86_feature_detected!("avx2")` returned true, and every intrinsic used is AVX2 or older.
    impl LaneOps for Avx2 {
        type V = __m256i;
        const BYTES: usize = 32;

        #[inline(always)]
        fn load(self, bytes: &[u8]) -> __m256i {
            assert!(bytes.len() >= 32);
            // SAFETY: the token proves AVX2 (see the impl); the assert proves 32 readable bytes;
            // `loadu` has no alignment requirement.
            unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
        }

        #[inline(always)]
        fn ne8(self, a: __m256i, b: __m256i) -> u64 {
            // SAFETY: see the impl.
            let eq = unsafe { _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) } as u32;
            !eq as u64
        }

        #[inline(always)]
        fn ne16(self, a: __m256i, b: __m256i) -> u64 {
            // Each 16-bit result is 0 or -1, so signed saturation packs it to one byte. packs works
            // per 128-bit half, so lanes 0..8 land in bytes 0..8 and lanes 8..16 in bytes 16..24.
            // SAFETY: see the impl.
            let m = unsafe {
                let eq = _mm256_cmpeq_epi16(a, b);
                _mm256_movemask_epi8(_mm256_packs_epi16(eq, eq))
            } as u32;
            let eq = (m & 0xff) | ((m >> 8) & 0xff00);
            (!eq & 0xffff) as u64
        }

        #[inline(always)]
        fn ne32(self, a: __m256i, b: __m256i) -> u64 {
            // SAFETY: see the impl.
            let eq = unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b))) } as u64;
            !eq & 0xff
        }

        #[inline(always)]
        fn ne64(self, a: __m256i, b: __m256i) -> u64 {
            // SAFETY: see the impl.
            let eq = unsafe { _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b))) } as u64;
            !eq & 0xf
        }

        #[inline(always)]
        fn zero(self) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_setzero_si256() }
        }

        #[inline(always)]
        fn or_xor(self, acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_or_si256(acc, _mm256_xor_si256(a, b)) }
        }

        #[inline(always)]
        fn is_zero(self, v: __m256i) -> bool {
            // VPTEST: ZF is set iff `v & v` is all zero.
            // SAFETY: see the impl.
            unsafe { _mm256_testz_si256(v, v) != 0 }
        }
    }

    backend!(Avx2, "avx2");
}

/// AVX-512 (F + BW): 512-bit vectors, compares straight into mask registers.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use super::LaneOps;
    use std::arch::x86_64::*;

    /// Proof that this CPU runs AVX-512 F and BW.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx512(());

    impl Avx512 {
        /// The token, if this CPU has AVX-512 F and BW.
        #[inline(always)]
        pub(crate) fn detect() -> Option<Self> {
            (std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw"))
                .then_some(Self(()))
        }
    }

    // SAFETY (every `unsafe {}` in this impl): a value of `Avx512` exists only after AVX-512 F and
    // BW were detected, and every intrinsic used needs at most those.
    impl LaneOps for Avx512 {
        type V = __m512i;
        const BYTES: usize = 64;

        #[inline(always)]
        fn load(self, bytes: &[u8]) -> __m512i {
            assert!(bytes.len() >= 64);
            // SAFETY: the token proves AVX-512 F (see the impl); the assert proves 64 readable
            // bytes; `loadu` has no alignment requirement.
            unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
        }

        #[inline(always)]
        fn ne8(self, a: __m512i, b: __m512i) -> u64 {
            // SAFETY: see the impl.
            unsafe { _mm512_cmpneq_epi8_mask(a, b) }
        }

        #[inline(always)]
        fn ne16(self, a: __m512i, b: __m512i) -> u64 {
            // SAFETY: see the impl.
            unsafe { _mm512_cmpneq_epi16_mask(a, b) as u64 }
        }

        #[inline(always)]
        fn ne32(self, a: __m512i, b: __m512i) -> u64 {
            // SAFETY: see the impl.
            unsafe { _mm512_cmpneq_epi32_mask(a, b) as u64 }
        }

        #[inline(always)]
        fn ne64(self, a: __m512i, b: __m512i) -> u64 {
            // SAFETY: see the impl.
            unsafe { _mm512_cmpneq_epi64_mask(a, b) as u64 }
        }

        #[inline(always)]
        fn zero(self) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_setzero_si512() }
        }

        #[inline(always)]
        fn or_xor(self, acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_or_si512(acc, _mm512_xor_si512(a, b)) }
        }

        #[inline(always)]
        fn is_zero(self, v: __m512i) -> bool {
            // One mask bit per 64-bit element of `v & v` that is non-zero.
            // SAFETY: see the impl.
            unsafe { _mm512_test_epi64_mask(v, v) == 0 }
        }
    }

    backend!(Avx512, "avx512f,avx512bw");
}

/// Off x86-64 neither backend exists.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) mod avx2 {
    /// Never available here.
    pub(crate) fn routines() -> Option<super::super::generic::Routines> {
        None
    }
}

/// Off x86-64 neither backend exists.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) mod avx512 {
    /// Never available here.
    pub(crate) fn routines() -> Option<super::super::generic::Routines> {
        None
    }
}
