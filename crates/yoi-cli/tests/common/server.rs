//! A real `yoi serve` child process for the CLI tests, its address read from its
//! `listening on http://ADDR` line (never guessed or waited for), killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;

use super::Repo;

/// A `yoi serve` child process.
pub struct Server {
    pub child: Child,
    pub addr: String,
    /// Its stderr (the log), line by line.
    pub log: mpsc::Receiver<String>,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Server {
    /// A server that does not route (these tests are about the API and the CLI; their
    /// repositories have no commit to accept work onto).
    pub fn start(repo: &Repo) -> Server {
        let config = repo.path().join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        let off = text.replace("\nenabled = true\n", "\nenabled = false\n");
        assert_ne!(
            text, off,
            "the default configuration names [router] enabled"
        );
        std::fs::write(&config, off).unwrap();
        Server::spawn(repo)
    }

    pub fn spawn(repo: &Repo) -> Server {
        Server::spawn_at(repo, "127.0.0.1:0")
    }

    /// A server listening on `listen` (a restart keeps its address this way).
    pub fn spawn_at(repo: &Repo, listen: &str) -> Server {
        Server::spawn_with_env(repo, listen, &[])
    }

    /// A server (and so its pods and their agents) with `env` added to its environment.
    pub fn spawn_with_env(repo: &Repo, listen: &str, env: &[(&str, &str)]) -> Server {
        Server::spawn_as(repo, listen, env, None)
    }

    /// [`Server::spawn_with_env`] run by the user `uid` (a root test's second user), or by the
    /// test's own user when `None`.
    pub fn spawn_as(repo: &Repo, listen: &str, env: &[(&str, &str)], uid: Option<u32>) -> Server {
        Server::spawn_with(repo, &["--listen", listen], env, uid)
    }

    /// A server over HTTPS with a certificate it makes (`--tls-self-signed`) on loopback; its
    /// `tls: sha256:…` line is the next [`Server::stdout_line`] after the login link.
    pub fn spawn_tls(repo: &Repo) -> Server {
        Server::spawn_with(
            repo,
            &["--listen", "127.0.0.1:0", "--tls-self-signed"],
            &[],
            None,
        )
    }

    /// [`Server::spawn_tls`] with `env` added, run by `uid` as [`Server::spawn_as`] is.
    pub fn spawn_tls_as(repo: &Repo, env: &[(&str, &str)], uid: Option<u32>) -> Server {
        Server::spawn_with(
            repo,
            &["--listen", "127.0.0.1:0", "--tls-self-signed"],
            env,
            uid,
        )
    }

    fn spawn_with(repo: &Repo, args: &[&str], env: &[(&str, &str)], uid: Option<u32>) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_yoi"));
        if let Some(uid) = uid {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(uid);
        }
        let mut child = command
            .arg("serve")
            .args(args)
            .envs(env.iter().copied())
            .current_dir(repo.path())
            .env("USER", "tester")
            .env("YOI_LOG", "info")
            .env_remove("YOI_USER")
            .env_remove("YOI_DATABASE_URL")
            .env_remove("YOI_LOCK_TIMEOUT_SECS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("yoi serve starts");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let line = line
            .trim()
            .replacen("listening on https://", "listening on http://", 1);
        let addr = match line.strip_prefix("listening on http://") {
            Some(a) => a.to_string(),
            None => {
                let log: Vec<String> = log.try_iter().collect();
                panic!("yoi serve printed {line:?}; log:\n{}", log.join("\n"));
            }
        };
        Server {
            child,
            addr,
            log,
            _stdout: stdout,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line the server printed on stdout after `listening on …`.
    pub fn stdout_line(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self._stdout.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    /// SIGKILL: no shutdown, no cleanup.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Send SIGTERM (as a service manager would).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    /// The log lines written so far.
    pub fn log_so_far(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// Block until a log line contains `needle`; returns it.
    pub fn wait_for_log(&self, needle: &str) -> String {
        for line in self.log.iter() {
            if line.contains(needle) {
                return line;
            }
        }
        panic!("the server's log ended without `{needle}`");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Server {
    /// GET `/api/v1{path}` with the workspace's admin token: the status and the JSON body.
    pub fn get(&self, repo: &Repo, path: &str) -> (u16, serde_json::Value) {
        let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut resp = agent
            .get(&format!("http://{}/api/v1{path}", self.addr))
            .header("Authorization", &format!("Bearer {}", token.trim()))
            .call()
            .unwrap();
        (resp.status().as_u16(), resp.body_mut().read_json().unwrap())
    }
}
