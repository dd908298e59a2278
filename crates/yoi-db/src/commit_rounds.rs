//! The answer epoch and PostgreSQL's commit stamp ([`Db::answer_stamps`]), read in rounds
//! shared by every request that settles ([`crate::read_your_writes`]).
//!
//! A request may rely on a stamp only if it was read after the request arrived: then every
//! write that finished before the request is in it. One query per request would make the
//! database's round trip the ceiling of every cached read, so requests share rounds: a request
//! that arrives while no round runs starts one; one that arrives while a round runs waits for
//! the next, which starts as soon as the running one ends and answers everyone who waited for
//! it. However many requests arrive, at most one query is in flight, and none waits more than
//! two round trips. A failed query answers `None`: nothing may be cached by those requests.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::answer_epoch::Stamps;
use crate::Db;

/// Rounds of reading the commit stamp.
pub(crate) struct Rounds {
    state: Mutex<State>,
    /// The last finished round, what it read and when it began.
    done: tokio::sync::watch::Sender<(u64, Option<(Stamps, Instant)>)>,
}

#[derive(Default)]
struct State {
    /// Rounds started so far.
    started: u64,
    /// A round is in flight.
    running: bool,
    /// Someone arrived while it was: start another when it ends.
    wanted: bool,
}

impl Rounds {
    pub(crate) fn new() -> Arc<Rounds> {
        Arc::new(Rounds {
            state: Mutex::new(State::default()),
            done: tokio::sync::watch::channel((0, None)).0,
        })
    }

    /// Stamps read after this call began, and when that read began (`None`: the database
    /// could not say).
    pub(crate) async fn stamp(self: &Arc<Self>, db: &Db) -> Option<(Stamps, Instant)> {
        let mut done = self.done.subscribe();
        let mine = {
            let mut s = lock(&self.state);
            if s.running {
                // The running round may have read before this request arrived.
                s.wanted = true;
                s.started + 1
            } else {
                s.started += 1;
                s.running = true;
                self.start(db.clone(), s.started);
                s.started
            }
        };
        // A later round than this request's own is fresher still.
        let finished = done.wait_for(|(round, _)| *round >= mine).await.ok()?;
        finished.1
    }

    fn start(self: &Arc<Self>, db: Db, round: u64) {
        let rounds = self.clone();
        tokio::spawn(async move {
            let began = Instant::now();
            let stamp = match db.answer_stamps().await {
                Ok(s) => Some((s, began)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the answer epoch; not caching");
                    None
                }
            };
            rounds.done.send_replace((round, stamp));
            let mut s = lock(&rounds.state);
            if s.wanted {
                s.wanted = false;
                s.started += 1;
                rounds.start(db, s.started);
            } else {
                s.running = false;
            }
        });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
