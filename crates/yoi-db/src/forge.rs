//! The forge's runtime facts (migration 0012, docs/forge.md), kept across restarts: each check
//! result a forge reported, by commit SHA, kind and name, and the webhook deliveries already
//! accepted. A result is written only over an older one of the same check at the same SHA
//! ([`newer_sql`], the SQL form of `yoi_core::forge::gate::newer`), so an older result arriving
//! late — a reordered webhook, a poll answered from a stale cache — never overwrites a newer
//! one. What the results mean for a merge is the gate's (`yoi_core::forge::gate`); this module
//! only keeps them.

use sqlx::Row;
use yoi_core::forge::gate::{CheckKind, CheckResult, Conclusion};
use yoi_store::StoreError;

use super::{db_err, Db};

/// Where a stored result was last written from.
pub const FROM_POLL: &str = "poll";
pub const FROM_WEBHOOK: &str = "webhook";

/// Written over the stored row only when the new result is newer: a later `at`, or the same
/// `at` with a conclusion over `pending`. Both databases know `ON CONFLICT … DO UPDATE … WHERE`.
const fn newer_sql() -> &'static str {
    "INSERT INTO forge_checks (sha, kind, name, conclusion, at, url, title, summary, source, seen_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (sha, kind, name) DO UPDATE SET conclusion = excluded.conclusion, at = excluded.at, \
       url = excluded.url, title = excluded.title, summary = excluded.summary, source = excluded.source, \
       seen_ms = excluded.seen_ms \
     WHERE excluded.at > forge_checks.at \
        OR (excluded.at = forge_checks.at AND forge_checks.conclusion = 'pending' AND excluded.conclusion <> 'pending')"
}

fn kind_str(k: CheckKind) -> &'static str {
    match k {
        CheckKind::CheckRun => "check_run",
        CheckKind::Status => "status",
    }
}

fn conclusion_of(s: &str) -> Conclusion {
    match s {
        "success" => Conclusion::Success,
        "neutral" => Conclusion::Neutral,
        "skipped" => Conclusion::Skipped,
        "cancelled" => Conclusion::Cancelled,
        "timed_out" => Conclusion::TimedOut,
        "action_required" => Conclusion::ActionRequired,
        "stale" => Conclusion::Stale,
        "error" => Conclusion::Error,
        "pending" => Conclusion::Pending,
        _ => Conclusion::Failure,
    }
}

impl Db {
    /// Keep each result unless a newer one of the same check at the same SHA is kept already.
    /// Returns how many rows were written.
    pub async fn forge_checks_record(
        &self,
        results: &[CheckResult],
        source: &str,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut written = 0;
        for r in results {
            let done = sqlx::query(newer_sql())
                .bind(&r.sha)
                .bind(kind_str(r.kind))
                .bind(&r.name)
                .bind(r.conclusion.as_str())
                .bind(&r.at)
                .bind(r.url.clone())
                .bind(r.title.clone())
                .bind(r.summary.clone())
                .bind(source)
                .bind(now_ms)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
            written += done.rows_affected();
        }
        Ok(written)
    }

    /// Every result kept for `sha`, by kind and name.
    pub async fn forge_checks_of(&self, sha: &str) -> Result<Vec<CheckResult>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, kind, conclusion, at, url, title, summary FROM forge_checks \
              WHERE sha = $1 ORDER BY kind, name",
        )
        .bind(sha)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get(1).map_err(db_err)?;
                let conclusion: String = r.try_get(2).map_err(db_err)?;
                Ok(CheckResult {
                    name: r.try_get(0).map_err(db_err)?,
                    sha: sha.to_string(),
                    kind: if kind == "status" {
                        CheckKind::Status
                    } else {
                        CheckKind::CheckRun
                    },
                    conclusion: conclusion_of(&conclusion),
                    at: r.try_get(3).map_err(db_err)?,
                    url: r.try_get(4).map_err(db_err)?,
                    title: r.try_get(5).map_err(db_err)?,
                    summary: r.try_get(6).map_err(db_err)?,
                })
            })
            .collect()
    }

    /// Remember a webhook delivery: true the first time its id is seen, false for a
    /// redelivery (before or after a restart).
    pub async fn forge_delivery_first(
        &self,
        id: &str,
        event: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO forge_deliveries (id, event, received_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(event)
        .bind(now_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    /// Forget deliveries received before `before_ms` (GitHub redelivers only on request, and
    /// only recent ones); how many were forgotten.
    pub async fn forge_deliveries_prune(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM forge_deliveries WHERE received_ms < $1")
            .bind(before_ms)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected())
    }
}
