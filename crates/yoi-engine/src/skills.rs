//! The skill catalog of a workspace, wired to the store: which folders it reads (config), where
//! activations are recorded (the database, before a body is returned), where proposals wait
//! (`.yoi/skill-proposals/`, tracked so the approval trail lives in the repository), and what
//! doctor says about invalid and shadowed skills.
//!
//! Each skill operation — activate, read a resource, propose a folder or a set of files,
//! approve, reject — is one function here that the CLI, the API and pods all call, with its
//! checks: a proposal sent as files is laid out in a private staging folder under
//! `.yoi/local/` only after its name is a plain folder name and every path stays inside it, and
//! the staging folder is removed whatever happens. Nothing here writes a skill without a human
//! approver.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;
use yoi_core::finding::{Finding, Severity};
use yoi_core::{ErrorClass, Timestamp};
use yoi_db::{ActivationRow, DbIndex};
use yoi_skills::{
    ActivateError, Activation, ActivationRecord, ActivationRecorder, ActivationRequest, Catalog,
    CatalogConfig, HumanApprover, Proposal, ProposalError, RecorderError, Resource, ResourceError,
    SkillSource,
};
use yoi_store::{StoreError, Workspace};

/// Why a skill operation was refused or failed.
#[derive(Debug, Error)]
pub enum SkillError {
    #[error(transparent)]
    Activate(#[from] ActivateError),
    #[error(transparent)]
    Resource(#[from] ResourceError),
    #[error(transparent)]
    Proposal(#[from] ProposalError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no skill named `{name}` in the catalog")]
    Unknown { name: String },
    #[error("skill `{name}` has `disable-model-invocation: true`: agents cannot activate it; a person names it (`requires` in a workflow, `#{name}` in the ticket)")]
    NotForAgents { name: String },
}

impl SkillError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> ErrorClass {
        match self {
            SkillError::Activate(e) => e.class(),
            SkillError::Resource(e) => e.class(),
            SkillError::Proposal(e) => e.class(),
            SkillError::Store(e) => e.class(),
            SkillError::Unknown { .. } => ErrorClass::NotFound,
            SkillError::NotForAgents { .. } => ErrorClass::NotPermitted,
        }
    }

    /// The stable, machine-readable name of the outcome (the API's `error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            SkillError::Store(e) => e.code(),
            SkillError::Activate(ActivateError::InvalidSkill { .. })
            | SkillError::Proposal(ProposalError::Invalid { .. }) => "invalid_skill",
            SkillError::Proposal(ProposalError::AlreadyDecided { .. }) => "already_decided",
            SkillError::Resource(
                ResourceError::AbsolutePath { .. }
                | ResourceError::Traversal { .. }
                | ResourceError::OutsideSkill { .. },
            ) => "outside_skill",
            SkillError::Activate(_)
            | SkillError::Resource(_)
            | SkillError::Proposal(_)
            | SkillError::Unknown { .. }
            | SkillError::NotForAgents { .. } => self.class().code(),
        }
    }
}

/// Activate `name` for a pod's agent whose token speaks for assignment `own`: the activation
/// is always recorded against `own` (and its ticket unless one is named); naming another
/// assignment is refused.
#[allow(clippy::too_many_arguments)]
pub fn activate_for_agent(
    ws: &Workspace,
    index: &DbIndex,
    name: &str,
    who: String,
    own: &str,
    ticket: Option<&str>,
    assignment: Option<&str>,
    now: Timestamp,
) -> Result<Activation, SkillError> {
    if load_catalog(ws)
        .get(name)
        .is_some_and(|s| s.meta().disable_model_invocation)
    {
        return Err(SkillError::NotForAgents { name: name.into() });
    }
    if assignment.is_some_and(|a| a != own) {
        return Err(SkillError::Store(StoreError::NotPermitted {
            reason: yoi_store::error::Permission::ActivateForOwnAssignment {
                own: own.to_string(),
            },
        }));
    }
    let own_ticket = match ticket {
        Some(_) => None,
        None => index.assignment(own)?.map(|a| a.ticket),
    };
    activate(
        ws,
        index,
        name,
        who,
        ticket.or(own_ticket.as_deref()),
        Some(own.to_string()),
        now,
    )
}

/// Activate `name` for `who` (optionally for a ticket id or suffix and an assignment): the
/// activation is recorded in the database before the body is returned.
pub fn activate(
    ws: &Workspace,
    index: &DbIndex,
    name: &str,
    who: String,
    ticket: Option<&str>,
    assignment: Option<String>,
    now: Timestamp,
) -> Result<Activation, SkillError> {
    let catalog = load_catalog(ws);
    let ticket = ticket
        .map(|t| ws.resolve(t))
        .transpose()?
        .map(|t| t.to_string());
    let mut recorder = DbRecorder {
        index,
        now_ms: now.unix_millis(),
    };
    Ok(yoi_skills::activate(
        &catalog,
        name,
        ActivationRequest {
            who,
            ticket,
            assignment,
        },
        &mut recorder,
    )?)
}

/// A file of skill `name`, confined to its folder and bounded in size.
pub fn resource(ws: &Workspace, name: &str, path: &str) -> Result<Resource, SkillError> {
    Ok(yoi_skills::resource(
        &load_catalog(ws),
        name,
        path,
        yoi_skills::DEFAULT_MAX_RESOURCE_BYTES,
    )?)
}

/// Propose the skill in `folder` (a person's `yoi skill propose FOLDER`).
pub fn propose_folder(
    ws: &Workspace,
    folder: &Path,
    who: &str,
    now: Timestamp,
) -> Result<Proposal, SkillError> {
    Ok(yoi_skills::propose(
        &proposals_root(ws),
        &workspace_skills_root(ws),
        folder,
        who,
        &now.to_string(),
    )?)
}

/// Propose skill `name` sent as files (text keyed by path inside the skill folder), as the API
/// receives it. `name` must be a plain folder name and every path relative and inside the
/// skill; the files are staged under `.yoi/local/` and the stage removed afterwards.
pub fn propose_files(
    ws: &Workspace,
    name: &str,
    files: &BTreeMap<String, String>,
    who: &str,
    now: Timestamp,
) -> Result<Proposal, SkillError> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(ProposalError::InvalidName {
            name: name.to_string(),
        }
        .into());
    }
    for rel in files.keys() {
        check_file_name(rel, files)?;
    }
    let staging = ws.local_dir().join(format!(
        "proposal-staging-{}",
        yoi_store::ops::new_ulid(now)
    ));
    let result = stage(&staging, name, files).and_then(|dir| propose_folder(ws, &dir, who, now));
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// The longest component of a proposed file's path, in characters.
pub const MAX_FILE_NAME_CHARS: usize = 63;

/// Refuse a proposed file name that is not a plain relative file path inside the skill folder,
/// before anything is written: empty, a NUL byte, absolute, `.`/`..`/empty components, a name
/// ending in `/` (a folder), or the folder of another proposed file (`a` next to `a/b`).
fn check_file_name(rel: &str, files: &BTreeMap<String, String>) -> Result<(), ProposalError> {
    let bad = |reason| {
        Err(ProposalError::BadFileName {
            path: rel.to_string(),
            reason,
        })
    };
    if rel.is_empty() {
        return bad("is empty");
    }
    if rel.contains('\0') {
        return bad("contains a NUL byte");
    }
    if Path::new(rel).is_absolute() {
        return bad("is absolute");
    }
    if rel.ends_with('/') {
        return bad("names a folder (it ends with `/`)");
    }
    if rel.split('/').any(|c| c == "..") {
        return Err(ProposalError::ParentComponent {
            path: rel.to_string(),
        });
    }
    if rel.split('/').any(|c| c.is_empty() || c == ".") {
        return bad("has an empty or `.` component");
    }
    // Every file system takes names of 255 bytes; 63 characters are at most 252.
    if rel
        .split('/')
        .any(|c| c.chars().count() > MAX_FILE_NAME_CHARS)
    {
        return bad("has a component longer than 63 characters");
    }
    let folder = format!("{rel}/");
    if files.keys().any(|other| other.starts_with(&folder)) {
        return bad("is also the folder of another proposed file");
    }
    Ok(())
}

fn stage(
    staging: &Path,
    name: &str,
    files: &BTreeMap<String, String>,
) -> Result<PathBuf, SkillError> {
    let dir = staging.join(name);
    let io = |path: &Path, e: std::io::Error| {
        SkillError::from(ProposalError::Io {
            action: "stage",
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    };
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    for (rel, text) in files {
        let target = dir.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        std::fs::write(&target, text).map_err(|e| io(&target, e))?;
    }
    Ok(dir)
}

/// Every proposal, newest last.
pub fn proposals(ws: &Workspace) -> Result<Vec<Proposal>, SkillError> {
    Ok(yoi_skills::proposal::list(&proposals_root(ws))?)
}

/// A person approves proposal `id`: the skill is written to `.yoi/skills/`.
pub fn approve(
    ws: &Workspace,
    id: &str,
    approver: &str,
    now: Timestamp,
) -> Result<Proposal, SkillError> {
    Ok(yoi_skills::approve(
        &proposals_root(ws),
        id,
        &workspace_skills_root(ws),
        &HumanApprover::new(approver),
        &now.to_string(),
    )?)
}

/// A person rejects proposal `id` with a reason.
pub fn reject(
    ws: &Workspace,
    id: &str,
    approver: &str,
    reason: &str,
    now: Timestamp,
) -> Result<Proposal, SkillError> {
    Ok(yoi_skills::reject(
        &proposals_root(ws),
        id,
        &HumanApprover::new(approver),
        reason,
        &now.to_string(),
    )?)
}

/// Where proposals are kept, relative to the repository root.
pub const PROPOSALS_DIR: &str = ".yoi/skill-proposals";

pub fn catalog_config(ws: &Workspace) -> CatalogConfig {
    let mut config = CatalogConfig::new(ws.root());
    config.extra_roots = ws
        .config
        .skills
        .extra_dirs
        .iter()
        .map(PathBuf::from)
        .collect();
    config
}

pub fn load_catalog(ws: &Workspace) -> Catalog {
    Catalog::load(&catalog_config(ws))
}

pub fn proposals_root(ws: &Workspace) -> PathBuf {
    ws.root().join(PROPOSALS_DIR)
}

pub fn workspace_skills_root(ws: &Workspace) -> PathBuf {
    ws.root().join(".yoi/skills")
}

pub fn source_name(source: &SkillSource) -> String {
    match source {
        SkillSource::Workspace => "workspace".into(),
        SkillSource::Extra { index } => format!("extra:{index}"),
        SkillSource::Builtin => "builtin".into(),
    }
}

/// Records activations in the workspace database (blocking: call from a blocking thread).
pub struct DbRecorder<'a> {
    pub index: &'a DbIndex,
    pub now_ms: i64,
}

impl ActivationRecorder for DbRecorder<'_> {
    fn record(&mut self, r: &ActivationRecord) -> Result<(), RecorderError> {
        let id = format!(
            "act_{}",
            yoi_store::ops::new_ulid(yoi_core::Timestamp::from_unix_millis(self.now_ms))
        );
        let row = ActivationRow {
            id,
            skill: r.skill.clone(),
            digest: r.digest.clone(),
            source: source_name(&r.source),
            who: r.who.clone(),
            ticket: r.ticket.clone(),
            assignment: r.assignment.clone(),
            at_ms: self.now_ms,
        };
        self.index
            .record_activation(&row)
            .map_err(|e| RecorderError {
                reason: e.to_string(),
            })
    }
}

/// Doctor's view of the catalog: invalid skills (errors for the workspace's own, warnings for
/// extra folders), shadowed skills, and unreadable sources.
pub fn findings(catalog: &Catalog) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in catalog.skills() {
        let errors: Vec<String> = s
            .diagnostics
            .iter()
            .filter(|d| d.severity == yoi_skills::Severity::Error)
            .map(|d| format!("{} {}", d.rule, d.message))
            .collect();
        if !errors.is_empty() {
            let severity = match s.source {
                SkillSource::Workspace => Severity::Error,
                _ => Severity::Warning,
            };
            out.push(Finding {
                severity,
                check: "skill.invalid",
                ticket: None,
                path: Some(s.location.clone()),
                line: s
                    .diagnostics
                    .iter()
                    .find_map(|d| d.line.map(|l| l as usize)),
                seen: format!(
                    "skill `{}` has {} lint error(s): {}",
                    s.name,
                    errors.len(),
                    errors.join("; ")
                ),
                expected: "a SKILL.md that follows the Agent Skills specification".into(),
                fix: Some(format!("yoi skill lint; then edit {}", s.location).into()),
                safe_fix: None,
            });
        }
        for shadowed in &s.shadows {
            out.push(Finding {
                severity: Severity::Warning,
                check: "skill.shadowed",
                ticket: None,
                path: Some(shadowed.location.clone()),
                line: None,
                seen: format!(
                    "skill `{}` from {} is hidden by the one from {}",
                    s.name,
                    source_name(&shadowed.source),
                    source_name(&s.source)
                ),
                expected: "one skill per name, or a deliberate override".into(),
                fix: Some(format!("rename or remove one of the `{}` skills", s.name).into()),
                safe_fix: None,
            });
        }
    }
    for p in catalog.problems() {
        out.push(Finding {
            severity: Severity::Warning,
            check: "skill.source",
            ticket: None,
            path: None,
            line: None,
            seen: p.message.clone(),
            expected: "every configured skills folder exists and is readable".into(),
            fix: Some("fix [skills] extra_dirs in .yoi/workspace.toml".into()),
            safe_fix: None,
        });
    }
    out
}

/// The `SKILL.md` a proposal would install, and the workspace's current one of that name (for a
/// change), for a person to compare before deciding.
pub fn proposal_skill_md(
    ws: &Workspace,
    id: &str,
) -> Result<(Proposal, String, Option<String>), SkillError> {
    let p = yoi_skills::proposal::load(&proposals_root(ws), id)?;
    let proposed = proposals_root(ws)
        .join(&p.id)
        .join("skill")
        .join(&p.name)
        .join("SKILL.md");
    let proposed = std::fs::read_to_string(&proposed).unwrap_or_default();
    let current =
        std::fs::read_to_string(workspace_skills_root(ws).join(&p.name).join("SKILL.md")).ok();
    Ok((p, proposed, current))
}
