//! Validation on held-out windows (thesis §3.4.1, Fig. 3.18): correlation between estimated and
//! measured PR, mean absolute error, where the estimate is too high or too low (by measured PR,
//! and in each run's troughs and peaks), and a scatter plot.

use crate::error::EstimateError;
use crate::windows::{subjects, WindowRecord};
use plotters::prelude::*;
use serde::Serialize;
use smtsched_report::Table;
use std::collections::BTreeMap;

pub use smtsched_report::stats::correlation;

/// Mean error (estimate − measured) of a group of windows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub label: String,
    pub n: usize,
    pub mean_measured: f64,
    pub mean_estimated: f64,
    /// Mean of estimate − measured: positive = over-estimate.
    pub bias: f64,
    pub mae: f64,
}

fn group(label: String, pairs: &[(f64, f64)]) -> Group {
    let n = pairs.len();
    let m = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n as f64;
    Group {
        label,
        n,
        mean_measured: m(&|p| p.0),
        mean_estimated: m(&|p| p.1),
        bias: m(&|p| p.1 - p.0),
        mae: m(&|p| (p.1 - p.0).abs()),
    }
}

/// How well estimates match measured PRs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub estimator: String,
    pub n: usize,
    /// Pearson correlation of estimate and measurement (the thesis: 0.853).
    pub correlation: f64,
    pub mae: f64,
    pub rmse: f64,
    /// Mean of estimate − measured.
    pub bias: f64,
    /// 1 − SSE / SST of the estimates on these windows.
    pub r_squared: f64,
    /// Correlation after removing each run's mean from both: how well the estimate follows the
    /// window-to-window changes within a run (its phases) rather than the levels of pairs.
    pub within_run_correlation: f64,
    /// By measured PR, in bands of 0.1.
    pub by_measured: Vec<Group>,
    /// Each run's lowest quarter of windows by measured PR, and its highest quarter.
    pub troughs: Group,
    pub peaks: Group,
    /// By pair (subject with background), all runs.
    pub by_pair: Vec<Group>,
}

/// Compares `estimates` with the windows' measured PRs.
pub fn validate(
    estimator: &str,
    windows: &[WindowRecord],
    estimates: &[f64],
) -> Result<Validation, EstimateError> {
    assert_eq!(windows.len(), estimates.len());
    if windows.is_empty() {
        return Err(EstimateError::Empty("no windows to validate on".into()));
    }
    let measured: Vec<f64> = windows.iter().map(|w| w.pr).collect();
    let n = windows.len();
    let err: Vec<f64> = estimates
        .iter()
        .zip(&measured)
        .map(|(e, m)| e - m)
        .collect();
    let mean_m = measured.iter().sum::<f64>() / n as f64;
    let sse: f64 = err.iter().map(|e| e * e).sum();
    let sst: f64 = measured.iter().map(|m| (m - mean_m).powi(2)).sum();
    // Runs, in order of first appearance.
    let mut runs: BTreeMap<(String, String, u32), Vec<usize>> = BTreeMap::new();
    for (i, w) in windows.iter().enumerate() {
        runs.entry((w.subject.clone(), w.background.clone(), w.run))
            .or_default()
            .push(i);
    }
    let mut dm = Vec::with_capacity(n);
    let mut de = Vec::with_capacity(n);
    let mut troughs = Vec::new();
    let mut peaks = Vec::new();
    for idx in runs.values() {
        let k = idx.len() as f64;
        let mm = idx.iter().map(|&i| measured[i]).sum::<f64>() / k;
        let me = idx.iter().map(|&i| estimates[i]).sum::<f64>() / k;
        for &i in idx {
            dm.push(measured[i] - mm);
            de.push(estimates[i] - me);
        }
        let mut sorted = idx.clone();
        sorted.sort_by(|&a, &b| measured[a].total_cmp(&measured[b]).then(a.cmp(&b)));
        let q = (idx.len() / 4).max(1);
        if idx.len() >= 4 {
            troughs.extend(sorted[..q].iter().map(|&i| (measured[i], estimates[i])));
            peaks.extend(
                sorted[idx.len() - q..]
                    .iter()
                    .map(|&i| (measured[i], estimates[i])),
            );
        }
    }
    let mut bands: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
    for (m, e) in measured.iter().zip(estimates) {
        bands
            .entry((m * 10.0).floor() as i64)
            .or_default()
            .push((*m, *e));
    }
    let mut pairs: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for (w, e) in windows.iter().zip(estimates) {
        pairs
            .entry((w.subject.clone(), w.background.clone()))
            .or_default()
            .push((w.pr, *e));
    }
    let empty = || group("none".into(), &[(f64::NAN, f64::NAN)]);
    Ok(Validation {
        estimator: estimator.to_string(),
        n,
        correlation: correlation(estimates, &measured),
        mae: err.iter().map(|e| e.abs()).sum::<f64>() / n as f64,
        rmse: (sse / n as f64).sqrt(),
        bias: err.iter().sum::<f64>() / n as f64,
        r_squared: if sst > 0.0 { 1.0 - sse / sst } else { f64::NAN },
        within_run_correlation: correlation(&de, &dm),
        by_measured: bands
            .iter()
            .map(|(b, v)| {
                group(
                    format!("{:.1}-{:.1}", *b as f64 / 10.0, (*b + 1) as f64 / 10.0),
                    v,
                )
            })
            .collect(),
        troughs: if troughs.is_empty() {
            empty()
        } else {
            group("troughs (lowest quarter of each run)".into(), &troughs)
        },
        peaks: if peaks.is_empty() {
            empty()
        } else {
            group("peaks (highest quarter of each run)".into(), &peaks)
        },
        by_pair: pairs
            .iter()
            .map(|((s, b), v)| group(format!("{s} with {b}"), v))
            .collect(),
    })
}

/// The validation as text for people.
pub fn report(v: &Validation) -> String {
    let mut out = format!(
        "{}: {} windows; correlation r = {:.3} (thesis 0.853), mean absolute error {:.4}, RMSE {:.4}, mean bias {:+.4}, R² on these windows {:.3}, within-run correlation {:.3}\n\n",
        v.estimator, v.n, v.correlation, v.mae, v.rmse, v.bias, v.r_squared, v.within_run_correlation
    );
    let table = |groups: &[&Group], first: &str| {
        let mut t = Table::new([first, "windows", "measured", "estimated", "bias", "MAE"]);
        for g in groups {
            t.row([
                g.label.clone(),
                g.n.to_string(),
                format!("{:.3}", g.mean_measured),
                format!("{:.3}", g.mean_estimated),
                format!("{:+.3}", g.bias),
                format!("{:.3}", g.mae),
            ]);
        }
        t.render()
    };
    out.push_str("Where it over- (bias > 0) or under-estimates, by measured PR:\n");
    out.push_str(&table(
        &v.by_measured.iter().collect::<Vec<_>>(),
        "measured PR",
    ));
    out.push_str("\nTroughs and peaks within runs (the thesis found troughs over-estimated):\n");
    out.push_str(&table(&[&v.troughs, &v.peaks], "windows"));
    out.push_str("\nBy pair:\n");
    out.push_str(&table(&v.by_pair.iter().collect::<Vec<_>>(), "pair"));
    out
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn plot<E: std::fmt::Display>(e: E) -> EstimateError {
    EstimateError::Plot(e.to_string())
}

/// A scatter plot of estimated against measured PR, one colour per subject, with the diagonal
/// (thesis Fig. 3.18).
pub fn scatter_svg(
    windows: &[WindowRecord],
    estimates: &[f64],
    title: &str,
) -> Result<String, EstimateError> {
    let all: Vec<f64> = windows
        .iter()
        .map(|w| w.pr)
        .chain(estimates.iter().copied())
        .filter(|v| v.is_finite())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = all
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .max(1.0);
    let (lo, hi) = ((lo * 10.0).floor() / 10.0, (hi * 10.0).ceil() / 10.0);
    let subjects = subjects(windows);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(plot)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, lo..hi)
            .map_err(plot)?;
        chart
            .configure_mesh()
            .x_desc("measured performance ratio")
            .y_desc("estimated performance ratio")
            .light_line_style(WHITE)
            .draw()
            .map_err(plot)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(lo, lo), (hi, hi)],
                BLACK.mix(0.5).stroke_width(1),
            )))
            .map_err(plot)?;
        for (k, s) in subjects.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            chart
                .draw_series(
                    windows
                        .iter()
                        .zip(estimates)
                        .filter(|(w, e)| w.subject == *s && e.is_finite())
                        .map(|(w, e)| Circle::new((w.pr, *e), 2, colour.mix(0.6).filled())),
                )
                .map_err(plot)?
                .label(s.to_string())
                .legend(move |(x, y)| Circle::new((x + 5, y), 4, colour.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(plot)?;
        root.present().map_err(plot)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(subject: &str, run: u32, pr: f64) -> WindowRecord {
        WindowRecord {
            subject: subject.into(),
            background: "b".into(),
            run,
            window: 0,
            instructions: 1.0,
            solo_cycles: pr,
            corun_cycles: 1.0,
            pr,
            subj: [0.0; crate::windows::NE],
            back: [0.0; crate::windows::NE],
        }
    }

    #[test]
    fn correlation_by_hand() {
        // x = 1, 2, 3; y = 1, 3, 2: sxy = 1, sxx = syy = 2, r = 0.5.
        assert!((correlation(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]) - 0.5).abs() < 1e-12);
        assert!((correlation(&[1.0, 2.0, 3.0], &[-2.0, -4.0, -6.0]) + 1.0).abs() < 1e-12);
    }

    #[test]
    fn errors_troughs_and_bands_by_hand() {
        // One run of four windows: measured 0.2, 0.4, 0.6, 0.8; the estimate is squeezed
        // towards the middle: 0.3, 0.45, 0.55, 0.7 (troughs over-, peaks under-estimated).
        let ws: Vec<WindowRecord> = [0.2, 0.4, 0.6, 0.8].iter().map(|&p| w("s", 0, p)).collect();
        let est = [0.3, 0.45, 0.55, 0.7];
        let v = validate("t", &ws, &est).unwrap();
        assert_eq!(v.n, 4);
        assert!((v.mae - 0.075).abs() < 1e-12);
        assert!(v.bias.abs() < 1e-12);
        assert!((v.rmse - (0.025f64 / 4.0).sqrt()).abs() < 1e-12);
        // SST = 0.2, SSE = 0.025.
        assert!((v.r_squared - (1.0 - 0.025 / 0.2)).abs() < 1e-12);
        assert_eq!(v.troughs.n, 1);
        assert!((v.troughs.bias - 0.1).abs() < 1e-12);
        assert!((v.peaks.bias + 0.1).abs() < 1e-12);
        assert_eq!(v.by_measured.len(), 4);
        assert_eq!(v.by_measured[0].label, "0.2-0.3");
        assert!(report(&v).contains("troughs"));
        assert!((v.within_run_correlation - v.correlation).abs() < 1e-12);
    }

    #[test]
    fn scatter_has_a_point_per_window_and_a_legend_per_subject() {
        let ws = vec![w("a", 0, 0.5), w("a", 0, 0.6), w("c", 1, 0.7)];
        let svg = scatter_svg(&ws, &[0.55, 0.58, 0.72], "t").unwrap();
        assert!(svg.starts_with("<svg"));
        // Three points and two legend markers.
        assert_eq!(svg.matches("<circle").count(), 5, "{svg}");
        assert!(
            svg.contains(">\na\n</text>") || svg.contains(">a<"),
            "legend a"
        );
    }

    #[test]
    fn nothing_to_validate_is_an_error() {
        assert!(matches!(
            validate("t", &[], &[]),
            Err(EstimateError::Empty(_))
        ));
    }
}
