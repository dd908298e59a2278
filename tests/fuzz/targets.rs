//! One fuzz target per format of user-controlled bytes, each calling the public function the
//! store, the skills catalog or the server calls on those bytes, then what the readers do next
//! with an accepted value (render it, read the brief out of a body, build the relation graph).
//! A target returns whether the parser accepted the input; it panics only on a bug.
//!
//! Besides "never panics", targets check the round trips the modules document: a rendered
//! `item.md`, relations file or plan line parses again to the same value, and an event that
//! validates reads back unchanged from its rendering (`yoi_core::thread`'s claim). The one
//! tolerated exception is named in [`item_md`].
//!
//! Text formats get the input as text the way the store reads it: the store refuses bytes that
//! are not UTF-8 before any parser sees them (`yoi_store::fsutil::read_opt`), so such inputs are
//! converted lossily here to keep the mutant useful. `SKILL.md` and API bodies are parsed from
//! the raw bytes, as the catalog and the server do.

use std::borrow::Cow;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use yoi_core::packet::{validation_checks, IntentPacket};
use yoi_core::plan::parse_plan;
use yoi_core::relation::{RelationGraph, RelationsFile};
use yoi_core::thread::{parse_thread, render_thread};
use yoi_core::{decision, yaml, Item, TicketId};
use yoi_server::routes::{pods, routing, skills, tickets};

use super::seeds;

/// A format to fuzz.
pub struct Target {
    pub name: &'static str,
    /// The functions it calls, for the report.
    pub entry: &'static str,
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Keys and values of the format, for the mutator.
    pub dict: &'static [&'static str],
    pub run: fn(&[u8]) -> bool,
}

static TARGETS: [Target; 8] = [
    Target {
        name: "item.md",
        entry: "yoi_core::Item::parse, Item::render, IntentPacket::from_body",
        seeds: seeds::item_md,
        dict: &[
            "title: ",
            "state: ",
            "created_at: ",
            "updated_at: ",
            "readiness: ",
            "risk_flags: ",
            "queued_by: ",
            "queued_at: ",
            "target_ref: ",
            "flow: ",
            "priority: ",
            "repository_id: ",
            "ref_selector: ",
            "assignee: ",
            "workflow_state: ",
            "status: ",
            "id: ",
            "slug: ",
            "kind: ",
            "labels: ",
            "action_required: ",
            "planning",
            "ready",
            "queued",
            "inprogress",
            "in_progress",
            "done",
            "closed",
            "open",
            "2026-11-29T10:00:00Z",
            "2026-02-30T25:61:61Z",
            "+275760-09-13T00:00:00Z",
            "## Intent\n",
            "## Acceptance criteria\n",
            "## Validation\n",
            "## Write scope\n",
            "## Binding decisions\n",
            "- `cargo test`\n",
            "<!-- -->",
        ],
        run: item_md,
    },
    Target {
        name: "thread.md",
        entry: "yoi_core::thread::parse_thread, render_thread, decision::read_decision",
        seeds: seeds::thread_md,
        dict: &[
            "<!-- event: ",
            " -->",
            "\n\n---\n\n",
            "\\---",
            "\\<!-- event:",
            " author: ",
            " at: ",
            " id: ",
            " op: ",
            " from: ",
            " to: ",
            " reason: ",
            "\"a b\"",
            "\"\\\"\"",
            "\"\\\\\"",
            "--\\>",
            "create",
            "comment",
            "intake_summary",
            "decision",
            "plan",
            "state_changed",
            "implementation_report",
            "verification",
            "review",
            "merge",
            "assignment",
            "attention",
            "retry",
            "item_edit",
            "relation_changed",
            "close",
            "2026-11-29T10:00:00Z",
            "## ",
            "```json\n{\"kind\":\"route\"}\n```\n",
        ],
        run: thread_md,
    },
    Target {
        name: "relations.json",
        entry: "yoi_core::relation::RelationsFile::parse, render, RelationGraph",
        seeds: seeds::relations_json,
        dict: &[
            "\"version\"",
            "\"relations\"",
            "\"ticket_id\"",
            "\"kind\"",
            "\"target\"",
            "\"note\"",
            "\"author\"",
            "\"at\"",
            "\"depends_on\"",
            "\"blocks\"",
            "\"related\"",
            "\"supersedes\"",
            "\"duplicate_of\"",
            "\"00001KVW2N4F4\"",
            "\"00001KVVKTDG2\"",
            "\"01JDZ0000000000000000000AA\"",
            "\"2026-06-23T10:17:59Z\"",
            "1",
            "2",
            "4294967296",
            "{",
            "}",
            "[",
            "]",
            ",",
        ],
        run: relations_json,
    },
    Target {
        name: "plan.jsonl",
        entry: "yoi_core::plan::parse_plan, PlanRecord::render_line",
        seeds: seeds::plan_jsonl,
        dict: &[
            "\"id\"",
            "\"ticket_id\"",
            "\"kind\"",
            "\"related_ticket\"",
            "\"note\"",
            "\"accepted_plan\"",
            "\"summary\"",
            "\"branch\"",
            "\"worktree\"",
            "\"role_plan\"",
            "\"author\"",
            "\"at\"",
            "\"before\"",
            "\"after\"",
            "\"blocked_by\"",
            "\"blocks\"",
            "\"conflicts_with\"",
            "\"do_not_parallelize\"",
            "\"waiting_capacity\"",
            "\"waiting_capacity_note\"",
            "\"00001KVQNQA81\"",
            "\"00001KVQNQA82\"",
            "\"2026-06-22T04:30:30Z\"",
            "{",
            "}",
            ",",
        ],
        run: plan_jsonl,
    },
    Target {
        name: "SKILL.md",
        entry: "yoi_skills::lint_skill_md (parse_skill_md + field and body checks)",
        seeds: seeds::skill_md,
        dict: &[
            "name: ",
            "description: ",
            "license: ",
            "compatibility: ",
            "allowed-tools: ",
            "metadata:\n  ",
            "fuzz-skill",
            "Fuzz-Skill",
            "-fuzz",
            "fuzz--skill",
            "references/",
            "[link](../outside.md)",
            "](scripts/run.sh)",
            "Bash(git:*)",
        ],
        run: skill_md,
    },
    Target {
        name: "flow.yaml",
        entry: "yoi_core::flow::parse (+ render_prompt of every step)",
        seeds: seeds::flow_yaml,
        dict: &[
            "schema_version: ",
            "name: ",
            "title: ",
            "max_rounds: ",
            "steps:\n",
            "  - id: ",
            "    role: ",
            "    output: ",
            "    timeout: ",
            "    prompt: |\n      ",
            "    on_failure: ",
            "{ retry: 2 }",
            "escalate",
            "return_to_planning",
            "commit",
            "checks",
            "verdict",
            "merge",
            "service",
            "integrate",
            "merge-verify",
            "{ticket}",
            "30m",
            "2h",
            "90s",
            "&a ",
            "*a",
        ],
        run: flow_yaml,
    },
    Target {
        name: "workspace.toml",
        entry: "yoi_store::config::Config::parse",
        seeds: seeds::workspace_toml,
        dict: &[
            "[workspace]\n",
            "[principal]\n",
            "[roles]\n",
            "[database]\n",
            "[server]\n",
            "[skills]\n",
            "[router]\n",
            "[pods]\n",
            "[pods.agent]\n",
            "[flow]\n",
            "[agents.x]\n",
            "[prices.\"m\"]\n",
            "[[",
            "]]",
            " = ",
            "\"\"\"",
            "'''",
            "tickets_dir",
            "worktree_dir",
            "default_target",
            "lock_timeout_secs",
            "listen",
            "extra_dirs",
            "max_inprogress",
            "lease_secs",
            "argv",
            "env",
            "timeout_secs",
            "1979-05-27T07:32:00Z",
            "0x",
            "0o",
            "0b",
            "_",
            "+inf",
            "nan",
            "\"../x\"",
            "\"/abs\"",
            "\"127.0.0.1:0\"",
        ],
        run: workspace_toml,
    },
    Target {
        name: "api-json",
        entry: "the API's Body<T> extractor (object check + serde_json::from_slice) for every \
                request body type of yoi_server::routes, then the packet route's field check",
        seeds: seeds::api_json,
        dict: &[
            "\"title\"",
            "\"body\"",
            "\"depends_on\"",
            "\"kind\"",
            "\"reason\"",
            "\"resolution\"",
            "\"expected_state\"",
            "\"target\"",
            "\"related\"",
            "\"note\"",
            "\"name\"",
            "\"host\"",
            "\"pid\"",
            "\"profile\"",
            "\"pod\"",
            "\"wait_ms\"",
            "\"fence\"",
            "\"report\"",
            "\"outcome\"",
            "\"retryable\"",
            "\"text\"",
            "\"ticket\"",
            "\"assignment\"",
            "\"files\"",
            "\"SKILL.md\"",
            "\"intent\"",
            "\"validation\"",
            "\"write_scope\"",
            "\"ready\"",
            "\"done\"",
            "\"approve\"",
            "null",
            "true",
            "{",
            "}",
            "[",
            "]",
            ",",
        ],
        run: api_json,
    },
];

pub fn all() -> &'static [Target] {
    &TARGETS
}

pub fn by_name(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn item_md(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let Ok(item) = Item::parse(&text) else {
        return false;
    };
    let _ = (
        item.effective_target_ref(),
        item.legacy_keys(),
        item.unknown_keys(),
    );
    let rendered = item.render();
    let again = match Item::parse(&rendered) {
        Ok(again) => again,
        // The one known gap: rendering writes aliases out (and escapes such as `\x5b` as the
        // characters), so a frontmatter within the bracket bound can render past it.
        Err(e) if rendered_brackets(&rendered) > yaml::MAX_BRACKETS => {
            assert!(e.reason.contains("`[` and `{`"), "{e}");
            return true;
        }
        Err(e) => panic!("a rendered item.md does not parse: {e}\n{rendered}"),
    };
    assert_eq!(
        again.render(),
        rendered,
        "rendering a parsed item.md is not stable"
    );
    let body = item.body_text();
    let packet = IntentPacket::from_body(body);
    let _ = (
        packet.completeness(),
        packet.content_hash(),
        validation_checks(body),
    );
    let _ = packet.apply_to_body(body);
    true
}

/// `[` and `{` in the frontmatter of a rendered item.md.
fn rendered_brackets(rendered: &str) -> usize {
    let end = rendered[3..]
        .find("\n---\n")
        .map_or(rendered.len(), |i| i + 3);
    rendered[..end]
        .bytes()
        .filter(|b| matches!(b, b'[' | b'{'))
        .count()
}

fn thread_md(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let parsed = parse_thread(&text);
    let mut valid = Vec::new();
    for e in &parsed.events {
        let _ = (e.id(), e.author(), e.at(), e.op());
        let _ = (
            decision::read_decision(&e.body),
            decision::parse_kind(&e.body),
        );
        if e.validate().is_ok() {
            valid.push(e.clone());
        }
    }
    let rendered = render_thread(&valid);
    let again = parse_thread(&rendered);
    assert!(
        again.issues.is_empty(),
        "a rendered thread has issues: {:?}\n{rendered}",
        again.issues
    );
    assert_eq!(
        again.events.len(),
        valid.len(),
        "events lost in\n{rendered}"
    );
    for (a, b) in valid.iter().zip(&again.events) {
        assert_eq!(
            (&a.kind, &a.attrs, &a.body),
            (&b.kind, &b.attrs, &b.body),
            "an event that validates does not read back unchanged from\n{rendered}"
        );
    }
    parsed.issues.is_empty()
}

/// The owner the file names (its first `ticket_id`), so fixture files pass the owner check;
/// else a fixed id.
fn owner(text: &str) -> TicketId {
    let fixed = || TicketId::parse("00001KVW2N4F4").expect("a valid id");
    let Some(at) = text.find("\"ticket_id\"") else {
        return fixed();
    };
    let rest = &text[at + 11..];
    let Some(open) = rest.find('"') else {
        return fixed();
    };
    let value = rest[open + 1..].split('"').next().unwrap_or("");
    TicketId::parse(value).unwrap_or_else(|_| fixed())
}

fn relations_json(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let Ok(file) = RelationsFile::parse(&text, &owner(&text)) else {
        return false;
    };
    let owner = &file.relations.first().map(|r| r.ticket_id.clone());
    let rendered = file.render();
    if let Some(owner) = owner {
        let again = RelationsFile::parse(&rendered, owner)
            .unwrap_or_else(|e| panic!("rendered relations do not parse: {e}\n{rendered}"));
        let mut sorted = file.clone();
        sorted.sort();
        assert_eq!(again, sorted, "relations changed in a round trip");
    }
    let graph = RelationGraph::new(&file.relations);
    let _ = graph.cycles(8);
    true
}

fn plan_jsonl(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let owner = owner(&text);
    let Ok(records) = parse_plan(&text, &owner) else {
        return false;
    };
    for r in &records {
        let line = r.render_line();
        let again = parse_plan(&line, &owner)
            .unwrap_or_else(|e| panic!("a rendered plan line does not parse: {e}\n{line}"));
        assert_eq!(
            again.as_slice(),
            std::slice::from_ref(r),
            "plan record round trip"
        );
    }
    true
}

/// The `name:` the frontmatter gives, so the name-matches-folder check passes for most inputs.
fn skill_dir(bytes: &[u8]) -> String {
    let text = text(bytes);
    text.lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(|n| n.trim().trim_matches(['"', '\'']).to_string())
        .unwrap_or_else(|| "fuzz-skill".into())
}

fn skill_md(bytes: &[u8]) -> bool {
    let linted = yoi_skills::lint_skill_md(&skill_dir(bytes), bytes);
    let _ = linted.meta.allowed_tools_list();
    linted.is_valid()
}

fn flow_yaml(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let Ok(flow) = yoi_core::flow::parse(&text, "quick", &["coder", "verifier", "reviewer"]) else {
        return false;
    };
    for step in &flow.steps {
        if let Some(prompt) = &step.prompt {
            let _ = yoi_core::flow::render_prompt(prompt, &[("ticket", "01J"), ("step", &step.id)]);
        }
    }
    true
}

fn workspace_toml(bytes: &[u8]) -> bool {
    let text = text(bytes);
    let Ok(config) = yoi_store::config::Config::parse(&text, Path::new(".yoi/workspace.toml"))
    else {
        return false;
    };
    let _ = (config.tickets_prefix(), config.pods.agent_for("verifier"));
    let _ = serde_json::to_string(&config).expect("a parsed config serializes");
    true
}

/// What `yoi_server::extract::Body<T>` does with the bytes of a request body.
fn body<T: DeserializeOwned + Default>(bytes: &[u8]) -> Option<T> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

/// What the packet route does with its object: refuse unknown fields, then read the packet.
fn packet(fields: Map<String, Value>) -> Option<IntentPacket> {
    let Ok(Value::Object(known)) = serde_json::to_value(IntentPacket::default()) else {
        return None;
    };
    if fields.keys().any(|k| !known.contains_key(k)) {
        return None;
    }
    serde_json::from_value(Value::Object(fields)).ok()
}

fn api_json(bytes: &[u8]) -> bool {
    let mut accepted = 0;
    let mut take = |ok: bool| accepted += ok as usize;
    take(body::<tickets::CreateBody>(bytes).is_some());
    take(body::<tickets::EditBody>(bytes).is_some());
    take(body::<tickets::CommentBody>(bytes).is_some());
    if let Some(b) = body::<tickets::TransitionBody>(bytes) {
        let _ = yoi_store::ops::TransitionRequest::from(b);
        take(true);
    }
    take(body::<tickets::RelationBody>(bytes).is_some());
    take(body::<tickets::PlanBody>(bytes).is_some());
    take(body::<pods::RegisterBody>(bytes).is_some());
    take(body::<pods::ClaimBody>(bytes).is_some());
    take(body::<pods::HeartbeatBody>(bytes).is_some());
    if let Some(b) = body::<pods::CompleteBody>(bytes) {
        let _ = b.report.used_a_round();
        take(true);
    }
    take(body::<pods::FailBody>(bytes).is_some());
    take(body::<pods::LogBody>(bytes).is_some());
    take(body::<skills::ActivateBody>(bytes).is_some());
    if let Some(b) = body::<skills::ProposeBody>(bytes) {
        if let Some(skill) = b.files.get("SKILL.md") {
            let _ = yoi_skills::lint_skill_md(&b.name, skill.as_bytes());
        }
        take(true);
    }
    take(body::<skills::RejectBody>(bytes).is_some());
    take(body::<routing::RetryBody>(bytes).is_some());
    if let Some(p) = body::<Map<String, Value>>(bytes).and_then(packet) {
        let _ = (p.render_markdown(), p.to_canonical_json(), p.completeness());
        take(true);
    }
    accepted > 0
}
