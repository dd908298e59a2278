//! A named remote of the repository (`[pods] transport = "remote"`, docs/pods.md "Pods through
//! a remote of the repository"): its URL, and pushing, fetching, listing and deleting refs
//! there.
//!
//! Reading the URL is gix. Talking to the remote is the git CLI, as the forge's push is: gix
//! has no push, and the fetch goes the same way so that both use exactly what the repository's
//! own git does for that remote — its `remote.<name>.*` settings, its `credential.helper`, the
//! server user's `~/.gitconfig`, SSH keys and agent. yoi adds no credential of its own and
//! never a yoi token. Nothing is asked of a terminal (`GIT_TERMINAL_PROMPT=0`, no askpass): a
//! remote that wants a password nobody configured is an error naming it. Every call is argv,
//! with `--` before the refspecs' remote where git takes one, in the repository named by `-C`.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::{repo, GitError};

/// The URL of remote `name` of the repository at `repo_root` (its push URL when `push`, which
/// falls back to the fetch URL as git's does); `None` when the repository has no such remote.
pub fn remote_url(repo_root: &Path, name: &str, push: bool) -> Result<Option<String>, GitError> {
    let repo = repo::open(repo_root)?;
    let Ok(remote) = repo.find_remote(name) else {
        return Ok(None);
    };
    let direction = if push {
        gix::remote::Direction::Push
    } else {
        gix::remote::Direction::Fetch
    };
    Ok(remote
        .url(direction)
        .or_else(|| remote.url(gix::remote::Direction::Fetch))
        .map(|u| u.to_bstring().to_string()))
}

/// Set each `(commit, ref)` on remote `name`, forced (these refs are the server's: nobody else
/// moves them), in one push.
pub fn push_refs(repo_root: &Path, name: &str, updates: &[(&str, &str)]) -> Result<(), GitError> {
    if updates.is_empty() {
        return Ok(());
    }
    let mut args: Vec<String> = vec!["push".into(), "--porcelain".into(), name.into()];
    args.extend(updates.iter().map(|(c, r)| format!("+{c}:{r}")));
    run(repo_root, "push to the remote", &args).map(|_| ())
}

/// Delete refs `names` on remote `name`, in one push. A ref the remote does not have is no
/// error (it is already gone).
pub fn delete_remote_refs(repo_root: &Path, name: &str, names: &[String]) -> Result<(), GitError> {
    if names.is_empty() {
        return Ok(());
    }
    let mut args: Vec<String> = vec!["push".into(), "--porcelain".into(), name.into()];
    args.extend(names.iter().map(|n| format!(":{n}")));
    match run(repo_root, "delete refs on the remote", &args) {
        Ok(_) => Ok(()),
        // git fails the whole push when one ref to delete is missing; the others were deleted
        // (pushes of several refs are not atomic unless asked), so what is left is gone too.
        Err(GitError::Git { reason, .. }) if reason.contains("remote ref does not exist") => Ok(()),
        Err(e) => Err(e),
    }
}

/// The refs of remote `name` under `prefix` (a folder, `refs/yoi/`), with their commits.
pub fn remote_refs_under(
    repo_root: &Path,
    name: &str,
    prefix: &str,
) -> Result<Vec<(String, String)>, GitError> {
    let pattern = format!("{}*", prefix);
    let out = run(
        repo_root,
        "list the remote's refs",
        &["ls-remote".into(), "--refs".into(), name.into(), pattern],
    )?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let (id, r) = l.split_once('\t')?;
            r.starts_with(prefix)
                .then(|| (r.trim().to_string(), id.trim().to_string()))
        })
        .collect())
}

/// Fetch ref `name` of remote `remote` into the local ref of the same name (forced); the commit
/// it names, or `None` when the remote has no such ref.
pub fn fetch_ref(repo_root: &Path, remote: &str, name: &str) -> Result<Option<String>, GitError> {
    let args = vec![
        "fetch".into(),
        "--quiet".into(),
        "--no-tags".into(),
        "--no-write-fetch-head".into(),
        remote.into(),
        format!("+{name}:{name}"),
    ];
    match run(repo_root, "fetch from the remote", &args) {
        Ok(_) => {}
        Err(GitError::Git { reason, .. }) if reason.contains("couldn't find remote ref") => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    }
    crate::resolve_commit(repo_root, name).map(Some)
}

/// `git -C REPO ARGS`, nothing asked of a terminal; its stdout, or its stderr in the error.
fn run(repo_root: &Path, action: &'static str, args: &[String]) -> Result<String, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_root)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS", "true")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| GitError::git(repo_root, action, format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // `--porcelain` puts a refused update's reason on stdout.
        let reason = format!("{} {}", stderr.trim(), stdout.trim());
        Err(GitError::git(repo_root, action, reason.trim()))
    }
}
