//! `yoi forge status TICKET [--json]`: a ticket's pull request — link, head, the checks table,
//! reviews, the merge and why the gate is or is not open — from the thread and the check
//! results the database keeps (`yoi_engine::assignments::pr::status`, what
//! `GET /api/v1/tickets/{id}/forge` answers); it asks nothing of the forge.
//!
//! `yoi forge sync [--json]`: one pass of the forge driver now — labelled issues in as tickets,
//! then every pending pull request one step further — with the same function `yoi serve`'s
//! driver runs every `[forge] poll_secs` (`yoi_server::forge::sync`). `yoi forge import
//! [--json]`: the import alone. With a server running for the workspace the pass runs there
//! (`POST /api/v1/forge/sync`, with the credential it read at start, in its turn for writes);
//! otherwise here, reading the credential as the server does (the token file, or
//! `YOI_GITHUB_TOKEN`), never printed, as with `--local`. Either way the answer prints the same. (A pass in this
//! process beside a server would be safe too — every step is idempotent: facts under operation
//! ids, compare-and-swap on assignments, pushes with a lease — but it is the server's to run.)

use crate::cli::ForgeCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;
use crate::remote::Remote;
use yoi_engine::assignments::pr::{blocker_text, status, Badge};

pub fn run(env: &Env, cmd: ForgeCommand) -> Result<(), CliError> {
    match cmd {
        ForgeCommand::Status { ticket, json } => show(env, &ticket, json),
        ForgeCommand::Sync { json } => sync(env, true, json),
        ForgeCommand::Import { json } => sync(env, false, json),
    }
}

fn show(env: &Env, ticket: &str, json: bool) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi forge status")?;
    let st = status(&ws, &index, ticket)?;
    if json {
        output::json(&st);
        return Ok(());
    }
    if !st.configured {
        println!("no [forge] section in .yoi/workspace.toml (docs/forge.md)");
    }
    let Some(number) = st.number else {
        println!("{}: no pull request yet", st.ticket);
        return Ok(());
    };
    let badge = match st.badge {
        Badge::None => String::new(),
        b => format!(" · {}", b.label()),
    };
    println!(
        "{}: pull request #{number} ({}){badge}",
        st.ticket, st.state
    );
    if let Some(url) = &st.url {
        println!("  {url}");
    }
    if let Some(head) = &st.remote_head {
        println!("  head {head}");
    }
    if let Some(sha) = &st.merged_sha {
        let method = st.merge_method.as_deref().unwrap_or("merge");
        println!("  merged as {sha} ({method})");
    }
    if !st.checks.is_empty() {
        println!();
        let rows: Vec<Vec<String>> = st
            .checks
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.conclusion.as_str().to_string(),
                    c.sha.chars().take(12).collect(),
                    c.url.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        output::table(&["CHECK", "CONCLUSION", "SHA", "LINK"], &rows);
    }
    if !st.reviews.is_empty() {
        println!();
        let rows: Vec<Vec<String>> = st
            .reviews
            .iter()
            .map(|r| {
                vec![
                    r.user.clone(),
                    r.state.clone(),
                    r.commit.chars().take(12).collect(),
                ]
            })
            .collect();
        output::table(&["REVIEWER", "STATE", "COMMIT"], &rows);
    }
    if let Some(g) = &st.gate {
        println!();
        if g.open {
            println!("the gate is open for {}", g.head);
        } else {
            println!("the gate is closed for {}:", g.head);
            for b in &g.blockers {
                println!("  - {}", blocker_text(b));
            }
        }
        for n in &g.notes {
            println!("  note: {n}");
        }
    }
    Ok(())
}

fn sync(env: &Env, walk: bool, json: bool) -> Result<(), CliError> {
    let command = if walk {
        "yoi forge sync"
    } else {
        "yoi forge import"
    };
    let ws = env.files_only(command)?;
    let server = match env.local {
        true => None,
        false => Remote::find(&ws.local_dir(), None)?,
    };
    let out = match server {
        Some(remote) => remote.forge_sync(!walk)?,
        None => {
            let (ws, index) = env.workspace_with_index(command)?;
            let rt = yoi_server::forge::from_workspace(&ws)
                .map_err(|e| CliError::Refused(format!("[forge]: {e}")))?;
            yoi_server::forge::sync(&ws, &index, rt.as_deref(), !walk, now())
                .map_err(|e| CliError::Refused(e.to_string()))?
        }
    };
    if json {
        output::json(&out);
        return Ok(());
    }
    for (n, id) in &out.imported.created {
        println!("imported issue #{n} as {id}");
    }
    for (n, id) in &out.imported.edited {
        println!("issue #{n} was edited: its text is recorded in {id}'s thread (the brief is not changed)");
    }
    for (n, who) in &out.imported.refused {
        println!("issue #{n}: labelled by {who}, who has no write access; not imported");
    }
    if let Some(p) = &out.pass {
        let lines = [
            ("pushed", &p.pushed),
            ("opened a pull request for", &p.opened),
            ("merged", &p.merged),
            ("sent back for a round", &p.sent_back),
        ];
        for (what, ids) in lines {
            for id in ids {
                println!("{what} {id}");
            }
        }
        for (id, g) in &p.waiting {
            let why: Vec<String> = g.blockers.iter().map(blocker_text).collect();
            if g.open {
                println!("{id}: the gate is open for {}", g.head);
            } else {
                println!("{id}: waiting: {}", why.join("; "));
            }
        }
        for (id, e) in &p.retried {
            println!("{id}: tried again next pass: {e}");
        }
    }
    if out.imported.created.is_empty()
        && out.imported.edited.is_empty()
        && out.imported.refused.is_empty()
        && out.pass.as_ref().is_none_or(|p| *p == Default::default())
    {
        println!("nothing to do");
    }
    Ok(())
}
