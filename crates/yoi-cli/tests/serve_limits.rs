//! The real `yoi serve` under a small file-descriptor limit, and the CLI's answer to a title
//! with a bidirectional control: what the limits of issue 38 promise end to end.

mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Repo;

/// `yoi serve` with `RLIMIT_NOFILE` set to `limit` (soft and hard, so the server cannot raise
/// it), not routing, with a one-second header timeout. Its address and log lines.
struct LimitedServer {
    child: std::process::Child,
    addr: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl LimitedServer {
    fn start(repo: &Repo, limit: u64) -> LimitedServer {
        let config = repo.path().join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        let edited = text
            .replace("\nenabled = true\n", "\nenabled = false\n")
            .replace(
                "\nheader_timeout_secs = 10\n",
                "\nheader_timeout_secs = 1\n",
            );
        assert_eq!(
            edited.matches("= 1\n").count() + edited.matches("= false\n").count(),
            text.matches("= 1\n").count() + text.matches("= false\n").count() + 2,
            "the default configuration names [router] enabled and [server] header_timeout_secs"
        );
        std::fs::write(&config, edited).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_yoi"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .current_dir(repo.path())
            .env("USER", "tester")
            .env("YOI_LOG", "info")
            .env_remove("YOI_USER")
            .env_remove("YOI_DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: setrlimit is async-signal-safe and touches only this child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("yoi serve starts");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("yoi serve printed {line:?}"))
            .to_string();
        // Keep reading stdout so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        LimitedServer { child, addr, log }
    }
}

impl Drop for LimitedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A log line without its terminal colours.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether the server has closed `s`, without blocking.
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 512];
    let out = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).unwrap();
    out
}

#[test]
fn four_hundred_trickling_clients_under_256_descriptors_do_not_stop_healthz() {
    let repo = Repo::init();
    let server = LimitedServer::start(&repo, 256);
    // The server keeps a quarter of its 256 descriptors for itself.
    let listening = server
        .log
        .iter()
        .find(|l| l.contains("yoi server listening"))
        .map(|l| plain(&l))
        .expect("the server logs its start");
    assert!(
        listening.contains("max_connections=192") && listening.contains("fd_limit=256"),
        "{listening}"
    );
    let started = Instant::now();
    let mut conns: Vec<Option<TcpStream>> = (0..400)
        .map(|_| {
            let mut s = TcpStream::connect(&server.addr).expect("connect");
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .unwrap();
            Some(s)
        })
        .collect();
    let deadline = Duration::from_secs(60);
    while conns.iter().any(Option::is_some) {
        assert!(
            started.elapsed() < deadline,
            "{} trickling connections still open after {deadline:?}",
            conns.iter().flatten().count()
        );
        for slot in conns.iter_mut() {
            let Some(s) = slot else { continue };
            if closed(s) {
                *slot = None;
            } else {
                let _ = s.write(b"a");
            }
        }
        // Pacing of the trickle, not a wait for the server.
        std::thread::sleep(Duration::from_millis(100));
    }
    let cut = started.elapsed();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let res = agent
        .get(&format!("http://{}/healthz", server.addr))
        .call()
        .expect("/healthz answers once the trickling connections are cut");
    assert_eq!(res.status(), 200);
    // Each batch of 192 was cut at the one-second header timeout.
    assert!(cut < Duration::from_secs(30), "cut after {cut:?}");
}

#[test]
fn a_title_with_a_bidi_control_is_refused_by_the_cli_and_changes_nothing() {
    let repo = Repo::init();
    let out = repo.yoi(&["ticket", "create", "--title", "Fix \u{202E}gol.exe"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("title holds the bidirectional control U+202E at character 5"),
        "{}",
        out.stderr
    );
    let listed = repo
        .yoi(&["ticket", "list", "--state", "all", "--json"])
        .ok();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&listed.stdout).unwrap()["tickets"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "{}",
        listed.stdout
    );
}
