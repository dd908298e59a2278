//! `git push` of a ticket branch to the forge, with `--force-with-lease` on the head yoi last
//! saw, so a person's push in between is refused rather than overwritten.
//!
//! The git CLI does this one thing because gix has no push. The credential reaches git
//! through a credential helper that prints a file written for this push alone (mode 0600, in
//! a folder of mode 0700, removed when the push returns): never in the URL (it would end up in
//! `.git/config` and in messages) and never in argv (visible in `/proc`). The environment names
//! only the file. Every other credential helper and prompt is switched off, so git asks
//! nothing of a terminal and stores nothing.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::{ForgeError, Secret};

/// What a push came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The branch now points at the commit pushed.
    Done,
    /// The remote branch is not where yoi last saw it: someone pushed. Fetch, keep their
    /// commits, build on them.
    LeaseRefused { reason: String },
}

/// One push: `sha` to `refs/heads/<branch>` of `remote` (a remote name or URL), only if the
/// remote branch is at `lease` now (`None`: only if it does not exist yet).
pub struct Push<'a> {
    pub repo: &'a Path,
    pub remote: &'a str,
    pub branch: &'a str,
    pub sha: &'a str,
    pub lease: Option<&'a str>,
    /// The user name git sends (`x-access-token` for GitHub tokens).
    pub user: &'a str,
    pub token: &'a Secret,
    /// A private folder for the helper's file (`.yoi/local/forge`, which no sandbox reads).
    pub scratch: &'a Path,
}

/// The helper: answers `get` with the file's lines, ignores `store` and `erase`.
const HELPER: &str = "!f() { test \"$1\" = get && cat \"$YOI_FORGE_CREDENTIAL_FILE\"; }; f";

/// The file the helper reads; removed when dropped, whatever happened.
struct CredentialFile(std::path::PathBuf);

impl Drop for CredentialFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The environment that hands git the credential helper and nothing else.
fn git_env(file: &Path) -> Vec<(String, String)> {
    let mut env = vec![
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        ("GIT_ASKPASS".into(), "true".into()),
        (
            "YOI_FORGE_CREDENTIAL_FILE".into(),
            file.display().to_string(),
        ),
        // An empty helper first resets every configured one (a store helper would keep it).
        ("GIT_CONFIG_COUNT".into(), "3".into()),
        ("GIT_CONFIG_KEY_0".into(), "credential.helper".into()),
        ("GIT_CONFIG_VALUE_0".into(), String::new()),
        ("GIT_CONFIG_KEY_1".into(), "credential.helper".into()),
        ("GIT_CONFIG_VALUE_1".into(), HELPER.into()),
        ("GIT_CONFIG_KEY_2".into(), "credential.useHttpPath".into()),
        ("GIT_CONFIG_VALUE_2".into(), "false".into()),
    ];
    env.push(("LC_ALL".into(), "C".into()));
    env
}

fn write_credential(p: &Push<'_>) -> Result<CredentialFile, ForgeError> {
    let fail = |e: std::io::Error| ForgeError::Credential {
        reason: format!(
            "cannot write the credential helper's file under {}: {e}",
            p.scratch.display()
        ),
    };
    std::fs::create_dir_all(p.scratch).map_err(fail)?;
    std::fs::set_permissions(p.scratch, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    let path = p
        .scratch
        .join(format!("credential-{}-{}", std::process::id(), unique()));
    let guard = CredentialFile(path.clone());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(fail)?;
    writeln!(f, "username={}\npassword={}", p.user, p.token.expose()).map_err(fail)?;
    Ok(guard)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Run `git -C REPO ARGS` against the remote with the credential helper (and its file, for
/// this call only), asking nothing of a terminal.
fn git_with_credential(p: &Push<'_>, args: &[&str]) -> Result<std::process::Output, ForgeError> {
    let file = write_credential(p)?;
    let out = Command::new("git")
        .arg("-C")
        .arg(p.repo)
        .args(args)
        .envs(git_env(&file.0))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ForgeError::Push {
            remote: p.remote.into(),
            reason: format!("cannot run git: {e}"),
        });
    drop(file);
    out
}

/// Push as [`Push`] says.
pub fn push(p: &Push<'_>) -> Result<Pushed, ForgeError> {
    let lease = format!(
        "--force-with-lease=refs/heads/{}:{}",
        p.branch,
        p.lease.unwrap_or("")
    );
    let refspec = format!("{}:refs/heads/{}", p.sha, p.branch);
    let out = git_with_credential(p, &["push", "--porcelain", &lease, p.remote, &refspec])?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Ok(Pushed::Done);
    }
    // Porcelain: `!\t<src>:<dst>\t[rejected] (stale info)` when the lease does not hold.
    if stdout
        .lines()
        .any(|l| l.starts_with('!') && (l.contains("stale info") || l.contains("fetch first")))
    {
        return Ok(Pushed::LeaseRefused {
            reason: stdout.trim().to_string(),
        });
    }
    Err(ForgeError::Push {
        remote: p.remote.into(),
        reason: format!("{} {}", stdout.trim(), stderr.trim())
            .trim()
            .to_string(),
    })
}

/// Fetch `branch` of `remote` into `refs/yoi/forge/<branch>` and answer its commit (None when
/// the remote has no such branch), with the same credential handling as [`push`].
pub fn fetch(p: &Push<'_>) -> Result<Option<String>, ForgeError> {
    let local = format!("refs/yoi/forge/{}", p.branch);
    let refspec = format!("refs/heads/{}:{local}", p.branch);
    let out = git_with_credential(p, &["fetch", "--no-tags", "--force", p.remote, &refspec])?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("couldn't find remote ref") {
            return Ok(None);
        }
        return Err(ForgeError::Push {
            remote: p.remote.into(),
            reason: stderr.trim().to_string(),
        });
    }
    let rev = Command::new("git")
        .arg("-C")
        .arg(p.repo)
        .args(["rev-parse", "--verify", &local])
        .output()
        .map_err(|e| ForgeError::Push {
            remote: p.remote.into(),
            reason: format!("cannot run git: {e}"),
        })?;
    Ok(Some(
        String::from_utf8_lossy(&rev.stdout).trim().to_string(),
    ))
}
