//! `host` and `measure`: the real machine (owned by the host work; see crates/host).

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct HostArgs {
    #[command(subcommand)]
    pub action: HostAction,
}

#[derive(Subcommand, Debug)]
pub enum HostAction {
    /// Logical CPUs, cores, packages, caches and NUMA nodes, read from sysfs.
    Topology,
}

#[derive(Args, Debug)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub action: MeasureAction,
}

#[derive(Subcommand, Debug)]
pub enum MeasureAction {
    /// Pairwise co-run measurement.
    Pairs,
}

pub fn run_host(_a: HostArgs) -> Result<()> {
    Err(crate::errors::bad_input("host commands are being built"))
}

pub fn run_measure(_a: MeasureArgs) -> Result<()> {
    Err(crate::errors::bad_input("measure commands are being built"))
}
