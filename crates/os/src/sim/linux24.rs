//! The Linux 2.4.19 scheduler as the thesis modified it: one runqueue, epochs, `goodness()` with
//! `PROC_CHANGE_PENALTY`, `NICE_TO_TICKS`, `reschedule_idle()`; and the hooks through which a
//! thesis policy steers it. A policy without hooks acts here through its decisions' affinity and
//! weight (as the nearest nice level's time slice).

use super::{Baseline, OsSim, State, TaskId, TICK_UNITS};
use crate::policy::{CpuId, Estimates, Goodness, SchedView, TaskView};

/// NICE_TO_TICKS at HZ = 100: `((20 - nice) >> 2) + 1` ticks (nice 0 → 6 = 60 ms).
pub fn nice_to_ticks(nice: i32) -> i64 {
    (((20 - nice) >> 2) + 1) as i64
}

/// MAX_COUNTER at HZ = 100 (`20*HZ/100` ticks, include/linux/sched.h): the most slice a parent
/// may hold after taking back its children's.
pub const MAX_COUNTER_TICKS: i64 = 20;

impl OsSim<'_> {
    /// What the hooks see now. The view is kept between calls and refreshed in place (the
    /// hooks are consulted at every tick, pick and wake: building it anew each time was a fifth
    /// of a policy run); give it back with [`OsSim::put_view`].
    pub(super) fn take_view(&mut self) -> SchedView {
        let mut view = std::mem::take(&mut self.view);
        view.tick = self.tick;
        view.tasks.truncate(self.tasks.len());
        for (i, t) in self.tasks.iter().enumerate() {
            let Some(v) = view.tasks.get_mut(i) else {
                view.tasks.push(Self::task_view(t));
                continue;
            };
            // A reused slot holds another task: its name changes (a pointer compare, no copy).
            if !std::sync::Arc::ptr_eq(&v.name, &t.name) {
                v.name = t.name.clone();
            }
            v.pid = t.pid;
            v.nice = t.nice;
            v.runnable = t.state == State::Runnable;
            v.running_on = t.running_on;
            v.last_cpu = t.last_cpu;
            v.ticks_run = t.ticks_run;
            v.slice_left = t.counter as f64 / TICK_UNITS as f64;
            v.ipc_average = t.ipc_average;
            v.pr_estimate = t.pr_estimate;
        }
        view.current.clear();
        view.current.extend(self.cpus.iter().map(|c| c.current));
        if view.package_of.is_empty() {
            // Fixed for the run.
            view.package_of = self.package_of.clone();
            view.online = self.online.clone();
            view.siblings_of = self.siblings_of.clone();
        }
        view
    }

    fn task_view(t: &super::Task) -> TaskView {
        TaskView {
            pid: t.pid,
            name: t.name.clone(),
            nice: t.nice,
            runnable: t.state == State::Runnable,
            running_on: t.running_on,
            last_cpu: t.last_cpu,
            ticks_run: t.ticks_run,
            slice_left: t.counter as f64 / TICK_UNITS as f64,
            ipc_average: t.ipc_average,
            pr_estimate: t.pr_estimate,
        }
    }

    /// Keeps the view for the next [`OsSim::take_view`].
    pub(super) fn put_view(&mut self, view: SchedView) {
        self.view = view;
    }

    /// The estimates the hooks ask for.
    fn hook_estimates(&mut self) -> Estimates {
        match self.policy.linux24() {
            Some(h) if self.hooks => h.estimates(),
            _ => Estimates::Never,
        }
    }

    /// The time slice a task's weight stands for: the nearest nice level's.
    fn slice_nice(&self, t: TaskId) -> i32 {
        if self.hooks {
            self.tasks[t].nice
        } else {
            self.tasks[t].weight.nearest_nice()
        }
    }

    pub(super) fn tick_linux24(&mut self) {
        let estimates = self.hook_estimates();
        // Only a policy that charges fractions of a tick needs a view to charge by.
        let charge_view = self.fractional.then(|| self.take_view());
        for (c, t) in self.running() {
            self.count_tick(c, t);
            if estimates == Estimates::PerTick {
                let e = self.estimate(c);
                self.tasks[t].pr_estimate = Some(e);
                self.record_estimate(self.tasks[t].pid, e);
                self.charge_estimate(c, 1);
            }
            let units = match (&charge_view, self.policy.linux24()) {
                (Some(view), Some(h)) => {
                    let charge = h.tick_charge(t, c, view);
                    (charge * TICK_UNITS as f64).round() as i64
                }
                _ => TICK_UNITS,
            };
            let task = &mut self.tasks[t];
            task.counter -= units;
            if task.counter <= 0 {
                task.counter = 0;
                self.cpus[c].need_resched = true;
            }
        }
        if let Some(view) = charge_view {
            self.put_view(view);
        }
        if !self.hooks {
            return;
        }
        let view = self.take_view();
        if let Some(h) = self.policy.linux24() {
            for c in 0..self.cpus.len() {
                if self.online[c] {
                    h.tick(c, &view);
                }
            }
            if h.take_resched_request() {
                for c in 0..self.cpus.len() {
                    self.cpus[c].need_resched |= self.online[c];
                }
            }
        }
        self.put_view(view);
    }

    /// The `__switch_to` hook: estimates for the package's running tasks, before the switch.
    pub(super) fn switch_hook(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        let mut ests = Vec::new();
        if self.hook_estimates() == Estimates::PerSwitch {
            let mut cpus = vec![cpu];
            cpus.extend(self.siblings(cpu));
            for &c in &cpus {
                if let Some(t) = self.cpus[c].current {
                    let e = self.estimate(c);
                    self.tasks[t].pr_estimate = Some(e);
                    self.record_estimate(self.tasks[t].pid, e);
                    ests.push((c, t, e));
                }
            }
            self.charge_estimate(cpu, ests.len() as u32);
        }
        let view = self.take_view();
        if let Some(h) = self.policy.linux24() {
            h.switching(cpu, prev, next, &ests, &view);
        }
        self.put_view(view);
    }

    pub(super) fn pick_linux24(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let view = self.take_view();
        let prev_mm = prev.map(|p| self.tasks[p].mm);
        let best = loop {
            let mut best: Option<TaskId> = None;
            let mut c: i64 = -1000;
            let mut any = false;
            for t in 0..self.tasks.len() {
                if !self.can_run(t, cpu) {
                    continue;
                }
                any = true;
                let w = self.goodness(t, cpu, prev_mm, &view);
                if w > c {
                    c = w;
                    best = Some(t);
                }
            }
            if any && c == 0 {
                // Every runnable task has used its slice: a new epoch for all tasks.
                for t in 0..self.tasks.len() {
                    if self.tasks[t].state != State::Exited {
                        let nice = self.slice_nice(t);
                        let task = &mut self.tasks[t];
                        let carried = if self.fractional {
                            task.counter >> 1
                        } else {
                            ((task.counter / TICK_UNITS) >> 1) * TICK_UNITS
                        };
                        task.counter = carried + nice_to_ticks(nice) * TICK_UNITS;
                    }
                }
                self.metrics.epochs += 1;
                continue;
            }
            break best;
        };
        self.put_view(view);
        best
    }

    fn goodness(&mut self, t: TaskId, cpu: CpuId, prev_mm: Option<u32>, view: &SchedView) -> i64 {
        let task = &self.tasks[t];
        let g = Goodness {
            counter: task.counter as f64 / TICK_UNITS as f64,
            nice: self.slice_nice(t),
            same_cpu: task.last_cpu == Some(cpu),
            same_package: task
                .last_cpu
                .is_some_and(|l| self.package(l) == self.package(cpu)),
            same_mm: prev_mm == Some(task.mm),
        };
        if g.counter < 1.0 {
            return 0;
        }
        match self.policy.linux24() {
            Some(h) if self.hooks => h.goodness(t, cpu, g, view),
            _ => g.stock(),
        }
    }

    fn can_run(&self, t: TaskId, cpu: CpuId) -> bool {
        let task = &self.tasks[t];
        task.state == State::Runnable
            && task.allowed[cpu]
            && (task.running_on.is_none() || task.running_on == Some(cpu))
    }

    pub(super) fn wake_linux24(&mut self, t: TaskId) {
        let view = self.take_view();
        let hint = match self.policy.linux24() {
            Some(h) if self.hooks => h.select_cpu(t, self.tasks[t].last_cpu, &view),
            _ => None,
        }
        .filter(|&c| self.tasks[t].allowed[c]);
        self.reschedule_idle(t, hint, &view);
        self.put_view(view);
    }

    /// Linux 2.4 `reschedule_idle()`.
    fn reschedule_idle(&mut self, t: TaskId, hint: Option<CpuId>, view: &SchedView) {
        let idle = |s: &Self, c: CpuId| {
            s.online[c] && s.cpus[c].current.is_none() && s.tasks[t].allowed[c]
        };
        if let Some(c) = hint.filter(|&c| idle(self, c)) {
            self.cpus[c].need_resched = true;
            return;
        }
        if let Some(last) = self.tasks[t].last_cpu {
            if idle(self, last) {
                self.cpus[last].need_resched = true;
                return;
            }
        }
        // The CPU idle the longest.
        let oldest = (0..self.cpus.len())
            .filter(|&c| idle(self, c))
            .min_by(|&a, &b| self.cpus[a].idle_since.total_cmp(&self.cpus[b].idle_since));
        if let Some(c) = oldest {
            self.cpus[c].need_resched = true;
            return;
        }
        // Preempt where the woken task's goodness most exceeds the current task's.
        let mut best: Option<(i64, CpuId)> = None;
        for c in 0..self.cpus.len() {
            if !self.online[c] || !self.tasks[t].allowed[c] {
                continue;
            }
            let Some(cur) = self.cpus[c].current else {
                continue;
            };
            let mm = Some(self.tasks[cur].mm);
            let p = self.goodness(t, c, mm, view) - self.goodness(cur, c, mm, view);
            if p > 0 && best.is_none_or(|b| p > b.0) {
                best = Some((p, c));
            }
        }
        if let Some((_, c)) = best {
            self.cpus[c].need_resched = true;
        }
    }

    /// Applies affinities on Linux 2.4: a running task outside its new mask gives up its CPU.
    pub(super) fn enforce_affinity_linux24(&mut self, t: TaskId) {
        debug_assert_eq!(self.config.baseline, Baseline::Linux24);
        if let Some(c) = self.tasks[t].running_on {
            if !self.tasks[t].allowed[c] {
                self.cpus[c].need_resched = true;
            }
        }
    }
}
