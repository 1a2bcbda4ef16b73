//! One lane in and out of its planes: a plane's lane read, written or zeroed, a leaf gathered
//! from (or scattered into) its planes, a parent's value read from a page and its arrays; and
//! [`BitIter`] over the lanes of a mask.

use super::PageArrays;
use crate::schema::{ClassLayout, PlaneWidth, PAGE_LANES};
use crate::value::{self, Value};

/// Iterates the set bits of a `u64`, lowest first.
#[derive(Clone, Copy, Debug)]
pub struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// Gathers one lane's value of `parent` from a page (live or shadow) and its arrays.
pub(crate) fn read_parent(layout: &ClassLayout, page: &[u8], arrays: &PageArrays, lane: usize, parent: usize) -> Value {
    let p = &layout.parents[parent];
    let base = p.record_range.start;
    let mut record = vec![0u8; p.record_range.len() + 8];
    for l in p.leaves.clone() {
        let at = layout.leaves[l].record_offset - base;
        gather_leaf(layout, page, l, lane, &mut record[at..]);
    }
    value::decode_parent(layout, parent, &record, |a| arrays[a * PAGE_LANES + lane].as_slice())
}

/// Gathers leaf `leaf`'s byte form for lane `lane` from its planes (into the front of `out`).
pub(super) fn gather_leaf(layout: &ClassLayout, page: &[u8], leaf: usize, lane: usize, out: &mut [u8]) {
    let mut at = 0;
    for plane in &layout.planes[layout.leaves[leaf].planes.clone()] {
        let n = plane.width.lane_bytes();
        read_lane(page, plane.page_offset, plane.width, lane, &mut out[at..at + n]);
        at += n;
    }
}

/// Scatters leaf `leaf`'s byte form (the front of `src`) into lane `lane` of its planes.
pub(crate) fn scatter_leaf(layout: &ClassLayout, page: &mut [u8], leaf: usize, lane: usize, src: &[u8]) {
    let mut at = 0;
    for plane in &layout.planes[layout.leaves[leaf].planes.clone()] {
        let n = plane.width.lane_bytes();
        write_lane(page, plane.page_offset, plane.width, lane, &src[at..at + n]);
        at += n;
    }
}

/// Reads lane `lane` of a plane into `out` (`width.lane_bytes()` bytes).
pub(crate) fn read_lane(page: &[u8], offset: usize, width: PlaneWidth, lane: usize, out: &mut [u8]) {
    match width {
        PlaneWidth::Bit => {
            let word = u64::from_le_bytes(page[offset..offset + 8].try_into().unwrap_or_default());
            out[0] = (word >> lane & 1) as u8;
        }
        PlaneWidth::B1 => out[0] = page[offset + lane],
        PlaneWidth::B2 => copy_n::<2>(&page[offset + lane * 2..], out),
        PlaneWidth::B4 => copy_n::<4>(&page[offset + lane * 4..], out),
        PlaneWidth::B8 => copy_n::<8>(&page[offset + lane * 8..], out),
        PlaneWidth::B12 => copy_n::<12>(&page[offset + lane * 12..], out),
    }
}

/// Copies exactly `N` bytes (a fixed-size copy the compiler turns into one load and store).
#[inline(always)]
fn copy_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    dst[..N].copy_from_slice(&src[..N]);
}

/// Writes lane `lane` of a plane from `src` (`width.lane_bytes()` bytes).
pub(crate) fn write_lane(page: &mut [u8], offset: usize, width: PlaneWidth, lane: usize, src: &[u8]) {
    match width {
        PlaneWidth::Bit => {
            let mut word = u64::from_le_bytes(page[offset..offset + 8].try_into().unwrap_or_default());
            word = (word & !(1 << lane)) | (((src[0] != 0) as u64) << lane);
            page[offset..offset + 8].copy_from_slice(&word.to_le_bytes());
        }
        w => {
            let n = w.lane_bytes();
            page[offset + lane * n..offset + (lane + 1) * n].copy_from_slice(&src[..n]);
        }
    }
}

/// Writes the class defaults into lane `lane` of a page (live or shadow) whose lane is zero.
pub(crate) fn write_defaults(layout: &ClassLayout, page: &mut [u8], lane: usize) {
    for (plane, bytes) in &layout.default_planes {
        let p = &layout.planes[*plane];
        write_lane(page, p.page_offset, p.width, lane, bytes);
    }
}

/// Fills lane `lane`'s dynamic arrays of a page (`arrays`, as [`PageArrays`] holds them) with
/// their class defaults; an array without one is left as it is (empty, in a lane just freed).
pub(crate) fn write_default_arrays(layout: &ClassLayout, arrays: &mut PageArrays, lane: usize) {
    for (a, data) in layout.default_arrays.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
        arrays[a * crate::schema::PAGE_LANES + lane] = data.clone();
    }
}

/// Zeroes lane `lane` of every plane of a page.
pub(crate) fn zero_lanes(layout: &ClassLayout, page: &mut [u8], lane: usize) {
    for plane in &layout.planes {
        zero_lane(page, plane.page_offset, plane.width, lane);
    }
}

/// Zeroes lane `lane` of a plane.
fn zero_lane(page: &mut [u8], offset: usize, width: PlaneWidth, lane: usize) {
    write_lane(page, offset, width, lane, &[0u8; 16]);
}
