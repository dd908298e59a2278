//! Workflows: procedures a person writes as `.yoi/workflow/<slug>.md` and invokes by name
//! (docs/workflows.md). A workflow file is YAML frontmatter plus a Markdown body that is given
//! to the agent as it is; there is no step language.
//!
//! [`parse_workflow_md`] checks one file on its own: the slug its file name gives, the
//! frontmatter keys (`description`, `auto_invoke`, `user_invocable`, `requires`, `role`; `name`
//! and any other key are errors) and that a person or an agent can reach it. It never fails and
//! never touches the filesystem. [`WorkflowSet`] (in `set`) reads a folder of them and checks
//! what only the whole set can say: that every `requires` entry names a valid skill of the
//! catalog or a valid workflow, that none names both, and that `requires` has no cycle. A file
//! with an error is listed with its diagnostics and can never be invoked; it stops nothing
//! else.

mod set;

use serde::Serialize;
use serde_yaml_ng::Value;

use crate::diagnostic::{error_count, rules, Diagnostic};
use crate::lint::{key_line, DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS};
use crate::parse::parse_skill_md;

pub use set::{Knowledge, WorkflowSet};

/// The folder workflow files live in, relative to the repository root.
pub const WORKFLOW_DIR: &str = ".yoi/workflow";
/// A workflow file's name is `<slug>` plus this.
pub const WORKFLOW_SUFFIX: &str = ".md";
/// The frontmatter keys a workflow may have.
pub const WORKFLOW_KEYS: [&str; 5] = [
    "description",
    "auto_invoke",
    "user_invocable",
    "requires",
    "role",
];
/// The roles whose attempts an invocation can be put in front of: the ones that run an agent.
pub const WORKFLOW_ROLES: [&str; 2] = ["coder", "reviewer"];

/// A workflow that checked out: everything an invocation needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Workflow {
    /// The file name without `.md`: the workflow's one identifier.
    pub slug: String,
    pub description: String,
    /// Whether role agents see it in their prompts and may invoke it themselves.
    pub auto_invoke: bool,
    /// Whether a person may invoke it (`/<slug>`, `yoi workflow run`).
    pub user_invocable: bool,
    /// Skills of the catalog, or other workflows, whose bodies come before this one's.
    pub requires: Vec<String>,
    /// The role whose next attempt on the ticket carries the invocation (default `coder`).
    pub role: String,
    /// The Markdown body, used as written.
    pub body: String,
}

/// One workflow file and what checking it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WorkflowFile {
    /// Relative to the repository root.
    pub file: String,
    pub slug: String,
    /// The workflow, when the file has no error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<Workflow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// The `requires` entries read, even from a file with other errors, so the set can report
    /// every problem of a file at once.
    #[serde(skip)]
    pub(crate) requires: Vec<String>,
}

impl WorkflowFile {
    pub fn is_valid(&self) -> bool {
        self.workflow.is_some()
    }

    pub fn error_count(&self) -> usize {
        error_count(&self.diagnostics)
    }
}

/// Whether `slug` is a workflow slug: 1 to 64 of `a-z`, `0-9` and single inner hyphens. A slug
/// can never name a path outside the workflow folder (no `/`, `\`, `.`).
pub fn is_valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= NAME_MAX_CHARS
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--")
}

/// Why `slug` is not a workflow slug, as a sentence.
pub fn slug_problem(slug: &str) -> String {
    format!(
        "`{slug}` is not a workflow slug: use 1 to {NAME_MAX_CHARS} lowercase letters, digits and \
         single hyphens inside (`security-precheck`)"
    )
}

/// Checks the workflow file `file` (its path relative to the repository root, whose last part
/// is `<slug>.md`) on its own. `requires` entries are checked for form only here.
pub fn parse_workflow_md(file: &str, bytes: &[u8]) -> WorkflowFile {
    let base = file.rsplit('/').next().unwrap_or(file);
    let slug = slug_of(file);
    let mut out = Vec::new();
    if !is_valid_slug(&slug) {
        out.push(Diagnostic::error(
            rules::WF_SLUG,
            format!("{}; rename the file", slug_problem(&slug)),
            None,
        ));
    }
    let parsed = match parse_skill_md(bytes) {
        Ok(p) => p,
        Err(e) => {
            let mut d = e.to_diagnostic();
            d.message = d.message.replace("SKILL.md", base);
            out.push(d);
            return WorkflowFile {
                file: file.to_string(),
                slug,
                workflow: None,
                diagnostics: out,
                requires: Vec::new(),
            };
        }
    };
    let text = &parsed.frontmatter_text;
    let at = |key: &str| key_line(text, key);
    for (key, _) in &parsed.frontmatter {
        let key = match key {
            Value::String(k) => k.as_str(),
            _ => {
                out.push(Diagnostic::error(
                    rules::WF_UNKNOWN_KEY,
                    "every frontmatter key must be a plain word",
                    Some(2),
                ));
                continue;
            }
        };
        if key == "name" {
            out.push(Diagnostic::error(
                rules::WF_NAME,
                format!(
                    "remove `name`: the file name is the workflow's identifier (this one is `{slug}`)"
                ),
                at(key),
            ));
        } else if !WORKFLOW_KEYS.contains(&key) {
            out.push(Diagnostic::error(
                rules::WF_UNKNOWN_KEY,
                format!(
                    "unknown key `{key}`; a workflow has {}",
                    WORKFLOW_KEYS.map(|k| format!("`{k}`")).join(", ")
                ),
                at(key),
            ));
        }
    }
    let get = |key: &str| parsed.frontmatter.get(key).filter(|v| !v.is_null());

    let description = match get("description") {
        None => {
            out.push(Diagnostic::error(
                rules::WF_DESCRIPTION,
                "`description` is missing: say in a sentence what the workflow does and when to \
                 use it",
                Some(2),
            ));
            String::new()
        }
        Some(Value::String(d)) if d.trim().is_empty() => {
            out.push(Diagnostic::error(
                rules::WF_DESCRIPTION,
                "`description` is empty",
                at("description"),
            ));
            String::new()
        }
        Some(Value::String(d)) if d.chars().count() > DESCRIPTION_MAX_CHARS => {
            out.push(Diagnostic::error(
                rules::WF_DESCRIPTION,
                format!("`description` has more than {DESCRIPTION_MAX_CHARS} characters"),
                at("description"),
            ));
            String::new()
        }
        Some(Value::String(d)) => d.trim().to_string(),
        Some(_) => {
            out.push(type_error("description", "a string", at("description")));
            String::new()
        }
    };
    let mut flag = |key: &str, default: bool| match get(key) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            out.push(type_error(key, "`true` or `false`", at(key)));
            default
        }
    };
    let auto_invoke = flag("auto_invoke", false);
    let user_invocable = flag("user_invocable", true);
    if !auto_invoke && !user_invocable {
        out.push(Diagnostic::error(
            rules::WF_UNREACHABLE,
            "`auto_invoke` and `user_invocable` are both false, so nobody can invoke it; set one \
             of them to true or delete the file",
            at("user_invocable").or(at("auto_invoke")),
        ));
    }
    let mut requires: Vec<String> = Vec::new();
    match get("requires") {
        None => {}
        Some(Value::Sequence(items)) => {
            for item in items {
                match item {
                    Value::String(r) if !is_valid_slug(r) => out.push(Diagnostic::error(
                        rules::WF_REQUIRES_UNKNOWN,
                        format!("`requires`: {}", slug_problem(r)),
                        at("requires"),
                    )),
                    Value::String(r) if *r == slug => out.push(Diagnostic::error(
                        rules::WF_REQUIRES_CYCLE,
                        format!("`requires` names the workflow itself (`{slug}`)"),
                        at("requires"),
                    )),
                    Value::String(r) if requires.contains(r) => out.push(Diagnostic::error(
                        rules::WF_REQUIRES_UNKNOWN,
                        format!("`requires` names `{r}` twice"),
                        at("requires"),
                    )),
                    Value::String(r) => requires.push(r.clone()),
                    _ => out.push(type_error("requires", "a list of names", at("requires"))),
                }
            }
        }
        Some(_) => out.push(type_error(
            "requires",
            "a list of names (`requires: [owasp-checklist]`)",
            at("requires"),
        )),
    }
    let role = match get("role") {
        None => WORKFLOW_ROLES[0].to_string(),
        Some(Value::String(r)) if WORKFLOW_ROLES.contains(&r.as_str()) => r.clone(),
        Some(Value::String(r)) => {
            out.push(Diagnostic::error(
                rules::WF_ROLE,
                format!(
                    "`role: {r}` is not a role that runs an agent; use {}",
                    WORKFLOW_ROLES.map(|k| format!("`{k}`")).join(" or ")
                ),
                at("role"),
            ));
            String::new()
        }
        Some(_) => {
            out.push(type_error("role", "a string", at("role")));
            String::new()
        }
    };
    if parsed.body.trim().is_empty() && requires.is_empty() {
        out.push(Diagnostic::error(
            rules::WF_EMPTY,
            "the workflow has no body and requires nothing, so invoking it would give the agent \
             nothing; write its instructions below the frontmatter",
            Some(parsed.body_line),
        ));
    }
    let workflow = (error_count(&out) == 0).then(|| Workflow {
        slug: slug.clone(),
        description,
        auto_invoke,
        user_invocable,
        requires: requires.clone(),
        role,
        body: parsed.body,
    });
    WorkflowFile {
        file: file.to_string(),
        slug,
        workflow,
        diagnostics: out,
        requires,
    }
}

/// The slug a workflow file's path gives: its last part without `.md`.
pub(crate) fn slug_of(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.strip_suffix(WORKFLOW_SUFFIX)
        .unwrap_or(base)
        .to_string()
}

fn type_error(key: &str, wanted: &str, line: Option<u32>) -> Diagnostic {
    Diagnostic::error(
        rules::WF_FIELD_TYPE,
        format!("`{key}` must be {wanted}"),
        line,
    )
}
