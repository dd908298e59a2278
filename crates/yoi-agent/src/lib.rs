//! How agents run (docs/pods.md, docs/security.md): the agent profiles ([`profile`]), the
//! sandbox policy every agent and validation command gets ([`policy`]), the Landlock rules that
//! confine a run just before `exec` ([`rules`]) and the proxy that holds a run to a listed
//! network ([`proxy`]).
//!
//! The pod (yoi-pod) builds each run's policy and starts it through the launcher (`yoi
//! __sandbox`, in the CLI), which calls [`rules::confine`]; the workspace's configuration
//! (yoi-store) reads `[agents.NAME]`, `[prices]` and `[sandbox]` into these types.

pub mod policy;
pub mod profile;
pub mod proxy;
pub mod rules;

pub use policy::{Enforcement, Mode, Network, NetworkSection, Policy, SandboxSection, CREDENTIALS};
pub use profile::{AgentProfile, ContractRule, Price};
pub use rules::confine;
