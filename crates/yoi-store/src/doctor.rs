//! Doctor: structural checks over the ticket files.
