//! The policy interface and the policies (one file each). The interface is shaped after
//! sched_ext's operations — select_cpu, dispatch, running/stopping, tick, a periodic planning hook —
//! plus the goodness adjustment through which the thesis's policies steer the Linux 2.4 baseline.
//! A policy sees only a [`SchedView`]: topology, task statistics, counter-based estimates and the
//! tick; no clock, no global random numbers.

pub mod balance_set;
mod basic;
pub mod di;
mod fair;
mod gang;
mod ipc;
mod optimal;
mod plan;
mod sos;
mod tryhard;

use serde::{Deserialize, Serialize};

pub type TaskId = usize;
pub type CpuId = usize;

/// When a policy needs performance estimates (each one costs CPU time, thesis §4.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimates {
    Never,
    /// For both siblings at every context switch on a package.
    PerSwitch,
    /// For every logical CPU at every tick.
    PerTick,
}

/// What a policy may read about one task.
#[derive(Clone, Debug)]
pub struct TaskView {
    pub pid: u32,
    pub name: String,
    pub nice: i32,
    pub runnable: bool,
    /// The CPU it runs on now, if any.
    pub running_on: Option<CpuId>,
    /// The CPU it last ran on.
    pub last_cpu: Option<CpuId>,
    /// Ticks of CPU time it has had in all.
    pub ticks_run: u64,
    /// Ticks left in its time slice this epoch (Linux 2.4 baseline).
    pub slice_left: f64,
    /// Rolling average of its instructions per cycle while running.
    pub ipc_average: f64,
    /// Its latest performance-ratio estimate (from counters), if one was made.
    pub pr_estimate: Option<f64>,
}

/// Read-only state a policy decides from.
#[derive(Clone, Debug)]
pub struct SchedView {
    pub tick: u64,
    pub tasks: Vec<TaskView>,
    /// Task running on each logical CPU.
    pub current: Vec<Option<TaskId>>,
    /// Package of each logical CPU.
    pub package_of: Vec<usize>,
    /// Logical CPUs the OS uses.
    pub online: Vec<bool>,
    /// Hardware siblings of each logical CPU (other CPUs of its core).
    pub siblings_of: Vec<Vec<CpuId>>,
    /// True (oracle) PRs of every pair of runnable tasks on one core, `(a, b) -> (pr_a, pr_b)`,
    /// and of each task alone under `(a, a)`; filled only for policies that ask
    /// ([`Policy::needs_true_pairs`]).
    pub pair_true: std::collections::BTreeMap<(TaskId, TaskId), (f64, f64)>,
}

impl SchedView {
    /// The lowest-numbered logical CPU the OS uses: where once-per-tick policy work happens.
    pub fn first_cpu(&self) -> CpuId {
        self.online.iter().position(|&o| o).unwrap_or(0)
    }

    /// The task on `cpu`'s first sibling.
    pub fn sibling_task(&self, cpu: CpuId) -> Option<TaskId> {
        self.siblings_of[cpu].iter().find_map(|&s| self.current[s])
    }

    /// The true (oracle) PRs of `a` and `b` running together, if known.
    pub fn pair_true(&self, a: TaskId, b: TaskId) -> Option<(f64, f64)> {
        if let Some(&v) = self.pair_true.get(&(a, b)) {
            return Some(v);
        }
        self.pair_true.get(&(b, a)).map(|&(x, y)| (y, x))
    }
}

/// The parts of Linux 2.4's `goodness()` for one candidate, for a policy to recombine.
#[derive(Clone, Copy, Debug)]
pub struct Goodness {
    /// The candidate's remaining ticks (fractional under `fair`); goodness is 0 when none remain.
    pub counter: f64,
    pub nice: i32,
    /// The candidate last ran on the CPU choosing.
    pub same_cpu: bool,
    /// The candidate last ran on a CPU of the same package.
    pub same_package: bool,
    pub same_mm: bool,
}

/// PROC_CHANGE_PENALTY of Linux 2.4 on i386.
pub const PROC_CHANGE_PENALTY: i64 = 15;

impl Goodness {
    /// Stock Linux 2.4.19 goodness for a SCHED_OTHER task.
    pub fn stock(&self) -> i64 {
        let counter = self.counter.floor() as i64;
        if counter <= 0 {
            return 0;
        }
        let mut w = counter;
        if self.same_cpu {
            w += PROC_CHANGE_PENALTY;
        }
        if self.same_mm {
            w += 1;
        }
        w + 20 - self.nice as i64
    }
}

/// A scheduling policy.
pub trait Policy: Send {
    fn name(&self) -> &str;

    fn estimates(&self) -> Estimates {
        Estimates::Never
    }

    /// Linux 2.4 baseline: the goodness of `task` when `cpu` chooses. Only called for tasks with
    /// time left in their slice, so adjustments never defeat the epoch's starvation avoidance.
    fn goodness(&mut self, _task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        g.stock()
    }

    /// Whether `tick_charge` charges fractions of a tick, so that slices keep fractional
    /// remainders across epochs. Only then is `tick_charge` called.
    fn fractional_slices(&self) -> bool {
        false
    }

    /// Fraction of a tick charged to the slice of `task` running on `cpu` (1 = stock).
    fn tick_charge(&mut self, _task: TaskId, _cpu: CpuId, _view: &SchedView) -> f64 {
        1.0
    }

    /// A waking task's CPU, or `None` for the baseline's choice.
    fn select_cpu(
        &mut self,
        _task: TaskId,
        _prev: Option<CpuId>,
        _view: &SchedView,
    ) -> Option<CpuId> {
        None
    }

    /// Present-day baseline: choose among the eligible candidates of `cpu` (`None` = earliest
    /// virtual deadline).
    fn dispatch(
        &mut self,
        _cpu: CpuId,
        _candidates: &[TaskId],
        _view: &SchedView,
    ) -> Option<TaskId> {
        None
    }

    /// `cpu` switches from `prev` to `next` (the thesis's `__switch_to` hook, where counters are
    /// sampled). `estimates` holds the estimated PR of the task on each CPU of the package just
    /// before the switch, when the policy asked for estimates.
    fn switching(
        &mut self,
        _cpu: CpuId,
        _prev: Option<TaskId>,
        _next: Option<TaskId>,
        _estimates: &[(CpuId, TaskId, f64)],
        _view: &SchedView,
    ) {
    }

    /// Every tick, on every logical CPU.
    fn tick(&mut self, _cpu: CpuId, _view: &SchedView) {}

    /// The periodic planning hook (the thesis's user-space planner).
    fn plan(&mut self, _view: &SchedView) {}

    /// Whether `plan` needs the true PR of every pair of runnable tasks in the view (only the
    /// `optimal` ceiling does; nothing real can know them).
    fn needs_true_pairs(&self) -> bool {
        false
    }

    /// Asked after every tick: should every CPU run `schedule()` now? (A policy that keeps CPUs
    /// idle on purpose must wake them when it changes its mind; the baseline only reschedules on
    /// slice ends, blocking and wake-ups.)
    fn take_resched_request(&mut self) -> bool {
        false
    }

    /// Ticks between calls of `plan` (0: never).
    fn plan_period_ticks(&self) -> u64 {
        0
    }
}

/// The stock scheduler with nothing changed.
pub struct Naive;

impl Policy for Naive {
    fn name(&self) -> &str {
        "naive"
    }
}

/// Policies by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyName {
    Naive,
    Basic,
    Tryhard,
    Plan,
    /// `plan` as the USENIX'05 paper describes it: three best partners per task, sorted by the
    /// planner.
    Plan3,
    Fair,
    Ipc,
    Sos,
    Optimal,
    /// Fedorova et al.'s balance-set scheduler, PERF thread selection.
    BalanceSetPerf,
    /// Fedorova et al.'s balance-set scheduler, FAIR thread selection.
    BalanceSetFair,
    /// Zhuravlev et al.'s distributed intensity.
    Di,
}

pub const ALL_POLICIES: &[PolicyName] = &[
    PolicyName::Naive,
    PolicyName::Basic,
    PolicyName::Tryhard,
    PolicyName::Plan,
    PolicyName::Plan3,
    PolicyName::Fair,
    PolicyName::Ipc,
    PolicyName::Sos,
    PolicyName::Optimal,
    PolicyName::BalanceSetPerf,
    PolicyName::BalanceSetFair,
    PolicyName::Di,
];

impl PolicyName {
    pub fn as_str(&self) -> &'static str {
        match self {
            PolicyName::Naive => "naive",
            PolicyName::Basic => "basic",
            PolicyName::Tryhard => "tryhard",
            PolicyName::Plan => "plan",
            PolicyName::Plan3 => "plan3",
            PolicyName::Fair => "fair",
            PolicyName::Ipc => "ipc",
            PolicyName::Sos => "sos",
            PolicyName::Optimal => "optimal",
            PolicyName::BalanceSetPerf => "balance-set-perf",
            PolicyName::BalanceSetFair => "balance-set-fair",
            PolicyName::Di => "di",
        }
    }

    pub fn build(&self) -> Box<dyn Policy> {
        match self {
            PolicyName::Naive => Box::new(Naive),
            PolicyName::Basic => Box::new(basic::Basic),
            PolicyName::Tryhard => Box::new(tryhard::Tryhard::new()),
            PolicyName::Plan => Box::new(plan::Plan::new(1)),
            PolicyName::Plan3 => Box::new(plan::Plan::new(3)),
            PolicyName::Fair => Box::new(fair::Fair),
            PolicyName::Ipc => Box::new(ipc::Ipc),
            PolicyName::Sos => Box::new(sos::Sos::new()),
            PolicyName::Optimal => Box::new(optimal::Optimal::new()),
            PolicyName::BalanceSetPerf | PolicyName::BalanceSetFair | PolicyName::Di => {
                self.build_for(&balance_set::CacheInputs::default())
            }
        }
    }
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PolicyName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_POLICIES
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown policy {s:?} (policies: {})",
                    ALL_POLICIES
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// Gang scheduling by goodness: members of the current gang get this much extra (the thesis's
/// "heavily boosts" for `plan`, also used by `sos` and `optimal`).
pub const GANG_BONUS: i64 = 1000;
