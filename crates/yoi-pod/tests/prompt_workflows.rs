//! The prompt file with workflows (docs/workflows.md): an invoked workflow's text comes right
//! after who the agent is and before the step's brief; the workflows the agent may invoke are
//! listed after the skills, and none are listed when the server sends none.

use serde_json::json;
use yoi_pod::client::Work;

fn work(extra: serde_json::Value) -> Work {
    let mut w = json!({
        "assignment": {"id": "asg-1", "ticket": "T1", "step": "implement", "role": "coder",
                        "attempt": 1, "fence": 1},
        "ticket": "T1",
        "title": "Say hello",
        "workdir": "/tmp/wt",
        "branch": "yoi/T1",
        "head_commit": "abc",
        "packet": {"packet": {"intent": "BRIEF-INTENT"}},
        "lease_ms": 1000,
        "heartbeat_ms": 100
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    serde_json::from_value(w).unwrap()
}

#[test]
fn an_invoked_workflow_comes_before_the_brief_and_invocable_ones_after_the_skills() {
    let w = work(json!({
        "workflow": "## Workflow `/x`, invoked by alice\n\nSKILL-BODY\nWORKFLOW-BODY\n",
        "invocable": [{"slug": "deep-check", "description": "A deeper look."}]
    }));
    let p = yoi_pod::render_prompt(&w, &[("owasp".into(), "The checklist.".into())]);
    let header = p.find("You are the **coder**").unwrap();
    let workflow = p.find("WORKFLOW-BODY").unwrap();
    let brief = p.find("BRIEF-INTENT").unwrap();
    let skills = p.find("## Skills you may activate").unwrap();
    let invocable = p.find("## Workflows you may invoke").unwrap();
    let finish = p.find("## How to finish").unwrap();
    assert!(header < workflow && workflow < brief, "{p}");
    assert!(skills < invocable && invocable < finish, "{p}");
    assert!(p.contains("- `deep-check`: A deeper look."), "{p}");
}

#[test]
fn without_workflows_the_prompt_has_no_workflow_sections() {
    let p = yoi_pod::render_prompt(&work(json!({})), &[]);
    assert!(!p.contains("Workflow"), "{p}");
}
