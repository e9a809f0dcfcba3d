//! Sweeps: a file naming machines × `--set` overrides × workload lists × placements (or policies)
//! × seeds expands into independent jobs, each a PR matrix (`smtsched matrix`) or a task set
//! under a policy (`smtsched run`). Jobs run in shards — on one host, or as a Slurm job array —
//! and shards merge into exactly the result an unsharded run gives: every job is deterministic
//! in its inputs, and results carry no timings.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use smtsched_model::{
    expand_workload_list, load_machine, load_workload, KernelBuild, MachineModel, ModelError,
    Override, Placement, PrMatrix,
};
use smtsched_os::oracle::SimulatedOracle;
use smtsched_os::runs::simulate;
use smtsched_os::sim::{Baseline, SimConfig};
use smtsched_os::taskset::TaskSetSpec;
use smtsched_os::PolicyName;
use smtsched_uarch::protocol::quantum_cycles;
use smtsched_uarch::{Protocol, Workload};
use std::path::Path;

use crate::progress::{RunIdentity, ShardRun};
pub use crate::shards::Shard;
use crate::shards::{check_complete, fingerprint, ShardPart};

/// Format tag of result and shard files.
pub const SWEEP_RESULTS_FORMAT: &str = "smtsched-sweep-results-1";
/// Most jobs one sweep may expand into.
pub const MAX_JOBS: usize = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file, a shard or a result file is wrong: the user's to fix (exit 2).
    #[error("{0}")]
    Bad(String),
    /// A job failed while running.
    #[error("{0}")]
    Run(String),
}

fn bad(text: impl Into<String>) -> SweepError {
    SweepError::Bad(text.into())
}

/// What every job of a sweep measures.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SweepKind {
    /// Every pair of the workload list under a placement: a PR matrix.
    Pairs,
    /// The workload list as a task set (one looping task each) under a policy.
    Policies,
}

/// A sweep file as written.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub name: String,
    pub kind: SweepKind,
    /// Machine presets or files.
    pub machines: Vec<String>,
    /// `--set KEY=VALUE` lists, one per variant of every machine (default: one, empty).
    #[serde(default = "no_overrides")]
    pub sets: Vec<Vec<String>>,
    /// Workload lists as `--workloads` takes them (`gzip-like,mcf-like`, `spec2000`, `all`).
    pub workloads: Vec<String>,
    /// Placements of a pairs sweep.
    #[serde(default)]
    pub placements: Vec<Placement>,
    /// Policies of a policies sweep.
    #[serde(default)]
    pub policies: Vec<String>,
    pub seeds: Vec<u64>,
    #[serde(default = "default_warmup")]
    pub warmup_instructions: u64,
    #[serde(default = "default_measure")]
    pub measure_instructions: u64,
    /// Time-sharing quantum of a pairs sweep, ms.
    #[serde(default = "default_quantum")]
    pub quantum_ms: f64,
    /// Measured rounds of a time-shared pair, after one round of warm-up (as `matrix --rounds`).
    #[serde(default = "default_rounds")]
    pub timeshare_rounds: u32,
    /// Simulated seconds, base scheduler and each task's run length (alone) of a policies
    /// sweep.
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    #[serde(default = "default_run_seconds")]
    pub run_seconds: f64,
    #[serde(default = "default_baseline")]
    pub baseline: Baseline,
}

fn no_overrides() -> Vec<Vec<String>> {
    vec![Vec::new()]
}
fn default_warmup() -> u64 {
    1_000_000
}
fn default_measure() -> u64 {
    2_000_000
}
fn default_quantum() -> f64 {
    10.0
}
// The defaults of `matrix` and `run`, so that a job is the command it stands for.
fn default_rounds() -> u32 {
    smtsched_uarch::protocol::DEFAULT_TIMESHARE_ROUNDS
}
fn default_duration() -> f64 {
    smtsched_os::sim::DEFAULT_DURATION_S
}
fn default_run_seconds() -> f64 {
    smtsched_os::taskset::DEFAULT_RUN_S
}
fn default_baseline() -> Baseline {
    Baseline::Linux24
}

/// Which sweep a result belongs to: its name and a hash of its canonical text and of the
/// machines and workloads it loaded, so shards of another sweep (or of an edited sweep, machine
/// or workload file) are never merged.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SweepId {
    pub name: String,
    pub hash: String,
}

/// Format tag of a sweep run's progress file.
pub const SWEEP_PROGRESS_FORMAT: &str = "smtsched-sweep-progress-2";

/// Which run of a sweep: the sweep and the shard, as a progress file keeps them.
pub type SweepRun = ShardRun<SweepId>;

impl RunIdentity for SweepId {
    fn differs_from(&self, current: &SweepId) -> Option<String> {
        (self != current).then(|| {
            format!(
                "sweep {:?} ({}), not {:?} ({})",
                self.name, self.hash, current.name, current.hash
            )
        })
    }
}

/// The sweep's variant of each job: a placement or a policy.
#[derive(Clone, Copy, Debug)]
enum Variant {
    Placement(Placement),
    Policy(PolicyName),
}

/// A loaded, checked sweep: every machine, override, workload and policy resolved.
pub struct Sweep {
    pub spec: SweepSpec,
    pub id: SweepId,
    /// `[machine][set]`.
    machines: Vec<Vec<MachineModel>>,
    workloads: Vec<Vec<String>>,
    variants: Vec<Variant>,
}

/// One job's coordinates.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct JobKey {
    pub machine: String,
    pub set: Vec<String>,
    pub workloads: String,
    /// The placement (pairs) or policy (policies).
    pub variant: String,
    pub seed: u64,
}

impl std::fmt::Display for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "machine {}", self.machine)?;
        if !self.set.is_empty() {
            write!(f, ", set {}", self.set.join(" "))?;
        }
        write!(
            f,
            ", workloads {}, {}, seed {}",
            self.workloads, self.variant, self.seed
        )
    }
}

struct Job {
    key: JobKey,
    machine: (usize, usize),
    workloads: usize,
    variant: Variant,
}

/// What one job measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    Pairs {
        matrix: PrMatrix,
    },
    /// The figures are `None` when a task completed no run in the window (`missing`): a
    /// figure over some of the tasks is not the set's.
    Policies {
        system_speedup: Option<f64>,
        antt: Option<f64>,
        fairness: Option<f64>,
        missing: Vec<String>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct JobResult {
    pub index: usize,
    pub key: JobKey,
    pub outcome: Outcome,
}

/// A sweep's results, or one shard's.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepResults {
    pub format: String,
    pub sweep: SweepId,
    /// `None`: every job.
    pub shard: Option<Shard>,
    pub jobs_total: usize,
    pub jobs: Vec<JobResult>,
}

/// Reads and checks a sweep file; errors name the file and the field.
pub fn load_sweep(path: &Path) -> Result<Sweep, SweepError> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("sweep file {file}: {e}")))?;
    let spec: SweepSpec =
        toml::from_str(&text).map_err(|e| bad(format!("{file}: {}", one_line(&e.to_string()))))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| bad(format!("{file}: {e}")))?;
    if let Some(key) = foreign_fields(spec.kind)
        .iter()
        .find(|k| table.contains_key(**k))
    {
        return Err(bad(format!(
            "{file}: {key}: a {} sweep has none (it belongs to a {} sweep)",
            kind_name(spec.kind),
            kind_name(other_kind(spec.kind))
        )));
    }
    let time_shared = spec.placements.contains(&Placement::Timeshare);
    let only_time_shared = spec.placements.iter().all(|&p| p == Placement::Timeshare);
    let unused = [
        ("quantum_ms", !time_shared, "the timeshare placement, which the sweep does not have"),
        ("timeshare_rounds", !time_shared, "the timeshare placement, which the sweep does not have"),
        ("warmup_instructions", only_time_shared, "pairs on threads of their own, and every placement of the sweep time-shares: a round of quanta warms the caches"),
        ("measure_instructions", only_time_shared, "pairs on threads of their own, and every placement of the sweep time-shares: rounds of quanta are measured"),
    ];
    if spec.kind == SweepKind::Pairs {
        if let Some((key, _, what)) = unused
            .iter()
            .find(|(key, unused, _)| *unused && table.contains_key(*key))
        {
            return Err(bad(format!(
                "{file}: {key}: applies to {what} (it would change nothing)"
            )));
        }
    }
    Sweep::new(spec).map_err(|e| bad(format!("{file}: {e}")))
}

/// The fields only the other kind of sweep than `kind` reads: given to this one, they would be
/// ignored.
fn foreign_fields(kind: SweepKind) -> &'static [&'static str] {
    match kind {
        SweepKind::Pairs => &["policies", "duration_s", "run_seconds", "baseline"],
        SweepKind::Policies => &[
            "placements",
            "warmup_instructions",
            "measure_instructions",
            "quantum_ms",
            "timeshare_rounds",
        ],
    }
}

fn other_kind(kind: SweepKind) -> SweepKind {
    match kind {
        SweepKind::Pairs => SweepKind::Policies,
        SweepKind::Policies => SweepKind::Pairs,
    }
}

/// The kind as a sweep file spells it.
fn kind_name(kind: SweepKind) -> &'static str {
    match kind {
        SweepKind::Pairs => "pairs",
        SweepKind::Policies => "policies",
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Sweep {
    /// Resolves every axis; the error names the field and value.
    pub fn new(spec: SweepSpec) -> Result<Sweep, String> {
        if spec.name.is_empty() || spec.name.chars().any(char::is_control) {
            return Err(format!(
                "name = {:?}: a name needs a character and no control characters (it names \
                 shard files and Slurm jobs)",
                spec.name
            ));
        }
        let empty = |f: &str, n: usize| (n == 0).then(|| format!("{f}: give at least one"));
        for (f, n) in [
            ("machines", spec.machines.len()),
            ("sets", spec.sets.len()),
            ("workloads", spec.workloads.len()),
            ("seeds", spec.seeds.len()),
        ] {
            if let Some(e) = empty(f, n) {
                return Err(e);
            }
        }
        // A value given twice would run the same jobs twice.
        let twice = |f: &str, v: String| format!("{f}: {v} is given twice");
        if let Some((_, m)) = smtsched_model::first_repeat(&spec.machines) {
            return Err(twice("machines", format!("{m:?}")));
        }
        if let Some((_, s)) = smtsched_model::first_repeat(&spec.sets) {
            return Err(twice("sets", format!("{s:?}")));
        }
        if let Some((_, w)) = smtsched_model::first_repeat(&spec.workloads) {
            return Err(twice("workloads", format!("{w:?}")));
        }
        if let Some((_, s)) = smtsched_model::first_repeat(&spec.seeds) {
            return Err(twice("seeds", s.to_string()));
        }
        if let Some((_, p)) = smtsched_model::first_repeat(&spec.policies) {
            return Err(twice("policies", format!("{p:?}")));
        }
        if let Some((_, p)) = smtsched_model::first_repeat(&spec.placements) {
            return Err(twice("placements", format!("{p:?}")));
        }
        let variants: Vec<Variant> = match spec.kind {
            SweepKind::Pairs => {
                if !spec.policies.is_empty() {
                    return Err("policies: a pairs sweep varies placements, not policies".into());
                }
                spec.placements
                    .iter()
                    .map(|&p| Variant::Placement(p))
                    .collect()
            }
            SweepKind::Policies => {
                if !spec.placements.is_empty() {
                    return Err("placements: a policies sweep varies policies".into());
                }
                spec.policies
                    .iter()
                    .map(|p| {
                        let policy: PolicyName = p.parse().map_err(|e| format!("policies: {e}"))?;
                        policy
                            .check_baseline(spec.baseline)
                            .map_err(|e| format!("policies: {e} (set baseline = \"modern\")"))?;
                        Ok(Variant::Policy(policy))
                    })
                    .collect::<Result<_, String>>()?
            }
        };
        if variants.is_empty() {
            let f = match spec.kind {
                SweepKind::Pairs => "placements",
                SweepKind::Policies => "policies",
            };
            return Err(format!("{f}: give at least one"));
        }
        check_numbers(&spec)?;
        let mut machines = Vec::new();
        for (mi, m) in spec.machines.iter().enumerate() {
            let mut per_set = Vec::new();
            for (si, set) in spec.sets.iter().enumerate() {
                let overrides: Vec<Override> = set
                    .iter()
                    .map(|s| s.parse().map_err(|e| format!("sets[{si}]: {e}")))
                    .collect::<Result<_, _>>()?;
                let model = load_machine(m, &overrides).map_err(|e| {
                    // A machine that loads alone but not with the set's overrides: their fault.
                    let at = match (&e, load_machine(m, &[])) {
                        (ModelError::Override { .. }, _) | (_, Ok(_)) => {
                            format!("sets[{si}] on machine {m}")
                        }
                        _ => format!("machines[{mi}]"),
                    };
                    format!("{at}: {}", one_line(&e.to_string()))
                })?;
                for v in &variants {
                    if let Variant::Placement(p) = *v {
                        smtsched_uarch::protocol::placement_cpus(&model, p)
                            .map_err(|e| format!("placements: {e}"))?;
                    }
                }
                per_set.push(model);
            }
            machines.push(per_set);
        }
        // Two names of one machine (a preset and its file) would run the same jobs twice.
        let seen: Vec<String> = machines.iter().map(|m| format!("{:?}", m[0])).collect();
        if let Some((i, _)) = smtsched_model::first_repeat(&seen) {
            let first = seen.iter().position(|m| *m == seen[i]).expect("repeated");
            return Err(format!(
                "machines: {:?} and {:?} are the same machine",
                spec.machines[first], spec.machines[i]
            ));
        }
        let mut workloads = Vec::new();
        // What the machine and workload files held, for `id`.
        let mut loaded = format!("{machines:?}\n");
        for list in &spec.workloads {
            let names = expand_workload_list(list);
            if names.is_empty() || names.len() > 64 {
                return Err(format!(
                    "workloads: {list:?} names {} workloads; a list needs 1 to 64",
                    names.len()
                ));
            }
            for n in &names {
                let profile = load_workload(n, &[])
                    .map_err(|e| format!("workloads: {}", one_line(&e.to_string())))?;
                loaded.push_str(&format!("{profile:?}\n"));
            }
            if let Some(same) = workloads.iter().position(|w| *w == names) {
                return Err(format!(
                    "workloads: {:?} and {list:?} name the same workloads",
                    spec.workloads[same]
                ));
            }
            workloads.push(names);
        }
        let total = spec.machines.len()
            * spec.sets.len()
            * spec.workloads.len()
            * variants.len()
            * spec.seeds.len();
        if total > MAX_JOBS {
            return Err(format!("{total} jobs: a sweep may have at most {MAX_JOBS}"));
        }
        let canonical = toml::to_string(&spec).map_err(|e| e.to_string())?;
        // The machines and workloads as loaded too: shards run with a machine file edited
        // between them are of two sweeps, and never merged.
        let id = SweepId {
            name: spec.name.clone(),
            hash: fingerprint(&format!("{canonical}\n{loaded}")),
        };
        Ok(Sweep {
            spec,
            id,
            machines,
            workloads,
            variants,
        })
    }

    /// Every job, in the order results list them.
    fn jobs(&self) -> Vec<Job> {
        let s = &self.spec;
        let mut jobs = Vec::new();
        for (mi, m) in s.machines.iter().enumerate() {
            for (si, set) in s.sets.iter().enumerate() {
                for (wi, w) in s.workloads.iter().enumerate() {
                    for &variant in &self.variants {
                        for &seed in &s.seeds {
                            let name = match variant {
                                Variant::Placement(p) => p.to_string(),
                                Variant::Policy(p) => p.to_string(),
                            };
                            jobs.push(Job {
                                key: JobKey {
                                    machine: m.clone(),
                                    set: set.clone(),
                                    workloads: w.clone(),
                                    variant: name,
                                    seed,
                                },
                                machine: (mi, si),
                                workloads: wi,
                                variant,
                            });
                        }
                    }
                }
            }
        }
        jobs
    }

    /// The files the sweep loaded besides itself (machine and workload files), which an output
    /// must not replace.
    pub fn files(&self) -> Vec<&Path> {
        let machines = self.spec.machines.iter();
        let workloads = self.workloads.iter().flatten();
        machines
            .chain(workloads)
            .map(Path::new)
            .filter(|p| p.is_file())
            .collect()
    }

    pub fn jobs_total(&self) -> usize {
        self.jobs().len()
    }

    /// Runs the jobs of `shard` (all of them when `None`) but those `done` already (a stopped
    /// run's, see [`crate::progress`]), in parallel; `finished` is told of each job as it ends
    /// (an error it returns fails the run). The results are those of one uninterrupted run.
    pub fn run(
        &self,
        shard: Option<Shard>,
        done: Vec<JobResult>,
        finished: &(dyn Fn(&JobResult) -> Result<(), String> + Sync),
    ) -> Result<SweepResults, SweepError> {
        let jobs = self.jobs();
        let total = jobs.len();
        let kept: std::collections::HashSet<usize> = done.iter().map(|j| j.index).collect();
        let mine: Vec<(usize, &Job)> = jobs
            .iter()
            .enumerate()
            .filter(|(i, _)| shard.is_none_or(|s| s.takes(*i)) && !kept.contains(i))
            .collect();
        let mut results = mine
            .par_iter()
            .map(|&(index, job)| {
                let outcome = self
                    .run_job(job)
                    .map_err(|e| SweepError::Run(format!("job {index} ({}): {e}", job.key)))?;
                let result = JobResult {
                    index,
                    key: job.key.clone(),
                    outcome,
                };
                finished(&result).map_err(SweepError::Run)?;
                Ok(result)
            })
            .collect::<Result<Vec<_>, SweepError>>()?;
        results.extend(done);
        results.sort_by_key(|j| j.index);
        Ok(SweepResults {
            format: SWEEP_RESULTS_FORMAT.into(),
            sweep: self.id.clone(),
            shard,
            jobs_total: total,
            jobs: results,
        })
    }

    /// The places of the jobs `shard` runs (all when `None`), in order.
    pub fn places(&self, shard: Option<Shard>) -> Vec<usize> {
        (0..self.jobs_total())
            .filter(|&i| shard.is_none_or(|s| s.takes(i)))
            .collect()
    }

    fn run_job(&self, job: &Job) -> Result<Outcome, String> {
        let m = &self.machines[job.machine.0][job.machine.1];
        let names = &self.workloads[job.workloads];
        let seed = job.key.seed;
        match job.variant {
            Variant::Placement(p) => {
                let profiles: Vec<_> = names
                    .iter()
                    .map(|n| load_workload(n, &[]).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
                let refs: Vec<&dyn Workload> =
                    profiles.iter().map(|w| w as &dyn Workload).collect();
                let proto = Protocol {
                    seed,
                    warmup_instructions: self.spec.warmup_instructions,
                    measure_instructions: self.spec.measure_instructions,
                    quantum_cycles: quantum_cycles(self.spec.quantum_ms, m),
                    timeshare_rounds: self.spec.timeshare_rounds,
                    refill_only: true,
                };
                let matrix = smtsched_uarch::protocol::matrix(m, &refs, p, &proto, &|| {})
                    .map_err(|e| e.to_string())?;
                Ok(Outcome::Pairs { matrix })
            }
            Variant::Policy(policy) => {
                let mut set = TaskSetSpec::of_workloads(names);
                for t in &mut set.tasks {
                    t.run_seconds = self.spec.run_seconds;
                }
                let oracle = SimulatedOracle::for_set(m, &set, seed, KernelBuild::Smp)
                    .map_err(|e| e.to_string())?;
                let cfg = SimConfig::new(self.spec.baseline, self.spec.duration_s, seed);
                let runs = simulate(m, &oracle, &set, &[policy], 1, &cfg)?;
                let s = runs[0].runs[0].summary();
                Ok(Outcome::Policies {
                    system_speedup: s.system_speedup,
                    antt: s.antt,
                    fairness: s.fairness,
                    missing: s.missing,
                })
            }
        }
    }
}

/// Numbers of the spec: finite and in range.
fn check_numbers(s: &SweepSpec) -> Result<(), String> {
    use smtsched_uarch::protocol::{MAX_THREAD_INSTRUCTIONS, QUANTUM_MS};
    if !(1..=MAX_THREAD_INSTRUCTIONS).contains(&s.measure_instructions) {
        return Err(format!(
            "measure_instructions = {}: must be 1 to {:e}",
            s.measure_instructions, MAX_THREAD_INSTRUCTIONS as f64
        ));
    }
    if s.warmup_instructions > MAX_THREAD_INSTRUCTIONS {
        return Err(format!(
            "warmup_instructions = {}: must be at most {:e}",
            s.warmup_instructions, MAX_THREAD_INSTRUCTIONS as f64
        ));
    }
    if !QUANTUM_MS.contains(&s.quantum_ms) {
        return Err(format!(
            "quantum_ms = {}: must be {} to {}",
            s.quantum_ms,
            QUANTUM_MS.start(),
            QUANTUM_MS.end()
        ));
    }
    use smtsched_os::taskset::{MAX_RUN_S, MIN_RUN_S};
    if !(MIN_RUN_S..=MAX_RUN_S).contains(&s.run_seconds) {
        return Err(format!(
            "run_seconds = {}: must be {MIN_RUN_S} to {MAX_RUN_S}",
            s.run_seconds
        ));
    }
    let stagger_s = SimConfig::new(s.baseline, s.duration_s, 0).stagger_s;
    if !(s.duration_s > stagger_s && s.duration_s <= 1e6) {
        return Err(format!(
            "duration_s = {}: must be longer than the {stagger_s} s in which tasks start (runs \
             count after it) and at most 10^6",
            s.duration_s
        ));
    }
    use smtsched_uarch::protocol::MAX_TIMESHARE_ROUNDS;
    if !(1..=MAX_TIMESHARE_ROUNDS).contains(&s.timeshare_rounds) {
        return Err(format!(
            "timeshare_rounds = {}: must be 1 to {MAX_TIMESHARE_ROUNDS}",
            s.timeshare_rounds
        ));
    }
    Ok(())
}

/// Reads a results or shard file; errors name the file.
pub fn read_results(path: &Path) -> Result<SweepResults, SweepError> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("{file}: {e}")))?;
    let r: SweepResults = serde_json::from_str(&text)
        .map_err(|e| bad(format!("{file}: not a sweep result file: {e}")))?;
    if r.format != SWEEP_RESULTS_FORMAT {
        return Err(bad(format!(
            "{file}: format {:?}, expected {SWEEP_RESULTS_FORMAT:?}",
            r.format
        )));
    }
    Ok(r)
}

/// Merges the shards of one sweep into its complete results: every shard of the same sweep and
/// count exactly once, every job exactly once. `parts` are (file name, contents).
pub fn merge(parts: &[(String, SweepResults)]) -> Result<SweepResults, SweepError> {
    let described: Vec<ShardPart> = parts
        .iter()
        .map(|(file, p)| ShardPart {
            file,
            run: format!("sweep {:?} ({})", p.sweep.name, p.sweep.hash),
            shard: p.shard,
            total: p.jobs_total,
            items: p.jobs.iter().map(|j| j.index).collect(),
        })
        .collect();
    check_complete(&described).map_err(bad)?;
    let first = &parts[0].1;
    let mut jobs: Vec<JobResult> = parts.iter().flat_map(|(_, p)| p.jobs.clone()).collect();
    jobs.sort_by_key(|j| j.index);
    Ok(SweepResults {
        format: SWEEP_RESULTS_FORMAT.into(),
        sweep: first.sweep.clone(),
        shard: None,
        jobs_total: first.jobs_total,
        jobs,
    })
}

/// The results as a table for people: one row per job.
pub fn render(r: &SweepResults) -> String {
    if r.jobs.is_empty() {
        // No row tells which kind of table it would have been.
        let whose = r.shard.map_or(String::new(), |s| {
            format!(" in shard {}/{}", s.index, s.count)
        });
        return format!("no jobs{whose} (the sweep has {})\n", r.jobs_total);
    }
    let pairs = r
        .jobs
        .iter()
        .any(|j| matches!(j.outcome, Outcome::Pairs { .. }));
    let mut t = smtsched_report::Table::new(if pairs {
        vec![
            "machine",
            "set",
            "workloads",
            "placement",
            "seed",
            "mean PR",
            "speedup min",
            "speedup mean",
            "speedup max",
        ]
    } else {
        vec![
            "machine",
            "set",
            "workloads",
            "policy",
            "seed",
            "speedup",
            "ANTT",
            "fairness",
            "missing",
        ]
    });
    for j in &r.jobs {
        let k = &j.key;
        let mut row = vec![
            k.machine.clone(),
            if k.set.is_empty() {
                "-".into()
            } else {
                k.set.join(" ")
            },
            k.workloads.clone(),
            k.variant.clone(),
            k.seed.to_string(),
        ];
        match &j.outcome {
            Outcome::Pairs { matrix } => match smtsched_report::matrix::summarize(matrix) {
                Some(s) => row.extend([
                    format!("{:.3}", s.pr.mean),
                    format!("{:.3}", s.system_speedup.min),
                    format!("{:.3}", s.system_speedup.mean),
                    format!("{:.3}", s.system_speedup.max),
                ]),
                None => row.extend(["-".to_string(), "-".into(), "-".into(), "-".into()]),
            },
            Outcome::Policies {
                system_speedup,
                antt,
                fairness,
                missing,
            } => row.extend([
                figure(*system_speedup),
                figure(*antt),
                figure(*fairness),
                if missing.is_empty() {
                    "-".into()
                } else {
                    missing.join(" ")
                },
            ]),
        }
        t.row(row);
    }
    format!(
        "sweep {} ({} jobs)\n\n{}",
        r.sweep.name,
        r.jobs.len(),
        t.render()
    )
}

/// A figure to three places, or `-` when it has none.
fn figure(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}
