-- Versions at or below this sequence's value may have been acknowledged
-- before a restore took them back: a record written after the restore
-- moves past it (store/postgres/restore.go, nextVersion).
CREATE SEQUENCE version_floor;
