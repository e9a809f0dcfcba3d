//! `corun`: several workloads together on chosen logical CPUs.

use super::{json_out, out, protocol, workload};
use crate::args::CorunArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{MachineModel, Placement};
use smtsched_report::Table;
use smtsched_uarch::protocol::{placement_cpus, run_together, solo};
use smtsched_uarch::{Window, Workload};
use std::collections::BTreeMap;

/// Parses a placement: kernel list elements (`2`, `0-3`) in order, repeats allowed.
pub fn parse_placement(text: &str, m: &MachineModel) -> Result<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim) {
        let bad = || {
            bad_input(format!(
                "--cpus {text:?}: {part:?} is not a CPU number or range"
            ))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<u32>().map_err(|_| bad())?,
                b.trim().parse::<u32>().map_err(|_| bad())?,
            ),
            None => {
                let v = part.parse::<u32>().map_err(|_| bad())?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        for cpu in lo..=hi {
            if cpu >= m.logical_cpus() {
                return Err(bad_input(format!(
                    "--cpus {text:?}: CPU {cpu} does not exist on machine {} (CPUs 0-{})",
                    m.name,
                    m.logical_cpus() - 1
                )));
            }
            cpus.push(cpu);
        }
    }
    Ok(cpus)
}

pub fn run(a: CorunArgs) -> Result<()> {
    let m = a.sim.machine.load()?;
    let profiles: Vec<Box<dyn Workload>> = a
        .workloads
        .iter()
        .map(|w| workload(w))
        .collect::<Result<_>>()?;
    let cpus = match &a.cpus {
        Some(p) => parse_placement(p, &m)?,
        None if profiles.len() == 2 && m.topology.threads_per_core >= 2 => {
            placement_cpus(&m, Placement::Siblings)?.to_vec()
        }
        None => (0..profiles.len() as u32)
            .map(|i| i % m.logical_cpus())
            .collect(),
    };
    if cpus.len() != profiles.len() {
        return Err(bad_input(format!(
            "--cpus names {} CPUs for {} workloads; give one CPU per workload",
            cpus.len(),
            profiles.len()
        )));
    }
    let proto = protocol(&a.sim, &m, 1)?;
    // Solo baselines: each thread's own copy of its workload, alone on its CPU.
    let mut copies: BTreeMap<&str, u32> = BTreeMap::new();
    let mut solos = Vec::new();
    for (p, &cpu) in profiles.iter().zip(&cpus) {
        let copy = copies.entry(p.name()).or_insert(0);
        solos.push(solo(&m, p.as_ref(), *copy, cpu, &proto)?);
        *copy += 1;
    }
    let threads: Vec<(&dyn Workload, u32)> = profiles
        .iter()
        .map(|p| p.as_ref())
        .zip(cpus.iter().copied())
        .collect();
    let r = run_together(&m, &threads, &proto, Window::Instructions)?;
    let prs: Vec<f64> = r
        .threads
        .iter()
        .zip(&solos)
        .map(|(t, s)| s.elapsed_cycles() / t.elapsed_cycles())
        .collect();
    let speedup: f64 = prs.iter().sum();
    if a.json {
        let threads: Vec<_> = profiles
            .iter()
            .zip(&cpus)
            .zip(r.threads.iter().zip(&solos))
            .zip(&prs)
            .map(|(((p, cpu), (t, s)), pr)| {
                serde_json::json!({
                    "workload": p.name(), "cpu": cpu, "ipc": t.ipc(), "solo_ipc": s.ipc(), "pr": pr,
                    "counters": t.window, "solo_counters": s.window,
                })
            })
            .collect();
        return json_out(&serde_json::json!({
            "machine": m.name, "seed": proto.seed, "system_speedup": speedup, "threads": threads,
        }));
    }
    let mut t = Table::new([
        "workload",
        "cpu",
        "IPC",
        "solo IPC",
        "PR",
        "L1D miss %",
        "L2 MPKI",
    ]);
    for (((p, cpu), (th, s)), pr) in profiles
        .iter()
        .zip(&cpus)
        .zip(r.threads.iter().zip(&solos))
        .zip(&prs)
    {
        let c = &th.window;
        t.row([
            p.name().to_string(),
            cpu.to_string(),
            format!("{:.3}", th.ipc()),
            format!("{:.3}", s.ipc()),
            format!("{pr:.3}"),
            format!("{:.2}", 100.0 * c.l1d_miss_ratio()),
            format!(
                "{:.2}",
                c.l2_misses as f64 * 1000.0 / c.instructions.max(1) as f64
            ),
        ]);
    }
    out(&t.render())?;
    out(&format!("system speedup {speedup:.3}\n"))
}
