-- The id an event had in the PostgreSQL database that a bbolt file took it
-- from, which numbered it again, before this database took the file
-- (petstore migrate, there and back and there again): its deliveries go
-- on under that id (their webhook-id), and a client's cursor of that
-- database resumes at the event that followed it (EventCursor). NULL for
-- every other event.
ALTER TABLE events ADD COLUMN was_tx BIGINT, ADD COLUMN was_seq BIGINT;
CREATE INDEX events_was ON events (was_tx, was_seq) WHERE was_tx IS NOT NULL;
