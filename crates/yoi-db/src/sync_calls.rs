//! The [`Db`](crate::Db) calls that blocking callers make, as synchronous methods of
//! [`DbIndex`]: each has the name, the arguments and the result of the async method it runs,
//! and is one line through `DbIndex::run` (see `blocking.rs`, which holds the line between sync
//! and async). A blocking caller that needs another call gets a line here, never a way to run
//! its own future.

use yoi_core::TicketId;
use yoi_store::query::{ListFilter, RelationView, TicketSummary};
use yoi_store::StoreError;

use super::{
    ActivationRow, Assignment, DbIndex, DeadDelivery, Finish, IndexedTicket, OutboxEvent,
    OutboxKey, Page, PodRow, PodState, Scope, Span, SpanRows, TokenInfo, Undelivered, Waiting,
};

/// The forge's check results by SHA, kept across restarts (`forge.rs`).
impl DbIndex {
    pub fn forge_checks_record(
        &self,
        results: &[yoi_core::forge::gate::CheckResult],
        source: &str,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        self.run(self.db.forge_checks_record(results, source, now_ms))
    }

    pub fn forge_checks_of(
        &self,
        sha: &str,
    ) -> Result<Vec<yoi_core::forge::gate::CheckResult>, StoreError> {
        self.run(self.db.forge_checks_of(sha))
    }

    pub fn forge_delivery_first(
        &self,
        id: &str,
        event: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(self.db.forge_delivery_first(id, event, now_ms))
    }
}

/// The inbox: tickets that may have open entries, with the events that open and close them.
impl DbIndex {
    pub fn inbox_tickets(
        &self,
        service_author: &str,
        ticket: Option<&str>,
    ) -> Result<Vec<crate::inbox::InboxTicket>, StoreError> {
        self.run(self.db.inbox_tickets(service_author, ticket))
    }
}

/// The workflow-offer detector's reading of the history.
impl DbIndex {
    pub fn offer_history(&self) -> Result<Vec<crate::workflows::HistoryTicket>, StoreError> {
        self.run(self.db.offer_history())
    }

    pub fn workflow_invocations(&self) -> Result<Vec<crate::workflows::InvocationRow>, StoreError> {
        self.run(self.db.workflow_invocations())
    }
}

/// Notifications: the promise of one delivery per (channel, entry) and its attempts.
impl DbIndex {
    pub fn notify_promise(&self, d: &crate::notify::NotifyDelivery) -> Result<bool, StoreError> {
        self.run(self.db.notify_promise(d))
    }

    pub fn notify_due(
        &self,
        channel: &str,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<crate::notify::NotifyDelivery>, StoreError> {
        self.run(self.db.notify_due(channel, now_ms, limit))
    }

    pub fn notify_claim(
        &self,
        channel: &str,
        entry_key: &str,
        attempts: i64,
        resend_ms: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(
            self.db
                .notify_claim(channel, entry_key, attempts, resend_ms, now_ms),
        )
    }

    pub fn notify_record(
        &self,
        channel: &str,
        entry_key: &str,
        attempt: i64,
        end: &crate::notify::AttemptEnd,
    ) -> Result<(), StoreError> {
        self.run(self.db.notify_record(channel, entry_key, attempt, end))
    }

    pub fn notify_skip(
        &self,
        channel: &str,
        entry_key: &str,
        why: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.run(self.db.notify_skip(channel, entry_key, why, now_ms))
    }

    pub fn notify_deliveries(
        &self,
        channel: Option<&str>,
        limit: i64,
    ) -> Result<Vec<crate::notify::NotifyDelivery>, StoreError> {
        self.run(self.db.notify_deliveries(channel, limit))
    }

    pub fn notify_attempts(
        &self,
        channel: &str,
        entry_key: &str,
    ) -> Result<Vec<crate::notify::NotifyAttempt>, StoreError> {
        self.run(self.db.notify_attempts(channel, entry_key))
    }
}

/// Assignments: the steps of a ticket's flow and their attempts.
impl DbIndex {
    pub fn assignment(&self, id: &str) -> Result<Option<Assignment>, StoreError> {
        self.run(self.db.assignment(id))
    }

    pub fn assignments_of(&self, ticket: &str) -> Result<Vec<Assignment>, StoreError> {
        self.run(self.db.assignments_of(ticket))
    }

    pub fn attempts_of(&self, ticket: &str, step: &str) -> Result<Vec<Assignment>, StoreError> {
        self.run(self.db.attempts_of(ticket, step))
    }

    pub fn open_assignments(&self) -> Result<Vec<Assignment>, StoreError> {
        self.run(self.db.open_assignments())
    }

    pub fn list_assignments(
        &self,
        ticket: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Assignment>, StoreError> {
        self.run(self.db.list_assignments(ticket, limit))
    }

    pub fn expired_claims(&self, now_ms: i64) -> Result<Vec<Assignment>, StoreError> {
        self.run(self.db.expired_claims(now_ms))
    }

    pub fn tickets_with_held(&self) -> Result<Vec<String>, StoreError> {
        self.run(self.db.tickets_with_held())
    }

    pub fn tickets_between_steps(&self) -> Result<Vec<String>, StoreError> {
        self.run(self.db.tickets_between_steps())
    }

    pub fn create_assignment(&self, a: &Assignment) -> Result<(), StoreError> {
        self.run(self.db.create_assignment(a))
    }

    pub fn delete_assignment(&self, id: &str) -> Result<bool, StoreError> {
        self.run(self.db.delete_assignment(id))
    }

    pub fn release_held(&self, ticket: &str, now_ms: i64) -> Result<u64, StoreError> {
        self.run(self.db.release_held(ticket, now_ms))
    }

    pub fn discard_pending_assignments(&self, ticket: &str) -> Result<u64, StoreError> {
        self.run(self.db.discard_pending_assignments(ticket))
    }

    pub fn claim_assignments(
        &self,
        claims: &[(&str, &str)],
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<Option<Assignment>>, StoreError> {
        self.run(self.db.claim_assignments(claims, lease_until_ms, now_ms))
    }

    pub fn unclaim_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(self.db.unclaim_assignment(id, fence, pod, reason, now_ms))
    }

    pub fn set_assignment_workdir(
        &self,
        id: &str,
        fence: i64,
        workdir: &str,
        head_commit: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.run(
            self.db
                .set_assignment_workdir(id, fence, workdir, head_commit),
        )
    }

    pub fn heartbeat_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: &str,
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        self.run(
            self.db
                .heartbeat_assignment(id, fence, pod, lease_until_ms, now_ms),
        )
    }

    pub fn finish_assignment(
        &self,
        id: &str,
        fence: i64,
        pod: Option<&str>,
        how: &Finish,
        next: Option<&Assignment>,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        self.run(self.db.finish_assignment(id, fence, pod, how, next, now_ms))
    }

    pub fn finish_pending(
        &self,
        id: &str,
        fence: i64,
        how: &Finish,
        next: Option<&Assignment>,
        now_ms: i64,
    ) -> Result<Option<Assignment>, StoreError> {
        self.run(self.db.finish_pending(id, fence, how, next, now_ms))
    }

    pub fn note_pending(&self, id: &str, fence: i64, note: &str) -> Result<bool, StoreError> {
        self.run(self.db.note_pending(id, fence, note))
    }
}

/// Pods and the skills they activate.
impl DbIndex {
    pub fn pod(&self, id: &str) -> Result<Option<PodRow>, StoreError> {
        self.run(self.db.pod(id))
    }

    pub fn pods(&self, now_ms: i64, keep_ms: i64) -> Result<Vec<PodRow>, StoreError> {
        self.run(self.db.pods(now_ms, keep_ms))
    }

    pub fn pods_by_id(&self, ids: &[&str]) -> Result<Vec<PodRow>, StoreError> {
        self.run(self.db.pods_by_id(ids))
    }

    pub fn register_pod(&self, p: &PodRow) -> Result<(), StoreError> {
        self.run(self.db.register_pod(p))
    }

    pub fn touch_pod(
        &self,
        id: &str,
        state: PodState,
        assignment: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(self.db.touch_pod(id, state, assignment, now_ms))
    }

    pub fn record_activation(&self, row: &ActivationRow) -> Result<(), StoreError> {
        self.run(self.db.record_activation(row))
    }

    pub fn activations_of_ticket(&self, ticket: &str) -> Result<Vec<ActivationRow>, StoreError> {
        self.run(self.db.activations_of_ticket(ticket))
    }
}

/// The outbox and its consumers' deliveries.
impl DbIndex {
    pub fn outbox(&self) -> Result<Vec<OutboxEvent>, StoreError> {
        self.run(self.db.outbox())
    }

    pub fn register_consumer(&self, name: &str, now_ms: i64) -> Result<(), StoreError> {
        self.run(self.db.register_consumer(name, now_ms))
    }

    pub fn next_events(
        &self,
        consumer: &str,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        self.run(self.db.next_events(consumer, now_ms, limit))
    }

    pub fn ack(&self, consumer: &str, seq: i64, now_ms: i64) -> Result<(), StoreError> {
        self.run(self.db.ack(consumer, seq, now_ms))
    }

    pub fn fail(
        &self,
        consumer: &str,
        seq: i64,
        error: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.run(self.db.fail(consumer, seq, error, now_ms))
    }
}

/// Doctor's raw reads (see `inspect.rs`; [`DbIndex::read_ahead`] reads spans ahead).
impl DbIndex {
    pub fn span_rows(&self, span: Span<'_>) -> Result<SpanRows, StoreError> {
        self.run(self.db.span_rows(span))
    }

    pub fn event_keys(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.run(self.db.event_keys())
    }

    pub fn outbox_keys_of(&self, ticket: &str) -> Result<Vec<OutboxKey>, StoreError> {
        self.run(self.db.outbox_keys_of(ticket))
    }

    pub fn undelivered_by_consumer(&self, before_ms: i64) -> Result<Vec<Undelivered>, StoreError> {
        self.run(self.db.undelivered_by_consumer(before_ms))
    }

    pub fn dead_deliveries(&self) -> Result<Vec<DeadDelivery>, StoreError> {
        self.run(self.db.dead_deliveries())
    }
}

/// Tokens.
impl DbIndex {
    pub fn ensure_admin_token(
        &self,
        local_dir: &std::path::Path,
        principal: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(self.db.ensure_admin_token(local_dir, principal, now_ms))
    }

    pub fn create_token(
        &self,
        name: &str,
        scope: &Scope,
        principal: &str,
        now_ms: i64,
    ) -> Result<(TokenInfo, String), StoreError> {
        self.run(self.db.create_token(name, scope, principal, now_ms))
    }

    pub fn revoke_token(&self, name_or_id: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.run(self.db.revoke_token(name_or_id, now_ms))
    }

    pub fn expire_token(&self, name_or_id: &str, expires_ms: i64) -> Result<bool, StoreError> {
        self.run(self.db.expire_token(name_or_id, expires_ms))
    }

    pub fn list_tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        self.run(self.db.list_tokens())
    }
}

/// Ticket lists and relations, as the index holds them.
impl DbIndex {
    pub fn list_all(
        &self,
        filter: &ListFilter,
        search: &[String],
    ) -> Result<Vec<TicketSummary>, StoreError> {
        self.run(self.db.list_all(filter, search))
    }

    pub fn list(
        &self,
        filter: &ListFilter,
        search: &[String],
        after: Option<&TicketId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.run(self.db.list(filter, search, after, limit))
    }

    pub fn indexed_ticket(&self, id: &TicketId) -> Result<Option<IndexedTicket>, StoreError> {
        self.run(self.db.indexed_ticket(id))
    }

    pub fn relation_view(&self, id: &TicketId) -> Result<Option<RelationView>, StoreError> {
        self.run(self.db.relation_view(id))
    }

    pub fn waiting_on(&self, id: &TicketId, limit: usize) -> Result<Vec<Waiting>, StoreError> {
        self.run(self.db.waiting_on(id, limit))
    }

    pub fn routing_events(
        &self,
        id: &TicketId,
    ) -> Result<Option<Vec<yoi_core::thread::Event>>, StoreError> {
        self.run(self.db.routing_events(id))
    }

    pub fn routing_events_of(
        &self,
        ids: &[TicketId],
    ) -> Result<std::collections::BTreeMap<TicketId, Vec<yoi_core::thread::Event>>, StoreError>
    {
        self.run(self.db.routing_events_of(ids))
    }

    pub fn fresh_routing_events(
        &self,
        ws: &yoi_store::Workspace,
        id: &TicketId,
    ) -> Result<Option<Vec<yoi_core::thread::Event>>, StoreError> {
        self.run(self.db.fresh_routing_events(ws, id))
    }

    pub fn routing_windows(
        &self,
        ws: &yoi_store::Workspace,
        ids: &[TicketId],
    ) -> Result<std::collections::BTreeMap<TicketId, crate::RoutingWindow>, StoreError> {
        self.run(self.db.routing_windows(ws, ids))
    }

    pub fn queue_rows(
        &self,
        limit: usize,
        max_inprogress: usize,
    ) -> Result<crate::queue_reads::QueueRows, StoreError> {
        self.run(self.db.queue_rows(limit, max_inprogress))
    }

    pub fn indexed_items(
        &self,
        ids: &[TicketId],
    ) -> Result<std::collections::BTreeMap<TicketId, yoi_core::Item>, StoreError> {
        self.run(self.db.indexed_items(ids))
    }

    pub fn blocking_relations(
        &self,
        ids: &[TicketId],
    ) -> Result<Vec<yoi_core::relation::Relation>, StoreError> {
        self.run(self.db.blocking_relations(ids))
    }

    pub fn indexed_states(
        &self,
        ids: &[TicketId],
    ) -> Result<std::collections::BTreeMap<TicketId, yoi_core::State>, StoreError> {
        self.run(self.db.indexed_states(ids))
    }

    pub fn thread_page(
        &self,
        ws: &yoi_store::Workspace,
        id: &TicketId,
        limit: usize,
        before: Option<usize>,
    ) -> Result<Option<crate::ThreadPage>, StoreError> {
        self.run(self.db.thread_page(ws, id, limit, before))
    }
}

/// The pool itself.
impl DbIndex {
    /// Close the pool, waiting for its connections to finish: before the database's files are
    /// deleted or its cluster stopped.
    pub fn close(&self) {
        self.run(self.db.close())
    }
}

/// Workflow invocations: which attempt carries which (docs/workflows.md).
impl DbIndex {
    pub fn carry_workflows(
        &self,
        ticket: &str,
        assignment: &str,
        invocations: &[(String, String)],
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.run(
            self.db
                .carry_workflows(ticket, assignment, invocations, at_ms),
        )
    }

    pub fn workflow_carriers(
        &self,
        ticket: &str,
    ) -> Result<Vec<crate::workflows::CarrierRow>, StoreError> {
        self.run(self.db.workflow_carriers(ticket))
    }
}
