//! `tryhard` (thesis §4.4.4.2): a 64-entry table of rolling combined performance per PID pair.
//! On Linux 2.4 it is updated at every context switch on a package, and a candidate's goodness
//! gains the table value for it and the task on the sibling, divided by 64. As decisions the
//! table is updated from every pair a period shows sharing a core, and steers which pairs share a
//! core: every period the runnable tasks are paired greedily by table value (unrecorded pairs
//! tried next) and the pairs take turns on the cores.

use super::decision::Decisions;
use super::pairing::{greedy_pairs, pairs_seen, Rotation};
use super::view::{PeriodView, TaskKey};
use super::{CpuId, Estimates, Goodness, Linux24Hooks, Needs, Policy, SchedView, TaskId};

pub const TABLE_ENTRIES: usize = 64;
/// Weight of a new sample in the rolling average (not given in the thesis; chosen once).
pub const NEW_SAMPLE_WEIGHT: f64 = 0.5;
/// Fixed-point scale of the kernel's estimates (the thesis shifts its result to about 1/1000).
pub const ESTIMATE_SCALE: f64 = 1024.0;

/// The thesis's hash of an ordered PID pair: spreads close PIDs over the table.
pub fn pair_hash(a: u32, b: u32) -> usize {
    let (pid1, pid2) = if a <= b { (a, b) } else { (b, a) };
    ((((pid2 & 7) << 3) | ((pid2 & 0x38) >> 3)) ^ (pid1 & 0x3f)) as usize
}

pub struct Tryhard {
    /// Combined performance (sum of both PRs) per hashed pair; 0 = nothing recorded.
    table: [f64; TABLE_ENTRIES],
    rotation: Rotation,
}

impl Tryhard {
    pub fn new() -> Self {
        Tryhard {
            table: [0.0; TABLE_ENTRIES],
            rotation: Rotation::default(),
        }
    }

    /// Folds one sample of a pair's combined performance into its entry.
    fn record(&mut self, pid_a: u32, pid_b: u32, combined: f64) {
        let e = &mut self.table[pair_hash(pid_a, pid_b)];
        *e = if *e == 0.0 {
            combined
        } else {
            (1.0 - NEW_SAMPLE_WEIGHT) * *e + NEW_SAMPLE_WEIGHT * combined
        };
    }
}

impl Default for Tryhard {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for Tryhard {
    fn name(&self) -> &str {
        "tryhard"
    }

    fn needs(&self) -> Needs {
        Needs::ESTIMATES
    }

    fn decide(&mut self, view: &PeriodView) -> Decisions {
        for p in pairs_seen(view) {
            self.record(p.a.pid, p.b.pid, p.combined);
        }
        let runnable: Vec<TaskKey> = view.runnable().map(|t| t.key).collect();
        let table = &self.table;
        let score = |a: TaskKey, b: TaskKey| {
            let v = table[pair_hash(a.pid, b.pid)];
            (v != 0.0).then_some(v)
        };
        self.rotation.set(greedy_pairs(&runnable, &score));
        self.rotation.decide(view, false)
    }

    fn linux24(&mut self) -> Option<&mut dyn Linux24Hooks> {
        Some(self)
    }
}

impl Linux24Hooks for Tryhard {
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
        if let [(_, a, pa), (_, b, pb)] = estimates {
            self.record(view.tasks[*a].pid, view.tasks[*b].pid, pa + pb);
        }
    }

    fn goodness(&mut self, task: TaskId, cpu: CpuId, g: Goodness, view: &SchedView) -> i64 {
        let base = g.stock();
        match view.sibling_task(cpu) {
            Some(s) if s != task => {
                let v = self.table[pair_hash(view.tasks[task].pid, view.tasks[s].pid)];
                base + (v * ESTIMATE_SCALE / 64.0) as i64
            }
            _ => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_the_thesis_formula_by_hand() {
        // pid1 = 100 (0b1100100), pid2 = 101 (0b1100101):
        // ((101 & 7) << 3) | ((101 & 0x38) >> 3) = (5 << 3) | (0x20 >> 3) = 40 | 4 = 44;
        // 44 ^ (100 & 0x3f = 36) = 8.
        assert_eq!(pair_hash(100, 101), 8);
        assert_eq!(pair_hash(101, 100), 8, "ordered numerically first");
        // Neighbouring PIDs spread: 100 with 101..=108 hit 8 distinct entries.
        let mut seen: Vec<usize> = (101..=108).map(|p| pair_hash(100, p)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 8);
    }
}
