//! `bench`: how fast the simulator runs on this host.

use super::{json_out, machine, out, workload};
use crate::args::BenchArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{expand_workload_list, Placement};
use smtsched_uarch::protocol::{placement_cpus, run_together};
use smtsched_uarch::{Protocol, Window};

pub fn run(a: BenchArgs) -> Result<()> {
    let m = machine(&a.machine, &[])?;
    let names = expand_workload_list(&a.workloads);
    if names.is_empty() {
        return Err(bad_input("--workloads names no workloads"));
    }
    // Profiles or recorded traces, as everywhere else.
    let profiles = names
        .iter()
        .map(|n| workload(n))
        .collect::<Result<Vec<_>>>()?;
    let cpus = if profiles.len() == 2 && m.topology.threads_per_core >= 2 {
        placement_cpus(&m, Placement::Siblings)?.to_vec()
    } else {
        (0..profiles.len() as u32).collect()
    };
    let threads: Vec<(&dyn smtsched_uarch::Workload, u32)> = profiles
        .iter()
        .map(|p| p.as_ref())
        .zip(cpus.iter().copied())
        .collect();
    let proto = Protocol {
        seed: 1,
        warmup_instructions: a.instructions / 2,
        measure_instructions: a.instructions,
        quantum_cycles: 1 << 40,
        timeshare_rounds: 1,
    };
    let mut best: Option<(f64, u64, f64)> = None;
    for _ in 0..a.repeat.max(1) {
        let t = std::time::Instant::now();
        let r = run_together(&m, &threads, &proto, Window::Instructions)?;
        let secs = t.elapsed().as_secs_f64();
        let rate = r.instructions_simulated as f64 / secs;
        if best.is_none_or(|b| rate > b.0) {
            best = Some((rate, r.instructions_simulated, secs));
        }
    }
    let (rate, instructions, secs) = best.expect("at least one repetition");
    if a.json {
        return json_out(&serde_json::json!({
            "machine": m.name, "workloads": names, "instructions_simulated": instructions,
            "seconds": secs, "instructions_per_second": rate, "host_threads": 1,
        }));
    }
    out(&format!(
        "{} on {} (one host thread): {} instructions simulated in {:.2} s = {:.1} million simulated instructions per second\n",
        names.join(" + "),
        m.name,
        instructions,
        secs,
        rate / 1e6
    ))
}
