-- The queue page finds the second of its 100th queued ticket (`crates/yoi-db/src/queue_reads.rs`:
-- a time's text sorts by its second but not within it) with `ORDER BY` this expression over the
-- queued tickets: without an index, a sort of every queued row for each page (16,627 rows, about
-- 33 ms of the page's 45 ms of server CPU at 100,000 tickets). Indexed with the state in front,
-- the 100th is a walk of 100 index entries, and the rows up to that second a range of it.
-- The query writes the expression word for word as here: SQLite and PostgreSQL match an
-- expression index only to the same expression. The same statement on both.
CREATE INDEX tickets_queued_second ON tickets (state, (COALESCE(SUBSTR(queued_at, 1, 19), '')));
