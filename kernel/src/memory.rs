//! Large allocations and the TLB: asking the OS to back the page arrays with huge pages.
//!
//! A compare, a push frame or a gather touches a few lines of each of thousands of pages spread
//! over hundreds of megabytes (1M ShooterCharacter actors: 79 MB of live state and as much in each
//! shadow; 10M: ten times that). With 4 KiB memory pages almost every such touch also misses the
//! TLB and walks the page tables; with 2 MiB pages the walk is gone. Linux backs a region with
//! transparent huge pages when it is asked to (`madvise(MADV_HUGEPAGE)`, the default mode of most
//! distributions: `/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`). Measured on an AMD
//! EPYC (Zen 3) VM with `compare --scaling` (10 000 marked actors, one thread, cold frames),
//! alternating with the build before: in a world of 10M actors a plain gather of the marked lanes
//! 0.73–0.76 ms instead of 1.25–1.56 ms, a push frame 4.3–5.2 ms instead of 5.6–6.3 ms.
//!
//! Elsewhere, or where the kernel refuses, nothing changes: the advice is only advice.

/// Allocations below this are left alone (a huge page is 2 MiB).
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks the OS to back `len` bytes from `addr` (a live allocation of the caller's) with huge
/// pages. Returns whether the advice was given and taken.
pub fn advise_huge_pages(addr: *const u8, len: usize) -> bool {
    if len < HUGE_PAGE_BYTES {
        return false;
    }
    advise(addr, len)
}

/// `n` zeroed values in a new allocation, advised onto huge pages (when it is large enough)
/// before anything touches it: zeroing is the first touch, which decides how the OS backs it.
pub fn zeroed_vec<T: bytemuck::Zeroable>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge_pages(v.as_ptr().cast(), n * std::mem::size_of::<T>());
    zero_fill(&mut v, n);
    v
}

/// Fills the empty `v` (capacity ≥ `n`) with `n` zeroed values in place (a large `T` is never
/// built on the stack).
#[allow(unsafe_code)]
fn zero_fill<T: bytemuck::Zeroable>(v: &mut Vec<T>, n: usize) {
    assert!(v.is_empty() && v.capacity() >= n);
    // SAFETY: the allocation holds at least `n` values (asserted); `write_bytes` initialises
    // all `n` of them, and all-zero bytes are a valid `T` (`Zeroable`), so after it the first
    // `n` values are initialised and `set_len(n)` exposes only those.
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), 0, n);
        v.set_len(n);
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise(addr: *const u8, len: usize) -> bool {
    // madvise wants a page-aligned start: the 4 KiB page holding `addr` (which belongs to the
    // same mapping: a large allocation is a mapping of its own, or inside the heap's).
    let page = 4096;
    let start = addr as usize & !(page - 1);
    let len = len + (addr as usize - start);
    // SAFETY: `[start, start + len)` lies within mappings of this process (the caller's live
    // allocation, widened to the start of its first OS page). MADV_HUGEPAGE changes neither the
    // contents nor the validity of the memory, only how the kernel may back it; a failure
    // (an old kernel, huge pages off) is reported through the return value.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn advise(_addr: *const u8, _len: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_leaves_the_bytes_alone_and_skips_small_buffers() {
        let mut v: Vec<u8> = (0..3 * HUGE_PAGE_BYTES).map(|i| (i % 251) as u8).collect();
        assert!(!advise_huge_pages(v.as_ptr(), 4096), "small buffers are not advised");
        let taken = advise_huge_pages(v.as_ptr(), v.len());
        // Where the OS supports it (every Linux since 2.6.38 with THP built in) it is taken.
        if cfg!(target_os = "linux") && std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            assert!(taken);
        }
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        v[HUGE_PAGE_BYTES + 5] = 7;
        assert_eq!(v[HUGE_PAGE_BYTES + 5], 7);
    }

    #[test]
    fn zeroed_vectors_hold_zeros_of_any_size() {
        #[derive(Clone, Copy, bytemuck::Zeroable)]
        #[repr(C, align(4096))]
        struct Big([u64; 512]);
        let v: Vec<Big> = zeroed_vec(3);
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|b| b.0.iter().all(|&x| x == 0)));
        assert_eq!(v.as_ptr() as usize % 4096, 0, "the element's alignment is kept");
        let w: Vec<u32> = zeroed_vec(HUGE_PAGE_BYTES);
        assert!(w.len() == HUGE_PAGE_BYTES && w.iter().all(|&x| x == 0));
        assert!(zeroed_vec::<u8>(0).is_empty());
    }
}
