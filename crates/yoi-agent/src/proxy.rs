//! The pod's network proxy, for runs whose network is a list of `host:port`: a run may open a
//! TCP connection only to this proxy (Landlock's port rule), and the proxy lets through only
//! what the list names — `CONNECT host:port` (HTTPS and any other TCP) and plain HTTP requests
//! in absolute form (`GET http://host:port/…`), each answered `403` when its destination is not
//! listed. A plain HTTP request is forwarded with `Connection: close`, so every request on the
//! way out is checked. The proxy listens on loopback only and lives as long as the pod.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::policy::Network;

/// Longest request head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// Start a proxy for `allowed` on a free loopback port; its port.
pub fn start(allowed: Network) -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::Builder::new()
        .name("yoi-sandbox-proxy".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let allowed = allowed.clone();
                let _ = std::thread::Builder::new()
                    .name("yoi-sandbox-proxy-conn".into())
                    .spawn(move || {
                        if let Err(e) = serve(stream, &allowed) {
                            tracing::debug!(error = %e, "sandbox proxy connection ended");
                        }
                    });
            }
        })?;
    Ok(port)
}

fn serve(client: TcpStream, allowed: &Network) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return refuse(
                &client,
                "400 Bad Request",
                "the request head is incomplete or too long",
            );
        }
        let end = line == b"\r\n" || line == b"\n";
        head.extend_from_slice(&line);
        if end {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let first = text.lines().next().unwrap_or_default();
    let mut parts = first.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let Some((host, port, connect)) = destination(method, target) else {
        return refuse(
            &client,
            "400 Bad Request",
            "not a CONNECT or an absolute-form request",
        );
    };
    if !allowed.allows(&host, port) {
        tracing::warn!(%host, port, "the sandbox proxy refused a destination that is not listed");
        return refuse(
            &client,
            "403 Forbidden",
            &format!("{host}:{port} is not in this run's [sandbox.network] list"),
        );
    }
    let upstream = match TcpStream::connect((host.as_str(), port)) {
        Ok(s) => s,
        Err(e) => return refuse(&client, "502 Bad Gateway", &format!("{host}:{port}: {e}")),
    };
    client.set_read_timeout(None)?;
    let mut up_write = upstream.try_clone()?;
    if connect {
        (&client).write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")?;
    } else {
        // The request as it came, but closing after its answer: the next one comes through here
        // again and is checked again.
        let mut out = String::new();
        for line in text.split_inclusive('\n') {
            let name = line.split(':').next().unwrap_or_default().trim();
            if name.eq_ignore_ascii_case("connection")
                || name.eq_ignore_ascii_case("proxy-connection")
            {
                continue;
            }
            if line == "\r\n" || line == "\n" {
                out.push_str("Connection: close\r\n");
            }
            out.push_str(line);
        }
        up_write.write_all(out.as_bytes())?;
    }
    // What the client already sent past the head (a body's start), then both ways until
    // either side closes.
    let buffered = reader.buffer().to_vec();
    up_write.write_all(&buffered)?;
    let mut client_read = reader.into_inner();
    let mut client_write = client.try_clone()?;
    let mut up_read = upstream;
    let to_upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_read, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_read, &mut client_write);
    let _ = client_write.shutdown(std::net::Shutdown::Both);
    let _ = to_upstream.join();
    Ok(())
}

/// Where a request goes: `(host, port, is_connect)`.
fn destination(method: &str, target: &str) -> Option<(String, u16, bool)> {
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = target.rsplit_once(':')?;
        return Some((
            host.trim_matches(['[', ']']).to_string(),
            port.parse().ok()?,
            true,
        ));
    }
    let rest = target.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.to_string(), p.parse().ok()?)
        }
        _ => (authority.to_string(), 80),
    };
    Some((host.trim_matches(['[', ']']).to_string(), port, false))
}

fn refuse(mut client: &TcpStream, status: &str, why: &str) -> std::io::Result<()> {
    let body = format!("yoi sandbox proxy: {why}\n");
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::destination;

    #[test]
    fn destinations_of_connect_and_absolute_requests() {
        assert_eq!(
            destination("CONNECT", "api.example.com:443"),
            Some(("api.example.com".into(), 443, true))
        );
        assert_eq!(
            destination("GET", "http://127.0.0.1:8080/v1/chat"),
            Some(("127.0.0.1".into(), 8080, false))
        );
        assert_eq!(
            destination("POST", "http://user@example.com/x"),
            Some(("example.com".into(), 80, false))
        );
        assert_eq!(
            destination("GET", "http://[::1]:9000/"),
            Some(("::1".into(), 9000, false))
        );
        assert_eq!(destination("GET", "/relative"), None);
        assert_eq!(destination("GET", "https://example.com/"), None);
    }
}
