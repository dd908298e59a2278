//! API tokens: a name, a scope (`human`, `pod:<role>`, `read`), the principal name recorded as
//! the author of what the token does, and the SHA-256 hash of the secret. The secret itself is
//! returned once, at creation, and never stored or logged.

use std::fmt;
use std::str::FromStr;
use yoi_core::Role;

use serde::Serialize;
use sqlx::Row;
use yoi_core::sha256_hex;

use super::{db_err, Db};
use yoi_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Scope {
    Human,
    /// A pod of one of [`Role::PODS`], stored as `pod:<role>`.
    Pod(Role),
    Read,
    /// A pod's agent, for one live claim (the assignment id). Never stored: the server derives
    /// it from its key, and it dies with the claim (`yoi_engine::assignments::agent_token`).
    Agent(String),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Human => f.write_str("human"),
            Scope::Pod(role) => write!(f, "pod:{role}"),
            Scope::Read => f.write_str("read"),
            Scope::Agent(id) => write!(f, "agent:{id}"),
        }
    }
}

impl From<Scope> for String {
    fn from(s: Scope) -> String {
        s.to_string()
    }
}

impl FromStr for Scope {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "human" => Ok(Scope::Human),
            "read" => Ok(Scope::Read),
            other => match other
                .strip_prefix("pod:")
                .and_then(Role::parse)
                .filter(|r| Role::PODS.contains(r))
            {
                Some(role) => Ok(Scope::Pod(role)),
                None => Err(StoreError::bad_input(
                    "scope",
                    format!("`{other}` is not a scope (expected human, read, or pod:coder|verifier|reviewer|orchestrator|intake)"),
                )),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub scope: Scope,
    pub principal: String,
    pub created_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_ms: Option<i64>,
    /// After this the token is refused as if revoked (`yoi token create --expires`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
}

impl TokenInfo {
    /// Whether the token has expired at `now_ms`.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expires_ms.is_some_and(|e| e <= now_ms)
    }
}

/// A new random secret: `yoi_` and 64 hex digits (256 bits).
pub fn new_secret() -> Result<String, StoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Database {
        reason: format!("no randomness for a token: {e}"),
    })?;
    Ok(format!(
        "yoi_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// What is stored for a secret.
pub fn hash_secret(secret: &str) -> String {
    sha256_hex(secret.as_bytes())
}

fn row_to_info(r: &sqlx::any::AnyRow) -> Result<TokenInfo, StoreError> {
    let scope: String = r.try_get(2).map_err(db_err)?;
    Ok(TokenInfo {
        id: r.try_get(0).map_err(db_err)?,
        name: r.try_get(1).map_err(db_err)?,
        scope: scope.parse()?,
        principal: r.try_get(3).map_err(db_err)?,
        created_ms: r.try_get(4).map_err(db_err)?,
        revoked_ms: r.try_get(5).map_err(db_err)?,
        expires_ms: r.try_get(6).map_err(db_err)?,
    })
}

const COLUMNS: &str = "id, name, scope, principal, created_ms, revoked_ms, expires_ms";

impl Db {
    /// Create a token; returns its record and the secret (shown once). Names starting with
    /// [`SESSION_PREFIX`] are the dashboard's sessions' ([`Db::create_session`]).
    pub async fn create_token(
        &self,
        name: &str,
        scope: &Scope,
        principal: &str,
        now_ms: i64,
    ) -> Result<(TokenInfo, String), StoreError> {
        if name.trim().starts_with(SESSION_PREFIX) {
            return Err(StoreError::bad_input(
                "name",
                format!("`{SESSION_PREFIX}…` names the dashboard's sessions, which are not API tokens; choose another name"),
            ));
        }
        self.insert_token(name, scope, principal, now_ms).await
    }

    /// A dashboard session for `principal`: a human token whose `name` starts with
    /// [`SESSION_PREFIX`], which the server accepts in the session cookie and never as an API
    /// bearer token.
    pub async fn create_session(
        &self,
        name: &str,
        principal: &str,
        now_ms: i64,
    ) -> Result<(TokenInfo, String), StoreError> {
        if !name.starts_with(SESSION_PREFIX) {
            return Err(StoreError::bad_input(
                "name",
                format!("a session's name starts with `{SESSION_PREFIX}`"),
            ));
        }
        self.insert_token(name, &Scope::Human, principal, now_ms)
            .await
    }

    async fn insert_token(
        &self,
        name: &str,
        scope: &Scope,
        principal: &str,
        now_ms: i64,
    ) -> Result<(TokenInfo, String), StoreError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 100 || name.contains(char::is_whitespace) {
            return Err(StoreError::bad_input(
                "name",
                "must be 1 to 100 characters without spaces",
            ));
        }
        yoi_store::error::Refusal::check_bidi("name", name)?;
        yoi_store::error::Refusal::check_bidi("principal", principal)?;
        if matches!(scope, Scope::Human | Scope::Read)
            && yoi_core::principal::is_reserved_author(principal)
        {
            return Err(StoreError::bad_input(
                "principal",
                format!("`{principal}` is a name yoi itself writes under; choose another"),
            ));
        }
        let secret = new_secret()?;
        let id = format!("tok_{}", &hash_secret(&secret)[..12]);
        let exists = sqlx::query("SELECT COUNT(*) FROM tokens WHERE name = $1")
            .bind(name)
            .fetch_one(self.pool())
            .await
            .and_then(|r| r.try_get::<i64, _>(0))
            .map_err(db_err)?;
        if exists > 0 {
            return Err(StoreError::bad_input(
                "name",
                format!("a token named `{name}` already exists"),
            ));
        }
        sqlx::query("INSERT INTO tokens (id, name, scope, principal, hash, created_ms) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(id.clone())
            .bind(name)
            .bind(scope.to_string())
            .bind(principal)
            .bind(hash_secret(&secret))
            .bind(now_ms)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        let info = TokenInfo {
            id,
            name: name.to_string(),
            scope: scope.clone(),
            principal: principal.to_string(),
            created_ms: now_ms,
            revoked_ms: None,
            expires_ms: None,
        };
        Ok((info, secret))
    }

    /// The live token whose secret hashes to `hash`.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenInfo>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS}, hash FROM tokens WHERE hash = $1 AND revoked_ms IS NULL"
        ))
        .bind(hash)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        match row {
            None => Ok(None),
            Some(r) => {
                let stored: String = r.try_get(7).map_err(db_err)?;
                // The lookup matched on the hash already; compare again in constant time so a
                // database that compares strings early-out never decides alone.
                let same: bool = subtle_eq(stored.as_bytes(), hash.as_bytes());
                if same {
                    Ok(Some(row_to_info(&r)?))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Make the live token `name_or_id` expire at `expires_ms`; whether there was one.
    pub async fn expire_token(
        &self,
        name_or_id: &str,
        expires_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE tokens SET expires_ms = $1 WHERE (name = $2 OR id = $2) AND revoked_ms IS NULL",
        )
        .bind(expires_ms)
        .bind(name_or_id)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        if done.rows_affected() > 0 {
            self.bump_own(&[crate::answer_epoch::TOKENS]).await?;
        }
        Ok(done.rows_affected() > 0)
    }

    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tokens ORDER BY created_ms, name"
        ))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(row_to_info).collect()
    }

    /// Revoke by name or id; returns whether a live token was revoked.
    pub async fn revoke_token(&self, name_or_id: &str, now_ms: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE tokens SET revoked_ms = $1 WHERE (name = $2 OR id = $2) AND revoked_ms IS NULL",
        )
        .bind(now_ms)
        .bind(name_or_id)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        if done.rows_affected() > 0 {
            self.bump_own(&[crate::answer_epoch::TOKENS]).await?;
        }
        Ok(done.rows_affected() > 0)
    }
}

/// What the name of every dashboard session's token starts with.
pub const SESSION_PREFIX: &str = "session-";

/// File holding the local human's admin token secret (mode 0600, under `.yoi/local/`).
pub const ADMIN_TOKEN_FILE: &str = "admin.token";

impl Db {
    /// Make sure `.yoi/local/admin.token` holds a live human token; create or replace it when
    /// the file is missing or its secret is unknown to this database. Returns whether a new
    /// token was written.
    pub async fn ensure_admin_token(
        &self,
        local_dir: &std::path::Path,
        principal: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let path = local_dir.join(ADMIN_TOKEN_FILE);
        if let Ok(secret) = std::fs::read_to_string(&path) {
            if self
                .token_by_hash(&hash_secret(secret.trim()))
                .await?
                .is_some()
            {
                return Ok(false);
            }
        }
        // Each clone has its own (clones of one workspace share its database and its tokens):
        // one clone's `yoi init` never takes another's token away.
        let name = admin_token_name(local_dir);
        let gone = sqlx::query("DELETE FROM tokens WHERE name = $1")
            .bind(&name)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        if gone.rows_affected() > 0 {
            self.bump_own(&[crate::answer_epoch::TOKENS]).await?;
        }
        let (_, secret) = self
            .create_token(&name, &Scope::Human, principal, now_ms)
            .await?;
        write_secret_file(&path, &secret)?;
        Ok(true)
    }
}

/// The name of the admin token of the clone whose `.yoi/local` is `local_dir`:
/// `admin@HOST:ROOT`.
pub fn admin_token_name(local_dir: &std::path::Path) -> String {
    let root = local_dir
        .parent()
        .and_then(|yoi| yoi.parent())
        .unwrap_or(local_dir);
    let me = crate::LeaseHolder::this_process(root);
    format!("admin@{}:{}", me.host, me.root)
}

/// Whether `name` is an admin token's: a clone's (`admin@…`), or the one of a workspace made
/// before clones had their own (`admin`).
pub fn is_admin_token_name(name: &str) -> bool {
    name == "admin" || name.starts_with("admin@")
}

/// Write a secret readable by its owner only (0600 from the first byte), atomically.
pub fn write_secret_file(path: &std::path::Path, secret: &str) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or_else(|| std::path::Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let tmp = dir.join(format!(".{ADMIN_TOKEN_FILE}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(secret.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| StoreError::io(path, e))
}

fn subtle_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_print() {
        for s in ["human", "read", "pod:coder", "pod:reviewer"] {
            assert_eq!(s.parse::<Scope>().unwrap().to_string(), s);
        }
        assert!("pod:janitor".parse::<Scope>().is_err());
        assert!("admin".parse::<Scope>().is_err());
    }

    #[test]
    fn secrets_are_long_random_and_hashed() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 68);
        assert_eq!(hash_secret(&a).len(), 64);
        assert!(
            subtle_eq(b"abc", b"abc") && !subtle_eq(b"abc", b"abd") && !subtle_eq(b"ab", b"abc")
        );
    }
}
