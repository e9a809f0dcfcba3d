//! PR estimates from a measured performance-ratio matrix (`smtsched measure pairs -o`) for
//! machines without hardware counters: each task is labelled by the workload it runs, and its
//! estimate for a period is the matrix's PR beside each co-runner, weighted by how long they
//! overlapped, with the time it ran without a co-runner at PR 1. The simulator (`--model
//! matrix:FILE`) and the live agent use this one function.

use crate::policy::{TaskKey, TaskSample};
use smtsched_model::{Placement, PrMatrix};
use std::collections::BTreeMap;

/// A validated matrix and the index of each label in it.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixEstimates {
    matrix: PrMatrix,
}

impl MatrixEstimates {
    /// Checks the matrix: valid (every pair present: `PrMatrix::validate`) and measured with
    /// both threads running at once (siblings, or separate cores on a machine without SMT).
    pub fn new(matrix: PrMatrix) -> Result<MatrixEstimates, String> {
        matrix.validate().map_err(|e| e.to_string())?;
        if matrix.placement == Placement::Timeshare {
            return Err("the matrix was measured time-shared on one CPU; estimates need threads that ran at once (siblings or cores)".into());
        }
        Ok(MatrixEstimates { matrix })
    }

    /// Reads a matrix file (JSON, as `measure pairs -o` and `matrix -o` write it).
    pub fn load(path: &std::path::Path) -> Result<MatrixEstimates, String> {
        let matrix = PrMatrix::read(path).map_err(|e| e.to_string())?;
        MatrixEstimates::new(matrix).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn workloads(&self) -> &[String] {
        &self.matrix.workloads
    }

    /// The first of `labels` the matrix lacks, if any (with the matrix's workloads, for the
    /// message).
    pub fn missing<'a>(&self, labels: impl IntoIterator<Item = &'a str>) -> Option<String> {
        labels
            .into_iter()
            .find(|l| self.matrix.index_of(l).is_none())
            .map(|l| {
                format!(
                    "task label {l:?} is not in the matrix (it has {})",
                    self.matrix.workloads.join(", ")
                )
            })
    }

    /// PR of a task running `subject` beside one running `background`.
    pub fn pair(&self, subject: &str, background: &str) -> Option<f64> {
        let a = self.matrix.index_of(subject)?;
        let b = self.matrix.index_of(background)?;
        self.matrix.pr(a, b)
    }

    /// The estimate for `task` over its period: the overlap-weighted PR beside its co-runners,
    /// PR 1 for the rest of its CPU time. `label_of` gives each task's workload (the task's own
    /// too). `None` if it did not run or a label is unknown.
    pub fn estimate(
        &self,
        task: &TaskSample,
        label_of: &dyn Fn(TaskKey) -> Option<String>,
    ) -> Option<f64> {
        if task.cpu_ns == 0 {
            return None;
        }
        let own = label_of(task.key)?;
        self.matrix.index_of(&own)?;
        let cpu = task.cpu_ns as f64;
        let mut shared = 0.0;
        let mut weighted = 0.0;
        for c in &task.corunners {
            let overlap = (c.overlap_ns as f64).min(cpu - shared);
            if overlap <= 0.0 {
                break;
            }
            let pr = self.pair(&own, &label_of(c.task)?)?;
            shared += overlap;
            weighted += overlap * pr;
        }
        Some((weighted + (cpu - shared)) / cpu)
    }

    /// Sets every task's `pr_estimate` from its co-runners in the same view, labels being the
    /// tasks' workloads.
    pub fn fill(&self, tasks: &mut [TaskSample]) {
        let labels: BTreeMap<TaskKey, String> =
            tasks.iter().map(|t| (t.key, t.label.clone())).collect();
        let label_of = |k: TaskKey| labels.get(&k).cloned();
        for t in tasks.iter_mut() {
            t.pr_estimate = self.estimate(t, &label_of);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Corunner;
    use smtsched_model::{PairRecord, PR_MATRIX_FORMAT};

    fn matrix() -> PrMatrix {
        let pair = |a, b, pr_a, pr_b| PairRecord {
            a,
            b,
            pr_a,
            pr_b,
            counters_a: Default::default(),
            counters_b: Default::default(),
        };
        PrMatrix {
            format: PR_MATRIX_FORMAT.into(),
            source: "measured".into(),
            machine: "test".into(),
            placement: Placement::Cores,
            settings: Default::default(),
            workloads: vec!["x".into(), "y".into()],
            solo: ["x", "y"]
                .map(|w| smtsched_model::matrix::SoloRecord {
                    workload: w.into(),
                    rate: 1.0,
                    counters: Default::default(),
                })
                .to_vec(),
            pairs: vec![
                pair(0, 0, 0.8, 0.8),
                pair(0, 1, 0.5, 0.9),
                pair(1, 1, 0.7, 0.7),
            ],
        }
    }

    fn sample(pid: u32, label: &str, cpu_ns: u64, corunners: &[(u32, u64)]) -> TaskSample {
        let key = |pid| TaskKey { pid, start_time: 0 };
        TaskSample {
            corunners: corunners
                .iter()
                .map(|&(p, o)| Corunner {
                    task: key(p),
                    overlap_ns: o,
                })
                .collect(),
            ..TaskSample::ran(key(pid), label, cpu_ns)
        }
    }

    #[test]
    fn overlap_weighted_pr_with_alone_time_at_one() {
        let m = MatrixEstimates::new(matrix()).unwrap();
        // x ran 100 ms: 60 beside y (PR 0.5), 20 beside another x (0.8), 20 alone (1.0):
        // (60×0.5 + 20×0.8 + 20×1) / 100 = 0.66.
        let mut tasks = vec![
            sample(1, "x", 100, &[(2, 60), (3, 20)]),
            sample(2, "y", 60, &[(1, 60)]),
            sample(3, "x", 20, &[(1, 20)]),
            sample(4, "y", 0, &[]),
        ];
        m.fill(&mut tasks);
        assert!((tasks[0].pr_estimate.unwrap() - 0.66).abs() < 1e-12);
        assert!((tasks[1].pr_estimate.unwrap() - 0.9).abs() < 1e-12);
        assert!((tasks[2].pr_estimate.unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(tasks[3].pr_estimate, None);
        assert!(m.missing(["x", "z"]).unwrap().contains("\"z\""));
    }

    #[test]
    fn a_time_shared_or_incomplete_matrix_is_refused() {
        let mut t = matrix();
        t.placement = Placement::Timeshare;
        assert!(MatrixEstimates::new(t).unwrap_err().contains("time-shared"));
        let mut t = matrix();
        t.pairs.pop();
        assert!(MatrixEstimates::new(t)
            .unwrap_err()
            .contains("no entry for y with y"));
    }
}
