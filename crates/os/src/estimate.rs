//! Online estimation of a task's performance ratio from counter rates (thesis §3.4.1, §4.4.3):
//! a linear model over events per cycle of the subject thread and of its sibling.

use serde::{Deserialize, Serialize};
pub use smtsched_model::events::{CounterEvent, Epc, Feature, Side};

/// `PR = intercept + Σ coefficient × feature`, features in events per cycle.
///
/// A model file (TOML or JSON, written by `smtsched train fit`) is this struct. Only `name`,
/// `intercept` and each term's `feature` and `coefficient` are needed; the statistics of a fit
/// ride along for people and are ignored by the evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearModel {
    pub name: String,
    #[serde(default)]
    pub source: String,
    pub intercept: f64,
    pub terms: Vec<Term>,
    /// How the model was fitted, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<Box<FitInfo>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// Typed when the file is read: an unknown name is an error at load, not at each estimate.
    pub feature: Feature,
    pub coefficient: f64,
    /// Standard error of the coefficient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_error: Option<f64>,
    /// Two-sided p-value of the coefficient being 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Mean of the feature over the training windows (events per cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Coefficient × the feature's standard deviation over the training windows (the thesis's
    /// "importance", which Table 3.8 prints ×1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
}

impl Term {
    /// A term with no statistics.
    pub fn new(feature: Feature, coefficient: f64) -> Term {
        Term {
            feature,
            coefficient,
            std_error: None,
            p_value: None,
            mean: None,
            importance: None,
        }
    }
}

/// The statistics of a least-squares fit (thesis Table 3.8), kept in the model file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitInfo {
    /// Machine the training windows came from.
    #[serde(default)]
    pub machine: String,
    /// The windows file.
    #[serde(default)]
    pub data: String,
    /// Subject workloads of the training windows.
    #[serde(default)]
    pub workloads: Vec<String>,
    pub windows: usize,
    pub r_squared: f64,
    pub adj_r_squared: f64,
    pub residual_se: f64,
    pub intercept_std_error: f64,
    pub intercept_p_value: f64,
    /// Significance level of the feature selection by p-value (absent: none, or another rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// How features were dropped: `p-value`, `program-cv` or `none` (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
    /// Features dropped, in order, with their p-values when dropped.
    #[serde(default)]
    pub dropped: Vec<DroppedTerm>,
    /// Leave-one-program-out RMSE and correlation of the final feature set (absent when the
    /// windows had fewer than three subject workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_rmse: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_correlation: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedTerm {
    pub feature: String,
    pub p_value: f64,
    /// Leave-one-program-out RMSE after dropping it (selection by cross-validation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_rmse_after: Option<f64>,
}

/// Fractional bits during the kernel's fixed-point evaluation, and the shift applied to its result
/// (thesis §4.4.3: 15 bits, result shifted right by 5 to about 1/1000).
pub const FIXED_FRACTION_BITS: u32 = 15;
pub const FIXED_RESULT_SHIFT: u32 = 5;
/// `estimate_fixed` treats rates as counts over 2^this cycles.
const NOMINAL_INTERVAL_BITS: u32 = 23;

/// The estimators fitted on the machine presets' simulations (`models/MACHINE.toml`, each written
/// by `smtsched train model --machine MACHINE`).
pub const FITTED_MODELS: &[(&str, &str)] = &[
    ("northwood", include_str!("../../../models/northwood.toml")),
    ("prescott", include_str!("../../../models/prescott.toml")),
    ("xeon-ruan", include_str!("../../../models/xeon-ruan.toml")),
    (
        "xeon-ruan-l3",
        include_str!("../../../models/xeon-ruan-l3.toml"),
    ),
    (
        "smt2-modern",
        include_str!("../../../models/smt2-modern.toml"),
    ),
    (
        "smt8-redstone",
        include_str!("../../../models/smt8-redstone.toml"),
    ),
    (
        "cmt-fedorova",
        include_str!("../../../models/cmt-fedorova.toml"),
    ),
];

impl LinearModel {
    /// The estimator fitted on `m`'s simulation, shipped for a machine preset used as it is (a
    /// machine file, or a preset with `--set` overrides, is another machine).
    pub fn fitted_for(m: &smtsched_model::MachineModel) -> Option<LinearModel> {
        let (_, text) = FITTED_MODELS.iter().find(|(name, _)| *name == m.name)?;
        let preset = smtsched_model::load_machine(&m.name, &[]).ok()?;
        (preset == *m).then(|| LinearModel::parse(text, true).expect("a shipped model loads"))
    }

    /// The thesis's Northwood model (Table 3.8, as used in §4.4.3 with L2_back dropped). Its
    /// features map onto the simulator's counters: trace-cache misses = level-1 instruction
    /// misses, L2 misses = last-level misses, x87 FP uops = FP operations.
    pub fn thesis_northwood() -> LinearModel {
        let t = |name: &str, c: f64| Term::new(Feature::parse(name).expect("a known feature"), c);
        LinearModel {
            name: "thesis-northwood".into(),
            source: "Bulpin thesis Table 3.8 / §4.4.3 (L2_back dropped as insignificant)".into(),
            intercept: 0.401,
            terms: vec![
                t("l1i_misses_subj", 29.7),
                t("llc_misses_subj", 55.7),
                t("fp_ops_subj", 0.352),
                t("instructions_subj", -0.022),
                t("l1d_misses_subj", 2.19),
                t("l1i_misses_back", 32.7),
                t("fp_ops_back", -0.418),
                t("instructions_back", 0.506),
                t("l1d_misses_back", -3.54),
            ],
            fit: None,
        }
    }

    /// A model file (TOML when its name ends in `.toml`, JSON otherwise); errors name the file.
    pub fn load(path: &std::path::Path) -> Result<LinearModel, String> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        LinearModel::parse(&text, path.extension().is_some_and(|x| x == "toml")).map_err(|e| at(&e))
    }

    /// A model file's text (TOML, or JSON when `toml` is false), checked — including what serde
    /// cannot: finite numbers.
    pub fn parse(text: &str, toml: bool) -> Result<LinearModel, String> {
        let m: LinearModel = if toml {
            toml::from_str(text).map_err(|e| e.message().to_string())?
        } else {
            serde_json::from_str(text).map_err(|e| e.to_string())?
        };
        m.validate()?;
        Ok(m)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !self.intercept.is_finite() {
            return Err(format!("intercept {} is not finite", self.intercept));
        }
        for t in &self.terms {
            if !t.coefficient.is_finite() {
                return Err(format!("coefficient of {} is not finite", t.feature));
            }
        }
        Ok(())
    }

    pub fn estimate(&self, subj: &Epc, back: &Epc) -> f64 {
        self.intercept
            + self
                .terms
                .iter()
                .map(|t| t.coefficient * t.feature.value(subj, back))
                .sum::<f64>()
    }

    /// The kernel-style integer evaluation (thesis §4.4.3) of rates: the rates are taken as
    /// counts over a nominal interval of 2²³ cycles (3.5 ms at 2.4 GHz, less than one 10 ms tick)
    /// and evaluated by [`LinearModel::estimate_fixed_counts`] — intercept, coefficients and
    /// every term with 15 fractional bits, the sum rounded to 10 (1.0 = 1024, "about 1/1000").
    /// Returns the PR.
    ///
    /// Rounding each rate to 15 fractional bits first, as a literal reading of the thesis would,
    /// moves a term by up to |coefficient| × 2⁻¹⁶: with the thesis's coefficients (55.7 on L2
    /// misses, 32.7 and 29.7 on trace-cache misses) that reaches 0.0021 on real windows. Here
    /// the error is within (Σ|feature| + terms + 1) × 2⁻¹⁶ + Σ|coefficient| × 2⁻²⁴ + 2⁻¹¹ of
    /// [`LinearModel::estimate`]: under 0.001 for any model with rates of a few events per cycle.
    pub fn estimate_fixed(&self, subj: &Epc, back: &Epc) -> f64 {
        let scale = (1u64 << NOMINAL_INTERVAL_BITS) as f64;
        let counts = |e: &Epc| Epc(e.0.map(|v| (v * scale).round()));
        self.estimate_fixed_counts(&counts(subj), &counts(back), 1 << NOMINAL_INTERVAL_BITS)
    }

    /// The integer evaluation from what the kernel reads: event counts over an interval of
    /// `cycles` cycles (the fields of `subj` and `back` hold counts here, not rates). Each term is
    /// `coefficient × count / cycles` with the coefficient in 15-bit fixed point, multiplied
    /// before dividing, so it is exact to 2⁻¹⁵ whatever the coefficient; the sum is rounded to
    /// 10 fractional bits as in [`LinearModel::estimate_fixed`]. Within
    /// (Σ|feature| + terms + 1) × 2⁻¹⁶ + 2⁻¹¹ of the floating-point estimate.
    pub fn estimate_fixed_counts(&self, subj: &Epc, back: &Epc, cycles: u64) -> f64 {
        let cycles = cycles.max(1) as i128;
        let mut acc = fix(self.intercept) as i128;
        for t in &self.terms {
            let count = t.feature.value(subj, back).round() as i128;
            let num = fix(t.coefficient) as i128 * count;
            // Division rounded to nearest (half away from zero).
            let q = (2 * num.abs() + cycles) / (2 * cycles);
            acc += if num < 0 { -q } else { q };
        }
        from_result(round_shift(acc, FIXED_RESULT_SHIFT) as i64)
    }
}

/// `x` in fixed point with [`FIXED_FRACTION_BITS`] fractional bits.
fn fix(x: f64) -> i64 {
    (x * (1i64 << FIXED_FRACTION_BITS) as f64).round() as i64
}

/// `x / 2^bits` rounded to nearest (an arithmetic shift with a rounding bias).
fn round_shift(x: i128, bits: u32) -> i128 {
    (x + (1i128 << (bits - 1))) >> bits
}

/// The PR a result with `FIXED_FRACTION_BITS - FIXED_RESULT_SHIFT` fractional bits stands for.
fn from_result(r: i64) -> f64 {
    r as f64 / (1u64 << (FIXED_FRACTION_BITS - FIXED_RESULT_SHIFT)) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Feature {
        Feature::parse(name).unwrap()
    }

    #[test]
    fn an_unknown_feature_is_rejected_when_the_file_is_read() {
        let bad =
            r#"{"name":"m","intercept":0.5,"terms":[{"feature":"cycles_subj","coefficient":1}]}"#;
        let e = serde_json::from_str::<LinearModel>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown feature \"cycles_subj\""), "{e}");
    }

    #[test]
    fn thesis_model_at_its_mean_rates_gives_about_the_mean_pr() {
        // Table 3.8's mean events per 1000 cycles; the digest works the result out as ≈ 0.624.
        let subj = Epc::from_pairs(&[
            (CounterEvent::L1iMisses, 0.554e-3),
            (CounterEvent::LlcMisses, 1.440e-3),
            (CounterEvent::FpOps, 52.0e-3),
            (CounterEvent::Instructions, 258e-3),
            (CounterEvent::L1dMisses, 10.7e-3),
        ]);
        let back = Epc::from_pairs(&[
            (CounterEvent::L1iMisses, 0.561e-3),
            (CounterEvent::LlcMisses, 1.43e-3),
            (CounterEvent::FpOps, 52.6e-3),
            (CounterEvent::Instructions, 256e-3),
            (CounterEvent::L1dMisses, 10.6e-3),
        ]);
        let m = LinearModel::thesis_northwood();
        let by_hand = 0.401 + 29.7 * 0.554e-3 + 55.7 * 1.440e-3 + 0.352 * 52.0e-3 - 0.022 * 258e-3
            + 2.19 * 10.7e-3
            + 32.7 * 0.561e-3
            - 0.418 * 52.6e-3
            + 0.506 * 256e-3
            - 3.54 * 10.6e-3;
        assert!((m.estimate(&subj, &back) - by_hand).abs() < 1e-12);
        assert!((by_hand - 0.624).abs() < 0.005, "{by_hand}");
        // The fixed-point evaluation agrees to the resolution of its result (1/1024).
        assert!((m.estimate_fixed(&subj, &back) - by_hand).abs() < 0.002);
    }

    #[test]
    fn model_files_without_statistics_still_load() {
        // The format before fits carried statistics: name, source, intercept, terms.
        let old = r#"{"name":"m","source":"s","intercept":0.5,"terms":[{"feature":"fp_ops_subj","coefficient":0.25}]}"#;
        let m: LinearModel = serde_json::from_str(old).unwrap();
        assert_eq!(m.terms[0], Term::new(f("fp_ops_subj"), 0.25));
        assert_eq!(m.fit, None);
        m.validate().unwrap();
        let subj = Epc::from_pairs(&[(CounterEvent::FpOps, 0.4)]);
        assert_eq!(m.estimate(&subj, &Epc::default()), 0.6);
        // And a model written now reads back the same, statistics included.
        let mut m2 = LinearModel::thesis_northwood();
        m2.terms[0].p_value = Some(1e-300);
        m2.terms[0].std_error = Some(0.5);
        m2.fit = Some(Box::new(FitInfo {
            machine: "northwood".into(),
            data: "w.csv".into(),
            workloads: vec!["gzip-like".into()],
            windows: 10,
            r_squared: 0.5,
            adj_r_squared: 0.4,
            residual_se: 0.1,
            intercept_std_error: 0.01,
            intercept_p_value: 0.0,
            alpha: None,
            selection: Some("program-cv".into()),
            dropped: vec![DroppedTerm {
                feature: "llc_misses_back".into(),
                p_value: 0.1,
                cv_rmse_after: Some(0.08),
            }],
            cv_rmse: Some(0.08),
            cv_correlation: Some(0.7),
        }));
        let json = serde_json::to_string(&m2).unwrap();
        assert_eq!(serde_json::from_str::<LinearModel>(&json).unwrap(), m2);
        // The bare thesis model writes no statistics at all.
        let bare = serde_json::to_string(&LinearModel::thesis_northwood()).unwrap();
        assert!(
            !bare.contains("p_value") && !bare.contains("\"fit\""),
            "{bare}"
        );
    }

    #[test]
    fn fixed_point_rounds_where_the_kernel_would() {
        // 0.5 + 0.25 × 0.125 = 0.53125 = 544/1024 exactly: both integer paths are exact.
        let m = LinearModel {
            name: "t".into(),
            source: String::new(),
            intercept: 0.5,
            terms: vec![Term::new(f("instructions_subj"), 0.25)],
            fit: None,
        };
        let subj = Epc::from_pairs(&[(CounterEvent::Instructions, 0.125)]);
        assert_eq!(m.estimate_fixed(&subj, &Epc::default()), 0.53125);
        let counts = Epc::from_pairs(&[(CounterEvent::Instructions, 1000.0)]);
        assert_eq!(
            m.estimate_fixed_counts(&counts, &Epc::default(), 8000),
            0.53125
        );
        // A result between steps of 1/1024 rounds to the nearer: 0.5 + 0.25 × 0.0029 = 0.500725,
        // 512.74/1024 -> 513/1024.
        let subj = Epc::from_pairs(&[(CounterEvent::Instructions, 0.0029)]);
        assert_eq!(m.estimate_fixed(&subj, &Epc::default()), 513.0 / 1024.0);
        // Negative terms round symmetrically: 0.5 - 0.25 × 0.0029 = 0.499275 = 511.26/1024.
        let neg = LinearModel {
            terms: vec![Term::new(f("instructions_subj"), -0.25)],
            ..m.clone()
        };
        assert_eq!(neg.estimate_fixed(&subj, &Epc::default()), 511.0 / 1024.0);
        let counts = Epc::from_pairs(&[(CounterEvent::Instructions, 29.0)]);
        assert_eq!(
            neg.estimate_fixed_counts(&counts, &Epc::default(), 10_000),
            511.0 / 1024.0
        );
    }

    #[test]
    fn counts_path_stays_exact_with_large_coefficients() {
        // A coefficient of 300 on a rare event: rounding the rate to 2^-15 would cost up to
        // 300 × 2^-16 ≈ 0.0046; multiplying before dividing keeps the error within 2^-11 + 2^-15.
        let m = LinearModel {
            name: "t".into(),
            source: String::new(),
            intercept: 0.3,
            terms: vec![Term::new(f("llc_misses_subj"), 300.0)],
            fit: None,
        };
        for misses in [1u64, 7, 13, 99, 1234] {
            let cycles = 1_000_000u64;
            let rate = Epc::from_pairs(&[(CounterEvent::LlcMisses, misses as f64 / cycles as f64)]);
            let counts = Epc::from_pairs(&[(CounterEvent::LlcMisses, misses as f64)]);
            let float = m.estimate(&rate, &Epc::default());
            let fixed = m.estimate_fixed_counts(&counts, &Epc::default(), cycles);
            assert!(
                (fixed - float).abs() <= 1.0 / 2048.0 + 1.0 / 32768.0,
                "{misses}: {fixed} vs {float}"
            );
        }
    }
}
