//! The module's heap: a segregated free-list allocator in place of the standard library's
//! dlmalloc, which was 5 KB of the module's code (2 KB gzipped) for a heap this module uses
//! simply: the memory store's keys, entries and tables, and the short-lived strings and vectors
//! of a call.
//!
//! Every block has a size class: its size rounded up to a multiple of 16 bytes, then to one of
//! four steps per power of two (16, 32, .., 128, then 160, 192, 224, 256, 320, ..), so a block
//! is at most a quarter larger than asked for (up to 128 bytes, to a multiple of 16). A freed block
//! goes onto its class's free list and the next allocation of that class takes it back, in
//! constant time, with no search, split or merge; a class with no free block takes a fresh one
//! from the top of the heap, which grows the memory by whole 64 KiB pages. Memory is never
//! returned to the host (a WebAssembly memory cannot shrink) and a freed block serves only its
//! own class, so the heap is at most the sum over the classes of the most bytes each class held
//! at once: a store that frees its keys reuses their blocks (`bindings-wasm/tests/memory.test.mjs`
//! holds a store's memory still over many rounds of new keys). A `realloc` within the class
//! (a string or vector growing into its spare quarter) keeps the block.
//!
//! One thread only: wasm32-unknown-unknown without the `atomics` feature has no threads, so the
//! allocator is not locked.

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::cell::UnsafeCell;
use std::ptr;

/// A WebAssembly page.
const PAGE: usize = 65536;
/// Every block's alignment and the granule of its size.
const GRANULE: usize = 16;
/// The largest block, in granules (1 GiB): a larger request fails (returns null) rather than
/// overflow the 32-bit address arithmetic.
const MAX_GRANULES: usize = 1 << 26;
/// Size classes up to `MAX_GRANULES` (see [`class`]).
const CLASSES: usize = 4 * 24 + 8;

struct Heap {
    /// The head of each class's list of free blocks; a free block's first word is the next.
    free: [*mut u8; CLASSES],
    /// The heap's top: fresh blocks are cut from `top..end`, the end of the memory it grew.
    top: usize,
    end: usize,
}

/// The module's global allocator (see the module's doc).
pub struct Allocator(UnsafeCell<Heap>);

// SAFETY: the module has one thread (no `atomics`): the heap is never reached concurrently.
#[cfg(not(target_feature = "atomics"))]
unsafe impl Sync for Allocator {}

#[global_allocator]
static ALLOCATOR: Allocator = Allocator(UnsafeCell::new(Heap { free: [ptr::null_mut(); CLASSES], top: 0, end: 0 }));

/// The size class of `layout` and its block size in bytes, or `None` past 1 GiB. A size of `u`
/// granules is rounded up to `m << e` with `m` in 5..=8 (`m` in 1..=8 when `e` is 0), the class
/// being `4e + m - 1`: 0..=7 for 1..=8 granules, then four classes per power of two.
#[inline]
fn class(layout: Layout) -> Option<(usize, usize)> {
    // `Layout` keeps the size at most `isize::MAX`: rounding up cannot overflow.
    let granules = layout.size().max(layout.align()).max(1).div_ceil(GRANULE);
    if granules > MAX_GRANULES {
        return None;
    }
    let below = granules - 1;
    let e = (usize::BITS - below.leading_zeros()).saturating_sub(3);
    let m = (below >> e) + 1;
    Some((4 * e as usize + m - 1, (m << e) * GRANULE))
}

unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some((c, size)) = class(layout) else { return ptr::null_mut() };
        // SAFETY: one thread, and no other reference to the heap lives across this call.
        let heap = unsafe { &mut *self.0.get() };
        let align = layout.align();
        let head = heap.free[c];
        // Every block is 16-byte aligned; a rarer larger alignment takes a listed block only
        // when it happens to satisfy it.
        if !head.is_null() && (head as usize) & (align - 1) == 0 {
            // SAFETY: a listed block is free and at least 16 bytes: its first word is the next.
            heap.free[c] = unsafe { *(head as *mut *mut u8) };
            return head;
        }
        // Addresses are 32 bits wide and a memory may reach 4 GiB: every sum near the top is
        // checked, so a heap near the end of the address space fails (null) instead of wrapping
        // to a block at a low address that other data holds.
        let fits = |top: usize, end: usize| {
            let start = top.checked_add(align - 1)? & !(align - 1);
            (start.checked_add(size)? <= end).then_some(start)
        };
        let start = match fits(heap.top, heap.end) {
            Some(start) => start,
            None => {
                // Enough fresh pages for the block at any alignment (at most 1 GiB + 1 GiB).
                let pages = (size + align).div_ceil(PAGE);
                let old = wasm32::memory_grow(0, pages);
                if old == usize::MAX {
                    return ptr::null_mut();
                }
                let base = old * PAGE;
                // The memory grew from the heap's end unless this is the heap's first growth
                // (the memory below is the module's data and stack).
                if base != heap.end {
                    heap.top = base;
                }
                // A memory of the whole 4 GiB ends one past the last address: the last byte is
                // given up rather than the end wrapping to 0.
                heap.end = base.saturating_add(pages * PAGE);
                match fits(heap.top, heap.end) {
                    Some(start) => start,
                    None => return ptr::null_mut(),
                }
            }
        };
        heap.top = start + size;
        start as *mut u8
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // A block that was allocated has a class.
        let Some((c, _)) = class(layout) else { return };
        // SAFETY: one thread; `block` came from `alloc` with this layout and is free now.
        let heap = unsafe { &mut *self.0.get() };
        unsafe { *(block as *mut *mut u8) = heap.free[c] };
        heap.free[c] = block;
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `GlobalAlloc::realloc`'s contract: `new_size`, rounded up to the alignment,
        // does not overflow `isize`.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if class(new).map(|c| c.0) == class(layout).map(|c| c.0) {
            return block;
        }
        // SAFETY: as above; `block` holds `layout.size()` bytes, the new block `new_size`.
        unsafe {
            let moved = self.alloc(new);
            if !moved.is_null() {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
            moved
        }
    }
}
