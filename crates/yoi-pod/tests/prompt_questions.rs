//! Agents ask (docs/inbox.md, "Agents ask"): every built-in agent profile (all but `verify`,
//! which runs validation commands and no agent) is handed the one
//! prompt file, which tells its agent how to ask a person — `YOI-RESULT: blocked` with
//! `YOI-QUESTION:` lines — in words whose echo is no question; and an attempt after an answer
//! begins with the questions and the answers, before the step and the brief.

use serde_json::json;
use yoi_pod::client::Work;
use yoi_pod::contract::read_contract;

fn work(role: &str, extra: serde_json::Value) -> Work {
    let mut w = json!({
        "assignment": {"id": "asg-1", "ticket": "T1", "step": "implement", "role": role,
                        "attempt": 2, "fence": 1},
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
fn every_built_in_profile_gets_the_prompt_that_says_how_to_ask() {
    let profiles = yoi_pod::profiles::builtins();
    assert!(profiles.len() >= 5, "{:?}", profiles.keys());
    for (name, p) in &profiles {
        // `verify` runs no agent: the validation commands, each `sh -c`, ask nothing.
        if name == "verify" {
            assert_eq!(p.stdin, "null");
            continue;
        }
        // The prompt reaches the agent: on stdin, or as the file its argv names.
        let delivered = p.stdin == "prompt_file"
            || p.argv.iter().any(|a| a.contains("{prompt_file}"))
            || p.reviewer_argv.iter().any(|a| a.contains("{prompt_file}"));
        assert!(delivered, "profile `{name}` is not handed the prompt file");
    }
    for role in ["coder", "reviewer"] {
        let prompt = yoi_pod::render_prompt(&work(role, json!({})), &[]);
        assert!(prompt.contains(yoi_pod::prompt::ASKING), "{role}: {prompt}");
        assert!(
            prompt.contains("YOI-RESULT: blocked") && prompt.contains("YOI-QUESTION:"),
            "{prompt}"
        );
        // An agent that echoes its prompt (Aider does) asks nothing by that.
        let echoed = read_contract(&format!("{prompt}\nYOI-RESULT: done\n")).unwrap();
        assert!(echoed.questions.is_empty(), "{:?}", echoed.questions);
    }
}

#[test]
fn the_next_attempt_begins_with_the_questions_and_their_answers() {
    let w = work(
        "coder",
        json!({
            "feedback": "FEEDBACK",
            "workflow": "WORKFLOW-BODY",
            "answered": [{"step": "implement", "attempt": 1,
                          "question": "- Which greeting: hello or hi?",
                          "answer": "Say hi.", "by": "human:alice"}]
        }),
    );
    let p = yoi_pod::render_prompt(&w, &[]);
    let header = p.find("You are the **coder**").unwrap();
    let question = p.find("Which greeting: hello or hi?").unwrap();
    let answer = p.find("Say hi.").unwrap();
    let workflow = p.find("WORKFLOW-BODY").unwrap();
    let brief = p.find("BRIEF-INTENT").unwrap();
    assert!(
        header < question && question < answer && answer < workflow && workflow < brief,
        "{p}"
    );
    assert!(p.contains("Answered by human:alice"), "{p}");
    assert!(p.contains("step `implement` (attempt 1)"), "{p}");
    let none = yoi_pod::render_prompt(&work("coder", json!({})), &[]);
    assert!(!none.contains("Answers to questions"), "{none}");
}
