//! Activation: progressive disclosure level 2, the skill body, recorded before it is returned.
//!
//! [`activate`] refuses unknown and invalid skills, builds the full response, then asks the
//! caller's [`ActivationRecorder`] to store the record. Only when that succeeds is the body
//! handed out; if recording fails the activation fails and no body leaves this function, so
//! every body an agent has seen is accounted for. The response lists bundled files and states
//! plainly that `allowed-tools` is not enforced and `scripts/` is never executed by yoi.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::catalog::{Catalog, SkillSource};
use crate::listing::{list_files, FileListing, MAX_LISTED_FILES};

/// Who activates a skill, and for which ticket or assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationRequest {
    /// The principal: a pod id or a person; must not be blank.
    pub who: String,
    pub ticket: Option<String>,
    pub assignment: Option<String>,
}

/// What gets recorded for every activation (timestamps are the recorder's business).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationRecord {
    pub skill: String,
    pub digest: String,
    pub source: SkillSource,
    pub who: String,
    pub ticket: Option<String>,
    pub assignment: Option<String>,
}

/// Stores activation records; the server implements it with a database table.
pub trait ActivationRecorder {
    fn record(&mut self, record: &ActivationRecord) -> Result<(), RecorderError>;
}

/// A recorder's refusal or failure, in its own words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{reason}")]
pub struct RecorderError {
    pub reason: String,
}

/// `allowed-tools` as declared by the skill; yoi shows it and does not enforce it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AllowedTools {
    pub tools: Vec<String>,
    /// Always false: yoi does not restrict the agent's tools.
    pub enforced: bool,
}

/// The activated skill: its body and what comes with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = SkillActivation)]
pub struct Activation {
    pub name: String,
    pub source: SkillSource,
    pub location: String,
    /// The digest of the `SKILL.md` the body came from, as recorded.
    pub digest: String,
    /// The Markdown body, frontmatter stripped.
    pub body: String,
    pub files: FileListing,
    pub allowed_tools: Option<AllowedTools>,
    /// Listed files under `scripts/`; yoi never runs them.
    pub scripts: Vec<String>,
    /// Plain-language notes for the agent about what yoi does not do.
    pub notes: Vec<String>,
}

/// Why a skill was not activated; no body is returned in any of these cases.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActivateError {
    #[error("no skill named `{name}` in the catalog")]
    UnknownSkill { name: String },
    #[error("skill `{name}` has {errors} lint error(s) and cannot be activated; fix them first")]
    InvalidSkill { name: String, errors: usize },
    #[error("an activation must name who activates the skill")]
    MissingWho,
    #[error("the files of skill `{name}` cannot be listed: {reason}")]
    Listing { name: String, reason: String },
    #[error("activation of skill `{name}` was not recorded, so its body is withheld: {source}")]
    NotRecorded {
        name: String,
        #[source]
        source: RecorderError,
    },
}

/// Activates `name`, recording the activation before returning the body.
pub fn activate(
    catalog: &Catalog,
    name: &str,
    request: ActivationRequest,
    recorder: &mut dyn ActivationRecorder,
) -> Result<Activation, ActivateError> {
    let entry = catalog
        .get(name)
        .ok_or_else(|| ActivateError::UnknownSkill {
            name: name.to_string(),
        })?;
    let errors = crate::diagnostic::error_count(&entry.diagnostics);
    let body = match (&entry.body, entry.valid) {
        (Some(body), true) => body.clone(),
        _ => {
            return Err(ActivateError::InvalidSkill {
                name: name.to_string(),
                errors: errors.max(1),
            })
        }
    };
    if request.who.trim().is_empty() {
        return Err(ActivateError::MissingWho);
    }
    let files = list_files(entry, MAX_LISTED_FILES).map_err(|e| ActivateError::Listing {
        name: name.to_string(),
        reason: e.kind().to_string(),
    })?;

    let tools = entry.meta.allowed_tools_list();
    let scripts: Vec<String> = files
        .files
        .iter()
        .filter(|f| f.starts_with("scripts/"))
        .cloned()
        .collect();
    let mut notes = Vec::new();
    if entry.meta.allowed_tools.is_some() {
        notes.push(format!(
            "allowed-tools ({}) is declared by the skill but not enforced by yoi",
            if tools.is_empty() {
                "empty".to_string()
            } else {
                tools.join(" ")
            }
        ));
    }
    if !scripts.is_empty() {
        notes.push(
            "files under scripts/ are never executed by yoi; run one only if the instructions \
             call for it and your own permissions allow it"
                .to_string(),
        );
    }
    if files.truncated {
        notes.push(format!(
            "only the first {MAX_LISTED_FILES} bundled files are listed"
        ));
    }

    let record = ActivationRecord {
        skill: entry.name.clone(),
        digest: entry.digest.clone(),
        source: entry.source,
        who: request.who,
        ticket: request.ticket,
        assignment: request.assignment,
    };
    recorder
        .record(&record)
        .map_err(|source| ActivateError::NotRecorded {
            name: name.to_string(),
            source,
        })?;

    Ok(Activation {
        name: entry.name.clone(),
        source: entry.source,
        location: entry.location.clone(),
        digest: entry.digest.clone(),
        body,
        files,
        allowed_tools: entry.meta.allowed_tools.as_ref().map(|_| AllowedTools {
            tools,
            enforced: false,
        }),
        scripts,
        notes,
    })
}

impl ActivateError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            ActivateError::UnknownSkill { .. } => C::NotFound,
            ActivateError::InvalidSkill { .. } => C::Refused,
            ActivateError::MissingWho => C::Invalid,
            ActivateError::Listing { .. } | ActivateError::NotRecorded { .. } => C::Internal,
        }
    }
}
