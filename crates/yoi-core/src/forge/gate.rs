//! The merge gate on the exact head: what merges is exactly the head that every check and every
//! verdict was for. [`evaluate`] takes what the forge reported (check runs and commit statuses,
//! each with the SHA it is for), the required checks and where that list came from, the
//! reviews, and the SHAs yoi's own verifier and reviewer passed; it answers open for one head
//! SHA, or closed with every reason. A result for another SHA never counts; of two results for
//! the same check at the same head the newer wins ([`newer`]), so an older one arriving late
//! never overwrites it.

use serde::{Deserialize, Serialize};

/// How a check or status ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
    Skipped,
    Cancelled,
    TimedOut,
    ActionRequired,
    Stale,
    /// A legacy status `error`.
    Error,
    /// Queued, in progress, or a status `pending`.
    Pending,
}

impl Conclusion {
    /// A check run's `conclusion` (None while it runs).
    pub fn of_check_run(conclusion: Option<&str>) -> Conclusion {
        match conclusion {
            None => Conclusion::Pending,
            Some("success") => Conclusion::Success,
            Some("neutral") => Conclusion::Neutral,
            Some("skipped") => Conclusion::Skipped,
            Some("cancelled") => Conclusion::Cancelled,
            Some("timed_out") => Conclusion::TimedOut,
            Some("action_required") => Conclusion::ActionRequired,
            Some("stale") => Conclusion::Stale,
            Some(_) => Conclusion::Failure,
        }
    }

    /// A legacy commit status's `state`.
    pub fn of_status(state: &str) -> Conclusion {
        match state {
            "success" => Conclusion::Success,
            "pending" => Conclusion::Pending,
            "error" => Conclusion::Error,
            _ => Conclusion::Failure,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
            Conclusion::Skipped => "skipped",
            Conclusion::Cancelled => "cancelled",
            Conclusion::TimedOut => "timed_out",
            Conclusion::ActionRequired => "action_required",
            Conclusion::Stale => "stale",
            Conclusion::Error => "error",
            Conclusion::Pending => "pending",
        }
    }
}

/// Where a check result came from: GitHub has two kinds and CI systems use one or the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    CheckRun,
    Status,
}

/// One check result, for one SHA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckResult {
    /// A check run's name or a status's context.
    pub name: String,
    pub sha: String,
    pub kind: CheckKind,
    pub conclusion: Conclusion,
    /// When it last changed (RFC 3339, as the forge wrote it); orders two results of one check.
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Whether `a` is newer than `b` (same check, same SHA): later `at`, and on a tie a finished
/// result over a pending one, so a late "in progress" never hides a conclusion.
pub fn newer(a: &CheckResult, b: &CheckResult) -> bool {
    match a.at.cmp(&b.at) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            b.conclusion == Conclusion::Pending && a.conclusion != Conclusion::Pending
        }
    }
}

/// Keep, per (kind, name, SHA), only the newest result.
pub fn latest(results: impl IntoIterator<Item = CheckResult>) -> Vec<CheckResult> {
    let mut out: Vec<CheckResult> = Vec::new();
    for r in results {
        match out
            .iter_mut()
            .find(|o| o.name == r.name && o.sha == r.sha && o.kind == r.kind)
        {
            Some(o) if newer(&r, o) => *o = r,
            Some(_) => {}
            None => out.push(r),
        }
    }
    out
}

/// A review's state as GitHub names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    Dismissed,
    Pending,
}

impl ReviewState {
    pub fn parse(s: &str) -> ReviewState {
        match s {
            "APPROVED" => ReviewState::Approved,
            "CHANGES_REQUESTED" => ReviewState::ChangesRequested,
            "DISMISSED" => ReviewState::Dismissed,
            "PENDING" => ReviewState::Pending,
            _ => ReviewState::Commented,
        }
    }
}

/// One human review on the pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Review {
    pub id: u64,
    pub user: String,
    pub state: ReviewState,
    /// The commit the review was given for.
    pub commit_id: String,
    #[serde(default)]
    pub body: String,
}

/// Where the list of required checks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequiredSource {
    /// The branch's rulesets and, where readable, its classic protection.
    Forge,
    /// `[forge] required_checks`, because the token could read neither.
    Configured,
    /// Nothing configured either: every check reported for the head must succeed.
    Reported,
}

/// The required checks of the target branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Required {
    pub checks: Vec<String>,
    pub source: RequiredSource,
    /// What degraded and why (a permission the token lacks), shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Everything the gate looks at, for one pull request.
#[derive(Debug, Clone)]
pub struct GateInput<'a> {
    /// The pull request's head SHA as the forge reports it now.
    pub head: &'a str,
    pub checks: &'a [CheckResult],
    pub required: &'a Required,
    pub reviews: &'a [Review],
    /// The SHA yoi's verifier passed, and the SHA its reviewer approved.
    pub verified: Option<&'a str>,
    pub reviewed: Option<&'a str>,
    /// Human approvals needed, for the head itself.
    pub required_approvals: u32,
    /// Status contexts yoi posts itself (they mirror the verdicts and are not CI).
    pub own_contexts: &'a [&'a str],
}

/// Why the gate is closed. Named `GateBlocker` in the API's document: `Blocker` is a ticket's
/// open blocker there, and two schemas of one name would replace each other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = GateBlocker)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Blocker {
    /// A required check has no result at the head.
    CheckMissing {
        name: String,
    },
    CheckPending {
        name: String,
    },
    CheckFailed {
        name: String,
        conclusion: Conclusion,
    },
    /// yoi's verifier passed no commit, or another one.
    NotVerified {
        verified: Option<String>,
    },
    /// yoi's reviewer approved no commit, or another one.
    NotReviewed {
        reviewed: Option<String>,
    },
    /// Too few approving reviews whose `commit_id` is the head.
    Approvals {
        need: u32,
        have: u32,
    },
    ChangesRequested {
        user: String,
        commit_id: String,
    },
}

/// The gate's answer for one head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Gate {
    pub head: String,
    pub open: bool,
    pub blockers: Vec<Blocker>,
    /// Notes people should see even when it is open (a degraded required list, no CI at all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Evaluate the gate for `input.head`.
pub fn evaluate(input: &GateInput<'_>) -> Gate {
    let head = input.head;
    let at_head: Vec<CheckResult> = latest(
        input
            .checks
            .iter()
            .filter(|c| c.sha == head && !input.own_contexts.contains(&c.name.as_str()))
            .cloned(),
    );
    let mut blockers = Vec::new();
    let mut notes = Vec::new();
    if let Some(n) = &input.required.note {
        notes.push(n.clone());
    }
    let judge = |name: &str, blockers: &mut Vec<Blocker>| {
        let mine: Vec<&CheckResult> = at_head.iter().filter(|c| c.name == name).collect();
        if mine.is_empty() {
            blockers.push(Blocker::CheckMissing { name: name.into() });
        } else if let Some(bad) = mine
            .iter()
            .find(|c| !matches!(c.conclusion, Conclusion::Success | Conclusion::Pending))
        {
            blockers.push(Blocker::CheckFailed {
                name: name.into(),
                conclusion: bad.conclusion,
            });
        } else if mine.iter().any(|c| c.conclusion == Conclusion::Pending) {
            blockers.push(Blocker::CheckPending { name: name.into() });
        }
    };
    match input.required.source {
        RequiredSource::Forge | RequiredSource::Configured => {
            for name in &input.required.checks {
                judge(name, &mut blockers);
            }
        }
        RequiredSource::Reported => {
            let mut names: Vec<&str> = at_head.iter().map(|c| c.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            if names.is_empty() {
                notes.push(format!("no checks were reported for {head}"));
            }
            for name in names {
                judge(name, &mut blockers);
            }
        }
    }
    if input.verified != Some(head) {
        blockers.push(Blocker::NotVerified {
            verified: input.verified.map(str::to_string),
        });
    }
    if input.reviewed != Some(head) {
        blockers.push(Blocker::NotReviewed {
            reviewed: input.reviewed.map(str::to_string),
        });
    }
    // Each person's latest review that says something (a comment changes no verdict).
    let mut last: Vec<&Review> = Vec::new();
    for r in input.reviews.iter().filter(|r| {
        matches!(
            r.state,
            ReviewState::Approved | ReviewState::ChangesRequested | ReviewState::Dismissed
        )
    }) {
        match last.iter_mut().find(|l| l.user == r.user) {
            Some(l) if r.id > l.id => *l = r,
            Some(_) => {}
            None => last.push(r),
        }
    }
    for r in &last {
        if r.state == ReviewState::ChangesRequested {
            blockers.push(Blocker::ChangesRequested {
                user: r.user.clone(),
                commit_id: r.commit_id.clone(),
            });
        }
    }
    let have = last
        .iter()
        .filter(|r| r.state == ReviewState::Approved && r.commit_id == head)
        .count() as u32;
    if have < input.required_approvals {
        blockers.push(Blocker::Approvals {
            need: input.required_approvals,
            have,
        });
    }
    Gate {
        head: head.into(),
        open: blockers.is_empty(),
        blockers,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "1111111111111111111111111111111111111111";
    const HEAD: &str = "2222222222222222222222222222222222222222";

    fn check(name: &str, sha: &str, c: Conclusion, at: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            sha: sha.into(),
            kind: CheckKind::CheckRun,
            conclusion: c,
            at: at.into(),
            url: None,
            title: None,
            summary: None,
        }
    }

    fn required(names: &[&str]) -> Required {
        Required {
            checks: names.iter().map(|s| s.to_string()).collect(),
            source: RequiredSource::Forge,
            note: None,
        }
    }

    fn input<'a>(
        checks: &'a [CheckResult],
        req: &'a Required,
        reviews: &'a [Review],
    ) -> GateInput<'a> {
        GateInput {
            head: HEAD,
            checks,
            required: req,
            reviews,
            verified: Some(HEAD),
            reviewed: Some(HEAD),
            required_approvals: 0,
            own_contexts: &["yoi/verify", "yoi/review"],
        }
    }

    #[test]
    fn every_required_check_green_at_the_head_with_verdicts_for_it_opens() {
        let checks = [check(
            "ci",
            HEAD,
            Conclusion::Success,
            "2026-12-01T00:00:00Z",
        )];
        let req = required(&["ci"]);
        let g = evaluate(&input(&checks, &req, &[]));
        assert!(g.open, "{g:?}");
        assert_eq!(g.head, HEAD);
    }

    #[test]
    fn green_on_an_older_head_and_red_on_the_new_one_stays_closed() {
        let checks = [
            check("ci", OLD, Conclusion::Success, "2026-12-01T00:00:00Z"),
            check("ci", HEAD, Conclusion::Failure, "2026-12-01T00:01:00Z"),
        ];
        let req = required(&["ci"]);
        let g = evaluate(&input(&checks, &req, &[]));
        assert!(!g.open);
        assert_eq!(
            g.blockers,
            vec![Blocker::CheckFailed {
                name: "ci".into(),
                conclusion: Conclusion::Failure
            }]
        );
    }

    #[test]
    fn a_required_check_missing_at_the_head_stays_closed() {
        let checks = [
            check("ci", HEAD, Conclusion::Success, "2026-12-01T00:00:00Z"),
            check("lint", OLD, Conclusion::Success, "2026-12-01T00:00:00Z"),
        ];
        let req = required(&["ci", "lint"]);
        let g = evaluate(&input(&checks, &req, &[]));
        assert_eq!(
            g.blockers,
            vec![Blocker::CheckMissing {
                name: "lint".into()
            }]
        );
    }

    #[test]
    fn an_older_result_arriving_late_never_overwrites_a_newer_one() {
        let checks = [
            check("ci", HEAD, Conclusion::Success, "2026-12-01T00:05:00Z"),
            check("ci", HEAD, Conclusion::Failure, "2026-12-01T00:01:00Z"),
            check("ci", HEAD, Conclusion::Pending, "2026-12-01T00:05:00Z"),
        ];
        let req = required(&["ci"]);
        assert!(evaluate(&input(&checks, &req, &[])).open);
    }

    #[test]
    fn verdicts_for_another_commit_keep_it_closed() {
        let checks = [check("ci", HEAD, Conclusion::Success, "t")];
        let req = required(&["ci"]);
        let mut i = input(&checks, &req, &[]);
        i.verified = Some(OLD);
        i.reviewed = None;
        let g = evaluate(&i);
        assert_eq!(
            g.blockers,
            vec![
                Blocker::NotVerified {
                    verified: Some(OLD.into())
                },
                Blocker::NotReviewed { reviewed: None }
            ]
        );
    }

    #[test]
    fn an_approval_for_an_older_commit_does_not_count() {
        let checks = [check("ci", HEAD, Conclusion::Success, "t")];
        let req = required(&["ci"]);
        let review = |id, sha: &str| Review {
            id,
            user: "alice".into(),
            state: ReviewState::Approved,
            commit_id: sha.into(),
            body: String::new(),
        };
        let old = [review(1, OLD)];
        let mut i = input(&checks, &req, &old);
        i.required_approvals = 1;
        assert_eq!(
            evaluate(&i).blockers,
            vec![Blocker::Approvals { need: 1, have: 0 }]
        );
        let new = [review(1, OLD), review(2, HEAD)];
        let mut i = input(&checks, &req, &new);
        i.required_approvals = 1;
        assert!(evaluate(&i).open);
    }

    #[test]
    fn changes_requested_blocks_until_that_person_approves() {
        let checks = [check("ci", HEAD, Conclusion::Success, "t")];
        let req = required(&["ci"]);
        let r = |id, state| Review {
            id,
            user: "bob".into(),
            state,
            commit_id: HEAD.into(),
            body: String::new(),
        };
        let reviews = [
            r(1, ReviewState::ChangesRequested),
            r(2, ReviewState::Commented),
        ];
        assert!(!evaluate(&input(&checks, &req, &reviews)).open);
        let reviews = [
            r(1, ReviewState::ChangesRequested),
            r(3, ReviewState::Approved),
        ];
        assert!(evaluate(&input(&checks, &req, &reviews)).open);
    }

    #[test]
    fn with_no_list_every_reported_check_counts_and_yois_own_statuses_do_not() {
        let mut own = check("yoi/verify", HEAD, Conclusion::Success, "t");
        own.kind = CheckKind::Status;
        let checks = [
            check("ci", HEAD, Conclusion::Success, "t"),
            check("e2e", HEAD, Conclusion::Pending, "t"),
            own,
        ];
        let req = Required {
            checks: vec![],
            source: RequiredSource::Reported,
            note: None,
        };
        assert_eq!(
            evaluate(&input(&checks, &req, &[])).blockers,
            vec![Blocker::CheckPending { name: "e2e".into() }]
        );
    }
}
