//! Agent Skills for yoi: parse, lint, catalog, activation, resources, prompts and proposals.
//!
//! The crate is a library with no terminal, clock or environment of its own: callers pass
//! paths, time and the principal, and get typed values or typed errors back. It reads skills
//! from the workspace, extra roots and the built-ins compiled in, and writes skills only
//! through [`proposal::approve`], which needs a [`proposal::HumanApprover`].
//!
//! Progressive disclosure maps onto three calls: [`Catalog::list`] / [`render_available_skills`]
//! (name and description), [`activate()`] (the body, recorded first), and [`resource()`] (one
//! bundled file, confined and size-limited). The decisions behind the rules are in
//! `docs/skills.md`.

pub mod activate;
pub mod builtin;
pub mod catalog;
pub mod diagnostic;
pub mod digest;
pub mod lint;
pub mod listing;
pub mod offer;
pub mod parse;
pub mod prompt;
pub mod proposal;
pub mod resource;
pub mod workflow;

pub use activate::{
    activate, ActivateError, Activation, ActivationRecord, ActivationRecorder, ActivationRequest,
    AllowedTools, RecorderError,
};
pub use builtin::{builtin, builtins, BuiltinFile, BuiltinSkill};
pub use catalog::{
    Catalog, CatalogConfig, ShadowedSkill, SkillEntry, SkillSource, SkillSummary, SkippedFolder,
    SourceProblem,
};
pub use diagnostic::{rules, Diagnostic, Severity};
pub use lint::{lint_skill_md, LintedSkill, SkillMeta};
pub use listing::{FileListing, MAX_LISTED_FILES};
pub use parse::{parse_skill_md, ParseError, SkillFile};
pub use prompt::{render_activation, render_available_skills};
pub use proposal::{
    approve, propose, reject, Decision, HumanApprover, Proposal, ProposalError, ProposalKind,
    ProposalStatus,
};
pub use resource::{resource, Resource, ResourceError, DEFAULT_MAX_RESOURCE_BYTES};
