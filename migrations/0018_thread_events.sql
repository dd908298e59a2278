-- How many events a ticket's thread.md held when the index last read it, when it read without
-- an issue; -1 otherwise (or for rows written before this column). With it, a page of a long
-- thread is served from the `events` rows (`yoi-db`'s thread_page.rs): the count comes with
-- the page, and -1 sends the reader to the file, which says what is wrong with it.
ALTER TABLE tickets ADD COLUMN thread_events BIGINT NOT NULL DEFAULT -1;
