//! Kept answers about tickets, each dropped only when what it was made from changes: a
//! ticket's answer when that ticket or one it shows (a relation's other end) changes, a list
//! or a count when any ticket changes, everything when the answer epoch moves
//! (`answer_epoch.rs`: assignments, activations, tokens) or when a change may reach answers it
//! does not name (relations written, folders appearing or going, the watch losing track). An
//! answer made from the ticket files alone ([`Made::TicketFilesOnly`], the inbox) stays across
//! a move of the epoch: nothing it read moved.
//!
//! This module only keeps and drops; [`crate::read_your_writes`] tells it what changed, in
//! order, under its settle lock, so an answer is dropped before any request that arrived after
//! the change can be served it. Changes are counted by a clock: a request's view is the clock
//! when it settled, and an answer computed from that view is refused when something it was made
//! from changed after the view was taken (the computation may have read the old state).

use std::collections::HashMap;

use yoi_core::TicketId;

/// What an answer about tickets was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Made {
    /// These tickets' files and index rows (a ticket's own answer: that ticket and the other
    /// ends of its relations), plus the answer epoch.
    Tickets(Vec<TicketId>),
    /// Any ticket's (a list, a count, an answer looked up by a short id), plus the epoch.
    AnyTicket,
    /// Any ticket's files and index rows, and nothing the answer epoch counts (the inbox: it
    /// reads thread events, states and broken tickets, never assignments, activations or
    /// tokens). Kept across the epoch's moves; dropped when any ticket changes.
    TicketFilesOnly,
}

struct Entry<A> {
    value: A,
    size: usize,
    made: Made,
}

/// The most tickets whose last change is remembered; past it, everything starts over.
const REMEMBERED: usize = 200_000;

pub(crate) struct TicketAnswers<A> {
    /// Changes seen so far.
    clock: u64,
    /// The answer epoch the kept answers were made at (`None`: none read yet).
    epoch: Option<i64>,
    /// When everything was last dropped.
    all_at: u64,
    /// When any ticket last changed (or everything was dropped for a change to the files).
    any_at: u64,
    /// When each ticket last changed (those that changed since `all_at`).
    tickets_at: HashMap<TicketId, u64>,
    size: usize,
    map: HashMap<String, Entry<A>>,
}

impl<A: Clone> TicketAnswers<A> {
    pub(crate) fn new() -> Self {
        TicketAnswers {
            clock: 0,
            epoch: None,
            all_at: 0,
            any_at: 0,
            tickets_at: HashMap::new(),
            size: 0,
            map: HashMap::new(),
        }
    }

    /// The clock now: what a request that settled may compute from.
    pub(crate) fn clock(&self) -> u64 {
        self.clock
    }

    /// These tickets' files changed (and the index has been brought up to them);
    /// `everything`: a change that may reach answers it does not name.
    pub(crate) fn changed(&mut self, tickets: &[TicketId], everything: bool) {
        if tickets.is_empty() && !everything {
            return;
        }
        self.clock += 1;
        let now = self.clock;
        if everything || self.tickets_at.len() + tickets.len() > REMEMBERED {
            self.drop_all(true);
            return;
        }
        self.drop_tickets(tickets, now, true);
    }

    /// `tickets` changed at `now`: drop the answers made from them and those made from any
    /// ticket's, and with `files` those made from the ticket files alone too.
    fn drop_tickets(&mut self, tickets: &[TicketId], now: u64, files: bool) {
        self.any_at = now;
        for t in tickets {
            self.tickets_at.insert(t.clone(), now);
        }
        let mut freed = 0;
        self.map.retain(|_, e| {
            let keep = match &e.made {
                Made::Tickets(made) => !made.iter().any(|m| tickets.contains(m)),
                Made::AnyTicket => false,
                Made::TicketFilesOnly => !files,
            };
            if !keep {
                freed += e.size;
            }
            keep
        });
        self.size -= freed;
    }

    /// The answer epoch read now; a move drops everything the epoch counts
    /// (every answer but those made from the ticket files alone).
    pub(crate) fn epoch(&mut self, epoch: i64) {
        match self.epoch {
            Some(e) if e >= epoch => {}
            _ => {
                self.epoch = Some(epoch);
                self.clock += 1;
                self.drop_all(false);
            }
        }
    }

    /// Drop every kept answer the epoch counts, and with `files` those made from the ticket
    /// files alone too (a change that may reach any of them).
    fn drop_all(&mut self, files: bool) {
        self.all_at = self.clock;
        self.tickets_at.clear();
        if files {
            self.any_at = self.clock;
            self.map.clear();
            self.size = 0;
            return;
        }
        let mut freed = 0;
        self.map.retain(|_, e| {
            let keep = e.made == Made::TicketFilesOnly;
            if !keep {
                freed += e.size;
            }
            keep
        });
        self.size -= freed;
    }

    pub(crate) fn get(&self, key: &str) -> Option<A> {
        self.map.get(key).map(|e| e.value.clone())
    }

    /// Keep an answer computed by a request that settled at clock `at`, unless something it
    /// was made from changed since, or it is too large to keep (see `read_your_writes`'
    /// answers for the budget's rule).
    pub(crate) fn keep(
        &mut self,
        at: u64,
        key: String,
        value: A,
        made: Made,
        size: usize,
        budget: usize,
    ) {
        let stale = match &made {
            Made::TicketFilesOnly => at < self.any_at,
            Made::AnyTicket => at < self.all_at || at < self.any_at,
            Made::Tickets(ts) => {
                at < self.all_at
                    || ts
                        .iter()
                        .any(|t| self.tickets_at.get(t).is_some_and(|&c| c > at))
            }
        };
        if stale || size > budget / 16 {
            return;
        }
        if let Some(old) = self.map.remove(&key) {
            self.size -= old.size;
        }
        // Full: drop every other entry, as the answers of `read_your_writes` do.
        if self.size + size > budget {
            let mut n = 0usize;
            let mut freed = 0usize;
            self.map.retain(|_, e| {
                n += 1;
                let keep = n.is_multiple_of(2);
                if !keep {
                    freed += e.size;
                }
                keep
            });
            self.size -= freed;
        }
        self.size += size;
        self.map.insert(key, Entry { value, size, made });
    }
}

/// Moves of the answer epoch that name what they changed (`answer_epoch.rs`, `bump_for`).
impl<A: Clone> TicketAnswers<A> {
    /// The answer epoch the kept answers were made at.
    pub(crate) fn known_epoch(&self) -> Option<i64> {
        self.epoch
    }

    /// The answer epoch moved to `epoch`, and every move since [`TicketAnswers::known_epoch`]
    /// changed only the assignments or activations of `tickets` (or tokens, which no answer
    /// about tickets reads): drop the answers made from those tickets and every answer made
    /// from any ticket's (a list, a count, an answer looked up by a short id); keep the
    /// others. A computation that began before is refused when it keeps, as after a change to
    /// those tickets' files.
    pub(crate) fn rows_changed(&mut self, tickets: &[TicketId], epoch: i64) {
        if self.epoch.is_some_and(|e| e >= epoch) {
            return;
        }
        self.epoch = Some(epoch);
        if tickets.is_empty() {
            return;
        }
        self.clock += 1;
        let now = self.clock;
        if self.tickets_at.len() + tickets.len() > REMEMBERED {
            self.epoch = None;
            self.epoch(epoch);
            return;
        }
        self.drop_tickets(tickets, now, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TicketId {
        TicketId::parse(s).unwrap()
    }

    const A: &str = "01JD0000000000000000000AAA";
    const B: &str = "01JD0000000000000000000BBB";
    const C: &str = "01JD0000000000000000000CCC";

    fn cache() -> TicketAnswers<u32> {
        let mut c = TicketAnswers::new();
        c.epoch(0);
        c
    }

    #[test]
    fn a_change_to_one_ticket_drops_its_answers_and_the_lists_and_keeps_the_others() {
        let mut c = cache();
        let at = c.clock();
        c.keep(at, "a".into(), 1, Made::Tickets(vec![id(A)]), 10, 1000);
        c.keep(
            at,
            "b".into(),
            2,
            Made::Tickets(vec![id(B), id(C)]),
            10,
            1000,
        );
        c.keep(at, "list".into(), 3, Made::AnyTicket, 10, 1000);
        c.changed(&[id(A)], false);
        assert_eq!(
            (c.get("a"), c.get("b"), c.get("list")),
            (None, Some(2), None)
        );
        // B shows C (a relation): a change to C drops B's answer.
        c.changed(&[id(C)], false);
        assert_eq!(c.get("b"), None);
        assert_eq!(c.size, 0);
    }

    #[test]
    fn an_answer_computed_before_a_change_to_what_it_read_is_refused() {
        let mut c = cache();
        let before = c.clock();
        c.changed(&[id(A)], false);
        c.keep(before, "a".into(), 1, Made::Tickets(vec![id(A)]), 10, 1000);
        c.keep(before, "list".into(), 1, Made::AnyTicket, 10, 1000);
        c.keep(before, "b".into(), 2, Made::Tickets(vec![id(B)]), 10, 1000);
        assert_eq!(
            (c.get("a"), c.get("list"), c.get("b")),
            (None, None, Some(2))
        );
        let after = c.clock();
        c.keep(after, "a".into(), 1, Made::Tickets(vec![id(A)]), 10, 1000);
        assert_eq!(c.get("a"), Some(1));
    }

    #[test]
    fn an_answer_made_from_the_files_alone_stays_across_the_epoch_and_goes_with_any_change() {
        let mut c = cache();
        let at = c.clock();
        c.keep(at, "inbox".into(), 1, Made::TicketFilesOnly, 10, 1000);
        c.keep(at, "list".into(), 2, Made::AnyTicket, 10, 1000);
        // An assignment written (a claim, a lease sweep that ended one): the epoch moves.
        c.epoch(1);
        assert_eq!((c.get("inbox"), c.get("list")), (Some(1), None));
        assert_eq!(c.size, 10);
        // Computed before the epoch moved: still what the files say, so kept.
        c.keep(at, "inbox2".into(), 3, Made::TicketFilesOnly, 10, 1000);
        assert_eq!(c.get("inbox2"), Some(3));
        // Any ticket's change drops it, and one computed before that change is refused.
        let before = c.clock();
        c.changed(&[id(A)], false);
        assert_eq!((c.get("inbox"), c.get("inbox2")), (None, None));
        c.keep(before, "inbox".into(), 1, Made::TicketFilesOnly, 10, 1000);
        assert_eq!(c.get("inbox"), None);
        let at = c.clock();
        c.keep(at, "inbox".into(), 1, Made::TicketFilesOnly, 10, 1000);
        c.changed(&[], true);
        assert_eq!(c.get("inbox"), None, "a change that may reach every answer");
        assert_eq!(c.size, 0);
    }

    #[test]
    fn the_epoch_moving_or_a_change_to_relations_drops_everything() {
        let mut c = cache();
        let at = c.clock();
        c.keep(at, "b".into(), 2, Made::Tickets(vec![id(B)]), 10, 1000);
        c.epoch(0);
        assert_eq!(c.get("b"), Some(2), "the same epoch read again");
        c.epoch(1);
        assert_eq!(c.get("b"), None);
        c.keep(at, "b".into(), 2, Made::Tickets(vec![id(B)]), 10, 1000);
        assert_eq!(c.get("b"), None, "computed before the epoch moved");
        let at = c.clock();
        c.keep(at, "b".into(), 2, Made::Tickets(vec![id(B)]), 10, 1000);
        c.changed(&[id(A)], true);
        assert_eq!(c.get("b"), None);
        // An older reading of the epoch (a slower round) changes nothing.
        let at = c.clock();
        c.keep(at, "b".into(), 2, Made::Tickets(vec![id(B)]), 10, 1000);
        c.epoch(0);
        assert_eq!(c.get("b"), Some(2));
    }
}
