//! Estimators side by side on the same held-out windows: the thesis's published model, least
//! squares on the thesis's features and on every feature, and gradient-boosted trees on both.

use crate::error::EstimateError;
use crate::fit::{design, parse_features, predict, train};
use crate::gbt::{self, GbtParams};
use crate::ols::SelectionRule;
use crate::validate::{validate, Validation};
use crate::windows::WindowSet;
use serde::Serialize;
use smtsched_os::LinearModel;

/// One estimator's result.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    pub estimator: String,
    /// Features it uses after any selection.
    pub features: usize,
    /// R² on the training windows (none for the published model).
    pub train_r_squared: Option<f64>,
    pub validation: Validation,
    /// Its estimate of each held-out window.
    #[serde(skip)]
    pub estimates: Vec<f64>,
}

fn r_squared(y: &[f64], est: &[f64]) -> f64 {
    let m = y.iter().sum::<f64>() / y.len() as f64;
    let sse: f64 = y.iter().zip(est).map(|(a, b)| (a - b).powi(2)).sum();
    let sst: f64 = y.iter().map(|a| (a - m).powi(2)).sum();
    1.0 - sse / sst
}

/// Trains every estimator on `train` and validates each on `test`.
pub fn compare(
    train_set: &WindowSet,
    train_file: &str,
    test: &WindowSet,
    test_file: &str,
    alpha: Option<f64>,
    params: &GbtParams,
) -> Result<Vec<Compared>, EstimateError> {
    let mut out = Vec::new();
    let thesis = LinearModel::thesis_northwood();
    let (est, _) = predict(&thesis, test, test_file)?;
    out.push(Compared {
        estimator: "thesis Table 3.8 model (as published)".into(),
        features: thesis.terms.len(),
        train_r_squared: None,
        validation: validate("thesis", &test.rows, &est)?,
        estimates: est,
    });
    let by_p = SelectionRule::by_p_value(alpha);
    let rules = [
        (by_p, ""),
        (SelectionRule::ProgramCv, ", program-CV selection"),
    ];
    for (spec, (rule, how)) in ["thesis", "all"]
        .into_iter()
        .flat_map(|s| rules.iter().map(move |r| (s, r)))
    {
        let features = parse_features(spec)?;
        let tr = train(train_set, train_file, &features, *rule, "compare")?;
        let (est, _) = predict(&tr.model, test, test_file)?;
        let name = format!("least squares, {spec} features{how}");
        out.push(Compared {
            validation: validate(&name, &test.rows, &est)?,
            estimator: name,
            features: tr.model.terms.len(),
            train_r_squared: Some(tr.selection.last.r_squared),
            estimates: est,
        });
    }
    for spec in ["thesis", "all"] {
        let features = parse_features(spec)?;
        let (cols, y) = design(train_set, &features, train_file)?;
        let (test_cols, _) = design(test, &features, test_file)?;
        let model = gbt::fit(&cols, &crate::fit::feature_names(&features), &y, params)?;
        let row = |c: &[Vec<f64>], i: usize| c.iter().map(|col| col[i]).collect::<Vec<_>>();
        let fitted: Vec<f64> = (0..y.len())
            .map(|i| model.predict(&row(&cols, i)))
            .collect();
        let est: Vec<f64> = (0..test.rows.len())
            .map(|i| model.predict(&row(&test_cols, i)))
            .collect();
        let name = format!("boosted trees, {spec} features");
        out.push(Compared {
            validation: validate(&name, &test.rows, &est)?,
            estimator: name,
            features: features.len(),
            train_r_squared: Some(r_squared(&y, &fitted)),
            estimates: est,
        });
    }
    Ok(out)
}

/// The comparison as a table.
pub fn report(rows: &[Compared]) -> String {
    let mut t = smtsched_report::Table::new([
        "estimator",
        "features",
        "train R²",
        "held-out r",
        "MAE",
        "RMSE",
        "bias",
        "trough bias",
        "peak bias",
    ]);
    for c in rows {
        let v = &c.validation;
        t.row([
            c.estimator.clone(),
            c.features.to_string(),
            c.train_r_squared.map_or("-".into(), |r| format!("{r:.3}")),
            format!("{:.3}", v.correlation),
            format!("{:.4}", v.mae),
            format!("{:.4}", v.rmse),
            format!("{:+.4}", v.bias),
            format!("{:+.4}", v.troughs.bias),
            format!("{:+.4}", v.peaks.bias),
        ]);
    }
    t.render()
}
