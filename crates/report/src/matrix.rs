//! Reports on a performance-ratio matrix: the thesis's summary statistics, a table, CSV, and an
//! SVG heatmap in the style of thesis Fig. 3.3.

use crate::heatmap::Heatmap;
use crate::palette::Scale;
use crate::stats::Summary;
use crate::table::Table;
use serde::Serialize;
use smtsched_model::PrMatrix;

/// A pair and its system speedup.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairSpeedup {
    pub a: String,
    pub b: String,
    pub speedup: f64,
}

/// What the thesis reports about a matrix (§3.3.2): PR and system-speedup distributions, the
/// extremes, and self-pairs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixSummary {
    /// Over every subject × background cell (a self-pair contributes its first copy's PR).
    pub pr: Summary,
    /// Over every pair (sum of both PRs).
    pub system_speedup: Summary,
    pub best: PairSpeedup,
    pub worst: PairSpeedup,
    /// Mean system speedup of workloads paired with a copy of themselves.
    pub self_pair_mean: Option<f64>,
}

pub fn summarize(m: &PrMatrix) -> Option<MatrixSummary> {
    let cells: Vec<f64> = m.grid().into_iter().flatten().flatten().collect();
    let speedups = system_speedups(m);
    let pick = |better: fn(f64, f64) -> bool| {
        let p = m.pairs.iter().reduce(|x, y| {
            if better(y.pr_a + y.pr_b, x.pr_a + x.pr_b) {
                y
            } else {
                x
            }
        })?;
        Some(PairSpeedup {
            a: m.workloads[p.a].clone(),
            b: m.workloads[p.b].clone(),
            speedup: p.pr_a + p.pr_b,
        })
    };
    let selfs: Vec<f64> = m
        .pairs
        .iter()
        .filter(|p| p.a == p.b)
        .map(|p| p.pr_a + p.pr_b)
        .collect();
    Some(MatrixSummary {
        pr: Summary::of(&cells)?,
        system_speedup: Summary::of(&speedups)?,
        best: pick(|new, old| new > old)?,
        worst: pick(|new, old| new < old)?,
        self_pair_mean: (!selfs.is_empty()).then(|| selfs.iter().sum::<f64>() / selfs.len() as f64),
    })
}

/// The system speedup (PR + PR) of each pair, in the matrix's order.
pub fn system_speedups(m: &PrMatrix) -> Vec<f64> {
    m.pairs.iter().map(|p| p.pr_a + p.pr_b).collect()
}

/// For each workload, the system speedups (PR + PR) of the pairs it is in, its self-pair once.
pub fn speedups_by_subject(m: &PrMatrix) -> Vec<Vec<f64>> {
    let mut by = vec![Vec::new(); m.workloads.len()];
    for p in &m.pairs {
        by[p.a].push(p.pr_a + p.pr_b);
        if p.b != p.a {
            by[p.b].push(p.pr_a + p.pr_b);
        }
    }
    by
}

/// A workload name without the `-like` suffix, for narrow columns.
pub fn short_name(name: &str) -> &str {
    name.strip_suffix("-like").unwrap_or(name)
}

/// The matrix as an aligned table: rows are subjects, columns backgrounds.
pub fn render_grid(m: &PrMatrix) -> String {
    let names: Vec<&str> = m.workloads.iter().map(|w| short_name(w)).collect();
    let mut t = Table::new(
        std::iter::once("subject \\ background".to_string())
            .chain(names.iter().map(|n| n.to_string())),
    );
    for (i, row) in m.grid().iter().enumerate() {
        t.row(
            std::iter::once(names[i].to_string()).chain(
                row.iter()
                    .map(|c| c.map_or("-".into(), |v| format!("{v:.2}"))),
            ),
        );
    }
    t.render()
}

/// System speedup of every pair as a triangle: row a, column b ≥ a holds PR(a,b) + PR(b,a).
pub fn render_speedup_grid(m: &PrMatrix) -> String {
    let names: Vec<&str> = m.workloads.iter().map(|w| short_name(w)).collect();
    let mut t = Table::new(
        std::iter::once("system speedup".to_string()).chain(names.iter().map(|n| n.to_string())),
    );
    let n = names.len();
    let mut cell = vec![vec![None; n]; n];
    for p in &m.pairs {
        cell[p.a][p.b] = Some(p.pr_a + p.pr_b);
    }
    for (i, row) in cell.iter().enumerate() {
        t.row(
            std::iter::once(names[i].to_string()).chain(
                row.iter()
                    .map(|c| c.map_or(String::new(), |v| format!("{v:.2}"))),
            ),
        );
    }
    t.render()
}

/// The summary as a table.
pub fn render_summary(s: &MatrixSummary) -> String {
    let mut t = Table::new(["", "mean", "sd", "min", "q1", "median", "q3", "max", "IQR"]);
    for (name, x) in [
        ("performance ratio", &s.pr),
        ("system speedup", &s.system_speedup),
    ] {
        t.row([
            name.to_string(),
            format!("{:.3}", x.mean),
            // A spread of one value is undefined.
            if x.n < 2 {
                "-".to_string()
            } else {
                format!("{:.3}", x.sd)
            },
            format!("{:.3}", x.min),
            format!("{:.3}", x.q1),
            format!("{:.3}", x.median),
            format!("{:.3}", x.q3),
            format!("{:.3}", x.max),
            format!("{:.3}", x.iqr),
        ]);
    }
    let mut out = t.render();
    out.push_str(&format!(
        "best pair:  {} + {} = {:.3}\n",
        s.best.a, s.best.b, s.best.speedup
    ));
    out.push_str(&format!(
        "worst pair: {} + {} = {:.3}\n",
        s.worst.a, s.worst.b, s.worst.speedup
    ));
    if let Some(v) = s.self_pair_mean {
        out.push_str(&format!("self-pairs: mean system speedup {v:.3}\n"));
    }
    out
}

/// CSV of the grid: `subject,<background…>`, one row per subject.
pub fn grid_csv(m: &PrMatrix) -> String {
    let header: Vec<&str> = std::iter::once("subject")
        .chain(m.workloads.iter().map(String::as_str))
        .collect();
    let rows = m.grid().into_iter().enumerate().map(|(i, row)| {
        std::iter::once(m.workloads[i].clone())
            .chain(
                row.iter()
                    .map(|c| c.map_or(String::new(), |v| format!("{v:.6}"))),
            )
            .collect::<Vec<String>>()
    });
    crate::csv::csv_text(&[], &header, rows)
}

/// CSV of the pairs: `a,b,pr_a,pr_b,system_speedup`.
pub fn pairs_csv(m: &PrMatrix) -> String {
    let rows = m.pairs.iter().map(|p| {
        vec![
            m.workloads[p.a].clone(),
            m.workloads[p.b].clone(),
            format!("{:.6}", p.pr_a),
            format!("{:.6}", p.pr_b),
            format!("{:.6}", p.pr_a + p.pr_b),
        ]
    });
    crate::csv::csv_text(&[], &["a", "b", "pr_a", "pr_b", "system_speedup"], rows)
}

/// The colour scale of every PR heatmap: fixed, so that heatmaps of two machines compare by eye;
/// 0.25 (worse than time-sharing) to 1.0 (no slowdown).
pub const PR_SCALE: Scale = Scale::Sequential {
    min: 0.25,
    max: 1.0,
};

/// A heatmap's title, from the matrix itself: what was measured, on what, placed how.
pub fn matrix_title(m: &PrMatrix) -> String {
    let what = if m.source == "measured" {
        "Measured performance ratio"
    } else {
        "Performance ratio"
    };
    format!(
        "{what}: {} workloads on {}, {} placement",
        m.workloads.len(),
        m.machine,
        m.placement
    )
}

/// An SVG heatmap of the matrix in the layout of thesis Fig. 3.3: a cell per (subject row,
/// background column) coloured by PR on a colour-blind-safe scale and labelled with its value.
pub fn heatmap_svg(m: &PrMatrix) -> Result<String, String> {
    Heatmap {
        title: matrix_title(m),
        subtitle: "each cell: the row workload's speed with the column workload beside it, as a \
                   fraction of its speed alone"
            .into(),
        labels: &m.workloads,
        cells: m.grid(),
        scale: PR_SCALE,
        scale_title: "performance ratio (0.5 = time-sharing)",
        row_title: "subject",
        column_title: "background",
        cell_text: |v| format!("{v:.2}"),
    }
    .svg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtsched_model::{PairRecord, Placement, PR_MATRIX_FORMAT};

    fn two() -> PrMatrix {
        let rec = |a, b, pr_a, pr_b| PairRecord {
            a,
            b,
            pr_a,
            pr_b,
            counters_a: Default::default(),
            counters_b: Default::default(),
        };
        PrMatrix {
            format: PR_MATRIX_FORMAT.into(),
            source: "test".into(),
            machine: "m".into(),
            placement: Placement::Siblings,
            settings: Default::default(),
            workloads: vec!["x-like".into(), "y".into()],
            solo: vec![],
            pairs: vec![
                rec(0, 0, 0.5, 0.6),
                rec(0, 1, 0.7, 0.4),
                rec(1, 1, 0.8, 0.8),
            ],
        }
    }

    #[test]
    fn summary_matches_hand_computation() {
        let s = summarize(&two()).unwrap();
        // Cells: (0,0)=0.5 (0,1)=0.7 (1,0)=0.4 (1,1)=0.8.
        assert_eq!(s.pr.n, 4);
        assert!((s.pr.mean - 0.6).abs() < 1e-12);
        // Pairs: 1.1, 1.1, 1.6.
        assert!((s.system_speedup.mean - 3.8 / 3.0).abs() < 1e-12);
        assert_eq!((s.best.a.as_str(), s.best.b.as_str()), ("y", "y"));
        assert!((s.best.speedup - 1.6).abs() < 1e-12);
        assert!((s.self_pair_mean.unwrap() - 1.35).abs() < 1e-12);
    }

    #[test]
    fn each_subject_gets_the_speedups_of_its_pairs_and_its_self_pair_once() {
        // Pairs (x, x) 0.5 + 0.6, (x, y) 0.7 + 0.4, (y, y) 0.8 + 0.8.
        let by = speedups_by_subject(&two());
        let round = |v: &[f64]| {
            v.iter()
                .map(|x| (x * 1e9).round() / 1e9)
                .collect::<Vec<_>>()
        };
        assert_eq!(round(&by[0]), vec![1.1, 1.1]);
        assert_eq!(round(&by[1]), vec![1.1, 1.6]);
    }

    #[test]
    fn csv_rows_are_subjects() {
        let csv = grid_csv(&two());
        assert_eq!(
            csv,
            "subject,x-like,y\nx-like,0.500000,0.700000\ny,0.400000,0.800000\n"
        );
    }

    #[test]
    fn heatmap_has_one_square_and_label_per_cell_and_full_names() {
        let svg = heatmap_svg(&two()).unwrap();
        assert!(svg.starts_with("<svg"));
        // Background, a square per cell, 48 colour-bar bands and the bar's frame.
        assert_eq!(svg.matches("<rect").count(), 1 + 4 + 48 + 1);
        for v in ["0.50", "0.70", "0.40", "0.80"] {
            assert!(svg.contains(&format!(">\n{v}\n</text>")), "missing {v}");
        }
        // Names whole (twice each: row and column), the title from the matrix.
        assert_eq!(svg.matches(">\nx-like\n</text>").count(), 2);
        assert!(svg.contains("2 workloads on m, siblings placement"));
    }

    #[test]
    fn the_canvas_grows_with_the_longest_name() {
        let width = |svg: &str| -> u32 {
            let w = svg.split("width=\"").nth(1).unwrap();
            w[..w.find('"').unwrap()].parse().unwrap()
        };
        let mut m = two();
        let short = heatmap_svg(&m).unwrap();
        let height = |svg: &str| -> u32 {
            let h = svg.split("height=\"").nth(1).unwrap();
            h[..h.find('"').unwrap()].parse().unwrap()
        };
        m.workloads[1] = "a-workload-with-a-very-long-name".into();
        let long = heatmap_svg(&m).unwrap();
        // 32 characters at 11 px x 0.6 each: about 211 px more room than "x-like"'s 6, on the
        // left for the row names and at the top for the rotated column names.
        assert!(
            height(&long) >= height(&short) + 150,
            "{} {}",
            height(&long),
            height(&short)
        );
        assert!(
            width(&long) >= width(&short),
            "{} {}",
            width(&long),
            width(&short)
        );
    }
}
