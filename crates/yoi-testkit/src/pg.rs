//! A throwaway PostgreSQL cluster for tests: `initdb` + `postgres` from the machine's server
//! binaries, in a temporary folder, on a free loopback port, started once per test binary.
//! Each test asks for its own database.
//!
//! The server runs under a tiny `sh` guardian whose standard input is held by this process:
//! when the test binary exits (however it exits), the pipe closes, the guardian stops the
//! server and deletes the folder. Nothing is left running. Missing binaries are a test failure
//! with instructions — never a silent skip.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub struct Cluster {
    pub port: u16,
    _guardian: Mutex<Child>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();
static NEXT_DB: AtomicUsize = AtomicUsize::new(0);

// Test infrastructure, not library code: it may read the environment.
#[allow(clippy::disallowed_methods)]
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("YOI_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path().join("bin"))
                .filter(|p| p.join("initdb").is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: install them (apt-get install -y postgresql) or set YOI_PG_BIN")
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false)
}

/// Run `argv` as the `postgres` user when we are root (PostgreSQL refuses to run as root).
fn as_db_user(argv: &[String]) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).args(argv);
        c
    } else {
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        c
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start() -> Cluster {
    let bin = bin_dir();
    let base = tempfile::Builder::new()
        .prefix("yoi-pg-")
        .tempdir()
        .unwrap()
        .keep();
    let data = base.join("data");
    if is_root() {
        let ok = Command::new("chown")
            .args(["-R", "postgres:"])
            .arg(&base)
            .status()
            .unwrap()
            .success();
        assert!(
            ok,
            "chown {} to postgres failed (does the postgres user exist?)",
            base.display()
        );
    }
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let out = as_db_user(&[
        s(&bin.join("initdb")),
        "-D".into(),
        s(&data),
        "-U".into(),
        "yoi".into(),
        "--auth=trust".into(),
        "-E".into(),
        "UTF8".into(),
        "--no-sync".into(),
    ])
    .stdout(Stdio::null())
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let script = format!(
        "'{postgres}' -D '{data}' -p {port} -k '{base}' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 >'{base}/log' 2>&1 & pid=$!; read _; kill -INT $pid; wait $pid; rm -rf '{base}'",
        postgres = s(&bin.join("postgres")),
        data = s(&data),
        base = s(&base),
    );
    let guardian = as_db_user(&["sh".into(), "-c".into(), script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "postgres did not start: {}",
            std::fs::read_to_string(base.join("log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    Cluster {
        port,
        _guardian: Mutex::new(guardian),
    }
}

/// A fresh, empty database on the shared cluster; returns its URL.
pub fn database() -> String {
    let cluster = CLUSTER.get_or_init(start);
    let name = format!(
        "t{}_{}",
        std::process::id(),
        NEXT_DB.fetch_add(1, Ordering::Relaxed)
    );
    // `createdb` from the same server binaries: no database client library in the test kit.
    // The server may still be finishing start-up after the port opens, so a refused
    // connection is tried again until a deadline. Copying `template1` fails when anything
    // else is connected to it (a concurrent `CREATE DATABASE` from another test, autovacuum),
    // so databases are copied from `template0`, which takes no connections, one at a time.
    static CREATING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = CREATING.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new(bin_dir().join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &cluster.port.to_string(),
                "-U",
                "yoi",
                "-T",
                "template0",
                &name,
            ])
            .env("PGCONNECT_TIMEOUT", "5")
            .output()
            .expect("run createdb");
        if out.status.success() {
            break;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let starting = err.contains("starting up")
            || err.contains("could not connect")
            || err.contains("being accessed by other users");
        if !starting || Instant::now() >= deadline {
            panic!("createdb {name} on the test cluster failed: {err}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    format!("postgres://yoi@127.0.0.1:{}/{name}", cluster.port)
}

/// Which database a test runs on: the embedded SQLite or the throwaway PostgreSQL cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// For each named test function taking a [`Backend`], a module with a `sqlite` and a
/// `postgres` test: the same case on both databases in one `cargo test`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name($crate::pg::Backend::Sqlite)
            }
            #[test]
            fn postgres() {
                super::$name($crate::pg::Backend::Postgres)
            }
        }
    )*};
}
