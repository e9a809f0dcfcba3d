//! Claims judged with statistics: the 95% confidence interval of a mean over independent
//! repetitions (seeds), and whether it lies inside, outside or across the range a claim names.
//! A claim is decided only when the whole interval is on one side: a difference smaller than its
//! own noise leaves it inconclusive.

use serde::{Deserialize, Serialize};

/// A claim's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Holds,
    DoesNotHold,
    /// The interval straddles the claim's boundary (or one repetition gives no interval).
    Inconclusive,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "DOES NOT HOLD",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// Every part must hold for the whole to; any part failing fails it.
    pub fn all(parts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut out = Verdict::Holds;
        for v in parts {
            match v {
                Verdict::DoesNotHold => return Verdict::DoesNotHold,
                Verdict::Inconclusive => out = Verdict::Inconclusive,
                Verdict::Holds => {}
            }
        }
        out
    }
}

/// The mean of `n` values and its two-sided 95% confidence interval (Student's t). With one
/// value the interval is unbounded; with identical values it is the point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanInterval {
    pub n: usize,
    pub mean: f64,
    /// Unbounded (−∞, +∞) with one value: JSON writes that as `null`, read back as unbounded.
    #[serde(deserialize_with = "lower_or_unbounded")]
    pub lo: f64,
    #[serde(deserialize_with = "upper_or_unbounded")]
    pub hi: f64,
}

fn lower_or_unbounded<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NEG_INFINITY))
}

fn upper_or_unbounded<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// Two-sided 95% quantiles of Student's t, t(0.975, df) for df = 1..=30 (standard tables).
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df): the table to 30, then 2.021 (40), 2.000 (60), 1.980 (120), 1.960 beyond,
/// taking the next smaller df's (wider) value between table points.
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        31..=39 => T_975[29],
        40..=59 => 2.021,
        60..=119 => 2.000,
        120..=999 => 1.980,
        _ => 1.960,
    }
}

impl MeanInterval {
    /// `None` for no values or a non-finite one.
    pub fn of(values: &[f64]) -> Option<MeanInterval> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let (mean, sd) = crate::stats::mean_sd(values);
        let n = values.len();
        let half = if n == 1 {
            f64::INFINITY
        } else {
            t_975(n - 1) * sd / (n as f64).sqrt()
        };
        Some(MeanInterval {
            n,
            mean,
            lo: mean - half,
            hi: mean + half,
        })
    }

    /// Whether the quantity lies within `[low, high]`: the whole interval inside holds, wholly
    /// outside does not.
    pub fn within(&self, low: f64, high: f64) -> Verdict {
        if self.lo >= low && self.hi <= high {
            Verdict::Holds
        } else if self.hi < low || self.lo > high {
            Verdict::DoesNotHold
        } else {
            Verdict::Inconclusive
        }
    }

    /// Whether the interval reaches a bound of `[low, high]` exactly: a claim that holds so holds
    /// only as a tie (every seed measured the bound itself).
    pub fn at_bound(&self, low: f64, high: f64) -> bool {
        self.lo == low || self.hi == high
    }

    /// Whether the quantity is above `threshold`.
    pub fn above(&self, threshold: f64) -> Verdict {
        if self.lo > threshold {
            Verdict::Holds
        } else if self.hi <= threshold {
            Verdict::DoesNotHold
        } else {
            Verdict::Inconclusive
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_of_a_hand_worked_sample() {
        // 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.303: half width 4.303 / sqrt(3) = 2.4843.
        let i = MeanInterval::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(i.n, 3);
        assert_eq!(i.mean, 2.0);
        assert!((i.hi - 2.0 - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert!((2.0 - i.lo - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert!(MeanInterval::of(&[]).is_none());
        assert!(MeanInterval::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn an_interval_reads_back_from_json_as_written_unbounded_too() {
        // One value: the interval is unbounded, which JSON can only write as null.
        let one = MeanInterval::of(&[0.5]).unwrap();
        let text = serde_json::to_string(&one).unwrap();
        assert_eq!(text, r#"{"n":1,"mean":0.5,"lo":null,"hi":null}"#);
        let back: MeanInterval = serde_json::from_str(&text).unwrap();
        assert_eq!((back.lo, back.hi), (f64::NEG_INFINITY, f64::INFINITY));
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let three = MeanInterval::of(&[1.0, 2.0, 3.0]).unwrap();
        let back: MeanInterval =
            serde_json::from_str(&serde_json::to_string(&three).unwrap()).unwrap();
        assert_eq!(back, three);
    }

    #[test]
    fn a_claim_is_decided_only_outside_the_noise() {
        let i = MeanInterval::of(&[1.0, 2.0, 3.0]).unwrap(); // [-0.48, 4.48]
        assert_eq!(i.within(-1.0, 5.0), Verdict::Holds);
        assert_eq!(i.within(5.0, 6.0), Verdict::DoesNotHold);
        assert_eq!(i.within(0.0, 3.0), Verdict::Inconclusive);
        assert_eq!(i.above(-0.5), Verdict::Holds);
        assert_eq!(i.above(0.0), Verdict::Inconclusive);
        assert_eq!(i.above(4.5), Verdict::DoesNotHold);
        // One repetition: no interval, nothing decided; identical values: a point.
        let one = MeanInterval::of(&[2.0]).unwrap();
        assert_eq!(one.within(0.0, 10.0), Verdict::Inconclusive);
        let same = MeanInterval::of(&[2.0, 2.0, 2.0]).unwrap();
        assert_eq!(same.within(2.0, 2.0), Verdict::Holds);
        assert_eq!(same.above(2.0), Verdict::DoesNotHold);
    }

    #[test]
    fn verdicts_combine_as_all() {
        use Verdict::*;
        assert_eq!(Verdict::all([Holds, Holds]), Holds);
        assert_eq!(Verdict::all([Holds, Inconclusive]), Inconclusive);
        assert_eq!(Verdict::all([Inconclusive, DoesNotHold]), DoesNotHold);
        assert_eq!(Verdict::all([]), Holds);
    }
}
