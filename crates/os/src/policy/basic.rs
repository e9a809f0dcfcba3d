//! `basic` (thesis §4.4.4.1): affinity to the physical package instead of the logical CPU.

use super::{CpuId, Goodness, Policy, SchedView, TaskId};

pub struct Basic;

impl Policy for Basic {
    fn name(&self) -> &str {
        "basic"
    }

    /// `if (PHYSICAL_PACKAGE(p->processor) == PHYSICAL_PACKAGE(this_cpu)) weight += PROC_CHANGE_PENALTY;`
    fn goodness(&mut self, _task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        Goodness {
            same_cpu: g.same_package,
            ..g
        }
        .stock()
    }
}
