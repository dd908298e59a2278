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
try write_shared_tmp sh -c 'echo x > "/tmp/yoi-escape-$0-$$"' "$who"
try signal_the_server kill -0 {server_pid}
try read_raw_disk sh -c 'for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/mem; do if head -c 1 "$d" 2>/dev/null | grep -q .; then exit 0; fi; done; exit 1'
echo "escapes tried ($who)"
"#,
        main = main.display(),
        home = home.display(),
        neighbour = neighbour.display(),
        side = side.display(),
    )
}

/// Every escape line of `log` for `who`: all denied, and every escape tried.
fn assert_all_denied(log: &str, who: &str) {
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
            panic!("the ticket is not done:\n{thread}\n--- pod logs\n{logs}");
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
            !name.starts_with("yoi-escape-coder") && !name.starts_with("yoi-escape-verifier"),
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
