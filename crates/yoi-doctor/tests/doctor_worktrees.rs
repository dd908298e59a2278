//! Doctor's worktree and branch checks on real git repositories: each test builds the situation
//! with the store's operations and the git CLI, asserts the exact finding, then runs the git
//! commands the finding's fix names and checks that doctor is satisfied afterwards.

mod common;
use common as doctor_check;
use doctor_check::check;
use yoi_testkit::repo as git_repo;

use git_repo::{git, human, GitFx, NoGitFx};
use yoi_core::finding::{Finding, SafeFix, Severity};
use yoi_core::{Principal, TicketId};
use yoi_store::ops::{self, MergeEvidence, TransitionRequest};
use yoi_store::{Ctx, Workspace};

/// A well-formed ULID no ticket in these tests has.
const NOBODY: &str = "01JDX3V8Q4R5S6T7V8W9XAYBZC";

/// The worktree and branch findings only.
fn git_findings(ws: &Workspace) -> Vec<Finding> {
    check(ws, false)
        .findings
        .into_iter()
        .filter(|f| {
            ["worktree.", "branch.", "git."]
                .iter()
                .any(|p| f.check.starts_with(p))
        })
        .collect()
}

fn only(findings: &[Finding], check: &str) -> Finding {
    let found: Vec<&Finding> = findings.iter().filter(|f| f.check == check).collect();
    assert_eq!(found.len(), 1, "one {check} expected in {findings:#?}");
    found[0].clone()
}

/// The only worktree or branch finding, asserting there is exactly one and that it is `check`.
fn sole_git_finding(ws: &Workspace, check: &str) -> Finding {
    let findings = git_findings(ws);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    only(&findings, check)
}

/// Asserts a finding's `seen` and `fix` texts, word for word.
fn assert_says(f: &Finding, seen: String, fix: String) {
    assert_eq!(f.seen, seen);
    assert_eq!(f.fix.as_deref(), Some(fix.as_str()));
}

/// The `git …` commands quoted in a fix, as argument lists.
fn git_commands(fix: &str) -> Vec<Vec<String>> {
    fix.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|cmd| cmd.strip_prefix("git "))
        .map(|args| args.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Run the git commands of a fix, in order, from the repository root.
fn follow(fx: &GitFx, f: &Finding) {
    let commands = git_commands(f.fix.as_deref().unwrap());
    assert!(!commands.is_empty(), "no git command in {f:?}");
    for args in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(fx.root(), &args);
    }
}

fn complete(fx: &GitFx, id: &TicketId) {
    let ev = MergeEvidence {
        target_ref: "main".into(),
        before: fx.head.clone(),
        after: fx.head.clone(),
        commit: fx.head.clone(),
    };
    let ctx = Ctx::new(Principal::service(), human().now);
    ops::complete(
        &fx.ws,
        &ctx,
        id.as_str(),
        &TransitionRequest::default(),
        &ev,
    )
    .unwrap();
}

#[test]
fn a_healthy_accepted_ticket_has_no_findings() {
    let fx = GitFx::new();
    fx.accepted("Fix x", "fix-x");
    fx.queued("Waiting");
    let report = check(&fx.ws, false);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn a_workspace_outside_git_gets_no_worktree_findings() {
    let fx = NoGitFx::new();
    std::fs::create_dir_all(fx.root().join(format!(".worktree/{NOBODY}-x"))).unwrap();
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn worktree_missing_when_git_no_longer_has_it_and_its_fix_restores_it() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    git(fx.root(), &["worktree", "remove", &t.worktree]);

    let f = sole_git_finding(&fx.ws, "worktree.missing");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.ticket.as_deref(), Some(t.id.as_str()));
    assert_eq!(
        f.path.as_deref(),
        Some(format!(".yoi/tickets/{}/artifacts/orchestration-plan.jsonl", t.id).as_str())
    );
    assert_eq!(f.line, Some(1));
    assert_says(
        &f,
        format!(
            "ticket {} is in progress in worktree `{}`, but no worktree is registered there",
            t.id, t.worktree
        ),
        format!(
            "`git worktree add {} {}`, or `yoi ticket cancel {} --resolution \"<why>\"`",
            t.worktree, t.branch, t.id
        ),
    );

    follow(&fx, &f);
    assert!(t.path.is_dir());
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn a_worktree_folder_deleted_by_hand_is_missing_and_prunable_and_fix_prunes_it() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    std::fs::remove_dir_all(&t.path).unwrap();

    let findings = git_findings(&fx.ws);
    assert_eq!(findings.len(), 2, "{findings:#?}");
    let missing = only(&findings, "worktree.missing");
    assert!(missing
        .seen
        .ends_with("but its folder is gone (git still holds its record)"));
    assert!(missing.fix.as_deref().unwrap().starts_with(&format!(
        "`git worktree prune`, then `git worktree add {} {}`",
        t.worktree, t.branch
    )));
    let prunable = only(&findings, "worktree.prunable");
    assert_eq!(prunable.severity, Severity::Warning);
    assert_eq!(prunable.path.as_deref(), Some(t.worktree.as_str()));
    assert_eq!(prunable.ticket.as_deref(), Some(t.id.as_str()));
    assert_eq!(prunable.safe_fix, Some(SafeFix::PruneWorktrees));

    let fixed = check(&fx.ws, true);
    assert_eq!(
        fixed.fixed,
        [format!(
            "pruned the worktree records of {} (their folders were gone)",
            t.worktree
        )]
    );
    assert_eq!(fx.git_worktrees(), [fx.root().to_path_buf()]);
    // The ticket still needs its worktree; the fix now is a plain add.
    let left = git_findings(&fx.ws);
    let missing = only(&left, "worktree.missing");
    assert_eq!(left.len(), 1);
    follow(&fx, &missing);
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn branch_missing_names_the_base_commit_and_its_fix_recreates_it() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    git(fx.root(), &["worktree", "remove", &t.worktree]);
    git(fx.root(), &["branch", "-D", &t.branch]);

    let findings = git_findings(&fx.ws);
    assert_eq!(findings.len(), 2, "{findings:#?}");
    let f = only(&findings, "branch.missing");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.ticket.as_deref(), Some(t.id.as_str()));
    assert_eq!(
        f.seen,
        format!(
            "ticket {} is in progress on branch `{}`, which does not exist",
            t.id, t.branch
        )
    );
    let fix = f.fix.as_deref().unwrap();
    assert!(
        fix.starts_with(&format!("`git branch {} {}`", t.branch, fx.head)),
        "{fix}"
    );
    assert!(fix.contains(&format!("`yoi ticket cancel {} --resolution", t.id)));
    let wt = only(&findings, "worktree.missing");
    assert!(wt.fix.as_deref().unwrap().starts_with(&format!(
        "re-create the branch `{}` (see branch.missing), then `git worktree add",
        t.branch
    )));

    git(fx.root(), &["branch", &t.branch, &fx.head]);
    follow(&fx, &only(&git_findings(&fx.ws), "worktree.missing"));
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn worktree_orphan_for_a_clean_worktree_of_a_ticket_not_in_progress() {
    let fx = GitFx::new();
    // A done ticket whose worktree stayed behind.
    let done = fx.accepted("Shipped", "shipped");
    complete(&fx, &done.id);
    // A queued ticket with a worktree someone made by hand.
    let queued = fx.queued("Waiting");
    fx.worktree_on_new_branch(
        &format!("yoi/{queued}-wait"),
        format!(".worktree/{queued}-wait"),
    );

    let findings = git_findings(&fx.ws);
    assert_eq!(findings.len(), 2, "{findings:#?}");
    let of = |id: &TicketId| {
        findings
            .iter()
            .find(|f| f.ticket.as_deref() == Some(id.as_str()))
            .unwrap()
            .clone()
    };
    let f = of(&done.id);
    assert_eq!(f.check, "worktree.orphan");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.path.as_deref(), Some(done.worktree.as_str()));
    assert_says(
        &f,
        format!(
            "worktree `{}` (branch `{}`) belongs to ticket {}, which is done; it is clean",
            done.worktree, done.branch, done.id
        ),
        format!(
            "`git worktree remove {}`; the branch `{}` stays",
            done.worktree, done.branch
        ),
    );
    let q = of(&queued);
    assert_eq!(q.check, "worktree.orphan");
    assert!(q.seen.contains("which is queued"), "{}", q.seen);

    follow(&fx, &f);
    follow(&fx, &q);
    assert!(!done.path.exists());
    assert!(fx.git_branch(&done.branch).is_some(), "the branch stays");
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn worktree_orphan_for_a_yoi_branch_outside_the_folder_whose_ticket_is_missing() {
    let fx = GitFx::new();
    let branch = format!("yoi/{NOBODY}-ghost");
    let outside = fx.beside(&format!("{}-elsewhere", NOBODY));
    fx.worktree_on_new_branch(&branch, &outside);

    let findings = git_findings(&fx.ws);
    let f = only(&findings, "worktree.orphan");
    assert_eq!(f.ticket.as_deref(), Some(NOBODY));
    assert!(
        f.seen
            .contains(&format!("belongs to ticket {NOBODY}, which does not exist")),
        "{}",
        f.seen
    );
    // Its branch is an orphan too; deleting it needs the worktree gone first.
    let b = only(&findings, "branch.orphan");
    assert!(b.fix.as_deref().unwrap().ends_with(&format!(
        "then `git worktree remove {}`, then `git branch -D {branch}`",
        outside.display()
    )));
    follow(&fx, &f);
    assert!(!outside.exists());
    follow(&fx, &only(&git_findings(&fx.ws), "branch.orphan"));
    assert!(fx.git_branch(&branch).is_none());
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn worktree_dirty_closed_for_a_cancelled_ticket_that_kept_its_changes() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    std::fs::write(t.path.join("notes.txt"), "half done\n").unwrap();
    fx.cancel(&t.id);

    let f = sole_git_finding(&fx.ws, "worktree.dirty_closed");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.ticket.as_deref(), Some(t.id.as_str()));
    assert_says(
        &f,
        format!(
            "worktree `{}` (branch `{}`) belongs to ticket {}, which is closed; it has uncommitted changes",
            t.worktree, t.branch, t.id
        ),
        format!(
            "commit or stash the changes in `{w}` (`git -C {w} status` lists them), then `git worktree remove {w}`",
            w = t.worktree
        ),
    );
    // Removing it as it is is refused by git too, so nothing is lost by accident.
    let refused = git_repo::git_output(fx.root(), &["worktree", "remove", &t.worktree]);
    assert!(!refused.status.success());

    git(&t.path, &["add", "-A"]);
    git(&t.path, &["commit", "-q", "-m", "keep the notes"]);
    git(fx.root(), &["worktree", "remove", &t.worktree]);
    assert!(git_findings(&fx.ws).is_empty());
    assert!(fx.git_branch(&t.branch).is_some());
}

#[test]
fn a_dirty_worktree_of_a_ticket_back_in_planning_is_kept_without_a_finding() {
    let fx = GitFx::new();
    let id = fx.queued("Stopped");
    let wt = format!(".worktree/{id}-stopped");
    fx.worktree_on_new_branch(&format!("yoi/{id}-stopped"), &wt);
    std::fs::write(fx.root().join(&wt).join("partial.txt"), "wip").unwrap();
    let req = TransitionRequest {
        reason: Some("needs a decision".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&fx.ws, &human(), id.as_str(), &req).unwrap();
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn branch_orphan_for_a_yoi_branch_whose_ticket_does_not_exist() {
    let fx = GitFx::new();
    let queued = fx.queued("Waiting");
    let ghost = format!("yoi/{NOBODY}-ghost");
    git(fx.root(), &["branch", &ghost]);
    // Not reported: a branch of an existing ticket, and branches that name no ticket.
    git(fx.root(), &["branch", &format!("yoi/{queued}-early")]);
    git(fx.root(), &["branch", "yoi/login"]);
    git(fx.root(), &["branch", &format!("feature/{NOBODY}-x")]);

    let f = sole_git_finding(&fx.ws, "branch.orphan");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.ticket.as_deref(), Some(NOBODY));
    assert_says(
        &f,
        format!(
            "branch `{ghost}` (at {}) names ticket {NOBODY}, which does not exist",
            &fx.head[..12]
        ),
        format!(
            "check that nothing needs it (`git log main..{ghost}` lists its commits not on main), then `git branch -D {ghost}`"
        ),
    );
    follow(&fx, &f);
    assert!(fx.git_branch(&ghost).is_none());
    assert!(git_findings(&fx.ws).is_empty());
}

#[test]
fn worktree_prunable_for_any_linked_worktree_and_fix_prunes_only_records() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    let elsewhere = fx.beside("feature-wt");
    fx.worktree_on_new_branch("feature", &elsewhere);
    std::fs::remove_dir_all(&elsewhere).unwrap();

    let f = sole_git_finding(&fx.ws, "worktree.prunable");
    assert_eq!(f.ticket, None);
    assert_eq!(f.path.as_deref(), elsewhere.to_str());
    assert_eq!(
        f.seen,
        format!(
            "git holds a record of worktree `{}` (branch `feature`), but its folder is gone",
            elsewhere.display()
        )
    );

    // Without --fix nothing changes.
    assert_eq!(fx.git_worktrees().len(), 3);
    let fixed = check(&fx.ws, true);
    assert_eq!(fixed.fixed.len(), 1, "{:?}", fixed.fixed);
    assert!(fixed.findings.is_empty(), "{:#?}", fixed.findings);
    assert_eq!(
        fx.git_worktrees(),
        [fx.root().to_path_buf(), t.path.clone()]
    );
    assert!(fx.git_branch("feature").is_some());
    assert!(t.path.is_dir());
}
