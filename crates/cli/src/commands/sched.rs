//! `measure sched`: a task-set file run on this machine's real kernel and in the simulator's
//! present-day baseline, each task's CPU share side by side.

use super::{out, write_file};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_host::schedrun::{
    self, Behaviour, RealGroup, RealTask, SchedRunConfig, SchedRunResult,
};
use smtsched_host::{measure, Shutdown, SysfsTopology, Topology};
use smtsched_model::{load_machine, CpuNumbering, CpuSet, MachineModel};
use smtsched_os::oracle::NoInterference;
use smtsched_os::policy::Naive;
use smtsched_os::sim::{Baseline, OsSim, SimConfig};
use smtsched_os::taskset::{load_taskset, TaskSetSpec};
use smtsched_report::stats::mean_sd;
use smtsched_report::Table;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SchedArgs {
    /// Task-set file (TOML, as `smtsched run --tasks`): tasks with `nice`, `cpus`, `block`
    /// (compute/sleep) and `group`, and `[[group]]` weights. `workload` is what the simulator
    /// would run; the real run uses busy loops (or compute/sleep loops for tasks with `block`).
    pub file: String,
    /// Seconds measured on the real machine, after --warmup.
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// Seconds the tasks run before the measurement starts.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Runs to try when the machine is disturbed (another process or the hypervisor took more
    /// than 5% of the CPUs in use) before reporting the run as disturbed.
    #[arg(long, default_value_t = 3)]
    pub attempts: u32,
    /// Logical CPUs the set may use (kernel list syntax); default: every CPU this process may run
    /// on. Task `cpus` must lie within them.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Simulated seconds of each of the simulator's repetitions.
    #[arg(long, default_value_t = 200.0)]
    pub sim_duration: f64,
    /// Simulator repetitions (seeds seed, seed+1, …), averaged.
    #[arg(
        long = "sim-repetitions",
        alias = "sim-repeat",
        value_name = "REPETITIONS",
        default_value_t = 3
    )]
    pub sim_repeat: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare with the real run saved in this report (from -o) instead of running the tasks
    /// again: only the simulation is repeated.
    #[arg(long, value_name = "REPORT")]
    pub replay: Option<PathBuf>,
}

/// The real run of a report written with -o.
fn saved_run(path: &std::path::Path, set: &TaskSetSpec) -> Result<SchedRunResult> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("--replay {}: {e}", path.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad_input(format!("--replay {}: not a report: {e}", path.display())))?;
    let bad = |what: &str| bad_input(format!("--replay {}: no {what}", path.display()));
    let tasks = v["tasks"].as_array().ok_or_else(|| bad("tasks"))?;
    if tasks.len() != set.tasks.len() {
        return Err(bad_input(format!(
            "--replay {}: {} tasks, the task set has {}",
            path.display(),
            tasks.len(),
            set.tasks.len()
        )));
    }
    let real = &v["real"];
    let seconds = real["seconds"]
        .as_f64()
        .ok_or_else(|| bad("real.seconds"))?;
    let wall_ns = (seconds * 1e9) as u64;
    Ok(SchedRunResult {
        tasks: tasks
            .iter()
            .map(|t| {
                let share = t["real_share"]
                    .as_f64()
                    .ok_or_else(|| bad("tasks[].real_share"))?;
                Ok(schedrun::TaskShare {
                    name: t["task"].as_str().unwrap_or("").to_string(),
                    cpu_ns: (share * wall_ns as f64) as u64,
                    wait_ns: t["real_wait_ns"].as_u64().unwrap_or(0),
                    share,
                })
            })
            .collect::<Result<_>>()?,
        wall_ns,
        steal_fraction: real["steal_fraction"].as_f64().unwrap_or(0.0),
        others_fraction: real["others_fraction"].as_f64().unwrap_or(0.0),
        disturbed: real["disturbed"].as_str().map(str::to_string),
        cgroup: real["cgroup"].as_str().map(str::to_string),
    })
}

/// The real tasks of a task set (refusing what the real run cannot do).
fn real_tasks(set: &TaskSetSpec, cpus: &CpuSet, file: &str) -> Result<Vec<RealTask>> {
    let mut out = Vec::new();
    for (i, t) in set.tasks.iter().enumerate() {
        if t.fork.is_some() {
            return Err(bad_input(format!(
                "{file}: task[{i}].fork: measure sched runs busy and compute/sleep loops; fork families are simulated only"
            )));
        }
        let mask = match &t.cpus {
            Some(text) => {
                let m = CpuSet::parse(text)
                    .map_err(|e| bad_input(format!("{file}: task[{i}].cpus = {text:?}: {e}")))?;
                if !m.is_subset(cpus) {
                    return Err(bad_input(format!(
                        "{file}: task[{i}].cpus = {text:?}: not within the CPUs in use ({cpus})"
                    )));
                }
                Some(m)
            }
            None => None,
        };
        out.push(RealTask {
            name: t.display_name(),
            behaviour: match &t.block {
                Some(b) => Behaviour::ComputeSleep {
                    run_ms: b.run_ms,
                    wait_ms: b.wait_ms,
                },
                None => Behaviour::Busy,
            },
            nice: t.nice,
            cpus: mask,
            group: set.group_of(i),
        });
    }
    Ok(out)
}

/// A machine model of this host's shape for the simulator: the `smt2-modern` preset with the
/// host's packages, cores and threads, its CPUs numbered as the host numbers them. CPU shares do
/// not depend on the rest of the model (the simulation runs without interference).
pub fn host_machine(topo: &Topology) -> Result<MachineModel> {
    let n = topo.online.len() as u32;
    if topo.online != (0..n).collect::<CpuSet>() {
        return Err(bad_input(format!(
            "the online CPUs ({}) are not numbered 0-{}: the simulator cannot mirror them",
            topo.online,
            n - 1
        )));
    }
    let packages = topo.packages.len().max(1) as u32;
    let threads = topo.threads_per_core().max(1) as u32;
    let cores = (n / threads / packages).max(1);
    if packages * cores * threads != n {
        return Err(bad_input(format!(
            "this machine's {n} CPUs are not {packages} package(s) of equal cores of {threads} thread(s)"
        )));
    }
    let mut m = load_machine("smt2-modern", &[])?;
    m.name = format!("this host ({packages}x{cores}x{threads})");
    m.topology.packages = packages;
    m.topology.cores_per_package = cores;
    m.topology.threads_per_core = threads;
    // Siblings are n and n+1, or n and n+cores: pick the numbering the host uses.
    m.topology.cpu_numbering = CpuNumbering::SiblingsAdjacent;
    let same = |m: &MachineModel| {
        (0..n).all(|c| {
            let sim: CpuSet = (0..n)
                .filter(|&d| m.cpu_location(d).map(|l| l.core) == m.cpu_location(c).map(|l| l.core))
                .collect();
            sim == topo.siblings_of(c)
        })
    };
    if !same(&m) {
        m.topology.cpu_numbering = CpuNumbering::ThreadMajor;
        if !same(&m) {
            return Err(bad_input(
                "this machine numbers its sibling threads neither n,n+1 nor n,n+cores: the simulator cannot mirror it",
            ));
        }
    }
    Ok(m)
}

/// The simulator's mean CPU share per task over `repeat` seeds.
fn simulate(set: &TaskSetSpec, m: &MachineModel, cpus: &CpuSet, a: &SchedArgs) -> Result<Vec<f64>> {
    let mut shares = vec![Vec::new(); set.tasks.len()];
    for r in 0..a.sim_repeat {
        let mut cfg = SimConfig::new(Baseline::Modern, a.sim_duration, a.seed + r as u64);
        cfg.cpus = Some(cpus.clone());
        cfg.stagger_s = a.warmup.max(1.0).min(a.sim_duration / 2.0);
        let sim = OsSim::new(m, &NoInterference, set, Box::new(Naive), cfg)
            .map_err(|e| bad_input(format!("{}: {e}", a.file)))?;
        let metrics = sim.run();
        for (i, b) in metrics.per_bench.iter().enumerate() {
            shares[i].push(b.cpu_share);
        }
    }
    Ok(shares.iter().map(|v| mean_sd(v).0).collect())
}

pub fn sched(a: SchedArgs) -> Result<()> {
    for (name, v) in [
        ("--duration", a.duration),
        ("--warmup", a.warmup),
        ("--sim-duration", a.sim_duration),
    ] {
        if !(v.is_finite() && v >= 0.0) || (name != "--warmup" && v == 0.0) {
            return Err(bad_input(format!(
                "{name} {v}: must be a positive number of seconds"
            )));
        }
    }
    if a.attempts == 0 || a.sim_repeat == 0 {
        return Err(bad_input("--attempts and --sim-repeat must be at least 1"));
    }
    let set = load_taskset(&a.file)?;
    let topo = Topology::live()?;
    let requested = match &a.cpus {
        Some(text) => Some(CpuSet::parse(text).map_err(|e| bad_input(format!("--cpus: {e}")))?),
        None => None,
    };
    let cpus = measure::allowed_cpus(&topo, requested.as_ref(), "--cpus")?;
    let tasks = real_tasks(&set, &cpus, &a.file)?;
    let m = host_machine(&topo)?;
    let simulated = simulate(&set, &m, &cpus, &a)?;
    let cfg = SchedRunConfig {
        tasks,
        groups: set
            .groups
            .iter()
            .map(|g| RealGroup {
                name: g.name.clone(),
                weight: g.weight,
            })
            .collect(),
        cpus: cpus.clone(),
        warmup: Duration::from_secs_f64(a.warmup),
        duration: Duration::from_secs_f64(a.duration),
        seed: a.seed,
        exe: std::env::current_exe().context("cannot find the smtsched binary to start tasks")?,
    };
    if let Some(path) = &a.replay {
        let real = saved_run(path, &set)?;
        return report(&a, &set, &cpus, &m, &real, &simulated);
    }
    let stop = Shutdown::install().context("cannot install the SIGINT/SIGTERM handler")?;
    let mut real = schedrun::run(&cfg, &stop)?;
    for attempt in 2..=a.attempts {
        let Some(why) = &real.disturbed else { break };
        eprintln!(
            "smtsched: attempt {} of {}: {why}; measuring again",
            attempt - 1,
            a.attempts
        );
        real = schedrun::run(&cfg, &stop)?;
    }
    report(&a, &set, &cpus, &m, &real, &simulated)
}

fn report(
    a: &SchedArgs,
    set: &TaskSetSpec,
    cpus: &CpuSet,
    m: &MachineModel,
    real: &SchedRunResult,
    simulated: &[f64],
) -> Result<()> {
    let rows: Vec<serde_json::Value> = set
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({
                "task": real.tasks[i].name,
                "nice": t.nice,
                "cpus": t.cpus.clone().unwrap_or_else(|| cpus.to_string()),
                "group": t.group,
                "block": t.block.as_ref().map(|b| format!("{}/{} ms", b.run_ms, b.wait_ms)),
                "real_share": real.tasks[i].share,
                "real_wait_ns": real.tasks[i].wait_ns,
                "simulated_share": simulated[i],
            })
        })
        .collect();
    let max_diff = (0..set.tasks.len())
        .map(|i| (real.tasks[i].share - simulated[i]).abs())
        .fold(0.0, f64::max);
    let doc = serde_json::json!({
        "file": a.file,
        "cpus": cpus.to_string(),
        "machine": m.name,
        "real": {
            "seconds": real.wall_ns as f64 * 1e-9,
            "steal_fraction": real.steal_fraction,
            "others_fraction": real.others_fraction,
            "disturbed": real.disturbed,
            "cgroup": real.cgroup,
        },
        "simulated": { "seconds": a.sim_duration, "repetitions": a.sim_repeat, "baseline": "modern" },
        "tasks": rows,
        "max_difference": if real.disturbed.is_some() { serde_json::Value::Null } else { max_diff.into() },
    });
    if let Some(p) = &a.output {
        write_file(p, (serde_json::to_string_pretty(&doc)? + "\n").as_bytes())?;
    }
    if a.json {
        return super::json_out(&doc);
    }
    let mut t = Table::new([
        "task",
        "nice",
        "cpus",
        "group",
        "behaviour",
        "real %",
        "simulated %",
        "difference (pp)",
    ]);
    for (i, task) in set.tasks.iter().enumerate() {
        let r = real.tasks[i].share * 100.0;
        let s = simulated[i] * 100.0;
        t.row([
            real.tasks[i].name.clone(),
            task.nice.to_string(),
            task.cpus.clone().unwrap_or_else(|| cpus.to_string()),
            task.group.clone().unwrap_or_else(|| "-".into()),
            task.block
                .as_ref()
                .map_or("busy".into(), |b| format!("{}/{} ms", b.run_ms, b.wait_ms)),
            format!("{r:.1}"),
            format!("{s:.1}"),
            format!("{:+.1}", r - s),
        ]);
    }
    out(&format!(
        "{}: {} task(s) on CPUs {}; real kernel {:.1} s (steal {:.1}%, other processes {:.1}%{}), simulated present-day baseline {} x {} s on {}\n\n",
        a.file,
        set.tasks.len(),
        cpus,
        real.wall_ns as f64 * 1e-9,
        real.steal_fraction * 100.0,
        real.others_fraction * 100.0,
        real.cgroup.as_ref().map_or(String::new(), |c| format!(", cgroup {c}")),
        a.sim_repeat,
        a.sim_duration,
        m.name
    ))?;
    out(&t.render())?;
    match &real.disturbed {
        Some(why) => out(&format!(
            "\nNo comparison: {why} in every one of {} attempt(s); the real shares above are not trustworthy.\n",
            a.attempts
        )),
        None => out(&format!(
            "\nLargest difference: {:.1} percentage points.\n",
            max_diff * 100.0
        )),
    }
}
