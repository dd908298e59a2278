//! `GET /api/v1/events`: the event outbox as server-sent events.
//!
//! Each SSE event carries `id:` = the outbox `seq`, `event:` = the outbox kind and `data:` = a
//! [`LiveEvent`] as JSON. Outbox seqs are gap-free and committed in order (writers are
//! serialised), so a client that resumes with `Last-Event-ID: N` (or `?after=N`) receives every
//! later event exactly once. Without a position the stream starts at the current end: live
//! updates only, no history; `?after=0` replays everything.
//!
//! The stream wakes when this server mutates something (the `changed` signal) and also polls the
//! outbox every [`POLL_INTERVAL`], so events written by another process — the CLI with
//! `--local` — arrive too, at most that late. It ends when the server starts shutting down, so
//! graceful shutdown never waits on an open stream. The token is checked once, at connect.
//!
//! A stream is exempt from the server's idle timeout while its client reads it (`listen.rs`),
//! so each token — and each dashboard session, whose pages open the same stream at `/live/events`
//! — may hold at most `[server] max_streams_per_token` open at once; one more is refused with
//! 429 `too_many_streams`.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use utoipa::ToSchema;
use yoi_db::{Db, OutboxEvent};

use crate::auth::{Authed, ReadTickets};
use crate::error::ApiError;
use crate::extract::Params;
use crate::state::AppState;

/// How often an idle stream looks at the outbox for events written by other processes.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How often an idle stream sends a `: keep-alive` comment, so proxies and clients keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Outbox rows read per query.
const BATCH: i64 = 256;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventsParams {
    /// Resume after this outbox seq. A `Last-Event-ID` header wins over it (a reconnecting
    /// browser sends the header and repeats the original URL). Without either, the stream starts
    /// at the current end.
    pub after: Option<i64>,
    /// Only this ticket's events (an id or a unique suffix of one).
    pub ticket: Option<String>,
}

/// The `data:` of one SSE event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LiveEvent {
    /// The outbox seq, the SSE `id:` field too.
    pub seq: i64,
    /// The event's key: a thread event's id, `legacy:<ticket>:<position>` for one written
    /// without an id, or `plan:<ticket>:<record>` for a plan record.
    pub event_id: String,
    #[schema(value_type = yoi_core::TicketId)]
    pub ticket: String,
    /// The event's kind, the SSE `event:` field too.
    #[schema(value_type = yoi_db::OutboxKind)]
    pub kind: String,
    /// What the outbox wrote for the event: an `EventPayload`, or a `PlanPayload` for
    /// `plan_record_added` (each kind's schema says which).
    #[schema(value_type = yoi_db::EventPayload)]
    pub payload: serde_json::Value,
}

impl From<OutboxEvent> for LiveEvent {
    fn from(e: OutboxEvent) -> Self {
        LiveEvent {
            seq: e.seq,
            event_id: e.event_id,
            ticket: e.ticket,
            kind: e.kind,
            payload: e.payload,
        }
    }
}

#[utoipa::path(
    operation_id = "stream_events",
    get,
    tag = "events",
    path = "/api/v1/events",
    params(
        EventsParams,
        ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this outbox seq (wins over `after`)"),
    ),
    responses(
        (status = 200, description = "`text/event-stream`: `id:` the outbox seq, `event:` its kind, `data:` a LiveEvent", content_type = "text/event-stream", body = LiveEvent),
        (status = 400, description = "a position that is not a whole number, or an unknown parameter"),
        (status = 401, description = "missing or unknown token"),
        (status = 404, description = "no such ticket"),
        (status = 429, description = "this token already holds `[server] max_streams_per_token` streams open"),
    ),
    security(("bearer" = []))
)]
pub async fn stream(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
    headers: HeaderMap,
    Params(p): Params<EventsParams>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    open(s, &c.token.id, &headers, p).await
}

/// The stream of events after the requested position, counted against `holder` (a token id).
pub async fn open(
    s: AppState,
    holder: &str,
    headers: &HeaderMap,
    p: EventsParams,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, ApiError> {
    let slot = s
        .streams
        .open(holder, s.ws.config.server.max_streams_per_token)?;
    let ticket = match p.ticket {
        Some(t) => Some(s.read(move |ws| ws.resolve(&t)).await?.to_string()),
        None => None,
    };
    let after = match start_position(headers, p.after)? {
        Some(n) => n,
        None => s.db().last_event_seq().await?,
    };
    let feed = Feed {
        db: s.db().clone(),
        ticket,
        after,
        pending: VecDeque::new(),
        changed: s.changed.subscribe(),
        closing: s.closing.subscribe(),
        _slot: slot,
    };
    let events = futures_util::stream::unfold(feed, |mut feed| async move {
        let e = feed.next().await?;
        Some((Ok(sse_event(e)), feed))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

/// Where to start: the `Last-Event-ID` header, else `?after=`, else `None` (the current end).
fn start_position(headers: &HeaderMap, after: Option<i64>) -> Result<Option<i64>, ApiError> {
    // A negative `after` is refused even when the header wins over it.
    if let Some(n) = after.filter(|n| *n < 0) {
        return Err(ApiError::bad_request(format!(
            "an event position cannot be negative, got {n}"
        )));
    }
    let header = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("\u{fffd}").trim())
        .filter(|v| !v.is_empty());
    let position = match header {
        Some(v) => Some(v.parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!(
                "Last-Event-ID must be an event seq (a whole number), got `{v}`"
            ))
        })?),
        None => after,
    };
    match position {
        Some(n) if n < 0 => Err(ApiError::bad_request(format!(
            "an event position cannot be negative, got {n}"
        ))),
        other => Ok(other),
    }
}

fn sse_event(e: OutboxEvent) -> Event {
    let id = e.seq.to_string();
    let kind = e.kind.clone();
    let data = serde_json::to_string(&LiveEvent::from(e)).unwrap_or_else(|_| "{}".into());
    Event::default().id(id).event(kind).data(data)
}

/// One client's position in the outbox.
struct Feed {
    db: Db,
    ticket: Option<String>,
    /// The seq of the last event handed out (or the starting position).
    after: i64,
    pending: VecDeque<OutboxEvent>,
    changed: watch::Receiver<u64>,
    closing: watch::Receiver<bool>,
    /// Gives the holder's stream back when the stream ends (the client went, or the server
    /// is closing).
    _slot: StreamSlot,
}

/// Live-event streams open, by holder (token id).
#[derive(Default)]
pub struct Streams {
    open: Arc<std::sync::Mutex<HashMap<String, usize>>>,
}

impl Streams {
    /// Count one more stream for `holder`, or refuse when it holds `max` already.
    pub fn open(&self, holder: &str, max: usize) -> Result<StreamSlot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(holder.to_string()).or_default();
        if *n >= max {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "this token already holds {n} live-event streams open, the most `[server] max_streams_per_token` allows; close one first"
                ),
            ));
        }
        *n += 1;
        Ok(StreamSlot {
            open: self.open.clone(),
            holder: holder.to_string(),
        })
    }

    /// Streams `holder` holds open now.
    pub fn held(&self, holder: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(holder).copied().unwrap_or(0)
    }
}

/// One open stream, counted until dropped.
pub struct StreamSlot {
    open: Arc<std::sync::Mutex<HashMap<String, usize>>>,
    holder: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.holder) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.holder);
            }
        }
    }
}

impl Feed {
    /// The next event after `self.after`, waiting for one; `None` once the server is closing.
    async fn next(&mut self) -> Option<OutboxEvent> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                self.after = e.seq;
                return Some(e);
            }
            if *self.closing.borrow() {
                return None;
            }
            // Mark the current change as seen before reading, so a mutation that lands after
            // the read wakes the wait below instead of being missed until the next poll.
            self.changed.borrow_and_update();
            match self
                .db
                .events_after(self.after, self.ticket.as_deref(), BATCH)
                .await
            {
                Ok(rows) if !rows.is_empty() => {
                    self.pending.extend(rows);
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "live events: reading the outbox failed"),
            }
            tokio::select! {
                r = self.changed.changed() => if r.is_err() { return None },
                r = self.closing.changed() => if r.is_err() { return None },
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
    }
}
