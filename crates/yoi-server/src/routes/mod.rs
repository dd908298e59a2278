//! The API routes, one module per resource.

pub mod events;
pub mod flows;
pub mod forge_status;
pub mod forge_sync;
pub mod git;
pub mod health;
pub mod inbox;
pub mod mcp;
pub mod packet;
pub mod pods;
pub mod routing;
pub mod skills;
pub mod spend;
pub mod tickets;
pub mod workflow_offers;
pub mod workflows;
