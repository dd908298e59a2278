-- Tickets whose files yoi cannot read (item.md missing, a link, not UTF-8 or not valid
-- frontmatter; thread.md a link or not UTF-8): listed beside the readable tickets, so a broken
-- file never hides a ticket. Derived from the files like every index table; what is wrong is
-- read from the files when a list asks (there are few).
CREATE TABLE broken_tickets (
    ticket_id TEXT PRIMARY KEY
);
-- An index that knows no file fingerprint is rebuilt whole at the next start, which fills the
-- new table by the new rules.
DELETE FROM ticket_files;
