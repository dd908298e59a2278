//! Two checks in front of the dashboard and the API: the `Host` allowlist (against DNS
//! rebinding), and the security headers every page and every API answer carries.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// Whether a request naming `host` (a `Host` header value, port included) may be answered: an
/// IP literal (a rebound name never arrives as one), `localhost` or a name below it, or a name
/// in `[server] allowed_hosts`. A request without a `Host` (HTTP/1.0 tools) passes.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        // [v6]:port
        Some(rest) => {
            return rest
                .split(']')
                .next()
                .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(n, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                n
            } else {
                host
            }
        }),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
        || allowed
            .iter()
            .any(|a| a.trim_end_matches('.').eq_ignore_ascii_case(&name))
}

/// Refuse a request whose `Host` is not allowed, before any route sees it.
pub async fn hosts(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(host) = req.headers().get(header::HOST) {
        let ok = host
            .to_str()
            .is_ok_and(|h| host_allowed(h, &s.ws.config.server.allowed_hosts));
        if !ok {
            return (
                StatusCode::MISDIRECTED_REQUEST,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "this server does not answer for that host name; add it to [server] allowed_hosts in .yoi/workspace.toml if you mean it\n",
            )
                .into_response();
        }
    }
    next.run(req).await
}

/// No inline script, no framing, no foreign origin: the headers of every dashboard answer.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

/// The headers of every API answer (`/api/…`, its 404s included, `/healthz` and `/readyz`):
/// it is data, never a page — a browser that is led to one must not guess another type, keep
/// it, or run anything in it.
pub async fn api_headers(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let api = path.starts_with("/api/") || path == "/healthz" || path == "/readyz";
    let mut res = next.run(req).await;
    if !api {
        return res;
    }
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn ip_literals_and_localhost_pass_other_names_do_not() {
        let none: Vec<String> = Vec::new();
        for ok in [
            "127.0.0.1:7311",
            "127.0.0.1",
            "[::1]:80",
            "10.0.0.5:7311",
            "localhost:1",
            "LOCALHOST",
            "app.localhost:9",
        ] {
            assert!(host_allowed(ok, &none), "{ok} should pass");
        }
        for bad in [
            "evil.example:7311",
            "evil.example",
            "127.0.0.1.evil.example",
            "[nonsense]:1",
            "localhost.evil.example",
        ] {
            assert!(!host_allowed(bad, &none), "{bad} should be refused");
        }
        let allowed = vec!["build-box.lan".to_string()];
        assert!(host_allowed("build-box.lan:7311", &allowed));
        assert!(!host_allowed("other.lan:7311", &allowed));
    }
}
