-- The board's card facts ask for each ticket's latest event of a kind (its latest
-- `state_changed`, the orchestrator's latest `decision`): with the position in the key, that is
-- one step down the index from its end, whatever the thread's length. `events_ticket_kind`
-- (0010) stays for the inbox, which looks events up by kind and author.
CREATE INDEX events_ticket_kind_position ON events (ticket_id, kind, position);
