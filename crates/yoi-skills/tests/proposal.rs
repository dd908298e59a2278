//! Proposals: propose, approve, reject, and every refusal.

mod common;

use std::fs;
use std::path::PathBuf;

use common::{skill_md, write_file, write_skill};
use yoi_skills::digest::sha256_hex;
use yoi_skills::proposal::{list, load, MAX_PROPOSAL_BYTES};
use yoi_skills::{
    approve, propose, reject, Catalog, CatalogConfig, HumanApprover, ProposalError, ProposalKind,
    ProposalStatus, SkillSource,
};

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }
    fn skills(&self) -> PathBuf {
        self.repo().join(".yoi/skills")
    }
    fn proposals(&self) -> PathBuf {
        self.repo().join(".yoi/skill-proposals")
    }
    fn source(&self, name: &str, text: &str) -> PathBuf {
        write_skill(&self.tmp.path().join("drafts"), name, text)
    }
}

fn alice() -> HumanApprover {
    HumanApprover::new("alice")
}

#[test]
fn propose_copies_the_folder_and_records_a_pending_new_proposal() {
    let env = Env::new();
    let text = skill_md("lint-fix", "Fix lint errors.");
    let src = env.source("lint-fix", &text);
    write_file(&src, "scripts/fix.sh", b"#!/bin/sh\n");
    let p = propose(
        &env.proposals(),
        &env.skills(),
        &src,
        "pod-coder-1",
        "2026-01-02T03:04:05Z",
    )
    .unwrap();

    assert_eq!(p.name, "lint-fix");
    assert_eq!(p.kind, ProposalKind::New);
    assert_eq!(p.status, ProposalStatus::Pending);
    assert_eq!(p.proposer, "pod-coder-1");
    assert_eq!(p.created_at, "2026-01-02T03:04:05Z");
    assert_eq!(p.digest, sha256_hex(text.as_bytes()));
    assert_eq!(p.files, 2);
    assert!(p.diagnostics.is_empty());
    let dir = env.proposals().join(&p.id);
    assert_eq!(
        fs::read(dir.join("skill/lint-fix/scripts/fix.sh")).unwrap(),
        b"#!/bin/sh\n"
    );
    assert_eq!(load(&env.proposals(), &p.id).unwrap(), p);
    let audit = fs::read_to_string(dir.join("audit.md")).unwrap();
    assert!(audit.starts_with(&format!(
        "<!-- event: skill_proposed id: {}-proposed author: pod-coder-1 at: 2026-01-02T03:04:05Z skill: lint-fix kind: new digest: {} ",
        p.id, p.digest
    )), "{audit}");
    assert!(
        !env.skills().join("lint-fix").exists(),
        "proposing never writes a skill"
    );
    let leftovers = fs::read_dir(env.proposals()).unwrap().count();
    assert_eq!(leftovers, 1, "no staging folder remains");
}

#[test]
fn a_proposal_for_an_existing_workspace_skill_is_a_change() {
    let env = Env::new();
    write_skill(&env.skills(), "lint-fix", &skill_md("lint-fix", "Old."));
    let src = env.source("lint-fix", &skill_md("lint-fix", "New."));
    let p = propose(&env.proposals(), &env.skills(), &src, "bob", "t").unwrap();
    assert_eq!(p.kind, ProposalKind::Change);
}

#[test]
fn approve_installs_the_skill_and_audits_who_when_and_what() {
    let env = Env::new();
    let src = env.source("lint-fix", &skill_md("lint-fix", "Fix lint errors."));
    write_file(&src, "references/r.md", b"ref");
    let p = propose(&env.proposals(), &env.skills(), &src, "pod-1", "t1").unwrap();
    let approved = approve(&env.proposals(), &p.id, &env.skills(), &alice(), "t2").unwrap();

    assert_eq!(approved.status, ProposalStatus::Approved);
    let decision = approved.decision.as_ref().unwrap();
    assert_eq!(
        (decision.by.as_str(), decision.at.as_str()),
        ("alice", "t2")
    );
    assert_eq!(decision.replaced_digest, None);
    assert_eq!(
        fs::read(env.skills().join("lint-fix/references/r.md")).unwrap(),
        b"ref"
    );
    let catalog = Catalog::load(&CatalogConfig::new(env.repo()));
    let entry = catalog.get("lint-fix").unwrap();
    assert_eq!(
        (entry.source, entry.digest.as_str(), entry.valid),
        (SkillSource::Workspace, p.digest.as_str(), true)
    );

    let audit = fs::read_to_string(env.proposals().join(&p.id).join("audit.md")).unwrap();
    assert_eq!(audit.matches("<!-- event:").count(), 2);
    assert!(audit.contains(&format!(
        "<!-- event: skill_approved id: {}-approved author: alice at: t2 skill: lint-fix digest: {}",
        p.id, p.digest
    )), "{audit}");
    assert_eq!(load(&env.proposals(), &p.id).unwrap(), approved);
}

#[test]
fn approving_a_change_replaces_the_skill_and_keeps_the_old_copy() {
    let env = Env::new();
    let old = skill_md("lint-fix", "Old.");
    write_skill(&env.skills(), "lint-fix", &old);
    write_file(&env.skills().join("lint-fix"), "stale.md", b"only in old");
    let src = env.source("lint-fix", &skill_md("lint-fix", "New."));
    let p = propose(&env.proposals(), &env.skills(), &src, "pod-1", "t1").unwrap();
    let approved = approve(&env.proposals(), &p.id, &env.skills(), &alice(), "t2").unwrap();

    let decision = approved.decision.unwrap();
    assert_eq!(decision.replaced_digest, Some(sha256_hex(old.as_bytes())));
    assert_eq!(decision.previous.as_deref(), Some("previous/lint-fix"));
    assert!(
        !env.skills().join("lint-fix/stale.md").exists(),
        "the folder is replaced whole"
    );
    let kept = env.proposals().join(&p.id).join("previous/lint-fix");
    assert_eq!(fs::read_to_string(kept.join("SKILL.md")).unwrap(), old);
    assert_eq!(fs::read(kept.join("stale.md")).unwrap(), b"only in old");
    let names: Vec<String> = fs::read_dir(env.skills())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["lint-fix"]);
}

#[test]
fn approving_an_invalid_proposal_is_refused_and_writes_nothing() {
    let env = Env::new();
    let src = env.source("half", "---\nname: half\n---\n");
    let p = propose(&env.proposals(), &env.skills(), &src, "pod-1", "t1").unwrap();
    assert_eq!(p.error_count(), 1);
    assert_eq!(
        approve(&env.proposals(), &p.id, &env.skills(), &alice(), "t2").unwrap_err(),
        ProposalError::Invalid {
            id: p.id.clone(),
            errors: 1
        }
    );
    assert!(!env.skills().exists());
    assert_eq!(
        load(&env.proposals(), &p.id).unwrap().status,
        ProposalStatus::Pending
    );
}

#[test]
fn a_decided_proposal_cannot_be_decided_again() {
    let env = Env::new();
    let a = propose(
        &env.proposals(),
        &env.skills(),
        &env.source("aaa", &skill_md("aaa", "A.")),
        "p",
        "t1",
    )
    .unwrap();
    let b = propose(
        &env.proposals(),
        &env.skills(),
        &env.source("bbb", &skill_md("bbb", "B.")),
        "p",
        "t1",
    )
    .unwrap();
    approve(&env.proposals(), &a.id, &env.skills(), &alice(), "t2").unwrap();
    reject(
        &env.proposals(),
        &b.id,
        &alice(),
        "Duplicates an existing skill.",
        "t2",
    )
    .unwrap();

    let again =
        |id: &str| approve(&env.proposals(), id, &env.skills(), &alice(), "t3").unwrap_err();
    assert_eq!(
        again(&a.id),
        ProposalError::AlreadyDecided {
            id: a.id.clone(),
            status: ProposalStatus::Approved
        }
    );
    assert_eq!(
        again(&b.id),
        ProposalError::AlreadyDecided {
            id: b.id.clone(),
            status: ProposalStatus::Rejected
        }
    );
    assert_eq!(
        reject(&env.proposals(), &a.id, &alice(), "late", "t3").unwrap_err(),
        ProposalError::AlreadyDecided {
            id: a.id.clone(),
            status: ProposalStatus::Approved
        }
    );
    assert!(!env.skills().join("bbb").exists());
}

#[test]
fn reject_records_the_reason_and_audits_it() {
    let env = Env::new();
    let p = propose(
        &env.proposals(),
        &env.skills(),
        &env.source("aaa", &skill_md("aaa", "A.")),
        "p",
        "t1",
    )
    .unwrap();
    assert_eq!(
        reject(&env.proposals(), &p.id, &alice(), "  ", "t2").unwrap_err(),
        ProposalError::MissingField { field: "reason" }
    );
    let rejected = reject(
        &env.proposals(),
        &p.id,
        &alice(),
        "Too broad.\n---\nSplit it.",
        "t2",
    )
    .unwrap();
    assert_eq!(rejected.status, ProposalStatus::Rejected);
    assert_eq!(
        rejected.decision.unwrap().reason.as_deref(),
        Some("Too broad.\n---\nSplit it.")
    );
    let audit = fs::read_to_string(env.proposals().join(&p.id).join("audit.md")).unwrap();
    assert!(audit.contains("<!-- event: skill_rejected"), "{audit}");
    assert!(
        audit.contains("Too broad.\n\\---\nSplit it."),
        "a bare --- in the reason is escaped: {audit}"
    );
}

#[test]
fn propose_refuses_symlinks_parent_components_bad_names_and_missing_skill_md() {
    let env = Env::new();
    let src = env.source("linky", &skill_md("linky", "L."));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/hosts", src.join("hosts")).unwrap();
        assert_eq!(
            propose(&env.proposals(), &env.skills(), &src, "p", "t").unwrap_err(),
            ProposalError::Symlink {
                path: "hosts".to_string()
            }
        );
        let link = env.tmp.path().join("drafts/alias");
        std::os::unix::fs::symlink(env.tmp.path().join("drafts/other"), &link).unwrap();
        assert!(matches!(
            propose(&env.proposals(), &env.skills(), &link, "p", "t"),
            Err(ProposalError::Symlink { .. })
        ));
    }
    let dotted = env.tmp.path().join("drafts/linky/../linky");
    assert!(matches!(
        propose(&env.proposals(), &env.skills(), &dotted, "p", "t"),
        Err(ProposalError::ParentComponent { .. })
    ));
    let bad = env.source("Bad_Name", &skill_md("Bad_Name", "B."));
    assert_eq!(
        propose(&env.proposals(), &env.skills(), &bad, "p", "t").unwrap_err(),
        ProposalError::InvalidName {
            name: "Bad_Name".to_string()
        }
    );
    let empty = env.tmp.path().join("drafts/empty");
    fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        propose(&env.proposals(), &env.skills(), &empty, "p", "t").unwrap_err(),
        ProposalError::MissingSkillFile
    );
    assert_eq!(
        propose(&env.proposals(), &env.skills(), &empty, "", "t").unwrap_err(),
        ProposalError::MissingField { field: "proposer" }
    );
    assert!(
        list(&env.proposals()).unwrap().is_empty(),
        "nothing was stored"
    );
}

#[test]
fn propose_refuses_a_folder_over_the_size_bound() {
    let env = Env::new();
    let src = env.source("big", &skill_md("big", "B."));
    fs::write(src.join("blob.bin"), vec![0u8; MAX_PROPOSAL_BYTES as usize]).unwrap();
    assert_eq!(
        propose(&env.proposals(), &env.skills(), &src, "p", "t").unwrap_err(),
        ProposalError::TooLarge {
            limit: MAX_PROPOSAL_BYTES
        }
    );
}

#[test]
fn approve_refuses_a_copy_changed_after_proposing() {
    let env = Env::new();
    let p = propose(
        &env.proposals(),
        &env.skills(),
        &env.source("aaa", &skill_md("aaa", "A.")),
        "p",
        "t1",
    )
    .unwrap();
    fs::write(
        env.proposals().join(&p.id).join("skill/aaa/extra.sh"),
        "rm -rf /",
    )
    .unwrap();
    assert!(matches!(
        approve(&env.proposals(), &p.id, &env.skills(), &alice(), "t2"),
        Err(ProposalError::Tampered { .. })
    ));
    assert!(!env.skills().join("aaa").exists());
}

#[test]
fn ids_from_outside_are_checked_before_touching_the_disk() {
    let env = Env::new();
    for id in ["../x", "", "A", "a/b"] {
        assert_eq!(
            approve(&env.proposals(), id, &env.skills(), &alice(), "t").unwrap_err(),
            ProposalError::BadId { id: id.to_string() }
        );
    }
    assert_eq!(
        approve(&env.proposals(), "p000", &env.skills(), &alice(), "t").unwrap_err(),
        ProposalError::NotFound {
            id: "p000".to_string()
        }
    );
}

#[test]
fn an_approver_must_have_a_name() {
    let env = Env::new();
    let p = propose(
        &env.proposals(),
        &env.skills(),
        &env.source("aaa", &skill_md("aaa", "A.")),
        "p",
        "t1",
    )
    .unwrap();
    assert_eq!(
        approve(
            &env.proposals(),
            &p.id,
            &env.skills(),
            &HumanApprover::new(""),
            "t2"
        )
        .unwrap_err(),
        ProposalError::MissingField { field: "approver" }
    );
}

#[test]
fn identical_proposals_get_distinct_ids_and_list_in_creation_order() {
    let env = Env::new();
    let src = env.source("aaa", &skill_md("aaa", "A."));
    let first = propose(
        &env.proposals(),
        &env.skills(),
        &src,
        "p",
        "2026-01-01T00:00:00Z",
    )
    .unwrap();
    let second = propose(
        &env.proposals(),
        &env.skills(),
        &src,
        "p",
        "2026-01-01T00:00:00Z",
    )
    .unwrap();
    let earlier = propose(
        &env.proposals(),
        &env.skills(),
        &src,
        "p",
        "2025-12-31T00:00:00Z",
    )
    .unwrap();
    assert_ne!(first.id, second.id);
    let ids: Vec<String> = list(&env.proposals())
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids[0], earlier.id);
    assert_eq!(ids.len(), 3);
}
