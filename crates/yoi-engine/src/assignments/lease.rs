//! [`expire_due`]: the lease sweep as a step function over `now`.

use yoi_core::Timestamp;
use yoi_db::{AssignmentStatus, DbIndex, Finish};
use yoi_store::Workspace;

use super::claim::trailing_failures;
use super::finish::{open_circuit, record};
use super::{next_attempt, results_lock, retries_left, AssignmentError};

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpireOutcome {
    /// `(expired assignment, its next attempt if one was handed out)`.
    pub expired: Vec<(String, Option<String>)>,
    /// Tickets whose circuit this sweep opened.
    pub circuits_opened: Vec<String>,
}

/// Expire every claim whose lease ran out before `now`: the row becomes `expired` and — in the
/// same transaction — the step is handed out again with attempt + 1 and a new fence, unless
/// this was the third failed or expired attempt in a row, which opens the ticket's circuit. The
/// expiry is guarded by the fence and the lease it read, so a result that arrived in between
/// wins and the sweep skips that row.
pub fn expire_due(
    ws: &Workspace,
    index: &DbIndex,
    now: Timestamp,
) -> Result<ExpireOutcome, AssignmentError> {
    let _guard = results_lock();
    let now_ms = now.unix_millis();
    let mut out = ExpireOutcome::default();
    for a in index.expired_claims(now_ms)? {
        let attempts = index.attempts_of(&a.ticket, &a.step)?;
        let in_a_row = 1 + trailing_failures(&attempts, &a.id);
        let next = retries_left(ws, &a, in_a_row).then(|| next_attempt(&a, now));
        let reason = format!(
            "the lease ran out at {} with no heartbeat from pod {}",
            Timestamp::from_unix_millis(a.lease_until_ms.unwrap_or(now_ms)),
            a.claimed_by.as_deref().unwrap_or("none")
        );
        let how = Finish::ended(AssignmentStatus::Expired, &reason);
        let Some(row) =
            index.finish_assignment(&a.id, a.fence, None, &how, next.as_ref(), now_ms)?
        else {
            continue;
        };
        tracing::warn!(assignment = %row.id, ticket = %row.ticket, attempt = row.attempt, "lease expired");
        record(ws, &row, "expired", None, None, Some(&reason), now)?;
        super::finish::drop_attempt_worktree(ws, &row);
        // A result a pod without the server's disk pushed and never reported goes with its
        // attempt (docs/pods.md, "Faults"); a push after this is refused.
        let pushed = super::attempt_ref::AttemptRef::of(&row).name();
        if let Err(e) = yoi_git::delete_ref(ws.root(), &pushed) {
            tracing::warn!(reference = %pushed, error = %e, "could not delete the expired attempt's ref");
        }
        if next.is_none() {
            open_circuit(
                ws,
                &row,
                &format!("failed or timed out {in_a_row} times in a row"),
                now,
            )?;
            out.circuits_opened.push(row.ticket.clone());
        }
        out.expired.push((row.id, next.map(|n| n.id)));
    }
    // The refs of attempts that ended some other way, or whose deletion above a crash or a push
    // still being received cut short (docs/pods.md, "Faults").
    if let Err(e) = super::attempt_ref::collect(ws, index) {
        tracing::warn!(error = %e, "could not delete the attempt refs of ended attempts");
    }
    Ok(out)
}
