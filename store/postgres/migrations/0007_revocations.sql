-- The API keys revoked, by the SHA-256 of their secret, so that every
-- instance learns each revocation (it reads this table when the
-- credentials change) and keeps it outside the database, where a restore
-- of an older dump cannot undo it (restore.go). pardoned_at marks a
-- revocation that an operator undid on purpose (petstore unrevoke): the
-- instances forget it instead of applying it again.
CREATE TABLE revocations (
    sha256     BYTEA PRIMARY KEY,
    key_id     BIGINT NOT NULL,
    revoked_at TIMESTAMPTZ NOT NULL,
    -- pardoned_at is set when an operator undid the revocation on purpose.
    pardoned_at TIMESTAMPTZ
);
CREATE INDEX revocations_by_key ON revocations (key_id);
