//! The prompt file an agent reads: who it is and where it may work, the questions agents asked
//! on the ticket with the answers people gave, the workflows a person invoked on the ticket (what each requires, then its body), the step's instructions from the
//! frozen flow, the last round's feedback, the frozen brief, the skills it may
//! activate, and the trailer lines it must end with.
//!
//! The prompt is rendered from what the server handed out and nothing else; it tells the agent
//! the rules the pod enforces afterwards (a detached worktree, no branch moves, a read-only
//! review) but enforces none of them itself: `worktree` and `agent_run` do.

use serde_json::Value;
use yoi_core::Role;

use crate::attempt::flow_step;
use crate::client::Work;

/// The prompt file: the step, the frozen brief, the skills, and how to report.
pub fn render_prompt(work: &Work, skills: &[(String, String)]) -> String {
    let a = &work.assignment;
    let reviewer = Role::Reviewer.is(&a.role);
    // What yoi does with the folder afterwards differs by role: a reviewer's stays untouched.
    let afterwards = if reviewer {
        "Change nothing in it: a review is read-only, and a folder that moved or changed voids the verdict."
    } else {
        "yoi commits what you leave and moves the ticket branch itself; changes outside the brief's \
         write scope (if it names one) are sent back."
    };
    let mut out = format!(
        "# yoi assignment: {} of ticket {} — {}\n\n\
         You are the **{}** for step `{}` (attempt {}). Work only inside this folder: {}\n\
         It is a git worktree detached at {}. Do not push and do not switch branches. {afterwards} \
         Do not change anything under `.yoi/tickets/`.\n\n",
        a.step,
        work.ticket,
        work.title,
        a.role,
        a.step,
        a.attempt,
        work.workdir,
        work.start()
    );
    // A person's answer comes first: the attempt before this one stopped to ask for it.
    if !work.answered.is_empty() {
        out.push_str("## Answers to questions asked on this ticket (they override the brief where they differ)\n\n");
        for q in &work.answered {
            out.push_str(&format!(
                "Asked by the agent of step `{}` (attempt {}):\n\n{}\n\nAnswered by {}:\n\n{}\n\n",
                q.step,
                q.attempt,
                q.question.trim_end(),
                q.by,
                q.answer.trim_end()
            ));
        }
    }
    // An invoked workflow comes before the step's usual brief: its knowledge, then its body.
    if let Some(w) = &work.workflow {
        out.push_str(w.trim_end());
        out.push_str("\n\n");
    }
    if let Some(k) = &work.kept {
        out.push_str(&format!(
            "## Already here: the work of attempt {}\n\nAttempt {} of this step ended before it \
             was finished ({}). Its commits are kept: this folder starts at {}, which is {} plus \
             that work (`git log {}..HEAD` shows it). Build on it instead of starting again, and \
             change what it got wrong.\n\n",
            k.attempt,
            k.attempt,
            k.reason.as_deref().unwrap_or("no reason recorded"),
            k.commit,
            work.head_commit,
            work.head_commit
        ));
    }
    if reviewer {
        let range = match &work.base_commit {
            Some(base) => format!(
                "`git log {base}..{h}` and `git diff {base} {h}` (the ticket branch `{b}` since it began at {base})",
                h = work.head_commit,
                b = work.branch
            ),
            None => format!(
                "`git log` and `git show` of the ticket branch `{}` at {}",
                work.branch, work.head_commit
            ),
        };
        out.push_str(&format!(
            "## Your task: review\n\nRead the change under review for the brief below: {range}. The \
             folder must stay exactly at this commit, clean, or your verdict is void.\n\n"
        ));
    }
    if let Some(template) = flow_step(work).and_then(|s| s.prompt) {
        let vars = [
            ("ticket", work.ticket.as_str()),
            ("title", work.title.as_str()),
            ("step", a.step.as_str()),
            ("commit", work.head_commit.as_str()),
            ("branch", work.branch.as_str()),
        ];
        out.push_str(&format!(
            "## This step\n\n{}\n\n",
            yoi_core::flow::render_prompt(&template, &vars).trim_end()
        ));
    }
    if let Some(f) = &work.feedback {
        out.push_str(&format!(
            "## What the last round found (fix this first)\n\n{f}\n"
        ));
    }
    out.push_str("## The brief (IntentPacket, frozen at acceptance)\n\n");
    match work.packet.as_ref().and_then(|p| p.get("packet")) {
        Some(p) => {
            for (key, title) in [
                ("intent", "Intent"),
                ("binding_decisions", "Binding decisions"),
                ("acceptance_criteria", "Acceptance criteria"),
                ("implementation_latitude", "Implementation latitude"),
                ("escalate_if", "Escalate if"),
                ("validation", "Validation"),
                ("code_map", "Code map"),
                ("critical_risks", "Critical risks"),
                ("write_scope", "Write scope"),
            ] {
                let text = match &p[key] {
                    Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
                    Value::Array(items) if !items.is_empty() => items
                        .iter()
                        .filter_map(|i| i.as_str())
                        .map(|i| format!("- {i}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => continue,
                };
                out.push_str(&format!("### {title}\n\n{text}\n\n"));
            }
        }
        None => out.push_str(
            "(no frozen brief was found; ask for one by reporting `YOI-RESULT: blocked`)\n\n",
        ),
    }
    if !skills.is_empty() {
        out.push_str("## Skills you may activate\n\nEach is a folder of instructions; activate one with \
                      `POST $YOI_SERVER/api/v1/skills/NAME/activate` with the header `Authorization: Bearer $YOI_TOKEN` \
                      and the body `{}` when its description fits the task (the token is this attempt's own; \
                      the activation is recorded against it).\n\n");
        for (name, desc) in skills {
            out.push_str(&format!("- `{name}`: {desc}\n"));
        }
        out.push('\n');
    }
    if !work.invocable.is_empty() {
        out.push_str(
            "## Workflows you may invoke\n\nEach is a procedure people wrote for this repository; \
             invoke one with `POST $YOI_SERVER/api/v1/workflows/SLUG/invoke` with the header \
             `Authorization: Bearer $YOI_TOKEN` when its description fits the task. The answer's \
             `text` holds its instructions (and what they need): follow them in this attempt. \
             The invocation is recorded on the ticket.\n\n",
        );
        for w in &work.invocable {
            out.push_str(&format!("- `{}`: {}\n", w.slug, w.description));
        }
        out.push('\n');
    }
    out.push_str(
        "## How to finish\n\nEnd your final message with these lines:\n\n\
         ```\nYOI-RESULT: done | blocked | failed\nYOI-SUMMARY: one sentence on what you did or why you stopped\n",
    );
    if Role::Reviewer.is(&a.role) {
        out.push_str(
            "YOI-VERDICT: approve | request_changes\nYOI-FINDING: one line per problem found (as many as needed)\n",
        );
    }
    out.push_str("```\n");
    out.push_str(ASKING);
    out
}

/// How an agent asks a person: the same words for every agent profile, since every profile's
/// prompt is this file.
pub const ASKING: &str = "\n## When you need a person's decision\n\nIf you cannot go on without \
     a decision the brief does not make (its \"Escalate if\" says when), do not guess: stop, and \
     end with `YOI-RESULT: blocked`, a `YOI-SUMMARY:` line, and one line per question:\n\n\
     ```\nYOI-QUESTION: <your question, answerable on its own>\n```\n\n\
     Your step waits for a person's answer; the next attempt of it gets your questions and the \
     answers at the top of its prompt. A question costs a person's time: ask only what you cannot \
     decide from the brief and the code.\n";
