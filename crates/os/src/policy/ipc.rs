//! `ipc` (thesis §4.5, after Parekh et al.'s G_IPC): goodness heavily biased by the task's rolling
//! average IPC; the 2.4 epochs still prevent starvation because exhausted tasks keep goodness 0.

use super::{CpuId, Goodness, Policy, SchedView, TaskId};

/// Goodness per unit of IPC. "Heavily biasing" is not quantified in the thesis: chosen once so
/// that an IPC difference of 0.1 outweighs a whole 6-tick slice.
pub const IPC_WEIGHT: f64 = 100.0;

pub struct Ipc;

impl Policy for Ipc {
    fn name(&self) -> &str {
        "ipc"
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        g.stock() + (view.tasks[task].ipc_average * IPC_WEIGHT).round() as i64
    }
}
