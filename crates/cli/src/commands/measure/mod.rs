//! `measure`: co-run interference, CPU shares and a web server on this real machine (thesis
//! §3.3.1, DESIGN §9). Arguments, plans and output; the work is in the `smtsched-host` crate.

mod pairs;
mod sched;
mod server;

use super::plan;
use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub action: MeasureAction,
}

#[derive(Subcommand, Debug)]
pub enum MeasureAction {
    /// Pairwise co-run performance ratios on this machine (thesis §3.3.1): solo baselines, then
    /// every pair (self-pairs too) on sibling threads, two cores and/or one time-shared CPU.
    ///
    /// Writes the same matrix format as `smtsched matrix` (source "measured"). With several
    /// placements, each output file gets the placement before its extension: -o m.json writes
    /// m.cores.json, m.timeshare.json, ….
    ///
    /// Example: smtsched measure pairs -w dense-fp,pointer-chase --command gz='gzip -9 -c big.tar' -p cores -o m.json
    Pairs(Box<pairs::PairsArgs>),
    /// A task set on this machine's real kernel — busy and compute/sleep loops with nice levels,
    /// affinity masks and cgroup weights — each task's share of CPU time (from
    /// /proc/PID/schedstat) beside the simulator's present-day baseline on the same file.
    ///
    /// Example: smtsched measure sched scenarios/nice-one-cpu.toml
    Sched(Box<sched::SchedArgs>),
    /// A real web server (nginx or lighttpd) under real load (oha) over loopback, with the
    /// thesis's Table 5.1 placements on this machine's CPUs: where the server's workers, the
    /// receive softirq (loopback RPS) and the load generator run. Throughput, latency
    /// percentiles and the kernel work of each request; every process stopped and every setting
    /// restored, also on Ctrl-C and SIGTERM (and after SIGKILL, by the next start).
    ///
    /// Example: smtsched measure server --rate auto --duration 5 --svg server.svg
    Server(Box<server::ServerArgs>),
}
pub fn run_measure(a: MeasureArgs) -> Result<()> {
    match a.action {
        MeasureAction::Pairs(p) => plan::run::<pairs::PairsPlan>(*p),
        MeasureAction::Sched(s) => plan::run::<sched::SchedPlan>(*s),
        MeasureAction::Server(s) => plan::run::<server::ServerPlan>(*s),
    }
}
