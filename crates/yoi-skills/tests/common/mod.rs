//! Helpers shared by the integration tests: skill files on disk and scripted recorders.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use yoi_skills::{ActivationRecord, ActivationRecorder, RecorderError};

/// A minimal valid SKILL.md.
pub fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nDo the thing.\n")
}

/// Writes `<root>/<dir>/SKILL.md` with `content` and returns the skill folder.
pub fn write_skill(root: &Path, dir: &str, content: &str) -> PathBuf {
    let folder = root.join(dir);
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("SKILL.md"), content).unwrap();
    folder
}

/// Writes a file relative to `root`, creating parents.
pub fn write_file(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Stores every record it is given.
#[derive(Default)]
pub struct MemoryRecorder {
    pub records: Vec<ActivationRecord>,
}

impl ActivationRecorder for MemoryRecorder {
    fn record(&mut self, record: &ActivationRecord) -> Result<(), RecorderError> {
        self.records.push(record.clone());
        Ok(())
    }
}

/// Refuses every record, like a database that is down.
pub struct FailingRecorder;

impl ActivationRecorder for FailingRecorder {
    fn record(&mut self, _record: &ActivationRecord) -> Result<(), RecorderError> {
        Err(RecorderError {
            reason: "database is unavailable".to_string(),
        })
    }
}
