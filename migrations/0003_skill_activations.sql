-- Each skill activation, recorded before the skill's body is handed out.
CREATE TABLE skill_activations (
    id TEXT PRIMARY KEY,
    skill TEXT NOT NULL,
    digest TEXT NOT NULL,
    source TEXT NOT NULL,
    who TEXT NOT NULL,
    ticket_id TEXT,
    assignment_id TEXT,
    at_ms BIGINT NOT NULL
);
CREATE INDEX skill_activations_skill ON skill_activations (skill, at_ms);
