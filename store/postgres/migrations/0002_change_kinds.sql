-- other_version counts the changes that leave the credentials (API keys,
-- the admin token) alone, in step with version, which counts every change:
-- the credentials changed when version - other_version moved, and only
-- then does an instance reload them. A binary older than this column bumps
-- version alone, so its changes reload the credentials everywhere, as they
-- always did.
ALTER TABLE changes ADD COLUMN other_version BIGINT NOT NULL DEFAULT 0;
