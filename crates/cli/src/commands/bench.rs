//! `bench`: how fast the simulator runs on this host, per machine, how a matrix scales over host
//! threads (measured in `smtsched_experiments::bench`), and the process's peak resident memory.

use super::plan::Plan;
use super::{json_out, machine, out, refs, workload_names, workloads};
use crate::args::BenchArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_experiments::bench::{scaling, speed, Scaling, SpeedRun};
use smtsched_model::{MachineModel, MACHINE_PRESETS};
use smtsched_uarch::Workload;

pub struct BenchPlan {
    machines: Vec<MachineModel>,
    names: Vec<String>,
    workloads: Vec<Box<dyn Workload>>,
    instructions: u64,
    repeat: u32,
    scaling: bool,
    json: bool,
}

impl Plan for BenchPlan {
    type Args = BenchArgs;

    fn from_args(a: BenchArgs) -> Result<Self> {
        let machines: Vec<MachineModel> = machine_names(&a.machine)
            .iter()
            .map(|n| machine(n, &[]))
            .collect::<Result<_>>()?;
        if machines.is_empty() {
            return Err(bad_input(format!(
                "--machine {:?}: names no machine",
                a.machine
            )));
        }
        use smtsched_uarch::protocol::MAX_THREAD_INSTRUCTIONS;
        if a.instructions > MAX_THREAD_INSTRUCTIONS {
            return Err(bad_input(format!(
                "--instructions {}: at most {:e} instructions per thread",
                a.instructions, MAX_THREAD_INSTRUCTIONS as f64
            )));
        }
        let names = workload_names(&a.workloads)?;
        // Profiles or recorded traces, as everywhere else.
        let workloads = workloads(&names)?;
        Ok(BenchPlan {
            machines,
            names,
            workloads,
            instructions: a.instructions,
            repeat: a.repeat,
            scaling: a.scaling,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let refs = refs(&self.workloads);
        let runs = self
            .machines
            .iter()
            .map(|m| speed(m, &self.names, &refs, self.instructions, self.repeat))
            .collect::<Result<Vec<_>, _>>()?;
        let scaling = if self.scaling {
            Some(scaling(&self.machines[0])?)
        } else {
            None
        };
        let peak = peak_resident_bytes();
        if self.json {
            return json_out(&serde_json::json!({
                "host_threads": 1, "runs": runs, "scaling": scaling, "peak_resident_bytes": peak,
            }));
        }
        out(&render(&runs, scaling.as_ref(), peak, self.repeat.max(1)))
    }
}

/// `all` (every preset) or a comma-separated list of presets and files.
fn machine_names(list: &str) -> Vec<String> {
    if list.trim() == "all" {
        return MACHINE_PRESETS.iter().map(|p| p.name.to_string()).collect();
    }
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The process's peak resident set (the kernel's `VmHWM`), if it can be read.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn render(runs: &[SpeedRun], scaling: Option<&Scaling>, peak: Option<u64>, repeat: u32) -> String {
    // Columns as wide as their widest cell: a row of five workloads is wider than a pair's.
    let mut table = smtsched_report::Table::new([
        "machine",
        "workloads",
        "placement",
        "instructions",
        "seconds",
        "M instr/s",
    ]);
    for r in runs {
        table.row([
            r.machine.clone(),
            r.workloads.join("+"),
            r.placement.clone(),
            r.instructions_simulated.to_string(),
            format!("{:.2}", r.seconds),
            format!("{:.1}", r.instructions_per_second / 1e6),
        ]);
    }
    let mut s = format!(
        "Simulator speed on one host thread (best of {repeat}):\n{}",
        table.render()
    );
    if let Some(c) = scaling {
        s += &format!(
            "\nScaling: a matrix of {} workloads on {} ({} runs) took {:.2} s on 1 host thread and {:.2} s on {}: speed-up {:.2}, {}\n",
            c.workloads,
            c.machine,
            c.runs,
            c.seconds_one_thread,
            c.seconds_all_threads,
            c.host_threads,
            c.speedup,
            if c.identical_results { "identical results" } else { "RESULTS DIFFER" }
        );
    }
    match peak {
        Some(b) => s += &format!("\nPeak resident memory: {:.1} MB\n", b as f64 / 1e6),
        None => s += "\nPeak resident memory: unknown (/proc/self/status unreadable)\n",
    }
    s
}
