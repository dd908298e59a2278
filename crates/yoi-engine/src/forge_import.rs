//! Issues in as tickets (docs/forge.md): an open issue carrying `[forge] import_label` becomes
//! a ticket in planning — its title, the issue's body as the brief's source, a `forge_pr`
//! event (`action: issue`) linking it and naming its author as the requester — but only when
//! the label was applied by a person with write access (the issue's `labeled` events say who;
//! the permission is asked of the forge). A label anyone else applied imports nothing.
//!
//! Idempotent: each issue's ticket is created under the operation id `forge-issue-N`, so a
//! second pass, a restart or a webhook and the poll together find the ticket already there. A
//! later edit of the issue is never written over the brief: it is recorded in the ticket's
//! thread as a `forge_pr` event (`action: issue_edited`, with the issue's title and text as
//! they are now), once per distinct text, for a person to carry into the brief if they want.

use yoi_core::forge::action;
use yoi_core::{Principal, Timestamp};
use yoi_forge::{Forge, ForgeError};
use yoi_store::ops::{self, CreateRequest};
use yoi_store::{Ctx, StoreError, Workspace};

/// What one import pass did (what `POST /api/v1/forge/sync` answers in `imported`).
#[derive(
    Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub struct Imported {
    /// (issue number, new ticket id).
    pub created: Vec<(u64, String)>,
    /// Issues edited since their ticket was made: (issue number, ticket id), each recorded once.
    pub edited: Vec<(u64, String)>,
    /// Issues whose label was applied by someone without write access: (number, who).
    pub refused: Vec<(u64, String)>,
}

/// Why an import pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Import every open issue labelled `label` whose label a person with write access applied.
pub fn import_issues(
    ws: &Workspace,
    forge: &dyn Forge,
    label: &str,
    now: Timestamp,
) -> Result<Imported, ImportError> {
    let mut out = Imported::default();
    for issue in forge.labeled_issues(label)? {
        let Some(who) = forge.labeled_by(issue.number, label)? else {
            continue;
        };
        if !forge.permission(&who)?.can_push() {
            out.refused.push((issue.number, who));
            continue;
        }
        // The provenance goes first, outside every section of the brief: appended, it would
        // land in the issue's last section (a `## Validation` would take it for a command).
        let body = format!(
            "Imported from {} (issue #{} by @{}; labelled \"{label}\" by @{who}).\n\n{}\n",
            issue.url,
            issue.number,
            issue.author,
            issue.body.trim_end(),
        );
        let title: String = issue.title.chars().take(ops::MAX_TITLE_CHARS).collect();
        let ctx = Ctx::new(Principal::intake(format!("github:{}", issue.author)), now)
            .with_op(Some(format!("forge-issue-{}", issue.number)));
        let text = text_hash(&issue);
        let created = match ops::create(
            ws,
            &ctx,
            &CreateRequest {
                title,
                body,
                depends_on: Vec::new(),
            },
        ) {
            Ok(o) if !o.replayed => o,
            // Imported before, with the same text.
            Ok(_) => continue,
            // Imported before, and the issue (or who labelled it) changed since: its text is
            // recorded in the thread when it is new, never written over the brief.
            Err(StoreError::ConflictingReplay { ticket, .. }) => {
                if edited(ws, &ticket, &issue, &text, now)? {
                    out.edited.push((issue.number, ticket));
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let ticket = created.ticket.to_string();
        let link = Ctx::new(Principal::orchestrator(), now)
            .with_op(Some(format!("forge-issue-link-{}", issue.number)));
        ops::record_forge(
            ws,
            &link,
            &ticket,
            &[
                ("action", action::ISSUE.to_string()),
                ("number", issue.number.to_string()),
                ("url", issue.url.clone()),
                ("author", issue.author.clone()),
                ("text", text),
            ],
            &format!(
                "From issue #{} ({}) by @{}: the pull request will close it.",
                issue.number, issue.url, issue.author
            ),
        )?;
        out.created.push((issue.number, ticket));
    }
    Ok(out)
}

/// The hash of an issue's title and text, which says whether it changed.
fn text_hash(issue: &yoi_forge::Issue) -> String {
    let both = format!("{}\n\n{}", issue.title, issue.body);
    yoi_core::sha256_hex(both.as_bytes())[..16].to_string()
}

/// Record the issue's text as it is now in `ticket`'s thread, unless the last text recorded
/// (at the import, or a later edit) is this one; whether it was recorded now.
fn edited(
    ws: &Workspace,
    ticket: &str,
    issue: &yoi_forge::Issue,
    text: &str,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let id = ws.resolve(ticket)?;
    let thread = ws.read_thread(&id)?;
    let last = thread
        .events
        .iter()
        .rev()
        .filter(|e| e.kind.as_str() == yoi_core::forge::EVENT)
        .filter(|e| matches!(e.get("action"), Some(action::ISSUE | action::ISSUE_EDITED)))
        .find_map(|e| e.get("text"));
    // Imported before texts were recorded: the import's text is not known, so the first edit
    // seen is recorded.
    if last == Some(text) {
        return Ok(false);
    }
    let quoted: String = issue.body.lines().map(|l| format!("> {l}\n")).collect();
    let ctx = Ctx::new(Principal::orchestrator(), now)
        .with_op(Some(format!("forge-issue-edit-{}-{text}", issue.number)));
    let out = ops::record_forge(
        ws,
        &ctx,
        ticket,
        &[
            ("action", action::ISSUE_EDITED.to_string()),
            ("number", issue.number.to_string()),
            ("text", text.to_string()),
        ],
        &format!(
            "Issue #{} ({}) was edited on the forge. The brief is not changed; its title and text now:\n\n**{}**\n\n{quoted}",
            issue.number, issue.url, issue.title
        ),
    );
    match out {
        Ok(o) => Ok(!o.replayed),
        Err(StoreError::StaleState { .. } | StoreError::ConflictingReplay { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}
