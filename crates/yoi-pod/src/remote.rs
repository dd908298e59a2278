//! A pod without the server's disk (`yoi pod run --cache DIR`, docs/pods.md "Pods on other
//! hosts"): the claim's commit is fetched over the server's git smart HTTP into a cache of
//! the pod's own, the agent runs in a detached worktree of it, and a coder's result is pushed to
//! its attempt ref (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`) before it is reported, so the
//! server finds the commit in its repository and checks it as it checks a local pod's.
//!
//! git runs as the git CLI, as argv, with the pod token in an `http.extraHeader` given through
//! `GIT_CONFIG_*` variables of that one process (never argv, never a file), nothing asked of a
//! terminal, and the server's certificate trusted through `--ca`, or under `--pin` by git's
//! `http.pinnedPubkey`: the key of the certificate the pin names, read from a pinned handshake.
//! A cache that git cannot use is removed and made again. Each attempt's worktree leaves the
//! ticket files out (a sparse index, as the server's own worktrees do) and is removed when the
//! attempt ends; the commits fetched stay under refs of the cache's own (`refs/yoi/cache/…`), so
//! the next claim's fetch negotiates from them and brings only what is new.
//!
//! A cache is one pod's: the pod holds an exclusive lock on `DIR/yoi-pod.lock` for as long as
//! it runs ([`lock`]), and a second pod given the same `--cache` is refused before it
//! registers. Two pods sharing one would fetch into and remake the repository under each
//! other's live worktrees.

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
    /// The key git pins instead (`http.pinnedPubkey`, [`crate::tls::git_pinned_key`]), when the
    /// pod trusts the server by `--pin`: filled in by the pod once it has registered.
    pub pinned_key: Option<String>,
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
    // Each wanted commit is kept under a ref of the cache's own: git's negotiation offers only
    // what refs reach, so a cache whose fetches left no ref would be sent the whole history
    // again for every claim. The head's ref is replaced at each claim (the newest one is what
    // the next claim's commits descend from); a kept attempt's start has its own.
    let via = Via::of(server, token, work)?;
    let fetch = |cache: &Path| {
        let mut args = vec![
            "fetch".to_string(),
            "--quiet".into(),
            "--no-tags".into(),
            "--no-write-fetch-head".into(),
            via.url().to_string(),
        ];
        // The server's git serves any commit its refs reach; a remote of the repository is
        // asked for the refs the server pushed for this claim, and what they name is checked.
        let (head, start) = match &via {
            Via::Server { .. } => (work.head_commit.clone(), Some(work.start().to_string())),
            Via::Remote { claim } => (claim.head_ref.clone(), claim.start_ref.clone()),
        };
        args.push(format!("+{head}:{HEAD_REF}"));
        if let Some(start) = start.filter(|_| work.start() != work.head_commit) {
            args.push(format!("+{start}:{START_REF}"));
        }
        git(remote, Some(&via), cache, &args)?;
        if let Via::Remote { claim } = &via {
            let named = |r: &str| {
                git(
                    remote,
                    None,
                    cache,
                    &[
                        "rev-parse".into(),
                        "--verify".into(),
                        format!("{r}^{{commit}}"),
                    ],
                )
                .map(|s| s.trim().to_string())
            };
            let got = named(HEAD_REF)?;
            if got != work.head_commit {
                return Err(format!(
                    "{} on remote `{}` names {got}, not the claim's head {}",
                    claim.head_ref, claim.name, work.head_commit
                ));
            }
            if work.start() != work.head_commit {
                let got = named(START_REF)?;
                if got != work.start() {
                    return Err(format!(
                        "the start ref on remote `{}` names {got}, not the kept commit {}",
                        claim.name,
                        work.start()
                    ));
                }
            }
        }
        Ok::<(), String>(())
    };
    let started = std::time::Instant::now();
    init(&remote.cache)?;
    if let Err(first) = fetch(&remote.cache) {
        // A cache git cannot use (corrupt, half-written) is made again, once.
        tracing::warn!(cache = %remote.cache.display(), error = %first, "the cache failed a fetch; making it again");
        // Its repository and worktrees go; the lock file the pod holds stays.
        for part in [".git", "attempts"] {
            let path = remote.cache.join(part);
            if path.exists() {
                std::fs::remove_dir_all(&path)
                    .map_err(|e| format!("removing {}: {e}", path.display()))?;
            }
        }
        init(&remote.cache)?;
        fetch(&remote.cache)?;
    }
    let fetched = std::time::Instant::now();
    let dir = remote
        .cache
        .join("attempts")
        .join(format!("{}-{}", work.assignment.id, work.assignment.fence));
    let _ = std::fs::remove_dir_all(&dir);
    // Whatever an earlier pod left registered at that path goes first.
    let _ = git(
        remote,
        None,
        &remote.cache,
        &["worktree".into(), "prune".into()],
    );
    std::fs::create_dir_all(remote.cache.join("attempts"))
        .map_err(|e| format!("making {}: {e}", remote.cache.join("attempts").display()))?;
    // The ticket files are left out, as in the server's own worktrees (a sparse index: the
    // folder is one skip-worktree entry), so the checkout does not grow with the backlog.
    let leave_out = tickets_prefix(remote, work.start());
    yoi_git::add_worktree_sparse(&remote.cache, &dir, work.start(), &[leave_out.as_str()])
        .map_err(|e| format!("checking out {}: {e}", work.start()))?;
    work.workdir = dir.display().to_string();
    tracing::info!(
        assignment = %work.assignment.id,
        fetch_ms = fetched.duration_since(started).as_millis() as u64,
        checkout_ms = fetched.elapsed().as_millis() as u64,
        "the claim's commit is checked out in the cache"
    );
    Ok(Checkout {
        cache: remote.cache.clone(),
        dir,
    })
}

/// A pod's hold on its cache, released when dropped (or when the pod's process ends).
#[derive(Debug)]
pub struct CacheLock {
    _file: std::fs::File,
}

/// Take the cache for this pod alone: an exclusive `flock` on `DIR/yoi-pod.lock`, which names
/// the holder's pid. Refused when another process holds it.
pub fn lock(remote: &RemoteGit) -> Result<CacheLock, String> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    let cache = &remote.cache;
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("making the cache {}: {e}", cache.display()))?;
    let path = cache.join("yoi-pod.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; it changes no memory.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if !taken {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(format!(
            "the cache {} is in use by another pod (pid {}): give each pod its own --cache",
            cache.display(),
            holder.trim()
        ));
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    Ok(CacheLock { _file: file })
}

/// Push a coder's `commit` to its attempt ref, naming the pod incarnation `pod` (`Yoi-Pod`), so
/// the server takes it only for that incarnation's claim.
pub(crate) fn push(
    remote: &RemoteGit,
    server: &str,
    token: &str,
    pod: &str,
    work: &Work,
    commit: &str,
) -> Result<(), String> {
    let via = Via::of(server, token, work)?;
    let a = &work.assignment;
    let target = match &via {
        Via::Remote { claim } => claim.push_ref.clone(),
        Via::Server { .. } => format!(
            "refs/yoi/attempts/{}/{}.{}",
            work.ticket, a.attempt, a.fence
        ),
    };
    let mut args = Vec::new();
    if let Via::Server { .. } = via {
        args.extend(["-c".to_string(), format!("http.extraHeader=Yoi-Pod: {pod}")]);
    }
    args.extend([
        "push".into(),
        "--quiet".into(),
        via.url().to_string(),
        format!("{commit}:{target}"),
    ]);
    git(remote, Some(&via), &remote.cache, &args)
        .map(|_| ())
        .map_err(|e| match &via {
            Via::Remote { claim } => {
                format!(
                    "pushing the result to {target} on remote `{}`: {e}",
                    claim.name
                )
            }
            Via::Server { .. } => format!("pushing the result to {target}: {e}"),
        })
}

/// Whom git talks to for a claim.
enum Via<'a> {
    /// The yoi server's own git: the pod token, the server's trust (`--ca`, `--pin`).
    Server { url: String, token: &'a str },
    /// A remote of the repository (`[pods] transport = "remote"`): this host's own git
    /// configuration and credentials, and nothing of yoi's — no token, no `Yoi-Pod` header,
    /// no trust given for the yoi server.
    Remote {
        claim: &'a crate::client::ClaimRemote,
    },
}

impl<'a> Via<'a> {
    fn of(server: &str, token: &'a str, work: &'a Work) -> Result<Via<'a>, String> {
        match (&work.remote, &work.remote_git) {
            (false, _) => Ok(Via::Server {
                url: url(server),
                token,
            }),
            (true, Some(claim)) => Ok(Via::Remote { claim }),
            (true, None) => Err(
                "the claim says `remote: true` but names no remote (`remote_git`); the server is newer or broken".into(),
            ),
        }
    }

    fn url(&self) -> &str {
        match self {
            Via::Server { url, .. } => url,
            Via::Remote { claim } => &claim.url,
        }
    }
}

/// The cache's ref of the last claim's head commit, and of a kept attempt's start.
const HEAD_REF: &str = "refs/yoi/cache/head";
const START_REF: &str = "refs/yoi/cache/start";

/// The repository's tickets folder as a path prefix (`.yoi/tickets/`), from the workspace
/// configuration committed at `commit` (`[workspace] tickets_dir`), the default when it names
/// none or cannot be read.
fn tickets_prefix(remote: &RemoteGit, commit: &str) -> String {
    let named = git(
        remote,
        None,
        &remote.cache,
        &["show".into(), format!("{commit}:.yoi/workspace.toml")],
    )
    .ok()
    .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
    .and_then(|t| {
        t.get("workspace")?
            .get("tickets_dir")?
            .as_str()
            .map(str::to_string)
    });
    let dir = named.unwrap_or_else(|| ".yoi/tickets".into());
    format!("{}/", dir.trim_end_matches('/'))
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
        // Making a worktree writes its HEAD's reflog, which names a committer; a pod host often
        // has no git identity. gix takes these only when nothing else names one (git ignores
        // them), so an identity the host has still signs the agent's own commits.
        for (key, value) in [
            ("gitoxide.committer.nameFallback", "yoi pod"),
            ("gitoxide.committer.emailFallback", "pod@yoi.invalid"),
        ] {
            let set = Command::new("git")
                .arg("--git-dir")
                .arg(cache.join(".git"))
                .args(["config", key, value])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run git: {e}"))?;
            if !set.status.success() {
                return Err(format!(
                    "git config {key} in {}: {}",
                    cache.display(),
                    String::from_utf8_lossy(&set.stderr).trim()
                ));
            }
        }
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
fn git(
    remote: &RemoteGit,
    via: Option<&Via<'_>>,
    dir: &Path,
    args: &[String],
) -> Result<String, String> {
    let mut config = Vec::new();
    let mut cmd = Command::new("git");
    if let Some(Via::Server { token, .. }) = via {
        config.push((
            "http.extraHeader".to_string(),
            format!("Authorization: Bearer {token}"),
        ));
        if let Some(ca) = &remote.ca_file {
            config.push(("http.sslCAInfo".into(), ca.display().to_string()));
        }
        if let Some(key) = &remote.pinned_key {
            // curl checks the pinned key on every connection, also without verification; names
            // and issuers are not checked, as for the pod's own pin.
            config.push(("http.sslVerify".into(), "false".into()));
            config.push(("http.pinnedPubkey".into(), key.clone()));
        }
        // git's environment outranks its configuration: an inherited `GIT_SSL_CAINFO` (many
        // hosts set one for their own CA bundle) would replace `--ca`, and `GIT_SSL_NO_VERIFY`
        // would turn the check off. The pod's trust is the one given to it.
        cmd.env_remove("GIT_SSL_NO_VERIFY");
        if remote.ca_file.is_some() || remote.pinned_key.is_some() {
            cmd.env_remove("GIT_SSL_CAINFO")
                .env_remove("GIT_SSL_CAPATH");
        }
    }
    cmd.arg("--git-dir")
        .arg(dir.join(".git"))
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    if !config.is_empty() {
        cmd.env("GIT_CONFIG_COUNT", config.len().to_string());
    }
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
