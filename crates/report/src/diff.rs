//! Two performance-ratio matrices compared (e.g. two machines, or simulated against measured):
//! the difference of every cell they share, how far the two agree, and where they differ most.

use crate::heatmap::Heatmap;
use crate::palette::Scale;
use crate::stats::{correlation, mean_sd, ranks};
use crate::table::Table;
use serde::Serialize;
use smtsched_model::PrMatrix;

/// A cell the two matrices disagree on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellDifference {
    pub subject: String,
    pub background: String,
    pub a: f64,
    pub b: f64,
    pub difference: f64,
}

/// B compared with A over the workloads both name (in A's order).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixDiff {
    /// What each matrix is (from its own fields).
    pub a: String,
    pub b: String,
    pub workloads: Vec<String>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// `b − a` per (subject row, background column); `None` where either lacks the pair.
    pub cells: Vec<Vec<Option<f64>>>,
    /// Over the cells both have.
    pub cells_compared: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    pub mean_difference: f64,
    pub mean_absolute_difference: f64,
    /// Pearson's and Spearman's coefficients between the two matrices' cells: do the same pairs
    /// suffer in both?
    pub correlation: f64,
    pub rank_correlation: f64,
    /// The cells with the largest |b − a|, largest first (up to five).
    pub largest: Vec<CellDifference>,
}

/// A difference to `decimals` places with its sign, and no sign where it rounds to zero (never
/// `-0.000`).
fn signed(v: f64, decimals: usize) -> String {
    if (v * 10f64.powi(decimals as i32)).round() == 0.0 {
        format!("{:.decimals$}", 0.0)
    } else {
        format!("{v:+.decimals$}")
    }
}

/// What a matrix is, in a few words.
fn describe(m: &PrMatrix) -> String {
    format!("{} {} on {}", m.source, m.placement, m.machine)
}

/// `None` when the matrices share no cell.
pub fn diff(a: &PrMatrix, b: &PrMatrix) -> Option<MatrixDiff> {
    let workloads: Vec<String> = a
        .workloads
        .iter()
        .filter(|w| b.index_of(w).is_some())
        .cloned()
        .collect();
    let missing = |x: &PrMatrix, y: &PrMatrix| -> Vec<String> {
        x.workloads
            .iter()
            .filter(|w| y.index_of(w).is_none())
            .cloned()
            .collect()
    };
    let mut cells = vec![vec![None; workloads.len()]; workloads.len()];
    let (mut va, mut vb, mut list) = (Vec::new(), Vec::new(), Vec::new());
    for (i, s) in workloads.iter().enumerate() {
        for (j, g) in workloads.iter().enumerate() {
            let at = |m: &PrMatrix| m.pr(m.index_of(s)?, m.index_of(g)?);
            let (Some(x), Some(y)) = (at(a), at(b)) else {
                continue;
            };
            cells[i][j] = Some(y - x);
            va.push(x);
            vb.push(y);
            list.push(CellDifference {
                subject: s.clone(),
                background: g.clone(),
                a: x,
                b: y,
                difference: y - x,
            });
        }
    }
    if list.is_empty() {
        return None;
    }
    let differences: Vec<f64> = list.iter().map(|c| c.difference).collect();
    let n = list.len() as f64;
    // Largest first; among equals, the earlier cell (row-major in A's order) first.
    list.sort_by(|x, y| y.difference.abs().total_cmp(&x.difference.abs()));
    list.truncate(5);
    Some(MatrixDiff {
        a: describe(a),
        b: describe(b),
        only_in_a: missing(a, b),
        only_in_b: missing(b, a),
        cells_compared: va.len(),
        mean_a: mean_sd(&va).0,
        mean_b: mean_sd(&vb).0,
        mean_difference: mean_sd(&differences).0,
        mean_absolute_difference: differences.iter().map(|d| d.abs()).sum::<f64>() / n,
        correlation: correlation(&va, &vb),
        rank_correlation: correlation(&ranks(&va), &ranks(&vb)),
        largest: list,
        workloads,
        cells,
    })
}

impl MatrixDiff {
    /// The report for a terminal: the summary, the largest differences and the grid of b − a.
    pub fn render(&self) -> String {
        let mut out = format!(
            "A: {}\nB: {}\n{} cells of {} workloads compared",
            self.a,
            self.b,
            self.cells_compared,
            self.workloads.len()
        );
        for (side, only) in [("A", &self.only_in_a), ("B", &self.only_in_b)] {
            if !only.is_empty() {
                out.push_str(&format!("; only in {side}: {}", only.join(", ")));
            }
        }
        // A correlation of fewer than two cells (or of cells all alike) is undefined: `-`.
        let r = |v: f64| {
            if v.is_finite() {
                format!("{v:.3}")
            } else {
                "-".to_string()
            }
        };
        out.push_str(&format!(
            "\n\nmean PR: A {:.3}, B {:.3}; mean B − A {}, mean |B − A| {:.3}\n\
             correlation of the cells: Pearson {}, Spearman {}\n\nlargest differences:\n",
            self.mean_a,
            self.mean_b,
            signed(self.mean_difference, 3),
            self.mean_absolute_difference,
            r(self.correlation),
            r(self.rank_correlation)
        ));
        let mut t = Table::new(["subject", "background", "A", "B", "B - A"]);
        for c in &self.largest {
            t.row([
                c.subject.clone(),
                c.background.clone(),
                format!("{:.3}", c.a),
                format!("{:.3}", c.b),
                signed(c.difference, 3),
            ]);
        }
        out.push_str(&t.render());
        out.push_str("\nB - A, subject (row) with background (column):\n");
        let mut g = Table::new(
            std::iter::once("subject \\ background".to_string()).chain(
                self.workloads
                    .iter()
                    .map(|w| crate::matrix::short_name(w).to_string()),
            ),
        );
        for (i, row) in self.cells.iter().enumerate() {
            g.row(
                std::iter::once(crate::matrix::short_name(&self.workloads[i]).to_string())
                    .chain(row.iter().map(|c| c.map_or("-".into(), |v| signed(v, 2)))),
            );
        }
        out.push_str(&g.render());
        out
    }

    /// A heatmap of b − a on a diverging scale saturated at the largest difference (rounded up
    /// to 0.05), purple where B is higher.
    pub fn heatmap_svg(&self) -> Result<String, String> {
        let largest = self.largest.first().map_or(0.0, |c| c.difference.abs());
        let limit = ((largest / 0.05).ceil() * 0.05).max(0.05);
        Heatmap {
            title: format!("PR difference, B − A: B = {}, A = {}", self.b, self.a),
            subtitle: format!(
                "{} cells; mean |B − A| {:.3}, Pearson {:.3}",
                self.cells_compared, self.mean_absolute_difference, self.correlation
            ),
            labels: &self.workloads,
            cells: self.cells.clone(),
            scale: Scale::Diverging { limit },
            scale_title: "B − A (purple: B higher)",
            row_title: "subject",
            column_title: "background",
            cell_text: |v| signed(v, 2),
        }
        .svg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::{PairRecord, Placement, SoloRecord, PR_MATRIX_FORMAT};

    /// A difference that rounds to zero has no sign, at any number of places; others keep theirs.
    #[test]
    fn a_difference_rounding_to_zero_is_never_negative_zero() {
        assert_eq!(signed(-0.0004, 3), "0.000");
        assert_eq!(signed(-0.004, 2), "0.00");
        assert_eq!(signed(-0.0006, 3), "-0.001");
        assert_eq!(signed(0.0126, 2), "+0.01");
    }

    fn matrix(machine: &str, workloads: &[&str], pairs: &[(usize, usize, f64, f64)]) -> PrMatrix {
        PrMatrix {
            format: PR_MATRIX_FORMAT.into(),
            source: "simulated".into(),
            machine: machine.into(),
            placement: Placement::Siblings,
            settings: Default::default(),
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            solo: workloads
                .iter()
                .map(|w| SoloRecord {
                    workload: w.to_string(),
                    rate: 1.0,
                    counters: Default::default(),
                })
                .collect(),
            pairs: pairs
                .iter()
                .map(|&(a, b, pr_a, pr_b)| PairRecord {
                    a,
                    b,
                    pr_a,
                    pr_b,
                    counters_a: Default::default(),
                    counters_b: Default::default(),
                })
                .collect(),
        }
    }

    #[test]
    fn differences_over_shared_workloads_by_hand() {
        // A: x, y, z; B: y, x, w (another order, z missing, w extra).
        let a = matrix(
            "ma",
            &["x", "y", "z"],
            &[
                (0, 0, 0.5, 0.5),
                (0, 1, 0.6, 0.7),
                (1, 1, 0.8, 0.8),
                (2, 2, 0.9, 0.9),
            ],
        );
        let b = matrix(
            "mb",
            &["y", "x", "w"],
            &[
                (0, 0, 0.7, 0.7),
                (0, 1, 0.6, 0.65),
                (1, 1, 0.4, 0.4),
                (2, 2, 1.0, 1.0),
            ],
        );
        let d = diff(&a, &b).unwrap();
        assert_eq!(d.workloads, ["x", "y"]);
        assert_eq!(
            (d.only_in_a.clone(), d.only_in_b.clone()),
            (vec!["z".to_string()], vec!["w".to_string()])
        );
        // Cells (subject, background): A x|x 0.5, x|y 0.6, y|x 0.7, y|y 0.8;
        // B x|x 0.4, x|y 0.65, y|x 0.6, y|y 0.7.
        let expect = [[-0.1, 0.05], [-0.1, -0.1]];
        for (i, row) in expect.iter().enumerate() {
            for (j, e) in row.iter().enumerate() {
                assert!((d.cells[i][j].unwrap() - e).abs() < 1e-12, "{i},{j}");
            }
        }
        assert_eq!(d.cells_compared, 4);
        assert!((d.mean_difference - (-0.25 / 4.0)).abs() < 1e-12);
        assert!((d.mean_absolute_difference - 0.35 / 4.0).abs() < 1e-12);
        // Three cells differ by −0.1 (in floating point, not exactly tied), then x|y by +0.05.
        assert!(d.largest[..3]
            .iter()
            .all(|c| (c.difference + 0.1).abs() < 1e-12));
        assert_eq!(
            (
                d.largest[3].subject.as_str(),
                d.largest[3].background.as_str()
            ),
            ("x", "y")
        );
        // Ranks: A (0.5, 0.6, 0.7, 0.8) → 1 2 3 4; B (0.4, 0.65, 0.6, 0.7) → 1 3 2 4.
        // Spearman = 1 − 6·Σd²/(n(n²−1)) = 1 − 6·2/60 = 0.8.
        assert!(
            (d.rank_correlation - 0.8).abs() < 1e-12,
            "{}",
            d.rank_correlation
        );
        assert!(d.render().contains("only in A: z; only in B: w"));
        let svg = d.heatmap_svg().unwrap();
        assert!(svg.contains("+0.05") && svg.contains("B = simulated siblings on mb"));
    }

    #[test]
    fn matrices_without_a_shared_workload_do_not_compare() {
        let a = matrix("ma", &["x"], &[(0, 0, 0.5, 0.5)]);
        let b = matrix("mb", &["y"], &[(0, 0, 0.5, 0.5)]);
        assert!(diff(&a, &b).is_none());
    }
}
