//! Pairings through decisions, shared by the policies that choose which tasks share a core
//! (`tryhard`, `plan`, `sos`, `optimal`): what a period shows about pairs, a greedy pairing from
//! pair scores, and the rotation that realises a pairing on the machine's cores.
//!
//! A pairing is a list of groups (two tasks that should share a core, or one alone). When there
//! are no more groups than cores, each group is pinned to a core of its own every period. With
//! more, the groups take turns: each period the next groups in order, one per core, are pinned to
//! a core and form the gang turn, so every task gets the same number of turns and the others yield
//! (they run only where a member leaves a CPU idle). A core is never left idle to keep a pair
//! together: while a turn has fewer groups than cores, its pairs are split.

use super::decision::Decisions;
use super::view::{PeriodView, TaskKey};
use smtsched_model::CpuSet;

/// A pair of tasks seen sharing a core for most of a period, and the sum of their PR estimates
/// there (the thesis's "combined performance").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairSeen {
    pub a: TaskKey,
    pub b: TaskKey,
    pub combined: f64,
}

/// The pairs the view shows: tasks that were each other's main co-runner and both have an
/// estimate, each pair once (`a < b`).
pub fn pairs_seen(view: &PeriodView) -> Vec<PairSeen> {
    let mut out = Vec::new();
    for t in &view.tasks {
        let Some(partner) = t.main_corunner().filter(|p| t.key < *p) else {
            continue;
        };
        let Some(u) = view.task(partner) else {
            continue;
        };
        if u.main_corunner() != Some(t.key) {
            continue;
        }
        if let (Some(pa), Some(pb)) = (t.pr_estimate, u.pr_estimate) {
            out.push(PairSeen {
                a: t.key,
                b: u.key,
                combined: pa + pb,
            });
        }
    }
    out
}

/// Pairs `tasks` greedily: pairs never scored first, in key order (optimism: an untried pair
/// may be the best, and trying it is the only way to know), then scored pairs best first (ties
/// by keys), each task at most once; an odd task out runs alone.
pub fn greedy_pairs(
    tasks: &[TaskKey],
    score: &dyn Fn(TaskKey, TaskKey) -> Option<f64>,
) -> Vec<Vec<TaskKey>> {
    let mut pairs: Vec<(Option<f64>, TaskKey, TaskKey)> = Vec::new();
    for (i, &a) in tasks.iter().enumerate() {
        for &b in &tasks[i + 1..] {
            pairs.push((score(a, b), a, b));
        }
    }
    let rank = |s: Option<f64>| s.map_or(f64::INFINITY, |v| v);
    pairs.sort_by(|x, y| {
        rank(y.0)
            .total_cmp(&rank(x.0))
            .then(x.1.cmp(&y.1))
            .then(x.2.cmp(&y.2))
    });
    let mut used: Vec<TaskKey> = Vec::new();
    let mut groups = Vec::new();
    for (_, a, b) in pairs {
        if !used.contains(&a) && !used.contains(&b) {
            used.extend([a, b]);
            groups.push(vec![a, b]);
        }
    }
    groups.extend(tasks.iter().filter(|t| !used.contains(t)).map(|&t| vec![t]));
    groups
}

/// Groups taking turns on the cores; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct Rotation {
    groups: Vec<Vec<TaskKey>>,
    /// The group whose turn comes next.
    next: usize,
}

impl Rotation {
    /// Replaces the groups; the turn order carries on from where it was.
    pub fn set(&mut self, groups: Vec<Vec<TaskKey>>) {
        if groups != self.groups {
            self.next %= groups.len().max(1);
            self.groups = groups;
        }
    }

    pub fn groups(&self) -> &[Vec<TaskKey>] {
        &self.groups
    }

    /// The decisions for the coming period. Groups without a runnable member skip their turn.
    /// With `isolate`, each group of the turn is also a core-scheduling group of its own, so a
    /// task meant to run alone has its core to itself.
    pub fn decide(&mut self, view: &PeriodView, isolate: bool) -> Decisions {
        let runnable = |k: &TaskKey| view.task(*k).is_some_and(|t| t.runnable);
        let n = self.groups.len();
        let live: Vec<usize> = (0..n)
            .map(|i| (self.next + i) % n)
            .filter(|&i| self.groups[i].iter().any(runnable))
            .collect();
        let cores = view.cores();
        if live.is_empty() || cores.is_empty() {
            return Decisions::none();
        }
        // The next groups in order, one per core, none sharing a task with another.
        let mut turn: Vec<usize> = Vec::new();
        for &i in &live {
            if turn.len() == cores.len() {
                break;
            }
            let overlaps = turn
                .iter()
                .any(|&j| self.groups[j].iter().any(|k| self.groups[i].contains(k)));
            if !overlaps {
                turn.push(i);
            }
        }
        self.next = (turn[turn.len() - 1] + 1) % n;
        let turn_groups: Vec<Vec<TaskKey>> = turn.iter().map(|&i| self.groups[i].clone()).collect();
        let turn_groups = split_onto_free_cores(turn_groups, cores.len(), &runnable);
        let mut d = Decisions::none();
        let mut free: Vec<CpuSet> = cores;
        for (g, group) in turn_groups.iter().enumerate() {
            // The core its first member last ran on, if still free (fewer migrations).
            let home = group
                .iter()
                .find_map(|k| view.task(*k).and_then(|t| t.last_cpu))
                .and_then(|c| free.iter().position(|core| core.contains(c)))
                .unwrap_or(0);
            let core = free.remove(home);
            for &k in group.iter().filter(|k| view.task(**k).is_some()) {
                let td = d.task_mut(k);
                td.affinity = Some(core.clone());
                if isolate {
                    td.core_group = Some(g as u32 + 1);
                }
            }
        }
        if live.len() > turn.len() || isolate {
            d.gang = Some(
                turn_groups
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|k| view.task(*k).is_some())
                    .collect(),
            );
        }
        d
    }
}

/// A turn's groups with pairs split while cores would otherwise idle: two tasks share a core
/// only when there are more of them than cores (the last pairs of the turn are split first, the
/// second runnable member taking a core of its own). Two tasks on one core each run slower than
/// on a core of their own, so a pair beside an idle core only loses throughput; the pairing
/// policies' papers measured one core, where the question does not arise.
fn split_onto_free_cores(
    mut groups: Vec<Vec<TaskKey>>,
    cores: usize,
    runnable: &dyn Fn(&TaskKey) -> bool,
) -> Vec<Vec<TaskKey>> {
    while groups.len() < cores {
        let Some(i) = groups
            .iter()
            .rposition(|g| g.iter().filter(|k| runnable(k)).count() >= 2)
        else {
            break;
        };
        let last = groups[i]
            .iter()
            .rposition(runnable)
            .expect("the group has runnable members");
        let alone = groups[i].remove(last);
        groups.insert(i + 1, vec![alone]);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::view::{Corunner, TaskSample};
    use smtsched_model::topology::Topology;
    use std::sync::Arc;

    pub(crate) fn key(pid: u32) -> TaskKey {
        TaskKey { pid, start_time: 0 }
    }

    fn sample(pid: u32, runnable: bool) -> TaskSample {
        TaskSample {
            runnable,
            ..TaskSample::ran(key(pid), &format!("t{pid}"), 0)
        }
    }

    /// A view of `n` runnable tasks on one core of two siblings (CPUs 0-1), or two such cores.
    fn view(n: u32, cores: u32) -> PeriodView {
        let m = smtsched_model::load_machine("northwood", &[]).unwrap();
        let cpus = if cores == 1 { "0-1" } else { "0-3" };
        PeriodView {
            index: 1,
            now_ns: 0,
            length_ns: 100_000_000,
            topology: Arc::new(Topology::of_machine(
                &m,
                Some(&CpuSet::parse(cpus).unwrap()),
            )),
            tasks: (1..=n).map(|p| sample(p, true)).collect(),
        }
    }

    #[test]
    fn untried_pairs_first_then_the_best_scored() {
        // Five tasks, every pair scored but 2-5: 2-5 is tried first; of the rest, 1-3 (1.5)
        // beats 3-4 (1.4) and 1-4 (1.2), leaving 4 alone.
        let score = |a: TaskKey, b: TaskKey| match (a.pid.min(b.pid), a.pid.max(b.pid)) {
            (2, 5) => None,
            (1, 3) => Some(1.5),
            (3, 4) => Some(1.4),
            (1, 4) => Some(1.2),
            _ => Some(1.0),
        };
        let tasks: Vec<TaskKey> = (1..=5).map(key).collect();
        let g = greedy_pairs(&tasks, &score);
        assert_eq!(
            g,
            vec![vec![key(2), key(5)], vec![key(1), key(3)], vec![key(4)]]
        );
        // With everything scored it is plain greedy.
        let all = |a: TaskKey, b: TaskKey| Some(score(a, b).unwrap_or(0.5));
        let g = greedy_pairs(&tasks, &all);
        assert_eq!(
            g,
            vec![vec![key(1), key(3)], vec![key(2), key(4)], vec![key(5)]]
        );
    }

    #[test]
    fn pairs_take_turns_on_one_core_and_everyone_else_yields() {
        let v = view(5, 1);
        let mut r = Rotation::default();
        r.set(vec![
            vec![key(1), key(2)],
            vec![key(3), key(4)],
            vec![key(5)],
        ]);
        let turns: Vec<Vec<u32>> = (0..6)
            .map(|_| {
                let d = r.decide(&v, false);
                d.gang.unwrap().iter().map(|k| k.pid).collect()
            })
            .collect();
        assert_eq!(
            turns,
            vec![
                vec![1, 2],
                vec![3, 4],
                vec![5],
                vec![1, 2],
                vec![3, 4],
                vec![5]
            ]
        );
    }

    #[test]
    fn as_many_groups_as_cores_are_pinned_without_a_gang() {
        let v = view(4, 2);
        let mut r = Rotation::default();
        r.set(vec![vec![key(1), key(2)], vec![key(3), key(4)]]);
        let d = r.decide(&v, false);
        assert_eq!(d.gang, None);
        let a = |p| d.tasks[&key(p)].affinity.clone().unwrap().to_string();
        assert_eq!(
            (a(1), a(2), a(3), a(4)),
            ("0-1".into(), "0-1".into(), "2-3".into(), "2-3".into())
        );
    }

    #[test]
    fn a_pair_is_split_rather_than_leave_a_core_idle() {
        // Two tasks paired on two cores: a core each. Three on two: one pair, one alone.
        let mut r = Rotation::default();
        r.set(vec![vec![key(1), key(2)]]);
        let d = r.decide(&view(2, 2), false);
        assert_eq!(d.gang, None);
        let a = |d: &Decisions, p| d.tasks[&key(p)].affinity.clone().unwrap().to_string();
        assert_eq!((a(&d, 1), a(&d, 2)), ("0-1".into(), "2-3".into()));
        r.set(vec![vec![key(1), key(2)], vec![key(3)]]);
        let d = r.decide(&view(3, 2), false);
        assert_eq!(
            (a(&d, 1), a(&d, 2), a(&d, 3)),
            ("0-1".into(), "0-1".into(), "2-3".into())
        );
        // Only a runnable member takes a core: a pair of which one sleeps stays one group.
        let mut v = view(2, 2);
        v.tasks[1].runnable = false;
        r.set(vec![vec![key(1), key(2)]]);
        let d = r.decide(&v, true);
        assert_eq!(d.tasks[&key(1)].core_group, d.tasks[&key(2)].core_group);
    }

    #[test]
    fn a_group_with_nobody_runnable_skips_its_turn() {
        let mut v = view(4, 1);
        v.tasks[2].runnable = false; // task 3
        v.tasks[3].runnable = false; // task 4
        let mut r = Rotation::default();
        r.set(vec![vec![key(1), key(2)], vec![key(3), key(4)]]);
        for _ in 0..3 {
            let d = r.decide(&v, false);
            assert_eq!(d.gang, None, "one live group fits the one core");
            assert!(d.tasks.contains_key(&key(1)));
        }
    }

    #[test]
    fn only_mutual_main_corunners_with_estimates_count_as_seen() {
        let mut v = view(3, 1);
        let ran = |s: &mut TaskSample, with: u32, overlap: u64, est: f64| {
            s.cpu_ns = 100;
            s.corunners = vec![Corunner {
                task: key(with),
                overlap_ns: overlap,
            }];
            s.pr_estimate = Some(est);
        };
        ran(&mut v.tasks[0], 2, 80, 0.6);
        ran(&mut v.tasks[1], 1, 80, 0.7);
        ran(&mut v.tasks[2], 1, 40, 0.9); // less than half its time beside task 1
        let seen = pairs_seen(&v);
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].a, seen[0].b), (key(1), key(2)));
        assert!((seen[0].combined - 1.3).abs() < 1e-12);
    }
}
