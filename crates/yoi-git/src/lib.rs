//! yoi git.
