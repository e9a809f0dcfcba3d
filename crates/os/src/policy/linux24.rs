//! The opt-in extension through which the thesis's policies steer the simulated Linux 2.4.19
//! scheduler: its `goodness()`, per-tick slice charging, `reschedule_idle()` placement and the
//! `__switch_to` hook where the thesis sampled counters. Nothing of this exists on a present-day
//! kernel; it is used only to reproduce the thesis on its own scheduler (`--baseline linux24`).
//! Everywhere else a policy acts through [`super::Decisions`].

use super::{CpuId, TaskId};

/// When a policy needs performance estimates (each one costs CPU time, thesis §4.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimates {
    Never,
    /// For both siblings at every context switch on a package.
    PerSwitch,
    /// For every logical CPU at every tick.
    PerTick,
}

/// What a hook may read about one task.
#[derive(Clone, Debug)]
pub struct TaskView {
    pub pid: u32,
    pub name: std::sync::Arc<str>,
    pub nice: i32,
    pub runnable: bool,
    /// The CPU it runs on now, if any.
    pub running_on: Option<CpuId>,
    /// The CPU it last ran on.
    pub last_cpu: Option<CpuId>,
    /// Ticks of CPU time it has had in all.
    pub ticks_run: u64,
    /// Ticks left in its time slice this epoch.
    pub slice_left: f64,
    /// Rolling average of its instructions per cycle while running.
    pub ipc_average: f64,
    /// Its latest performance-ratio estimate (from counters), if one was made.
    pub pr_estimate: Option<f64>,
}

/// The scheduler state a hook decides from: tasks, what each CPU runs, the tick.
#[derive(Clone, Debug, Default)]
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

/// Gang scheduling by goodness: members of the current gang get this much extra (the thesis's
/// "heavily boosts" for `plan`, also used by `sos` and `optimal`).
pub const GANG_BONUS: i64 = 1000;

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

/// The Linux 2.4 hooks of a thesis policy. Every method has the stock scheduler's behaviour by
/// default.
pub trait Linux24Hooks {
    fn estimates(&self) -> Estimates {
        Estimates::Never
    }

    /// The goodness of `task` when `cpu` chooses. Only called for tasks with time left in their
    /// slice, so adjustments never defeat the epoch's starvation avoidance.
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

    /// A waking task's CPU, or `None` for `reschedule_idle()`'s choice.
    fn select_cpu(
        &mut self,
        _task: TaskId,
        _prev: Option<CpuId>,
        _view: &SchedView,
    ) -> Option<CpuId> {
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
