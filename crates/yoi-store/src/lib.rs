//! yoi store.
