//! The interaction oracle (DESIGN §6): turns "these threads share this machine right now" into each
//! thread's progress rate (its performance ratio) and counter rates. Backends: `simulated` (runs
//! the microarchitectural simulator for a sample window and memoises by the situation) and
//! `measured` (a PR matrix file from `smtsched matrix` or `smtsched measure`).

use crate::samples::{DescriptionId, SampleKey};
use rayon::prelude::*;
use smtsched_model::{MachineModel, Placement, PrMatrix, WorkloadProfile};
use smtsched_uarch::{
    protocol::{run_together, solo, Protocol},
    ThreadCounters, Window, Workload,
};
use std::collections::HashMap;
use std::sync::Mutex;

pub use smtsched_model::events::{CounterEvent, Epc};
pub use smtsched_model::rates::{Occupant, RateModel, ThreadRate};

/// Events per cycle of a simulated thread's counters, with the machine's last cache level as
/// `llc_misses`.
pub fn epc_of(c: &ThreadCounters, llc_level: u8) -> Epc {
    let cy = c.cycles.max(1.0);
    let llc = match llc_level {
        1 => c.l1d_misses,
        2 => c.l2_misses,
        _ => c.l3_misses,
    };
    Epc::from_pairs(&[
        (CounterEvent::Instructions, c.instructions as f64 / cy),
        (CounterEvent::L1iMisses, c.l1i_misses as f64 / cy),
        (CounterEvent::L1dMisses, c.l1d_misses as f64 / cy),
        (CounterEvent::LlcMisses, llc as f64 / cy),
        (CounterEvent::FpOps, c.fp_ops as f64 / cy),
        (CounterEvent::Loads, c.loads as f64 / cy),
        (CounterEvent::Stores, c.stores as f64 / cy),
        (
            CounterEvent::BranchMispredicts,
            c.branch_mispredicts as f64 / cy,
        ),
    ])
}

/// An oracle for questions of CPU time alone: every task runs at its solo speed whatever its
/// co-runners (PR 1 on any CPU), with no cache refill after a move. `smtsched measure sched`
/// uses it to simulate the kernel's CPU shares on a machine without SMT.
pub struct NoInterference;

impl Oracle for NoInterference {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        situation
            .iter()
            .map(|o| {
                o.map(|_| ThreadRate {
                    pr: 1.0,
                    ipc: 1.0,
                    epc: Epc::default(),
                    kernel_share: 0.0,
                })
            })
            .collect()
    }

    fn phase_solo_cycles(&self, _: u32) -> Vec<f64> {
        vec![f64::INFINITY]
    }

    fn refill_cycles(&self, _: u32) -> f64 {
        0.0
    }

    fn solo_ipc(&self, _: Occupant) -> f64 {
        1.0
    }

    fn describe(&self) -> String {
        "no interference (every task at its solo speed)".into()
    }
}

/// The true performance ratios the `optimal` ceiling is built with: for every two tasks of a set
/// (by display name), their PRs on sibling CPUs `first` and `sibling`, and each alone on `first`
/// — averaged over the phases of each workload, weighted by the phases' solo lengths.
pub fn pair_truth(
    oracle: &dyn Oracle,
    names: &[String],
    cpus: usize,
    first: usize,
    sibling: Option<usize>,
) -> crate::policy::PairTruth {
    let phases = |w: u32| -> Vec<(u16, f64)> {
        let len = oracle.phase_solo_cycles(w);
        if len.len() <= 1 {
            return vec![(0, 1.0)];
        }
        let total: f64 = len.iter().sum();
        len.iter()
            .enumerate()
            .map(|(i, l)| (i as u16, l / total))
            .collect()
    };
    let occupant = |w: usize, phase: u16| {
        Some(Occupant {
            workload: w as u32,
            phase,
        })
    };
    let mut truth = crate::policy::PairTruth::default();
    for (a, name_a) in names.iter().enumerate() {
        let mut alone = 0.0;
        for (pa, wa) in phases(a as u32) {
            let mut s = vec![None; cpus];
            s[first] = occupant(a, pa);
            alone += wa * oracle.rates(&s)[first].map_or(1.0, |r| r.pr);
        }
        truth.insert_alone(name_a, alone);
        let Some(sib) = sibling else { continue };
        for (b, name_b) in names.iter().enumerate().skip(a) {
            let (mut pr_a, mut pr_b) = (0.0, 0.0);
            for (pa, wa) in phases(a as u32) {
                for (pb, wb) in phases(b as u32) {
                    let mut s = vec![None; cpus];
                    s[first] = occupant(a, pa);
                    s[sib] = occupant(b, pb);
                    let r = oracle.rates(&s);
                    pr_a += wa * wb * r[first].map_or(1.0, |r| r.pr);
                    pr_b += wa * wb * r[sib].map_or(1.0, |r| r.pr);
                }
            }
            truth.insert_pair(name_a, name_b, pr_a, pr_b);
        }
    }
    truth
}

/// A source of interaction data. Situations list what each logical CPU runs (`None` = idle).
pub trait Oracle: Send + Sync {
    /// Rates of every occupied logical CPU, indexed like `situation`.
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>>;
    /// Computes many situations ahead of time (in parallel where the backend can).
    fn warm(&self, _situations: &[Vec<Option<Occupant>>]) {}
    /// Length of each phase of a workload in cycles when it runs alone (one entry, infinite, for
    /// a workload without phases).
    fn phase_solo_cycles(&self, workload: u32) -> Vec<f64>;
    /// Cycles a thread of this workload loses refilling caches after a migration or a long absence.
    fn refill_cycles(&self, workload: u32) -> f64;
    /// Instructions per cycle of the workload alone, in a phase.
    fn solo_ipc(&self, o: Occupant) -> f64;
    /// Cycles one pass over all of a workload's phases takes alone (a server's request), where
    /// the backend knows the workload's instructions.
    fn pass_solo_cycles(&self, _workload: u32) -> Option<f64> {
        None
    }
    fn describe(&self) -> String;
}

/// A situation in canonical form: packages, their cores, each core's occupants.
type SituationKey = Vec<Vec<Vec<Occupant>>>;

/// Canonical form of a situation: cores of a package and packages of the machine are
/// interchangeable, and so are the threads of a core. Returns the key and, for every CPU, the
/// position of its occupant in the key's flattening.
fn canonical(
    machine: &MachineModel,
    situation: &[Option<Occupant>],
) -> (Vec<Vec<Vec<Occupant>>>, Vec<Option<usize>>) {
    let t = &machine.topology;
    // packages -> cores -> occupants (with their CPU for mapping back)
    let mut pk: Vec<Vec<Vec<(Occupant, usize)>>> =
        vec![vec![Vec::new(); t.cores_per_package as usize]; t.packages as usize];
    for (cpu, o) in situation.iter().enumerate() {
        if let Some(o) = o {
            let loc = machine
                .cpu_location(cpu as u32)
                .expect("situation fits the machine");
            pk[loc.package as usize][(loc.core % t.cores_per_package) as usize].push((*o, cpu));
        }
    }
    for p in &mut pk {
        for c in p.iter_mut() {
            c.sort();
        }
        p.sort_by_key(|c| occupants(c));
    }
    pk.sort_by(|a, b| {
        let ka: Vec<Vec<Occupant>> = a.iter().map(|c| occupants(c)).collect();
        let kb: Vec<Vec<Occupant>> = b.iter().map(|c| occupants(c)).collect();
        ka.cmp(&kb)
    });
    let mut slot_of = vec![None; situation.len()];
    let mut k = 0;
    for p in &pk {
        for c in p {
            for &(_, cpu) in c {
                slot_of[cpu] = Some(k);
                k += 1;
            }
        }
    }
    let key = pk
        .iter()
        .map(|p| p.iter().map(|c| occupants(c)).collect())
        .collect();
    (key, slot_of)
}

fn occupants(c: &[(Occupant, usize)]) -> Vec<Occupant> {
    c.iter().map(|x| x.0).collect()
}

/// The simulated backend: the microarchitectural simulator, memoised.
pub struct SimulatedOracle {
    machine: MachineModel,
    workloads: Vec<WorkloadProfile>,
    proto: Protocol,
    llc_level: u8,
    line_bytes: u32,
    memo: Mutex<HashMap<SituationKey, Vec<ThreadRate>>>,
    solo: Mutex<HashMap<Occupant, (f64, usize)>>,
    /// The machine's and each workload's identity among the process's shared samples.
    machine_id: DescriptionId,
    workload_ids: Vec<DescriptionId>,
}

/// A profile that starts in phase `phase` (so a sample measures that phase).
struct PhaseStart<'a> {
    profile: &'a WorkloadProfile,
    offset: u64,
}

impl Workload for PhaseStart<'_> {
    fn name(&self) -> &str {
        &self.profile.name
    }

    fn threads_share_memory(&self) -> bool {
        self.profile.threads_share_memory
    }

    fn stream(&self, seed: u64, copy: u32) -> Box<dyn smtsched_uarch::InstructionSource> {
        let s = smtsched_uarch::rng::derive_seed(seed, &format!("{}#{}", self.profile.name, copy));
        Box::new(smtsched_uarch::SyntheticStream::new(
            self.profile,
            s,
            self.offset,
        ))
    }
}

/// Instructions each simulated sample warms up over, then measures over, in every run of a task
/// set (`smtsched run`, the experiments, sweeps): long enough for the caches of the machine
/// presets to fill, short enough that a run's distinct situations simulate in seconds.
pub const SAMPLE_WARMUP_INSTRUCTIONS: u64 = 1_000_000;
pub const SAMPLE_MEASURE_INSTRUCTIONS: u64 = 2_000_000;

impl SimulatedOracle {
    /// The oracle for the workloads of `set` (oracle workload `i` = task `i`, then the devices'
    /// handlers) built for a `build` kernel, sampled over the standard window.
    pub fn for_set(
        machine: &MachineModel,
        set: &crate::taskset::TaskSetSpec,
        seed: u64,
        build: smtsched_model::KernelBuild,
    ) -> Result<SimulatedOracle, smtsched_model::ModelError> {
        let profiles = set
            .oracle_profiles()?
            .iter()
            .map(|p| p.built_for(build))
            .collect();
        Ok(SimulatedOracle::new(
            machine.clone(),
            profiles,
            seed,
            SAMPLE_WARMUP_INSTRUCTIONS,
            SAMPLE_MEASURE_INSTRUCTIONS,
        ))
    }

    /// An oracle for `workloads` on `machine`, sampling each situation over `warmup` then
    /// `measure` instructions per thread.
    pub fn new(
        machine: MachineModel,
        workloads: Vec<WorkloadProfile>,
        seed: u64,
        warmup: u64,
        measure: u64,
    ) -> Self {
        let path = machine.cache_path(smtsched_model::CacheContents::Data);
        let (_, llc) = *path.last().expect("a data path");
        let samples = crate::samples::shared();
        SimulatedOracle {
            machine_id: samples.machine_id(&machine),
            workload_ids: workloads.iter().map(|w| samples.profile_id(w)).collect(),
            llc_level: llc.level,
            line_bytes: llc.line_bytes,
            machine,
            workloads,
            proto: Protocol {
                seed,
                warmup_instructions: warmup,
                measure_instructions: measure,
                quantum_cycles: u64::MAX / 4,
                timeshare_rounds: 1,
                refill_only: false,
            },
            memo: Mutex::new(HashMap::new()),
            solo: Mutex::new(HashMap::new()),
        }
    }

    fn start(&self, o: Occupant) -> PhaseStart<'_> {
        let p = &self.workloads[o.workload as usize];
        let offset = p.phase[..o.phase as usize]
            .iter()
            .map(|ph| ph.instructions)
            .sum();
        PhaseStart { profile: p, offset }
    }

    /// Solo IPC and last-level-cache footprint (lines) of an occupant.
    fn solo_of(&self, o: Occupant) -> (f64, usize) {
        if let Some(v) = self.solo.lock().expect("oracle lock").get(&o) {
            return *v;
        }
        let w = self.start(o);
        let thread = (self.workload_ids[o.workload as usize], w.offset, 0);
        let key = SampleKey::new(self.machine_id, &self.proto, vec![thread]);
        let v = crate::samples::shared().solo(key, || {
            let r = solo(&self.machine, &w, 0, 0, &self.proto)
                .expect("the oracle's machine runs a solo thread");
            (r.ipc(), r.llc_lines)
        });
        self.solo.lock().expect("oracle lock").insert(o, v);
        v
    }

    fn simulate(&self, key: &[Vec<Vec<Occupant>>]) -> Vec<ThreadRate> {
        let t = &self.machine.topology;
        let starts: Vec<(PhaseStart<'_>, u32)> = key
            .iter()
            .enumerate()
            .flat_map(|(p, cores)| {
                cores.iter().enumerate().flat_map(move |(c, occ)| {
                    occ.iter().enumerate().map(move |(k, o)| {
                        (
                            *o,
                            self.machine
                                .cpu_at(p as u32 * t.cores_per_package + c as u32, k as u32),
                        )
                    })
                })
            })
            .map(|(o, cpu)| (self.start(o), cpu))
            .collect();
        let occupants: Vec<Occupant> = key.iter().flatten().flatten().copied().collect();
        let threads = occupants
            .iter()
            .zip(&starts)
            .map(|(o, (w, cpu))| (self.workload_ids[o.workload as usize], w.offset, *cpu))
            .collect();
        let sample = SampleKey::new(self.machine_id, &self.proto, threads);
        crate::samples::shared().run(sample, || self.simulate_now(&starts, &occupants))
    }

    /// Runs the threads `starts` (the occupants `occupants`) together.
    fn simulate_now(
        &self,
        starts: &[(PhaseStart<'_>, u32)],
        occupants: &[Occupant],
    ) -> Vec<ThreadRate> {
        let threads: Vec<(&dyn Workload, u32)> = starts
            .iter()
            .map(|(w, cpu)| (w as &dyn Workload, *cpu))
            .collect();
        let r = run_together(&self.machine, &threads, &self.proto, Window::Instructions)
            .expect("the situation fits the machine");
        r.threads
            .iter()
            .zip(occupants)
            .map(|(th, &o)| {
                let (solo_ipc, _) = self.solo_of(o);
                let ipc = th.ipc();
                ThreadRate {
                    pr: ipc / solo_ipc,
                    ipc,
                    epc: epc_of(&th.window, self.llc_level),
                    kernel_share: th.window.kernel_share(),
                }
            })
            .collect()
    }
}

impl Oracle for SimulatedOracle {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        let (key, slot_of) = canonical(&self.machine, situation);
        let cached = self.memo.lock().expect("oracle lock").get(&key).cloned();
        let rates = match cached {
            Some(r) => r,
            None => {
                let r = if key.iter().flatten().flatten().count() == 0 {
                    Vec::new()
                } else {
                    self.simulate(&key)
                };
                self.memo
                    .lock()
                    .expect("oracle lock")
                    .insert(key, r.clone());
                r
            }
        };
        slot_of.iter().map(|s| s.map(|k| rates[k])).collect()
    }

    fn warm(&self, situations: &[Vec<Option<Occupant>>]) {
        let mut keys: Vec<_> = situations
            .iter()
            .map(|s| canonical(&self.machine, s).0)
            .collect();
        keys.sort();
        keys.dedup();
        let memo = self.memo.lock().expect("oracle lock");
        keys.retain(|k| !memo.contains_key(k) && k.iter().flatten().flatten().count() > 0);
        drop(memo);
        // Solo baselines first, so the pair runs do not race to compute them.
        let mut solos: Vec<Occupant> = keys.iter().flatten().flatten().flatten().copied().collect();
        solos.sort();
        solos.dedup();
        solos.par_iter().for_each(|&o| {
            self.solo_of(o);
        });
        let results: Vec<_> = keys
            .par_iter()
            .map(|k| (k.clone(), self.simulate(k)))
            .collect();
        self.memo.lock().expect("oracle lock").extend(results);
    }

    fn phase_solo_cycles(&self, workload: u32) -> Vec<f64> {
        let p = &self.workloads[workload as usize];
        if p.phase.len() <= 1 {
            return vec![f64::INFINITY];
        }
        (0..p.phase.len())
            .map(|i| {
                p.phase[i].instructions as f64
                    / self
                        .solo_of(Occupant {
                            workload,
                            phase: i as u16,
                        })
                        .0
            })
            .collect()
    }

    fn refill_cycles(&self, workload: u32) -> f64 {
        // Refilling the footprint is bandwidth-bound: lines × line size / bus bandwidth.
        let (_, lines) = self.solo_of(Occupant { workload, phase: 0 });
        lines as f64 * self.line_bytes as f64 / self.machine.memory.bus_bytes_per_cycle
    }

    fn solo_ipc(&self, o: Occupant) -> f64 {
        self.solo_of(o).0
    }

    fn pass_solo_cycles(&self, workload: u32) -> Option<f64> {
        let p = &self.workloads[workload as usize];
        let cycles = (0..p.phase.len()).map(|i| {
            let o = Occupant {
                workload,
                phase: i as u16,
            };
            p.phase[i].instructions as f64 / self.solo_of(o).0
        });
        Some(cycles.sum())
    }

    fn describe(&self) -> String {
        format!(
            "simulated on {} ({} + {} instructions per sample, seed {})",
            self.machine.name,
            self.proto.warmup_instructions,
            self.proto.measure_instructions,
            self.proto.seed
        )
    }
}

/// The measured backend: a PR matrix gives the PR of each pair — of threads on sibling CPUs (a
/// `siblings` matrix) or on separate cores (a `cores` matrix, as a machine without SMT gives);
/// a thread without such a co-runner runs at PR 1; only pairs interact. Counter rates come from the file where it has
/// them, otherwise they are zero (estimators then see no events — say so to the user).
pub struct MeasuredOracle {
    machine: MachineModel,
    matrix: PrMatrix,
    /// Index of each oracle workload in the matrix.
    index: Vec<usize>,
}

impl MeasuredOracle {
    /// Uses `matrix` for the workloads named `workloads`; every one must be in the matrix.
    pub fn new(
        machine: MachineModel,
        matrix: PrMatrix,
        workloads: &[String],
    ) -> Result<Self, String> {
        matrix.validate().map_err(|e| e.to_string())?;
        if matrix.placement == Placement::Timeshare {
            return Err("the matrix was measured time-shared on one CPU; the oracle needs threads that ran at once (siblings or cores)".into());
        }
        let index = workloads
            .iter()
            .map(|w| {
                matrix.index_of(w).ok_or_else(|| {
                    format!(
                        "workload {w:?} is not in the matrix (it has {})",
                        matrix.workloads.join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(MeasuredOracle {
            machine,
            matrix,
            index,
        })
    }

    fn epc_of(map: &std::collections::BTreeMap<String, f64>) -> Epc {
        let cy = map.get("cycles").copied().unwrap_or(0.0);
        if cy <= 0.0 {
            return Epc::default();
        }
        let g = |k: &str| map.get(k).copied().unwrap_or(0.0) / cy;
        let mut epc = Epc::default();
        for e in CounterEvent::ALL {
            epc.set(e, g(e.name()));
        }
        // Simulated matrices name the level; measured ones give the PMU's last-level event.
        epc.set(
            CounterEvent::LlcMisses,
            g("l2_misses").max(g("l3_misses")).max(g("llc_misses")),
        );
        epc
    }
}

impl Oracle for MeasuredOracle {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        let mut out = vec![None; situation.len()];
        for (cpu, o) in situation.iter().enumerate() {
            let Some(o) = o else { continue };
            let me = self.index[o.workload as usize];
            let loc = self
                .machine
                .cpu_location(cpu as u32)
                .expect("situation fits the machine");
            // The co-runner the matrix describes: the task on a sibling of this core (a siblings
            // matrix) or on another core (a cores matrix, e.g. from a machine without SMT).
            let same_core = self.matrix.placement == Placement::Siblings;
            let sibling = situation.iter().enumerate().find_map(|(c2, o2)| {
                let l2 = self.machine.cpu_location(c2 as u32)?;
                (c2 != cpu && (l2.core == loc.core) == same_core)
                    .then_some(*o2)
                    .flatten()
            });
            let solo = &self.matrix.solo[me];
            let (pr, counters) = match sibling {
                None => (1.0, &solo.counters),
                Some(s) => {
                    let other = self.index[s.workload as usize];
                    let pair = self
                        .matrix
                        .pairs
                        .iter()
                        .find(|p| (p.a, p.b) == (me.min(other), me.max(other)));
                    match pair {
                        Some(p) if p.a == me => (p.pr_a, &p.counters_a),
                        Some(p) => (p.pr_b, &p.counters_b),
                        None => (self.matrix.pr(me, other).unwrap_or(0.5), &solo.counters),
                    }
                }
            };
            let epc = Self::epc_of(counters);
            out[cpu] = Some(ThreadRate {
                pr,
                ipc: epc[CounterEvent::Instructions],
                epc,
                kernel_share: 0.0,
            });
        }
        out
    }

    fn phase_solo_cycles(&self, _workload: u32) -> Vec<f64> {
        vec![f64::INFINITY]
    }

    fn refill_cycles(&self, _workload: u32) -> f64 {
        0.0
    }

    fn solo_ipc(&self, o: Occupant) -> f64 {
        Self::epc_of(&self.matrix.solo[self.index[o.workload as usize]].counters)
            [CounterEvent::Instructions]
    }

    fn describe(&self) -> String {
        format!(
            "measured matrix of {} ({}, {})",
            self.matrix.machine, self.matrix.source, self.matrix.placement
        )
    }
}

/// The analytic backend: a [`RateModel`]'s predictions, memoised by canonical situation like the
/// simulated backend, and counted — the number of distinct situations is what a simulated oracle
/// would have had to simulate for the same run.
/// Canonical situation → rates, as [`canonical`] keys them.
type RateMemo = Mutex<HashMap<Vec<Vec<Vec<Occupant>>>, Vec<ThreadRate>>>;

pub struct AnalyticOracle {
    machine: MachineModel,
    model: Box<dyn RateModel>,
    memo: RateMemo,
    queries: std::sync::atomic::AtomicU64,
}

impl AnalyticOracle {
    pub fn new(machine: MachineModel, model: Box<dyn RateModel>) -> Self {
        AnalyticOracle {
            machine,
            model,
            memo: Mutex::new(HashMap::new()),
            queries: Default::default(),
        }
    }

    /// Distinct situations predicted so far.
    pub fn distinct_situations(&self) -> usize {
        self.memo.lock().expect("oracle lock").len()
    }

    /// Situations asked about so far (including repeats).
    pub fn queries(&self) -> u64 {
        self.queries.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The canonical situation of `key` on the machine: occupants in key order on the first
    /// threads of the first cores of each package.
    fn situation_of(&self, key: &[Vec<Vec<Occupant>>]) -> (Vec<Option<Occupant>>, Vec<usize>) {
        let t = &self.machine.topology;
        let mut s = vec![None; self.machine.logical_cpus() as usize];
        let mut order = Vec::new();
        for (p, cores) in key.iter().enumerate() {
            for (c, occ) in cores.iter().enumerate() {
                for (k, o) in occ.iter().enumerate() {
                    let cpu = self
                        .machine
                        .cpu_at(p as u32 * t.cores_per_package + c as u32, k as u32)
                        as usize;
                    s[cpu] = Some(*o);
                    order.push(cpu);
                }
            }
        }
        (s, order)
    }
}

impl Oracle for AnalyticOracle {
    fn rates(&self, situation: &[Option<Occupant>]) -> Vec<Option<ThreadRate>> {
        self.queries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (key, slot_of) = canonical(&self.machine, situation);
        let cached = self.memo.lock().expect("oracle lock").get(&key).cloned();
        let rates = match cached {
            Some(r) => r,
            None => {
                let (s, order) = self.situation_of(&key);
                let by_cpu = self.model.rates(&s);
                let r: Vec<ThreadRate> = order
                    .iter()
                    .map(|&c| by_cpu[c].expect("the model rates every occupied CPU"))
                    .collect();
                self.memo
                    .lock()
                    .expect("oracle lock")
                    .insert(key, r.clone());
                r
            }
        };
        slot_of.iter().map(|s| s.map(|k| rates[k])).collect()
    }

    fn phase_solo_cycles(&self, workload: u32) -> Vec<f64> {
        self.model.phase_solo_cycles(workload)
    }

    fn refill_cycles(&self, workload: u32) -> f64 {
        self.model.refill_cycles(workload)
    }

    fn solo_ipc(&self, o: Occupant) -> f64 {
        self.model.solo_ipc(o)
    }

    fn describe(&self) -> String {
        format!("analytic: {}", self.model.describe())
    }
}

/// What `--oracle` names: the simulator's own interaction oracle, or a measured PR matrix file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OracleSpec {
    Simulated,
    Measured(std::path::PathBuf),
}

impl std::str::FromStr for OracleSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("measured:") {
            Some("") => Err("measured: names no file (measured:FILE)".into()),
            Some(file) => Ok(OracleSpec::Measured(file.into())),
            None if s == "simulated" => Ok(OracleSpec::Simulated),
            None => Err(format!("{s:?}: expected simulated or measured:FILE")),
        }
    }
}
