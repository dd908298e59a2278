//! `yoi workflow list | show | lint` and `GET /api/v1/workflows` on the real binary: what a
//! person sees of the files in `.yoi/workflow/`, and that a bad file is named and skipped
//! without stopping anything (docs/workflows.md).

mod common;

use common::server::Server;
use common::Repo;

fn write(repo: &Repo, rel: &str, text: &str) {
    let path = repo.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn json(out: &common::Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
}

/// A workspace with a skill, a good workflow that requires it, and a file with errors.
fn workspace() -> Repo {
    let repo = Repo::init();
    write(
        &repo,
        ".yoi/skills/owasp-checklist/SKILL.md",
        "---\nname: owasp-checklist\ndescription: The OWASP top ten.\n---\n\nCheck A01 to A10.\n",
    );
    write(
        &repo,
        ".yoi/workflow/security-precheck.md",
        "---\ndescription: Check a change for the usual security mistakes.\nrequires: [owasp-checklist]\n---\n\nRun the checklist against the diff.\n",
    );
    write(
        &repo,
        ".yoi/workflow/broken.md",
        "---\nname: broken\ndescription: d\nrequires: [nowhere]\n---\nx\n",
    );
    repo
}

#[test]
fn list_shows_the_valid_workflows_and_names_the_skipped_file() {
    let repo = workspace();
    let out = repo.yoi(&["workflow", "list"]).ok();
    assert!(out.stdout.contains("/security-precheck"), "{}", out.stdout);
    assert!(out.stdout.contains("owasp-checklist"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("skipped .yoi/workflow/broken.md (2 error(s); `yoi workflow lint .yoi/workflow/broken.md`)"),
        "{}",
        out.stdout
    );
    let v = json(&repo.yoi(&["workflow", "list", "--json"]).ok());
    assert_eq!(v["count"], 1);
    assert_eq!(v["workflows"][0]["slug"], "security-precheck");
    assert_eq!(v["workflows"][0]["auto_invoke"], false);
    assert_eq!(v["workflows"][0]["user_invocable"], true);
    assert_eq!(v["workflows"][0]["role"], "coder");
    assert_eq!(v["skipped"][0]["file"], ".yoi/workflow/broken.md");
}

#[test]
fn show_prints_one_workflow_and_refuses_unknown_invalid_and_traversing_slugs() {
    let repo = workspace();
    let out = repo.yoi(&["workflow", "show", "security-precheck"]).ok();
    assert!(out
        .stdout
        .starts_with("/security-precheck — Check a change for the usual security mistakes.\n"));
    assert!(out.stdout.contains("requires: owasp-checklist"));
    assert!(out.stdout.contains("Run the checklist against the diff."));

    let out = repo.yoi(&["workflow", "show", "nope"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no workflow is called `nope`"),
        "{}",
        out.stderr
    );
    let out = repo.yoi(&["workflow", "show", "broken"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("workflow `broken` is skipped because its file has errors"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("remove `name`"), "{}", out.stderr);
    let out = repo.yoi(&["workflow", "show", "../../etc/passwd"]);
    assert_eq!(out.code, 2, "a bad slug is a usage error: {}", out.stderr);
    assert!(
        out.stderr.contains("is not a workflow slug"),
        "{}",
        out.stderr
    );
}

#[test]
fn lint_names_file_line_and_rule_and_fails_until_the_file_is_fixed() {
    let repo = workspace();
    let out = repo.yoi(&["workflow", "lint"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out
        .stdout
        .contains("ok      .yoi/workflow/security-precheck.md"));
    assert!(
        out.stdout.contains(
            "error   .yoi/workflow/broken.md:2: remove `name`: the file name is the workflow's identifier (this one is `broken`) [WF-NAME]"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[WF-REQUIRES-UNKNOWN]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.ends_with("2 workflow file(s), 2 error(s)\n"));

    // One file given: a draft outside the folder is checked against the workspace's skills.
    let draft = repo.path().join("draft.md");
    std::fs::write(
        &draft,
        "---\ndescription: d\nuser_invocable: false\n---\nx\n",
    )
    .unwrap();
    let v = json(&repo.yoi(&["workflow", "lint", "draft.md", "--json"]));
    assert_eq!(v["errors"], 1);
    assert_eq!(v["files"][0]["diagnostics"][0]["rule"], "WF-UNREACHABLE");

    write(
        &repo,
        ".yoi/workflow/broken.md",
        "---\ndescription: d\nrequires: [owasp-checklist]\n---\nx\n",
    );
    repo.yoi(&["workflow", "lint"]).ok();
}

#[test]
fn a_bad_workflow_file_never_stops_serve_and_the_api_answers_like_the_cli() {
    let repo = workspace();
    write(
        &repo,
        ".yoi/workflow/garbage.md",
        "\u{feff}not even frontmatter",
    );
    let server = Server::start(&repo);
    let (status, v) = server.get(&repo, "/workflows");
    assert_eq!(status, 200, "{v}");
    let cli = json(&repo.yoi(&["workflow", "list", "--json"]).ok());
    assert_eq!(v, cli);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 2);

    let (status, v) = server.get(&repo, "/workflows/security-precheck");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["requires"][0], "owasp-checklist");
    let (status, v) = server.get(&repo, "/workflows/nope");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, v) = server.get(&repo, "/workflows/broken");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (422, Some("invalid_workflow")),
        "{v}"
    );
    let (status, v) = server.get(&repo, "/workflows/..%2F..%2Fetc");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid")),
        "{v}"
    );
    let (status, v) = server.get(&repo, "/workflows/lint");
    assert_eq!(status, 200);
    assert_eq!(v["errors"], 3, "{v}");
}

/// The first test, end to end with real pods: a person's `/slug` comment on a queued
/// ticket is carried by the implement attempt, whose `prompt.md` holds the required skill's
/// body, then the workflow's body, then the brief; the reviewer's prompt (another role) does
/// not; `yoi workflow run` of a `user_invocable: false` workflow is refused naming the flag.
#[test]
fn a_slash_comment_puts_the_required_skill_then_the_workflow_in_the_coders_prompt_md() {
    use common::pods::*;
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone added hello.txt\n",
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    write(
        &repo,
        ".yoi/skills/owasp-checklist/SKILL.md",
        "---\nname: owasp-checklist\ndescription: The OWASP top ten.\n---\n\nSKILL-BODY check A01 to A10.\n",
    );
    write(
        &repo,
        ".yoi/workflow/security-precheck.md",
        "---\ndescription: Check a change for security mistakes.\nrequires: [owasp-checklist]\n---\n\nWORKFLOW-BODY run the checklist against the diff.\n",
    );
    write(
        &repo,
        ".yoi/workflow/agents-only.md",
        "---\ndescription: Agents only.\nuser_invocable: false\nauto_invoke: true\n---\nx\n",
    );
    yoi_testkit::commit_all(repo.path(), "workflows");
    let id = repo.create("Say hello", BRIEF);
    let out = repo.yoi(&["workflow", "run", "agents-only", "--ticket", &id]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("`user_invocable: false`"),
        "{}",
        out.stderr
    );
    repo.yoi(&[
        "ticket",
        "comment",
        &id,
        "-m",
        "/security-precheck look at the login form",
    ])
    .ok();
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let rows = assignments(&server, &repo, &id);
    let prompt = |step: &str, pod: &str| {
        let a = rows.iter().find(|a| a["step"] == step).unwrap();
        std::fs::read_to_string(
            repo.path()
                .join(format!(".yoi/local/pods/{pod}/runs"))
                .join(a["id"].as_str().unwrap())
                .join("prompt.seen"),
        )
        .unwrap()
    };
    let coder = prompt("implement", "coder-0");
    let skill = coder.find("SKILL-BODY").expect("the skill body");
    let body = coder.find("WORKFLOW-BODY").expect("the workflow body");
    let brief = coder.find("## The brief").expect("the brief");
    assert!(skill < body && body < brief, "{coder}");
    assert!(coder.contains("> /security-precheck look at the login form"));
    let reviewer = prompt("review", "reviewer-0");
    assert!(!reviewer.contains("WORKFLOW-BODY"), "{reviewer}");
}

/// `GET /api/v1/skills` leaves a `disable-model-invocation: true` skill out for a pod's token
/// (what a pod lists in its agent's prompt) and shows it to a person's.
#[test]
fn a_pod_token_never_lists_a_people_only_skill() {
    let repo = workspace();
    write(
        &repo,
        ".yoi/skills/people-only/SKILL.md",
        "---\nname: people-only\ndescription: Named by people.\ndisable-model-invocation: true\n---\n\nBODY\n",
    );
    let server = Server::start(&repo);
    let token = repo
        .yoi(&["token", "create", "--name", "c1", "--scope", "pod:coder"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, v) = server.get(&repo, "/skills");
    assert_eq!(status, 200);
    assert!(names(&v).contains(&"people-only".to_string()), "{v}");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let v: serde_json::Value = agent
        .get(&format!("http://{}/api/v1/skills", server.addr))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    let listed = names(&v);
    assert!(listed.contains(&"owasp-checklist".to_string()), "{v}");
    assert!(!listed.contains(&"people-only".to_string()), "{v}");
}

/// Offers through the binary (docs/workflows.md, "Offers"): the same follow-up written on three
/// tickets is offered once by `yoi workflow offers --detect`, `yoi workflow offer` shows the
/// diff, `yoi inbox` lists it, and only `yoi workflow accept` writes the file; deciding twice
/// exits 1 and a malformed id exits 2.
#[test]
fn an_offer_is_listed_shown_and_written_only_by_accept() {
    let repo = workspace();
    let said = "Rebase on main and rerun `cargo deny check` before asking again.";
    for n in 0..3 {
        let id = repo.create(&format!("T{n}"), common::COMPLETE_BRIEF);
        repo.yoi(&["ticket", "comment", &id, "-m", said]).ok();
    }
    let v = json(&repo.yoi(&["workflow", "offers", "--detect", "--json"]).ok());
    assert_eq!(v["count"], 1, "{v:#}");
    assert_eq!(v["pending"], 1);
    let id = v["offers"][0]["id"].as_str().unwrap().to_string();
    let target = v["offers"][0]["target"].as_str().unwrap().to_string();
    assert_eq!(target, ".yoi/workflow/rebase-on-main-and.md");
    let again = repo.yoi(&["workflow", "offers", "--detect"]).ok();
    assert!(
        again.stdout.starts_with("0 new offer(s), 1 pending\n"),
        "{}",
        again.stdout
    );

    let shown = repo.yoi(&["workflow", "offer", &id]).ok();
    assert!(shown.stdout.contains("--- /dev/null"), "{}", shown.stdout);
    assert!(shown.stdout.contains(&format!("+++ b/{target}")));
    let inbox = repo.yoi(&["inbox"]).ok();
    assert!(inbox.stdout.contains("workflow_offer"), "{}", inbox.stdout);
    assert!(
        !repo.path().join(&target).exists(),
        "offering writes nothing"
    );

    let out = repo.yoi(&["workflow", "accept", &id]).ok();
    assert_eq!(out.stdout, format!("accepted {id}: wrote {target}\n"));
    let text = std::fs::read_to_string(repo.path().join(&target)).unwrap();
    assert!(text.contains(said), "{text}");
    let listed = repo.yoi(&["workflow", "list"]).ok();
    assert!(
        listed.stdout.contains("/rebase-on-main-and"),
        "{}",
        listed.stdout
    );

    let twice = repo.yoi(&["workflow", "reject", &id, "--reason", "late"]);
    assert_eq!(twice.code, 1, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("already Accepted"),
        "{}",
        twice.stderr
    );
    let bad = repo.yoi(&["workflow", "accept", "../x"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}
