//! `solo`: one workload alone.

use super::plan::Plan;
use super::{json_out, out, protocol, workload};
use crate::args::SoloArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{CacheContents, MachineModel};
use smtsched_report::Table;
use smtsched_uarch::{protocol::solo, Protocol, ThreadCounters, Workload};

pub struct SoloPlan {
    machine: MachineModel,
    workload: Box<dyn Workload>,
    cpu: u32,
    protocol: Protocol,
    json: bool,
}

impl Plan for SoloPlan {
    type Args = SoloArgs;

    fn from_args(a: SoloArgs) -> Result<Self> {
        let machine = a.sim.machine.load()?;
        let workload = workload(&a.workload)?;
        if a.cpu >= machine.logical_cpus() {
            return Err(bad_input(format!(
                "--cpus {}: machine {} has logical CPUs 0-{}",
                a.cpu,
                machine.name,
                machine.logical_cpus() - 1
            )));
        }
        // One thread on one CPU: nothing is time-shared.
        let protocol = protocol(&a.sim, None, &machine, None)?;
        Ok(SoloPlan {
            machine,
            workload,
            cpu: a.cpu,
            protocol,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let (m, w, proto) = (&self.machine, self.workload.as_ref(), &self.protocol);
        let r = solo(m, w, 0, self.cpu, proto)?;
        if self.json {
            return json_out(&serde_json::json!({
                "machine": m.name,
                "workload": w.name(),
                "cpu": self.cpu,
                "seed": proto.seed,
                "warmup_instructions": proto.warmup_instructions,
                "ipc": r.ipc(),
                "counters": r.window,
            }));
        }
        out(&format!(
            "{} alone on CPU {} of {} (seed {}, {} warm-up + {} measured instructions)\n\n",
            w.name(),
            self.cpu,
            m.name,
            proto.seed,
            proto.warmup_instructions,
            proto.measure_instructions
        ))?;
        out(&counter_table(m, &r.window))
    }
}

/// Counters of one thread as a table, caches named as the machine names them.
pub fn counter_table(m: &MachineModel, c: &ThreadCounters) -> String {
    let per_k = |x: u64| x as f64 * 1000.0 / c.instructions.max(1) as f64;
    let mut t = Table::new(["counter", "value", "per 1000 instr", "ratio"]);
    t.row([
        "cycles".to_string(),
        format!("{:.0}", c.cycles),
        String::new(),
        String::new(),
    ]);
    t.row([
        "instructions".to_string(),
        c.instructions.to_string(),
        String::new(),
        format!("IPC {:.3}", c.ipc()),
    ]);
    for (name, v) in [
        ("uops", c.uops),
        ("loads", c.loads),
        ("stores", c.stores),
        ("branches", c.branches),
        ("branch mispredicts", c.branch_mispredicts),
        ("fp ops", c.fp_ops),
        ("stall cycles", c.stall_cycles),
    ] {
        t.row([
            name.to_string(),
            v.to_string(),
            format!("{:.2}", per_k(v)),
            String::new(),
        ]);
    }
    let level_counts = |contents: CacheContents, level: u8| match (contents, level) {
        (CacheContents::Instructions, 1) => (c.l1i_accesses, c.l1i_misses),
        (_, 1) => (c.l1d_accesses, c.l1d_misses),
        (_, 2) => (c.l2_accesses, c.l2_misses),
        _ => (c.l3_accesses, c.l3_misses),
    };
    // Level 1 (instructions, then data), then the unified levels in order.
    let mut levels: Vec<(CacheContents, &str, u8)> = Vec::new();
    for contents in [CacheContents::Instructions, CacheContents::Data] {
        for (name, spec) in m.cache_path(contents) {
            if !levels.iter().any(|l| l.1 == name) {
                levels.push((contents, name, spec.level));
            }
        }
    }
    levels.sort_by_key(|l| l.2);
    for (contents, name, level) in levels {
        {
            let (acc, miss) = level_counts(contents, level);
            let ratio = if acc > 0 {
                miss as f64 / acc as f64
            } else {
                0.0
            };
            t.row([
                format!("{name} accesses"),
                acc.to_string(),
                format!("{:.2}", per_k(acc)),
                String::new(),
            ]);
            t.row([
                format!("{name} misses"),
                miss.to_string(),
                format!("{:.2}", per_k(miss)),
                format!("{:.2}% miss", 100.0 * ratio),
            ]);
        }
    }
    t.render()
}
