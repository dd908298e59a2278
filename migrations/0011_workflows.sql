-- Workflow invocations and the attempts that carry them (docs/workflows.md).
--
-- An invocation is a person's comment in the ticket's thread (the files are the truth); this
-- table only records which attempt of the ticket was handed it, so a workflow is put in front
-- of exactly one attempt that completes, and again in front of the next attempt when the one
-- that carried it failed or expired. `invocation_id` is the comment event's id.
CREATE TABLE workflow_carriers (
    invocation_id TEXT NOT NULL,
    assignment_id TEXT NOT NULL,
    ticket_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (invocation_id, assignment_id)
);
CREATE INDEX workflow_carriers_assignment ON workflow_carriers (assignment_id);
