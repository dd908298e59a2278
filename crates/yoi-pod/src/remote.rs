//! A pod without the server's disk (`yoi pod run --cache DIR`, docs/pods.md "Pods on other
//! hosts"): the claim's commit is fetched over the server's git smart HTTP into a cache of
//! the pod's own, the agent runs in a detached worktree of it, and a coder's result is pushed to
//! its attempt ref (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`) before it is reported, so the
//! server finds the commit in its repository and checks it as it checks a local pod's.
//!
//! git runs as the git CLI, as argv, with the pod token in an `http.extraHeader` given through
//! `GIT_CONFIG_*` variables of that one process (never argv, never a file), nothing asked of a
//! terminal, and the server's certificate trusted through `--ca` (git cannot pin a fingerprint).
//! A cache that git cannot use is removed and made again. Each attempt's worktree is removed
//! when the attempt ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::client::Work;

/// Where and how a pod without the server's disk keeps its repository.
#[derive(Debug, Clone)]
pub struct RemoteGit {
    /// The cache, a repository of the pod's own (made when missing).
    pub cache: PathBuf,
    /// The PEM file the server's certificate is trusted by (`--ca`), for `https://`.
    pub ca_file: Option<PathBuf>,
}

/// An attempt's worktree in the cache, removed when dropped.
pub(crate) struct Checkout {
    cache: PathBuf,
    dir: PathBuf,
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let _ = Command::new("git")
            .arg("--git-dir")
            .arg(self.cache.join(".git"))
            .args(["worktree", "remove", "--force"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Fetch `work`'s commits into the cache and give it a detached worktree there: `work.workdir`
/// then names it.
pub(crate) fn prepare(
    remote: &RemoteGit,
    server: &str,
    token: &str,
    work: &mut Work,
) -> Result<Checkout, String> {
    let fetch = |cache: &Path| {
        let mut wants = vec![work.head_commit.clone()];
        if work.start() != work.head_commit {
            wants.push(work.start().to_string());
        }
        let mut args = vec!["fetch".to_string(), "--quiet".into(), url(server)];
        args.extend(wants);
        git(remote, token, cache, &args)
    };
    init(&remote.cache)?;
    if let Err(first) = fetch(&remote.cache) {
        // A cache git cannot use (corrupt, half-written) is made again, once.
        tracing::warn!(cache = %remote.cache.display(), error = %first, "the cache failed a fetch; making it again");
        std::fs::remove_dir_all(&remote.cache)
            .map_err(|e| format!("removing the cache {}: {e}", remote.cache.display()))?;
        init(&remote.cache)?;
        fetch(&remote.cache)?;
    }
    let dir = remote
        .cache
        .join("attempts")
        .join(format!("{}-{}", work.assignment.id, work.assignment.fence));
    let _ = std::fs::remove_dir_all(&dir);
    git(
        remote,
        token,
        &remote.cache,
        &[
            "worktree".into(),
            "add".into(),
            "--quiet".into(),
            "--detach".into(),
            dir.display().to_string(),
            work.start().to_string(),
        ],
    )?;
    work.workdir = dir.display().to_string();
    Ok(Checkout {
        cache: remote.cache.clone(),
        dir,
    })
}

/// Push a coder's `commit` to its attempt ref.
pub(crate) fn push(
    remote: &RemoteGit,
    server: &str,
    token: &str,
    work: &Work,
    commit: &str,
) -> Result<(), String> {
    let a = &work.assignment;
    let target = format!(
        "refs/yoi/attempts/{}/{}.{}",
        work.ticket, a.attempt, a.fence
    );
    git(
        remote,
        token,
        &remote.cache,
        &[
            "push".into(),
            "--quiet".into(),
            url(server),
            format!("{commit}:{target}"),
        ],
    )
    .map(|_| ())
    .map_err(|e| format!("pushing the result to {target}: {e}"))
}

fn url(server: &str) -> String {
    format!("{}/git", server.trim_end_matches('/'))
}

fn init(cache: &Path) -> Result<(), String> {
    // Not bare: a worktree of a bare repository is not one yoi's git layer reads. The cache's
    // own folder stays empty; attempts get worktrees under `attempts/`.
    if cache.join(".git/HEAD").is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("making the cache {}: {e}", cache.display()))?;
    let out = Command::new("git")
        .args(["init", "--quiet"])
        .arg(cache)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git init {}: {}",
            cache.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `git ARGS` in the repository at `dir` — named by `--git-dir`, so a broken cache is an error
/// and never a repository git finds further up — with the token and trust of `remote`; its
/// stdout, or its stderr as the error.
fn git(remote: &RemoteGit, token: &str, dir: &Path, args: &[String]) -> Result<String, String> {
    let mut config = vec![(
        "http.extraHeader".to_string(),
        format!("Authorization: Bearer {token}"),
    )];
    if let Some(ca) = &remote.ca_file {
        config.push(("http.sslCAInfo".into(), ca.display().to_string()));
    }
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir")
        .arg(dir.join(".git"))
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_COUNT", config.len().to_string())
        .stdin(Stdio::null());
    for (i, (k, v)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    let out = cmd.output().map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {}: {}",
            args.first().map_or("", String::as_str),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
