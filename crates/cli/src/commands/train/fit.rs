//! `train fit`, `validate` and `compare`: estimators fitted on training windows, judged on
//! held-out ones.

use super::super::inputs::estimator;
use super::super::output::{check_output_dir, make_output_dir};
use super::super::plan::Plan;
use super::super::{check_inputs_kept, check_name_flag, check_outputs, json_out, out, write_file};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_estimate::compare::{compare, report as compare_report};
use smtsched_estimate::fit::{parse_features, predict, report as fit_report, train};
use smtsched_estimate::gbt::GbtParams;
use smtsched_estimate::ols::SelectionRule;
use smtsched_estimate::validate::{report as validate_report, scatter_svg, validate};
use smtsched_estimate::windows::read_csv;
use smtsched_estimate::WindowSet;
use smtsched_os::estimate::Feature;
use smtsched_os::sim::Estimator;
use smtsched_os::{EstimatorSpec, LinearModel};
use std::path::{Path, PathBuf};

/// `--alpha`: a significance level between 0 and 1, or `none` (keep every feature).
#[derive(Clone, Copy, Debug)]
pub struct Alpha(Option<f64>);

impl std::str::FromStr for Alpha {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        if text == "none" {
            return Ok(Alpha(None));
        }
        let v: f64 = text
            .parse()
            .map_err(|_| format!("{text:?}: expected a number or none"))?;
        if !(v > 0.0 && v < 1.0) {
            return Err(format!("{v}: a significance level is between 0 and 1"));
        }
        Ok(Alpha(Some(v)))
    }
}

/// `--features`: `thesis`, `all` or a comma-separated list of feature names.
#[derive(Clone, Debug)]
pub struct Features(Vec<Feature>);

impl std::str::FromStr for Features {
    type Err = smtsched_estimate::EstimateError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_features(text).map(Features)
    }
}

/// `--select`: how features are dropped.
#[derive(Clone, Copy, Debug)]
pub enum Selection {
    PValue,
    ProgramCv,
}

/// `--select`'s values, listed in the help.
fn selection() -> impl clap::builder::TypedValueParser<Value = Selection> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(["p-value", "program-cv"]).map(|s| match s.as_str() {
        "program-cv" => Selection::ProgramCv,
        _ => Selection::PValue,
    })
}

fn read_windows(path: &Path) -> Result<WindowSet> {
    Ok(read_csv(path)?)
}

#[derive(Args, Debug)]
pub struct FitArgs {
    /// Training windows (CSV from `smtsched train windows`).
    pub windows: PathBuf,
    /// Features: `thesis` (TC/L1I, LLC, FP, instructions and L1D of subject and background),
    /// `all` (every event), or a comma-separated list such as llc_misses_subj,instructions_back.
    #[arg(long, default_value = "thesis")]
    pub features: Features,
    /// How features are dropped, one at a time (backward elimination): `p-value` (the thesis:
    /// while some p-value exceeds --alpha) or `program-cv` (while dropping one lowers the
    /// leave-one-program-out error; needs windows of 3 or more subject workloads).
    #[arg(long, default_value = "p-value", value_parser = selection())]
    pub select: Selection,
    /// Drop features whose p-value exceeds this (--select p-value); `none` keeps every feature.
    #[arg(long, default_value = "0.05")]
    pub alpha: Alpha,
    /// Write the model here: TOML if the name ends in .toml, JSON otherwise.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The model's name (default: trained-<machine>).
    #[arg(long)]
    pub name: Option<String>,
    /// Print JSON (the full fit, the selection and the model).
    #[arg(long)]
    pub json: bool,
}

pub struct FitPlan {
    /// The windows and their file's name.
    set: WindowSet,
    file: String,
    features: Vec<Feature>,
    rule: SelectionRule,
    name: String,
    output: Option<PathBuf>,
    json: bool,
}

impl Plan for FitPlan {
    type Args = FitArgs;

    fn from_args(a: FitArgs) -> Result<Self> {
        check_outputs([a.output.as_deref()])?;
        check_inputs_kept(&[&a.windows], [a.output.as_deref()])?;
        check_name_flag(a.name.as_ref())?;
        let set = read_windows(&a.windows)?;
        let machine = set.meta("machine").unwrap_or("unknown").to_string();
        Ok(FitPlan {
            file: a.windows.display().to_string(),
            features: a.features.0,
            rule: match a.select {
                Selection::ProgramCv => SelectionRule::ProgramCv,
                Selection::PValue => SelectionRule::by_p_value(a.alpha.0),
            },
            name: a.name.unwrap_or(format!("trained-{machine}")),
            set,
            output: a.output,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let trained = train(&self.set, &self.file, &self.features, self.rule, &self.name)?;
        if let Some(p) = &self.output {
            write_file(p, model_text(&trained.model, p)?.as_bytes())?;
        }
        if self.json {
            return json_out(
                &serde_json::json!({"selection": trained.selection, "leave_one_program_out": trained.cv, "model": trained.model}),
            );
        }
        let machine = self.set.meta("machine").unwrap_or("unknown");
        out(&format!("windows: {} (machine {machine})\n", self.file))?;
        out(&fit_report(&trained))?;
        if let Some(p) = &self.output {
            out(&format!(
                "\nModel {} ({} terms) written to {}; use it with --estimator {}\n",
                trained.model.name,
                trained.model.terms.len(),
                p.display(),
                p.display()
            ))?;
        }
        Ok(())
    }
}

/// A model file's text: TOML for `.toml`, JSON otherwise (what `--estimator` reads).
fn model_text(m: &LinearModel, path: &Path) -> Result<String> {
    Ok(if path.extension().is_some_and(|e| e == "toml") {
        format!(
            "# PR model written by smtsched train fit; load with --estimator {}\n{}",
            path.display(),
            toml::to_string_pretty(m).context("cannot write the model as TOML")?
        )
    } else {
        serde_json::to_string_pretty(m)? + "\n"
    })
}

/// The linear model `--estimator` names, through the loader `run` and `reproduce` use.
pub(super) fn load_model(spec: &EstimatorSpec) -> Result<LinearModel> {
    match estimator(spec, None)? {
        Estimator::Model(m) => Ok(m),
        Estimator::Perfect | Estimator::Matrix(_) => Err(bad_input(format!(
            "--estimator {spec}: not a counter model; name a model file or thesis"
        ))),
    }
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Windows to validate on (CSV from `smtsched train windows`, e.g. -w thesis-heldout).
    pub windows: PathBuf,
    /// Estimator: `thesis` (the Northwood model of Table 3.8) or a model FILE from `train fit`
    /// (`models/MACHINE.toml` is the one `run` uses on that preset).
    #[arg(
        long = "estimator",
        alias = "model",
        value_name = "ESTIMATOR",
        default_value = "thesis"
    )]
    pub model: EstimatorSpec,
    /// Write the scatter plot of estimated against measured PR (thesis Fig. 3.18).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write every window's measured PR and estimates (float and fixed point) as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub struct ValidatePlan {
    set: WindowSet,
    file: String,
    model: LinearModel,
    /// `--estimator` as given.
    spec: EstimatorSpec,
    svg: Option<PathBuf>,
    csv: Option<PathBuf>,
    json: bool,
}

impl Plan for ValidatePlan {
    type Args = ValidateArgs;

    fn from_args(a: ValidateArgs) -> Result<Self> {
        check_outputs([a.svg.as_deref(), a.csv.as_deref()])?;
        check_inputs_kept(&[&a.windows], [a.svg.as_deref(), a.csv.as_deref()])?;
        Ok(ValidatePlan {
            set: read_windows(&a.windows)?,
            file: a.windows.display().to_string(),
            model: load_model(&a.model)?,
            spec: a.model,
            svg: a.svg,
            csv: a.csv,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let (set, model) = (&self.set, &self.model);
        let (est, fixed) = predict(model, set, &self.file)?;
        let v = validate(&model.name, &set.rows, &est)?;
        let fixed_max = est
            .iter()
            .zip(&fixed)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if let Some(p) = &self.svg {
            let title = format!(
                "{} on {} windows: r = {:.3}, MAE = {:.3}",
                model.name, v.n, v.correlation, v.mae
            );
            write_file(p, scatter_svg(&set.rows, &est, &title)?.as_bytes())?;
        }
        if let Some(p) = &self.csv {
            write_file(p, estimates_csv(set, &est, &fixed).as_bytes())?;
        }
        if self.json {
            return json_out(
                &serde_json::json!({"validation": v, "fixed_point_max_difference": fixed_max}),
            );
        }
        out(&format!("windows: {}; model: {}\n", self.file, self.spec))?;
        out(&validate_report(&v))?;
        out(&format!(
            "\nFixed-point evaluation (15 fractional bits, result to 1/1024): largest difference from floating point {fixed_max:.5} over {} windows\n",
            v.n
        ))
    }
}

/// Every window's measured PR and its estimates, floating and fixed point.
fn estimates_csv(set: &WindowSet, est: &[f64], fixed: &[f64]) -> String {
    let rows = set.rows.iter().zip(est).zip(fixed).map(|((w, e), f)| {
        vec![
            w.subject.clone(),
            w.background.clone(),
            w.run.to_string(),
            w.window.to_string(),
            w.pr.to_string(),
            e.to_string(),
            f.to_string(),
        ]
    });
    let header = [
        "subject",
        "background",
        "run",
        "window",
        "pr",
        "estimate",
        "estimate_fixed",
    ];
    smtsched_report::csv::csv_text(&[], &header, rows)
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Training windows.
    pub train: PathBuf,
    /// Held-out windows.
    pub test: PathBuf,
    /// Feature selection level for the least-squares models (`none` = off).
    #[arg(long, default_value = "0.05")]
    pub alpha: Alpha,
    /// Boosted trees: number of trees.
    #[arg(long, default_value_t = GbtParams::default().trees)]
    pub trees: usize,
    /// Boosted trees: depth of each tree.
    #[arg(long, default_value_t = GbtParams::default().depth)]
    pub depth: usize,
    /// Boosted trees: shrinkage of each tree.
    #[arg(long, default_value_t = GbtParams::default().learning_rate)]
    pub learning_rate: f64,
    /// Boosted trees: fewest training windows in a leaf.
    #[arg(long, default_value_t = GbtParams::default().min_leaf)]
    pub min_leaf: usize,
    /// Write one scatter plot per estimator into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub struct ComparePlan {
    /// Training and held-out windows, each with its file's name.
    train: (WindowSet, String),
    test: (WindowSet, String),
    alpha: Option<f64>,
    params: GbtParams,
    /// Made when the plots are written.
    svg_dir: Option<PathBuf>,
    json: bool,
}

impl Plan for ComparePlan {
    type Args = CompareArgs;

    fn from_args(a: CompareArgs) -> Result<Self> {
        for (flag, n) in [
            ("--trees", a.trees),
            ("--depth", a.depth),
            ("--min-leaf", a.min_leaf),
        ] {
            if n == 0 {
                return Err(bad_input(format!("{flag} 0: must be at least 1")));
            }
        }
        let train = (read_windows(&a.train)?, a.train.display().to_string());
        let test = (read_windows(&a.test)?, a.test.display().to_string());
        if let Some(dir) = &a.svg_dir {
            check_output_dir(dir, "--svg-dir")?;
        }
        Ok(ComparePlan {
            train,
            test,
            alpha: a.alpha.0,
            params: GbtParams {
                trees: a.trees,
                depth: a.depth,
                learning_rate: a.learning_rate,
                min_leaf: a.min_leaf,
                ..GbtParams::default()
            },
            svg_dir: a.svg_dir,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let ((train_set, tf), (test, hf), params) = (&self.train, &self.test, &self.params);
        let rows = compare(train_set, tf, test, hf, self.alpha, params)?;
        if let Some(dir) = &self.svg_dir {
            make_output_dir(dir, "--svg-dir")?;
            for (k, c) in rows.iter().enumerate() {
                let title = format!(
                    "{}: r = {:.3}, MAE = {:.3}",
                    c.estimator, c.validation.correlation, c.validation.mae
                );
                let svg = scatter_svg(&test.rows, &c.estimates, &title)?;
                let file = dir.join(format!("estimator-{}.svg", k + 1));
                write_file(&file, svg.as_bytes())?;
            }
        }
        if self.json {
            return json_out(
                &serde_json::json!({"train": tf, "test": hf, "gbt": params, "estimators": rows}),
            );
        }
        out(&format!(
            "trained on {tf} ({} windows), validated on {hf} ({} windows); boosted trees: {} trees of depth {}, learning rate {}, at least {} windows a leaf\n\n",
            train_set.rows.len(),
            test.rows.len(),
            params.trees,
            params.depth,
            params.learning_rate,
            params.min_leaf
        ))?;
        out(&compare_report(&rows))
    }
}
