//! Reports on a performance-ratio matrix: the thesis's summary statistics, a table, CSV, and an
//! SVG heatmap in the style of thesis Fig. 3.3.

use crate::stats::Summary;
use crate::table::Table;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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
    let speedups: Vec<f64> = m.pairs.iter().map(|p| p.pr_a + p.pr_b).collect();
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

/// A workload name without the `-like` suffix, for narrow columns.
pub fn short_name(name: &str) -> &str {
    name.strip_suffix("-like").unwrap_or(name)
}

/// The matrix as an aligned table: rows are subjects, columns backgrounds.
pub fn render_grid(m: &PrMatrix) -> String {
    let names: Vec<&str> = m.workloads.iter().map(|w| short_name(w)).collect();
    let width = 6;
    let mut t = Table::new(
        std::iter::once("subject \\ background".to_string())
            .chain(names.iter().map(|n| n.chars().take(width).collect())),
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
        std::iter::once("system speedup".to_string())
            .chain(names.iter().map(|n| n.chars().take(6).collect())),
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
            format!("{:.3}", x.sd),
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

/// Thesis Fig. 3.3 colours: red below 0.5 (worse than time-sharing), through amber, to green
/// near 1.
pub fn pr_colour(pr: f64) -> RGBColor {
    let t = ((pr - 0.3) / 0.6).clamp(0.0, 1.0);
    let hue = 120.0 * t; // degrees: 0 red, 60 yellow, 120 green
    let (s, l) = (0.75, 0.5);
    let c = (1.0 - (2.0 * l - 1.0_f64).abs()) * s;
    let x = c * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = if hue < 60.0 { (c, x, 0.0) } else { (x, c, 0.0) };
    let to = |v: f64| ((v + m) * 255.0).round() as u8;
    RGBColor(to(r), to(g), to(b))
}

/// An SVG heatmap of the matrix: a square per (subject row, background column) coloured by PR and
/// labelled with its value.
pub fn heatmap_svg(m: &PrMatrix, title: &str) -> Result<String, String> {
    let n = m.workloads.len();
    let cell = 34u32;
    let left = 110u32;
    let top = 120u32;
    let size = (left + cell * n as u32 + 20, top + cell * n as u32 + 40);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let font = |px: u32| ("sans-serif", px).into_font();
        root.draw(&Text::new(title.to_string(), (10, 18), font(16)))
            .map_err(|e| e.to_string())?;
        root.draw(&Text::new(
            "subject (row) vs background (column)".to_string(),
            (10, 38),
            font(11),
        ))
        .map_err(|e| e.to_string())?;
        let grid = m.grid();
        for (i, name) in m.workloads.iter().enumerate() {
            let y = top as i32 + (i as u32 * cell) as i32;
            let x = left as i32 + (i as u32 * cell) as i32;
            let label = short_name(name).to_string();
            root.draw(&Text::new(
                label.clone(),
                (left as i32 - 6, y + cell as i32 / 2),
                TextStyle::from(font(11)).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
            root.draw(&Text::new(
                label,
                (x + cell as i32 / 2, top as i32 - 6),
                TextStyle::from(font(11).transform(FontTransform::Rotate270))
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
        }
        for (i, row) in grid.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                let x0 = left as i32 + (j as u32 * cell) as i32;
                let y0 = top as i32 + (i as u32 * cell) as i32;
                let (fill, text) = match c {
                    Some(v) => (pr_colour(*v), format!("{v:.2}")),
                    None => (RGBColor(220, 220, 220), String::new()),
                };
                root.draw(&Rectangle::new(
                    [(x0, y0), (x0 + cell as i32, y0 + cell as i32)],
                    fill.filled(),
                ))
                .map_err(|e| e.to_string())?;
                root.draw(&Rectangle::new(
                    [(x0, y0), (x0 + cell as i32, y0 + cell as i32)],
                    WHITE.stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
                root.draw(&Text::new(
                    text,
                    (x0 + cell as i32 / 2, y0 + cell as i32 / 2),
                    TextStyle::from(font(10)).pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(|e| e.to_string())?;
            }
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
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
    fn csv_rows_are_subjects() {
        let csv = grid_csv(&two());
        assert_eq!(
            csv,
            "subject,x-like,y\nx-like,0.500000,0.700000\ny,0.400000,0.800000\n"
        );
    }

    #[test]
    fn colours_run_from_red_to_green() {
        let red = pr_colour(0.3);
        let green = pr_colour(0.9);
        assert!(red.0 > 150 && red.1 < 80, "{red:?}");
        assert!(green.1 > 150 && green.0 < 80, "{green:?}");
    }

    #[test]
    fn heatmap_has_one_square_and_label_per_cell() {
        let svg = heatmap_svg(&two(), "t").unwrap();
        assert!(svg.starts_with("<svg"));
        assert_eq!(
            svg.matches("<rect").count(),
            1 + 2 * 4,
            "background + fill and border per cell"
        );
        for v in ["0.50", "0.70", "0.40", "0.80"] {
            assert!(svg.contains(&format!(">\n{v}\n</text>")), "missing {v}");
        }
    }
}
