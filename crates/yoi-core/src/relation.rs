//! Relations between tickets, stored forward in the source ticket's
//! `artifacts/relations.json`; inverses are derived, never stored.
//!
//! This module owns the file format, the blocker rule and the cycle check. A ticket is blocked
//! by every outgoing `depends_on` and every incoming `blocks` whose other end is not done or
//! closed (an unknown other end counts as blocking). `related` never blocks;
//! `supersedes`/`duplicate_of` produce notices only.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

use crate::id::{IdKey, TicketId};
use crate::state::State;
use crate::time::Timestamp;

pub const RELATIONS_VERSION: u32 = 1;
pub const MAX_NOTE_BYTES: usize = 16 * 1024;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    DependsOn,
    Blocks,
    Related,
    Supersedes,
    DuplicateOf,
}

impl RelationKind {
    pub const ALL: [RelationKind; 5] = [
        RelationKind::DependsOn,
        RelationKind::Blocks,
        RelationKind::Related,
        RelationKind::Supersedes,
        RelationKind::DuplicateOf,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RelationKind::DependsOn => "depends_on",
            RelationKind::Blocks => "blocks",
            RelationKind::Related => "related",
            RelationKind::Supersedes => "supersedes",
            RelationKind::DuplicateOf => "duplicate_of",
        }
    }

    /// Name of the derived inverse seen from the target.
    pub fn inverse_name(self) -> &'static str {
        match self {
            RelationKind::DependsOn => "dependency_of",
            RelationKind::Blocks => "blocked_by",
            RelationKind::Related => "related",
            RelationKind::Supersedes => "superseded_by",
            RelationKind::DuplicateOf => "duplicated_by",
        }
    }

    /// Kinds that order work and so must stay acyclic.
    pub fn is_ordering(self) -> bool {
        matches!(self, RelationKind::DependsOn | RelationKind::Blocks)
    }
}

impl fmt::Display for RelationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("`{value}` is not a relation kind (expected depends_on, blocks, related, supersedes or duplicate_of)")]
pub struct RelationKindError {
    pub value: String,
}

impl FromStr for RelationKind {
    type Err = RelationKindError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().to_ascii_lowercase().replace('-', "_");
        RelationKind::ALL
            .into_iter()
            .find(|k| k.as_str() == v)
            .ok_or_else(|| RelationKindError {
                value: s.to_string(),
            })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    pub ticket_id: TicketId,
    pub kind: RelationKind,
    pub target: TicketId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub author: String,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationsFile {
    pub version: u32,
    pub relations: Vec<Relation>,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RelationsFileError {
    #[error("line {line}: invalid relations JSON: {reason}")]
    Json { line: usize, reason: String },
    #[error("unsupported relations version {found} (this yoi reads version {RELATIONS_VERSION})")]
    Version { found: u32 },
    #[error("relation {index} belongs to {found}, but the file is in ticket {expected}")]
    Owner {
        index: usize,
        expected: TicketId,
        found: TicketId,
    },
    #[error("relation {index} points at its own ticket")]
    SelfTarget { index: usize },
    #[error("relation {kind} {target} appears twice")]
    Duplicate {
        kind: RelationKind,
        target: TicketId,
    },
    #[error("relation {index}: the note is larger than {MAX_NOTE_BYTES} bytes")]
    NoteTooLarge { index: usize },
}

impl RelationsFile {
    pub fn empty() -> Self {
        RelationsFile {
            version: RELATIONS_VERSION,
            relations: Vec::new(),
        }
    }

    /// Parse and validate against the owning ticket.
    pub fn parse(text: &str, owner: &TicketId) -> Result<Self, RelationsFileError> {
        let file: RelationsFile =
            serde_json::from_str(text).map_err(|e| RelationsFileError::Json {
                line: e.line(),
                reason: e.to_string(),
            })?;
        if file.version != RELATIONS_VERSION {
            return Err(RelationsFileError::Version {
                found: file.version,
            });
        }
        let mut seen = BTreeSet::new();
        for (index, r) in file.relations.iter().enumerate() {
            if &r.ticket_id != owner {
                return Err(RelationsFileError::Owner {
                    index,
                    expected: owner.clone(),
                    found: r.ticket_id.clone(),
                });
            }
            if &r.target == owner {
                return Err(RelationsFileError::SelfTarget { index });
            }
            if r.note.as_ref().is_some_and(|n| n.len() > MAX_NOTE_BYTES) {
                return Err(RelationsFileError::NoteTooLarge { index });
            }
            if !seen.insert((r.kind, r.target.clone())) {
                return Err(RelationsFileError::Duplicate {
                    kind: r.kind,
                    target: r.target.clone(),
                });
            }
        }
        Ok(file)
    }

    /// Pretty JSON with a final newline, relations sorted by kind then target.
    pub fn render(&self) -> String {
        let mut sorted = self.clone();
        sorted.sort();
        let mut s = serde_json::to_string_pretty(&sorted).expect("relations serialize");
        s.push('\n');
        s
    }

    pub fn sort(&mut self) {
        self.relations
            .sort_by(|a, b| (a.kind, &a.target).cmp(&(b.kind, &b.target)));
    }

    pub fn contains(&self, kind: RelationKind, target: &TicketId) -> bool {
        self.relations
            .iter()
            .any(|r| r.kind == kind && &r.target == target)
    }
}

/// A hasher for [`IdKey`]s: they are numbers already well mixed (a ULID's random part), so a
/// fold and Murmur3's finaliser do; the standard SipHash costs more than the lookup.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u128(&mut self, v: u128) {
        self.0 ^= (v as u64) ^ ((v >> 64) as u64).rotate_left(29);
    }

    fn write_u8(&mut self, v: u8) {
        self.0 ^= u64::from(v) << 1;
    }
}

/// A map keyed by [`IdKey`] (a ticket id as a number) with [`IdHasher`].
pub type IdMap<V> = HashMap<IdKey, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Why a ticket is blocked, one entry per open blocker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub struct Blocker {
    pub ticket: TicketId,
    pub reason_kind: BlockerReason,
    /// The blocker's state; `None` when the ticket does not exist or yoi cannot read it (a
    /// broken ticket: it blocks on the safe side).
    pub state: Option<State>,
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state {
            Some(s) => write!(f, "{} via {} (state: {})", self.ticket, self.reason_kind, s),
            None => write!(
                f,
                "{} via {} (missing or unreadable)",
                self.ticket, self.reason_kind
            ),
        }
    }
}

/// Why a blocker blocks: this ticket `depends_on` it, or it blocks this ticket (`blocked_by`).
/// The variants are in the order of their names, so blockers sort as they did by name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BlockerReason {
    BlockedBy,
    DependsOn,
}

impl BlockerReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockerReason::BlockedBy => "blocked_by",
            BlockerReason::DependsOn => "depends_on",
        }
    }

    /// The reason `name` spells, if any.
    pub fn parse(name: &str) -> Option<BlockerReason> {
        [BlockerReason::BlockedBy, BlockerReason::DependsOn]
            .into_iter()
            .find(|r| r.as_str() == name)
    }
}

impl fmt::Display for BlockerReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for BlockerReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Every relation of a workspace, for deriving views. Build it once per read.
///
/// Each relation is stored once. Every ticket a relation names gets a dense number when the
/// graph is built (one hash lookup per end), and the relations of each ticket are found through
/// two compressed arrays (outgoing and incoming, in the order the relations were added), so a
/// view over the whole workspace runs on arrays that fit in cache (issue 16 item 6:
/// BENCHMARKS.md, "In-process ready and blocked").
#[derive(Debug, Default, Clone)]
pub struct RelationGraph {
    rels: Vec<Relation>,
    /// The number of each ticket named by a relation.
    nodes: IdMap<u32>,
    /// Per node, where its id is: `relation << 1 | end` (end 0 the source, 1 the target).
    named_at: Vec<u32>,
    /// Per relation: its source node, its target node, its kind.
    ends: Vec<(u32, u32, RelationKind)>,
    /// The positions in `rels` of node `n`'s outgoing relations are
    /// `out_rel[out_at[n]..out_at[n + 1]]`; the same for incoming.
    out_at: Vec<u32>,
    out_rel: Vec<u32>,
    in_at: Vec<u32>,
    in_rel: Vec<u32>,
}

/// The state of [`RelationGraph::cyclic_components`]' walk.
struct Tarjan {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    counter: u32,
    /// The depth-first path: each node with the waits it has still to look at.
    work: Vec<(u32, Vec<u32>)>,
}

impl Tarjan {
    const UNSEEN: u32 = u32::MAX;

    fn visit(&mut self, graph: &RelationGraph, v: u32) {
        self.index[v as usize] = self.counter;
        self.low[v as usize] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        let mut next: Vec<u32> = graph.waits_of(v).collect();
        next.reverse();
        self.work.push((v, next));
    }
}

/// The tickets with an open blocker, over a whole graph: see [`RelationGraph::blocked_set`].
#[derive(Debug)]
pub struct BlockedSet<'g> {
    graph: &'g RelationGraph,
    blocked: Vec<bool>,
}

impl BlockedSet<'_> {
    /// Whether `id` has an open blocker.
    pub fn contains(&self, id: &TicketId) -> bool {
        self.graph
            .node(id)
            .is_some_and(|n| self.blocked[n as usize])
    }
}

/// The number of the ticket `key`, numbering it now (named at `at`) if it is new.
fn intern(nodes: &mut IdMap<u32>, named_at: &mut Vec<u32>, key: IdKey, at: u32) -> u32 {
    *nodes.entry(key).or_insert_with(|| {
        named_at.push(at);
        u32::try_from(named_at.len() - 1).expect("fewer than 2^32 tickets")
    })
}

/// Compressed rows: for `n` nodes and each relation's node (in relation order), where every
/// node's run starts, and the relation positions, in relation order within a run.
fn compress(n: usize, node_of: impl Iterator<Item = u32> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut at = vec![0u32; n + 1];
    for v in node_of.clone() {
        at[v as usize + 1] += 1;
    }
    for i in 0..n {
        at[i + 1] += at[i];
    }
    let mut next = at.clone();
    let mut rel = vec![0u32; at[n] as usize];
    for (i, v) in node_of.enumerate() {
        let slot = &mut next[v as usize];
        rel[*slot as usize] = i as u32;
        *slot += 1;
    }
    (at, rel)
}

impl RelationGraph {
    pub fn new<'a>(relations: impl IntoIterator<Item = &'a Relation>) -> Self {
        RelationGraph::from_owned(relations.into_iter().cloned().collect())
    }

    /// The graph of relations the caller owns (as read from the files), without copying them.
    pub fn from_owned(rels: Vec<Relation>) -> Self {
        assert!(
            rels.len() < (u32::MAX >> 1) as usize,
            "fewer than 2^31 relations"
        );
        let mut nodes = IdMap::with_capacity_and_hasher(rels.len() / 2, Default::default());
        let mut named_at = Vec::with_capacity(rels.len() / 2);
        let mut ends = Vec::with_capacity(rels.len());
        // Relations come file by file, so a ticket's outgoing ones are usually together: the
        // previous source's number is reused without a lookup.
        let mut last: Option<(IdKey, u32)> = None;
        for (i, r) in rels.iter().enumerate() {
            let i = i as u32;
            let key = r.ticket_id.key();
            let source = match last {
                Some((k, n)) if k == key => n,
                _ => {
                    let n = intern(&mut nodes, &mut named_at, key, i << 1);
                    last = Some((key, n));
                    n
                }
            };
            let target = intern(&mut nodes, &mut named_at, r.target.key(), (i << 1) | 1);
            ends.push((source, target, r.kind));
        }
        let n = named_at.len();
        let (out_at, out_rel) = compress(n, ends.iter().map(|e| e.0));
        let (in_at, in_rel) = compress(n, ends.iter().map(|e| e.1));
        RelationGraph {
            rels,
            nodes,
            named_at,
            ends,
            out_at,
            out_rel,
            in_at,
            in_rel,
        }
    }

    fn node(&self, id: &TicketId) -> Option<u32> {
        self.nodes.get(&id.key()).copied()
    }

    /// The id of node `n`, borrowed from a relation that names it.
    fn id_of(&self, n: u32) -> &TicketId {
        let at = self.named_at[n as usize];
        let r = &self.rels[(at >> 1) as usize];
        if at & 1 == 0 {
            &r.ticket_id
        } else {
            &r.target
        }
    }

    /// The relations stored on `id` (its relations.json), in the order they were added.
    pub fn outgoing<'g>(&'g self, id: &TicketId) -> impl Iterator<Item = &'g Relation> + 'g {
        self.run(&self.out_at, &self.out_rel, id)
    }

    /// The relations other tickets store with `id` as their target.
    pub fn incoming<'g>(&'g self, id: &TicketId) -> impl Iterator<Item = &'g Relation> + 'g {
        self.run(&self.in_at, &self.in_rel, id)
    }

    fn run<'g>(
        &'g self,
        at: &'g [u32],
        rel: &'g [u32],
        id: &TicketId,
    ) -> impl Iterator<Item = &'g Relation> + 'g {
        let run = match self.node(id) {
            Some(n) => &rel[at[n as usize] as usize..at[n as usize + 1] as usize],
            None => &[],
        };
        run.iter().map(|&i| &self.rels[i as usize])
    }

    /// Every ticket with an open blocker, for a view of the whole workspace: each ticket a
    /// relation names has its state looked up once, then one pass over the relations marks the
    /// waiters. The rule of [`RelationGraph::is_blocked`], asked of every ticket at once.
    pub fn blocked_set(&self, state_of: impl Fn(&TicketId) -> Option<State>) -> BlockedSet<'_> {
        let open: Vec<bool> = (0..self.named_at.len() as u32)
            .map(|n| !state_of(self.id_of(n)).is_some_and(State::is_finished))
            .collect();
        let mut blocked = vec![false; open.len()];
        for &(source, target, kind) in &self.ends {
            match kind {
                RelationKind::DependsOn if open[target as usize] => blocked[source as usize] = true,
                RelationKind::Blocks if open[source as usize] => blocked[target as usize] = true,
                _ => {}
            }
        }
        BlockedSet {
            graph: self,
            blocked,
        }
    }

    /// What `id` waits on, unsorted and possibly repeated: depends_on targets and the sources
    /// of incoming blocks.
    fn waits<'g>(&'g self, id: &TicketId) -> impl Iterator<Item = (&'g TicketId, BlockerReason)> {
        self.outgoing(id)
            .filter(|r| r.kind == RelationKind::DependsOn)
            .map(|r| (&r.target, BlockerReason::DependsOn))
            .chain(
                self.incoming(id)
                    .filter(|r| r.kind == RelationKind::Blocks)
                    .map(|r| (&r.ticket_id, BlockerReason::BlockedBy)),
            )
    }

    /// The tickets `id` waits on: depends_on targets and the sources of incoming blocks.
    pub fn waits_on(&self, id: &TicketId) -> Vec<(TicketId, &'static str)> {
        let mut out: Vec<(TicketId, &'static str)> = self
            .waits(id)
            .map(|(t, why)| (t.clone(), why.as_str()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether `id` has an open blocker, without building the list.
    pub fn is_blocked(&self, id: &TicketId, state_of: impl Fn(&TicketId) -> Option<State>) -> bool {
        self.waits(id)
            .any(|(t, _)| !state_of(t).is_some_and(State::is_finished))
    }

    /// Open blockers of `id` given a state lookup.
    pub fn blockers(
        &self,
        id: &TicketId,
        state_of: impl Fn(&TicketId) -> Option<State>,
    ) -> Vec<Blocker> {
        let mut out: Vec<Blocker> = self
            .waits(id)
            .filter_map(|(t, why)| {
                let state = state_of(t);
                (!state.is_some_and(State::is_finished)).then(|| Blocker {
                    ticket: t.clone(),
                    reason_kind: why,
                    state,
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The cycle that adding `from --kind--> to` would close, as a path starting and ending at
    /// the same ticket, or `None` when the edge is safe.
    pub fn cycle_with(
        &self,
        from: &TicketId,
        kind: RelationKind,
        to: &TicketId,
    ) -> Option<Vec<TicketId>> {
        if !kind.is_ordering() {
            return None;
        }
        // Edge direction: waiter -> blocker.
        let (waiter, blocker) = match kind {
            RelationKind::DependsOn => (from, to),
            _ => (to, from),
        };
        // A cycle exists if `waiter` is reachable from `blocker`.
        let path = self.wait_path(blocker, waiter)?;
        let mut cycle = vec![waiter.clone()];
        cycle.extend(path);
        Some(cycle)
    }

    /// Path of waits from `start` to `goal` (inclusive), breadth first.
    fn wait_path(&self, start: &TicketId, goal: &TicketId) -> Option<Vec<TicketId>> {
        let mut prev: HashMap<TicketId, TicketId> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start.clone()]);
        let mut seen: BTreeSet<TicketId> = BTreeSet::from([start.clone()]);
        while let Some(n) = queue.pop_front() {
            if &n == goal {
                let mut path = vec![n.clone()];
                let mut cur = n;
                while let Some(p) = prev.get(&cur) {
                    path.push(p.clone());
                    cur = p.clone();
                }
                path.reverse();
                return Some(path);
            }
            for (next, _) in self.waits_on(&n) {
                if seen.insert(next.clone()) {
                    prev.insert(next.clone(), n.clone());
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// Every distinct wait cycle, each rotated to start at its smallest id, at most `limit`:
    /// those of the components with the smallest ids, in order.
    pub fn cycles(&self, limit: usize) -> Vec<Vec<TicketId>> {
        let mut components: Vec<(&TicketId, Vec<u32>)> = self
            .cyclic_components()
            .into_iter()
            .map(|comp| {
                let first = comp
                    .iter()
                    .map(|&n| self.id_of(n))
                    .min()
                    .expect("a component has members");
                (first, comp)
            })
            .collect();
        components.sort_by(|a, b| a.0.cmp(b.0));
        components.truncate(limit);
        let mut out: Vec<Vec<TicketId>> = components
            .into_iter()
            .map(|(first, comp)| {
                let members: BTreeSet<TicketId> =
                    comp.iter().map(|&n| self.id_of(n).clone()).collect();
                self.cycle_through(first, &members)
            })
            .collect();
        out.sort();
        out
    }

    /// The nodes `n` waits on, by relation: the targets of its depends_on and the sources of
    /// the blocks naming it (possibly repeated).
    fn waits_of(&self, n: u32) -> impl Iterator<Item = u32> + '_ {
        let n = n as usize;
        let out = &self.out_rel[self.out_at[n] as usize..self.out_at[n + 1] as usize];
        let inc = &self.in_rel[self.in_at[n] as usize..self.in_at[n + 1] as usize];
        let ends = &self.ends;
        out.iter()
            .filter_map(move |&i| {
                let (_, target, kind) = ends[i as usize];
                (kind == RelationKind::DependsOn).then_some(target)
            })
            .chain(inc.iter().filter_map(move |&i| {
                let (source, _, kind) = ends[i as usize];
                (kind == RelationKind::Blocks).then_some(source)
            }))
    }

    /// The strongly connected components of the wait graph with more than one node (each holds
    /// a cycle): Tarjan's algorithm on the dense node numbers, iterative, linear in the
    /// relations.
    fn cyclic_components(&self) -> Vec<Vec<u32>> {
        let n = self.named_at.len();
        let mut t = Tarjan {
            index: vec![Tarjan::UNSEEN; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            work: Vec::new(),
        };
        let mut out = Vec::new();
        for root in 0..n as u32 {
            if t.index[root as usize] != Tarjan::UNSEEN {
                continue;
            }
            t.visit(self, root);
            while let Some((v, next)) = t.work.last_mut() {
                let v = *v as usize;
                if let Some(m) = next.pop() {
                    if t.index[m as usize] == Tarjan::UNSEEN {
                        t.visit(self, m);
                    } else if t.on_stack[m as usize] {
                        t.low[v] = t.low[v].min(t.index[m as usize]);
                    }
                    continue;
                }
                t.work.pop();
                if let Some((parent, _)) = t.work.last() {
                    let p = *parent as usize;
                    t.low[p] = t.low[p].min(t.low[v]);
                }
                if t.low[v] == t.index[v] {
                    let mut comp = Vec::new();
                    loop {
                        let w = t.stack.pop().expect("the stack holds the component");
                        t.on_stack[w as usize] = false;
                        comp.push(w);
                        if w as usize == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        out.push(comp);
                    }
                }
            }
        }
        out
    }

    /// A cycle from `start` back to itself staying inside `members`.
    fn cycle_through(&self, start: &TicketId, members: &BTreeSet<TicketId>) -> Vec<TicketId> {
        let mut prev: HashMap<TicketId, TicketId> = HashMap::new();
        let mut queue = std::collections::VecDeque::new();
        for (n, _) in self.waits_on(start) {
            if members.contains(&n) && !prev.contains_key(&n) {
                prev.insert(n.clone(), start.clone());
                queue.push_back(n);
            }
        }
        while let Some(n) = queue.pop_front() {
            if &n == start {
                break;
            }
            for (m, _) in self.waits_on(&n) {
                if members.contains(&m) && !prev.contains_key(&m) {
                    prev.insert(m.clone(), n.clone());
                    queue.push_back(m);
                }
            }
        }
        let mut path = vec![start.clone()];
        let mut cur = prev.get(start).cloned();
        while let Some(c) = cur {
            if &c == start {
                break;
            }
            path.push(c.clone());
            cur = prev.get(&c).cloned();
        }
        path.push(start.clone());
        // `prev` links point backwards, so the path was built from the end: reverse the middle.
        let n = path.len();
        path[1..n - 1].reverse();
        path
    }
}

/// Render a cycle as `A -> B -> A`.
pub fn format_cycle(cycle: &[TicketId]) -> String {
    cycle
        .iter()
        .map(TicketId::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

impl RelationsFileError {
    /// A relations error names an entry of `relations.json`: the file is malformed.
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            RelationsFileError::Json { .. }
            | RelationsFileError::Version { .. }
            | RelationsFileError::Owner { .. }
            | RelationsFileError::SelfTarget { .. }
            | RelationsFileError::Duplicate { .. }
            | RelationsFileError::NoteTooLarge { .. } => crate::ErrorClass::Corrupt,
        }
    }
}

#[cfg(test)]
mod tests;
