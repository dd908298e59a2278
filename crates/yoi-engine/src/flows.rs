//! The flows of a workspace: the built-in `coder-review` and every `.yoi/flows/<name>.flow.yaml`
//! (docs/flows.md). A file that does not check out is skipped with its problems (file, line,
//! reason) and never stops anything else; a ticket that names a missing or invalid flow is
//! returned to planning by the router with the reason ([`resolve`]). At acceptance the ticket's
//! flow is frozen with its IntentPacket, and the flow engine reads it from there ([`of_ticket`]).
//!
//! A ticket without `flow:` runs the narrowest flow whose trigger it matches, else the default
//! ([`resolve`]). Two flow files whose triggers one ticket could match with neither narrower
//! are both skipped, each naming the other, so no ticket ever has two flows ([`scan`]).

use std::path::{Path, PathBuf};
use yoi_core::Role;

use serde::Serialize;
use yoi_core::flow::{self, Flow, Problem, FLOW_SUFFIX};
use yoi_core::item::Item;
use yoi_core::TicketId;
use yoi_store::{StoreError, Workspace};

/// The folder flow files live in.
pub fn dir(ws: &Workspace) -> PathBuf {
    ws.root().join(yoi_store::workspace::YOI_DIR).join("flows")
}

/// One flow file and what checking it found.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FlowFile {
    /// Relative to the workspace root.
    pub file: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// What is allowed but probably a mistake (more than four steps, more than three flows
    /// for one kind of ticket); never stops the file from being used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Problem>,
}

impl FlowFile {
    pub fn is_valid(&self) -> bool {
        self.flow.is_some()
    }
}

/// The roles a flow step may name: those configured with at least one pod slot.
pub fn roles(ws: &Workspace) -> Vec<&'static str> {
    let r = &ws.config.roles;
    [
        (Role::Coder.as_str(), r.coder),
        (Role::Verifier.as_str(), r.verifier),
        (Role::Reviewer.as_str(), r.reviewer),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, _)| name)
    .collect()
}

/// Check the flow file at `path` (any path; its name must end in `.flow.yaml`).
pub fn lint_file(ws: &Workspace, path: &Path) -> FlowFile {
    let file = ws.rel(path);
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let Some(stem) = base.strip_suffix(FLOW_SUFFIX) else {
        return invalid(
            file,
            base.clone(),
            0,
            format!("a flow file's name ends in `{FLOW_SUFFIX}`"),
        );
    };
    let text = match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => return invalid(file, stem.into(), 0, "the file is not UTF-8".into()),
        },
        Err(e) => return invalid(file, stem.into(), 0, format!("cannot read the file: {e}")),
    };
    if text.len() > 256 * 1024 {
        return invalid(
            file,
            stem.into(),
            0,
            "the file is larger than 256 KiB".into(),
        );
    }
    match flow::parse(&text, stem, &roles(ws)) {
        Ok(f) => FlowFile {
            file,
            name: stem.into(),
            warnings: flow::advice(&f),
            flow: Some(f),
            problems: vec![],
        },
        Err(problems) => FlowFile {
            file,
            name: stem.into(),
            flow: None,
            problems,
            warnings: vec![],
        },
    }
}

fn invalid(file: String, name: String, line: usize, message: String) -> FlowFile {
    FlowFile {
        file,
        name,
        flow: None,
        problems: vec![Problem { line, message }],
        warnings: vec![],
    }
}

/// Every flow file in the workspace, checked, by name. Other files in the folder are ignored.
pub fn scan(ws: &Workspace) -> Vec<FlowFile> {
    let Ok(entries) = std::fs::read_dir(dir(ws)) else {
        return vec![];
    };
    let mut files: Vec<FlowFile> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(FLOW_SUFFIX))
        })
        .map(|p| lint_file(ws, &p))
        .collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    check_triggers(&mut files);
    files
}

/// The checks only the set of flow files can make: two triggers one ticket could match with
/// neither narrower make both files invalid, each naming the other; more than three triggered
/// flows for one kind of ticket is a warning on each.
pub fn check_triggers(files: &mut [FlowFile]) {
    let triggered: Vec<(usize, flow::Trigger)> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, f.flow.as_ref()?.trigger.clone()?)))
        .collect();
    let mut refused: Vec<(usize, String)> = Vec::new();
    for (a, (i, ta)) in triggered.iter().enumerate() {
        for (j, tb) in triggered.iter().skip(a + 1) {
            if ta.ambiguous_with(tb) {
                let both = ta.union(tb).describe();
                let say = |other: &FlowFile| {
                    format!(
                        "trigger overlaps the trigger of {}: a ticket with {both} matches both \
                         and neither is narrower; make one of them ask for more, or give them \
                         different kinds",
                        other.file
                    )
                };
                refused.push((*i, say(&files[*j])));
                refused.push((*j, say(&files[*i])));
            }
        }
    }
    let mut by_kind: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, t) in &triggered {
        by_kind
            .entry(t.kind.clone().unwrap_or_else(|| "any kind".into()))
            .or_default()
            .push(*i);
    }
    for (kind, at) in by_kind.into_iter().filter(|(_, v)| v.len() > 3) {
        for i in &at {
            files[*i].warnings.push(Problem {
                line: 0,
                message: format!(
                    "{} flows are triggered for tickets of {kind}; more than three for one kind \
                     is hard to keep apart",
                    at.len()
                ),
            });
        }
    }
    for (i, message) in refused {
        files[i].problems.push(Problem { line: 0, message });
        files[i].flow = None;
    }
}

/// A flow a ticket may use, and where it comes from.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = ListedFlow)]
pub struct Listed {
    pub flow: Flow,
    /// The file, or `built-in`.
    pub source: String,
    /// Whether tickets without a `flow:` key use it.
    pub default: bool,
}

/// The usable flows: the built-in one (unless a file of the same name replaces it) and every
/// valid file; then the files that were skipped.
pub fn catalog(ws: &Workspace) -> (Vec<Listed>, Vec<FlowFile>) {
    let files = scan(ws);
    let default = &ws.config.flow.default;
    let mut listed = Vec::new();
    if !files.iter().any(|f| f.name == flow::BUILTIN) {
        listed.push(Listed {
            flow: builtin(ws),
            source: "built-in".into(),
            default: default == flow::BUILTIN,
        });
    }
    let (ok, bad): (Vec<_>, Vec<_>) = files.into_iter().partition(|f| f.is_valid());
    for f in ok {
        let fl = f.flow.expect("valid");
        listed.push(Listed {
            default: *default == fl.name,
            flow: fl,
            source: f.file,
        });
    }
    listed.sort_by(|a, b| a.flow.name.cmp(&b.flow.name));
    (listed, bad)
}

/// Why [`lookup`] found no usable flow.
#[derive(Debug, Clone)]
pub enum NotUsable {
    /// No flow has that name.
    Unknown,
    /// A file has that name but is skipped: "file:line: problem" each.
    Invalid(Vec<String>),
}

/// The usable flow called `name` with where it comes from, or why there is none.
pub fn lookup(ws: &Workspace, name: &str) -> Result<Listed, NotUsable> {
    let (listed, skipped) = catalog(ws);
    if let Some(l) = listed.into_iter().find(|l| l.flow.name == name) {
        return Ok(l);
    }
    match skipped.into_iter().find(|f| f.name == name) {
        Some(f) => Err(NotUsable::Invalid(
            f.problems
                .iter()
                .map(|p| format!("{}:{}: {}", f.file, p.line, p.message))
                .collect(),
        )),
        None => Err(NotUsable::Unknown),
    }
}

/// The built-in flow with the workspace's `[flow] max_rounds`.
pub fn builtin(ws: &Workspace) -> Flow {
    let pr = ws
        .config
        .forge
        .as_ref()
        .is_some_and(|f| f.mode == yoi_core::forge::EndMode::Pr);
    if pr {
        // `[forge] mode = "pr"`: the built-in flow ends in a pull request (docs/forge.md).
        return flow::builtin_pr(ws.config.flow.max_rounds);
    }
    flow::builtin(ws.config.flow.max_rounds)
}

/// The flow called `name`, or every reason it cannot be used.
pub fn named(ws: &Workspace, name: &str) -> Result<Flow, Vec<String>> {
    if !flow::valid_name(name) {
        return Err(vec![format!("`{name}` is not a flow name")]);
    }
    let path = dir(ws).join(format!("{name}{FLOW_SUFFIX}"));
    if !path.exists() {
        if name == flow::BUILTIN {
            return Ok(builtin(ws));
        }
        return Err(vec![format!(
            "flow `{name}` is not defined: there is no {} (`yoi flow list` shows the flows)",
            ws.rel(&path)
        )]);
    }
    // Checked with the other files, so a trigger that overlaps another's is refused here too.
    let f = scan(ws)
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| lint_file(ws, &path));
    match f.flow {
        Some(fl) => Ok(fl),
        None => Err(f
            .problems
            .iter()
            .map(|p| format!("{}:{}: {}", f.file, p.line, p.message))
            .collect()),
    }
}

/// The flow `item` runs: its `flow:` key, else the narrowest flow whose trigger it matches,
/// else `[flow] default`.
pub fn resolve(ws: &Workspace, item: &Item) -> Result<Flow, Vec<String>> {
    if let Some(name) = item
        .flow
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        return named(ws, name);
    }
    if let Some(f) = triggered(ws, item) {
        return Ok(f);
    }
    named(ws, &ws.config.flow.default)
}

/// The narrowest valid flow whose trigger `item` matches, if any.
pub fn triggered(ws: &Workspace, item: &Item) -> Option<Flow> {
    let facts = flow::TicketFacts::of(item);
    let matching: Vec<Flow> = scan(ws)
        .into_iter()
        .filter_map(|f| f.flow)
        .filter(|f| f.trigger.as_ref().is_some_and(|t| t.matches(&facts)))
        .collect();
    // The triggers that check out are ordered wherever they meet, so the matching ones form a
    // chain and the narrowest is the one no other is narrower than.
    matching
        .iter()
        .find(|f| {
            let t = f.trigger.as_ref().expect("matched");
            !matching
                .iter()
                .any(|o| o.trigger.as_ref().expect("matched").narrower_than(t))
        })
        .cloned()
}

/// The flow an accepted ticket runs: the one frozen with its packet, else (packets frozen
/// before flows existed) the built-in one.
pub fn of_ticket(ws: &Workspace, ticket: &TicketId) -> Result<Flow, StoreError> {
    Ok(ws
        .read_frozen_packet(ticket)?
        .and_then(|p| p.flow)
        .unwrap_or_else(|| builtin(ws)))
}

/// Log every flow file that is skipped (at start-up): a bad file never stops the server.
pub fn warn_invalid(ws: &Workspace) {
    for f in scan(ws).into_iter().filter(|f| !f.is_valid()) {
        for p in &f.problems {
            tracing::warn!(file = %f.file, line = p.line, problem = %p.message, "skipped an invalid flow file");
        }
    }
}
