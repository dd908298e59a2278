//! The pod supervisor inside `yoi serve` (DESIGN §7): keeps `[roles] ROLE = N` pods running
//! for every role that has an agent in `[pods.agent]`, as child processes of the server.
//!
//! - Each pod is `<launcher> --role R --agent A --name R-<i> --server <this server>` (and
//!   `--pin <its certificate>` over HTTPS) with a pod
//!   token for its role on descriptor 3 (`--token-fd 3`), created when the server starts (named
//!   `supervisor-R`; the previous start's token of that name is revoked first). The token never
//!   appears on a command line. It expires [`TOKEN_TTL`] after it was made, and the server
//!   moves that end forward every [`TOKEN_RENEW`] while it runs ([`renew_tokens`]): a pod that
//!   works for days never loses its claims to an expired token, and the token of a server that
//!   died without a restart — its pods orphaned, the token perhaps copied — stops working
//!   within the TTL instead of living until the next start revokes it.
//! - Each pod runs in its own process group with stdin from `/dev/null` and its output in
//!   `.yoi/local/logs/pods/R-<i>.log`.
//! - A pod that exits is restarted after a backoff: 1 s, doubling to 60 s, back to 1 s once a
//!   pod ran for a minute.
//! - At shutdown every pod gets SIGTERM (it stops claiming, lets its agent finish within its
//!   grace, reports, exits); a pod still there after the grace plus five seconds is killed with
//!   its group. A pod's agent dies with its pod (the pod asks the kernel for that), and a pod
//!   gets SIGTERM when its server dies without draining (the same request), so nothing
//!   the supervisor started outlives the server.

use std::path::PathBuf;
use std::time::Duration;
use yoi_core::Role;

use tokio::process::Command;
use yoi_db::Scope;

use crate::auth::now;
use crate::state::AppState;

/// How long a supervised pod's token lives unless its server renews it.
pub const TOKEN_TTL: Duration = Duration::from_secs(15 * 60);

/// How often the server renews its pods' tokens: well within [`TOKEN_TTL`], so a renewal
/// that fails a few times in a row (a busy database) still does not let one expire.
pub const TOKEN_RENEW: Duration = Duration::from_secs(60);

/// How to start a pod: the program and the arguments before `--role`.
#[derive(Debug, Clone)]
pub struct PodLauncher {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// The server as its pods reach it: its URL and, over HTTPS, the fingerprint of its
/// certificate (given to each pod as `--pin`).
#[derive(Debug, Clone)]
pub struct Upstream {
    pub url: String,
    pub pin: Option<String>,
}

/// Start the supervisor; it ends when the server starts closing and its pods are gone.
pub fn spawn(
    state: AppState,
    launcher: PodLauncher,
    server: Upstream,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(state, launcher, server))
}

async fn run(state: AppState, launcher: PodLauncher, server_url: Upstream) {
    let cfg = state.ws.config.clone();
    let mut slots = Vec::new();
    let mut names = Vec::new();
    for (role, count) in [
        (Role::Coder, cfg.roles.coder),
        (Role::Verifier, cfg.roles.verifier),
        (Role::Reviewer, cfg.roles.reviewer),
    ] {
        let Some(agent) = cfg.pods.agent_for(role.as_str()) else {
            continue;
        };
        if count == 0 {
            continue;
        }
        let (name, token) = match role_token(&state, role).await {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(%role, error = %e, "could not make a token for the role's pods; none are started");
                continue;
            }
        };
        names.push(name);
        for i in 0..count {
            let slot = Slot {
                state: state.clone(),
                launcher: launcher.clone(),
                server: server_url.clone(),
                role: role.to_string(),
                agent: agent.clone(),
                name: format!("{role}-{i}"),
                token: token.clone(),
                grace: Duration::from_secs(cfg.pods.kill_grace_secs),
            };
            slots.push(tokio::spawn(slot.keep_alive()));
        }
    }
    if !slots.is_empty() {
        tracing::info!(pods = slots.len(), "pod supervisor started");
    }
    let renewal = (!names.is_empty()).then(|| tokio::spawn(renew_tokens(state.clone(), names)));
    for s in slots {
        let _ = s.await;
    }
    if let Some(r) = renewal {
        r.abort();
    }
}

/// Move the end of the tokens `names` to [`TOKEN_TTL`] from now, every [`TOKEN_RENEW`], until
/// the server starts closing.
async fn renew_tokens(state: AppState, names: Vec<String>) {
    let mut closing = state.closing.subscribe();
    loop {
        // `wait_for` looks at the value first, so a close signalled before this task first ran
        // ends it at once.
        tokio::select! {
            _ = tokio::time::sleep(TOKEN_RENEW) => {}
            _ = closing.wait_for(|c| *c) => return,
        }
        let until = now().unix_millis() + TOKEN_TTL.as_millis() as i64;
        for name in &names {
            if let Err(e) = state.db().expire_token(name, until).await {
                tracing::warn!(token = %name, error = %e, "could not renew a pod token; trying again in a minute");
            }
        }
    }
}

/// A fresh pod token for `role` that expires in [`TOKEN_TTL`], revoking the one the previous
/// start made: its name and secret.
async fn role_token(
    state: &AppState,
    role: Role,
) -> Result<(String, String), yoi_store::StoreError> {
    // Token names are unique forever (a revoked one keeps its name), so each start makes its
    // own and revokes every earlier start's: a restarted server — after a crash too — always
    // gets tokens for its pods, and the dead server's pods lose theirs.
    let prefix = format!("supervisor-{role}");
    let db = state.db();
    let now_ms = now().unix_millis();
    for t in db.list_tokens().await? {
        let earlier = t.name == prefix || t.name.starts_with(&format!("{prefix}-"));
        if earlier && t.revoked_ms.is_none() {
            db.revoke_token(&t.id, now_ms).await?;
        }
    }
    let name = format!("{prefix}-{}", yoi_store::ops::new_ulid(now()));
    let (_, secret) = db
        .create_token(&name, &Scope::Pod(role), &name, now_ms)
        .await?;
    db.expire_token(&name, now_ms + TOKEN_TTL.as_millis() as i64)
        .await?;
    Ok((name, secret))
}

struct Slot {
    state: AppState,
    launcher: PodLauncher,
    server: Upstream,
    role: String,
    agent: String,
    name: String,
    token: String,
    grace: Duration,
}

impl Slot {
    async fn keep_alive(self) {
        let mut closing = self.state.closing.subscribe();
        let mut backoff = Duration::from_secs(1);
        loop {
            if *closing.borrow() {
                return;
            }
            let started = tokio::time::Instant::now();
            let mut child = match self.start() {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(pod = %self.name, error = %e, "could not start a pod");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = closing.changed() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                    continue;
                }
            };
            let pgid = child.id().map(|p| p as i32);
            tokio::select! {
                status = child.wait() => {
                    tracing::warn!(pod = %self.name, status = ?status.ok(), "a pod exited; it is restarted");
                    if let Some(g) = pgid {
                        kill_group(g, libc::SIGKILL);
                    }
                }
                _ = closing.changed() => {
                    if let Some(g) = pgid {
                        kill_group(g, libc::SIGTERM);
                    }
                    let patience = self.grace + Duration::from_secs(5);
                    if tokio::time::timeout(patience, child.wait()).await.is_err() {
                        tracing::warn!(pod = %self.name, "a pod did not stop in time; killing it");
                    }
                    if let Some(g) = pgid {
                        kill_group(g, libc::SIGKILL);
                    }
                    let _ = child.wait().await;
                    return;
                }
            }
            if started.elapsed() >= Duration::from_secs(60) {
                backoff = Duration::from_secs(1);
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = closing.changed() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(60));
        }
    }

    fn start(&self) -> std::io::Result<tokio::process::Child> {
        let logs = self.state.ws.local_dir().join("logs").join("pods");
        std::fs::create_dir_all(&logs)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logs.join(format!("{}.log", self.name)))?;
        let mut cmd = Command::new(&self.launcher.program);
        cmd.args(&self.launcher.args)
            .args([
                "--role",
                &self.role,
                "--agent",
                &self.agent,
                "--name",
                &self.name,
                "--server",
                &self.server.url,
                "--token-fd",
                "3",
            ])
            .args(
                self.server
                    .pin
                    .as_ref()
                    .map(|pin| ["--pin", pin.as_str()])
                    .into_iter()
                    .flatten(),
            )
            // The forge credential stays with the server (docs/forge.md).
            .env_remove(yoi_core::forge::TOKEN_ENV)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true);
        // A server that dies without draining (SIGKILL, a crash) must not leave its pods
        // behind: each asks the kernel for SIGTERM when the server goes, and then drains as it
        // would at a normal shutdown (its agent, which has its own death signal, goes with it).
        let server = std::process::id() as libc::pid_t;
        // The token reaches the pod through a pipe on its descriptor 3, never its environment
        // or argv (where its agents, or anyone on the machine, could read it).
        let token = token_pipe(&self.token)?;
        let token_fd = std::os::fd::AsRawFd::as_raw_fd(&token);
        // SAFETY: prctl, getppid and dup2 are async-signal-safe; nothing else runs between
        // fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // dup2 leaves descriptor 3 open across exec (the pipe's own is close-on-exec).
                if libc::dup2(token_fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The server died before the request took effect.
                if libc::getppid() != server {
                    libc::_exit(0);
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(token);
        tracing::info!(pod = %self.name, role = %self.role, agent = %self.agent, pid = ?child.id(), "pod started");
        Ok(child)
    }
}

/// A close-on-exec pipe holding `token`, its write end closed: the read end, for a child's
/// descriptor 3.
fn token_pipe(token: &str) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(token.as_bytes())?;
    drop(writer);
    Ok(reader.into())
}

pub(crate) fn kill_group(pgid: i32, sig: i32) {
    // SAFETY: killpg only sends a signal; a gone group answers ESRCH, which is ignored.
    unsafe {
        libc::killpg(pgid, sig);
    }
}
