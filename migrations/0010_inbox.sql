-- The inbox and its notifications (docs/inbox.md).
--
-- The inbox is a query over thread events, not a table: it asks which tickets hold an event of
-- a kind, so events get an index by ticket and kind (the service's moves are found by author).
CREATE INDEX events_ticket_kind ON events (ticket_id, kind, author);

-- One row per (channel, inbox entry): the durable promise to tell that channel about that
-- entry once. The primary key is what makes a second row for the same pair impossible, across
-- restarts and crashes; `idempotency_key` is sent with every attempt so a receiver can drop the
-- rare duplicate of a crash between sending and recording. `payload` is the message as frozen
-- when the row was written. Status: `pending` (due at `next_ms`), `sending` (an attempt is out;
-- a row left `sending` by a crash is due again after `next_ms`), `delivered`, `gave_up`
-- (retried for 24 hours), `skipped` (the entry closed before it could be delivered).
CREATE TABLE notify_deliveries (
    channel TEXT NOT NULL,
    entry_key TEXT NOT NULL,
    reason TEXT NOT NULL,
    ticket_id TEXT,
    payload TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_ms BIGINT NOT NULL,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    last_answer TEXT,
    PRIMARY KEY (channel, entry_key)
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (status, next_ms);

-- Every attempt and what the receiver answered (HTTP status and body start, SMTP reply, or the
-- error), for `yoi notify log` and the dashboard.
CREATE TABLE notify_attempts (
    channel TEXT NOT NULL,
    entry_key TEXT NOT NULL,
    attempt BIGINT NOT NULL,
    started_ms BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    ok BIGINT NOT NULL,
    answer TEXT NOT NULL,
    PRIMARY KEY (channel, entry_key, attempt)
);
CREATE INDEX notify_attempts_time ON notify_attempts (started_ms);
