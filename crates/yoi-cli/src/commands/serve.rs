//! `yoi serve [--listen ADDR:PORT] [--log-json] [--tls-self-signed]`.

use std::net::SocketAddr;

use yoi_server::{serve_with_tls, shutdown_signal, ServeOptions};

use crate::cli::ServeArgs;
use crate::context::Env;
use crate::error::CliError;

pub fn run(env: &Env, a: &ServeArgs) -> Result<(), CliError> {
    // Before the server's runtime starts its threads (each could take an arena of its own).
    yoi_server::memory::limit_arenas();
    let ws = env.files_only("yoi serve")?;
    // Tokens, keys and the database are the owner's alone, in workspaces made before that
    // rule too (docs/security.md). A folder it cannot fix (an entry another user owns) is said,
    // not a reason to stay down.
    if let Err(e) = ws.secure_local_dir() {
        eprintln!(
            "warning: could not make {} private (0700, its entries 0600): {e}",
            ws.local_dir().display()
        );
    }
    let listen = a
        .listen
        .clone()
        .unwrap_or_else(|| ws.config.server.listen.clone());
    let listen: SocketAddr = listen
        .parse()
        .map_err(|_| CliError::Usage(format!("--listen must be ADDRESS:PORT, got `{listen}`")))?;
    super::log_to_stderr(a.log_json);
    // The server gets a runtime of its own with a worker per core; the CLI's shared one has a
    // single worker, enough for a command's database calls but not for serving many clients.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    let orchestrate = ws.config.router.enabled;
    // Pods are this very binary: `yoi -C ROOT pod run …`.
    let pods = std::env::current_exe()
        .ok()
        .map(|program| yoi_server::supervisor::PodLauncher {
            program,
            args: vec![
                "-C".into(),
                ws.root().display().to_string(),
                "pod".into(),
                "run".into(),
            ],
        });
    // Install the signal handlers now, before the server says it is listening.
    let shutdown = {
        let _runtime = rt.enter();
        shutdown_signal()
    };
    let tls = a
        .tls_self_signed
        .then(|| yoi_server::tls::TlsSource::SelfSigned {
            dir: ws.local_dir().join("tls"),
        });
    rt.block_on(serve_with_tls(
        ws,
        ServeOptions {
            listen,
            orchestrate,
            pods,
        },
        tls,
        shutdown,
        |addr, login, tls| {
            use std::io::Write;
            let scheme = if tls.is_some() { "https" } else { "http" };
            // The line scripts wait for, then the dashboard's one-time login link, in one
            // write: a script that stops reading after the first line must not make the second
            // fail.
            let mut out = format!("listening on {scheme}://{addr}\n");
            if let Some(login) = login {
                // A browser cannot open `0.0.0.0`: the link names an address it can reach.
                let reach = yoi_server::listen::reachable(addr);
                out.push_str(&format!(
                    "dashboard: {scheme}://{reach}{login} (one-time login link; `yoi dashboard` makes another)\n"
                ));
            }
            if let Some(tls) = tls {
                out.push_str(&format!(
                    "tls: {} (certificate {}; pods elsewhere: `yoi pod run --pin {}` or `--ca` with the certificate)\n",
                    tls.fingerprint,
                    tls.cert_path.display(),
                    tls.fingerprint
                ));
            } else if !addr.ip().is_loopback() {
                out.push_str(
                    "warning: serving plain HTTP beyond this machine ([server] plain_http = true): tokens and sessions cross the network unencrypted\n",
                );
            }
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(out.as_bytes());
            let _ = stdout.flush();
        },
    ))
    .map_err(|e| match e {
        yoi_server::ServerError::Store(s) => CliError::Store(s),
        other => CliError::Refused(other.to_string()),
    })
}
