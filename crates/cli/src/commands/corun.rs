//! `corun`: several workloads together on chosen logical CPUs.

use super::plan::Plan;
use super::{json_out, out, protocol, thread_cpus, window_text, workloads};
use crate::args::CorunArgs;
use anyhow::Result;
use smtsched_model::{MachineModel, Placement};
use smtsched_report::Table;
use smtsched_uarch::protocol::{corun, corun_refills_only, default_cpus, CorunThread};
use smtsched_uarch::{Protocol, Workload};

pub struct CorunPlan {
    machine: MachineModel,
    workloads: Vec<Box<dyn Workload>>,
    /// The logical CPU of each workload's thread.
    cpus: Vec<u32>,
    protocol: Protocol,
    json: bool,
}

impl Plan for CorunPlan {
    type Args = CorunArgs;

    fn from_args(a: CorunArgs) -> Result<Self> {
        let machine = a.sim.machine.load()?;
        let workloads = workloads(&a.workloads)?;
        let cpus = match &a.cpus {
            Some(list) => thread_cpus(&machine, list, workloads.len())?,
            None => default_cpus(&machine, workloads.len())?.0,
        };
        let sharing = smtsched_model::first_repeat(&cpus).map(|(_, &cpu)| {
            let on = cpus.iter().filter(|&&c| c == cpu).count();
            format!("CPU {cpu} runs {on} of the {} threads", cpus.len())
        });
        let protocol = protocol(&a.sim, Some(&a.timeshare), &machine, sharing.as_deref())?;
        Ok(CorunPlan {
            machine,
            workloads,
            cpus,
            protocol,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let threads: Vec<(&dyn Workload, u32)> = self
            .workloads
            .iter()
            .map(|w| w.as_ref())
            .zip(self.cpus.iter().copied())
            .collect();
        let r = corun(&self.machine, &threads, &self.protocol)?;
        let speedup: f64 = r.iter().map(|t| t.pr).sum();
        if self.json {
            return json_out(&self.json_report(&threads, &r, speedup));
        }
        // Threads sharing a CPU are measured as time-shared pairs are: over rounds of quanta. Said
        // first, as a machine with too few CPUs time-shares without being asked to.
        if smtsched_model::first_repeat(&self.cpus).is_some() {
            let shown = Protocol {
                refill_only: corun_refills_only(&self.protocol, &self.cpus),
                ..self.protocol
            };
            let window = window_text(&shown, Placement::Timeshare, &self.machine);
            out(&format!("{window}\n"))?;
        }
        out(&table(&threads, &r).render())?;
        out(&format!("system speedup {speedup:.3}\n"))?;
        Ok(())
    }
}

impl CorunPlan {
    fn json_report(
        &self,
        threads: &[(&dyn Workload, u32)],
        r: &[CorunThread],
        speedup: f64,
    ) -> serde_json::Value {
        let threads: Vec<_> = threads
            .iter()
            .zip(r)
            .map(|((w, cpu), t)| {
                serde_json::json!({
                    "workload": w.name(), "cpu": cpu, "ipc": t.together.ipc(),
                    "solo_ipc": t.solo.ipc(), "pr": t.pr,
                    "counters": t.together.window, "solo_counters": t.solo.window,
                })
            })
            .collect();
        serde_json::json!({
            "machine": self.machine.name, "seed": self.protocol.seed,
            "system_speedup": speedup, "threads": threads,
        })
    }
}

fn table(threads: &[(&dyn Workload, u32)], r: &[CorunThread]) -> Table {
    let mut t = Table::new([
        "workload",
        "cpu",
        "IPC",
        "solo IPC",
        "PR",
        "L1D miss %",
        "L2 MPKI",
    ]);
    for ((w, cpu), th) in threads.iter().zip(r) {
        let c = &th.together.window;
        t.row([
            w.name().to_string(),
            cpu.to_string(),
            format!("{:.3}", th.together.ipc()),
            format!("{:.3}", th.solo.ipc()),
            format!("{:.3}", th.pr),
            format!("{:.2}", 100.0 * c.l1d_miss_ratio()),
            format!(
                "{:.2}",
                c.l2_misses as f64 * 1000.0 / c.instructions.max(1) as f64
            ),
        ]);
    }
    t
}
