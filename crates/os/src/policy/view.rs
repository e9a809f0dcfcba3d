//! What a policy reads at the end of each period: a view that the OS simulator and a live machine
//! fill alike. Nothing in it is simulator-only — times are nanoseconds, tasks are keyed by an
//! identity a real kernel gives (pid and start time), the topology is the one type both sides
//! build, counter rates use the one event vocabulary, and a view serialises to JSON and back
//! unchanged (so recorded views can be played back to a policy).

use serde::{Deserialize, Serialize};
use smtsched_model::events::Epc;
use smtsched_model::topology::Topology;
use smtsched_model::CpuSet;
use std::sync::Arc;

/// A task's identity that survives PID reuse: its pid and its start time (on Linux, field 22 of
/// `/proc/PID/stat`, clock ticks since boot; in the simulator, the tick it was created in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskKey {
    pub pid: u32,
    pub start_time: u64,
}

impl std::fmt::Display for TaskKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.pid, self.start_time)
    }
}

/// Time another task ran on a sibling of this task's core while this task ran.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Corunner {
    pub task: TaskKey,
    pub overlap_ns: u64,
}

/// One task over one period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSample {
    pub key: TaskKey,
    /// What the task runs (a workload or program name): the key of a measured PR matrix, and
    /// what cache-aware policies look their inputs up by.
    pub label: String,
    /// Trust domain for core scheduling (`None` = trusted, may share a core with any trusted
    /// task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    pub nice: i32,
    /// Runnable (or running) at the end of the period.
    pub runnable: bool,
    /// CPU time in the period.
    pub cpu_ns: u64,
    /// Time it was runnable but waited for a CPU in the period (the kernel's run delay).
    pub wait_ns: u64,
    /// CPU time since the task started.
    pub total_cpu_ns: u64,
    /// Logical CPUs it ran on in the period.
    pub cpus: CpuSet,
    /// The CPU it ran on last (also before this period).
    pub last_cpu: Option<u32>,
    /// Tasks that ran on a sibling while it ran, longest overlap first.
    pub corunners: Vec<Corunner>,
    /// Events per cycle over its running time in the period, where counters are available.
    pub counters: Option<Epc>,
    /// Its performance-ratio estimate for the period from the configured estimator, if any.
    pub pr_estimate: Option<f64>,
}

impl TaskSample {
    /// A runnable task labelled `label` that ran `cpu_ns` in the period, with nothing else
    /// known yet (no CPUs, co-runners, counters or estimate).
    pub fn ran(key: TaskKey, label: &str, cpu_ns: u64) -> TaskSample {
        TaskSample {
            key,
            label: label.to_string(),
            trust: None,
            nice: 0,
            runnable: true,
            cpu_ns,
            wait_ns: 0,
            total_cpu_ns: cpu_ns,
            cpus: CpuSet::default(),
            last_cpu: None,
            corunners: Vec::new(),
            counters: None,
            pr_estimate: None,
        }
    }

    /// The co-runner it shared its core with for more than half of its CPU time, if one did.
    pub fn main_corunner(&self) -> Option<TaskKey> {
        self.corunners
            .first()
            .filter(|c| 2 * c.overlap_ns > self.cpu_ns)
            .map(|c| c.task)
    }

    /// Instructions per cycle over the period, where counters are available.
    pub fn ipc(&self) -> Option<f64> {
        self.counters
            .map(|c| c[smtsched_model::events::CounterEvent::Instructions])
    }
}

/// Everything a policy decides from at the end of a period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodView {
    /// Periods since the start (the first view has index 1).
    pub index: u64,
    /// Time at the end of the period since the start, nanoseconds.
    pub now_ns: u64,
    pub length_ns: u64,
    /// The logical CPUs in use and how they group into cores, packages and cache domains.
    pub topology: Arc<Topology>,
    /// Every task known at the end of the period, by key.
    pub tasks: Vec<TaskSample>,
}

impl PeriodView {
    pub fn task(&self, key: TaskKey) -> Option<&TaskSample> {
        self.tasks
            .binary_search_by_key(&key, |t| t.key)
            .ok()
            .map(|i| &self.tasks[i])
    }

    /// Tasks runnable at the end of the period, in key order.
    pub fn runnable(&self) -> impl Iterator<Item = &TaskSample> {
        self.tasks.iter().filter(|t| t.runnable)
    }

    /// The cores in use, as CPU sets, in order of their first CPU.
    pub fn cores(&self) -> Vec<CpuSet> {
        self.topology.cores.iter().map(|c| c.cpus.clone()).collect()
    }

    /// Logical CPUs in use.
    pub fn contexts(&self) -> usize {
        self.topology.online.len()
    }
}
