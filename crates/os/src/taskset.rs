//! Task sets: which programs run, how they behave (loop forever, block, fork), their priorities —
//! as data (TOML), like machines and workloads.

use serde::{Deserialize, Serialize};
use smtsched_model::CpuSet;

/// A set of tasks to schedule, as `experiments/*.toml` and `smtsched run --tasks FILE` give it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskSetSpec {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "task")]
    pub tasks: Vec<TaskSpec>,
    /// CPU-controller groups (cgroups) that tasks may belong to.
    #[serde(default, rename = "group", skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSpec>,
}

/// A cgroup with a CPU weight: its tasks share the group's weight among themselves (hierarchical
/// fair sharing, as the kernel's `cpu` controller does).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub name: String,
    /// cgroup v2 `cpu.weight`, 1-10000 (100 = a nice-0 task's weight; on cgroup v1 it becomes
    /// `cpu.shares` = weight × 1024 / 100).
    #[serde(default = "default_group_weight")]
    pub weight: u32,
}

fn default_group_weight() -> u32 {
    100
}

/// One program of the set. It runs in an endless loop; each completed run is recorded.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Display name (defaults to the workload name).
    #[serde(default)]
    pub name: String,
    /// Workload preset or file that each run of the task executes.
    pub workload: String,
    /// Static priority.
    #[serde(default)]
    pub nice: i32,
    /// Length of one run, in seconds when running alone on the machine.
    #[serde(default = "default_run_seconds")]
    pub run_seconds: f64,
    /// Computing and waiting: the task blocks after about `run_ms` of its own CPU time (alone)
    /// for about `wait_ms` (both exponentially distributed around these means).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockSpec>,
    /// The task is a family: a parent that forks short-lived children, each running the workload
    /// for `child_seconds` (alone), one after another, `children` per run (a `make`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkSpec>,
    /// Logical CPUs the task may run on (kernel list syntax); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// The `[[group]]` (cgroup) it belongs to; none = the root group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Trust domain for core scheduling (`core-sched`): tasks with another label, or none, never
    /// share its core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    /// What the live agent launches for this task (`smtsched agent run --tasks FILE`), labelled
    /// by `workload`; the simulator runs the workload model instead. When absent and `workload`
    /// names a built-in kernel (`smtsched host kernels`), the agent runs that kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

fn default_run_seconds() -> f64 {
    60.0
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BlockSpec {
    pub run_ms: f64,
    pub wait_ms: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForkSpec {
    pub children: u32,
    pub child_seconds: f64,
}

impl TaskSetSpec {
    /// The index of each task's group in `groups`.
    pub fn group_of(&self, task: usize) -> Option<usize> {
        let name = self.tasks[task].group.as_ref()?;
        self.groups.iter().position(|g| &g.name == name)
    }
}

impl TaskSpec {
    /// A task running `workload` in a loop at nice 0, with every other field at its default.
    pub fn new(workload: &str) -> TaskSpec {
        TaskSpec {
            name: String::new(),
            workload: workload.into(),
            nice: 0,
            run_seconds: default_run_seconds(),
            block: None,
            fork: None,
            cpus: None,
            group: None,
            trust: None,
            command: None,
        }
    }

    pub fn display_name(&self) -> String {
        if self.name.is_empty() {
            self.workload.clone()
        } else {
            self.name.clone()
        }
    }
}

impl TaskSetSpec {
    /// Checks the values serde cannot; errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.tasks.is_empty() {
            return Err("task = []: the task set is empty".into());
        }
        for (i, g) in self.groups.iter().enumerate() {
            if !(1..=10_000).contains(&g.weight) {
                return Err(format!(
                    "group[{i}].weight = {}: a cgroup cpu.weight is 1 to 10000",
                    g.weight
                ));
            }
            if g.name.is_empty() || self.groups[..i].iter().any(|h| h.name == g.name) {
                return Err(format!(
                    "group[{i}].name = {:?}: group names must be non-empty and distinct",
                    g.name
                ));
            }
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if let Some(c) = &t.cpus {
                if let Err(e) = CpuSet::parse(c) {
                    return Err(format!("task[{i}].cpus = {c:?}: {e}"));
                }
                if c.trim().is_empty() {
                    return Err(format!("task[{i}].cpus = {c:?}: names no CPU"));
                }
            }
            if let Some(g) = &t.group {
                if !self.groups.iter().any(|h| &h.name == g) {
                    return Err(format!(
                        "task[{i}].group = {g:?}: no [[group]] has that name"
                    ));
                }
            }
            let f = |k: &str| format!("task[{i}].{k}");
            if !(-20..=19).contains(&t.nice) {
                return Err(format!(
                    "{} = {}: nice must be -20 to 19",
                    f("nice"),
                    t.nice
                ));
            }
            if !(t.run_seconds > 0.0 && t.run_seconds.is_finite()) {
                return Err(format!(
                    "{} = {}: must be positive",
                    f("run_seconds"),
                    t.run_seconds
                ));
            }
            if let Some(b) = &t.block {
                if !(b.run_ms > 0.0
                    && b.wait_ms >= 0.0
                    && b.run_ms.is_finite()
                    && b.wait_ms.is_finite())
                {
                    return Err(format!(
                        "{}: run_ms must be positive and wait_ms non-negative",
                        f("block")
                    ));
                }
            }
            if let Some(k) = &t.fork {
                if k.children == 0 || k.child_seconds.is_nan() || k.child_seconds <= 0.0 {
                    return Err(format!(
                        "{}: children and child_seconds must be positive",
                        f("fork")
                    ));
                }
            }
        }
        Ok(())
    }

    /// A set of plain looping tasks, one per workload name.
    pub fn of_workloads(names: &[String]) -> TaskSetSpec {
        TaskSetSpec {
            name: names.join("+"),
            tasks: names.iter().map(|w| TaskSpec::new(w)).collect(),
            groups: Vec::new(),
        }
    }
}

/// Reads a task set from a TOML file; errors say file, line and field.
pub fn load_taskset(path: &str) -> Result<TaskSetSpec, smtsched_model::ModelError> {
    let src = smtsched_model::loader::resolve("task set", path, &[])?;
    let set: TaskSetSpec = smtsched_model::loader::parse(&src, &[])?;
    set.validate()
        .map_err(|reason| smtsched_model::ModelError::Override {
            text: src.origin.to_string(),
            reason,
        })?;
    Ok(set)
}
