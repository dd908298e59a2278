//! Fault-injection tests for approval; the public behaviour is tested in `tests/proposal.rs`.

use std::fs;
use std::path::Path;

use super::*;

fn write_skill(dir: &Path, name: &str, description: &str) {
    let skill = dir.join(name);
    fs::create_dir_all(&skill).unwrap();
    fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n"),
    )
    .unwrap();
}

#[test]
fn failed_replace_puts_the_old_skill_back_and_leaves_the_proposal_pending() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    let proposals = tmp.path().join("proposals");
    let source = tmp.path().join("src");
    write_skill(&skills, "demo", "Old version.");
    write_skill(&source, "demo", "New version.");
    let old = fs::read(skills.join("demo/SKILL.md")).unwrap();

    let proposal = propose(&proposals, &skills, &source.join("demo"), "pod-1", "t1").unwrap();
    assert_eq!(proposal.kind, ProposalKind::Change);
    let human = HumanApprover::new("alice");
    let err = approve_with_fault(
        &proposals,
        &proposal.id,
        &skills,
        &human,
        "t2",
        Fault::AfterMoveAside,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ProposalError::Io {
                action: "put in place",
                ..
            }
        ),
        "{err:?}"
    );

    assert_eq!(fs::read(skills.join("demo/SKILL.md")).unwrap(), old);
    let leftovers: Vec<_> = fs::read_dir(&skills)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        leftovers,
        vec!["demo".to_string()],
        "no staging or aside folder remains"
    );
    assert_eq!(
        load(&proposals, &proposal.id).unwrap().status,
        ProposalStatus::Pending
    );

    let approved = approve(&proposals, &proposal.id, &skills, &human, "t3").unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    assert!(fs::read_to_string(skills.join("demo/SKILL.md"))
        .unwrap()
        .contains("New version."));
    let kept = proposals.join(&proposal.id).join("previous/demo/SKILL.md");
    assert_eq!(fs::read(kept).unwrap(), old);
}

#[test]
fn failed_new_install_leaves_no_skill_and_no_staging_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    let proposals = tmp.path().join("proposals");
    let source = tmp.path().join("src");
    write_skill(&source, "fresh", "A new skill.");
    let proposal = propose(&proposals, &skills, &source.join("fresh"), "pod-1", "t1").unwrap();
    let human = HumanApprover::new("alice");
    approve_with_fault(
        &proposals,
        &proposal.id,
        &skills,
        &human,
        "t2",
        Fault::AfterMoveAside,
    )
    .unwrap_err();
    assert_eq!(fs::read_dir(&skills).unwrap().count(), 0);
}
