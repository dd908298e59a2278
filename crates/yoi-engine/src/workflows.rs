//! The workflows of a workspace (docs/workflows.md): `.yoi/workflow/<slug>.md` files checked
//! against the skill catalog, listed, shown and linted the same way by the CLI, the API and the
//! dashboard. A file that does not check out is listed with its problems and skipped; it never
//! stops the server or any other workflow. Nothing here writes a workflow file: they are
//! people's.
//!
//! A person invokes a workflow on a ticket ([`invoke`]); the next attempt of its role carries
//! it ([`carry`]).

pub mod carry;
pub mod detect;
pub mod invoke;
pub mod offers;

use std::path::Path;

use serde::Serialize;
use thiserror::Error;
use yoi_core::principal::PrincipalKind;
use yoi_core::ErrorClass;
use yoi_skills::workflow::{
    is_valid_slug, parse_workflow_md, slug_problem, Workflow, WorkflowFile, WorkflowSet,
    WORKFLOW_DIR, WORKFLOW_SUFFIX,
};
use yoi_store::{StoreError, Workspace};

use crate::skills::load_catalog;

/// Why a workflow could not be shown or invoked.
#[derive(Debug, Error)]
pub enum WorkflowError {
    #[error("{}", slug_problem(slug))]
    BadSlug { slug: String },
    #[error("no workflow is called `{slug}`: there is no {WORKFLOW_DIR}/{slug}{WORKFLOW_SUFFIX} (`yoi workflow list` shows the workflows)")]
    Unknown { slug: String },
    #[error("workflow `{slug}` is skipped because its file has errors: {}", problems.join("; "))]
    Invalid { slug: String, problems: Vec<String> },
    #[error("workflow `{slug}` has `user_invocable: false`: people cannot invoke it (set `user_invocable: true` in {WORKFLOW_DIR}/{slug}{WORKFLOW_SUFFIX} to allow it)")]
    NotUserInvocable { slug: String },
    #[error("only a person may invoke a workflow on a ticket; a {kind} asked")]
    PersonOnly { kind: PrincipalKind },
    #[error("workflow `{slug}` has `auto_invoke: false`: agents cannot invoke it (only a person can turn `auto_invoke` on, in {WORKFLOW_DIR}/{slug}{WORKFLOW_SUFFIX})")]
    NotAutoInvoke { slug: String },
    #[error("attempt {id} is not live, so its agent can invoke nothing for it")]
    AttemptOver { id: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WorkflowError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> ErrorClass {
        match self {
            WorkflowError::BadSlug { .. } => ErrorClass::Invalid,
            WorkflowError::Unknown { .. } => ErrorClass::NotFound,
            WorkflowError::Invalid { .. } | WorkflowError::NotUserInvocable { .. } => {
                ErrorClass::Refused
            }
            WorkflowError::PersonOnly { .. } | WorkflowError::NotAutoInvoke { .. } => {
                ErrorClass::NotPermitted
            }
            WorkflowError::AttemptOver { .. } => ErrorClass::Conflict,
            WorkflowError::Store(e) => e.class(),
        }
    }

    /// The stable, machine-readable name of the outcome (the API's `error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            WorkflowError::BadSlug { .. } => "invalid",
            WorkflowError::Unknown { .. } => "not_found",
            WorkflowError::Invalid { .. } => "invalid_workflow",
            WorkflowError::NotUserInvocable { .. } => "refused",
            WorkflowError::PersonOnly { .. } | WorkflowError::NotAutoInvoke { .. } => "forbidden",
            WorkflowError::AttemptOver { .. } => "conflict",
            WorkflowError::Store(e) => e.code(),
        }
    }
}

/// Every workflow file of the workspace, checked against its skill catalog.
pub fn set(ws: &Workspace) -> WorkflowSet {
    // Without the folder there is nothing to check, and the catalog is not read (every claim
    // asks, see `carry::fill`).
    if !ws.root().join(WORKFLOW_DIR).is_dir() {
        return WorkflowSet::default();
    }
    WorkflowSet::load(ws.root(), &load_catalog(ws))
}

/// The usable workflows, then the files that are skipped.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkflowList {
    pub count: usize,
    pub workflows: Vec<Workflow>,
    pub skipped: Vec<WorkflowFile>,
}

/// [`WorkflowList`] of the workspace.
pub fn list(ws: &Workspace) -> WorkflowList {
    let set = set(ws);
    let workflows: Vec<Workflow> = set.valid().cloned().collect();
    WorkflowList {
        count: workflows.len(),
        workflows,
        skipped: set
            .files()
            .iter()
            .filter(|f| !f.is_valid())
            .cloned()
            .collect(),
    }
}

/// Every workflow file checked, and the number of errors found.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkflowLint {
    pub files: Vec<WorkflowFile>,
    pub errors: usize,
}

/// Lint every workflow file, or only `path` (any file; checked against the workspace's
/// workflows and skills as if it were in `.yoi/workflow/` under its own name).
pub fn lint(ws: &Workspace, path: Option<&Path>) -> WorkflowLint {
    let files = match path {
        None => set(ws).files().to_vec(),
        Some(path) => {
            let shown = ws.rel(path);
            let file = match std::fs::read(path) {
                Ok(bytes) => parse_workflow_md(&shown, &bytes),
                Err(e) => {
                    let mut f = parse_workflow_md(&shown, b"");
                    f.diagnostics = vec![yoi_skills::Diagnostic::error(
                        yoi_skills::rules::FILE_READ,
                        format!("cannot read the file: {}", e.kind()),
                        None,
                    )];
                    f
                }
            };
            let slug = file.slug.clone();
            let mut others: Vec<WorkflowFile> = set(ws)
                .files()
                .iter()
                .filter(|f| f.slug != slug)
                .cloned()
                .collect();
            others.push(file);
            let checked = WorkflowSet::from_files(others, &load_catalog(ws));
            checked.file(&slug).into_iter().cloned().collect()
        }
    };
    let errors = files.iter().map(WorkflowFile::error_count).sum();
    WorkflowLint { files, errors }
}

/// The usable workflow `slug`, or why there is none. A slug that is not one (`../x`) is
/// refused before any file is looked at.
pub fn lookup(ws: &Workspace, slug: &str) -> Result<Workflow, WorkflowError> {
    lookup_in(&set(ws), slug)
}

/// [`lookup`] in a set already loaded.
pub fn lookup_in(set: &WorkflowSet, slug: &str) -> Result<Workflow, WorkflowError> {
    if !is_valid_slug(slug) {
        return Err(WorkflowError::BadSlug { slug: slug.into() });
    }
    match set.file(slug) {
        None => Err(WorkflowError::Unknown { slug: slug.into() }),
        Some(f) => f.workflow.clone().ok_or_else(|| WorkflowError::Invalid {
            slug: slug.into(),
            problems: f
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| match d.line {
                    Some(l) => format!("{}:{l}: {}", f.file, d.message),
                    None => format!("{}: {}", f.file, d.message),
                })
                .collect(),
        }),
    }
}

/// How often people invoked one workflow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// People's invocations (`/<slug>` comments).
    pub invocations: usize,
    /// The tickets they were made on.
    pub tickets: usize,
}

/// People's invocations of each workflow, from the index (agents' own invocations are not
/// counted: they carry `agent_workflow`, not `workflow`).
pub fn usage(
    index: &yoi_db::DbIndex,
) -> Result<std::collections::BTreeMap<String, Usage>, StoreError> {
    let mut seen: std::collections::BTreeMap<String, (usize, std::collections::BTreeSet<String>)> =
        std::collections::BTreeMap::new();
    for row in index.workflow_invocations()? {
        if !row
            .author
            .as_deref()
            .is_some_and(|a| !a.is_empty() && carry::is_person_author(a))
        {
            continue;
        }
        let e = seen.entry(row.slug).or_default();
        e.0 += 1;
        e.1.insert(row.ticket);
    }
    Ok(seen
        .into_iter()
        .map(|(slug, (n, t))| {
            (
                slug,
                Usage {
                    invocations: n,
                    tickets: t.len(),
                },
            )
        })
        .collect())
}

/// Log every workflow file that is skipped (at start-up): a bad file never stops the server.
pub fn warn_invalid(ws: &Workspace) {
    for f in set(ws).files().iter().filter(|f| !f.is_valid()) {
        for d in f.diagnostics.iter().filter(|d| d.is_error()) {
            tracing::warn!(file = %f.file, line = ?d.line, rule = d.rule, problem = %d.message, "skipped an invalid workflow file");
        }
    }
}
