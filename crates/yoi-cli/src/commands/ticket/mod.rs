//! `yoi ticket …`: dispatch to the read, write, state, relation, plan and doctor commands.

mod doctor;
mod plan;
mod read;
mod relation;
mod route;
mod state;
mod write;

pub use doctor::run as doctor;

use crate::cli::TicketCommand;
use crate::context::Env;
use crate::error::CliError;

pub fn run(env: &Env, cmd: TicketCommand) -> Result<(), CliError> {
    match cmd {
        TicketCommand::Create(a) => write::create(env, &a),
        TicketCommand::List(a) => read::list(env, &a),
        TicketCommand::Show(a) => read::show(env, &a.id, a.json),
        TicketCommand::Blockers(a) => read::blockers(env, &a.id, a.json),
        TicketCommand::Edit(a) => write::edit(env, &a),
        TicketCommand::Comment(a) => write::comment(env, &a),
        TicketCommand::State(a) => state::state(env, &a),
        TicketCommand::MarkReady(a) => state::mark_ready(env, &a.id, a.json),
        TicketCommand::Queue(a) => state::queue(env, &a.id, a.json),
        TicketCommand::ReturnToPlanning(a) => {
            state::return_to_planning(env, &a.id, &a.reason, a.json)
        }
        TicketCommand::Close(a) => state::close(env, &a.id, &a.resolution, a.json),
        TicketCommand::Cancel(a) => state::cancel(env, &a.id, &a.resolution, a.json),
        TicketCommand::Reopen(a) => state::reopen(env, &a.id, &a.reason, a.json),
        TicketCommand::Relation(c) => relation::run(env, c),
        TicketCommand::Plan(c) => plan::run(env, c),
        TicketCommand::Doctor(a) => doctor::run(env, &a),
        TicketCommand::Route(a) => route::route(env, &a),
        TicketCommand::Retry(a) => route::retry(env, &a),
        TicketCommand::Answer(a) => route::answer(env, &a),
        TicketCommand::Cost(a) => read::cost(env, &a.id, a.json),
        TicketCommand::Budget(a) => crate::commands::spend::budget(env, &a),
    }
}
