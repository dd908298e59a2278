//! A git server on loopback for tests of `[pods] transport = "remote"` (docs/pods.md): a bare
//! repository served by git's own `http-backend` (as CGI, over the fakes' small HTTP server)
//! behind basic auth, each user with a password of its own. It records who asked and which
//! headers came (so a test can assert that no yoi token and no `Yoi-Pod` header reached it),
//! and can be taken down — every connection closed without an answer — and brought back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::forge::http::{Request, Response, Server};
use crate::forge::{base64_decode, http_backend};

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
            .and_then(|b| base64_decode(b.trim()))
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
    http_backend(&root, &req.path, &user, req)
}
