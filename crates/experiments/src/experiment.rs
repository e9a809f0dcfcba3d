//! Experiments as data: `experiments/*.toml` declare what to run (a task set under policies, a
//! pair matrix, configurations of machine and kernel, a Fedorova cache study, the asymmetry
//! study), the settings, and what the paper found as typed claims; [`crate::run`] runs them and
//! judges each claim.

use rayon::prelude::*;
use smtsched_model::MachineModel;
use smtsched_os::runs::PolicyRuns;
use smtsched_os::taskset::TaskSetSpec;
use smtsched_os::PolicyName;
use smtsched_report::verdict::{MeanInterval, Verdict};

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
    pub baseline: smtsched_os::sim::Baseline,
    #[serde(default)]
    pub policies: Vec<PolicyName>,
    /// Repetitions (seeds) to start with.
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Most repetitions while a claim is inconclusive (default: the command's,
    /// `run::DEFAULT_MAX_REPETITIONS`); an expensive experiment sets fewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repetitions: Option<u32>,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    /// `machine`, `thesis`, `perfect`, or a model file; by default the estimator fitted on the
    /// machine simulated where one is shipped, else `thesis`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<smtsched_os::EstimatorSpec>,
    /// The task set (kind = "policies").
    #[serde(default, rename = "task")]
    pub tasks: Vec<smtsched_os::taskset::TaskSpec>,
    /// cgroups of the task set.
    #[serde(default, rename = "group")]
    pub groups: Vec<smtsched_os::taskset::GroupSpec>,
    /// Devices and clients of the task set (servers, interrupts).
    #[serde(default, rename = "device")]
    pub devices: Vec<smtsched_os::taskset::DeviceSpec>,
    #[serde(default)]
    pub clients: Vec<smtsched_os::taskset::ClientsSpec>,
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
    /// Windows, and claims, of kinds `phases` and `estimator`.
    #[serde(default)]
    pub windows: crate::windows::WindowsSpec,
}

/// Settings of the Fedorova et al. 2005 experiments (kinds `fedorova-*`), which
/// `smtsched-cachemodel` carries out. A field left out takes the experiment's default; zero or
/// empty is refused at load (it would be read as the default without a word).
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
    /// What the paper found, as ranges one seed's metric must fall in.
    #[serde(default, rename = "claim")]
    pub claims: Vec<FedorovaClaim>,
}

/// A number no [`CmtSettings`] field can be (zero, negative, not a number) or an empty list:
/// read as "the default", it would be ignored without a word.
fn is_nothing(v: &toml::Value) -> bool {
    match v {
        toml::Value::Integer(i) => *i <= 0,
        toml::Value::Float(f) => f.is_nan() || *f <= 0.0,
        toml::Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// A claim's range as a file gives it: exactly two numbers, low then high.
pub(crate) fn claim_range<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    use serde::de::Error;
    let v = <Vec<f64> as serde::Deserialize>::deserialize(d)?;
    match v[..] {
        [low, high] if low <= high => Ok([low, high]),
        _ => Err(D::Error::custom(format!(
            "within = {v:?}: must be [low, high] with low <= high"
        ))),
    }
}

/// A Fedorova experiment's claim: one seed's `metric` lies in `within`.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FedorovaClaim {
    pub says: String,
    pub metric: FedorovaMetric,
    #[serde(deserialize_with = "crate::experiment::claim_range")]
    pub within: [f64; 2],
}

/// What the Fedorova experiments measure that a claim can name. Gains and cuts are fractions
/// (0.27 = 27%); the balance-set ones are the paper's method (each group of the schedule
/// simulated), extremes over the L2 sizes.
#[derive(
    Clone, Copy, Debug, serde::Deserialize, serde::Serialize, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum FedorovaMetric {
    /// `fedorova-cpi`: IPC of the better of schedules (a) and (b) over that of (d).
    AbOverD,
    /// `fedorova-cpi`: IPC of schedule (b) over that of (a).
    BOverA,
    /// `fedorova-cpi`: IPC gain of pairing the SPEC-like mix by CPI over grouping similar CPIs.
    SpecPairingGain,
    /// `fedorova-l1`: lowest and highest core IPC where the L1D miss ratio is above 20%.
    HighMissIpcMin,
    HighMissIpcMax,
    /// `fedorova-l1`: the largest relative IPC change of one program across the L1D sizes.
    IpcChangeAcrossL1Sizes,
    /// `fedorova-l2`: IPC at the largest L2 over IPC at the smallest.
    IpcLargestOverSmallestL2,
    /// `fedorova-l2`: L2 miss ratio at the smallest L2 over that at the largest.
    MissRatioSmallestOverLargestL2,
    /// `fedorova-balance-set`: IPC gain and L2 miss-ratio cut of PERF and FAIR against the
    /// default, smallest and largest over the sizes.
    PerfIpcGainMin,
    PerfIpcGainMax,
    PerfMissCutMin,
    PerfMissCutMax,
    FairIpcGainMin,
    FairIpcGainMax,
    FairMissCutMin,
    FairMissCutMax,
    /// `fedorova-balance-set`: AVG's mean |predicted − simulated| / simulated L2 misses per
    /// reference over the groups of the schedules.
    AvgEstimateError,
    /// `fedorova-balance-set`: PERF's IPC at the smallest L2 over the default's at the next
    /// (twice as large).
    PerfSmallestOverDefaultDoubled,
}

impl FedorovaMetric {
    /// The experiment kind that measures it.
    pub fn kind(self) -> ExperimentKind {
        use FedorovaMetric::*;
        match self {
            AbOverD | BOverA | SpecPairingGain => ExperimentKind::FedorovaCpi,
            HighMissIpcMin | HighMissIpcMax | IpcChangeAcrossL1Sizes => ExperimentKind::FedorovaL1,
            IpcLargestOverSmallestL2 | MissRatioSmallestOverLargestL2 => ExperimentKind::FedorovaL2,
            _ => ExperimentKind::FedorovaBalanceSet,
        }
    }
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
fn default_baseline() -> smtsched_os::sim::Baseline {
    smtsched_os::sim::Baseline::Linux24
}
fn default_repetitions() -> u32 {
    3
}
fn default_duration() -> f64 {
    3600.0
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
    /// PR per window through each pair's runs (thesis §3.4, Figs. 3.9–3.17).
    Phases,
    /// The counter-based PR estimator fitted to training windows and validated on held-out
    /// programs (thesis §3.4.1, Table 3.8, Fig. 3.18).
    Estimator,
}

impl ExperimentKind {
    /// The kind as an experiment file spells it, quoted as there (`"pairs"`): what messages name.
    pub fn quoted(self) -> String {
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }
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
    /// Where this simulation is known to depart from what the paper measured, and what is not
    /// known, for the findings that do not hold: printed with the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub departures: Vec<String>,
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

impl Claim {
    /// A claim is one comparison: `higher` against `than` (two policies), or `lowest`, or
    /// `highest`; any other combination could never be decided, or would ignore a field.
    fn check(&self) -> Result<(), String> {
        match (self.higher, self.than, self.lowest, self.highest) {
            (Some(a), Some(b), None, None) if a == b => Err(format!(
                "higher = than = {:?}: a policy compared with itself",
                a.to_string()
            )),
            (Some(_), Some(_), None, None)
            | (None, None, Some(_), None)
            | (None, None, None, Some(_)) => Ok(()),
            _ => Err("give `higher` and `than`, or `lowest`, or `highest`: one comparison".into()),
        }
    }
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
    "thesis-spec-timeshare",
    "thesis-phases",
    "thesis-estimator",
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
    let bad = |field: &str, reason: String| smtsched_model::ModelError::Rule {
        origin: src.origin.clone(),
        reason: format!("{field}: {reason}"),
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
            for (i, c) in e.paper.claims.iter().enumerate() {
                c.check()
                    .map_err(|r| bad(&format!("paper.claim[{i}]"), r))?;
            }
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
            if let Some(c) = e.cmt.claims.iter().find(|c| c.metric.kind() != e.kind) {
                return Err(bad(
                    "cmt.claim.metric",
                    format!(
                        "{} is not measured by a {} experiment",
                        serde_json::to_value(c.metric).unwrap_or_default(),
                        e.kind.quoted()
                    ),
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
        ExperimentKind::Phases | ExperimentKind::Estimator => {
            crate::windows::validate(&e.windows, e.kind).map_err(|r| bad("windows", r))?;
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
    let max = smtsched_os::sim::MAX_DURATION_S;
    if !(e.duration_s > 0.0 && e.duration_s <= max) {
        // (Large values as powers of ten, not hundreds of digits.)
        let d = e.duration_s;
        let shown = if d.abs() > max {
            format!("{d:e}")
        } else {
            d.to_string()
        };
        return Err(bad(
            "duration_s",
            format!("{shown}: must be above 0 and at most {max:e}"),
        ));
    }
    let most = crate::run::MAX_REPETITIONS;
    if !(1..=most).contains(&e.repetitions) {
        return Err(bad(
            "repetitions",
            format!("{}: must be 1 to {most}", e.repetitions),
        ));
    }
    match e.max_repetitions {
        Some(m) if !(e.repetitions..=most).contains(&m) => {
            return Err(bad(
                "max_repetitions",
                format!(
                    "{m}: must be from repetitions ({}) to {most}",
                    e.repetitions
                ),
            ))
        }
        _ => {}
    }
    let table: toml::Table = toml::from_str(&src.text).unwrap_or_default();
    if let Some((key, value)) = table
        .get("cmt")
        .and_then(toml::Value::as_table)
        .and_then(|cmt| cmt.iter().find(|(_, v)| is_nothing(v)))
    {
        return Err(bad(
            &format!("cmt.{key}"),
            format!(
                "{value}: {} (leave it out for the experiment's default)",
                if value.is_array() {
                    "give at least one"
                } else {
                    "must be above 0"
                }
            ),
        ));
    }
    if let Some(key) = table.keys().find(|k| !reads(e.kind, k)) {
        return Err(bad(
            key,
            format!(
                "an experiment of kind {} has none: it would be ignored",
                e.kind.quoted()
            ),
        ));
    }
    if e.kind != ExperimentKind::Policies && !e.paper.claims.is_empty() {
        return Err(bad(
            "paper.claim",
            format!(
                "an experiment of kind {} states its claims in its own section's `claim` \
                 tables",
                e.kind.quoted()
            ),
        ));
    }
    Ok(e)
}

/// Whether an experiment of `kind` reads the top-level field `key` (every kind reads the common
/// ones; the rest belong to the kinds that run what they describe).
fn reads(kind: ExperimentKind, key: &str) -> bool {
    use ExperimentKind as K;
    const COMMON: &[&str] = &[
        "name",
        "title",
        "source",
        "kind",
        "machine",
        "set",
        "repetitions",
        "max_repetitions",
        "paper",
    ];
    // Only a task set looks its workloads up among the file's own profiles.
    const TASK_SET: &[&str] = &[
        "task",
        "group",
        "device",
        "clients",
        "profile",
        "baseline",
        "duration_s",
    ];
    let own: &[&str] = match kind {
        K::Policies => &["cpus", "policies", "estimator"],
        K::Configurations => &["configurations"],
        K::Pairs => &["workloads", "pairs"],
        K::Asymmetry => &["workloads", "asymmetry"],
        K::FedorovaCpi | K::FedorovaL1 => &["workloads", "cmt"],
        K::FedorovaL2 | K::FedorovaBalanceSet => &["workloads", "cmt", "baseline"],
        K::Phases | K::Estimator => &["windows"],
    };
    let task_set = matches!(kind, K::Policies | K::Configurations);
    COMMON.contains(&key) || own.contains(&key) || (task_set && TASK_SET.contains(&key))
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
                PolicyMetric::SystemSpeedup => s.system_speedup,
                PolicyMetric::Fairness => s.fairness,
                PolicyMetric::Antt => s.antt,
                PolicyMetric::PrSd => s.pr_sd,
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
    let mut judged = Vec::new();
    for (a, b) in pairs {
        let compared = format!("{a} - {b}");
        let (Some(va), Some(vb)) = (values(&a), values(&b)) else {
            return unchecked(compared);
        };
        let d: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| x - y).collect();
        let Some(i) = MeanInterval::of(&d) else {
            return unchecked(compared);
        };
        judged.push(Judgement {
            verdict: i.above(0.0),
            difference: Some(i),
            compared,
        });
    }
    deciding(judged).unwrap_or_else(|| unchecked("nothing".into()))
}

/// Of comparisons that must all hold, the one that decides the claim: the worst verdict, and
/// among comparisons with that verdict the one nearest to failing — the lowest end of its
/// interval when all hold (the narrowest margin), else the lowest mean difference (for a claim
/// that does not hold, the clearest counter-example: for "ipc is the least fair", the policy
/// that is least fair).
fn deciding(judged: Vec<Judgement>) -> Option<Judgement> {
    let rank = |v: Verdict| match v {
        Verdict::DoesNotHold => 0,
        Verdict::Inconclusive => 1,
        Verdict::Holds => 2,
    };
    let key = |j: &Judgement| {
        j.difference.map_or(f64::NAN, |i| {
            if j.verdict == Verdict::Holds {
                i.lo
            } else {
                i.mean
            }
        })
    };
    judged.into_iter().min_by(|x, y| {
        rank(x.verdict)
            .cmp(&rank(y.verdict))
            .then(key(x).total_cmp(&key(y)))
    })
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
    #[serde(deserialize_with = "crate::experiment::claim_range")]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(name: &str, differences: &[f64]) -> Judgement {
        let i = MeanInterval::of(differences).unwrap();
        Judgement {
            verdict: i.above(0.0),
            difference: Some(i),
            compared: name.into(),
        }
    }

    /// "ipc is the least fair" against three others: naive and plan both beat it, plan by more,
    /// so plan's comparison is the one shown; when every comparison holds, the narrowest does.
    #[test]
    fn the_deciding_comparison_is_the_clearest_counter_example_or_the_narrowest_margin() {
        let fails = deciding(vec![
            compared("basic - ipc", &[0.10, 0.11, 0.12]),
            compared("naive - ipc", &[-0.06, -0.07, -0.08]),
            compared("plan - ipc", &[-0.17, -0.18, -0.19]),
        ])
        .unwrap();
        assert_eq!(fails.verdict, Verdict::DoesNotHold);
        assert_eq!(fails.compared, "plan - ipc");
        // b's mean is the larger, but its interval reaches nearer to 0 (t(0.975, 2) = 4.303:
        // a's 0.11 ± 0.025, b's 0.30 ± 0.25).
        let holds = deciding(vec![
            compared("a - x", &[0.10, 0.11, 0.12]),
            compared("b - x", &[0.20, 0.30, 0.40]),
        ])
        .unwrap();
        assert_eq!(
            (holds.verdict, holds.compared.as_str()),
            (Verdict::Holds, "b - x")
        );
        // An undecided comparison outranks any that holds, whatever its size.
        let open = deciding(vec![
            compared("a - x", &[0.10, 0.11, 0.12]),
            compared("b - x", &[0.5, -0.4, 0.6]),
        ])
        .unwrap();
        assert_eq!(open.compared, "b - x");
        assert!(deciding(Vec::new()).is_none());
    }
}
