//! `ipc` (thesis §4.5, after Parekh et al.'s G_IPC): favour the tasks with the highest rolling
//! average IPC. On Linux 2.4, goodness is heavily biased by it (the epochs still prevent
//! starvation because exhausted tasks keep goodness 0). As decisions, weights are: a task's
//! weight doubles for every [`IPC_STEP`] its rolling IPC is above the mean of the runnable tasks
//! (and halves below), within [`MAX_FACTOR`] either way, so no task is starved outright.

use super::decision::{Decisions, Weight};
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Goodness, Linux24Hooks, Needs, Policy, SchedView, TaskId};
use std::collections::BTreeMap;

/// Goodness per unit of IPC. "Heavily biasing" is not quantified in the thesis: chosen once so
/// that an IPC difference of 0.1 outweighs a whole 6-tick slice.
pub const IPC_WEIGHT: f64 = 100.0;
/// The same bias in weights: an IPC difference of 0.1 doubles the weight (chosen once, after
/// [`IPC_WEIGHT`]'s 0.1), bounded at 8× either way (three doublings: a strong bias that still
/// leaves every task a share).
pub const IPC_STEP: f64 = 0.1;
pub const MAX_FACTOR: f64 = 8.0;
/// Weight of the newest period in the rolling average, as the 2.4 hook's per-tick 0.1.
pub const NEW_SAMPLE_WEIGHT: f64 = 0.1;

pub struct Ipc {
    average: BTreeMap<TaskKey, f64>,
}

impl Ipc {
    pub fn new() -> Self {
        Ipc {
            average: BTreeMap::new(),
        }
    }
}

impl Policy for Ipc {
    fn name(&self) -> &str {
        "ipc"
    }

    fn needs(&self) -> Needs {
        Needs::COUNTERS
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        for t in &view.tasks {
            if let (Some(ipc), true) = (t.ipc(), t.cpu_ns > 0) {
                let a = self.average.entry(t.key).or_insert(ipc);
                *a = (1.0 - NEW_SAMPLE_WEIGHT) * *a + NEW_SAMPLE_WEIGHT * ipc;
            }
        }
        self.average.retain(|k, _| view.task(*k).is_some());
        let known: Vec<(TaskKey, i32, f64)> = view
            .runnable()
            .filter_map(|t| self.average.get(&t.key).map(|&a| (t.key, t.nice, a)))
            .collect();
        let mut d = Decisions::none();
        if known.is_empty() {
            return d;
        }
        let mean = known.iter().map(|k| k.2).sum::<f64>() / known.len() as f64;
        for (key, nice, ipc) in known {
            let factor = 2f64
                .powf((ipc - mean) / IPC_STEP)
                .clamp(1.0 / MAX_FACTOR, MAX_FACTOR);
            d.task_mut(key).weight = Some(Weight::of_nice(nice).scaled(factor));
        }
        d
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Ipc {
    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        g.stock() + (view.tasks[task].ipc_average * IPC_WEIGHT).round() as i64
    }
}
