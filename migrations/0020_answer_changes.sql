-- What each move of the answer epoch (0017) changed, so a server keeping answers drops only
-- those: a row per ticket whose answers a database-only write changed (its assignments, its
-- skill activations), or the name `*tokens` for a write to tokens, which no answer about
-- tickets reads. A move with no row here changed something it did not name and drops every
-- kept answer, as every move did before. Each move's rows are written in the transaction that
-- moves it (`crates/yoi-db/src/answer_epoch.rs`); rows of moves older than the last 1,000 are
-- deleted as new ones are written.
CREATE TABLE answer_changes (
    n BIGINT NOT NULL,
    ticket_id TEXT NOT NULL
);
CREATE INDEX answer_changes_n ON answer_changes (n);
