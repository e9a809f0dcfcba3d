//! `fair` (thesis §4.4.4.4): a task that does poorly under SMT pays less of its time slice per
//! tick: the decrement is its estimated PR over an assumed average of 0.6, bounded both ways. As
//! decisions the same rule scales weights: a task's weight (its nice level's) is multiplied by the
//! inverse of that charge, 0.6 / PR, within the same bounds, so priorities keep their ratios.

use super::decision::{Decisions, Weight};
use super::view::PeriodView;
use super::{CpuId, Estimates, Linux24Hooks, Needs, Policy, SchedView, TaskId};

/// The assumed average performance ratio (thesis §4.4.4.4, from the chapter 3 measurements).
pub const AVERAGE_PR: f64 = 0.6;
/// Bounds of the decrement. The thesis bounds it "in both directions" without giving values:
/// chosen once as a factor of two either way.
pub const MIN_CHARGE: f64 = 0.5;
pub const MAX_CHARGE: f64 = 2.0;

pub struct Fair;

/// The fraction of a tick `fair` charges a task whose PR estimate is `pr`.
pub fn charge(pr: f64) -> f64 {
    (pr / AVERAGE_PR).clamp(MIN_CHARGE, MAX_CHARGE)
}

impl Policy for Fair {
    fn name(&self) -> &str {
        "fair"
    }

    fn needs(&self) -> Needs {
        Needs::ESTIMATES
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        let mut d = Decisions::none();
        for t in &view.tasks {
            if let Some(pr) = t.pr_estimate {
                d.task_mut(t.key).weight = Some(Weight::of_nice(t.nice).scaled(1.0 / charge(pr)));
            }
        }
        d
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Fair {
    fn estimates(&self) -> Estimates {
        Estimates::PerTick
    }

    fn fractional_slices(&self) -> bool {
        true
    }

    fn tick_charge(&mut self, task: TaskId, _cpu: CpuId, view: &SchedView) -> f64 {
        match view.tasks[task].pr_estimate {
            Some(p) => charge(p),
            None => 1.0,
        }
    }
}
