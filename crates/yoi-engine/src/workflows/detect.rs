//! The detector behind workflow offers (docs/workflows.md, "Offers"): a pure function from the
//! tickets' history to drafts. It reads, never writes; what it returns is offered by
//! [`super::offers`], and only a person's acceptance turns a draft into a file.
//!
//! Four patterns, each with a signature that names it, so the same pattern is one offer ever:
//!
//! - **a new workflow** (`new:<normalized text>`): the same instruction — a paragraph, list
//!   item or code line of a person's comment or of a ticket's brief — on `offer_min_tickets`
//!   tickets or more. When every comment that said it followed the same kind of failure, the
//!   draft says so ("the same follow-up after the same kind of failure");
//! - **an improvement** (`improve:<slug>:<digest of the fix>`): a person invoked the workflow,
//!   the attempt that carried it failed, the person's next comment said what to do, and the next
//!   attempt of that role completed. The fix is appended to the body;
//! - **`auto_invoke` on** (`auto_invoke:<slug>`): people invoked an `auto_invoke: false`
//!   workflow `auto_invoke_min_invocations` times on `auto_invoke_min_tickets` tickets;
//! - **a flow** (`flow:<a>,<b>,…`): people invoked the same workflows in the same order, by
//!   hand, on `offer_min_tickets` tickets; the flow runs them as steps.
//!
//! Only people's events count (not pods', the orchestrator's or the service's, and never an
//! agent's own invocation). One file has at most one pending offer: a second change to it waits
//! until the first is decided, so an accepted draft never makes another one stale.

use std::collections::{BTreeMap, BTreeSet};

use yoi_db::inbox::InboxEvent;
use yoi_db::workflows::HistoryTicket;
use yoi_skills::digest::sha256_hex;
use yoi_skills::offer::{OfferDraft, OfferKind};
use yoi_skills::workflow::{is_valid_slug, parse_workflow_md, Workflow, WorkflowSet, WORKFLOW_DIR};

use super::carry::is_person_author;
use super::invoke::parse_invocation;

/// The thresholds of `[workflows]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub min_tickets: usize,
    pub auto_invoke_min_invocations: usize,
    pub auto_invoke_min_tickets: usize,
}

/// What the detector needs to know of the workspace besides the history.
pub struct Known<'a> {
    pub workflows: &'a WorkflowSet,
    /// The text of a file by its path from the repository root, `None` when there is none.
    pub read: &'a dyn Fn(&str) -> Option<String>,
    /// Targets that have a pending offer: nothing more is drafted for them.
    pub pending_targets: BTreeSet<String>,
    /// Signatures offered before (whatever became of them): never drafted again.
    pub offered: &'a dyn Fn(&str) -> bool,
    /// The roles flow steps may name (configured ones).
    pub roles: &'a [&'a str],
}

/// Every draft the history supports now, in a stable order.
pub fn detect(history: &[HistoryTicket], known: &Known<'_>, t: Thresholds) -> Vec<OfferDraft> {
    let mut taken = known.pending_targets.clone();
    let mut out = Vec::new();
    let mut keep = |d: Option<OfferDraft>, taken: &mut BTreeSet<String>| {
        if let Some(d) = d {
            if !(known.offered)(&d.signature) && taken.insert(d.target.clone()) {
                out.push(d);
            }
        }
    };
    for d in auto_invoke(history, known, t) {
        keep(Some(d), &mut taken);
    }
    for d in improvements(history, known) {
        keep(Some(d), &mut taken);
    }
    for (sig, group) in repeated(history, known, t) {
        let d = new_workflow(&sig, &group, history, known, &taken);
        keep(d, &mut taken);
    }
    for (seq, tickets) in sequences(history, known, t) {
        let d = new_flow(&seq, &tickets, known, &taken);
        keep(d, &mut taken);
    }
    out
}

fn is_person(e: &InboxEvent) -> bool {
    e.author
        .as_deref()
        .is_some_and(|a| !a.is_empty() && is_person_author(a))
}

/// A person's invocation: `(slug, role)`.
fn invocation(e: &InboxEvent) -> Option<(&str, &str)> {
    (e.kind == "comment" && is_person(e))
        .then(|| {
            Some((
                e.attr("workflow")?,
                e.attr("workflow_role").unwrap_or("coder"),
            ))
        })
        .flatten()
}

/// A person's plain comment: not an invocation, not an agent's.
fn plain_comment(e: &InboxEvent) -> Option<&str> {
    let plain = e.kind == "comment"
        && is_person(e)
        && e.attr("workflow").is_none()
        && e.attr("agent_workflow").is_none()
        && parse_invocation(&e.body).is_none();
    plain.then_some(e.body.as_str())
}

fn valid<'a>(known: &'a Known<'_>, slug: &str) -> Option<&'a Workflow> {
    known.workflows.file(slug).and_then(|f| f.workflow.as_ref())
}

fn workflow_target(slug: &str) -> String {
    format!("{WORKFLOW_DIR}/{slug}.md")
}

// ---------------------------------------------------------------------------------------------
// auto_invoke

fn auto_invoke(history: &[HistoryTicket], known: &Known<'_>, t: Thresholds) -> Vec<OfferDraft> {
    let mut counts: BTreeMap<&str, (usize, BTreeSet<&str>)> = BTreeMap::new();
    for ticket in history {
        for e in &ticket.events {
            if let Some((slug, _)) = invocation(e) {
                let c = counts.entry(slug).or_default();
                c.0 += 1;
                c.1.insert(ticket.id.as_str());
            }
        }
    }
    let mut out = Vec::new();
    for (slug, (n, tickets)) in counts {
        let Some(wf) = valid(known, slug) else {
            continue;
        };
        if wf.auto_invoke
            || n < t.auto_invoke_min_invocations
            || tickets.len() < t.auto_invoke_min_tickets
        {
            continue;
        }
        let target = workflow_target(slug);
        let Some(old) = (known.read)(&target) else {
            continue;
        };
        let Some(new) = with_auto_invoke(&old) else {
            continue;
        };
        if !still_valid(&target, &new, |w| w.auto_invoke) {
            continue;
        }
        let cited: Vec<String> = tickets.iter().map(|s| s.to_string()).collect();
        out.push(draft(
            OfferKind::AutoInvoke,
            format!("auto_invoke:{slug}"),
            slug,
            &target,
            format!("Let agents invoke `/{slug}` themselves (`auto_invoke: true`)"),
            format!(
                "People invoked `/{slug}` {n} times on {} tickets ({}). With `auto_invoke: true` \
                 its description is listed to the {} agents, and they may invoke it themselves.",
                cited.len(),
                cite(&cited),
                wf.role
            ),
            cited,
            Some(&old),
            new,
        ));
    }
    out
}

/// The file with `auto_invoke: true` in its frontmatter (the key replaced, or added last).
fn with_auto_invoke(text: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")? + 1;
    let (front, tail) = rest.split_at(end);
    let mut lines: Vec<String> = front.lines().map(str::to_string).collect();
    match lines.iter_mut().find(|l| {
        l.strip_prefix("auto_invoke")
            .is_some_and(|r| r.trim_start().starts_with(':'))
    }) {
        Some(line) => *line = "auto_invoke: true".into(),
        None => lines.push("auto_invoke: true".into()),
    }
    Some(format!("---\n{}\n{tail}", lines.join("\n")))
}

fn still_valid(target: &str, text: &str, check: impl Fn(&Workflow) -> bool) -> bool {
    let f = parse_workflow_md(target, text.as_bytes());
    f.workflow.as_ref().is_some_and(check)
}

// ---------------------------------------------------------------------------------------------
// improvements

fn improvements(history: &[HistoryTicket], known: &Known<'_>) -> Vec<OfferDraft> {
    // (slug, normalized fix) -> (fix as written, tickets)
    let mut found: BTreeMap<(String, String), (String, BTreeSet<String>)> = BTreeMap::new();
    for ticket in history {
        // role -> invocations waiting for an attempt of that role to complete
        let mut due: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // slug -> the fix a person wrote after its failed run, if any yet
        let mut failed: BTreeMap<String, Option<String>> = BTreeMap::new();
        for e in &ticket.events {
            if let Some((slug, role)) = invocation(e) {
                due.entry(role.to_string())
                    .or_default()
                    .push(slug.to_string());
                continue;
            }
            if let Some(text) = plain_comment(e) {
                for fix in failed.values_mut() {
                    fix.get_or_insert_with(|| text.trim().to_string());
                }
                continue;
            }
            if e.kind != "assignment" {
                continue;
            }
            let role = e.attr("role").unwrap_or_default();
            let Some(slugs) = due.get_mut(role) else {
                continue;
            };
            if e.attr("outcome") == Some("completed") {
                for slug in slugs.drain(..) {
                    if let Some(Some(fix)) = failed.remove(&slug) {
                        let key = (slug.clone(), normalize(&fix));
                        let entry = found.entry(key).or_insert_with(|| (fix, BTreeSet::new()));
                        entry.1.insert(ticket.id.clone());
                    }
                }
            } else {
                for slug in slugs.iter() {
                    failed.entry(slug.clone()).or_insert(None);
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((slug, norm), (fix, tickets)) in found {
        let Some(wf) = valid(known, &slug) else {
            continue;
        };
        if norm.is_empty() || normalize(&wf.body).contains(&norm) {
            continue;
        }
        let target = workflow_target(&slug);
        let Some(old) = (known.read)(&target) else {
            continue;
        };
        let new = format!("{}\n\n{}\n", old.trim_end(), fix.trim());
        if !still_valid(&target, &new, |_| true) {
            continue;
        }
        let cited: Vec<String> = tickets.into_iter().collect();
        out.push(draft(
            OfferKind::ImproveWorkflow,
            format!("improve:{slug}:{}", &sha256_hex(norm.as_bytes())[..16]),
            &slug,
            &target,
            format!("Add what fixed a failed run to `/{slug}`"),
            format!(
                "On {} the attempt that carried `/{slug}` failed, a person's next comment said \
                 what to do, and the next attempt completed. The offer adds that comment to the \
                 workflow's body, so the next run starts with it.",
                cite(&cited)
            ),
            cited,
            Some(&old),
            new,
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// new workflows from repeated instructions

/// One instruction seen on several tickets.
struct Repeated {
    /// As first written.
    text: String,
    tickets: BTreeSet<String>,
    in_comments: BTreeSet<String>,
    /// The failure each comment saying it followed (`None`: none, or a brief).
    after: BTreeSet<Option<String>>,
}

fn repeated(
    history: &[HistoryTicket],
    known: &Known<'_>,
    t: Thresholds,
) -> Vec<(String, Repeated)> {
    let mut seen: BTreeMap<String, Repeated> = BTreeMap::new();
    let mut add = |text: &str, ticket: &str, comment: bool, after: Option<String>| {
        let norm = normalize(text);
        if norm.split(' ').count() < 3 || norm.len() < 12 {
            return;
        }
        let r = seen.entry(norm).or_insert_with(|| Repeated {
            text: text.trim().to_string(),
            tickets: BTreeSet::new(),
            in_comments: BTreeSet::new(),
            after: BTreeSet::new(),
        });
        r.tickets.insert(ticket.to_string());
        r.after.insert(after);
        if comment {
            r.in_comments.insert(ticket.to_string());
        }
    };
    for ticket in history {
        for unit in brief_units(&ticket.body) {
            add(&unit, &ticket.id, false, None);
        }
        let mut last_failure: Option<String> = None;
        for e in &ticket.events {
            match e.kind.as_str() {
                "attention" => {
                    last_failure = Some(format!("`{}`", e.attr("reason").unwrap_or("attention")));
                }
                "assignment" if e.attr("outcome") == Some("completed") => last_failure = None,
                "assignment" => {
                    last_failure = Some(format!(
                        "a {} `{}` attempt",
                        e.attr("outcome").unwrap_or("failed"),
                        e.attr("step").unwrap_or("step")
                    ));
                }
                _ => {
                    if let Some(text) = plain_comment(e) {
                        for unit in units(text) {
                            add(&unit, &ticket.id, true, last_failure.clone());
                        }
                    }
                }
            }
        }
    }
    let bodies: Vec<String> = known
        .workflows
        .valid()
        .map(|w| normalize(&w.body))
        .collect();
    seen.into_iter()
        .filter(|(norm, r)| {
            r.tickets.len() >= t.min_tickets && !bodies.iter().any(|b| b.contains(norm.as_str()))
        })
        .map(|(norm, r)| (format!("new:{norm}"), r))
        .collect()
}

fn new_workflow(
    sig: &str,
    r: &Repeated,
    history: &[HistoryTicket],
    known: &Known<'_>,
    taken: &BTreeSet<String>,
) -> Option<OfferDraft> {
    let slug = free_slug(&slug_from(&r.text), |s| {
        let target = workflow_target(s);
        taken.contains(&target)
            || (known.read)(&target).is_some()
            || known.workflows.file(s).is_some()
    })?;
    let target = workflow_target(&slug);
    let sentence = first_sentence(&r.text, 200);
    let after = match r.after.iter().collect::<Vec<_>>().as_slice() {
        [Some(a)] if r.in_comments.len() == r.tickets.len() => Some(a.clone()),
        _ => None,
    };
    let description = match &after {
        Some(a) => format!("What people do after {a}: {sentence}"),
        None => sentence,
    };
    let cited: Vec<String> = r.tickets.iter().cloned().collect();
    let content = format!(
        "---\ndescription: {}\n---\n\n{}\n\n<!-- Offered by yoi from the same instruction on tickets {}. -->\n",
        yaml_quoted(&description),
        r.text.trim(),
        cite(&cited)
    );
    if !still_valid(&target, &content, |_| true) {
        return None;
    }
    let mut titles: Vec<String> = cited
        .iter()
        .take(CITED)
        .map(|id| {
            let title = history
                .iter()
                .find(|t| &t.id == id)
                .map(|t| t.title.as_str())
                .unwrap_or("");
            format!("- {id} {title}")
        })
        .collect();
    if cited.len() > CITED {
        titles.push(format!("- and {} more", cited.len() - CITED));
    }
    let mut why = format!(
        "The same instruction was written on {} tickets ({} in people's comments, {} in briefs):\n\n{}",
        cited.len(),
        r.in_comments.len(),
        cited.len() - r.in_comments.len().min(cited.len()),
        titles.join("\n")
    );
    if let Some(a) = &after {
        why.push_str(&format!("\n\nEach time it followed {a}."));
    }
    why.push_str(&format!(
        "\n\nAs a workflow it is written once and invoked as `/{slug}`."
    ));
    Some(draft(
        OfferKind::NewWorkflow,
        sig.to_string(),
        &slug,
        &target,
        format!(
            "A new workflow `/{slug}` from an instruction written on {} tickets",
            cited.len()
        ),
        why,
        cited,
        None,
        content,
    ))
}

/// The units of a brief outside its Intent and Acceptance criteria sections: what a ticket is
/// for is its own, how to work on it (validation commands, notes) may recur.
pub fn brief_units(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut skip = false;
    let flush = |section: &str, skip: bool, out: &mut Vec<String>| {
        if !skip {
            out.extend(units(section));
        }
    };
    for line in body.lines() {
        if let Some(heading) = line.trim_start().strip_prefix('#') {
            flush(&section, skip, &mut out);
            section.clear();
            let h = heading.trim_start_matches('#').trim().to_lowercase();
            skip = h.contains("intent")
                || h.contains("acceptance")
                || h.contains("目的")
                || h.contains("受け入れ");
            continue;
        }
        section.push_str(line);
        section.push('\n');
    }
    flush(&section, skip, &mut out);
    out
}

/// The units an instruction is counted in: paragraphs, list items and code lines; headings and
/// fence lines are not instructions.
pub fn units(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut fenced = false;
    let flush = |para: &mut Vec<&str>, out: &mut Vec<String>| {
        if !para.is_empty() {
            out.push(para.join(" "));
            para.clear();
        }
    };
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("```") || l.starts_with("~~~") {
            flush(&mut para, &mut out);
            fenced = !fenced;
            continue;
        }
        if fenced {
            if !l.is_empty() {
                out.push(l.to_string());
            }
            continue;
        }
        if l.is_empty() || l.starts_with('#') {
            flush(&mut para, &mut out);
            continue;
        }
        if let Some(item) = list_item(l) {
            flush(&mut para, &mut out);
            out.push(item.to_string());
            continue;
        }
        para.push(l);
    }
    flush(&mut para, &mut out);
    out
}

fn list_item(l: &str) -> Option<&str> {
    for p in ["- ", "* ", "+ "] {
        if let Some(rest) = l.strip_prefix(p) {
            return Some(rest.trim_start_matches("[ ] ").trim_start_matches("[x] "));
        }
    }
    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = l[digits..].strip_prefix(". ") {
            return Some(rest);
        }
    }
    None
}

/// Lowercase, inline code marks dropped, whitespace collapsed, trailing punctuation trimmed.
pub fn normalize(text: &str) -> String {
    let lower = text.to_lowercase().replace('`', "");
    let words: Vec<&str> = lower.split_whitespace().collect();
    words
        .join(" ")
        .trim_end_matches(['.', ':', '!', ';', ','])
        .to_string()
}

fn slug_from(text: &str) -> String {
    let lower = text.to_lowercase();
    let words: Vec<String> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(str::to_string)
        .collect();
    let mut slug = words.join("-");
    slug.truncate(48);
    let slug = slug.trim_end_matches('-').to_string();
    if is_valid_slug(&slug) {
        slug
    } else {
        "offered-workflow".into()
    }
}

/// `base`, or `base-2`, `base-3`, … whichever `taken` does not hold.
fn free_slug(base: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    (1..100)
        .map(|n| {
            if n == 1 {
                base.to_string()
            } else {
                format!("{base}-{n}")
            }
        })
        .find(|s| !taken(s))
}

fn first_sentence(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.find(". ").map(|i| i + 1).unwrap_or(flat.len());
    let mut s: String = flat[..end].chars().take(max).collect();
    if s.len() < end {
        s.push('…');
    }
    s
}

fn yaml_quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

// ---------------------------------------------------------------------------------------------
// flows from workflows people ran by hand, in order

fn sequences(
    history: &[HistoryTicket],
    known: &Known<'_>,
    t: Thresholds,
) -> Vec<(Vec<String>, Vec<String>)> {
    let mut seen: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for ticket in history {
        let mut seq: Vec<String> = Vec::new();
        for e in &ticket.events {
            if let Some((slug, _)) = invocation(e) {
                if valid(known, slug).is_some() && !seq.iter().any(|s| s == slug) {
                    seq.push(slug.to_string());
                }
            }
        }
        if (2..=4).contains(&seq.len()) {
            seen.entry(seq).or_default().insert(ticket.id.clone());
        }
    }
    seen.into_iter()
        .filter(|(_, tickets)| tickets.len() >= t.min_tickets)
        .map(|(seq, tickets)| (seq, tickets.into_iter().collect()))
        .collect()
}

fn new_flow(
    seq: &[String],
    tickets: &[String],
    known: &Known<'_>,
    taken: &BTreeSet<String>,
) -> Option<OfferDraft> {
    let flows_dir = ".yoi/flows";
    let mut base = seq.join("-");
    base.truncate(56);
    let base = base.trim_end_matches('-').to_string();
    let name = free_slug(&base, |s| {
        let target = format!("{flows_dir}/{s}.flow.yaml");
        taken.contains(&target) || (known.read)(&target).is_some()
    })?;
    let target = format!("{flows_dir}/{name}.flow.yaml");
    let wfs: Vec<&Workflow> = seq.iter().filter_map(|s| valid(known, s)).collect();
    if wfs.len() != seq.len() {
        return None;
    }
    let mut steps = String::new();
    let step = |id: &str, role: &str, output: &str, prompt: Option<&Workflow>| {
        let mut s = format!("  - id: {id}\n    role: {role}\n    output: {output}\n");
        if let Some(w) = prompt {
            s.push_str("    prompt: |\n");
            let text = format!(
                "Follow the workflow /{} (.yoi/workflow/{}.md): {}\n\n{}",
                w.slug,
                w.slug,
                w.description,
                w.body.trim()
            );
            for line in text.lines() {
                if line.is_empty() {
                    s.push('\n');
                } else {
                    s.push_str(&format!("      {line}\n"));
                }
            }
        }
        s
    };
    if wfs[0].role != "coder" {
        steps.push_str(&step("implement", "coder", "commit", None));
    }
    let mut verified = false;
    for w in &wfs {
        if w.role == "reviewer" && !verified && known.roles.contains(&"verifier") {
            steps.push_str(&step("verify", "verifier", "checks", None));
            verified = true;
        }
        let output = if w.role == "coder" {
            "commit"
        } else {
            "verdict"
        };
        steps.push_str(&step(&w.slug, &w.role, output, Some(w)));
    }
    steps.push_str(&step("merge", "service", "merge", None));
    let order: Vec<String> = seq.iter().map(|s| format!("/{s}")).collect();
    let content = format!(
        "# Offered by yoi: people ran {} by hand, in this order, on tickets {}.\nschema_version: 1\nname: {name}\ntitle: {}\nsteps:\n{steps}",
        order.join(" then "),
        cite(tickets),
        yaml_quoted(&format!("{} as steps", order.join(" then ")))
    );
    if yoi_core::flow::parse(&content, &name, known.roles).is_err() {
        return None;
    }
    Some(draft(
        OfferKind::NewFlow,
        format!("flow:{}", seq.join(",")),
        &name,
        &target,
        format!("A flow `{name}` running {} as steps", order.join(" then ")),
        format!(
            "People invoked {} in this order, by hand, on {} tickets ({}). As a flow, a ticket \
             with `flow: {name}` runs them as steps; each step's prompt holds its workflow's body \
             (a flow step does not read `requires`: name those skills in the prompt if it needs \
             them).",
            order.join(" then "),
            tickets.len(),
            cite(tickets)
        ),
        tickets.to_vec(),
        None,
        content,
    ))
}

// ---------------------------------------------------------------------------------------------

/// At most this many tickets are named in an offer's text (all of them are in its `tickets`).
const CITED: usize = 10;

/// `A, B, C`, or the first [`CITED`] and how many more: an offer seen on a thousand tickets
/// stays readable in the inbox, a notification and the drafted file.
fn cite(ids: &[String]) -> String {
    let mut out = ids
        .iter()
        .take(CITED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > CITED {
        out.push_str(&format!(" and {} more", ids.len() - CITED));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn draft(
    kind: OfferKind,
    signature: String,
    name: &str,
    target: &str,
    title: String,
    why: String,
    tickets: Vec<String>,
    old: Option<&str>,
    content: String,
) -> OfferDraft {
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), &content)
        .unified_diff()
        .context_radius(3)
        .header(
            &if old.is_some() {
                format!("a/{target}")
            } else {
                "/dev/null".to_string()
            },
            &format!("b/{target}"),
        )
        .to_string();
    OfferDraft {
        kind,
        signature,
        name: name.to_string(),
        target: target.to_string(),
        title,
        why,
        tickets,
        base_digest: old.map(|o| sha256_hex(o.as_bytes())),
        content,
        diff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_split_paragraphs_items_and_code_lines_and_skip_headings() {
        let got = units(
            "## Validation\n\n- Run `cargo audit` before review\n1. second item\n\nA para\nthat wraps.\n\n```sh\ncargo deny check\n```\n",
        );
        assert_eq!(
            got,
            vec![
                "Run `cargo audit` before review",
                "second item",
                "A para that wraps.",
                "cargo deny check"
            ]
        );
        assert_eq!(
            normalize("Run  `cargo audit` Before review."),
            "run cargo audit before review"
        );
    }

    #[test]
    fn auto_invoke_is_set_whether_the_key_is_there_or_not() {
        assert_eq!(
            with_auto_invoke("---\ndescription: d\nauto_invoke: false\n---\nbody\n").unwrap(),
            "---\ndescription: d\nauto_invoke: true\n---\nbody\n"
        );
        assert_eq!(
            with_auto_invoke("---\ndescription: d\n---\nbody\n").unwrap(),
            "---\ndescription: d\nauto_invoke: true\n---\nbody\n"
        );
        assert_eq!(with_auto_invoke("no frontmatter"), None);
    }

    #[test]
    fn a_long_list_of_tickets_is_cut_to_ten_and_a_count() {
        let ids: Vec<String> = (0..12).map(|n| format!("T{n}")).collect();
        assert_eq!(
            cite(&ids),
            "T0, T1, T2, T3, T4, T5, T6, T7, T8, T9 and 2 more"
        );
        assert_eq!(cite(&ids[..2]), "T0, T1");
    }

    #[test]
    fn slugs_come_from_the_first_words() {
        assert_eq!(
            slug_from("Run the OWASP checklist against the diff"),
            "run-the-owasp-checklist"
        );
        assert_eq!(slug_from("¿¿"), "offered-workflow");
        assert_eq!(free_slug("a", |s| s == "a" || s == "a-2").unwrap(), "a-3");
    }
}
