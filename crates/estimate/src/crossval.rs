//! Leave-one-program-out cross-validation of least-squares models, and feature selection by it.
//!
//! The windows of one pair are not independent observations: 300 windows share a subject, a
//! background and most of their error. Least squares' p-values count every window as
//! independent, so with 16,800 windows nearly any feature looks significant, and a coefficient
//! that only separates the eight training programs from one another (the thesis protocol has no
//! more) survives selection and then extrapolates on a new program. The question a model is
//! trained for — how well does it estimate a program it has never seen — is answered directly by
//! holding each program out in turn: fit on the windows in which it is neither subject nor
//! background, and estimate the windows in which it is the subject.

use crate::error::EstimateError;
use crate::ols::{ols, Backward, Selection, SelectionRule};
use crate::validate::correlation;
use crate::windows::{subjects, WindowRecord};
use serde::Serialize;

/// Which windows each fold trains on and tests: one fold per subject program.
#[derive(Clone, Debug)]
pub struct Folds {
    programs: Vec<String>,
    /// Per fold, the windows it trains on and the windows it tests.
    train: Vec<Vec<usize>>,
    test: Vec<Vec<usize>>,
}

impl Folds {
    /// One fold per subject of `rows`. Needs at least three subjects: with two, a fold's training
    /// windows (neither program) would be empty.
    pub fn leave_one_program_out(rows: &[WindowRecord]) -> Result<Folds, EstimateError> {
        let programs = subjects(rows);
        if programs.len() < 3 {
            return Err(EstimateError::Invalid(format!(
                "leave-one-program-out needs windows of at least 3 subject workloads; these have {} ({})",
                programs.len(),
                programs.join(", ")
            )));
        }
        let train = programs
            .iter()
            .map(|p| {
                (0..rows.len())
                    .filter(|&i| &rows[i].subject != p && &rows[i].background != p)
                    .collect()
            })
            .collect();
        let test = programs
            .iter()
            .map(|p| (0..rows.len()).filter(|&i| &rows[i].subject == p).collect())
            .collect();
        Ok(Folds {
            programs,
            train,
            test,
        })
    }

    pub fn programs(&self) -> &[String] {
        &self.programs
    }
}

/// How well the held-out programs' windows were estimated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CvScore {
    /// Root-mean-square error over every window of every fold's held-out program.
    pub rmse: f64,
    pub mae: f64,
    /// Pearson correlation of the held-out estimates with the measured PRs.
    pub correlation: f64,
    pub per_program: Vec<ProgramScore>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramScore {
    pub program: String,
    pub rmse: f64,
    /// Mean of estimate − measured.
    pub bias: f64,
}

fn pick(col: &[f64], rows: &[usize]) -> Vec<f64> {
    rows.iter().map(|&i| col[i]).collect()
}

/// Each fold's model fitted on its training windows, scored on its held-out program's windows.
/// A fold whose training windows make the design singular (a feature that only the held-out
/// program exercises) is an error naming the program.
pub fn cross_validate(
    columns: &[Vec<f64>],
    names: &[String],
    y: &[f64],
    folds: &Folds,
) -> Result<CvScore, EstimateError> {
    let mut estimates = Vec::new();
    let mut measured = Vec::new();
    let mut per_program = Vec::with_capacity(folds.programs.len());
    for ((program, train), test) in folds.programs.iter().zip(&folds.train).zip(&folds.test) {
        let cols: Vec<Vec<f64>> = columns.iter().map(|c| pick(c, train)).collect();
        let fit = ols(&cols, names, &pick(y, train)).map_err(|e| {
            EstimateError::Invalid(format!("leave-one-program-out, without {program}: {e}"))
        })?;
        let (mut sse, mut bias) = (0.0, 0.0);
        for &i in test {
            let x: Vec<f64> = columns.iter().map(|c| c[i]).collect();
            let e = fit.predict(&x);
            sse += (e - y[i]).powi(2);
            bias += e - y[i];
            estimates.push(e);
            measured.push(y[i]);
        }
        let n = test.len().max(1) as f64;
        per_program.push(ProgramScore {
            program: program.clone(),
            rmse: (sse / n).sqrt(),
            bias: bias / n,
        });
    }
    let n = measured.len() as f64;
    let err = estimates.iter().zip(&measured).map(|(e, m)| e - m);
    Ok(CvScore {
        rmse: (err.clone().map(|d| d * d).sum::<f64>() / n).sqrt(),
        mae: err.map(f64::abs).sum::<f64>() / n,
        correlation: correlation(&estimates, &measured),
        per_program,
    })
}

/// Backward elimination by cross-validated error: starting from every feature, drop the one
/// whose removal lowers the leave-one-program-out RMSE most, and stop when no removal lowers it.
/// A feature that is constant in some fold's training windows (only the held-out program
/// exercises it) cannot be tested that way and is dropped first, saying so; candidate sets that
/// are otherwise singular in some fold are skipped.
pub fn select_by_cv(
    columns: &[Vec<f64>],
    names: &[String],
    y: &[f64],
    folds: &Folds,
) -> Result<(Selection, CvScore), EstimateError> {
    let mut b = Backward::new(columns, names, y)?;
    for (program, train) in folds.programs.iter().zip(&folds.train) {
        let mut k = 0;
        while k < b.keep.len() {
            let col = &columns[b.keep[k]];
            let first = train.first().map_or(0.0, |&i| col[i]);
            if b.keep.len() > 1 && train.iter().all(|&i| col[i] == first) {
                let note = format!(
                    "the same ({first}) in every window without {program}: no fold can test it"
                );
                b.drop(k, None, Some(note))?;
            } else {
                k += 1;
            }
        }
    }
    let (cols, nm) = b.subset(&b.keep);
    let mut score = cross_validate(&cols, &nm, y, folds)?;
    while b.keep.len() > 1 {
        let mut best: Option<(usize, CvScore)> = None;
        for k in 0..b.keep.len() {
            let mut trial = b.keep.clone();
            trial.remove(k);
            let (cols, nm) = b.subset(&trial);
            let Ok(s) = cross_validate(&cols, &nm, y, folds) else {
                continue;
            };
            if best.as_ref().is_none_or(|(_, b)| s.rmse < b.rmse) {
                best = Some((k, s));
            }
        }
        let Some((k, s)) = best.filter(|(_, s)| s.rmse < score.rmse) else {
            break;
        };
        b.drop(k, Some(s.rmse), None)?;
        score = s;
    }
    Ok((b.finish(SelectionRule::ProgramCv), score))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(subject: &str, background: &str) -> WindowRecord {
        WindowRecord {
            subject: subject.into(),
            background: background.into(),
            run: 0,
            window: 0,
            instructions: 1.0,
            solo_cycles: 1.0,
            corun_cycles: 1.0,
            pr: 1.0,
            subj: Default::default(),
            back: Default::default(),
        }
    }

    #[test]
    fn folds_hold_out_the_subject_and_train_without_it() {
        let names = ["a", "b", "c"];
        let mut rows = Vec::new();
        for s in names {
            for b in names.iter().filter(|&&b| b != s) {
                rows.push(record(s, b));
            }
        }
        // rows: a|b a|c b|a b|c c|a c|b
        let f = Folds::leave_one_program_out(&rows).unwrap();
        assert_eq!(f.programs(), ["a", "b", "c"]);
        assert_eq!(f.test[0], vec![0, 1]);
        assert_eq!(f.train[0], vec![3, 5], "without a: b|c and c|b");
        assert_eq!(f.train[2], vec![0, 2], "without c: a|b and b|a");
        let e = Folds::leave_one_program_out(&rows[..3]).unwrap_err();
        assert!(
            e.to_string().contains("at least 3 subject workloads"),
            "{e}"
        );
    }

    /// Programs a, b, c; every ordered pair has a window at x = 0 and one at x = 1;
    /// y = 1 + 2x, plus 0.5 when c is the subject. `z` is a per-subject constant (a 0, b 3, c 1).
    fn three_programs() -> (Vec<WindowRecord>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut rows, mut x, mut y, mut z) = (vec![], vec![], vec![], vec![]);
        for (s, zs) in [("a", 0.0), ("b", 3.0), ("c", 1.0)] {
            for b in ["a", "b", "c"].into_iter().filter(|&b| b != s) {
                for xi in [0.0, 1.0] {
                    rows.push(record(s, b));
                    x.push(xi);
                    y.push(1.0 + 2.0 * xi + if s == "c" { 0.5 } else { 0.0 });
                    z.push(zs);
                }
            }
        }
        (rows, x, y, z)
    }

    #[test]
    fn cross_validation_by_hand() {
        // Without a (or b) the fold trains on b|c and c|b: at each x half the windows carry +0.5,
        // so it fits y = 1.25 + 2x and over-estimates the held-out program by 0.25. Without c it
        // trains on exact windows, fits 1 + 2x and under-estimates c by 0.5.
        // RMSE = √((4·0.25² + 4·0.25² + 4·0.5²) / 12) = √0.125; MAE = 4 / 12.
        let (rows, x, y, _) = three_programs();
        let folds = Folds::leave_one_program_out(&rows).unwrap();
        let s = cross_validate(&[x], &["x".to_string()], &y, &folds).unwrap();
        assert!((s.rmse - 0.125f64.sqrt()).abs() < 1e-12, "{}", s.rmse);
        assert!((s.mae - 1.0 / 3.0).abs() < 1e-12);
        let bias: Vec<f64> = s.per_program.iter().map(|p| p.bias).collect();
        for (got, want) in bias.iter().zip([0.25, 0.25, -0.5]) {
            assert!((got - want).abs() < 1e-12, "{bias:?}");
        }
    }

    #[test]
    fn selection_drops_a_feature_that_only_fits_the_programs_it_has_seen() {
        // In sample, z (a 0, b 3, c 1) explains part of c's +0.5. Held out, it extrapolates:
        // without a the fold sees (z, offset) = (3, 0), (1, 0.5), fits 0.75 − 0.25z and misses a
        // by +0.75; without b it sees (0, 0), (1, 0.5), fits 0.5z and misses b by +1.5; without c
        // it misses c by −0.5. RMSE √((0.75² + 1.5² + 0.5²) / 3) = 1.0104 > √0.125 without z.
        let (rows, x, y, z) = three_programs();
        let folds = Folds::leave_one_program_out(&rows).unwrap();
        let names = ["x".to_string(), "z".to_string()];
        let with_z = cross_validate(&[x.clone(), z.clone()], &names, &y, &folds).unwrap();
        let want = ((0.75f64.powi(2) + 1.5f64.powi(2) + 0.25) / 3.0).sqrt();
        assert!((with_z.rmse - want).abs() < 1e-12, "{}", with_z.rmse);
        let (sel, score) = select_by_cv(&[x, z], &names, &y, &folds).unwrap();
        assert!(
            sel.full.r_squared > sel.last.r_squared,
            "z does help in sample"
        );
        assert_eq!(sel.dropped.len(), 1);
        assert_eq!(sel.dropped[0].feature, "z");
        assert_eq!(sel.last.terms.len(), 1);
        assert_eq!(sel.last.terms[0].name, "x");
        assert!((score.rmse - 0.125f64.sqrt()).abs() < 1e-12);
        assert_eq!(sel.dropped[0].cv_rmse_after, Some(score.rmse));
    }
}
