//! `train`: the performance-ratio estimator (thesis §3.4.1, §4.4.3): training windows, the
//! least-squares fit, validation on held-out workloads, other estimators beside it, and what
//! estimation accuracy is worth to the schedulers.

use super::counting_bar;
use super::run::estimator;
use super::{json_out, out, workload, write_file, Bars};
use crate::args::MachineArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use smtsched_estimate::compare::{compare, report as compare_report};
use smtsched_estimate::fit::{parse_features, predict, report as fit_report, train};
use smtsched_estimate::gbt::GbtParams;
use smtsched_estimate::ols::SelectionRule;
use smtsched_estimate::samples::{parse_samples, windows_from_samples};
use smtsched_estimate::simulate::{
    run_count, simulate_windows, WindowProtocol, THESIS_HELDOUT, THESIS_TRAIN,
};
use smtsched_estimate::validate::{report as validate_report, scatter_svg, validate};
use smtsched_estimate::windows::{read_csv, to_csv};
use smtsched_estimate::{EstimateError, WindowSet};
use smtsched_experiments::experiment::load_experiment;
use smtsched_experiments::run::RunOptions;
use smtsched_model::expand_workload_list;
use smtsched_os::sim::Estimator;
use smtsched_os::LinearModel;
use smtsched_report::{Summary, Table};
use smtsched_uarch::Workload;
use std::path::{Path, PathBuf};

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
    Windows(WindowsArgs),
    /// Fit the performance-ratio model by least squares and print the thesis's Table 3.8:
    /// coefficients, standard errors, p-values, mean events per 1000 cycles, importance, R².
    /// Insignificant features are dropped one at a time (reported); writes a model file that
    /// `smtsched run --model` and `smtsched reproduce --model` load.
    ///
    /// Example: smtsched train fit train.csv -o northwood.toml
    Fit(FitArgs),
    /// Validate a model on (held-out) windows: correlation, mean absolute error, where it over-
    /// or under-estimates, the fixed-point evaluation's largest difference, and a scatter plot
    /// like the thesis's Fig. 3.18.
    ///
    /// Example: smtsched train validate heldout.csv --estimator northwood.toml --svg fig-3-18.svg
    Validate(ValidateArgs),
    /// Compare estimators on the same held-out windows: the thesis's published model, least
    /// squares (thesis features, all features) and gradient-boosted trees trained on the same
    /// training windows.
    ///
    /// Example: smtsched train compare train.csv heldout.csv
    Compare(CompareArgs),
    /// What estimation accuracy is worth: the thesis's chapter 4 experiments run with the
    /// shipped (thesis) model, a model trained on this machine, and the perfect estimate.
    ///
    /// Example: smtsched train ablation --estimator northwood.toml
    Ablation(AblationArgs),
    /// The estimator of a machine, fitted by the thesis's method (§3.4.1) on its simulation:
    /// training windows of the thesis's eight programs (3 runs of 100 windows each ordered
    /// pair), least squares, features dropped at p > 0.05, seed 1. `models/MACHINE.toml` is this
    /// command's output, and `run` and `reproduce` use it by default (`--model machine`).
    ///
    /// Example: smtsched train model --machine northwood -o models/northwood.toml
    Model(ModelArgs),
}

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Machine preset or TOML file.
    #[arg(long, short = 'm', default_value = "northwood")]
    pub machine: String,
    /// Write the model here (TOML; default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct WindowsArgs {
    /// Workloads, comma-separated presets or files (`all` = the 22 SPEC stand-ins); or
    /// `thesis-train` (gzip, mcf, crafty, vortex, swim, mesa, art, sixtrack) or
    /// `thesis-heldout` (vpr, eon, wupwise, equake).
    #[arg(long, short = 'w', default_value = "thesis-train")]
    pub workloads: String,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Seed from which every instruction stream derives.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Instructions of each subject run that are cut into windows. The thesis's windows were 1% of
    /// a whole benchmark run, long enough to average out transients; longer runs here mean
    /// quieter windows (see README) at proportionally more simulation time.
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub instructions: u64,
    /// Instructions the subject runs (beside its background) before the first window.
    #[arg(long, default_value_t = 1_000_000)]
    pub warmup: u64,
    /// Windows per run (the thesis: 100).
    #[arg(long, default_value_t = 100)]
    pub windows: u32,
    /// Runs per ordered pair, each with the background at another seed and offset (the thesis: 3).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Counter sampling interval in cycles (the thesis sampled every ~100 ms).
    #[arg(long, default_value_t = 2000.0)]
    pub sample_cycles: f64,
    /// Cut windows from counters sampled on a real machine instead (a CSV: subject,background,
    /// run,thread,cycles,instructions,… cumulative; see README); --windows applies.
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    /// Write the windows CSV here (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Host threads to use, at most 1024 (default: all cores). The result does not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

#[derive(Args, Debug)]
pub struct FitArgs {
    /// Training windows (CSV from `smtsched train windows`).
    pub windows: PathBuf,
    /// Features: `thesis` (TC/L1I, LLC, FP, instructions and L1D of subject and background),
    /// `all` (every event), or a comma-separated list such as llc_misses_subj,instructions_back.
    #[arg(long, default_value = "thesis")]
    pub features: String,
    /// How features are dropped, one at a time (backward elimination): `p-value` (the thesis:
    /// while some p-value exceeds --alpha) or `program-cv` (while dropping one lowers the
    /// leave-one-program-out error; needs windows of 3 or more subject workloads).
    #[arg(long, default_value = "p-value", value_parser = ["p-value", "program-cv"])]
    pub select: String,
    /// Drop features whose p-value exceeds this (--select p-value); `none` keeps every feature.
    #[arg(long, default_value = "0.05")]
    pub alpha: String,
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
    pub model: String,
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

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Training windows.
    pub train: PathBuf,
    /// Held-out windows.
    pub test: PathBuf,
    /// Feature selection level for the least-squares models (`none` = off).
    #[arg(long, default_value = "0.05")]
    pub alpha: String,
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

#[derive(Args, Debug)]
pub struct AblationArgs {
    /// The estimator trained on this machine (a file from `train fit`).
    #[arg(long = "estimator", alias = "model", value_name = "FILE")]
    pub model: String,
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

pub fn run(a: TrainArgs) -> Result<()> {
    match a.action {
        TrainAction::Windows(a) => windows(a),
        TrainAction::Fit(a) => fit(a),
        TrainAction::Validate(a) => validate_cmd(a),
        TrainAction::Compare(a) => compare_cmd(a),
        TrainAction::Ablation(a) => ablation(a),
        TrainAction::Model(a) => machine_model(a),
    }
}

fn machine_model(a: ModelArgs) -> Result<()> {
    super::check_outputs([a.output.as_deref()])?;
    let m = super::machine(&a.machine, &[])?;
    let bar = super::counting_bar(smtsched_experiments::windows::model_runs(), "runs")?;
    bar.set_message(format!("training windows on {}", m.name));
    let model = smtsched_experiments::windows::fit_machine_model(&m, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let text = format!(
        "# The PR estimator of the simulated {}, written by `smtsched train model`.\n{}",
        m.name,
        toml::to_string_pretty(&model).context("cannot write the model as TOML")?
    );
    match &a.output {
        Some(p) => write_file(p, text.as_bytes()),
        None => out(&text),
    }
}

fn alpha(text: &str) -> Result<Option<f64>> {
    if text == "none" {
        return Ok(None);
    }
    let v: f64 = text
        .parse()
        .map_err(|_| bad_input(format!("--alpha {text:?}: expected a number or none")))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(bad_input(format!(
            "--alpha {v}: a significance level is between 0 and 1"
        )));
    }
    Ok(Some(v))
}

fn read_windows(path: &Path) -> Result<WindowSet> {
    Ok(read_csv(path)?)
}

fn windows(a: WindowsArgs) -> Result<()> {
    super::check_outputs([a.output.as_deref()])?;
    let started = std::time::Instant::now();
    let set = if let Some(path) = &a.samples {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| EstimateError::Read {
            file: file.clone(),
            source,
        })?;
        if a.windows == 0 {
            return Err(bad_input(
                "--windows 0: at least one window per run is needed",
            ));
        }
        let rows = windows_from_samples(&parse_samples(&text, &file)?, &file, a.windows)?;
        WindowSet {
            meta: vec![
                ("source".into(), format!("measured samples {file}")),
                ("windows_per_run".into(), a.windows.to_string()),
            ],
            rows,
        }
    } else {
        simulated_windows(&a)?
    };
    let elapsed = started.elapsed().as_secs_f64();
    let csv = to_csv(&set);
    let Some(path) = &a.output else {
        return out(&csv);
    };
    write_file(path, csv.as_bytes())?;
    let prs: Vec<f64> = set.rows.iter().map(|r| r.pr).collect();
    let s = Summary::of(&prs).ok_or_else(|| bad_input("no windows"))?;
    out(&format!(
        "{} windows of {} subjects written to {} in {:.1} s\nwindow PR: mean {:.3}, sd {:.3}, min {:.3}, quartiles {:.3} {:.3} {:.3}, max {:.3}\n",
        set.rows.len(),
        set.subjects().len(),
        path.display(),
        elapsed,
        s.mean,
        s.sd,
        s.min,
        s.q1,
        s.median,
        s.q3,
        s.max
    ))
}

fn workload_names(spec: &str) -> Vec<String> {
    let mut names = Vec::new();
    for item in spec.split(',').map(str::trim) {
        match item {
            "thesis-train" => names.extend(THESIS_TRAIN.iter().map(|s| s.to_string())),
            "thesis-heldout" => names.extend(THESIS_HELDOUT.iter().map(|s| s.to_string())),
            other => names.extend(expand_workload_list(other)),
        }
    }
    names
}

fn simulated_windows(a: &WindowsArgs) -> Result<WindowSet> {
    let m = a.machine.load()?;
    let names = workload_names(&a.workloads);
    if names.len() < 2 {
        return Err(bad_input(format!(
            "--workloads {:?}: pairs need at least two workloads",
            a.workloads
        )));
    }
    let loaded: Vec<Box<dyn Workload>> =
        names.iter().map(|w| workload(w)).collect::<Result<_>>()?;
    let refs: Vec<&dyn Workload> = loaded.iter().map(|w| w.as_ref()).collect();
    let proto = WindowProtocol {
        seed: a.seed,
        warmup_instructions: a.warmup,
        measure_instructions: a.instructions,
        windows: a.windows,
        runs: a.runs,
        sample_cycles: a.sample_cycles,
    };
    proto.check()?;
    let bar = counting_bar(run_count(refs.len(), a.runs) as u64, "runs")?;
    bar.set_message(format!("windows on {}", m.name));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.map_or(0, usize::from))
        .build()
        .context("cannot start worker threads")?;
    let rows = pool.install(|| simulate_windows(&m, &refs, &proto, &|| bar.inc(1)))?;
    bar.finish_and_clear();
    Ok(WindowSet {
        meta: vec![
            ("source".into(), "simulated".into()),
            ("machine".into(), m.name.clone()),
            ("workloads".into(), names.join(" ")),
            ("seed".into(), a.seed.to_string()),
            ("warmup_instructions".into(), a.warmup.to_string()),
            ("measure_instructions".into(), a.instructions.to_string()),
            ("windows_per_run".into(), a.windows.to_string()),
            ("runs".into(), a.runs.to_string()),
            ("sample_cycles".into(), a.sample_cycles.to_string()),
        ],
        rows,
    })
}

fn fit(a: FitArgs) -> Result<()> {
    super::check_outputs([a.output.as_deref()])?;
    let file = a.windows.display().to_string();
    let set = read_windows(&a.windows)?;
    let features = parse_features(&a.features)?;
    let machine = set.meta("machine").unwrap_or("unknown").to_string();
    let name = a.name.clone().unwrap_or(format!("trained-{machine}"));
    let by_p_value = SelectionRule::by_p_value(alpha(&a.alpha)?);
    let rule = match a.select.as_str() {
        "program-cv" => SelectionRule::ProgramCv,
        _ => by_p_value,
    };
    let trained = train(&set, &file, &features, rule, &name)?;
    if let Some(p) = &a.output {
        write_file(p, model_text(&trained.model, p)?.as_bytes())?;
    }
    if a.json {
        return json_out(
            &serde_json::json!({"selection": trained.selection, "leave_one_program_out": trained.cv, "model": trained.model}),
        );
    }
    out(&format!("windows: {file} (machine {machine})\n"))?;
    out(&fit_report(&trained))?;
    if let Some(p) = &a.output {
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

/// A model file's text: TOML for `.toml`, JSON otherwise (what `--model` reads).
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
fn load_model(spec: &str) -> Result<LinearModel> {
    let parsed = spec
        .parse()
        .map_err(|e: String| bad_input(format!("--estimator {spec}: {e}")))?;
    match estimator(&parsed, None)? {
        Estimator::Model(m) => Ok(m),
        Estimator::Perfect | Estimator::Matrix(_) => Err(bad_input(format!(
            "--estimator {spec}: not a counter model; name a model file or thesis"
        ))),
    }
}

fn validate_cmd(a: ValidateArgs) -> Result<()> {
    super::check_outputs([a.svg.as_deref(), a.csv.as_deref()])?;
    let file = a.windows.display().to_string();
    let set = read_windows(&a.windows)?;
    let model = load_model(&a.model)?;
    let (est, fixed) = predict(&model, &set, &file)?;
    let v = validate(&model.name, &set.rows, &est)?;
    let fixed_max = est
        .iter()
        .zip(&fixed)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    if let Some(p) = &a.svg {
        let title = format!(
            "{} on {} windows: r = {:.3}, MAE = {:.3}",
            model.name, v.n, v.correlation, v.mae
        );
        write_file(p, scatter_svg(&set.rows, &est, &title)?.as_bytes())?;
    }
    if let Some(p) = &a.csv {
        let rows = set.rows.iter().zip(&est).zip(&fixed).map(|((w, e), f)| {
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
        let csv = smtsched_report::csv::csv_text(&[], &header, rows);
        write_file(p, csv.as_bytes())?;
    }
    if a.json {
        return json_out(
            &serde_json::json!({"validation": v, "fixed_point_max_difference": fixed_max}),
        );
    }
    out(&format!("windows: {file}; model: {}\n", a.model))?;
    out(&validate_report(&v))?;
    out(&format!(
        "\nFixed-point evaluation (15 fractional bits, result to 1/1024): largest difference from floating point {fixed_max:.5} over {} windows\n",
        v.n
    ))
}

fn compare_cmd(a: CompareArgs) -> Result<()> {
    let (tf, hf) = (a.train.display().to_string(), a.test.display().to_string());
    let train_set = read_windows(&a.train)?;
    let test = read_windows(&a.test)?;
    let params = GbtParams {
        trees: a.trees,
        depth: a.depth,
        learning_rate: a.learning_rate,
        min_leaf: a.min_leaf,
        ..GbtParams::default()
    };
    let rows = compare(&train_set, &tf, &test, &hf, alpha(&a.alpha)?, &params)?;
    if let Some(dir) = &a.svg_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (k, c) in rows.iter().enumerate() {
            let title = format!(
                "{}: r = {:.3}, MAE = {:.3}",
                c.estimator, c.validation.correlation, c.validation.mae
            );
            let svg = scatter_svg(&test.rows, &c.estimates, &title)?;
            write_file(
                &dir.join(format!("estimator-{}.svg", k + 1)),
                svg.as_bytes(),
            )?;
        }
    }
    if a.json {
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

fn ablation(a: AblationArgs) -> Result<()> {
    super::check_outputs([a.output.as_deref()])?;
    let trained = load_model(&a.model)?;
    let estimators = [
        ("shipped", Estimator::Model(LinearModel::thesis_northwood())),
        ("trained", Estimator::Model(trained.clone())),
        ("perfect", Estimator::Perfect),
    ];
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
    let experiments: Vec<_> = a
        .experiments
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(load_experiment)
        .collect::<Result<_, _>>()?;
    let options = RunOptions {
        seed: a.seed,
        duration_s: a.duration,
        repetitions: a.repetitions,
        ..RunOptions::default()
    };
    let ests: Vec<Estimator> = estimators.iter().map(|(_, e)| e.clone()).collect();
    let rows =
        smtsched_experiments::run::ablation::run(&experiments, &ests, &options, &Bars::default())?;
    let cell = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.3}"));
    let mut json = Vec::new();
    for r in &rows {
        table.row(
            [r.experiment.clone(), r.policy.clone()]
                .into_iter()
                .chain(r.system_speedup.iter().map(|&v| cell(v)))
                .chain(r.fairness.iter().map(|&v| cell(v))),
        );
        let by_label = |v: &[Option<f64>]| -> serde_json::Map<String, serde_json::Value> {
            estimators
                .iter()
                .zip(v)
                .map(|((l, _), x)| (l.to_string(), serde_json::json!(x)))
                .collect()
        };
        json.push(serde_json::json!({
            "experiment": r.experiment, "policy": r.policy,
            "system_speedup": by_label(&r.system_speedup),
            "fairness": by_label(&r.fairness),
        }));
    }
    if a.json {
        return json_out(&serde_json::json!({"trained_model": trained.name, "results": json}));
    }
    let report = format!(
        "Estimator ablation: the chapter 4 experiments with the shipped thesis model, the trained model {} ({}), and the perfect estimate (the oracle's true PR); naive uses no estimates and is the reference.\n\n{}",
        trained.name,
        a.model,
        table.render()
    );
    if let Some(p) = &a.output {
        write_file(p, report.as_bytes())?;
    }
    out(&report)
}
