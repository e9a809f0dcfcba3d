//! The `smtsched` binary: parses arguments, runs a command, maps the outcome to an exit code.
//! No model logic lives here.

mod args;
mod commands;
mod errors;

use clap::Parser;
use std::io::Write;

fn main() {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                errors::EXIT_BAD_INPUT
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = commands::run(cli.command);
    let _ = std::io::stdout().flush();
    if let Err(e) = result {
        if errors::is_broken_pipe(&e) {
            std::process::exit(0);
        }
        eprintln!("smtsched: error: {}", errors::one_line(&e));
        std::process::exit(errors::exit_code(&e));
    }
}
