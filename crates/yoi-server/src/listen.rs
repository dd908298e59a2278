//! The listener: yoi serve's own accept loop, so a slow or idle client cannot hold the server.
//!
//! `axum::serve` has no timeouts and no connection cap, so this module accepts connections
//! itself and serves each with hyper's HTTP/1 connection. A watchdog per connection knows what
//! the connection is doing and how long that may take (`[server]` in workspace.toml):
//!
//! - waiting for a request: a new connection has `header_timeout_secs` to send its head, a
//!   kept-alive one `idle_timeout_secs` to start its next request;
//! - reading a head: `header_timeout_secs` from its first byte, however slowly it trickles;
//! - reading a body: `body_timeout_secs` from the end of the head, however slowly it trickles;
//! - a request being answered: no limit while the handler works or the client reads the
//!   response — a live-event stream stays open as long as its client reads it — but a write
//!   that the client leaves blocked for `idle_timeout_secs` ends the connection.
//!
//! When the deadline of the current phase passes, the connection is dropped (the socket
//! closes). At most `max_connections` are served at once; the rest wait in the kernel's listen
//! queue, where they hold no descriptor of ours. [`raise_fd_limit`] lifts the soft
//! `RLIMIT_NOFILE` to the hard limit at start and [`connection_cap`] keeps the cap below it, so
//! a flood of connections never leaves the server without descriptors for its database, its
//! files and its pods. Shutdown stops accepting, closes the connections that are between
//! requests or still sending a head, lets every request being answered finish, and waits for
//! those (the watchdog still cuts the slow ones).
//!
//! With TLS ([`crate::tls`]) every connection's handshake runs first, inside the time its
//! first request head has: the watchdog sees the encrypted bytes, so a client that stalls in
//! the handshake is cut as one that stalls in its head.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::time::Instant;
use yoi_store::config::ServerSection;

/// How long each phase of a connection may take (from `[server]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub header: Duration,
    pub body: Duration,
    pub idle: Duration,
    /// Connections served at once, already lowered by [`connection_cap`].
    pub max_connections: usize,
}

impl Limits {
    /// The limits `[server]` sets, with the connection cap kept below `fd_limit`.
    pub fn from_config(c: &ServerSection, fd_limit: Option<u64>) -> Limits {
        Limits {
            header: Duration::from_secs(c.header_timeout_secs),
            body: Duration::from_secs(c.body_timeout_secs),
            idle: Duration::from_secs(c.idle_timeout_secs),
            max_connections: connection_cap(c.max_connections, fd_limit),
        }
    }
}

/// Descriptors kept free for everything but client connections: the database and its journal,
/// the file watch, ticket files being read or written, pods' pipes and logs. A quarter of the
/// limit, and never less than this.
const MIN_RESERVE: u64 = 64;

/// The connection cap: the configured one, lowered so that a quarter of the descriptor limit
/// (at least [`MIN_RESERVE`]) stays free for the rest of the server; at least 1.
pub fn connection_cap(configured: usize, fd_limit: Option<u64>) -> usize {
    match fd_limit {
        None => configured.max(1),
        Some(limit) => {
            let reserve = (limit / 4).max(MIN_RESERVE);
            let room = usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX);
            configured.min(room).max(1)
        }
    }
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit; the soft limit in force afterwards
/// (`None` when it cannot be read, or is unlimited).
pub fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        } else {
            tracing::warn!(
                soft = lim.rlim_cur,
                hard = lim.rlim_max,
                "could not raise the file-descriptor limit"
            );
        }
    }
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Serve `app` on `listener` under `limits` until `shutdown` completes, then let the requests
/// in flight finish and return.
pub async fn run(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = accept(&listener, &slots) => a,
        };
        let Some((stream, peer, slot)) = accepted else {
            continue;
        };
        let (app, stop, tls) = (app.clone(), stop_rx.clone(), tls.clone());
        tokio::spawn(async move {
            serve_connection(stream, peer, app, limits, tls, stop).await;
            drop(slot);
        });
    }
    drop(listener);
    stop_tx.send_replace(true);
    // Every connection gives its slot back when it ends.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// The next connection, once a slot is free; `None` after an accept error (logged; a full
/// descriptor table makes the loop pause briefly instead of spinning).
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> Option<(TcpStream, SocketAddr, tokio::sync::OwnedSemaphorePermit)> {
    let slot = slots.clone().acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, peer)) => Some((stream, peer, slot)),
        Err(e) => {
            let out_of_descriptors = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
            tracing::warn!(error = %e, "accepting a connection failed");
            if out_of_descriptors {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        }
    }
}

/// Serve one connection until it ends, the watchdog cuts it, or shutdown has let its request
/// in flight finish.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let dog = Arc::new(Watchdog::new(limits));
    let watched = Watched {
        inner: stream,
        dog: dog.clone(),
    };
    let Some(acceptor) = tls else {
        return serve_http(TokioIo::new(watched), peer, app, dog, stop).await;
    };
    let secured = tokio::select! {
        r = acceptor.accept(watched) => match r {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, %peer, "the TLS handshake failed");
                return;
            }
        },
        phase = dog.expired() => {
            tracing::debug!(%peer, phase, "closing a connection that took too long");
            return;
        }
        _ = stop.wait_for(|s| *s) => return,
    };
    serve_http(TokioIo::new(secured), peer, app, dog, stop).await;
}

/// Serve HTTP/1 on `io` (the socket, or TLS over it) as [`serve_connection`] says.
async fn serve_http<I>(
    io: TokioIo<I>,
    peer: SocketAddr,
    app: Router,
    dog: Arc<Watchdog>,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service_dog = dog.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let (dog, mut app) = (service_dog.clone(), app.clone());
        async move {
            dog.request_started(hyper::body::Body::is_end_stream(req.body()));
            let (mut parts, body) = req.into_parts();
            parts.extensions.insert(ConnectInfo(peer));
            let body = Body::new(RequestBody {
                inner: body,
                dog: dog.clone(),
            });
            let req = axum::http::Request::from_parts(parts, body);
            std::future::poll_fn(|cx| {
                <Router as tower_service::Service<axum::http::Request<Body>>>::poll_ready(
                    &mut app, cx,
                )
            })
            .await?;
            let res = tower_service::Service::call(&mut app, req).await?;
            Ok::<_, Infallible>(res.map(|inner| ResponseBody { inner, dog }))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        // The watchdog times the head; hyper's own timer would also run while idle.
        .header_read_timeout(None)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                }
                return;
            }
            phase = dog.expired() => {
                tracing::debug!(%peer, phase, "closing a connection that took too long");
                return;
            }
            _ = stop.wait_for(|s| *s), if !stopping => {
                // A request being answered finishes; a connection between requests, or one
                // still sending a head, has nothing to finish and is closed now.
                if !dog.busy() {
                    return;
                }
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// What a connection is doing, and until when it may.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No byte of the next request yet; `fresh` on a new connection, whose head must be
    /// whole by `until` (a kept-alive one's head gets its own time once it starts).
    Waiting { until: Instant, fresh: bool },
    /// The head has started arriving.
    Head { until: Instant },
    /// A request is being answered; its body is still arriving until `body_until`.
    Busy { body_until: Option<Instant> },
}

struct Watchdog {
    limits: Limits,
    state: Mutex<(Phase, Option<Instant>)>,
    changed: Notify,
}

impl Watchdog {
    fn new(limits: Limits) -> Watchdog {
        let first = Phase::Waiting {
            until: Instant::now() + limits.header,
            fresh: true,
        };
        Watchdog {
            limits,
            state: Mutex::new((first, None)),
            changed: Notify::new(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut (Phase, Option<Instant>)) -> R) -> R {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s)
    }

    fn set(&self, phase: Phase) {
        self.with(|s| s.0 = phase);
        self.changed.notify_one();
    }

    /// Bytes arrived: the head of the next request has started.
    fn read_some(&self) {
        let started = self.with(|s| match s.0 {
            Phase::Waiting { until, fresh } => {
                let until = if fresh {
                    until
                } else {
                    Instant::now() + self.limits.header
                };
                s.0 = Phase::Head { until };
                true
            }
            _ => false,
        });
        if started {
            self.changed.notify_one();
        }
    }

    fn request_started(&self, no_body: bool) {
        let body_until = (!no_body).then(|| Instant::now() + self.limits.body);
        self.set(Phase::Busy { body_until });
    }

    fn body_done(&self) {
        self.with(|s| {
            if let Phase::Busy { body_until } = &mut s.0 {
                *body_until = None;
            }
        });
        self.changed.notify_one();
    }

    fn response_done(&self) {
        self.set(Phase::Waiting {
            until: Instant::now() + self.limits.idle,
            fresh: false,
        });
    }

    /// Whether a request is being answered (its head has arrived).
    fn busy(&self) -> bool {
        self.with(|s| matches!(s.0, Phase::Busy { .. }))
    }

    /// A write could not proceed (`true`) or did (`false`).
    fn write_blocked(&self, blocked: bool) {
        let first = self.with(|s| match (blocked, s.1) {
            (true, None) => {
                s.1 = Some(Instant::now());
                true
            }
            (false, Some(_)) => {
                s.1 = None;
                false
            }
            _ => false,
        });
        if first {
            self.changed.notify_one();
        }
    }

    /// The next deadline and the phase it belongs to.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        let (phase, blocked) = self.with(|s| *s);
        let phase = match phase {
            Phase::Waiting { until, .. } => Some((until, "waiting for a request")),
            Phase::Head { until } => Some((until, "reading a request head")),
            Phase::Busy { body_until } => body_until.map(|u| (u, "reading a request body")),
        };
        let write = blocked.map(|since| (since + self.limits.idle, "writing to a stalled client"));
        match (phase, write) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Completes when the current phase's deadline passes; names the phase.
    async fn expired(&self) -> &'static str {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.deadline() {
                Some((at, what)) if at <= Instant::now() => return what,
                Some((at, _)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// The socket, telling the watchdog when bytes arrive and when writes stall.
struct Watched {
    inner: TcpStream,
    dog: Arc<Watchdog>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.dog.read_some();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.dog.write_blocked(r.is_pending());
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.dog.write_blocked(r.is_pending());
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request body that tells the watchdog when it has all arrived (or is no longer wanted).
struct RequestBody {
    inner: Incoming,
    dog: Arc<Watchdog>,
}

impl hyper::body::Body for RequestBody {
    type Data = hyper::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.dog.body_done();
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        self.dog.body_done();
    }
}

/// A response body that tells the watchdog when hyper is done with it.
struct ResponseBody {
    inner: Body,
    dog: Arc<Watchdog>,
}

impl hyper::body::Body for ResponseBody {
    type Data = hyper::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        self.dog.response_done();
    }
}

#[cfg(test)]
mod tests {
    use super::{connection_cap, Limits, Watchdog};
    use std::time::Duration;
    use tokio::time::Instant;

    fn limits(ms: u64) -> Limits {
        Limits {
            header: Duration::from_millis(ms),
            body: Duration::from_millis(2 * ms),
            idle: Duration::from_millis(3 * ms),
            max_connections: 1,
        }
    }

    /// The phase the watchdog times now (`None`: nothing is timed).
    fn timing(dog: &Watchdog) -> Option<&'static str> {
        dog.deadline().map(|(_, what)| what)
    }

    #[tokio::test]
    async fn each_phase_has_its_own_deadline_and_a_response_being_read_has_none() {
        let l = limits(10_000);
        let dog = Watchdog::new(l);
        let accepted = Instant::now();
        assert_eq!(timing(&dog), Some("waiting for a request"));
        // The first head's time counts from the accept, not from its first byte.
        let first = dog.deadline().unwrap().0;
        dog.read_some();
        assert_eq!(timing(&dog), Some("reading a request head"));
        assert_eq!(dog.deadline().unwrap().0, first);
        assert!(first <= accepted + l.header + Duration::from_millis(50));
        dog.request_started(false);
        assert_eq!(timing(&dog), Some("reading a request body"));
        dog.body_done();
        assert_eq!(
            timing(&dog),
            None,
            "a handler at work, or a response read, is not timed"
        );
        dog.write_blocked(true);
        assert_eq!(timing(&dog), Some("writing to a stalled client"));
        dog.write_blocked(false);
        assert_eq!(timing(&dog), None);
        dog.response_done();
        assert_eq!(timing(&dog), Some("waiting for a request"));
        let idle = dog.deadline().unwrap().0;
        assert!(idle > first, "a kept-alive connection waits the idle limit");
        // A kept-alive connection's next head gets a header limit of its own.
        dog.read_some();
        assert_eq!(timing(&dog), Some("reading a request head"));
        // A request without a body goes straight to its handler.
        dog.request_started(true);
        assert_eq!(timing(&dog), None);
    }

    #[tokio::test]
    async fn a_write_the_client_leaves_blocked_expires_after_the_idle_limit() {
        let l = limits(20);
        let dog = Watchdog::new(l);
        dog.request_started(true);
        let blocked = Instant::now();
        dog.write_blocked(true);
        assert_eq!(dog.expired().await, "writing to a stalled client");
        assert!(blocked.elapsed() >= l.idle);
    }

    #[test]
    fn the_cap_stays_below_the_descriptor_limit() {
        assert_eq!(connection_cap(1024, Some(256)), 192);
        assert_eq!(connection_cap(1024, Some(20_000)), 1024);
        assert_eq!(connection_cap(100, Some(1024)), 100);
        assert_eq!(connection_cap(1024, Some(40)), 1);
        assert_eq!(connection_cap(7, None), 7);
    }
}

/// The address a browser elsewhere can reach for a server bound to `addr`: the address itself,
/// or for the unspecified one (`0.0.0.0`, `::`) the machine's address on its default route
/// (found without sending anything), else loopback.
pub fn reachable(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
    if !addr.ip().is_unspecified() {
        return addr;
    }
    // Connecting a UDP socket only picks the route and the local address; no packet leaves.
    let (bind, probe, fallback): (SocketAddr, SocketAddr, IpAddr) = if addr.is_ipv4() {
        (
            (Ipv4Addr::UNSPECIFIED, 0).into(),
            (Ipv4Addr::new(192, 0, 2, 1), 9).into(),
            Ipv4Addr::LOCALHOST.into(),
        )
    } else {
        (
            (Ipv6Addr::UNSPECIFIED, 0).into(),
            (
                "2001:db8::1"
                    .parse::<Ipv6Addr>()
                    .unwrap_or(Ipv6Addr::LOCALHOST),
                9,
            )
                .into(),
            Ipv6Addr::LOCALHOST.into(),
        )
    };
    let ip = UdpSocket::bind(bind)
        .and_then(|s| s.connect(probe).and_then(|_| s.local_addr()))
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(fallback);
    SocketAddr::new(ip, addr.port())
}

#[cfg(test)]
mod reachable_tests {
    use super::reachable;

    #[test]
    fn a_wildcard_address_becomes_one_a_browser_can_reach() {
        let bound: std::net::SocketAddr = "127.0.0.1:7311".parse().unwrap();
        assert_eq!(reachable(bound), bound, "a concrete address stays");
        let wild: std::net::SocketAddr = "0.0.0.0:7311".parse().unwrap();
        let seen = reachable(wild);
        assert!(!seen.ip().is_unspecified(), "{seen}");
        assert_eq!(seen.port(), 7311);
    }
}
