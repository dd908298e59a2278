//! One entry of the doctor cache file: a ticket folder's scan as bytes and back.
//!
//! An entry is its CRC-32 (of everything after it), the ticket id, the stamps (`stamps`), then
//! the scan: state, the index facts (item keys, thread event keys, plan keys), relations.json
//! as read and its relations field by field (so a kept scan does not parse JSON again), the
//! plan records the cross-ticket checks use, and the findings. [`open`] gives the
//! fields after the id only when the CRC holds and the id is the one looked up; [`decode`]
//! gives a scan only when every field decodes and nothing is left over.
//!
//! **What it refuses.** A finding whose check id doctor does not list (in [`crate::CHECKS`])
//! is neither written nor read back: the scan is not kept, and such an entry is not believed,
//! so a check renamed in another build can never come back from the cache.
//!
//! **Shared texts.** A finding's fixed texts (`Cow::Borrowed`) are marked as yoi's own, and read
//! back as one process-wide copy each ([`shared`]), so a large report does not hold tens of
//! thousands of copies of the same sentence.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Mutex;

use yoi_core::finding::{Finding, Severity};
use yoi_core::plan::PlanRecord;
use yoi_core::relation::{Relation, RelationKind, RelationsFile};
use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_core::Timestamp;

use super::fields::{put_opt, put_str, Reader};
use crate::ticket::{IndexFacts, TicketScan};

/// A new entry of ticket `id`: room for its CRC, then the id.
pub(super) fn begin(id: &str) -> Vec<u8> {
    let mut w = Vec::with_capacity(1024);
    w.extend_from_slice(&[0; 4]);
    put_str(&mut w, id);
    w
}

/// Put the CRC of everything after it in front of an entry [`begin`] started.
pub(super) fn seal(mut w: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&w[4..]);
    w[..4].copy_from_slice(&crc.to_le_bytes());
    w
}

/// The fields of an entry after its id, when its CRC holds and it is the entry of `id`.
pub(super) fn open<'a>(bytes: &'a [u8], id: &TicketId) -> Option<Reader<'a>> {
    let mut r = Reader::new(bytes);
    let crc = r.u32()?;
    if crc32fast::hash(r.rest()) != crc || r.str()? != id.as_str() {
        return None;
    }
    Some(r)
}

/// Text that is part of yoi (a `Cow::Borrowed`) is marked so it is shared again when read.
fn put_cow(w: &mut Vec<u8>, s: Option<&Cow<'static, str>>) {
    match s {
        None => w.push(0),
        Some(Cow::Borrowed(s)) => {
            w.push(1);
            put_str(w, s);
        }
        Some(Cow::Owned(s)) => {
            w.push(2);
            put_str(w, s);
        }
    }
}

fn read_cow(r: &mut Reader<'_>) -> Option<Option<Cow<'static, str>>> {
    match r.u8()? {
        0 => Some(None),
        1 => Some(Some(Cow::Borrowed(shared(r.str()?)))),
        2 => Some(Some(Cow::Owned(r.string()?))),
        _ => None,
    }
}

/// The scan after the entry's stamps. `None` when something in it cannot be kept (a check id
/// doctor does not list).
pub(super) fn encode(w: &mut Vec<u8>, scan: &TicketScan) -> Option<()> {
    w.push(scan.state.map_or(u8::MAX, |s| {
        State::ALL.iter().position(|x| *x == s).unwrap_or(0) as u8
    }));
    match &scan.facts.item {
        None => w.push(0),
        Some(item) => {
            w.push(1);
            item.iter().for_each(|s| put_str(w, s));
        }
    }
    put_str(w, scan.facts.events.text());
    w.extend_from_slice(&(scan.facts.plans.len() as u32).to_le_bytes());
    scan.facts.plans.iter().for_each(|p| put_str(w, p));
    put_opt(w, scan.relations.is_some().then_some(&*scan.relations_text));
    if let Some(file) = &scan.relations {
        put_relations(w, file);
    }
    put_str(w, &serde_json::to_string(&scan.plan).ok()?);
    w.extend_from_slice(&(scan.findings.len() as u32).to_le_bytes());
    for f in &scan.findings {
        check_id(f.check)?;
        w.push(f.severity as u8);
        put_str(w, f.check);
        put_opt(w, f.ticket.as_deref());
        put_opt(w, f.path.as_deref());
        match f.line {
            None => w.push(0),
            Some(n) => {
                w.push(1);
                w.extend_from_slice(&(n as u64).to_le_bytes());
            }
        }
        put_str(w, &f.seen);
        put_cow(w, Some(&f.expected));
        put_cow(w, f.fix.as_ref());
    }
    Some(())
}

/// The relations of a relations.json that parsed, field by field: reading them back is a
/// tenth of parsing the JSON again (the text is kept beside them for the lines findings name).
fn put_relations(w: &mut Vec<u8>, file: &RelationsFile) {
    w.extend_from_slice(&file.version.to_le_bytes());
    w.extend_from_slice(&(file.relations.len() as u32).to_le_bytes());
    for r in &file.relations {
        let kind = RelationKind::ALL.iter().position(|k| *k == r.kind);
        w.push(kind.map_or(u8::MAX, |k| k as u8));
        put_str(w, r.target.as_str());
        put_opt(w, r.note.as_deref());
        put_str(w, &r.author);
        let (secs, nanos) = r.at.unix_parts();
        w.extend_from_slice(&secs.to_le_bytes());
        w.extend_from_slice(&nanos.to_le_bytes());
    }
}

/// What [`put_relations`] wrote, for the ticket `id` that owns them.
fn read_relations(r: &mut Reader<'_>, id: &TicketId) -> Option<RelationsFile> {
    let version = r.u32()?;
    let n = r.u32()? as usize;
    let mut relations = Vec::with_capacity(n.min(r.rest().len()));
    for _ in 0..n {
        let kind = *RelationKind::ALL.get(r.u8()? as usize)?;
        let target = TicketId::parse(r.str()?).ok()?;
        let note = r.opt()?.map(str::to_string);
        let author = r.string()?;
        let secs = r.u64()? as i64;
        let nanos = r.u32()?;
        let at = Timestamp::from_unix_parts(secs, nanos)?;
        relations.push(Relation {
            ticket_id: id.clone(),
            kind,
            target,
            note,
            author,
            at,
        });
    }
    Some(RelationsFile { version, relations })
}

pub(super) fn decode(r: &mut Reader<'_>, id: &TicketId) -> Option<TicketScan> {
    let state = match r.u8()? {
        u8::MAX => None,
        n => Some(*State::ALL.get(n as usize)?),
    };
    let item = match r.u8()? {
        0 => None,
        _ => Some([r.string()?, r.string()?, r.string()?]),
    };
    let events = crate::thread::Keys::from_text(r.string()?);
    let plans = (0..r.u32()?)
        .map(|_| r.string())
        .collect::<Option<Vec<_>>>()?;
    let (relations, relations_text) = match r.opt()? {
        None => (None, String::new()),
        Some(text) => (Some(read_relations(r, id)?), text.to_string()),
    };
    let mut plan: Vec<(usize, PlanRecord)> = serde_json::from_str(r.str()?).ok()?;
    // Held for the whole pass: no room to spare.
    plan.shrink_to_fit();
    let n = r.u32()? as usize;
    let mut findings = Vec::with_capacity(n.min(r.rest().len()));
    for _ in 0..n {
        let severity = match r.u8()? {
            0 => Severity::Error,
            1 => Severity::Warning,
            _ => return None,
        };
        let check = check_id(r.str()?)?;
        let mut f = Finding::new(severity, check, String::new(), "");
        f.ticket = r.opt()?.map(str::to_string);
        f.path = r.opt()?.map(str::to_string);
        f.line = match r.u8()? {
            0 => None,
            _ => Some(usize::try_from(r.u64()?).ok()?),
        };
        f.seen = r.string()?;
        f.expected = read_cow(r)??;
        f.fix = read_cow(r)?;
        findings.push(f);
    }
    if !r.rest().is_empty() {
        return None;
    }
    Some(TicketScan {
        id: id.clone(),
        findings,
        exists: true,
        state,
        relations,
        relations_text,
        plan,
        facts: IndexFacts {
            item,
            events,
            plans,
        },
        cache: None,
    })
}

/// The check id doctor lists as `id`, if it lists one.
fn check_id(id: &str) -> Option<&'static str> {
    static IDS: std::sync::OnceLock<HashSet<&'static str>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| crate::CHECKS.iter().map(|c| c.id).collect())
        .get(id)
        .copied()
}

/// yoi's own texts read back from a file, each kept once for the life of the process so a
/// finding read back holds no copy of it (a report holds tens of thousands of findings, most
/// with the same fixed texts). Only texts written as yoi's own are kept here, so there are as
/// many as yoi has. Each thread looks in its own set first.
fn shared(s: &str) -> &'static str {
    static TEXTS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    thread_local! {
        static SEEN: std::cell::RefCell<HashSet<&'static str>> = std::cell::RefCell::default();
    }
    SEEN.with_borrow_mut(|seen| {
        if let Some(t) = seen.get(s) {
            return *t;
        }
        let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
        let texts = texts.get_or_insert_with(HashSet::new);
        let t = match texts.get(s) {
            Some(t) => *t,
            None => {
                let t: &'static str = Box::leak(s.to_string().into_boxed_str());
                texts.insert(t);
                t
            }
        };
        seen.insert(t);
        t
    })
}
