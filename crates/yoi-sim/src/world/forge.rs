//! The forge actor (docs/forge.md, docs/simulation.md): tickets whose flow ends in a pull
//! request, driven by the engine's real `forge_tick` against the simulated GitHub of
//! `forge_hub`, with CI reporting checks that pass, fail or wait, people pushing to pull
//! request branches, reviewing, asking for rounds (`/yoi fix`, from someone who may push or
//! someone who may not) and closing, webhooks delivered late, twice, out of order or never, and
//! the forge failing calls or losing their answers.
//!
//! A webhook is taken as `yoi serve`'s receiver takes it: a `check_run` or `status` payload is
//! read by the receiver's own `check_of` and kept (`forge_checks_record`) before its delivery
//! id is recorded (`forge_delivery_first`); a redelivery does nothing; a first delivery wakes
//! the driver, which runs a pass at once. Only the signature check is left out (its tests are
//! the receiver's).
//!
//! The three invariants it is held to are `forge_invariants`'.

use std::path::Path;
use std::process::Command;

use yoi_core::forge::gate::{CheckKind, Conclusion, ReviewState};
use yoi_core::Principal;
use yoi_engine::assignments::{self as asg, ForgeEnv};
use yoi_engine::store::ops::{self, CreateRequest};
use yoi_engine::store::Ctx;
use yoi_forge::{ChangeState, Secret};

use super::faults::git;
use super::forge_hub::{Fault, Hub, Pr, OUTSIDER, REQUIRED, WRITER};
use super::{broken, Broken, World, EPOCH_MS};

/// `[forge]` of every simulated workspace: the bare repository beside it is the remote, the
/// branch's rulesets require `ci` and `lint`, and one person's approval of the exact head.
pub(super) const FORGE_CONFIG: &str = "\n[forge]\nrepo = \"sim/widgets\"\nremote = \"../remote.git\"\nrequired_checks = [\"ci\", \"lint\"]\nrequired_approvals = 1\n";

/// The flow of the tickets a person creates for the forge: the built-in one ending in `pr`,
/// picked by a word of the title.
const FLOW_FILE: (&str, &str) = (
    ".yoi/flows/forge.flow.yaml",
    "schema_version: 1\nname: forge\ntitle: Implement, verify, review, pull request\nmax_rounds: 3\ntrigger:\n  title_words: [forge]\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n  - id: verify\n    role: verifier\n    output: checks\n  - id: review\n    role: reviewer\n    output: verdict\n  - id: pr\n    role: service\n    output: pr\n",
);

/// The brief of a forge ticket: complete, as every simulated ticket's.
const BRIEF: &str = "## Intent\nMake it work through a pull request.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

/// Counts of the forge's side of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgeStats {
    pub tickets: usize,
    pub passes: usize,
    pub prs_opened: usize,
    pub prs_merged: usize,
    pub person_pushes: usize,
    pub check_results: usize,
    pub reviews: usize,
    pub webhooks_taken: usize,
    pub webhooks_repeated: usize,
    pub webhooks_lost: usize,
    pub faults: usize,
}

impl ForgeStats {
    pub fn add(&mut self, o: &ForgeStats) {
        self.tickets += o.tickets;
        self.passes += o.passes;
        self.prs_opened += o.prs_opened;
        self.prs_merged += o.prs_merged;
        self.person_pushes += o.person_pushes;
        self.check_results += o.check_results;
        self.reviews += o.reviews;
        self.webhooks_taken += o.webhooks_taken;
        self.webhooks_repeated += o.webhooks_repeated;
        self.webhooks_lost += o.webhooks_lost;
        self.faults += o.faults;
    }
}

/// The forge's side of a world: the simulated GitHub and what the invariants remember.
pub(super) struct ForgeSide {
    pub(super) hub: Hub,
    /// Commits people pushed: (branch, commit).
    pub(super) person_commits: Vec<(String, String)>,
    /// Merges already judged.
    pub(super) judged: usize,
    flow_written: bool,
    people_pushes: u32,
    /// Rounds of settling so far; the first [`STORM_ROUNDS`] keep CI, people and webhooks busy.
    settle_rounds: u32,
    /// The last driver pass had calls to try again.
    retried: bool,
}

/// Rounds at the start of settling in which CI, people, webhooks and faults keep acting on the
/// pull requests that exist by then (most open only once the pods work through the queue);
/// after them the forge is calm and every head passes and is approved.
const STORM_ROUNDS: u32 = 8;

impl ForgeSide {
    /// The forge of the world in `dir` whose repository is `repo`.
    pub(super) fn new(dir: &Path, repo: &Path) -> Result<ForgeSide, String> {
        Ok(ForgeSide {
            hub: Hub::new(dir, repo)?,
            person_commits: Vec::new(),
            judged: 0,
            flow_written: false,
            people_pushes: 0,
            settle_rounds: 0,
            retried: false,
        })
    }
}

/// The `refs/yoi/forge/<branch>` a round's feedback asks the coder to merge, if any.
pub(super) fn forge_ref_in(feedback: Option<&str>) -> Option<String> {
    let text = feedback?;
    let at = text.find("refs/yoi/forge/")?;
    let r: String = text[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '`' | ')' | '(' | ','))
        .collect();
    Some(r)
}

impl World {
    /// The open pull request `p` stands for (`p % 4 == 3`, or none open: any).
    fn pr(&self, p: u32) -> Option<Pr> {
        let prs = self.forge.hub.prs();
        if prs.is_empty() {
            return None;
        }
        let n = (p / 4) as usize;
        let open: Vec<&Pr> = prs
            .iter()
            .filter(|pr| pr.state == ChangeState::Open)
            .collect();
        if p % 4 != 3 && !open.is_empty() {
            return Some(open[n % open.len()].clone());
        }
        Some(prs[n % prs.len()].clone())
    }

    /// A person creates a ticket whose flow ends in a pull request.
    pub(super) fn create_pr_ticket(&mut self, deps: u32) -> Result<(), Broken> {
        if !self.forge.flow_written {
            let (rel, text) = FLOW_FILE;
            let path = self.repo.join(rel);
            std::fs::create_dir_all(path.parent().expect("a folder"))
                .and_then(|()| std::fs::write(&path, text))
                .map_err(|e| broken("setup", format!("writing {rel}: {e}")))?;
            self.remember_hand_written(rel, text);
            self.forge.flow_written = true;
        }
        let n = self.tickets.len() + 1;
        let depends_on: Vec<String> = self
            .tickets
            .iter()
            .rev()
            .take(deps as usize)
            .map(|t| t.to_string())
            .collect();
        let req = CreateRequest {
            title: format!("Ticket {n} forge"),
            body: BRIEF.into(),
            depends_on,
        };
        let ctx = Ctx::new(Principal::human("alice"), self.now());
        match ops::create(&self.live().ws, &ctx, &req) {
            Ok(out) => {
                self.note(format!("  created {} (ends in a pull request)", out.ticket));
                self.stats.created += 1;
                self.stats.forge.tickets += 1;
                Ok(())
            }
            Err(e) => Err(broken("human", format!("creating a ticket failed: {e}"))),
        }
    }

    /// One pass of the forge driver: the engine's `forge_tick`, as `yoi serve` runs it every
    /// `poll_secs` and when a webhook wakes it.
    pub(super) fn forge_pass(&mut self) -> Result<(), Broken> {
        let now = self.now();
        self.forge.hub.set_now(now.unix_millis());
        let l = self.live();
        let Some(section) = l.ws.config.forge.clone() else {
            self.note("  no [forge] section");
            return Ok(());
        };
        let token = Secret::new("sim-token");
        let env = ForgeEnv {
            forge: &self.forge.hub,
            section: &section,
            token: &token,
            scratch: l.ws.local_dir().join("forge"),
        };
        let out = asg::forge_tick(&l.ws, &l.db, &env, now);
        self.stats.forge.passes += 1;
        self.forge.retried = out.as_ref().map_or(true, |t| !t.retried.is_empty());
        match out {
            Ok(t) => {
                self.stats.forge.prs_opened += t.opened.len();
                if t != Default::default() {
                    let waiting: Vec<String> = t
                        .waiting
                        .iter()
                        .map(|(id, g)| format!("{id}: {:?}", g.blockers))
                        .collect();
                    self.note(format!(
                        "  forge: pushed {:?} opened {:?} merged {:?} sent back {:?} waiting {waiting:?} retried {:?}",
                        t.pushed, t.opened, t.merged, t.sent_back, t.retried
                    ));
                }
            }
            Err(e) => self.note(format!("  the forge pass failed: {e}")),
        }
        self.check_person_pushes_named()
    }

    /// CI reports on the head of the pull request `p` stands for: `ci` (a check run) or
    /// `lint` (a legacy commit status), passed, failed or still running, by `how`.
    pub(super) fn ci_reports(&mut self, p: u32, how: u32) {
        let Some(pr) = self.pr(p) else { return };
        let Some(head) = self.forge.hub.head_of(&pr.branch) else {
            return;
        };
        let (name, kind) = match (how / 4) % 2 {
            0 => (REQUIRED[0], CheckKind::CheckRun),
            _ => (REQUIRED[1], CheckKind::Status),
        };
        let conclusion = match how % 4 {
            0 => Conclusion::Failure,
            3 => Conclusion::Pending,
            _ => Conclusion::Success,
        };
        self.forge.hub.set_now(self.now().unix_millis());
        self.forge.hub.report(&head, name, kind, conclusion);
        self.stats.forge.check_results += 1;
        self.note(format!(
            "  CI: {name} {} at {head} (#{})",
            conclusion.as_str(),
            pr.number
        ));
    }

    /// A person pushes to the branch of the pull request `p` stands for: a commit of their
    /// own, or, when the forge found it conflicting with its base, the base merged in (their
    /// side kept), as GitHub's "Update branch" does.
    pub(super) fn person_pushes(&mut self, p: u32) -> Result<(), Broken> {
        let Some(pr) = self.pr(p) else { return Ok(()) };
        if pr.state != ChangeState::Open {
            return Ok(());
        }
        let remote = self.forge.hub.remote().to_path_buf();
        let Some(head) = self.forge.hub.head_of(&pr.branch) else {
            return Ok(());
        };
        self.forge.people_pushes += 1;
        let n = self.forge.people_pushes;
        let secs = (EPOCH_MS + self.clock_ms) / 1000;
        let world = |e: String| broken("world", format!("a person's push: {e}"));
        let commit = if pr.conflicted {
            let base = self.forge.hub.head_of(&pr.base).unwrap_or_default();
            let out = git(
                &remote,
                &["merge-tree", "--write-tree", "-X", "ours", &head, &base],
            )
            .map_err(world)?;
            let tree = out.lines().next().unwrap_or_default().trim().to_string();
            let msg = format!("Merge {} into {}", pr.base, pr.branch);
            person_git(
                &remote,
                secs,
                None,
                &["commit-tree", &tree, "-p", &head, "-p", &base, "-m", &msg],
            )
            .map_err(world)?
        } else {
            let index = remote.join(format!("person-index-{n}"));
            let file = remote.join(format!("person-file-{n}"));
            std::fs::write(&file, format!("a person's change {n}\n"))
                .map_err(|e| world(e.to_string()))?;
            let blob = git(
                &remote,
                &["hash-object", "-w", file.to_str().unwrap_or_default()],
            )
            .map_err(world)?;
            let _ = std::fs::remove_file(&file);
            let i = Some(index.as_path());
            person_git(&remote, secs, i, &["read-tree", &head]).map_err(world)?;
            let info = format!("100644,{},people/{n}.txt", blob.trim());
            person_git(
                &remote,
                secs,
                i,
                &["update-index", "--add", "--cacheinfo", &info],
            )
            .map_err(world)?;
            let tree = person_git(&remote, secs, i, &["write-tree"]).map_err(world)?;
            let _ = std::fs::remove_file(&index);
            let msg = format!("a person's change {n}");
            person_git(
                &remote,
                secs,
                None,
                &["commit-tree", &tree, "-p", &head, "-m", &msg],
            )
            .map_err(world)?
        };
        git(
            &remote,
            &[
                "update-ref",
                &format!("refs/heads/{}", pr.branch),
                &commit,
                &head,
            ],
        )
        .map_err(world)?;
        if pr.conflicted {
            self.forge.hub.mark_conflicted(pr.number, false);
        }
        self.forge
            .person_commits
            .push((pr.branch.clone(), commit.clone()));
        self.stats.forge.person_pushes += 1;
        self.note(format!(
            "  a person pushed {commit} to {} (#{})",
            pr.branch, pr.number
        ));
        Ok(())
    }

    /// People on the pull request `p` stands for, by `how`: `bob` approves its head, asks
    /// for changes, approves an older commit, or asks for a round with `/yoi fix`; `mallory`,
    /// who may not push, asks for one too; now and then `bob` closes it unmerged.
    pub(super) fn person_reviews(&mut self, p: u32, how: u32) {
        let Some(pr) = self.pr(p) else { return };
        let Some(head) = self.forge.hub.head_of(&pr.branch) else {
            return;
        };
        self.forge.hub.set_now(self.now().unix_millis());
        let hub = &self.forge.hub;
        let what = match how % 8 {
            0 | 1 | 6 => {
                hub.review(pr.number, WRITER, ReviewState::Approved, &head);
                "approved the head"
            }
            2 => {
                hub.review(pr.number, WRITER, ReviewState::ChangesRequested, &head);
                "asked for changes"
            }
            3 => {
                let older = git(hub.remote(), &["rev-parse", &format!("{head}^")])
                    .map(|s| s.trim().to_string())
                    .unwrap_or(head.clone());
                hub.review(pr.number, WRITER, ReviewState::Approved, &older);
                "approved an older commit"
            }
            4 => {
                hub.say(pr.number, WRITER, "/yoi fix handle the empty input too");
                "asked for a round"
            }
            5 => {
                hub.say(pr.number, OUTSIDER, "/yoi fix delete the tests");
                "asked for a round without write access"
            }
            _ => {
                hub.close(pr.number);
                "closed it unmerged"
            }
        };
        self.stats.forge.reviews += 1;
        self.note(format!("  people on #{}: {what}", pr.number));
    }

    /// A webhook delivery, by `how`: the oldest waiting is delivered, delivered and kept for
    /// a redelivery, delivered after the one behind it, or lost.
    pub(super) fn webhook(&mut self, how: u32) -> Result<(), Broken> {
        let waiting = self.forge.hub.webhooks_waiting();
        if waiting == 0 {
            return Ok(());
        }
        match how % 5 {
            4 => {
                if let Some(d) = self.forge.hub.take_webhook(0) {
                    self.stats.forge.webhooks_lost += 1;
                    self.note(format!("  webhook {} ({}) lost", d.id, d.event));
                }
                Ok(())
            }
            2 => {
                let Some(d) = self.forge.hub.take_webhook(0) else {
                    return Ok(());
                };
                self.forge.hub.requeue(d.clone());
                self.stats.forge.webhooks_repeated += 1;
                self.deliver(d)
            }
            3 if waiting > 1 => {
                let Some(d) = self.forge.hub.take_webhook(1) else {
                    return Ok(());
                };
                self.deliver(d)
            }
            _ => match self.forge.hub.take_webhook(0) {
                Some(d) => self.deliver(d),
                None => Ok(()),
            },
        }
    }

    /// A delivery as `yoi serve`'s receiver takes it: a result it carries kept first, then the
    /// delivery id; a redelivery does nothing; a first one wakes the driver.
    fn deliver(&mut self, d: super::forge_hub::Delivery) -> Result<(), Broken> {
        let now_ms = self.now().unix_millis();
        let l = self.live();
        let db = |e: yoi_engine::store::StoreError| broken("db", e.to_string());
        if let Some(c) = yoi_core::forge::check_of(d.event, &d.payload) {
            l.db.forge_checks_record(&[c], yoi_engine::db::forge::FROM_WEBHOOK, now_ms)
                .map_err(db)?;
        }
        let first =
            l.db.forge_delivery_first(&d.id, d.event, now_ms)
                .map_err(db)?;
        if !first {
            self.note(format!("  webhook {} ({}) again: duplicate", d.id, d.event));
            return Ok(());
        }
        self.stats.forge.webhooks_taken += 1;
        self.note(format!("  webhook {} ({}) accepted", d.id, d.event));
        self.forge_pass()
    }

    /// The forge fails its next calls, by `how`: two, five, or one carried out whose answer
    /// is lost.
    pub(super) fn forge_fault(&mut self, how: u32) {
        let f = match how % 3 {
            0 => Fault::Fail(2),
            1 => Fault::Fail(5),
            _ => Fault::LoseAnswer,
        };
        self.forge.hub.arm(f);
        self.stats.forge.faults += 1;
        self.note(format!("  the forge will fail: {f:?}"));
    }

    /// A round of settling for the forge: no more faults; people bring every open pull
    /// request's branch up to date where it conflicts, CI passes every head, `bob` approves it,
    /// every webhook waiting is delivered, and the driver passes. Whether anything moved.
    pub(super) fn settle_forge(&mut self) -> Result<bool, Broken> {
        self.forge.settle_rounds += 1;
        // The schedule's faults stop with the others; the storm's own last only a round.
        self.forge.hub.calm();
        if self.forge.settle_rounds <= STORM_ROUNDS {
            let stormed = self.forge_storm()?;
            let before = self.forge.hub.fingerprint();
            self.step(crate::schedule::Action::ForgePass)?;
            let retried = self.forge.retried;
            return Ok(stormed || retried || self.forge.hub.fingerprint() != before);
        }
        let mut moved = false;
        for (i, pr) in self.forge.hub.prs().iter().enumerate() {
            if pr.state != ChangeState::Open {
                continue;
            }
            let p = 4 * self.open_index(i) as u32;
            if pr.conflicted {
                self.person_pushes(p)?;
                moved = true;
            }
            let Some(head) = self.forge.hub.head_of(&pr.branch) else {
                continue;
            };
            self.forge.hub.set_now(self.now().unix_millis());
            for (name, kind) in [
                (REQUIRED[0], CheckKind::CheckRun),
                (REQUIRED[1], CheckKind::Status),
            ] {
                if !self.forge.hub.latest_is(&head, name, Conclusion::Success) {
                    self.forge
                        .hub
                        .report(&head, name, kind, Conclusion::Success);
                    moved = true;
                }
            }
            if !self.forge.hub.approved_by(pr.number, WRITER, &head) {
                self.forge
                    .hub
                    .review(pr.number, WRITER, ReviewState::Approved, &head);
                moved = true;
            }
        }
        while self.forge.hub.webhooks_waiting() > 0 {
            self.step(crate::schedule::Action::Webhook { how: 0 })?;
        }
        // The driver did something (a push, an opening, a status, a merge) if the forge changed,
        // and is not done while it has calls to try again.
        let before = self.forge.hub.fingerprint();
        self.step(crate::schedule::Action::ForgePass)?;
        moved |= self.forge.retried || self.forge.hub.fingerprint() != before;
        Ok(moved)
    }

    /// A round of the storm: six forge actions drawn from a generator seeded by the schedule
    /// (its length in steps so far), each a step with every check after it. Whether there was
    /// a pull request to act on.
    fn forge_storm(&mut self) -> Result<bool, Broken> {
        use crate::schedule::{Action, Rng};
        if self.forge.hub.prs().is_empty() {
            return Ok(false);
        }
        let mut rng = Rng::new(0xF0_46E0 ^ self.stats.steps as u64);
        for _ in 0..6 {
            let a = match rng.below(12) {
                0..=3 => Action::Ci {
                    p: rng.below(64),
                    how: rng.below(64),
                },
                4..=5 => Action::PrReview {
                    p: rng.below(64),
                    how: rng.below(64),
                },
                6 => Action::PersonPush { p: rng.below(64) },
                7..=8 => Action::Webhook { how: rng.below(64) },
                9 => Action::ForgeFault { how: rng.below(64) },
                _ => Action::ForgePass,
            };
            self.step(a)?;
        }
        Ok(true)
    }

    /// Where the `i`-th pull request is among the open ones.
    fn open_index(&self, i: usize) -> usize {
        self.forge.hub.prs()[..i]
            .iter()
            .filter(|p| p.state == ChangeState::Open)
            .count()
    }
}

/// The ticket id a ticket branch (`yoi/<id>-<slug>`) names.
pub(super) fn ticket_of_branch(branch: &str) -> Option<&str> {
    let rest = branch.strip_prefix("yoi/")?;
    Some(rest.split('-').next().unwrap_or(rest))
}

/// The git CLI in the forge's bare repository as a person, with the sim clock's time and an
/// index file of its own when given; its stdout, trimmed.
fn person_git(
    dir: &Path,
    secs: i64,
    index: Option<&Path>,
    args: &[&str],
) -> Result<String, String> {
    let stamp = format!("{secs} +0000");
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bob")
        .env("GIT_AUTHOR_EMAIL", "bob@people.invalid")
        .env("GIT_COMMITTER_NAME", "bob")
        .env("GIT_COMMITTER_EMAIL", "bob@people.invalid")
        .env("GIT_AUTHOR_DATE", &stamp)
        .env("GIT_COMMITTER_DATE", &stamp);
    if let Some(i) = index {
        cmd.env("GIT_INDEX_FILE", i);
    }
    let out = cmd.output().map_err(|e| format!("git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use yoi_core::forge::gate::{CheckKind, Conclusion, ReviewState};
    use yoi_core::forge::MergeMethod;
    use yoi_forge::{Forge, MergeOutcome, NewChange};

    use super::super::forge_hub::{Pr, WRITER};
    use crate::schedule::{parse, Action};
    use crate::world::World;

    /// One ticket implemented, verified, reviewed and its pull request opened by yoi.
    const OPENED: &str = "create-pr 0\nready 0\nqueue 0\nroute\nclaim 0\nfinish 0 1\nsweep\nclaim 0\nfinish 0 1\nsweep\nclaim 0\nfinish 0 1\nsweep\nforge\n";

    fn opened() -> (World, Pr, String) {
        let mut w = World::new().unwrap();
        for a in parse(OPENED).unwrap() {
            w.step(a).unwrap();
        }
        let prs = w.forge.hub.prs();
        assert_eq!(prs.len(), 1, "{:?}", w.trace);
        let head = w.forge.hub.head_of(&prs[0].branch).unwrap();
        (w, prs[0].clone(), head)
    }

    fn green(w: &World, head: &str, number: u64) {
        w.forge
            .hub
            .report(head, "ci", CheckKind::CheckRun, Conclusion::Success);
        w.forge
            .hub
            .report(head, "lint", CheckKind::Status, Conclusion::Success);
        w.forge
            .hub
            .review(number, WRITER, ReviewState::Approved, head);
    }

    #[test]
    fn yoi_merges_a_green_approved_head_and_a_merge_past_a_failing_check_is_caught() {
        let (mut w, pr, head) = opened();
        green(&w, &head, pr.number);
        w.step(Action::ForgePass).unwrap();
        w.step(Action::Sweep).unwrap();
        assert_eq!(w.forge.hub.merges().len(), 1, "{:#?}", w.trace);
        assert_eq!(w.stats.merged, 1);

        // The same head, but the latest run of `ci` failed: a merge anyway is caught.
        let (mut w, pr, head) = opened();
        green(&w, &head, pr.number);
        w.forge.hub.set_now(super::EPOCH_MS + 60_000);
        w.forge
            .hub
            .report(&head, "ci", CheckKind::CheckRun, Conclusion::Failure);
        w.step(Action::ForgePass).unwrap();
        assert!(w.forge.hub.merges().is_empty(), "yoi merged a failing head");
        let out = w
            .forge
            .hub
            .merge(pr.number, &head, MergeMethod::Merge, "merged by hand")
            .unwrap();
        assert!(matches!(out, MergeOutcome::Merged { .. }), "{out:?}");
        let err = w.step(Action::Advance { ms: 10 }).unwrap_err();
        assert_eq!(err.kind, "forge-merge", "{err:?}");
        assert!(err.what.contains("`ci`"), "{err:?}");
    }

    #[test]
    fn a_persons_commit_survives_the_next_round_and_one_overwritten_is_caught() {
        let (mut w, pr, _) = opened();
        w.step(Action::PersonPush { p: 0 }).unwrap();
        let (_, theirs) = w.forge.person_commits[0].clone();
        // yoi's pass finds their commit and hands it to the coder, who merges it in.
        let rest = "forge\nsweep\nclaim 0\nfinish 0 1\nsweep\nclaim 0\nfinish 0 1\nsweep\nclaim 0\nfinish 0 1\nsweep\nforge\n";
        for a in parse(rest).unwrap() {
            w.step(a).unwrap();
        }
        let now = w.forge.hub.head_of(&pr.branch).unwrap();
        assert_ne!(now, theirs, "{:#?}", w.trace);
        assert!(w.forge.hub.contains(&now, &theirs));
        green(&w, &now, pr.number);
        w.step(Action::ForgePass).unwrap();
        let merges = w.forge.hub.merges();
        assert_eq!(merges.len(), 1, "{:#?}", w.trace);
        assert!(w.forge.hub.contains(&merges[0].merge_sha, &theirs));

        // Someone force-pushes the branch back over a person's commit: caught.
        let (mut w, pr, head) = opened();
        w.step(Action::PersonPush { p: 0 }).unwrap();
        super::git(
            w.forge.hub.remote(),
            &["update-ref", &format!("refs/heads/{}", pr.branch), &head],
        )
        .unwrap();
        let err = w.step(Action::Advance { ms: 10 }).unwrap_err();
        assert_eq!(err.kind, "person-commit-lost", "{err:?}");
    }

    #[test]
    fn a_second_pull_request_for_a_ticket_is_caught() {
        let (mut w, pr, _) = opened();
        w.forge.hub.close(pr.number);
        let again = NewChange {
            title: "again".into(),
            head: pr.branch.clone(),
            base: "main".into(),
            body: String::new(),
            draft: false,
            earlier: None,
        };
        w.forge.hub.open_change(&again).unwrap();
        let err = w.step(Action::Advance { ms: 10 }).unwrap_err();
        assert_eq!(err.kind, "one-pr-per-ticket", "{err:?}");
    }

    #[test]
    fn a_persons_push_yoi_made_up_is_caught() {
        let (mut w, _, _) = opened();
        let id = w.tickets[0].clone();
        let ctx = yoi_engine::store::Ctx::new(yoi_core::Principal::orchestrator(), w.now());
        let attrs = [
            ("action", "person_pushed".to_string()),
            ("remote", "0".repeat(40)),
        ];
        yoi_engine::store::ops::record_forge(&w.live().ws, &ctx, id.as_str(), &attrs, "made up")
            .unwrap();
        let err = w.step(Action::ForgePass).unwrap_err();
        assert_eq!(err.kind, "phantom-person-push", "{err:?}");
    }

    #[test]
    fn the_feedback_of_a_persons_push_names_the_ref_to_merge() {
        let fb = "forge: a person pushed abc to `yoi/X-t`: merge `refs/yoi/forge/yoi/X-t` (abc) into the ticket branch";
        assert_eq!(
            super::forge_ref_in(Some(fb)).as_deref(),
            Some("refs/yoi/forge/yoi/X-t")
        );
        assert_eq!(super::forge_ref_in(Some("no ref")), None);
    }
}
