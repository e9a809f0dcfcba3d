//! `run`: the OS scheduling simulator on a task set under several policies.

use super::{json_out, machine, out, write_file};
use crate::args::RunArgs;
use crate::errors::bad_input;
use anyhow::{Context, Result};
use rayon::prelude::*;
use smtsched_model::{expand_workload_list, load_workload, CpuSet, PrMatrix, WorkloadProfile};
use smtsched_os::oracle::{MeasuredOracle, Oracle, SimulatedOracle};
use smtsched_os::sim::{Baseline, Estimator, OsSim, SimConfig};
use smtsched_os::taskset::{load_taskset, TaskSetSpec};
use smtsched_os::{LinearModel, Metrics, PolicyName};
use smtsched_report::timeline::{timeline_svg, Segment};
use smtsched_report::Table;
use std::path::Path;

/// Instructions per oracle sample (warm-up, measured): the matrix defaults.
const ORACLE_WARMUP: u64 = 1_000_000;
const ORACLE_MEASURE: u64 = 2_000_000;

pub fn task_set(text: &str) -> Result<TaskSetSpec> {
    if Path::new(text).is_file() {
        return Ok(load_taskset(text)?);
    }
    let names = expand_workload_list(text);
    if names.is_empty() {
        return Err(bad_input(format!("--tasks {text:?}: names no task")));
    }
    Ok(TaskSetSpec::of_workloads(&names))
}

pub fn estimator(model: &str) -> Result<Estimator> {
    Ok(match model {
        "thesis" | "thesis-northwood" => Estimator::Model(LinearModel::thesis_northwood()),
        "perfect" => Estimator::Perfect,
        file => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| bad_input(format!("--model {file}: {e}")))?;
            let m: LinearModel = if file.ends_with(".toml") {
                toml::from_str(&text)
                    .map_err(|e| bad_input(format!("--model {file}: {}", e.message())))?
            } else {
                serde_json::from_str(&text)
                    .map_err(|e| bad_input(format!("--model {file}: {e}")))?
            };
            m.validate()
                .map_err(|e| bad_input(format!("--model {file}: {e}")))?;
            Estimator::Model(m)
        }
    })
}

/// The oracle a run uses, for the workloads of `set` (oracle workload `i` = task `i`).
pub fn oracle(
    spec: &str,
    m: &smtsched_model::MachineModel,
    set: &TaskSetSpec,
    seed: u64,
) -> Result<Box<dyn Oracle>> {
    if let Some(file) = spec.strip_prefix("measured:") {
        let text = std::fs::read_to_string(file)
            .map_err(|e| bad_input(format!("--oracle {file}: {e}")))?;
        let matrix: PrMatrix = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("--oracle {file}: not a PR matrix file: {e}")))?;
        let names: Vec<String> = set.tasks.iter().map(|t| t.workload.clone()).collect();
        return Ok(Box::new(
            MeasuredOracle::new(m.clone(), matrix, &names)
                .map_err(|e| bad_input(format!("--oracle {file}: {e}")))?,
        ));
    }
    if spec != "simulated" {
        return Err(bad_input(format!(
            "--oracle {spec:?}: expected simulated or measured:FILE"
        )));
    }
    let profiles: Vec<WorkloadProfile> = set
        .tasks
        .iter()
        .map(|t| load_workload(&t.workload, &[]))
        .collect::<Result<_, _>>()?;
    Ok(Box::new(SimulatedOracle::new(
        m.clone(),
        profiles,
        seed,
        ORACLE_WARMUP,
        ORACLE_MEASURE,
    )))
}

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
    m: &smtsched_model::MachineModel,
    oracle: &dyn Oracle,
    set: &TaskSetSpec,
    policies: &[PolicyName],
    repeat: u32,
    base: &SimConfig,
) -> Result<Vec<PolicyRuns>> {
    // Building one simulation validates the set and warms the oracle.
    OsSim::new(m, oracle, set, PolicyName::Naive.build(), base.clone()).map_err(bad_input)?;
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
            OsSim::new(m, oracle, set, policies[p].build(), cfg).map(|s| s.run())
        })
        .collect::<Result<_, String>>()
        .map_err(bad_input)?;
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

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

/// The comparison table: one row per policy.
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
        "estimates",
    ]);
    for p in results {
        let s: Vec<_> = p.runs.iter().map(|r| r.summary()).collect();
        let (sp, sd) = mean_sd(&s.iter().map(|x| x.system_speedup).collect::<Vec<_>>());
        let secs = |r: &Metrics| r.window.1 / r.clock_hz;
        t.row([
            p.policy.clone(),
            format!("{sp:.3}"),
            format!("{sd:.3}"),
            format!(
                "{:.3}",
                mean_sd(&s.iter().map(|x| x.antt).collect::<Vec<_>>()).0
            ),
            format!(
                "{:.3}",
                mean_sd(&s.iter().map(|x| x.fairness).collect::<Vec<_>>()).0
            ),
            format!(
                "{:.3}",
                mean_sd(&s.iter().map(|x| x.pr_sd).collect::<Vec<_>>()).0
            ),
            format!(
                "{:.1}",
                mean_sd(
                    &p.runs
                        .iter()
                        .map(|r| r.context_switches as f64 / secs(r))
                        .collect::<Vec<_>>()
                )
                .0
            ),
            format!(
                "{:.2}",
                mean_sd(
                    &p.runs
                        .iter()
                        .map(|r| r.migrations as f64 / secs(r))
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
    t.render()
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

pub fn run(a: RunArgs) -> Result<()> {
    let m = machine(&a.machine, &a.set)?;
    let baseline: Baseline = a
        .baseline
        .parse()
        .map_err(|e: String| bad_input(format!("--baseline: {e}")))?;
    let policies: Vec<PolicyName> = a
        .policies
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<PolicyName>()
                .map_err(|e| bad_input(format!("--policies: {e}")))
        })
        .collect::<Result<_>>()?;
    if policies.is_empty() {
        return Err(bad_input("--policies names no policy"));
    }
    if !(a.duration > a.stagger && a.duration.is_finite()) || a.stagger < 0.0 {
        return Err(bad_input(format!(
            "--duration {}: must be a positive number of seconds longer than --stagger {}",
            a.duration, a.stagger
        )));
    }
    if !(a.hz > 0.0) {
        return Err(bad_input(format!("--hz {}: must be positive", a.hz)));
    }
    if a.repeat == 0 {
        return Err(bad_input("--repeat 0: at least one run is needed"));
    }
    let set = task_set(&a.tasks)?;
    set.validate()
        .map_err(|e| bad_input(format!("--tasks: {e}")))?;
    let cpus = a
        .cpus
        .as_deref()
        .map(CpuSet::parse)
        .transpose()
        .map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let oracle = oracle(&a.oracle, &m, &set, a.seed)?;
    let mut cfg = SimConfig::new(baseline, a.duration, a.seed);
    cfg.hz = a.hz;
    cfg.stagger_s = a.stagger;
    cfg.cpus = cpus;
    cfg.estimator = estimator(&a.model)?;
    cfg.estimate_cost_ticks = a.estimate_cost;
    cfg.record_timeline = a.timeline.is_some() || a.timeline_svg.is_some();
    let started = std::time::Instant::now();
    let results = simulate(&m, oracle.as_ref(), &set, &policies, a.repeat, &cfg)?;
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(p) = &a.timeline {
        write_file(
            p,
            (serde_json::to_string_pretty(&results[0].runs[0].timeline)? + "\n").as_bytes(),
        )?;
    }
    if let Some(p) = &a.timeline_svg {
        let r = &results[0].runs[0];
        let svg = timeline(
            r,
            &m,
            a.timeline_seconds,
            &format!("{} on {} ({})", results[0].policy, m.name, a.baseline),
        )?;
        write_file(p, svg.as_bytes())?;
    }
    if let Some(p) = &a.csv {
        let mut csv = String::from(
            "policy,repetition,task,nice,runs,pr,cpu_share,context_switches,migrations\n",
        );
        for pr in &results {
            for (k, r) in pr.runs.iter().enumerate() {
                for b in &r.per_bench {
                    csv.push_str(&format!(
                        "{},{},{},{},{},{},{:.6},{},{}\n",
                        pr.policy,
                        k,
                        b.name,
                        b.nice,
                        b.runs,
                        b.pr.map_or(String::new(), |v| format!("{v:.6}")),
                        b.cpu_share,
                        b.context_switches,
                        b.migrations
                    ));
                }
            }
        }
        write_file(p, csv.as_bytes())?;
    }
    if a.json {
        let v: Vec<_> = results
            .iter()
            .map(|p| serde_json::json!({ "policy": p.policy, "runs": p.runs, "summaries": p.runs.iter().map(|r| r.summary()).collect::<Vec<_>>() }))
            .collect();
        return json_out(
            &serde_json::json!({ "machine": m.name, "baseline": a.baseline, "oracle": oracle.describe(), "results": v }),
        );
    }
    let sims = results.len() as f64 * a.repeat as f64;
    out(&format!(
        "{} tasks on {} (CPUs {}), {} baseline, {} s simulated x {} repetition(s), oracle {}\n{:.1} s in all; {:.2} s per simulation once the oracle was warm ({} on this host)\n\n",
        set.tasks.len(),
        m.name,
        a.cpus.as_deref().unwrap_or("all"),
        a.baseline,
        a.duration,
        a.repeat,
        oracle.describe(),
        elapsed,
        results[0].wall_seconds * rayon::current_num_threads() as f64 / sims,
        rayon::current_num_threads()
    ))?;
    out(&policy_table(&results))?;
    out("\n")?;
    out(&task_table(&results))
}

/// Timeline segments of the first `seconds` seconds after the window starts.
fn timeline(
    r: &Metrics,
    m: &smtsched_model::MachineModel,
    seconds: f64,
    title: &str,
) -> Result<String> {
    let hz = r.clock_hz;
    let t0 = r.window.0 / hz;
    let t1 = t0 + seconds;
    let mut open: std::collections::BTreeMap<usize, (f64, String)> = Default::default();
    let mut segs = Vec::new();
    for s in &r.timeline {
        let t = s.cycle / hz;
        if let Some((start, label)) = open.remove(&s.cpu) {
            segs.push(Segment {
                lane: s.cpu,
                start_s: start,
                end_s: t,
                label,
            });
        }
        if let Some(name) = &s.to_name {
            open.insert(s.cpu, (t, name.clone()));
        }
    }
    for (cpu, (start, label)) in open {
        segs.push(Segment {
            lane: cpu,
            start_s: start,
            end_s: r.window.1 / hz,
            label,
        });
    }
    let lanes = m.logical_cpus() as usize;
    let names: Vec<String> = (0..lanes).map(|c| format!("cpu {c}")).collect();
    timeline_svg(&segs, lanes, &names, t0, t1, title)
        .map_err(anyhow::Error::msg)
        .context("drawing the timeline")
}
