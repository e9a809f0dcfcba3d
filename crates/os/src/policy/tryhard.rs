//! `tryhard` (thesis §4.4.4.2): a 64-entry table of rolling combined performance per PID pair,
//! updated at every context switch on a package; a candidate's goodness gains the table value for
//! it and the task on the sibling, divided by 64.

use super::{CpuId, Estimates, Goodness, Policy, SchedView, TaskId};

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
}

impl Tryhard {
    pub fn new() -> Self {
        Tryhard {
            table: [0.0; TABLE_ENTRIES],
        }
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
            let h = pair_hash(view.tasks[*a].pid, view.tasks[*b].pid);
            let combined = pa + pb;
            let e = &mut self.table[h];
            *e = if *e == 0.0 {
                combined
            } else {
                (1.0 - NEW_SAMPLE_WEIGHT) * *e + NEW_SAMPLE_WEIGHT * combined
            };
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
