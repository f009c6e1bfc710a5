//! The `shoal` binary: see `shoal --help` and [`shoal_host::commands`].

use std::process::ExitCode;

use clap::Parser;
use shoal_host::commands::{Cli, run, set_threads};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match set_threads(cli.threads).and_then(|()| run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        // `shoal search ... | head`: the reader left; that is not an error.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
