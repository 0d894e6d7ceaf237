-- The admin API's kept answers were sealed under a key derived from the
-- Idempotency-Key alone, kept beside its plain SHA-256: a dump could open
-- them by guessing the key. They are now sealed under the admin token too
-- (store/idempotency.go), and the old rows (their answer's first byte, the
-- version, is 1) can no longer be found: forget them now rather than when
-- they expire.
DELETE FROM idempotency_keys
WHERE scope LIKE 'admin:%' AND substring(answer FROM 1 FOR 1) = '\x01'::bytea;
