-- What the server's kept API answers read from the database besides the ticket index, which
-- follows the ticket files and is watched through them: assignments (a ticket's attempts),
-- skill activations and tokens. Every write that changes one of them adds one to `n` in its
-- own transaction; a server keeping answers reads `n` before it serves one and starts over
-- when it moved (`crates/yoi-db/src/answer_epoch.rs`). A pod's heartbeat or a claim that finds
-- nothing writes no row here, so idle pods leave the kept answers alone.
CREATE TABLE answer_epoch (
    id BIGINT PRIMARY KEY,
    n BIGINT NOT NULL
);
INSERT INTO answer_epoch (id, n) VALUES (1, 0);
