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
//! The candidate search and the two rules are `smtsched_cachemodel::balance`'s; the emulation
//! of §4.2.2 builds the same schedules offline (`perf_schedule`, `fair_schedule`: groups are
//! picked until every thread is represented, then the schedule repeats). The per-thread values come from a reuse-distance model (`smtsched-cachemodel`) through
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

use smtsched_cachemodel::balance::{candidates, next_fair, next_perf, Candidates};

/// Ticks each chosen group runs. Goodness cannot preempt a running thread, so when a turn
/// begins the previous group's threads keep their contexts until their slices run out — up to
/// twice NICE_TO_TICKS(0) = 12 ticks, the most a Linux 2.4 counter carries. A turn of those
/// 12 ticks plus one slice of 6 gives every member at least a full slice of its own turn.
/// (Measured on the 18-thread mix at 48 KB: turns of 6 ticks keep about half of the emulated
/// gain, 18 and 60 ticks nearly all of it; see the README.)
pub const TURN_TICKS: u64 = 18;

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
