//! `yoi worktree list | remove | prune`: the ticket worktrees yoi made, for people to see and
//! tidy. Works on the files and the repository only (no server, no database); `remove` takes the
//! workspace lock inside the store. The service never runs these, so it never forces a removal.

use yoi_engine::store::worktrees::{self, Target, WorktreeRow};

use crate::cli::WorktreeCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, cmd: WorktreeCommand) -> Result<(), CliError> {
    match cmd {
        WorktreeCommand::List { json } => list(env, json),
        WorktreeCommand::Remove {
            target,
            force,
            json,
        } => remove(env, &target, force, json),
        WorktreeCommand::Prune { json } => prune(env, json),
    }
}

fn list(env: &Env, json: bool) -> Result<(), CliError> {
    let ws = env.files_only("yoi worktree list")?;
    let rows = worktrees::list_worktrees(&ws)?;
    if json {
        output::json(&serde_json::json!({ "count": rows.len(), "worktrees": rows }));
    } else if rows.is_empty() {
        println!("no linked worktrees");
    } else {
        let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
        output::table(
            &["TICKET", "STATE", "BRANCH", "HEAD", "STATUS", "PATH"],
            &cells,
        );
    }
    Ok(())
}

fn cells(r: &WorktreeRow) -> Vec<String> {
    let (ticket, state) = match (&r.ticket, r.ticket_state) {
        (None, _) => ("-".to_string(), "-".to_string()),
        (Some(id), None) => (id.to_string(), "missing".to_string()),
        (Some(id), Some(s)) => (id.to_string(), s.to_string()),
    };
    let head = r.head.as_deref().map_or("-", |h| &h[..h.len().min(12)]);
    vec![
        ticket,
        state,
        r.branch.clone().unwrap_or_else(|| "(detached)".into()),
        head.to_string(),
        r.status.as_str().to_string(),
        r.path.clone(),
    ]
}

fn remove(env: &Env, target: &str, force: bool, json: bool) -> Result<(), CliError> {
    let ws = env.files_only("yoi worktree remove")?;
    let removed = worktrees::remove_worktree(&ws, &Target::parse(target, &env.start), force)?;
    if json {
        output::json(&removed);
        return Ok(());
    }
    match &removed.branch {
        Some(b) => println!("removed {}; branch {b} kept", removed.path),
        None => println!("removed {} (no branch was checked out)", removed.path),
    }
    for note in &removed.notes {
        println!("note: {note}");
    }
    Ok(())
}

fn prune(env: &Env, json: bool) -> Result<(), CliError> {
    let ws = env.files_only("yoi worktree prune")?;
    let pruned = worktrees::prune_worktrees(&ws)?;
    if json {
        output::json(&serde_json::json!({ "count": pruned.len(), "pruned": pruned }));
    } else if pruned.is_empty() {
        println!("nothing to prune: every worktree's folder exists");
    } else {
        for r in &pruned {
            match &r.branch {
                Some(b) => println!("pruned {} (its folder was gone); branch {b} kept", r.path),
                None => println!("pruned {} (its folder was gone)", r.path),
            }
        }
    }
    Ok(())
}
