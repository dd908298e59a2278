//! item.md checks: parse errors (with their line), required keys, the state, older-format and
//! unknown keys, and whether `queued_by`/`queued_at` fit the state.
//!
//! Keys and their lines come from a plain scan of the frontmatter, so a finding can name the
//! line of a key even when the YAML as a whole does not parse.

use std::borrow::Cow;

use yoi_core::finding::Finding;
use yoi_core::item::{Item, KNOWN_KEYS, LEGACY_KEYS};
use yoi_core::state::State;
use yoi_core::TicketId;

use super::thread::ThreadFacts;

/// Keys the older system's CLI hid; treated like the other older keys.
const HIDDEN_LEGACY_KEYS: [&str; 2] = ["legacy_ticket", "needs_preflight"];

const REQUIRED: [&str; 4] = ["title", "state", "created_at", "updated_at"];

/// A top-level frontmatter key, its 1-based line and its raw value text.
struct KeyLine<'a> {
    key: &'a str,
    line: usize,
    value: &'a str,
    /// The value continues on indented lines below.
    continued: bool,
}

fn frontmatter_keys(text: &str) -> Vec<KeyLine<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().peekable();
    let mut out = Vec::new();
    if lines.next().map(|(_, l)| l.trim_end()) != Some("---") {
        return out;
    }
    while let Some((i, raw)) = lines.next() {
        if raw.trim_end() == "---" {
            break;
        }
        if raw.starts_with([' ', '\t', '#', '-']) || raw.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = raw.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches(['\'', '"']);
        let continued = lines
            .peek()
            .is_some_and(|(_, n)| n.starts_with([' ', '\t']) && !n.trim().is_empty());
        out.push(KeyLine {
            key,
            line: i + 1,
            value: value.trim(),
            continued,
        });
    }
    out
}

fn blank(k: &KeyLine) -> bool {
    !k.continued && matches!(k.value, "" | "''" | "\"\"" | "~" | "null")
}

/// Check item.md's text. Returns the item when it parses.
pub(super) fn check(
    id: &TicketId,
    rel: &str,
    text: &str,
    thread: &ThreadFacts,
    out: &mut Vec<Finding>,
) -> Option<Item> {
    let keys = frontmatter_keys(text);
    let key = |k: &str| keys.iter().find(|kl| kl.key == k);
    let mut push = |f: Finding| out.push(f.with_ticket(id.as_str()));
    let item = match Item::parse(text) {
        Ok(item) => item,
        Err(e) => {
            let state_given = ["state", "workflow_state", "status"]
                .iter()
                .any(|k| key(k).is_some_and(|kl| !blank(kl)));
            let missing: Vec<&str> = REQUIRED
                .into_iter()
                .filter(|k| match *k {
                    "state" => !state_given,
                    k => key(k).is_none_or(blank),
                })
                .collect();
            if e.line.is_none() && !missing.is_empty() {
                for k in missing {
                    push(required_key(rel, k, key(k).map(|kl| kl.line), thread));
                }
            } else if let Some(kl) = key("state").filter(|kl| {
                // A YAML error can surface on the state line too; only a value that is not a
                // state is an `item.state` finding.
                e.line == Some(kl.line)
                    && !blank(kl)
                    && kl.value.trim_matches(['\'', '"']).parse::<State>().is_err()
                    && !kl.value.starts_with(['[', '{'])
            }) {
                push(
                    Finding::error(
                        "item.state",
                        format!("`state: {}`: {}", kl.value, e.reason),
                        "one of planning, ready, queued, inprogress, done, closed",
                    )
                    .at(rel, e.line)
                    .with_fix(match thread.last_state {
                        Some((line, s)) => format!(
                            "set `state: {s}` in {rel} (the thread's last state change, line {line}, says {s})"
                        ),
                        None => format!("set `state:` in {rel} to the ticket's real state"),
                    }),
                );
            } else {
                push(
                    Finding::error("item.parse", e.to_string(), "YAML frontmatter between `---` lines, then the Markdown body")
                        .at(rel, e.line)
                        .with_fix(format!(
                            "repair {rel}{} by hand (or restore it with `git checkout -- {rel}`); yoi cannot read or change this ticket until then",
                            e.line.map(|l| format!(" at line {l}")).unwrap_or_default()
                        )),
                );
            }
            return None;
        }
    };

    // The parsed item is the authority on which keys exist; the scan adds lines and raw text.
    for (k, _) in &item.extra {
        let k = k.as_str();
        let (line, value) = match key(k) {
            Some(kl) => (Some(kl.line), kl.value),
            None => (None, "…"),
        };
        let f = if LEGACY_KEYS.contains(&k) || HIDDEN_LEGACY_KEYS.contains(&k) {
            let (expected, fix) = legacy_mapping(k, value, id, &item, &keys);
            // A tree of older tickets holds tens of thousands of these: the usual advice is
            // one text (the finding names the file and line).
            let fix = fix.unwrap_or(Cow::Borrowed(
                "optional: delete this line once no older tool reads this tree (yoi keeps it otherwise)",
            ));
            Finding::warning(
                "item.legacy_key",
                format!("older-format key `{k}: {value}`"),
                expected,
            )
            .with_fix(fix)
        } else {
            Finding::warning(
                "item.unknown_key",
                format!("unknown key `{k}: {value}`"),
                format!(
                    "only yoi's keys ({}); unknown keys are kept verbatim on rewrite",
                    KNOWN_KEYS.join(", ")
                ),
            )
            .with_fix(format!(
                "rename `{k}` if it is a misspelt yoi key, or delete it from {rel}"
            ))
        };
        push(f.at(rel, line));
    }

    let state_line = key("state").map(|kl| kl.line);
    match item.state {
        State::Queued | State::Inprogress
            if item.queued_by.is_none() || item.queued_at.is_none() =>
        {
            let missing: Vec<&str> = [
                item.queued_by.is_none().then_some("queued_by"),
                item.queued_at.is_none().then_some("queued_at"),
            ]
            .into_iter()
            .flatten()
            .collect();
            let fix = match &thread.last_queue {
                Some((line, who, at)) => format!(
                    "add `queued_by: {who}` and `queued_at: {at}` (from the queue event at thread.md line {line}) to {rel}"
                ),
                None => format!("add `queued_by:` (who queued it) and `queued_at:` (when) to {rel}"),
            };
            push(
                Finding::warning(
                    "item.queued_fields",
                    format!(
                        "the ticket is {} but {} is missing",
                        item.state,
                        missing.join(" and ")
                    ),
                    "queue records who queued the ticket and when (`queued_by`, `queued_at`)",
                )
                .at(rel, state_line)
                .with_fix(fix),
            );
        }
        State::Planning | State::Ready if item.queued_by.is_some() || item.queued_at.is_some() => {
            let present: Vec<&str> = [
                item.queued_by.is_some().then_some("queued_by"),
                item.queued_at.is_some().then_some("queued_at"),
            ]
            .into_iter()
            .flatten()
            .collect();
            let line = present
                .iter()
                .filter_map(|k| key(k).map(|kl| kl.line))
                .min();
            push(
                Finding::warning(
                    "item.queued_fields",
                    format!("the ticket is {} but still has {}", item.state, present.join(" and ")),
                    "`queued_by`/`queued_at` only on queued or later tickets (returning to planning clears them)",
                )
                .at(rel, line)
                .with_fix(format!(
                    "delete the {} line(s) from {rel}; the thread keeps the history of the queue",
                    present.join(" and ")
                )),
            );
        }
        _ => {}
    }
    Some(item)
}

fn required_key(rel: &str, key: &str, line: Option<usize>, thread: &ThreadFacts) -> Finding {
    let suggestion = match key {
        "title" => "`title: <one line>`".to_string(),
        "state" => match thread.last_state {
            Some((l, s)) => format!("`state: {s}` (the thread's last state change, line {l})"),
            None => "`state: planning` (or the ticket's real state)".to_string(),
        },
        "created_at" => match &thread.first_at {
            Some(t) => format!("`created_at: {t}` (the thread's first event)"),
            None => "`created_at: <UTC time>`".to_string(),
        },
        _ => match &thread.last_at {
            Some(t) => format!("`updated_at: {t}` (the thread's last event)"),
            None => "`updated_at: <UTC time>`".to_string(),
        },
    };
    let seen = match line {
        Some(l) => format!("the required key `{key}` is empty (line {l})"),
        None => format!("the required key `{key}` is missing"),
    };
    Finding::error(
        "item.required_key",
        seen,
        "item.md has title, state, created_at and updated_at",
    )
    .at(rel, line)
    .with_fix(format!("add {suggestion} to the frontmatter of {rel}"))
}

/// What yoi does with an older key: the `expected` text, and a fix when it differs from the
/// default (delete the line once no older tool needs it).
fn legacy_mapping(
    key: &str,
    value: &str,
    id: &TicketId,
    item: &Item,
    keys: &[KeyLine],
) -> (Cow<'static, str>, Option<Cow<'static, str>>) {
    let has = |k: &str| keys.iter().any(|kl| kl.key == k);
    match key {
        "ref_selector" if item.target_ref.is_some() => (
            "`target_ref`, which is set and wins; `ref_selector` is kept but ignored".into(),
            None,
        ),
        "ref_selector" => (
            format!("`target_ref`: yoi maps `ref_selector` to it, so work merges into {value}").into(),
            Some("optional: rename `ref_selector:` to `target_ref:` (yoi reads either)".into()),
        ),
        "repository_id" => (
            "nothing: yoi works on the repository that holds .yoi/, so `repository_id` is kept verbatim and selects nothing".into(),
            None,
        ),
        "assignee" => (
            "nothing: assignments live in yoi's runtime state, so `assignee` is kept verbatim and ignored".into(),
            None,
        ),
        "workflow_state" if has("state") => (
            "`state`, which is set and wins; `workflow_state` is kept but ignored".into(),
            None,
        ),
        "workflow_state" => (
            format!("`state`: yoi maps `workflow_state` to it, so the ticket is {}", item.state).into(),
            Some(format!("optional: rename `workflow_state:` to `state:` (the ticket is {})", item.state).into()),
        ),
        "status" if has("state") || has("workflow_state") => (
            "nothing: `status` is derived from `state`, so it is kept but ignored".into(),
            None,
        ),
        "status" => (
            format!("`state`: yoi maps `status: closed` to closed and any other status to planning, so the ticket is {}", item.state).into(),
            Some(format!("optional: replace `status:` with `state: {}`", item.state).into()),
        ),
        "id" => {
            let differs = value.trim_matches(['\'', '"']) != id.as_str();
            (
                if differs {
                    format!("nothing: the folder name ({id}) is the id, and this `id` differs from it; it is ignored").into()
                } else {
                    "nothing: the folder name is the id, so `id` is ignored".into()
                },
                None,
            )
        }
        "slug" => ("nothing: the id is the slug, so `slug` is ignored".into(), None),
        _ => (format!("nothing: `{key}` is obsolete, kept verbatim and ignored").into(), None),
    }
}
