//! The API routes, one module per resource.

pub mod health;
pub mod tickets;
