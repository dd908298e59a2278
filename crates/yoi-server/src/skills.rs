//! The skill catalog of a workspace, wired to the store: which folders it reads (config), where
//! activations are recorded (the database, before a body is returned), where proposals wait
//! (`.yoi/skill-proposals/`, tracked so the approval trail lives in the repository), and what
//! doctor says about invalid and shadowed skills. The CLI and the API both go through here.

use std::path::PathBuf;

use yoi_core::finding::{Finding, Severity};
use yoi_skills::{
    ActivationRecord, ActivationRecorder, Catalog, CatalogConfig, RecorderError, SkillSource,
};
use yoi_store::db::{ActivationRow, DbIndex};
use yoi_store::Workspace;

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
            .block_on(self.index.db.record_activation(&row))
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
                fix: Some(format!("yoi skill lint; then edit {}", s.location)),
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
                fix: Some(format!("rename or remove one of the `{}` skills", s.name)),
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
