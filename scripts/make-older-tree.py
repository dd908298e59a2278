#!/usr/bin/env python3
"""Write a tickets folder as the older file-based yoi left it, for conformance tests.

    python3 scripts/make-older-tree.py crates/yoi-cli/tests/fixtures/older-tree

Deterministic (no clock, no randomness): the same 60 tickets every time. It covers every pattern
in ../shared/reference/older-format-and-lessons.md — the format summary (13-character ids,
single-quoted YAML strings, `assignee: null`, `repository_id`/`ref_selector`, `risk_flags`,
`readiness`, `queued_by`/`queued_at`, tolerated `priority`, obsolete `id`/`slug`/`status`/
`workflow_state`/`kind`/`labels`, Japanese headings, events without ids, bodies whose `---` rules
are not escaped, legacy `review` and `status_changed` events, unknown kinds such as `migration`
and `fix`, `item_edit`, version-1 `relations.json`, `orchestration-plan.jsonl` with
`blocked_by`/`waiting_capacity_note`/`accepted_plan` records, `artifacts/.gitkeep`, review notes,
`resolution.md` (and closed tickets without one), the root `.ticket-backend.lock`) and the three
classes found in a real 352-ticket history: unquoted attribute values with spaces, the older
`intake` state in `state_changed` events, and `close` events that embed a whole item.md.
"""

import json
import os
import shutil
import sys

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
COUNT = 60
BASE_MS = 1_782_000_000_000  # 2026-06-21


def ticket_id(ms):
    out = ""
    for _ in range(13):
        out = ALPHABET[ms % 32] + out
        ms //= 32
    return out


def ts(minutes):
    """A UTC second-precision time `minutes` after the tree's start."""
    total = 21 * 24 * 60 + minutes  # days since 2026-06-00
    day, rest = divmod(total, 24 * 60)
    hour, minute = divmod(rest, 60)
    month, day = (6, day) if day <= 30 else (7, day - 30)
    return f"2026-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{(minutes * 7) % 60:02d}Z"


def q(s):
    return "'" + s.replace("'", "''") + "'"


AREAS = ["worker-runtime", "scheduler", "web-panel", "cli", "storage", "docs"]
VERBS = ["add", "fix", "measure", "document", "refactor", "remove"]
THINGS = [
    "FS persistence feature",
    "retry budget",
    "queue lane counts",
    "start-up time",
    "lock contention",
    "ticket's thread view",
    "operator's guide",
    "relation editor",
]
STATES = ["planning", "ready", "queued", "inprogress", "done", "closed"]


def event(kind, author, at, heading, body, extra=""):
    header = f"<!-- event: {kind} author: {author} at: {at}{extra} -->"
    return f"{header}\n\n## {heading}\n\n{body}\n\n---\n"


def author(i, who):
    """Authors as the older writer left them: quoted when they hold a space, except in the
    tickets whose headers it did not quote (every fifth)."""
    if " " in who and i % 5 != 0:
        return f'"{who}"'
    return who


def item_text(i, tid, title, state, minutes, ids):
    japanese = i % 9 == 4
    lines = ["---"]
    legacy = i % 6 == 5
    if legacy:
        lines += [f"id: {q(tid)}", f"slug: {q(tid)}"]
    lines.append(f"title: {q(title)}")
    if legacy:
        lines.append(f"workflow_state: {q(state)}")
        lines.append(f"status: {q('closed' if state == 'closed' else 'open')}")
        lines.append(f"kind: {q('task')}")
        lines.append(f"labels: [{q(AREAS[i % len(AREAS)])}]")
    elif i % 11 == 7 and state == "closed":
        # The oldest files carry only `status: closed`.
        lines.append("status: 'closed'")
    else:
        lines.append(f"state: {q(state)}")
    lines.append(f"created_at: {q(ts(minutes))}")
    lines.append(f"updated_at: {q(ts(minutes + 300))}")
    lines.append("assignee: null")
    if i % 3 == 0:
        lines.append(f"readiness: {q(['implementation_ready', 'spike_needed', 'requirements_sync_needed', 'unspecified'][i % 4])}")
    if i % 4 == 1:
        lines.append(f"risk_flags: [{q('persistence')}, {q('prompt-context')}]")
    if state != "planning" and i % 2 == 0:
        lines.append(f"repository_id: {q('main')}")
        lines.append(f"ref_selector: {q('develop')}")
    if state in ("queued", "inprogress", "done", "closed") and i % 3 != 2:
        lines.append(f"queued_by: {q('workspace-panel')}")
        lines.append(f"queued_at: {q(ts(minutes + 60))}")
    if i % 10 == 3:
        lines.append(f"priority: {q('P1')}")
    lines.append("---")
    lines.append("")
    if japanese:
        lines += ["## 背景", f"{title} について。", "", "## 受け入れ条件", "- 未定"]
    else:
        lines += [
            "## Background",
            f"Operators asked for this in the {AREAS[i % len(AREAS)]} review.",
            "",
        ]
        if i % 4 == 2:
            # A Markdown rule in the body, as older bodies had.
            lines += ["---", ""]
        lines += [
            "## Requirements",
            f"- {title}.",
            "",
            "## Acceptance criteria",
            f"- `cargo test -p {AREAS[i % len(AREAS)]}` passes",
        ]
        if i % 7 == 3:
            lines += ["", "## Validation", "`cargo test --workspace`", "", "---", "", "Footer note."]
    return "\n".join(lines) + "\n"


def thread_text(i, tid, title, state, minutes, item):
    at = lambda m: ts(minutes + m)  # noqa: E731
    yoi_ticket = author(i, "yoi ticket")
    events = [
        event("create", yoi_ticket, at(0), "作成" if i % 9 == 4 else "Created", "Created by LocalTicketBackend create.")
    ]
    order = STATES.index(state)
    # The older lifecycle had `intake` before planning: a third of the tickets passed through it.
    via_intake = i % 3 == 1
    if via_intake:
        events.append(
            event("state_changed", author(i, "intake bot"), at(1), "State changed", "Intake finished.",
                  " from: intake to: planning reason: intake_done field: state")
        )
    if i % 2 == 0:
        body = "Accepted intent: the change as titled; integration out of scope."
        if i % 8 == 0:
            body += "\n\n---\n\nOut of scope: the REST handlers."
        events.append(event("intake_summary", "hare", at(2), "Intake summary", body))
    if order >= 1:
        frm = "intake" if via_intake and i % 2 == 1 else "planning"
        extra = f" from: {frm} to: ready reason: \"implementation target validated\" field: state"
        if i % 4 == 0:
            extra += f" operation_key: ticket-intake-ready:call_{i} request_fingerprint: 9c1e{i:04x} repository_id: main ref_selector: develop"
        events.append(event("state_changed", "hare", at(10), "State changed", "Marked ready.", extra))
    if i % 6 == 2:
        events.append(event("comment", author(i, "Hare Tanaka"), at(12), "Comment", "Can we keep the old flag?\n\n---\n\nAnswered in review."))
    if i % 10 == 6:
        events.append(event("item_edit", "hare", at(13), "Item updated", "Title clarified.", " field: title"))
    if order >= 2:
        events.append(event("state_changed", "workspace-panel", at(60), "State changed", "Ticket queued for Orchestrator routing.\n",
                            " from: ready to: queued reason: queued field: state"))
        kind = "waiting_capacity" if i % 5 == 2 else "implementation_ready"
        events.append(event("decision", "yoi-orchestrator", at(61), "Decision", f"Routing decision: {kind}"))
    if order >= 3:
        events.append(event("state_changed", "yoi-orchestrator", at(62), "State changed", "Accepted for implementation.\n",
                            " from: queued to: inprogress reason: orchestrator_acceptance field: state"))
        events.append(event("implementation_report", author(i, f"worker:rt{i % 3}/coder"), at(120), "Implementation report", "Done as asked."))
        if i % 3 == 0:
            events.append(event("review", "hare", at(150), "Review: request changes", "Please add a test.\n", " status: request_changes"))
        events.append(event("review", "hare", at(170), "Review: approve", "Looks good.\n", " status: approve"))
    if order >= 4:
        events.append(event("state_changed", "hare", at(200), "State changed", "Merged into develop.\n",
                            " from: inprogress to: done reason: merged_and_validated field: state"))
    if i % 12 == 5:
        events.append(event("status_changed", "hare", at(210), "Status changed", "open → open", " status: open"))
    if i % 13 == 8:
        events.append(event("migration", author(i, "migration tool"), at(220), "Migration", "Moved from the SQLite backend."))
        events.append(event("fix", "hare", at(221), "Fix", "Corrected the created_at."))
    if order >= 5:
        events.append(event("state_changed", "hare", at(250), "State changed", "Ticket closed.\n",
                            " from: done to: closed reason: closed field: state"))
        if i % 4 == 3:
            # A migration tool's close: the whole item.md, unescaped, inside the body.
            body = "Closed by the migration.\n\n" + item.rstrip("\n") + "\n"
        else:
            body = "Completed, reviewed, validated, and merged into develop.\n"
        events.append(event("close", author(i, "hare"), at(251), "完了" if i % 9 == 4 else "Closed", body, " status: closed"))
    return "\n".join(events)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "crates/yoi-cli/tests/fixtures/older-tree"
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    open(os.path.join(out, ".ticket-backend.lock"), "w").close()
    ids = [ticket_id(BASE_MS + n * 7_777_777) for n in range(COUNT)]
    for i, tid in enumerate(ids):
        # States spread over the lifecycle, most tickets finished (as in a real history).
        state = STATES[[5, 5, 4, 3, 2, 1, 0, 5, 5, 1][i % 10]]
        title = f"{AREAS[i % len(AREAS)]}: {VERBS[i % len(VERBS)]} {THINGS[i % len(THINGS)]}"
        minutes = i * 97
        d = os.path.join(out, tid)
        os.makedirs(os.path.join(d, "artifacts"))
        open(os.path.join(d, "artifacts", ".gitkeep"), "w").close()
        item = item_text(i, tid, title, state, minutes, ids)
        with open(os.path.join(d, "item.md"), "w") as f:
            f.write(item)
        with open(os.path.join(d, "thread.md"), "w") as f:
            f.write(thread_text(i, tid, title, state, minutes, item))
        if state == "closed" and i % 8 != 1:
            with open(os.path.join(d, "resolution.md"), "w") as f:
                f.write(f"Completed: {title}.\n")
        if i % 3 == 2:
            with open(os.path.join(d, "artifacts", f"review-{ts(minutes + 170)[:10]}.md"), "w") as f:
                f.write("# Review\n\nApproved after one round.\n")
        if i >= 2 and i % 4 in (0, 2):
            rel = {
                "version": 1,
                "relations": [
                    {
                        "ticket_id": tid,
                        "kind": "depends_on",
                        "target": ids[i - 2],
                        "note": "Builds on the earlier change.",
                        "author": "yoi ticket",
                        "at": ts(minutes + 5),
                    }
                ],
            }
            if i % 8 == 0:
                rel["relations"].append(
                    {"ticket_id": tid, "kind": "related", "target": ids[i - 1], "author": "hare", "at": ts(minutes + 6)}
                )
            with open(os.path.join(d, "artifacts", "relations.json"), "w") as f:
                f.write(json.dumps(rel, indent=2, ensure_ascii=False) + "\n")
        if STATES.index(state) >= 2 and i % 3 != 1:
            recs = []
            if i >= 2 and i % 4 in (0, 2):
                recs.append({"id": f"orch-plan-{i}-1", "ticket_id": tid, "kind": "blocked_by", "related_ticket": ids[i - 2],
                             "note": "do not start until the dependency is done.", "author": "yoi-orchestrator", "at": ts(minutes + 61)})
            if i % 5 == 2:
                recs.append({"id": f"orch-plan-{i}-2", "ticket_id": tid, "kind": "waiting_capacity_note",
                             "note": "All coder slots are busy; retry when one frees up.", "author": "yoi-orchestrator", "at": ts(minutes + 61)})
            if STATES.index(state) >= 3:
                slug = f"{tid}-{AREAS[i % len(AREAS)]}"
                recs.append({"id": f"orch-plan-{i}-3", "ticket_id": tid, "kind": "accepted_plan", "note": "Plan recorded.",
                             "accepted_plan": {"summary": title, "branch": f"work/{slug}", "worktree": f"<repo>/.worktree/{slug}",
                                               "role_plan": "coder then reviewer"},
                             "author": "yoi-orchestrator", "at": ts(minutes + 62)})
            if recs:
                with open(os.path.join(d, "artifacts", "orchestration-plan.jsonl"), "w") as f:
                    for r in recs:
                        f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {COUNT} tickets to {out}")


if __name__ == "__main__":
    main()
