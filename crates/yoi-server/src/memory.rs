//! Giving freed memory back to the system after the server's large passes.
//!
//! The start-up catch-up and a routing pass over a long backlog allocate a lot briefly (every
//! ticket's file record, item and relations) and free it again. glibc's allocator keeps freed
//! pages for reuse, so without help the server's resident memory stays at its highest point:
//! at 100,000 tickets the catch-up alone left 75 MiB behind (BENCHMARKS.md). After such a pass
//! the server asks the allocator to return what is free.
//!
//! Requests free memory too (a page of a thousand tickets is a megabyte of JSON, made and
//! dropped), so [`spawn_trims`] also looks every few seconds at how much of the heap sits free
//! and gives it back when that is more than [`FREE_LIMIT`]. Looking costs a walk of the
//! allocator's bins; a trim happens only after a burst of large answers.

//!
//! glibc also gives each thread that allocates while another holds the lock an arena of its
//! own, up to eight per core, and memory freed in one arena is reused only there: a server whose
//! routing pass, index writer, readers and request handlers run on many threads holds freed
//! memory in each. [`limit_arenas`] caps them at [`ARENAS`]: at 100,000 tickets the server at
//! rest after the router's first pass held 175 MiB with glibc's default and 101 MiB with two
//! (`MALLOC_ARENA_MAX=2`, `yoi-bench-serve-memory`, BENCHMARKS.md). `MALLOC_ARENA_MAX` set in
//! the environment wins.

/// The most malloc arenas the server lets glibc make.
pub const ARENAS: i32 = 2;

/// Cap glibc's malloc arenas at [`ARENAS`], unless `MALLOC_ARENA_MAX` says otherwise. Call
/// before the server starts its threads: threads that already have an arena keep it.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets one of the allocator's parameters.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        }
    }
}

/// Return freed memory to the system (it walks the heap: a few milliseconds, so call it after
/// passes that take far longer). Call from a blocking thread.
pub fn give_back() {
    trim();
}

/// Freed heap kept for reuse above which it is given back.
pub const FREE_LIMIT: usize = 8 << 20;
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Give back freed heap whenever more than [`FREE_LIMIT`] of it sits free, until the server
/// closes.
pub fn spawn_trims(mut closing: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(LOOK_EVERY) => {}
                _ = closing.wait_for(|c| *c) => return,
            }
            if free_heap() > FREE_LIMIT {
                let _ = tokio::task::spawn_blocking(give_back).await;
            }
        }
    })
}

/// Bytes the allocator holds free (`mallinfo2`'s free chunks); 0 where it cannot say.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn free_heap() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    info.fordblks
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn free_heap() -> usize {
    0
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
