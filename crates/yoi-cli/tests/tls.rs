//! `yoi serve` over HTTPS (docs/security.md, "TLS"): `--tls-self-signed` makes a certificate
//! once and prints its fingerprint; a server with TLS may listen beyond loopback without
//! `plain_http`; the CLI reaches its own workspace's server through the fingerprint in
//! server.json; a pod elsewhere trusts it with `--ca FILE` or `--pin sha256:…`, and is refused
//! with a wrong pin or with the web's roots alone.
//!
//! Run as root (CI, containers), the pods here are a second unix user (`nobody`) in a folder and
//! `HOME` of their own that cannot read the server's workspace: they reach the server only over
//! TCP with TLS. Every process is the real binary, killed and reaped when its test ends.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::pods::{as_user, runnable_by, until};
use common::Repo;

/// A `yoi serve --tls-self-signed` child and what it printed.
struct TlsServer {
    child: Child,
    /// `127.0.0.1:PORT`, whatever the listen address was.
    addr: String,
    fingerprint: String,
    lines: Vec<String>,
}

impl TlsServer {
    fn start(repo: &Repo, listen: &str) -> TlsServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_yoi"))
            .args(["serve", "--listen", listen, "--tls-self-signed"])
            .current_dir(repo.path())
            .env("USER", "tester")
            .env_remove("YOI_USER")
            .env_remove("YOI_DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("yoi serve starts");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        // `listening on`, the login link, and the certificate's line.
        for _ in 0..3 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            lines.push(line.trim_end().to_string());
        }
        let bound = lines[0]
            .strip_prefix("listening on https://")
            .unwrap_or_else(|| panic!("yoi serve printed {lines:?}"));
        let port = bound.rsplit(':').next().unwrap();
        let fingerprint = lines[2]
            .strip_prefix("tls: ")
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no tls line: {lines:?}"))
            .to_string();
        // The rest of stdout is drained so the server never blocks on it.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut out, &mut std::io::sink());
        });
        TlsServer {
            child,
            addr: format!("127.0.0.1:{port}"),
            fingerprint,
            lines,
        }
    }
}

impl Drop for TlsServer {
    /// SIGTERM (the server drains and removes server.json), SIGKILL after ten seconds.
    fn drop(&mut self) {
        // SAFETY: a signal to our own child, which has not been reaped yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pods' "host": a folder and `HOME` of their own, owned by the second user when the test
/// runs as root (then `uid` is theirs).
struct PodHost {
    dir: tempfile::TempDir,
    uid: Option<u32>,
}

impl PodHost {
    fn new() -> PodHost {
        let dir = tempfile::tempdir().unwrap();
        let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
        let host = PodHost { dir, uid };
        if let Some(uid) = uid {
            if let Err(e) = runnable_by(uid, Path::new(env!("CARGO_BIN_EXE_yoi"))) {
                panic!("the second user ({uid}) cannot run yoi: {e}");
            }
            host.chown();
        }
        host
    }

    fn chown(&self) {
        if let Some(uid) = self.uid {
            let status = Command::new("chown")
                .args(["-R", &format!("{uid}:{uid}")])
                .arg(self.dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    /// Put `text` in a file of the pod host (mode 0600, the pod user's).
    fn file(&self, name: &str, text: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        self.chown();
        path.display().to_string()
    }

    /// `yoi ARGS` as the pod user, in its folder with its `HOME`: (exit code, stderr).
    fn yoi(&self, args: &[&str]) -> (i32, String) {
        let mut cmd = as_user(Command::new(env!("CARGO_BIN_EXE_yoi")), self.uid);
        let out = cmd
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("USER", "pod")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `yoi pod run --once` for the verifier role against `server`, with `trust` flags: waits
    /// for work once (there is none) and exits.
    fn pod_once(&self, server: &TlsServer, token: &str, trust: &[&str]) -> (i32, String) {
        let url = format!("https://{}", server.addr);
        let mut args = vec![
            "pod",
            "run",
            "--role",
            "verifier",
            "--agent",
            "verify",
            "--server",
            &url,
            "--name",
            "far",
            "--token-file",
            token,
            "--once",
            "--wait-ms",
            "100",
        ];
        args.extend_from_slice(trust);
        self.yoi(&args)
    }
}

fn pod_token(repo: &Repo, name: &str) -> String {
    repo.yoi(&["token", "create", "--name", name, "--scope", "pod:verifier"])
        .ok()
        .stdout
        .trim()
        .to_string()
}

/// The pods the server knows, by name prefix.
fn pods_named(repo: &Repo, prefix: &str) -> usize {
    let out = repo.yoi(&["pod", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"].as_str().unwrap_or("").starts_with(prefix))
        .count()
}

#[test]
fn a_pod_elsewhere_trusts_the_self_signed_server_by_ca_or_pin_and_a_wrong_pin_is_refused() {
    let repo = Repo::init();
    // Beyond loopback without `plain_http`: TLS is what lets it start.
    let server = TlsServer::start(&repo, "0.0.0.0:0");
    assert!(
        server.lines[1].starts_with("dashboard: https://") && !server.lines[1].contains("0.0.0.0"),
        "{:?}",
        server.lines
    );
    assert!(
        !server.lines.iter().any(|l| l.contains("plain HTTP")),
        "{:?}",
        server.lines
    );
    let cert = std::fs::read_to_string(repo.path().join(".yoi/local/tls/cert.pem")).unwrap();
    let info = std::fs::read_to_string(repo.path().join(".yoi/local/server.json")).unwrap();
    assert!(info.contains(&server.fingerprint), "{info}");

    let host = PodHost::new();
    if let Some(uid) = host.uid {
        // The pod host cannot read the server's workspace: no shared-disk shortcut.
        let listed = as_user(Command::new("ls"), Some(uid))
            .arg(repo.path().join(".yoi/local"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            !listed.success(),
            "the second user reads the server's files"
        );
    }
    let ca = host.file("server.pem", &cert);
    let token = host.file("token", &pod_token(&repo, "remote-verifier"));

    // The CA file: registered, no work, exit 3.
    let (code, stderr) = host.pod_once(&server, &token, &["--ca", &ca]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("0 completed"), "{stderr}");
    // The pin as printed reaches it; upper case with colons, as openssl prints it, too.
    let (code, stderr) = host.pod_once(&server, &token, &["--pin", &server.fingerprint]);
    assert_eq!(code, 3, "{stderr}");
    let hex = server
        .fingerprint
        .strip_prefix("sha256:")
        .unwrap()
        .to_uppercase();
    let pairs: Vec<&str> = (0..32).map(|i| &hex[2 * i..2 * i + 2]).collect();
    let openssl = format!("sha256:{}", pairs.join(":"));
    let (code, stderr) = host.pod_once(&server, &token, &["--pin", &openssl]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(pods_named(&repo, "far"), 3);

    // A wrong pin: refused in the handshake, nothing registered, the two fingerprints named.
    let mut wrong = server.fingerprint.clone();
    let last = if wrong.ends_with('0') { "1" } else { "0" };
    wrong.replace_range(wrong.len() - 1.., last);
    let (code, stderr) = host.pod_once(&server, &token, &["--pin", &wrong]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("not the pinned {wrong}")) && stderr.contains(&server.fingerprint),
        "{stderr}"
    );
    // The web's roots alone do not vouch for a self-signed certificate.
    let (code, stderr) = host.pod_once(&server, &token, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
    // A bad pin is a usage error before anything is sent.
    let (code, stderr) = host.pod_once(&server, &token, &["--pin", "sha256:abc"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("64 hex digits"), "{stderr}");
    assert_eq!(pods_named(&repo, "far"), 3, "refused pods never registered");
    // The server's own supervised verifier pod reaches it over HTTPS too, given `--pin`.
    until("the supervised verifier pod to register", || {
        pods_named(&repo, "verifier-0") == 1
    });

    // Plain HTTP to the TLS port gets no answer: the connection is closed (the write itself may
    // already meet the closed connection).
    let mut plain = std::net::TcpStream::connect(&server.addr).unwrap();
    let _ = write!(
        plain,
        "GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.addr
    );
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"),
        "plain HTTP was answered"
    );
}

#[test]
fn the_cli_and_the_mcp_relay_reach_their_own_tls_server_and_the_certificate_outlives_a_restart() {
    let repo = Repo::init();
    let server = TlsServer::start(&repo, "127.0.0.1:0");
    // A mutation goes through the API (the server records it), over HTTPS with the pin from
    // server.json.
    let id = repo.create("Over TLS", "");
    let shown = repo.yoi(&["ticket", "show", &id, "--json"]).ok();
    assert!(shown.stdout.contains("Over TLS"), "{}", shown.stdout);
    let link = repo.yoi(&["dashboard", "--no-open"]).ok().stdout;
    assert!(link.contains("https://127.0.0.1:"), "{link}");
    // The stdio relay for MCP clients reaches it the same way.
    let relayed = repo
        .yoi_stdin(
            &["mcp"],
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
        )
        .ok();
    assert!(
        relayed.stdout.contains("\"protocolVersion\""),
        "{relayed:?}"
    );
    let first = server.fingerprint.clone();
    drop(server);
    let again = TlsServer::start(&repo, "127.0.0.1:0");
    assert_eq!(again.fingerprint, first, "the made certificate is reused");
}
