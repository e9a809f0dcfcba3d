//! A present-day Linux scheduler (EEVDF, kernel 6.6 and later, as in kernel/sched/fair.c):
//! per-CPU runqueues ordered by virtual time; a task is eligible while it is owed service (its
//! virtual time at or below the queue's weighted average) and the eligible task with the
//! earliest virtual deadline runs; a task keeps its lag across sleeps and migrations; a running
//! task is protected from wake-up preemption until its slice is used (RUN_TO_PARITY); wake-ups
//! go to an idle core before an idle sibling; idle CPUs pull work and busy CPUs balance load;
//! weights come from nice levels, decisions and cgroup weights; core scheduling keeps tasks of
//! different groups off sibling threads at the same time.
//!
//! Constants are the kernel's own (named after its variables); where the model simplifies the
//! kernel, the comment says how.

use super::{OsSim, State, TaskId};
use crate::policy::CpuId;

/// `sysctl_sched_base_slice` at one CPU (0.75 ms); the kernel multiplies it by
/// 1 + log2(CPUs, at most 8) (`tunable_scaling` = log, the default).
const BASE_SLICE_NS: f64 = 750_000.0;
/// A busy CPU balances its domain every `balance_interval` × `busy_factor` (16); the interval
/// starts at `sd_weight` ms (the domain's CPUs), doubles after an attempt that moved nothing, up
/// to twice that, and returns to it after one that moved a task.
const BUSY_FACTOR: f64 = 16.0;
/// Failed balancing attempts after which the running task itself is moved
/// (`need_active_balance`: `nr_balance_failed > cache_nice_tries + 2`, with `cache_nice_tries`
/// 1 in the domains of a small machine).
const ACTIVE_BALANCE_AFTER: u32 = 3;
/// Half-life of the kernel's per-entity load tracking (PELT): a task's load average is its
/// weight times its recent runnable fraction, halving every 32 ms (`y^32 = 1/2`).
const PELT_HALF_LIFE_MS: f64 = 32.0;
/// Virtual-time comparisons tolerate this much rounding (cycles).
const EPS: f64 = 1e-6;

impl OsSim<'_> {
    /// The base slice in cycles for the CPUs in use.
    fn slice_cycles(&self) -> f64 {
        let n = self.online.iter().filter(|&&o| o).count().clamp(1, 8);
        let factor = 1.0 + (n as f64).log2().floor();
        BASE_SLICE_NS * factor * 1e-9 * self.machine.clock_ghz * 1e9
    }

    /// A slice in `t`'s virtual time.
    fn vslice(&self, t: TaskId) -> f64 {
        self.slice_cycles() * 1024.0 / self.effective_weight(t)
    }

    /// The tasks on `cpu`'s runqueue: the waiting ones and the one running.
    fn on_rq(&self, cpu: CpuId) -> impl Iterator<Item = TaskId> + '_ {
        self.cpus[cpu].queue.iter().copied().chain(
            self.cpus[cpu]
                .current
                .filter(|&t| self.tasks[t].state == State::Runnable),
        )
    }

    /// The queue's total weight and weighted average virtual time (`avg_vruntime`).
    fn rq_load(&self, cpu: CpuId) -> (f64, Option<f64>) {
        self.rq_load_without(cpu, None)
    }

    /// The same, leaving out `except` (a task being placed).
    fn rq_load_without(&self, cpu: CpuId, except: Option<TaskId>) -> (f64, Option<f64>) {
        let (mut w, mut wv) = (0.0, 0.0);
        for t in self.on_rq(cpu).filter(|&t| Some(t) != except) {
            let wt = self.effective_weight(t);
            w += wt;
            wv += wt * self.tasks[t].vruntime;
        }
        (w, (w > 0.0).then(|| wv / w))
    }

    /// `pick_eevdf` over `candidates` (tasks of `cpu`'s queue): the eligible task with the
    /// earliest deadline; the running task while its slice is protected.
    fn pick_among(&self, cpu: CpuId, candidates: &[TaskId]) -> Option<TaskId> {
        let avg = self.rq_load(cpu).1?;
        if let Some(cur) = self.cpus[cpu].current {
            let task = &self.tasks[cur];
            if candidates.contains(&cur) && task.vruntime < task.protected_until - EPS {
                return Some(cur);
            }
        }
        let eligible = |t: &&TaskId| self.tasks[**t].vruntime <= avg + EPS;
        let earliest = |a: &&TaskId, b: &&TaskId| {
            self.tasks[**a]
                .deadline
                .total_cmp(&self.tasks[**b].deadline)
                .then(a.cmp(b))
        };
        candidates
            .iter()
            .filter(eligible)
            .min_by(earliest)
            .or_else(|| candidates.iter().min_by(earliest))
            .copied()
    }

    /// The tasks `cpu` may run now: its queue and its current task, if still runnable here.
    fn candidates(&self, cpu: CpuId) -> Vec<TaskId> {
        self.on_rq(cpu)
            .filter(|&t| self.tasks[t].allowed[cpu])
            .collect()
    }

    pub(super) fn schedule_modern(&mut self, cpu: CpuId) {
        if self.core_sched && !self.siblings(cpu).is_empty() {
            return self.schedule_core(cpu);
        }
        let mut cands = self.candidates(cpu);
        if cands.is_empty() && self.pull_one(cpu) {
            cands = self.candidates(cpu);
        }
        let next = self.pick_among(cpu, &cands);
        self.switch_modern(cpu, next);
    }

    /// Core scheduling's core-wide pick. Each sibling's own pick is a candidate; the one whose
    /// task has progressed least since the core last changed groups (`cfs_prio_less`: virtual
    /// time against the queue's at that moment) leads, its group's tasks run on the core's CPUs,
    /// and a CPU with nothing of that group idles (forced idle when it has tasks waiting).
    fn schedule_core(&mut self, cpu: CpuId) {
        let mut core = vec![cpu];
        core.extend(self.siblings(cpu).iter().copied());
        core.sort_unstable();
        let picks: Vec<(CpuId, TaskId)> = core
            .iter()
            .filter_map(|&c| self.pick_among(c, &self.candidates(c)).map(|t| (c, t)))
            .collect();
        let progress = |c: CpuId, t: TaskId| self.tasks[t].vruntime - self.cpus[c].core_base;
        let leader = picks
            .iter()
            .min_by(|a, b| {
                progress(a.0, a.1)
                    .total_cmp(&progress(b.0, b.1))
                    .then(a.0.cmp(&b.0))
            })
            .map(|&(_, t)| self.tasks[t].cookie);
        let previous = core
            .iter()
            .find_map(|&c| self.cpus[c].current.map(|t| self.tasks[t].cookie));
        if leader != previous {
            for &c in &core {
                self.cpus[c].core_base = self.rq_load(c).1.unwrap_or(0.0);
            }
        }
        for &c in &core {
            let cands = self.candidates(c);
            let next = match leader {
                Some(cookie) => {
                    let same: Vec<TaskId> = cands
                        .iter()
                        .copied()
                        .filter(|&t| self.tasks[t].cookie == cookie)
                        .collect();
                    self.pick_among(c, &same)
                }
                None => None,
            };
            self.cpus[c].forced_idle = next.is_none() && !cands.is_empty();
            self.cpus[c].need_resched = false;
            self.switch_modern(c, next);
        }
    }

    /// Switches `cpu` to `next`, keeping the runqueue: the previous task stays queued if it is
    /// still runnable and allowed here, and moves to an allowed CPU otherwise.
    fn switch_modern(&mut self, cpu: CpuId, next: Option<TaskId>) {
        let prev = self.cpus[cpu].current;
        if next == prev {
            return;
        }
        if let Some(n) = next {
            self.cpus[cpu].queue.retain(|&t| t != n);
            let task = &mut self.tasks[n];
            task.protected_until = task.deadline;
        }
        self.switch(cpu, prev, next);
        if let Some(p) = prev {
            if self.tasks[p].state == State::Runnable {
                if self.tasks[p].allowed[cpu] {
                    if !self.cpus[cpu].queue.contains(&p) {
                        self.cpus[cpu].queue.push(p);
                    }
                } else {
                    self.migrate_to_allowed(p, cpu);
                }
            }
        }
    }

    /// Takes `t` off `from`'s queue with its lag and places it on an allowed CPU.
    pub(super) fn migrate_to_allowed(&mut self, t: TaskId, from: CpuId) {
        self.save_lag(t, from);
        self.cpus[from].queue.retain(|&q| q != t);
        let to = self.select_idle_sibling(t);
        self.enqueue(t, to, false);
        self.check_preempt(to, t);
    }

    /// Remembers `t`'s lag on `cpu`'s queue (`V - v`, clamped as the kernel's `update_entity_lag`
    /// clamps it to a few slices).
    fn save_lag(&mut self, t: TaskId, cpu: CpuId) {
        let (w, avg) = self.rq_load(cpu);
        let limit =
            (2.0 * self.slice_cycles()).max(self.tick_cycles) * 1024.0 / self.effective_weight(t);
        let task = &mut self.tasks[t];
        task.saved_lag = (avg.unwrap_or(task.vruntime) - task.vruntime).clamp(-limit, limit);
        // Negative lag is served while the task sleeps (the kernel's delayed dequeue keeps it on
        // the queue until it is eligible): it decays as the queue's virtual time advances.
        task.lag_saved_at = self.now;
        task.lag_decay_rate = 1024.0 / w.max(1.0);
    }

    /// `t` joins `cpu`'s queue with its saved lag (a new task with none and half a slice to its
    /// first deadline).
    fn enqueue(&mut self, t: TaskId, cpu: CpuId, initial: bool) {
        let mut lag = if initial {
            0.0
        } else {
            self.tasks[t].saved_lag
        };
        if lag < 0.0 {
            let slept = self.now - self.tasks[t].lag_saved_at;
            lag = (lag + slept * self.tasks[t].lag_decay_rate).min(0.0);
        }
        let vslice = self.vslice(t);
        self.place(t, cpu, lag, if initial { vslice / 2.0 } else { vslice });
        self.cpus[cpu].queue.push(t);
    }

    /// `place_entity`: `t`'s virtual time from the queue's (without it) and its lag, scaled to
    /// the queue's load so that its arrival does not dilute the lag; its deadline `to_deadline`
    /// later.
    fn place(&mut self, t: TaskId, cpu: CpuId, mut lag: f64, to_deadline: f64) {
        let (w, avg) = self.rq_load_without(cpu, Some(t));
        let wt = self.effective_weight(t);
        if w > 0.0 {
            lag *= (w + wt) / w;
        }
        let task = &mut self.tasks[t];
        task.vruntime = avg.unwrap_or(task.vruntime) - lag;
        task.deadline = task.vruntime + to_deadline;
    }

    /// A running or waiting task leaves the runqueue because it stops being runnable.
    pub(super) fn dequeue_sleeper(&mut self, t: TaskId) {
        let cpu = self.tasks[t]
            .running_on
            .or_else(|| (0..self.cpus.len()).find(|&c| self.cpus[c].queue.contains(&t)));
        if let Some(c) = cpu {
            self.save_lag(t, c);
            self.cpus[c].queue.retain(|&q| q != t);
        }
    }

    /// A new task's placement: like a wake-up with no lag (below, from `wake_modern`).
    pub(super) fn fork_placement(&mut self, _parent: TaskId, child: TaskId) {
        self.tasks[child].saved_lag = 0.0;
    }

    /// `try_to_wake_up`: choose a CPU, place the task with its lag, and preempt the running task
    /// if the woken one should run first and the current one's slice is no longer protected.
    pub(super) fn wake_modern(&mut self, t: TaskId) {
        // Woken before its CPU switched away from it: it is still there and stays (as Linux's
        // `ttwu_runnable` leaves a task that is still on its CPU).
        if let Some(c) = self.tasks[t].running_on {
            self.cpus[c].need_resched = true;
            return;
        }
        let cpu = self.select_idle_sibling(t);
        let initial = self.tasks[t].switches_in == 0 && self.tasks[t].cpu_cycles == 0.0;
        self.enqueue(t, cpu, initial);
        self.check_preempt(cpu, t);
    }

    /// `check_preempt_wakeup_fair`.
    fn check_preempt(&mut self, cpu: CpuId, woken: TaskId) {
        let Some(cur) = self.cpus[cpu].current else {
            self.cpus[cpu].need_resched = true;
            return;
        };
        if self.core_sched {
            self.cpus[cpu].need_resched = true;
            return;
        }
        let cands = self.candidates(cpu);
        if self.pick_among(cpu, &cands) == Some(woken) && cur != woken {
            self.cpus[cpu].need_resched = true;
        }
    }

    /// Present-day wake-up placement: the previous CPU if its core is idle, else an idle CPU on
    /// a fully idle core, else the previous CPU if idle, else any idle CPU, else the previous
    /// CPU (or the allowed CPU with the shortest queue).
    pub(super) fn select_idle_sibling(&self, t: TaskId) -> CpuId {
        let allowed = |c: CpuId| self.online[c] && self.tasks[t].allowed[c];
        // A CPU running only SCHED_IDLE-weight tasks counts as idle (`sched_idle_cpu`).
        let idle = |c: CpuId| allowed(c) && self.sched_idle_cpu(c);
        let prev = self.tasks[t].last_cpu.filter(|&c| allowed(c));
        let core_idle = |c: CpuId| {
            idle(c)
                && self
                    .siblings(c)
                    .iter()
                    .all(|&s| self.cpus[s].current.is_none())
        };
        if let Some(p) = prev.filter(|&p| core_idle(p)) {
            return p;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| core_idle(c)) {
            return c;
        }
        if let Some(p) = prev.filter(|&p| idle(p)) {
            return p;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| idle(c)) {
            return c;
        }
        prev.unwrap_or_else(|| {
            (0..self.cpus.len())
                .filter(|&c| allowed(c))
                .min_by_key(|&c| self.cpus[c].queue.len())
                .expect("an allowed CPU")
        })
    }

    /// Idle, or running and queueing only tasks of `SCHED_IDLE`'s weight: the kernel's
    /// `sched_idle_cpu()` (or `available_idle_cpu()`), which wake-up placement treats as idle
    /// and whose balancing runs at the idle interval.
    pub(super) fn sched_idle_cpu(&self, c: CpuId) -> bool {
        let idle_weight = |t: TaskId| self.tasks[t].weight == crate::policy::Weight::IDLE;
        self.cpus[c].current.is_none_or(idle_weight)
            && self.cpus[c].queue.iter().all(|&t| idle_weight(t))
    }

    pub(super) fn tick_modern(&mut self) {
        for (c, t) in self.running() {
            self.count_tick(c, t);
            // `update_deadline`: a used-up slice gets a new deadline; once the slice is no
            // longer protected, whoever should run next does.
            let vslice = self.vslice(t);
            let task = &mut self.tasks[t];
            if task.vruntime >= task.deadline {
                task.deadline = task.vruntime + vslice;
            }
            let slice_used = task.vruntime >= task.protected_until - EPS;
            // With a sibling forced idle, a used-up slice lets the core pick again
            // (`task_tick_core`).
            let sibling_waits =
                self.core_sched && self.siblings(c).iter().any(|&s| self.cpus[s].forced_idle);
            if slice_used && (!self.cpus[c].queue.is_empty() || sibling_waits) {
                self.cpus[c].need_resched = true;
            }
        }
        self.balance();
    }

    /// `t`'s load average now (PELT): the average kept at its last change of state, decayed,
    /// plus its weight for the time since if it has been runnable.
    fn load_now(&self, t: TaskId) -> f64 {
        let task = &self.tasks[t];
        let half = PELT_HALF_LIFE_MS * 1e-3 * self.machine.clock_ghz * 1e9;
        let d = 0.5f64.powf((self.now - task.load_updated) / half);
        let runnable = if task.state == State::Runnable {
            self.effective_weight(t)
        } else {
            0.0
        };
        task.load_avg * d + runnable * (1.0 - d)
    }

    /// Folds the load average up to now, before `t`'s state or weight changes.
    pub(super) fn sync_load(&mut self, t: TaskId) {
        if self.config.baseline == super::Baseline::Modern {
            self.tasks[t].load_avg = self.load_now(t);
            self.tasks[t].load_updated = self.now;
        }
    }

    /// The load `cpu` carries, as the balancer sees it (`cpu_load`): the load averages of the
    /// tasks on its runqueue and of those that last ran on it and sleep (blocked load, still
    /// decaying there).
    fn cpu_load(&self, cpu: CpuId) -> f64 {
        (0..self.tasks.len())
            .filter(|&t| {
                let task = &self.tasks[t];
                match task.state {
                    State::Exited => false,
                    State::Runnable => {
                        task.running_on == Some(cpu) || self.cpus[cpu].queue.contains(&t)
                    }
                    _ => task.last_cpu == Some(cpu),
                }
            })
            .map(|t| self.load_now(t))
            .sum()
    }

    /// Idle balancing: `cpu` takes a waiting task from the CPU with the most waiting (one it may
    /// run). Returns whether it found one.
    fn pull_one(&mut self, cpu: CpuId) -> bool {
        let n = self.cpus.len();
        let busiest = (0..n)
            .filter(|&b| {
                b != cpu
                    && self.cpus[b]
                        .queue
                        .iter()
                        .any(|&t| self.tasks[t].allowed[cpu])
            })
            .max_by_key(|&b| (self.cpus[b].queue.len(), std::cmp::Reverse(b)));
        let Some(b) = busiest else {
            return false;
        };
        let pos = self.cpus[b]
            .queue
            .iter()
            .position(|&t| self.tasks[t].allowed[cpu])
            .expect("checked");
        let t = self.cpus[b].queue[pos];
        self.move_queued(t, b, cpu);
        true
    }

    /// Moves waiting task `t` from `from`'s queue to `to`'s, keeping its lag.
    fn move_queued(&mut self, t: TaskId, from: CpuId, to: CpuId) {
        self.save_lag(t, from);
        self.cpus[from].queue.retain(|&q| q != t);
        self.enqueue(t, to, false);
    }

    /// Load balancing at each tick: idle CPUs pull waiting tasks (CPUs on fully idle cores
    /// first), a core running two tasks hands one to a fully idle core, and each busy CPU at its
    /// interval pulls load from the busiest CPU when the difference allows (`load_balance`).
    fn balance(&mut self) {
        let n = self.cpus.len();
        let mut order: Vec<CpuId> = (0..n)
            .filter(|&c| {
                self.online[c] && self.cpus[c].current.is_none() && self.cpus[c].queue.is_empty()
            })
            .collect();
        order.sort_by_key(|&c| {
            self.siblings(c)
                .iter()
                .filter(|&&s| self.cpus[s].current.is_some())
                .count()
        });
        for c in order {
            if self.cpus[c].current.is_some() || !self.cpus[c].queue.is_empty() {
                continue;
            }
            if self.pull_one(c) {
                self.cpus[c].need_resched = true;
                continue;
            }
            // SMT balance: this CPU's core is fully idle and another core runs two tasks.
            let core_idle = self
                .siblings(c)
                .iter()
                .all(|&s| self.cpus[s].current.is_none());
            if core_idle {
                let donor = (0..n).find(|&d| {
                    self.cpus[d].current.is_some()
                        && self
                            .siblings(d)
                            .iter()
                            .any(|&s| self.cpus[s].current.is_some())
                });
                if let Some(d) = donor {
                    let t = self.cpus[d].current.expect("donor runs a task");
                    if self.tasks[t].allowed[c] && self.tasks[t].state == State::Runnable {
                        self.switch_modern(d, None);
                        self.move_queued(t, d, c);
                        self.cpus[c].need_resched = true;
                        self.cpus[d].need_resched = true;
                    }
                }
            }
        }
        self.periodic_balance();
    }

    /// `load_balance` of busy CPUs at their interval: pull a waiting task from the busiest CPU
    /// if half the load difference covers it — a task's load is halved for every attempt in a
    /// row that moved nothing (`nr_balance_failed`), which is what rotates three equal tasks
    /// over two CPUs.
    fn periodic_balance(&mut self) {
        let online: Vec<CpuId> = (0..self.cpus.len()).filter(|&c| self.online[c]).collect();
        let sd_weight_ms = online.len() as f64;
        for &c in &online {
            if self.tick < self.cpus[c].next_balance_tick {
                continue;
            }
            let moved = self.balance_once(c, &online);
            let cpu = &mut self.cpus[c];
            cpu.balance_interval_ms = if moved {
                sd_weight_ms
            } else {
                (2.0 * cpu.balance_interval_ms.max(sd_weight_ms)).min(2.0 * sd_weight_ms)
            };
            // A CPU counts as busy unless it runs only SCHED_IDLE work (`sched_balance_domains`:
            // `busy = idle != CPU_IDLE && !sched_idle_cpu(cpu)`).
            let factor = if self.sched_idle_cpu(c) {
                1.0
            } else {
                BUSY_FACTOR
            };
            let cpu = &mut self.cpus[c];
            let ticks = (cpu.balance_interval_ms * factor * 1e-3 * self.config.hz).round();
            // Give or take a tick: the kernel's balancing softirq is not phase-locked to the
            // tasks' slices, and a model that is would always find the same task waiting.
            self.cpus[c].next_balance_tick =
                self.tick + (ticks as u64).max(1) + self.balance_rng.below(2);
        }
    }

    /// One `load_balance` attempt of `c`; whether it moved a task.
    fn balance_once(&mut self, c: CpuId, online: &[CpuId]) -> bool {
        {
            let here = self.cpu_load(c);
            let busiest = online
                .iter()
                .copied()
                .filter(|&b| b != c && !self.cpus[b].queue.is_empty())
                .max_by(|&a, &b| {
                    self.cpu_load(a)
                        .total_cmp(&self.cpu_load(b))
                        .then(b.cmp(&a))
                });
            let imbalance = busiest.map_or(0.0, |b| (self.cpu_load(b) - here) / 2.0);
            let Some(b) = busiest.filter(|_| imbalance > 0.0) else {
                // Balanced: the kernel starts counting failures afresh (`out_balanced`).
                self.cpus[c].balance_failed = 0;
                return false;
            };
            let failed = self.cpus[c].balance_failed.min(8);
            let movable = self.cpus[b].queue.iter().copied().find(|&t| {
                self.tasks[t].allowed[c]
                    && self.load_now(t) / f64::from(1u32 << failed) <= imbalance + EPS
            });
            match movable {
                Some(t) => {
                    self.move_queued(t, b, c);
                    self.cpus[c].balance_failed = 0;
                    self.check_preempt(c, t);
                    true
                }
                None => {
                    self.cpus[c].balance_failed += 1;
                    if self.cpus[c].balance_failed > ACTIVE_BALANCE_AFTER {
                        self.active_balance(b, c);
                    }
                    false
                }
            }
        }
    }

    /// Active balancing: the task running on `from` moves to `to` (the kernel's stopper thread
    /// pushes it), when it may run there and its load fits the imbalance.
    fn active_balance(&mut self, from: CpuId, to: CpuId) {
        let Some(t) = self.cpus[from].current else {
            return;
        };
        let runnable = self.tasks[t].state == State::Runnable;
        if !runnable || !self.tasks[t].allowed[to] || self.cpus[from].queue.is_empty() {
            return;
        }
        let imbalance = (self.cpu_load(from) - self.cpu_load(to)) / 2.0;
        if self.load_now(t) / 2.0 > imbalance + EPS {
            return;
        }
        // Under core scheduling the core picks again as a whole.
        let next = if self.core_sched {
            self.cpus[from].need_resched = true;
            None
        } else {
            let cands: Vec<TaskId> = self
                .candidates(from)
                .into_iter()
                .filter(|&u| u != t)
                .collect();
            self.pick_among(from, &cands)
        };
        self.switch_modern(from, next);
        self.move_queued(t, from, to);
        self.cpus[to].balance_failed = 0;
        self.check_preempt(to, t);
    }

    /// Reweights `t` (`reweight_entity`) from effective weight `old`: its lag is taken (clamped)
    /// at the old weight, and it and the distance to its deadline keep their meaning in real
    /// time, so they scale by old weight / new weight; then it is placed again.
    pub(super) fn reweight(&mut self, t: TaskId, old: f64) {
        let new = self.effective_weight(t);
        if new == old {
            return;
        }
        // The load average is a weight times a runnable fraction: the kernel recomputes it at
        // the new weight at once (`reweight_entity` → `update_load_avg`'s `load_sum` ×
        // weight), so a task dropped to SCHED_IDLE's weight stops weighing on its CPU.
        if old > 0.0 {
            self.tasks[t].load_avg *= new / old;
        }
        let cpu = self.tasks[t]
            .running_on
            .or_else(|| (0..self.cpus.len()).find(|&c| self.cpus[c].queue.contains(&t)));
        let Some(c) = cpu else {
            return;
        };
        let (w, avg) = self.rq_load_without(c, Some(t));
        let task = &self.tasks[t];
        // V with the old weight.
        let v_all = avg.map_or(task.vruntime, |a| (a * w + task.vruntime * old) / (w + old));
        let limit = (2.0 * self.slice_cycles()).max(self.tick_cycles) * 1024.0 / old;
        let lag = (v_all - task.vruntime).clamp(-limit, limit) * old / new;
        let to_deadline = (task.deadline - task.vruntime) * old / new;
        self.place(t, c, lag, to_deadline);
        let task = &mut self.tasks[t];
        task.protected_until = task.protected_until.min(task.deadline);
    }

    /// Applies a changed affinity: a running task outside its mask is switched out and moves;
    /// a waiting one moves to an allowed CPU.
    pub(super) fn enforce_affinity_modern(&mut self, t: TaskId) {
        if let Some(c) = self.tasks[t].running_on {
            if !self.tasks[t].allowed[c] {
                let cands: Vec<TaskId> =
                    self.candidates(c).into_iter().filter(|&u| u != t).collect();
                let next = self.pick_among(c, &cands);
                self.switch_modern(c, next);
            }
            return;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| self.cpus[c].queue.contains(&t)) {
            if !self.tasks[t].allowed[c] {
                self.migrate_to_allowed(t, c);
            }
        }
    }
}
