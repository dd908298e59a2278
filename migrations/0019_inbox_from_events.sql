-- The inbox starts from the events that can open an entry instead of walking every queued,
-- in-progress and planning ticket with two probes each (`crates/yoi-db/src/inbox.rs`): 180–440
-- ms at 100,000 tickets, on every dashboard page, for its header's count.
--
-- Only two kinds of event open an entry: an `attention` or a `question` (while the ticket is
-- queued or in progress), and a move into planning (`routing_failed`, while it is in planning,
-- when the service made the move). This partial index holds those events alone, by ticket, so
-- the inbox's read costs what the tickets that ever needed a person cost, not what every ticket
-- costs. `attrs` is the event's attributes as compact JSON (`bulk.rs` writes it), so a move into
-- planning is the text `"to":"planning"` in it (on SQLite LIKE ignores case, which only adds
-- rows the query then drops).
--
-- The query repeats this WHERE clause word for word: SQLite and PostgreSQL use a partial index
-- only for a query whose condition is (implies) the index's own. The same statement on both.
CREATE INDEX events_inbox_openers ON events (ticket_id)
    WHERE kind IN ('attention', 'question')
       OR (kind = 'state_changed' AND attrs LIKE '%"to":"planning"%');
