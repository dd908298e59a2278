//! Workflow files on disk: each lint rule on a real folder, `requires` against a real catalog,
//! cycles, and the order of the knowledge an invocation is given.

mod common;

use std::fs;
use std::path::Path;

use common::{skill_md, write_file, write_skill};
use yoi_skills::rules;
use yoi_skills::workflow::{Knowledge, WorkflowSet};
use yoi_skills::{Catalog, CatalogConfig};

fn repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join(".yoi/skills")).unwrap();
    write_skill(
        &tmp.path().join(".yoi/skills"),
        "owasp-checklist",
        &skill_md("owasp-checklist", "The OWASP top ten, checked one by one."),
    );
    tmp
}

fn workflow(root: &Path, slug_file: &str, text: &str) {
    write_file(root, &format!(".yoi/workflow/{slug_file}"), text.as_bytes());
}

fn load(root: &Path) -> WorkflowSet {
    WorkflowSet::load(root, &Catalog::load(&CatalogConfig::new(root)))
}

fn rules_of(set: &WorkflowSet, slug: &str) -> Vec<&'static str> {
    set.file(slug)
        .unwrap_or_else(|| panic!("no file for {slug}: {:?}", set.files()))
        .diagnostics
        .iter()
        .map(|d| d.rule)
        .collect()
}

#[test]
fn a_valid_workflow_reads_with_its_defaults() {
    let tmp = repo();
    workflow(
        tmp.path(),
        "security-precheck.md",
        "---\ndescription: Check a change for the usual security mistakes.\nrequires: [owasp-checklist]\n---\n\nRun the checklist against the diff.\n",
    );
    let set = load(tmp.path());
    let wf = set.get("security-precheck").expect("valid");
    assert_eq!(
        wf.description,
        "Check a change for the usual security mistakes."
    );
    assert!(!wf.auto_invoke, "auto_invoke defaults to false");
    assert!(wf.user_invocable, "user_invocable defaults to true");
    assert_eq!(wf.role, "coder");
    assert_eq!(wf.requires, vec!["owasp-checklist"]);
    assert_eq!(wf.body, "Run the checklist against the diff.");
    assert_eq!(
        set.file("security-precheck").unwrap().file,
        ".yoi/workflow/security-precheck.md"
    );
}

#[test]
fn lint_names_each_bad_file_and_keeps_the_good_ones() {
    let tmp = repo();
    let ok = "---\ndescription: fine\n---\nDo it.\n";
    workflow(tmp.path(), "good.md", ok);
    workflow(tmp.path(), "Bad_Slug.md", ok);
    workflow(
        tmp.path(),
        "has-name.md",
        "---\nname: has-name\ndescription: d\n---\nx\n",
    );
    workflow(
        tmp.path(),
        "unknown-req.md",
        "---\ndescription: d\nrequires: [no-such-thing]\n---\nx\n",
    );
    workflow(
        tmp.path(),
        "unreachable.md",
        "---\ndescription: d\nauto_invoke: false\nuser_invocable: false\n---\nx\n",
    );
    workflow(
        tmp.path(),
        "odd-key.md",
        "---\ndescription: d\ntrigger: always\n---\nx\n",
    );
    workflow(
        tmp.path(),
        "broken-yaml.md",
        "---\ndescription: [\n---\nx\n",
    );
    workflow(tmp.path(), "no-frontmatter.md", "just text\n");
    workflow(
        tmp.path(),
        "bad-role.md",
        "---\ndescription: d\nrole: verifier\n---\nx\n",
    );
    workflow(tmp.path(), "empty.md", "---\ndescription: d\n---\n\n");
    fs::write(tmp.path().join(".yoi/workflow/notes.txt"), "not a workflow").unwrap();

    let set = load(tmp.path());
    assert!(set.get("good").is_some());
    assert_eq!(rules_of(&set, "Bad_Slug"), vec![rules::WF_SLUG]);
    assert_eq!(rules_of(&set, "has-name"), vec![rules::WF_NAME]);
    let name = &set.file("has-name").unwrap().diagnostics[0];
    assert_eq!(name.line, Some(2), "{name:?}");
    assert_eq!(
        rules_of(&set, "unknown-req"),
        vec![rules::WF_REQUIRES_UNKNOWN]
    );
    assert!(set.file("unknown-req").unwrap().diagnostics[0]
        .message
        .contains("no-such-thing"));
    assert_eq!(rules_of(&set, "unreachable"), vec![rules::WF_UNREACHABLE]);
    assert_eq!(rules_of(&set, "odd-key"), vec![rules::WF_UNKNOWN_KEY]);
    assert!(set.file("odd-key").unwrap().diagnostics[0]
        .message
        .contains("`trigger`"));
    assert_eq!(rules_of(&set, "broken-yaml"), vec![rules::FM_YAML]);
    assert_eq!(rules_of(&set, "no-frontmatter"), vec![rules::FM_START]);
    assert!(!set.file("no-frontmatter").unwrap().diagnostics[0]
        .message
        .contains("SKILL.md"));
    assert_eq!(rules_of(&set, "bad-role"), vec![rules::WF_ROLE]);
    assert_eq!(rules_of(&set, "empty"), vec![rules::WF_EMPTY]);
    assert_eq!(set.files().len(), 10, "notes.txt is not a workflow");
    assert_eq!(
        set.valid().map(|w| w.slug.as_str()).collect::<Vec<_>>(),
        vec!["good"]
    );
}

#[test]
fn requires_cycles_are_refused_with_the_cycle_named() {
    let tmp = repo();
    workflow(
        tmp.path(),
        "a.md",
        "---\ndescription: d\nrequires: [b]\n---\nA\n",
    );
    workflow(
        tmp.path(),
        "b.md",
        "---\ndescription: d\nrequires: [c]\n---\nB\n",
    );
    workflow(
        tmp.path(),
        "c.md",
        "---\ndescription: d\nrequires: [a]\n---\nC\n",
    );
    workflow(
        tmp.path(),
        "uses-a.md",
        "---\ndescription: d\nrequires: [a]\n---\nU\n",
    );
    workflow(
        tmp.path(),
        "self.md",
        "---\ndescription: d\nrequires: [self]\n---\nS\n",
    );
    let set = load(tmp.path());
    for slug in ["a", "b", "c"] {
        assert_eq!(
            rules_of(&set, slug),
            vec![rules::WF_REQUIRES_CYCLE],
            "{slug}"
        );
    }
    assert!(
        set.file("a").unwrap().diagnostics[0]
            .message
            .contains("a → b → c → a"),
        "{:?}",
        set.file("a").unwrap().diagnostics
    );
    assert_eq!(rules_of(&set, "uses-a"), vec![rules::WF_REQUIRES_INVALID]);
    assert_eq!(rules_of(&set, "self"), vec![rules::WF_REQUIRES_CYCLE]);
    assert_eq!(set.valid().count(), 0);
}

#[test]
fn a_name_that_is_both_a_skill_and_a_workflow_is_ambiguous() {
    let tmp = repo();
    workflow(
        tmp.path(),
        "owasp-checklist.md",
        "---\ndescription: d\n---\nW\n",
    );
    workflow(
        tmp.path(),
        "uses.md",
        "---\ndescription: d\nrequires: [owasp-checklist]\n---\nU\n",
    );
    let set = load(tmp.path());
    assert_eq!(rules_of(&set, "uses"), vec![rules::WF_REQUIRES_AMBIGUOUS]);
}

#[test]
fn knowledge_comes_depth_first_each_piece_once() {
    let tmp = repo();
    write_skill(
        &tmp.path().join(".yoi/skills"),
        "threat-model",
        &skill_md("threat-model", "How we model threats."),
    );
    workflow(
        tmp.path(),
        "base-check.md",
        "---\ndescription: d\nrequires: [owasp-checklist]\n---\nBASE\n",
    );
    workflow(
        tmp.path(),
        "full-check.md",
        "---\ndescription: d\nrequires: [base-check, threat-model, owasp-checklist]\n---\nFULL\n",
    );
    let set = load(tmp.path());
    assert_eq!(
        set.knowledge("full-check").unwrap(),
        vec![
            Knowledge::Skill("owasp-checklist".into()),
            Knowledge::Workflow {
                slug: "base-check".into(),
                body: "BASE".into()
            },
            Knowledge::Skill("threat-model".into()),
        ]
    );
    assert!(set.knowledge("missing").is_none());
}

#[cfg(unix)]
#[test]
fn a_linked_workflow_file_is_refused_not_followed() {
    let tmp = repo();
    fs::create_dir_all(tmp.path().join(".yoi/workflow")).unwrap();
    fs::write(
        tmp.path().join("outside.md"),
        "---\ndescription: d\n---\nx\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("outside.md"),
        tmp.path().join(".yoi/workflow/linked.md"),
    )
    .unwrap();
    let set = load(tmp.path());
    assert_eq!(rules_of(&set, "linked"), vec![rules::FILE_READ]);
    assert!(set.get("linked").is_none());
}

#[test]
fn a_skill_with_disable_model_invocation_is_kept_out_of_agents_catalogs_but_stays_valid() {
    let tmp = repo();
    write_skill(
        &tmp.path().join(".yoi/skills"),
        "people-only",
        "---\nname: people-only\ndescription: Only when a person names it.\ndisable-model-invocation: true\n---\n\nBODY\n",
    );
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    let entry = catalog.get("people-only").unwrap();
    assert!(entry.valid, "{:?}", entry.diagnostics);
    assert!(entry.meta().disable_model_invocation);
    assert!(!entry.for_agents());
    assert_eq!(entry.diagnostics[0].rule, rules::FM_UNKNOWN);
    assert!(entry.diagnostics[0].message.contains("yoi honours it"));
    let listed = yoi_skills::render_available_skills(&catalog);
    assert!(
        listed.contains("owasp-checklist") && !listed.contains("people-only"),
        "{listed}"
    );
    // A workflow may still require it: people name it.
    workflow(
        tmp.path(),
        "uses-it.md",
        "---\ndescription: d\nrequires: [people-only]\n---\nx\n",
    );
    assert!(load(tmp.path()).get("uses-it").is_some());
}
