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

/// Delete refs on remote `name`, each `(ref, commit)` only while the ref still names that
/// commit, in one push. The remote checks it as it applies the deletion
/// (`--force-with-lease=REF:COMMIT`, an old value its `receive-pack` compares under its lock),
/// so a ref moved since it was listed — a pod pushed to it again — is left, and so is one
/// already gone; the next look at the remote judges it afresh. The refs deleted; an error only
/// when the push did not reach a verdict on them (the remote unreachable, refused whole).
pub fn delete_remote_refs(
    repo_root: &Path,
    name: &str,
    refs: &[(String, String)],
) -> Result<Vec<String>, GitError> {
    if refs.is_empty() {
        return Ok(Vec::new());
    }
    let mut args: Vec<String> = vec!["push".into(), "--porcelain".into()];
    args.extend(
        refs.iter()
            .map(|(r, commit)| format!("--force-with-lease={r}:{commit}")),
    );
    args.push(name.into());
    args.extend(refs.iter().map(|(r, _)| format!(":{r}")));
    let action = "delete refs on the remote";
    let out = output(repo_root, action, &args)?;
    // `--porcelain`: a line per ref, `FLAG \t FROM:TO \t SUMMARY`; `-` deleted, `!` refused
    // (`stale info`: moved or gone since it was listed).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut judged = false;
    let mut deleted = Vec::new();
    for line in stdout.lines() {
        let mut fields = line.split('\t');
        let (Some(flag), Some(spec)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some(r) = spec.strip_prefix(':') else {
            continue;
        };
        judged |= matches!(flag, "-" | "!");
        if flag == "-" {
            deleted.push(r.to_string());
        }
    }
    if out.status.success() || judged {
        Ok(deleted)
    } else {
        Err(failed(repo_root, action, &out))
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
    let out = output(repo_root, action, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failed(repo_root, action, &out))
    }
}

/// `git -C REPO ARGS`, nothing asked of a terminal, whatever its exit.
fn output(
    repo_root: &Path,
    action: &'static str,
    args: &[String],
) -> Result<std::process::Output, GitError> {
    Command::new("git")
        .arg("-C")
        .arg(repo_root)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS", "true")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| GitError::git(repo_root, action, format!("cannot run git: {e}")))
}

/// The error of a git call that failed: its stderr, and its stdout, where `--porcelain` puts a
/// refused update's reason.
fn failed(repo_root: &Path, action: &'static str, out: &std::process::Output) -> GitError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reason = format!("{} {}", stderr.trim(), stdout.trim());
    GitError::git(repo_root, action, reason.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        yoi_testkit::git(dir, args).trim().to_string()
    }

    #[test]
    fn a_ref_is_deleted_on_the_remote_only_while_it_names_the_commit_it_was_listed_at() {
        let dir = tempfile::tempdir().unwrap();
        let (work, remote) = (dir.path().join("work"), dir.path().join("remote.git"));
        git(dir.path(), &["init", "-q", "-b", "main", "work"]);
        std::fs::write(work.join("a.txt"), "a\n").unwrap();
        let one = yoi_testkit::commit_all(&work, "one");
        std::fs::write(work.join("a.txt"), "b\n").unwrap();
        let two = yoi_testkit::commit_all(&work, "two");
        git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
        git(
            &work,
            &["remote", "add", "origin", &remote.display().to_string()],
        );
        let (kept, moved) = ("refs/yoi/attempts/T/1.1.1", "refs/yoi/attempts/T/1.2.2");
        push_refs(&work, "origin", &[(&one, kept), (&one, moved)]).unwrap();
        let listed = remote_refs_under(&work, "origin", "refs/yoi/").unwrap();
        assert_eq!(listed.len(), 2, "{listed:?}");
        // Between the listing and the deletion a pod pushes to one of them again.
        git(&work, &["push", "-q", "origin", &format!("+{two}:{moved}")]);
        let gone = "refs/yoi/attempts/T/9.9.9";
        let asked: Vec<(String, String)> = listed
            .into_iter()
            .chain([(gone.to_string(), one.clone())])
            .collect();
        let deleted = delete_remote_refs(&work, "origin", &asked).unwrap();
        assert_eq!(deleted, vec![kept.to_string()]);
        let left = remote_refs_under(&work, "origin", "refs/yoi/").unwrap();
        assert_eq!(left, vec![(moved.to_string(), two.clone())]);
        // Nothing asked, nothing done; a remote that cannot be reached is an error.
        assert!(delete_remote_refs(&work, "origin", &[]).unwrap().is_empty());
        git(
            &work,
            &["remote", "set-url", "origin", "/nonexistent/remote.git"],
        );
        let refused = delete_remote_refs(&work, "origin", &[(moved.to_string(), two)]);
        assert!(refused.is_err(), "{refused:?}");
    }
}
