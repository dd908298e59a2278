//! thread.md checks: what `parse_thread` reports (malformed headers, torn appends, stray text),
//! then each event's own attributes, ids, and the state changes it records.

use std::ops::Range;

use yoi_core::finding::{Finding, SafeFix};
use yoi_core::state::State;
use yoi_core::thread::{parse_thread_headers, EventKind, ThreadIssue, ThreadIssueKind};
use yoi_core::{TicketId, Timestamp};

/// The bytes of a torn event that `issue` reports, when it is one: a header line cut short
/// (no `-->`) with what follows it up to the next header line, or an event never closed by
/// `---` that runs to the end of the file (a half-written append). `None` for any other issue,
/// which needs a person.
pub(super) fn torn_region(text: &str, issue: &ThreadIssue) -> Option<Range<usize>> {
    let mut starts = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        starts.push(at);
        at += line.len();
    }
    let start = *starts.get(issue.line.checked_sub(1)?)?;
    let header = text[start..].lines().next().unwrap_or("");
    let next_header = starts
        .iter()
        .copied()
        .filter(|&s| s > start)
        .find(|&s| text[s..].starts_with("<!-- event:"));
    match &issue.kind {
        ThreadIssueKind::MalformedHeader { .. } if !header.trim_end().ends_with("-->") => {
            Some(start..next_header.unwrap_or(text.len()))
        }
        ThreadIssueKind::Unterminated if next_header.is_none() => Some(start..text.len()),
        _ => None,
    }
}

/// Where `--fix` keeps a torn event that started at `line`, relative to the ticket folder.
pub(super) fn torn_side_file(line: usize) -> String {
    format!("artifacts/torn-thread-line-{line}.md")
}

/// What the item and resolution checks need to know about the thread.
#[derive(Debug, Default)]
pub(super) struct ThreadFacts {
    /// Line and `to` of the last state_changed event with a readable `to`.
    pub last_state: Option<(usize, State)>,
    /// Line, author and time of the last change into `queued`.
    pub last_queue: Option<(usize, String, String)>,
    /// Line of the last `close` event.
    pub last_close: Option<usize>,
    pub first_at: Option<Timestamp>,
    pub last_at: Option<Timestamp>,
    /// The latest time of any event (what the index counts as a change, `Item::last_changed`).
    pub latest_at: Option<Timestamp>,
    /// Each event's index key, in order (`db::event_key`, the indexer's own rule).
    pub keys: Keys,
}

pub(super) fn check(id: &TicketId, rel: &str, text: &str, out: &mut Vec<Finding>) -> ThreadFacts {
    let parsed = parse_thread_headers(text);
    let loc = |line: usize| format!("{rel}:{line}");
    for issue in &parsed.issues {
        let f = match &issue.kind {
            ThreadIssueKind::MalformedHeader { reason } => Finding::error(
                "thread.malformed_header",
                format!("the event header at line {} cannot be read: {reason}", issue.line),
                "`<!-- event: KIND id: ID author: WHO at: TIME … -->` on one line; values with spaces double-quoted",
            )
            .with_fix(format!(
                "repair the header at {}; the event is skipped until then",
                loc(issue.line)
            )),
            ThreadIssueKind::Unterminated => Finding::error(
                "thread.unterminated",
                format!(
                    "the event at line {} is never closed by a `---` line (a torn append, or an edit by hand)",
                    issue.line
                ),
                "every event ends with a `---` line",
            )
            .with_fix(format!(
                "check the event at {} against what was meant to be written, then end it with a `---` line",
                loc(issue.line)
            )),
            ThreadIssueKind::EndedByNextHeader => Finding::warning(
                "thread.ended_by_next_header",
                format!(
                    "the event at line {} is not closed by a `---` line before the next event's header; it is read as ended there, as the older tool read it",
                    issue.line
                ),
                "every event ends with a `---` line",
            )
            .with_fix(format!(
                "end the event at {} with a `---` line before the next header",
                loc(issue.line)
            )),
            ThreadIssueKind::StrayText => Finding::warning(
                "thread.stray_text",
                format!("text outside any event at line {}", issue.line),
                "only events: a header comment, a `## Heading`, a body and a `---` line",
            )
            .with_fix(format!(
                "move the text at {} into a comment (`yoi ticket comment {id} -m …`) and delete it from thread.md",
                loc(issue.line)
            )),
        };
        let f = match torn_region(text, issue) {
            Some(_) => f
                .with_fix(format!(
                    "yoi ticket doctor --fix sets the torn bytes at {} aside in {} and removes them from thread.md",
                    loc(issue.line),
                    torn_side_file(issue.line)
                ))
                .with_safe_fix(SafeFix::SetAsideTorn {
                    ticket: id.to_string(),
                    line: issue.line,
                }),
            None => f,
        };
        out.push(f.with_ticket(id.as_str()).at(rel, Some(issue.line)));
    }

    let mut facts = ThreadFacts::default();
    // Every event id with its line, to find the reused ones once all are read.
    let mut ids: Vec<(&str, usize)> = Vec::with_capacity(parsed.events.len());
    let mut without_id: Vec<usize> = Vec::new();
    for (event, &line) in parsed.events.iter().zip(&parsed.lines) {
        let mut push = |f: Finding| out.push(f.with_ticket(id.as_str()).at(rel, Some(line)));
        let kind = event.kind.as_str();
        match event.author() {
            Some(a) if !a.trim().is_empty() => {}
            _ => push(
                Finding::error(
                    "thread.event_author",
                    format!("the {kind} event at line {line} has no `author`"),
                    "every event names its author",
                )
                .with_fix(format!("add `author: NAME` to the header at {}", loc(line))),
            ),
        }
        match event.get("at") {
            None => push(
                Finding::error(
                    "thread.event_at",
                    format!("the {kind} event at line {line} has no `at`"),
                    "every event carries its UTC time, e.g. `at: 2026-11-29T10:00:00Z`",
                )
                .with_fix(format!("add `at: TIME` to the header at {}", loc(line))),
            ),
            Some(v) => match Timestamp::parse(v) {
                Ok(t) => {
                    facts.first_at = facts.first_at.or(Some(t));
                    facts.last_at = Some(t);
                    facts.latest_at = facts.latest_at.max(Some(t));
                }
                Err(e) => push(
                    Finding::error(
                        "thread.event_at",
                        format!("the {kind} event at line {line} has `at: {v}`: {e}"),
                        "an RFC 3339 UTC time, e.g. `at: 2026-11-29T10:00:00Z`",
                    )
                    .with_fix(format!("correct `at` in the header at {}", loc(line))),
                ),
            },
        }
        match event.id() {
            None => without_id.push(line),
            Some(eid) => ids.push((eid, line)),
        }
        if event.kind == EventKind::StateChanged {
            let mut problems = Vec::new();
            let mut to = None;
            for key in ["from", "to", "reason"] {
                match event.get(key) {
                    None => problems.push(format!("`{key}` is missing")),
                    Some(v) if v.trim().is_empty() => problems.push(format!("`{key}` is empty")),
                    Some(v) if key != "reason" => {
                        let read = match v.parse::<State>() {
                            Ok(s) => Some(s),
                            Err(_) => State::from_older(v).inspect(|s| {
                                push(
                                    Finding::warning(
                                        "thread.older_state",
                                        format!(
                                            "the state_changed event at line {line} names the older state `{key}: {v}`, read as {s}"
                                        ),
                                        "older trees used `intake` before `planning`; the text is kept as written",
                                    )
                                    .with_fix("nothing to do".to_string()),
                                )
                            }),
                        };
                        match read {
                            Some(s) if key == "to" => to = Some(s),
                            Some(_) => {}
                            None => problems.push(format!("`{key}: {v}` is not a state")),
                        }
                    }
                    Some(_) => {}
                }
            }
            if !problems.is_empty() {
                push(
                    Finding::error(
                        "thread.state_changed_fields",
                        format!(
                            "the state_changed event at line {line}: {}",
                            problems.join(", ")
                        ),
                        "state_changed events carry `from` and `to` (ticket states) and a `reason`",
                    )
                    .with_fix(format!("complete the header at {}", loc(line))),
                );
            }
            if let Some(to) = to {
                facts.last_state = Some((line, to));
                if to == State::Queued {
                    facts.last_queue = Some((
                        line,
                        event.author().unwrap_or("").to_string(),
                        event.get("at").unwrap_or("").to_string(),
                    ));
                }
            }
        }
        if event.kind == EventKind::Close {
            facts.last_close = Some(line);
        }
    }
    // Sorted by id, then line: each reuse follows the first use of its id.
    ids.sort_unstable();
    for pair in ids.chunk_by(|a, b| a.0 == b.0) {
        let (eid, first) = pair[0];
        for &(_, line) in &pair[1..] {
            out.push(
                Finding::error(
                    "thread.duplicate_id",
                    format!("the event at line {line} reuses id {eid} of the event at line {first}"),
                    "every event id is unique (the index and outbox deduplicate by it)",
                )
                .with_fix(format!(
                    "if the event at {} is a copy of the one at line {first}, delete it; otherwise give it a new ULID",
                    loc(line)
                ))
                .with_ticket(id.as_str())
                .at(rel, Some(line)),
            );
        }
    }
    if let Some(&first) = without_id.first() {
        out.push(
            Finding::warning(
                "thread.event_id",
                format!(
                    "{} of {} events have no `id` (the first at line {first}): written by the older format",
                    without_id.len(),
                    parsed.events.len()
                ),
                "every event carries a unique `id`; older events without one are read as they are",
            )
            .with_ticket(id.as_str())
            .at(rel, Some(first))
            .with_fix("nothing to do: events yoi writes carry ids, and older ones are kept as written"),
        );
    }
    for (i, e) in parsed.events.iter().enumerate() {
        facts.keys.push(id, i, e.id());
    }
    facts
}

/// A thread's event keys, in order, in one buffer: a large tree has over a hundred thousand
/// events, and a string each was a tenth of doctor's allocations.
#[derive(Debug, Default)]
pub(super) struct Keys {
    /// Each key followed by `\n`. A key is an event id or `legacy:<ticket>:<position>`; an id
    /// is read from one header line, so it never holds a line break.
    text: String,
}

impl Keys {
    fn push(&mut self, ticket: &TicketId, position: usize, event_id: Option<&str>) {
        self.text
            .push_str(&yoi_db::event_key_of(ticket, position, event_id));
        self.text.push('\n');
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.text.split_terminator('\n')
    }

    /// The keys as [`Keys::from_text`] takes them back.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn from_text(text: String) -> Keys {
        Keys { text }
    }
}
