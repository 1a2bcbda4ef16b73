//! Splitting a compare into page jobs: [`PageJob`] is everything one page's compare borrows,
//! cut from the shadow, the live view and the output either from a run of consecutive pages
//! ([`PageBlock`], a walk over every page) or, for a list of pages, by [`split_jobs`] (safe
//! `split_at_mut`, ascending pages); [`Tally`] is what one shard of the compare counted.

use super::changes::PageArrayChanges;
use super::page::{PageRefs, PREFETCH_PAGES};
use super::tune::TrialTime;
use crate::store::{Block, PageArrays};

/// A run of consecutive pages from page `first`, as a walk over every page hands them out: the
/// whole class to one thread, or [`BLOCK_PAGES`] at a time to the pool.
pub(super) struct PageBlock<'a> {
    pub(super) first: usize,
    /// Blocks of a page.
    pub(super) stride: usize,
    /// Leaf masks of a page.
    pub(super) leaves: usize,
    pub(super) shadow: &'a mut [Block],
    pub(super) live: &'a [Block],
    pub(super) shadow_arrays: &'a mut [PageArrays],
    pub(super) live_arrays: &'a [PageArrays],
    /// Output leaf masks of the pages.
    pub(super) masks: &'a mut [u64],
    /// Output lanes with any change, a word a page.
    pub(super) lanes: &'a mut [u64],
    /// Output array changes, a list a page.
    pub(super) arrays: &'a mut [PageArrayChanges],
    pub(super) occupied: &'a [u64],
}

/// Pages a pool task of a walk over every page takes at once.
pub(super) const BLOCK_PAGES: usize = 64;

impl PageBlock<'_> {
    /// Pages in the block.
    pub(super) fn pages(&self) -> usize {
        self.occupied.len()
    }

    /// The blocks of the block's page `i` in `live` and `shadow`.
    fn page_blocks(&self, i: usize) -> std::ops::Range<usize> {
        i * self.stride..(i + 1) * self.stride
    }

    /// The live and shadow bytes of the block's page `i`.
    pub(super) fn bytes_mut(&mut self, i: usize) -> (&[u8], &mut [u8]) {
        let blocks = self.page_blocks(i);
        (bytemuck::cast_slice(&self.live[blocks.clone()]), bytemuck::cast_slice_mut(&mut self.shadow[blocks]))
    }

    /// The block's page `i` as [`PageRefs`] (every lane, streamed), with its leaf masks and lane
    /// word.
    pub(super) fn refs(&mut self, i: usize) -> (PageRefs<'_>, &mut [u64], &mut u64) {
        let blocks = self.page_blocks(i);
        let page = PageRefs {
            index: self.first + i,
            occupied: self.occupied[i],
            every_lane: true,
            streamed: true,
            live: bytemuck::cast_slice(&self.live[blocks.clone()]),
            shadow: bytemuck::cast_slice_mut(&mut self.shadow[blocks]),
            live_arrays: &self.live_arrays[i],
            shadow_arrays: &mut self.shadow_arrays[i],
        };
        (page, &mut self.masks[i * self.leaves..(i + 1) * self.leaves], &mut self.lanes[i])
    }

    /// The block's page `i` as a [`PageJob`] (no validation, no prefetch).
    pub(super) fn job(&mut self, i: usize) -> PageJob<'_> {
        let blocks = self.page_blocks(i);
        PageJob {
            index: self.first + i,
            shadow: &mut self.shadow[blocks.clone()],
            live: &self.live[blocks],
            shadow_arrays: &mut self.shadow_arrays[i],
            live_arrays: &self.live_arrays[i],
            masks: &mut self.masks[i * self.leaves..(i + 1) * self.leaves],
            lanes: &mut self.lanes[i],
            arrays: &mut self.arrays[i],
            occupied: self.occupied[i],
            check: None,
            prefetch: None,
            prefetch_far: None,
            streamed: true,
        }
    }
}

/// Everything one page's compare borrows.
pub(super) struct PageJob<'a> {
    /// Page index.
    pub(super) index: usize,
    pub(super) shadow: &'a mut [Block],
    pub(super) live: &'a [Block],
    pub(super) shadow_arrays: &'a mut PageArrays,
    pub(super) live_arrays: &'a PageArrays,
    /// Output leaf masks of the page.
    pub(super) masks: &'a mut [u64],
    /// Output lanes with any change.
    pub(super) lanes: &'a mut u64,
    /// Output array changes.
    pub(super) arrays: &'a mut PageArrayChanges,
    pub(super) occupied: u64,
    /// Push validation: the page of the validation shadow, and its per-parent unmarked lanes.
    pub(super) check: Option<(&'a mut [Block], &'a mut [u64])>,
    /// A dirty page a few list entries ahead, to prefetch.
    pub(super) prefetch: Option<usize>,
    /// A dirty page twice as far ahead, whose bookkeeping (its dirty masks, occupancy and output
    /// masks) to prefetch, so the near prefetch reads its marks from the cache.
    pub(super) prefetch_far: Option<usize>,
    /// The page after this one in memory is the next this thread compares (a walk over every
    /// page in order): a changed page's diff prefetches it (see [`super::page`]).
    pub(super) streamed: bool,
}

/// What [`split_jobs`] cuts into pages.
pub(super) struct JobSource<'a> {
    pub(super) shadow: &'a mut [Block],
    pub(super) live: &'a [Block],
    pub(super) stride: usize,
    pub(super) shadow_arrays: &'a mut [PageArrays],
    pub(super) live_arrays: &'a [PageArrays],
    pub(super) masks: &'a mut [u64],
    pub(super) leaves: usize,
    pub(super) page_lanes: &'a mut [u64],
    pub(super) arrays: &'a mut [PageArrayChanges],
    pub(super) occupied: &'a [u64],
    pub(super) check: Option<(&'a mut [Block], &'a mut [u64])>,
    pub(super) parents: usize,
    /// Give each job the page [`PREFETCH_PAGES`] entries ahead in `order`.
    pub(super) prefetch: bool,
}

/// Splits off the first `n` items of `*rest` (safe `split_at_mut`; `rest` keeps the remainder).
fn take_front<'a, T>(rest: &mut &'a mut [T], n: usize) -> &'a mut [T] {
    let (front, back) = std::mem::take(rest).split_at_mut(n);
    *rest = back;
    front
}

/// One job per page of `order` (ascending page indices), each borrowing only its page's parts,
/// cut as the iterator goes (a serial compare never holds more than one job).
pub(super) fn split_jobs<'a, 'o>(
    order: &'o [usize],
    src: JobSource<'a>,
) -> impl Iterator<Item = PageJob<'a>> + use<'a, 'o> {
    let JobSource {
        mut shadow,
        live,
        stride,
        mut shadow_arrays,
        live_arrays,
        mut masks,
        leaves,
        mut page_lanes,
        mut arrays,
        occupied,
        check,
        parents,
        prefetch,
    } = src;
    let (mut validated, mut unmarked) = match check {
        Some((v, u)) => (Some(v), Some(u)),
        None => (None, None),
    };
    let mut at = 0;
    order.iter().enumerate().map(move |(i, &p)| {
        let skip = p - at;
        take_front(&mut shadow, skip * stride);
        take_front(&mut shadow_arrays, skip);
        take_front(&mut masks, skip * leaves);
        take_front(&mut page_lanes, skip);
        take_front(&mut arrays, skip);
        let check = match (validated.as_mut(), unmarked.as_mut()) {
            (Some(v), Some(u)) => {
                take_front(v, skip * stride);
                take_front(u, skip * parents);
                Some((take_front(v, stride), take_front(u, parents)))
            }
            _ => None,
        };
        at = p + 1;
        PageJob {
            index: p,
            shadow: take_front(&mut shadow, stride),
            live: &live[p * stride..(p + 1) * stride],
            shadow_arrays: &mut take_front(&mut shadow_arrays, 1)[0],
            live_arrays: &live_arrays[p],
            masks: take_front(&mut masks, leaves),
            lanes: &mut take_front(&mut page_lanes, 1)[0],
            arrays: &mut take_front(&mut arrays, 1)[0],
            occupied: occupied[p],
            check,
            prefetch: if prefetch { order.get(i + PREFETCH_PAGES).copied() } else { None },
            prefetch_far: if prefetch { order.get(i + 2 * PREFETCH_PAGES).copied() } else { None },
            streamed: order.get(i + 1) == Some(&(p + 1)),
        }
    })
}

/// What one shard of a compare counted: pages and lanes visited, and (with
/// [`CompareConfig::dirty_stats`]) per parent `[marked, changed]` lane counts.
pub(super) struct Tally {
    pub(super) pages: u64,
    pub(super) lanes: u64,
    pub(super) parents: Vec<u64>,
    /// A trial frame's timed pages per candidate (see `tune`); empty in other frames.
    pub(super) trial: Vec<TrialTime>,
}

impl Tally {
    pub(super) fn new(words: usize) -> Self {
        Self { pages: 0, lanes: 0, parents: vec![0; words], trial: Vec::new() }
    }

    /// The same, timing a trial frame's `candidates`.
    pub(super) fn with_trials(mut self, candidates: usize) -> Self {
        self.trial = vec![TrialTime::default(); candidates];
        self
    }

    pub(super) fn add(mut self, other: Self) -> Self {
        self.pages += other.pages;
        self.lanes += other.lanes;
        for (a, b) in self.parents.iter_mut().zip(other.parents) {
            *a += b;
        }
        if self.trial.len() < other.trial.len() {
            self.trial.resize(other.trial.len(), TrialTime::default());
        }
        for (a, b) in self.trial.iter_mut().zip(other.trial) {
            a.nanos += b.nanos;
            a.pages += b.pages;
        }
        self
    }
}
