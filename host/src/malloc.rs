//! glibc heap settings of the long-running commands (`serve`, `sync`). Both only affect
//! resident memory; elsewhere (musl, other allocators) they do nothing.
//!
//! Measured on `serve` (BENCHMARKS.md, "Webhook CPU per request"): glibc gives every thread
//! that allocates its own arena, and keeps what a thread freed in it. Compiling the component
//! runs Cranelift, whose freed memory stayed resident for the life of the server.

/// Sets glibc's heap up for a long-running server. Call before any thread is started: a
/// thread keeps the arena it first allocated in.
///
/// - At most two malloc arenas: the two tokio workers do almost all allocation, and further
///   arenas only hold memory other threads freed (peak RSS 37.1 → 35.8 MiB).
/// - A fixed mmap threshold of 128 KiB (glibc's starting value). glibc otherwise raises the
///   threshold each time a large mmapped block is freed, up to 32 MiB, after which such blocks
///   come from the heap and what they leave behind stays resident. Compiling the component
///   allocates and frees many large blocks: with the threshold fixed, the peak RSS of `serve`
///   (VmHWM, three starts each) dropped from 45.0–45.3 MiB to 41.8–41.9 MiB; its RSS after
///   start-up stayed within 1 MiB (BENCHMARKS.md). Only blocks of 128 KiB and more are
///   affected; an admission request of usual size allocates none.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes tuning parameters of glibc's allocator; it has no
    // preconditions.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// Hands heap memory freed so far back to the kernel, e.g. what compiling the component freed
/// (RSS right after start-up 47 → 34 MiB when it was measured).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of glibc's own arenas; it has no
    // preconditions and is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Bytes the heap holds for the program now (glibc `mallinfo2`: in use in the arenas plus
/// mmapped blocks), `None` where that cannot be asked. For the sync controller's memory
/// metric: what its caches cost, per object.
pub fn heap_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallinfo2` only reads glibc's allocator statistics; it has no
        // preconditions.
        let info = unsafe { libc::mallinfo2() };
        u64::try_from(info.uordblks.saturating_add(info.hblkhd)).ok()
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}
