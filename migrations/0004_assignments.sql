-- Assignments: one step of a ticket's flow handed to a role. The orchestrator creates the first
-- (`implement`, role `coder`, status `pending`) when it accepts a ticket; pods claim them later.
-- `fence` grows each time the step is handed out again, so a late result is recognised.
CREATE TABLE assignments (
    id TEXT PRIMARY KEY,
    ticket_id TEXT NOT NULL,
    step TEXT NOT NULL,
    role TEXT NOT NULL,
    attempt BIGINT NOT NULL,
    fence BIGINT NOT NULL,
    status TEXT NOT NULL,
    lease_until_ms BIGINT,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX assignments_ticket ON assignments (ticket_id, status);
