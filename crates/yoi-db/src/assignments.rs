//! Assignments: one attempt of one step of a ticket's flow, handed to a role (DESIGN §7). The
//! orchestrator writes the first one when it accepts a ticket; pods claim them; the engine
//! (`yoi_engine::assignments`) decides what a result, a failure or an expired lease means.
//!
//! Every statement that changes a claimed row names the fence it read and requires the row to
//! be still `claimed` (and, for results, by the same pod): a late or duplicate call changes
//! nothing and the caller learns it from the empty answer. A claim is one statement — on
//! PostgreSQL the candidate row is locked with `FOR UPDATE SKIP LOCKED`, on SQLite the
//! statement runs in a `BEGIN IMMEDIATE` transaction, so concurrent claimers never get one row
//! twice. At most one live (`pending`, `claimed`) row per (ticket, step) is enforced by a
//! partial unique index.
//!
//! Only an in-progress ticket has open (`pending`, `claimed`) assignments — and a queued one,
//! while an acceptance is making its first. Whenever the index records a ticket in any other
//! state it cancels that ticket's open rows in the same transaction (see `db/index.rs`), so the
//! rule holds for closes and returns made through the API, the CLI in local mode, hand edits
//! and reindexing alike. A ticket whose item.md cannot be read is left alone.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentStatus {
    /// Made by an acceptance that has not finished: live, but no pod may claim it until the
    /// ticket is in progress and the row is released to `pending`.
    Held,
    #[default]
    Pending,
    Claimed,
    Completed,
    Failed,
    /// The lease ran out before a result came; the step was handed out again.
    Expired,
    Cancelled,
    /// The agent's provider refused it for a rate limit or quota: handed out again once the
    /// pause ends, and never counted as a failure.
    RateLimited,
    /// The agent asked a person (`YOI-QUESTION:` with `YOI-RESULT: blocked`): handed out again
    /// once a person answers, and never counted as a failure.
    Blocked,
}

impl AssignmentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentStatus::Held => "held",
            AssignmentStatus::Pending => "pending",
            AssignmentStatus::Claimed => "claimed",
            AssignmentStatus::Completed => "completed",
            AssignmentStatus::Failed => "failed",
            AssignmentStatus::Expired => "expired",
            AssignmentStatus::Cancelled => "cancelled",
            AssignmentStatus::RateLimited => "rate_limited",
            AssignmentStatus::Blocked => "blocked",
        }
    }

    /// Still to be worked: `held`, `pending` or `claimed`.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            AssignmentStatus::Held | AssignmentStatus::Pending | AssignmentStatus::Claimed
        )
    }

    fn parse(s: &str) -> Result<AssignmentStatus, StoreError> {
        Ok(match s {
            "held" => AssignmentStatus::Held,
            "pending" => AssignmentStatus::Pending,
            "claimed" => AssignmentStatus::Claimed,
            "completed" | "done" => AssignmentStatus::Completed,
            "failed" => AssignmentStatus::Failed,
            "expired" => AssignmentStatus::Expired,
            "cancelled" => AssignmentStatus::Cancelled,
            "rate_limited" => AssignmentStatus::RateLimited,
            "blocked" => AssignmentStatus::Blocked,
            other => {
                return Err(StoreError::Database {
                    reason: format!("assignments.status holds unknown value {other:?}"),
                })
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, utoipa::ToSchema)]
pub struct Assignment {
    pub id: String,
    #[schema(value_type = yoi_core::TicketId)]
    pub ticket: String,
    pub step: String,
    #[schema(value_type = yoi_core::role::Role)]
    pub role: String,
    pub attempt: i64,
    pub fence: i64,
    pub status: AssignmentStatus,
    pub lease_until_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// The pod incarnation holding (or that held) the claim.
    pub claimed_by: Option<String>,
    pub heartbeat_ms: Option<i64>,
    /// The working directory handed out with the claim (absolute).
    pub workdir: Option<String>,
    /// The ticket branch's head when the working directory was prepared.
    pub head_commit: Option<String>,
    /// The attempt's result as JSON (the engine's report), once it ended.
    pub result: Option<String>,
    /// Tokens, cost, wall time as JSON, once it ended.
    pub usage: Option<String>,
    /// Why it failed or expired.
    pub error: Option<String>,
    pub log_path: Option<String>,
    pub finished_ms: Option<i64>,
}

const COLUMNS: &str =
    "id, ticket_id, step, role, attempt, fence, status, lease_until_ms, created_ms, updated_ms, \
     claimed_by, heartbeat_ms, workdir, head_commit, result, usage, error, log_path, finished_ms";

/// How an attempt ended, for [`Db::finish_assignment`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub status: AssignmentStatus,
    pub result: Option<String>,
    pub usage: Option<String>,
    pub error: Option<String>,
    pub log_path: Option<String>,
}

impl Finish {
    /// Ended with `status` for `reason`, with no result of its own.
    pub fn ended(status: AssignmentStatus, reason: &str) -> Finish {
        Finish {
            status,
            result: None,
            usage: None,
            error: Some(reason.to_string()),
            log_path: None,
        }
    }

    /// Failed for `reason`, with no result of its own.
    pub fn failed(reason: &str) -> Finish {
        Finish::ended(AssignmentStatus::Failed, reason)
    }
}

impl Db {
    pub async fn create_assignment(&self, a: &Assignment) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        insert(&mut conn, a).await
    }

    /// One assignment by id.
    pub async fn assignment(&self, id: &str) -> Result<Option<Assignment>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM assignments WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.as_ref().map(assignment).transpose()
    }

    /// Claim the oldest pending assignment of `role` for pod `pod`, with a lease until
    /// `lease_until_ms`; `None` when there is none. One statement (see the module doc).
    pub async fn claim_assignment(
        &self,
        role: &str,
        pod: &str,
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        let mut got = self
            .claim_assignments(&[(role, pod)], lease_until_ms, now_ms)
            .await?;
        Ok(got.pop().flatten())
    }

    /// Claims for several pods in one write transaction (the server groups the claims that
    /// arrive together, as a database groups commits): for each `(role, pod)` in order, the
    /// oldest pending assignment of that role not yet taken, or `None`. The pods that get work
    /// are marked `working` on it in the same transaction. Each claim is the one guarded
    /// statement of [`Db::claim_assignment`], so no row is ever handed out twice.
    pub async fn claim_assignments(
        &self,
        claims: &[(&str, &str)],
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<Option<Assignment>>, StoreError> {
        let pick = match self.dialect() {
            // A ticket over its budget keeps its pending step until a person adds to the
            // budget (crate::spend).
            super::Dialect::Postgres => {
                "SELECT id FROM assignments WHERE role = $1 AND status = 'pending' \
                   AND ticket_id NOT IN (SELECT ticket_id FROM budget_holds) \
                 ORDER BY created_ms, id LIMIT 1 FOR UPDATE SKIP LOCKED"
            }
            super::Dialect::Sqlite => {
                "SELECT id FROM assignments WHERE role = $1 AND status = 'pending' \
                   AND ticket_id NOT IN (SELECT ticket_id FROM budget_holds) \
                 ORDER BY created_ms, id LIMIT 1"
            }
        };
        let sql = format!(
            "UPDATE assignments SET status = 'claimed', claimed_by = $2, lease_until_ms = $3, \
                    heartbeat_ms = $4, updated_ms = $4 \
              WHERE id = ({pick}) AND status = 'pending' RETURNING {COLUMNS}"
        );
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            let mut out = match self.dialect() {
                super::Dialect::Postgres => {
                    claim_by_role(&mut conn, claims, lease_until_ms, now_ms).await?
                }
                super::Dialect::Sqlite => Vec::with_capacity(claims.len()),
            };
            // Roles known to have nothing left in this transaction are not asked again.
            let mut empty: Vec<&str> = Vec::new();
            for &(role, pod) in claims.iter().skip(out.len()) {
                if empty.contains(&role) {
                    out.push(None);
                    continue;
                }
                let row = sqlx::query(&sql)
                    .bind(role)
                    .bind(pod)
                    .bind(lease_until_ms)
                    .bind(now_ms)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(db_err)?;
                let Some(a) = row.as_ref().map(assignment).transpose()? else {
                    empty.push(role);
                    out.push(None);
                    continue;
                };
                out.push(Some(a));
            }
            // The pods that got work, in one statement.
            let working: Vec<(&str, &str)> = claims
                .iter()
                .zip(&out)
                .filter_map(|(&(_, pod), a)| a.as_ref().map(|a| (pod, a.id.as_str())))
                .collect();
            if !working.is_empty() {
                let mut cases = String::new();
                let mut ids = Vec::new();
                for i in 0..working.len() {
                    let (p, a) = (2 + 2 * i, 3 + 2 * i);
                    cases.push_str(&format!(" WHEN ${p} THEN ${a}"));
                    ids.push(format!("${p}"));
                }
                let sql = format!(
                    "UPDATE pods SET state = 'working', heartbeat_ms = $1, \
                            assignment_id = CASE id{cases} END \
                      WHERE id IN ({})",
                    ids.join(", ")
                );
                let mut q = sqlx::query(&sql).bind(now_ms);
                for (pod, a) in &working {
                    q = q.bind(pod.to_string()).bind(a.to_string());
                }
                q.execute(&mut *conn).await.map_err(db_err)?;
                let tickets: Vec<&str> = out.iter().flatten().map(|a| a.ticket.as_str()).collect();
                crate::answer_epoch::bump_for(&mut conn, &tickets).await?;
            }
            Ok(out)
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    /// Put a claim its pod never received back to `pending`: the server could not prepare what
    /// the pod needs for it (docs/pods.md, `[pods] transport = "remote"`: the push of its
    /// commits to the remote failed), so it is not handed out. Guarded by id, fence, pod and
    /// status `claimed`; the fence and the bound commit stay (nobody outside the server ever
    /// saw them), the working directory is forgotten (the next claim prepares one again),
    /// `reason` is kept in `error` until the attempt ends, and the pod is idle again — in one
    /// transaction.
    /// Whether the row went back.
    pub async fn unclaim_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            let done = sqlx::query(
                "UPDATE assignments SET status = 'pending', claimed_by = NULL, lease_until_ms = NULL, \
                        heartbeat_ms = NULL, workdir = NULL, error = $4, updated_ms = $5 \
                  WHERE id = $1 AND fence = $2 AND claimed_by = $3 AND status = 'claimed'",
            )
            .bind(id)
            .bind(fence)
            .bind(pod)
            .bind(reason)
            .bind(now_ms)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            sqlx::query(
                "UPDATE pods SET state = 'idle', assignment_id = NULL, heartbeat_ms = $2 \
                  WHERE id = $1 AND assignment_id = $3",
            )
            .bind(pod)
            .bind(now_ms)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
            crate::answer_epoch::bump(&mut *conn).await?;
            Ok(true)
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    /// Release the `held` assignments of a ticket to `pending` (its acceptance finished);
    /// how many.
    pub async fn release_held(&self, ticket: &str, now_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE assignments SET status = 'pending', updated_ms = $2 WHERE ticket_id = $1 AND status = 'held'",
        )
        .bind(ticket)
        .bind(now_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        if done.rows_affected() > 0 {
            self.bump_own(&[ticket]).await?;
        }
        Ok(done.rows_affected())
    }

    /// Tickets with `held` assignments.
    pub async fn tickets_with_held(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query("SELECT DISTINCT ticket_id FROM assignments WHERE status = 'held'")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(db_err))
            .collect()
    }

    /// Record the working directory and branch head handed out with a claim (fence-guarded).
    pub async fn set_assignment_workdir(
        &self,
        id: &str,
        fence: i64,
        workdir: &str,
        head_commit: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done: Vec<(String,)> = sqlx::query_as(
            "UPDATE assignments SET workdir = $3, head_commit = $4 \
              WHERE id = $1 AND fence = $2 AND status = 'claimed' RETURNING ticket_id",
        )
        .bind(id)
        .bind(fence)
        .bind(workdir)
        .bind(head_commit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        if !done.is_empty() {
            let tickets: Vec<&str> = done.iter().map(|(t,)| t.as_str()).collect();
            self.bump_own(&tickets).await?;
        }
        Ok(done.len() == 1)
    }

    /// Extend the lease of a claim held by `pod` at `fence` whose lease has not run out; the
    /// updated row, or `None` when the claim is not (or no longer) that.
    pub async fn heartbeat_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: &str,
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        let row = sqlx::query(&format!(
            "UPDATE assignments SET lease_until_ms = $4, heartbeat_ms = $5, updated_ms = $5 \
              WHERE id = $1 AND fence = $2 AND claimed_by = $3 AND status = 'claimed' \
                AND lease_until_ms >= $5 RETURNING {COLUMNS}"
        ))
        .bind(id)
        .bind(fence)
        .bind(pod)
        .bind(lease_until_ms)
        .bind(now_ms)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        row.as_ref().map(assignment).transpose()
    }

    /// End a live claim: the row as `how` says, guarded by id, fence, pod (when given; the
    /// lease sweep passes `None`), status `claimed` and — for a pod's result — an unexpired
    /// lease. `next`, when given, is the next attempt, inserted in the same transaction. The
    /// finished row, or `None` (and nothing written) when the guard does not hold.
    pub async fn finish_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: Option<&str>,
        how: &Finish,
        next: Option<&Assignment>,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        // A pod's result needs an unexpired lease; the sweep needs an expired one.
        let guard = match pod {
            Some(_) => "status = 'claimed' AND lease_until_ms >= $8 AND claimed_by = $9",
            None => "status = 'claimed' AND lease_until_ms < $8 AND $9 IS NULL",
        };
        self.finish_row(id, fence, guard, pod, how, next, now_ms)
            .await
    }

    /// End row `id` at `fence` as `how` says where `guard` (SQL over the row, `$8` now and `$9`
    /// the pod) holds, inserting `next` in the same transaction; the finished row or `None`.
    #[allow(clippy::too_many_arguments)]
    async fn finish_row(
        &self,
        id: &str,
        fence: i64,
        guard: &str,
        pod: Option<&str>,
        how: &Finish,
        next: Option<&Assignment>,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        // The spend columns are the usage's figures; the agent is the profile of the pod that
        // held the claim (crate::spend).
        let sql = format!(
            "UPDATE assignments SET status = $3, result = $4, usage = $5, error = $6, log_path = $7, \
                    finished_ms = $8, updated_ms = $8, cost_micros = $10, tokens = $11, model = $12, \
                    agent = (SELECT p.profile FROM pods p WHERE p.id = assignments.claimed_by) \
              WHERE id = $1 AND fence = $2 AND {guard} RETURNING {COLUMNS}"
        );
        let figures = crate::spend::Figures::of_usage(how.usage.as_deref());
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            let row = sqlx::query(&sql)
                .bind(id)
                .bind(fence)
                .bind(how.status.as_str())
                .bind(how.result.clone())
                .bind(how.usage.clone())
                .bind(how.error.clone())
                .bind(how.log_path.clone())
                .bind(now_ms)
                .bind(pod)
                .bind(figures.cost_micros)
                .bind(figures.tokens)
                .bind(figures.model.clone())
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?;
            let Some(row) = row.as_ref().map(assignment).transpose()? else {
                return Ok(None);
            };
            crate::answer_epoch::bump_for(&mut conn, &[row.ticket.as_str()]).await?;
            if let Some(next) = next {
                insert(&mut conn, next).await?;
            }
            Ok(Some(row))
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    /// End a `pending` row nobody claims (a step the service runs itself, such as `merge`):
    /// guarded by id, fence and status; `next`, when given, is inserted in the same
    /// transaction. The finished row, or `None` (and nothing written).
    pub async fn finish_pending(
        &self,
        id: &str,
        fence: i64,
        how: &Finish,
        next: Option<&Assignment>,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        self.finish_row(
            id,
            fence,
            "status = 'pending' AND $9 IS NULL",
            None,
            how,
            next,
            now_ms,
        )
        .await
    }

    /// In-progress tickets (as the index last saw them) with assignments but none live: where a
    /// flow may have a next step to hand out.
    pub async fn tickets_between_steps(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT t.id FROM tickets t WHERE t.state = 'inprogress' \
                AND EXISTS (SELECT 1 FROM assignments a WHERE a.ticket_id = t.id) \
                AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.ticket_id = t.id \
                                AND a.status IN ('held', 'pending', 'claimed')) \
              ORDER BY t.id",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(db_err))
            .collect()
    }

    /// Set the `error` note of a pending row (why it waits); whether it changed.
    pub async fn note_pending(&self, id: &str, fence: i64, note: &str) -> Result<bool, StoreError> {
        let done: Vec<(String,)> = sqlx::query_as(
            "UPDATE assignments SET error = $3 WHERE id = $1 AND fence = $2 AND status = 'pending' \
                AND (error IS NULL OR error <> $3) RETURNING ticket_id",
        )
        .bind(id)
        .bind(fence)
        .bind(note)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        if !done.is_empty() {
            let tickets: Vec<&str> = done.iter().map(|(t,)| t.as_str()).collect();
            self.bump_own(&tickets).await?;
        }
        Ok(done.len() == 1)
    }

    /// Claims whose lease ran out before `now_ms`, oldest first.
    pub async fn expired_claims(&self, now_ms: i64) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE status = 'claimed' AND lease_until_ms < $1 \
              ORDER BY lease_until_ms, id"
        ))
        .bind(now_ms)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }

    /// The attempts of one step of a ticket, in attempt order.
    pub async fn attempts_of(
        &self,
        ticket: &str,
        step: &str,
    ) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE ticket_id = $1 AND step = $2 ORDER BY attempt, id"
        ))
        .bind(ticket)
        .bind(step)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }

    /// Every assignment, or a ticket's, newest first, at most `limit`.
    pub async fn list_assignments(
        &self,
        ticket: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE ($1 IS NULL OR ticket_id = $1) \
              ORDER BY created_ms DESC, id DESC LIMIT $2"
        ))
        .bind(ticket)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }

    /// Remove one assignment (an acceptance undoing what it made); whether it existed.
    pub async fn delete_assignment(&self, id: &str) -> Result<bool, StoreError> {
        let done: Vec<(String,)> =
            sqlx::query_as("DELETE FROM assignments WHERE id = $1 RETURNING ticket_id")
                .bind(id)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
        if !done.is_empty() {
            let tickets: Vec<&str> = done.iter().map(|(t,)| t.as_str()).collect();
            self.bump_own(&tickets).await?;
        }
        Ok(!done.is_empty())
    }

    /// Remove the `pending` assignments of a ticket: what an acceptance that died before moving
    /// the ticket to `inprogress` left behind. Returns how many.
    pub async fn discard_pending_assignments(&self, ticket: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM assignments WHERE ticket_id = $1 AND status IN ('held', 'pending')",
        )
        .bind(ticket)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        if done.rows_affected() > 0 {
            self.bump_own(&[ticket]).await?;
        }
        Ok(done.rows_affected())
    }

    /// Every open (`pending`, `claimed`) assignment, oldest first.
    pub async fn open_assignments(&self) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE status IN ('held', 'pending', 'claimed') ORDER BY created_ms, id"
        ))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }

    /// A ticket's assignments, oldest first.
    pub async fn assignments_of(&self, ticket: &str) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE ticket_id = $1 ORDER BY created_ms, id"
        ))
        .bind(ticket)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }
}

/// PostgreSQL: the claims of a group in one statement per role, instead of a round trip per
/// claim. The candidate rows are locked with `FOR UPDATE SKIP LOCKED` in claim order and paired
/// with the asking pods by position; the answer is in the order of `claims`.
async fn claim_by_role(
    conn: &mut sqlx::AnyConnection,
    claims: &[(&str, &str)],
    lease_until_ms: i64,
    now_ms: i64,
) -> Result<Vec<Option<Assignment>>, StoreError> {
    let returning: Vec<String> = COLUMNS
        .split(',')
        .map(|c| format!("a.{}", c.trim()))
        .collect();
    let sql = format!(
        "WITH asks AS ( \
             SELECT pod, n FROM unnest(string_to_array($2, ',')) WITH ORDINALITY AS t(pod, n) \
         ), picked AS ( \
             SELECT id, row_number() OVER (ORDER BY created_ms, id) AS n FROM ( \
                 SELECT id, created_ms FROM assignments WHERE role = $1 AND status = 'pending' \
                    AND ticket_id NOT IN (SELECT ticket_id FROM budget_holds) \
                  ORDER BY created_ms, id LIMIT $3 FOR UPDATE SKIP LOCKED) s \
         ) \
         UPDATE assignments AS a SET status = 'claimed', claimed_by = asks.pod, \
                lease_until_ms = $4, heartbeat_ms = $5, updated_ms = $5 \
           FROM picked JOIN asks ON asks.n = picked.n \
          WHERE a.id = picked.id AND a.status = 'pending' RETURNING {}",
        returning.join(", ")
    );
    let mut out: Vec<Option<Assignment>> = vec![None; claims.len()];
    let mut roles: Vec<&str> = claims.iter().map(|c| c.0).collect();
    roles.sort_unstable();
    roles.dedup();
    for role in roles {
        let asking: Vec<usize> = (0..claims.len()).filter(|&i| claims[i].0 == role).collect();
        let pods: Vec<&str> = asking.iter().map(|&i| claims[i].1).collect();
        if pods.iter().any(|p| p.contains(',')) {
            return Err(StoreError::Database {
                reason: "a pod id holds a comma".into(),
            });
        }
        let rows = sqlx::query(&sql)
            .bind(role)
            .bind(pods.join(","))
            .bind(pods.len() as i64)
            .bind(lease_until_ms)
            .bind(now_ms)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?;
        let mut got: Vec<Assignment> = rows.iter().map(assignment).collect::<Result<_, _>>()?;
        // Back to the asking order; a pod that asked twice gets one row per ask.
        for &i in &asking {
            if let Some(k) = got
                .iter()
                .position(|a| a.claimed_by.as_deref() == Some(claims[i].1))
            {
                out[i] = Some(got.swap_remove(k));
            }
        }
    }
    Ok(out)
}

/// Cancel the open (`pending`, `claimed`) assignments of a ticket, inside the caller's
/// transaction.
pub(crate) async fn cancel_open(
    conn: &mut sqlx::AnyConnection,
    ticket: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let done = sqlx::query(
        "UPDATE assignments SET status = 'cancelled', updated_ms = $2 \
          WHERE ticket_id = $1 AND status IN ('held', 'pending', 'claimed')",
    )
    .bind(ticket)
    .bind(now_ms)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    if done.rows_affected() > 0 {
        crate::answer_epoch::bump_for(conn, &[ticket]).await?;
    }
    Ok(())
}

async fn insert(conn: &mut sqlx::AnyConnection, a: &Assignment) -> Result<(), StoreError> {
    // A row made with its usage (an import, a copy) gets its spend figures as a finished one
    // does (crate::spend).
    let figures = crate::spend::Figures::of_usage(a.usage.as_deref());
    sqlx::query(&format!(
        "INSERT INTO assignments ({COLUMNS}, cost_micros, tokens, model, agent) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
          $20, $21, $22, (SELECT p.profile FROM pods p WHERE p.id = $11))"
    ))
    .bind(a.id.clone())
    .bind(a.ticket.clone())
    .bind(a.step.clone())
    .bind(a.role.clone())
    .bind(a.attempt)
    .bind(a.fence)
    .bind(a.status.as_str())
    .bind(a.lease_until_ms)
    .bind(a.created_ms)
    .bind(a.updated_ms)
    .bind(a.claimed_by.clone())
    .bind(a.heartbeat_ms)
    .bind(a.workdir.clone())
    .bind(a.head_commit.clone())
    .bind(a.result.clone())
    .bind(a.usage.clone())
    .bind(a.error.clone())
    .bind(a.log_path.clone())
    .bind(a.finished_ms)
    .bind(a.usage.as_ref().and(figures.cost_micros))
    .bind(a.usage.as_ref().and(figures.tokens))
    .bind(figures.model)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    crate::answer_epoch::bump_for(conn, &[a.ticket.as_str()]).await
}

fn assignment(r: &sqlx::any::AnyRow) -> Result<Assignment, StoreError> {
    let status: String = r.try_get(6).map_err(db_err)?;
    Ok(Assignment {
        id: r.try_get(0).map_err(db_err)?,
        ticket: r.try_get(1).map_err(db_err)?,
        step: r.try_get(2).map_err(db_err)?,
        role: r.try_get(3).map_err(db_err)?,
        attempt: r.try_get(4).map_err(db_err)?,
        fence: r.try_get(5).map_err(db_err)?,
        status: AssignmentStatus::parse(&status)?,
        lease_until_ms: r.try_get(7).map_err(db_err)?,
        created_ms: r.try_get(8).map_err(db_err)?,
        updated_ms: r.try_get(9).map_err(db_err)?,
        claimed_by: r.try_get(10).map_err(db_err)?,
        heartbeat_ms: r.try_get(11).map_err(db_err)?,
        workdir: r.try_get(12).map_err(db_err)?,
        head_commit: r.try_get(13).map_err(db_err)?,
        result: r.try_get(14).map_err(db_err)?,
        usage: r.try_get(15).map_err(db_err)?,
        error: r.try_get(16).map_err(db_err)?,
        log_path: r.try_get(17).map_err(db_err)?,
        finished_ms: r.try_get(18).map_err(db_err)?,
    })
}
