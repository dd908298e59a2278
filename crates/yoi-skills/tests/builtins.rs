//! The built-in skills: present on disk and in the binary, and lint clean.

use std::fs;
use std::path::Path;

use yoi_skills::{builtins, lint_skill_md};

#[test]
fn every_builtin_lints_without_any_diagnostic() {
    for builtin in builtins() {
        let linted = lint_skill_md(builtin.name, builtin.skill_md);
        assert!(
            linted.diagnostics.is_empty(),
            "{}: {:#?}",
            builtin.name,
            linted.diagnostics
        );
        assert_eq!(linted.meta.name.as_deref(), Some(builtin.name));
        let body_lines = linted.body.unwrap().lines().count();
        assert!(
            body_lines < 200,
            "{} is meant to be short ({body_lines} lines)",
            builtin.name
        );
    }
}

#[test]
fn the_builtin_table_matches_the_builtin_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("builtin");
    let mut on_disk: Vec<String> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let table: Vec<&str> = builtins().iter().map(|b| b.name).collect();
    assert_eq!(on_disk, table);
    for builtin in builtins() {
        assert_eq!(
            fs::read(root.join(builtin.name).join("SKILL.md")).unwrap(),
            builtin.skill_md
        );
        for file in builtin.files {
            assert_eq!(
                fs::read(root.join(builtin.name).join(file.path)).unwrap(),
                file.bytes
            );
        }
    }
}

#[test]
fn the_ticket_work_skill_teaches_the_rules_a_coder_must_follow() {
    let body = String::from_utf8(
        yoi_skills::builtin("yoi-ticket-work")
            .unwrap()
            .skill_md
            .to_vec(),
    )
    .unwrap();
    for needle in [
        "IntentPacket",
        "worktree",
        ".yoi/tickets",
        "YOI-RESULT: done",
        "output contract",
        "Commit",
    ] {
        assert!(body.contains(needle), "missing {needle}");
    }
}

#[test]
fn the_review_skill_binds_the_verdict_to_the_commit() {
    let body =
        String::from_utf8(yoi_skills::builtin("yoi-review").unwrap().skill_md.to_vec()).unwrap();
    for needle in [
        "YOI-VERDICT: approve",
        "request_changes",
        "git rev-parse HEAD",
        "path:line",
        "Acceptance criteria",
        "Write scope",
    ] {
        assert!(body.contains(needle), "missing {needle}");
    }
}
