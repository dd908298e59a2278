-- The forge's runtime facts (docs/forge.md), kept across restarts.
--
-- One row per check result a forge reported for a commit: a check run or a legacy commit
-- status (`kind`), by its name, for exactly one SHA. A result read by polling and one carried
-- by a webhook land in the same row; the newer (`at`, the forge's own time, RFC 3339 UTC, so
-- it orders as text; on a tie a conclusion beats `pending`) wins, so an older result arriving
-- late never overwrites a newer one. The gate reads the row with what the forge says now.
CREATE TABLE forge_checks (
    sha TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    conclusion TEXT NOT NULL,
    at TEXT NOT NULL,
    url TEXT,
    title TEXT,
    summary TEXT,
    source TEXT NOT NULL,
    seen_ms BIGINT NOT NULL,
    PRIMARY KEY (sha, kind, name)
);

-- Webhook deliveries already accepted, by GitHub's `X-GitHub-Delivery` id: a redelivery,
-- before or after a restart, is a no-op. Rows older than thirty days are removed by the driver.
CREATE TABLE forge_deliveries (
    id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    received_ms BIGINT NOT NULL
);
CREATE INDEX forge_deliveries_received ON forge_deliveries (received_ms);
