//! Activation: recorded before the body is returned, refused for unknown or invalid skills.

mod common;

use common::{skill_md, write_file, FailingRecorder, MemoryRecorder};
use yoi_skills::digest::sha256_hex;
use yoi_skills::{
    activate, ActivateError, ActivationRecord, ActivationRecorder, ActivationRequest, Catalog,
    CatalogConfig, RecorderError, SkillSource, MAX_LISTED_FILES,
};

fn request() -> ActivationRequest {
    ActivationRequest {
        who: "pod-coder-1".to_string(),
        ticket: Some("01JD0000000000000000000000".to_string()),
        assignment: Some("asg-7".to_string()),
    }
}

fn catalog_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Catalog) {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join(".yoi/skills");
    for (rel, text) in files {
        write_file(&skills, rel, text.as_bytes());
    }
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    (tmp, catalog)
}

#[test]
fn activation_is_recorded_with_digest_and_principal_before_the_body_is_returned() {
    let text = skill_md("demo", "Demo skill.");
    let (_tmp, catalog) = catalog_with(&[("demo/SKILL.md", &text)]);
    let mut recorder = MemoryRecorder::default();
    let activation = activate(&catalog, "demo", request(), &mut recorder).unwrap();

    assert_eq!(activation.body, "# demo\n\nDo the thing.");
    assert_eq!(activation.digest, sha256_hex(text.as_bytes()));
    assert_eq!(
        recorder.records,
        [ActivationRecord {
            skill: "demo".to_string(),
            digest: sha256_hex(text.as_bytes()),
            source: SkillSource::Workspace,
            who: "pod-coder-1".to_string(),
            ticket: Some("01JD0000000000000000000000".to_string()),
            assignment: Some("asg-7".to_string()),
        }]
    );
}

/// Counts calls and checks each record names the activated skill.
struct OrderCheckingRecorder {
    calls: usize,
}

impl ActivationRecorder for OrderCheckingRecorder {
    fn record(&mut self, record: &ActivationRecord) -> Result<(), RecorderError> {
        self.calls += 1;
        assert_eq!(record.skill, "demo");
        Ok(())
    }
}

#[test]
fn the_recorder_is_called_exactly_once_per_activation() {
    let (_tmp, catalog) = catalog_with(&[("demo/SKILL.md", &skill_md("demo", "D."))]);
    let mut recorder = OrderCheckingRecorder { calls: 0 };
    activate(&catalog, "demo", request(), &mut recorder).unwrap();
    activate(&catalog, "demo", request(), &mut recorder).unwrap();
    assert_eq!(recorder.calls, 2);
}

#[test]
fn activation_fails_without_a_body_when_recording_fails() {
    let (_tmp, catalog) = catalog_with(&[("demo/SKILL.md", &skill_md("demo", "D."))]);
    let err = activate(&catalog, "demo", request(), &mut FailingRecorder).unwrap_err();
    assert_eq!(
        err,
        ActivateError::NotRecorded {
            name: "demo".to_string(),
            source: RecorderError {
                reason: "database is unavailable".to_string()
            },
        }
    );
    assert!(!err.to_string().contains("Do the thing"));
}

#[test]
fn unknown_and_invalid_skills_are_refused_and_not_recorded() {
    let (_tmp, catalog) = catalog_with(&[("bad/SKILL.md", "---\nname: bad\n---\nSecret body.\n")]);
    let mut recorder = MemoryRecorder::default();
    assert_eq!(
        activate(&catalog, "nope", request(), &mut recorder).unwrap_err(),
        ActivateError::UnknownSkill {
            name: "nope".to_string()
        }
    );
    assert_eq!(
        activate(&catalog, "bad", request(), &mut recorder).unwrap_err(),
        ActivateError::InvalidSkill {
            name: "bad".to_string(),
            errors: 1
        }
    );
    assert!(recorder.records.is_empty());
}

#[test]
fn a_blank_principal_is_refused() {
    let (_tmp, catalog) = catalog_with(&[("demo/SKILL.md", &skill_md("demo", "D."))]);
    let mut recorder = MemoryRecorder::default();
    let mut req = request();
    req.who = " ".to_string();
    assert_eq!(
        activate(&catalog, "demo", req, &mut recorder).unwrap_err(),
        ActivateError::MissingWho
    );
    assert!(recorder.records.is_empty());
}

#[test]
fn activation_lists_files_and_says_what_yoi_does_not_enforce_or_run() {
    let text = "---\nname: tooly\ndescription: T.\nallowed-tools: Bash(git:*) Read\n---\nUse scripts/run.sh.\n";
    let (_tmp, catalog) = catalog_with(&[
        ("tooly/SKILL.md", text),
        ("tooly/scripts/run.sh", "echo hi"),
        ("tooly/references/REF.md", "ref"),
        ("tooly/.git/config", "hidden"),
        ("tooly/assets/a/b.txt", "b"),
    ]);
    let activation =
        activate(&catalog, "tooly", request(), &mut MemoryRecorder::default()).unwrap();
    assert_eq!(
        activation.files.files,
        ["assets/a/b.txt", "references/REF.md", "scripts/run.sh"]
    );
    assert!(!activation.files.truncated);
    assert_eq!(activation.scripts, ["scripts/run.sh"]);
    let tools = activation.allowed_tools.as_ref().unwrap();
    assert_eq!(tools.tools, ["Bash(git:*)", "Read"]);
    assert!(!tools.enforced);
    assert!(activation
        .notes
        .iter()
        .any(|n| n.contains("not enforced by yoi")));
    assert!(activation
        .notes
        .iter()
        .any(|n| n.contains("never executed by yoi")));
}

#[test]
fn the_file_listing_is_capped_and_flagged() {
    let (tmp, catalog) = catalog_with(&[("many/SKILL.md", &skill_md("many", "M."))]);
    for i in 0..(MAX_LISTED_FILES + 5) {
        write_file(
            &tmp.path().join(".yoi/skills/many/references"),
            &format!("f{i:04}.md"),
            b"x",
        );
    }
    let activation = activate(&catalog, "many", request(), &mut MemoryRecorder::default()).unwrap();
    assert_eq!(activation.files.files.len(), MAX_LISTED_FILES);
    assert!(activation.files.truncated);
    assert_eq!(activation.files.files[0], "references/f0000.md");
}

#[test]
fn builtins_activate_with_their_bundled_files() {
    let (_tmp, catalog) = catalog_with(&[]);
    let activation = activate(
        &catalog,
        "agent-skills-format",
        request(),
        &mut MemoryRecorder::default(),
    )
    .unwrap();
    assert_eq!(activation.source, SkillSource::Builtin);
    assert_eq!(activation.files.files, ["references/frontmatter.md"]);
    assert!(activation.body.starts_with("# The Agent Skills format"));
    assert!(activation.allowed_tools.is_none());
    assert!(activation.notes.is_empty());
}

#[test]
fn activation_serialises_without_host_paths() {
    let (tmp, catalog) = catalog_with(&[("demo/SKILL.md", &skill_md("demo", "D."))]);
    let activation = activate(&catalog, "demo", request(), &mut MemoryRecorder::default()).unwrap();
    let json = serde_json::to_string(&activation).unwrap();
    assert!(!json.contains(tmp.path().to_str().unwrap()));
    assert!(json.contains("\".yoi/skills/demo/SKILL.md\""));
}
