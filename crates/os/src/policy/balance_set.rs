//! `balance-set-perf` and `balance-set-fair`: Denning's balance-set principle applied to a shared
//! L2 (Fedorova, Seltzer, Small & Nussbaum 2005, §4.2). Run, one time slice at a time, a group of
//! threads — as many as there are hardware contexts — whose estimated miss ratio is low.
//!
//! §4.2.1, as implemented here:
//!
//! 1. *Threshold* (whenever the set of runnable threads changes). The most cache-greedy thread is
//!    the one whose own histogram gives the highest miss ratio — here its miss ratio in its share
//!    of the cache, the same per-thread number AVG averages, so that every thread's best group
//!    passes the threshold and none starves. The smallest estimated miss ratio of any group
//!    containing it is the threshold.
//! 2. *Candidates*. Every group of `contexts` threads is estimated with AVG (the mean of its
//!    members' per-thread values); groups above the threshold are discarded. A thread may belong
//!    to several candidates.
//! 3. *Per time slice*, choose a candidate and run exactly its members, keeping track of what each
//!    thread has received:
//!    - PERF (§4.2.2): the candidate with the lowest estimate that contains a thread not yet run
//!      in the current round; a round ends when every thread has run. (The paper's wording allows
//!      "only unselected threads", which cannot cover 18 threads with groups of 8; "at least one"
//!      is the reading that works.)
//!    - FAIR (§4.2.2): the candidate containing the greatest number of the threads that have
//!      received the least processor time (in whole turns), lowest estimate first among ties.
//!
//! The emulation of §4.2.2 builds the same schedules offline ([`perf_schedule`],
//! [`fair_schedule`]: groups are picked until every thread is represented, then the schedule
//! repeats). The per-thread values come from a reuse-distance model (`smtsched-cachemodel`) through
//! [`PolicyName::build_for`]; without them every group estimates the same and the policy is a
//! plain round-robin gang scheduler.
//!
//! In the Linux 2.4 baseline the chosen group runs through goodness: members get
//! [`GANG_BONUS`]; while a member could still run on the choosing CPU, other threads get 0, and a
//! member does not take over a context another member holds, so a member whose slice is used up
//! starts a new epoch and carries on instead of yielding its context. A CPU with no member to run
//! takes anybody, so no context idles. Goodness cannot preempt: a new turn's members take the
//! contexts as the previous group's slices run out (see [`TURN_TICKS`]).

use super::decision::Decisions;
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Goodness, Linux24Hooks, Policy, SchedView, TaskId, GANG_BONUS};
use std::collections::BTreeMap;

/// Largest number of groups enumerated exhaustively; beyond it candidates are built greedily
/// (each thread with the best partners it can have), as the paper's §5 proposes.
pub const MAX_ENUMERATED_GROUPS: u64 = 2_000_000;

/// Ticks each chosen group runs. Goodness cannot preempt a running thread, so when a turn
/// begins the previous group's threads keep their contexts until their slices run out — up to
/// twice NICE_TO_TICKS(0) = 12 ticks, the most a Linux 2.4 counter carries. A turn of those
/// 12 ticks plus one slice of 6 gives every member at least a full slice of its own turn.
/// (Measured on the 18-thread mix at 48 KB: turns of 6 ticks keep about half of the emulated
/// gain, 18 and 60 ticks nearly all of it; see the README.)
pub const TURN_TICKS: u64 = 18;

/// A group of threads (indices into the thread list the candidates were built from) and its
/// estimated miss ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub members: Vec<usize>,
    pub estimate: f64,
}

/// The outcome of steps 1 and 2.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidates {
    /// Candidate groups, lowest estimate first.
    pub groups: Vec<Group>,
    pub threshold: f64,
    /// The most cache-greedy thread.
    pub greediest: usize,
    /// Groups estimated to find them (C(n, k), or fewer when built greedily).
    pub examined: u64,
    pub exhaustive: bool,
}

/// C(n, k), saturating.
pub fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut r: u128 = 1;
    for i in 0..k {
        r = r * (n - i) as u128 / (i + 1) as u128;
        if r > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    r as u64
}

/// Calls `f` with every `k`-subset of `0..n` in lexicographic order.
pub fn for_each_group(n: usize, k: usize, mut f: impl FnMut(&[usize])) {
    if k > n {
        return;
    }
    let mut idx: Vec<usize> = (0..k).collect();
    loop {
        f(&idx);
        // The rightmost index that can still move right.
        let mut i = k;
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            if idx[i] < n - k + i {
                break;
            }
            if i == 0 {
                return;
            }
        }
        idx[i] += 1;
        for j in i + 1..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

/// AVG over per-thread values: the mean of the members'.
pub fn avg_estimate(values: &[f64], members: &[usize]) -> f64 {
    members.iter().map(|&i| values[i]).sum::<f64>() / members.len().max(1) as f64
}

/// Steps 1 and 2 with AVG over `values` (each thread's miss ratio in its share of the cache):
/// the threshold and the candidate groups of `k`.
pub fn candidates(values: &[f64], k: usize) -> Candidates {
    candidates_with(values, k, &|m: &[usize]| avg_estimate(values, m))
}

/// Steps 1 and 2 with any group estimator (`estimate` of a sorted member list); `values` rank
/// the threads' greediness.
pub fn candidates_with(
    values: &[f64],
    k: usize,
    estimate: &(dyn Fn(&[usize]) -> f64 + Sync),
) -> Candidates {
    let n = values.len();
    let k = k.min(n).max(1);
    let greediest = (0..n)
        .max_by(|&a, &b| values[a].total_cmp(&values[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let total = binomial(n as u64, k as u64);
    if total <= MAX_ENUMERATED_GROUPS {
        let mut all: Vec<Group> = Vec::with_capacity(total as usize);
        for_each_group(n, k, |m| {
            all.push(Group {
                members: m.to_vec(),
                estimate: estimate(m),
            })
        });
        all.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
        let threshold = all
            .iter()
            .find(|g| g.members.contains(&greediest))
            .map_or(f64::INFINITY, |g| g.estimate);
        all.retain(|g| g.estimate <= threshold);
        return Candidates {
            groups: all,
            threshold,
            greediest,
            examined: total,
            exhaustive: true,
        };
    }
    // Too many groups: each thread with the k − 1 threads of lowest value.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let mut groups: Vec<Group> = (0..n)
        .map(|t| {
            let mut m: Vec<usize> = std::iter::once(t)
                .chain(order.iter().copied().filter(|&o| o != t).take(k - 1))
                .collect();
            m.sort_unstable();
            let estimate = estimate(&m);
            Group {
                members: m,
                estimate,
            }
        })
        .collect();
    groups.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
    groups.dedup_by(|a, b| a.members == b.members);
    let threshold = groups
        .iter()
        .find(|g| g.members.contains(&greediest))
        .map_or(f64::INFINITY, |g| g.estimate);
    groups.retain(|g| g.estimate <= threshold);
    Candidates {
        examined: n as u64,
        groups,
        threshold,
        greediest,
        exhaustive: false,
    }
}

/// PERF's next group: the lowest-estimate candidate with a member not yet `selected`.
pub fn next_perf(c: &Candidates, selected: &[bool]) -> Option<usize> {
    c.groups
        .iter()
        .position(|g| g.members.iter().any(|&m| !selected[m]))
}

/// FAIR's next group: the candidate with the most members at the lowest `level` (selections or
/// processor time received), the lowest estimate among ties.
pub fn next_fair(c: &Candidates, level: &[u64]) -> Option<usize> {
    let least = c
        .groups
        .iter()
        .flat_map(|g| g.members.iter().map(|&m| level[m]))
        .min()?;
    let mut best: Option<(usize, usize)> = None;
    for (i, g) in c.groups.iter().enumerate() {
        let k = g.members.iter().filter(|&&m| level[m] == least).count();
        if best.is_none_or(|b| k > b.1) {
            best = Some((i, k));
        }
    }
    best.map(|b| b.0)
}

/// The PERF schedule of §4.2.2: groups (indices into `c.groups`) until every thread of `0..n`
/// that appears in some candidate is represented.
pub fn perf_schedule(c: &Candidates, n: usize) -> Vec<usize> {
    let mut selected = vec![false; n];
    let mut out = Vec::new();
    while let Some(g) = next_perf(c, &selected) {
        for &m in &c.groups[g].members {
            selected[m] = true;
        }
        out.push(g);
    }
    out
}

/// The FAIR schedule of §4.2.2: picks by [`next_fair`] on selection counts until every thread
/// that appears in some candidate has been selected.
pub fn fair_schedule(c: &Candidates, n: usize) -> Vec<usize> {
    let mut count = vec![0u64; n];
    let present: Vec<bool> = (0..n)
        .map(|t| c.groups.iter().any(|g| g.members.contains(&t)))
        .collect();
    let mut out = Vec::new();
    while (0..n).any(|t| present[t] && count[t] == 0) {
        let Some(g) = next_fair(c, &count) else { break };
        for &m in &c.groups[g].members {
            count[m] += 1;
        }
        out.push(g);
    }
    out
}

/// Which balance-set thread-selection rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    Perf,
    Fair,
}

/// What the cache-aware policies know about each task, keyed by task name (a task set's display
/// names; give copies distinct names).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheInputs {
    /// Each task's estimated miss ratio in its share of the shared cache (AVG's per-thread term).
    pub partition_miss_ratio: BTreeMap<String, f64>,
    /// Each task's cache intensity alone (misses per 1000 instructions) — DI's sort key.
    pub intensity: BTreeMap<String, f64>,
    /// The last-level-cache domain of each logical CPU (DI); empty = one domain per package.
    pub domain_of_cpu: Vec<usize>,
}

/// The candidate set for one runnable set, over task identities `T` (simulator task indices on
/// Linux 2.4, task keys for decisions).
#[derive(Clone, Debug)]
struct Plan<T> {
    tasks: Vec<T>,
    cands: Candidates,
    /// PERF: members run in this round.
    selected: Vec<bool>,
    /// FAIR: the progress each task had when the plan was made (ticks, or CPU nanoseconds).
    base: Vec<u64>,
}

impl<T: Copy> Plan<T> {
    fn new(tasks: Vec<T>, values: &[f64], contexts: usize, base: Vec<u64>) -> Self {
        Plan {
            selected: vec![false; tasks.len()],
            cands: candidates(values, contexts),
            tasks,
            base,
        }
    }

    /// The next group by `selection`; `turns` gives each task's whole turns received since the
    /// plan was made (FAIR's level).
    fn next(&mut self, selection: Selection, turns: &[u64]) -> Option<Vec<T>> {
        let g = match selection {
            Selection::Perf => {
                if self.selected.iter().all(|&s| s) {
                    self.selected.iter_mut().for_each(|s| *s = false);
                }
                next_perf(&self.cands, &self.selected).or_else(|| {
                    self.selected.iter_mut().for_each(|s| *s = false);
                    next_perf(&self.cands, &self.selected)
                })
            }
            Selection::Fair => next_fair(&self.cands, turns),
        }?;
        let members = &self.cands.groups[g].members;
        for &m in members {
            self.selected[m] = true;
        }
        Some(members.iter().map(|&m| self.tasks[m]).collect())
    }
}

/// The balance-set scheduler.
pub struct BalanceSet {
    selection: Selection,
    values: BTreeMap<String, f64>,
    plan: Option<Plan<TaskId>>,
    /// Members of the group running now.
    current: Vec<TaskId>,
    turn_started: u64,
    /// The decision side's plan.
    decision_plan: Option<Plan<TaskKey>>,
}

impl BalanceSet {
    pub fn new(selection: Selection, values: BTreeMap<String, f64>) -> Self {
        BalanceSet {
            selection,
            values,
            plan: None,
            current: Vec::new(),
            turn_started: 0,
            decision_plan: None,
        }
    }

    fn value(&self, label: &str) -> f64 {
        self.values.get(label).copied().unwrap_or(0.0)
    }

    fn replan(&mut self, view: &SchedView, runnable: Vec<TaskId>) {
        let contexts = view.online.iter().filter(|&&o| o).count();
        self.current.clear();
        if runnable.len() <= contexts {
            // Everybody fits: nothing to choose.
            self.plan = None;
            return;
        }
        let values: Vec<f64> = runnable
            .iter()
            .map(|&t| self.value(&view.tasks[t].name))
            .collect();
        let base = runnable.iter().map(|&t| view.tasks[t].ticks_run).collect();
        self.plan = Some(Plan::new(runnable, &values, contexts, base));
    }

    fn choose(&mut self, view: &SchedView) {
        let Some(plan) = self.plan.as_mut() else {
            return;
        };
        let turns: Vec<u64> = plan
            .tasks
            .iter()
            .zip(&plan.base)
            .map(|(&t, &b)| view.tasks[t].ticks_run.saturating_sub(b) / TURN_TICKS)
            .collect();
        if let Some(g) = plan.next(self.selection, &turns) {
            self.current = g;
        }
        self.turn_started = view.tick;
    }
}

impl Policy for BalanceSet {
    fn name(&self) -> &str {
        match self.selection {
            Selection::Perf => "balance-set-perf",
            Selection::Fair => "balance-set-fair",
        }
    }

    /// One group per period (a period is a turn): its members form the gang turn, and the others
    /// yield to them.
    fn decide(&mut self, view: &PeriodView) -> Decisions {
        let runnable: Vec<TaskKey> = view.runnable().map(|t| t.key).collect();
        let contexts = view.contexts();
        if runnable.len() <= contexts {
            self.decision_plan = None;
            return Decisions::none();
        }
        let cpu_ns = |k: TaskKey| view.task(k).map_or(0, |t| t.total_cpu_ns);
        if self
            .decision_plan
            .as_ref()
            .is_none_or(|p| p.tasks != runnable)
        {
            let values: Vec<f64> = runnable
                .iter()
                .map(|&k| self.value(&view.task(k).expect("runnable").label))
                .collect();
            let base = runnable.iter().map(|&k| cpu_ns(k)).collect();
            self.decision_plan = Some(Plan::new(runnable, &values, contexts, base));
        }
        let plan = self.decision_plan.as_mut().expect("made above");
        let turns: Vec<u64> = plan
            .tasks
            .iter()
            .zip(&plan.base)
            .map(|(&k, &b)| cpu_ns(k).saturating_sub(b) / view.length_ns.max(1))
            .collect();
        let mut d = Decisions::none();
        d.gang = plan
            .next(self.selection, &turns)
            .map(|g| g.into_iter().collect());
        d
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for BalanceSet {
    fn tick(&mut self, cpu: CpuId, view: &SchedView) {
        // Once per tick, on the first online CPU.
        if cpu != view.first_cpu() {
            return;
        }
        let runnable: Vec<TaskId> = (0..view.tasks.len())
            .filter(|&t| view.tasks[t].runnable)
            .collect();
        let stale = match &self.plan {
            Some(p) => p.tasks != runnable,
            None => {
                runnable.len() > view.online.iter().filter(|&&o| o).count()
                    && self.current.is_empty()
            }
        };
        if stale {
            self.replan(view, runnable);
            self.choose(view);
        } else if view.tick >= self.turn_started + TURN_TICKS {
            self.choose(view);
        }
    }

    fn goodness(&mut self, task: TaskId, cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        if self.current.is_empty() {
            return g.stock();
        }
        if self.current.contains(&task) {
            // A member keeps its context: another member does not take it over when its slice
            // ends (that forces a new epoch instead, and it carries on).
            let holder = view.current.get(cpu).copied().flatten();
            if let Some(h) = holder.filter(|&h| h != task && self.current.contains(&h)) {
                if view.tasks.get(h).is_some_and(|v| v.runnable) {
                    return 0;
                }
            }
            return g.stock() + GANG_BONUS;
        }
        let member_available = self.current.iter().any(|&m| {
            view.tasks.get(m).is_some_and(|v| {
                v.runnable && (v.running_on.is_none() || v.running_on == Some(cpu))
            })
        });
        if member_available {
            0
        } else {
            g.stock()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerates_every_group_once() {
        let mut seen = Vec::new();
        for_each_group(5, 3, |m| seen.push(m.to_vec()));
        assert_eq!(seen.len(), 10);
        assert_eq!(seen[0], vec![0, 1, 2]);
        assert_eq!(seen[9], vec![2, 3, 4]);
        let mut n = 0u64;
        for_each_group(18, 8, |_| n += 1);
        assert_eq!(n, 43_758);
        assert_eq!(binomial(18, 8), 43_758);
        assert_eq!(binomial(100, 32), u64::MAX);
    }

    /// Six threads, groups of three, AVG. Values (per-thread miss ratios):
    /// t0 .10, t1 .20, t2 .30, t3 .40, t4 .50, t5 .90 (the greediest).
    /// The best group with t5 is {t0, t1, t5}: (.1 + .2 + .9) / 3 = .4 — the threshold.
    /// Candidates are the groups with mean ≤ .4 (sum ≤ 1.2).
    #[test]
    fn threshold_and_candidates_by_hand() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        assert_eq!(c.greediest, 5);
        assert!((c.threshold - 0.4).abs() < 1e-12);
        assert_eq!(c.examined, 20);
        // Sums ≤ 1.2: {0,1,2}=.6 {0,1,3}=.7 {0,1,4}=.8 {0,2,3}=.8 {0,2,4}=.9 {1,2,3}=.9
        // {0,3,4}=1.0 {1,2,4}=1.0 {1,3,4}=1.1 {2,3,4}=1.2 {0,1,5}=1.2.
        assert_eq!(c.groups.len(), 11);
        assert_eq!(c.groups[0].members, vec![0, 1, 2]);
        assert!(c.groups.iter().all(|g| g.estimate <= 0.4 + 1e-12));
        assert!(c.groups.iter().any(|g| g.members == vec![0, 1, 5]));
    }

    #[test]
    fn perf_takes_the_best_group_with_someone_new_until_all_ran() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        let s = perf_schedule(&c, 6);
        let groups: Vec<&Vec<usize>> = s.iter().map(|&g| &c.groups[g].members).collect();
        // {0,1,2} first; the next best with a new thread is {0,1,3}; then {0,1,4}; t5 only in
        // {0,1,5}.
        assert_eq!(
            groups,
            vec![
                &vec![0, 1, 2],
                &vec![0, 1, 3],
                &vec![0, 1, 4],
                &vec![0, 1, 5]
            ]
        );
    }

    #[test]
    fn fair_takes_the_group_with_most_least_selected_threads() {
        let v = [0.10, 0.20, 0.30, 0.40, 0.50, 0.90];
        let c = candidates(&v, 3);
        let s = fair_schedule(&c, 6);
        let groups: Vec<&Vec<usize>> = s.iter().map(|&g| &c.groups[g].members).collect();
        // {0,1,2}; then the lowest group made only of unselected threads 3, 4, 5 — none passes
        // the threshold, so two of them: {0,3,4} (1.0) beats {2,3,4} and {1,3,4}; then t5 with the
        // best available partners {0,1,5}.
        assert_eq!(groups, vec![&vec![0, 1, 2], &vec![0, 3, 4], &vec![0, 1, 5]]);
    }

    #[test]
    fn greedy_candidates_when_there_are_too_many_groups() {
        let v: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        let c = candidates(&v, 32);
        assert!(!c.exhaustive);
        assert_eq!(c.greediest, 99);
        // The greediest thread's group is the threshold: 99 with 0..31.
        let want = ((0..31).map(|i| i as f64).sum::<f64>() + 99.0) / 100.0 / 32.0;
        assert!((c.threshold - want).abs() < 1e-12);
        // Every thread has a candidate group.
        let s = perf_schedule(&c, 100);
        let mut seen = [false; 100];
        for g in s {
            for &m in &c.groups[g].members {
                seen[m] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
