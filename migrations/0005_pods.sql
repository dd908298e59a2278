-- Pods and the assignment protocol (DESIGN §7, docs/pods.md). One row of `assignments` is one
-- attempt of one step: a re-attempt is a new row with attempt + 1 and fence + 1, so a late
-- result from an earlier attempt names a fence that no longer matches anything live.
ALTER TABLE assignments ADD COLUMN claimed_by TEXT;
ALTER TABLE assignments ADD COLUMN heartbeat_ms BIGINT;
ALTER TABLE assignments ADD COLUMN workdir TEXT;
ALTER TABLE assignments ADD COLUMN head_commit TEXT;
ALTER TABLE assignments ADD COLUMN result TEXT;
ALTER TABLE assignments ADD COLUMN usage TEXT;
ALTER TABLE assignments ADD COLUMN error TEXT;
ALTER TABLE assignments ADD COLUMN log_path TEXT;
ALTER TABLE assignments ADD COLUMN finished_ms BIGINT;
-- At most one live attempt per (ticket, step), whoever races to create one. `held` is an
-- acceptance's first assignment before the ticket is in progress; pods never claim it.
CREATE UNIQUE INDEX assignments_live ON assignments (ticket_id, step)
    WHERE status IN ('held', 'pending', 'claimed');
CREATE INDEX assignments_claimable ON assignments (role, status, created_ms);

-- A pod incarnation: `id` is its name plus a nonce drawn at each start, so a restarted pod is
-- a new row and claims of the old incarnation are recognised as orphaned.
CREATE TABLE pods (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    host TEXT NOT NULL,
    pid BIGINT,
    profile TEXT,
    state TEXT NOT NULL,
    registered_ms BIGINT NOT NULL,
    heartbeat_ms BIGINT NOT NULL,
    assignment_id TEXT,
    -- The token the pod registered with: only that token speaks for it.
    token_id TEXT NOT NULL
);
