//! The skill catalog: every skill yoi can see, with provenance, digest and diagnostics.
//!
//! Three sources in fixed priority: the workspace skills root (yoi passes `.yoi/skills`), the
//! extra roots from configuration in their configured order, then the built-ins. A skill is a
//! direct, non-hidden subdirectory holding a file named exactly `SKILL.md`; loose files and
//! dot-directories are ignored. Any other subdirectory (no `SKILL.md`, or one named `Skill.md`)
//! is not a skill and is not loaded, but it is never dropped silently: it becomes a
//! [`SkippedFolder`] with a diagnostic, which `yoi skill lint` reports as an error. The first
//! source to provide a name wins and records every lower entry it shadows. Broken skills stay
//! listed with their diagnostics and are never activatable. Loading never fails: unreadable
//! roots become [`SourceProblem`]s.
//!
//! Nothing serialisable here carries a host path. Locations are relative to the repository root
//! (`.yoi/skills/<name>/SKILL.md`), opaque for roots outside it (`extra:1/<name>/SKILL.md`), or
//! `builtin:<name>`. The absolute folder is kept in a skipped field for the activation and
//! resource code.

mod scan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::builtin::{builtins, BuiltinSkill};
use crate::diagnostic::Diagnostic;
use crate::digest::sha256_hex;
use crate::lint::{lint_skill_md, SkillMeta};

/// Where a catalog entry came from, in priority order (earlier variants win).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkillSource {
    /// The workspace skills root, normally `.yoi/skills`.
    Workspace,
    /// The extra root at this position of the configured list.
    Extra { index: usize },
    /// Compiled into yoi.
    Builtin,
}

impl std::fmt::Display for SkillSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Workspace => f.write_str("workspace"),
            Self::Extra { index } => write!(f, "extra[{index}]"),
            Self::Builtin => f.write_str("builtin"),
        }
    }
}

/// Where to look for skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogConfig {
    /// The repository root; relative roots below are resolved against it, and locations of
    /// skills inside it are shown relative to it.
    pub repo_root: PathBuf,
    /// The workspace skills root; a missing folder simply means no workspace skills.
    pub workspace_root: PathBuf,
    /// Extra roots from configuration, highest priority first; a missing one is reported.
    pub extra_roots: Vec<PathBuf>,
}

impl CatalogConfig {
    /// The default layout: `.yoi/skills` under `repo_root`, no extra roots.
    pub fn new(repo_root: impl Into<PathBuf>) -> Self {
        Self {
            repo_root: repo_root.into(),
            workspace_root: PathBuf::from(".yoi/skills"),
            extra_roots: Vec::new(),
        }
    }
}

/// A lower-priority entry hidden by a catalog entry of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ShadowedSkill {
    pub source: SkillSource,
    pub location: String,
    pub digest: String,
    pub valid: bool,
}

/// The folder or built-in an entry was loaded from; never serialised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    Dir(PathBuf),
    Builtin(&'static BuiltinSkill),
}

/// One skill of the catalog, with everything the dashboard and `yoi skill show` need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = Skill)]
pub struct SkillEntry {
    /// The directory name, which is the catalog key.
    pub name: String,
    pub description: Option<String>,
    pub source: SkillSource,
    /// Where the agent can find `SKILL.md`; never a host path.
    pub location: String,
    /// Hex SHA-256 of the `SKILL.md` bytes; empty when the file could not be read whole.
    pub digest: String,
    pub valid: bool,
    pub diagnostics: Vec<Diagnostic>,
    /// Entries this one hides, highest priority first.
    pub shadows: Vec<ShadowedSkill>,
    #[serde(skip)]
    pub(crate) meta: SkillMeta,
    #[serde(skip)]
    pub(crate) body: Option<String>,
    #[serde(skip)]
    pub(crate) origin: Origin,
}

impl SkillEntry {
    /// The frontmatter fields that parsed with the right type.
    pub fn meta(&self) -> &SkillMeta {
        &self.meta
    }

    /// The absolute skill folder on this host, for local tooling only; `None` for built-ins.
    /// Never send it to an agent or over the API.
    pub fn host_dir(&self) -> Option<&Path> {
        match &self.origin {
            Origin::Dir(dir) => Some(dir),
            Origin::Builtin(_) => None,
        }
    }

    /// Whether agents may see and activate it: valid and without
    /// `disable-model-invocation: true`.
    pub fn for_agents(&self) -> bool {
        self.valid && !self.meta.disable_model_invocation
    }

    /// The list-view projection (progressive disclosure level 1).
    pub fn summary(&self) -> SkillSummary {
        SkillSummary {
            name: self.name.clone(),
            description: self.description.clone(),
            source: self.source,
            valid: self.valid,
            diagnostic_count: self.diagnostics.len(),
        }
    }

    fn new(
        name: String,
        source: SkillSource,
        location: String,
        bytes: &[u8],
        origin: Origin,
    ) -> Self {
        let linted = lint_skill_md(&name, bytes);
        Self {
            description: linted.meta.description.clone(),
            valid: linted.is_valid(),
            digest: sha256_hex(bytes),
            diagnostics: linted.diagnostics,
            meta: linted.meta,
            body: linted.body,
            shadows: Vec::new(),
            name,
            source,
            location,
            origin,
        }
    }

    fn shadowed_view(&self) -> ShadowedSkill {
        ShadowedSkill {
            source: self.source,
            location: self.location.clone(),
            digest: self.digest.clone(),
            valid: self.valid,
        }
    }
}

/// What the catalog list shows: name, description, source and validity only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SkillSummary {
    pub name: String,
    pub description: Option<String>,
    pub source: SkillSource,
    pub valid: bool,
    pub diagnostic_count: usize,
}

/// A source that could not be read completely; the rest of the catalog still loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceProblem {
    pub source: SkillSource,
    /// What went wrong, without host paths.
    pub message: String,
}

/// A subdirectory of a skills root that is not a skill: it has no `SKILL.md`, or its skill
/// file is named in the wrong case (`Skill.md`). The catalog does not load it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFolder {
    /// The folder name.
    pub name: String,
    pub source: SkillSource,
    /// The misnamed file, or where `SKILL.md` was expected, in the form of
    /// [`SkillEntry::location`]; never a host path.
    pub location: String,
    /// `FILE-NAME`, `FILE-MISSING` or `FILE-READ`, always an error.
    pub diagnostic: Diagnostic,
}

/// All skills visible to yoi, one entry per name, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Catalog {
    skills: Vec<SkillEntry>,
    problems: Vec<SourceProblem>,
    /// Folders of every source that are not skills, in source order, then by name.
    skipped: Vec<SkippedFolder>,
}

impl Catalog {
    /// Scans the workspace root, the extra roots and the built-ins.
    pub fn load(config: &CatalogConfig) -> Self {
        let mut found = scan::Found::default();
        scan::scan_root(
            config,
            &config.workspace_root,
            SkillSource::Workspace,
            &mut found,
        );
        for (index, root) in config.extra_roots.iter().enumerate() {
            scan::scan_root(config, root, SkillSource::Extra { index }, &mut found);
        }
        found.skills.extend(builtins().iter().map(builtin_entry));
        Self::from_candidates(found)
    }

    /// Resolves shadowing; `found.skills` must be in priority order.
    fn from_candidates(found: scan::Found) -> Self {
        let scan::Found {
            skills: candidates,
            problems,
            skipped,
        } = found;
        let mut winners: BTreeMap<String, SkillEntry> = BTreeMap::new();
        for candidate in candidates {
            match winners.get_mut(&candidate.name) {
                Some(winner) => winner.shadows.push(candidate.shadowed_view()),
                None => {
                    winners.insert(candidate.name.clone(), candidate);
                }
            }
        }
        Self {
            skills: winners.into_values().collect(),
            problems,
            skipped,
        }
    }

    /// Every entry, valid or not, sorted by name.
    pub fn skills(&self) -> &[SkillEntry] {
        &self.skills
    }

    /// The entries that can be activated.
    pub fn valid_skills(&self) -> impl Iterator<Item = &SkillEntry> {
        self.skills.iter().filter(|s| s.valid)
    }

    pub fn get(&self, name: &str) -> Option<&SkillEntry> {
        self.skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.skills[i])
    }

    /// The list view: name, description, source, validity and diagnostic count.
    pub fn list(&self) -> Vec<SkillSummary> {
        self.skills.iter().map(SkillEntry::summary).collect()
    }

    pub fn problems(&self) -> &[SourceProblem] {
        &self.problems
    }

    /// Subdirectories of the skills roots that are not skills, each with its diagnostic.
    pub fn skipped(&self) -> &[SkippedFolder] {
        &self.skipped
    }
}

fn builtin_entry(builtin: &'static BuiltinSkill) -> SkillEntry {
    SkillEntry::new(
        builtin.name.to_string(),
        SkillSource::Builtin,
        format!("builtin:{}", builtin.name),
        builtin.skill_md,
        Origin::Builtin(builtin),
    )
}
