//! A webhook receiver for the notification tests: a plain HTTP/1.1 server on loopback, in a
//! thread, that does what a careful receiver does — checks `Yoi-Signature` (HMAC-SHA-256 over
//! `<Yoi-Timestamp>.<body>`) on `/hook` and refuses a bad one with 401 — and records every
//! request it accepts. While `down` it answers 503, as a receiver in an outage would. Stopped
//! (and its thread joined) when dropped.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request the receiver accepted.
#[derive(Debug, Clone)]
pub struct Got {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Got {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

pub struct Receiver {
    pub addr: String,
    pub down: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<Got>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    /// Listen on `127.0.0.1:0`; webhooks to `/hook` must be signed with `secret`.
    pub fn start(secret: &str) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let got = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, d, s) = (got.clone(), down.clone(), stop.clone());
        let secret = secret.to_string();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    answer(conn, &g, &d, &secret);
                }
            }
        });
        Receiver {
            addr,
            down,
            got,
            stop,
            thread: Some(thread),
        }
    }

    /// The requests accepted on `path`, in arrival order.
    pub fn got(&self, path: &str) -> Vec<Got> {
        self.all().into_iter().filter(|g| g.path == path).collect()
    }

    pub fn all(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answer(conn: TcpStream, got: &Mutex<Vec<Got>>, down: &AtomicBool, secret: &str) {
    let Ok(read_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let status = if down.load(Ordering::SeqCst) {
        "503 Service Unavailable"
    } else if path == "/hook" && !signed_well(&headers, &body, secret) {
        "401 Unauthorized"
    } else {
        got.lock().unwrap().push(Got {
            path,
            headers,
            body,
        });
        "200 OK"
    };
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Length: 6\r\nConnection: close\r\n\r\nthanks"
    );
}

/// The check a receiver makes: `Yoi-Signature` is `v1=` and the hex HMAC-SHA-256 of
/// `<Yoi-Timestamp>.<body>` under the shared secret.
fn signed_well(headers: &BTreeMap<String, String>, body: &[u8], secret: &str) -> bool {
    let (Some(ts), Some(sig)) = (headers.get("yoi-timestamp"), headers.get("yoi-signature")) else {
        return false;
    };
    let mut signed = format!("{ts}.").into_bytes();
    signed.extend_from_slice(body);
    *sig == format!(
        "v1={}",
        yoi_core::hmac_sha256_hex(secret.as_bytes(), &signed)
    )
}
