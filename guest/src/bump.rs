//! The component's allocator: a bump allocator. The host gives every call a fresh instance
//! that lives for one evaluation, so memory is never worth returning; allocation becomes a
//! pointer increment. The most recent block is freed or resized in place, so a growing string
//! or vector does not leave a copy of itself behind.
//!
//! The heap starts at `__heap_base`, right after the stack and static data, and first uses the
//! rest of the module's *initial* memory (`--initial-memory` in `.cargo/config.toml`). An
//! admission call fits there, so it never executes `memory.grow`: in wasmtime's pooling
//! allocator every grow is an `mprotect` of the instance's slot, and the next instance in that
//! slot `mprotect`s it back; both take the process-wide mmap lock and shoot down TLBs on every
//! core, which under load cost more than the policy itself (see BENCHMARKS.md). Larger calls
//! (the endpoint filter on big inputs) still grow memory, in steps of at least 1 MiB.
//! Compiled for wasm32 only: native builds (unit tests, benchmarks) keep the system allocator.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

const PAGE: usize = 64 * 1024;
/// Grow linear memory at least this much at a time (16 pages = 1 MiB).
const MIN_GROW_PAGES: usize = 16;

pub struct Bump {
    /// `(next free byte, end of memory)`; both 0 before the first allocation.
    state: UnsafeCell<(usize, usize)>,
}

// SAFETY: wasm32 components run single-threaded; there is no concurrent access.
unsafe impl Sync for Bump {}

impl Bump {
    pub const fn new() -> Self {
        Bump {
            state: UnsafeCell::new((0, 0)),
        }
    }

    /// Makes sure `[.., needed)` is inside linear memory; false when memory cannot grow.
    fn reserve(next: &mut usize, end: &mut usize, needed: usize) -> bool {
        if *end == 0 {
            // First use: the heap is what the linker left after the stack and static data.
            *end = core::arch::wasm32::memory_size(0) * PAGE;
            *next = heap_base().min(*end);
        }
        if needed <= *end {
            return true;
        }
        let pages = (needed - *end).div_ceil(PAGE).max(MIN_GROW_PAGES);
        if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
            return false;
        }
        *end += pages * PAGE;
        true
    }
}

/// The first byte after the stack and static data (a symbol `wasm-ld` defines).
fn heap_base() -> usize {
    unsafe extern "C" {
        static __heap_base: u8;
    }
    // Only the address of the linker-defined symbol is taken; it is never read.
    (&raw const __heap_base) as usize
}

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (see `Sync` above); no other reference to `state` is live.
        let (next, end) = unsafe { &mut *self.state.get() };
        if *end == 0 && !Self::reserve(next, end, 0) {
            return core::ptr::null_mut();
        }
        let start = (*next + layout.align() - 1) & !(layout.align() - 1);
        let Some(stop) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        if !Self::reserve(next, end, stop) {
            return core::ptr::null_mut();
        }
        *next = stop;
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        let (next, _) = unsafe { &mut *self.state.get() };
        if ptr as usize + layout.size() == *next {
            *next = ptr as usize;
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        {
            // SAFETY: as in `alloc`; the borrow ends before `alloc` below.
            let (next, end) = unsafe { &mut *self.state.get() };
            if ptr as usize + layout.size() == *next {
                let Some(stop) = (ptr as usize).checked_add(new_size) else {
                    return core::ptr::null_mut();
                };
                if Self::reserve(next, end, stop) {
                    *next = stop;
                    return ptr;
                }
                return core::ptr::null_mut();
            }
        }
        // SAFETY: `new_size` with the old alignment is a valid layout (GlobalAlloc contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: delegating to our own `alloc`; copying the smaller of the two sizes.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            }
            new
        }
    }
}
