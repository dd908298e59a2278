//! `yoi dashboard [--no-open]`: a one-time login link to the running server's dashboard.

use crate::cli::DashboardArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::remote::Remote;

pub fn run(env: &Env, a: &DashboardArgs) -> Result<(), CliError> {
    let ws = env.files_only("yoi dashboard")?;
    let Some(remote) = Remote::find(&ws.local_dir(), None)? else {
        return Err(CliError::Refused(
            "no yoi server is running for this workspace; start one with `yoi serve` (it prints a login link too)".into(),
        ));
    };
    let url = remote.dashboard_login()?;
    println!("{url}");
    if !a.no_open {
        open_browser(&url);
    }
    Ok(())
}

/// Hand the link to the desktop's opener, if there is one; its own process group, not waited
/// for (a browser outlives this command by design). Without one the printed link is the way.
fn open_browser(url: &str) {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    for opener in ["xdg-open", "open"] {
        let started = Command::new(opener)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        if started.is_ok() {
            return;
        }
    }
}
