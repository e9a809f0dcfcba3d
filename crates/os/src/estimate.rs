//! Online estimation of a task's performance ratio from counter rates (thesis §3.4.1, §4.4.3):
//! a linear model over events per cycle of the subject thread and of its sibling.

use crate::oracle::Epc;
use serde::{Deserialize, Serialize};

/// Event names a model may use; `<event>_subj` and `<event>_back` are its features.
pub const EVENTS: &[&str] = &[
    "instructions",
    "l1i_misses",
    "l1d_misses",
    "llc_misses",
    "fp_ops",
    "loads",
    "stores",
    "branch_mispredicts",
];

fn event(epc: &Epc, name: &str) -> Option<f64> {
    Some(match name {
        "instructions" => epc.instructions,
        "l1i_misses" => epc.l1i_misses,
        "l1d_misses" => epc.l1d_misses,
        "llc_misses" => epc.llc_misses,
        "fp_ops" => epc.fp_ops,
        "loads" => epc.loads,
        "stores" => epc.stores,
        "branch_mispredicts" => epc.branch_mispredicts,
        _ => return None,
    })
}

/// The value of feature `name` (`<event>_subj` or `<event>_back`).
pub fn feature(name: &str, subj: &Epc, back: &Epc) -> Option<f64> {
    if let Some(e) = name.strip_suffix("_subj") {
        event(subj, e)
    } else if let Some(e) = name.strip_suffix("_back") {
        event(back, e)
    } else {
        None
    }
}

/// `PR = intercept + Σ coefficient × feature`, features in events per cycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearModel {
    pub name: String,
    #[serde(default)]
    pub source: String,
    pub intercept: f64,
    pub terms: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    pub feature: String,
    pub coefficient: f64,
}

/// Fractional bits during the kernel's fixed-point evaluation, and the shift applied to its result
/// (thesis §4.4.3: 15 bits, result shifted right by 5 to about 1/1000).
pub const FIXED_FRACTION_BITS: u32 = 15;
pub const FIXED_RESULT_SHIFT: u32 = 5;

impl LinearModel {
    /// The thesis's Northwood model (Table 3.8, as used in §4.4.3 with L2_back dropped). Its
    /// features map onto the simulator's counters: trace-cache misses = level-1 instruction
    /// misses, L2 misses = last-level misses, x87 FP uops = FP operations.
    pub fn thesis_northwood() -> LinearModel {
        let t = |f: &str, c: f64| Term {
            feature: f.into(),
            coefficient: c,
        };
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
        }
    }

    /// Checks that every feature is known.
    pub fn validate(&self) -> Result<(), String> {
        let zero = Epc::default();
        for t in &self.terms {
            if feature(&t.feature, &zero, &zero).is_none() {
                return Err(format!(
                    "unknown feature {:?} (events: {})",
                    t.feature,
                    EVENTS.join(", ")
                ));
            }
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
                .map(|t| t.coefficient * feature(&t.feature, subj, back).unwrap_or(0.0))
                .sum::<f64>()
    }

    /// The kernel-style integer evaluation: coefficients and features in fixed point with 15
    /// fractional bits, the result shifted to ~1/1000 (1.0 = 1024). Returns the PR.
    pub fn estimate_fixed(&self, subj: &Epc, back: &Epc) -> f64 {
        let one = (1i64 << FIXED_FRACTION_BITS) as f64;
        let fix = |x: f64| (x * one).round() as i64;
        let mut acc = fix(self.intercept);
        for t in &self.terms {
            let f = fix(feature(&t.feature, subj, back).unwrap_or(0.0));
            let c = fix(t.coefficient);
            acc += (c * f) >> FIXED_FRACTION_BITS;
        }
        (acc >> FIXED_RESULT_SHIFT) as f64
            / (1u64 << (FIXED_FRACTION_BITS - FIXED_RESULT_SHIFT)) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_model_at_its_mean_rates_gives_about_the_mean_pr() {
        // Table 3.8's mean events per 1000 cycles; the digest works the result out as ≈ 0.624.
        let subj = Epc {
            l1i_misses: 0.554e-3,
            llc_misses: 1.440e-3,
            fp_ops: 52.0e-3,
            instructions: 258e-3,
            l1d_misses: 10.7e-3,
            ..Default::default()
        };
        let back = Epc {
            l1i_misses: 0.561e-3,
            llc_misses: 1.43e-3,
            fp_ops: 52.6e-3,
            instructions: 256e-3,
            l1d_misses: 10.6e-3,
            ..Default::default()
        };
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
}
