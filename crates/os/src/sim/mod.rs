//! The OS scheduling simulator: tasks on logical CPUs, a tick, blocking and forking, one of two
//! baseline schedulers, and an oracle that says how fast each running task progresses in the
//! current situation. Time is simulated cycles; between events every running task progresses at
//! the rate the oracle gives for the situation, so the loop jumps from event to event (ticks,
//! periods, blocks, wake-ups, ends of runs and phases).
//!
//! A policy acts on the present-day baseline through its decisions, read from a view of each
//! period ([`period`]); on the Linux 2.4 baseline a thesis policy acts through its goodness hooks
//! instead ([`linux24`]). The two schedulers own their own modules; this one owns the tasks, the
//! clock and the events common to both.

mod linux24;
mod modern;
mod period;
mod server;

use crate::estimate::LinearModel;
use crate::metrics::{Metrics, RunRecord, Switch};
use crate::oracle::{Occupant, Oracle, ThreadRate};
use crate::policy::{CpuId, Decisions, Policy, TaskId, Weight};
use crate::taskset::{TaskSetSpec, TaskSpec};
use period::PeriodAcc;
use smtsched_model::topology::Topology;
use smtsched_model::{CpuSet, MachineModel};
use smtsched_uarch::rng::{derive_seed, SimRng};
use std::sync::Arc;

pub use linux24::nice_to_ticks;
pub use server::KernelTotals;

/// Which base scheduler the policy steers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// Linux 2.4.19: one runqueue, epochs, goodness(), NICE_TO_TICKS, PROC_CHANGE_PENALTY.
    Linux24,
    /// A present-day Linux: per-CPU runqueues, EEVDF, wake-up onto a fully idle core first,
    /// load balancing, cgroup weights, core scheduling.
    Modern,
}

impl Baseline {
    /// The timer frequency of the kernel modelled: 100 Hz for Linux 2.4 on i386 (the seeds'
    /// HZ), 250 Hz for a present-day distribution kernel (Debian's `CONFIG_HZ=250`).
    pub fn default_hz(self) -> f64 {
        match self {
            Baseline::Linux24 => 100.0,
            Baseline::Modern => 250.0,
        }
    }
}

impl std::fmt::Display for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Baseline::Linux24 => "linux24",
            Baseline::Modern => "modern",
        })
    }
}

impl std::str::FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linux24" | "linux-2.4" => Ok(Baseline::Linux24),
            "modern" => Ok(Baseline::Modern),
            _ => Err(format!(
                "unknown baseline {s:?} (expected linux24 or modern)"
            )),
        }
    }
}

/// How estimates are made.
#[derive(Clone, Debug, PartialEq)]
pub enum Estimator {
    /// A counter-based model (thesis §3.4.1).
    Model(LinearModel),
    /// The oracle's true PR: what a perfect estimator would say.
    Perfect,
    /// A measured PR matrix looked up by each task's workload name (what the agent uses on a
    /// machine without hardware counters).
    Matrix(std::sync::Arc<crate::matrix_estimate::MatrixEstimates>),
}

/// What `--estimator` (and an experiment's `estimator`) names, its form checked as it is parsed;
/// files are read when the estimator is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EstimatorSpec {
    /// The model fitted on the simulated machine (`models/MACHINE.toml`).
    Machine,
    /// The thesis's published Northwood model (Table 3.8).
    Thesis,
    /// The oracle's true PR.
    Perfect,
    /// A measured PR matrix looked up by workload.
    Matrix(std::path::PathBuf),
    /// A counter model file, as `train fit` writes it.
    Model(std::path::PathBuf),
}

impl std::str::FromStr for EstimatorSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "" => {
                return Err("expected machine, thesis, perfect, matrix:FILE or a model file".into())
            }
            "machine" => EstimatorSpec::Machine,
            "thesis" | "thesis-northwood" => EstimatorSpec::Thesis,
            "perfect" => EstimatorSpec::Perfect,
            _ => match s.strip_prefix("matrix:") {
                Some("") => return Err("matrix: names no file (matrix:FILE)".into()),
                Some(file) => EstimatorSpec::Matrix(file.into()),
                None => EstimatorSpec::Model(s.into()),
            },
        })
    }
}

impl std::fmt::Display for EstimatorSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EstimatorSpec::Machine => f.write_str("machine"),
            EstimatorSpec::Thesis => f.write_str("thesis"),
            EstimatorSpec::Perfect => f.write_str("perfect"),
            EstimatorSpec::Matrix(p) => write!(f, "matrix:{}", p.display()),
            EstimatorSpec::Model(p) => write!(f, "{}", p.display()),
        }
    }
}

impl<'de> serde::Deserialize<'de> for EstimatorSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for EstimatorSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Estimator {
    /// The estimator `spec` names, for runs on `machine`. Errors name the file.
    pub fn from_spec(
        spec: &EstimatorSpec,
        machine: Option<&MachineModel>,
    ) -> Result<Estimator, String> {
        Ok(match spec {
            EstimatorSpec::Machine => {
                let fitted = machine.and_then(LinearModel::fitted_for);
                Estimator::Model(fitted.ok_or_else(|| {
                    format!(
                        "machine: no estimator is fitted for {} (shipped for the presets {}, used \
                         without --set): `smtsched train model` fits one, `thesis` is the \
                         published Northwood model",
                        machine.map_or("this command", |m| m.name.as_str()),
                        crate::estimate::FITTED_MODELS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?)
            }
            EstimatorSpec::Thesis => Estimator::Model(LinearModel::thesis_northwood()),
            EstimatorSpec::Perfect => Estimator::Perfect,
            EstimatorSpec::Matrix(file) => Estimator::Matrix(std::sync::Arc::new(
                crate::matrix_estimate::MatrixEstimates::load(file)
                    .map_err(|e| format!("matrix:{e}"))?,
            )),
            EstimatorSpec::Model(file) => Estimator::Model(LinearModel::load(file)?),
        })
    }

    /// The estimator a run on `machine` uses unless told otherwise: the one fitted on its
    /// simulation if one is shipped (as the thesis fitted its model on the machine it
    /// scheduled), else the published Northwood model.
    pub fn default_spec(machine: &MachineModel) -> EstimatorSpec {
        if LinearModel::fitted_for(machine).is_some() {
            EstimatorSpec::Machine
        } else {
            EstimatorSpec::Thesis
        }
    }

    /// What it is, for a report's header.
    pub fn describe(&self) -> String {
        match self {
            Estimator::Model(m) => format!("estimator {}", m.name),
            Estimator::Perfect => "perfect estimates".into(),
            Estimator::Matrix(_) => "estimates from a measured matrix".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub baseline: Baseline,
    /// Timer interrupts per second.
    pub hz: f64,
    /// Simulated seconds in all.
    pub duration_s: f64,
    /// Tasks start at random times within this many seconds; runs count only if they start after
    /// it (the thesis's nominal start of the measurement window).
    pub stagger_s: f64,
    pub seed: u64,
    /// Cost of one performance estimate, as a fraction of a tick (the thesis measured about 2% of
    /// throughput when estimating on every CPU every tick).
    pub estimate_cost_ticks: f64,
    pub estimator: Estimator,
    /// Logical CPUs the OS uses (the thesis's chapter 4 uses one package); `None` = all.
    pub cpus: Option<CpuSet>,
    pub record_timeline: bool,
    /// Keep every period's view and the policy's decisions in the metrics.
    pub record_periods: bool,
    /// What decision views say of co-runners.
    pub corunners: Corunners,
}

/// What the views a policy decides from say of co-runners.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Corunners {
    /// Exactly who ran beside whom, and for how long (only a simulator knows).
    #[default]
    Exact,
    /// Estimated from CPU time and last CPU, as the live agent must
    /// ([`crate::policy::corunners::infer_corunners`]).
    Inferred,
}

impl std::str::FromStr for Corunners {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exact" => Ok(Corunners::Exact),
            "inferred" => Ok(Corunners::Inferred),
            _ => Err(format!("{s:?}: expected exact or inferred")),
        }
    }
}

/// Simulated seconds of an OS run unless given (an hour: long runs complete many times).
pub const DEFAULT_DURATION_S: f64 = 3600.0;
/// Simulated seconds an OS run may last, at most (a run must end in bounded time).
pub const MAX_DURATION_S: f64 = 1e6;

impl SimConfig {
    pub fn new(baseline: Baseline, duration_s: f64, seed: u64) -> Self {
        SimConfig {
            baseline,
            hz: baseline.default_hz(),
            duration_s,
            stagger_s: 10.0,
            seed,
            estimate_cost_ticks: 0.02,
            estimator: Estimator::Model(LinearModel::thesis_northwood()),
            cpus: None,
            record_timeline: false,
            record_periods: false,
            corunners: Corunners::Exact,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Runnable,
    Blocked {
        until: f64,
    },
    /// A family parent waiting for its child.
    WaitingChild,
    Exited,
}

#[derive(Clone, Debug)]
struct Family {
    /// For a parent: children still to run in this run, child length (solo cycles), current child.
    /// A process between the family's parent and a worker has one child per run; a worker none.
    children: u32,
    children_left: u32,
    child_cycles: f64,
    /// Fork levels below this process down to the worker (0 for the worker itself).
    depth: u32,
    child: Option<TaskId>,
    /// For a child: its parent.
    parent: Option<TaskId>,
    /// For a parent on Linux 2.4: the slice its exited child left, taken back when the parent
    /// next runs and reaps it (`release_task()`).
    refund: i64,
}

#[derive(Clone, Debug)]
struct Task {
    /// Index of the benchmark (task-set entry) it belongs to.
    bench: usize,
    name: Arc<str>,
    pid: u32,
    /// The tick it was created in: with the pid, its [`crate::policy::TaskKey`].
    start_tick: u64,
    workload: u32,
    nice: i32,
    mm: u32,
    /// CPUs the task may run on: its own mask within the decided affinity.
    allowed: Vec<bool>,
    /// Its own mask (the task set's `cpus`, or every CPU in use).
    own_allowed: Vec<bool>,
    group: Option<usize>,
    trust: Option<String>,
    state: State,
    running_on: Option<CpuId>,
    last_cpu: Option<CpuId>,
    /// When it last stopped running.
    stopped_at: f64,
    /// Linux 2.4 slice, in 1/256 ticks.
    counter: i64,
    /// Present-day: its load weight (its nice level's, or a decision's).
    weight: Weight,
    /// Present-day: core-scheduling group (`None` = untagged).
    cookie: Option<u32>,
    vruntime: f64,
    deadline: f64,
    /// Present-day: virtual lag when it left its runqueue, when, and how fast negative lag decays
    /// while it is away (its queue's virtual time per cycle then; the kernel's delayed dequeue).
    saved_lag: f64,
    lag_saved_at: f64,
    lag_decay_rate: f64,
    /// Present-day: its load average (PELT) and when it was last folded.
    load_avg: f64,
    load_updated: f64,
    /// Present-day: virtual time until which the running task may not be preempted by a wake-up
    /// (the kernel's RUN_TO_PARITY slice protection).
    protected_until: f64,
    /// Solo cycles left in the current run (a family parent: unused), until the next block, and
    /// in the current phase.
    run_left: f64,
    block_left: f64,
    phase: u16,
    phase_left: f64,
    run_started: f64,
    family: Option<Family>,
    // Statistics.
    ticks_run: u64,
    cpu_cycles: f64,
    switches_in: u64,
    migrations: u64,
    ipc_average: f64,
    pr_estimate: Option<f64>,
    /// What the current period has seen of it.
    acc: PeriodAcc,
    /// A server task's request in progress.
    serving: Option<server::Request>,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    current: Option<TaskId>,
    need_resched: bool,
    /// Cycles of overhead (context switches, refills, estimates) still to pay before the current
    /// task progresses.
    debt: f64,
    idle_since: f64,
    /// Present-day baseline: runnable tasks waiting for this CPU.
    queue: Vec<TaskId>,
    /// Present-day: idle although tasks wait, because core scheduling forbids them beside a
    /// sibling's task.
    forced_idle: bool,
    /// Present-day: load-balancing attempts in a row that moved nothing, and the tick of the
    /// next attempt.
    balance_failed: u32,
    next_balance_tick: u64,
    /// Present-day: the current balancing interval, ms (before the busy factor).
    balance_interval_ms: f64,
    /// Present-day core scheduling: the queue's virtual time when the core last changed groups.
    core_base: f64,
}

const TICK_UNITS: i64 = 256;

/// One simulation of a task set under one policy.
pub struct OsSim<'a> {
    machine: &'a MachineModel,
    oracle: &'a dyn Oracle,
    config: SimConfig,
    policy: Box<dyn Policy>,
    /// Whether the policy steers Linux 2.4 through its hooks (else it acts through decisions).
    hooks: bool,
    specs: Vec<TaskSpec>,
    /// Each group's weight in load-weight units, the summed own weights of its runnable tasks,
    /// and each benchmark's group.
    group_weights: Vec<f64>,
    group_load: Vec<f64>,
    bench_group: Vec<Option<usize>>,
    tasks: Vec<Task>,
    cpus: Vec<Cpu>,
    /// Logical CPUs in use.
    online: Vec<bool>,
    /// The CPUs in use as the policy's view shows them.
    topology: Arc<Topology>,
    /// Per CPU, the other online CPUs of its core, and its package (fixed after `new`).
    siblings_of: Vec<Vec<CpuId>>,
    package_of: Vec<usize>,
    rng: SimRng,
    /// The timing noise of the present-day load balancer (its own stream, so that it never
    /// changes the tasks' random behaviour).
    balance_rng: SimRng,
    now: f64,
    tick_cycles: f64,
    tick: u64,
    next_pid: u32,
    fractional: bool,
    metrics: Metrics,
    rates: Vec<Option<ThreadRate>>,
    rates_valid: bool,
    /// Solo cycles of one run of each benchmark, and its solo elapsed time in seconds.
    run_cycles: Vec<f64>,
    solo_seconds: Vec<f64>,
    phase_cycles: Vec<Vec<f64>>,
    /// Statistics of exited tasks whose slots were reused: (bench, switches in, migrations, cycles).
    exited: Vec<(usize, u64, u64, f64)>,
    /// The decisions in force (present-day), and the period's bookkeeping.
    decisions: Decisions,
    periods: period::Periods,
    /// Whether any task has a core-scheduling group.
    core_sched: bool,
    /// Each benchmark's CPU cycles when the measurement window opened.
    window_cpu: Option<Vec<f64>>,
    rate_memo: std::collections::HashMap<Vec<Option<Occupant>>, Vec<Option<ThreadRate>>>,
    /// Interrupts and requests: the kernel's own work.
    kernel: server::KernelWork,
    /// The Linux 2.4 hooks' view, kept to be refreshed in place (see `take_view`).
    view: crate::policy::SchedView,
}

/// Whether `baseline` can carry out `policy`: linux24 runs the thesis policies through their
/// hooks and has no core scheduling, which a policy acting through core groups needs.
pub fn baseline_carries(policy: &mut dyn Policy, baseline: Baseline) -> Result<(), String> {
    let hooks = baseline == Baseline::Linux24 && policy.linux24().is_some();
    if !hooks && policy.needs().core_groups && baseline == Baseline::Linux24 {
        return Err(format!(
            "policy {} needs core scheduling, which the linux24 baseline does not have",
            policy.name()
        ));
    }
    Ok(())
}

impl<'a> OsSim<'a> {
    /// Prepares `set` (workload `i` of the oracle is the workload of task `i`) on `machine`.
    pub fn new(
        machine: &'a MachineModel,
        oracle: &'a dyn Oracle,
        set: &TaskSetSpec,
        mut policy: Box<dyn Policy>,
        config: SimConfig,
    ) -> Result<Self, String> {
        set.validate()?;
        if !(config.hz.is_finite() && config.hz > 0.0) {
            return Err(format!("hz = {}: must be a positive number", config.hz));
        }
        let n = machine.logical_cpus() as usize;
        let cpus_in_use = config
            .cpus
            .clone()
            .unwrap_or_else(|| (0..n as u32).collect());
        if let Some(bad) = cpus_in_use.iter().find(|&c| c as usize >= n) {
            return Err(format!(
                "cpus {cpus_in_use}: CPU {bad} does not exist on machine {} (CPUs 0-{})",
                machine.name,
                n - 1
            ));
        }
        let online: Vec<bool> = (0..n).map(|c| cpus_in_use.contains(c as u32)).collect();
        if !online.iter().any(|&o| o) {
            return Err("cpus: no CPU to run on".into());
        }
        for (i, t) in set.tasks.iter().enumerate() {
            let Some(list) = &t.cpus else { continue };
            let mask =
                CpuSet::parse(list).map_err(|e| format!("task[{i}].cpus = {list:?}: {e}"))?;
            if let Some(bad) = mask.iter().find(|&c| c as usize >= n) {
                return Err(format!(
                    "task[{i}].cpus = {list:?}: CPU {bad} does not exist on machine {} (CPUs 0-{})",
                    machine.name,
                    n - 1
                ));
            }
            if !mask.iter().any(|c| online[c as usize]) {
                return Err(format!(
                    "task[{i}].cpus = {list:?}: none of these CPUs is in use (cpus {cpus_in_use})"
                ));
            }
        }
        let hooks = config.baseline == Baseline::Linux24 && policy.linux24().is_some();
        let needs = policy.needs();
        // A task the matrix has no row for would be estimated at PR 1 whoever runs beside it.
        if let (Estimator::Matrix(m), true) = (&config.estimator, needs.estimates) {
            if let Some(why) = m.missing(set.tasks.iter().map(|t| t.workload.as_str())) {
                return Err(format!("the estimator's matrix: {why}"));
            }
        }
        baseline_carries(policy.as_mut(), config.baseline)
            .map_err(|e| format!("{e} (use --baseline modern)"))?;
        let topology = Arc::new(Topology::of_machine(machine, Some(&cpus_in_use)));
        let siblings_of = (0..n as u32)
            .map(|cpu| {
                topology
                    .siblings_of(cpu)
                    .iter()
                    .filter(|&c| c != cpu)
                    .map(|c| c as usize)
                    .collect()
            })
            .collect();
        let location = |c: CpuId| machine.cpu_location(c as u32).expect("cpu exists");
        let package_of = (0..n).map(|c| location(c).package as usize).collect();
        let hz_cycles = machine.clock_ghz * 1e9;
        let tick_cycles = hz_cycles / config.hz;
        let phase_cycles: Vec<Vec<f64>> = (0..set.tasks.len())
            .map(|i| oracle.phase_solo_cycles(i as u32))
            .collect();
        let mut run_cycles = Vec::new();
        let mut solo_seconds = Vec::new();
        for t in &set.tasks {
            match &t.fork {
                Some(f) => {
                    run_cycles.push(f.child_seconds * hz_cycles);
                    solo_seconds.push(f.child_seconds * f.children as f64);
                }
                None => {
                    run_cycles.push(t.run_seconds * hz_cycles);
                    let wait_share = t.block.as_ref().map_or(0.0, |b| b.wait_ms / b.run_ms);
                    solo_seconds.push(t.run_seconds * (1.0 + wait_share));
                }
            }
        }
        let fractional = match policy.linux24() {
            Some(h) if hooks => h.fractional_slices(),
            _ => false,
        };
        let period_cycles = policy.period_ns() as f64 * 1e-9 * hz_cycles;
        let kernel = server::KernelWork::new(
            set,
            &online,
            hz_cycles,
            |w| {
                oracle.solo_ipc(Occupant {
                    workload: w,
                    phase: 0,
                })
            },
            |bench| oracle.pass_solo_cycles(bench as u32),
        )?;
        let sim = OsSim {
            machine,
            oracle,
            fractional,
            hooks,
            policy,
            specs: set.tasks.clone(),
            group_weights: set
                .groups
                .iter()
                .map(|g| Weight::of_cgroup_v2(g.weight).0 as f64)
                .collect(),
            group_load: vec![0.0; set.groups.len()],
            bench_group: (0..set.tasks.len()).map(|i| set.group_of(i)).collect(),
            tasks: Vec::new(),
            cpus: (0..n)
                .map(|c| Cpu {
                    next_balance_tick: c as u64,
                    ..Cpu::default()
                })
                .collect(),
            online,
            topology,
            siblings_of,
            package_of,
            rng: SimRng::new(derive_seed(config.seed, "os")),
            balance_rng: SimRng::new(derive_seed(config.seed, "balance")),
            now: 0.0,
            tick_cycles,
            tick: 0,
            next_pid: 1000,
            metrics: Metrics::default(),
            rates: vec![None; n],
            rates_valid: false,
            run_cycles,
            solo_seconds,
            phase_cycles,
            exited: Vec::new(),
            decisions: Decisions::none(),
            periods: period::Periods::new(if hooks { 0.0 } else { period_cycles }),
            core_sched: false,
            window_cpu: None,
            rate_memo: Default::default(),
            kernel,
            view: Default::default(),
            config,
        };
        // Warm the oracle with every situation of up to one task per CPU of a core.
        sim.warm_oracle();
        Ok(sim)
    }

    fn warm_oracle(&self) {
        let n = (self.specs.len() + self.kernel.irq_workloads()) as u32;
        let phases = |w: u32| {
            self.phase_cycles
                .get(w as usize)
                .map_or(1, |p| p.len() as u16)
        };
        let tpc = self.machine.topology.threads_per_core as usize;
        let core0: Vec<usize> = (0..self.cpus.len()).filter(|&c| self.online[c]).collect();
        let first = core0[0];
        let loc = self
            .machine
            .cpu_location(first as u32)
            .expect("online CPU exists");
        let siblings: Vec<usize> = (0..self.cpus.len())
            .filter(|&c| {
                self.online[c]
                    && self
                        .machine
                        .cpu_location(c as u32)
                        .is_some_and(|l| l.core == loc.core)
            })
            .collect();
        let mut situations = Vec::new();
        for a in 0..n {
            for phase_a in 0..phases(a) {
                let mut s = vec![None; self.cpus.len()];
                s[first] = Some(Occupant {
                    workload: a,
                    phase: phase_a,
                });
                situations.push(s.clone());
                if tpc >= 2 && siblings.len() >= 2 {
                    for b in a..n {
                        for phase_b in 0..phases(b) {
                            let mut s2 = s.clone();
                            s2[siblings[1]] = Some(Occupant {
                                workload: b,
                                phase: phase_b,
                            });
                            situations.push(s2);
                        }
                    }
                }
            }
        }
        self.oracle.warm(&situations);
    }

    fn new_task(&mut self, bench: usize, workload_cycles: f64, parent: Option<TaskId>) -> TaskId {
        let block_left = self.next_block(bench);
        let spec = &self.specs[bench];
        let pid = self.next_pid;
        self.next_pid += 1;
        let own_allowed: Vec<bool> = match spec.cpus.as_deref().map(CpuSet::parse) {
            Some(Ok(s)) => (0..self.cpus.len())
                .map(|c| self.online[c] && s.contains(c as u32))
                .collect(),
            _ => self.online.clone(),
        };
        let phase_left = self.phase_cycles[bench][0];
        let task = Task {
            bench,
            name: spec.display_name().into(),
            pid,
            start_tick: self.tick,
            workload: bench as u32,
            nice: spec.nice,
            mm: pid,
            allowed: own_allowed.clone(),
            own_allowed,
            group: self.bench_group[bench],
            trust: spec.trust.clone(),
            state: State::Runnable,
            running_on: None,
            last_cpu: parent.and_then(|p| self.tasks[p].last_cpu),
            stopped_at: self.now,
            counter: nice_to_ticks(spec.nice) * TICK_UNITS,
            weight: Weight::of_nice(spec.nice),
            cookie: None,
            vruntime: 0.0,
            deadline: 0.0,
            saved_lag: 0.0,
            lag_saved_at: 0.0,
            lag_decay_rate: 0.0,
            protected_until: 0.0,
            // A new task starts with its full weight as its load (`init_entity_runnable_average`).
            load_avg: Weight::of_nice(spec.nice).0 as f64,
            load_updated: self.now,
            run_left: workload_cycles,
            block_left,
            phase: 0,
            phase_left,
            run_started: self.now,
            family: None,
            ticks_run: 0,
            cpu_cycles: 0.0,
            switches_in: 0,
            migrations: 0,
            ipc_average: 0.0,
            pr_estimate: None,
            acc: PeriodAcc::default(),
            serving: None,
        };
        // The slot of an exited task (no longer on a CPU) is reused, so a family that forks
        // thousands of children keeps the task table small; its statistics are kept aside.
        match (0..self.tasks.len())
            .find(|&t| self.tasks[t].state == State::Exited && self.tasks[t].running_on.is_none())
        {
            Some(slot) => {
                let old = &self.tasks[slot];
                self.exited
                    .push((old.bench, old.switches_in, old.migrations, old.cpu_cycles));
                self.tasks[slot] = task;
                slot
            }
            None => {
                self.tasks.push(task);
                self.tasks.len() - 1
            }
        }
    }

    /// An exponentially distributed time with mean `mean` cycles.
    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.rng.unit()).ln()
    }

    fn next_block(&mut self, bench: usize) -> f64 {
        match &self.specs[bench].block {
            Some(b) => self.exponential(b.run_ms * 1e-3 * self.machine.clock_ghz * 1e9),
            None => f64::INFINITY,
        }
    }

    fn wait_cycles(&mut self, bench: usize) -> f64 {
        match &self.specs[bench].block {
            Some(b) => self.exponential(b.wait_ms * 1e-3 * self.machine.clock_ghz * 1e9),
            None => 0.0,
        }
    }

    /// Runs the whole simulation.
    pub fn run(mut self) -> Metrics {
        let end = self.config.duration_s * self.machine.clock_ghz * 1e9;
        let window_start = self.config.stagger_s * self.machine.clock_ghz * 1e9;
        // Staggered start: each task wakes at a random time in the first seconds.
        let n = self.specs.len();
        let mut starts: Vec<(f64, usize)> = (0..n)
            .map(|i| (self.rng.unit() * window_start * 0.5, i))
            .collect();
        starts.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Further copies of a task start at their own random times.
        for bench in 0..n {
            for _ in 1..self.specs[bench].copies {
                starts.push((self.rng.unit() * window_start * 0.5, bench));
            }
        }
        for &(start, bench) in &starts {
            let run = self.run_cycles[bench];
            let id = self.new_task(bench, run, None);
            if let Some(f) = &self.specs[bench].fork {
                self.tasks[id].family = Some(Family {
                    children: f.children,
                    children_left: f.children,
                    child_cycles: run,
                    depth: f.depth,
                    child: None,
                    parent: None,
                    refund: 0,
                });
            }
            self.tasks[id].state = State::Blocked { until: start };
        }
        self.start_kernel_work(window_start * 0.5);
        self.metrics.window = (window_start, end);
        self.metrics.tick_cycles = self.tick_cycles;
        self.metrics.clock_hz = self.machine.clock_ghz * 1e9;
        self.metrics.benches = self.specs.iter().map(|s| s.display_name()).collect();
        self.metrics.solo_seconds = self.solo_seconds.clone();
        self.metrics.request_driven = self
            .specs
            .iter()
            .map(|s| s.serves.is_some() || s.drives.is_some())
            .collect();
        self.metrics.nice = self.specs.iter().map(|s| s.nice).collect();
        let mut next_tick = self.tick_cycles;
        let plan_period = match self.policy.linux24() {
            Some(h) if self.hooks => h.plan_period_ticks(),
            _ => 0,
        };
        while self.now < end {
            if !self.rates_valid {
                self.refresh_rates();
            }
            // The next event.
            let mut t_next = next_tick.min(end);
            if let Some(p) = self.periods.next_at() {
                t_next = t_next.min(p);
            }
            for t in &self.tasks {
                if let State::Blocked { until } = t.state {
                    t_next = t_next.min(until.max(self.now));
                }
            }
            if self.kernel.active() {
                let rates = &self.rates;
                t_next = t_next.min(
                    self.kernel
                        .next_event(self.now, |c| rates[c].map_or(0.0, |r| r.pr)),
                );
            }
            for (c, cpu) in self.cpus.iter().enumerate() {
                if !self.kernel.irq[c].is_empty() {
                    continue;
                }
                if let (Some(t), Some(r)) = (cpu.current, self.rates[c]) {
                    let task = &self.tasks[t];
                    let work = task.run_left.min(task.block_left).min(task.phase_left);
                    if r.pr > 0.0 {
                        t_next = t_next.min(self.now + cpu.debt + work / r.pr);
                    }
                }
            }
            // Time always moves: an event closer than the clock can resolve at this magnitude
            // (a 6-hour window is ~5e13 cycles, where one step of an f64 is 1/128 cycle) is
            // taken one step ahead, which completes any work it was waiting for.
            let t_next = if t_next > self.now {
                t_next
            } else {
                self.now.next_up()
            };
            let dt = t_next - self.now;
            self.advance(dt);
            self.now = t_next;
            self.task_events();
            if self.kernel.active() {
                self.kernel_events();
            }
            debug_assert!(self.consistent(), "after task events at {}", self.now);
            self.wake_ups();
            debug_assert!(self.consistent(), "after wake-ups at {}", self.now);
            if self.now >= next_tick - 1e-6 {
                self.tick += 1;
                next_tick += self.tick_cycles;
                self.on_tick();
                debug_assert!(self.consistent(), "after the tick at {}", self.now);
                if plan_period > 0 && self.tick.is_multiple_of(plan_period) {
                    let view = self.take_view();
                    if let Some(h) = self.policy.linux24() {
                        h.plan(&view);
                    }
                    self.put_view(view);
                }
            }
            if self.periods.next_at().is_some_and(|p| self.now >= p - 1e-6) {
                self.end_period();
            }
            for c in 0..self.cpus.len() {
                if self.online[c] && self.cpus[c].need_resched {
                    self.schedule(c);
                }
            }
            debug_assert!(self.consistent(), "inconsistent at {}", self.now);
        }
        let mut stats = std::mem::take(&mut self.exited);
        stats.extend(
            self.tasks
                .iter()
                .map(|t| (t.bench, t.switches_in, t.migrations, t.cpu_cycles)),
        );
        let at_window = self
            .window_cpu
            .take()
            .unwrap_or_else(|| vec![0.0; self.specs.len()]);
        self.metrics.finish(stats, &at_window);
        (self.metrics.servers, self.metrics.kernel) = self.server_stats();
        let bytes: f64 = self.metrics.servers.iter().map(|s| s.bytes).sum();
        if bytes > 0.0 {
            self.metrics.per_byte = Some(self.metrics.window_counts.scaled(1.0 / bytes));
        }
        self.metrics
    }

    /// Each benchmark's CPU cycles at time `t` within the step that starts now (running tasks
    /// gain cycles evenly through it).
    fn cpu_cycles_at(&self, t: f64) -> Vec<f64> {
        let mut out = vec![0.0; self.specs.len()];
        for &(bench, _, _, cycles) in &self.exited {
            out[bench] += cycles;
        }
        for task in &self.tasks {
            out[task.bench] += task.cpu_cycles;
            if task.running_on.is_some() {
                out[task.bench] += (t - self.now).max(0.0);
            }
        }
        out
    }

    fn situation(&self) -> Vec<Option<Occupant>> {
        self.cpus
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let task = c.current.map(|t| Occupant {
                    workload: self.tasks[t].workload,
                    phase: self.tasks[t].phase,
                });
                self.kernel.irq_occupant(i, self.specs.len()).or(task)
            })
            .collect()
    }

    /// The rates of the current situation: from this simulation's own memo (situations recur
    /// thousands of times, and the shared oracle is behind a lock), else from the oracle.
    fn refresh_rates(&mut self) {
        let situation = self.situation();
        self.rates = match self.rate_memo.get(&situation) {
            Some(r) => r.clone(),
            None => {
                let r = self.oracle.rates(&situation);
                self.rate_memo.insert(situation, r.clone());
                r
            }
        };
        self.rates_valid = true;
    }

    fn advance(&mut self, dt: f64) {
        if dt <= 0.0 {
            return;
        }
        if self.window_cpu.is_none() && self.now + dt >= self.metrics.window.0 {
            self.window_cpu = Some(self.cpu_cycles_at(self.metrics.window.0));
        }
        if self.periods.active() {
            self.account_period(dt);
        }
        let in_window = self.now >= self.metrics.window.0;
        for c in 0..self.cpus.len() {
            if self.advance_irq(c, dt, in_window) {
                if in_window {
                    self.count_retired(c, dt);
                }
                continue;
            }
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            if in_window && self.kernel.active() {
                self.account_task_kernel(c, dt);
            }
            let paid = self.cpus[c].debt.min(dt);
            self.cpus[c].debt -= paid;
            let useful = dt - paid;
            if in_window {
                self.count_retired(c, useful);
            }
            let r = self.rates[c].expect("a running task has a rate");
            let work = useful * r.pr;
            let weight = self.effective_weight(t);
            let task = &mut self.tasks[t];
            task.run_left -= work;
            task.block_left -= work;
            task.phase_left -= work;
            task.cpu_cycles += dt;
            if self.config.baseline == Baseline::Modern {
                task.vruntime += dt * 1024.0 / weight;
            }
        }
    }

    /// Counts what CPU `c` retires in `dt` cycles of progress at its current rate.
    fn count_retired(&mut self, c: CpuId, dt: f64) {
        use crate::oracle::CounterEvent as E;
        if let Some(r) = self.rates[c] {
            let w = &mut self.metrics.window_counts;
            w.instructions += dt * r.ipc;
            w.l1i_misses += dt * r.epc[E::L1iMisses];
            w.l1d_misses += dt * r.epc[E::L1dMisses];
            w.llc_misses += dt * r.epc[E::LlcMisses];
            w.branch_mispredicts += dt * r.epc[E::BranchMispredicts];
        }
    }

    /// Ends of runs, blocks and phase changes of running tasks.
    fn task_events(&mut self) {
        const EPS: f64 = 1e-3;
        for c in 0..self.cpus.len() {
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            if !self.kernel.irq[c].is_empty() {
                continue;
            }
            if self.tasks[t].phase_left <= EPS {
                let bench = self.tasks[t].bench;
                let n = self.phase_cycles[bench].len() as u16;
                let task = &mut self.tasks[t];
                task.phase = (task.phase + 1) % n;
                task.phase_left = self.phase_cycles[bench][task.phase as usize];
                self.rates_valid = false;
            }
            if self.tasks[t].run_left <= EPS {
                self.end_of_run(t, c);
                continue;
            }
            if self.tasks[t].block_left <= EPS {
                let bench = self.tasks[t].bench;
                let wait = self.wait_cycles(bench);
                self.tasks[t].block_left = self.next_block(bench);
                self.leave_runnable(
                    t,
                    State::Blocked {
                        until: self.now + wait,
                    },
                );
                self.cpus[c].need_resched = true;
            }
        }
    }

    /// `t` stops being runnable (it blocks, waits for a child or exits).
    fn leave_runnable(&mut self, t: TaskId, state: State) {
        self.sync_load(t);
        if self.tasks[t].state == State::Runnable {
            self.tasks[t].acc.runnable_until(self.now);
            if let Some(g) = self.tasks[t].group {
                self.group_load[g] -= self.tasks[t].weight.0 as f64;
            }
            if self.config.baseline == Baseline::Modern {
                self.dequeue_sleeper(t);
            }
        }
        self.tasks[t].state = state;
    }

    /// `t` becomes runnable and is placed by the baseline.
    fn become_runnable(&mut self, t: TaskId) {
        self.sync_load(t);
        self.tasks[t].state = State::Runnable;
        self.joined_runnable(t);
        self.wake(t);
    }

    /// Bookkeeping of a task that has just become runnable (woken or forked).
    fn joined_runnable(&mut self, t: TaskId) {
        self.tasks[t].acc.runnable_since = Some(self.now);
        if let Some(g) = self.tasks[t].group {
            self.group_load[g] += self.tasks[t].weight.0 as f64;
        }
    }

    fn end_of_run(&mut self, t: TaskId, cpu: CpuId) {
        if self.tasks[t].serving.is_some() {
            return self.end_of_request(t, cpu);
        }
        let family = self.tasks[t].family.clone();
        match family {
            // A child finished: it exits, and its parent wakes to fork the next one.
            Some(Family {
                parent: Some(p), ..
            }) => self.exit_child(t, p, cpu),
            // A plain task completes a run and starts the next.
            _ => {
                let bench = self.tasks[t].bench;
                self.metrics.runs.push(RunRecord {
                    bench,
                    start: self.tasks[t].run_started,
                    end: self.now,
                });
                self.tasks[t].run_started = self.now;
                self.tasks[t].run_left = self.run_cycles[bench];
            }
        }
    }

    fn wake_ups(&mut self) {
        for t in 0..self.tasks.len() {
            if let State::Blocked { until } = self.tasks[t].state {
                if until <= self.now + 1e-6 {
                    self.become_runnable(t);
                }
            }
        }
    }

    /// A family's process that has finished (a worker its work, a process between its one child)
    /// exits on `cpu`; its parent wakes to reap it, and takes back the slice it had left.
    fn exit_child(&mut self, t: TaskId, parent: TaskId, cpu: CpuId) {
        self.leave_runnable(t, State::Exited);
        self.cpus[cpu].need_resched = true;
        let left = self.tasks[t].counter;
        if let Some(pf) = self.tasks[parent].family.as_mut() {
            pf.child = None;
            pf.refund = left;
        }
        self.become_runnable(parent);
    }

    /// Whether `t` is a family's parent, or a process between it and a worker, with no child: it
    /// forks one (or ends its run, or exits) when it runs.
    fn ready_to_fork(&self, t: TaskId) -> bool {
        self.tasks[t].state == State::Runnable
            && self.tasks[t]
                .family
                .as_ref()
                .is_some_and(|f| f.children > 0 && f.child.is_none())
    }

    /// A `make`-like parent, or a process between it and a worker, that has won the CPU: it reaps
    /// its last child and forks the next; the parent completes a run when all have finished, a
    /// process between exits after its one child.
    fn fork_next(&mut self, p: TaskId) {
        let refund = self.tasks[p]
            .family
            .as_mut()
            .map_or(0, |f| std::mem::take(&mut f.refund));
        if self.config.baseline == Baseline::Linux24 {
            // release_task(): reaping the last child, the parent takes back what is left of the
            // slice it gave it, up to MAX_COUNTER.
            let counter = &mut self.tasks[p].counter;
            *counter = (*counter + refund).min(linux24::MAX_COUNTER_TICKS * TICK_UNITS);
        }
        let f = self.tasks[p].family.clone().expect("a family parent");
        if f.children_left == 0 {
            if let Some(parent) = f.parent {
                let cpu = self.tasks[p].running_on.expect("it forks on its CPU");
                return self.exit_child(p, parent, cpu);
            }
            let bench = self.tasks[p].bench;
            self.metrics.runs.push(RunRecord {
                bench,
                start: self.tasks[p].run_started,
                end: self.now,
            });
            self.tasks[p].run_started = self.now;
            if let Some(ff) = self.tasks[p].family.as_mut() {
                ff.children_left = ff.children;
            }
            return self.fork_next(p);
        }
        let bench = self.tasks[p].bench;
        // The child starts on the parent's CPU (do_fork: `p->processor = current->processor`).
        let child = self.new_task(bench, f.child_cycles, Some(p));
        let between = u32::from(f.depth > 1);
        self.tasks[child].family = Some(Family {
            children: between,
            children_left: between,
            child_cycles: f.child_cycles,
            depth: f.depth - 1,
            child: None,
            parent: Some(p),
            refund: 0,
        });
        // Linux 2.4 fork: the parent's remaining slice is split with the child.
        let pc = self.tasks[p].counter;
        self.tasks[child].counter = ((pc / TICK_UNITS + 1) >> 1) * TICK_UNITS;
        self.tasks[p].counter = ((pc / TICK_UNITS) >> 1) * TICK_UNITS;
        self.fork_placement(p, child);
        if let Some(ff) = self.tasks[p].family.as_mut() {
            ff.children_left -= 1;
            ff.child = Some(child);
        }
        self.leave_runnable(p, State::WaitingChild);
        if let Some(c) = self.tasks[p].running_on {
            self.cpus[c].need_resched = true;
        }
        self.metrics.forks += 1;
        self.joined_runnable(child);
        self.wake(child);
    }

    fn on_tick(&mut self) {
        match self.config.baseline {
            Baseline::Linux24 => self.tick_linux24(),
            Baseline::Modern => self.tick_modern(),
        }
    }

    /// Every task runs on at most one CPU, agrees with it, and is queued nowhere while it runs.
    fn consistent(&self) -> bool {
        for (c, cpu) in self.cpus.iter().enumerate() {
            if let Some(t) = cpu.current {
                if self.tasks[t].running_on != Some(c) {
                    eprintln!(
                        "cpu {c} runs {t} whose running_on is {:?}",
                        self.tasks[t].running_on
                    );
                    return false;
                }
            }
            for &t in &cpu.queue {
                if self.tasks[t].running_on.is_some() {
                    eprintln!(
                        "cpu {c} queues {t} running on {:?}",
                        self.tasks[t].running_on
                    );
                    return false;
                }
            }
        }
        true
    }

    /// The online CPUs that run a task, with the task.
    fn running(&self) -> Vec<(CpuId, TaskId)> {
        (0..self.cpus.len())
            .filter(|&c| self.online[c])
            .filter_map(|c| self.cpus[c].current.map(|t| (c, t)))
            .collect()
    }

    /// The per-tick statistics of the task running on `c`: ticks run and rolling IPC.
    fn count_tick(&mut self, c: CpuId, t: TaskId) {
        let r = self.rates[c].expect("running task has a rate");
        let task = &mut self.tasks[t];
        task.ticks_run += 1;
        task.ipc_average = if task.ipc_average == 0.0 {
            r.ipc
        } else {
            0.9 * task.ipc_average + 0.1 * r.ipc
        };
    }

    /// Keeps a PR estimate for the timeline, when it is recorded.
    fn record_estimate(&mut self, pid: u32, pr: f64) {
        if self.config.record_timeline {
            self.metrics
                .estimate_samples
                .push(crate::metrics::EstimateSample {
                    cycle: self.now,
                    pid,
                    pr,
                });
        }
    }

    fn charge_estimate(&mut self, cpu: CpuId, n: u32) {
        self.cpus[cpu].debt += n as f64 * self.config.estimate_cost_ticks * self.tick_cycles;
        self.metrics.estimates += n as u64;
    }

    /// The other online CPUs of `cpu`'s core.
    fn siblings(&self, cpu: CpuId) -> &[CpuId] {
        &self.siblings_of[cpu]
    }

    fn package(&self, cpu: CpuId) -> usize {
        self.package_of[cpu]
    }

    /// `schedule()` on `cpu`.
    fn schedule(&mut self, cpu: CpuId) {
        loop {
            self.cpus[cpu].need_resched = false;
            match self.config.baseline {
                Baseline::Linux24 => {
                    let prev = self.cpus[cpu].current;
                    let next = self.pick_linux24(cpu, prev);
                    if next != prev {
                        self.switch(cpu, prev, next);
                    }
                }
                Baseline::Modern => self.schedule_modern(cpu),
            }
            // A `make` that has won the CPU reaps its child and forks the next one from here
            // (in no time: its own work between children is not modelled), then waits for it.
            match self.cpus[cpu].current {
                Some(t) if self.ready_to_fork(t) => self.fork_next(t),
                _ => return,
            }
        }
    }

    fn switch(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        if self.hooks {
            self.switch_hook(cpu, prev, next);
        }
        if let Some(p) = prev {
            self.tasks[p].running_on = None;
            self.tasks[p].stopped_at = self.now;
        }
        self.cpus[cpu].current = next;
        self.cpus[cpu].debt += self.machine.os.context_switch_cycles as f64;
        match next {
            Some(n) => {
                let last = self.tasks[n].last_cpu;
                let moved_package = last.is_some_and(|l| self.package(l) != self.package(cpu));
                let absent_long = self.now - self.tasks[n].stopped_at >= self.tick_cycles;
                if let Some(l) = last {
                    if l != cpu {
                        self.tasks[n].migrations += 1;
                        self.metrics.migrations += 1;
                    }
                }
                let task = &mut self.tasks[n];
                // Caches refill after a move to another package or a long absence.
                if moved_package || (absent_long && task.last_cpu.is_some()) {
                    let w = task.workload;
                    self.cpus[cpu].debt += self.oracle.refill_cycles(w);
                }
                let task = &mut self.tasks[n];
                task.running_on = Some(cpu);
                task.last_cpu = Some(cpu);
                task.switches_in += 1;
            }
            None => self.cpus[cpu].idle_since = self.now,
        }
        self.metrics.context_switches += 1;
        if self.config.record_timeline {
            self.metrics.timeline.push(Switch {
                cycle: self.now,
                cpu,
                from: prev.map(|p| self.tasks[p].pid),
                to: next.map(|n| self.tasks[n].pid),
                to_name: next.map(|n| self.tasks[n].name.to_string()),
            });
        }
        self.rates_valid = false;
    }

    /// A task became runnable: place it (present-day) or look for a CPU to preempt (2.4).
    fn wake(&mut self, t: TaskId) {
        match self.config.baseline {
            Baseline::Linux24 => self.wake_linux24(t),
            Baseline::Modern => self.wake_modern(t),
        }
    }

    /// The estimated PR of the task on `cpu` in the current situation (the 2.4 hooks' per-tick
    /// and per-switch estimates).
    fn estimate(&mut self, cpu: CpuId) -> f64 {
        if !self.rates_valid {
            self.refresh_rates();
        }
        let me = self.rates[cpu].expect("estimating a running task");
        match &self.config.estimator {
            Estimator::Perfect => me.pr,
            Estimator::Matrix(m) => {
                let own = self.workload_name(self.cpus[cpu].current.expect("running"));
                let back = self
                    .siblings(cpu)
                    .iter()
                    .find_map(|&s| self.cpus[s].current)
                    .map(|u| self.workload_name(u));
                back.and_then(|b| m.pair(own, b)).unwrap_or(1.0)
            }
            Estimator::Model(m) => {
                let back = self
                    .siblings(cpu)
                    .iter()
                    .find_map(|&s| self.rates[s])
                    .map(|r| r.epc)
                    .unwrap_or_default();
                m.estimate(&me.epc, &back)
            }
        }
    }

    /// The workload a task runs (its task-set entry's `workload`): the label of a measured PR
    /// matrix.
    fn workload_name(&self, t: TaskId) -> &str {
        &self.specs[self.tasks[t].bench].workload
    }

    /// A task's weight as the present-day scheduler uses it: its own, or within its group its
    /// share of the group's weight (hierarchical fair sharing flattened onto tasks).
    fn effective_weight(&self, t: TaskId) -> f64 {
        let task = &self.tasks[t];
        let own = task.weight.0 as f64;
        match task.group {
            Some(g) => self.group_weights[g] * own / self.group_load[g].max(own),
            None => own,
        }
    }
}
