//! AVX2 and AVX-512 lane diffs, and a prefetch hint. The only `unsafe` of the compare.
//!
//! Each routine loads a page plane of live and shadow with unaligned loads (planes are 64-byte
//! aligned, but nothing here relies on it), compares lane-wise and gathers one bit per lane:
//!
//! ```text
//! AVX2    w=1: cmpeq_epi8  + movemask_epi8          32 lanes / op
//!         w=2: cmpeq_epi16 x2, packs_epi16, permute4x64, movemask_epi8   32 lanes / op
//!         w=4: cmpeq_epi32 + movemask_ps            8 lanes / op
//!         w=8: cmpeq_epi64 + movemask_pd            4 lanes / op
//!         w=12: cmpeq_epi32 + movemask_ps, then each lane's three u32 bits folded to one
//! AVX-512 w=k: cmpneq_epi{8,16,32,64}_mask          64 / 32 / 16 / 8 lanes / op (mask registers)
//! ```
//!
//! Safe wrappers are handed out only through [`avx2_kernels`] / [`avx512_kernels`], which check the
//! CPU first; the array parameter types fix every length, so no load can go out of bounds.

#![allow(unsafe_code)]

use super::lanes::{Isa, Kernels};

/// The AVX2 table, if this CPU has AVX2.
pub(crate) fn avx2_kernels() -> Option<Kernels> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Kernels {
                isa: Isa::Avx2,
                d1: avx2::d1,
                d2: avx2::d2,
                d4: avx2::d4,
                d8: avx2::d8,
                d12: avx2::d12,
                r1: avx2::r1,
                r2: avx2::r2,
                r4: avx2::r4,
                r8: avx2::r8,
                r12: avx2::r12,
            });
        }
    }
    None
}

/// The AVX-512 table, if this CPU has AVX-512 F and BW.
pub(crate) fn avx512_kernels() -> Option<Kernels> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
            return Some(Kernels {
                isa: Isa::Avx512,
                d1: avx512::d1,
                d2: avx512::d2,
                d4: avx512::d4,
                d8: avx512::d8,
                d12: avx512::d12,
                r1: avx512::r1,
                r2: avx512::r2,
                r4: avx512::r4,
                r8: avx512::r8,
                r12: avx512::r12,
            });
        }
    }
    None
}

/// Hints the CPU to start loading the cache line at `addr`. A prefetch never faults and never
/// reads memory architecturally, so any address is allowed; a no-op off x86-64.
#[inline(always)]
pub(crate) fn prefetch_addr(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it does not fault on any address and has no effect visible to
    // the program; SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::lanes::run;

    pub(super) fn r1(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: AVX2 was detected before this function was made reachable.
        unsafe { r1_impl(l, s, o) }
    }
    pub(super) fn r2(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r2_impl(l, s, o) }
    }
    pub(super) fn r4(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r4_impl(l, s, o) }
    }
    pub(super) fn r8(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r8_impl(l, s, o) }
    }
    pub(super) fn r12(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r12_impl(l, s, o) }
    }
    pub(super) fn d12(l: &[u8; 768], s: &[u8; 768]) -> u64 {
        // SAFETY: AVX2 was detected before this function was made reachable.
        unsafe { d12_impl(l, s) }
    }

    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx2")]
    unsafe fn r12_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<768>(|a, b| unsafe { d12_impl(a, b) }, l, s, o)
    }

    // The run loops carry the target feature themselves, so the per-plane routine inlines into
    // them: one call per run of planes, not one per plane.

    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx2")]
    unsafe fn r1_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: the closure runs inside this function, whose features the caller guarantees.
        run::<64>(|a, b| unsafe { d1_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx2")]
    unsafe fn r2_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<128>(|a, b| unsafe { d2_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx2")]
    unsafe fn r4_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<256>(|a, b| unsafe { d4_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx2")]
    unsafe fn r8_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<512>(|a, b| unsafe { d8_impl(a, b) }, l, s, o)
    }

    // Each safe wrapper below is stored only in the table built by `avx2_kernels` after
    // `is_x86_feature_detected!("avx2")` returned true; the module is private, so nothing else can
    // call them.

    pub(super) fn d1(l: &[u8; 64], s: &[u8; 64]) -> u64 {
        // SAFETY: AVX2 was detected before this function was made reachable (see above).
        unsafe { d1_impl(l, s) }
    }
    pub(super) fn d2(l: &[u8; 128], s: &[u8; 128]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d2_impl(l, s) }
    }
    pub(super) fn d4(l: &[u8; 256], s: &[u8; 256]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d4_impl(l, s) }
    }
    pub(super) fn d8(l: &[u8; 512], s: &[u8; 512]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d8_impl(l, s) }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn load(p: &[u8], i: usize) -> __m256i {
        debug_assert!(p.len() >= (i + 1) * 32);
        // SAFETY: callers pass fixed-size arrays and `i` below `len / 32`; loadu has no alignment need.
        unsafe { _mm256_loadu_si256(p.as_ptr().add(i * 32) as *const __m256i) }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn d1_impl(l: &[u8; 64], s: &[u8; 64]) -> u64 {
        let mut m = 0u64;
        for i in 0..2 {
            // SAFETY: i < 2 and the arrays hold 64 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            let eq = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) as u32;
            m |= (!eq as u64) << (32 * i);
        }
        m
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn d2_impl(l: &[u8; 128], s: &[u8; 128]) -> u64 {
        let mut m = 0u64;
        for i in 0..2 {
            // SAFETY: 2*i+1 < 4 and the arrays hold 128 bytes.
            let (a0, b0, a1, b1) = unsafe { (load(l, 2 * i), load(s, 2 * i), load(l, 2 * i + 1), load(s, 2 * i + 1)) };
            // Each 16-bit lane's result is 0 or -1, so signed saturation packs it to one byte.
            let packed = _mm256_packs_epi16(_mm256_cmpeq_epi16(a0, b0), _mm256_cmpeq_epi16(a1, b1));
            // packs works per 128-bit half: [a.lo, b.lo, a.hi, b.hi]; restore [a.lo, a.hi, b.lo, b.hi].
            let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
            let eq = _mm256_movemask_epi8(ordered) as u32;
            m |= (!eq as u64) << (32 * i);
        }
        m
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn d4_impl(l: &[u8; 256], s: &[u8; 256]) -> u64 {
        let mut m = 0u64;
        for i in 0..8 {
            // SAFETY: i < 8 and the arrays hold 256 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            let eq = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b))) as u64;
            m |= (!eq & 0xff) << (8 * i);
        }
        m
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn d12_impl(l: &[u8; 768], s: &[u8; 768]) -> u64 {
        let mut eq = [0u64; 3];
        for i in 0..24 {
            // SAFETY: i < 24 and the arrays hold 768 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            let bits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b))) as u64;
            eq[i / 8] |= bits << (8 * (i % 8));
        }
        super::super::lanes::lanes_of_12(&eq)
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn d8_impl(l: &[u8; 512], s: &[u8; 512]) -> u64 {
        let mut m = 0u64;
        for i in 0..16 {
            // SAFETY: i < 16 and the arrays hold 512 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            let eq = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b))) as u64;
            m |= (!eq & 0xf) << (4 * i);
        }
        m
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::lanes::run;

    pub(super) fn r1(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: AVX-512 F+BW were detected before this function was made reachable.
        unsafe { r1_impl(l, s, o) }
    }
    pub(super) fn r2(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r2_impl(l, s, o) }
    }
    pub(super) fn r4(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r4_impl(l, s, o) }
    }
    pub(super) fn r8(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r8_impl(l, s, o) }
    }
    pub(super) fn r12(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as for `r1`.
        unsafe { r12_impl(l, s, o) }
    }
    pub(super) fn d12(l: &[u8; 768], s: &[u8; 768]) -> u64 {
        // SAFETY: AVX-512 F+BW were detected before this function was made reachable.
        unsafe { d12_impl(l, s) }
    }

    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn r12_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<768>(|a, b| unsafe { d12_impl(a, b) }, l, s, o)
    }

    // The run loops carry the target feature themselves, so the per-plane routine inlines into
    // them: one call per run of planes, not one per plane.

    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn r1_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: the closure runs inside this function, whose features the caller guarantees.
        run::<64>(|a, b| unsafe { d1_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn r2_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<128>(|a, b| unsafe { d2_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn r4_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<256>(|a, b| unsafe { d4_impl(a, b) }, l, s, o)
    }
    /// # Safety
    /// The CPU must support the module's target features.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn r8_impl(l: &[u8], s: &[u8], o: &mut [u64]) {
        // SAFETY: as in `r1_impl`.
        run::<512>(|a, b| unsafe { d8_impl(a, b) }, l, s, o)
    }

    // As in `avx2`: these wrappers become reachable only through `avx512_kernels`, after
    // AVX-512 F and BW were detected.

    pub(super) fn d1(l: &[u8; 64], s: &[u8; 64]) -> u64 {
        // SAFETY: AVX-512 F+BW were detected before this function was made reachable.
        unsafe { d1_impl(l, s) }
    }
    pub(super) fn d2(l: &[u8; 128], s: &[u8; 128]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d2_impl(l, s) }
    }
    pub(super) fn d4(l: &[u8; 256], s: &[u8; 256]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d4_impl(l, s) }
    }
    pub(super) fn d8(l: &[u8; 512], s: &[u8; 512]) -> u64 {
        // SAFETY: as for `d1`.
        unsafe { d8_impl(l, s) }
    }

    /// # Safety
    /// The CPU must support AVX-512 F.
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: &[u8], i: usize) -> __m512i {
        debug_assert!(p.len() >= (i + 1) * 64);
        // SAFETY: callers pass fixed-size arrays and `i` below `len / 64`; loadu has no alignment need.
        unsafe { _mm512_loadu_si512(p.as_ptr().add(i * 64) as *const _) }
    }

    /// # Safety
    /// The CPU must support AVX-512 F and BW.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn d1_impl(l: &[u8; 64], s: &[u8; 64]) -> u64 {
        // SAFETY: the arrays hold exactly one 64-byte vector.
        let (a, b) = unsafe { (load(l, 0), load(s, 0)) };
        _mm512_cmpneq_epi8_mask(a, b)
    }

    /// # Safety
    /// The CPU must support AVX-512 F and BW.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn d2_impl(l: &[u8; 128], s: &[u8; 128]) -> u64 {
        let mut m = 0u64;
        for i in 0..2 {
            // SAFETY: i < 2 and the arrays hold 128 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            m |= (_mm512_cmpneq_epi16_mask(a, b) as u64) << (32 * i);
        }
        m
    }

    /// # Safety
    /// The CPU must support AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn d4_impl(l: &[u8; 256], s: &[u8; 256]) -> u64 {
        let mut m = 0u64;
        for i in 0..4 {
            // SAFETY: i < 4 and the arrays hold 256 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            m |= (_mm512_cmpneq_epi32_mask(a, b) as u64) << (16 * i);
        }
        m
    }

    /// # Safety
    /// The CPU must support AVX-512 F and BW.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn d12_impl(l: &[u8; 768], s: &[u8; 768]) -> u64 {
        let mut eq = [0u64; 3];
        for i in 0..12 {
            // SAFETY: i < 12 and the arrays hold 768 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            eq[i / 4] |= (_mm512_cmpeq_epi32_mask(a, b) as u64) << (16 * (i % 4));
        }
        super::super::lanes::lanes_of_12(&eq)
    }

    /// # Safety
    /// The CPU must support AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn d8_impl(l: &[u8; 512], s: &[u8; 512]) -> u64 {
        let mut m = 0u64;
        for i in 0..8 {
            // SAFETY: i < 8 and the arrays hold 512 bytes.
            let (a, b) = unsafe { (load(l, i), load(s, i)) };
            m |= (_mm512_cmpneq_epi64_mask(a, b) as u64) << (8 * i);
        }
        m
    }
}
