//! The thesis §3.4 experiments on windows of equal retired instructions: every ordered pair of
//! the training programs co-run several times, each run cut into windows with the subject's PR
//! and both threads' counter rates (`smtsched-estimate`).
//!
//! - **Phases** (§3.4, Figs. 3.9–3.17): "the curve shape is set by the subject, the level by the
//!   background; the offset runs largely coincide". Measured as correlations between PR curves
//!   (same pair, other run; same subject, other background; same background, other subject) and
//!   as the share of the differences among a subject's curves that is a shift of level.
//! - **Estimator** (§3.4.1, Table 3.8, Fig. 3.18): the thesis's regression — its features,
//!   backward elimination at p > 0.05 — fitted to the training windows and validated on held-out
//!   programs, beside the published Northwood coefficients on the same windows.

use crate::experiment::ExperimentKind;
use serde::{Deserialize, Serialize};
use smtsched_estimate::fit::{parse_features, predict, train, Trained};
use smtsched_estimate::ols::SelectionRule;
use smtsched_estimate::simulate::{simulate_windows, WindowProtocol, THESIS_HELDOUT, THESIS_TRAIN};
use smtsched_estimate::validate::{validate as validate_estimates, Validation};
use smtsched_estimate::{EstimateError, WindowRecord, WindowSet};
use smtsched_model::memo::Memo;
use smtsched_model::{MachineModel, WorkloadProfile};
use smtsched_os::LinearModel;
use smtsched_uarch::Workload;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The `[windows]` table.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowsSpec {
    /// Programs paired with each other (the thesis's eight).
    #[serde(default = "thesis_train")]
    pub train: Vec<String>,
    /// Programs the fitted estimator is validated on (kind `estimator`).
    #[serde(default = "thesis_heldout")]
    pub heldout: Vec<String>,
    /// Instructions of each subject run cut into windows, after `warmup_instructions`.
    #[serde(default = "default_instructions")]
    pub instructions: u64,
    #[serde(default = "default_warmup")]
    pub warmup_instructions: u64,
    /// Windows per run (the thesis: 100) and runs per ordered pair (the thesis: 3).
    #[serde(default = "default_windows")]
    pub windows: u32,
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// Counter sampling interval in cycles.
    #[serde(default = "default_sample_cycles")]
    pub sample_cycles: f64,
    /// Features are dropped while one has p above this (the thesis: 0.05).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// The subject whose curves the report draws.
    #[serde(default)]
    pub plot_subject: Option<String>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<WindowsClaim>,
}

impl Default for WindowsSpec {
    fn default() -> Self {
        toml::from_str("").expect("every field has a default")
    }
}

fn thesis_train() -> Vec<String> {
    THESIS_TRAIN.iter().map(|s| s.to_string()).collect()
}
fn thesis_heldout() -> Vec<String> {
    THESIS_HELDOUT.iter().map(|s| s.to_string()).collect()
}
fn default_instructions() -> u64 {
    4_000_000
}
fn default_warmup() -> u64 {
    1_000_000
}
fn default_windows() -> u32 {
    100
}
fn default_runs() -> u32 {
    3
}
fn default_sample_cycles() -> f64 {
    2000.0
}
fn default_alpha() -> f64 {
    0.05
}

/// A claim: one seed's `metric` lies in `within`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowsClaim {
    pub says: String,
    pub metric: WindowsMetric,
    #[serde(deserialize_with = "crate::experiment::claim_range")]
    pub within: [f64; 2],
}

/// What the windows experiments measure that a claim can name.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum WindowsMetric {
    /// `phases`: mean correlation of one pair's PR curves between its runs.
    RunCorrelation,
    /// `phases`: mean correlation of a subject's curves against different backgrounds.
    SameSubjectCorrelation,
    /// `phases`: mean correlation of different subjects' curves against one background (the
    /// control: programs' windows are unrelated).
    SameBackgroundCorrelation,
    /// `phases`: the first minus the second — shape set by the subject.
    SubjectShapeMargin,
    /// `phases`: share of the differences among a subject's curves (after their common shape)
    /// that is a shift of level, averaged over subjects.
    LevelShare,
    /// `estimator`: R² of the fitted model on its training windows (the thesis: 0.665).
    RSquared,
    /// `estimator`: correlation of estimate and measurement on the held-out windows (the
    /// thesis: 0.853), for the fitted model and for the published Northwood model.
    HeldoutCorrelation,
    ThesisModelHeldoutCorrelation,
}

impl WindowsMetric {
    pub fn kind(self) -> ExperimentKind {
        use WindowsMetric::*;
        match self {
            RunCorrelation
            | SameSubjectCorrelation
            | SameBackgroundCorrelation
            | SubjectShapeMargin
            | LevelShare => ExperimentKind::Phases,
            RSquared | HeldoutCorrelation | ThesisModelHeldoutCorrelation => {
                ExperimentKind::Estimator
            }
        }
    }
}

/// Checks what serde cannot.
pub fn validate(spec: &WindowsSpec, kind: ExperimentKind) -> Result<(), String> {
    if spec.train.len() < 3 {
        return Err(format!(
            "train: {} programs; pairs against at least two backgrounds need three",
            spec.train.len()
        ));
    }
    if kind == ExperimentKind::Estimator && spec.heldout.len() < 2 {
        return Err("heldout: at least two programs are needed".into());
    }
    if spec.windows < 3 || spec.runs < 2 {
        return Err(format!(
            "windows {} and runs {}: at least 3 windows and 2 runs",
            spec.windows, spec.runs
        ));
    }
    if !(spec.alpha > 0.0 && spec.alpha < 1.0) {
        return Err(format!("alpha {}: must be in (0, 1)", spec.alpha));
    }
    if let Some(c) = spec.claims.iter().find(|c| c.metric.kind() != kind) {
        return Err(format!(
            "claim metric {}: not measured by a {} experiment",
            serde_json::to_value(c.metric).unwrap_or_default(),
            serde_json::to_value(kind).unwrap_or_default()
        ));
    }
    Ok(())
}

/// Windows of every ordered pair of `programs` on `m`.
pub fn windows_of(
    m: &MachineModel,
    programs: &[WorkloadProfile],
    spec: &WindowsSpec,
    seed: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<WindowSet, EstimateError> {
    // The phases and estimator experiments simulate the same training windows: once a process.
    static SIMULATED: LazyLock<Memo<String, WindowSet>> = LazyLock::new(Memo::default);
    let key = format!(
        "{m:?}\n{programs:?}\n{} {} {} {} {:?} {seed}",
        spec.warmup_instructions, spec.instructions, spec.windows, spec.runs, spec.sample_cycles
    );
    SIMULATED.get_or_try(key, || {
        simulate_windows_of(m, programs, spec, seed, progress)
    })
}

fn simulate_windows_of(
    m: &MachineModel,
    programs: &[WorkloadProfile],
    spec: &WindowsSpec,
    seed: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<WindowSet, EstimateError> {
    let refs: Vec<&dyn Workload> = programs.iter().map(|w| w as &dyn Workload).collect();
    let proto = WindowProtocol {
        seed,
        warmup_instructions: spec.warmup_instructions,
        measure_instructions: spec.instructions,
        windows: spec.windows,
        runs: spec.runs,
        sample_cycles: spec.sample_cycles,
    };
    let rows = simulate_windows(m, &refs, &proto, progress)?;
    Ok(WindowSet {
        meta: vec![
            ("source".into(), "simulated".into()),
            ("machine".into(), m.name.clone()),
            (
                "workloads".into(),
                programs
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            ("seed".into(), seed.to_string()),
        ],
        rows,
    })
}

/// Each (subject, background)'s PR curve per run, windows in order.
type Curves = BTreeMap<(String, String), Vec<Vec<f64>>>;

fn curves(rows: &[WindowRecord]) -> Curves {
    let mut c: Curves = BTreeMap::new();
    for r in rows {
        let runs = c
            .entry((r.subject.clone(), r.background.clone()))
            .or_default();
        let (run, w) = (r.run as usize, r.window as usize);
        if runs.len() <= run {
            runs.resize(run + 1, Vec::new());
        }
        if runs[run].len() <= w {
            runs[run].resize(w + 1, f64::NAN);
        }
        runs[run][w] = r.pr;
    }
    c
}

/// Pearson correlation (None when either side is constant).
fn correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len().min(b.len());
    let r = smtsched_report::stats::correlation(&a[..n], &b[..n]);
    r.is_finite().then_some(r)
}

/// Mean correlation over every unordered pair of `curves`.
fn mean_pairwise(curves: &[&[f64]]) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..curves.len() {
        for j in i + 1..curves.len() {
            out.extend(correlation(curves[i], curves[j]));
        }
    }
    out
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// What the phases experiment found.
#[derive(Clone, Debug, Serialize)]
pub struct Phases {
    pub windows: usize,
    pub metrics: BTreeMap<WindowsMetric, f64>,
    /// Each pair's mean curve over its runs: subject → background → PR per window.
    pub mean_curves: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
}

pub fn phases(set: &WindowSet) -> Phases {
    let c = curves(&set.rows);
    let run_corr: Vec<f64> = c
        .values()
        .filter_map(|runs| {
            mean(&mean_pairwise(
                &runs.iter().map(|r| &r[..]).collect::<Vec<_>>(),
            ))
        })
        .collect();
    let mut mean_curves: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for ((s, b), runs) in &c {
        let w = runs.iter().map(Vec::len).min().unwrap_or(0);
        let m: Vec<f64> = (0..w)
            .map(|i| runs.iter().map(|r| r[i]).sum::<f64>() / runs.len() as f64)
            .collect();
        mean_curves
            .entry(s.clone())
            .or_default()
            .insert(b.clone(), m);
    }
    let same_subject: Vec<f64> = mean_curves
        .values()
        .filter_map(|by_b| {
            mean(&mean_pairwise(
                &by_b.values().map(|v| &v[..]).collect::<Vec<_>>(),
            ))
        })
        .collect();
    let mut by_background: BTreeMap<&str, Vec<&[f64]>> = BTreeMap::new();
    for by_b in mean_curves.values() {
        for (b, v) in by_b {
            by_background.entry(b).or_default().push(v);
        }
    }
    let same_background: Vec<f64> = by_background
        .values()
        .filter_map(|v| mean(&mean_pairwise(v)))
        .collect();
    let level: Vec<f64> = mean_curves.values().filter_map(level_share).collect();
    let mut metrics = BTreeMap::new();
    let mut put = |k, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            metrics.insert(k, v);
        }
    };
    let (ss, sb) = (mean(&same_subject), mean(&same_background));
    put(WindowsMetric::RunCorrelation, mean(&run_corr));
    put(WindowsMetric::SameSubjectCorrelation, ss);
    put(WindowsMetric::SameBackgroundCorrelation, sb);
    put(
        WindowsMetric::SubjectShapeMargin,
        ss.zip(sb).map(|(a, b)| a - b),
    );
    put(WindowsMetric::LevelShare, mean(&level));
    Phases {
        windows: set.rows.len(),
        metrics,
        mean_curves,
    }
}

/// A subject's curves (one per background) as a backgrounds × windows table: the share of what
/// remains after the common shape (window means) that is the backgrounds' levels —
/// SS(background) / (SS(background) + SS(residual)) of a two-way decomposition.
fn level_share(by_background: &BTreeMap<String, Vec<f64>>) -> Option<f64> {
    let rows: Vec<&Vec<f64>> = by_background.values().collect();
    let w = rows.iter().map(|r| r.len()).min()?;
    let b = rows.len();
    if b < 2 || w < 2 {
        return None;
    }
    let grand = rows.iter().map(|r| r[..w].iter().sum::<f64>()).sum::<f64>() / (b * w) as f64;
    let row_mean: Vec<f64> = rows
        .iter()
        .map(|r| r[..w].iter().sum::<f64>() / w as f64)
        .collect();
    let col_mean: Vec<f64> = (0..w)
        .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / b as f64)
        .collect();
    let ss_level = w as f64 * row_mean.iter().map(|m| (m - grand).powi(2)).sum::<f64>();
    let mut ss_resid = 0.0;
    for (i, r) in rows.iter().enumerate() {
        for j in 0..w {
            ss_resid += (r[j] - row_mean[i] - col_mean[j] + grand).powi(2);
        }
    }
    let total = ss_level + ss_resid;
    (total > 0.0).then(|| ss_level / total)
}

/// What the estimator experiment found.
#[derive(Clone, Debug, Serialize)]
pub struct EstimatorResult {
    /// The fit, selection and cross-validation (`smtsched_estimate::fit::report` prints them).
    #[serde(skip)]
    pub trained: Trained,
    pub model: LinearModel,
    pub selection: smtsched_estimate::ols::Selection,
    /// The fitted model and the published Northwood model on the held-out windows.
    pub heldout: Validation,
    pub thesis_model_heldout: Validation,
    #[serde(skip)]
    pub heldout_windows: Vec<WindowRecord>,
    #[serde(skip)]
    pub heldout_estimates: Vec<f64>,
    pub metrics: BTreeMap<WindowsMetric, f64>,
}

/// Fits the thesis's regression to `train_set` and validates it, and the published model, on
/// `heldout`.
pub fn estimator(
    train_set: &WindowSet,
    heldout: &WindowSet,
    spec: &WindowsSpec,
    name: &str,
) -> Result<EstimatorResult, EstimateError> {
    let features = parse_features("thesis")?;
    let rule = SelectionRule::by_p_value(Some(spec.alpha));
    let trained = train(train_set, "training windows", &features, rule, name)?;
    let check = |model: &LinearModel| -> Result<(Validation, Vec<f64>), EstimateError> {
        let (est, _) = predict(model, heldout, "held-out windows")?;
        Ok((validate_estimates(&model.name, &heldout.rows, &est)?, est))
    };
    let (v, est) = check(&trained.model)?;
    let (thesis, _) = check(&LinearModel::thesis_northwood())?;
    let metrics = BTreeMap::from([
        (
            WindowsMetric::RSquared,
            trained.model.fit.as_ref().map_or(f64::NAN, |f| f.r_squared),
        ),
        (WindowsMetric::HeldoutCorrelation, v.correlation),
        (
            WindowsMetric::ThesisModelHeldoutCorrelation,
            thesis.correlation,
        ),
    ]);
    Ok(EstimatorResult {
        model: trained.model.clone(),
        selection: trained.selection.clone(),
        trained,
        heldout: v,
        thesis_model_heldout: thesis,
        heldout_windows: heldout.rows.clone(),
        heldout_estimates: est,
        metrics,
    })
}

/// The estimator of machine `m`, fitted by the thesis's own method (§3.4.1): windows of every
/// ordered pair of the eight training programs (`WindowsSpec`'s defaults: 3 runs of 100 windows),
/// least squares on the thesis's features, features dropped while one has p > 0.05. What
/// `models/MACHINE.toml` holds and `smtsched train model` writes; seed 1 always, so it is a
/// fixed function of the machine and the workloads.
pub fn fit_machine_model(
    m: &MachineModel,
    progress: &(dyn Fn() + Sync),
) -> Result<LinearModel, EstimateError> {
    let spec = WindowsSpec::default();
    let programs: Vec<WorkloadProfile> = spec
        .train
        .iter()
        .map(|n| smtsched_model::load_workload(n, &[]))
        .collect::<Result<_, _>>()
        .map_err(|e| EstimateError::Invalid(e.to_string()))?;
    let set = windows_of(m, &programs, &spec, MODEL_SEED, progress)?;
    let features = parse_features("thesis")?;
    let rule = SelectionRule::by_p_value(Some(spec.alpha));
    let name = format!("fitted-{}", m.name);
    let mut model = train(&set, "training windows", &features, rule, &name)?.model;
    model.source = format!(
        "the thesis's method (§3.4.1) on the simulated {}: windows of every ordered pair of {} \
         ({} runs of {} windows of {} instructions after {}), least squares, features dropped \
         at p > {}; regenerate with `smtsched train model --machine {} -o models/{}.toml`",
        m.name,
        spec.train.join(", "),
        spec.runs,
        spec.windows,
        spec.instructions / spec.windows as u64,
        spec.warmup_instructions,
        spec.alpha,
        m.name,
        m.name
    );
    Ok(model)
}

/// The seed of every shipped model's windows.
pub const MODEL_SEED: u64 = 1;

/// Training windows: the number of simulation runs `fit_machine_model` makes (for a progress
/// bar): every ordered pair of the training programs, `runs` times, plus their solo runs.
pub fn model_runs() -> u64 {
    let spec = WindowsSpec::default();
    let n = spec.train.len() as u64;
    n * (n - 1) * spec.runs as u64 + n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two backgrounds shifting one shape by 0.1: every difference is a level.
    #[test]
    fn a_pure_shift_is_all_level_and_noise_is_none() {
        let shape = [0.5, 0.7, 0.6, 0.8];
        let shifted: BTreeMap<String, Vec<f64>> = BTreeMap::from([
            ("a".into(), shape.to_vec()),
            ("b".into(), shape.iter().map(|x| x + 0.1).collect()),
        ]);
        assert!((level_share(&shifted).unwrap() - 1.0).abs() < 1e-12);
        // Same means, opposite wiggles: no level difference at all.
        let crossed: BTreeMap<String, Vec<f64>> = BTreeMap::from([
            ("a".into(), vec![0.5, 0.7, 0.5, 0.7]),
            ("b".into(), vec![0.7, 0.5, 0.7, 0.5]),
        ]);
        assert!(level_share(&crossed).unwrap().abs() < 1e-12);
    }

    #[test]
    fn correlation_by_hand() {
        assert!((correlation(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(correlation(&[1.0, 1.0], &[1.0, 2.0]), None);
    }
}
