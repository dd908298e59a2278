//! `autocannon` (npm; `AUTOCANNON` names another binary) as the HTTP benchmarks drive it: one
//! run against one URL or a HAR file of requests, read back from its `--json` summary.

use std::process::Command;

/// What one run measured: requests per second, latency p50 and p99 in milliseconds, and the
/// requests that failed.
pub struct Load {
    pub rps: f64,
    pub p50: f64,
    pub p99: f64,
    pub errors: u64,
    pub non2xx: u64,
}

/// Where autocannon's requests come from: one URL, or a HAR file of many (for the URL's host).
pub enum Target {
    Url(String),
    Har {
        file: std::path::PathBuf,
        base: String,
    },
}

/// The autocannon binary: `AUTOCANNON`, else `autocannon` on the path.
pub fn tool() -> String {
    std::env::var("AUTOCANNON").unwrap_or_else(|_| "autocannon".into())
}

/// Load `target` with `connections` keep-alive connections for `seconds`, with a bearer
/// `token` when given: a closed loop, each connection sending its next request as soon as the
/// last is answered.
pub fn run(
    tool: &str,
    target: &Target,
    token: Option<&str>,
    connections: usize,
    seconds: u64,
) -> Load {
    run_paced(tool, target, token, connections, seconds, None)
}

/// [`run`], with the connections paced to `rate` requests a second in all when given
/// (autocannon's `-R`): busy clients, a server that is not saturated.
pub fn run_paced(
    tool: &str,
    target: &Target,
    token: Option<&str>,
    connections: usize,
    seconds: u64,
    rate: Option<u64>,
) -> Load {
    let mut cmd = Command::new(tool);
    cmd.args(["-c", &connections.to_string(), "-d", &seconds.to_string()]);
    if let Some(r) = rate {
        cmd.args(["-R", &r.to_string()]);
    }
    cmd.args(["--json", "--renderStatusCodes"]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("authorization=Bearer {t}")]);
    }
    match target {
        Target::Url(url) => cmd.arg(url),
        Target::Har { file, base } => cmd.arg("--har").arg(file).arg(base),
    };
    let out = cmd
        .output()
        .expect("autocannon runs (npm install -g autocannon)");
    assert!(
        out.status.success(),
        "autocannon failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("autocannon --json prints JSON");
    let num = |p: &str| {
        v.pointer(p)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
    };
    Load {
        rps: num("/requests/average"),
        p50: num("/latency/p50"),
        p99: num("/latency/p99"),
        errors: num("/errors") as u64 + num("/timeouts") as u64,
        non2xx: num("/non2xx") as u64,
    }
}
