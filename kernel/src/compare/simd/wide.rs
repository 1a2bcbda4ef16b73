//! The portable backend: the generic lane diff over the `wide` crate's 256-bit vectors, which
//! lower to whatever the crate is compiled for (SSE2 pairs on baseline x86-64, NEON on aarch64,
//! plain integers elsewhere). No feature detection, no `unsafe`.

use super::generic::{diff, diff12, equal, page_lanes, planes_differ, run, LaneOps, Routines};
use wide::{u16x16, u32x8, u64x4, u8x32};

/// The portable token: available everywhere.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Portable;

impl LaneOps for Portable {
    type V = [u8; 32];
    const BYTES: usize = 32;

    #[inline(always)]
    fn load(self, bytes: &[u8]) -> [u8; 32] {
        let mut v = [0u8; 32];
        v.copy_from_slice(&bytes[..32]);
        v
    }

    #[inline(always)]
    fn ne8(self, a: [u8; 32], b: [u8; 32]) -> u64 {
        !u8x32::from(a).simd_eq(u8x32::from(b)).to_bitmask() as u64 & 0xffff_ffff
    }

    #[inline(always)]
    fn ne16(self, a: [u8; 32], b: [u8; 32]) -> u64 {
        let v = |x: [u8; 32]| u16x16::from(bytemuck::cast::<[u8; 32], [u16; 16]>(x));
        !v(a).simd_eq(v(b)).to_bitmask() as u64 & 0xffff
    }

    #[inline(always)]
    fn ne32(self, a: [u8; 32], b: [u8; 32]) -> u64 {
        let v = |x: [u8; 32]| u32x8::from(bytemuck::cast::<[u8; 32], [u32; 8]>(x));
        !v(a).simd_eq(v(b)).to_bitmask() as u64 & 0xff
    }

    #[inline(always)]
    fn ne64(self, a: [u8; 32], b: [u8; 32]) -> u64 {
        let v = |x: [u8; 32]| u64x4::from(bytemuck::cast::<[u8; 32], [u64; 4]>(x));
        !v(a).simd_eq(v(b)).to_bitmask() as u64 & 0xf
    }

    #[inline(always)]
    fn zero(self) -> [u8; 32] {
        [0; 32]
    }

    #[inline(always)]
    fn or_xor(self, acc: [u8; 32], a: [u8; 32], b: [u8; 32]) -> [u8; 32] {
        (u8x32::from(acc) | (u8x32::from(a) ^ u8x32::from(b))).to_array()
    }

    #[inline(always)]
    fn is_zero(self, v: [u8; 32]) -> bool {
        let w = bytemuck::cast::<[u8; 32], [u64; 4]>(v);
        (w[0] | w[1] | w[2] | w[3]) == 0
    }
}

/// The portable "equal?" pass.
fn eq(l: &[u8], s: &[u8]) -> bool {
    equal(Portable, l, s)
}

/// The portable table.
pub(crate) const ROUTINES: Routines = Routines {
    d1: |l, s| diff::<_, 64, 1>(Portable, l, s),
    d2: |l, s| diff::<_, 128, 2>(Portable, l, s),
    d4: |l, s| diff::<_, 256, 4>(Portable, l, s),
    d8: |l, s| diff::<_, 512, 8>(Portable, l, s),
    d12: |l, s| diff12(Portable, l, s),
    r1: |l, s, o| run(eq, |a, b| diff::<_, 64, 1>(Portable, a, b), l, s, o),
    r2: |l, s, o| run(eq, |a, b| diff::<_, 128, 2>(Portable, a, b), l, s, o),
    r4: |l, s, o| run(eq, |a, b| diff::<_, 256, 4>(Portable, a, b), l, s, o),
    r8: |l, s, o| run(eq, |a, b| diff::<_, 512, 8>(Portable, a, b), l, s, o),
    r12: |l, s, o| run(eq, |a, b| diff12(Portable, a, b), l, s, o),
    eq,
    planes_differ: |l, s, p| planes_differ(Portable, l, s, p),
    page_lanes: |l, s, r, o, c| page_lanes(Portable, l, s, r, o, c),
};
