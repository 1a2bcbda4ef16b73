//! The page memory: [`Block`]s in one contiguous [`PageArray`] per class (a page is 64 actors,
//! each plane a contiguous run of lanes), the side arena of dynamic arrays ([`PageArrays`]), and
//! typed access to one plane across every page for bulk systems ([`PlanesMut`]).

use super::{ClassStore, StoreError};
use crate::schema::PlaneWidth;

/// One 64-byte aligned block of page memory.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub struct Block(pub [u8; 64]);

/// Pages of one class, each `stride` blocks long, in one contiguous allocation.
#[derive(Clone, Debug, Default)]
pub struct PageArray {
    blocks: Vec<Block>,
    stride: usize,
}

impl PageArray {
    /// An empty array of pages with `stride` blocks each.
    pub fn new(stride: usize) -> Self {
        Self { blocks: Vec::new(), stride: stride.max(1) }
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.blocks.len() / self.stride
    }

    /// Whether there are no pages.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Blocks per page.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Appends a zeroed page. When the allocation grows, it moves to a new one (twice as large)
    /// that is advised onto huge pages (see [`crate::memory`]) before its pages are first
    /// touched — a reallocation in place would keep the old small pages.
    pub fn push_zeroed(&mut self) {
        let need = self.blocks.len() + self.stride;
        if need > self.blocks.capacity() {
            let capacity = need.max(2 * self.blocks.capacity());
            let bytes = capacity * std::mem::size_of::<Block>();
            if bytes >= crate::memory::HUGE_PAGE_BYTES {
                let mut grown: Vec<Block> = Vec::with_capacity(capacity);
                crate::memory::advise_huge_pages(grown.as_ptr().cast(), bytes);
                grown.extend_from_slice(&self.blocks);
                self.blocks = grown;
            }
        }
        self.blocks.resize(need, Block([0; 64]));
    }

    /// Page `p`'s bytes.
    ///
    /// # Panics
    /// If `p >= self.len()`, as a slice index would.
    pub fn page(&self, p: usize) -> &[u8] {
        bytemuck::cast_slice(&self.blocks[p * self.stride..(p + 1) * self.stride])
    }

    /// Page `p`'s bytes, mutable.
    ///
    /// # Panics
    /// If `p >= self.len()`, as a slice index would.
    pub fn page_mut(&mut self, p: usize) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.blocks[p * self.stride..(p + 1) * self.stride])
    }

    /// All pages' bytes.
    pub fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.blocks)
    }

    /// All pages' blocks (for `par_chunks(stride)`).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// All pages' blocks, mutable.
    pub fn blocks_mut(&mut self) -> &mut [Block] {
        &mut self.blocks
    }
}

/// Lanes of one page's dynamic arrays: `lanes[array * 64 + lane]` holds the element bytes.
pub type PageArrays = Vec<Vec<u8>>;

impl ClassStore {
    /// Lanes of plane `plane` on every page, as typed slices, for bulk systems (a movement system
    /// writes every position). Lanes of free slots are included; `occupied()` tells which are live.
    /// Writing through this does not mark anything dirty: polled properties need no marks, and
    /// push-based ones must be marked with [`Self::mark_lanes_dirty`].
    pub fn plane_mut<T: bytemuck::Pod>(&mut self, plane: usize) -> Result<PlanesMut<'_, T>, StoreError> {
        let pl = *self.layout.planes.get(plane).ok_or(StoreError::PlaneType { plane })?;
        if pl.width == PlaneWidth::Bit || std::mem::size_of::<T>() != pl.width.lane_bytes() {
            return Err(StoreError::PlaneType { plane });
        }
        let stride = self.live.stride() * 64;
        Ok(PlanesMut {
            bytes: bytemuck::cast_slice_mut(self.live.blocks_mut()),
            stride,
            offset: pl.page_offset,
            _t: std::marker::PhantomData,
        })
    }

    /// Read-only counterpart of [`Self::plane_mut`].
    pub fn plane<T: bytemuck::Pod>(&self, plane: usize, page: usize) -> Result<&[T], StoreError> {
        let pl = *self.layout.planes.get(plane).ok_or(StoreError::PlaneType { plane })?;
        if pl.width == PlaneWidth::Bit || std::mem::size_of::<T>() != pl.width.lane_bytes() || page >= self.page_count()
        {
            return Err(StoreError::PlaneType { plane });
        }
        let bytes = &self.live.page(page)[pl.page_offset..pl.page_offset + pl.width.page_bytes()];
        Ok(bytemuck::cast_slice(bytes))
    }
}

/// Iterator-like access to one plane across all pages.
pub struct PlanesMut<'a, T> {
    bytes: &'a mut [u8],
    stride: usize,
    offset: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: bytemuck::Pod> PlanesMut<'_, T> {
    /// Page `p`'s 64 lanes.
    ///
    /// # Panics
    /// If `p >= self.pages()`, as a slice index would.
    pub fn page(&mut self, p: usize) -> &mut [T] {
        let start = p * self.stride + self.offset;
        bytemuck::cast_slice_mut(&mut self.bytes[start..start + 64 * std::mem::size_of::<T>()])
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.bytes.len() / self.stride
    }
}
