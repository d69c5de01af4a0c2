//! The `ingle` binary: the command line of [`ingle_cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(ingle_cli::run_command(std::env::args_os().collect()))
}
