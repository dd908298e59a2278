//! Putting invoked workflows in front of an attempt. When an attempt is handed out, every
//! invocation of the ticket for the attempt's role that no completed attempt has carried yet
//! is recorded as carried by this one (`workflow_carriers`) and rendered into its prompt: for
//! each invocation, in the order they were made, the bodies of what it `requires` (skills are
//! activated, so the activation is recorded like any other), then the workflow's body, then
//! the person's comment. The step's usual brief follows in the prompt. An attempt that fails or
//! expires leaves its invocations due, so the next attempt carries them again; handing the same
//! attempt out again gives the same text.
//!
//! A skill named as `#<name>` in the ticket's body or in a person's comment is knowledge for
//! every attempt of the ticket: its body comes after the invoked workflows, activated and
//! recorded the same way ([`named_skills`]). Only names of valid catalog skills count, so
//! `#123` and `# Heading` are text.

use yoi_core::{TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_skills::workflow::{Knowledge, Workflow, WorkflowSet};
use yoi_skills::{prompt::escape, render_activation};
use yoi_store::ops::{WORKFLOW, WORKFLOW_ROLE};
use yoi_store::{StoreError, Workspace};

use super::lookup_in;

/// One invocation found in a ticket's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The comment event's id.
    pub id: String,
    pub slug: String,
    pub role: String,
    pub author: String,
    pub comment: String,
}

/// Every invocation recorded in the ticket's thread, oldest first.
pub fn invocations(ws: &Workspace, ticket: &TicketId) -> Result<Vec<Invocation>, StoreError> {
    Ok(ws
        .read_thread(ticket)?
        .events
        .iter()
        .filter_map(|e| {
            Some(Invocation {
                id: e.id()?.to_string(),
                slug: e.get(WORKFLOW)?.to_string(),
                role: e.get(WORKFLOW_ROLE)?.to_string(),
                author: e.author().unwrap_or("someone").to_string(),
                comment: e.body.clone(),
            })
        })
        .collect())
}

/// A workflow an agent may invoke itself (`auto_invoke: true`), as its prompt lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Invocable {
    pub slug: String,
    pub description: String,
}

/// Fill in what a handed-out attempt gets of workflows: the invocations it carries
/// ([`for_attempt`]) and the workflows its agent may invoke ([`invocable`]).
pub fn fill(
    ws: &Workspace,
    index: &DbIndex,
    work: &mut crate::assignments::Work,
    now: Timestamp,
) -> Result<(), StoreError> {
    work.workflow = for_attempt(ws, index, &work.assignment, now)?;
    work.invocable = invocable(&super::set(ws), &work.assignment.role);
    Ok(())
}

/// The valid `auto_invoke` workflows of `role`, by slug: the only ones an agent ever sees.
pub fn invocable(set: &WorkflowSet, role: &str) -> Vec<Invocable> {
    set.valid()
        .filter(|w| w.auto_invoke && w.role == role)
        .map(|w| Invocable {
            slug: w.slug.clone(),
            description: w.description.clone(),
        })
        .collect()
}

/// The invocations attempt `a` carries (recorded as carried), then the skills the ticket names
/// as `#<name>`, rendered for its prompt; `None` when there is neither.
pub fn for_attempt(
    ws: &Workspace,
    index: &DbIndex,
    a: &Assignment,
    now: Timestamp,
) -> Result<Option<String>, StoreError> {
    let ticket =
        TicketId::parse(&a.ticket).map_err(|e| StoreError::bad_input("ticket", e.to_string()))?;
    let mut out = invoked(ws, index, a, &ticket, now)?.unwrap_or_default();
    let named = named_skills(ws, &ticket)?;
    if !named.is_empty() {
        out.push_str(
            "## Skills the ticket names\n\nA person named these skills in the ticket (`#name`); \
             use what applies.\n\n",
        );
        for name in named {
            match crate::skills::activate(
                ws,
                index,
                &name,
                format!("named:{}", a.ticket),
                Some(&a.ticket),
                Some(a.id.clone()),
                now,
            ) {
                Ok(act) => out.push_str(&render_activation(&act)),
                Err(e) => out.push_str(&format!(
                    "(The skill `{name}` could not be activated: {e}.)\n"
                )),
            }
            out.push('\n');
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// The valid catalog skills named as `#<name>` in the ticket's body or in a person's comments,
/// in the order they first appear.
pub fn named_skills(ws: &Workspace, ticket: &TicketId) -> Result<Vec<String>, StoreError> {
    let item = ws.read_item(ticket)?;
    let mut texts = vec![item.body];
    texts.extend(
        ws.read_thread(ticket)?
            .events
            .into_iter()
            .filter(|e| e.kind == yoi_core::thread::EventKind::Comment && by_a_person(e))
            .map(|e| e.body),
    );
    let mut found: Vec<String> = Vec::new();
    for name in texts.iter().flat_map(|t| hash_names(t)) {
        if !found.contains(&name) {
            found.push(name);
        }
    }
    if found.is_empty() {
        // Most tickets name no skill: the catalog is read only when one might.
        return Ok(found);
    }
    let catalog = crate::skills::load_catalog(ws);
    found.retain(|name| catalog.get(name).is_some_and(|s| s.valid));
    Ok(found)
}

/// Whether an event was written by a person: not a pod, an intake pod, the orchestrator or the
/// service (their authors are `pod:…`, `intake:…`, `yoi-orchestrator` and `yoi`).
fn by_a_person(e: &yoi_core::thread::Event) -> bool {
    is_person_author(e.author().unwrap_or(""))
}

/// Whether `author` (a thread event's) is a person's name rather than a pod's, an intake
/// pod's, the orchestrator's or the service's.
pub fn is_person_author(author: &str) -> bool {
    let service = [
        yoi_core::Principal::orchestrator().name,
        yoi_core::Principal::service().name,
    ];
    !author.starts_with("pod:")
        && !author.starts_with("intake:")
        && !service.iter().any(|s| s == author)
}

/// Every `#name` in `text`: `#` at the start or after a space, `(` or `,`, then a lowercase
/// skill-name word.
pub fn hash_names(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (i, _) in text.match_indices('#') {
        if i > 0 && !matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'(' | b',') {
            continue;
        }
        let word: String = text[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        let word = word.trim_end_matches('-').to_string();
        if word.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(word);
        }
    }
    out
}

/// The invocations attempt `a` carries, recorded as carried, rendered; `None` when none.
fn invoked(
    ws: &Workspace,
    index: &DbIndex,
    a: &Assignment,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Option<String>, StoreError> {
    let mine: Vec<Invocation> = invocations(ws, ticket)?
        .into_iter()
        .filter(|i| i.role == a.role)
        .collect();
    if mine.is_empty() {
        return Ok(None);
    }
    let carriers = index.workflow_carriers(&a.ticket)?;
    let done = |inv: &Invocation| {
        carriers.iter().any(|c| {
            c.invocation_id == inv.id
                && c.assignment_id != a.id
                && c.status.as_deref() == Some(AssignmentStatus::Completed.as_str())
        })
    };
    let due: Vec<Invocation> = mine.into_iter().filter(|i| !done(i)).collect();
    if due.is_empty() {
        return Ok(None);
    }
    let pairs: Vec<(String, String)> = due.iter().map(|i| (i.id.clone(), i.slug.clone())).collect();
    index.carry_workflows(&a.ticket, &a.id, &pairs, now.unix_millis())?;
    let set = super::set(ws);
    let mut out = String::new();
    for inv in &due {
        out.push_str(&render_one(ws, index, &set, a, inv, now));
    }
    Ok(Some(out))
}

fn render_one(
    ws: &Workspace,
    index: &DbIndex,
    set: &WorkflowSet,
    a: &Assignment,
    inv: &Invocation,
    now: Timestamp,
) -> String {
    let mut out = format!(
        "## Workflow `/{}`, invoked by {}\n\n\
         A person invoked this workflow on the ticket: follow it in this attempt, within the \
         brief below. What it needs to know comes first, then its instructions.\n\n",
        inv.slug, inv.author
    );
    let wf = match lookup_in(set, &inv.slug) {
        Ok(wf) => wf,
        Err(e) => {
            out.push_str(&format!(
                "(Its file cannot be used now, so its instructions are left out: {e}. Say so in \
                 your summary.)\n\n"
            ));
            return out;
        }
    };
    out.push_str(&render_workflow(ws, index, set, &wf, &a.ticket, &a.id, now));
    out.push_str("\nThe person's words, as they invoked it:\n\n");
    for line in inv.comment.lines() {
        out.push_str(&format!("> {line}\n"));
    }
    out.push('\n');
    out
}

/// What a workflow gives the attempt `assignment` of `ticket`: the bodies of what it requires,
/// depth first, each once (skills activated and recorded against the attempt), then its own.
pub fn render_workflow(
    ws: &Workspace,
    index: &DbIndex,
    set: &WorkflowSet,
    wf: &Workflow,
    ticket: &str,
    assignment: &str,
    now: Timestamp,
) -> String {
    let mut out = String::new();
    for piece in set.knowledge(&wf.slug).unwrap_or_default() {
        match piece {
            Knowledge::Skill(name) => {
                match crate::skills::activate(
                    ws,
                    index,
                    &name,
                    format!("workflow:{}", wf.slug),
                    Some(ticket),
                    Some(assignment.to_string()),
                    now,
                ) {
                    Ok(act) => out.push_str(&render_activation(&act)),
                    Err(e) => out.push_str(&format!(
                        "(The skill `{name}` it requires could not be activated: {e}.)\n"
                    )),
                }
                out.push('\n');
            }
            Knowledge::Workflow { slug, body } => {
                out.push_str(&workflow_content(&slug, &body));
                out.push('\n');
            }
        }
    }
    out.push_str(&workflow_content(&wf.slug, &wf.body));
    out
}

fn workflow_content(slug: &str, body: &str) -> String {
    format!(
        "<workflow_content name=\"{}\">\n{}\n</workflow_content>\n",
        escape(slug),
        body.replace("</workflow_content", "&lt;/workflow_content")
    )
}
