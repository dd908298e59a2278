//! Workflows in the simulation (docs/workflows.md): people invoke them on tickets and write the
//! same instruction on several, yoi looks at the history and offers, people accept or reject
//! the offers. Each action is the engine function the CLI, the API and the dashboard call.
//!
//! The invariant (`check_procedures`, after every step): **no workflow or flow file changes
//! without a person's approval event.** The world remembers the digest of every file under
//! `.yoi/workflow/` and `.yoi/flows/`. A file that differs from that memory is explained only
//! by an accepted offer for that path whose content is the file now, whose `audit.md` holds a
//! `workflow_offer_accepted` event by a person, and that was not already used to explain an
//! earlier change; anything else is `procedure-written-without-approval`. The files a person
//! writes by hand (the two workflows `ensure_written` puts in place) are remembered as they
//! are written. Looking at the history must change no file at all.
//!
//! The thresholds are lowered to two tickets (and two invocations for `auto_invoke`), so the
//! short schedules reach offers; the rules are the same.

use std::collections::{BTreeMap, BTreeSet};

use yoi_core::{Principal, State};
use yoi_engine::skill_format::digest::sha256_hex;
use yoi_engine::skill_format::offer::OfferStatus;
use yoi_engine::store::ops::CommentRequest;
use yoi_engine::store::{Ctx, Workspace};
use yoi_engine::workflows::{invoke, offers};

use super::{broken, Broken, World};

/// The person, as in `people`.
const PERSON: &str = "alice";

/// The workflows a person writes before the first invocation: one for the coder, one people
/// may not invoke (its invocations are refused).
const HAND_WRITTEN: [(&str, &str); 2] = [
    (
        ".yoi/workflow/precheck.md",
        "---\ndescription: Check the change before review.\n---\n\nRun the checks first.\n",
    ),
    (
        ".yoi/workflow/agents-only.md",
        "---\ndescription: Only agents run this.\nuser_invocable: false\nauto_invoke: true\n---\n\nAgents only.\n",
    ),
];

/// What a person writes on a ticket, by `how`: invocations (one refused for its flag, one for
/// an unknown slug) and the same instruction again and again.
const SAID: [&str; 6] = [
    "/precheck",
    "/precheck mind the shared file",
    "Run the linters and the formatter before asking for review.",
    "Keep the change to the files the brief names, please.",
    "/agents-only",
    "/no-such-workflow",
];

/// The world's memory of the procedure files and of the acceptances that explain changes.
#[derive(Debug, Default)]
pub(super) struct Procedures {
    /// Path → digest of every file the world knows a person put there (by hand or by accepting).
    files: BTreeMap<String, String>,
    /// Offers whose acceptance already explained a change.
    used: BTreeSet<String>,
    written: bool,
    pub(super) invoked: usize,
    pub(super) offered: usize,
    pub(super) accepted: usize,
    pub(super) rejected: usize,
}

impl World {
    /// A copy of the workspace with thresholds short schedules reach.
    fn offer_ws(&self) -> Workspace {
        let mut ws = self.live().ws.clone();
        let w = &mut ws.config.workflows;
        w.offer_min_tickets = 2;
        w.auto_invoke_min_invocations = 2;
        w.auto_invoke_min_tickets = 2;
        ws
    }

    /// The hand-written workflows, once (a person's own edit, remembered as theirs).
    fn ensure_written(&mut self) -> Result<(), Broken> {
        if self.procedures.written {
            return Ok(());
        }
        for (rel, text) in HAND_WRITTEN {
            let path = self.repo.join(rel);
            std::fs::create_dir_all(path.parent().expect("a folder"))
                .and_then(|()| std::fs::write(&path, text))
                .map_err(|e| broken("setup", format!("writing {rel}: {e}")))?;
            self.procedures
                .files
                .insert(rel.to_string(), sha256_hex(text.as_bytes()));
        }
        self.procedures.written = true;
        Ok(())
    }

    /// A procedure file a person wrote by hand outside these actions (the forge's flow).
    pub(super) fn remember_hand_written(&mut self, rel: &str, text: &str) {
        self.procedures
            .files
            .insert(rel.to_string(), sha256_hex(text.as_bytes()));
    }

    /// A person comments on the ticket `t` stands for: an invocation or an instruction (`how`).
    /// A refused invocation writes nothing.
    pub(super) fn say(&mut self, t: u32, how: u32) -> Result<(), Broken> {
        self.ensure_written()?;
        let open = [
            State::Planning,
            State::Ready,
            State::Queued,
            State::Inprogress,
        ];
        let Some(id) = self.pick(t, &open) else {
            return Ok(());
        };
        let text = SAID[how as usize % SAID.len()];
        let before = self.thread_len(&id)?;
        let req = CommentRequest {
            kind: "comment".into(),
            body: text.into(),
        };
        let ctx = Ctx::new(Principal::human(PERSON), self.now());
        match invoke::comment(&self.live().ws, &ctx, id.as_str(), &req) {
            Ok(_) => {
                if text.starts_with('/') {
                    self.procedures.invoked += 1;
                }
                self.note(format!("  {id}: said {text:?}"));
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  refused: {e}"));
                if self.thread_len(&id)? != before {
                    return Err(broken(
                        "refused-invocation-wrote",
                        format!("{id}: `{text}` was refused ({e}) but the thread grew"),
                    ));
                }
                let expected = match text {
                    "/agents-only" | "/no-such-workflow" => true,
                    _ => !open.contains(&self.state_of(&id)?),
                };
                if !expected {
                    return Err(broken(
                        "invocation-refused",
                        format!(
                            "{id}: `{text}` on a ticket in {:?} was refused: {e}",
                            self.state_of(&id)?
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn thread_len(&self, id: &yoi_core::TicketId) -> Result<usize, Broken> {
        self.live()
            .ws
            .read_thread(id)
            .map(|t| t.events.len())
            .map_err(|e| broken("files", format!("{id}: thread.md does not read: {e}")))
    }

    /// yoi looks at the history and offers what it supports.
    pub(super) fn look_for_offers(&mut self) -> Result<(), Broken> {
        let ws = self.offer_ws();
        match offers::detect(&ws, &self.live().db, self.now()) {
            Ok(d) => {
                self.procedures.offered += d.offered.len();
                for o in &d.offered {
                    if o.status != OfferStatus::Pending {
                        return Err(broken(
                            "offer",
                            format!("{} was offered {:?}", o.id, o.status),
                        ));
                    }
                    self.note(format!(
                        "  offered {} ({}) for {}",
                        o.id,
                        o.kind.as_str(),
                        o.target
                    ));
                }
                Ok(())
            }
            Err(e) => Err(broken("offer", format!("looking for offers failed: {e}"))),
        }
    }

    /// A person accepts (`accept`) or rejects the pending offer `o` stands for. A refusal (the
    /// file moved since, the content no longer checks) is an outcome, not a violation.
    pub(super) fn decide_offer(&mut self, o: u32, accept: bool) -> Result<(), Broken> {
        let ws = self.offer_ws();
        let pending: Vec<String> = offers::list(&ws)
            .map_err(|e| broken("offer", format!("listing offers failed: {e}")))?
            .offers
            .into_iter()
            .filter(|x| x.status == OfferStatus::Pending)
            .map(|x| x.id)
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        let id = &pending[o as usize % pending.len()];
        let who = PERSON.to_string();
        let result = if accept {
            offers::accept(&ws, id, &who, self.now())
        } else {
            offers::reject(&ws, id, &who, "not now", self.now())
        };
        match result {
            Ok(x) => {
                if accept {
                    self.procedures.accepted += 1;
                } else {
                    self.procedures.rejected += 1;
                }
                self.note(format!("  {id}: {:?} ({})", x.status, x.target));
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  {id}: refused: {e}"));
            }
        }
        Ok(())
    }

    /// No workflow or flow file changes without a person's approval event (see the module doc).
    pub(super) fn check_procedures(&mut self) -> Result<(), Broken> {
        let now = procedure_files(&self.repo);
        if now == self.procedures.files {
            return Ok(());
        }
        let offers = offers::list(&self.live().ws)
            .map_err(|e| broken("offer", format!("listing offers failed: {e}")))?
            .offers;
        let paths: BTreeSet<&String> = now.keys().chain(self.procedures.files.keys()).collect();
        let mut explained: Vec<(String, String, String)> = Vec::new();
        for path in paths {
            let (was, is) = (self.procedures.files.get(path), now.get(path));
            if was == is {
                continue;
            }
            let Some(digest) = is else {
                return Err(broken(
                    "procedure-written-without-approval",
                    format!("{path} was removed"),
                ));
            };
            let approval = offers.iter().find(|o| {
                &o.target == path
                    && o.status == OfferStatus::Accepted
                    && &o.digest == digest
                    && !self.procedures.used.contains(&o.id)
                    && o.decision.as_ref().is_some_and(|d| is_person(&d.by))
                    && approved_in_audit(&self.repo, &o.id)
            });
            match approval {
                Some(o) => explained.push((path.clone(), digest.clone(), o.id.clone())),
                None => {
                    return Err(broken(
                        "procedure-written-without-approval",
                        format!(
                            "{path} changed (now {digest}) and no person's accepted offer wrote it"
                        ),
                    ))
                }
            }
        }
        for (path, digest, id) in explained {
            self.procedures.files.insert(path, digest);
            self.procedures.used.insert(id);
        }
        Ok(())
    }
}

fn is_person(author: &str) -> bool {
    !author.is_empty() && yoi_engine::workflows::carry::is_person_author(author)
}

/// Whether the offer's audit holds a `workflow_offer_accepted` event by a person.
fn approved_in_audit(repo: &std::path::Path, id: &str) -> bool {
    let path = repo.join(offers::OFFERS_DIR).join(id).join("audit.md");
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .filter(|l| l.starts_with("<!-- event: workflow_offer_accepted "))
        .any(|l| {
            l.split(" author: ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .is_some_and(is_person)
        })
}

/// Path → digest of every file under `.yoi/workflow/` and `.yoi/flows/`.
fn procedure_files(repo: &std::path::Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for dir in [".yoi/workflow", ".yoi/flows"] {
        let Ok(entries) = std::fs::read_dir(repo.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            if let Ok(bytes) = std::fs::read(e.path()) {
                out.insert(format!("{dir}/{name}"), sha256_hex(&bytes));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use yoi_engine::skill_format::offer::OfferStatus;
    use yoi_engine::workflows::offers;

    use crate::schedule::Action;
    use crate::world::World;

    /// Two tickets on which a person wrote the same instruction, and yoi's offer of it.
    fn offered() -> (World, String) {
        let mut w = World::new().unwrap();
        for a in [
            Action::Create { deps: 0 },
            Action::Create { deps: 0 },
            Action::Invoke { t: 0, how: 2 },
            Action::Invoke { t: 4, how: 2 },
            Action::Offers,
        ] {
            w.step(a).unwrap();
        }
        let list = offers::list(&w.live().ws).unwrap();
        assert_eq!(list.pending, 1, "{list:#?}");
        let id = list.offers[0].id.clone();
        (w, id)
    }

    #[test]
    fn an_accepted_offer_explains_its_file_and_a_second_look_offers_nothing() {
        let (mut w, id) = offered();
        w.step(Action::Offers).unwrap();
        assert_eq!(offers::list(&w.live().ws).unwrap().count, 1);
        w.step(Action::Accept { o: 0 }).unwrap();
        let o = offers::show(&w.live().ws, &id).unwrap();
        assert_eq!(o.status, OfferStatus::Accepted);
        assert!(w.repo.join(&o.target).is_file());
    }

    #[test]
    fn a_workflow_file_written_without_a_persons_approval_is_caught() {
        let (mut w, id) = offered();
        // The offer's content appears in its file, but nobody accepted it.
        let o = offers::show(&w.live().ws, &id).unwrap();
        std::fs::write(w.repo.join(&o.target), &o.content).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "procedure-written-without-approval", "{err:?}");
    }

    #[test]
    fn a_hand_edit_after_an_accepted_offer_is_caught() {
        let (mut w, id) = offered();
        w.step(Action::Accept { o: 0 }).unwrap();
        let o = offers::show(&w.live().ws, &id).unwrap();
        // The same acceptance cannot explain a second change of the file.
        std::fs::write(w.repo.join(&o.target), format!("{}\nmore\n", o.content)).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "procedure-written-without-approval", "{err:?}");
        assert!(err.what.contains(&o.target), "{err:?}");
    }
}
