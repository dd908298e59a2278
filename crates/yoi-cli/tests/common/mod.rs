//! Running the real `yoi` binary in throwaway git repositories.

#![allow(dead_code)]

pub mod dashboard;
pub mod pods;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Repo {
    pub dir: tempfile::TempDir,
    /// A folder beside the repository for what its agents read but must not find in it (a
    /// scripted agent's script: `.yoi/local` is closed to agents by their sandbox).
    pub side: tempfile::TempDir,
}

#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout, stderr and status together, with ids and times replaced by placeholders.
    pub fn normalized(&self) -> String {
        format!(
            "status: {}\n--- stdout\n{}--- stderr\n{}",
            self.code,
            normalize(&self.stdout),
            normalize(&self.stderr)
        )
    }

    pub fn ok(self) -> Output {
        assert_eq!(
            self.code, 0,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

impl Repo {
    /// A git repository on branch `main` with `yoi init` done.
    pub fn init() -> Repo {
        let repo = Repo::bare();
        repo.yoi(&["init"]).ok();
        repo
    }

    /// A git repository without yoi.
    pub fn bare() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        Repo {
            dir,
            side: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn ticket_dir(&self, id: &str) -> PathBuf {
        self.path().join(".yoi/tickets").join(id)
    }

    pub fn yoi(&self, args: &[&str]) -> Output {
        self.yoi_in(self.path(), args, None)
    }

    pub fn yoi_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.yoi_in(self.path(), args, Some(stdin))
    }

    pub fn yoi_in(&self, dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        run_yoi(dir, args, stdin)
    }

    /// Create a ticket with a complete brief; returns its id.
    pub fn ready_ticket(&self, title: &str) -> String {
        let id = self.create(title, COMPLETE_BRIEF);
        self.yoi(&["ticket", "mark-ready", &id]).ok();
        id
    }

    pub fn create(&self, title: &str, body: &str) -> String {
        let out = self
            .yoi_stdin(
                &["ticket", "create", "--title", title, "--body-file", "-"],
                body,
            )
            .ok();
        out.stdout.trim().to_string()
    }
}

pub const COMPLETE_BRIEF: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

pub fn run_yoi(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run_yoi_full(dir, args, stdin, &[])
}

pub fn run_yoi_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    run_yoi_full(dir, args, None, env)
}

/// Run `yoi` in `dir` with optional standard input and extra environment variables.
pub fn run_yoi_full(
    dir: &Path,
    args: &[&str],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_yoi"));
    cmd.env_remove("YOI_DATABASE_URL");
    cmd.args(args)
        .current_dir(dir)
        .env("USER", "tester")
        .env_remove("YOI_USER")
        .env_remove("YOI_LOCK_TIMEOUT_SECS");
    // The caller's variables win over the defaults above.
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("yoi runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Replace ULIDs with `[ID]`, RFC 3339 UTC timestamps with `[TIME]` and temp paths with `[DIR]`.
pub fn normalize(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let run = chars[i..]
            .iter()
            .take_while(|c| CROCKFORD.contains(**c))
            .count();
        let boundary_before = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        let boundary_after = chars
            .get(i + run)
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        if run == 26 && boundary_before && boundary_after {
            out.push_str("[ID]");
            i += run;
            continue;
        }
        if run >= 4 && boundary_before && i + 20 <= chars.len() {
            let cand: String = chars[i..i + 20].iter().collect();
            if is_timestamp(&cand) {
                out.push_str("[TIME]");
                i += 20;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&k| b[k].is_ascii_digit())
}
