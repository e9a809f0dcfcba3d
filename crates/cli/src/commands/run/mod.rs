//! `run`: the OS scheduling simulator on a task set under several policies.

mod files;
mod tasks;

use super::plan::Plan;
use super::{counting_bar, estimator, json_out, out, MAX_SIMULATED_SECONDS};
use crate::args::RunArgs;
use crate::errors::bad_input;
use anyhow::Result;
use files::RunFiles;
use smtsched_model::{KernelBuild, MachineModel};
use smtsched_os::oracle::{Oracle, OracleSpec};
use smtsched_os::runs::{
    policy_table, replicated_steps, server_table, simulate_replicated, simulate_reporting,
    simulation_steps, task_table, PolicyRuns,
};
use smtsched_os::sim::{Baseline, Estimator, SimConfig};
use smtsched_os::taskset::TaskSetSpec;
use smtsched_os::PolicyName;
use std::path::Path;
use tasks::{oracle, tasks_of, Tasks};

pub struct RunPlan {
    machine: MachineModel,
    set: TaskSetSpec,
    /// The task-set or experiment file `--tasks` named (it prefixes errors in the set).
    tasks_file: Option<String>,
    oracle: Box<dyn Oracle>,
    /// Repetitions with a simulated oracle: each draws its own samples from its seed (a whole
    /// replication), so the spread over repetitions includes the samples' noise. A measured
    /// matrix is the same data for every repetition; one repetition is the same either way.
    replicated: bool,
    /// The kernel build the oracle's workloads are built for.
    kernel: KernelBuild,
    policies: Vec<PolicyName>,
    repeat: u32,
    /// The simulation of one policy; each run takes its own seed.
    config: SimConfig,
    files: RunFiles,
    json: bool,
}

/// `--decisions` records the first policy's decision periods: a policy that steers Linux 2.4's
/// `goodness()` through hooks has none there, and an empty file would say nothing.
fn check_decisions_recorded(files: &RunFiles, baseline: Baseline, first: PolicyName) -> Result<()> {
    let hooks = first
        .build(&smtsched_os::policy::PolicyInputs::default())
        .is_ok_and(|mut p| p.linux24().is_some());
    if files.decisions.is_some() && baseline == Baseline::Linux24 && hooks {
        return Err(bad_input(format!(
            "--decisions: {first} on the linux24 baseline steers goodness() at each pick and \
             makes no periodic decisions to record (--baseline modern runs it through decisions)"
        )));
    }
    Ok(())
}

impl Plan for RunPlan {
    type Args = RunArgs;

    fn from_args(a: RunArgs) -> Result<Self> {
        let m = a.machine.load()?;
        check_times(&a)?;
        if let Some((_, p)) = smtsched_model::first_repeat(&a.policies) {
            return Err(bad_input(format!(
                "--policies: {:?} is named twice (each policy runs once)",
                p.to_string()
            )));
        }
        let Tasks {
            mut set,
            cpus: experiment_cpus,
        } = tasks_of(&a.tasks)?;
        let tasks_file = Path::new(&a.tasks).is_file().then(|| a.tasks.clone());
        match (&tasks_file, a.run_seconds) {
            (Some(file), Some(s)) => {
                return Err(bad_input(format!(
                    "--run-seconds {s}: {file} sets each task's own run_seconds (edit the file)"
                )))
            }
            (None, s) => {
                for t in &mut set.tasks {
                    t.run_seconds = s.unwrap_or(smtsched_os::taskset::DEFAULT_RUN_S);
                }
            }
            (Some(_), None) => {}
        }
        set.validate()
            .map_err(|e| bad_input(format!("--tasks: {e}")))?;
        let files = RunFiles {
            timeline: a.timeline,
            timeline_svg: a.timeline_svg,
            timeline_seconds: a.timeline_seconds,
            trace: a.trace,
            csv: a.csv,
            decisions: a.decisions,
        };
        let mut inputs: Vec<&Path> = tasks_file.iter().map(Path::new).collect();
        if let OracleSpec::Measured(matrix) = &a.oracle {
            inputs.push(matrix);
        }
        files.check(&inputs)?;
        check_decisions_recorded(&files, a.baseline, a.policies[0])?;
        if let (OracleSpec::Measured(path), Some(build)) = (&a.oracle, a.kernel) {
            return Err(bad_input(format!(
                "--kernel {build}: with --oracle measured:{} the matrix's figures are used as \
                 they are; --kernel applies to the simulated oracle",
                path.display()
            )));
        }
        let kernel = a.kernel.unwrap_or_default();
        let oracle = oracle(&a.oracle, &m, &set, a.seed, kernel)?;
        let mut config = SimConfig::new(a.baseline, a.duration, a.seed);
        config.hz = a.hz.unwrap_or(a.baseline.default_hz());
        config.stagger_s = a.stagger;
        config.cpus = a.cpus.or(experiment_cpus);
        let model = a.model.unwrap_or(Estimator::default_spec(&m));
        config.estimator = estimator(&model, Some(&m))?;
        config.estimate_cost_ticks = a.estimate_cost;
        config.record_timeline = files.need_timeline();
        config.record_periods = files.decisions.is_some();
        config.corunners = a.corunners;
        Ok(RunPlan {
            machine: m,
            set,
            tasks_file,
            oracle,
            replicated: matches!(a.oracle, OracleSpec::Simulated) && a.repeat > 1,
            kernel,
            policies: a.policies,
            repeat: a.repeat,
            config,
            files,
            json: a.json,
        })
    }

    fn execute(self) -> Result<()> {
        let started = std::time::Instant::now();
        let results = self.simulate()?;
        let elapsed = started.elapsed().as_secs_f64();
        let title = format!(
            "{} on {}, CPUs {}, {} baseline",
            results[0].policy,
            self.machine.name,
            self.cpus_shown(),
            self.config.baseline
        );
        self.files.write(&results, &self.machine, &title)?;
        if self.json {
            return json_out(&self.json_report(&results));
        }
        out(&self.header(&results, elapsed))?;
        self.tables(&results)
    }
}

/// Fastest timer tick (Linux builds use 100 to 1000 Hz).
const MAX_HZ: f64 = 10_000.0;

/// `--duration`, `--stagger` and `--hz` describe a run that can be simulated in bounded time.
fn check_times(a: &RunArgs) -> Result<()> {
    if a.stagger.is_nan() || a.stagger < 0.0 {
        return Err(bad_input(format!(
            "--stagger {}: must be a number of seconds, 0 or more",
            a.stagger
        )));
    }
    if !(a.duration > a.stagger && a.duration <= MAX_SIMULATED_SECONDS) {
        return Err(bad_input(format!(
            "--duration {}: must be a number of seconds longer than --stagger {} and at most \
             {MAX_SIMULATED_SECONDS:e}",
            a.duration, a.stagger
        )));
    }
    match a.hz {
        Some(hz) if !(1.0..=MAX_HZ).contains(&hz) => Err(bad_input(format!(
            "--hz {hz}: must be 1 to {MAX_HZ} ticks a second"
        ))),
        _ => Ok(()),
    }
}

impl RunPlan {
    /// Every policy's runs, a bar showing the oracle's warm-up and then each run.
    fn simulate(&self) -> Result<Vec<PolicyRuns>> {
        let steps = if self.replicated {
            replicated_steps(self.policies.len(), self.repeat)
        } else {
            simulation_steps(self.policies.len(), self.repeat)
        };
        let bar = counting_bar(steps, "steps")?;
        bar.set_message(format!(
            "warming the oracle ({} workloads)",
            self.set.oracle_workloads().len()
        ));
        let step = || {
            bar.inc();
            bar.set_message("simulating (policies x repetitions)");
        };
        let (m, set) = (&self.machine, &self.set);
        let results = if self.replicated {
            let (policies, cfg) = (&self.policies, &self.config);
            simulate_replicated(m, set, self.kernel, policies, self.repeat, cfg, &step)
        } else {
            let oracle = self.oracle.as_ref();
            simulate_reporting(
                m,
                oracle,
                set,
                &self.policies,
                self.repeat,
                &self.config,
                &step,
            )
        };
        bar.finish_and_clear();
        results.map_err(|e| match &self.tasks_file {
            Some(file) => bad_input(format!("{file}: {e}")),
            None => bad_input(e),
        })
    }

    fn cpus_shown(&self) -> String {
        self.config
            .cpus
            .as_ref()
            .map_or("all".into(), |c| c.to_string())
    }

    fn json_report(&self, results: &[PolicyRuns]) -> serde_json::Value {
        let v: Vec<_> = results
            .iter()
            .map(|p| serde_json::json!({ "policy": p.policy, "runs": p.runs, "summaries": p.runs.iter().map(|r| r.summary()).collect::<Vec<_>>() }))
            .collect();
        serde_json::json!({
            "machine": self.machine.name, "baseline": self.config.baseline.to_string(),
            "oracle": self.oracle.describe(), "results": v,
        })
    }

    fn header(&self, results: &[PolicyRuns], elapsed: f64) -> String {
        let sims = results.len() as f64 * self.repeat as f64;
        let threads = rayon::current_num_threads();
        format!(
            "{} tasks on {} (CPUs {}), {} baseline, {} s simulated x {} repetition(s), oracle {}{}, {}\n{:.1} s in all; {:.2} s per simulation {} ({} on this host)\n\n",
            self.set.tasks.len(),
            self.machine.name,
            self.cpus_shown(),
            self.config.baseline,
            self.config.duration_s,
            self.repeat,
            self.oracle.describe(),
            if self.replicated {
                ", each repetition sampling with its own seed"
            } else {
                ""
            },
            self.config.estimator.describe(),
            elapsed,
            // The simulations ran in parallel, as many at once as there are threads (or fewer).
            results[0].wall_seconds * (threads as f64).min(sims) / sims,
            if self.replicated {
                "with its samples"
            } else {
                "after the oracle's solo samples (a situation a run meets first is sampled in it)"
            },
            threads
        )
    }

    fn tables(&self, results: &[PolicyRuns]) -> Result<()> {
        // Server and load-generator tasks complete requests, not runs: their PRs would be empty
        // columns.
        let plain_tasks = self
            .set
            .tasks
            .iter()
            .any(|t| t.serves.is_none() && t.drives.is_none());
        if plain_tasks {
            out(&policy_table(results))?;
            out("\n")?;
            out(&task_table(results))?;
        }
        if !results[0].runs[0].servers.is_empty() {
            if plain_tasks {
                out("\n")?;
            }
            out(&server_table(results))?;
        }
        Ok(())
    }
}
