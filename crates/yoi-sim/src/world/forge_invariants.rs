//! The forge's three invariants (docs/simulation.md), checked after every step against the
//! simulated GitHub's own record (`forge_hub`) and yoi's assignment rows, never with the gate's
//! code (`yoi_core::forge::gate`), so a gate that agreed with a bug would still be caught:
//!
//! - **a merge only for its head's checks and verdicts** (`forge-merge`): every merge the forge
//!   carried out was for the pull request's head at that moment (the forge refuses any other),
//!   every required check's latest result at that head was `success`, yoi's verifier passed and
//!   its reviewer approved that very commit, no person's latest review asked for changes, and
//!   as many people as `[forge] required_approvals` asks approved that commit;
//! - **no person's commit is lost** (`person-commit-lost`): every commit a person pushed to a
//!   pull request's branch stays reachable from that branch on the forge, and a merge of the
//!   branch holds every one pushed before it;
//! - **one pull request per ticket** (`one-pr-per-ticket`), whatever its branches: never two
//!   open at once, and no more than the ticket had acceptances (a pull request that ended
//!   before the ticket was accepted again gives way to the new attempt's, docs/forge.md);
//! - and what yoi says of people is true: a `person_pushed` event names a commit a person
//!   pushed (`phantom-person-push`, after each driver pass).
//!
//! A ticket done through its pull request is held to its merge on the forge's target, not the
//! local one (`forge_merged`, called by `check_merged`).

use yoi_core::forge::gate::{Conclusion, ReviewState};
use yoi_core::report::{Report, ReportOutcome, Verdict};
use yoi_core::TicketId;
use yoi_engine::db::AssignmentStatus;

use super::forge::ticket_of_branch;
use super::forge_hub::{MergeRec, Pr};
use super::{broken, Broken, World};

impl World {
    /// The three invariants of the forge, after every step.
    pub(super) fn check_forge(&mut self) -> Result<(), Broken> {
        let merges = self.forge.hub.merges();
        for m in merges.iter().skip(self.forge.judged) {
            self.judge_merge(m)?;
        }
        self.forge.judged = merges.len();
        self.stats.forge.prs_merged = merges.len();
        let hub = &self.forge.hub;
        for (branch, commit) in &self.forge.person_commits {
            let head = hub.head_of(branch).unwrap_or_default();
            if !hub.contains(&head, commit) {
                return Err(broken(
                    "person-commit-lost",
                    format!("the commit {commit} a person pushed to {branch} is not on it any more (it is at {head})"),
                ));
            }
        }
        let prs = hub.prs();
        for t in &self.tickets {
            let mine: Vec<&Pr> = prs
                .iter()
                .filter(|p| ticket_of_branch(&p.branch) == Some(t.as_str()))
                .collect();
            if mine.len() < 2 {
                continue;
            }
            let open = mine
                .iter()
                .filter(|p| p.state == yoi_forge::ChangeState::Open)
                .count();
            let acceptances = self
                .live()
                .ws
                .read_plan(t)
                .map(|plan| plan.iter().filter(|r| r.accepted_plan.is_some()).count())
                .unwrap_or(0);
            if open > 1 || mine.len() > acceptances {
                return Err(broken(
                    "one-pr-per-ticket",
                    format!(
                        "{t} has {} pull requests: {:?}",
                        mine.len(),
                        mine.iter()
                            .map(|p| (p.number, &p.branch, p.state))
                            .collect::<Vec<_>>()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// yoi says a person pushed only what a person did push: every `person_pushed` event
    /// names a commit people pushed (`phantom-person-push`). Checked after each driver pass.
    pub(super) fn check_person_pushes_named(&self) -> Result<(), Broken> {
        let l = self.live();
        for t in &self.tickets {
            let Ok(thread) = l.ws.read_thread(t) else {
                continue;
            };
            for e in &thread.events {
                if e.kind.as_str() != yoi_core::forge::EVENT
                    || e.get("action") != Some(yoi_core::forge::action::PERSON_PUSHED)
                {
                    continue;
                }
                let remote = e.get("remote").unwrap_or_default();
                if !self.forge.person_commits.iter().any(|(_, c)| c == remote) {
                    return Err(broken(
                        "phantom-person-push",
                        format!("{t}: yoi recorded that a person pushed {remote}, which no person pushed"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A merge the forge carried out was for its head's green required checks, yoi's verdicts
    /// for that commit, and people's reviews of it; and it kept every person's commit.
    fn judge_merge(&self, m: &MergeRec) -> Result<(), Broken> {
        let bad = |what: String| {
            Err(broken(
                "forge-merge",
                format!(
                    "pull request #{} ({}) merged {}: {what}",
                    m.number, m.branch, m.head
                ),
            ))
        };
        for (name, c) in &m.checks {
            if *c != Some(Conclusion::Success) {
                return bad(format!(
                    "its required check `{name}` was {c:?} at that head"
                ));
            }
        }
        if let Some((u, _, c)) = m
            .reviews
            .iter()
            .find(|(_, s, _)| *s == ReviewState::ChangesRequested)
        {
            return bad(format!("{u}'s latest review asked for changes (on {c})"));
        }
        let approvals = m
            .reviews
            .iter()
            .filter(|(_, s, c)| *s == ReviewState::Approved && *c == m.head)
            .count();
        let needed = self
            .live()
            .ws
            .config
            .forge
            .as_ref()
            .map_or(0, |f| f.required_approvals as usize);
        if approvals < needed {
            return bad(format!(
                "{approvals} people approved that head, {needed} must: {:?}",
                m.reviews
            ));
        }
        let Some(ticket) = ticket_of_branch(&m.branch) else {
            return bad("no ticket's branch".into());
        };
        let rows = self
            .live()
            .db
            .assignments_of(ticket)
            .map_err(|e| broken("db", e.to_string()))?;
        let report = |a: &yoi_engine::db::Assignment| {
            a.result
                .as_deref()
                .and_then(|r| serde_json::from_str::<Report>(r).ok())
        };
        let done_at = |a: &&yoi_engine::db::Assignment| {
            a.status == AssignmentStatus::Completed && a.head_commit.as_deref() == Some(&m.head)
        };
        let verified = rows.iter().filter(done_at).any(|a| {
            a.role == "verifier"
                && a.step != "merge-verify"
                && report(a).is_some_and(|r| {
                    r.outcome == ReportOutcome::Done
                        && r.checks.iter().all(|c| c.exit_code == Some(0))
                })
        });
        let approved = rows.iter().filter(done_at).any(|a| {
            a.role == "reviewer" && report(a).is_some_and(|r| r.verdict == Some(Verdict::Approve))
        });
        if !verified || !approved {
            return bad(format!(
                "yoi's verifier passed it: {verified}; yoi's reviewer approved it: {approved}"
            ));
        }
        let hub = &self.forge.hub;
        for (branch, commit) in &self.forge.person_commits {
            if *branch == m.branch && !hub.contains(&m.merge_sha, commit) {
                // Pushed before the merge (a later push is on the branch, not in the merge).
                if hub.contains(&hub.head_of(branch).unwrap_or_default(), commit)
                    && !hub.contains(commit, &m.head)
                {
                    return Err(broken(
                        "person-commit-lost",
                        format!("pull request #{} merged {} without the commit {commit} a person pushed to {branch}", m.number, m.head),
                    ));
                }
            }
        }
        Ok(())
    }

    /// For a ticket merged through its pull request: the approved commit is reachable from
    /// the target on the forge. `None` for a ticket merged locally.
    pub(super) fn forge_merged(
        &self,
        id: &TicketId,
        commit: &str,
        target: &str,
    ) -> Option<Result<(), Broken>> {
        let thread = self.live().ws.read_thread(id).ok()?;
        let merged = thread.events.iter().any(|e| {
            e.kind.as_str() == yoi_core::forge::EVENT
                && e.get("action") == Some(yoi_core::forge::action::MERGED)
        });
        if !merged {
            return None;
        }
        let hub = &self.forge.hub;
        let head = hub.head_of(target).unwrap_or_default();
        Some(if hub.contains(&head, commit) {
            Ok(())
        } else {
            Err(broken(
                "merge",
                format!("{id} is done through its pull request but {commit} is not reachable from {target} on the forge ({head})"),
            ))
        })
    }
}
