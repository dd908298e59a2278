-- Which workspace a database's rows belong to, and which server serves it (docs/database.md).
-- On PostgreSQL each workspace has a schema of its own (`yoi_<id>`), holding these tables and
-- every other; on SQLite the file is the workspace's alone. Either way a database records the
-- id it was made for, so rows of one workspace are never read as another's.
CREATE TABLE workspace_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- The one server indexing this workspace: a lease renewed by its heartbeat. A server of
-- another clone (another host or root) is refused while the lease is fresh.
CREATE TABLE server_lease (
    slot TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    root TEXT NOT NULL,
    pid BIGINT NOT NULL,
    address TEXT,
    nonce TEXT NOT NULL,
    heartbeat_ms BIGINT NOT NULL
);
