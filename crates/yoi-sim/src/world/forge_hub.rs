//! The forge inside the simulation: a small model of GitHub, in process and deterministic,
//! behind the same `yoi_forge::Forge` trait the server's GitHub client implements, so the
//! engine's real `forge_tick` drives it as it drives GitHub.
//!
//! What it models, as GitHub behaves (docs/forge.md, `/work/shared/reference/forge.md`):
//! - **the repository** is a real bare git repository beside the world's (`remote.git`): yoi
//!   pushes there with the real `git push --force-with-lease`, people push commits onto pull
//!   request branches there, and a merge is a real merge commit on the base branch (`git
//!   merge-tree`), refused (405) when it conflicts;
//! - **pull requests**: one open per head branch (a second open call answers the one that
//!   exists, as the client's 422 handling does), the head read from the branch as it is now,
//!   drafts, merges only with `sha` equal to the head (else 409), closing;
//! - **checks**: every result CI or yoi posted, with the SHA it is for and when; two results of
//!   one check at one SHA are at least a second apart (a run takes longer than that);
//! - **reviews and comments** by `bob` (who may push) and `mallory` (who may not);
//! - **webhooks**: every result and review queues a delivery (id, event, GitHub's payload);
//!   the world delivers, repeats, reorders or drops them;
//! - **faults**: the next calls fail with a 502, a timeout or a rate limit, or one call is
//!   carried out and its answer lost.
//!
//! What it does not decide: whether a merge is right. It records each merge with the facts
//! of that moment — the head, the latest result of every required check at it, people's
//! reviews — and the world's invariants judge them (`forge.rs`), never with yoi's gate code.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use yoi_core::forge::gate::{CheckKind, CheckResult, Conclusion, Required, RequiredSource};
use yoi_core::forge::gate::{Review, ReviewState};
use yoi_core::forge::MergeMethod;
use yoi_core::Timestamp;
use yoi_forge::{
    ChangeRequest, ChangeState, Comment, Forge, ForgeError, Issue, LimitKind, MergeOutcome,
    NewChange, Permission, ReviewComment, StatusState,
};

use super::faults::git;

/// The checks the base branch's rulesets require: a check run and a legacy commit status.
pub(super) const REQUIRED: [&str; 2] = ["ci", "lint"];
/// The person with write access, and the one without.
pub(super) const WRITER: &str = "bob";
pub(super) const OUTSIDER: &str = "mallory";

/// A pull request as the forge keeps it; its head is read from the branch.
#[derive(Debug, Clone)]
pub(super) struct Pr {
    pub(super) number: u64,
    pub(super) branch: String,
    pub(super) base: String,
    pub(super) state: ChangeState,
    pub(super) draft: bool,
    pub(super) merge_sha: Option<String>,
    /// The last merge call was refused for a conflict with the base.
    pub(super) conflicted: bool,
}

/// Each pull request's number, state and head, then how many results and reviews, and merges.
pub(super) type Fingerprint = (Vec<(u64, ChangeState, Option<String>)>, usize, usize);

/// A merge the forge carried out, with the facts of that moment for the invariants.
#[derive(Debug, Clone)]
pub(super) struct MergeRec {
    pub(super) number: u64,
    pub(super) branch: String,
    /// The head merged (the `sha` of the call, which the forge checked is the head).
    pub(super) head: String,
    pub(super) merge_sha: String,
    /// Each required check's latest result at the head (`None`: never reported).
    pub(super) checks: Vec<(String, Option<Conclusion>)>,
    /// Each person's latest review: (user, state, commit).
    pub(super) reviews: Vec<(String, ReviewState, String)>,
}

/// A webhook delivery waiting to be sent.
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    pub(super) id: String,
    pub(super) event: &'static str,
    pub(super) payload: serde_json::Value,
}

/// What the forge answers wrongly next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    /// The next `n` calls fail before doing anything (502, timeout, rate limit in turn).
    Fail(u32),
    /// The next call that changes something is carried out and its answer lost.
    LoseAnswer,
}

#[derive(Default)]
struct State {
    now_ms: i64,
    prs: Vec<Pr>,
    checks: Vec<CheckResult>,
    reviews: Vec<(u64, Review)>,
    comments: Vec<(u64, Comment)>,
    line_comments: Vec<(u64, ReviewComment)>,
    merges: Vec<MergeRec>,
    webhooks: VecDeque<Delivery>,
    deliveries: u64,
    ids: u64,
    fail: u32,
    lose: bool,
}

/// The simulated GitHub of one world.
pub(super) struct Hub {
    remote: PathBuf,
    repo_name: String,
    st: Mutex<State>,
}

fn ts(ms: i64) -> String {
    Timestamp::from_unix_millis(ms).to_seconds().to_string()
}

impl Hub {
    /// The forge of the world in `dir`: a bare repository `remote.git` holding `main` as the
    /// world's repository `repo` has it now.
    pub(super) fn new(dir: &Path, repo: &Path) -> Result<Hub, String> {
        let remote = dir.join("remote.git");
        git(dir, &["init", "-q", "--bare", "-b", "main", "remote.git"])?;
        git(
            repo,
            &[
                "push",
                "-q",
                remote.to_str().ok_or("a path")?,
                "main:refs/heads/main",
            ],
        )?;
        Ok(Hub {
            remote,
            repo_name: "sim/widgets".into(),
            st: Mutex::new(State::default()),
        })
    }

    pub(super) fn remote(&self) -> &Path {
        &self.remote
    }

    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn set_now(&self, ms: i64) {
        self.st().now_ms = ms;
    }

    pub(super) fn arm(&self, f: Fault) {
        let mut s = self.st();
        match f {
            Fault::Fail(n) => s.fail = n,
            Fault::LoseAnswer => s.lose = true,
        }
    }

    /// No more faults (the world settles).
    pub(super) fn calm(&self) {
        let mut s = self.st();
        s.fail = 0;
        s.lose = false;
    }

    pub(super) fn prs(&self) -> Vec<Pr> {
        self.st().prs.clone()
    }

    pub(super) fn merges(&self) -> Vec<MergeRec> {
        self.st().merges.clone()
    }

    /// What changed on the forge shows here: its pull requests with their states and heads,
    /// and how many results, reviews and merges it holds.
    pub(super) fn fingerprint(&self) -> Fingerprint {
        let (prs, n, m) = {
            let s = self.st();
            (
                s.prs.clone(),
                s.checks.len() + s.reviews.len(),
                s.merges.len(),
            )
        };
        let heads = prs
            .iter()
            .map(|p| (p.number, p.state, self.head_of(&p.branch)))
            .collect();
        (heads, n, m)
    }

    /// Whether the latest result of check `name` at `sha` is `conclusion`.
    pub(super) fn latest_is(&self, sha: &str, name: &str, conclusion: Conclusion) -> bool {
        self.st()
            .checks
            .iter()
            .filter(|c| c.sha == sha && c.name == name)
            .max_by(|a, b| a.at.cmp(&b.at))
            .is_some_and(|c| c.conclusion == conclusion)
    }

    /// Whether `user`'s latest review of pull request `number` approves `sha`.
    pub(super) fn approved_by(&self, number: u64, user: &str, sha: &str) -> bool {
        self.st()
            .reviews
            .iter()
            .rfind(|(n, r)| *n == number && r.user == user)
            .is_some_and(|(_, r)| r.state == ReviewState::Approved && r.commit_id == sha)
    }

    /// The commit a branch of the forge's repository is at.
    pub(super) fn head_of(&self, branch: &str) -> Option<String> {
        git(
            &self.remote,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ],
        )
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    }

    /// Whether `a` is an ancestor of (or is) `b` in the forge's repository.
    pub(super) fn contains(&self, b: &str, a: &str) -> bool {
        git(&self.remote, &["merge-base", "--is-ancestor", a, b]).is_ok()
    }

    /// A fault armed for this call, or nothing.
    fn gate(&self, method: &str, path: &str) -> Result<(), ForgeError> {
        let mut s = self.st();
        if s.fail == 0 {
            return Ok(());
        }
        s.fail -= 1;
        let until = (s.now_ms / 1000) as u64 + 1;
        Err(match s.fail % 3 {
            0 => ForgeError::Refused {
                method: method.into(),
                path: path.into(),
                status: 502,
                message: "Bad Gateway".into(),
            },
            1 => ForgeError::Unreachable {
                url: path.into(),
                reason: "timed out".into(),
            },
            _ => ForgeError::RateLimited {
                kind: LimitKind::Secondary,
                until,
            },
        })
    }

    /// After a call that changed something: its answer is lost when armed.
    fn answer<T>(&self, path: &str, t: T) -> Result<T, ForgeError> {
        let mut s = self.st();
        if std::mem::take(&mut s.lose) {
            return Err(ForgeError::Unreachable {
                url: path.into(),
                reason: "the connection closed before the answer".into(),
            });
        }
        Ok(t)
    }

    fn view(&self, pr: &Pr) -> ChangeRequest {
        ChangeRequest {
            number: pr.number,
            node_id: format!("PR_{}", pr.number),
            url: format!(
                "https://github.invalid/{}/pull/{}",
                self.repo_name, pr.number
            ),
            head_ref: pr.branch.clone(),
            head_sha: self.head_of(&pr.branch).unwrap_or_default(),
            base_ref: pr.base.clone(),
            state: pr.state,
            draft: pr.draft,
            merge_sha: pr.merge_sha.clone(),
        }
    }

    fn queue(s: &mut State, event: &'static str, payload: serde_json::Value) {
        s.deliveries += 1;
        let id = format!("delivery-{}", s.deliveries);
        s.webhooks.push_back(Delivery { id, event, payload });
    }

    /// A check result for `sha` (CI's, or a status yoi or CI posted), at least a second after
    /// the one before it of the same check, with its webhook queued.
    pub(super) fn report(&self, sha: &str, name: &str, kind: CheckKind, conclusion: Conclusion) {
        let mut s = self.st();
        let mut at_ms = s.now_ms;
        if let Some(prev) = s
            .checks
            .iter()
            .filter(|c| c.sha == sha && c.name == name && c.kind == kind)
            .filter_map(|c| Timestamp::parse(&c.at).ok())
            .map(|t| t.unix_millis())
            .max()
        {
            at_ms = at_ms.max(prev + 1000);
        }
        let at = ts(at_ms);
        let c = CheckResult {
            name: name.into(),
            sha: sha.into(),
            kind,
            conclusion,
            at: at.clone(),
            url: Some(format!("https://ci.invalid/{name}/{sha}")),
            title: (conclusion == Conclusion::Failure).then(|| format!("{name} failed")),
            summary: (conclusion == Conclusion::Failure)
                .then(|| "work/a.txt:1: the simulated check failed".to_string()),
        };
        let payload = match kind {
            CheckKind::CheckRun => {
                let done = conclusion != Conclusion::Pending;
                serde_json::json!({
                    "action": if done { "completed" } else { "created" },
                    "check_run": {
                        "name": name,
                        "head_sha": sha,
                        "status": if done { "completed" } else { "in_progress" },
                        "conclusion": if done { Some(conclusion.as_str()) } else { None },
                        "started_at": at,
                        "completed_at": if done { Some(at.clone()) } else { None },
                        "html_url": c.url,
                        "output": { "title": c.title, "summary": c.summary },
                    },
                })
            }
            CheckKind::Status => serde_json::json!({
                "context": name,
                "sha": sha,
                "state": match conclusion {
                    Conclusion::Pending => "pending",
                    Conclusion::Success => "success",
                    Conclusion::Error => "error",
                    _ => "failure",
                },
                "updated_at": at,
                "target_url": c.url,
                "description": c.title,
            }),
        };
        s.checks.push(c);
        let event = match kind {
            CheckKind::CheckRun => "check_run",
            CheckKind::Status => "status",
        };
        Self::queue(&mut s, event, payload);
    }

    /// The latest result of each required check at `sha`, from the forge's own record.
    fn required_at(s: &State, sha: &str) -> Vec<(String, Option<Conclusion>)> {
        REQUIRED
            .iter()
            .map(|name| {
                let latest = s
                    .checks
                    .iter()
                    .filter(|c| c.sha == sha && c.name == *name)
                    .max_by(|a, b| a.at.cmp(&b.at));
                (name.to_string(), latest.map(|c| c.conclusion))
            })
            .collect()
    }

    /// A person's review of pull request `number` for `commit`, with a line comment when it
    /// asks for changes.
    pub(super) fn review(&self, number: u64, user: &str, state: ReviewState, commit: &str) {
        let mut s = self.st();
        s.ids += 1;
        let id = 9000 + s.ids;
        s.reviews.push((
            number,
            Review {
                id,
                user: user.into(),
                state,
                commit_id: commit.into(),
                body: format!("{state:?} by {user}"),
            },
        ));
        if state == ReviewState::ChangesRequested {
            s.line_comments.push((
                number,
                ReviewComment {
                    id: id + 500_000,
                    user: user.into(),
                    body: "please change this line".into(),
                    path: "shared.txt".into(),
                    line: Some(1),
                    commit_id: commit.into(),
                    url: format!("https://github.invalid/r/{id}"),
                },
            ));
        }
        let payload = serde_json::json!({
            "action": "submitted",
            "review": { "id": id, "commit_id": commit, "state": format!("{state:?}").to_lowercase() },
            "pull_request": { "number": number },
        });
        Self::queue(&mut s, "pull_request_review", payload);
    }

    /// A conversation comment on pull request `number`.
    pub(super) fn say(&self, number: u64, user: &str, body: &str) {
        let mut s = self.st();
        s.ids += 1;
        let id = 70_000 + s.ids;
        s.comments.push((
            number,
            Comment {
                id,
                user: user.into(),
                body: body.into(),
            },
        ));
        let payload = serde_json::json!({
            "action": "created",
            "comment": { "id": id, "body": body, "user": { "login": user } },
            "issue": { "number": number, "pull_request": {} },
        });
        Self::queue(&mut s, "issue_comment", payload);
    }

    /// A person closes pull request `number` without merging it.
    pub(super) fn close(&self, number: u64) {
        let mut s = self.st();
        let Some(pr) = s
            .prs
            .iter_mut()
            .find(|p| p.number == number && p.state == ChangeState::Open)
        else {
            return;
        };
        pr.state = ChangeState::Closed;
        let payload = serde_json::json!({ "action": "closed", "number": number, "pull_request": { "merged": false } });
        Self::queue(&mut s, "pull_request", payload);
    }

    /// The webhook deliveries waiting, oldest first.
    pub(super) fn take_webhook(&self, nth: usize) -> Option<Delivery> {
        self.st().webhooks.remove(nth)
    }

    pub(super) fn requeue(&self, d: Delivery) {
        self.st().webhooks.push_back(d);
    }

    pub(super) fn webhooks_waiting(&self) -> usize {
        self.st().webhooks.len()
    }

    pub(super) fn mark_conflicted(&self, number: u64, conflicted: bool) {
        if let Some(pr) = self.st().prs.iter_mut().find(|p| p.number == number) {
            pr.conflicted = conflicted;
        }
    }
}

impl Forge for Hub {
    fn find_change(&self, branch: &str) -> Result<Option<ChangeRequest>, ForgeError> {
        self.gate("GET", "/pulls?head")?;
        let pr = self
            .st()
            .prs
            .iter()
            .rev()
            .find(|p| p.branch == branch)
            .cloned();
        Ok(pr.map(|p| self.view(&p)))
    }

    fn open_change(&self, new: &NewChange) -> Result<ChangeRequest, ForgeError> {
        self.gate("POST", "/pulls")?;
        if self.head_of(&new.head).is_none() {
            return Err(ForgeError::Refused {
                method: "POST".into(),
                path: "/pulls".into(),
                status: 422,
                message: format!("head {} does not exist", new.head),
            });
        }
        let pr = {
            let mut s = self.st();
            // GitHub refuses a second open pull request for a head (422); the client then
            // finds and answers the one that exists.
            let open = s
                .prs
                .iter()
                .find(|p| p.branch == new.head && p.state == ChangeState::Open)
                .cloned();
            match open {
                Some(p) => p,
                None => {
                    let pr = Pr {
                        number: s.prs.len() as u64 + 1,
                        branch: new.head.clone(),
                        base: new.base.clone(),
                        state: ChangeState::Open,
                        draft: new.draft,
                        merge_sha: None,
                        conflicted: false,
                    };
                    s.prs.push(pr.clone());
                    let payload = serde_json::json!({ "action": "opened", "number": pr.number });
                    Self::queue(&mut s, "pull_request", payload);
                    pr
                }
            }
        };
        let view = self.view(&pr);
        self.answer("/pulls", view)
    }

    fn change(&self, number: u64) -> Result<ChangeRequest, ForgeError> {
        self.gate("GET", "/pulls/{n}")?;
        let pr = self.st().prs.iter().find(|p| p.number == number).cloned();
        match pr {
            Some(p) => Ok(self.view(&p)),
            None => Err(ForgeError::Refused {
                method: "GET".into(),
                path: format!("/pulls/{number}"),
                status: 404,
                message: "Not Found".into(),
            }),
        }
    }

    fn mark_ready(&self, change: &ChangeRequest) -> Result<(), ForgeError> {
        self.gate("POST", "/graphql")?;
        if let Some(p) = self.st().prs.iter_mut().find(|p| p.number == change.number) {
            p.draft = false;
        }
        self.answer("/graphql", ())
    }

    fn checks(&self, sha: &str) -> Result<Vec<CheckResult>, ForgeError> {
        self.gate("GET", "/commits/{ref}/check-runs")?;
        Ok(self
            .st()
            .checks
            .iter()
            .filter(|c| c.sha == sha)
            .cloned()
            .collect())
    }

    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        self.gate("GET", "/pulls/{n}/reviews")?;
        Ok(self
            .st()
            .reviews
            .iter()
            .filter(|(n, _)| *n == number)
            .map(|(_, r)| r.clone())
            .collect())
    }

    fn required_checks(
        &self,
        _branch: &str,
        _configured: &[String],
    ) -> Result<Required, ForgeError> {
        self.gate("GET", "/rules/branches/{branch}")?;
        Ok(Required {
            checks: REQUIRED.iter().map(|c| c.to_string()).collect(),
            source: RequiredSource::Forge,
            note: None,
        })
    }

    fn set_status(
        &self,
        sha: &str,
        context: &str,
        state: StatusState,
        _description: &str,
    ) -> Result<(), ForgeError> {
        self.gate("POST", "/statuses/{sha}")?;
        let conclusion = Conclusion::of_status(state.as_str());
        self.report(sha, context, CheckKind::Status, conclusion);
        self.answer("/statuses/{sha}", ())
    }

    fn merge(
        &self,
        number: u64,
        sha: &str,
        _method: MergeMethod,
        title: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        self.gate("PUT", "/pulls/{n}/merge")?;
        let Some(pr) = self.st().prs.iter().find(|p| p.number == number).cloned() else {
            return Err(ForgeError::Refused {
                method: "PUT".into(),
                path: format!("/pulls/{number}/merge"),
                status: 404,
                message: "Not Found".into(),
            });
        };
        if pr.state != ChangeState::Open {
            return Ok(MergeOutcome::NotMergeable {
                message: "Pull Request is not mergeable".into(),
            });
        }
        let head = self.head_of(&pr.branch).unwrap_or_default();
        if head != sha {
            return Ok(MergeOutcome::HeadMoved {
                message: "Head branch was modified. Review and try the merge again.".into(),
            });
        }
        let base = self.head_of(&pr.base).unwrap_or_default();
        let tree = match git(&self.remote, &["merge-tree", "--write-tree", &base, &head]) {
            Ok(out) => out.lines().next().unwrap_or_default().trim().to_string(),
            Err(_) => {
                self.mark_conflicted(number, true);
                return Ok(MergeOutcome::NotMergeable {
                    message: "Merge conflict".into(),
                });
            }
        };
        let stamp = format!("{} +0000", self.st().now_ms / 1000);
        let merged = std::process::Command::new("git")
            .args(["commit-tree", &tree, "-p", &base, "-p", &head, "-m", title])
            .env("GIT_AUTHOR_NAME", "GitHub")
            .env("GIT_AUTHOR_EMAIL", "noreply@github.invalid")
            .env("GIT_COMMITTER_NAME", "GitHub")
            .env("GIT_COMMITTER_EMAIL", "noreply@github.invalid")
            .env("GIT_AUTHOR_DATE", &stamp)
            .env("GIT_COMMITTER_DATE", &stamp)
            .current_dir(&self.remote)
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                if o.status.success() {
                    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
                } else {
                    Err(String::from_utf8_lossy(&o.stderr).into_owned())
                }
            })
            .map_err(|e| ForgeError::Refused {
                method: "PUT".into(),
                path: format!("/pulls/{number}/merge"),
                status: 500,
                message: e,
            })?;
        git(
            &self.remote,
            &[
                "update-ref",
                &format!("refs/heads/{}", pr.base),
                &merged,
                &base,
            ],
        )
        .map_err(|e| ForgeError::Refused {
            method: "PUT".into(),
            path: format!("/pulls/{number}/merge"),
            status: 500,
            message: e,
        })?;
        {
            let mut s = self.st();
            let checks = Self::required_at(&s, &head);
            let mut reviews: Vec<(String, ReviewState, String)> = Vec::new();
            for (_, r) in s.reviews.iter().filter(|(n, _)| *n == number) {
                if !matches!(
                    r.state,
                    ReviewState::Approved | ReviewState::ChangesRequested
                ) {
                    continue;
                }
                reviews.retain(|(u, _, _)| *u != r.user);
                reviews.push((r.user.clone(), r.state, r.commit_id.clone()));
            }
            s.merges.push(MergeRec {
                number,
                branch: pr.branch.clone(),
                head: head.clone(),
                merge_sha: merged.clone(),
                checks,
                reviews,
            });
            if let Some(p) = s.prs.iter_mut().find(|p| p.number == number) {
                p.state = ChangeState::Merged;
                p.merge_sha = Some(merged.clone());
                p.conflicted = false;
            }
            let payload = serde_json::json!({ "action": "closed", "number": number, "pull_request": { "merged": true } });
            Self::queue(&mut s, "pull_request", payload);
        }
        self.answer("/pulls/{n}/merge", MergeOutcome::Merged { sha: merged })
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        self.gate("POST", "/issues/{n}/comments")?;
        self.st().comments.push((
            number,
            Comment {
                id: 0,
                user: "yoi".into(),
                body: body.into(),
            },
        ));
        self.answer("/issues/{n}/comments", ())
    }

    fn comments(&self, number: u64) -> Result<Vec<Comment>, ForgeError> {
        self.gate("GET", "/issues/{n}/comments")?;
        Ok(self
            .st()
            .comments
            .iter()
            .filter(|(n, _)| *n == number)
            .map(|(_, c)| c.clone())
            .collect())
    }

    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, ForgeError> {
        self.gate("GET", "/pulls/{n}/comments")?;
        Ok(self
            .st()
            .line_comments
            .iter()
            .filter(|(n, _)| *n == number)
            .map(|(_, c)| c.clone())
            .collect())
    }

    fn close_issue(&self, _number: u64, _comment: &str) -> Result<bool, ForgeError> {
        self.gate("PATCH", "/issues/{n}")?;
        Ok(false)
    }

    fn permission(&self, user: &str) -> Result<Permission, ForgeError> {
        self.gate("GET", "/collaborators/{user}/permission")?;
        Ok(if user == WRITER {
            Permission::Write
        } else {
            Permission::Read
        })
    }

    fn labeled_issues(&self, _label: &str) -> Result<Vec<Issue>, ForgeError> {
        self.gate("GET", "/issues")?;
        Ok(Vec::new())
    }

    fn labeled_by(&self, _number: u64, _label: &str) -> Result<Option<String>, ForgeError> {
        self.gate("GET", "/issues/{n}/events")?;
        Ok(None)
    }
}
