//! Slow and idle clients against a real server on loopback (`crates/yoi-server/src/listen.rs`):
//! trickled heads and bodies are cut at their timeouts while other clients are served, an idle
//! kept-alive connection is closed, a live-event stream outlives the idle timeout, and each
//! token holds a bounded number of streams. The timeouts are configured to one second, so each
//! test waits about that long for the server to act; every wait ends on what the socket
//! reports, with a deadline that turns a hang into a failure.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Backend, Server};

/// Longer than any timeout these tests configure, by enough for a loaded machine.
const GRACE: Duration = Duration::from_secs(8);

fn connect(server: &Server) -> TcpStream {
    let s = TcpStream::connect(server.addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s
}

/// Whether the server has closed `s` (end of stream or reset), without blocking. Bytes it
/// sent are read and dropped.
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let out = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).unwrap();
    out
}

/// Block until the server closes `s`; how long that took from `since`. Fails past `GRACE`.
fn wait_closed(s: &mut TcpStream, since: Instant) -> Duration {
    s.set_read_timeout(Some(GRACE)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return since.elapsed(),
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("the server kept the connection open for {GRACE:?}")
            }
            Err(_) => return since.elapsed(),
        }
    }
}

/// Send `head` and read one whole response on `s`: its status line and headers, and its body
/// (by `Content-Length`).
fn exchange(s: &mut TcpStream, head: &str) -> (String, String) {
    s.write_all(head.as_bytes()).unwrap();
    s.set_read_timeout(Some(GRACE)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).expect("read the response");
        assert!(
            n > 0,
            "closed before a response: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((headers, body)) = text.split_once("\r\n\r\n") {
            let len: usize = headers
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if body.len() >= len {
                return (headers.to_string(), body.to_string());
            }
        }
    }
}

#[test]
fn trickling_heads_are_closed_within_the_header_timeout_while_others_are_served() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.header_timeout_secs = 1;
    });
    let started = Instant::now();
    let mut conns: Vec<(TcpStream, Option<Duration>)> = (0..20)
        .map(|_| {
            let mut s = connect(&server);
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .unwrap();
            (s, None)
        })
        .collect();
    let mut served_meanwhile = None;
    while conns.iter().any(|c| c.1.is_none()) {
        assert!(
            started.elapsed() < GRACE,
            "trickling connections still open after {GRACE:?}"
        );
        for (s, at) in conns.iter_mut().filter(|c| c.1.is_none()) {
            if closed(s) {
                *at = Some(started.elapsed());
            } else {
                // One more header byte; the head never ends.
                let _ = s.write(b"a");
            }
        }
        if served_meanwhile.is_none() {
            let open = conns.iter().filter(|c| c.1.is_none()).count();
            server.get("/healthz").send().expect(200);
            served_meanwhile = Some(open);
        }
        // Pacing of the trickle, not a wait for the server.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        served_meanwhile.is_some_and(|open| open > 0),
        "a normal request was answered while trickling connections were open: {served_meanwhile:?}"
    );
    for (i, (_, at)) in conns.iter().enumerate() {
        let at = at.unwrap();
        assert!(
            at >= Duration::from_millis(900) && at < Duration::from_secs(4),
            "connection {i} was closed after {at:?}, not at the 1 s header timeout"
        );
    }
    // The server is still whole.
    server.get("/healthz").send().expect(200);
}

#[test]
fn a_trickled_body_is_cut_and_writes_nothing() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.body_timeout_secs = 1;
    });
    let before = server.tree();
    let mut s = connect(&server);
    let head = format!(
        "POST /api/v1/tickets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{{\"title\": \"slow\", \"body\": \"",
        server.tokens.human
    );
    s.write_all(head.as_bytes()).unwrap();
    let sent = Instant::now();
    let mut cut = None;
    while cut.is_none() {
        assert!(
            sent.elapsed() < GRACE,
            "the body still trickles after {GRACE:?}"
        );
        if closed(&mut s) || s.write(b"x").is_err() {
            cut = Some(sent.elapsed());
        }
        // Pacing of the trickle, not a wait for the server.
        std::thread::sleep(Duration::from_millis(100));
    }
    let cut = cut.unwrap();
    assert!(
        cut >= Duration::from_millis(900) && cut < Duration::from_secs(4),
        "the trickled body was cut after {cut:?}, not at the 1 s body timeout"
    );
    assert_eq!(server.tree(), before, "no ticket was written");
    // A body sent at once is still read.
    server.create("quick", "");
}

#[test]
fn an_idle_kept_alive_connection_is_closed_at_the_idle_timeout() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.idle_timeout_secs = 1;
    });
    let mut s = connect(&server);
    let (headers, _) = exchange(&mut s, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert!(headers.starts_with("HTTP/1.1 200"), "{headers}");
    let answered = Instant::now();
    // The same connection serves a second request at once: it is kept alive.
    let (headers, _) = exchange(&mut s, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert!(headers.starts_with("HTTP/1.1 200"), "{headers}");
    let idle = wait_closed(&mut s, answered);
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(4),
        "the idle connection was closed after {idle:?}, not at the 1 s idle timeout"
    );
}

/// Open `GET {path}` as a live-event stream with `auth` headers; the status line and headers.
fn open_stream(server: &Server, path: &str, auth: &str) -> (TcpStream, String) {
    let mut s = connect(server);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{auth}\r\n"
    )
    .unwrap();
    s.set_read_timeout(Some(GRACE)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut buf).expect("read the stream's head");
        assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&got));
        got.push(buf[0]);
    }
    (s, String::from_utf8(got).unwrap())
}

#[test]
fn a_live_event_stream_outlives_the_idle_timeout() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.idle_timeout_secs = 1;
        ws.config.server.header_timeout_secs = 1;
    });
    let auth = format!("Authorization: Bearer {}\r\n", server.tokens.read);
    let (mut stream, head) = open_stream(&server, "/api/v1/events", &auth);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A plain connection opened after the stream, and idle since its answer, is the clock: once
    // the server has closed it, the stream has been quiet for longer than the idle timeout.
    let mut clock = connect(&server);
    exchange(
        &mut clock,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    wait_closed(&mut clock, Instant::now());
    assert!(
        !closed(&mut stream),
        "the stream was cut by the idle timeout"
    );
    let id = server.create("Seen live", "");
    stream.set_read_timeout(Some(GRACE)).unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains(&id) {
        let n = stream
            .read(&mut buf)
            .expect("the stream delivers the event");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("event: ticket_created"), "{seen}");
}

#[test]
fn a_token_holds_at_most_its_streams_and_one_more_is_429() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.max_streams_per_token = 2;
    });
    let auth = format!("Authorization: Bearer {}\r\n", server.tokens.read);
    let first = open_stream(&server, "/api/v1/events", &auth);
    let second = open_stream(&server, "/api/v1/events", &auth);
    assert!(first.1.starts_with("HTTP/1.1 200"), "{}", first.1);
    assert!(second.1.starts_with("HTTP/1.1 200"), "{}", second.1);
    let err = server
        .get("/api/v1/events")
        .token(&server.tokens.read)
        .send()
        .expect_error(429, "too_many_streams");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("[server] max_streams_per_token"),
        "{err}"
    );
    // Another token has its own streams.
    let other = format!("Authorization: Bearer {}\r\n", server.tokens.human);
    let (_s, head) = open_stream(&server, "/api/v1/events", &other);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn shutdown_closes_idle_trickling_and_streaming_connections_at_once() {
    let server = Server::start(Backend::Sqlite);
    let auth = format!("Authorization: Bearer {}\r\n", server.tokens.read);
    let (mut stream, head) = open_stream(&server, "/api/v1/events", &auth);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut idle = connect(&server);
    exchange(
        &mut idle,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    let mut trickling = connect(&server);
    trickling
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        .unwrap();
    let mut fresh = connect(&server);
    let asked = Instant::now();
    // `stop` returns once `serve` has: every connection has ended.
    server.stop();
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "shutdown waited {took:?}, as if for the 10 s header timeout"
    );
    for s in [&mut stream, &mut idle, &mut trickling, &mut fresh] {
        wait_closed(s, asked);
    }
}

#[test]
fn shutdown_lets_a_request_in_flight_finish() {
    let server = Server::start(Backend::Sqlite);
    let mut s = connect(&server);
    let body = r#"{"title": "Finished", "body": ""}"#;
    write!(
        s,
        "POST /api/v1/tickets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        server.tokens.human,
        body.len(),
    )
    .unwrap();
    // The server asks for the body once the handler reads it: the request is in flight.
    s.set_read_timeout(Some(GRACE)).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "closed before 100 Continue");
        got.push(byte[0]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 100"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    let root = server.root().to_path_buf();
    let stopper = std::thread::spawn(move || server.stop());
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let _stopped = stopper.join().unwrap();
    let titles: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path().join("item.md")).unwrap())
        .collect();
    assert!(
        titles.iter().any(|t| t.contains("title: Finished")),
        "{titles:?}"
    );
}
