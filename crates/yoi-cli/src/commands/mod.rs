//! One module per command group; each command is a small function that calls one store
//! operation and prints its result.

mod agent;
mod assignment;
mod dashboard;
mod db;
mod flow;
mod forge;
mod inbox;
mod init;
mod mcp;
mod notify;
pub(crate) mod pod;
mod reindex;
mod serve;
mod skill;
pub(crate) mod spend;
mod ticket;
mod token;
mod workflow;
mod worktree;

use crate::cli::{Cli, Command};
use crate::context::Env;
use crate::error::CliError;

/// What a long-running process (the server, a pod) reports as it works, on stderr: `info` and
/// above unless `YOI_LOG` (an `EnvFilter`, such as `debug` or `yoi_pod=debug`) says otherwise;
/// colours only on a terminal, never into a log file.
fn log_to_stderr(json: bool) {
    use std::io::IsTerminal;
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("YOI_LOG").unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

pub fn run(cli: Cli) -> Result<(), CliError> {
    let mut env = Env::new(cli.dir, cli.op_id)?;
    env.local = cli.local;
    match cli.command {
        Command::Init(args) => init::run(&env, args.json),
        Command::Ticket(cmd) => ticket::run(&env, cmd),
        Command::Doctor(args) => ticket::doctor(&env, &args),
        Command::Reindex(args) => reindex::run(&env, &args),
        Command::Cost(args) => spend::cost(&env, &args),
        Command::Db(cmd) => db::run(&env, cmd),
        Command::Serve(args) => serve::run(&env, &args),
        Command::Dashboard(args) => dashboard::run(&env, &args),
        Command::Token(cmd) => token::run(&env, cmd),
        Command::Skill(cmd) => skill::run(&env, cmd),
        Command::Flow(cmd) => flow::run(&env, cmd),
        Command::Workflow(cmd) => workflow::run(&env, cmd),
        Command::Worktree(cmd) => worktree::run(&env, cmd),
        Command::Pod(cmd) => pod::run(&env, cmd),
        Command::Assignment(cmd) => assignment::run(&env, cmd),
        Command::Agent(cmd) => agent::run(&env, cmd),
        Command::Inbox(args) => inbox::run(&env, &args),
        Command::Notify(cmd) => notify::run(&env, cmd),
        Command::Forge(cmd) => forge::run(&env, cmd),
        Command::Mcp(args) => mcp::run(&env, &args),
    }
}
