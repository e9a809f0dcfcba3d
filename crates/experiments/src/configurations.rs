//! Experiments over configurations (DESIGN §10): one task set — with its devices and clients —
//! run in several configurations of machine and kernel (Ruan et al.'s 1T-UP … 4T, the thesis's
//! Table 5.1 placements of applications and interrupts, `make -j1` … `-j6`), one row per variant
//! of the set's first task (another server, another program). Claims compare configurations:
//! the ratio of a metric in one to another lies in a range.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use smtsched_model::{load_machine, CpuSet, KernelBuild, MachineModel, Override};
use smtsched_os::metrics::Metrics;
use smtsched_os::oracle::SimulatedOracle;
use smtsched_os::policy::Naive;
use smtsched_os::sim::{Baseline, OsSim, SimConfig};
use smtsched_os::taskset::{TaskSetSpec, TaskSpec};
use smtsched_report::verdict::{MeanInterval, Verdict};
use std::collections::BTreeMap;

/// One configuration: which machine, which CPUs the OS uses, the kernel build, where interrupts
/// go and how many copies of the first task run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    pub name: String,
    /// Machine preset or file (default: the experiment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Logical CPUs the OS uses (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    #[serde(default)]
    pub kernel: KernelBuild,
    /// IRQ affinity of every device (default: the set's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpus: Option<String>,
    /// Logical CPUs the tasks may run on (default: the set's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_cpus: Option<String>,
    /// Copies of the first task (default: the set's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
    /// Logical CPUs of named tasks, over `app_cpus` (a load generator kept off the server's
    /// CPUs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_cpus: BTreeMap<String, String>,
}

/// A variant of the set: another workload or number of copies of its first task, or other
/// tasks altogether (a multiprogrammed mix beside a server: the set's devices stay, its clients
/// only where a task serves them).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default, rename = "task", skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
}

/// What a configurations experiment reports, per row and configuration.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConfigMetric {
    /// Responses of the first client group, Mb/s.
    MegabitsPerS,
    RequestsPerS,
    /// Mean response time of the first client group (to the last byte, and to the first), and
    /// the mean time between the first byte and the last (httperf's "transfer time"), ms.
    ResponseMeanMs,
    FirstByteMeanMs,
    TransferMeanMs,
    /// Share of busy cycles in the kernel, and running interrupt work.
    KernelShare,
    InterruptShare,
    /// Mean time of one run of the first task, s (the thesis's SPEC run times).
    RunSeconds,
    /// Instructions per cycle summed over the CPUs in use (thesis Table 3.6).
    SystemIpc,
    /// Last-level cache misses per second, all CPUs.
    LlcMissesPerS,
    /// Instructions of all CPUs per response byte (Ruan's IPB, interrupts included), and
    /// last-level misses per KiB of responses.
    InstructionsPerByte,
    LlcMissesPerKilobyte,
}

impl ConfigMetric {
    /// The metric of one simulation; `None` where it has no value (no response, no run).
    pub fn of(self, m: &Metrics, clock_hz: f64) -> Option<f64> {
        let server = m.servers.first();
        let seconds = (m.window.1 - m.window.0) / clock_hz;
        match self {
            ConfigMetric::MegabitsPerS => server.map(|s| s.megabits_per_s),
            ConfigMetric::RequestsPerS => server.map(|s| s.requests_per_s),
            ConfigMetric::ResponseMeanMs => server.and_then(|s| s.response_ms.map(|r| r.mean)),
            ConfigMetric::FirstByteMeanMs => server.and_then(|s| s.first_byte_ms.map(|r| r.mean)),
            ConfigMetric::TransferMeanMs => {
                server.and_then(|s| Some(s.response_ms?.mean - s.first_byte_ms?.mean))
            }
            ConfigMetric::KernelShare => m.kernel.map(|k| k.kernel_share),
            ConfigMetric::InterruptShare => m.kernel.map(|k| k.interrupt_share),
            ConfigMetric::RunSeconds => {
                let runs: Vec<f64> = m
                    .runs
                    .iter()
                    .filter(|r| r.bench == 0 && r.start >= m.window.0 && r.end <= m.window.1)
                    .map(|r| (r.end - r.start) / clock_hz)
                    .collect();
                (!runs.is_empty()).then(|| runs.iter().sum::<f64>() / runs.len() as f64)
            }
            ConfigMetric::SystemIpc => {
                Some(m.window_counts.instructions / (m.window.1 - m.window.0))
            }
            ConfigMetric::LlcMissesPerS => Some(m.window_counts.llc_misses / seconds),
            ConfigMetric::InstructionsPerByte => m.per_byte.map(|p| p.instructions),
            ConfigMetric::LlcMissesPerKilobyte => m.per_byte.map(|p| p.llc_misses * 1024.0),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ConfigMetric::MegabitsPerS => "Mb/s",
            ConfigMetric::RequestsPerS => "requests/s",
            ConfigMetric::ResponseMeanMs => "mean response (ms)",
            ConfigMetric::FirstByteMeanMs => "mean first byte (ms)",
            ConfigMetric::TransferMeanMs => "mean transfer (ms)",
            ConfigMetric::KernelShare => "kernel share",
            ConfigMetric::InterruptShare => "interrupt share",
            ConfigMetric::RunSeconds => "run time (s)",
            ConfigMetric::SystemIpc => "system IPC",
            ConfigMetric::LlcMissesPerS => "LLC misses/s",
            ConfigMetric::InstructionsPerByte => "instructions/byte",
            ConfigMetric::LlcMissesPerKilobyte => "LLC misses/KiB",
        }
    }
}

/// A claim: `metric` in configuration `ratio[0]` over its value in `ratio[1]` (or, with one
/// name, the value itself) lies within `within` (inclusive), for the row named `row` or for
/// every row; with `over_row`, that quantity in `row` divided by the same in `over_row` does.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RatioClaim {
    pub says: String,
    pub metric: ConfigMetric,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_row: Option<String>,
    pub ratio: Vec<String>,
    #[serde(deserialize_with = "crate::experiment::claim_range")]
    pub within: [f64; 2],
}

/// What a configurations experiment declares, besides the common experiment fields.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConfigurationsSpec {
    #[serde(default, rename = "config")]
    pub configs: Vec<Configuration>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<Variant>,
    /// Metrics shown, one table each.
    #[serde(default)]
    pub metrics: Vec<ConfigMetric>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<RatioClaim>,
    /// Seconds of staggered start before the measurement window.
    #[serde(default = "default_stagger")]
    pub stagger_s: f64,
}

fn default_stagger() -> f64 {
    1.0
}

/// One cell's result: per repetition, every metric of `spec.metrics` (`None` where it has no
/// value).
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub row: String,
    pub config: String,
    pub values: Vec<Vec<Option<f64>>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConfigResults {
    pub metrics: Vec<ConfigMetric>,
    pub rows: Vec<String>,
    pub configs: Vec<String>,
    pub cells: Vec<Cell>,
}

impl ConfigResults {
    /// Mean over repetitions of metric `k` in (row, config); `None` if any repetition lacks it.
    pub fn mean(&self, row: &str, config: &str, metric: ConfigMetric) -> Option<f64> {
        let k = self.metrics.iter().position(|&m| m == metric)?;
        let cell = self
            .cells
            .iter()
            .find(|c| c.row == row && c.config == config)?;
        let v: Vec<f64> = cell.values.iter().map(|r| r[k]).collect::<Option<_>>()?;
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Adds the repetitions of `more` (the same experiment run with further seeds).
    pub fn extend(&mut self, more: ConfigResults) {
        for (c, m) in self.cells.iter_mut().zip(more.cells) {
            debug_assert!(c.row == m.row && c.config == m.config);
            c.values.extend(m.values);
        }
    }

    /// Repetitions run so far.
    pub fn repetitions(&self) -> usize {
        self.cells.first().map_or(0, |c| c.values.len())
    }

    /// Per repetition, metric `k` in (row, config); `None` if any repetition lacks it.
    fn rep_values(&self, row: &str, config: &str, metric: ConfigMetric) -> Option<Vec<f64>> {
        let k = self.metrics.iter().position(|&m| m == metric)?;
        let cell = self
            .cells
            .iter()
            .find(|c| c.row == row && c.config == config)?;
        cell.values.iter().map(|r| r[k]).collect()
    }

    /// The claim's verdict for every row it names: each row's quantity, repetition by
    /// repetition (every cell's repetition r ran with seed + r), has its 95% interval inside
    /// `within` (holds), outside (does not hold) or across a bound (inconclusive).
    pub fn judge(&self, claim: &RatioClaim) -> RatioJudgement {
        let rows: Vec<&String> = match &claim.row {
            Some(r) => self.rows.iter().filter(|x| *x == r).collect(),
            None => self.rows.iter().collect(),
        };
        let per_row: Vec<(String, Option<MeanInterval>)> = rows
            .iter()
            .map(|row| {
                let i = self
                    .ratio_values(row, claim)
                    .and_then(|v| MeanInterval::of(&v));
                (row.to_string(), i)
            })
            .collect();
        let verdict = Verdict::all(per_row.iter().map(|(_, i)| match i {
            Some(i) => i.within(claim.within[0], claim.within[1]),
            None => Verdict::Inconclusive,
        }));
        RatioJudgement {
            verdict: if per_row.is_empty() {
                Verdict::Inconclusive
            } else {
                verdict
            },
            rows: per_row,
        }
    }

    /// The quantity a claim compares in one row, per repetition (divided by the same in
    /// `over_row`).
    pub fn ratio_values(&self, row: &str, claim: &RatioClaim) -> Option<Vec<f64>> {
        let a = self.row_ratio(row, claim)?;
        match &claim.over_row {
            None => Some(a),
            Some(other) => divide(&a, &self.row_ratio(other, claim)?),
        }
    }

    /// The ratio of the claim's configurations (or the one value) in one row, per repetition.
    fn row_ratio(&self, row: &str, claim: &RatioClaim) -> Option<Vec<f64>> {
        let a = self.rep_values(row, &claim.ratio[0], claim.metric)?;
        match claim.ratio.get(1) {
            None => Some(a),
            Some(over) => divide(&a, &self.rep_values(row, over, claim.metric)?),
        }
    }
}

/// Element by element; `None` on a zero divisor.
fn divide(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*y != 0.0).then(|| x / y))
        .collect()
}

/// A ratio claim's verdict, and each row's interval (`None`: a value is missing).
#[derive(Clone, Debug, Serialize)]
pub struct RatioJudgement {
    pub verdict: Verdict,
    pub rows: Vec<(String, Option<MeanInterval>)>,
}

/// Checks names the claims and configurations refer to; errors name the field.
pub fn validate(spec: &ConfigurationsSpec, set: &TaskSetSpec) -> Result<(), String> {
    if spec.configs.is_empty() {
        return Err("config: a configurations experiment needs at least one [[config]]".into());
    }
    if spec.metrics.is_empty() {
        return Err("metrics: name at least one metric to report".into());
    }
    for (i, c) in spec.configs.iter().enumerate() {
        if spec.configs[..i].iter().any(|d| d.name == c.name) {
            return Err(format!(
                "config[{i}].name = {:?}: names must be distinct",
                c.name
            ));
        }
        for (k, v) in [
            ("cpus", &c.cpus),
            ("irq_cpus", &c.irq_cpus),
            ("app_cpus", &c.app_cpus),
        ] {
            if let Some(list) = v {
                CpuSet::parse(list).map_err(|e| format!("config[{i}].{k} = {list:?}: {e}"))?;
            }
        }
        for (task, list) in &c.task_cpus {
            if !set.tasks.iter().any(|t| &t.display_name() == task) {
                return Err(format!(
                    "config[{i}].task_cpus.{task}: the task set has no task of that name"
                ));
            }
            CpuSet::parse(list)
                .map_err(|e| format!("config[{i}].task_cpus.{task} = {list:?}: {e}"))?;
        }
        if c.irq_cpus.is_some() && set.devices.is_empty() {
            return Err(format!(
                "config[{i}].irq_cpus: the task set has no [[device]]"
            ));
        }
    }
    for (i, v) in spec.variants.iter().enumerate() {
        if !v.tasks.is_empty() {
            configured(set, &spec.configs[0], Some(v))
                .validate()
                .map_err(|e| format!("variant[{i}].{e}"))?;
        }
    }
    for (i, c) in spec.claims.iter().enumerate() {
        if !(1..=2).contains(&c.ratio.len()) {
            return Err(format!(
                "claim[{i}].ratio: name one configuration (its value) or two (their ratio)"
            ));
        }
        for n in &c.ratio {
            if !spec.configs.iter().any(|d| &d.name == n) {
                return Err(format!("claim[{i}].ratio: no [[config]] is named {n:?}"));
            }
        }
        if c.ratio.len() == 2 && c.ratio[0] == c.ratio[1] {
            return Err(format!(
                "claim[{i}].ratio: {:?} over itself is 1 whatever is measured",
                c.ratio[0]
            ));
        }
        if c.over_row.is_some() && c.over_row == c.row {
            return Err(format!(
                "claim[{i}].over_row: row {:?} over itself is 1 whatever is measured",
                c.row.as_deref().unwrap_or_default()
            ));
        }
        for (k, row) in [("row", &c.row), ("over_row", &c.over_row)] {
            if let Some(r) = row {
                if !spec.variants.iter().any(|v| &v.name == r) {
                    return Err(format!(
                        "claim[{i}].{k} = {r:?}: no [[variant]] has that name"
                    ));
                }
            }
        }
        if c.over_row.is_some() && c.row.is_none() {
            return Err(format!(
                "claim[{i}].over_row: compares one row with another; name the first in row"
            ));
        }
        if !spec.metrics.contains(&c.metric) {
            return Err(format!(
                "claim[{i}].metric = {}: not among the experiment's metrics",
                serde_json::to_value(c.metric).unwrap_or_default()
            ));
        }
        if c.within[0].is_nan() || c.within[1].is_nan() || c.within[0] > c.within[1] {
            return Err(format!(
                "claim[{i}].within = {:?}: must be [low, high] with low <= high",
                c.within
            ));
        }
    }
    Ok(())
}

/// The set as configuration `c` and variant `v` run it.
fn configured(set: &TaskSetSpec, c: &Configuration, v: Option<&Variant>) -> TaskSetSpec {
    let mut s = set.clone();
    if let Some(v) = v.filter(|v| !v.tasks.is_empty()) {
        s.tasks = v.tasks.clone();
        s.clients
            .retain(|c| s.tasks.iter().any(|t| t.serves.as_ref() == Some(&c.name)));
    }
    let first: &mut TaskSpec = &mut s.tasks[0];
    if let Some(v) = v {
        if let Some(w) = &v.workload {
            first.workload = w.clone();
            first.name = v.name.clone();
        }
        if let Some(n) = v.copies {
            first.copies = n;
        }
    }
    if let Some(n) = c.copies {
        first.copies = n;
    }
    for t in &mut s.tasks {
        if let Some(a) = c.task_cpus.get(&t.display_name()).or(c.app_cpus.as_ref()) {
            t.cpus = Some(a.clone());
        }
    }
    if let Some(irq) = &c.irq_cpus {
        for d in &mut s.devices {
            d.irq_cpus = irq.clone();
        }
    }
    s
}

/// What every simulation of the experiment shares.
pub struct Common<'a> {
    pub machine: &'a str,
    pub overrides: &'a [Override],
    pub baseline: Baseline,
    pub duration_s: f64,
    /// The seed of the first repetition here. Each repetition is a whole replication: its
    /// oracle's samples and its scheduler take its own seed, so that its result depends on
    /// that seed alone, not on how the repetitions were batched.
    pub seed: u64,
    pub repetitions: u32,
}

/// Runs every (variant, configuration) cell, `repetitions` times each with seeds seed, seed+1…;
/// cells run in parallel.
pub fn run(
    spec: &ConfigurationsSpec,
    set: &TaskSetSpec,
    common: &Common,
    progress: &(dyn Fn() + Sync),
) -> Result<ConfigResults, String> {
    let variants = rows(spec);
    // Cells that run the same workloads on the same machine and kernel build share one oracle
    // per repetition (its memo), so a situation common to them is simulated once a repetition;
    // the groups run in parallel.
    let mut groups: Vec<(OracleKey, Vec<Job>)> = Vec::new();
    for &v in &variants {
        for c in &spec.configs {
            let s = configured(set, c, v);
            let key = OracleKey {
                machine: c
                    .machine
                    .clone()
                    .unwrap_or_else(|| common.machine.to_string()),
                kernel: c.kernel,
                workloads: s.oracle_workloads(),
            };
            let job = Job {
                variant: v,
                config: c,
                set: s,
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, jobs)) => jobs.push(job),
                None => groups.push((key, vec![job])),
            }
        }
    }
    let per_group = groups
        .par_iter()
        .map(|(key, jobs)| run_group(spec, common, key, jobs, progress))
        .collect::<Result<Vec<Vec<Cell>>, String>>()?;
    let mut cells: Vec<Cell> = per_group.into_iter().flatten().collect();
    let position = |c: &Cell| {
        let row = variants
            .iter()
            .position(|v| v.map_or("", |v| &v.name) == c.row);
        let config = spec.configs.iter().position(|k| k.name == c.config);
        (row, config)
    };
    cells.sort_by_key(|c| position(c));
    Ok(ConfigResults {
        metrics: spec.metrics.clone(),
        rows: variants
            .iter()
            .map(|v| v.map_or(String::new(), |v| v.name.clone()))
            .collect(),
        configs: spec.configs.iter().map(|c| c.name.clone()).collect(),
        cells,
    })
}

/// The rows: each variant, or one row of the set as it is.
fn rows(spec: &ConfigurationsSpec) -> Vec<Option<&Variant>> {
    if spec.variants.is_empty() {
        vec![None]
    } else {
        spec.variants.iter().map(Some).collect()
    }
}

/// What a run would find wrong only when it reached a cell: each configuration's machine and
/// workloads, and a simulator built (not run) for each cell, which checks its CPUs, devices and
/// interrupts.
pub fn check(spec: &ConfigurationsSpec, set: &TaskSetSpec, common: &Common) -> Result<(), String> {
    for v in rows(spec) {
        for c in &spec.configs {
            let at = |e: String| format!("config {:?}: {e}", c.name);
            let s = configured(set, c, v);
            let machine = c.machine.as_deref().unwrap_or(common.machine);
            let m = load_machine(machine, common.overrides).map_err(|e| at(e.to_string()))?;
            s.oracle_profiles().map_err(|e| at(e.to_string()))?;
            s.validate().map_err(at)?;
            let cfg = cell_config(spec, common, c, common.seed).map_err(at)?;
            OsSim::new(&m, &crate::run::InputsOnly, &s, Box::new(Naive), cfg).map_err(at)?;
        }
    }
    Ok(())
}

/// The simulation settings of configuration `c`'s cell for repetition seed `seed`.
fn cell_config(
    spec: &ConfigurationsSpec,
    common: &Common,
    c: &Configuration,
    seed: u64,
) -> Result<SimConfig, String> {
    let mut cfg = SimConfig::new(common.baseline, common.duration_s, seed);
    cfg.stagger_s = spec.stagger_s;
    cfg.cpus = c
        .cpus
        .as_deref()
        .map(CpuSet::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok(cfg)
}

/// What an oracle is built from.
#[derive(PartialEq)]
struct OracleKey {
    machine: String,
    kernel: KernelBuild,
    workloads: Vec<String>,
}

/// One cell to run: a variant in a configuration, and the task set they make.
struct Job<'a> {
    variant: Option<&'a Variant>,
    config: &'a Configuration,
    set: TaskSetSpec,
}

/// Runs the cells of one oracle group, one after another (each cell's repetitions in
/// parallel); repetition r of every cell uses the group's oracle r.
fn run_group(
    spec: &ConfigurationsSpec,
    common: &Common,
    key: &OracleKey,
    jobs: &[Job],
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Cell>, String> {
    let first = &jobs[0].config.name;
    let at = |e: String| format!("config {first:?}: {e}");
    let m = load_machine(&key.machine, common.overrides).map_err(|e| at(e.to_string()))?;
    let oracles = (0..common.repetitions as u64)
        .map(|r| SimulatedOracle::for_set(&m, &jobs[0].set, common.seed + r, key.kernel))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| at(e.to_string()))?;
    jobs.iter()
        .map(|job| {
            let cell = run_cell(spec, common, &m, &oracles, job);
            progress();
            cell
        })
        .collect()
}

fn run_cell(
    spec: &ConfigurationsSpec,
    common: &Common,
    m: &MachineModel,
    oracles: &[SimulatedOracle],
    job: &Job,
) -> Result<Cell, String> {
    let c = job.config;
    let at = |e: String| format!("config {:?}: {e}", c.name);
    job.set.validate().map_err(at)?;
    let clock = m.clock_ghz * 1e9;
    let values = oracles
        .par_iter()
        .enumerate()
        .map(|(r, oracle)| {
            let cfg = cell_config(spec, common, c, common.seed + r as u64).map_err(at)?;
            let metrics = OsSim::new(m, oracle, &job.set, Box::new(Naive), cfg)
                .map_err(at)?
                .run();
            Ok(spec.metrics.iter().map(|k| k.of(&metrics, clock)).collect())
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Cell {
        row: job.variant.map_or(String::new(), |v| v.name.clone()),
        config: c.name.clone(),
        values,
    })
}

/// The result as text: one table per metric (rows × configurations), then the claims.
pub fn render(r: &ConfigResults, claims: &[RatioClaim]) -> String {
    let mut out = String::new();
    for &k in &r.metrics {
        let mut t = smtsched_report::Table::new(
            std::iter::once(k.label().to_string()).chain(r.configs.iter().cloned()),
        );
        for row in &r.rows {
            t.row(
                std::iter::once(row.clone()).chain(
                    r.configs
                        .iter()
                        .map(|c| r.mean(row, c, k).map_or("-".into(), |v| format_value(k, v))),
                ),
            );
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    if !claims.is_empty() {
        out.push_str("Claims (95% intervals over the repetitions):\n");
        for c in claims {
            out.push_str(&format!("  {}\n", claim_line(c, &r.judge(c))));
        }
    }
    out
}

/// `[holds] says (A / B in [low, high]: row 1.234 [1.200, 1.268] n=3, …)`.
pub fn claim_line(c: &RatioClaim, j: &RatioJudgement) -> String {
    let rows: Vec<String> = j
        .rows
        .iter()
        .map(|(row, i)| {
            let v = i.map_or("-".into(), |i| interval_text(&i));
            if row.is_empty() {
                v
            } else {
                format!("{row} {v}")
            }
        })
        .collect();
    let intervals = j.rows.iter().filter_map(|(_, i)| i.as_ref());
    format!(
        "[{}] {} ({} in [{}, {}]: {}){}",
        j.verdict.label(),
        c.says,
        c.ratio.join(" / "),
        c.within[0],
        c.within[1],
        rows.join(", "),
        tie_note(j.verdict, intervals, c.within)
    )
}

/// Said of a claim that holds only because its quantity equals a bound of its range.
pub const TIE_NOTE: &str = " — only as a tie: the quantity is at a bound of its range";

/// [`TIE_NOTE`] for a claim of range `within` that holds with one of its quantities'
/// `intervals` at a bound of the range; nothing otherwise.
pub fn tie_note<'a>(
    verdict: Verdict,
    mut intervals: impl Iterator<Item = &'a MeanInterval>,
    [low, high]: [f64; 2],
) -> &'static str {
    if verdict == Verdict::Holds && intervals.any(|i| i.at_bound(low, high)) {
        TIE_NOTE
    } else {
        ""
    }
}

/// `1.234 [1.200, 1.268] n=3`.
pub fn interval_text(i: &MeanInterval) -> String {
    format!("{:.3} [{:.3}, {:.3}] n={}", i.mean, i.lo, i.hi, i.n)
}

fn format_value(k: ConfigMetric, v: f64) -> String {
    match k {
        ConfigMetric::KernelShare
        | ConfigMetric::InterruptShare
        | ConfigMetric::SystemIpc
        | ConfigMetric::InstructionsPerByte
        | ConfigMetric::LlcMissesPerKilobyte => {
            format!("{v:.3}")
        }
        ConfigMetric::LlcMissesPerS => format!("{:.2}M", v / 1e6),
        ConfigMetric::RunSeconds
        | ConfigMetric::ResponseMeanMs
        | ConfigMetric::FirstByteMeanMs
        | ConfigMetric::TransferMeanMs => {
            format!("{v:.3}")
        }
        _ => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(a: Option<f64>, b: Option<f64>) -> ConfigResults {
        let cell = |config: &str, v: Option<f64>| Cell {
            row: "r".into(),
            config: config.into(),
            values: vec![vec![v], vec![v.map(|x| x + 2.0)]],
        };
        ConfigResults {
            metrics: vec![ConfigMetric::MegabitsPerS],
            rows: vec!["r".into()],
            configs: vec!["a".into(), "b".into()],
            cells: vec![cell("a", a), cell("b", b)],
        }
    }

    fn claim(ratio: &[&str], within: [f64; 2]) -> RatioClaim {
        RatioClaim {
            says: "x".into(),
            metric: ConfigMetric::MegabitsPerS,
            row: None,
            over_row: None,
            ratio: ratio.iter().map(|s| s.to_string()).collect(),
            within,
        }
    }

    #[test]
    fn claims_are_judged_on_the_interval_of_per_repetition_ratios() {
        // a: 5 and 7; b: 3 and 5: ratios 5/3 and 7/5, mean 1.5333, sd 0.18856; with
        // t(0.975, 1) = 12.706 the interval is 1.5333 -+ 12.706 x 0.18856 / sqrt 2 =
        // [-0.161, 3.228].
        let r = results(Some(5.0), Some(3.0));
        assert_eq!(r.mean("r", "a", ConfigMetric::MegabitsPerS), Some(6.0));
        let j = r.judge(&claim(&["a", "b"], [1.4, 1.6]));
        let i = j.rows[0].1.unwrap();
        assert!((i.mean - 23.0 / 15.0).abs() < 1e-12);
        assert!(
            (i.lo + 0.1608).abs() < 1e-3 && (i.hi - 3.2275).abs() < 1e-3,
            "{i:?}"
        );
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert_eq!(
            r.judge(&claim(&["a", "b"], [5.0, 6.0])).verdict,
            Verdict::DoesNotHold
        );
        assert_eq!(
            r.judge(&claim(&["a", "b"], [-1.0, 4.0])).verdict,
            Verdict::Holds
        );
        // One configuration: its values, 5 and 7: 6 -+ 12.706.
        assert_eq!(
            r.judge(&claim(&["a"], [-7.0, 19.0])).verdict,
            Verdict::Holds
        );
        // A value missing in any repetition leaves the claim unchecked, not decided.
        let r = results(Some(5.0), None);
        let j = r.judge(&claim(&["a", "b"], [0.0, 10.0]));
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.rows[0].1.is_none());
    }
}
