use super::*;

const ROLES: &[&str] = &["coder", "verifier", "reviewer"];

const GOOD: &str = "schema_version: 1
name: quick
title: Implement and review
max_rounds: 2
steps:
  - id: implement
    role: coder
    output: commit
    timeout: 30m
    prompt: |
      Keep {ticket} small.
    on_failure: { retry: 1 }
  - id: review
    role: reviewer
    output: verdict
    on_failure: escalate
  - id: merge
    role: service
    output: merge
";

#[test]
fn a_good_flow_reads_with_every_field() {
    let f = parse(GOOD, "quick", ROLES).unwrap();
    assert_eq!(f.name, "quick");
    assert_eq!(f.max_rounds, 2);
    assert_eq!(
        f.steps.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["implement", "review", "merge"]
    );
    assert_eq!(f.steps[0].timeout_secs, Some(1800));
    assert_eq!(f.steps[0].on_failure, OnFailure::Retry(1));
    assert_eq!(f.steps[0].on_failure.stop_after(), 2);
    assert_eq!(f.steps[1].on_failure, OnFailure::Escalate);
    assert_eq!(f.steps[2].on_failure, DEFAULT_ON_FAILURE);
    assert_eq!(f.after("implement").unwrap().id, "review");
    assert_eq!(f.output_of("integrate"), Some(Output::Commit));
    assert_eq!(f.output_of("merge-verify"), Some(Output::Checks));
    assert_eq!(
        render_prompt(f.steps[0].prompt.as_deref().unwrap(), &[("ticket", "T-1")]),
        "Keep T-1 small.\n"
    );
}

#[test]
fn the_builtin_flow_passes_its_own_checks() {
    let text = "schema_version: 1\nname: coder-review\ntitle: Implement, verify, review, merge\nmax_rounds: 3\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n  - id: verify\n    role: verifier\n    output: checks\n  - id: review\n    role: reviewer\n    output: verdict\n  - id: merge\n    role: service\n    output: merge\n";
    assert_eq!(parse(text, "coder-review", ROLES).unwrap(), builtin(3));
}

fn problems(text: &str) -> Vec<Problem> {
    parse(text, "quick", ROLES).unwrap_err()
}

#[test]
fn a_yaml_error_names_its_line() {
    let p = problems("schema_version: 1\nname: quick\ntitle: [unclosed\n");
    assert_eq!(p.len(), 1);
    assert!(p[0].line >= 3, "{p:?}");
}

#[test]
fn an_unknown_key_is_an_error_with_its_line() {
    let text = GOOD.replace(
        "    on_failure: escalate\n",
        "    on_failure: escalate\n    colour: red\n",
    );
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].message.contains("colour"), "{p:?}");
    assert_eq!(p[0].line, 17, "{p:?}");
}

#[test]
fn every_semantic_problem_is_reported_at_its_step() {
    let text = GOOD
        .replace("role: reviewer", "role: auditor")
        .replace("timeout: 30m", "timeout: 3 weeks")
        .replace("on_failure: escalate", "on_failure: panic");
    let p = problems(&text);
    let lines: Vec<usize> = p.iter().map(|p| p.line).collect();
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p
        .iter()
        .any(|p| p.message.contains("`auditor` is not a configured role")));
    assert!(p.iter().any(|p| p.message.contains("timeout `3 weeks`")));
    assert!(p.iter().any(|p| p.message.contains("on_failure `panic`")));
    assert_eq!(lines, [6, 13, 13]);
}

#[test]
fn the_shape_of_a_flow_is_checked() {
    // No merge at the end, a reserved id, a reused id, a role that cannot give the output.
    let text = "schema_version: 2
name: other
title: ' '
max_rounds: 0
steps:
  - id: integrate
    role: coder
    output: commit
  - id: integrate
    role: coder
    output: verdict
";
    let msgs: Vec<String> = problems(text).into_iter().map(|p| p.message).collect();
    let has = |s: &str| msgs.iter().any(|m| m.contains(s));
    assert!(has("schema_version 2"), "{msgs:?}");
    assert!(
        has("must match the file name `quick.flow.yaml`"),
        "{msgs:?}"
    );
    assert!(has("title is empty"), "{msgs:?}");
    assert!(has("max_rounds 0"), "{msgs:?}");
    assert!(has("a step yoi runs itself"), "{msgs:?}");
    assert!(has("the id is used twice"), "{msgs:?}");
    assert!(
        has("output `verdict` is returned by the `reviewer` role"),
        "{msgs:?}"
    );
    assert!(has("only it, must be the merge"), "{msgs:?}");
}

#[test]
fn the_first_step_must_make_a_commit() {
    let text = "schema_version: 1\nname: quick\ntitle: t\nsteps:\n  - id: review\n    role: reviewer\n    output: verdict\n  - id: merge\n    role: service\n    output: merge\n";
    let msgs: Vec<String> = problems(text).into_iter().map(|p| p.message).collect();
    assert!(
        msgs.iter().any(|m| m.contains("must return a commit")),
        "{msgs:?}"
    );
}

#[test]
fn durations_read_as_people_write_them() {
    assert_eq!(parse_duration("90"), Ok(90));
    assert_eq!(parse_duration("90s"), Ok(90));
    assert_eq!(parse_duration("2m"), Ok(120));
    assert_eq!(parse_duration("1h"), Ok(3600));
    assert!(parse_duration("1d").is_err());
    assert!(parse_duration("m").is_err());
    assert!(parse_duration("99999999999999999999h").is_err());
}

#[test]
fn a_flow_may_end_in_a_pull_request_and_the_builtin_one_checks_out() {
    let text = GOOD.replace(
        "  - id: merge\n    role: service\n    output: merge\n",
        "  - id: pr\n    role: service\n    output: pr\n",
    );
    let f = parse(&text, "quick", ROLES).unwrap();
    assert_eq!(f.steps.last().unwrap().output, Output::PullRequest);
    assert_eq!(f.output_of("pr"), Some(Output::PullRequest));
    let text = "schema_version: 1\nname: coder-review\ntitle: Implement, verify, review, pull request\nmax_rounds: 3\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n  - id: verify\n    role: verifier\n    output: checks\n  - id: review\n    role: reviewer\n    output: verdict\n  - id: pr\n    role: service\n    output: pr\n";
    assert_eq!(parse(text, "coder-review", ROLES).unwrap(), builtin_pr(3));
    // A merge and a pull request both: only one may end the flow.
    let both = GOOD.replace(
        "  - id: merge\n",
        "  - id: pr\n    role: service\n    output: pr\n  - id: merge\n",
    );
    let msgs: Vec<String> = problems(&both).iter().map(|p| p.message.clone()).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("only it, must be the merge")),
        "{msgs:?}"
    );
}
