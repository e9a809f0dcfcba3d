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
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // A bare `smtsched` (or a command group without its subcommand): the usage.
            let _ = e.print();
            std::process::exit(errors::EXIT_BAD_INPUT);
        }
        Err(e) => {
            // Bad arguments: clap's first line names the argument and the value.
            let text = e.render().to_string();
            let cause: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| {
                    !l.starts_with("Usage:")
                        && !l.starts_with("tip:")
                        && !l.starts_with("For more information")
                })
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!(
                "smtsched: error: {} (see --help)",
                cause.join(" ").trim_start_matches("error: ")
            );
            std::process::exit(errors::EXIT_BAD_INPUT);
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
