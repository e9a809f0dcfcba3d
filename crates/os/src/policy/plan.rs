//! `plan` (thesis §4.4.4.3; `plan3` as in the USENIX'05 paper): record each task's best partners by
//! package performance at context switches, decay the records, periodically pick pairs greedily,
//! and gang-schedule the pairs.

use super::gang::Gangs;
use super::{CpuId, Estimates, Goodness, Policy, SchedView, TaskId};
use std::collections::BTreeMap;

/// Ticks between planning runs (the thesis's user-space tool runs "periodically"; chosen once: 1 s).
pub const PLAN_PERIOD_TICKS: u64 = 100;
/// Records decay by this factor at each planning run (rate not given; chosen once).
pub const DECAY: f64 = 0.9;

pub struct Plan {
    partners: usize,
    /// Per PID: best partners (PID, package performance).
    best: BTreeMap<u32, Vec<(u32, f64)>>,
    /// Per PID: ticks it ran since the last plan (only active tasks are planned).
    activity: BTreeMap<u32, u64>,
    gangs: Gangs,
}

impl Plan {
    pub fn new(partners: usize) -> Self {
        Plan {
            partners,
            best: BTreeMap::new(),
            activity: BTreeMap::new(),
            gangs: Gangs::default(),
        }
    }

    fn record(&mut self, p: u32, q: u32, perf: f64) {
        let list = self.best.entry(p).or_default();
        if let Some(e) = list.iter_mut().find(|e| e.0 == q) {
            e.1 = e.1.max(perf);
        } else if list.len() < self.partners {
            list.push((q, perf));
        } else if let Some(worst) = list.iter_mut().min_by(|a, b| a.1.total_cmp(&b.1)) {
            if perf > worst.1 {
                *worst = (q, perf);
            }
        }
    }
}

impl Policy for Plan {
    fn name(&self) -> &str {
        if self.partners == 1 {
            "plan"
        } else {
            "plan3"
        }
    }

    fn estimates(&self) -> Estimates {
        Estimates::PerSwitch
    }

    fn switching(
        &mut self,
        _cpu: CpuId,
        _prev: Option<TaskId>,
        _next: Option<TaskId>,
        estimates: &[(CpuId, TaskId, f64)],
        view: &SchedView,
    ) {
        // Pairings with the idle task are not recorded: HLT gives the other thread the whole core.
        if let [(_, a, pa), (_, b, pb)] = estimates {
            let (pid_a, pid_b) = (view.tasks[*a].pid, view.tasks[*b].pid);
            self.record(pid_a, pid_b, pa + pb);
            self.record(pid_b, pid_a, pa + pb);
        }
    }

    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if let Some(t) = view.current[cpu] {
            *self.activity.entry(view.tasks[t].pid).or_default() += 1;
        }
        if cpu == view.first_cpu() {
            self.gangs.advance(view);
        }
    }

    fn plan_period_ticks(&self) -> u64 {
        PLAN_PERIOD_TICKS
    }

    fn plan(&mut self, view: &SchedView) {
        let by_pid: BTreeMap<u32, TaskId> = view
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.runnable)
            .map(|(i, t)| (t.pid, i))
            .collect();
        let active =
            |pid: &u32| self.activity.get(pid).is_some_and(|&n| n > 0) && by_pid.contains_key(pid);
        let mut candidates: Vec<(f64, u32, u32)> = Vec::new();
        for (p, list) in &self.best {
            if !active(p) {
                continue;
            }
            for &(q, perf) in list {
                if active(&q) {
                    candidates.push((perf, *p, q));
                }
            }
        }
        // Greedy: best package performance first, skipping tasks already chosen.
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut chosen: Vec<u32> = Vec::new();
        let mut gangs = Vec::new();
        for (_, p, q) in candidates {
            if chosen.contains(&p) || chosen.contains(&q) {
                continue;
            }
            chosen.extend([p, q]);
            gangs.push(vec![by_pid[&p], by_pid[&q]]);
        }
        self.gangs.set(gangs, view.tick);
        for list in self.best.values_mut() {
            for e in list.iter_mut() {
                e.1 *= DECAY;
            }
        }
        // Forget exited tasks; reset activity for the next planning cycle.
        self.best.retain(|pid, _| by_pid.contains_key(pid));
        self.activity.clear();
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        g.stock() + self.gangs.bonus(task)
    }
}
