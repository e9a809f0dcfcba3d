//! Fitting the online model to training windows, and the thesis's Table 3.8 as a report.

use crate::crossval::{cross_validate, select_by_cv, CvScore, Folds};
use crate::error::EstimateError;
use crate::ols::{fit_with_selection, Coefficient, Selection, SelectionRule};
use crate::windows::WindowSet;
use smtsched_os::estimate::{CounterEvent, DroppedTerm, Feature, FitInfo, LinearModel, Side, Term};
use smtsched_report::Table;

/// The thesis's ten features (Table 3.8 order): trace-cache (L1I), L2 (last-level), FP,
/// instructions and L1D, of the subject and of the background.
pub const THESIS_FEATURES: &[&str] = &[
    "l1i_misses_subj",
    "llc_misses_subj",
    "fp_ops_subj",
    "instructions_subj",
    "l1d_misses_subj",
    "l1i_misses_back",
    "llc_misses_back",
    "fp_ops_back",
    "instructions_back",
    "l1d_misses_back",
];

/// The thesis's name for a feature (`TC-subj`, `L2-back`, …), or the feature's own name.
pub fn thesis_label(feature: &str) -> String {
    let Some(f) = Feature::parse(feature) else {
        return feature.to_string();
    };
    let ev = match f.event {
        CounterEvent::L1iMisses => "TC/L1I",
        CounterEvent::LlcMisses => "LLC",
        CounterEvent::FpOps => "FP",
        CounterEvent::Instructions => "Insts",
        CounterEvent::L1dMisses => "L1D",
        CounterEvent::Loads => "Loads",
        CounterEvent::Stores => "Stores",
        CounterEvent::BranchMispredicts => "Mispred",
    };
    let side = match f.side {
        Side::Subject => "subj",
        Side::Background => "back",
    };
    format!("{ev}-{side}")
}

/// The names of `features`, for the fitting code that works on any named columns.
pub fn feature_names(features: &[Feature]) -> Vec<String> {
    features.iter().map(ToString::to_string).collect()
}

/// Parses a feature list: `thesis`, `all`, or comma-separated feature names.
pub fn parse_features(spec: &str) -> Result<Vec<Feature>, EstimateError> {
    let list: Vec<String> = match spec.trim() {
        "thesis" => THESIS_FEATURES.iter().map(|s| s.to_string()).collect(),
        "all" => crate::windows::feature_names(),
        other => other
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    };
    if list.is_empty() {
        return Err(EstimateError::Invalid(format!(
            "--features {spec:?} names no feature"
        )));
    }
    let mut features = Vec::with_capacity(list.len());
    for f in &list {
        let Some(feature) = Feature::parse(f) else {
            return Err(EstimateError::UnknownFeature {
                name: f.clone(),
                events: CounterEvent::names(),
            });
        };
        if features.contains(&feature) {
            return Err(EstimateError::Invalid(format!(
                "--features: {f} is named twice"
            )));
        }
        features.push(feature);
    }
    Ok(features)
}

/// The columns of `features` over the windows, and the PRs. A feature the file lacks (a missing
/// column or an empty cell) is an error naming it.
pub fn design(
    set: &WindowSet,
    features: &[Feature],
    file: &str,
) -> Result<(Vec<Vec<f64>>, Vec<f64>), EstimateError> {
    if set.rows.is_empty() {
        return Err(EstimateError::Empty(format!("{file} has no windows")));
    }
    let mut missing = Vec::new();
    let mut cols = Vec::with_capacity(features.len());
    for f in features {
        let col: Vec<f64> = set.rows.iter().map(|r| r.feature(*f)).collect();
        if col.iter().all(|v| v.is_nan()) {
            missing.push(f.to_string());
        } else if let Some(i) = col.iter().position(|v| v.is_nan()) {
            let r = &set.rows[i];
            return Err(EstimateError::Invalid(format!(
                "{file}: column {f} is empty in data row {} ({} with {}, run {}, window {})",
                i + 1,
                r.subject,
                r.background,
                r.run,
                r.window
            )));
        }
        cols.push(col);
    }
    if !missing.is_empty() {
        return Err(EstimateError::MissingColumns {
            file: file.into(),
            columns: format!("{} (needed by --features)", missing.join(", ")),
        });
    }
    Ok((cols, set.rows.iter().map(|r| r.pr).collect()))
}

/// What `fit` produces: the selection, the model to write and how well the model's feature set
/// estimates programs it was not trained on.
#[derive(Clone, Debug)]
pub struct Trained {
    pub selection: Selection,
    pub model: LinearModel,
    /// Leave-one-program-out score of the final feature set (None with fewer than three
    /// subject workloads).
    pub cv: Option<CvScore>,
}

/// Fits `features` to the windows of `set` (from `file`), dropping features by `rule`.
pub fn train(
    set: &WindowSet,
    file: &str,
    features: &[Feature],
    rule: SelectionRule,
    name: &str,
) -> Result<Trained, EstimateError> {
    if let Some(a) = rule.alpha() {
        if !(a > 0.0 && a < 1.0) {
            return Err(EstimateError::Invalid(format!(
                "--alpha {a}: a significance level is between 0 and 1"
            )));
        }
    }
    let (cols, y) = design(set, features, file)?;
    let features = feature_names(features);
    let features = features.as_slice();
    let folds = Folds::leave_one_program_out(&set.rows);
    let (selection, cv) = match rule {
        SelectionRule::ProgramCv => {
            let folds = folds.map_err(|e| EstimateError::Invalid(format!("{file}: {e}")))?;
            let (s, score) = select_by_cv(&cols, features, &y, &folds)?;
            (s, Some(score))
        }
        SelectionRule::None | SelectionRule::PValue { .. } => {
            let s = fit_with_selection(&cols, features, &y, rule.alpha())?;
            // The score is a report only: a fold that cannot be fitted leaves it out.
            let kept: Vec<String> = s.kept.iter().map(|&i| features[i].clone()).collect();
            let kept_cols: Vec<Vec<f64>> = s.kept.iter().map(|&i| cols[i].clone()).collect();
            let score = folds
                .ok()
                .and_then(|f| cross_validate(&kept_cols, &kept, &y, &f).ok());
            (s, score)
        }
    };
    let last = &selection.last;
    let term = |c: &Coefficient| Term {
        feature: Feature::parse(&c.name).expect("fitted columns are features"),
        coefficient: c.estimate,
        std_error: Some(c.std_error),
        p_value: Some(c.p_value),
        mean: Some(c.mean),
        importance: Some(c.importance),
    };
    let machine = set.meta("machine").unwrap_or("").to_string();
    let model = LinearModel {
        name: name.to_string(),
        source: format!(
            "smtsched train fit: least squares on {} windows of {}{}",
            last.n,
            file,
            if machine.is_empty() {
                String::new()
            } else {
                format!(" ({machine})")
            }
        ),
        intercept: last.intercept.estimate,
        terms: last.terms.iter().map(term).collect(),
        fit: Some(Box::new(FitInfo {
            machine,
            data: file.to_string(),
            workloads: set.subjects(),
            windows: last.n,
            r_squared: last.r_squared,
            adj_r_squared: last.adj_r_squared,
            residual_se: last.residual_se,
            intercept_std_error: last.intercept.std_error,
            intercept_p_value: last.intercept.p_value,
            alpha: rule.alpha(),
            selection: Some(rule.name().to_string()),
            dropped: selection
                .dropped
                .iter()
                .map(|d| DroppedTerm {
                    feature: d.feature.clone(),
                    p_value: d.p_value,
                    cv_rmse_after: d.cv_rmse_after,
                })
                .collect(),
            cv_rmse: cv.as_ref().map(|c| c.rmse),
            cv_correlation: cv.as_ref().map(|c| c.correlation),
        })),
    };
    model.validate().map_err(EstimateError::Internal)?;
    Ok(Trained {
        selection,
        model,
        cv,
    })
}

fn p_text(p: f64) -> String {
    if p == 0.0 {
        // Below the smallest f64: t is far out in the tail.
        "<1e-308".into()
    } else if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// The fit as the thesis's Table 3.8: coefficient, standard error, t, p-value, mean events per
/// 1000 cycles, importance (coefficient × sd, ×1000 as the thesis prints it) and the
/// standardised coefficient.
pub fn coefficient_table(fit: &crate::ols::Fit) -> String {
    let mut t = Table::new([
        "counter",
        "feature",
        "coefficient",
        "std error",
        "t",
        "p-value",
        "mean /1000 cyc",
        "importance",
        "std coef",
    ]);
    t.row([
        "(constant)".to_string(),
        String::new(),
        format!("{:.4}", fit.intercept.estimate),
        format!("{:.4}", fit.intercept.std_error),
        format!("{:.1}", fit.intercept.t),
        p_text(fit.intercept.p_value),
        String::new(),
        String::new(),
        String::new(),
    ]);
    for c in &fit.terms {
        t.row([
            thesis_label(&c.name),
            c.name.clone(),
            format!("{:.4}", c.estimate),
            format!("{:.4}", c.std_error),
            format!("{:.1}", c.t),
            p_text(c.p_value),
            format!("{:.3}", 1000.0 * c.mean),
            format!("{:.1}", 1000.0 * c.importance),
            format!("{:.3}", c.beta),
        ]);
    }
    t.render()
}

/// The whole `fit` report: the full fit, each dropped feature, and the final model.
pub fn report(tr: &Trained) -> String {
    let s = &tr.selection;
    let mut out = String::new();
    let line = |f: &crate::ols::Fit| {
        format!(
            "{} windows, {} features: R² = {:.3} (adjusted {:.3}), residual standard error {:.4}, mean PR {:.3} (sd {:.3})\n",
            f.n,
            f.terms.len(),
            f.r_squared,
            f.adj_r_squared,
            f.residual_se,
            f.mean_y,
            f.sd_y
        )
    };
    out.push_str("Least-squares fit of every requested feature (thesis Table 3.8: R² = 0.665)\n");
    out.push_str(&line(&s.full));
    out.push('\n');
    out.push_str(&coefficient_table(&s.full));
    match s.rule {
        SelectionRule::None => out
            .push_str("\nFeature selection: off (--alpha none); the model keeps every feature.\n"),
        SelectionRule::PValue { alpha } if s.dropped.is_empty() => out.push_str(&format!(
            "\nFeature selection at p > {alpha}: every feature is significant; none dropped.\n"
        )),
        SelectionRule::ProgramCv if s.dropped.is_empty() => out.push_str(
            "\nFeature selection by leave-one-program-out error: dropping any feature makes it worse; none dropped.\n",
        ),
        SelectionRule::PValue { alpha } => out.push_str(&format!(
            "\nFeature selection at p > {alpha} (backward elimination, one at a time; the thesis dropped L2-back, p = 0.100):\n"
        )),
        SelectionRule::ProgramCv => out.push_str(
            "\nFeature selection by leave-one-program-out error (backward elimination: drop the feature whose removal lowers it most, until none does):\n",
        ),
    }
    for d in &s.dropped {
        out.push_str(&format!(
            "  dropped {} ({}): p = {}; R² without it {:.4}{}{}\n",
            d.feature,
            thesis_label(&d.feature),
            p_text(d.p_value),
            d.r_squared_after,
            d.cv_rmse_after.map_or(String::new(), |r| format!(
                "; leave-one-program-out RMSE {r:.4}"
            )),
            d.note.as_ref().map_or(String::new(), |n| format!("; {n}"))
        ));
    }
    if !s.dropped.is_empty() {
        out.push_str("\nThe model after selection\n");
        out.push_str(&line(&s.last));
        out.push('\n');
        out.push_str(&coefficient_table(&s.last));
    }
    match &tr.cv {
        Some(cv) => {
            out.push_str(&format!(
                "\nLeave-one-program-out (each subject program held out in turn; its fold trains on the windows without it):\n  RMSE {:.4}, MAE {:.4}, correlation {:.3}; by program:",
                cv.rmse, cv.mae, cv.correlation
            ));
            for p in &cv.per_program {
                out.push_str(&format!(" {} {:.3} ({:+.3})", p.program, p.rmse, p.bias));
            }
            out.push('\n');
        }
        None => out.push_str(
            "\nLeave-one-program-out: not computed (it needs windows of at least 3 subject workloads).\n",
        ),
    }
    out
}

/// The model's estimate for every window, in floating point and in the kernel's fixed point.
/// Windows lacking a feature the model uses are an error naming it.
pub fn predict(
    model: &LinearModel,
    set: &WindowSet,
    file: &str,
) -> Result<(Vec<f64>, Vec<f64>), EstimateError> {
    let features: Vec<Feature> = model.terms.iter().map(|t| t.feature).collect();
    if !features.is_empty() {
        design(set, &features, file)?;
    } else if set.rows.is_empty() {
        return Err(EstimateError::Empty(format!("{file} has no windows")));
    }
    Ok(set
        .rows
        .iter()
        .map(|w| {
            let (s, b) = w.epc();
            (model.estimate(&s, &b), model.estimate_fixed(&s, &b))
        })
        .unzip())
}
