//! The workflows of a workspace, checked together against the skill catalog.
//!
//! A `requires` entry names a valid skill of the catalog or a valid workflow of the set; a name
//! that is both is refused as ambiguous (rename one), a name that is neither as unknown. A
//! workflow that requires a workflow with an error gets an error of its own, and every
//! workflow on a `requires` cycle gets one naming the cycle, so an invocation never meets a
//! half-checked chain. Reading the folder never fails: a file that cannot be read is listed
//! with its error, a link is refused rather than followed, and anything that is not a `.md`
//! file is ignored.

use std::collections::BTreeMap;
use std::path::Path;

use super::{parse_workflow_md, slug_of, Workflow, WorkflowFile, WORKFLOW_DIR, WORKFLOW_SUFFIX};
use crate::catalog::Catalog;
use crate::diagnostic::{rules, Diagnostic};

/// One piece of what an invocation puts in front of the agent, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Knowledge {
    /// A skill of the catalog, by name (its body is read by activation, which records it).
    Skill(String),
    /// A required workflow's body.
    Workflow { slug: String, body: String },
}

/// Every workflow file of a workspace, by slug, with the set-wide checks applied.
#[derive(Debug, Clone, Default)]
pub struct WorkflowSet {
    files: Vec<WorkflowFile>,
}

impl WorkflowSet {
    /// Reads `<repo_root>/.yoi/workflow/*.md` and checks them against `catalog`.
    pub fn load(repo_root: &Path, catalog: &Catalog) -> Self {
        let dir = repo_root.join(WORKFLOW_DIR);
        let mut files = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.filter_map(|e| e.ok()) {
                let name = entry.file_name().to_string_lossy().to_string();
                if !name.ends_with(WORKFLOW_SUFFIX) || name.starts_with('.') {
                    continue;
                }
                files.push(read_one(&entry.path(), &format!("{WORKFLOW_DIR}/{name}")));
            }
        }
        Self::from_files(files, catalog)
    }

    /// Checks already parsed files against each other and `catalog`.
    pub fn from_files(mut files: Vec<WorkflowFile>, catalog: &Catalog) -> Self {
        files.sort_by(|a, b| a.slug.cmp(&b.slug));
        check_requires(&mut files, catalog);
        Self { files }
    }

    /// Every file, valid or not, by slug.
    pub fn files(&self) -> &[WorkflowFile] {
        &self.files
    }

    /// The workflows that can be invoked.
    pub fn valid(&self) -> impl Iterator<Item = &Workflow> {
        self.files.iter().filter_map(|f| f.workflow.as_ref())
    }

    pub fn file(&self, slug: &str) -> Option<&WorkflowFile> {
        self.files.iter().find(|f| f.slug == slug)
    }

    pub fn get(&self, slug: &str) -> Option<&Workflow> {
        self.file(slug).and_then(|f| f.workflow.as_ref())
    }

    /// What comes before `slug`'s own body: its `requires`, each workflow's own requirements
    /// before its body, depth first, every piece once. `None` unless `slug` is valid.
    pub fn knowledge(&self, slug: &str) -> Option<Vec<Knowledge>> {
        let wf = self.get(slug)?;
        let mut out = Vec::new();
        for r in &wf.requires {
            self.expand(r, &mut out);
        }
        Some(out)
    }

    fn expand(&self, name: &str, out: &mut Vec<Knowledge>) {
        match self.get(name) {
            Some(wf) => {
                for r in &wf.requires {
                    self.expand(r, out);
                }
                let piece = Knowledge::Workflow {
                    slug: wf.slug.clone(),
                    body: wf.body.clone(),
                };
                if !out.contains(&piece) {
                    out.push(piece);
                }
            }
            None => {
                let piece = Knowledge::Skill(name.to_string());
                if !out.contains(&piece) {
                    out.push(piece);
                }
            }
        }
    }
}

fn read_one(path: &Path, file: &str) -> WorkflowFile {
    let refuse = |message: String| WorkflowFile {
        file: file.to_string(),
        slug: slug_of(file),
        workflow: None,
        diagnostics: vec![Diagnostic::error(rules::FILE_READ, message, None)],
        requires: Vec::new(),
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            refuse("the file is a link; yoi reads workflow files only as regular files".into())
        }
        Ok(m) if !m.is_file() => refuse("not a regular file".into()),
        Ok(m) if m.len() > crate::parse::MAX_SKILL_MD_BYTES as u64 => refuse(format!(
            "the file has more than {} bytes",
            crate::parse::MAX_SKILL_MD_BYTES
        )),
        Ok(_) => match std::fs::read(path) {
            Ok(bytes) => parse_workflow_md(file, &bytes),
            Err(e) => refuse(format!("cannot read the file: {}", e.kind())),
        },
        Err(e) => refuse(format!("cannot read the file: {}", e.kind())),
    }
}

/// Resolves every `requires` entry, then turns errors in required workflows and cycles into
/// errors of the workflows that depend on them.
fn check_requires(files: &mut [WorkflowFile], catalog: &Catalog) {
    let slugs: Vec<String> = files.iter().map(|f| f.slug.clone()).collect();
    // Names each valid file requires that are workflows of the set.
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files.iter_mut() {
        let mut problems = Vec::new();
        let mut wf_edges = Vec::new();
        for r in &f.requires {
            let skill = catalog.get(r);
            let is_workflow = slugs.contains(r);
            match (skill, is_workflow) {
                (Some(_), true) => problems.push((
                    rules::WF_REQUIRES_AMBIGUOUS,
                    format!(
                        "`requires: {r}` is ambiguous: both a skill of the catalog and \
                         {WORKFLOW_DIR}/{r}.md have that name; rename one of them"
                    ),
                )),
                (Some(s), false) if !s.valid => problems.push((
                    rules::WF_REQUIRES_INVALID,
                    format!(
                        "`requires: {r}` names a skill with errors (`yoi skill lint` shows them)"
                    ),
                )),
                (Some(_), false) => {}
                (None, true) => wf_edges.push(r.clone()),
                (None, false) => problems.push((
                    rules::WF_REQUIRES_UNKNOWN,
                    format!(
                        "`requires: {r}` names no skill of the catalog (`yoi skill list`) and no \
                         workflow ({WORKFLOW_DIR}/{r}.md)"
                    ),
                )),
            }
        }
        if problems.is_empty() {
            if f.workflow.is_some() {
                edges.insert(f.slug.clone(), wf_edges);
            }
        } else {
            for (rule, m) in problems {
                f.diagnostics.push(Diagnostic::error(rule, m, None));
            }
            f.workflow = None;
        }
    }
    // Cycles: every workflow on one is refused, with the cycle named.
    for f in files.iter_mut() {
        if !edges.contains_key(&f.slug) {
            continue;
        }
        if let Some(cycle) = cycle_through(&f.slug, &edges) {
            f.diagnostics.push(Diagnostic::error(
                rules::WF_REQUIRES_CYCLE,
                format!("`requires` goes round in a cycle: {}", cycle.join(" → ")),
                None,
            ));
            f.workflow = None;
        }
    }
    // A workflow that needs an invalid one is invalid; repeat until nothing changes.
    loop {
        let invalid: Vec<String> = files
            .iter()
            .filter(|f| !f.is_valid())
            .map(|f| f.slug.clone())
            .collect();
        let mut changed = false;
        for f in files.iter_mut() {
            let Some(wf) = &f.workflow else { continue };
            if let Some(bad) = wf.requires.iter().find(|r| invalid.contains(r)) {
                f.diagnostics.push(Diagnostic::error(
                    rules::WF_REQUIRES_INVALID,
                    format!(
                        "`requires: {bad}` names a workflow with errors (`yoi workflow lint` shows them)"
                    ),
                    None,
                ));
                f.workflow = None;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// The cycle through `start` (`a → b → a`), if `requires` leads back to it.
fn cycle_through(start: &str, edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn walk(
        at: &str,
        start: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        seen: &mut Vec<String>,
    ) -> bool {
        for next in edges.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.contains(next) {
                continue;
            }
            seen.push(next.clone());
            path.push(next.clone());
            if walk(next, start, edges, path, seen) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = vec![start.to_string()];
    walk(start, start, edges, &mut path, &mut seen).then_some(path)
}
