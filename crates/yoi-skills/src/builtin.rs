//! Skills compiled into the binary, the lowest-priority catalog source.
//!
//! Each lives in `crates/yoi-skills/builtin/<name>/` in the source tree and is embedded with
//! `include_bytes!`, so a release binary needs no files on disk. A test checks that this table
//! and the folders agree and that every built-in lints clean.

/// One bundled file of a built-in skill, besides its `SKILL.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinFile {
    /// Path relative to the skill root, `/`-separated.
    pub path: &'static str,
    pub bytes: &'static [u8],
}

/// A skill shipped inside yoi.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinSkill {
    pub name: &'static str,
    pub skill_md: &'static [u8],
    /// Bundled resources, sorted by path.
    pub files: &'static [BuiltinFile],
}

impl BuiltinSkill {
    /// A bundled file by its relative path.
    pub fn file(&self, path: &str) -> Option<&'static BuiltinFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

macro_rules! builtin {
    ($name:literal $(, $file:literal)* $(,)?) => {
        BuiltinSkill {
            name: $name,
            skill_md: include_bytes!(concat!("../builtin/", $name, "/SKILL.md")),
            files: &[$(BuiltinFile {
                path: $file,
                bytes: include_bytes!(concat!("../builtin/", $name, "/", $file)),
            }),*],
        }
    };
}

static BUILTINS: [BuiltinSkill; 3] = [
    builtin!("agent-skills-format", "references/frontmatter.md"),
    builtin!("yoi-review"),
    builtin!("yoi-ticket-work"),
];

/// All built-in skills, sorted by name.
pub fn builtins() -> &'static [BuiltinSkill] {
    &BUILTINS
}

/// A built-in skill by name.
pub fn builtin(name: &str) -> Option<&'static BuiltinSkill> {
    BUILTINS.iter().find(|b| b.name == name)
}
