//! Flow triggers (docs/flows.md, "Triggers"): a ticket without `flow:` runs the narrowest flow
//! whose trigger it matches, else the default; two triggers one ticket could match with
//! neither narrower are refused, both files named; warnings past three flows for one kind and
//! outside two to four steps.

mod common;

use common::{Fixture, BRIEF};
use yoi_core::flow::{TicketFacts, Trigger};
use yoi_engine::flows;

fn flow_file(f: &Fixture, name: &str, trigger: &str, review: bool) {
    let dir = f.repo.join(".yoi/flows");
    std::fs::create_dir_all(&dir).unwrap();
    let review = if review {
        "  - id: review\n    role: reviewer\n    output: verdict\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join(format!("{name}.flow.yaml")),
        format!(
            "schema_version: 1\nname: {name}\ntitle: {name}\n{trigger}steps:\n  - id: implement\n    role: coder\n    output: commit\n{review}  - id: merge\n    role: service\n    output: merge\n"
        ),
    )
    .unwrap();
}

fn item_with(f: &Fixture, title: &str, kind: Option<&str>, labels: &[&str]) -> yoi_core::Item {
    let id = f.queued(title, BRIEF, &[]);
    // The older keys `kind:` and `labels:`, written into item.md as a person would.
    let path = f
        .repo
        .join(".yoi/tickets")
        .join(id.as_str())
        .join("item.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut keys = format!("labels: [{}]\n", labels.join(", "));
    if let Some(k) = kind {
        keys.push_str(&format!("kind: {k}\n"));
    }
    let text = text.replacen("---\n", &format!("---\n{keys}"), 1);
    std::fs::write(&path, text).unwrap();
    f.ws.read_item(&id).unwrap()
}

fn t(kind: Option<&str>, labels: &[&str], words: &[&str]) -> Trigger {
    Trigger::new(
        kind.map(str::to_string),
        labels.iter().map(|s| s.to_string()).collect(),
        words.iter().map(|s| s.to_string()).collect(),
    )
    .unwrap()
}

#[test]
fn a_ticket_matching_a_trigger_gets_that_flow_and_the_narrowest_wins() {
    let f = Fixture::new();
    // Label-only triggers would meet a kind-only one on a bug labelled security: the flows
    // for features say their kind too.
    flow_file(
        &f,
        "security",
        "trigger:\n  kind: feature\n  labels: [security]\n",
        true,
    );
    flow_file(
        &f,
        "security-hotfix",
        "trigger:\n  kind: feature\n  labels: [security]\n  title_words: [hotfix]\n",
        false,
    );
    flow_file(&f, "bugs", "trigger:\n  kind: bug\n", true);
    let lint: Vec<_> = flows::scan(&f.ws);
    assert!(lint.iter().all(|f| f.problems.is_empty()), "{lint:#?}");

    let sec = item_with(&f, "Tighten the login", Some("Feature"), &["Security"]);
    assert_eq!(flows::resolve(&f.ws, &sec).unwrap().name, "security");
    let hot = item_with(
        &f,
        "HOTFIX: the login",
        Some("feature"),
        &["security", "ui"],
    );
    assert_eq!(flows::resolve(&f.ws, &hot).unwrap().name, "security-hotfix");
    let bug = item_with(&f, "Crash on save", Some("bug"), &[]);
    assert_eq!(flows::resolve(&f.ws, &bug).unwrap().name, "bugs");
    let plain = item_with(&f, "Say hello", None, &[]);
    assert_eq!(flows::resolve(&f.ws, &plain).unwrap().name, "coder-review");
    // A ticket's own `flow:` wins over any trigger.
    let mut named = item_with(&f, "Tighten more", Some("feature"), &["security"]);
    named.flow = Some("bugs".into());
    assert_eq!(flows::resolve(&f.ws, &named).unwrap().name, "bugs");
}

#[test]
fn overlapping_triggers_are_refused_with_both_files_named_and_their_tickets_get_the_default() {
    let f = Fixture::new();
    flow_file(&f, "sec", "trigger:\n  labels: [security]\n", true);
    flow_file(&f, "perf", "trigger:\n  labels: [performance]\n", true);
    flow_file(
        &f,
        "sec-bugs",
        "trigger:\n  kind: bug\n  labels: [security]\n",
        true,
    );
    let files = flows::scan(&f.ws);
    let of = |n: &str| files.iter().find(|f| f.name == n).unwrap();
    let sec = &of("sec").problems;
    assert_eq!(sec.len(), 1, "only perf meets it: {sec:?}");
    assert!(
        sec[0].message.contains(".yoi/flows/perf.flow.yaml")
            && sec[0].message.contains("labels performance + security"),
        "{sec:?}"
    );
    assert!(of("perf")
        .problems
        .iter()
        .any(|p| p.message.contains(".yoi/flows/sec.flow.yaml")));
    // `sec-bugs` asks for all `sec` asks and more: narrower, no conflict with it; but a bug
    // labelled security and performance would match it and `perf` alike.
    assert!(of("sec-bugs").problems[0]
        .message
        .contains("perf.flow.yaml"));
    let (listed, skipped) = flows::catalog(&f.ws);
    assert_eq!(
        skipped.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        vec!["perf", "sec", "sec-bugs"]
    );
    assert!(listed.iter().all(|l| l.flow.name != "sec"));
    assert!(flows::named(&f.ws, "sec").is_err(), "refused by name too");
    let both = item_with(&f, "Faster and safer", None, &["security", "performance"]);
    assert_eq!(flows::resolve(&f.ws, &both).unwrap().name, "coder-review");
}

#[test]
fn more_than_three_flows_for_one_kind_and_long_flows_are_warnings() {
    let f = Fixture::new();
    for (name, label) in [("a", "x"), ("b", "x"), ("c", "x"), ("d", "x")] {
        flow_file(
            &f,
            name,
            &format!("trigger:\n  kind: bug\n  labels: [{label}]\n  title_words: [{name}]\n"),
            true,
        );
    }
    let files = flows::scan(&f.ws);
    // a, b, c, d each ask for their own word (one ticket could hold all four words, so they
    // are refused too); the warning is given to each.
    assert!(files.iter().all(|f| f.warnings.iter().any(|w| w
        .message
        .contains("4 flows are triggered for tickets of bug"))));

    let flow = yoi_core::flow::builtin(3);
    let mut long = flow.clone();
    long.steps.insert(1, long.steps[1].clone());
    assert!(yoi_core::flow::advice(&flow).is_empty());
    assert!(yoi_core::flow::advice(&long)[0]
        .message
        .starts_with("5 steps"));
}

#[test]
fn trigger_rules() {
    let label = t(None, &["security"], &[]);
    let narrower = t(None, &["security"], &["hotfix"]);
    assert!(narrower.narrower_than(&label) && !label.narrower_than(&narrower));
    assert!(!label.ambiguous_with(&narrower));
    assert!(
        label.ambiguous_with(&label.clone()),
        "the same trigger twice"
    );
    assert!(label.ambiguous_with(&t(None, &["perf"], &[])));
    assert!(!t(Some("bug"), &[], &[]).ambiguous_with(&t(Some("chore"), &[], &[])));
    assert!(Trigger::new(None, vec![], vec![]).is_err());
    assert!(Trigger::new(None, vec![], vec!["two words".into()]).is_err());
    let facts = TicketFacts {
        kind: Some("bug".into()),
        labels: vec!["security".into()],
        title_words: yoi_core::flow::words("Hotfix: the login"),
    };
    assert!(narrower.matches(&facts) && label.matches(&facts));
    assert!(!t(Some("chore"), &[], &[]).matches(&facts));
}
