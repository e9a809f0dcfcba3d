//! `host`: the real machine (DESIGN §9) — its topology, performance counters and native
//! benchmark kernels. Arguments, plans and output; the work is in the `smtsched-host` crate.

mod counters;
mod kernel;
mod topology;
pub(crate) mod values;

use super::plan;
use crate::errors::bad_input;
use anyhow::Result;
use clap::{Args, Subcommand};
use smtsched_host::looper::{self, LoopSpec};

#[derive(Args, Debug)]
pub struct HostArgs {
    #[command(subcommand)]
    pub action: HostAction,
}

#[derive(Subcommand, Debug)]
pub enum HostAction {
    /// Logical CPUs, cores and their sibling threads, packages, caches and who shares them, NUMA
    /// nodes, offline CPUs — read from sysfs.
    ///
    /// Example: smtsched host topology --json
    Topology(topology::TopologyArgs),
    /// Which performance-counter events this machine can count, and why not where it cannot.
    ///
    /// Example: smtsched host events
    Events(counters::EventsArgs),
    /// Count events for a command (and its threads and children), a running process, or a CPU.
    ///
    /// Example: smtsched host counters --events cycles,instructions,task-clock -- gzip -9 -k big.tar
    Counters(counters::CountersArgs),
    /// List the native benchmark kernels built into smtsched.
    ///
    /// Example: smtsched host kernels
    Kernels(kernel::KernelsArgs),
    /// Run one native benchmark kernel and report the time of each run.
    ///
    /// Example: smtsched host kernel pointer-chase --footprint 16MiB --runs 5 --cpus 1
    Kernel(kernel::KernelArgs),
    /// Internal: the per-workload process of `smtsched measure` (pins itself, loops, reports
    /// each run as a JSON line).
    #[command(hide = true)]
    Loop(LoopArgs),
    /// Internal: one task process of `smtsched measure sched`.
    #[command(hide = true)]
    SchedTask(SchedTaskArgs),
}

#[derive(Args, Debug)]
pub struct SchedTaskArgs {
    #[arg(long)]
    pub spec: String,
}

#[derive(Args, Debug)]
pub struct LoopArgs {
    /// The looper's instructions as JSON.
    #[arg(long)]
    pub spec: String,
}
pub fn run_host(a: HostArgs) -> Result<()> {
    match a.action {
        HostAction::Topology(t) => plan::run::<topology::TopologyPlan>(t),
        // Nothing to check: the events are probed and listed.
        HostAction::Events(e) => counters::events(e),
        HostAction::Counters(c) => plan::run::<counters::CountersPlan>(c),
        // Nothing to check: the built-in kernels are listed.
        HostAction::Kernels(k) => kernel::kernels(k),
        HostAction::Kernel(k) => plan::run::<kernel::KernelPlan>(k),
        HostAction::Loop(l) => run_loop(l),
        HostAction::SchedTask(t) => {
            let spec: smtsched_host::schedrun::TaskProcessSpec =
                serde_json::from_str(&t.spec).map_err(|e| bad_input(format!("--spec: {e}")))?;
            Ok(smtsched_host::schedrun::run_task_process(&spec)?)
        }
    }
}

/// Internal: a workload process of `measure` (its spec comes from the parent, not a person).
fn run_loop(a: LoopArgs) -> Result<()> {
    let spec: LoopSpec =
        serde_json::from_str(&a.spec).map_err(|e| bad_input(format!("--spec: {e}")))?;
    looper::become_looper(spec.parent_pid)?;
    let mut stdout = std::io::stdout().lock();
    looper::run(&spec, &mut stdout)?;
    Ok(())
}

/// Bytes for people: `48 KiB`, `11 MiB`, `55.8 GiB`, `-` when unknown.
pub(crate) fn size_text(bytes: Option<u64>) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        None => "-".into(),
        Some(b) if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        Some(b) if b >= GIB => format!("{:.1} GiB", b as f64 / GIB as f64),
        Some(b) if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        Some(b) if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        Some(b) if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        Some(b) => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(size_text(Some(48 << 10)), "48 KiB");
        assert_eq!(size_text(Some(11 << 20)), "11 MiB");
        assert_eq!(size_text(Some(57088 << 20)), "55.8 GiB");
        assert_eq!(size_text(Some(64 << 30)), "64 GiB");
        assert_eq!(size_text(Some(1000)), "1000 B");
        assert_eq!(size_text(None), "-");
    }
}
