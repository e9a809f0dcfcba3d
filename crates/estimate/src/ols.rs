//! Ordinary least squares with the statistics the thesis's Table 3.8 reports: coefficients,
//! standard errors, t statistics and two-sided p-values (Student's t with n − p − 1 degrees of
//! freedom), each feature's mean and standard deviation, its importance (coefficient × standard
//! deviation, the thesis's column) and standardised coefficient, and R². Backward elimination
//! drops insignificant features one at a time and reports each step.

use crate::error::EstimateError;
use crate::linalg::Qr;
use serde::Serialize;
use smtsched_report::stats::mean_sd;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Relative size of `R`'s diagonal below which a column counts as a linear combination of the
/// ones before it.
const SINGULAR_TOLERANCE: f64 = 1e-9;

/// One coefficient and its statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coefficient {
    /// Feature name (`(intercept)` for the constant).
    pub name: String,
    pub estimate: f64,
    pub std_error: f64,
    pub t: f64,
    /// Two-sided p-value of `estimate = 0`.
    pub p_value: f64,
    /// Mean of the feature over the data (1 for the intercept).
    pub mean: f64,
    /// Sample standard deviation of the feature (0 for the intercept).
    pub sd: f64,
    /// `estimate × sd`: how far one standard deviation of the feature moves the prediction
    /// (the thesis's "importance", which it prints ×1000).
    pub importance: f64,
    /// `estimate × sd / sd(y)`: the standardised coefficient.
    pub beta: f64,
}

/// A least-squares fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// Observations.
    pub n: usize,
    /// Residual degrees of freedom, `n − p − 1`.
    pub df: usize,
    pub intercept: Coefficient,
    pub terms: Vec<Coefficient>,
    pub r_squared: f64,
    pub adj_r_squared: f64,
    /// Residual standard error, `√(SSE / df)`.
    pub residual_se: f64,
    pub mean_y: f64,
    pub sd_y: f64,
}

impl Fit {
    /// The prediction for features `x` (in the order of `terms`).
    pub fn predict(&self, x: &[f64]) -> f64 {
        self.intercept.estimate
            + self
                .terms
                .iter()
                .zip(x)
                .map(|(c, v)| c.estimate * v)
                .sum::<f64>()
    }
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom.
pub fn t_p_value(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    let dist = StudentsT::new(0.0, 1.0, df).expect("positive degrees of freedom");
    (2.0 * dist.sf(t.abs())).min(1.0)
}

/// Fits `y = b0 + Σ b_j x_j` by least squares; `columns[j]` holds feature `names[j]` for every
/// observation.
pub fn ols(columns: &[Vec<f64>], names: &[String], y: &[f64]) -> Result<Fit, EstimateError> {
    assert_eq!(columns.len(), names.len());
    let n = y.len();
    let p = columns.len() + 1;
    if n == 0 {
        return Err(EstimateError::Empty("no windows to fit".into()));
    }
    if n <= p {
        return Err(EstimateError::TooFew {
            windows: n,
            coefficients: p,
            features: columns.len(),
        });
    }
    for (c, name) in columns.iter().zip(names) {
        assert_eq!(c.len(), n, "column {name} has the wrong length");
    }
    // Scale every column to unit length (the constant too), so the tolerance is relative and the
    // factorisation is well conditioned whatever the units.
    let mut design: Vec<Vec<f64>> = Vec::with_capacity(p);
    design.push(vec![1.0; n]);
    design.extend(columns.iter().cloned());
    let mut scale = vec![1.0; p];
    for (j, c) in design.iter_mut().enumerate() {
        let norm = c.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            return Err(EstimateError::Singular {
                feature: names[j - 1].clone(),
                why: "is 0 in every window".into(),
            });
        }
        scale[j] = norm;
        for x in c.iter_mut() {
            *x /= norm;
        }
    }
    let qr = Qr::new(design);
    for j in 1..p {
        // |R_jj| is the length of column j's part outside the span of the columns before it
        // (column j has unit length).
        if qr.r(j, j).abs() < SINGULAR_TOLERANCE {
            let (m, sd) = mean_sd(&columns[j - 1]);
            let why = if sd <= m.abs() * 1e-12 {
                format!("is the same ({m}) in every window")
            } else {
                "is a linear combination of the intercept and the features before it".into()
            };
            return Err(EstimateError::Singular {
                feature: names[j - 1].clone(),
                why,
            });
        }
    }
    let scaled = qr.solve_r(&qr.qt_mul(y));
    let b: Vec<f64> = scaled.iter().zip(&scale).map(|(b, s)| b / s).collect();
    let fitted = |i: usize| b[0] + (1..p).map(|j| b[j] * columns[j - 1][i]).sum::<f64>();
    let (mean_y, sd_y) = mean_sd(y);
    let sse: f64 = (0..n).map(|i| (y[i] - fitted(i)).powi(2)).sum();
    let sst: f64 = y.iter().map(|v| (v - mean_y).powi(2)).sum();
    let df = n - p;
    let sigma2 = sse / df as f64;
    let rinv = qr.r_inverse();
    let coef = |j: usize, name: &str, mean: f64, sd: f64| {
        let var = sigma2 * rinv[j].iter().map(|x| x * x).sum::<f64>() / (scale[j] * scale[j]);
        let se = var.sqrt();
        let t = b[j] / se;
        Coefficient {
            name: name.to_string(),
            estimate: b[j],
            std_error: se,
            t,
            p_value: t_p_value(t, df as f64),
            mean,
            sd,
            importance: b[j] * sd,
            beta: if sd_y > 0.0 { b[j] * sd / sd_y } else { 0.0 },
        }
    };
    let intercept = coef(0, "(intercept)", 1.0, 0.0);
    let terms = (1..p)
        .map(|j| {
            let (m, sd) = mean_sd(&columns[j - 1]);
            coef(j, &names[j - 1], m, sd)
        })
        .collect();
    let r_squared = if sst > 0.0 { 1.0 - sse / sst } else { 0.0 };
    Ok(Fit {
        n,
        df,
        intercept,
        terms,
        r_squared,
        adj_r_squared: 1.0 - (1.0 - r_squared) * (n - 1) as f64 / df as f64,
        residual_se: sigma2.sqrt(),
        mean_y,
        sd_y,
    })
}

/// One step of backward elimination.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dropped {
    pub feature: String,
    /// Its p-value in the fit it was dropped from.
    pub p_value: f64,
    /// R² of the fit without it.
    pub r_squared_after: f64,
    /// Leave-one-program-out RMSE without it (selection by cross-validation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cv_rmse_after: Option<f64>,
    /// Why it was dropped when the rule's own measure does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How features are dropped from the full fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "rule")]
pub enum SelectionRule {
    /// Every feature is kept.
    None,
    /// Backward elimination by p-value, as the thesis did.
    PValue { alpha: f64 },
    /// Backward elimination by leave-one-program-out error ([`crate::crossval`]).
    ProgramCv,
}

impl SelectionRule {
    /// Selection by p-value at `alpha`, or none.
    pub fn by_p_value(alpha: Option<f64>) -> SelectionRule {
        alpha.map_or(SelectionRule::None, |alpha| SelectionRule::PValue { alpha })
    }

    /// The significance level, for selection by p-value.
    pub fn alpha(self) -> Option<f64> {
        match self {
            SelectionRule::PValue { alpha } => Some(alpha),
            SelectionRule::None | SelectionRule::ProgramCv => None,
        }
    }

    /// The rule's name as `--select` spells it.
    pub fn name(self) -> &'static str {
        match self {
            SelectionRule::None => "none",
            SelectionRule::PValue { .. } => "p-value",
            SelectionRule::ProgramCv => "program-cv",
        }
    }
}

/// A fit of all the features, and the fit left after dropping insignificant ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    pub full: Fit,
    pub dropped: Vec<Dropped>,
    pub last: Fit,
    pub rule: SelectionRule,
    /// Indices (into the requested features) of the features `last` keeps.
    #[serde(skip)]
    pub kept: Vec<usize>,
}

/// Backward elimination's state, stepped by either selection rule: the features kept (indices
/// into the columns), the fit on them and the drops so far.
pub(crate) struct Backward<'a> {
    columns: &'a [Vec<f64>],
    names: &'a [String],
    y: &'a [f64],
    pub keep: Vec<usize>,
    full: Fit,
    pub last: Fit,
    dropped: Vec<Dropped>,
}

impl<'a> Backward<'a> {
    /// Starts from every feature.
    pub fn new(
        columns: &'a [Vec<f64>],
        names: &'a [String],
        y: &'a [f64],
    ) -> Result<Self, EstimateError> {
        let full = ols(columns, names, y)?;
        Ok(Backward {
            columns,
            names,
            y,
            keep: (0..names.len()).collect(),
            last: full.clone(),
            full,
            dropped: Vec::new(),
        })
    }

    /// The columns and names of the features `keep` lists.
    pub fn subset(&self, keep: &[usize]) -> (Vec<Vec<f64>>, Vec<String>) {
        (
            keep.iter().map(|&i| self.columns[i].clone()).collect(),
            keep.iter().map(|&i| self.names[i].clone()).collect(),
        )
    }

    /// Drops `keep[k]`, refits, and records the drop with its p-value in the fit it left.
    pub fn drop(
        &mut self,
        k: usize,
        cv_rmse_after: Option<f64>,
        note: Option<String>,
    ) -> Result<(), EstimateError> {
        // `last`'s terms are in `keep` order.
        let p_value = self.last.terms[k].p_value;
        let feature = self.names[self.keep.remove(k)].clone();
        let (cols, nm) = self.subset(&self.keep);
        self.last = ols(&cols, &nm, self.y)?;
        self.dropped.push(Dropped {
            feature,
            p_value,
            r_squared_after: self.last.r_squared,
            cv_rmse_after,
            note,
        });
        Ok(())
    }

    pub fn finish(self, rule: SelectionRule) -> Selection {
        Selection {
            full: self.full,
            dropped: self.dropped,
            last: self.last,
            rule,
            kept: self.keep,
        }
    }
}

/// Fits all `names`, then (with `alpha`) repeatedly drops the feature with the largest p-value
/// above `alpha` and refits, as the thesis dropped L2-back (p = 0.100) from its model.
pub fn fit_with_selection(
    columns: &[Vec<f64>],
    names: &[String],
    y: &[f64],
    alpha: Option<f64>,
) -> Result<Selection, EstimateError> {
    let mut b = Backward::new(columns, names, y)?;
    if let Some(alpha) = alpha {
        while b.keep.len() > 1 {
            let worst = b
                .last
                .terms
                .iter()
                .enumerate()
                .filter(|(_, c)| c.p_value > alpha)
                .max_by(|x, y| x.1.p_value.total_cmp(&y.1.p_value));
            let Some((k, _)) = worst else { break };
            b.drop(k, None, None)?;
        }
    }
    Ok(b.finish(SelectionRule::by_p_value(alpha)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn simple_regression_by_hand() {
        // x = 1..5, y = 1, 3, 2, 5, 4: Sxx = 10, Sxy = 8, so b1 = 0.8 and b0 = 3 - 0.8 * 3 = 0.6.
        // Residuals -0.4, 0.8, -1.0, 1.2, -0.6: SSE = 3.6, σ² = 3.6 / 3 = 1.2, SST = 10.
        // se(b1) = √(1.2 / 10); se(b0) = √(1.2 (1/5 + 9/10)) = √1.32.
        // t(b1) = 0.8 / √0.12 = 2.3094; with 3 df, F(t) = 1/2 + (t/√3 / (1 + t²/3) + atan(t/√3)) / π,
        // so p = 2 (1 - F) = 0.104088.
        let x = vec![vec![1.0, 2.0, 3.0, 4.0, 5.0]];
        let y = [1.0, 3.0, 2.0, 5.0, 4.0];
        let f = ols(&x, &names(&["x"]), &y).unwrap();
        let b1 = &f.terms[0];
        assert!((f.intercept.estimate - 0.6).abs() < 1e-12);
        assert!((b1.estimate - 0.8).abs() < 1e-12);
        assert!((b1.std_error - 0.12f64.sqrt()).abs() < 1e-12);
        assert!((f.intercept.std_error - 1.32f64.sqrt()).abs() < 1e-12);
        assert!((f.r_squared - 0.64).abs() < 1e-12);
        assert_eq!(f.df, 3);
        let t: f64 = 0.8 / 0.12f64.sqrt();
        let s3 = 3f64.sqrt();
        let cdf = 0.5 + ((t / s3) / (1.0 + t * t / 3.0) + (t / s3).atan()) / std::f64::consts::PI;
        assert!((b1.p_value - 2.0 * (1.0 - cdf)).abs() < 1e-10);
        assert!((b1.p_value - 0.104088).abs() < 1e-6, "{}", b1.p_value);
        // importance = b × sd(x) = 0.8 × √2.5; beta divides by sd(y) = √2.5 too.
        assert!((b1.importance - 0.8 * 2.5f64.sqrt()).abs() < 1e-12);
        assert!((b1.beta - 0.8).abs() < 1e-12);
        assert!((f.residual_se - 1.2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn two_orthogonal_regressors_by_hand() {
        // A 2×2 factorial: b0 = mean = 3.5, b1 = Σ x1 y / 4 = 2, b2 = Σ x2 y / 4 = 1; residuals
        // ±0.5, SSE = 1 on 1 df, so every slope has se √(1/4) = 0.5. With 1 df t is Cauchy:
        // p = 1 - 2 atan(|t|) / π.
        let x = vec![vec![-1.0, -1.0, 1.0, 1.0], vec![-1.0, 1.0, -1.0, 1.0]];
        let y = [1.0, 2.0, 4.0, 7.0];
        let f = ols(&x, &names(&["a", "b"]), &y).unwrap();
        let pi = std::f64::consts::PI;
        assert!((f.intercept.estimate - 3.5).abs() < 1e-12);
        assert!((f.terms[0].estimate - 2.0).abs() < 1e-12);
        assert!((f.terms[1].estimate - 1.0).abs() < 1e-12);
        assert!((f.terms[0].std_error - 0.5).abs() < 1e-12);
        assert!((f.terms[0].p_value - (1.0 - 2.0 * 4f64.atan() / pi)).abs() < 1e-12);
        assert!((f.terms[1].p_value - (1.0 - 2.0 * 2f64.atan() / pi)).abs() < 1e-12);
        // SST = Σ (y - 3.5)² = 6.25 + 2.25 + 0.25 + 12.25 = 21.
        assert!((f.r_squared - 20.0 / 21.0).abs() < 1e-12);
        assert!((f.predict(&[1.0, 1.0]) - 6.5).abs() < 1e-12);
    }

    #[test]
    fn p_values_match_t_tables() {
        // Two-sided 5% critical values: 12.706 (1 df), 2.228 (10 df), 1.960 (normal limit);
        // 1% at 20 df: 2.845.
        assert!((t_p_value(12.7062, 1.0) - 0.05).abs() < 1e-5);
        assert!((t_p_value(2.228139, 10.0) - 0.05).abs() < 1e-6);
        assert!((t_p_value(2.845340, 20.0) - 0.01).abs() < 1e-6);
        assert!((t_p_value(1.959964, 1e7) - 0.05).abs() < 1e-5);
        assert_eq!(t_p_value(0.0, 5.0), 1.0);
        // Far tails do not round to 0 too early: t = 40 at 16,000 df is about 1e-300 or less.
        assert!(t_p_value(10.0, 16_000.0) > 0.0);
    }

    #[test]
    fn constant_and_collinear_features_are_named() {
        let y = [1.0, 2.0, 3.0, 5.0];
        let e = ols(&[vec![2.0; 4]], &names(&["k"]), &y).unwrap_err();
        assert!(
            e.to_string()
                .contains("feature k is the same (2) in every window"),
            "{e}"
        );
        let e = ols(&[vec![0.0; 4]], &names(&["z"]), &y).unwrap_err();
        assert!(
            e.to_string().contains("feature z is 0 in every window"),
            "{e}"
        );
        let a = vec![1.0, 2.0, 4.0, 8.0];
        let b: Vec<f64> = a.iter().map(|v| 3.0 * v - 1.0).collect();
        let e = ols(&[a, b], &names(&["a", "b"]), &y).unwrap_err();
        assert!(
            e.to_string().contains("feature b is a linear combination"),
            "{e}"
        );
        assert!(e.is_bad_input());
    }

    #[test]
    fn too_few_and_no_observations() {
        assert!(matches!(
            ols(&[vec![1.0, 2.0]], &names(&["a"]), &[1.0, 2.0]),
            Err(EstimateError::TooFew { .. })
        ));
        assert!(matches!(
            ols(&[vec![]], &names(&["a"]), &[]),
            Err(EstimateError::Empty(_))
        ));
    }

    #[test]
    fn selection_drops_the_irrelevant_feature_and_says_so() {
        // A 2×2 factorial twice over; y = 1 + 2a + e with e the a×b interaction, which is
        // orthogonal to a and b: b's coefficient is exactly 0 (p = 1) and a's stays 2.
        let a = vec![-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0];
        let b = vec![-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0];
        let y: Vec<f64> = (0..8)
            .map(|i| 1.0 + 2.0 * a[i] + 0.3 * a[i] * b[i])
            .collect();
        let cols = [a, b];
        let s = fit_with_selection(&cols, &names(&["a", "b"]), &y, Some(0.05)).unwrap();
        assert_eq!(s.full.terms.len(), 2);
        assert!(s.full.terms[1].estimate.abs() < 1e-12);
        assert!((s.full.terms[1].p_value - 1.0).abs() < 1e-9);
        assert_eq!(s.dropped.len(), 1);
        assert_eq!(s.dropped[0].feature, "b");
        assert_eq!(s.last.terms.len(), 1);
        assert_eq!(s.last.terms[0].name, "a");
        assert!((s.last.terms[0].estimate - 2.0).abs() < 1e-12);
        let none = fit_with_selection(&cols, &names(&["a", "b"]), &y, None).unwrap();
        assert!(none.dropped.is_empty());
        assert_eq!(none.last, none.full);
    }
}
