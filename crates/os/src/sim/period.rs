//! The simulator's side of the decision interface: what each period shows of every task (CPU
//! time, run delay, CPUs, co-runners, counter rates, PR estimate) as a [`PeriodView`], the
//! policy's [`crate::policy::Decisions`], and their enforcement — on the present-day baseline as
//! Linux enforces affinity, weights and core scheduling; on Linux 2.4 affinity and the nearest
//! nice level's time slice.

use super::{Baseline, Estimator, OsSim, State, TaskId};
use crate::metrics::PeriodRecord;
use crate::policy::{Corunner, PeriodView, TaskKey, TaskSample};
use smtsched_model::events::Epc;
use smtsched_model::CpuSet;

/// What a period has seen of one task (cycles; time-weighted sums).
#[derive(Clone, Debug, Default)]
pub(super) struct PeriodAcc {
    pub cpu_cycles: f64,
    /// Runnable time of intervals that ended in the period, and the start of the current one.
    pub runnable_cycles: f64,
    pub runnable_since: Option<f64>,
    pub cpus: CpuSet,
    /// Co-runners by pid, with the cycles they overlapped.
    pub corunners: Vec<(u32, f64)>,
    /// Σ own events per cycle × cycles, the same of the task on a sibling, and Σ true PR × cycles.
    pub epc: Epc,
    pub back: Epc,
    pub pr: f64,
}

impl PeriodAcc {
    /// The task stops being runnable at `now`.
    pub fn runnable_until(&mut self, now: f64) {
        if let Some(s) = self.runnable_since.take() {
            self.runnable_cycles += now - s;
        }
    }
}

/// The period clock.
#[derive(Clone, Debug)]
pub(super) struct Periods {
    cycles: f64,
    next: f64,
    index: u64,
}

impl Periods {
    /// Periods of `cycles` (0: no periods — a policy steering Linux 2.4 through its hooks).
    pub fn new(cycles: f64) -> Periods {
        Periods {
            cycles,
            next: if cycles > 0.0 { cycles } else { f64::INFINITY },
            index: 0,
        }
    }

    pub fn active(&self) -> bool {
        self.cycles > 0.0
    }

    /// When the current period ends.
    pub fn next_at(&self) -> Option<f64> {
        self.active().then_some(self.next)
    }
}

impl OsSim<'_> {
    /// Accounts `dt` cycles of the current situation to the period.
    pub(super) fn account_period(&mut self, dt: f64) {
        for c in 0..self.cpus.len() {
            let in_window = self.now >= self.metrics.window.0;
            let waiting = !self.cpus[c].queue.is_empty();
            if in_window && self.cpus[c].current.is_none() && self.cpus[c].forced_idle && waiting {
                self.metrics.forced_idle_cycles += dt;
            }
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            let rate = self.rates[c].expect("a running task has a rate");
            let mut back = Epc::default();
            let mut with: Vec<u32> = Vec::new();
            for &s in self.siblings(c) {
                if let (Some(u), Some(r)) = (self.cpus[s].current, self.rates[s]) {
                    back.add_scaled(&r.epc, 1.0);
                    with.push(self.tasks[u].pid);
                }
            }
            let acc = &mut self.tasks[t].acc;
            acc.cpu_cycles += dt;
            acc.cpus.insert(c as u32);
            acc.epc.add_scaled(&rate.epc, dt);
            acc.back.add_scaled(&back, dt);
            acc.pr += rate.pr * dt;
            for pid in with {
                match acc.corunners.iter_mut().find(|e| e.0 == pid) {
                    Some(e) => e.1 += dt,
                    None => acc.corunners.push((pid, dt)),
                }
            }
        }
    }

    fn key(&self, t: TaskId) -> TaskKey {
        TaskKey {
            pid: self.tasks[t].pid,
            start_time: self.tasks[t].start_tick,
        }
    }

    fn ns(&self, cycles: f64) -> u64 {
        (cycles / self.machine.clock_ghz).round().max(0.0) as u64
    }

    /// The configured estimator's PR for what the period showed of `t` (none if it did not run).
    fn period_estimate(&self, t: TaskId) -> Option<f64> {
        let acc = &self.tasks[t].acc;
        if acc.cpu_cycles <= 0.0 {
            return None;
        }
        Some(match &self.config.estimator {
            Estimator::Perfect => acc.pr / acc.cpu_cycles,
            // From the view's co-runners, once every sample is built.
            Estimator::Matrix(_) => return None,
            Estimator::Model(m) => m.estimate(
                &acc.epc.divided(acc.cpu_cycles),
                &acc.back.divided(acc.cpu_cycles),
            ),
        })
    }

    /// The view of the period that ends now; the accumulators start again.
    fn period_view(&mut self) -> PeriodView {
        let needs_estimates = self.policy.needs().estimates;
        let live: Vec<TaskId> = (0..self.tasks.len())
            .filter(|&t| self.tasks[t].state != State::Exited)
            .collect();
        let by_pid = |pid: u32| live.iter().copied().find(|&u| self.tasks[u].pid == pid);
        let mut samples = Vec::with_capacity(live.len());
        let mut estimated = Vec::new();
        for &t in &live {
            let task = &self.tasks[t];
            let acc = &task.acc;
            let runnable_cycles =
                acc.runnable_cycles + acc.runnable_since.map_or(0.0, |s| self.now - s);
            let mut corunners: Vec<Corunner> = acc
                .corunners
                .iter()
                .filter_map(|&(pid, cycles)| {
                    by_pid(pid).map(|u| Corunner {
                        task: self.key(u),
                        overlap_ns: self.ns(cycles),
                    })
                })
                .collect();
            corunners.sort_by(|a, b| b.overlap_ns.cmp(&a.overlap_ns).then(a.task.cmp(&b.task)));
            let pr_estimate = if needs_estimates {
                self.period_estimate(t)
            } else {
                None
            };
            if pr_estimate.is_some() {
                estimated.push(task.last_cpu.unwrap_or(0));
            }
            samples.push(TaskSample {
                key: self.key(t),
                label: task.name.to_string(),
                trust: task.trust.clone(),
                nice: task.nice,
                runnable: task.state == State::Runnable,
                cpu_ns: self.ns(acc.cpu_cycles),
                wait_ns: self.ns((runnable_cycles - acc.cpu_cycles).max(0.0)),
                total_cpu_ns: self.ns(task.cpu_cycles),
                cpus: acc.cpus.clone(),
                last_cpu: task.last_cpu.map(|c| c as u32),
                corunners,
                counters: (acc.cpu_cycles > 0.0).then(|| acc.epc.divided(acc.cpu_cycles)),
                pr_estimate,
            });
        }
        samples.sort_by_key(|s| s.key);
        if self.config.corunners == super::Corunners::Inferred {
            let length_ns = self.ns(self.periods.cycles);
            crate::policy::corunners::infer_corunners(&mut samples, &self.topology, length_ns);
        }
        if let (Estimator::Matrix(m), true) = (&self.config.estimator, needs_estimates) {
            let workloads: std::collections::BTreeMap<TaskKey, String> = live
                .iter()
                .map(|&t| (self.key(t), self.workload_name(t).to_string()))
                .collect();
            let label_of = |k: TaskKey| workloads.get(&k).cloned();
            for s in samples.iter_mut() {
                s.pr_estimate = m.estimate(s, &label_of);
                if s.pr_estimate.is_some() {
                    estimated.push(s.last_cpu.unwrap_or(0) as usize);
                }
            }
        }
        for cpu in estimated {
            self.charge_estimate(cpu, 1);
        }
        for &t in &live {
            let runnable = self.tasks[t].state == State::Runnable;
            let acc = &mut self.tasks[t].acc;
            *acc = super::PeriodAcc::default();
            if runnable {
                acc.runnable_since = Some(self.now);
            }
        }
        self.periods.index += 1;
        PeriodView {
            index: self.periods.index,
            now_ns: self.ns(self.now),
            length_ns: self.ns(self.periods.cycles),
            topology: self.topology.clone(),
            tasks: samples,
        }
    }

    /// The end of a period: the policy decides from its view, and the decisions take effect.
    pub(super) fn end_period(&mut self) {
        let view = self.period_view();
        let decisions = self.policy.decide(&view);
        if let Err(e) = decisions.check(&view) {
            panic!(
                "policy {} made an invalid decision: {e}",
                self.policy.name()
            );
        }
        for s in &view.tasks {
            if let Some(pr) = s.pr_estimate {
                if let Some(t) = (0..self.tasks.len()).find(|&t| self.key(t) == s.key) {
                    self.tasks[t].pr_estimate = Some(pr);
                }
                self.record_estimate(s.key.pid, pr);
            }
        }
        if self.config.record_periods {
            self.metrics.periods.push(PeriodRecord {
                cycle: self.now,
                view,
                decisions: decisions.clone(),
            });
        }
        self.decisions = decisions;
        self.apply_decisions();
        self.periods.next += self.periods.cycles;
    }

    /// Gives every task the settings the decisions in force lower to.
    fn apply_decisions(&mut self) {
        self.core_sched = self.decisions.uses_core_groups();
        for t in 0..self.tasks.len() {
            if self.tasks[t].state == State::Exited {
                continue;
            }
            let applied = self.decisions.applied(self.key(t), self.tasks[t].nice);
            let own = self.tasks[t].own_allowed.clone();
            let allowed: Vec<bool> = match &applied.affinity {
                Some(mask) => {
                    let within: Vec<bool> = (0..own.len())
                        .map(|c| own[c] && mask.contains(c as u32))
                        .collect();
                    // A mask disjoint from the task's own is refused, as sched_setaffinity
                    // refuses one outside the task's cpuset.
                    if within.iter().any(|&a| a) {
                        within
                    } else {
                        own
                    }
                }
                None => own,
            };
            let affinity_changed = allowed != self.tasks[t].allowed;
            self.tasks[t].allowed = allowed;
            self.set_weight(t, applied.weight);
            let cookie_changed = self.tasks[t].cookie != applied.core_group;
            self.tasks[t].cookie = applied.core_group;
            match self.config.baseline {
                Baseline::Modern => {
                    if affinity_changed {
                        self.enforce_affinity_modern(t);
                    }
                    if cookie_changed {
                        if let Some(c) = self.tasks[t].running_on {
                            self.cpus[c].need_resched = true;
                        }
                    }
                }
                Baseline::Linux24 => {
                    if affinity_changed {
                        self.enforce_affinity_linux24(t);
                    }
                }
            }
        }
        if self.config.baseline == Baseline::Modern {
            // A CPU left with only SCHED_IDLE-weight work balances at the next tick (the kernel
            // sets `rq->next_balance = jiffies` when a runqueue turns sched-idle).
            for c in 0..self.cpus.len() {
                if self.online[c] && self.cpus[c].current.is_some() && self.sched_idle_cpu(c) {
                    let next = &mut self.cpus[c].next_balance_tick;
                    *next = (*next).min(self.tick + 1);
                }
            }
        }
        if self.core_sched {
            // Every core re-picks under the new groups.
            for c in 0..self.cpus.len() {
                self.cpus[c].need_resched |= self.online[c];
            }
        } else {
            for cpu in &mut self.cpus {
                cpu.forced_idle = false;
            }
        }
    }

    /// Changes `t`'s own weight, keeping its group's load and its virtual times consistent.
    fn set_weight(&mut self, t: TaskId, w: crate::policy::Weight) {
        if self.tasks[t].weight == w {
            return;
        }
        self.sync_load(t);
        let old_effective = self.effective_weight(t);
        if let (Some(g), State::Runnable) = (self.tasks[t].group, self.tasks[t].state) {
            self.group_load[g] += w.0 as f64 - self.tasks[t].weight.0 as f64;
        }
        self.tasks[t].weight = w;
        if self.config.baseline == Baseline::Modern {
            self.reweight(t, old_effective);
        }
    }
}
