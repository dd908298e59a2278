//! A seeded corpus of three-way merges and their verdicts by yoi (gix) and by git itself
//! (`git merge-tree --write-tree`). Each case is a base commit and two sides that edit it with
//! a few random operations: line edits (overlapping or not), appends, deletions, renames (some
//! with an edit), additions (from a small pool of names, so adds can clash) and binary edits.
//! Used by the agreement test and by `yoi-bench-merge-tree`.

use std::path::Path;

use yoi_testkit::git;

/// A small deterministic generator (xorshift64*), so a seed names a corpus exactly.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// How one case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Clean, with the merged tree's id.
    Clean(String),
    Conflicted,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub n: usize,
    pub ours: String,
    pub theirs: String,
    pub ops: Vec<String>,
    pub yoi: Verdict,
    pub git: Verdict,
    pub yoi_ms: f64,
}

impl Case {
    pub fn agrees(&self) -> bool {
        self.yoi == self.git
    }
    /// yoi called it clean where git did not, or merged to another tree: a side's change may
    /// be lost.
    pub fn dangerous(&self) -> bool {
        matches!(self.yoi, Verdict::Clean(_)) && self.yoi != self.git
    }
}

const FILES: usize = 6;
const LINES: usize = 30;

fn base_text(f: usize) -> String {
    (0..LINES)
        .map(|l| format!("file {f} line {l}: some words here\n"))
        .collect()
}

fn edit(work: &Path, rng: &mut Rng, side: &str, ops: &mut Vec<String>) {
    let names: Vec<String> = std::fs::read_dir(work)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n != ".git")
        .collect();
    let mut names = names;
    names.sort();
    let text_files: Vec<&String> = names.iter().filter(|n| n.ends_with(".txt")).collect();
    let pick = |rng: &mut Rng, v: &[&String]| v[rng.below(v.len())].clone();
    match rng.below(10) {
        0..=3 if !text_files.is_empty() => {
            let f = pick(rng, &text_files);
            let path = work.join(&f);
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.is_empty() {
                lines.push(String::new());
            }
            let start = rng.below(lines.len());
            let len = 1 + rng.below(3);
            for l in lines.iter_mut().skip(start).take(len) {
                *l = format!("{side} changed this line ({})", rng.below(1000));
            }
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            ops.push(format!("{side}: edit {f} lines {start}+{len}"));
        }
        4 if !text_files.is_empty() => {
            let f = pick(rng, &text_files);
            let mut text = std::fs::read_to_string(work.join(&f)).unwrap();
            text.push_str(&format!("{side} appended a line\n"));
            std::fs::write(work.join(&f), text).unwrap();
            ops.push(format!("{side}: append to {f}"));
        }
        5 if text_files.len() > 1 => {
            let f = pick(rng, &text_files);
            std::fs::remove_file(work.join(&f)).unwrap();
            ops.push(format!("{side}: delete {f}"));
        }
        6 if !text_files.is_empty() => {
            let f = pick(rng, &text_files);
            let to = format!("moved-{}-{f}", rng.below(3));
            if !work.join(&to).exists() {
                std::fs::rename(work.join(&f), work.join(&to)).unwrap();
                if rng.below(2) == 0 {
                    let mut text = std::fs::read_to_string(work.join(&to)).unwrap();
                    text = text.replacen("line 3:", &format!("line 3 ({side}):"), 1);
                    std::fs::write(work.join(&to), text).unwrap();
                }
                ops.push(format!("{side}: rename {f} to {to}"));
            }
        }
        7 => {
            let f = format!("new-{}.txt", rng.below(3));
            let body = if rng.below(2) == 0 {
                "the same new file\n".to_string()
            } else {
                format!("new file by {side}\n")
            };
            std::fs::write(work.join(&f), body).unwrap();
            ops.push(format!("{side}: add {f}"));
        }
        _ => {
            let mut bytes = vec![0u8, 1, 2, 3, 0, 255];
            bytes.extend(format!("{side}{}", rng.below(4)).bytes());
            std::fs::write(work.join("blob.bin"), bytes).unwrap();
            ops.push(format!("{side}: rewrite blob.bin"));
        }
    }
}

fn commit(work: &Path, msg: &str) -> String {
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "--allow-empty", "-m", msg]);
    git(work, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The verdict of `git merge-tree --write-tree ours theirs`.
pub fn git_verdict(repo: &Path, ours: &str, theirs: &str) -> Verdict {
    let out = std::process::Command::new("git")
        .args(["merge-tree", "--write-tree", "--no-messages", ours, theirs])
        .current_dir(repo)
        .output()
        .expect("git runs");
    match out.status.code() {
        Some(0) => Verdict::Clean(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
        ),
        Some(1) => Verdict::Conflicted,
        other => panic!(
            "git merge-tree failed ({other:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Build `count` cases from `seed` in a new repository under `dir`, and judge each both ways.
pub fn run(dir: &Path, seed: u64, count: usize) -> Vec<Case> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "c"]);
    git(&repo, &["config", "user.email", "c@c.invalid"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    let mut rng = Rng::new(seed);
    let who = yoi_git::Identity {
        name: "yoi".into(),
        email: "y@y.invalid".into(),
        time_secs: 1_800_000_000,
    };
    let mut cases = Vec::new();
    for n in 0..count {
        // A fresh base for each case, on its own root.
        git(&repo, &["checkout", "-q", "--orphan", &format!("case-{n}")]);
        let _ = std::process::Command::new("git")
            .args(["rm", "-rfq", "."])
            .current_dir(&repo)
            .output();
        for f in 0..FILES {
            std::fs::write(repo.join(format!("f{f}.txt")), base_text(f)).unwrap();
        }
        std::fs::write(repo.join("blob.bin"), [0u8, 1, 2, 3, 0, 9]).unwrap();
        let base = commit(&repo, "base");
        let mut ops = Vec::new();
        for _ in 0..1 + rng.below(3) {
            edit(&repo, &mut rng, "ours", &mut ops);
        }
        let ours = commit(&repo, "ours");
        git(&repo, &["checkout", "-q", "--detach", &base]);
        for _ in 0..1 + rng.below(3) {
            edit(&repo, &mut rng, "theirs", &mut ops);
        }
        let theirs = commit(&repo, "theirs");
        let t = std::time::Instant::now();
        let merged = yoi_git::merge_three_way(&repo, &ours, &theirs, "merge", &who)
            .unwrap_or_else(|e| panic!("case {n}: {e}"));
        let yoi_ms = t.elapsed().as_secs_f64() * 1000.0;
        let yoi = match merged {
            yoi_git::ThreeWay::Clean { commit, .. } => Verdict::Clean(
                git(&repo, &["rev-parse", &format!("{commit}^{{tree}}")])
                    .trim()
                    .to_string(),
            ),
            yoi_git::ThreeWay::Conflicted { .. } => Verdict::Conflicted,
        };
        let git = git_verdict(&repo, &ours, &theirs);
        cases.push(Case {
            n,
            ours,
            theirs,
            ops,
            yoi,
            git,
            yoi_ms,
        });
    }
    cases
}
