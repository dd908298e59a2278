//! Schedules: what happens, in order. A schedule is a list of [`Action`]s drawn from a seed with
//! fixed weights; each action names its ticket or pod by a number the world reads modulo what
//! exists when the action runs, so every sub-list of a schedule is a schedule too (which is
//! what shrinking a failure needs). The text form — one action per line — is what a failure
//! prints and what a regression test keeps.

use std::fmt;
use std::str::FromStr;

/// SplitMix64: small, fast and the same on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5EED_0F00_0001)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() % u64::from(n.max(1))) as u32
    }
}

/// One thing that happens. `t`/`u` pick a ticket and `p` a pod (modulo those that exist);
/// `how` picks a variant of the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A person creates a ticket with a complete brief, depending on `deps` earlier ones.
    Create {
        deps: u32,
    },
    Edit {
        t: u32,
    },
    MarkReady {
        t: u32,
    },
    Queue {
        t: u32,
    },
    Return {
        t: u32,
    },
    Cancel {
        t: u32,
    },
    Close {
        t: u32,
    },
    Reopen {
        t: u32,
    },
    Retry {
        t: u32,
    },
    /// `t` depends on `u`.
    Relate {
        t: u32,
        u: u32,
    },
    Unrelate {
        t: u32,
        u: u32,
    },
    /// A person comments on `t`: a workflow's `/<slug>` (some refused) or an instruction they
    /// keep writing, by `how`.
    Invoke {
        t: u32,
        how: u32,
    },
    /// yoi looks at the history and offers workflows, improvements, `auto_invoke`, flows.
    Offers,
    /// A person accepts the pending offer `o` stands for.
    Accept {
        o: u32,
    },
    /// A person rejects the pending offer `o` stands for.
    Reject {
        o: u32,
    },
    /// One orchestrator step.
    Route,
    /// One lease sweep and one flow tick, as `yoi serve` runs them every second.
    Sweep,
    /// Time passes; pods at work heartbeat every two seconds of it, but paused ones.
    Advance {
        ms: u32,
    },
    Claim {
        p: u32,
    },
    Heartbeat {
        p: u32,
    },
    /// The pod does its work (a real commit for a coder) and sends the result.
    Finish {
        p: u32,
        how: u32,
    },
    Fail {
        p: u32,
    },
    /// The pod dies silently and comes back as a new incarnation with nothing in hand.
    PodCrash {
        p: u32,
    },
    /// The pod stops (no heartbeats, no result) until it resumes.
    Pause {
        p: u32,
    },
    /// A paused pod wakes up and sends its result, however late.
    Resume {
        p: u32,
    },
    /// The pod sends its last result again.
    Duplicate {
        p: u32,
    },
    /// The pod sends a result for its claim with the fence before the current one.
    OldFence {
        p: u32,
    },
    /// Someone commits on the target: to the file coders share (`conflict`) or a file of their own.
    TargetCommit {
        conflict: bool,
    },
    /// Someone edits the shared file in the checked-out target and does not commit.
    Dirty,
    /// Their edit is reverted.
    Clean,
    /// At the next merge, someone commits on the target between its check and its update.
    RaceMerge,
    /// The server stops and starts: everything in memory is rebuilt from files and database.
    Restart,
    /// The server dies at the `nth` write point from now (then restarts).
    Crash {
        nth: u32,
    },
    /// The agent of the pod `p` stands for is refused by its provider's rate limit.
    RateLimit {
        p: u32,
    },
    /// A person adds to the budget of the ticket `t` stands for.
    Grant {
        t: u32,
    },
    /// A person creates a ticket whose flow ends in a pull request (docs/forge.md), depending
    /// on `deps` earlier ones.
    CreatePr {
        deps: u32,
    },
    /// One pass of the forge driver (`forge_tick`), as `yoi serve` runs it every `poll_secs`.
    ForgePass,
    /// CI reports on the head of the pull request `p` stands for: `ci` or `lint`, passed,
    /// failed or running (`how`).
    Ci {
        p: u32,
        how: u32,
    },
    /// A person pushes to the branch of the pull request `p` stands for.
    PersonPush {
        p: u32,
    },
    /// People review, comment on or close the pull request `p` stands for (`how`).
    PrReview {
        p: u32,
        how: u32,
    },
    /// The oldest waiting webhook is delivered, delivered twice, overtaken by the next, or
    /// lost (`how`).
    Webhook {
        how: u32,
    },
    /// The forge fails its next calls or loses an answer (`how`).
    ForgeFault {
        how: u32,
    },
    /// The agent of the pod `p` stands for asks a person a question and ends its attempt
    /// `blocked` (docs/inbox.md, "Agents ask").
    Ask {
        p: u32,
    },
    /// A person answers the open question of the ticket `t` stands for.
    Answer {
        t: u32,
    },
    /// A remote pod claims and fetches its claim's commits into its cache.
    RemoteClaim {
        p: u32,
    },
    /// A remote coder at work commits and pushes to its attempt ref: the push is written,
    /// lost, still in flight, or written and then the pod stops (`how`).
    RemotePush {
        p: u32,
        how: u32,
    },
    /// A remote pod's push in flight arrives whole and git writes its ref.
    RemoteLand {
        p: u32,
    },
    /// A remote pod reports its pushed commit with its fence: normally, with the answer
    /// lost (it reports again), or lost (it gives up) (`how`).
    RemoteReport {
        p: u32,
        how: u32,
    },
    /// A stopped remote pod wakes and pushes or reports, however late.
    RemoteResume {
        p: u32,
    },
}

/// Weights of the actions drawn from a seed: enough routing, sweeping and pod work that
/// tickets get merged, with everything else mixed in.
type Draw = fn(&mut Rng) -> Action;

const WEIGHTS: &[(u32, Draw)] = &[
    (3, |r| Action::Create { deps: dep_count(r) }),
    (2, |r| Action::Edit { t: r.below(64) }),
    (5, |r| Action::MarkReady { t: r.below(64) }),
    (5, |r| Action::Queue { t: r.below(64) }),
    (1, |r| Action::Return { t: r.below(64) }),
    (1, |r| Action::Cancel { t: r.below(64) }),
    (1, |r| Action::Close { t: r.below(64) }),
    (1, |r| Action::Reopen { t: r.below(64) }),
    (2, |r| Action::Retry { t: r.below(64) }),
    (2, |r| Action::Relate {
        t: r.below(64),
        u: r.below(64),
    }),
    (1, |r| Action::Unrelate {
        t: r.below(64),
        u: r.below(64),
    }),
    (2, |r| Action::Invoke {
        t: r.below(64),
        how: r.below(64),
    }),
    (1, |_| Action::Offers),
    (1, |r| Action::Accept { o: r.below(64) }),
    (1, |r| Action::Reject { o: r.below(64) }),
    (8, |_| Action::Route),
    (12, |_| Action::Sweep),
    (4, |r| Action::Advance {
        ms: 1_000 * (1 + r.below(16)),
    }),
    (16, |r| Action::Claim { p: r.below(64) }),
    (3, |r| Action::Heartbeat { p: r.below(64) }),
    (22, |r| Action::Finish {
        p: r.below(64),
        how: r.below(64),
    }),
    (2, |r| Action::Fail { p: r.below(64) }),
    (1, |r| Action::PodCrash { p: r.below(64) }),
    (1, |r| Action::Pause { p: r.below(64) }),
    (2, |r| Action::Resume { p: r.below(64) }),
    (2, |r| Action::Duplicate { p: r.below(64) }),
    (1, |r| Action::OldFence { p: r.below(64) }),
    (2, |r| Action::TargetCommit {
        conflict: r.below(2) == 0,
    }),
    (1, |_| Action::Dirty),
    (2, |_| Action::Clean),
    (1, |_| Action::RaceMerge),
    (2, |_| Action::Restart),
    (3, |r| Action::Crash {
        nth: 1 + r.below(8),
    }),
    (2, |r| Action::RateLimit { p: r.below(64) }),
    (1, |r| Action::Grant { t: r.below(64) }),
    (2, |r| Action::CreatePr { deps: dep_count(r) }),
    (2, |_| Action::ForgePass),
    (2, |r| Action::Ci {
        p: r.below(64),
        how: r.below(64),
    }),
    (1, |r| Action::PersonPush { p: r.below(64) }),
    (1, |r| Action::PrReview {
        p: r.below(64),
        how: r.below(64),
    }),
    (1, |r| Action::Webhook { how: r.below(64) }),
    (1, |r| Action::ForgeFault { how: r.below(64) }),
    (2, |r| Action::Ask { p: r.below(64) }),
    (2, |r| Action::Answer { t: r.below(64) }),
    (6, |r| Action::RemoteClaim { p: r.below(64) }),
    (5, |r| Action::RemotePush {
        p: r.below(64),
        how: r.below(64),
    }),
    (2, |r| Action::RemoteLand { p: r.below(64) }),
    (5, |r| Action::RemoteReport {
        p: r.below(64),
        how: r.below(64),
    }),
    (2, |r| Action::RemoteResume { p: r.below(64) }),
];

fn dep_count(r: &mut Rng) -> u32 {
    match r.below(10) {
        0..=5 => 0,
        6..=8 => 1,
        _ => 2,
    }
}

/// The schedule of `steps` actions that `seed` stands for.
pub fn generate(seed: u64, steps: usize) -> Vec<Action> {
    let mut rng = Rng::new(seed);
    let total: u32 = WEIGHTS.iter().map(|(w, _)| w).sum();
    (0..steps)
        .map(|_| {
            let mut pick = rng.below(total);
            for (w, make) in WEIGHTS {
                if pick < *w {
                    return make(&mut rng);
                }
                pick -= w;
            }
            unreachable!("the pick is below the total of the weights")
        })
        .collect()
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Action::*;
        match *self {
            Create { deps } => write!(f, "create {deps}"),
            Edit { t } => write!(f, "edit {t}"),
            MarkReady { t } => write!(f, "ready {t}"),
            Queue { t } => write!(f, "queue {t}"),
            Return { t } => write!(f, "return {t}"),
            Cancel { t } => write!(f, "cancel {t}"),
            Close { t } => write!(f, "close {t}"),
            Reopen { t } => write!(f, "reopen {t}"),
            Retry { t } => write!(f, "retry {t}"),
            Relate { t, u } => write!(f, "relate {t} {u}"),
            Unrelate { t, u } => write!(f, "unrelate {t} {u}"),
            Invoke { t, how } => write!(f, "invoke {t} {how}"),
            Offers => write!(f, "offers"),
            Accept { o } => write!(f, "accept {o}"),
            Reject { o } => write!(f, "reject {o}"),
            Route => write!(f, "route"),
            Sweep => write!(f, "sweep"),
            Advance { ms } => write!(f, "advance {ms}"),
            Claim { p } => write!(f, "claim {p}"),
            Heartbeat { p } => write!(f, "heartbeat {p}"),
            Finish { p, how } => write!(f, "finish {p} {how}"),
            Fail { p } => write!(f, "fail {p}"),
            PodCrash { p } => write!(f, "pod-crash {p}"),
            Pause { p } => write!(f, "pause {p}"),
            Resume { p } => write!(f, "resume {p}"),
            Duplicate { p } => write!(f, "duplicate {p}"),
            OldFence { p } => write!(f, "old-fence {p}"),
            TargetCommit { conflict } => {
                write!(
                    f,
                    "target-commit {}",
                    if conflict { "conflict" } else { "apart" }
                )
            }
            Dirty => write!(f, "dirty"),
            Clean => write!(f, "clean"),
            RaceMerge => write!(f, "race-merge"),
            Restart => write!(f, "restart"),
            Crash { nth } => write!(f, "crash {nth}"),
            RateLimit { p } => write!(f, "rate-limit {p}"),
            Grant { t } => write!(f, "grant {t}"),
            CreatePr { deps } => write!(f, "create-pr {deps}"),
            ForgePass => write!(f, "forge"),
            Ci { p, how } => write!(f, "ci {p} {how}"),
            PersonPush { p } => write!(f, "person-push {p}"),
            PrReview { p, how } => write!(f, "pr-review {p} {how}"),
            Webhook { how } => write!(f, "webhook {how}"),
            ForgeFault { how } => write!(f, "forge-fault {how}"),
            Ask { p } => write!(f, "ask {p}"),
            Answer { t } => write!(f, "answer {t}"),
            RemoteClaim { p } => write!(f, "remote-claim {p}"),
            RemotePush { p, how } => write!(f, "remote-push {p} {how}"),
            RemoteLand { p } => write!(f, "remote-land {p}"),
            RemoteReport { p, how } => write!(f, "remote-report {p} {how}"),
            RemoteResume { p } => write!(f, "remote-resume {p}"),
        }
    }
}

impl FromStr for Action {
    type Err = String;

    fn from_str(line: &str) -> Result<Action, String> {
        use Action::*;
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u32, String> {
            words
                .get(i)
                .ok_or_else(|| format!("`{line}`: a number is missing"))?
                .parse()
                .map_err(|_| format!("`{line}`: `{}` is not a number", words[i]))
        };
        let (Some(verb), arity) = (words.first().copied(), words.len() - 1) else {
            return Err("an empty line is not an action".into());
        };
        let want = match verb {
            "route" | "sweep" | "dirty" | "clean" | "race-merge" | "restart" | "offers"
            | "forge" => 0,
            "relate" | "unrelate" | "finish" | "invoke" | "ci" | "pr-review" | "remote-push"
            | "remote-report" => 2,
            _ => 1,
        };
        if arity != want {
            return Err(format!("`{line}`: `{verb}` takes {want} argument(s)"));
        }
        Ok(match verb {
            "create" => Create { deps: num(1)? },
            "edit" => Edit { t: num(1)? },
            "ready" => MarkReady { t: num(1)? },
            "queue" => Queue { t: num(1)? },
            "return" => Return { t: num(1)? },
            "cancel" => Cancel { t: num(1)? },
            "close" => Close { t: num(1)? },
            "reopen" => Reopen { t: num(1)? },
            "retry" => Retry { t: num(1)? },
            "relate" => Relate {
                t: num(1)?,
                u: num(2)?,
            },
            "unrelate" => Unrelate {
                t: num(1)?,
                u: num(2)?,
            },
            "invoke" => Invoke {
                t: num(1)?,
                how: num(2)?,
            },
            "offers" => Offers,
            "accept" => Accept { o: num(1)? },
            "reject" => Reject { o: num(1)? },
            "route" => Route,
            "sweep" => Sweep,
            "advance" => Advance { ms: num(1)? },
            "claim" => Claim { p: num(1)? },
            "heartbeat" => Heartbeat { p: num(1)? },
            "finish" => Finish {
                p: num(1)?,
                how: num(2)?,
            },
            "fail" => Fail { p: num(1)? },
            "pod-crash" => PodCrash { p: num(1)? },
            "pause" => Pause { p: num(1)? },
            "resume" => Resume { p: num(1)? },
            "duplicate" => Duplicate { p: num(1)? },
            "old-fence" => OldFence { p: num(1)? },
            "target-commit" => match words[1] {
                "conflict" => TargetCommit { conflict: true },
                "apart" => TargetCommit { conflict: false },
                w => return Err(format!("`{line}`: `{w}` is not `conflict` or `apart`")),
            },
            "dirty" => Dirty,
            "clean" => Clean,
            "race-merge" => RaceMerge,
            "restart" => Restart,
            "crash" => Crash { nth: num(1)? },
            "rate-limit" => RateLimit { p: num(1)? },
            "grant" => Grant { t: num(1)? },
            "create-pr" => CreatePr { deps: num(1)? },
            "forge" => ForgePass,
            "ci" => Ci {
                p: num(1)?,
                how: num(2)?,
            },
            "person-push" => PersonPush { p: num(1)? },
            "pr-review" => PrReview {
                p: num(1)?,
                how: num(2)?,
            },
            "webhook" => Webhook { how: num(1)? },
            "forge-fault" => ForgeFault { how: num(1)? },
            "ask" => Ask { p: num(1)? },
            "answer" => Answer { t: num(1)? },
            "remote-claim" => RemoteClaim { p: num(1)? },
            "remote-push" => RemotePush {
                p: num(1)?,
                how: num(2)?,
            },
            "remote-land" => RemoteLand { p: num(1)? },
            "remote-report" => RemoteReport {
                p: num(1)?,
                how: num(2)?,
            },
            "remote-resume" => RemoteResume { p: num(1)? },
            v => return Err(format!("`{v}` is not an action")),
        })
    }
}

/// Read a schedule in its text form: one action per line; blank lines and `#` comments skipped.
pub fn parse(text: &str) -> Result<Vec<Action>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::parse)
        .collect()
}

/// The text form of a schedule.
pub fn render(actions: &[Action]) -> String {
    actions.iter().map(|a| format!("{a}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_stands_for_one_schedule_and_its_text_reads_back() {
        let a = generate(7, 500);
        assert_eq!(a, generate(7, 500));
        assert_ne!(a, generate(8, 500));
        assert_eq!(parse(&render(&a)).unwrap(), a);
        // Every kind of action is drawn from some seed's schedule.
        let kinds: std::collections::BTreeSet<String> = (0..20)
            .flat_map(|s| generate(s, 500))
            .map(|a| a.to_string().split(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(kinds.len(), WEIGHTS.len(), "{kinds:?}");
    }

    #[test]
    fn bad_lines_are_refused_with_the_reason() {
        assert!(parse("queue").unwrap_err().contains("takes 1"));
        assert!(parse("fly 3").unwrap_err().contains("not an action"));
        assert!(parse("claim x").unwrap_err().contains("not a number"));
        assert_eq!(parse("# c\n\nroute\n").unwrap(), vec![Action::Route]);
    }
}
