-- API bearer tokens. Only a SHA-256 hash of each secret is stored; the secret is shown once.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    principal TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL,
    revoked_ms BIGINT
);
