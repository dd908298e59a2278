-- The spend sums read only this index, never the attempts' wide rows (results, usage JSON):
-- `yoi cost` and the dashboard's Costs page group tens of thousands of attempts by day, agent,
-- model or ticket (BENCHMARKS.md).
CREATE INDEX assignments_spend ON assignments (finished_ms, ticket_id, agent, model, cost_micros, tokens);
