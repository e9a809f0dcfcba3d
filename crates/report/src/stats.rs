//! Summary statistics as the thesis reports them: mean, spread, quartiles.

use serde::Serialize;

/// Five-number summary plus mean and standard deviation of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub sd: f64,
    pub min: f64,
    /// First quartile, median and third quartile by linear interpolation between order statistics
    /// (Hyndman & Fan type 7, the default of R and NumPy).
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
    pub iqr: f64,
}

/// The `p`-quantile (0 ≤ p ≤ 1) of sorted data by linear interpolation (type 7).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty());
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Mean and sample standard deviation (n − 1 in the denominator; 0 for fewer than two values,
/// and a NaN mean for none), summed in the order given.
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = if values.len() > 1 {
        (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, sd)
}

/// Pearson's correlation coefficient (`NaN` when either side has no spread).
pub fn correlation(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len());
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

/// Ranks from 1, ties given the mean of the ranks they span (for Spearman's coefficient).
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = mean_rank;
        }
        i = j + 1;
    }
    r
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let (mean, sd) = mean_sd(&v);
        let (q1, median, q3) = (
            quantile_sorted(&v, 0.25),
            quantile_sorted(&v, 0.5),
            quantile_sorted(&v, 0.75),
        );
        Some(Summary {
            n,
            mean,
            sd,
            min: v[0],
            q1,
            median,
            q3,
            max: v[n - 1],
            iqr: q3 - q1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_hand_worked_sample() {
        // 1..=8: mean 4.5; sample variance = 42 / 7 = 6; type-7 quartiles at h = 1.75, 3.5, 5.25.
        let s = Summary::of(&[8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!((s.mean - 4.5).abs() < 1e-12);
        assert!((s.sd - 6f64.sqrt()).abs() < 1e-12);
        assert!((s.q1 - 2.75).abs() < 1e-12);
        assert!((s.median - 4.5).abs() < 1e-12);
        assert!((s.q3 - 6.25).abs() < 1e-12);
        assert!((s.iqr - 3.5).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 8.0));
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(Summary::of(&[]).is_none());
    }
}
