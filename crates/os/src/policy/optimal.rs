//! `optimal`: the ceiling. With the true (oracle) PR of every pair and of every task alone, choose
//! the best co-schedule of the runnable tasks exhaustively (small sets only) and gang-schedule it.
//!
//! Time slices give every task an equal share of the package, so a co-schedule is a rotation of
//! turns in which every task appears equally often: each turn runs a pair (both siblings busy) or
//! one task alone (its sibling halted, so it has the whole core). With every task in exactly two
//! turns (enough: the fractional matching polytope is half-integral), the system speedup is the
//! summed weight of the turns over their number, where a pair weighs PR_a + PR_b and a lone task
//! its PR alone. Nothing that gives tasks equal shares does better.

use super::decision::Decisions;
use super::gang::Gangs;
use super::pairing::Rotation;
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Goodness, Linux24Hooks, Needs, Policy, SchedView, TaskId};
use std::collections::BTreeMap;

/// Largest runnable set searched exhaustively.
pub const MAX_TASKS: usize = 8;
pub const PLAN_PERIOD_TICKS: u64 = 100;
/// The same second in 100 ms decision periods.
pub const PLAN_PERIODS: u64 = 10;

/// The true performance ratios the ceiling is given when it is built, by task label: of each pair
/// running on one core, and of each task alone on a core. Nothing real can know these; a
/// simulation computes them from its oracle.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PairTruth {
    pairs: BTreeMap<(String, String), (f64, f64)>,
    alone: BTreeMap<String, f64>,
}

impl PairTruth {
    /// `a`'s PR is `pr_a` and `b`'s `pr_b` when they share a core.
    pub fn insert_pair(&mut self, a: &str, b: &str, pr_a: f64, pr_b: f64) {
        self.pairs.insert((a.into(), b.into()), (pr_a, pr_b));
    }

    pub fn insert_alone(&mut self, a: &str, pr: f64) {
        self.alone.insert(a.into(), pr);
    }

    /// The PRs of `a` and `b` sharing a core, if known.
    pub fn pair(&self, a: &str, b: &str) -> Option<(f64, f64)> {
        if let Some(&v) = self.pairs.get(&(a.to_string(), b.to_string())) {
            return Some(v);
        }
        self.pairs
            .get(&(b.to_string(), a.to_string()))
            .map(|&(x, y)| (y, x))
    }

    pub fn alone(&self, a: &str) -> Option<f64> {
        self.alone.get(a).copied()
    }

    /// The weight of a pair turn (both PRs) and of a lone turn; unknown counts as 1.
    fn pair_weight(&self, a: &str, b: &str) -> f64 {
        self.pair(a, b).map_or(1.0, |(x, y)| x + y)
    }

    fn alone_weight(&self, a: &str) -> f64 {
        self.alone(a).unwrap_or(1.0)
    }
}

/// Goodness of a task outside the current turn while some task of the turn can run: low enough
/// that the CPU halts rather than run it.
const SUPPRESSED: i64 = -2000;

pub struct Optimal {
    truth: PairTruth,
    gangs: Gangs,
    /// The runnable tasks the decision side's schedule was made for.
    planned_for: Vec<TaskKey>,
    rotation: Rotation,
}

impl Optimal {
    pub fn new(truth: PairTruth) -> Self {
        Optimal {
            truth,
            gangs: Gangs::default(),
            planned_for: Vec::new(),
            rotation: Rotation::default(),
        }
    }
}

/// The best equal-share co-schedule of `tasks`: every task in exactly two turns (two tasks
/// together, or one alone), maximising the mean turn weight. Returns the mean and the turns;
/// `None` without tasks.
pub fn best_schedule<T: Copy>(
    tasks: &[T],
    pair: &dyn Fn(T, T) -> f64,
    alone: &dyn Fn(T) -> f64,
) -> Option<(f64, Vec<Vec<T>>)> {
    let n = tasks.len();
    if n == 0 {
        return None;
    }
    let pw: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        0.0
                    } else {
                        pair(tasks[i], tasks[j])
                    }
                })
                .collect()
        })
        .collect();
    let aw: Vec<f64> = (0..n).map(|i| alone(tasks[i])).collect();
    let mut search = Search {
        pw,
        aw,
        deg: vec![2; n],
        turns: Vec::new(),
        best: (f64::NEG_INFINITY, Vec::new()),
    };
    search.go(0.0, None);
    let (v, t) = search.best;
    Some((
        v,
        t.into_iter()
            .map(|(i, j)| {
                if i == j {
                    vec![tasks[i]]
                } else {
                    vec![tasks[i], tasks[j]]
                }
            })
            .collect(),
    ))
}

/// The exhaustive search of [`best_schedule`], over task indices.
struct Search {
    /// Weights of pairs and of lone turns.
    pw: Vec<Vec<f64>>,
    aw: Vec<f64>,
    /// Turns each task still needs.
    deg: Vec<u8>,
    /// Turns so far: (i, j), with j == i for a lone turn.
    turns: Vec<(usize, usize)>,
    best: (f64, Vec<(usize, usize)>),
}

impl Search {
    fn go(&mut self, sum: f64, last: Option<(usize, usize)>) {
        let n = self.deg.len();
        let Some(i) = (0..n).find(|&i| self.deg[i] > 0) else {
            let mean = sum / self.turns.len() as f64;
            if mean > self.best.0 {
                self.best = (mean, self.turns.clone());
            }
            return;
        };
        // Partners of i in non-decreasing order (i itself = alone), so each schedule is built once.
        let start = match last {
            Some((li, lj)) if li == i => lj,
            _ => i,
        };
        for j in start..n {
            if j != i
                && (self.deg[j] == 0 || self.turns.iter().filter(|&&t| t == (i, j)).count() >= 2)
            {
                continue;
            }
            let w = if j == i { self.aw[i] } else { self.pw[i][j] };
            self.deg[i] -= 1;
            if j != i {
                self.deg[j] -= 1;
            }
            self.turns.push((i, j));
            self.go(sum + w, Some((i, j)));
            self.turns.pop();
            self.deg[i] += 1;
            if j != i {
                self.deg[j] += 1;
            }
        }
    }
}

impl Policy for Optimal {
    fn name(&self) -> &str {
        "optimal"
    }

    fn needs(&self) -> Needs {
        Needs::CORE_GROUPS
    }

    /// The best schedule's turns rotate over the cores, each turn a core-scheduling group of
    /// its own so that a lone turn has its core to itself.
    fn decide(&mut self, view: &PeriodView) -> Decisions {
        let runnable: Vec<TaskKey> = view.runnable().map(|t| t.key).collect();
        if view.index.is_multiple_of(PLAN_PERIODS) || runnable != self.planned_for {
            let label = |k: TaskKey| view.task(k).map_or("", |t| t.label.as_str());
            let turns = if runnable.len() > MAX_TASKS {
                Vec::new()
            } else {
                let pair = |a: TaskKey, b: TaskKey| self.truth.pair_weight(label(a), label(b));
                let alone = |a: TaskKey| self.truth.alone_weight(label(a));
                best_schedule(&runnable, &pair, &alone).map_or(Vec::new(), |(_, t)| t)
            };
            self.rotation.set(turns);
            self.planned_for = runnable;
        }
        self.rotation.decide(view, true)
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Optimal {
    fn plan_period_ticks(&self) -> u64 {
        PLAN_PERIOD_TICKS
    }

    /// Lone turns halt a sibling, so every turn change must wake the package.
    fn take_resched_request(&mut self) -> bool {
        self.gangs.take_changed()
    }

    fn plan(&mut self, view: &SchedView) {
        let runnable: Vec<TaskId> = (0..view.tasks.len())
            .filter(|&i| view.tasks[i].runnable)
            .collect();
        if runnable.len() > MAX_TASKS {
            self.gangs.set(Vec::new(), view.tick);
            return;
        }
        let name = |t: TaskId| &*view.tasks[t].name;
        let pair = |a: TaskId, b: TaskId| self.truth.pair_weight(name(a), name(b));
        let alone = |a: TaskId| self.truth.alone_weight(name(a));
        match best_schedule(&runnable, &pair, &alone) {
            Some((_, turns)) => self.gangs.set(turns, view.tick),
            None => self.gangs.set(Vec::new(), view.tick),
        }
    }

    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        if cpu == view.first_cpu() {
            self.gangs.advance(view);
        }
    }

    fn goodness(&mut self, task: TaskId, _cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        if self.gangs.bonus(task) > 0 {
            return g.stock() + self.gangs.bonus(task);
        }
        // A lone turn halts the sibling: others wait while a member of the turn can run.
        if self.gangs.current_can_run(view) {
            SUPPRESSED
        } else {
            g.stock()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w4(a: usize, b: usize) -> f64 {
        match (a.min(b), a.max(b)) {
            (0, 1) | (2, 3) => 1.0,
            (0, 2) => 1.5,
            (1, 3) => 1.4,
            (0, 3) => 1.1,
            (1, 2) => 1.2,
            _ => unreachable!(),
        }
    }

    #[test]
    fn four_tasks_run_the_best_matching() {
        // Matchings: {02,13} mean 2.9/2 = 1.45; {03,12} 1.15; {01,23} 1.0; a 4-cycle 0-2-1-3 has
        // mean 5.2/4 = 1.3; lone turns weigh 1.0. The best is the matching 02, 13 (twice each).
        let (v, mut t) = best_schedule(&[0, 1, 2, 3], &w4, &|_| 1.0).unwrap();
        assert!((v - 1.45).abs() < 1e-12, "{v}");
        t.sort();
        assert_eq!(t, vec![vec![0, 2], vec![0, 2], vec![1, 3], vec![1, 3]]);
    }

    #[test]
    fn a_lone_turn_wins_when_pairs_are_poor() {
        // Three tasks: 0 and 2 pair well (1.6), others poorly (0.9); alone each runs at 1.0.
        // Triangle: (1.6 + 0.9 + 0.9) / 3 = 1.133. Pair 0-2 and task 1 alone, twice each:
        // (1.6 + 1.6 + 1.0 + 1.0) / 4 = 1.3.
        let w = |a: usize, b: usize| {
            if a.min(b) == 0 && a.max(b) == 2 {
                1.6
            } else {
                0.9
            }
        };
        let (v, mut t) = best_schedule(&[0, 1, 2], &w, &|_| 1.0).unwrap();
        assert!((v - 1.3).abs() < 1e-12, "{v}");
        t.sort();
        assert_eq!(t, vec![vec![0, 2], vec![0, 2], vec![1], vec![1]]);
    }

    #[test]
    fn good_pairs_beat_running_alone() {
        let (v, _) = best_schedule(&[0, 1], &|_, _| 1.2, &|_| 1.0).unwrap();
        assert!((v - 1.2).abs() < 1e-12);
    }
}
