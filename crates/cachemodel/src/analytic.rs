//! The analytic interaction model behind the OS simulator's analytic oracle
//! (`smtsched_os::oracle::AnalyticOracle`): per-thread rates in any situation from the
//! reuse-distance models, without simulating.
//!
//! For the threads sharing a last-level cache, COMB+IPC's view of the shared cache gives each
//! thread's miss ratio there ([`crate::group::thread_miss_ratios`]); the threads of a core give
//! each one's first-level miss ratio the same way. A thread's cycles per instruction are its
//! simulated solo CPI plus the extra latency of the misses it gains over running alone (loads
//! wait: an L1 miss costs the L2 latency, an L2 miss the memory latency; stores drain through the
//! store buffer). A fine-grained multithreaded core then shares its issue slot: a thread that
//! would issue every `c` cycles alone issues every `c − 1 + 1/(1 − u)` cycles when the others use
//! a fraction `u` of the slots. The IPCs feed back into COMB+IPC's coefficients; a few rounds
//! settle it. Memory bandwidth queueing is not modelled.

use crate::group::{thread_miss_ratios_with, Solver};
use crate::histogram::Histogram;
use crate::model::{Geometry, ThreadModel};
use smtsched_model::events::{CounterEvent, Epc};
use smtsched_model::rates::{Occupant, RateModel, ThreadRate};
use smtsched_model::{CacheContents, CoreSpec, MachineModel, Scope};

/// Rounds of the IPC ↔ miss-ratio iteration.
const ROUNDS: usize = 4;
/// Highest issue-slot share the others may take (keeps the queueing term finite).
const MAX_SHARE: f64 = 0.97;

/// Per-thread data the model keeps.
#[derive(Clone, Debug)]
struct Thread {
    hist: Histogram,
    solo_cpi: f64,
    loads_per_instr: f64,
    refs_per_instr: f64,
    /// Model miss ratios alone (per reference) at L1 and LLC.
    solo_l1: f64,
    solo_llc: f64,
    /// Solo events per instruction for the counters the model does not predict.
    per_instr: Epc,
    footprint_lines: f64,
}

/// The reuse-distance rate model of a machine and a list of threads (oracle workload `i` =
/// `threads[i]`).
pub struct ReuseRateModel {
    solver: Solver,
    geom: Geometry,
    threads: Vec<Thread>,
    core_of: Vec<usize>,
    domain_of: Vec<usize>,
    l2_latency: f64,
    memory_latency: f64,
    fgmt: bool,
    refill_bytes_per_cycle: f64,
    name: String,
}

/// The last-level-cache domain of every logical CPU.
pub fn llc_domains(machine: &MachineModel) -> Vec<usize> {
    let path = machine.cache_path(CacheContents::Data);
    let scope = path.last().map_or(Scope::Machine, |(_, c)| c.shared_by);
    (0..machine.logical_cpus())
        .map(|cpu| {
            let loc = machine.cpu_location(cpu).expect("cpu exists");
            match scope {
                Scope::Core => loc.core as usize,
                Scope::Package => loc.package as usize,
                Scope::Machine => 0,
            }
        })
        .collect()
}

impl ReuseRateModel {
    pub fn new(machine: &MachineModel, models: &[ThreadModel], solver: Solver) -> Self {
        let geom = Geometry::of(machine);
        let path = machine.cache_path(CacheContents::Data);
        let l2_latency = path.get(1).map_or(0.0, |(_, c)| c.latency_cycles as f64);
        let memory_latency = machine.memory.latency_cycles as f64;
        let threads = models
            .iter()
            .map(|m| {
                let s = &m.solo;
                let instr = s.instructions.max(1) as f64;
                Thread {
                    hist: m.hist.clone(),
                    solo_cpi: if s.instructions > 0 {
                        s.cycles / instr
                    } else {
                        1.0
                    },
                    loads_per_instr: s.loads as f64 / instr,
                    refs_per_instr: m.profile.refs_per_instruction(),
                    solo_l1: m.miss_ratio_with(solver, geom.l1_lines),
                    solo_llc: m.miss_ratio_with(solver, geom.llc_lines),
                    per_instr: Epc::from_pairs(&[
                        (CounterEvent::Instructions, 1.0),
                        (CounterEvent::L1iMisses, s.l1i_misses as f64 / instr),
                        (CounterEvent::FpOps, s.fp_ops as f64 / instr),
                        (CounterEvent::Loads, s.loads as f64 / instr),
                        (CounterEvent::Stores, s.stores as f64 / instr),
                        (
                            CounterEvent::BranchMispredicts,
                            s.branch_mispredicts as f64 / instr,
                        ),
                    ]),
                    footprint_lines: m.profile.distinct_lines as f64,
                }
            })
            .collect();
        ReuseRateModel {
            solver,
            geom,
            threads,
            core_of: (0..machine.logical_cpus())
                .map(|c| machine.cpu_location(c).expect("cpu exists").core as usize)
                .collect(),
            domain_of: llc_domains(machine),
            l2_latency,
            memory_latency: (memory_latency - l2_latency).max(0.0),
            fgmt: matches!(machine.core, CoreSpec::FgmtInorder(_)),
            refill_bytes_per_cycle: machine.memory.bus_bytes_per_cycle,
            name: machine.name.clone(),
        }
    }

    /// Predicted IPC and per-reference miss ratios (L1, LLC) of every occupied CPU.
    pub fn predict(&self, situation: &[Option<Occupant>]) -> Vec<Option<(f64, f64, f64)>> {
        let cpus: Vec<usize> = (0..situation.len())
            .filter(|&c| situation[c].is_some())
            .collect();
        let th = |c: usize| &self.threads[situation[c].expect("occupied").workload as usize];
        let mut ipc: Vec<f64> = cpus.iter().map(|&c| 1.0 / th(c).solo_cpi).collect();
        let mut l1 = vec![0.0; cpus.len()];
        let mut llc = vec![0.0; cpus.len()];
        for _ in 0..ROUNDS {
            // Shared-cache and first-level miss ratios under the current IPCs.
            for (key_of, lines, out) in [
                (&self.domain_of, self.geom.llc_lines, &mut llc),
                (&self.core_of, self.geom.l1_lines, &mut l1),
            ] {
                let mut keys: Vec<usize> = cpus.iter().map(|&c| key_of[c]).collect();
                keys.sort_unstable();
                keys.dedup();
                for k in keys {
                    let mine: Vec<usize> =
                        (0..cpus.len()).filter(|&i| key_of[cpus[i]] == k).collect();
                    let hists: Vec<&Histogram> = mine.iter().map(|&i| &th(cpus[i]).hist).collect();
                    // Reference rates, not instruction rates, stretch distances.
                    let rates: Vec<f64> = mine
                        .iter()
                        .map(|&i| ipc[i] * th(cpus[i]).refs_per_instr)
                        .collect();
                    let r = thread_miss_ratios_with(self.solver, &hists, &rates, lines);
                    for (j, &i) in mine.iter().enumerate() {
                        out[i] = r[j];
                    }
                }
            }
            // Latency CPI, then the issue slot shared per core.
            let lat: Vec<f64> = (0..cpus.len())
                .map(|i| {
                    let t = th(cpus[i]);
                    let extra = t.loads_per_instr
                        * (self.l2_latency * (l1[i] - t.solo_l1)
                            + self.memory_latency * (llc[i] - t.solo_llc));
                    (t.solo_cpi + extra).max(1.0)
                })
                .collect();
            let mut next: Vec<f64> = lat.iter().map(|c| 1.0 / c).collect();
            if self.fgmt {
                for _ in 0..50 {
                    let prev = next.clone();
                    for i in 0..cpus.len() {
                        let others: f64 = (0..cpus.len())
                            .filter(|&j| j != i && self.core_of[cpus[j]] == self.core_of[cpus[i]])
                            .map(|j| prev[j])
                            .sum();
                        let wait = 1.0 / (1.0 - others.min(MAX_SHARE));
                        next[i] = 0.5 * prev[i] + 0.5 / (lat[i] - 1.0 + wait);
                    }
                }
            }
            ipc = next;
        }
        let mut out = vec![None; situation.len()];
        for (i, &c) in cpus.iter().enumerate() {
            out[c] = Some((ipc[i], l1[i], llc[i]));
        }
        out
    }
}

impl RateModel for ReuseRateModel {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        self.predict(situation)
            .into_iter()
            .enumerate()
            .map(|(c, p)| {
                p.map(|(ipc, l1, llc)| {
                    let t = &self.threads[situation[c].expect("occupied").workload as usize];
                    let e = &t.per_instr;
                    ThreadRate {
                        pr: ipc * t.solo_cpi,
                        ipc,
                        epc: {
                            // Per instruction × instructions per cycle; the cache levels from
                            // the model.
                            let mut epc = e.scaled(ipc);
                            epc.set(CounterEvent::L1dMisses, l1 * t.refs_per_instr * ipc);
                            epc.set(CounterEvent::LlcMisses, llc * t.refs_per_instr * ipc);
                            epc
                        },
                        kernel_share: 0.0,
                    }
                })
            })
            .collect()
    }

    fn phase_solo_cycles(&self, _workload: u32) -> Vec<f64> {
        // The histograms cover a window of the whole program, not its phases.
        vec![f64::INFINITY]
    }

    fn refill_cycles(&self, workload: u32) -> f64 {
        let t = &self.threads[workload as usize];
        t.footprint_lines.min(self.geom.llc_lines) * self.geom.line_bytes as f64
            / self.refill_bytes_per_cycle
    }

    fn solo_ipc(&self, o: Occupant) -> f64 {
        1.0 / self.threads[o.workload as usize].solo_cpi
    }

    fn describe(&self) -> String {
        format!(
            "reuse-distance model of {} threads on {} ({} + COMB+IPC per cache, solo CPIs)",
            self.threads.len(),
            self.solver.as_str(),
            self.name
        )
    }
}
