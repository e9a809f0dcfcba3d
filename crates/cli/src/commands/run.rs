//! `run`: the OS scheduling simulator on a task set under several policies.

use super::{json_out, out, write_file};
use crate::args::RunArgs;
use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::KernelBuild;
use smtsched_model::{expand_workload_list, CpuSet, PrMatrix};
use smtsched_os::oracle::{MeasuredOracle, Oracle, OracleSpec, SimulatedOracle};
use smtsched_os::policy::DecisionRecord;
use smtsched_os::runs::{
    perfetto_of, policy_table, server_table, simulate_reporting, simulation_steps, task_table,
    TimelineFile,
};
use smtsched_os::sim::{Corunners, Estimator, EstimatorSpec, SimConfig};
use smtsched_os::taskset::{load_taskset, TaskSetSpec};
use smtsched_os::{LinearModel, PolicyName};
use std::path::Path;

/// `--tasks`: a task set file, or a workload list (`gzip-like,mcf-like`, `all`).
/// What `--tasks` names: a task set, and the CPUs its experiment file (if it is one) sets.
pub struct Tasks {
    pub set: TaskSetSpec,
    pub cpus: Option<CpuSet>,
}

/// `--tasks`: a task-set file, an experiment file of kind `policies` (the same schema for its
/// tasks, groups, devices, clients and profiles, beside the experiment's own fields), or a
/// workload list.
pub fn tasks_of(text: &str) -> Result<Tasks> {
    if Path::new(text).is_file() {
        if !is_experiment_file(text) {
            return Ok(Tasks {
                set: load_taskset(text)?,
                cpus: None,
            });
        }
        let e = smtsched_experiments::experiment::load_experiment(text)?;
        if e.kind != smtsched_experiments::experiment::ExperimentKind::Policies {
            return Err(bad_input(format!(
                "--tasks {text}: an experiment of kind {:?} has no task set (kind \"policies\" has)",
                e.kind
            )));
        }
        let cpus = e.cpus.as_deref().map(CpuSet::parse).transpose();
        let cpus = cpus.map_err(|err| bad_input(format!("--tasks {text}: cpus: {err}")))?;
        return Ok(Tasks {
            set: e.task_set(),
            cpus,
        });
    }
    let names = expand_workload_list(text);
    if names.is_empty() {
        return Err(bad_input(format!("--tasks {text:?}: names no task")));
    }
    Ok(Tasks {
        set: TaskSetSpec::of_workloads(&names),
        cpus: None,
    })
}

/// Whether the TOML file at `path` is an experiment (it has a `kind`); unreadable or not TOML:
/// not one (the task-set loader then says what is wrong with it).
fn is_experiment_file(path: &str) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.contains_key("kind"))
}

/// A counter model file (JSON or TOML, as `train fit` writes it).
pub fn load_linear_model(file: &str) -> Result<LinearModel> {
    LinearModel::load(Path::new(file)).map_err(|e| bad_input(format!("--estimator {e}")))
}

/// `--estimator`: machine, thesis, perfect, matrix:FILE or a model file (for runs on `machine`).
pub fn estimator(
    model: &EstimatorSpec,
    machine: Option<&smtsched_model::MachineModel>,
) -> Result<Estimator> {
    Estimator::from_spec(model, machine).map_err(|e| bad_input(format!("--estimator {e}")))
}

/// The oracle a run uses, for the workloads of `set` (oracle workload `i` = task `i`, then the
/// devices' handlers).
pub fn oracle(
    spec: &OracleSpec,
    m: &smtsched_model::MachineModel,
    set: &TaskSetSpec,
    seed: u64,
    build: KernelBuild,
) -> Result<Box<dyn Oracle>> {
    if let OracleSpec::Measured(path) = spec {
        let file = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad_input(format!("--oracle {file}: {e}")))?;
        let matrix: PrMatrix = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("--oracle {file}: not a PR matrix file: {e}")))?;
        // A matrix names profiles; a workload given as a file is known by its profile's name.
        let names: Vec<String> = set
            .oracle_workloads()
            .iter()
            .map(|w| set.workload_profile(w).map_or(w.clone(), |p| p.name))
            .collect();
        return Ok(Box::new(
            MeasuredOracle::new(m.clone(), matrix, &names)
                .map_err(|e| bad_input(format!("--oracle {file}: {e}")))?,
        ));
    }
    Ok(Box::new(SimulatedOracle::for_set(m, set, seed, build)?))
}

pub fn run(a: RunArgs) -> Result<()> {
    let m = a.machine.load()?;
    let baseline = a.baseline;
    let policies: &[PolicyName] = &a.policies;
    if !(a.duration > a.stagger && a.duration.is_finite()) || a.stagger < 0.0 {
        return Err(bad_input(format!(
            "--duration {}: must be a positive number of seconds longer than --stagger {}",
            a.duration, a.stagger
        )));
    }
    if let Some(hz) = a.hz {
        if !(hz.is_finite() && hz > 0.0) {
            return Err(bad_input(format!("--hz {hz}: must be a positive number")));
        }
    }
    let Tasks {
        mut set,
        cpus: experiment_cpus,
    } = tasks_of(&a.tasks)?;
    if !Path::new(&a.tasks).is_file() {
        for t in &mut set.tasks {
            t.run_seconds = a.run_seconds;
        }
    }
    set.validate()
        .map_err(|e| bad_input(format!("--tasks: {e}")))?;
    let cpus = a.cpus.clone().or(experiment_cpus);
    let cpus_shown = cpus.as_ref().map_or("all".into(), |c| c.to_string());
    let build = match a.kernel.as_str() {
        "up" => KernelBuild::Up,
        _ => KernelBuild::Smp,
    };
    super::check_outputs([
        a.timeline.as_deref(),
        a.timeline_svg.as_deref(),
        a.trace.as_deref(),
        a.csv.as_deref(),
        a.decisions.as_deref(),
    ])?;
    let oracle = oracle(&a.oracle, &m, &set, a.seed, build)?;
    let mut cfg = SimConfig::new(baseline, a.duration, a.seed);
    cfg.hz = a.hz.unwrap_or(baseline.default_hz());
    cfg.stagger_s = a.stagger;
    cfg.cpus = cpus;
    let model = a.model.clone().unwrap_or(Estimator::default_spec(&m));
    cfg.estimator = estimator(&model, Some(&m))?;
    cfg.estimate_cost_ticks = a.estimate_cost;
    cfg.record_timeline = a.timeline.is_some() || a.timeline_svg.is_some() || a.trace.is_some();
    cfg.record_periods = a.decisions.is_some();
    cfg.corunners = match a.corunners.as_str() {
        "exact" => Corunners::Exact,
        "inferred" => Corunners::Inferred,
        other => {
            return Err(bad_input(format!(
                "--corunners {other:?}: expected exact or inferred"
            )))
        }
    };
    let started = std::time::Instant::now();
    let bar = super::counting_bar(simulation_steps(policies.len(), a.repeat), "steps")?;
    bar.set_message(format!(
        "warming the oracle ({} workloads)",
        set.oracle_workloads().len()
    ));
    let step = || {
        bar.inc(1);
        bar.set_message("simulating (policies x repetitions)");
    };
    let results = simulate_reporting(&m, oracle.as_ref(), &set, policies, a.repeat, &cfg, &step);
    bar.finish_and_clear();
    let results = results.map_err(|e| {
        if Path::new(&a.tasks).is_file() {
            bad_input(format!("{}: {e}", a.tasks))
        } else {
            bad_input(e)
        }
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let title = format!(
        "{} on {}, CPUs {}, {} baseline",
        results[0].policy, m.name, cpus_shown, a.baseline
    );
    let timeline = TimelineFile::of(&results[0].runs[0], &m, &title);
    if let Some(p) = &a.timeline {
        write_file(
            p,
            (serde_json::to_string_pretty(&timeline)? + "\n").as_bytes(),
        )?;
    }
    if let Some(p) = &a.timeline_svg {
        let svg = timeline
            .svg(a.timeline_seconds)
            .map_err(anyhow::Error::msg)?;
        write_file(p, svg.as_bytes())?;
    }
    if let Some(p) = &a.trace {
        let trace = perfetto_of(&results[0].runs[0], &m, &title);
        write_file(p, (serde_json::to_string(&trace)? + "\n").as_bytes())?;
    }
    if let Some(p) = &a.decisions {
        let mut text = String::new();
        for rec in &results[0].runs[0].periods {
            let line = DecisionRecord::new(&rec.view, &rec.decisions);
            text.push_str(&serde_json::to_string(&line)?);
            text.push('\n');
        }
        write_file(p, text.as_bytes())?;
    }
    if let Some(p) = &a.csv {
        let mut rows: Vec<Vec<String>> = Vec::new();
        for pr in &results {
            for (k, r) in pr.runs.iter().enumerate() {
                for b in &r.per_bench {
                    rows.push(vec![
                        pr.policy.clone(),
                        k.to_string(),
                        b.name.clone(),
                        b.nice.to_string(),
                        b.runs.to_string(),
                        b.pr.map_or(String::new(), |v| format!("{v:.6}")),
                        format!("{:.6}", b.cpu_share),
                        b.context_switches.to_string(),
                        b.migrations.to_string(),
                    ]);
                }
            }
        }
        let header = [
            "policy",
            "repetition",
            "task",
            "nice",
            "runs",
            "pr",
            "cpu_share",
            "context_switches",
            "migrations",
        ];
        let csv = smtsched_report::csv::csv_text(&[], &header, rows);
        write_file(p, csv.as_bytes())?;
    }
    if a.json {
        let v: Vec<_> = results
            .iter()
            .map(|p| serde_json::json!({ "policy": p.policy, "runs": p.runs, "summaries": p.runs.iter().map(|r| r.summary()).collect::<Vec<_>>() }))
            .collect();
        return json_out(
            &serde_json::json!({ "machine": m.name, "baseline": a.baseline.to_string(), "oracle": oracle.describe(), "results": v }),
        );
    }
    let sims = results.len() as f64 * a.repeat as f64;
    out(&format!(
        "{} tasks on {} (CPUs {}), {} baseline, {} s simulated x {} repetition(s), oracle {}, {}\n{:.1} s in all; {:.2} s per simulation once the oracle was warm ({} on this host)\n\n",
        set.tasks.len(),
        m.name,
        cpus_shown,
        a.baseline,
        a.duration,
        a.repeat,
        oracle.describe(),
        cfg.estimator.describe(),
        elapsed,
        // The simulations ran in parallel, as many at once as there are threads (or fewer).
        results[0].wall_seconds * (rayon::current_num_threads() as f64).min(sims) / sims,
        rayon::current_num_threads()
    ))?;
    // Server and load-generator tasks complete requests, not runs: their PRs would be empty
    // columns.
    let plain_tasks = set
        .tasks
        .iter()
        .any(|t| t.serves.is_none() && t.drives.is_none());
    if plain_tasks {
        out(&policy_table(&results))?;
        out("\n")?;
        out(&task_table(&results))?;
    }
    if !results[0].runs[0].servers.is_empty() {
        if plain_tasks {
            out("\n")?;
        }
        out(&server_table(&results))?;
    }
    Ok(())
}
