//! `train`: the performance-ratio estimator (thesis §3.4.1, §4.4.3): training windows, the
//! least-squares fit, validation on held-out workloads, other estimators beside it, and what
//! estimation accuracy is worth to the schedulers.

mod ablation;
mod fit;
mod model;
mod windows;

use super::plan;
use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(subcommand)]
    pub action: TrainAction,
}

#[derive(Subcommand, Debug)]
pub enum TrainAction {
    /// Training windows (thesis §3.4): every ordered pair of distinct workloads on sibling
    /// threads, --runs runs each with the background at another offset, each run cut into
    /// --windows windows of equal instructions; a window's PR is solo cycles / co-run cycles and
    /// its features are events per co-run cycle of the subject and the background. CSV.
    ///
    /// Example: smtsched train windows -w thesis-train -o train.csv
    Windows(windows::WindowsArgs),
    /// Fit the performance-ratio model by least squares and print the thesis's Table 3.8:
    /// coefficients, standard errors, p-values, mean events per 1000 cycles, importance, R².
    /// Insignificant features are dropped one at a time (reported); writes a model file that
    /// `smtsched run --estimator` and `smtsched reproduce --estimator` load.
    ///
    /// Example: smtsched train fit train.csv -o northwood.toml
    Fit(fit::FitArgs),
    /// Validate a model on (held-out) windows: correlation, mean absolute error, where it over-
    /// or under-estimates, the fixed-point evaluation's largest difference, and a scatter plot
    /// like the thesis's Fig. 3.18.
    ///
    /// Example: smtsched train validate heldout.csv --estimator northwood.toml --svg fig-3-18.svg
    Validate(fit::ValidateArgs),
    /// Compare estimators on the same held-out windows: the thesis's published model, least
    /// squares (thesis features, all features) and gradient-boosted trees trained on the same
    /// training windows.
    ///
    /// Example: smtsched train compare train.csv heldout.csv
    Compare(fit::CompareArgs),
    /// What estimation accuracy is worth: the thesis's chapter 4 experiments run with the
    /// shipped (thesis) model, a model trained on this machine, and the perfect estimate.
    ///
    /// Example: smtsched train ablation --estimator northwood.toml
    Ablation(ablation::AblationArgs),
    /// The estimator of a machine, fitted by the thesis's method (§3.4.1) on its simulation:
    /// training windows of the thesis's eight programs (3 runs of 100 windows each ordered
    /// pair), least squares, features dropped at p > 0.05, seed 1. `models/MACHINE.toml` is this
    /// command's output, and `run` and `reproduce` use it by default (`--estimator machine`).
    ///
    /// Example: smtsched train model --machine northwood -o models/northwood.toml
    Model(model::ModelArgs),
}

pub fn run(a: TrainArgs) -> Result<()> {
    match a.action {
        TrainAction::Windows(a) => plan::run::<windows::WindowsPlan>(a),
        TrainAction::Fit(a) => plan::run::<fit::FitPlan>(a),
        TrainAction::Validate(a) => plan::run::<fit::ValidatePlan>(a),
        TrainAction::Compare(a) => plan::run::<fit::ComparePlan>(a),
        TrainAction::Ablation(a) => plan::run::<ablation::AblationPlan>(a),
        TrainAction::Model(a) => plan::run::<model::ModelPlan>(a),
    }
}
