//! `yoi-bench-remote YOI_BINARY [TICKETS] [FILES] [COLD] [WARM]`: a pod without the server's
//! disk (`yoi pod run --cache DIR`, docs/pods.md "Pods on other hosts") against a real
//! `yoi serve --tls-self-signed` on loopback, on a repository of FILES source files (default
//! 800) and TICKETS generated tickets (default 10,000), and `git clone` of the same repository
//! over the same HTTPS smart-HTTP endpoint with the same pod token, side by side (issue 34's
//! goals: claim → agent start with a warm cache ≤ 1 s, result push → branch moved ≤ 0.5 s, the
//! first claim with a cold cache ≤ 3× that clone).
//!
//! The repository: FILES files of about 2 KB under `src/` committed in 40 commits, the tickets
//! written by the seeded generator ([`yoi_tests::generate`], closed: a backlog of done work,
//! about two `depends_on` each) committed in 200 commits, indexed by `yoi init`, then packed
//! (`git repack -ad`, as gc leaves a repository that has lived a while). The server
//! routes (up to 100 tickets in progress) and runs no pods of its own. Each attempt is a ticket
//! queued through the CLI, accepted by the server, claimed by the pod, which runs the scripted
//! `yoi-fake-agent` (it writes one file and says done), pushes the commit to its attempt ref and
//! reports it; the program checks that the ticket branch holds the agent's file.
//!
//! 1. **Cold**, COLD times (default 3): `git clone` into a new folder, then a new
//!    `yoi pod run --once` with an empty cache takes one ticket.
//! 2. **Warm**, WARM attempts (default 8): one long-running pod on the last cold cache takes one
//!    ticket after another.
//!
//! Figures come from the pod's own log: `attempt timing` (claim → agent start, push → report
//! answered) and `the claim's commit is checked out in the cache` (fetch and checkout). The
//! load average is printed beside each phase. Needs `yoi-fake-agent` next to YOI_BINARY
//! (`cargo build --release -p yoi-cli --bin yoi -p yoi-tests --bin yoi-fake-agent --bin
//! yoi-bench-remote`).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use yoi_core::state::State;
use yoi_testkit::git;

const BRIEF: &str = "## Intent\nWrite the bench file.\n\n## Acceptance criteria\n- it is there\n\n## Validation\n`true`\n";

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// p50 and max of `v`, in milliseconds.
fn p50_max(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    (v[(v.len() - 1) / 2], v[v.len() - 1])
}

fn show(label: &str, v: &[f64]) {
    let (p50, max) = p50_max(v);
    let all: Vec<String> = v.iter().map(|x| format!("{x:.0}")).collect();
    println!(
        "  {label}: p50 {p50:.0} ms, max {max:.0} ms  [{}]",
        all.join(", ")
    );
}

/// A number field `name=N` of a log line.
fn field(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!(" {name}="))? + name.len() + 2;
    let digits: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The lines of `log` containing `needle`.
fn lines_with(log: &Path, needle: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// A ticket queued in the server's workspace through the CLI; its id.
fn queue_ticket(yoi: &Path, root: &Path, title: &str) -> String {
    let run = |args: &[&str], stdin: Option<&str>| -> String {
        let mut child = Command::new(yoi)
            .args(args)
            .current_dir(root)
            .env("USER", "bench")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("yoi runs");
        if let Some(text) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "yoi {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let id = run(
        &["ticket", "create", "--title", title, "--body-file", "-"],
        Some(BRIEF),
    );
    run(&["ticket", "mark-ready", &id], None);
    run(&["ticket", "queue", &id], None);
    id
}

/// Wait until `log` has `n` lines with `needle`, or the pod `child` ended; panics after 5 min.
fn wait_lines(log: &Path, needle: &str, n: usize, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(300);
    while lines_with(log, needle).len() < n {
        if let Ok(Some(status)) = child.try_wait() {
            if lines_with(log, needle).len() >= n {
                return;
            }
            panic!(
                "the pod exited ({status}) before `{needle}`: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < until,
            "no `{needle}` in 5 min: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ticket's branch in the server's repository holds the file the agent wrote.
fn check_branch(root: &Path, id: &str) {
    let refs = git(
        root,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/heads/yoi/{id}*"),
        ],
    );
    let branch = refs
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no branch for {id}"));
    let file = git(root, &["show", &format!("{branch}:bench/{id}.txt")]);
    assert_eq!(file.trim(), "benched", "{branch}");
}

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: signals a child this process started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-remote YOI_BINARY [TICKETS] [FILES] [COLD] [WARM]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let num =
        |i: usize, d: usize| -> usize { args.get(i).map(|s| s.parse().expect(usage)).unwrap_or(d) };
    let (tickets, files, cold, warm) = (num(2, 10_000), num(3, 800), num(4, 3), num(5, 8));
    let agent = yoi.with_file_name("yoi-fake-agent");
    assert!(agent.is_file(), "{} is missing", agent.display());

    // The pod host: a folder of its own (HOME, the agent's profile and script, the token, the
    // server's certificate), and the server's repository.
    let host = tempfile::tempdir().unwrap();
    let h = host.path();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let t = Instant::now();
    git(root, &["init", "-q", "-b", "main"]);
    let mut rng = yoi_tests::generate::Rng(yoi_tests::generate::SEED);
    let per_commit = files.div_ceil(40).max(1);
    for i in 0..files {
        let path = root.join(format!("src/m{:02}/f{i:04}.rs", i % 40));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = format!("//! File {i}.\n");
        while text.len() < 2000 {
            text.push_str(&format!(
                "pub fn f{}() -> u64 {{ {} }}\n",
                rng.below(1_000_000),
                rng.next_u64()
            ));
        }
        std::fs::write(path, text).unwrap();
        if (i + 1) % per_commit == 0 || i + 1 == files {
            git(root, &["add", "-A", "src"]);
            git(root, &["commit", "-qm", &format!("source {i}")]);
        }
    }
    yoi_store::init(root, "main").expect("yoi's files initialise");
    let made = yoi_tests::generate::generate_in(root, tickets, tickets * 2, Some(State::Closed));
    let mut ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    for chunk in ids.chunks(tickets.div_ceil(200).max(1)) {
        let mut add = vec!["add".to_string(), "--".into()];
        add.extend(chunk.iter().map(|id| format!(".yoi/tickets/{id}")));
        let add: Vec<&str> = add.iter().map(String::as_str).collect();
        git(root, &add);
        git(
            root,
            &[
                "commit",
                "-qm",
                &format!("tickets to {}", chunk[chunk.len() - 1]),
            ],
        );
    }
    // No supervised pods (the bench's pod is the only one), routing on with room for every
    // attempt, the scripted agent as the coder's.
    let config = root.join(".yoi/workspace.toml");
    let script = h.join("agent-script.txt");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        .replace("max_inprogress = 4", "max_inprogress = 100")
        .replace("coder = 1", "coder = 0")
        .replace("verifier = 1", "verifier = 0")
        .replace("reviewer = 1", "reviewer = 0")
        .replace("[pods.agent]\n", "[pods.agent]\ncoder = \"fake\"\n");
    let profile = format!(
        "\n[agents.fake]\nprogram = \"{}\"\nargv = [\"{{program}}\", \"{}\"]\nstdin = \"prompt_file\"\noutput = \"text\"\ntimeout_secs = 120\n",
        agent.display(),
        script.display()
    );
    std::fs::write(&config, format!("{text}{profile}")).unwrap();
    std::fs::write(
        &script,
        "write bench/$YOI_TICKET.txt benched\ndone benched\n",
    )
    .unwrap();
    git(root, &["add", "-A", ".yoi"]);
    git(root, &["commit", "-qm", "yoi"]);
    yoi_tests::yoi_init(&yoi, root);
    git(root, &["add", "-A", ".yoi"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "yoi init"]);
    // Packed, as a repository that has lived a while is (git's own gc packs loose objects).
    git(root, &["repack", "-adq"]);
    let commits = git(root, &["rev-list", "--count", "HEAD"]);
    let size = git(root, &["count-objects", "-vH"]);
    println!(
        "repository: {files} source files, {tickets} tickets ({made} depends_on), {} commits, made in {:.1} s; {}",
        commits.trim(),
        t.elapsed().as_secs_f64(),
        size.lines()
            .filter(|l| l.starts_with("size") || l.starts_with("count"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // The server, over HTTPS with a certificate of its own.
    let mut child = Command::new(&yoi)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-self-signed"])
        .current_dir(root)
        .env("YOI_LOG", "warn")
        .env("USER", "bench")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("yoi serve starts");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let server = Server { child };
    let first = out.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .trim()
        .strip_prefix("listening on https://")
        .unwrap_or_else(|| panic!("yoi serve printed {first:?}"))
        .to_string();
    let mut tls = String::new();
    for line in out.by_ref().take(4) {
        let line = line.unwrap_or_default();
        if line.starts_with("tls: ") {
            tls = line;
            break;
        }
    }
    assert!(tls.starts_with("tls: sha256:"), "no tls line: {tls:?}");
    std::thread::spawn(move || for _ in out {});
    let url = format!("https://{addr}");

    git(h, &["init", "-q", "-b", "main"]);
    yoi_store::init(h, "main").unwrap();
    let hconfig = h.join(".yoi/workspace.toml");
    let htext = std::fs::read_to_string(&hconfig).unwrap();
    std::fs::write(&hconfig, format!("{htext}{profile}")).unwrap();
    std::fs::copy(root.join(".yoi/local/tls/cert.pem"), h.join("server.pem")).unwrap();
    let token = Command::new(&yoi)
        .args([
            "token",
            "create",
            "--name",
            "bench-remote",
            "--scope",
            "pod:coder",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        token.status.success(),
        "{}",
        String::from_utf8_lossy(&token.stderr)
    );
    let token = String::from_utf8_lossy(&token.stdout).trim().to_string();
    std::fs::write(h.join("token"), &token).unwrap();
    let pod = |cache: &Path, log: &Path, once: bool| -> Child {
        let mut cmd = Command::new(&yoi);
        cmd.args([
            "pod", "run", "--role", "coder", "--agent", "fake", "--name", "bench",
        ])
        .args([
            "--server",
            &url,
            "--ca",
            "server.pem",
            "--token-file",
            "token",
        ])
        .arg("--cache")
        .arg(cache)
        .args(["--wait-ms", "30000"]);
        if once {
            cmd.arg("--once");
        }
        cmd.current_dir(h)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", h)
            .env("USER", "bench")
            .env("YOI_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("yoi pod run starts")
    };
    let clone = |into: &Path, checkout: bool| -> f64 {
        let t = Instant::now();
        // The token and the certificate as the pod gives them to its git.
        let mut cmd = Command::new("git");
        cmd.env("GIT_CONFIG_COUNT", "2")
            .env("GIT_CONFIG_KEY_0", "http.extraHeader")
            .env(
                "GIT_CONFIG_VALUE_0",
                format!("Authorization: Bearer {token}"),
            )
            .env("GIT_CONFIG_KEY_1", "http.sslCAInfo")
            .env("GIT_CONFIG_VALUE_1", h.join("server.pem"))
            .env_remove("GIT_SSL_CAINFO")
            .env_remove("GIT_SSL_CAPATH")
            .args(["clone", "-q"]);
        if !checkout {
            cmd.arg("--no-checkout");
        }
        let out = cmd
            .arg(format!("{url}/git"))
            .arg(into)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(
            out.status.success(),
            "git clone: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ms
    };

    // 1. Cold: a clone, then a new pod on an empty cache, side by side.
    println!(
        "\ncold: {cold} rounds of `git clone` then a new pod on an empty cache; load {}",
        loadavg()
    );
    let (mut clones, mut bare_clones, mut colds, mut cold_fetch, mut cold_checkout) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut pushes, mut push_only, mut reports) = (vec![], vec![], vec![]);
    let mut last_cache = PathBuf::new();
    for i in 0..cold {
        let c = host.path().join(format!("clone-{i}"));
        clones.push(clone(&c, true));
        let _ = std::fs::remove_dir_all(&c);
        let c = host.path().join(format!("clone-nc-{i}"));
        bare_clones.push(clone(&c, false));
        let _ = std::fs::remove_dir_all(&c);
        let cache = h.join(format!("cache-{i}"));
        let log = h.join(format!("cold-{i}.log"));
        let id = queue_ticket(&yoi, root, &format!("cold {i}"));
        let mut p = pod(&cache, &log, true);
        wait_lines(&log, "attempt timing", 1, &mut p);
        let status = p.wait().unwrap();
        assert!(
            status.success(),
            "{}",
            std::fs::read_to_string(&log).unwrap()
        );
        let timing = lines_with(&log, "attempt timing").remove(0);
        let ready = lines_with(&log, "checked out in the cache").remove(0);
        colds.push(field(&timing, "claim_to_agent_ms").unwrap());
        let (push, report) = (
            field(&timing, "push_ms").unwrap(),
            field(&timing, "report_ms").unwrap(),
        );
        pushes.push(push + report);
        push_only.push(push);
        reports.push(report);
        cold_fetch.push(field(&ready, "fetch_ms").unwrap());
        cold_checkout.push(field(&ready, "checkout_ms").unwrap());
        check_branch(root, &id);
        last_cache = cache;
    }
    println!("  load after: {}", loadavg());
    show("git clone over HTTPS (reference)", &clones);
    show("git clone --no-checkout", &bare_clones);
    show("claim → agent start, cold cache", &colds);
    show("  of which fetch", &cold_fetch);
    show("  of which checkout", &cold_checkout);
    let ratio = p50_max(&colds).0 / p50_max(&clones).0;
    println!("  cold claim / clone (p50s): {ratio:.2}× (goal ≤ 3×)");

    // 2. Warm: one pod on the last cold cache, one ticket after another.
    println!(
        "\nwarm: {warm} attempts of one pod on a warm cache; load {}",
        loadavg()
    );
    let log = h.join("warm.log");
    let mut p = pod(&last_cache, &log, false);
    let (mut warms, mut warm_fetch, mut warm_checkout) = (vec![], vec![], vec![]);
    for i in 0..warm {
        let id = queue_ticket(&yoi, root, &format!("warm {i}"));
        wait_lines(&log, "attempt timing", i + 1, &mut p);
        let timing = lines_with(&log, "attempt timing").remove(i);
        let ready = lines_with(&log, "checked out in the cache").remove(i);
        warms.push(field(&timing, "claim_to_agent_ms").unwrap());
        let (push, report) = (
            field(&timing, "push_ms").unwrap(),
            field(&timing, "report_ms").unwrap(),
        );
        pushes.push(push + report);
        push_only.push(push);
        reports.push(report);
        warm_fetch.push(field(&ready, "fetch_ms").unwrap());
        warm_checkout.push(field(&ready, "checkout_ms").unwrap());
        check_branch(root, &id);
    }
    // SAFETY: signals the pod this process started.
    unsafe {
        libc::kill(p.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = p.wait();
    println!("  load after: {}", loadavg());
    show("claim → agent start, warm cache (goal ≤ 1000 ms)", &warms);
    show("  of which fetch", &warm_fetch);
    show("  of which checkout", &warm_checkout);
    show(
        "result push → branch moved, every attempt (goal ≤ 500 ms)",
        &pushes,
    );
    show("  of which git push to the attempt ref", &push_only);
    show(
        "  of which the report, answered once the branch moved",
        &reports,
    );
    drop(server);
}
