//! `[pods] transport = "remote"` (docs/pods.md, "Pods through a remote of the repository"):
//! pods without the server's disk fetch from and push to a named remote of the server's
//! repository (`[pods] remote`, `origin`) instead of the server's own git.
//!
//! - **Before a claim is handed out** the server pushes what its pod must fetch — the head the
//!   attempt starts at, and a kept attempt's start — to refs of that claim alone on the remote,
//!   `refs/yoi/claims/<ticket>/<assignment>/head` and `…/start` ([`publish`]). The push
//!   is the server's own `git push`, with whatever credentials its repository has for that
//!   remote; no yoi token ever goes there. A push that fails puts the claim back (`pending`,
//!   the reason in its `error`, the pod told `503 remote_unreachable`), so a claim is never
//!   out with commits its pod cannot reach.
//! - **The claim says so**: `remote: true` and [`ClaimRemote`] — the URL pods use
//!   (`[pods] remote_url`, else the remote's URL in the repository's git config), the refs to
//!   fetch with the commits they must hold, and the attempt ref to push to.
//! - **At the report** the server fetches the attempt ref from the remote into the same name
//!   locally ([`fetch_result`]) and refuses a result whose commit is not exactly what that ref
//!   names; the branch then moves through every check a local result gets.
//! - **Tidy-up** ([`collect_remote`]): the remote's attempt refs go when the local rule
//!   (`attempt_ref::collect`) would delete them — an ended attempt, a done ticket — and a
//!   claim's refs go when its attempt is no longer live, each only while it still names the
//!   commit listed. Best effort: what fails is found again at the next sweep, since the remote's
//!   own refs are the list.

use std::path::Path;

use serde::Serialize;
use yoi_core::Timestamp;
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::config::{PodTransport, CONFIG_FILE};
use yoi_store::{StoreError, Workspace};

use super::attempt_ref::{self, AttemptRef};
use super::{AssignmentError, Work};

/// Where the claims' commits go on the remote.
pub const CLAIMS_PREFIX: &str = "refs/yoi/claims/";

/// The remote pods go through, as the server resolved it at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRemote {
    /// Its name in the server's repository (`origin`): what the server pushes to and fetches
    /// from.
    pub name: String,
    /// The URL pods use: `[pods] remote_url`, else the remote's URL in the git config.
    pub url: String,
}

/// What a claim under transport `remote` tells its pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ClaimRemote {
    /// The remote's name in the server's repository, for messages.
    pub name: String,
    /// The URL the pod fetches from and pushes to, with its own host's git credentials.
    pub url: String,
    /// The ref on the remote that names `head_commit` for this claim.
    pub head_ref: String,
    /// The ref on the remote that names the kept attempt's commit this attempt starts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ref: Option<String>,
    /// Where a coder pushes its result on the remote: its attempt ref
    /// (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`). Read-only steps push nothing.
    pub push_ref: String,
}

/// The remote of `[pods]` when the transport is `remote`, checked against the repository:
/// `None` under transport `server`. A remote the repository does not have is an error naming
/// the configuration file, the key and its line.
pub fn pod_remote(ws: &Workspace) -> Result<Option<PodRemote>, StoreError> {
    let pods = &ws.config.pods;
    if pods.transport != PodTransport::Remote {
        return Ok(None);
    }
    let file = ws.root().join(".yoi").join(CONFIG_FILE);
    let configured = yoi_git::remote::remote_url(ws.root(), &pods.remote, true).map_err(|e| {
        StoreError::invalid(
            &file,
            yoi_store::config::line_in_file(&file, "pods.remote"),
            format!(
                "`pods.remote` = `{}`: cannot read the repository's remotes: {e}",
                pods.remote
            ),
        )
    })?;
    let Some(configured) = configured else {
        return Err(StoreError::invalid(
            &file,
            yoi_store::config::line_in_file(&file, "pods.remote"),
            format!(
                "`pods.remote` = `{}` names no remote of the repository at {} (`git remote -v` lists them; `git remote add {} URL` adds one), which `transport = \"remote\"` needs",
                pods.remote,
                ws.root().display(),
                pods.remote
            ),
        ));
    };
    Ok(Some(PodRemote {
        name: pods.remote.clone(),
        url: pods
            .remote_url
            .clone()
            .unwrap_or_else(|| without_credentials(&configured)),
    }))
}

/// `url` without the user and password a `scheme://user:password@host/…` URL carries: the
/// server's own credentials for its remote (often a token written into the URL) are never
/// handed to pods, which reach the remote with their host's own. Other forms (`host:path`,
/// `user@host:path`, a path) name no secret and are kept.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// The refs of claim `a` on the remote: its head, and its start. Named by the assignment's
/// id, which no other attempt shares (attempt numbers and fences start again for each step).
pub fn claim_refs(a: &Assignment) -> (String, String) {
    let base = format!("{CLAIMS_PREFIX}{}/{}", a.ticket, a.id);
    (format!("{base}/head"), format!("{base}/start"))
}

/// Push what `work`'s pod must fetch to the remote and say so in `work`. On failure the claim
/// is put back (`pending`, the reason kept) and the error says why: the pod is told to claim
/// again later, and the step is handed out once the remote answers.
pub fn publish(
    ws: &Workspace,
    index: &DbIndex,
    remote: &PodRemote,
    pod: &str,
    work: &mut Work,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let a = &work.assignment;
    let (head_ref, start_ref) = claim_refs(a);
    let start = work.kept.as_ref().map(|k| k.commit.clone());
    let mut updates = vec![(work.head_commit.as_str(), head_ref.as_str())];
    if let Some(s) = start.as_deref() {
        updates.push((s, start_ref.as_str()));
    }
    if let Err(e) = yoi_git::remote::push_refs(ws.root(), &remote.name, &updates) {
        let reason = format!(
            "not handed out: pushing the claim's commits to remote `{}` failed: {e}",
            remote.name
        );
        tracing::warn!(assignment = %a.id, ticket = %a.ticket, pod, remote = %remote.name, error = %e, "a claim was put back: its commits could not be pushed to the remote");
        // A folder made for this attempt alone goes with it (no process ever used it): the
        // next claim prepares the attempt again, with its kept work and feedback.
        let ticket = yoi_core::TicketId::parse(&a.ticket).map_err(StoreError::from)?;
        let place = super::work_place(ws, &ticket)?;
        let own = super::claim::step_dir(&place.worktree, &a.step, a.attempt);
        if work.workdir == own {
            if let Err(e) = yoi_git::discard_worktree(ws.root(), &own) {
                tracing::warn!(worktree = %own.display(), error = %e, "could not discard the folder of a claim put back");
            }
        }
        let back = index.unclaim_assignment(&a.id, a.fence, pod, &reason, now.unix_millis())?;
        if !back {
            tracing::warn!(assignment = %a.id, "the claim had already ended when it was put back");
        }
        return Err(AssignmentError::RemoteUnreachable {
            remote: remote.name.clone(),
            reason: e.to_string(),
        });
    }
    work.remote = true;
    work.remote_git = Some(ClaimRemote {
        name: remote.name.clone(),
        url: remote.url.clone(),
        head_ref,
        start_ref: start.map(|_| start_ref),
        push_ref: AttemptRef::of(a).name(),
    });
    Ok(())
}

/// Bring the result `commit` of live claim `a` from the remote: its attempt ref there is
/// fetched into the same name here, and must name exactly `commit`.
pub fn fetch_result(
    repo: &Path,
    remote: &PodRemote,
    a: &Assignment,
    commit: &str,
) -> Result<(), AssignmentError> {
    let name = AttemptRef::of(a).name();
    let fetched = yoi_git::remote::fetch_ref(repo, &remote.name, &name).map_err(|e| {
        AssignmentError::RemoteUnreachable {
            remote: remote.name.clone(),
            reason: format!("fetching {name}: {e}"),
        }
    })?;
    match fetched {
        Some(c) if c == commit => Ok(()),
        Some(c) => Err(AssignmentError::BadResult {
            id: a.id.clone(),
            reason: format!(
                "the attempt ref {name} on remote `{}` names {c}, not the reported commit {commit}; push the result there, then report it",
                remote.name
            ),
        }),
        None => Err(AssignmentError::BadResult {
            id: a.id.clone(),
            reason: format!(
                "commit {commit} is not at the attempt ref {name} on remote `{}` (the ref does not exist there); push the result there, then report it",
                remote.name
            ),
        }),
    }
}

/// What one remote sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteSweep {
    /// Refs deleted on the remote.
    pub deleted: usize,
    /// yoi's refs left there (live claims, attempts whose ticket is not done).
    pub left: usize,
}

/// Delete on the remote the yoi refs no attempt needs: attempt refs the local rule would
/// collect, and the refs of claims whose attempt is no longer live. A ref that names no
/// attempt is left alone, as locally.
pub fn collect_remote(
    ws: &Workspace,
    index: &DbIndex,
    remote: &PodRemote,
) -> Result<RemoteSweep, AssignmentError> {
    let refs = yoi_git::remote::remote_refs_under(ws.root(), &remote.name, "refs/yoi/")?;
    let mut rows_of: Option<(String, Vec<Assignment>)> = None;
    let mut gone = Vec::new();
    let mut left = 0;
    for (name, commit) in refs {
        let (ticket, which) = if let Some(r) = AttemptRef::parse(&name) {
            (r.ticket.clone(), Which::Attempt(r))
        } else if let Some((ticket, id)) = claim_ref(&name) {
            (ticket, Which::Claim(id))
        } else {
            continue;
        };
        if rows_of.as_ref().is_none_or(|(t, _)| *t != ticket) {
            rows_of = Some((ticket.clone(), index.assignments_of(&ticket)?));
        }
        let rows = rows_of.as_ref().map_or(&[][..], |(_, r)| r.as_slice());
        let drop = match which {
            // The claim's refs go once its attempt is no longer live.
            Which::Claim(id) => rows.iter().find(|a| a.id == id).is_some_and(|a| {
                !matches!(
                    a.status,
                    AssignmentStatus::Held | AssignmentStatus::Pending | AssignmentStatus::Claimed
                )
            }),
            // An attempt ref's name is not one attempt's (each step numbers its attempts from
            // 1.1): it goes once no attempt of that number needs it, as locally. A ref no
            // attempt has was not pushed by a pod of this server: left alone.
            Which::Attempt(r) => {
                let mut same = rows
                    .iter()
                    .filter(|a| a.attempt == r.attempt && a.fence == r.fence)
                    .peekable();
                same.peek().is_some() && same.all(|a| attempt_ref::ended(ws, a))
            }
        };
        if drop {
            gone.push((name, commit));
        } else {
            left += 1;
        }
    }
    // Each only while it still names the commit listed: a ref a pod pushed to again meanwhile
    // (a new acceptance's attempt of the same name) is left, and judged again next time.
    let deleted = yoi_git::remote::delete_remote_refs(ws.root(), &remote.name, &gone)?.len();
    left += gone.len() - deleted;
    if deleted > 0 {
        tracing::info!(remote = %remote.name, refs = deleted, "deleted yoi's refs of ended attempts on the remote");
    }
    Ok(RemoteSweep { deleted, left })
}

/// Which of yoi's refs on the remote.
enum Which {
    Attempt(AttemptRef),
    /// A claim's ref, by its assignment's id.
    Claim(String),
}

/// `refs/yoi/claims/<ticket>/<assignment>/(head|start)` parsed: the ticket and the assignment.
fn claim_ref(name: &str) -> Option<(String, String)> {
    let rest = name.strip_prefix(CLAIMS_PREFIX)?;
    let mut parts = rest.split('/');
    let (ticket, id, last) = (parts.next()?, parts.next()?, parts.next()?);
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (parts.next().is_none() && word(ticket) && word(id) && (last == "head" || last == "start"))
        .then(|| (ticket.to_string(), id.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_url_pods_get_carries_none_of_the_servers_credentials() {
        use super::without_credentials as w;
        assert_eq!(
            w("https://x-access-token:ghs_SECRET@github.com/team/repo.git"),
            "https://github.com/team/repo.git"
        );
        assert_eq!(
            w("https://ghp_SECRET@git.example.com:8443/r.git"),
            "https://git.example.com:8443/r.git"
        );
        assert_eq!(w("ssh://deploy:pw@host/srv/r.git"), "ssh://host/srv/r.git");
        assert_eq!(
            w("https://host/path@v2/r.git"),
            "https://host/path@v2/r.git"
        );
        assert_eq!(
            w("git@github.com:team/repo.git"),
            "git@github.com:team/repo.git"
        );
        assert_eq!(w("/srv/git/r.git"), "/srv/git/r.git");
    }

    #[test]
    fn claim_refs_parse_back_and_nothing_else_does() {
        let a = yoi_db::Assignment {
            id: "asg-01JD0XYZ".into(),
            ticket: "01JD0ABC".into(),
            attempt: 2,
            fence: 7,
            ..Default::default()
        };
        let (head, start) = super::claim_refs(&a);
        assert_eq!(head, "refs/yoi/claims/01JD0ABC/asg-01JD0XYZ/head");
        for r in [&head, &start] {
            let (ticket, id) = super::claim_ref(r).unwrap();
            assert_eq!((ticket.as_str(), id.as_str()), ("01JD0ABC", "asg-01JD0XYZ"));
        }
        for bad in [
            "refs/yoi/claims/01JD0ABC/asg-1/other",
            "refs/yoi/claims/01JD0ABC/asg-1",
            "refs/yoi/claims/01JD0ABC/asg-1/head/x",
            "refs/yoi/claims/../asg-1/head",
            "refs/yoi/attempts/01JD0ABC/2.7",
        ] {
            assert!(super::claim_ref(bad).is_none(), "{bad}");
        }
    }
}
