//! Task sets: which programs run, how they behave (loop forever, block, fork), their priorities —
//! as data (TOML), like machines and workloads.

use serde::{Deserialize, Serialize};
use smtsched_model::{load_workload, CpuSet, ModelError, Origin, WorkloadProfile};

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
    /// Devices that raise interrupts (a network card).
    #[serde(default, rename = "device", skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceSpec>,
    /// Clients that send requests to the tasks that `serve` them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientsSpec>,
    /// Workload profiles of the set's own (a workload file's fields), found by name before the
    /// presets and files: a measured server's profile travels in one file with its set.
    #[serde(default, rename = "profile", skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<WorkloadProfile>,
}

/// A device whose interrupts (the handler and its softirq) run as kernel work on the CPU its IRQ
/// affinity names, preempting the task there or waking the CPU from its idle halt.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    pub name: String,
    /// The handler's work: a workload (normally all kernel work, `kernel.share = 1`).
    pub workload: String,
    /// Instructions of one interrupt, handler and softirq together.
    pub instructions_per_interrupt: u64,
    /// IRQ affinity (`/proc/irq/N/smp_affinity_list`): the interrupt goes to the first CPU of
    /// the list that is in use.
    pub irq_cpus: String,
    /// Interrupts per second of a steady stream (a bulk TCP receive), besides those requests
    /// raise; 0 = none.
    #[serde(default)]
    pub rate_per_s: f64,
    /// The wire's rate, Mb/s: each part of a response leaves on it after the server's pass that
    /// produced it, one after another (a shared link, first come first served); `None`: the
    /// wire is never the bottleneck. A server's socket buffer holds two parts of a response
    /// (Linux 2.4's largest send buffer, 128 KiB, holds two 64 KiB writes): it writes the next
    /// part once the part before the one just written has left the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_mbit_per_s: Option<f64>,
    /// Which CPU of `irq_cpus` takes an interrupt.
    #[serde(default)]
    pub steering: Steering,
}

/// How a device's interrupts are spread over the CPUs of its IRQ affinity that are in use.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Steering {
    /// All to the first (an IRQ's delivery to the lowest CPU of its mask).
    #[default]
    First,
    /// Each connection's to one CPU, connections spread evenly (RSS, or RPS's flow hash; an
    /// open loop's requests, which have no connection, go to the first).
    Flow,
}

/// How an open loop's requests are spaced: Poisson arrivals, or one every 1/rate seconds
/// (httperf's `--rate`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Arrivals {
    #[default]
    Poisson,
    Fixed,
}

/// Clients of a server: closed loop (`connections`, each waiting for its response and thinking
/// before the next request) or open loop (`rate_per_s`, Poisson arrivals).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientsSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Spacing of an open loop's requests.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// Mean think time between a response and the connection's next request (exponential).
    #[serde(default)]
    pub think_ms: f64,
    /// Bytes of one response (for Mb/s and per-byte rates).
    pub response_bytes: u64,
    /// The device whose interrupts carry the requests and responses.
    pub device: String,
    /// Interrupts a request costs on the receive side before the server sees it, and on the
    /// transmit side after its response (fractions: interrupt coalescing shares one interrupt
    /// among several requests).
    pub rx_interrupts_per_request: f64,
    pub tx_interrupts_per_request: f64,
    /// Passes over the server workload's phases one response takes: each pass produces an
    /// equal part of the response (a large file sent a buffer at a time); the first part's
    /// departure is the response's first byte. Transmit-side interrupts are shared among the
    /// parts.
    #[serde(default = "one_pass")]
    pub passes_per_request: u32,
}

fn one_pass() -> u32 {
    1
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
    /// for `child_seconds` (alone), one after another, `children` per run (a `make`), through
    /// `depth` levels of processes.
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
    /// The `[[clients]]` whose requests this task serves: it waits for a request, runs one pass
    /// over its workload's phases per request, and waits again (`run_seconds` is unused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<String>,
    /// The `[[clients]]` whose requests this task issues (a load generator on the same machine):
    /// each request costs one pass over its workload's phases before it is sent, so the client's
    /// own CPU work competes with the server's for the CPUs (`run_seconds` is unused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drives: Option<String>,
    /// Copies of this task (a server's worker processes or threads).
    #[serde(default = "default_copies")]
    pub copies: u32,
}

fn default_copies() -> u32 {
    1
}

/// Length of one run of each task of a workload list, in seconds alone, unless given.
pub const DEFAULT_RUN_S: f64 = 60.0;
/// Shortest and longest run, burst or child a task may declare, seconds.
pub const MIN_RUN_S: f64 = 1e-3;
pub const MAX_RUN_S: f64 = 1e6;
/// Most children a fork family may have.
pub const MAX_CHILDREN: u32 = 1_000_000;
/// Most tasks (copies included) a set may run.
pub const MAX_TASKS: u32 = 4096;

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
    /// Fork levels from the parent to the process that runs the workload: 1 = the parent's own
    /// children; 3 = make → sh → gcc → cc1 (Kbuild runs each compile through a shell, and the
    /// gcc driver forks the compiler proper). The processes between fork their one child as
    /// soon as they run and exit once they have reaped it; their own work is not modelled.
    #[serde(default = "one_level")]
    pub depth: u32,
}

fn one_level() -> u32 {
    1
}

/// Most fork levels a family may have.
pub const MAX_FORK_DEPTH: u32 = 16;

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
            serves: None,
            drives: None,
            copies: 1,
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
        let total: u64 = self.tasks.iter().map(|t| u64::from(t.copies)).sum();
        if total > u64::from(MAX_TASKS) {
            return Err(format!(
                "task: {} tasks with their copies: at most {MAX_TASKS}",
                total
            ));
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
            // Bounds keep every loop bounded by the work asked for: a run or burst shorter
            // than a scheduler tick's hundredth would be thousands of events per tick.
            if !(MIN_RUN_S..=MAX_RUN_S).contains(&t.run_seconds) {
                return Err(format!(
                    "{} = {:?}: must be {MIN_RUN_S} to {MAX_RUN_S} seconds",
                    f("run_seconds"),
                    t.run_seconds
                ));
            }
            if let Some(b) = &t.block {
                let ms = MIN_RUN_S * 1e3..=MAX_RUN_S * 1e3;
                if !(ms.contains(&b.run_ms) && (b.wait_ms == 0.0 || ms.contains(&b.wait_ms))) {
                    return Err(format!(
                        "{}: run_ms = {:?}, wait_ms = {:?}: run_ms must be {} to {} ms, wait_ms 0 \
                         or in the same range",
                        f("block"),
                        b.run_ms,
                        b.wait_ms,
                        MIN_RUN_S * 1e3,
                        MAX_RUN_S * 1e3
                    ));
                }
            }
            if let Some(k) = &t.fork {
                if !(1..=MAX_FORK_DEPTH).contains(&k.depth) {
                    return Err(format!(
                        "{}.depth = {}: must be 1 to {MAX_FORK_DEPTH}",
                        f("fork"),
                        k.depth
                    ));
                }
                if !(1..=MAX_CHILDREN).contains(&k.children)
                    || !(MIN_RUN_S..=MAX_RUN_S).contains(&k.child_seconds)
                {
                    return Err(format!(
                        "{}: children = {}, child_seconds = {:?}: children must be 1 to \
                         {MAX_CHILDREN} and child_seconds {MIN_RUN_S} to {MAX_RUN_S}",
                        f("fork"),
                        k.children,
                        k.child_seconds
                    ));
                }
            }
            if !(1..=4096).contains(&t.copies) {
                return Err(format!("{} = {}: must be 1 to 4096", f("copies"), t.copies));
            }
            for (key, c) in [("serves", &t.serves), ("drives", &t.drives)] {
                let Some(c) = c else { continue };
                if !self.clients.iter().any(|k| &k.name == c) {
                    return Err(format!("{} = {c:?}: no [[clients]] has that name", f(key)));
                }
                if t.block.is_some() || t.fork.is_some() {
                    return Err(format!(
                        "{}: the task waits for requests; it cannot also block or fork",
                        f(key)
                    ));
                }
            }
            if t.serves.is_some() && t.drives.is_some() {
                return Err(format!(
                    "{}: a task either serves clients or drives them, not both",
                    f("drives")
                ));
            }
        }
        self.validate_devices()?;
        self.validate_profiles()?;
        self.validate_clients()
    }

    fn validate_devices(&self) -> Result<(), String> {
        for (i, d) in self.devices.iter().enumerate() {
            let f = |k: &str| format!("device[{i}].{k}");
            if d.name.is_empty() || self.devices[..i].iter().any(|e| e.name == d.name) {
                return Err(format!(
                    "{} = {:?}: device names must be non-empty and distinct",
                    f("name"),
                    d.name
                ));
            }
            if d.instructions_per_interrupt == 0 {
                return Err(format!(
                    "{} = 0: must be positive",
                    f("instructions_per_interrupt")
                ));
            }
            match CpuSet::parse(&d.irq_cpus) {
                Ok(s) if !s.is_empty() => {}
                Ok(_) => {
                    return Err(format!(
                        "{} = {:?}: names no CPU",
                        f("irq_cpus"),
                        d.irq_cpus
                    ))
                }
                Err(e) => return Err(format!("{} = {:?}: {e}", f("irq_cpus"), d.irq_cpus)),
            }
            if let Some(r) = d.link_mbit_per_s {
                if !(r > 0.0 && r <= 10_000_000.0) {
                    return Err(format!(
                        "{} = {r}: must be a positive rate up to 10000000 Mb/s",
                        f("link_mbit_per_s")
                    ));
                }
            }
            if !(d.rate_per_s >= 0.0 && d.rate_per_s <= 10_000_000.0) {
                return Err(format!(
                    "{} = {}: must be 0 to 10000000 interrupts per second",
                    f("rate_per_s"),
                    d.rate_per_s
                ));
            }
        }
        Ok(())
    }

    fn validate_clients(&self) -> Result<(), String> {
        for (i, c) in self.clients.iter().enumerate() {
            let f = |k: &str| format!("clients[{i}].{k}");
            if c.name.is_empty() || self.clients[..i].iter().any(|e| e.name == c.name) {
                return Err(format!(
                    "{} = {:?}: client names must be non-empty and distinct",
                    f("name"),
                    c.name
                ));
            }
            match (c.connections, c.rate_per_s) {
                (Some(n), None) if (1..=100_000).contains(&n) => {}
                (Some(n), None) => {
                    return Err(format!("{} = {n}: must be 1 to 100000", f("connections")))
                }
                (None, Some(r)) if r > 0.0 && r <= 10_000_000.0 => {}
                (None, Some(r)) => {
                    return Err(format!(
                        "{} = {r}: must be a positive rate up to 10000000 per second",
                        f("rate_per_s")
                    ))
                }
                _ => {
                    return Err(format!(
                        "{}: give either connections (closed loop) or rate_per_s (open loop)",
                        f("connections")
                    ))
                }
            }
            if !(c.think_ms >= 0.0 && c.think_ms.is_finite()) {
                return Err(format!(
                    "{} = {}: must be non-negative",
                    f("think_ms"),
                    c.think_ms
                ));
            }
            if !(1..=1_000_000).contains(&c.passes_per_request) {
                return Err(format!(
                    "{} = {}: must be 1 to 1000000",
                    f("passes_per_request"),
                    c.passes_per_request
                ));
            }
            if c.connections.is_some() && c.arrivals != Arrivals::Poisson {
                return Err(format!(
                    "{}: spacing applies to an open loop (rate_per_s), not to connections",
                    f("arrivals")
                ));
            }
            if c.response_bytes == 0 {
                return Err(format!("{} = 0: must be positive", f("response_bytes")));
            }
            if !self.devices.iter().any(|d| d.name == c.device) {
                return Err(format!(
                    "{} = {:?}: no [[device]] has that name",
                    f("device"),
                    c.device
                ));
            }
            for (k, v) in [
                ("rx_interrupts_per_request", c.rx_interrupts_per_request),
                ("tx_interrupts_per_request", c.tx_interrupts_per_request),
            ] {
                if !(0.0..=1000.0).contains(&v) {
                    return Err(format!("{} = {v}: must be 0 to 1000", f(k)));
                }
            }
            if !self
                .tasks
                .iter()
                .any(|t| t.serves.as_deref() == Some(c.name.as_str()))
            {
                return Err(format!(
                    "{} = {:?}: no task serves these clients",
                    f("name"),
                    c.name
                ));
            }
        }
        Ok(())
    }

    /// The profile of workload `name`: the set's own `[[profile]]` of that name, else a preset
    /// or file.
    pub fn workload_profile(&self, name: &str) -> Result<WorkloadProfile, ModelError> {
        match self.profiles.iter().find(|p| p.name == name) {
            Some(p) => Ok(p.clone()),
            None => load_workload(name, &[]),
        }
    }

    /// The profiles of [`Self::oracle_workloads`], in its order.
    pub fn oracle_profiles(&self) -> Result<Vec<WorkloadProfile>, ModelError> {
        self.oracle_workloads()
            .iter()
            .map(|w| self.workload_profile(w))
            .collect()
    }

    fn validate_profiles(&self) -> Result<(), String> {
        for (i, p) in self.profiles.iter().enumerate() {
            if self.profiles[..i].iter().any(|q| q.name == p.name) {
                return Err(format!(
                    "profile[{i}].name = {:?}: profile names must be distinct",
                    p.name
                ));
            }
            p.validate(&Origin::Inline(format!("profile[{i}] ({})", p.name)))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The workloads of the oracle a simulation of this set uses: every task's, then every
    /// device's handler.
    pub fn oracle_workloads(&self) -> Vec<String> {
        let tasks = self.tasks.iter().map(|t| t.workload.clone());
        tasks
            .chain(self.devices.iter().map(|d| d.workload.clone()))
            .collect()
    }

    /// A set of plain looping tasks, one per workload name.
    pub fn of_workloads(names: &[String]) -> TaskSetSpec {
        TaskSetSpec {
            name: names.join("+"),
            tasks: names.iter().map(|w| TaskSpec::new(w)).collect(),
            groups: Vec::new(),
            devices: Vec::new(),
            clients: Vec::new(),
            profiles: Vec::new(),
        }
    }
}

/// Reads a task set from a TOML file; errors say file, line and field.
pub fn load_taskset(path: &str) -> Result<TaskSetSpec, smtsched_model::ModelError> {
    taskset_from_source(&smtsched_model::loader::resolve("task set", path, &[])?)
}

/// A task set from its text, checked (what `load_taskset` does once it has read the file).
pub fn taskset_from_source(
    src: &smtsched_model::Source,
) -> Result<TaskSetSpec, smtsched_model::ModelError> {
    let set: TaskSetSpec = smtsched_model::loader::parse(src, &[])?;
    set.validate()
        .map_err(|reason| smtsched_model::ModelError::Rule {
            origin: src.origin.clone(),
            reason,
        })?;
    Ok(set)
}
