//! Reading every ticket folder on all cores and handing the results back chunk by chunk, in
//! folder order, so the caller can compare each chunk with the index while the next is read.
//!
//! A fixed set of workers (one per core, at most eight) lives for the whole pass and takes
//! tickets a few at a time from a shared counter, so a ticket with a long thread holds up one
//! worker instead of half a chunk, and the allocator keeps one arena per worker instead of
//! one per short-lived thread. Workers run at most two chunks ahead of the chunk the caller
//! is working on, so only about three chunks' texts and results are held at a time however
//! large the tree is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use yoi_core::TicketId;

use super::cache::Cache;
use super::ticket::{check_ticket, TicketScan};
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

/// Tickets handed to the caller together.
pub(super) const CHUNK: usize = 512;

/// Tickets a worker takes at a time: few enough to share the work out evenly, enough that
/// handing results over (a wake-up of the caller each time) costs next to nothing.
const BATCH: usize = 8;

/// Check every folder of `folders`, calling `each` once per chunk of [`CHUNK`] folders, in
/// order, with the chunk's scans (each names its folder). An error from `each` stops the workers and is
/// returned. Tickets unchanged since the last pass come from doctor's cache
/// ([`super::cache`]), which this pass then rewrites if anything in it changed.
pub(super) fn in_chunks(
    ws: &Workspace,
    folders: &[TicketId],
    each: impl FnMut(Vec<TicketScan>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let cache = Cache::open(ws);
    let done = checked_in_chunks(ws, folders, &cache, each);
    // Only a complete pass names a new cache.
    if done.is_ok() {
        cache.finish();
    }
    done
}

fn checked_in_chunks(
    ws: &Workspace,
    folders: &[TicketId],
    cache: &Cache,
    mut each: impl FnMut(Vec<TicketScan>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut each = move |mut scans: Vec<TicketScan>| {
        scans.iter_mut().for_each(|s| cache.keep(s));
        each(scans)
    };
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if workers <= 1 || folders.len() <= BATCH {
        for chunk in folders.chunks(CHUNK) {
            each(chunk.iter().map(|id| check_ticket(ws, id, cache)).collect())?;
        }
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Workers may take tickets below this index; it moves on as chunks are handed over.
    let limit = Mutex::new(2 * CHUNK);
    let moved = Condvar::new();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<(usize, TicketScan)>>();
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop, limit, moved) = (&next, &stop, &limit, &moved);
            s.spawn(move || loop {
                let first = next.fetch_add(BATCH, Ordering::Relaxed);
                if first >= folders.len() {
                    return;
                }
                let end = (first + BATCH).min(folders.len());
                let mut allowed = limit.lock().unwrap_or_else(|e| e.into_inner());
                while end > *allowed && !stop.load(Ordering::Relaxed) {
                    allowed = moved.wait(allowed).unwrap_or_else(|e| e.into_inner());
                }
                drop(allowed);
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let batch = (first..end)
                    .map(|i| (i, check_ticket(ws, &folders[i], cache)))
                    .collect();
                if tx.send(batch).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let result = hand_over(ws, folders, &rx, &limit, &moved, &mut each);
        // Under the lock, so a worker between its look at `stop` and its wait cannot miss it.
        let guard = limit.lock().unwrap_or_else(|e| e.into_inner());
        stop.store(true, Ordering::Relaxed);
        drop(guard);
        moved.notify_all();
        result
    })
}

/// The caller's side of [`in_chunks`]: put the scans back in order and hand over each chunk
/// once it is complete.
fn hand_over(
    ws: &Workspace,
    folders: &[TicketId],
    rx: &std::sync::mpsc::Receiver<Vec<(usize, TicketScan)>>,
    limit: &Mutex<usize>,
    moved: &Condvar,
    each: &mut impl FnMut(Vec<TicketScan>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut waiting: BTreeMap<usize, TicketScan> = BTreeMap::new();
    for (c, chunk) in folders.chunks(CHUNK).enumerate() {
        let start = c * CHUNK;
        let end = start + chunk.len();
        let mut have = waiting.range(start..end).count();
        while have < chunk.len() {
            let batch = rx.recv().map_err(|_| {
                let why = std::io::Error::other("a doctor worker stopped");
                StoreError::io(&ws.tickets_dir(), why)
            })?;
            for (i, scan) in batch {
                have += usize::from((start..end).contains(&i));
                waiting.insert(i, scan);
            }
        }
        let scans: Vec<TicketScan> = (start..end)
            .map(|i| waiting.remove(&i).expect("counted above"))
            .collect();
        *limit.lock().unwrap_or_else(|e| e.into_inner()) = end + 2 * CHUNK;
        moved.notify_all();
        each(scans)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with `n` empty ticket folders (each a `ticket.missing_item` finding), by id.
    fn folders(n: usize) -> (tempfile::TempDir, Workspace, Vec<TicketId>) {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let ids: Vec<TicketId> = (0..n as u64)
            .map(|i| TicketId::legacy_from_millis(1_700_000_000_000 + i))
            .collect();
        for id in &ids {
            std::fs::create_dir_all(ws.ticket_dir(id)).unwrap();
        }
        (dir, ws, ids)
    }

    #[test]
    fn every_folder_is_handed_over_once_in_order_and_in_chunks() {
        let (_dir, ws, ids) = folders(2 * CHUNK + 77);
        let mut sizes = Vec::new();
        let mut seen = Vec::new();
        in_chunks(&ws, &ids, |scans| {
            sizes.push(scans.len());
            for scan in scans {
                assert_eq!(scan.findings[0].check, "ticket.missing_item");
                seen.push(scan.id);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes, [CHUNK, CHUNK, 77]);
        assert_eq!(seen, ids);
    }

    #[test]
    fn an_error_from_the_caller_stops_the_workers_and_is_returned() {
        let (_dir, ws, ids) = folders(4 * CHUNK);
        let mut calls = 0;
        let err = in_chunks(&ws, &ids, |_| {
            calls += 1;
            Err(StoreError::io(
                &ws.tickets_dir(),
                std::io::Error::other("stop here"),
            ))
        })
        .unwrap_err();
        assert_eq!(calls, 1);
        assert!(err.to_string().contains("stop here"), "{err}");
    }
}
