//! `fair` (thesis §4.4.4.4): a task that does poorly under SMT pays less of its time slice per
//! tick: the decrement is its estimated PR over an assumed average of 0.6, bounded both ways.

use super::{CpuId, Estimates, Policy, SchedView, TaskId};

/// The assumed average performance ratio (thesis §4.4.4.4, from the chapter 3 measurements).
pub const AVERAGE_PR: f64 = 0.6;
/// Bounds of the decrement. The thesis bounds it "in both directions" without giving values:
/// chosen once as a factor of two either way.
pub const MIN_CHARGE: f64 = 0.5;
pub const MAX_CHARGE: f64 = 2.0;

pub struct Fair;

impl Policy for Fair {
    fn name(&self) -> &str {
        "fair"
    }

    fn estimates(&self) -> Estimates {
        Estimates::PerTick
    }

    fn fractional_slices(&self) -> bool {
        true
    }

    fn tick_charge(&mut self, task: TaskId, _cpu: CpuId, view: &SchedView) -> f64 {
        match view.tasks[task].pr_estimate {
            Some(p) => (p / AVERAGE_PR).clamp(MIN_CHARGE, MAX_CHARGE),
            None => 1.0,
        }
    }
}
