//! Running task sets under policies, and experiments as data: `experiments/*.toml` declare a task
//! set, the policies and settings, and what the paper found; `smtsched reproduce` runs them and
//! prints the result beside the paper's figure, checking each claim it can.

use crate::metrics::Metrics;
use crate::oracle::Oracle;
use crate::policy::{PolicyInputs, PolicyName};
use crate::sim::{OsSim, SimConfig};
use crate::taskset::TaskSetSpec;
use rayon::prelude::*;
use smtsched_model::MachineModel;
use smtsched_report::perfetto::{trace_json, CounterSample};
use smtsched_report::stats::mean_sd;
use smtsched_report::timeline::{timeline_svg, Segment};
use smtsched_report::verdict::{MeanInterval, Verdict};
use smtsched_report::Table;

/// Results of one policy over its repetitions.
#[derive(serde::Serialize)]
pub struct PolicyRuns {
    pub policy: String,
    pub runs: Vec<Metrics>,
    /// Wall-clock seconds all the simulations took once the oracle was warm.
    pub wall_seconds: f64,
}

/// Runs `set` under every policy `repeat` times (seeds seed, seed+1, …), in parallel.
pub fn simulate(
    m: &MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    policies: &[PolicyName],
    repeat: u32,
    base: &SimConfig,
) -> Result<Vec<PolicyRuns>, String> {
    // Building one simulation validates the set and warms the oracle.
    OsSim::new(m, oracle, set, Box::new(crate::policy::Naive), base.clone())?;
    let inputs = PolicyInputs {
        truth: policies
            .contains(&PolicyName::Optimal)
            .then(|| truth_for(m, oracle, set, base)),
        ..PolicyInputs::default()
    };
    let started = std::time::Instant::now();
    let jobs: Vec<(usize, u32)> = (0..policies.len())
        .flat_map(|p| (0..repeat).map(move |r| (p, r)))
        .collect();
    let results: Vec<Metrics> = jobs
        .par_iter()
        .map(|&(p, r)| {
            let mut cfg = base.clone();
            cfg.seed = base.seed + r as u64;
            cfg.record_timeline = base.record_timeline && p == 0 && r == 0;
            cfg.record_periods = base.record_periods && p == 0 && r == 0;
            let policy = policies[p].build(&inputs)?;
            OsSim::new(m, oracle, set, policy, cfg).map(|s| s.run())
        })
        .collect::<Result<_, String>>()?;
    let seconds = started.elapsed().as_secs_f64();
    let mut out: Vec<PolicyRuns> = policies
        .iter()
        .map(|p| PolicyRuns {
            policy: p.to_string(),
            runs: Vec::new(),
            wall_seconds: seconds,
        })
        .collect();
    for ((p, _), r) in jobs.iter().zip(results) {
        out[*p].runs.push(r);
    }
    Ok(out)
}

/// The true PRs of the set's tasks on the first core in use, for the `optimal` ceiling.
pub fn truth_for(
    m: &MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    cfg: &SimConfig,
) -> crate::policy::PairTruth {
    let topo = smtsched_model::topology::Topology::of_machine(m, cfg.cpus.as_ref());
    let core = topo.cores[0]
        .cpus
        .iter()
        .map(|c| c as usize)
        .collect::<Vec<_>>();
    let names: Vec<String> = set.tasks.iter().map(|t| t.display_name()).collect();
    crate::oracle::pair_truth(
        oracle,
        &names,
        m.logical_cpus() as usize,
        core[0],
        core.get(1).copied(),
    )
}

/// The comparison table: one row per policy. Columns computed from PRs are marked `*` where a
/// task completed no run in the window (the sums leave it out), with a note under the table.
pub fn policy_table(results: &[PolicyRuns]) -> String {
    let mut t = Table::new([
        "policy",
        "system speedup",
        "sd",
        "ANTT",
        "fairness",
        "PR sd",
        "switches/s",
        "migrations/s",
        "forced idle (CPUs)",
        "estimates",
    ]);
    let mut notes = Vec::new();
    for p in results {
        let s: Vec<_> = p.runs.iter().map(|r| r.summary()).collect();
        let mean = |f: &dyn Fn(&crate::metrics::Summary) -> f64| {
            mean_sd(&s.iter().map(f).collect::<Vec<_>>())
        };
        let per_s = |f: &dyn Fn(&Metrics) -> f64| {
            mean_sd(
                &p.runs
                    .iter()
                    .map(|r| f(r) / (r.window.1 / r.clock_hz))
                    .collect::<Vec<_>>(),
            )
            .0
        };
        let missing = s.iter().map(|x| x.missing.len()).max().unwrap_or(0);
        let mark = if missing > 0 { "*" } else { "" };
        if missing > 0 {
            notes.push(format!(
                "* {}: {missing} of {} tasks completed no run in the measurement window (in at least one repetition); the marked columns leave them out",
                p.policy,
                p.runs.first().map_or(0, |r| r.per_bench.len())
            ));
        }
        let (sp, sd) = mean(&|x| x.system_speedup);
        t.row([
            p.policy.clone(),
            format!("{sp:.3}{mark}"),
            format!("{sd:.3}"),
            format!("{:.3}{mark}", mean(&|x| x.antt).0),
            format!("{:.3}{mark}", mean(&|x| x.fairness).0),
            format!("{:.3}{mark}", mean(&|x| x.pr_sd).0),
            format!("{:.1}", per_s(&|r| r.context_switches as f64)),
            format!("{:.2}", per_s(&|r| r.migrations as f64)),
            format!(
                "{:.2}",
                mean_sd(
                    &p.runs
                        .iter()
                        .map(|r| r.forced_idle_cycles / (r.window.1 - r.window.0))
                        .collect::<Vec<_>>()
                )
                .0
            ),
            format!(
                "{}",
                p.runs.iter().map(|r| r.estimates).sum::<u64>() / p.runs.len().max(1) as u64
            ),
        ]);
    }
    let mut out = t.render();
    for n in notes {
        out.push('\n');
        out.push_str(&n);
    }
    out
}

/// Per-task PRs: one row per task, one column per policy (mean over repetitions).
pub fn task_table(results: &[PolicyRuns]) -> String {
    let names: Vec<String> = results[0].runs[0]
        .per_bench
        .iter()
        .map(|b| format!("{} (nice {})", b.name, b.nice))
        .collect();
    let mut t = Table::new(
        std::iter::once("task PR".to_string()).chain(results.iter().map(|p| p.policy.clone())),
    );
    for (i, name) in names.iter().enumerate() {
        t.row(std::iter::once(name.clone()).chain(results.iter().map(|p| {
            let v: Vec<f64> = p.runs.iter().filter_map(|r| r.per_bench[i].pr).collect();
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("{:.3}", mean_sd(&v).0)
            }
        })));
    }
    t.render()
}

/// Servers: one row per policy and client group (means over repetitions; response times of
/// the first repetition, `-` where no response completed in the window).
pub fn server_table(results: &[PolicyRuns]) -> String {
    let mut t = Table::new([
        "policy", "clients", "req/s", "Mb/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "kernel",
        "irq", "instr/B",
    ]);
    for p in results {
        for (i, s) in p.runs[0].servers.iter().enumerate() {
            let mean =
                |f: &dyn Fn(&Metrics) -> f64| mean_sd(&p.runs.iter().map(f).collect::<Vec<_>>()).0;
            let resp = |q: fn(&crate::metrics::ResponseTimes) -> f64| {
                s.response_ms
                    .as_ref()
                    .map_or("-".into(), |r| format!("{:.3}", q(r)))
            };
            let k = |f: fn(&crate::sim::KernelTotals) -> f64| {
                format!("{:.3}", mean(&|r| r.kernel.as_ref().map_or(0.0, f)))
            };
            t.row([
                p.policy.clone(),
                s.name.clone(),
                format!("{:.0}", mean(&|r| r.servers[i].requests_per_s)),
                format!("{:.1}", mean(&|r| r.servers[i].megabits_per_s)),
                resp(|r| r.p50),
                resp(|r| r.p90),
                resp(|r| r.p99),
                resp(|r| r.p999),
                k(|k| k.kernel_share),
                k(|k| k.interrupt_share),
                format!(
                    "{:.2}",
                    mean(&|r| r.per_byte.map_or(0.0, |p| p.instructions))
                ),
            ]);
        }
    }
    t.render()
}

/// The stretches each task held a CPU between `t0_s` and `t1_s` (seconds since the start),
/// labelled "name (pid)".
pub fn segments(r: &Metrics, t0_s: f64, t1_s: f64) -> Vec<Segment> {
    let hz = r.clock_hz;
    let mut open: std::collections::BTreeMap<usize, (f64, String)> = Default::default();
    let mut segs = Vec::new();
    let mut close = |lane: usize, start_s: f64, end_s: f64, label: String| {
        let (start_s, end_s) = (start_s.max(t0_s), end_s.min(t1_s));
        if end_s > start_s {
            segs.push(Segment {
                lane,
                start_s,
                end_s,
                label,
            });
        }
    };
    for s in &r.timeline {
        let t = s.cycle / hz;
        if let Some((start, label)) = open.remove(&s.cpu) {
            close(s.cpu, start, t, label);
        }
        if let (Some(name), Some(pid)) = (&s.to_name, s.to) {
            open.insert(s.cpu, (t, format!("{name} ({pid})")));
        }
    }
    for (cpu, (start, label)) in open {
        close(cpu, start, r.window.1 / hz, label);
    }
    segs
}

/// Timeline segments of the first `seconds` seconds after the window starts.
pub fn timeline_svg_of(
    r: &Metrics,
    m: &MachineModel,
    seconds: f64,
    title: &str,
) -> Result<String, String> {
    let t0 = r.window.0 / r.clock_hz;
    let t1 = t0 + seconds;
    let segs = segments(r, t0, t1);
    let lanes = m.logical_cpus() as usize;
    let names: Vec<String> = (0..lanes).map(|c| format!("cpu {c}")).collect();
    timeline_svg(&segs, lanes, &names, t0, t1, title)
}

/// The whole schedule as a Perfetto trace: a track per CPU, a slice per stretch a task ran, a
/// counter track per task's PR estimates.
pub fn perfetto_of(r: &Metrics, m: &MachineModel, title: &str) -> serde_json::Value {
    let segs = segments(r, 0.0, r.window.1 / r.clock_hz);
    let names: Vec<String> = (0..m.logical_cpus()).map(|c| format!("cpu {c}")).collect();
    let label: std::collections::BTreeMap<u32, String> = r
        .timeline
        .iter()
        .filter_map(|s| Some((s.to?, s.to_name.clone()?)))
        .collect();
    let counters: Vec<CounterSample> = r
        .estimate_samples
        .iter()
        .map(|e| CounterSample {
            series: format!(
                "PR {} ({})",
                label.get(&e.pid).map_or("task", |s| s.as_str()),
                e.pid
            ),
            t_s: e.cycle / r.clock_hz,
            value: e.pr,
        })
        .collect();
    trace_json(title, &names, &segs, &counters)
}

/// An experiment file (`experiments/NAME.toml`).
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub source: String,
    pub kind: ExperimentKind,
    #[serde(default = "default_machine")]
    pub machine: String,
    /// Machine overrides (`KEY=VALUE`).
    #[serde(default)]
    pub set: Vec<String>,
    /// Logical CPUs the OS uses.
    #[serde(default)]
    pub cpus: Option<String>,
    #[serde(default = "default_baseline")]
    pub baseline: crate::sim::Baseline,
    #[serde(default)]
    pub policies: Vec<PolicyName>,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    /// `thesis`, `perfect`, or a model file.
    #[serde(default = "default_estimator")]
    pub estimator: String,
    /// The task set (kind = "policies").
    #[serde(default, rename = "task")]
    pub tasks: Vec<crate::taskset::TaskSpec>,
    /// cgroups of the task set.
    #[serde(default, rename = "group")]
    pub groups: Vec<crate::taskset::GroupSpec>,
    /// Devices and clients of the task set (servers, interrupts).
    #[serde(default, rename = "device")]
    pub devices: Vec<crate::taskset::DeviceSpec>,
    #[serde(default)]
    pub clients: Vec<crate::taskset::ClientsSpec>,
    /// Workload profiles of the experiment's own (see `TaskSetSpec::profiles`).
    #[serde(default, rename = "profile", skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<smtsched_model::WorkloadProfile>,
    /// The configurations, variants, metrics and claims of kind = "configurations".
    #[serde(default)]
    pub configurations: crate::configurations::ConfigurationsSpec,
    /// Placements and claims of kind = "pairs" (its workloads are `workloads`).
    #[serde(default)]
    pub pairs: crate::pairs::PairsSpec,
    /// Claims of kind = "asymmetry".
    #[serde(default)]
    pub asymmetry: AsymmetrySpec,
    /// The workloads grouped in fours (kind = "asymmetry").
    #[serde(default)]
    pub workloads: Vec<String>,
    #[serde(default)]
    pub paper: Paper,
    /// Settings of the Fedorova CMT experiments (kinds `fedorova-*`).
    #[serde(default)]
    pub cmt: CmtSettings,
}

/// Settings of the Fedorova et al. 2005 experiments (kinds `fedorova-*`), which
/// `smtsched-cachemodel` carries out. Zero or empty means the experiment's default.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CmtSettings {
    /// Shared L2 sizes to sweep, in bytes.
    #[serde(default)]
    pub l2_sizes: Vec<u64>,
    /// L1D sizes to sweep, in bytes.
    #[serde(default)]
    pub l1_sizes: Vec<u64>,
    /// Copies of every workload in `workloads`.
    #[serde(default)]
    pub copies: u32,
    /// Fixed schedules: a name and, per core, the workloads on its contexts.
    #[serde(default, rename = "schedule")]
    pub schedules: Vec<CoreSchedule>,
    /// A SPEC-like mix to schedule by CPI.
    #[serde(default)]
    pub spec_mix: Vec<String>,
    /// Simulated cycles before and in each measured window.
    #[serde(default)]
    pub warmup_cycles: u64,
    #[serde(default)]
    pub measure_cycles: u64,
    /// Moments of an OS-simulated schedule measured on the microarchitectural simulator.
    #[serde(default)]
    pub samples: u32,
    /// Instructions in each thread's reuse-distance window.
    #[serde(default)]
    pub window_instructions: u64,
    /// Simulated seconds of each OS-simulator run.
    #[serde(default)]
    pub os_seconds: f64,
}

/// One fixed schedule: the workloads on each core's contexts.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSchedule {
    pub name: String,
    pub cores: Vec<Vec<String>>,
}

fn default_machine() -> String {
    "northwood".into()
}
fn default_baseline() -> crate::sim::Baseline {
    crate::sim::Baseline::Linux24
}
fn default_repetitions() -> u32 {
    3
}
fn default_duration() -> f64 {
    3600.0
}
fn default_estimator() -> String {
    "thesis".into()
}

impl Experiment {
    /// The task set of a policies experiment.
    pub fn task_set(&self) -> TaskSetSpec {
        TaskSetSpec {
            name: self.name.clone(),
            tasks: self.tasks.clone(),
            groups: self.groups.clone(),
            devices: self.devices.clone(),
            clients: self.clients.clone(),
            profiles: self.profiles.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExperimentKind {
    /// A task set under several policies (thesis §4.5, USENIX'05).
    Policies,
    /// Every group of four workloads on 2 packages × 2 threads in its three allocations
    /// (thesis §3.5).
    Asymmetry,
    /// Fedorova et al. §3.1: CPI-based co-scheduling, Table 1 schedules (smtsched-cachemodel).
    FedorovaCpi,
    /// Fedorova et al. §3.2.1: L1D size sweep, copies of one program on one core.
    FedorovaL1,
    /// Fedorova et al. §3.2.2: the SPEC mix on 2 cores × 4 contexts, L2 size sweep.
    FedorovaL2,
    /// Fedorova et al. §4: balance-set scheduling (PERF, FAIR) against the default scheduler.
    FedorovaBalanceSet,
    /// One task set in several configurations of machine, CPUs, kernel build and interrupt
    /// routing (Ruan et al., Redstone et al., thesis chapter 5).
    Configurations,
    /// Every pair of `workloads` under each placement, with claims on the matrices (thesis §3.3).
    Pairs,
}

/// What the paper reports, printed beside the result.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    /// Where (figure or table).
    #[serde(default)]
    pub figure: String,
    /// The paper's findings in its words.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Findings this tool can check against the result.
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
    /// Numbers the paper gives, by name.
    #[serde(default)]
    pub values: std::collections::BTreeMap<String, f64>,
}

/// A checkable finding: `higher` beats `than` on `metric`, or `lowest`/`highest` of all policies.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub says: String,
    pub metric: PolicyMetric,
    #[serde(default)]
    pub higher: Option<PolicyName>,
    #[serde(default)]
    pub than: Option<PolicyName>,
    #[serde(default)]
    pub lowest: Option<PolicyName>,
    #[serde(default)]
    pub highest: Option<PolicyName>,
}

macro_rules! embedded_experiments {
    ($($name:literal),* $(,)?) => {
        /// Experiments embedded in the binary (`experiments/NAME.toml`).
        pub const EXPERIMENTS: &[smtsched_model::Preset] = &[
            $(smtsched_model::Preset {
                name: $name,
                file: concat!("experiments/", $name, ".toml"),
                text: include_str!(concat!("../../../experiments/", $name, ".toml")),
            },)*
        ];
    };
}
embedded_experiments!(
    "thesis-set-a",
    "thesis-set-b",
    "thesis-set-c",
    "thesis-set-d",
    "thesis-priorities",
    "usenix05-set-a",
    "usenix05-set-b",
    "usenix05-set-c",
    "thesis-asymmetry",
    "fedorova-cpi",
    "fedorova-l1",
    "fedorova-l2",
    "fedorova-balance-set",
    "ruan-servers",
    "redstone-apache",
    "thesis-irq",
    "thesis-http",
    "thesis-kernel-build",
    "thesis-desktop",
    "thesis-spec-northwood",
    "thesis-spec-prescott",
);

/// Loads an experiment by name (embedded) or file path.
pub fn load_experiment(name: &str) -> Result<Experiment, smtsched_model::ModelError> {
    experiment_from_source(&smtsched_model::loader::resolve(
        "experiment",
        name,
        EXPERIMENTS,
    )?)
}

/// An experiment from its text, checked (what `load_experiment` does once it has the text).
pub fn experiment_from_source(
    src: &smtsched_model::Source,
) -> Result<Experiment, smtsched_model::ModelError> {
    let e: Experiment = smtsched_model::loader::parse(src, &[])?;
    let bad = |field: &str, reason: String| smtsched_model::ModelError::Override {
        text: format!("{}: {field}", src.origin),
        reason,
    };
    match e.kind {
        ExperimentKind::Policies => {
            if e.policies.is_empty() {
                return Err(bad(
                    "policies",
                    "a policies experiment needs at least one policy".into(),
                ));
            }
            e.task_set().validate().map_err(|r| bad("task", r))?;
        }
        ExperimentKind::FedorovaCpi
        | ExperimentKind::FedorovaL1
        | ExperimentKind::FedorovaL2
        | ExperimentKind::FedorovaBalanceSet => {
            if e.workloads.is_empty() && e.cmt.schedules.is_empty() {
                return Err(bad(
                    "workloads",
                    "a fedorova experiment needs workloads or cmt.schedule".into(),
                ));
            }
        }
        ExperimentKind::Pairs => {
            crate::pairs::validate(&e.pairs, &e.workloads).map_err(|r| bad("pairs", r))?;
        }
        ExperimentKind::Configurations => {
            let set = e.task_set();
            set.validate().map_err(|r| bad("task", r))?;
            crate::configurations::validate(&e.configurations, &set)
                .map_err(|r| bad("configurations", r))?;
        }
        ExperimentKind::Asymmetry => {
            if e.workloads.len() < 4 {
                return Err(bad(
                    "workloads",
                    format!(
                        "{} workloads: an asymmetry experiment groups them in fours",
                        e.workloads.len()
                    ),
                ));
            }
        }
    }
    if !(e.duration_s > 0.0 && e.duration_s.is_finite()) || e.repetitions == 0 {
        return Err(bad(
            "duration_s",
            "duration and repetitions must be positive".into(),
        ));
    }
    Ok(e)
}

/// What a policies claim compares (larger is better for system speedup and fairness).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMetric {
    SystemSpeedup,
    Fairness,
    Antt,
    PrSd,
    /// Mean relative error of each task's PR against its time-slice share of the top task's.
    PriorityError,
}

impl std::str::FromStr for PolicyMetric {
    type Err = String;
    /// The names the experiment files use (one spelling: serde's).
    fn from_str(s: &str) -> Result<Self, String> {
        use serde::de::IntoDeserializer;
        let d: serde::de::value::StrDeserializer<serde::de::value::Error> = s.into_deserializer();
        serde::Deserialize::deserialize(d).map_err(|e| e.to_string())
    }
}

/// The metric a claim compares, for one policy: its value in each run (`None` if a run lacks
/// it).
pub fn metric_values(runs: &PolicyRuns, name: PolicyMetric) -> Option<Vec<f64>> {
    runs.runs
        .iter()
        .map(|r| {
            let s = r.summary();
            if !s.missing.is_empty() {
                // A figure over some of the tasks is not the set's.
                return None;
            }
            match name {
                PolicyMetric::SystemSpeedup => Some(s.system_speedup),
                PolicyMetric::Fairness => Some(s.fairness),
                PolicyMetric::Antt => Some(s.antt),
                PolicyMetric::PrSd => Some(s.pr_sd),
                PolicyMetric::PriorityError => {
                    let ratios = r.priority_ratios();
                    let errs: Vec<f64> = ratios
                        .iter()
                        .filter_map(|(_, a, want)| a.map(|a| (a - want).abs() / want))
                        .collect();
                    (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64)
                }
            }
        })
        .collect()
}

/// The mean of [`metric_values`].
pub fn metric(runs: &PolicyRuns, name: PolicyMetric) -> Option<f64> {
    let vals = metric_values(runs, name)?;
    Some(vals.iter().sum::<f64>() / vals.len() as f64)
}

/// A claim's verdict and the interval it rests on: of the difference (first policy's metric
/// minus the other's, run by run — the runs of every policy share their seeds) that decides it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// `None`: a value is missing, so the claim cannot be checked.
    pub difference: Option<MeanInterval>,
    /// What the difference is of (`plan - naive`).
    pub compared: String,
}

/// Judges a claim on runs of several seeds: `higher A than B` holds when the 95% interval of
/// A − B lies above 0, fails when it lies at or below 0; `lowest L` (`highest H`) needs that of
/// every other policy against L (of H against every other).
pub fn judge(claim: &Claim, results: &[PolicyRuns]) -> Judgement {
    let values = |p: &str| {
        results
            .iter()
            .find(|r| r.policy == p)
            .and_then(|r| metric_values(r, claim.metric))
    };
    // (better, worse) pairs that must all hold.
    let pairs: Vec<(String, String)> = if let (Some(h), Some(t)) = (claim.higher, claim.than) {
        vec![(h.to_string(), t.to_string())]
    } else if let Some(l) = claim.lowest {
        let others = results.iter().filter(|r| r.policy != l.as_str());
        others.map(|r| (r.policy.clone(), l.to_string())).collect()
    } else if let Some(h) = claim.highest {
        let others = results.iter().filter(|r| r.policy != h.as_str());
        others.map(|r| (h.to_string(), r.policy.clone())).collect()
    } else {
        Vec::new()
    };
    let unchecked = |compared: String| Judgement {
        verdict: Verdict::Inconclusive,
        difference: None,
        compared,
    };
    let mut worst: Option<Judgement> = None;
    for (a, b) in pairs {
        let compared = format!("{a} - {b}");
        let (Some(va), Some(vb)) = (values(&a), values(&b)) else {
            return unchecked(compared);
        };
        let d: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| x - y).collect();
        let Some(i) = MeanInterval::of(&d) else {
            return unchecked(compared);
        };
        let j = Judgement {
            verdict: i.above(0.0),
            difference: Some(i),
            compared,
        };
        let rank = |v: Verdict| match v {
            Verdict::DoesNotHold => 0,
            Verdict::Inconclusive => 1,
            Verdict::Holds => 2,
        };
        if worst
            .as_ref()
            .is_none_or(|w| rank(j.verdict) < rank(w.verdict))
        {
            worst = Some(j);
        }
    }
    worst.unwrap_or_else(|| unchecked("nothing".into()))
}

/// What an asymmetry claim reads from the result.
#[derive(Clone, Copy, Debug, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AsymmetryMetric {
    /// The largest best/worst allocation ratio over the groups.
    MaxRatio,
    MeanRatio,
    /// Share of groups whose best allocation beats the worst by more than 10%.
    #[serde(rename = "share_over_10_percent")]
    ShareOver10Percent,
}

/// A claim: `metric` lies within `within` (one deterministic run: a value, not an interval).
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AsymmetryClaim {
    pub says: String,
    pub metric: AsymmetryMetric,
    pub within: [f64; 2],
}

/// The `[asymmetry]` table.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AsymmetrySpec {
    #[serde(default, rename = "claim")]
    pub claims: Vec<AsymmetryClaim>,
}

impl AsymmetryResult {
    pub fn metric(&self, m: AsymmetryMetric) -> f64 {
        match m {
            AsymmetryMetric::MaxRatio => self.max_ratio,
            AsymmetryMetric::MeanRatio => self.mean_ratio,
            AsymmetryMetric::ShareOver10Percent => self.share_over_10_percent,
        }
    }
}

/// One group of four in its three allocations.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AsymmetryGroup {
    pub workloads: [String; 4],
    /// System speedup (Σ PR / 2) of {AB|CD}, {AC|BD}, {AD|BC}.
    pub speedups: [f64; 3],
    pub best_over_worst: f64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct AsymmetryResult {
    pub groups: Vec<AsymmetryGroup>,
    pub max_ratio: f64,
    pub mean_ratio: f64,
    pub share_over_10_percent: f64,
}

/// Thesis §3.5: every four of `profiles` on two packages of two threads, in all three ways of
/// pairing them; runs spread over the host's cores, results independent of how many.
pub fn run_asymmetry(
    machine: &MachineModel,
    profiles: &[smtsched_model::WorkloadProfile],
    proto: &smtsched_uarch::Protocol,
    progress: &(dyn Fn() + Sync),
) -> Result<AsymmetryResult, String> {
    use smtsched_uarch::protocol::{run_together, solo};
    use smtsched_uarch::{Window, Workload};
    if machine.topology.threads_per_core < 2 || machine.cores() < 2 {
        return Err(format!(
            "machine {} needs two cores of two threads for the asymmetry experiment",
            machine.name
        ));
    }
    let cpus = [
        machine.cpu_at(0, 0),
        machine.cpu_at(0, 1),
        machine.cpu_at(machine.cores() - 1, 0),
        machine.cpu_at(machine.cores() - 1, 1),
    ];
    let solos: Vec<f64> = profiles
        .par_iter()
        .map(|p| {
            solo(machine, p, 0, cpus[0], proto)
                .map(|r| r.elapsed_cycles())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let n = profiles.len();
    let mut groups = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            for c in b + 1..n {
                for d in c + 1..n {
                    groups.push([a, b, c, d]);
                }
            }
        }
    }
    // The three allocations: which member shares a package with the first.
    let jobs: Vec<([usize; 4], usize)> = groups
        .iter()
        .flat_map(|g| (0..3).map(move |k| (*g, k)))
        .collect();
    let speed: Vec<f64> = jobs
        .par_iter()
        .map(|&(g, k)| {
            let order = match k {
                0 => [g[0], g[1], g[2], g[3]],
                1 => [g[0], g[2], g[1], g[3]],
                _ => [g[0], g[3], g[1], g[2]],
            };
            let threads: Vec<(&dyn Workload, u32)> = order
                .iter()
                .zip(cpus)
                .map(|(&w, cpu)| (&profiles[w] as &dyn Workload, cpu))
                .collect();
            let r = run_together(machine, &threads, proto, Window::Instructions)
                .map_err(|e| e.to_string())?;
            progress();
            Ok(order
                .iter()
                .zip(&r.threads)
                .map(|(&w, t)| solos[w] / t.elapsed_cycles())
                .sum::<f64>()
                / 2.0)
        })
        .collect::<Result<_, String>>()?;
    let groups: Vec<AsymmetryGroup> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let s = [speed[3 * i], speed[3 * i + 1], speed[3 * i + 2]];
            let best = s.iter().cloned().fold(f64::MIN, f64::max);
            let worst = s.iter().cloned().fold(f64::MAX, f64::min);
            AsymmetryGroup {
                workloads: g.map(|w| profiles[w].name.clone()),
                speedups: s,
                best_over_worst: best / worst,
            }
        })
        .collect();
    let ratios: Vec<f64> = groups.iter().map(|g| g.best_over_worst).collect();
    Ok(AsymmetryResult {
        max_ratio: ratios.iter().cloned().fold(0.0, f64::max),
        mean_ratio: ratios.iter().sum::<f64>() / ratios.len().max(1) as f64,
        share_over_10_percent: ratios.iter().filter(|&&r| r > 1.10).count() as f64
            / ratios.len().max(1) as f64,
        groups,
    })
}
