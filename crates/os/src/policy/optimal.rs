//! `optimal`: the ceiling. With the true (oracle) PR of every pair, choose the pairing of the
//! runnable tasks with the highest total PR (exhaustively: small sets only) and gang-schedule it.
//! Time slices still give every task an equal share, so no fixed-share schedule does better.

use super::gang::Gangs;
use super::{CpuId, Goodness, Policy, SchedView, TaskId};

/// Largest runnable set searched exhaustively (12 tasks: 10,395 pairings).
pub const MAX_TASKS: usize = 12;
pub const PLAN_PERIOD_TICKS: u64 = 100;

pub struct Optimal {
    gangs: Gangs,
}

impl Optimal {
    pub fn new() -> Self {
        Optimal {
            gangs: Gangs::default(),
        }
    }
}

impl Default for Optimal {
    fn default() -> Self {
        Self::new()
    }
}

/// The pairing of `tasks` (a task may be left alone when their number is odd) maximising the sum
/// of `weight(a, b)` over pairs and `alone(a)` over singletons.
pub fn best_pairing(
    tasks: &[TaskId],
    weight: &dyn Fn(TaskId, TaskId) -> f64,
    alone: &dyn Fn(TaskId) -> f64,
) -> (f64, Vec<Vec<TaskId>>) {
    fn go(
        rest: &[TaskId],
        singles_left: usize,
        weight: &dyn Fn(TaskId, TaskId) -> f64,
        alone: &dyn Fn(TaskId) -> f64,
    ) -> (f64, Vec<Vec<TaskId>>) {
        let Some((&first, others)) = rest.split_first() else {
            return (0.0, Vec::new());
        };
        let mut best = (f64::NEG_INFINITY, Vec::new());
        if singles_left > 0 {
            let (v, mut g) = go(others, singles_left - 1, weight, alone);
            if v + alone(first) > best.0 {
                g.insert(0, vec![first]);
                best = (v + alone(first), g);
            }
        }
        for i in 0..others.len() {
            let partner = others[i];
            let remaining: Vec<TaskId> = others
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &t)| t)
                .collect();
            let (v, mut g) = go(&remaining, singles_left, weight, alone);
            let total = v + weight(first, partner);
            if total > best.0 {
                g.insert(0, vec![first, partner]);
                best = (total, g);
            }
        }
        best
    }
    go(tasks, tasks.len() % 2, weight, alone)
}

impl Policy for Optimal {
    fn name(&self) -> &str {
        "optimal"
    }

    fn needs_true_pairs(&self) -> bool {
        true
    }

    fn plan_period_ticks(&self) -> u64 {
        PLAN_PERIOD_TICKS
    }

    fn plan(&mut self, view: &SchedView) {
        let runnable: Vec<TaskId> = (0..view.tasks.len())
            .filter(|&i| view.tasks[i].runnable)
            .collect();
        if runnable.len() < 2 || runnable.len() > MAX_TASKS {
            self.gangs.set(Vec::new(), view.tick);
            return;
        }
        let weight = |a: TaskId, b: TaskId| view.pair_true(a, b).map_or(1.0, |(x, y)| x + y);
        let alone = |a: TaskId| view.pair_true(a, a).map_or(1.0, |(x, _)| x);
        let (_, gangs) = best_pairing(&runnable, &weight, &alone);
        self.gangs.set(gangs, view.tick);
    }

    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if cpu == 0 {
            self.gangs.advance(view);
        }
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, _view: &SchedView) -> i64 {
        g.stock() + self.gangs.bonus(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_best_pairing_of_four_by_hand() {
        // Pair sums: (0,1)=1.0 (2,3)=1.0 → 2.0; (0,2)=1.5 (1,3)=1.4 → 2.9; (0,3)=1.1 (1,2)=1.2 → 2.3.
        let w = |a: usize, b: usize| match (a.min(b), a.max(b)) {
            (0, 1) | (2, 3) => 1.0,
            (0, 2) => 1.5,
            (1, 3) => 1.4,
            (0, 3) => 1.1,
            (1, 2) => 1.2,
            _ => unreachable!(),
        };
        let (v, g) = best_pairing(&[0, 1, 2, 3], &w, &|_| 1.0);
        assert!((v - 2.9).abs() < 1e-12);
        assert_eq!(g, vec![vec![0, 2], vec![1, 3]]);
    }

    #[test]
    fn odd_sets_leave_the_best_single_alone() {
        let w = |a: usize, b: usize| if a.min(b) == 0 { 0.5 } else { 1.3 };
        let (v, g) = best_pairing(&[0, 1, 2], &w, &|t| if t == 0 { 1.0 } else { 0.0 });
        assert!((v - 2.3).abs() < 1e-12, "{v}");
        assert_eq!(g, vec![vec![0], vec![1, 2]]);
    }
}
