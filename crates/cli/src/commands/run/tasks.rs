//! What `run --tasks` and `--oracle` name: the task set (a file, an experiment's tasks, or a
//! workload list) and the oracle that knows how its workloads slow each other.

use crate::errors::bad_input;
use anyhow::Result;
use smtsched_model::{expand_workload_list, CpuSet, KernelBuild, MachineModel, PrMatrix};
use smtsched_os::oracle::{MeasuredOracle, Oracle, OracleSpec, SimulatedOracle};
use smtsched_os::taskset::{load_taskset, TaskSetSpec};
use std::path::Path;

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
                "--tasks {text}: an experiment of kind {} has no task set (kind \"policies\" has)",
                e.kind.quoted()
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

/// The oracle a run uses, for the workloads of `set` (oracle workload `i` = task `i`, then the
/// devices' handlers). A simulated oracle samples lazily, during the run.
pub fn oracle(
    spec: &OracleSpec,
    m: &MachineModel,
    set: &TaskSetSpec,
    seed: u64,
    build: KernelBuild,
) -> Result<Box<dyn Oracle>> {
    let OracleSpec::Measured(path) = spec else {
        return Ok(Box::new(SimulatedOracle::for_set(m, set, seed, build)?));
    };
    let file = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| bad_input(format!("--oracle {file}: {e}")))?;
    let matrix: PrMatrix = serde_json::from_str(&text)
        .map_err(|e| bad_input(format!("--oracle {file}: not a PR matrix file: {e}")))?;
    // A matrix names profiles; a workload given as a file is known by its profile's name.
    let names: Vec<String> = set
        .oracle_workloads()
        .iter()
        .map(|w| set.workload_profile(w).map_or(w.clone(), |p| p.name))
        .collect();
    let oracle = MeasuredOracle::new(m.clone(), matrix, &names)
        .map_err(|e| bad_input(format!("--oracle {file}: {e}")))?;
    Ok(Box::new(oracle))
}
