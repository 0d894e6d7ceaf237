-- version counts a record's writes, from 1; the API's ETag and If-Match are
-- made from it (store/versions.go). Records stored before it are at 1.
ALTER TABLE pets ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE categories ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE orders ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
