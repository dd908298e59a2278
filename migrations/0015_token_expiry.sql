-- Tokens that end by themselves (`yoi token create --expires 30d`, docs/security.md): the
-- time after which the token is refused as if revoked. NULL never expires.
ALTER TABLE tokens ADD COLUMN expires_ms BIGINT;
