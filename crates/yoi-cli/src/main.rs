//! The `yoi` binary: parse the command line, run one command, map its outcome to an exit code.

mod cli;
mod commands;
mod context;
mod error;
#[cfg(test)]
mod error_edges;
mod output;
mod remote;
mod target;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
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
