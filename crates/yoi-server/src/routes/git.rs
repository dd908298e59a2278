//! The server's repository over git's smart HTTP protocol, on the server's own port and behind
//! its tokens (docs/pods.md, "Pods on other hosts"): `GET /git/info/refs?service=…`, `POST
//! /git/git-upload-pack`, `POST /git/git-receive-pack`, so a pod without a shared disk fetches
//! its claim's commit and pushes its result.
//!
//! Only pod tokens are served (`Authorization: Bearer`, as git sends it with
//! `http.extraHeader`). A pod token may fetch. A push is read up to the end of its ref updates
//! and each update is put to the engine's rule ([`asg::attempt_ref::may_push`]): only the
//! attempt ref of a live claim of the token's own pods. One refused update refuses the whole
//! push with 403 before git has received a byte of it. What passes is handed to git's own
//! `http-backend` (the git CLI, as for the forge's push: gix serves no protocol), with the
//! repository's hooks off and every received object checked (`receive.fsckObjects`). The
//! ticket branch never moves here: a pushed commit reaches it only through `complete`.

use std::process::Stdio;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use yoi_engine::assignments as asg;

use crate::auth::{Authed, RunPod};
use crate::error::ApiError;
use crate::state::AppState;

/// The longest a push's ref-update section may be before it is refused (bytes): a few
/// thousand updates, far beyond one attempt's one ref.
const MAX_COMMANDS: usize = 64 * 1024;

/// `GET /git/info/refs?service=git-upload-pack|git-receive-pack`: the ref advertisement.
pub async fn info_refs(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let query = query.unwrap_or_default();
    let known = ["service=git-upload-pack", "service=git-receive-pack"];
    if !known.contains(&query.as_str()) {
        return Err(ApiError::bad_request(
            "only smart HTTP is served: ?service=git-upload-pack or git-receive-pack",
        ));
    }
    backend(
        &s,
        &c.token.name,
        Method::GET,
        "/info/refs",
        &query,
        &headers,
        Vec::new(),
        Body::empty(),
    )
    .await
}

/// `POST /git/git-upload-pack`: a fetch.
pub async fn upload_pack(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    backend(
        &s,
        &c.token.name,
        Method::POST,
        "/git-upload-pack",
        "",
        &headers,
        Vec::new(),
        body,
    )
    .await
}

/// `POST /git/git-receive-pack`: a push, each ref update checked first.
pub async fn receive_pack(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = c
        .pod()
        .ok_or_else(|| ApiError::forbidden("only a pod token pushes"))?;
    if headers
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() != b"identity")
    {
        return Err(ApiError::bad_request(
            "a push is read as git sends it, without Content-Encoding",
        ));
    }
    let mut stream = body.into_data_stream();
    let mut head = Vec::new();
    let updates = loop {
        match commands(&head) {
            Parsed::Done(updates) => break updates,
            Parsed::Bad(reason) => return Err(ApiError::bad_request(reason)),
            Parsed::More if head.len() > MAX_COMMANDS => {
                return Err(ApiError::bad_request("the push's ref updates are too long"))
            }
            Parsed::More => match stream.next().await {
                Some(Ok(chunk)) => head.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    return Err(ApiError::bad_request(format!("reading the push: {e}")))
                }
                None => {
                    return Err(ApiError::bad_request(
                        "the push ended before its ref updates did",
                    ))
                }
            },
        }
    };
    let now_ms = crate::auth::now().unix_millis();
    // yoi's pods name their incarnation, so two sharing a token cannot set each other's refs.
    let pod = headers
        .get("yoi-pod")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let st = s.clone();
    let refusals = tokio::task::spawn_blocking(move || {
        let mut refusals = Vec::new();
        for u in &updates {
            if let Err(r) = asg::attempt_ref::may_push(
                &st.index,
                &caller,
                pod.as_deref(),
                &u.name,
                u.delete,
                now_ms,
            )? {
                refusals.push(r.to_string());
            }
        }
        Ok::<_, asg::AssignmentError>(refusals)
    })
    .await
    .map_err(|e| ApiError::internal("git push", e))?
    .map_err(ApiError::from)?;
    if !refusals.is_empty() {
        tracing::warn!(token = %c.token.name, refused = ?refusals, "a push was refused");
        return Err(ApiError::forbidden(format!(
            "push refused: {}",
            refusals.join("; ")
        )));
    }
    let rest = Body::from_stream(stream);
    backend(
        &s,
        &c.token.name,
        Method::POST,
        "/git-receive-pack",
        "",
        &headers,
        head,
        rest,
    )
    .await
}

/// One ref update of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Update {
    name: String,
    delete: bool,
}

enum Parsed {
    /// The section is complete.
    Done(Vec<Update>),
    /// More bytes are needed.
    More,
    Bad(String),
}

/// The ref updates at the start of a receive-pack request: pkt-lines `OLD NEW REF` (the first
/// with `\0` and capabilities after it) up to a flush packet; none for git's probe (a bare
/// flush).
fn commands(buf: &[u8]) -> Parsed {
    let mut at = 0;
    let mut updates = Vec::new();
    loop {
        let Some(len) = buf.get(at..at + 4) else {
            return Parsed::More;
        };
        let Some(len) = std::str::from_utf8(len)
            .ok()
            .and_then(|l| usize::from_str_radix(l, 16).ok())
        else {
            return Parsed::Bad("the push is not git's pkt-line format".into());
        };
        if len == 0 {
            // A bare flush is git's probe before a large push (one bigger than its
            // `http.postBuffer`): it updates no ref, and git answers it with nothing.
            return Parsed::Done(updates);
        }
        if len < 4 {
            return Parsed::Bad("the push is not git's pkt-line format".into());
        }
        let Some(line) = buf.get(at + 4..at + len) else {
            return Parsed::More;
        };
        at += len;
        let line = line.split(|b| *b == 0).next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches('\n');
        if line.starts_with("shallow ") || line.starts_with("push-cert") {
            return Parsed::Bad("shallow and signed pushes are not taken".into());
        }
        let mut parts = line.split(' ');
        let (Some(_old), Some(new), Some(name), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Parsed::Bad(format!("not a ref update: {line:?}"));
        };
        updates.push(Update {
            name: name.to_string(),
            delete: !new.is_empty() && new.bytes().all(|b| b == b'0'),
        });
    }
}

/// Run `git http-backend` for one request: `prefix` and then `body` on its input, its CGI
/// answer as the response.
#[allow(clippy::too_many_arguments)]
async fn backend(
    s: &AppState,
    user: &str,
    method: Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    prefix: Vec<u8>,
    body: Body,
) -> Result<Response, ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let git_dir = s.ws.root().join(".git");
    let config = [
        // Hooks are the repository owner's, not a pod's to set off.
        ("core.hooksPath", "/dev/null"),
        ("http.receivepack", "true"),
        ("http.uploadpack", "true"),
        ("receive.fsckObjects", "true"),
        // The push answers once git has its objects and ref: the repository's maintenance runs
        // after it, in the background ([`maintain_later`]), not inside the pod's push.
        ("receive.autogc", "false"),
        ("uploadpack.allowReachableSHA1InWant", "true"),
    ];
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &git_dir)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_COUNT", config.len().to_string())
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_TYPE", header("content-type"))
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("HTTP_GIT_PROTOCOL", header("git-protocol"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (i, (k, v)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ApiError::internal("starting git http-backend", e))?;
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // The request goes in while the answer comes out: a large fetch answers before it has read
    // everything only in theory, but a pipe never waits on the other.
    tokio::spawn(async move {
        if stdin.write_all(&prefix).await.is_err() {
            return;
        }
        let mut body = body.into_data_stream();
        while let Some(Ok(chunk)) = body.next().await {
            if stdin.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = stdin.shutdown().await;
    });
    let mut out = BufReader::new(stdout);
    let mut status = StatusCode::OK;
    let mut response = Response::builder();
    loop {
        let mut line = String::new();
        let n = out
            .read_line(&mut line)
            .await
            .map_err(|e| ApiError::internal("reading git http-backend", e))?;
        let line = line.trim_end_matches(['\r', '\n']);
        if n == 0 || line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            status = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        } else {
            response = response.header(name, value);
        }
    }
    // The rest of the answer streams as git writes it; git is reaped once it is done, and a
    // push that git took is followed by the repository's maintenance.
    let pushed = (method == Method::POST && path.ends_with("/git-receive-pack")).then_some(git_dir);
    let stream = futures_util::stream::unfold(Some((out, child, pushed)), |state| async move {
        let (mut out, mut child, pushed) = state?;
        let mut chunk = vec![0u8; 64 * 1024];
        match out.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                let done = child.wait().await;
                if let (Some(git_dir), Ok(status)) = (pushed, done) {
                    if status.success() {
                        maintain_later(git_dir);
                    }
                }
                None
            }
            Ok(n) => {
                chunk.truncate(n);
                Some((Ok::<_, std::io::Error>(chunk), Some((out, child, pushed))))
            }
        }
    });
    tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        if !text.trim().is_empty() {
            tracing::debug!(stderr = %text.trim(), "git http-backend");
        }
    });
    response
        .status(status)
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal("git http-backend's answer", e))
        .map(IntoResponse::into_response)
}

/// How long after a push the repository's maintenance runs: after the pod's report, which
/// follows its push at once, has moved the branch.
const MAINTAIN_AFTER: std::time::Duration = std::time::Duration::from_secs(5);
/// The least time between two maintenance runs started by pushes (milliseconds).
const MAINTAIN_EVERY_MS: u64 = 5 * 60 * 1000;
/// When the last maintenance run was started (Unix milliseconds; 0 for never).
static LAST_MAINTENANCE_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What git itself does after a push it receives — `git maintenance run --auto`, which packs
/// loose objects once there are enough of them, by the repository's own `gc.*` and
/// `maintenance.*` settings — but [`MAINTAIN_AFTER`] later, at most once every
/// [`MAINTAIN_EVERY_MS`], in a process group of its own, and never inside a pod's push: with
/// `receive.autogc` on, git's `receive-pack` runs it before the push's answer ends, and a push
/// that happens to cross the threshold waits for a whole repack.
fn maintain_later(git_dir: std::path::PathBuf) {
    use std::sync::atomic::Ordering;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_millis().max(1) as u64);
    let last = LAST_MAINTENANCE_MS.load(Ordering::Acquire);
    if last != 0 && now.saturating_sub(last) < MAINTAIN_EVERY_MS {
        return;
    }
    if LAST_MAINTENANCE_MS
        .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    tokio::spawn(async move {
        tokio::time::sleep(MAINTAIN_AFTER).await;
        let mut cmd = tokio::process::Command::new("git");
        cmd.arg("--git-dir")
            .arg(&git_dir)
            .args(["maintenance", "run", "--auto", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; a server killed outright takes git with it.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = match cmd.spawn() {
            Ok(child) => {
                // A server that stops drops this task: the whole group goes (git's own
                // `gc` and `repack` under it too), not only the process it started.
                let mut group = Group(child.id().map(|p| p as i32));
                let out = child.wait_with_output().await;
                group.0 = None;
                out
            }
            Err(e) => Err(e),
        };
        match out {
            Ok(o) if o.status.success() => tracing::debug!("git maintenance after pushes ran"),
            Ok(o) => tracing::warn!(
                status = %o.status,
                stderr = %String::from_utf8_lossy(&o.stderr).trim(),
                "git maintenance after pushes failed; it runs again after a later push"
            ),
            Err(e) => tracing::warn!(error = %e, "git maintenance after pushes could not start"),
        }
    });
}

/// A process group killed (SIGKILL) when this is dropped.
struct Group(Option<i32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            crate::supervisor::kill_group(pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{commands, Parsed, Update};

    fn pkt(s: &str) -> String {
        format!("{:04x}{s}", s.len() + 4)
    }

    #[test]
    fn the_ref_updates_are_read_up_to_the_flush_and_no_further() {
        let zero = "0".repeat(40);
        let one = "1".repeat(40);
        let body = format!(
            "{}{}0000PACK…",
            pkt(&format!(
                "{zero} {one} refs/yoi/attempts/T/1.1\0report-status\n"
            )),
            pkt(&format!("{one} {zero} refs/heads/main\n"))
        );
        let Parsed::Done(u) = commands(body.as_bytes()) else {
            panic!("not read")
        };
        assert_eq!(
            u,
            vec![
                Update {
                    name: "refs/yoi/attempts/T/1.1".into(),
                    delete: false
                },
                Update {
                    name: "refs/heads/main".into(),
                    delete: true
                },
            ]
        );
        // Cut anywhere before the flush, more is needed.
        let end = body.find("0000PACK").unwrap();
        for cut in 0..end + 4 {
            assert!(
                matches!(commands(&body.as_bytes()[..cut]), Parsed::More),
                "{cut}"
            );
        }
        assert!(matches!(commands(b"zzzz"), Parsed::Bad(_)));
        // git's probe before a large push: no update, passed to git, which writes nothing.
        assert!(matches!(commands(b"0000"), Parsed::Done(u) if u.is_empty()));
    }
}
