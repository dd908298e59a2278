//! One ticket folder: which files are there, then item.md, thread.md, resolution.md and the
//! artifacts, each read once. Runs in parallel across tickets; the cross-ticket checks (targets,
//! cycles, blockers) use what this returns.

use yoi_core::finding::{Finding, SafeFix, Severity};
use yoi_core::id::IdForm;
use yoi_core::plan::{PlanKind, PlanRecord};
use yoi_core::relation::RelationsFile;
use yoi_core::state::State;
use yoi_core::TicketId;

use super::cache::{Cache, Entry, Stamped, Stamps};
use super::layout::{self, is_temp_name, GITKEEP};
use super::{graph, item, thread};
use yoi_store::dirfd::Dir;
use yoi_store::tickets::{ARTIFACTS, ITEM, PLAN, RELATIONS, RESOLUTION, THREAD};
use yoi_store::workspace::Workspace;

/// What one ticket folder holds, for the cross-ticket checks.
pub(super) struct TicketScan {
    pub id: TicketId,
    pub findings: Vec<Finding>,
    /// The folder holds item.md, so yoi sees the ticket (even when item.md does not parse).
    pub exists: bool,
    /// `None` when item.md does not parse.
    pub state: Option<State>,
    /// The relations, when relations.json exists and is valid.
    pub relations: Option<RelationsFile>,
    pub relations_text: String,
    /// The valid plan records the cross-ticket checks look at, with their line: those naming
    /// another ticket, and the latest accepted plan (see [`kept_for_later`]).
    pub plan: Vec<(usize, PlanRecord)>,
    /// What the database index should hold for this ticket, read from the same text.
    pub facts: IndexFacts,
    /// This scan's entry for the next doctor cache ([`super::cache`]), when it can be kept.
    pub cache: Option<Entry>,
}

/// What the index should hold for one ticket, by the indexer's own rules (`Item::parse`,
/// `db::event_key`, `db::indexed_plan` and `db::plan_key`) applied to the text the file checks read,
/// so doctor and `reindex` cannot disagree about what the files say. Empty for a folder without
/// item.md (not a ticket).
#[derive(Debug, Default)]
pub(super) struct IndexFacts {
    /// Title, state and updated_at, when item.md parses.
    pub item: Option<[String; 3]>,
    pub events: thread::Keys,
    /// The outbox keys of the plan records.
    pub plans: Vec<String>,
}

/// Read the file `name` of `dir` into this thread's buffer ([`yoi_store::dirfd::with_buffer`])
/// and hand its text to `f`: `Ok(None)` when it is missing, `Err` with a reason when unreadable.
/// What the file was just before it was read goes into `stamps` as `what`.
fn with_text<R>(
    dir: &Dir,
    name: &str,
    stamps: &mut Stamps,
    what: Stamped,
    f: impl FnOnce(Result<Option<&str>, String>) -> R,
) -> R {
    yoi_store::dirfd::with_buffer(|buf| {
        let read = dir.read_stat_into(name, buf);
        let text = match &read {
            Ok(_) => std::str::from_utf8(buf)
                .map(Some)
                .map_err(|e| format!("it is not UTF-8 (byte {})", e.valid_up_to())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("it cannot be read: {e}")),
        };
        if text.is_err() {
            stamps.keep = false;
        }
        stamps.saw(what, read);
        f(text)
    })
}

fn unreadable(id: &TicketId, rel: &str, why: String) -> Finding {
    Finding::error(
        "file.unreadable",
        format!("{rel}: {why}"),
        "a readable UTF-8 text file",
    )
    .with_ticket(id.as_str())
    .at(rel, None)
    .with_fix(format!(
        "check the file's permissions and encoding, or restore it with `git checkout -- {rel}`"
    ))
}

/// Check one ticket folder, or take what the last pass found when nothing in it changed since
/// ([`super::cache`]); its findings come sorted ([`super::order`]), here on the worker that
/// read it rather than in one sort of the whole report at the end.
pub(super) fn check_ticket(ws: &Workspace, id: &TicketId, cache: &Cache) -> TicketScan {
    if let Some(kept) = cache.lookup(id) {
        return kept;
    }
    let mut stamps = Stamps::default();
    let mut scan = scan_ticket(ws, id, &mut stamps);
    scan.findings.sort_unstable_by(super::order);
    scan.cache = cache.entry(&scan, &stamps);
    scan
}

pub(super) fn scan_ticket(ws: &Workspace, id: &TicketId, stamps: &mut Stamps) -> TicketScan {
    let dir = ws.ticket_dir(id);
    let rel_dir = ws.rel(&dir);
    let mut scan = TicketScan {
        id: id.clone(),
        findings: Vec::new(),
        exists: false,
        state: None,
        relations: None,
        relations_text: String::new(),
        plan: Vec::new(),
        facts: IndexFacts::default(),
        cache: None,
    };
    let out = &mut scan.findings;
    let listed = Dir::open(&dir).and_then(|folder| {
        stamps.saw(Stamped::Folder, folder.meta());
        Ok((folder.list()?, folder))
    });
    let (entries, folder) = match listed {
        Ok(both) => both,
        Err(e) => {
            stamps.keep = false;
            out.push(unreadable(
                id,
                &rel_dir,
                format!("the folder cannot be listed: {e}"),
            ));
            return scan;
        }
    };
    let has = |name: &str, dir_wanted: bool| {
        entries
            .iter()
            .any(|e| e.name == name && e.is_dir == dir_wanted && !e.is_link)
    };
    let linked = |name: &str| entries.iter().any(|e| e.name == name && e.is_link);
    let has_item = has(ITEM, false);
    let has_thread = has(THREAD, false);
    let has_resolution = has(RESOLUTION, false);
    let has_artifacts = has(ARTIFACTS, true);
    let mut thread_temp = false;
    for e in &entries {
        let path = dir.join(&e.name);
        if e.is_link {
            out.push(layout::symlink_finding(ws, &path, Some(id)));
            continue;
        }
        match e.name.as_str() {
            ITEM | THREAD | RESOLUTION if !e.is_dir => {}
            ARTIFACTS if e.is_dir => {}
            n if is_temp_name(n) && !e.is_dir => {
                // Its finding depends on the file it stands for.
                stamps.keep = false;
                thread_temp |= layout::real_file_of(&path).is_some_and(|r| r.ends_with(THREAD));
                out.push(layout::temp_finding(ws, &path, Some(id)));
            }
            _ => {
                let rel = ws.rel(&path);
                let what = if e.is_dir { "folder" } else { "file" };
                out.push(
                    Finding::warning(
                        "layout.stray_file",
                        format!("{rel}: a {what} yoi does not know in a ticket folder"),
                        "only item.md, thread.md, resolution.md and artifacts/ in a ticket folder",
                    )
                    .with_ticket(id.as_str())
                    .at(rel.clone(), None)
                    .with_fix(format!(
                        "move {rel} into {rel_dir}/artifacts/ if it is evidence, otherwise delete it"
                    )),
                );
            }
        }
    }
    if linked(ITEM) {
        // Reported above; the ticket is broken until the link is replaced.
        return scan;
    }
    if !has_item {
        let holds = if entries.is_empty() {
            "it is empty".to_string()
        } else {
            format!(
                "it holds {}",
                entries
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.push(
            Finding::error(
                "ticket.missing_item",
                format!("{rel_dir} has no item.md ({holds}); yoi does not see this ticket"),
                "every ticket folder holds item.md",
            )
            .with_ticket(id.as_str())
            .at(rel_dir.clone(), None)
            .with_fix(format!(
                "restore item.md (e.g. `git checkout -- {rel_dir}/item.md`), or delete {rel_dir} if the ticket was removed on purpose"
            )),
        );
        return scan;
    }
    scan.exists = true;

    // Thread first: its facts make the item findings' suggestions concrete.
    let thread_rel = format!("{rel_dir}/{THREAD}");
    let mut facts = thread::ThreadFacts::default();
    // A thread.md there but unreadable makes the ticket broken: the index holds no row for it.
    let mut thread_broken = linked(THREAD);
    if has_thread {
        with_text(
            &folder,
            THREAD,
            stamps,
            Stamped::Thread,
            |text| match text {
                Ok(Some(text)) => facts = thread::check(id, &thread_rel, text, out),
                Ok(None) => {}
                Err(why) => {
                    thread_broken = true;
                    out.push(unreadable(id, &thread_rel, why))
                }
            },
        );
    } else if !entries.iter().any(|e| e.name == THREAD) {
        let f = Finding::warning(
            "thread.missing",
            format!("{thread_rel} does not exist"),
            "every ticket has thread.md, its append-only event log",
        )
        .with_ticket(id.as_str())
        .at(thread_rel.clone(), None);
        out.push(if thread_temp {
            f.with_fix(format!(
                "a temporary copy of thread.md is in {rel_dir}: rename it to thread.md if it is complete (doctor --fix leaves it)"
            ))
        } else {
            f.with_fix("yoi ticket doctor --fix (creates it empty; restore it from git first if it was deleted)")
                .with_safe_fix(SafeFix::CreateFile {
                    path: thread_rel.clone(),
                })
        });
    }

    let item_rel = format!("{rel_dir}/{ITEM}");
    let item = with_text(&folder, ITEM, stamps, Stamped::Item, |text| match text {
        Ok(Some(text)) => item::check(id, &item_rel, text, &facts, out),
        Ok(None) => None,
        Err(why) => {
            out.push(unreadable(id, &item_rel, why));
            None
        }
    });
    scan.state = item.as_ref().map(|i| i.state);
    // So does a linked artifacts/ folder (reported above): its relations and plan are unknown.
    // Damaged relations.json or orchestration-plan.jsonl files do too ([`check_artifacts`]).
    let artifacts_linked = linked(ARTIFACTS);
    scan.facts.item = item
        .filter(|_| !thread_broken && !artifacts_linked)
        .map(|i| {
            [
                i.title,
                i.state.as_str().to_string(),
                facts
                    .latest_at
                    .map_or(i.updated_at, |t| t.max(i.updated_at))
                    .to_string(),
            ]
        });
    scan.facts.events = std::mem::take(&mut facts.keys);

    if let Some(state) = scan.state {
        if let Some((line, to)) = facts.last_state {
            if to != state {
                out.push(
                    Finding::warning(
                        "thread.state_mismatch",
                        format!("the thread's last state change (line {line}) is to {to}, but item.md says {state}"),
                        "item.md's state equals the `to` of the thread's last state change",
                    )
                    .with_ticket(id.as_str())
                    .at(thread_rel.clone(), Some(line))
                    .with_fix(format!(
                        "an operation was interrupted or a file was edited by hand: if the ticket really is {to}, set `state: {to}` in {item_rel}; if it is {state}, record why with `yoi ticket comment {id} -m …`"
                    )),
                );
            }
        }
        check_resolution(&rel_dir, id, state, has_resolution, &facts, out);
    }

    if has_artifacts {
        check_artifacts(ws, id, &rel_dir, &folder, &mut scan, stamps);
    } else if !entries.iter().any(|e| e.name == ARTIFACTS) {
        let rel = format!("{rel_dir}/{ARTIFACTS}");
        scan.findings.push(
            Finding::warning(
                "layout.artifacts_missing",
                format!("{rel}/ does not exist"),
                "every ticket has an artifacts/ folder (git drops empty folders: keep a .gitkeep in it)",
            )
            .with_ticket(id.as_str())
            .at(rel.clone(), None)
            .with_fix("yoi ticket doctor --fix")
            .with_safe_fix(SafeFix::CreateDir { path: rel }),
        );
    }
    scan
}

fn check_resolution(
    rel_dir: &str,
    id: &TicketId,
    state: State,
    has_resolution: bool,
    facts: &thread::ThreadFacts,
    out: &mut Vec<Finding>,
) {
    let missing = state == State::Closed && !has_resolution;
    let unexpected = state != State::Closed && has_resolution;
    if !(missing || unexpected) {
        return;
    }
    let rel = format!("{rel_dir}/{RESOLUTION}");
    if missing {
        // Older trees did not always get a resolution.md; yoi's close and cancel always write one.
        let (severity, note) = match id.form() {
            IdForm::Legacy => (
                Severity::Warning,
                " (an older-format ticket: the older system did not always write one)",
            ),
            IdForm::Ulid => (Severity::Error, ""),
        };
        let fix = match facts.last_close {
            Some(line) => {
                format!("copy the body of the close event at thread.md line {line} into {rel}")
            }
            None => format!("write the resolution (why and how the ticket was closed) into {rel}"),
        };
        out.push(
            Finding::new(
                severity,
                "resolution.missing",
                format!("the ticket is closed but {rel} does not exist{note}"),
                "a closed ticket has resolution.md (close and cancel write it)",
            )
            .with_ticket(id.as_str())
            .at(rel, None)
            .with_fix(fix),
        );
    } else {
        out.push(
            Finding::warning(
                "resolution.unexpected",
                format!("the ticket is {state} but {rel} exists"),
                "resolution.md only on closed tickets (reopen removes it; the close event keeps the text)",
            )
            .with_ticket(id.as_str())
            .at(rel.clone(), None)
            .with_fix(format!(
                "delete {rel} if the thread's close event holds the same text; otherwise keep the text with `yoi ticket comment {id} --file {rel}` first"
            )),
        );
    }
}

fn check_artifacts(
    ws: &Workspace,
    id: &TicketId,
    rel_dir: &str,
    ticket: &Dir,
    scan: &mut TicketScan,
    stamps: &mut Stamps,
) {
    let rel = |name: &str| format!("{rel_dir}/{name}");
    let listed = ticket.open_dir(ARTIFACTS).and_then(|folder| {
        stamps.saw(Stamped::Artifacts, folder.meta());
        Ok((folder.list()?, folder))
    });
    let (entries, folder) = match listed {
        Ok(both) => both,
        Err(e) => {
            stamps.keep = false;
            scan.findings.push(unreadable(
                id,
                &rel(ARTIFACTS),
                format!("the folder cannot be listed: {e}"),
            ));
            return;
        }
    };
    for e in &entries {
        if e.name != GITKEEP && is_temp_name(&e.name) && !e.is_dir {
            stamps.keep = false;
            scan.findings.push(layout::temp_finding(
                ws,
                &ws.path_of(id, ARTIFACTS).join(&e.name),
                Some(id),
            ));
        }
    }
    // RELATIONS and PLAN are paths inside the ticket folder; the listing holds base names.
    let base = |path: &'static str| path.rsplit('/').next().unwrap_or(path);
    let file = |path: &'static str| entries.iter().any(|e| !e.is_dir && e.name == base(path));
    if file(RELATIONS) {
        let rel = rel(RELATIONS);
        with_text(
            &folder,
            base(RELATIONS),
            stamps,
            Stamped::Relations,
            |text| match text {
                Ok(Some(text)) => {
                    scan.relations =
                        graph::check_relations_file(id, &rel, text, &mut scan.findings);
                    scan.relations_text = text.to_string();
                    if scan.relations.is_none() {
                        scan.facts.item = None;
                    }
                }
                Ok(None) => {}
                Err(why) => {
                    scan.facts.item = None;
                    scan.findings.push(unreadable(id, &rel, why))
                }
            },
        );
    }
    if file(PLAN) {
        let rel = rel(PLAN);
        with_text(
            &folder,
            base(PLAN),
            stamps,
            Stamped::Plan,
            |text| match text {
                Ok(Some(text)) => {
                    scan.plan =
                        kept_for_later(graph::check_plan_file(id, &rel, text, &mut scan.findings));
                    let indexed = yoi_db::indexed_plan(text, id);
                    if indexed.is_empty() && yoi_core::plan::parse_plan(text, id).is_err() {
                        scan.facts.item = None;
                    }
                    scan.facts.plans = indexed
                        .iter()
                        .map(|p| yoi_db::plan_key(id, &p.id))
                        .collect();
                }
                Ok(None) => {}
                Err(why) => {
                    scan.facts.item = None;
                    scan.findings.push(unreadable(id, &rel, why))
                }
            },
        );
    }
}

/// Of a ticket's valid plan records, what the cross-ticket checks need once the file checks
/// are done: records naming another ticket (`plan.missing_related`) and the latest accepted
/// plan (the worktree checks), without their notes. A large tree holds tens of thousands of
/// records; the rest are not kept for the whole pass.
fn kept_for_later(records: Vec<(usize, PlanRecord)>) -> Vec<(usize, PlanRecord)> {
    let accepted = records
        .iter()
        .rposition(|(_, r)| r.kind == PlanKind::AcceptedPlan && r.accepted_plan.is_some());
    let mut kept = records
        .into_iter()
        .enumerate()
        .filter(|(i, (_, r))| r.related_ticket.is_some() || Some(*i) == accepted)
        .map(|(_, (line, mut r))| {
            r.note = None;
            (line, r)
        })
        .collect::<Vec<_>>();
    // Collecting in place keeps the buffer of every record read; keep room for these only.
    kept.shrink_to_fit();
    kept
}
