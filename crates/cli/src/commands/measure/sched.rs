//! `measure sched`: a task-set file run on this machine's real kernel and in the simulator's
//! present-day baseline, each task's CPU share side by side.

use super::super::plan::Plan;
use super::super::{
    check_outputs, check_time, json_out, out, write_file, MAX_REAL_SECONDS, MAX_SIMULATED_SECONDS,
};
use crate::errors::bad_input;
use anyhow::{Context, Result};
use clap::Args;
use smtsched_host::machine_file::host_shaped;
use smtsched_host::schedrun::{
    self, Behaviour, RealGroup, RealTask, SchedRunConfig, SchedRunResult,
};
use smtsched_host::{measure, Shutdown, SysfsTopology, Topology};
use smtsched_model::{CpuSet, MachineModel};
use smtsched_os::oracle::NoInterference;
use smtsched_os::policy::Naive;
use smtsched_os::runs::mean_cpu_shares;
use smtsched_os::sim::{Baseline, OsSim, SimConfig};
use smtsched_os::taskset::{load_taskset, TaskSetSpec};
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
    pub cpus: Option<CpuSet>,
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
fn saved_run(path: &std::path::Path, set: &TaskSetSpec, cpus: &CpuSet) -> Result<SchedRunResult> {
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
    // The report must be of this task set: each task's name, nice level, group and blocking,
    // in order (a report of another set would be compared task by task with the wrong ones).
    for (i, (saved, t)) in tasks.iter().zip(&set.tasks).enumerate() {
        let block = t
            .block
            .as_ref()
            .map(|b| format!("{}/{} ms", b.run_ms, b.wait_ms));
        let here = serde_json::json!({
            "task": t.display_name(), "nice": t.nice, "group": t.group, "block": block,
        });
        let there = serde_json::json!({
            "task": saved["task"], "nice": saved["nice"], "group": saved["group"],
            "block": saved["block"],
        });
        if here != there {
            return Err(bad_input(format!(
                "--replay {}: task {i} is {there}, the task set's is {here}: a report of another \
                 task set",
                path.display()
            )));
        }
    }
    // The shares are of the CPUs it ran on: compared with a simulation of others they mean
    // nothing.
    let saved_cpus = v["cpus"].as_str().ok_or_else(|| bad("cpus"))?;
    if saved_cpus != cpus.to_string() {
        return Err(bad_input(format!(
            "--replay {}: measured on CPUs {saved_cpus}, not {cpus} (give --cpus {saved_cpus})",
            path.display()
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
    let mut out: Vec<RealTask> = Vec::new();
    for (i, t) in set.tasks.iter().enumerate() {
        // The simulator runs the workload named: a mistyped one is refused as `run` refuses it.
        super::super::workload(&t.workload)
            .map_err(|e| bad_input(format!("{file}: task[{i}].workload: {e}")))?;
        if t.copies != 1 {
            return Err(bad_input(format!(
                "{file}: task[{i}].copies = {}: measure sched runs one real loop per task \
                 (write a task per copy); copies are simulated only",
                t.copies
            )));
        }
        if out.iter().any(|r| r.name == t.display_name()) {
            return Err(bad_input(format!(
                "{file}: task[{i}]: the name {:?} is another task's too (each row of the \
                 comparison and of a --replay is found by its name)",
                t.display_name()
            )));
        }
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

/// Where the real run comes from.
enum Real {
    /// Measured now with this configuration.
    Measure(Box<SchedRunConfig>),
    /// Read from a report written earlier (`--replay`).
    Replay(SchedRunResult),
}

pub struct SchedPlan {
    file: String,
    set: TaskSetSpec,
    cpus: CpuSet,
    /// A model of this host's shape, for the simulator.
    machine: MachineModel,
    /// The simulator's first repetition (each takes the next seed).
    sim: SimConfig,
    sim_repeat: u32,
    real: Real,
    /// Real runs tried while the machine is disturbed.
    attempts: u32,
    output: Option<PathBuf>,
    json: bool,
}

impl Plan for SchedPlan {
    type Args = SchedArgs;

    fn from_args(a: SchedArgs) -> Result<Self> {
        check_times(&a)?;
        let set = load_taskset(&a.file)?;
        let topo = Topology::live()?;
        let cpus = measure::allowed_cpus(&topo, a.cpus.as_ref(), "--cpus")?;
        let tasks = real_tasks(&set, &cpus, &a.file)?;
        let machine = host_shaped(&topo)?;
        check_outputs([a.output.as_deref()])?;
        let real = match &a.replay {
            Some(path) => Real::Replay(saved_run(path, &set, &cpus)?),
            None => Real::Measure(Box::new(real_config(&a, &set, &cpus, tasks)?)),
        };
        let mut sim = SimConfig::new(Baseline::Modern, a.sim_duration, a.seed);
        sim.cpus = Some(cpus.clone());
        sim.stagger_s = a.warmup.max(1.0).min(a.sim_duration / 2.0);
        // The simulation runs the set as given; a set it cannot run is refused here.
        OsSim::new(
            &machine,
            &NoInterference,
            &set,
            Box::new(Naive),
            sim.clone(),
        )
        .map_err(|e| bad_input(format!("{}: {e}", a.file)))?;
        Ok(SchedPlan {
            file: a.file,
            set,
            cpus,
            machine,
            sim,
            sim_repeat: a.sim_repeat,
            real,
            attempts: a.attempts,
            output: a.output,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let simulated = mean_cpu_shares(&self.machine, &self.set, &self.sim, self.sim_repeat)
            .map_err(|e| bad_input(format!("{}: {e}", self.file)))?;
        let real = match &self.real {
            Real::Replay(real) => real.clone(),
            Real::Measure(config) => measure_real(config, self.attempts)?,
        };
        self.report(&real, &simulated)
    }
}

/// The durations are positive (the warm-up may be zero) and the counts at least 1.
/// The shortest real window measured: the kernel shares a CPU in slices of a few milliseconds
/// (EEVDF's base slice is 3 ms, CFS's minimum granularity 0.75-3 ms), so a shorter window would
/// measure which slice ran, not the shares.
const MIN_REAL_WINDOW_S: f64 = 0.1;

fn check_times(a: &SchedArgs) -> Result<()> {
    check_time("--duration", a.duration, false, MAX_REAL_SECONDS, "seconds")?;
    if a.duration < MIN_REAL_WINDOW_S {
        return Err(bad_input(format!(
            "--duration {}: at least {MIN_REAL_WINDOW_S} s, so that the window holds many of the \
             kernel's time slices (milliseconds each) and measures shares",
            a.duration
        )));
    }
    check_time("--warmup", a.warmup, true, MAX_REAL_SECONDS, "seconds")?;
    check_time(
        "--sim-duration",
        a.sim_duration,
        false,
        MAX_SIMULATED_SECONDS,
        "seconds",
    )?;
    if a.attempts == 0 || a.sim_repeat == 0 {
        return Err(bad_input(
            "--attempts and --sim-repetitions must be at least 1",
        ));
    }
    Ok(())
}

fn real_config(
    a: &SchedArgs,
    set: &TaskSetSpec,
    cpus: &CpuSet,
    tasks: Vec<RealTask>,
) -> Result<SchedRunConfig> {
    Ok(SchedRunConfig {
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
    })
}

/// The real run, measured again while another process or the hypervisor disturbed it.
fn measure_real(config: &SchedRunConfig, attempts: u32) -> Result<SchedRunResult> {
    let stop = Shutdown::install().context("cannot install the SIGINT/SIGTERM handler")?;
    let mut real = schedrun::run(config, &stop)?;
    for attempt in 2..=attempts {
        let Some(why) = &real.disturbed else { break };
        eprintln!(
            "smtsched: attempt {} of {}: {why}; measuring again",
            attempt - 1,
            attempts
        );
        real = schedrun::run(config, &stop)?;
    }
    Ok(real)
}

impl SchedPlan {
    /// The report: written with -o, printed as JSON or as a table.
    fn report(&self, real: &SchedRunResult, simulated: &[f64]) -> Result<()> {
        let max_diff = (0..self.set.tasks.len())
            .map(|i| (real.tasks[i].share - simulated[i]).abs())
            .fold(0.0, f64::max);
        let doc = self.json_report(real, simulated, max_diff);
        if let Some(p) = &self.output {
            write_file(p, (serde_json::to_string_pretty(&doc)? + "\n").as_bytes())?;
        }
        if self.json {
            return json_out(&doc);
        }
        out(&format!(
            "{}: {} task(s) on CPUs {}; real kernel {:.1} s (steal {:.1}%, other processes {:.1}%{}), simulated present-day baseline {} x {} s on {}\n\n",
            self.file,
            self.set.tasks.len(),
            self.cpus,
            real.wall_ns as f64 * 1e-9,
            real.steal_fraction * 100.0,
            real.others_fraction * 100.0,
            real.cgroup.as_ref().map_or(String::new(), |c| format!(", cgroup {c}")),
            self.sim_repeat,
            self.sim.duration_s,
            self.machine.name
        ))?;
        out(&self.table(real, simulated).render())?;
        match &real.disturbed {
            Some(why) => {
                // A replayed report does not say how many attempts it made.
                let when = match self.real {
                    Real::Measure(_) => format!("in every one of {} attempt(s)", self.attempts),
                    Real::Replay(_) => "in the report replayed".to_string(),
                };
                out(&format!(
                    "\nNo comparison: {why} {when}; the real shares above are not trustworthy.\n"
                ))
            }
            None => out(&format!(
                "\nLargest difference: {:.1} percentage points.\n",
                max_diff * 100.0
            )),
        }
    }

    /// The report as `-o` writes it (and `--replay` reads it back).
    fn json_report(
        &self,
        real: &SchedRunResult,
        simulated: &[f64],
        max_diff: f64,
    ) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .set
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::json!({
                    "task": real.tasks[i].name,
                    "nice": t.nice,
                    "cpus": t.cpus.clone().unwrap_or_else(|| self.cpus.to_string()),
                    "group": t.group,
                    "block": t.block.as_ref().map(|b| format!("{}/{} ms", b.run_ms, b.wait_ms)),
                    "real_share": real.tasks[i].share,
                    "real_wait_ns": real.tasks[i].wait_ns,
                    "simulated_share": simulated[i],
                })
            })
            .collect();
        serde_json::json!({
            "file": self.file,
            "cpus": self.cpus.to_string(),
            "machine": self.machine.name,
            "real": {
                "seconds": real.wall_ns as f64 * 1e-9,
                "steal_fraction": real.steal_fraction,
                "others_fraction": real.others_fraction,
                "disturbed": real.disturbed,
                "cgroup": real.cgroup,
            },
            "simulated": { "seconds": self.sim.duration_s, "repetitions": self.sim_repeat, "baseline": "modern" },
            "tasks": rows,
            "max_difference": if real.disturbed.is_some() { serde_json::Value::Null } else { max_diff.into() },
        })
    }

    fn table(&self, real: &SchedRunResult, simulated: &[f64]) -> Table {
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
        for (i, task) in self.set.tasks.iter().enumerate() {
            let r = real.tasks[i].share * 100.0;
            let s = simulated[i] * 100.0;
            t.row([
                real.tasks[i].name.clone(),
                task.nice.to_string(),
                task.cpus.clone().unwrap_or_else(|| self.cpus.to_string()),
                task.group.clone().unwrap_or_else(|| "-".into()),
                task.block
                    .as_ref()
                    .map_or("busy".into(), |b| format!("{}/{} ms", b.run_ms, b.wait_ms)),
                format!("{r:.1}"),
                format!("{s:.1}"),
                // A disturbed machine's shares are no comparison (see the line below the table).
                match real.disturbed {
                    Some(_) => "-".to_string(),
                    None => format!("{:+.1}", r - s),
                },
            ]);
        }
        t
    }
}
