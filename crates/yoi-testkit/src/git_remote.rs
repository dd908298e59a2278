//! A git server on loopback for tests of `[pods] transport = "remote"` (docs/pods.md): a bare
//! repository served by git's own `http-backend` (as CGI, over the fakes' small HTTP server)
//! behind basic auth, each user with a password of its own. It records who asked and which
//! headers came (so a test can assert that no yoi token and no `Yoi-Pod` header reached it),
//! and can be taken down — every connection closed without an answer — and brought back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::forge::http::{Request, Response, Server};

/// One request the remote received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The user basic auth named (None: no or bad credentials, answered 401).
    pub user: Option<String>,
    /// The `Authorization` header as sent.
    pub authorization: Option<String>,
    /// A `Yoi-Pod` header, which yoi's pods send only to the server's own git.
    pub yoi_pod: Option<String>,
    /// Whether it was answered (false while down).
    pub answered: bool,
}

struct State {
    root: PathBuf,
    users: Vec<(String, String)>,
    down: bool,
    seen: Vec<Seen>,
}

pub struct GitRemote {
    server: Option<Server>,
    state: Arc<Mutex<State>>,
    _dir: tempfile::TempDir,
}

impl GitRemote {
    /// A remote holding `repo.git` (with `main` of `seed` when given) that takes the
    /// `(user, password)` pairs `users`.
    pub fn start(users: &[(&str, &str)], seed: Option<&Path>) -> GitRemote {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("git");
        let bare = root.join("repo.git");
        std::fs::create_dir_all(&bare).unwrap();
        crate::git(&bare, &["init", "-q", "--bare", "-b", "main"]);
        // A push over HTTP is refused unless the repository allows it.
        crate::git(&bare, &["config", "http.receivepack", "true"]);
        if let Some(seed) = seed {
            crate::git(
                seed,
                &["push", "-q", bare.to_str().unwrap(), "main:refs/heads/main"],
            );
        }
        let state = Arc::new(Mutex::new(State {
            root,
            users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
            down: false,
            seen: Vec::new(),
        }));
        let s = state.clone();
        let server = Server::start(Arc::new(move |req: &Request| handle(&s, req)));
        GitRemote {
            server: Some(server),
            state,
            _dir: dir,
        }
    }

    /// The repository's URL, without credentials.
    pub fn url(&self) -> String {
        format!("http://{}/repo.git", self.server.as_ref().unwrap().addr())
    }

    /// The bare repository behind [`GitRemote::url`].
    pub fn bare(&self) -> PathBuf {
        self.state.lock().unwrap().root.join("repo.git")
    }

    /// Take the remote down (every connection closed unanswered) or bring it back.
    pub fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The refs of the repository under `prefix`, as `(name, commit)`.
    pub fn refs(&self, prefix: &str) -> Vec<(String, String)> {
        crate::git(
            &self.bare(),
            &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
        )
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
    }
}

impl Drop for GitRemote {
    fn drop(&mut self) {
        self.server.take();
    }
}

fn handle(state: &Arc<Mutex<State>>, req: &Request) -> Response {
    let (root, user, down) = {
        let s = state.lock().unwrap();
        let user = req
            .header("authorization")
            .and_then(|a| a.strip_prefix("Basic "))
            .and_then(|b| decode64(b.trim()))
            .and_then(|up| {
                let (u, p) = up.split_once(':')?;
                s.users
                    .iter()
                    .any(|(uu, pp)| uu == u && pp == p)
                    .then(|| u.to_string())
            });
        (s.root.clone(), user, s.down)
    };
    state.lock().unwrap().seen.push(Seen {
        method: req.method.clone(),
        path: req.path.clone(),
        user: user.clone(),
        authorization: req.header("authorization").map(str::to_string),
        yoi_pod: req.header("yoi-pod").map(str::to_string),
        answered: !down,
    });
    if down {
        return Response::Drop;
    }
    let Some(user) = user else {
        return Response::Full {
            status: 401,
            headers: vec![(
                "WWW-Authenticate".into(),
                "Basic realm=\"test remote\"".into(),
            )],
            body: b"authentication required\n".to_vec(),
        };
    };
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", &root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", &req.path)
        .env("REQUEST_METHOD", &req.method)
        .env("QUERY_STRING", &req.raw_query)
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", req.body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (h, env) in [
        ("content-type", "CONTENT_TYPE"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "GIT_PROTOCOL"),
    ] {
        if let Some(v) = req.header(h) {
            cmd.env(env, v);
        }
    }
    let mut child = cmd.spawn().expect("git http-backend starts");
    let mut stdin = child.stdin.take().unwrap();
    let body = req.body.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&body);
    });
    let out = child.wait_with_output().expect("git http-backend runs");
    let _ = writer.join();
    let text = out.stdout;
    let split = text
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| text.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((i, n)) = split else {
        return Response::Full {
            status: 500,
            headers: vec![],
            body: out.stderr,
        };
    };
    let mut status = 200;
    let mut headers = Vec::new();
    for line in String::from_utf8_lossy(&text[..i]).lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("status") {
                status = v
                    .trim()
                    .split(' ')
                    .next()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(500);
            } else {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    Response::Full {
        status,
        headers,
        body: text[i + n..].to_vec(),
    }
}

/// Standard base64 (as basic auth sends it) to text.
fn decode64(s: &str) -> Option<String> {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = T.iter().position(|t| *t == c)? as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).ok()
}
