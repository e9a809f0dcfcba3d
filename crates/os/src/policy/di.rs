//! `di`: Distributed Intensity (Zhuravlev, Blagodurov & Fedorova, "Addressing shared resource
//! contention in multicore processors via scheduling", ASPLOS 2010). Threads are sorted by their
//! cache intensity (last-level-cache misses per instruction alone) and spread over the machine's
//! cache domains so that every domain gets a similar total: the sorted list is dealt out in a
//! snake (domain 0, 1, …, D−1, then D−1, …, 0, …), which puts the most intensive thread beside the
//! least intensive ones. The assignment covers the runnable threads and those yet to start, and is
//! recomputed whenever that set changes. As decisions, each thread's affinity is its domain's
//! CPUs (the last-level cache domains of the topology). On Linux 2.4 it is enforced through
//! goodness (a thread is strongly preferred by the CPUs of its domain; away from it, it runs only
//! when nothing at home can, and a CPU then prefers a different away thread to the one it just
//! ran, so that threads placed before the assignment existed drift home) and through wake-up
//! placement (an idle CPU of its domain first); there a thread moves only when its CPU
//! reschedules: with no more threads than contexts, one started in the wrong domain stays there.
//! On a machine with one cache domain it changes nothing.

use super::decision::Decisions;
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Goodness, Linux24Hooks, Policy, SchedView, TaskId, GANG_BONUS};
use std::collections::BTreeMap;

pub struct Di {
    intensity: BTreeMap<String, f64>,
    domain_of_cpu: Vec<usize>,
    home: BTreeMap<TaskId, usize>,
    runnable: Vec<TaskId>,
    /// The decision side's placed tasks and their domains (indices into the topology's
    /// last-level domains).
    placed: Vec<TaskKey>,
    homes: BTreeMap<TaskKey, usize>,
}

/// Deals `tasks` (with their intensities) over `domains` domains by DI's snake, most intensive
/// first (ties by order); returns each task's domain.
fn deal<T: Copy + Ord>(tasks: &[(T, f64)], domains: usize) -> BTreeMap<T, usize> {
    let mut order: Vec<(T, f64)> = tasks.to_vec();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order
        .iter()
        .zip(snake(order.len(), domains))
        .map(|(&(t, _), d)| (t, d))
        .collect()
}

/// Deals `order` (most intensive first) over `domains` domains in a snake; returns each one's
/// domain in the same order.
pub fn snake(count: usize, domains: usize) -> Vec<usize> {
    let d = domains.max(1);
    (0..count)
        .map(|i| {
            let (round, pos) = (i / d, i % d);
            if round % 2 == 0 {
                pos
            } else {
                d - 1 - pos
            }
        })
        .collect()
}

/// Total intensity per domain after the DI assignment of `values` (what the tests check the
/// assignment by).
#[cfg(test)]
fn domain_loads(values: &[f64], domains: usize) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let mut load = vec![0.0; domains.max(1)];
    for (i, d) in snake(order.len(), domains).into_iter().enumerate() {
        load[d] += values[order[i]];
    }
    load
}

impl Di {
    pub fn new(intensity: BTreeMap<String, f64>, domain_of_cpu: Vec<usize>) -> Self {
        Di {
            intensity,
            domain_of_cpu,
            home: BTreeMap::new(),
            runnable: Vec::new(),
            placed: Vec::new(),
            homes: BTreeMap::new(),
        }
    }

    fn domain(&self, cpu: CpuId, view: &SchedView) -> usize {
        self.domain_of_cpu
            .get(cpu)
            .copied()
            .unwrap_or_else(|| view.package_of[cpu])
    }

    fn assign(&mut self, view: &SchedView) {
        // The threads to place: the runnable ones and those yet to start (a task set's tasks exist,
        // blocked, before their staggered start), so the assignment is made once for the set.
        let runnable: Vec<TaskId> = (0..view.tasks.len())
            .filter(|&t| view.tasks[t].runnable || view.tasks[t].ticks_run == 0)
            .collect();
        if runnable == self.runnable && !self.home.is_empty() {
            return;
        }
        let mut domains: Vec<usize> = (0..view.online.len())
            .filter(|&c| view.online[c])
            .map(|c| self.domain(c, view))
            .collect();
        domains.sort_unstable();
        domains.dedup();
        let valued: Vec<(TaskId, f64)> = runnable
            .iter()
            .map(|&t| (t, self.value(&view.tasks[t].name)))
            .collect();
        self.home = deal(&valued, domains.len())
            .into_iter()
            .map(|(t, d)| (t, domains[d]))
            .collect();
        self.runnable = runnable;
    }

    fn value(&self, label: &str) -> f64 {
        self.intensity.get(label).copied().unwrap_or(0.0)
    }
}

impl Policy for Di {
    fn name(&self) -> &str {
        "di"
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        // The runnable tasks and those yet to start, as on Linux 2.4.
        let placed: Vec<TaskKey> = view
            .tasks
            .iter()
            .filter(|t| t.runnable || t.total_cpu_ns == 0)
            .map(|t| t.key)
            .collect();
        let domains = view.topology.llc_domains();
        if placed != self.placed {
            let valued: Vec<(TaskKey, f64)> = placed
                .iter()
                .map(|&k| (k, self.value(&view.task(k).expect("in the view").label)))
                .collect();
            self.homes = deal(&valued, domains.len());
            self.placed = placed;
        }
        let mut d = Decisions::none();
        if domains.len() > 1 {
            for (&k, &dom) in &self.homes {
                d.task_mut(k).affinity = Some(domains[dom].clone());
            }
        }
        d
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Di {
    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if cpu == view.first_cpu() {
            self.assign(view);
        }
    }

    fn select_cpu(&mut self, task: TaskId, prev: Option<CpuId>, view: &SchedView) -> Option<CpuId> {
        self.assign(view);
        let home = *self.home.get(&task)?;
        let idle = |c: CpuId| view.online[c] && view.current[c].is_none();
        if let Some(p) = prev.filter(|&p| idle(p) && self.domain(p, view) == home) {
            return Some(p);
        }
        (0..view.online.len()).find(|&c| idle(c) && self.domain(c, view) == home)
    }

    fn goodness(&mut self, task: TaskId, cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        match self.home.get(&task) {
            Some(&h) if h == self.domain(cpu, view) => g.stock() + GANG_BONUS,
            // Away from home: run only if nothing at home can, and rather not the same thread
            // again, so that a thread stuck in the wrong domain gets free to move.
            Some(_) => {
                if g.same_cpu {
                    1
                } else {
                    2
                }
            }
            None => g.stock(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_deals_back_and_forth() {
        assert_eq!(snake(7, 3), vec![0, 1, 2, 2, 1, 0, 0]);
        assert_eq!(snake(4, 1), vec![0, 0, 0, 0]);
    }

    #[test]
    fn intensive_threads_are_split_between_domains() {
        // Four intensive (10, 9, 8, 7) and four light (1, 1, 0.5, 0.2) threads, two domains:
        // snake order 10→0, 9→1, 8→1, 7→0, 1→0, 1→1, .5→1, .2→0: loads 18.2 and 18.5.
        let v = [10.0, 1.0, 9.0, 1.0, 8.0, 0.5, 7.0, 0.2];
        let l = domain_loads(&v, 2);
        assert!(
            (l[0] - 18.2).abs() < 1e-12 && (l[1] - 18.5).abs() < 1e-12,
            "{l:?}"
        );
    }
}
