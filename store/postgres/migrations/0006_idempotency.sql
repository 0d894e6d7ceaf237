-- The answers kept for Idempotency-Keys (store/idempotency.go). The
-- primary key is what keeps two instances that race on one key from both
-- performing it: the second one's insert waits for the first one's
-- transaction and then finds its answer. answer is NULL only inside the
-- transaction that claimed the key, never once it commits.
CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    answer      BYTEA,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
