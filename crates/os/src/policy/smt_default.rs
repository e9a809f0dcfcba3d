//! `smt-default`: what present-day schedulers do on an SMT machine — an idle core before an idle
//! sibling (CFS's `select_idle_core` and SMT load balancing, and the sched_ext schedulers' idle-core
//! preference). As decisions: while no more tasks are runnable than there are cores, each gets a
//! core of its own (the one it ran on last where possible); otherwise nothing is constrained.
//! This is the baseline the other policies are judged against on a live machine, where the
//! kernel's own behaviour varies.

use super::decision::Decisions;
use super::view::{PeriodView, TaskKey};
use super::Policy;

pub struct SmtDefault;

impl SmtDefault {
    pub fn new() -> Self {
        SmtDefault
    }
}

/// One core per runnable task when they fit, preferring each task's last core; `None` when there
/// are more runnable tasks than cores.
pub fn spread_over_cores(view: &PeriodView) -> Option<Decisions> {
    let cores = view.cores();
    let runnable: Vec<TaskKey> = view.runnable().map(|t| t.key).collect();
    if runnable.is_empty() || runnable.len() > cores.len() {
        return None;
    }
    let mut free: Vec<usize> = (0..cores.len()).collect();
    let mut d = Decisions::none();
    // Tasks whose last core is free keep it; the others take the first free cores.
    let mut unplaced = Vec::new();
    for &k in &runnable {
        let last = view.task(k).and_then(|t| t.last_cpu);
        match last.and_then(|c| free.iter().position(|&i| cores[i].contains(c))) {
            Some(p) => d.task_mut(k).affinity = Some(cores[free.remove(p)].clone()),
            None => unplaced.push(k),
        }
    }
    for k in unplaced {
        d.task_mut(k).affinity = Some(cores[free.remove(0)].clone());
    }
    Some(d)
}

impl Policy for SmtDefault {
    fn name(&self) -> &str {
        "smt-default"
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        spread_over_cores(view).unwrap_or_default()
    }
}
