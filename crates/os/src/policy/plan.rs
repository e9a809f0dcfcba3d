//! `plan` (thesis §4.4.4.3; `plan3` as in the USENIX'05 paper): record each task's best partners
//! by combined performance, decay the records, periodically pick pairs greedily, and
//! gang-schedule the pairs.
//!
//! On Linux 2.4 the records come from the estimates at every context switch and the pairs are
//! gang-scheduled through goodness. As decisions the records come from the pairs each period
//! shows sharing a core, and every [`PLAN_PERIODS`] periods the planner's pairs — completed with
//! the tasks it left out, paired with partners not yet recorded, so that every task keeps its
//! turn and the records grow — take turns on the cores (sibling affinity plus gang turns).

use super::decision::Decisions;
use super::gang::Gangs;
use super::pairing::{greedy_pairs, pairs_seen, Rotation};
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Estimates, Goodness, Linux24Hooks, Needs, Policy, SchedView, TaskId};
use std::collections::{BTreeMap, BTreeSet};

/// Ticks between planning runs on Linux 2.4 (the thesis's user-space tool runs "periodically";
/// chosen once: 1 s).
pub const PLAN_PERIOD_TICKS: u64 = 100;
/// The same second in 100 ms decision periods.
pub const PLAN_PERIODS: u64 = 10;
/// Records decay by this factor at each planning run (rate not given; chosen once).
pub const DECAY: f64 = 0.9;

pub struct Plan {
    partners: usize,
    /// Per task: best partners (task, combined performance).
    best: BTreeMap<TaskKey, Vec<(TaskKey, f64)>>,
    /// Per task: ticks (2.4) or periods with CPU time since the last plan (only active tasks
    /// are planned).
    activity: BTreeMap<TaskKey, u64>,
    gangs: Gangs,
    /// The planner's last pairs, and every pair ever seen sharing a core (decisions).
    planned: Vec<(TaskKey, TaskKey)>,
    seen: BTreeSet<(TaskKey, TaskKey)>,
    rotation: Rotation,
}

/// A Linux 2.4 task's key: its pid (the simulated 2.4 kernel never reuses one).
fn pid_key(pid: u32) -> TaskKey {
    TaskKey { pid, start_time: 0 }
}

impl Plan {
    pub fn new(partners: usize) -> Self {
        Plan {
            partners,
            best: BTreeMap::new(),
            activity: BTreeMap::new(),
            gangs: Gangs::default(),
            planned: Vec::new(),
            seen: BTreeSet::new(),
            rotation: Rotation::default(),
        }
    }

    fn record(&mut self, p: TaskKey, q: TaskKey, perf: f64) {
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

    /// The planner: among the active tasks of `runnable`, pairs from the best-partner records,
    /// best first, each task at most once. Then the records decay, exited tasks are forgotten
    /// and activity starts again.
    fn plan_pairs(&mut self, runnable: &BTreeSet<TaskKey>) -> Vec<(TaskKey, TaskKey)> {
        let active =
            |k: &TaskKey| self.activity.get(k).is_some_and(|&n| n > 0) && runnable.contains(k);
        let mut candidates: Vec<(f64, TaskKey, TaskKey)> = Vec::new();
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
        // Greedy: best combined performance first, skipping tasks already chosen.
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut chosen: Vec<TaskKey> = Vec::new();
        let mut pairs = Vec::new();
        for (_, p, q) in candidates {
            if chosen.contains(&p) || chosen.contains(&q) {
                continue;
            }
            chosen.extend([p, q]);
            pairs.push((p, q));
        }
        for list in self.best.values_mut() {
            for e in list.iter_mut() {
                e.1 *= DECAY;
            }
        }
        self.best.retain(|k, _| runnable.contains(k));
        self.activity.clear();
        pairs
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

    fn needs(&self) -> Needs {
        Needs::ESTIMATES
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        for p in pairs_seen(view) {
            self.record(p.a, p.b, p.combined);
            self.record(p.b, p.a, p.combined);
            self.seen.insert((p.a, p.b));
        }
        self.seen
            .retain(|(a, b)| view.task(*a).is_some() && view.task(*b).is_some());
        for t in view.tasks.iter().filter(|t| t.cpu_ns > 0) {
            *self.activity.entry(t.key).or_default() += 1;
        }
        let runnable: BTreeSet<TaskKey> = view.runnable().map(|t| t.key).collect();
        if view.index.is_multiple_of(PLAN_PERIODS) {
            self.planned = self.plan_pairs(&runnable);
        }
        // The planned pairs that can run, and everyone else paired with partners not yet
        // recorded where possible.
        let mut groups: Vec<Vec<TaskKey>> = self
            .planned
            .iter()
            .filter(|(p, q)| runnable.contains(p) && runnable.contains(q))
            .map(|&(p, q)| vec![p, q])
            .collect();
        let left: Vec<TaskKey> = runnable
            .iter()
            .copied()
            .filter(|k| !groups.iter().any(|g| g.contains(k)))
            .collect();
        let seen =
            |a: TaskKey, b: TaskKey| self.seen.contains(&(a.min(b), a.max(b))).then_some(0.0);
        groups.extend(greedy_pairs(&left, &seen));
        self.rotation.set(groups);
        self.rotation.decide(view, false)
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Plan {
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
            let (ka, kb) = (pid_key(view.tasks[*a].pid), pid_key(view.tasks[*b].pid));
            self.record(ka, kb, pa + pb);
            self.record(kb, ka, pa + pb);
        }
    }

    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if let Some(t) = view.current[cpu] {
            *self.activity.entry(pid_key(view.tasks[t].pid)).or_default() += 1;
        }
        if cpu == view.first_cpu() {
            self.gangs.advance(view);
        }
    }

    fn plan_period_ticks(&self) -> u64 {
        PLAN_PERIOD_TICKS
    }

    fn plan(&mut self, view: &SchedView) {
        let by_key: BTreeMap<TaskKey, TaskId> = view
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.runnable)
            .map(|(i, t)| (pid_key(t.pid), i))
            .collect();
        let runnable: BTreeSet<TaskKey> = by_key.keys().copied().collect();
        let gangs = self
            .plan_pairs(&runnable)
            .into_iter()
            .map(|(p, q)| vec![by_key[&p], by_key[&q]])
            .collect();
        self.gangs.set(gangs, view.tick);
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        g.stock() + self.gangs.bonus(task)
    }
}
