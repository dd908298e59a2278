-- yoi's database: a rebuildable index of the ticket files plus runtime state (outbox,
-- deliveries, operations). Portable SQL: the same file runs on SQLite and PostgreSQL.
-- Times used for ordering are BIGINT milliseconds; times copied from files stay TEXT.

CREATE TABLE tickets (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    target_ref TEXT,
    flow TEXT,
    readiness TEXT,
    priority TEXT,
    queued_by TEXT,
    queued_at TEXT,
    body TEXT NOT NULL,
    search_text TEXT NOT NULL
);
CREATE INDEX tickets_state ON tickets (state, id);

CREATE TABLE ticket_files (
    ticket_id TEXT NOT NULL,
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (ticket_id, name)
);

CREATE TABLE relations (
    ticket_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    note TEXT,
    author TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (ticket_id, kind, target)
);
CREATE INDEX relations_target ON relations (target, kind);

CREATE TABLE events (
    id TEXT PRIMARY KEY,
    ticket_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    kind TEXT NOT NULL,
    author TEXT,
    at TEXT,
    attrs TEXT NOT NULL,
    heading TEXT,
    body TEXT NOT NULL
);
CREATE INDEX events_ticket ON events (ticket_id, position);

CREATE TABLE plan_records (
    ticket_id TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    related_ticket TEXT,
    at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (ticket_id, id)
);

CREATE TABLE outbox (
    seq BIGINT PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    ticket_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX outbox_ticket ON outbox (ticket_id, seq);

CREATE TABLE consumers (
    name TEXT PRIMARY KEY,
    registered_ms BIGINT NOT NULL
);

CREATE TABLE deliveries (
    consumer TEXT NOT NULL,
    seq BIGINT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    visible_after_ms BIGINT NOT NULL,
    reason TEXT,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (consumer, seq)
);

CREATE TABLE operations (
    op_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    ticket_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    result TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
