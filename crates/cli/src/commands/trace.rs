//! `trace`: recorded traces of real programs (owned by the trace work; see crates/trace).

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// Summarise a trace file.
    Info { file: String },
}

pub fn run(_a: TraceArgs) -> Result<()> {
    Err(crate::errors::bad_input("trace commands are being built"))
}
