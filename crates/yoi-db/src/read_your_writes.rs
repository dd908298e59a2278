//! Reads that see every write finished before them, and caches that are exact because of it.
//!
//! A long-lived reader of the index (`yoi serve`) watches the ticket files and the embedded
//! database ([`FileWatch`]). Before it answers a request, [`ReadYourWrites::settle`] drains the
//! watch: tickets whose files changed behind the reader's back (an editor, `git pull`, a
//! `--local` command) are read into the index again, so a read never misses a write that
//! finished before it arrived. When the watch loses track (the kernel's queue overflowed) the
//! incremental pass looks at every file; a periodic full check ([`ReadYourWrites::full_check`],
//! every [`ReadYourWrites::full_check_every`]) is the fallback for anything a watch cannot see
//! (network filesystems), and the only freshness a reader without a watch has.
//!
//! This module decides *what* to read again and *when* something may be kept; it never writes
//! the index itself. The caller passes the writing as a callback, because a write of the index
//! must queue with the caller's other writers (the server's writer turn) and hold the workspace
//! lock like any operation.
//!
//! The same drain makes three caches exact:
//! - **Tokens**: a token found in the database is kept until the answer epoch moves
//!   (`answer_epoch.rs`). Revoking a token moves it, so the next request after a revocation,
//!   from any process, looks the token up again.
//! - **Answers about tickets** (a ticket's JSON, a list page; `ticket_answers.rs`): a ticket's
//!   answer is kept until that ticket's files (or those of a ticket it shows) change, or the
//!   answer epoch moves; a list until any ticket's files change. Writes to other tickets, a
//!   pod's heartbeat, a claim that found nothing leave them kept. The inbox, made from the
//!   ticket files alone, is kept until any ticket's files change, across the epoch's moves too.
//!
//! Each answer says how it met the kept ones ([`Kept`]; the server sends it as
//! `Cache-Status`).
//!
//! The answer epoch is read from the database after the request arrived, in rounds shared by
//! every request waiting (`commit_rounds.rs`): one query in flight at a time. A commit is
//! visible to every later read once its writer has been told it committed. With SQLite a
//! reading is used again without a query while the database file has seen no write since
//! [`QUIET`] before that reading began: SQLite makes a commit visible to readers slightly
//! after its last write to the log (the shared-memory index is updated after the write), and
//! [`QUIET`] bounds that gap.
//!
//! A PostgreSQL index cannot be watched. With it, the database's part of the tokens'
//! generation is its commit stamp, read in the same rounds.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use yoi_core::TicketId;
use yoi_store::{StoreError, Workspace};

use crate::answer_epoch::Stamps;
use crate::commit_rounds::Rounds;
use crate::ticket_answers::{Made, TicketAnswers};
use crate::watch::{Coverage, FileWatch};
use crate::{Db, IndexStats, TokenInfo};

/// How long the database must have been quiet before an answer computed from it is kept.
pub const QUIET: Duration = Duration::from_secs(1);
/// The most answer bytes kept; past it the cache starts over.
const ANSWER_BUDGET: usize = 16 << 20;
/// The most tokens kept; past it the cache starts over.
const TOKEN_BUDGET: usize = 10_000;
/// How often every file is looked at, with a watch and without one.
const FULL_CHECK_WATCHED: Duration = Duration::from_secs(600);
const FULL_CHECK_UNWATCHED: Duration = Duration::from_secs(15);

/// A generation: the files' part (the watch's number in the high bits, its count of events
/// below) and the database's (PostgreSQL's commit stamp; 0 with SQLite, whose file is watched).
/// Both parts only grow, so a later generation never orders before an earlier one.
type Generation = (u64, u128);

/// What a request may rely on once [`ReadYourWrites::settle`] returned.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// Answers about tickets may be cached, computed at this clock (`None`: not now).
    tickets: Option<u64>,
    /// Tokens may be cached at this generation (`None`: not now).
    tokens: Option<Generation>,
}

/// How an answer met the kept ones, for the frontend to report (the server sends it as its
/// `Cache-Status`, RFC 9211, so a client — and a test waiting for the server to keep answers —
/// can tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Computed now.
    Miss,
    /// Computed now, and nothing may be kept now (see [`ReadYourWrites::settle`]).
    Bypass,
    /// From memory: nothing watched changed since it was computed.
    Hit,
}

#[derive(Default)]
struct Pending {
    tickets: BTreeSet<TicketId>,
    lost: bool,
    /// A change that may reach answers about other tickets than its own (see
    /// [`crate::watch::Polled::relations`]) is waiting to be told to the kept answers.
    relations: bool,
}

struct Cache<V> {
    generation: Generation,
    size: usize,
    /// Each value with the size it was counted at.
    map: HashMap<String, (V, usize)>,
}

impl<V: Clone> Cache<V> {
    fn new() -> Self {
        Cache {
            generation: (0, 0),
            size: 0,
            map: HashMap::new(),
        }
    }

    fn get(&mut self, at: Option<Generation>, key: &str) -> Option<V> {
        let at = at?;
        if at != self.generation {
            return None;
        }
        self.map.get(key).map(|(v, _)| v.clone())
    }

    fn keep(&mut self, at: Option<Generation>, key: String, value: V, size: usize, budget: usize) {
        let Some(at) = at else { return };
        // Computed before a change this cache already knows of; or so large (a page of a
        // thousand tickets) that keeping it would push out many smaller answers.
        if at < self.generation || size > budget / 16 {
            return;
        }
        if at > self.generation {
            self.map.clear();
            self.size = 0;
            self.generation = at;
        }
        if let Some((_, old)) = self.map.remove(&key) {
            self.size -= old;
        }
        // Full: drop every other entry (in the map's own order, which is random), so a
        // working set larger than the budget still finds part of itself.
        if self.size + size > budget {
            let mut n = 0usize;
            let mut freed = 0usize;
            self.map.retain(|_, (_, s)| {
                n += 1;
                let keep = n.is_multiple_of(2);
                if !keep {
                    freed += *s;
                }
                keep
            });
            self.size -= freed;
        }
        self.size += size;
        self.map.insert(key, (value, size));
    }
}

/// The watch of one workspace, what it saw and has not been read into the index yet, and the
/// caches it keeps exact. `A` is a kept answer: bytes the frontend sends as they are.
pub struct ReadYourWrites<A> {
    /// The watch, and which one it is: generations are told apart from an earlier watch's
    /// by the number of the watch in their high bits.
    watch: Mutex<Option<(u64, Arc<FileWatch>)>>,
    started: AtomicU64,
    /// Whether a watch ever ran (one that never could start is not tried again).
    restartable: bool,
    /// The embedded SQLite database the watch sees.
    db_file: Option<std::path::PathBuf>,
    /// The rounds that read the answer epoch (and PostgreSQL's commit stamp).
    rounds: Arc<Rounds>,
    postgres: bool,
    /// The last reading of the rounds, and when it began.
    reading: Mutex<Option<(Stamps, std::time::Instant)>>,
    pending: tokio::sync::Mutex<Pending>,
    about_tickets: Mutex<TicketAnswers<A>>,
    /// One computation per missing answer: requests for the same answer wait for it.
    computing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    tokens: Mutex<Cache<TokenInfo>>,
}

impl<A: Clone + AsRef<[u8]>> ReadYourWrites<A> {
    /// Start watching `ws` (and its database, when that is an SQLite file). A watch that
    /// cannot start is logged; the reader then relies on the periodic full check.
    pub fn start(ws: &Workspace) -> Self {
        let url = ws.database_url();
        let db_file = crate::sqlite_file(&url);
        let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        let watch = match FileWatch::start(ws, db_file.as_deref()) {
            Ok(w) => {
                if w.coverage() == Coverage::Folders {
                    tracing::warn!(folders = w.watches(), every_s = FULL_CHECK_UNWATCHED.as_secs(), "too few inotify watches for every ticket's artifacts/ (fs.inotify.max_user_watches): watching the ticket folders, and looking at every file periodically for writes inside artifacts/ alone");
                } else {
                    tracing::info!(folders = w.watches(), "watching the ticket files");
                }
                Some(Arc::new(w))
            }
            Err(e) => {
                tracing::warn!(error = %e, every_s = FULL_CHECK_UNWATCHED.as_secs(), "cannot watch the ticket files; looking at them all periodically instead");
                None
            }
        };
        ReadYourWrites {
            restartable: watch.is_some(),
            db_file,
            rounds: Rounds::new(),
            postgres,
            reading: Mutex::new(None),
            watch: Mutex::new(watch.map(|w| (1, w))),
            started: AtomicU64::new(1),
            pending: tokio::sync::Mutex::new(Pending::default()),
            about_tickets: Mutex::new(TicketAnswers::new()),
            computing: Mutex::new(HashMap::new()),
            tokens: Mutex::new(Cache::new()),
        }
    }

    fn watch(&self) -> Option<(u64, Arc<FileWatch>)> {
        lock(&self.watch).clone()
    }

    pub fn watching(&self) -> bool {
        self.watch().is_some()
    }

    /// Bring the index up to every write that finished before this call, and say what may
    /// be cached now. `write_index(Some(ids))` must read those tickets into the index,
    /// `write_index(None)` run the incremental pass over every file; `db` is the database
    /// that index writes.
    pub async fn settle<W, Fut>(
        &self,
        ws: &Workspace,
        db: &Db,
        write_index: W,
    ) -> Result<View, StoreError>
    where
        W: Fn(Option<Vec<TicketId>>) -> Fut,
        Fut: Future<Output = Result<IndexStats, StoreError>>,
    {
        let Some((_, watch)) = self.watch() else {
            return Ok(View::default());
        };
        let mut pending = self.pending.lock().await;
        let mut polled = watch.poll();
        // What changed, for the kept answers about tickets: told once the index holds it.
        let mut changed: BTreeSet<TicketId> = BTreeSet::new();
        // The index's own writes below are events too; a few rounds settle them.
        for _ in 0..3 {
            pending.tickets.extend(polled.tickets.drain(..));
            pending.lost |= polled.lost;
            pending.relations |= polled.relations;
            if polled.broken {
                self.drop_watch(ws);
                pending.lost = true;
            }
            if pending.lost {
                write_index(None).await?;
                pending.lost = false;
                pending.relations = true;
                pending.tickets.clear();
            } else if !pending.tickets.is_empty() {
                let ids: Vec<TicketId> = pending.tickets.iter().cloned().collect();
                // Most changes are this reader's own writes, already in the index: a look at
                // the fingerprints, no write.
                let (stale, gone) = db.stale_tickets(ws, &ids).await?;
                if !stale.is_empty() || !gone.is_empty() {
                    let stale: Vec<TicketId> = stale.into_iter().chain(gone).collect();
                    write_index(Some(stale)).await?;
                }
                changed.extend(std::mem::take(&mut pending.tickets));
            } else {
                break;
            }
            polled = watch.poll();
        }
        // Told before the lock is let go, so no request that settles after this one is served
        // an answer these changes dropped.
        if !changed.is_empty() || pending.relations {
            let changed: Vec<TicketId> = changed.into_iter().collect();
            lock(&self.about_tickets).changed(&changed, std::mem::take(&mut pending.relations));
        }
        if polled.broken {
            self.drop_watch(ws);
        }
        pending.tickets.extend(polled.tickets.drain(..));
        pending.lost |= polled.lost || polled.broken;
        pending.relations |= polled.relations;
        if !pending.tickets.is_empty() || pending.lost || polled.broken {
            return Ok(View::default());
        }
        // The answer epoch: read now, or (SQLite) the last reading, when the database file saw
        // no write since QUIET before it began.
        let db_quiet_since = |began: std::time::Instant| {
            polled
                .last_db_write
                .is_none_or(|w| began.checked_duration_since(w).is_some_and(|d| d >= QUIET))
        };
        let kept_reading = (!self.postgres)
            .then(|| *lock(&self.reading))
            .flatten()
            .filter(|(_, began)| db_quiet_since(*began));
        // Other requests settle while this one waits for the database.
        drop(pending);
        let stamps = match kept_reading {
            Some((stamps, _)) => stamps,
            None => {
                let Some((stamps, began)) = self.rounds.stamp(db).await else {
                    return Ok(View::default());
                };
                let mut reading = lock(&self.reading);
                if reading.is_none_or(|(_, b)| b < began) {
                    *reading = Some((stamps, began));
                }
                stamps
            }
        };
        let tickets = {
            let mut about = lock(&self.about_tickets);
            // Moves that named what they changed drop only those tickets' answers.
            let named = about
                .known_epoch()
                .filter(|&e| e < stamps.epoch)
                .and_then(|e| self.rounds.tickets_moved(e, stamps.epoch));
            match named {
                Some(tickets) => about.rows_changed(&tickets, stamps.epoch),
                None => about.epoch(stamps.epoch),
            }
            about.clock()
        };
        let tokens = Some((0, self.rounds.token_generation(stamps.epoch) as u128));
        if stamps.commit.is_some() {
            return Ok(View {
                tickets: Some(tickets),
                tokens,
            });
        }
        Ok(View {
            tickets: self.db_file.is_some().then_some(tickets),
            tokens: self.db_file.is_some().then_some(tokens).flatten(),
        })
    }

    fn drop_watch(&self, ws: &Workspace) {
        if lock(&self.watch).take().is_some() {
            tracing::warn!(tickets = %ws.tickets_dir().display(), "the file watch lost sight of the tickets or the database; starting a new one at the next full check");
        }
    }

    /// An answer about tickets for `key`: kept if nothing it was made from changed since
    /// it was made, else `compute`d (once, however many requests ask for it meanwhile) and
    /// kept when it may be. `compute` says what the answer was made from.
    pub async fn answer_about_tickets<E, F, Fut>(
        &self,
        view: View,
        key: String,
        compute: F,
    ) -> Result<(A, Kept), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(A, Made), E>>,
    {
        let Some(at) = view.tickets else {
            return compute().await.map(|(b, _)| (b, Kept::Bypass));
        };
        let kept = |key: &str| lock(&self.about_tickets).get(key).map(|b| (b, Kept::Hit));
        if let Some(b) = kept(&key) {
            return Ok(b);
        }
        self.in_turn(
            &key,
            || kept(&key),
            compute,
            |(b, made): (A, Made)| {
                let size = key.len() + b.as_ref().len();
                lock(&self.about_tickets).keep(
                    at,
                    key.clone(),
                    b.clone(),
                    made,
                    size,
                    ANSWER_BUDGET,
                );
                b
            },
        )
        .await
    }

    /// One computation of `key` at a time, however many requests ask for it meanwhile: wait
    /// for the key's turn, take what the one before kept (`kept`), else `compute` and `keep`
    /// while still holding the turn, so those waiting find it.
    async fn in_turn<T, E, Fut>(
        &self,
        key: &str,
        kept: impl Fn() -> Option<(A, Kept)>,
        compute: impl FnOnce() -> Fut,
        keep: impl FnOnce(T) -> A,
    ) -> Result<(A, Kept), E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let gate = lock(&self.computing)
            .entry(key.to_string())
            .or_default()
            .clone();
        // Forgotten however this ends, also when the request is dropped while it waits.
        let _forget = Forget {
            computing: &self.computing,
            key,
            gate: &gate,
        };
        let _turn = gate.lock().await;
        if let Some(b) = kept() {
            return Ok(b);
        }
        let made = compute().await?;
        Ok((keep(made), Kept::Miss))
    }

    /// A kept live token for this secret hash, if the answer epoch did not move since.
    pub fn token(&self, view: View, hash: &str) -> Option<TokenInfo> {
        lock(&self.tokens).get(view.tokens, hash)
    }

    pub fn keep_token(&self, view: View, hash: String, token: TokenInfo) {
        lock(&self.tokens).keep(view.tokens, hash, token, 1, TOKEN_BUDGET);
    }

    /// How long to wait before the next [`ReadYourWrites::full_check`], when the last one
    /// `took` this long. Without a watch, or with one that leaves the `artifacts/` folders
    /// out ([`Coverage::Folders`]), the check is the only freshness (for those folders), but it
    /// never takes more than about a twentieth of a core (at 100,000 tickets one look takes
    /// seconds).
    pub fn full_check_every(&self, took: Duration) -> Duration {
        match self.watch() {
            Some((_, w)) if w.coverage() == Coverage::Full => FULL_CHECK_WATCHED,
            _ => FULL_CHECK_UNWATCHED.max(took * 20),
        }
    }

    /// Look at every file now (the periodic fallback), and start a watch again if the last
    /// one broke. `write_index(None)` is called once, as in [`ReadYourWrites::settle`].
    pub async fn full_check<W, Fut>(&self, ws: &Workspace, write_index: W) -> Result<(), StoreError>
    where
        W: FnOnce(Option<Vec<TicketId>>) -> Fut,
        Fut: Future<Output = Result<IndexStats, StoreError>>,
    {
        if self.watch().is_none() && self.restartable {
            match FileWatch::start(ws, self.db_file.as_deref()) {
                Ok(w) => {
                    tracing::info!(folders = w.watches(), "watching the ticket files again");
                    let epoch = self.started.fetch_add(1, Ordering::SeqCst) + 1;
                    *lock(&self.watch) = Some((epoch, Arc::new(w)));
                }
                Err(e) => tracing::warn!(error = %e, "cannot watch the ticket files again"),
            }
        }
        let mut pending = self.pending.lock().await;
        let stats = write_index(None).await?;
        pending.lost = false;
        pending.tickets.clear();
        if stats.reindexed + stats.removed > 0 {
            tracing::info!(
                reindexed = stats.reindexed,
                removed = stats.removed,
                "the periodic check found ticket files the index had not seen"
            );
        }
        Ok(())
    }
}

/// Removes a finished computation's gate (if no newer one took its place) when dropped.
struct Forget<'a> {
    computing: &'a Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    key: &'a str,
    gate: &'a Arc<tokio::sync::Mutex<()>>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut computing = lock(self.computing);
        if computing
            .get(self.key)
            .is_some_and(|g| Arc::ptr_eq(g, self.gate))
        {
            computing.remove(self.key);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{Cache, Generation};

    fn g(files: u64) -> Option<Generation> {
        Some((files, 0))
    }

    #[test]
    fn an_answer_is_found_only_at_the_generation_it_was_kept_at() {
        let mut c: Cache<u32> = Cache::new();
        c.keep(g(3), "a".into(), 1, 10, 1000);
        assert_eq!(c.get(g(3), "a"), Some(1));
        assert_eq!(c.get(g(4), "a"), None, "a later generation");
        assert_eq!(c.get(None, "a"), None, "nothing may be cached now");
        // Computed at an older generation than the cache knows: refused.
        c.keep(g(2), "b".into(), 2, 10, 1000);
        assert_eq!(c.get(g(3), "b"), None);
        // A newer generation starts over.
        c.keep(g(5), "b".into(), 2, 10, 1000);
        assert_eq!((c.get(g(5), "a"), c.get(g(5), "b")), (None, Some(2)));
        assert_eq!(c.size, 10);
    }

    #[test]
    fn a_commit_in_the_database_alone_is_a_new_generation() {
        let mut c: Cache<u32> = Cache::new();
        c.keep(Some((7, 100)), "a".into(), 1, 10, 1000);
        assert_eq!(c.get(Some((7, 100)), "a"), Some(1));
        assert_eq!(c.get(Some((7, 101)), "a"), None, "the database moved on");
        // Kept at an older database stamp than the cache knows: refused.
        c.keep(Some((7, 101)), "b".into(), 2, 10, 1000);
        c.keep(Some((7, 100)), "c".into(), 3, 10, 1000);
        assert_eq!(c.get(Some((7, 100)), "c"), None);
        assert_eq!(c.get(Some((7, 101)), "b"), Some(2));
    }

    #[test]
    fn the_same_answer_kept_again_counts_once_and_a_full_cache_keeps_half() {
        let mut c: Cache<u32> = Cache::new();
        for _ in 0..50 {
            c.keep(g(1), "same".into(), 7, 10, 1000);
        }
        assert_eq!((c.size, c.map.len()), (10, 1));
        for i in 0..100 {
            c.keep(g(1), format!("k{i}"), i, 10, 1000);
        }
        assert!(c.size <= 1000, "{}", c.size);
        assert_eq!(c.size, c.map.len() * 10);
        assert!(c.map.len() > 40, "{} left", c.map.len());
        assert_eq!(c.get(g(1), "k99"), Some(99), "the newest is kept");
        // One answer larger than a sixteenth of the budget is not kept at all.
        c.keep(g(1), "huge".into(), 0, 100, 1000);
        assert_eq!(c.get(g(1), "huge"), None);
    }
}
