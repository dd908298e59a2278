//! The `yoi` binary: parse the command line, run one command, map its outcome to an exit code.

mod cli;
mod commands;
mod context;
mod error;
#[cfg(test)]
mod error_edges;
mod launcher;
mod output;
mod remote;
mod target;

use clap::Parser;

fn main() {
    // The sandbox launcher between a pod and each agent or command it runs: single-threaded,
    // before anything else starts.
    let mut args = std::env::args();
    if args.nth(1).as_deref() == Some("__sandbox") {
        let rest: Vec<String> = args.collect();
        std::process::exit(launcher::main(&rest));
    }
    let cli = cli::Cli::parse();
    // A command whose output goes to a pipe that closes early (`yoi ticket show … | head`)
    // ends quietly, as other command-line tools do, instead of panicking on the write. Not for
    // the long-running ones: the server and pods write to sockets and agents' pipes, where a
    // closed peer is an error to handle, not a reason to die.
    if !matches!(cli.command, cli::Command::Serve(_) | cli::Command::Pod(_)) {
        // SAFETY: restoring the default disposition of one signal before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let code = match commands::run(cli) {
        Ok(()) => 0,
        Err(err) => {
            if let Some(message) = err.message() {
                eprintln!("error: {message}");
            }
            err.exit_code()
        }
    };
    std::process::exit(code);
}
