-- Spending within limits (docs/budgets.md).
--
-- What each finished attempt cost, in columns a sum can read: the cost in millionths of a USD
-- (reported by the agent, else estimated from the price table; NULL when neither), the tokens
-- (in + out + cached), the agent profile that ran it and the model it named. The usage JSON
-- stays the record; these are its figures, written in the same statement.
ALTER TABLE assignments ADD COLUMN cost_micros BIGINT;
ALTER TABLE assignments ADD COLUMN tokens BIGINT;
ALTER TABLE assignments ADD COLUMN agent TEXT;
ALTER TABLE assignments ADD COLUMN model TEXT;
CREATE INDEX assignments_finished ON assignments (finished_ms);

-- The provider a pod's profile belongs to (the account whose limits its profiles share).
ALTER TABLE pods ADD COLUMN provider TEXT;

-- Who may not start work until when: `provider:NAME` or `agent:NAME` after a rate limit
-- (`strikes` in a row, for the backoff), `agent:NAME` over its daily budget, `*` (everyone)
-- over the workspace's daily budget.
CREATE TABLE agent_pauses (
    subject TEXT PRIMARY KEY,
    until_ms BIGINT NOT NULL,
    strikes BIGINT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    since_ms BIGINT NOT NULL
);

-- Tickets over their budget: their pending steps wait here until a person adds to the budget.
CREATE TABLE budget_holds (
    ticket_id TEXT PRIMARY KEY,
    since_ms BIGINT NOT NULL,
    message TEXT NOT NULL
);
