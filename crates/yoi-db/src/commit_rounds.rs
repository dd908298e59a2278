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

use yoi_core::TicketId;

use crate::answer_epoch::{Moved, Stamps, NAMED_MOVES};
use crate::Db;

/// Rounds of reading the commit stamp.
pub(crate) struct Rounds {
    state: Mutex<State>,
    /// What each move of the answer epoch the rounds saw changed.
    moves: Mutex<MoveLog>,
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
            moves: Mutex::new(MoveLog::default()),
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
                Ok(s) => {
                    rounds.learn(&db, s.epoch).await;
                    Some((s, began))
                }
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

/// What each move of the answer epoch in `from + 1 ..= upto` changed (nothing is known of the
/// moves up to `from`). Rounds run one at a time, so each learns the moves since the last.
#[derive(Default)]
struct MoveLog {
    from: Option<i64>,
    upto: i64,
    moves: std::collections::BTreeMap<i64, Moved>,
}

impl Rounds {
    /// Learn what the moves since the last round's epoch up to `epoch` changed.
    async fn learn(&self, db: &Db, epoch: i64) {
        let last = {
            let log = lock(&self.moves);
            log.from.map(|_| log.upto)
        };
        let moves = match last {
            Some(last) if epoch <= last => return,
            Some(last) => db.answer_moves(last, epoch).await.ok().map(|m| (last, m)),
            None => None,
        };
        let mut log = lock(&self.moves);
        match moves {
            Some((last, moves)) if log.upto == last && moves.len() as i64 == epoch - last => {
                for (n, m) in (last + 1..).zip(moves) {
                    log.moves.insert(n, m);
                }
                log.upto = epoch;
                while log.moves.len() as i64 > 2 * NAMED_MOVES {
                    let Some((n, _)) = log.moves.pop_first() else {
                        break;
                    };
                    log.from = Some(n);
                }
            }
            _ => {
                *log = MoveLog {
                    from: Some(epoch),
                    upto: epoch,
                    moves: Default::default(),
                }
            }
        }
    }

    /// The tickets whose database rows the moves of the epoch in `old + 1 ..= new` changed, or
    /// `None` when one of them changed something it did not name or the rounds do not know
    /// them all (the caller then drops everything).
    pub(crate) fn tickets_moved(&self, old: i64, new: i64) -> Option<Vec<TicketId>> {
        let log = lock(&self.moves);
        if log.from.is_none_or(|from| old < from) || new > log.upto {
            return None;
        }
        let mut out = Vec::new();
        for (_, m) in log.moves.range(old + 1..=new) {
            let (Moved::Tickets(ts) | Moved::Tokens(ts)) = m else {
                return None;
            };
            for t in ts {
                out.push(TicketId::parse(t).ok()?);
            }
        }
        out.sort();
        out.dedup();
        Some(out)
    }

    /// The generation kept tokens are valid at, for the answer epoch `epoch`: the latest move
    /// up to it that touched tokens (or named nothing), or `epoch` when the rounds do not know.
    pub(crate) fn token_generation(&self, epoch: i64) -> i64 {
        let log = lock(&self.moves);
        match log.from {
            Some(from) if from <= epoch && epoch <= log.upto => log
                .moves
                .range(from + 1..=epoch)
                .rev()
                .find(|(_, m)| matches!(m, Moved::Everything | Moved::Tokens(_)))
                .map_or(from, |(n, _)| *n),
            _ => epoch,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
