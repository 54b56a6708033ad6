//! glibc heap settings of the long-running commands (`serve`, `sync`). Both only affect
//! resident memory; elsewhere (musl, other allocators) they do nothing.
//!
//! Measured on `serve` (BENCHMARKS.md, "Webhook CPU per request"): glibc gives every thread
//! that allocates its own arena, and keeps what a thread freed in it. Compiling the component
//! runs Cranelift, whose freed memory stayed resident for the life of the server.

/// At most two malloc arenas: the two tokio workers do almost all allocation, and further
/// arenas only hold memory other threads freed (peak RSS 37.1 → 35.8 MiB). Call before any
/// thread is started: a thread keeps the arena it first allocated in.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a tuning parameter of glibc's allocator; it has no
    // preconditions.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
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
