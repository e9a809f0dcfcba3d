//! The windows experiments (thesis §3.4 phases, §3.4.1 estimator): windows simulated, then
//! measured, each claim one seed's value in a range.

use super::seeds::{metric_name, over_seeds, range_claims, SeedRun};
use super::{paper_text, KindOutcome, Progress, RunError, RunOptions};
use crate::experiment::{Experiment, ExperimentKind};
use crate::windows::{self, WindowsMetric, WindowsSpec};
use smtsched_estimate::simulate::run_count;
use smtsched_estimate::{EstimateError, WindowSet};
use smtsched_model::{load_workload, MachineModel, WorkloadProfile};
use std::collections::BTreeMap;

impl From<EstimateError> for RunError {
    fn from(e: EstimateError) -> Self {
        RunError::Bad(e.to_string())
    }
}

/// Windows of every ordered pair of `programs`, with a progress bar.
fn simulate(
    e: &Experiment,
    m: &MachineModel,
    programs: &[String],
    seed: u64,
    p: &dyn Progress,
) -> Result<WindowSet, RunError> {
    let profiles: Vec<WorkloadProfile> = programs
        .iter()
        .map(|w| load_workload(w, &[]))
        .collect::<Result<_, _>>()?;
    p.begin(
        &format!("{}: windows of {} programs", e.name, programs.len()),
        run_count(programs.len(), e.windows.runs) as u64,
        "runs",
    );
    let set = windows::windows_of(m, &profiles, &e.windows, seed, &|| p.step())?;
    p.end();
    Ok(set)
}

pub(super) fn run(
    e: &Experiment,
    m: &MachineModel,
    o: &RunOptions,
    p: &dyn Progress,
) -> Result<KindOutcome, RunError> {
    let spec = &e.windows;
    let claims = range_claims(&spec.claims, |c| {
        (c.says.as_str(), c.within, metric_name(&c.metric))
    });
    let one = |seed: u64| -> Result<SeedRun, RunError> {
        let train = simulate(e, m, &spec.train, seed, p)?;
        let (mut text, json, values, figures) = match e.kind {
            ExperimentKind::Estimator => {
                let heldout = simulate(e, m, &spec.heldout, seed, p)?;
                estimator(e, m, &train, &heldout)?
            }
            _ => phases(e, m, &train),
        };
        text.push_str(&paper_text(&e.paper));
        Ok(SeedRun {
            claim_values: spec
                .claims
                .iter()
                .map(|c| values.get(&c.metric).copied())
                .collect(),
            text,
            json: serde_json::json!({"result": json, "paper": e.paper}),
            figures,
        })
    };
    over_seeds(e, o, p, &claims, &one)
}

type Found = (
    String,
    serde_json::Value,
    BTreeMap<WindowsMetric, f64>,
    Vec<(String, String)>,
);

fn phases(e: &Experiment, m: &MachineModel, train: &WindowSet) -> Found {
    let r = windows::phases(train);
    let spec: &WindowsSpec = &e.windows;
    let mut text = format!(
        "{} windows: {} programs paired on {}, {} runs of {} windows each ({} instructions after {})\n\n",
        r.windows,
        spec.train.len(),
        m.name,
        spec.runs,
        spec.windows,
        spec.instructions,
        spec.warmup_instructions
    );
    for (k, v) in &r.metrics {
        text.push_str(&format!(
            "  {:28} {v:.3}\n",
            serde_json::to_value(k)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("")
        ));
    }
    let subject = spec
        .plot_subject
        .clone()
        .unwrap_or_else(|| spec.train[0].clone());
    let figures = r
        .mean_curves
        .get(&subject)
        .and_then(|by_b| {
            let series: Vec<(String, Vec<f64>)> = by_b
                .iter()
                .map(|(b, v)| (format!("with {}", b.trim_end_matches("-like")), v.clone()))
                .collect();
            smtsched_report::lines::lines_svg(
                &series,
                &format!(
                    "{}: {subject}'s PR per window against each background (mean of the runs)",
                    e.name
                ),
                "window (equal retired instructions)",
                "performance ratio",
            )
            .ok()
        })
        .map(|svg| vec![(format!("PR per window: {subject}"), svg)])
        .unwrap_or_default();
    let json = serde_json::to_value(&r).unwrap_or_default();
    (text, json, r.metrics, figures)
}

fn estimator(
    e: &Experiment,
    m: &MachineModel,
    train: &WindowSet,
    heldout: &WindowSet,
) -> Result<Found, RunError> {
    let r = windows::estimator(train, heldout, &e.windows, &format!("fitted-{}", m.name))?;
    let mut text = format!(
        "Training windows: {} on {}; held out: {}\n\n",
        e.windows.train.join(" "),
        m.name,
        e.windows.heldout.join(" ")
    );
    text.push_str(&smtsched_estimate::fit::report(&r.trained));
    text.push_str(&format!(
        "\nHeld-out windows ({}): fitted model r = {:.3} (MAE {:.3}); the published Northwood model (Table 3.8) r = {:.3} (MAE {:.3})\n",
        r.heldout.n,
        r.heldout.correlation,
        r.heldout.mae,
        r.thesis_model_heldout.correlation,
        r.thesis_model_heldout.mae
    ));
    let figures = smtsched_estimate::validate::scatter_svg(
        &r.heldout_windows,
        &r.heldout_estimates,
        &format!(
            "{}: estimated against measured PR on held-out windows, r = {:.3}",
            e.name, r.heldout.correlation
        ),
    )
    .ok()
    .map(|svg| vec![("Estimated against measured PR (Fig. 3.18)".to_string(), svg)])
    .unwrap_or_default();
    let json = serde_json::to_value(&r).unwrap_or_default();
    Ok((text, json, r.metrics, figures))
}
