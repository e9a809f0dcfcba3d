//! `basic` (thesis §4.4.4.1): a multiprocessor scheduler that understands the logical/physical
//! hierarchy. On Linux 2.4 its goodness keeps affinity to the physical package instead of the
//! logical CPU, and (this model's reading of "understands the hierarchy") a waking task goes to an
//! idle package before it shares a busy one. A present-day kernel already does both, so as
//! decisions it is `smt-default`: an idle core before an idle sibling.

use super::decision::Decisions;
use super::smt_default::spread_over_cores;
use super::view::PeriodView;
use super::{CpuId, Goodness, Linux24Hooks, Policy, SchedView, TaskId};

pub struct Basic;

impl Basic {
    pub fn new() -> Self {
        Basic
    }
}

impl Policy for Basic {
    fn name(&self) -> &str {
        "basic"
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        spread_over_cores(view).unwrap_or_default()
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Basic {
    /// `if (PHYSICAL_PACKAGE(p->processor) == PHYSICAL_PACKAGE(this_cpu)) weight += PROC_CHANGE_PENALTY;`
    fn goodness(&mut self, _task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        Goodness {
            same_cpu: g.same_package,
            ..g
        }
        .stock()
    }

    /// An idle CPU whose siblings are idle too, preferring the task's previous package.
    fn select_cpu(
        &mut self,
        _task: TaskId,
        prev: Option<CpuId>,
        view: &SchedView,
    ) -> Option<CpuId> {
        let fully_idle = |c: CpuId| {
            view.current[c].is_none()
                && view.siblings_of[c]
                    .iter()
                    .all(|&s| view.current[s].is_none())
        };
        let candidates: Vec<CpuId> = (0..view.current.len())
            .filter(|&c| view.online[c] && fully_idle(c))
            .collect();
        let prev_pkg = prev.map(|p| view.package_of[p]);
        candidates
            .iter()
            .copied()
            .find(|&c| Some(view.package_of[c]) == prev_pkg)
            .or_else(|| candidates.first().copied())
    }
}
