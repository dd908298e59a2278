//! The command line, as clap types. Spellings here are a contract (see docs/cli.md).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "yoi",
    version,
    about = "Local-first, git-native orchestration for AI coding agents"
)]
pub struct Cli {
    /// Run as if yoi was started in DIR.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Operation id for a mutation: replaying it returns the first result without writing.
    #[arg(long = "op-id", global = true, value_name = "ID")]
    pub op_id: Option<String>,
    /// Work on the files directly even when a server is running for this workspace (by
    /// default ticket mutations then go through its API).
    #[arg(long, global = true)]
    pub local: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create .yoi/ in this git repository (idempotent).
    Init(JsonFlag),
    /// Work with tickets.
    #[command(subcommand)]
    Ticket(TicketCommand),
    /// Check the workspace (same as `yoi ticket doctor`).
    Doctor(DoctorArgs),
    /// Bring the database index in line with the ticket files.
    Reindex(ReindexArgs),
    /// Where the money went: spend grouped by ticket, day, agent or model, with the limits in
    /// force and the agents paused.
    Cost(CostArgs),
    /// The workspace's database: move it to another one.
    #[command(subcommand)]
    Db(DbCommand),
    /// Serve the HTTP API for this workspace.
    Serve(ServeArgs),
    /// Print a one-time login link to the running server's web dashboard, and open it in a
    /// browser when one is available.
    Dashboard(DashboardArgs),
    /// API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Agent Skills: catalog, lint, activation, resources, proposals.
    #[command(subcommand)]
    Skill(SkillCommand),
    /// Flows: the step chains tickets run (list, show, lint).
    #[command(subcommand)]
    Flow(FlowCommand),
    /// Workflows: procedures people write in .yoi/workflow/ and invoke on a ticket.
    #[command(subcommand)]
    Workflow(WorkflowCommand),
    /// The ticket worktrees yoi made: list them, remove one, prune records of gone ones.
    #[command(subcommand)]
    Worktree(WorktreeCommand),
    /// Role pods: run one, list them.
    #[command(subcommand)]
    Pod(PodCommand),
    /// Assignments: every attempt of every step pods were given.
    #[command(subcommand)]
    Assignment(AssignmentCommand),
    /// Agent profiles: which command-line agents a pod can run.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Everything that waits on a person: open circuits, used-up fix rounds, deferred merges,
    /// blocked agents, tickets returned to planning, skill proposals.
    Inbox(JsonFlag),
    /// Notifications of inbox entries: the delivery log, and a test message on a channel.
    #[command(subcommand)]
    Notify(NotifyCommand),
    /// Pull requests on GitHub (docs/forge.md): a ticket's pull request, a pass now, issues in.
    #[command(subcommand)]
    Forge(ForgeCommand),
    /// An MCP server on stdio (docs/mcp.md): each JSON-RPC line from stdin goes to the running
    /// server's `/mcp`, each answer to stdout.
    Mcp(McpArgs),
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// A file holding the token (an agent's `yoia_…` claim token or an API token). Without it
    /// the YOI_TOKEN variable, else the workspace's admin token (.yoi/local/admin.token).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// The server's URL (default: the workspace's running server, from .yoi/local/server.json).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ForgeCommand {
    /// A ticket's pull request: link, head, checks, reviews, the merge, why the gate is closed.
    Status {
        ticket: String,
        #[arg(long)]
        json: bool,
    },
    /// One pass now: labelled issues in as tickets, every pending pull request a step further.
    Sync {
        #[arg(long)]
        json: bool,
    },
    /// Import the open issues carrying `[forge] import_label` that a collaborator labelled.
    Import {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Every delivery (newest first) and each attempt with the receiver's answer.
    Log {
        /// Only this `[[notify]]` channel.
        #[arg(long)]
        channel: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Send a sample message on one `[[notify]]` channel and print the receiver's answer.
    Test { name: String },
}

#[derive(Debug, Subcommand)]
pub enum FlowCommand {
    /// The flows tickets may run: the built-in one and every valid flow file.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One flow's steps, roles, outputs, timeouts and failure policies.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Check the flow files (or FILE); exits 1 when any has a problem.
    Lint {
        file: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// The workflows people and agents may invoke, and the files that are skipped.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One workflow: its flags, role, requires and body.
    Show {
        slug: String,
        #[arg(long)]
        json: bool,
    },
    /// Check the workflow files (or FILE); exits 1 when any has an error.
    Lint {
        file: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Invoke a workflow on a ticket: the same as commenting `/SLUG ARGS` on it.
    Run {
        slug: String,
        #[arg(long)]
        ticket: String,
        /// Words for the workflow, after `/SLUG` on the comment's first line.
        args: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// The offers yoi made from the tickets' history; `--detect` looks at the history now.
    Offers {
        #[arg(long)]
        detect: bool,
        #[arg(long)]
        json: bool,
    },
    /// One offer: why, the tickets it came from, and the diff it would make.
    Offer {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Accept an offer: its workflow or flow file is written (a person only).
    Accept {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Reject an offer with the reason; what it answered is never offered again.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PodCommand {
    /// Run a pod: register, claim the role's work, run the agent, report; until SIGTERM.
    Run(Box<PodRunArgs>),
    /// Pods that are running or stopped within the last hour.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Whether a pod is ready, from the status file it writes (`yoi pod run --status-file`):
    /// exit 0 when it runs, is registered and the server answered it within the age allowed;
    /// 1, saying why, when not. For a readiness probe.
    Status {
        /// The file `yoi pod run --status-file` writes.
        #[arg(long, value_name = "PATH")]
        file: std::path::PathBuf,
        /// How old the status, and the server's last answer, may be (`60s`, `2m`, seconds).
        #[arg(long, value_name = "AGE", default_value = "60s")]
        max_age: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct PodRunArgs {
    /// The role whose work the pod claims; the token's scope must be `pod:ROLE`.
    #[arg(long)]
    pub role: String,
    /// The server (`http://127.0.0.1:7311`, `https://HOST:7311`); default: the workspace's
    /// running server.
    #[arg(long)]
    pub server: Option<String>,
    /// Trust the `https://` server's certificate if a CA in this PEM file issued it (or it is
    /// one of them); default: the web's roots.
    #[arg(long, value_name = "FILE", conflicts_with = "pin")]
    pub ca: Option<std::path::PathBuf>,
    /// Trust exactly the certificate with this fingerprint, whatever names it carries
    /// (`sha256:HEX`, as `yoi serve --tls-self-signed` prints it).
    #[arg(long, value_name = "sha256:HEX")]
    pub pin: Option<String>,
    /// Work without the server's disk: keep a cache of the repository in DIR, fetch each
    /// claim's commit over the server's git, and push a coder's result to its attempt ref (git
    /// trusts an `https://` server as the pod does: `--ca`, or `--pin` as the key of the
    /// certificate it names).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// A file holding the pod token (keep it 0600). Without it or `--token-fd`, the YOI_TOKEN
    /// environment variable; never on the command line, where every process could read it.
    #[arg(long, conflicts_with = "token_fd")]
    pub token_file: Option<std::path::PathBuf>,
    /// An inherited descriptor to read the pod token from (how `yoi serve` starts its pods).
    #[arg(long)]
    pub token_fd: Option<i32>,
    /// The agent profile to run; default: `[pods.agent] ROLE` of the workspace.
    #[arg(long)]
    pub agent: Option<String>,
    /// The pod's name (a nonce is added); default: `ROLE-<host>-<pid>`.
    #[arg(long)]
    pub name: Option<String>,
    /// Run one assignment (or wait once for one) and exit.
    #[arg(long)]
    pub once: bool,
    /// How long each claim waits for work, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub wait_ms: u64,
    /// Keep the pod's own status in PATH (JSON: registered, idle or working, when the server
    /// last answered), rewritten every few seconds; `yoi pod status --file PATH` checks it.
    #[arg(long, value_name = "PATH")]
    pub status_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AssignmentCommand {
    /// Assignments, newest first.
    List {
        /// Only this ticket's (id or unique suffix).
        #[arg(long)]
        ticket: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// The profiles: built in, and the workspace's `[agents.NAME]`.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Check a profile: valid, its program found, its version printed.
    Check {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// For people only: the service never runs these, and never forces a removal.
#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Every linked worktree: its ticket and state, branch, head, status and path.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a linked worktree (its folder and git's record); the branch is kept.
    Remove {
        /// A ticket id or suffix (its accepted worktree, else the one named after it), or a
        /// worktree's path.
        #[arg(value_name = "TICKET_OR_PATH")]
        target: String,
        /// Also remove a worktree with uncommitted changes (they are lost) or the worktree of
        /// an in-progress ticket.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
    /// Drop git's records of worktrees whose folder is gone.
    Prune {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// The catalog: name, description, source, validity.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One skill's catalog entry and diagnostics (not its body: use `activate`).
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Lint a skills folder (each subfolder a skill), or the workspace catalog.
    Lint {
        root: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Record an activation and print the skill's body.
    Activate {
        name: String,
        #[arg(long)]
        ticket: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Print one bundled file of a skill.
    Resource { name: String, path: String },
    /// Propose a new or changed skill from a folder (waits for a human to approve).
    Propose {
        folder: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Pending and decided proposals.
    Proposals {
        #[arg(long)]
        json: bool,
    },
    /// Approve a proposal: writes the skill into .yoi/skills/.
    Approve { id: String },
    /// Reject a proposal.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Only print the link; do not try to open a browser.
    #[arg(long)]
    pub no_open: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default: `[server] listen` in workspace.toml, 127.0.0.1:7311).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Log as JSON lines instead of human-readable text.
    #[arg(long)]
    pub log_json: bool,
    /// Serve HTTPS with a certificate made for this host's names (kept in .yoi/local/tls/ and
    /// reused); prints its SHA-256 fingerprint for `yoi pod run --pin`. `[server] tls_cert`
    /// serves your own instead.
    #[arg(long)]
    pub tls_self_signed: bool,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; prints its secret once.
    Create {
        #[arg(long)]
        name: String,
        /// human, read, or pod:ROLE (coder, verifier, reviewer, orchestrator, intake).
        #[arg(long)]
        scope: String,
        /// Name recorded as the author of what the token does (default: the token name).
        #[arg(long)]
        principal: Option<String>,
        /// Refuse the token after this long: `30d`, `12h`, `90m` (default: never).
        #[arg(long)]
        expires: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by name or id.
    Revoke { name: String },
    /// List tokens (never their secrets).
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Copy every table (tokens, pods, assignments, the index, the outbox, …) into the database
    /// at URL, verify each by its rows and checksum, and only then make this clone use it
    /// (written to .yoi/local/database.url). Run it again after an interruption.
    Copy {
        /// The database to move to: `postgres://…` or `sqlite://…`.
        #[arg(long)]
        to: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Drop every index row and re-read every ticket (the outbox and deliveries are kept).
    #[arg(long)]
    pub full: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TicketCommand {
    /// Create a ticket; prints its id.
    Create(CreateArgs),
    /// List tickets.
    List(ListArgs),
    /// Show one ticket: item, brief, relations, thread.
    Show(IdArgs),
    /// Change a ticket's title or body.
    Edit(EditArgs),
    /// Add an event to a ticket's thread.
    Comment(CommentArgs),
    /// Move a ticket to STATE through the operation that owns that edge.
    State(StateArgs),
    /// planning -> ready (checks the brief).
    MarkReady(IdJson),
    /// ready -> queued (humans only).
    Queue(IdJson),
    /// ready/queued -> planning, naming the missing decision.
    ReturnToPlanning(ReasonArgs),
    /// done -> closed with a resolution.
    Close(ResolutionArgs),
    /// planning/ready/queued/inprogress -> closed with a resolution.
    Cancel(ResolutionArgs),
    /// closed -> planning with a reason.
    Reopen(ReasonArgs),
    /// Relations between tickets.
    #[command(subcommand)]
    Relation(RelationCommand),
    /// Open blockers of a ticket and whether it can be queued.
    Blockers(IdArgs),
    /// Orchestration plan records.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Check ticket files, relations, threads and plan records.
    Doctor(DoctorArgs),
    /// What the router would decide for a ticket now, and why (writes nothing).
    Route(RouteArgs),
    /// Close a ticket's open circuit so it is tried again: routing for a queued ticket, its
    /// stalled step for one in progress (humans only).
    Retry(RetryArgs),
    /// What a ticket's attempts cost: wall time, tokens and money, per attempt and in total.
    Cost(IdArgs),
    /// A ticket's budget: what it spent of its limit, and whether its steps wait over it; with
    /// `--add`, add to it (humans only), letting a held ticket go on.
    Budget(BudgetArgs),
    /// Answer the question an agent asked (humans only): the step that asked is handed out
    /// again, its prompt beginning with the question and this answer.
    Answer(AnswerArgs),
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    pub id: String,
    /// The answer (or give it with `--message`).
    #[arg(conflicts_with = "message", required_unless_present = "message")]
    pub text: Option<String>,
    /// The answer.
    #[arg(long, short = 'm')]
    pub message: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BudgetArgs {
    pub id: String,
    /// USD to add to the ticket's budget.
    #[arg(long, value_name = "USD")]
    pub add: Option<f64>,
    /// Tokens to add to the ticket's budget.
    #[arg(long, value_name = "N")]
    pub add_tokens: Option<u64>,
    /// Why; written into the `budget` event.
    #[arg(long)]
    pub note: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// Group by ticket, day (UTC), agent (profile) or model.
    #[arg(long, value_enum, default_value = "day")]
    pub by: CostBy,
    /// Only attempts finished on or after this UTC day (YYYY-MM-DD; default: 30 days ago).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CostBy {
    Ticket,
    Day,
    Agent,
    Model,
}

#[derive(Debug, Args)]
pub struct RouteArgs {
    pub id: String,
    /// Show the decision without writing it (routing itself runs inside `yoi serve`).
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    pub id: String,
    /// What was fixed; written into the retry event.
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[arg(long)]
    pub title: String,
    /// Read the body from a file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<String>,
    /// A ticket this one depends on (repeatable).
    #[arg(long = "depends-on", value_name = "ID")]
    pub depends_on: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// States to show: a comma list, `active` (default: all but closed) or `all`.
    #[arg(long, value_name = "S[,S…]|active|all")]
    pub state: Option<String>,
    /// Only ready or queued tickets with no open blocker.
    #[arg(long)]
    pub ready: bool,
    /// Only tickets with open blockers, with the reasons.
    #[arg(long)]
    pub blocked: bool,
    /// Only tickets whose title or body contains every word (case-insensitive).
    #[arg(long, value_name = "WORDS")]
    pub search: Option<String>,
    /// At most N tickets (one page; default 100); `--json` then carries the cursor in `next`.
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub limit: Option<usize>,
    /// Every matching ticket, not only the first page: written as the pages arrive.
    #[arg(long)]
    pub all: bool,
    /// Start after this ticket id (the `next` cursor of the previous page).
    #[arg(long, value_name = "ID")]
    pub after: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IdJson {
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    pub id: String,
    #[arg(long)]
    pub title: Option<String>,
    /// Read the new body from a file, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("text").required(true).args(["message", "file"])))]
pub struct CommentArgs {
    pub id: String,
    #[arg(long, short)]
    pub message: Option<String>,
    /// Read the message from a file, or `-` for standard input.
    #[arg(long)]
    pub file: Option<String>,
    #[arg(long, default_value = "comment", value_parser = ["comment", "plan", "decision", "implementation_report"])]
    pub kind: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StateArgs {
    pub id: String,
    pub state: String,
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReasonArgs {
    pub id: String,
    #[arg(long)]
    pub reason: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResolutionArgs {
    pub id: String,
    #[arg(long)]
    pub resolution: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RelationCommand {
    /// Add `ID KIND TARGET` (kinds: depends_on, blocks, related, supersedes, duplicate_of).
    Add {
        id: String,
        kind: String,
        target: String,
        #[arg(long)]
        note: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove `ID KIND TARGET`.
    Rm {
        id: String,
        kind: String,
        target: String,
        #[arg(long)]
        json: bool,
    },
    /// List relations of one ticket, or of every ticket.
    List {
        id: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Append a record (kinds: before, after, blocked_by, blocks, conflicts_with,
    /// do_not_parallelize, waiting_capacity).
    Add {
        id: String,
        kind: String,
        #[arg(long)]
        related: Option<String>,
        #[arg(long)]
        note: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List a ticket's records.
    List {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[arg(long)]
    pub json: bool,
    /// Apply the repairs that cannot lose information.
    #[arg(long)]
    pub fix: bool,
    /// Read every ticket file, without doctor's cache of unchanged folders (neither read nor
    /// written).
    #[arg(long)]
    pub no_cache: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use yoi_engine::person_ops::{Needs, PersonOp};

    use super::Cli;

    /// Every operation of the engine's table has its `yoi` command, taking the ticket and,
    /// for a state operation, the text its row says it needs.
    #[test]
    fn every_person_operation_has_its_command() {
        let root = Cli::command();
        for op in PersonOp::ALL {
            let mut cmd = &root;
            for word in op.spec().cli {
                cmd = cmd.find_subcommand(word).unwrap_or_else(|| {
                    panic!("{op:?}: `yoi {}` is not a command", op.spec().cli.join(" "))
                });
            }
            let flag = match op.spec().needs {
                Needs::Reason => Some("reason"),
                Needs::Resolution => Some("resolution"),
                Needs::Nothing | Needs::Body => None,
            };
            if let Some(flag) = flag {
                assert!(
                    cmd.get_arguments().any(|a| a.get_long() == Some(flag)),
                    "{op:?}: `yoi {}` has no --{flag}",
                    op.spec().cli.join(" ")
                );
            }
        }
    }
}
