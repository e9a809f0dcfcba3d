//! `train ablation`: what estimation accuracy is worth to the schedulers — the chapter 4
//! experiments with the shipped model, a trained one and the perfect estimate.

use super::super::plan::Plan;
use super::super::MAX_SIMULATED_SECONDS;
use super::super::{check_outputs, check_time, json_out, out, write_file, Bars};
use super::fit::load_model;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_experiments::experiment::{load_experiment, Experiment};
use smtsched_experiments::run::ablation::AblationRow;
use smtsched_experiments::run::RunOptions;
use smtsched_os::sim::Estimator;
use smtsched_os::{EstimatorSpec, LinearModel};
use smtsched_report::Table;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AblationArgs {
    /// The estimator trained on this machine (a file from `train fit`).
    #[arg(long = "estimator", alias = "model", value_name = "FILE")]
    pub model: EstimatorSpec,
    /// Experiments to run (policies experiments of `smtsched reproduce --list`).
    #[arg(
        long,
        default_value = "thesis-set-a,thesis-set-b,thesis-set-c,thesis-set-d"
    )]
    pub experiments: String,
    /// Simulated seconds per run (default: each experiment's own).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Repetitions (default: each experiment's own).
    #[arg(long)]
    pub repetitions: Option<u32>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report to this file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The estimators compared, by the label each column carries.
const LABELS: [&str; 3] = ["shipped", "trained", "perfect"];

pub struct AblationPlan {
    trained: LinearModel,
    /// `--estimator` as given.
    spec: EstimatorSpec,
    experiments: Vec<Experiment>,
    options: RunOptions,
    output: Option<PathBuf>,
    json: bool,
}

impl Plan for AblationPlan {
    type Args = AblationArgs;

    fn from_args(a: AblationArgs) -> Result<Self> {
        check_outputs([a.output.as_deref()])?;
        if let Some(d) = a.duration {
            check_time("--duration", d, false, MAX_SIMULATED_SECONDS, "seconds")?;
        }
        let trained = load_model(&a.model)?;
        let names: Vec<&str> = a
            .experiments
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if names.is_empty() {
            return Err(bad_input(format!(
                "--experiments {:?}: names no experiment",
                a.experiments
            )));
        }
        if let Some((_, twice)) = smtsched_model::first_repeat(&names) {
            return Err(bad_input(format!(
                "--experiments {:?}: {twice} is named twice",
                a.experiments
            )));
        }
        let experiments: Vec<Experiment> = names
            .iter()
            .map(|n| load_experiment(n))
            .collect::<Result<_, _>>()?;
        let options = RunOptions {
            seed: a.seed,
            duration_s: a.duration,
            repetitions: a.repetitions,
            ..RunOptions::default()
        };
        // What a run would find wrong only when it reached it (a duration shorter than the
        // staggered start, say) is refused now.
        for (e, name) in experiments.iter().zip(&names) {
            smtsched_experiments::run::check(e, &options).with_context(|| name.to_string())?;
        }
        Ok(AblationPlan {
            trained,
            spec: a.model,
            experiments,
            options,
            output: a.output,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let estimators = [
            Estimator::Model(LinearModel::thesis_northwood()),
            Estimator::Model(self.trained.clone()),
            Estimator::Perfect,
        ];
        let rows = smtsched_experiments::run::ablation::run(
            &self.experiments,
            &estimators,
            &self.options,
            &Bars::default(),
        )?;
        if self.json {
            let json: Vec<_> = rows.iter().map(row_json).collect();
            return json_out(
                &serde_json::json!({"trained_model": self.trained.name, "results": json}),
            );
        }
        let report = format!(
            "Estimator ablation: the chapter 4 experiments with the shipped thesis model, the trained model {} ({}), and the perfect estimate (the oracle's true PR); naive uses no estimates and is the reference.\n\n{}{}",
            self.trained.name,
            self.spec,
            table(&rows).render(),
            missing_note(&rows)
        );
        if let Some(p) = &self.output {
            write_file(p, report.as_bytes())?;
        }
        out(&report)
    }
}

fn table(rows: &[AblationRow]) -> Table {
    let mut table = Table::new([
        "experiment",
        "policy",
        "speedup shipped",
        "trained",
        "perfect",
        "fairness shipped",
        "trained",
        "perfect",
    ]);
    let cell = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.3}"));
    for r in rows {
        table.row(
            [r.experiment.clone(), r.policy.clone()]
                .into_iter()
                .chain(r.system_speedup.iter().map(|&v| cell(v)))
                .chain(r.fairness.iter().map(|&v| cell(v))),
        );
    }
    table
}

/// What a `-` in the table stands for: the tasks that completed no run in the window.
fn missing_note(rows: &[AblationRow]) -> String {
    let lines: Vec<String> = rows
        .iter()
        .filter(|r| !r.missing.is_empty())
        .map(|r| {
            format!(
                "- {} {}: {} completed no run in the window in some repetition (a longer --duration fits them)\n",
                r.experiment,
                r.policy,
                r.missing.join(", ")
            )
        })
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("\nFigures shown as -:\n{}", lines.concat())
    }
}

fn row_json(r: &AblationRow) -> serde_json::Value {
    let by_label = |v: &[Option<f64>]| -> serde_json::Map<String, serde_json::Value> {
        LABELS
            .iter()
            .zip(v)
            .map(|(l, x)| (l.to_string(), serde_json::json!(x)))
            .collect()
    };
    serde_json::json!({
        "experiment": r.experiment, "policy": r.policy,
        "system_speedup": by_label(&r.system_speedup),
        "fairness": by_label(&r.fairness),
        "missing": r.missing,
    })
}
