-- stamp is a random number written with every change, and prev_stamp the
-- one it replaced: an instance that saw (version, stamp) knows that the
-- next change it sees continues that history only when prev_stamp is the
-- stamp it saw. A restore or a point-in-time recovery rewinds the row
-- with the data; a change made before the next poll may bring version
-- back to where it was, but never the stamp. A binary older than these
-- columns leaves them alone, and its changes look discontinuous, which
-- reloads what the instances cache (the safe side).
ALTER TABLE changes ADD COLUMN stamp BIGINT NOT NULL DEFAULT 0;
ALTER TABLE changes ADD COLUMN prev_stamp BIGINT NOT NULL DEFAULT 0;
