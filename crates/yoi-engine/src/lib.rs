//! yoi's application layer: every rule that is more than a file format and less than a
//! frontend. The CLI, the HTTP API, the dashboard and pods call in here and hold no rules of
//! their own; this crate never prints, reads environment variables, reads the clock or chooses
//! an exit code — callers pass settings, principals and the time in.
//!
//! - [`routing`]: the router's rules (decide, circuit, naming), the accept saga, one routing
//!   pass, and the orchestrator as a step function ([`routing::orchestrator::Orchestrator`]).
//! - [`assignments`]: claims, leases, fences and results of pods' work; the lease sweep as a
//!   step function.
//! - [`doctor`]: the one doctor both `yoi ticket doctor` and `GET /api/v1/doctor` report.
//! - [`skills`]: the skill catalog of a workspace, activations, proposals with their checks.
//! - [`workflows`]: the workflows people write and invoke, checked against the skill catalog.
//! - [`edge`]: the one table from an error's class to the CLI exit code and the HTTP status.
//! - [`person_ops`]: the one table of the operations a person asks for, from which the
//!   frontends build their scopes, dashboard actions and state-operation dispatch.
//!
//! Background loops are step functions: `step(&mut state, env, now) -> outcome`. The tokio
//! task in `yoi serve` only sleeps and calls them (docs/engine.md).

pub mod assignments;
pub mod cost;
pub mod doctor;
pub mod edge;
pub mod flows;
pub mod forge_import;
pub mod inbox;
pub mod notify;
pub mod person_ops;
pub mod routing;
pub mod skills;
pub mod spend;
pub mod workflows;

pub use edge::Edge;

// The store's operations and queries, the database, git and the skill format, as the
// frontends reach them.
// The engine adds no rules to these (each store operation already carries every guard), so it
// passes them through instead of wrapping each one; a frontend depends on the engine alone.
pub use yoi_db as db;
pub use yoi_git as git;
pub use yoi_skills as skill_format;
pub use yoi_store as store;
