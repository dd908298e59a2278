//! `yoi token create | revoke | list`: tokens live in the workspace database.

use yoi_engine::db::Scope;

use crate::cli::TokenCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, cmd: TokenCommand) -> Result<(), CliError> {
    let (_ws, index) = env.workspace_with_index("yoi token")?;
    let now_ms = now().unix_millis();
    match cmd {
        TokenCommand::Create {
            name,
            scope,
            principal,
            json,
        } => {
            let scope: Scope = scope
                .parse()
                .map_err(|e: yoi_engine::store::StoreError| CliError::Usage(e.to_string()))?;
            let principal = principal.unwrap_or_else(|| name.clone());
            let (info, secret) = index.create_token(&name, &scope, &principal, now_ms)?;
            if json {
                output::json(&serde_json::json!({ "token": info, "secret": secret }));
            } else {
                println!("{secret}");
                eprintln!(
                    "created token {} ({}, scope {}); the secret above is shown only once",
                    info.name, info.id, info.scope
                );
            }
        }
        TokenCommand::Revoke { name } => {
            if !index.revoke_token(&name, now_ms)? {
                return Err(CliError::Refused(format!(
                    "no live token named or with id `{name}`"
                )));
            }
            println!("revoked {name}");
        }
        TokenCommand::List { json } => {
            let tokens = index.list_tokens()?;
            if json {
                output::json(&serde_json::json!({ "count": tokens.len(), "tokens": tokens }));
            } else {
                let rows: Vec<Vec<String>> = tokens
                    .iter()
                    .map(|t| {
                        vec![
                            t.id.clone(),
                            t.name.clone(),
                            t.scope.to_string(),
                            t.principal.clone(),
                            if t.revoked_ms.is_some() {
                                "revoked".into()
                            } else {
                                "live".into()
                            },
                        ]
                    })
                    .collect();
                output::table(&["ID", "NAME", "SCOPE", "PRINCIPAL", "STATUS"], &rows);
            }
        }
    }
    Ok(())
}
