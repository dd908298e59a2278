//! The forge vocabulary (docs/forge.md): the `[forge]` section of `.yoi/workspace.toml`, what a
//! forge reports about one head commit (checks, commit statuses, reviews), and the merge gate —
//! the rule that a pull request merges only for one head SHA at which every required check
//! succeeded, yoi's verifier and reviewer verdicts were given, and the review rule holds.
//!
//! Pure: no HTTP, no clock, no credential. The configuration names where a credential lives
//! (a file, or the environment variable the server reads), never the credential itself, so
//! nothing of it can reach a thread, a log line or the API by serialising this section.

use serde::{Deserialize, Serialize};

pub mod gate;

/// The environment variable the server reads a forge token from when no file is configured.
/// Agents never see it: an agent's environment passes no `YOI_*` variable (docs/security.md).
pub const TOKEN_ENV: &str = "YOI_GITHUB_TOKEN";

/// The commit-status context of yoi's own verification.
pub const STATUS_VERIFY: &str = "yoi/verify";
/// The commit-status context of yoi's own review.
pub const STATUS_REVIEW: &str = "yoi/review";

/// The thread event kind of what happened to a ticket's pull request (`forge_pr`).
pub const EVENT: &str = "forge_pr";

/// The `action` attribute of a `forge_pr` event.
pub mod action {
    /// The branch was pushed (`head`).
    pub const PUSHED: &str = "pushed";
    /// The pull request was opened or found (`number`, `url`, `head`).
    pub const OPENED: &str = "opened";
    /// A person pushed to the branch (`remote` is their head); the next round builds on it.
    pub const PERSON_PUSHED: &str = "person_pushed";
    /// The gate was evaluated for `head` and is closed (the reasons in the body).
    pub const WAITING: &str = "waiting";
    /// A human review came back (`user`, `state`, `commit`).
    pub const REVIEW: &str = "review";
    /// Merged (`number`, `sha`, `method`).
    pub const MERGED: &str = "merged";
    /// Closed without a merge.
    pub const CLOSED: &str = "closed";
    /// A person with write access asked for a round in a comment (`user`, `comment`).
    pub const FIX_REQUESTED: &str = "fix_requested";
    /// A `/yoi fix` comment from someone without write access: shown, never obeyed.
    pub const COMMENT_IGNORED: &str = "comment_ignored";
    /// The ticket came from a forge issue (`number`, `url`, `author`).
    pub const ISSUE: &str = "issue";
    /// The issue the ticket came from was edited on the forge (`number`, `text`: the hash of
    /// its title and text); the body holds them. The brief is never changed by it.
    pub const ISSUE_EDITED: &str = "issue_edited";
    /// A draft pull request was marked ready for review (`number`, `head`).
    pub const READY: &str = "ready";
    /// A review comment on a line of the diff (`user`, `path`, `line`, `commit`, `comment`).
    pub const REVIEW_COMMENT: &str = "review_comment";
    /// The issue the ticket came from is closed with its merged pull request (`number`, `by`:
    /// `yoi`, or `forge` when GitHub's `Closes #N` had closed it).
    pub const ISSUE_CLOSED: &str = "issue_closed";
    /// The ticket was accepted again and its open pull request goes on with the new attempt
    /// (`number`, `head`: the new attempt's first head there); yoi said so on the pull request.
    pub const CONTINUED: &str = "continued";
}

/// The command a pull-request comment starts with to ask yoi for a round.
pub const FIX_COMMAND: &str = "/yoi fix";

/// GitHub caps a pull request body at this many characters.
pub const BODY_MAX_CHARS: usize = 65_536;

/// Which forge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgeKind {
    #[default]
    Github,
}

/// How a flow ends when it does not name its last step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndMode {
    /// A local merge into the target branch (the built-in flow's `merge` step).
    #[default]
    Merge,
    /// Push the ticket branch and open a pull request (`pr` step).
    Pr,
}

/// When the pull request is opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenWhen {
    /// Once yoi's own verify and review passed for the head.
    #[default]
    Verified,
    /// As a draft at the first push, marked ready once verified.
    Early,
}

/// Who merges a pull request whose gate is open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Merger {
    /// yoi merges with the exact head SHA.
    #[default]
    Yoi,
    /// yoi marks the ticket ready for a person to merge.
    Person,
}

/// `merge_method` of the merge call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    #[default]
    Merge,
    Squash,
    Rebase,
}

impl MergeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// `[forge]` in `.yoi/workspace.toml`. Absent: no forge, flows end in a local merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeSection {
    #[serde(default)]
    pub kind: ForgeKind,
    /// `owner/repo`.
    pub repo: String,
    /// The REST root: `https://api.github.com`, or `https://HOST/api/v3` for Enterprise Server.
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// The git remote the ticket branch is pushed to.
    #[serde(default = "default_remote")]
    pub remote: String,
    /// A file holding a fine-grained token, readable by its owner only (mode 0600). Without it
    /// (and without an App), the server reads [`TOKEN_ENV`].
    #[serde(default)]
    pub token_file: Option<String>,
    /// A GitHub App instead of a token: its id, the installation and the private key file.
    #[serde(default)]
    pub app_id: Option<u64>,
    #[serde(default)]
    pub app_installation_id: Option<u64>,
    #[serde(default)]
    pub app_private_key_file: Option<String>,
    /// A file holding the webhook secret (mode 0600); without it the receiver refuses all.
    #[serde(default)]
    pub webhook_secret_file: Option<String>,
    #[serde(default)]
    pub mode: EndMode,
    #[serde(default)]
    pub open: OpenWhen,
    #[serde(default)]
    pub merge: Merger,
    #[serde(default)]
    pub merge_method: MergeMethod,
    /// Required checks when the token can read neither rulesets nor branch protection.
    #[serde(default)]
    pub required_checks: Vec<String>,
    /// Approving human reviews, for the exact head, the gate needs (0: yoi's reviewer suffices).
    #[serde(default)]
    pub required_approvals: u32,
    /// Issues with this label are imported as tickets.
    #[serde(default)]
    pub import_label: Option<String>,
    /// Seconds between reconciliations by polling.
    #[serde(default = "default_poll_secs")]
    pub poll_secs: u64,
}

fn default_api_url() -> String {
    "https://api.github.com".into()
}
fn default_remote() -> String {
    "origin".into()
}
fn default_poll_secs() -> u64 {
    60
}

impl ForgeSection {
    /// A section with the defaults for `repo`.
    pub fn new(repo: &str) -> ForgeSection {
        ForgeSection {
            kind: ForgeKind::Github,
            repo: repo.into(),
            api_url: default_api_url(),
            remote: default_remote(),
            token_file: None,
            app_id: None,
            app_installation_id: None,
            app_private_key_file: None,
            webhook_secret_file: None,
            mode: EndMode::default(),
            open: OpenWhen::default(),
            merge: Merger::default(),
            merge_method: MergeMethod::default(),
            required_checks: Vec::new(),
            required_approvals: 0,
            import_label: None,
            poll_secs: default_poll_secs(),
        }
    }

    /// `(owner, repo)` of a valid section.
    pub fn owner_repo(&self) -> (&str, &str) {
        self.repo.split_once('/').unwrap_or((&self.repo, ""))
    }

    /// Every problem as `(key, reason)`; empty when the section checks out.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                && s != "."
                && s != ".."
        };
        match self.repo.split_once('/') {
            Some((o, r)) if name_ok(o) && name_ok(r) => {}
            _ => out.push((
                "forge.repo",
                format!(
                    "must be OWNER/REPO (letters, digits, `-`, `_`, `.`), got `{}`",
                    self.repo
                ),
            )),
        }
        let api = self.api_url.trim_end_matches('/');
        let rest = api
            .strip_prefix("https://")
            .or_else(|| api.strip_prefix("http://"));
        if rest.is_none_or(|h| h.is_empty() || h.contains(['@', ' ', '?', '#'])) {
            out.push((
                "forge.api_url",
                // The value is not echoed: it may hold the very credential it must not.
                "must be an http(s) URL without credentials, e.g. https://api.github.com or https://HOST/api/v3".into(),
            ));
        }
        if self.remote.trim().is_empty() || self.remote.starts_with('-') {
            out.push(("forge.remote", "must name a git remote".into()));
        }
        let app = [
            self.app_id.is_some(),
            self.app_installation_id.is_some(),
            self.app_private_key_file.is_some(),
        ];
        if app.iter().any(|x| *x) && !app.iter().all(|x| *x) {
            out.push((
                "forge.app_id",
                "a GitHub App needs app_id, app_installation_id and app_private_key_file together"
                    .into(),
            ));
        }
        if app[0] && self.token_file.is_some() {
            out.push((
                "forge.token_file",
                "name either a token file or a GitHub App, not both".into(),
            ));
        }
        if self.poll_secs == 0 {
            out.push((
                "forge.poll_secs",
                "must be at least 1 (polling is what catches a lost webhook)".into(),
            ));
        }
        for c in &self.required_checks {
            if c.trim().is_empty() {
                out.push((
                    "forge.required_checks",
                    "a check name cannot be empty".into(),
                ));
            }
        }
        if let Some(l) = &self.import_label {
            if l.trim().is_empty() {
                out.push(("forge.import_label", "a label cannot be empty".into()));
            }
        }
        out
    }
}

/// The pull-request body for a brief: cut to GitHub's cap with a pointer to the ticket, and
/// `Closes #N` when the ticket came from an issue.
pub fn pr_body(brief: &str, ticket: &str, closes: Option<u64>) -> String {
    let tail = match closes {
        Some(n) => format!("\n\nCloses #{n}\n\nyoi ticket {ticket}"),
        None => format!("\n\nyoi ticket {ticket}"),
    };
    let budget = BODY_MAX_CHARS - tail.chars().count();
    if brief.chars().count() <= budget {
        return format!("{brief}{tail}");
    }
    let note = format!("\n\n… (cut: the whole brief is in `.yoi/tickets/{ticket}/item.md`)");
    let keep = budget - note.chars().count();
    let cut: String = brief.chars().take(keep).collect();
    format!("{cut}{note}{tail}")
}

/// The check result a `check_run` or `status` webhook payload carries, with the SHA it is for;
/// the same reading as the poll's (`yoi_forge::github`), so the two land in one row. `yoi serve`'s
/// receiver and the simulation's webhooks read payloads with it.
pub fn check_of(event: &str, payload: &serde_json::Value) -> Option<gate::CheckResult> {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    match event {
        "check_run" => {
            let r = &payload["check_run"];
            let conclusion = if r["status"].as_str() == Some("completed") {
                gate::Conclusion::of_check_run(Some(r["conclusion"].as_str().unwrap_or("failure")))
            } else {
                gate::Conclusion::Pending
            };
            Some(gate::CheckResult {
                name: text(&r["name"])?,
                sha: text(&r["head_sha"])?,
                kind: gate::CheckKind::CheckRun,
                conclusion,
                at: text(&r["completed_at"])
                    .or_else(|| text(&r["started_at"]))
                    .unwrap_or_default(),
                url: text(&r["html_url"]),
                title: text(&r["output"]["title"]),
                summary: text(&r["output"]["summary"]),
            })
        }
        "status" => Some(gate::CheckResult {
            name: text(&payload["context"])?,
            sha: text(&payload["sha"])?,
            kind: gate::CheckKind::Status,
            conclusion: gate::Conclusion::of_status(payload["state"].as_str().unwrap_or("error")),
            at: text(&payload["updated_at"]).unwrap_or_default(),
            url: text(&payload["target_url"]),
            title: text(&payload["description"]),
            summary: None,
        }),
        _ => None,
    }
}

/// The board card's word for a ticket's pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Badge {
    /// No pull request yet.
    None,
    /// Open, waiting on checks or reviews.
    Open,
    /// A check at the head concluded other than success (neutral and skipped pass).
    ChecksFailing,
    /// A person's latest review asks for changes.
    ChangesRequested,
    /// The gate is open for the head (a person may merge, or yoi is about to).
    ReadyToMerge,
    Merged,
    /// Closed without a merge.
    Closed,
}

impl Badge {
    pub fn as_str(self) -> &'static str {
        match self {
            Badge::None => "none",
            Badge::Open => "open",
            Badge::ChecksFailing => "checks_failing",
            Badge::ChangesRequested => "changes_requested",
            Badge::ReadyToMerge => "ready_to_merge",
            Badge::Merged => "merged",
            Badge::Closed => "closed",
        }
    }

    /// What a person reads on the card.
    pub fn label(self) -> &'static str {
        match self {
            Badge::None => "",
            Badge::Open => "PR open",
            Badge::ChecksFailing => "checks failing",
            Badge::ChangesRequested => "changes requested",
            Badge::ReadyToMerge => "ready to merge",
            Badge::Merged => "PR merged",
            Badge::Closed => "PR closed",
        }
    }
}

/// What a ticket's `forge_pr` events say, folded in thread order ([`PrFacts::observe`]): the
/// one reading of them the status, the board card and the inbox share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrFacts {
    pub number: Option<u64>,
    pub url: Option<String>,
    /// The head yoi last saw on the remote branch (its push, or a person's).
    pub remote_head: Option<String>,
    pub merged: bool,
    pub closed: bool,
    /// The head the last recorded gate answer was for, and whether it was open.
    pub gate: Option<(String, bool)>,
    /// Each person's latest review state (`Approved`, `ChangesRequested`, …).
    pub reviews: std::collections::BTreeMap<String, String>,
}

impl PrFacts {
    /// Take one `forge_pr` event into account, by its attributes.
    pub fn observe<'a>(&mut self, attr: impl Fn(&str) -> Option<&'a str>) {
        let owned = |k: &str| attr(k).map(str::to_string);
        match attr("action") {
            Some(action::PUSHED) => self.remote_head = owned("head"),
            Some(action::PERSON_PUSHED) => self.remote_head = owned("remote"),
            Some(action::OPENED) => {
                let number = attr("number").and_then(|n| n.parse().ok());
                if self.number.is_some() && number != self.number {
                    // A new attempt's own pull request (the earlier one ended before the ticket
                    // was accepted again): what was said of the earlier one is not of this one.
                    *self = PrFacts {
                        remote_head: self.remote_head.take(),
                        ..PrFacts::default()
                    };
                }
                self.number = number;
                self.url = owned("url");
            }
            Some(action::MERGED) => self.merged = true,
            Some(action::CLOSED) => self.closed = true,
            Some(action::WAITING) => {
                if let Some(head) = owned("head") {
                    self.gate = Some((head, attr("open") == Some("true")));
                }
            }
            Some(action::REVIEW) => {
                if let (Some(user), Some(state)) = (owned("user"), owned("state")) {
                    self.reviews.insert(user, state);
                }
            }
            _ => {}
        }
    }

    /// The card's word, given the check results kept for the remote head: the end state if
    /// there is one, else what stands in the way, else whether the gate is open.
    pub fn badge(&self, checks: &[gate::CheckResult]) -> Badge {
        if self.merged {
            return Badge::Merged;
        }
        if self.closed {
            return Badge::Closed;
        }
        if self.number.is_none() {
            return Badge::None;
        }
        let head = self.remote_head.as_deref();
        let failing = checks.iter().any(|c| {
            Some(c.sha.as_str()) == head
                && ![STATUS_VERIFY, STATUS_REVIEW].contains(&c.name.as_str())
                && !matches!(
                    c.conclusion,
                    gate::Conclusion::Success
                        | gate::Conclusion::Neutral
                        | gate::Conclusion::Skipped
                        | gate::Conclusion::Pending
                )
        });
        if failing {
            return Badge::ChecksFailing;
        }
        if self.reviews.values().any(|s| s == "ChangesRequested") {
            return Badge::ChangesRequested;
        }
        match (&self.gate, head) {
            (Some((g, true)), Some(h)) if g == h => Badge::ReadyToMerge,
            _ => Badge::Open,
        }
    }
}
