//! The sandbox of agents and validation commands (docs/security.md), with real processes: a
//! hostile agent and the hostile validation command it commits try every escape the issue
//! lists; each is denied, nothing lands on the real disk, and the honest part of the work is
//! still merged. Then the launcher alone: Landlock keeps `/proc/<pid>/environ` of a process
//! outside the sandbox closed even without a PID namespace; a normal user gets the same
//! sandbox through a user namespace; and a pod refuses to start an agent without a sandbox
//! unless the workspace opts out.

mod common;

use std::path::Path;

use common::pods::*;
use common::server::Server;

const ESCAPES: &[&str] = &[
    "read_admin_token",
    "read_relative_admin_token",
    "read_agent_key",
    "read_database",
    "list_local",
    "read_server_maps",
    "read_server_environ",
    "read_a_pod_token_from_proc",
    "read_ssh_key",
    "read_neighbour_worktree",
    "append_to_thread",
    "write_main_checkout",
    "write_git_config",
    "write_git_hook",
    "append_to_an_object",
    "create_branch",
    "write_outside",
    "write_shared_tmp",
    "signal_the_server",
    "read_raw_disk",
];

/// The escape script: one `escape NAME: denied|ESCAPED` line per try (ESCAPED when the
/// command succeeded), whatever happens; `$1` names who ran it.
fn escape_script(
    main: &Path,
    server_pid: u32,
    home: &Path,
    neighbour: &Path,
    side: &Path,
) -> String {
    format!(
        r#"#!/bin/sh
who="$1"
MAIN='{main}'
try() {{ name="$1"; shift; if ( "$@" ) >/dev/null 2>&1; then echo "escape $name: ESCAPED ($who)"; else echo "escape $name: denied ($who)"; fi; }}
readable() {{ test -n "$(cat "$1" 2>/dev/null | head -c 64)"; }}
try read_admin_token readable "$MAIN/.yoi/local/admin.token"
try read_relative_admin_token readable ../../.yoi/local/admin.token
try read_agent_key readable "$MAIN/.yoi/local/agent.key"
try read_database readable "$MAIN/.yoi/local/yoi.db"
try list_local ls "$MAIN/.yoi/local"
try read_server_maps readable /proc/{server_pid}/maps
try read_server_environ readable /proc/{server_pid}/environ
try read_a_pod_token_from_proc sh -c 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep -q "^YOI_TOKEN=yoi_"'
try read_ssh_key readable '{home}/.ssh/id_ed25519'
try read_neighbour_worktree readable '{neighbour}/secret.txt'
try append_to_thread sh -c 'for t in "$0"/.yoi/tickets/*/thread.md; do echo "ESCAPE-MARKER" >> "$t" || exit 1; done' "$MAIN"
try write_main_checkout sh -c 'echo pwned > "$0/pwned-$1.txt"' "$MAIN" "$who"
try write_git_config sh -c 'echo "[pwned] by = $1" >> "$0/.git/config"' "$MAIN" "$who"
try write_git_hook sh -c 'echo "touch /tmp/pwned" > "$0/.git/hooks/post-merge"' "$MAIN"
try append_to_an_object sh -c 'f=$(find "$0/.git/objects" -type f -path "*/objects/??/*" | head -n 1); test -n "$f" && echo x >> "$f"' "$MAIN"
try create_branch git -C "$MAIN" branch "evil-$who"
try write_outside sh -c 'echo x > "$0/escaped-$1.txt"' '{side}' "$who"
try write_shared_tmp sh -c 'echo x > "/tmp/yoi-escape-$0-{nonce}"' "$who"
try signal_the_server kill -0 {server_pid}
try read_raw_disk sh -c 'for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/mem; do if head -c 1 "$d" 2>/dev/null | grep -q .; then exit 0; fi; done; exit 1'
echo "sandbox said: IS_SANDBOX=$IS_SANDBOX ($who)"
echo "escapes tried ($who)"
"#,
        main = main.display(),
        home = home.display(),
        neighbour = neighbour.display(),
        side = side.display(),
        nonce = std::process::id(),
    )
}

/// Every escape line of `log` for `who`: all denied, and every escape tried.
fn assert_all_denied(log: &str, who: &str) {
    assert!(
        log.contains(&format!("sandbox said: IS_SANDBOX=1 ({who})")),
        "the {who} was not told it runs sandboxed:\n{log}"
    );
    assert!(
        log.contains(&format!("escapes tried ({who})")),
        "the {who}'s escape script did not run to its end:\n{log}"
    );
    for name in ESCAPES {
        let denied = format!("escape {name}: denied ({who})");
        assert!(
            log.contains(&denied),
            "{who}: `{name}` was not denied:\n{log}"
        );
    }
}

#[test]
fn a_hostile_agent_and_its_validation_command_escape_nothing_and_the_honest_work_is_merged() {
    let side = tempfile::tempdir().unwrap();
    let home = side.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    // git's identity, which the server's reflogs need, lives in the home folder.
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = yoi test\n\temail = test@yoi.invalid\n",
    )
    .unwrap();
    let script = side.path().join("escape.sh");
    let coder = format!(
        "run sh {s} coder\nwrite hello.txt hello\\n\nrun cp {s} escape.sh\ncommit add hello.txt and its check\ndone added hello.txt\n",
        s = script.display()
    );
    let repo = workspace_with_reviewer(
        &coder,
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    // A neighbour's worktree with a secret in it.
    let neighbour = repo.path().join(".worktree/neighbour");
    git(
        repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &neighbour.display().to_string(),
        ],
    );
    std::fs::write(neighbour.join("secret.txt"), "NEIGHBOUR SECRET\n").unwrap();
    let config_before = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
    let body = BRIEF.replace(
        "`test -f hello.txt`",
        "- `test -f hello.txt`\n- `sh escape.sh verifier`",
    );
    let id = repo.create("Say hello", &body);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();

    let server = Server::spawn_with_env(
        &repo,
        "127.0.0.1:0",
        &[("HOME", &home.display().to_string())],
    );
    std::fs::write(
        &script,
        escape_script(repo.path(), server.pid(), &home, &neighbour, side.path()),
    )
    .unwrap();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while state_of(&repo, &id) != "done" {
        if std::time::Instant::now() > deadline {
            let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
            let mut logs = String::new();
            for f in std::fs::read_dir(repo.path().join(".yoi/local/logs/pods"))
                .unwrap()
                .flatten()
            {
                logs.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
            }
            panic!(
                "the ticket is not done:\n{thread}\n--- pod logs\n{logs}\n{}",
                run_outputs(&repo)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // The honest part of the work is merged, the escape script with it.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    // Every escape was tried and denied, by the agent and by the validation command.
    let rows = assignments(&server, &repo, &id);
    let implement = rows.iter().find(|a| a["step"] == "implement").unwrap();
    let run_dir = repo
        .path()
        .join(".yoi/local/pods/coder-0/runs")
        .join(implement["id"].as_str().unwrap());
    let agent_log = std::fs::read_to_string(run_dir.join("stdout.log")).unwrap();
    assert_all_denied(&agent_log, "coder");
    let verify = rows.iter().find(|a| a["step"] == "verify").unwrap();
    let report: serde_json::Value =
        serde_json::from_str(verify["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["checks"][1]["command"], "sh escape.sh verifier");
    assert_eq!(report["checks"][1]["exit_code"], 0);
    let verify_log =
        std::fs::read_to_string(repo.path().join(report["log"].as_str().unwrap())).unwrap();
    assert_all_denied(&verify_log, "verifier");

    // Nothing landed on the real disk.
    // (yoi itself sets `advice.sparseIndexExpanded` when it makes the ticket's worktree.)
    let config = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
    assert!(
        config.starts_with(&config_before) && !config.contains("pwned"),
        "the main repository's config changed:\n{config}"
    );
    assert!(!repo.path().join(".git/hooks/post-merge").exists());
    for who in ["coder", "verifier"] {
        assert!(!repo.path().join(format!("pwned-{who}.txt")).exists());
        assert!(!side.path().join(format!("escaped-{who}.txt")).exists());
        assert!(git(repo.path(), &["branch", "--list", &format!("evil-{who}")]).is_empty());
    }
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(!thread.contains("ESCAPE-MARKER"), "the thread was written");
    for e in std::fs::read_dir("/tmp").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        assert!(
            !name.starts_with("yoi-escape-")
                || !name.ends_with(&format!("-{}", std::process::id())),
            "{name} was written in the shared /tmp"
        );
    }
    // The sandbox each attempt had is recorded with it, and it was on.
    for a in rows
        .iter()
        .filter(|a| a["step"] == "implement" || a["step"] == "verify")
    {
        let report: serde_json::Value =
            serde_json::from_str(a["result"].as_str().unwrap()).unwrap();
        let sandbox = report["sandbox"].as_str().unwrap_or_default();
        assert!(sandbox.starts_with("landlock v"), "{a}");
    }
    assert!(thread.contains("sandbox: \"landlock v"), "{thread}");
    drop(server);
}

/// A policy for the launcher alone: `write` writable, `deny` closed, the mechanisms given.
fn policy(write: &[&Path], deny: &[&Path], namespaces: bool, network: &str) -> String {
    let root = unsafe { libc::geteuid() } == 0;
    serde_json::json!({
        "write": write,
        "deny_read": deny,
        "tmp": write.first().copied().unwrap_or(Path::new("/nonexistent")),
        "network": network,
        "enforce": {
            "landlock_abi": landlock_abi(),
            "namespaces": namespaces,
            "drop_capabilities": root,
            "off": false,
        },
    })
    .to_string()
}

fn landlock_abi() -> u32 {
    let probe = std::process::Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap();
    let probe: serde_json::Value = serde_json::from_slice(&probe.stdout).unwrap();
    let abi = probe["landlock_abi"].as_u64().unwrap() as u32;
    assert!(abi > 0, "this machine offers Landlock: {probe}");
    abi
}

/// Run `sh -c script` through the launcher with `policy`; its exit code, stdout and stderr.
fn launch(policy: &str, script: &str) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args(["__sandbox", policy, "--", "sh", "-c", script])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn landlock_alone_keeps_the_memory_and_environment_of_outside_processes_closed() {
    // A process outside the sandbox with a secret in its environment.
    let mut outside = std::process::Command::new("sleep")
        .arg("30")
        .env("YOI_TEST_SECRET", "s3cret-in-environ")
        .spawn()
        .unwrap();
    let pid = outside.id();
    let work = tempfile::tempdir().unwrap();
    let script = format!(
        "for f in environ maps mem; do if cat /proc/{pid}/$f >/dev/null 2>&1; then echo \"read $f\"; else echo \"closed $f\"; fi; done"
    );
    // Without a PID namespace the process is visible; only Landlock stands in the way.
    let (code, out, err) = launch(&policy(&[work.path()], &[], false, "on"), &script);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "closed environ\nclosed maps\nclosed mem\n", "{err}");
    // The same reads, unconfined, succeed: the test can tell the difference.
    let plain = std::process::Command::new("sh")
        .args(["-c", &format!("tr '\\0' '\\n' < /proc/{pid}/environ")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stdout).contains("s3cret-in-environ"));
    outside.kill().unwrap();
    outside.wait().unwrap();
}

#[test]
fn a_normal_user_gets_the_same_sandbox_through_a_user_namespace() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let root = unsafe { libc::geteuid() } == 0;
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let secret = t.path().join("secret");
    let work = t.path().join("work");
    std::fs::create_dir(&secret).unwrap();
    std::fs::create_dir(&work).unwrap();
    std::fs::write(secret.join("key"), "KEY\n").unwrap();
    for p in [&secret, &work] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(secret.join("key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_yoi"));
    let policy = policy(&[&work], &[&secret], true, "on");
    let script = format!(
        "id -u; ls /proc | grep -c '^[0-9]'; cat {}/key 2>/dev/null || echo denied; echo ok > {}/w && echo wrote",
        secret.display(),
        work.display()
    );
    cmd.args(["__sandbox", &policy, "--", "sh", "-c", &script]);
    if root {
        // As root, the test runs the launcher as `nobody`: what a pod run by a normal user gets.
        cmd.uid(65534).gid(65534);
    }
    let probe_uid = if root {
        65534
    } else {
        unsafe { libc::geteuid() }
    };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], probe_uid.to_string(), "the run keeps its own uid");
    assert!(
        lines[1].parse::<u32>().unwrap() <= 5,
        "/proc shows only the sandbox's processes: {stdout}"
    );
    assert_eq!(&lines[2..], ["denied", "wrote"], "{stdout}");
}

#[test]
fn a_run_without_network_reaches_no_port_and_one_with_it_does() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let work = tempfile::tempdir().unwrap();
    let script = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' 2>/dev/null && echo connected || echo refused"
    );
    for namespaces in [false, true] {
        let (_, out, err) = launch(&policy(&[work.path()], &[], namespaces, "off"), &script);
        assert_eq!(out, "refused\n", "namespaces {namespaces}: {err}");
        let (_, out, err) = launch(&policy(&[work.path()], &[], namespaces, "on"), &script);
        assert_eq!(out, "connected\n", "namespaces {namespaces}: {err}");
    }
}

#[test]
fn what_a_run_leaves_behind_is_killed_when_it_ends_even_in_a_session_of_its_own() {
    let work = tempfile::tempdir().unwrap();
    let marker = format!("3{}", std::process::id());
    let (code, _, err) = launch(
        &policy(&[work.path()], &[], true, "on"),
        &format!("setsid sleep {marker} & echo started"),
    );
    assert_eq!(code, 0, "{err}");
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains(&marker)
                && !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    };
    // The namespace's first process exited with the run; the kernel killed the rest with it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while alive() {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon outlived its run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_launcher_that_cannot_set_the_sandbox_up_runs_nothing() {
    let work = tempfile::tempdir().unwrap();
    let mut p: serde_json::Value =
        serde_json::from_str(&policy(&[work.path()], &[], false, "on")).unwrap();
    p["enforce"]["landlock_abi"] = 99.into();
    let marker = work.path().join("ran");
    let (code, _, err) = launch(&p.to_string(), &format!("touch {}", marker.display()));
    assert_eq!(code, 125, "{err}");
    assert!(err.starts_with("yoi sandbox: "), "{err}");
    assert!(!marker.exists(), "nothing ran");
}

#[test]
fn local_state_is_the_owners_alone_and_old_workspaces_are_fixed_when_the_server_starts() {
    use std::os::unix::fs::PermissionsExt;
    let repo = common::Repo::init();
    let local = repo.path().join(".yoi/local");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&local), 0o700);
    assert_eq!(mode(&local.join("admin.token")), 0o600);
    // A workspace from before the rule: readable by everyone.
    let set = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    set(&local, 0o755).unwrap();
    set(&local.join("admin.token"), 0o644).unwrap();
    set(&local.join("yoi.db"), 0o644).unwrap();
    let server = Server::start(&repo);
    assert_eq!(mode(&local), 0o700);
    assert_eq!(mode(&local.join("admin.token")), 0o600);
    assert_eq!(mode(&local.join("yoi.db")), 0o600);
    drop(server);
}

/// Every file, folder and link under `root` but those under `skip`: path, kind, mode and
/// content.
fn snapshot(root: &Path, skip: &[&Path]) -> std::collections::BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if skip.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode();
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                stack.push(p.clone());
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&p).unwrap();
                format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
            };
            out.insert(p.display().to_string(), what);
        }
    }
    out
}

#[test]
fn random_escape_attempts_change_nothing_outside_the_attempts_folders() {
    // A small world: a main checkout with its git folder, local state, another worktree, a
    // home with credentials, and the attempt's own worktree and run folder.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let dirs = [
        "main/src",
        "main/.git/hooks",
        "main/.git/refs/heads",
        "main/.git/objects/ab",
        "main/.yoi/local/pods",
        "main/.yoi/tickets/T1",
        "main/.worktree/other",
        "main/.worktree/mine",
        "home/.ssh",
        "outside",
        "run/tmp",
    ];
    for d in dirs {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let files = [
        "main/src/lib.rs",
        "main/.git/config",
        "main/.git/HEAD",
        "main/.git/refs/heads/main",
        "main/.git/objects/ab/cdef",
        "main/.yoi/local/admin.token",
        "main/.yoi/tickets/T1/thread.md",
        "main/.worktree/other/secret.txt",
        "main/.worktree/mine/work.txt",
        "home/.ssh/id_ed25519",
        "outside/note.txt",
    ];
    for f in files {
        std::fs::write(root.join(f), format!("{f}\n")).unwrap();
    }
    let mine = root.join("main/.worktree/mine");
    let run = root.join("run");
    let targets: Vec<String> = dirs
        .iter()
        .chain(files.iter())
        .map(|p| root.join(p).display().to_string())
        .collect();
    // Seeded, so a failure replays.
    let mut seed: u64 = 0x5eed_0038;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut script = String::new();
    for i in 0..300 {
        let a = &targets[next(targets.len())];
        let b = &targets[next(targets.len())];
        let line = match next(9) {
            0 => format!("echo x{i} > '{a}'"),
            1 => format!("echo x{i} >> '{a}'"),
            2 => format!("rm -rf '{a}'"),
            3 => format!("mv '{a}' '{b}.moved{i}'"),
            4 => format!("mkdir '{a}/new{i}'"),
            5 => format!("ln -s '{b}' '{a}/link{i}'"),
            6 => format!("chmod 777 '{a}'"),
            7 => format!("touch '{a}/made{i}'"),
            _ => format!("cp '{b}' '{a}/copy{i}'"),
        };
        script.push_str(&line);
        script.push_str(" 2>/dev/null\n");
    }
    // After all that, the attempt's own folders still take writes.
    script.push_str(&format!(
        "echo ok > '{}/proof' && echo ok > '{}/proof' && echo finished\n",
        mine.display(),
        run.display()
    ));
    let before = snapshot(&root, &[&mine, &run]);
    let policy = serde_json::json!({
        "write": [mine, run],
        "deny_read": [root.join("main/.yoi/local"), root.join("main/.worktree/other"), root.join("home/.ssh")],
        "tmp": run.join("tmp"),
        "network": "on",
        "enforce": {
            "landlock_abi": landlock_abi(),
            "namespaces": true,
            "drop_capabilities": unsafe { libc::geteuid() } == 0,
            "off": false,
        },
    })
    .to_string();
    let (code, out, err) = launch(&policy, &script);
    assert_eq!((code, out.as_str()), (0, "finished\n"), "{err}");
    let after = snapshot(&root, &[&mine, &run]);
    assert_eq!(
        before, after,
        "something outside the attempt's folders changed"
    );
    // Its own folders took writes: the sandbox is not simply denying everything.
    assert!(mine.join("proof").is_file() && run.join("proof").is_file());
}

#[test]
fn a_run_writes_its_working_directory_by_relative_paths() {
    let work = tempfile::tempdir().unwrap();
    for namespaces in [false, true] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_yoi"))
            .args(["__sandbox", &policy(&[work.path()], &[], namespaces, "on")])
            .args([
                "--",
                "sh",
                "-c",
                "echo here > relative.txt && chmod +x relative.txt",
            ])
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "namespaces {namespaces}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(work.path().join("relative.txt")).unwrap(),
            "here\n"
        );
        std::fs::remove_file(work.path().join("relative.txt")).unwrap();
    }
}

/// A loopback HTTP server answering every request with `body`; its port.
fn http_server(body: &'static str) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn a_listed_network_reaches_its_destinations_through_the_proxy_and_nothing_else() {
    let listed = http_server("listed");
    let other = http_server("other");
    let network = yoi_agent::policy::Network::Allow(vec![format!("127.0.0.1:{listed}")]);
    let proxy = yoi_agent::proxy::start(network.clone()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut p: serde_json::Value =
        serde_json::from_str(&policy(&[work.path()], &[], true, "on")).unwrap();
    p["network"] = serde_json::to_value(&network).unwrap();
    p["proxy_port"] = proxy.into();
    let script = format!(
        r#"python3 - <<'PY'
import socket, urllib.request, urllib.error
def direct(port):
    try:
        socket.create_connection(("127.0.0.1", port), 2); return "connected"
    except OSError: return "refused"
via = urllib.request.build_opener(urllib.request.ProxyHandler({{"http": "http://127.0.0.1:{proxy}"}}))
def proxied(port):
    try: return via.open("http://127.0.0.1:%d/" % port, timeout=5).read().decode()
    except urllib.error.HTTPError as e: return "http %d" % e.code
def tunnel(port):
    s = socket.create_connection(("127.0.0.1", {proxy}), 2)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
    got = b""
    while b"\r\n" not in got:
        more = s.recv(100)
        if not more: break
        got += more
    return got.split(b"\r\n")[0].decode()
print("direct listed:", direct({listed}))
print("direct other:", direct({other}))
print("proxied listed:", proxied({listed}))
print("proxied other:", proxied({other}))
print("tunnel listed:", tunnel({listed}))
print("tunnel other:", tunnel({other}))
PY"#
    );
    let (code, out, err) = launch(&p.to_string(), &script);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "direct listed: refused\ndirect other: refused\nproxied listed: listed\nproxied other: http 403\n\
         tunnel listed: HTTP/1.1 200 Connection Established\ntunnel other: HTTP/1.1 403 Forbidden\n",
        "{err}"
    );
}

#[test]
fn claude_code_as_root_without_yois_sandbox_is_refused_before_any_ticket_is_spent() {
    let repo = common::Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\n[sandbox]\nmode = \"off\"\n\n[agents.claude]\nprogram = \"/bin/true\"\n"),
    )
    .unwrap();
    let out = repo.yoi(&["agent", "check", "claude"]);
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("bypasses its permission prompts")
                && out.stderr.contains("mode = \"off\""),
            "{}",
            out.stderr
        );
    } else {
        // A normal user may run it unconfined (Claude Code's own rule is about root).
        assert!(out.stdout.contains("sandbox: off"), "{}", out.stdout);
    }
}
