-- Doctor compares every ticket's events and outbox rows with its files, by ticket. With the key
-- in the index, those reads touch the index alone instead of every row's page (the rows hold
-- the event bodies and payloads: most of the database). Same number of indexes to maintain.
DROP INDEX events_ticket;
CREATE INDEX events_ticket ON events (ticket_id, position, id);
DROP INDEX outbox_ticket;
CREATE INDEX outbox_ticket ON outbox (ticket_id, seq, event_id);
