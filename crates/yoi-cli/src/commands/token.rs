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
            expires,
            json,
        } => {
            let lifetime_ms = expires.as_deref().map(lifetime_ms).transpose()?;
            let scope: Scope = scope
                .parse()
                .map_err(|e: yoi_engine::store::StoreError| CliError::Usage(e.to_string()))?;
            let principal = principal.unwrap_or_else(|| name.clone());
            let (mut info, secret) = index.create_token(&name, &scope, &principal, now_ms)?;
            if let Some(ms) = lifetime_ms {
                let at = now_ms.saturating_add(ms);
                index.expire_token(&info.id, at)?;
                info.expires_ms = Some(at);
            }
            if json {
                output::json(&serde_json::json!({ "token": info, "secret": secret }));
            } else {
                println!("{secret}");
                let until = info
                    .expires_ms
                    .map(|e| format!(", expires {}", yoi_core::Timestamp::from_unix_millis(e)))
                    .unwrap_or_default();
                eprintln!(
                    "created token {} ({}, scope {}{until}); the secret above is shown only once",
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
                            } else if t.expired(now_ms) {
                                "expired".into()
                            } else if let Some(e) = t.expires_ms {
                                format!("live until {}", yoi_core::Timestamp::from_unix_millis(e))
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

/// `30d`, `12h`, `90m` or `45s` in milliseconds: a token's lifetime.
fn lifetime_ms(text: &str) -> Result<i64, CliError> {
    let t = text.trim();
    let unit = |u: char| -> Option<i64> {
        match u {
            'd' => Some(86_400_000),
            'h' => Some(3_600_000),
            'm' => Some(60_000),
            's' => Some(1_000),
            _ => None,
        }
    };
    let bad = || {
        CliError::Usage(format!(
            "--expires takes a positive number and a unit, such as 30d, 12h or 90m; got `{text}`"
        ))
    };
    let last = t.chars().last().ok_or_else(bad)?;
    let per = unit(last).ok_or_else(bad)?;
    let n: i64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
    if n <= 0 {
        return Err(bad());
    }
    n.checked_mul(per).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::lifetime_ms;

    #[test]
    fn lifetimes_read_days_hours_minutes_and_seconds() {
        assert_eq!(lifetime_ms("30d").unwrap(), 30 * 86_400_000);
        assert_eq!(lifetime_ms("12h").unwrap(), 12 * 3_600_000);
        assert_eq!(lifetime_ms(" 90m ").unwrap(), 90 * 60_000);
        assert_eq!(lifetime_ms("2s").unwrap(), 2_000);
        for bad in ["", "d", "0d", "-1h", "3w", "1.5h", "99999999999999999d"] {
            assert!(lifetime_ms(bad).is_err(), "{bad}");
        }
    }
}
