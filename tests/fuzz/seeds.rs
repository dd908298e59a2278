//! Seed corpora: a few realistic files per format written here, plus every file of that format
//! in the repository's fixture trees (the 60-ticket older-format tree of yoi-cli, the legacy
//! tree of yoi-store, yoi-core's golden files, the built-in skills) when they are present. The
//! fixture files are read once per run, in sorted order, so a seed names the same inputs on
//! every machine with the same checkout.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Ticket folders of the fixture trees, sorted.
fn ticket_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for tree in [
        "crates/yoi-cli/tests/fixtures/older-tree",
        "crates/yoi-store/tests/fixtures/legacy-tree",
    ] {
        let Ok(entries) = std::fs::read_dir(repo().join(tree)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        dirs.extend(found);
    }
    dirs
}

/// `inline` followed by the file at `rel` (if any) of every fixture ticket and the `extra` files.
fn collect(inline: &[&str], rel: Option<&str>, extra: &[&str]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = inline.iter().map(|s| s.as_bytes().to_vec()).collect();
    if let Some(rel) = rel {
        for dir in ticket_dirs() {
            if let Ok(bytes) = std::fs::read(dir.join(rel)) {
                out.push(bytes);
            }
        }
    }
    for path in extra {
        if let Ok(bytes) = std::fs::read(repo().join(path)) {
            out.push(bytes);
        }
    }
    out
}

pub fn item_md() -> Vec<Vec<u8>> {
    collect(
        &[
            "---\ntitle: Add a retry budget\nstate: planning\ncreated_at: 2026-11-29T10:00:00Z\nupdated_at: 2026-11-29T10:00:00Z\n---\n\n## Intent\nRetry failed acceptances a bounded number of times.\n\n## Acceptance criteria\n- `cargo test -p yoi-engine` passes\n\n## Validation\n- `cargo test -p yoi-engine`\n",
            "---\ntitle: 'quoted: title'\nstate: queued\ncreated_at: '2026-11-29T10:00:00Z'\nupdated_at: '2026-11-29T10:05:00Z'\nreadiness: implementation_ready\nrisk_flags: [schema, security]\nqueued_by: alice\nqueued_at: '2026-11-29T10:05:00Z'\ntarget_ref: main\nflow: coder-review\npriority: 2\ncustom_key: {nested: [1, 2, 3]}\n---\nBody with --- inside\n---\nand a rule.\n",
            "\u{feff}---\r\ntitle: \"crlf and bom\"\r\nworkflow_state: in_progress\r\nstatus: open\r\nref_selector: develop\r\nassignee: null\r\nlabels:\r\n  - a\r\n  - b\r\n---\r\n",
            "---\ntitle: >-\n  folded\n  title\nstate: done\ncreated_at: 2026-01-01T00:00:00.123456789+09:00\nupdated_at: 2026-01-01T00:00:00Z\nbase: &base {a: 1}\nderived:\n  <<: *base\n  b: 2\n---\n",
            "---\n---\n",
        ],
        Some("item.md"),
        &[
            "crates/yoi-core/tests/golden/item-legacy.md",
            "crates/yoi-core/tests/golden/item-modern.md",
            "crates/yoi-core/tests/golden/item-legacy.rewritten.md",
        ],
    )
}

pub fn thread_md() -> Vec<Vec<u8>> {
    collect(
        &[
            "<!-- event: create id: 01JDZ0000000000000000000AA author: alice at: 2026-11-29T10:00:00Z -->\n\n## Created\n\nCreated.\n\n---\n\n<!-- event: comment author: bob at: 2026-11-29T10:01:00Z op: op-1 -->\n\n## Comment\n\nA body with a rule\n\n---\n\nstill the body.\n\n---\n",
            "<!-- event: state_changed author: yoi at: 2026-11-29T10:02:00Z from: ready to: queued reason: \"has \\\"quotes\\\" and -- dashes\" -->\n\n## State changed\n\nQueued.\n\n---\n\n<!-- event: decision author: yoi-orchestrator at: 2026-11-29T10:03:00Z -->\n\n## Decision\n\n```json\n{\"kind\":\"route\",\"decision\":\"accept\"}\n```\n\n---\n",
            "<!-- event: comment author: a at: 2026-11-29T10:00:00Z -->\r\n\r\n## Comment\r\n\r\ntorn append, no rule\r\n<!-- event: future_kind author: b at: 2026-11-29T10:00:01Z extra: value -->\n\nbody\n",
            "<!-- event: review author: r at: 2026-11-29T10:00:00Z verdict: approve commit: 0123456789abcdef0123456789abcdef01234567 -->\n\n## Review\n\n\\---\n\\<!-- event: escaped -->\n\n---\n",
            "",
        ],
        Some("thread.md"),
        &["crates/yoi-core/tests/golden/thread-legacy.md"],
    )
}

pub fn relations_json() -> Vec<Vec<u8>> {
    collect(
        &[
            r#"{"version":1,"relations":[]}"#,
            r#"{
  "version": 1,
  "relations": [
    {"ticket_id": "00001KVW2N4F4", "kind": "depends_on", "target": "00001KVVKTDG2", "note": "Builds on it.", "author": "yoi ticket", "at": "2026-06-23T10:17:59Z"},
    {"ticket_id": "00001KVW2N4F4", "kind": "related", "target": "00001KVVKTDG3", "author": "alice", "at": "2026-06-23T10:18:00.5+02:00"},
    {"ticket_id": "00001KVW2N4F4", "kind": "supersedes", "target": "00001KVVKTDG4", "note": null, "author": "b", "at": "2026-06-23T10:18:01Z"},
    {"ticket_id": "00001KVW2N4F4", "kind": "duplicate_of", "target": "00001KVVKTDG5", "author": "c\u00e9", "at": "2026-06-23T10:18:02Z"}
  ]
}
"#,
            r#"{"version":2,"relations":[{"ticket_id":"00001KVW2N4F4","kind":"blocks","target":"00001KVW2N4F4","author":"x","at":"2026-06-23T10:17:59Z"}]}"#,
        ],
        Some("artifacts/relations.json"),
        &[],
    )
}

pub fn plan_jsonl() -> Vec<Vec<u8>> {
    collect(
        &[
            concat!(
                r#"{"id":"p1","ticket_id":"00001KVQNQA81","kind":"before","related_ticket":"00001KVQNQA82","note":"first","author":"yoi-orchestrator","at":"2026-06-22T04:30:30Z"}"#,
                "\n",
                r#"{"id":"p2","ticket_id":"00001KVQNQA81","kind":"waiting_capacity_note","note":"All coder slots are busy.","author":"yoi-orchestrator","at":"2026-06-22T04:30:31Z"}"#,
                "\n\n",
                r#"{"id":"p3","ticket_id":"00001KVQNQA81","kind":"accepted_plan","accepted_plan":{"summary":"s","branch":"work/x","worktree":"<repo>/.worktree/x","role_plan":"coder then reviewer"},"author":"o","at":"2026-06-22T04:31:37Z"}"#,
                "\r\n",
                r#"{"id":"p4","ticket_id":"00001KVQNQA81","kind":"do_not_parallelize","related_ticket":"00001KVQNQA83","author":"o","at":"2026-06-22T04:31:38Z"}"#,
                "\n",
            ),
            r#"{"id":"p5","ticket_id":"00001KVQNQA81","kind":"conflicts_with","author":"o","at":"2026-06-22T04:31:38Z"}"#,
        ],
        Some("artifacts/orchestration-plan.jsonl"),
        &[],
    )
}

pub fn skill_md() -> Vec<Vec<u8>> {
    collect(
        &[
            "---\nname: fuzz-skill\ndescription: Does one thing well. Use when the fuzzer asks.\n---\n\n# Fuzz skill\n\nSee [the reference](references/REFERENCE.md).\n",
            "---\nname: fuzz-skill\ndescription: >-\n  A folded description\n  over two lines.\nlicense: MIT\ncompatibility: Requires git.\nallowed-tools: Bash(git:*) Read\nmetadata:\n  author: someone\n  version: \"1.0\"\n---\nBody.\n",
            "---\nname: 2024\ndescription: yes\nmetadata: {a: &x 1, b: *x}\n---\n",
            "---\r\nname: Bad_Name\r\ndescription: ''\r\nunknown-field: 1\r\n---\r\n\r\nBody\r\n",
        ],
        None,
        &[
            "crates/yoi-skills/builtin/agent-skills-format/SKILL.md",
            "crates/yoi-skills/builtin/yoi-review/SKILL.md",
            "crates/yoi-skills/builtin/yoi-ticket-work/SKILL.md",
        ],
    )
}

pub fn flow_yaml() -> Vec<Vec<u8>> {
    vec![
        concat!(
            "schema_version: 1\nname: quick\ntitle: Implement and review\nmax_rounds: 2\nsteps:\n",
            "  - id: implement\n    role: coder\n    output: commit\n    timeout: 30m\n",
            "    prompt: |\n      Keep {ticket} small.\n    on_failure: { retry: 1 }\n",
            "  - id: review\n    role: reviewer\n    output: verdict\n    on_failure: escalate\n",
            "  - id: merge\n    role: service\n    output: merge\n",
        )
        .as_bytes()
        .to_vec(),
        concat!(
            "schema_version: 1\nname: quick\ntitle: Implement, verify, review, merge\nsteps:\n",
            "  - id: implement\n    role: coder\n    output: commit\n",
            "  - id: verify\n    role: verifier\n    output: checks\n    timeout: 2h\n",
            "    on_failure: return_to_planning\n",
            "  - id: review\n    role: reviewer\n    output: verdict\n",
            "    prompt: \"Review {ticket} at {commit}.\"\n",
            "  - id: merge\n    role: service\n    output: merge\n",
        )
        .as_bytes()
        .to_vec(),
    ]
}

pub fn workspace_toml() -> Vec<Vec<u8>> {
    vec![
        yoi_store::config::default_file("main", "seed").into_bytes(),
        concat!(
            "[workspace]\ntickets_dir = \".yoi/tickets\"\nworktree_dir = '.worktree'\n",
            "default_target = \"develop\"\nlock_timeout_secs = 5\n\n",
            "[principal]\nname = \"alice\"\n\n[roles]\ncoder = 2\nverifier = 1\nreviewer = 0\n\n",
            "[database]\nurl = \"postgres://u:p@127.0.0.1:5432/yoi\"\n\n[server]\nlisten = \"[::1]:7311\"\n\n",
            "[skills]\nextra_dirs = [\"skills\", \"../shared\"]\n\n",
            "[router]\nenabled = false\nmax_inprogress = 8\nretry_backoff_ms = 500\n\n",
            "[pods]\nlease_secs = 60\nheartbeat_secs = 20\nkill_grace_secs = 10\n\n",
            "[pods.agent]\ncoder = \"aider\"\nreviewer = \"claude\"\n\n",
            "[flow]\nmax_rounds = 3\ndelete_branch = true\ndefault = \"coder-review\"\nauto_close = true\n\n",
            "[agents.aider]\nprogram = \"/opt/aider/bin/aider\"\n",
            "argv = [\"{program}\", \"--message-file\", \"{prompt_file}\", \"--yes-always\"]\n",
            "stdin = \"null\"\nenv_passthrough = [\"OPENAI_API_KEY\", \"AIDER_*\"]\n",
            "env = { NO_COLOR = \"1\" }\ntimeout_secs = 3600\noutput = \"text\"\n",
            "result_file = \"{run_dir}/last-message.txt\"\nmodel = \"gpt-4o\"\n",
            "model_argv = [\"--model\", \"{model}\"]\n\n",
            "[prices.\"gpt-4o\"]\ninput = 2.5\noutput = 10.0\n",
        )
        .as_bytes()
        .to_vec(),
        b"".to_vec(),
        b"workspace.tickets_dir = \"t\"\nserver = { listen = \"0.0.0.0:1\" }\n# comment\n".to_vec(),
        b"[workspace]\ntickets_dir = \"\"\"\nmulti\nline\"\"\"\ndefault_target = 'x'\n[[agents]]\n".to_vec(),
    ]
}

/// Request bodies of the HTTP API, one or more per body type.
pub fn api_json() -> Vec<Vec<u8>> {
    [
        r###"{"title":"Add a retry budget","body":"## Intent\nRetry.\n","depends_on":["00001KVVKTDG2","KTDG3"]}"###,
        r#"{"title":"t"}"#,
        r#"{"title":null,"body":"new body"}"#,
        r#"{"kind":"comment","body":"Looks good.\n\n---\n<!-- event: x -->"}"#,
        r#"{"body":"default kind"}"#,
        r#"{"reason":"implementation target validated","resolution":"fixed","expected_state":"ready"}"#,
        r#"{"expected_state":"inprogress"}"#,
        r#"{"kind":"depends_on","target":"00001KVVKTDG2","note":"Builds on it."}"#,
        r#"{"kind":"before","related":"00001KVVKTDG2","note":null}"#,
        r#"{"kind":"waiting_capacity"}"#,
        r#"{"name":"coder-1","host":"box","pid":4242,"profile":"claude"}"#,
        r#"{"pod":"coder-1-abc","wait_ms":30000}"#,
        r#"{"pod":"coder-1-abc","fence":7}"#,
        r#"{"pod":"coder-1-abc","fence":7,"report":{"outcome":"done","summary":"s","commit":"0123456789abcdef0123456789abcdef01234567","agent_commits":2,"usage":{"wall_ms":10,"tokens_in":1,"tokens_out":2,"tokens_cached":0,"cost_usd":0.01},"log":".yoi/local/logs/x.log","exit_code":0,"verdict":"request_changes","findings":["a.rs:1 bug"],"checks":[{"command":"cargo test","exit_code":0,"duration_ms":5,"timed_out":false,"log":null}],"manual_checks":["look"]}}"#,
        r#"{"pod":"p","fence":-1,"reason":"agent crashed","retryable":false,"report":{"outcome":"failed"}}"#,
        r#"{"pod":"p","fence":9223372036854775807,"text":"line 1\nline 2\u0000\ud83e\udd80"}"#,
        r#"{"ticket":"KTDG2","assignment":"01JDZ0000000000000000000AA"}"#,
        r#"{"name":"fuzz-skill","files":{"SKILL.md":"---\nname: fuzz-skill\ndescription: d\n---\nbody\n","references/REFERENCE.md":"x"}}"#,
        r#"{"reason":"not needed"}"#,
        r#"{"intent":"Retry failed acceptances.","binding_decisions":["keep the API"],"acceptance_criteria":["tests pass"],"implementation_latitude":"any","escalate_if":["schema change"],"validation":["cargo test"],"code_map":["crates/yoi-engine/src/routing"],"critical_risks":["double accept"],"write_scope":["crates/yoi-engine/**"]}"#,
        r#"{"intent":"x","unknown":1}"#,
        "  \n\t",
        "",
        "[1,2]",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}
