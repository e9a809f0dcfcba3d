//! The performance-ratio matrix: what `smtsched matrix` computes in simulation and
//! `smtsched measure pairs` measures on a real machine, and what the OS simulator's oracle reads.
//! One file format for both worlds.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Identifies the file format.
pub const PR_MATRIX_FORMAT: &str = "smtsched-pr-matrix/1";

/// How the two threads of a pair were placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The two hardware threads of one core (SMT).
    Siblings,
    /// Two separate cores, on separate packages where there are several (SMP).
    Cores,
    /// Both on one logical CPU, time-sliced with a quantum.
    Timeshare,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Placement::Siblings => "siblings",
            Placement::Cores => "cores",
            Placement::Timeshare => "timeshare",
        })
    }
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "siblings" | "smt" => Ok(Placement::Siblings),
            "cores" | "smp" => Ok(Placement::Cores),
            "timeshare" | "rr" => Ok(Placement::Timeshare),
            other => Err(format!(
                "unknown placement {other:?} (expected siblings, cores or timeshare)"
            )),
        }
    }
}

/// A workload's run alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoloRecord {
    pub workload: String,
    /// Instructions per cycle alone (simulated), or runs per second (measured; see `unit`).
    pub rate: f64,
    /// Counters over the measured window, by name (absent where the machine cannot count).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, f64>,
}

/// One co-run of two workloads: both performance ratios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// Indices into `workloads`; `a <= b`. `a == b` is a workload against a copy of itself.
    pub a: usize,
    pub b: usize,
    pub pr_a: f64,
    pub pr_b: f64,
    /// Counters of each side over its measured window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters_a: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters_b: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrMatrix {
    pub format: String,
    /// `simulated` or `measured`.
    pub source: String,
    pub machine: String,
    pub placement: Placement,
    /// Free-form settings (seed, window, quantum…), for the record.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    pub workloads: Vec<String>,
    pub solo: Vec<SoloRecord>,
    pub pairs: Vec<PairRecord>,
}

/// Why a matrix file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error("{0}")]
    Invalid(String),
}

impl PrMatrix {
    /// Reads and checks a matrix file (JSON, as `matrix -o` and `measure pairs -o` write it);
    /// errors name the file.
    pub fn read(path: &std::path::Path) -> Result<PrMatrix, MatrixError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MatrixError::Invalid(format!("{}: {e}", path.display())))?;
        PrMatrix::from_json(&text, &path.display().to_string())
    }

    /// A matrix from the text of a matrix file, checked; errors name `origin`.
    pub fn from_json(text: &str, origin: &str) -> Result<PrMatrix, MatrixError> {
        let bad = |e: String| MatrixError::Invalid(format!("{origin}: {e}"));
        let m: PrMatrix =
            serde_json::from_str(text).map_err(|e| bad(format!("not a PR matrix file: {e}")))?;
        m.validate().map_err(|e| bad(e.to_string()))?;
        Ok(m)
    }

    /// PR of `subject` running with `background` (the thesis's (row, column) cell).
    pub fn pr(&self, subject: usize, background: usize) -> Option<f64> {
        self.pairs.iter().find_map(|p| {
            if p.a == subject && p.b == background {
                Some(p.pr_a)
            } else if p.b == subject && p.a == background {
                Some(p.pr_b)
            } else {
                None
            }
        })
    }

    /// The full subject × background grid (`None` where a pair was not run).
    pub fn grid(&self) -> Vec<Vec<Option<f64>>> {
        let n = self.workloads.len();
        let mut g = vec![vec![None; n]; n];
        for p in &self.pairs {
            g[p.a][p.b] = Some(p.pr_a);
            if p.a != p.b {
                g[p.b][p.a] = Some(p.pr_b);
            }
        }
        g
    }

    pub fn index_of(&self, workload: &str) -> Option<usize> {
        self.workloads.iter().position(|w| w == workload)
    }

    /// Checks the format tag, one solo record per workload, and every pair exactly once with
    /// finite ratios in range.
    pub fn validate(&self) -> Result<(), MatrixError> {
        let bad = |m: String| Err(MatrixError::Invalid(m));
        if self.format != PR_MATRIX_FORMAT {
            return bad(format!(
                "format = {:?}: expected {PR_MATRIX_FORMAT:?}",
                self.format
            ));
        }
        let n = self.workloads.len();
        if n == 0 {
            return bad("workloads = []: the matrix names no workloads".into());
        }
        if self.solo.len() != n {
            return bad(format!(
                "solo: {} entries for {n} workloads (one per workload, in order)",
                self.solo.len()
            ));
        }
        if let Some((i, w)) = crate::first_repeat(&self.workloads) {
            return bad(format!(
                "workloads[{i}] = {w:?}: named twice (a matrix is looked up by workload name)"
            ));
        }
        for (i, (s, w)) in self.solo.iter().zip(&self.workloads).enumerate() {
            if &s.workload != w {
                return bad(format!(
                    "solo[{i}].workload = {:?}: expected {w:?} (the order of workloads)",
                    s.workload
                ));
            }
            if !(s.rate.is_finite() && s.rate > 0.0) {
                return bad(format!(
                    "solo[{i}].rate = {:?}: must be a finite positive rate",
                    s.rate
                ));
            }
        }
        let mut seen = vec![vec![false; n]; n];
        for (i, p) in self.pairs.iter().enumerate() {
            if p.a >= n || p.b >= n || p.a > p.b {
                return bad(format!(
                    "pairs[{i}]: indices ({}, {}) out of range for {n} workloads or not ordered",
                    p.a, p.b
                ));
            }
            for (k, v) in [("pr_a", p.pr_a), ("pr_b", p.pr_b)] {
                if !is_performance_ratio(v) {
                    return bad(format!(
                        "pairs[{i}].{k} = {v:?}: must be a ratio from 0 to {MAX_PR}"
                    ));
                }
            }
            if std::mem::replace(&mut seen[p.a][p.b], true) {
                return bad(format!(
                    "pairs[{i}]: the pair ({}, {}) appears twice",
                    p.a, p.b
                ));
            }
        }
        // Every pair, self-pairs too: a missing one would have no rate to give.
        let missing = seen
            .iter()
            .enumerate()
            .find_map(|(a, row)| (a..n).find(|&b| !row[b]).map(|b| (a, b)));
        if let Some((a, b)) = missing {
            return bad(format!(
                "pairs: no entry for {} with {} (a = {a}, b = {b}); a matrix has every pair, \
                 self-pairs too",
                self.workloads[a], self.workloads[b]
            ));
        }
        Ok(())
    }
}

/// The largest performance ratio a matrix may hold: a co-run rate ten times the solo rate is
/// not a measurement of interference (PRs are at most about 1).
pub const MAX_PR: f64 = 10.0;

/// Whether `v` can stand in a matrix as a performance ratio: finite, from 0 to [`MAX_PR`].
pub fn is_performance_ratio(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_PR).contains(&v)
}

/// Converts named counters to the map stored in matrix files.
pub fn counter_map<'a>(names: impl IntoIterator<Item = (&'a str, f64)>) -> BTreeMap<String, f64> {
    names.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> PrMatrix {
        let solo = |w: &str| SoloRecord {
            workload: w.into(),
            rate: 1.0,
            counters: BTreeMap::new(),
        };
        let pair = |a, b| PairRecord {
            a,
            b,
            pr_a: 0.6,
            pr_b: 0.5,
            counters_a: BTreeMap::new(),
            counters_b: BTreeMap::new(),
        };
        PrMatrix {
            format: PR_MATRIX_FORMAT.into(),
            source: "measured".into(),
            machine: "m".into(),
            placement: Placement::Siblings,
            settings: BTreeMap::new(),
            workloads: vec!["x".into(), "y".into()],
            solo: vec![solo("x"), solo("y")],
            pairs: vec![pair(0, 0), pair(0, 1), pair(1, 1)],
        }
    }

    fn err(m: &PrMatrix) -> String {
        m.validate().unwrap_err().to_string()
    }

    #[test]
    fn a_matrix_is_whole_or_refused_naming_the_field() {
        assert!(two().validate().is_ok());
        let mut m = two();
        m.solo.pop();
        assert!(err(&m).contains("solo: 1 entries for 2 workloads"));
        let mut m = two();
        m.solo.swap(0, 1);
        assert!(err(&m).contains("solo[0].workload = \"y\""));
        let mut m = two();
        m.solo[1].rate = f64::NAN;
        assert!(err(&m).contains("solo[1].rate = NaN"));
        let mut m = two();
        m.pairs.remove(1);
        assert!(err(&m).contains("no entry for x with y"));
        let mut m = two();
        m.pairs.push(m.pairs[0].clone());
        assert!(err(&m).contains("appears twice"));
        let mut m = two();
        m.workloads[1] = "x".into();
        m.solo[1].workload = "x".into();
        assert!(err(&m).contains("workloads[1] = \"x\": named twice"));
        let mut m = two();
        m.pairs[2].pr_b = 1e300;
        assert!(err(&m).contains("pairs[2].pr_b = 1e300"));
    }
}
