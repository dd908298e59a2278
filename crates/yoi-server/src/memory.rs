//! Giving freed memory back to the system after the server's large passes.
//!
//! The start-up catch-up and a routing pass over a long backlog allocate a lot briefly (every
//! ticket's file record, item and relations) and free it again. glibc's allocator keeps freed
//! pages for reuse, so without help the server's resident memory stays at its highest point:
//! at 100,000 tickets the catch-up alone left 75 MiB behind (BENCHMARKS.md). After such a pass
//! the server asks the allocator to return what is free.

/// Return freed memory to the system (it walks the heap: a few milliseconds, so call it after
/// passes that take far longer). Call from a blocking thread.
pub fn give_back() {
    trim();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
