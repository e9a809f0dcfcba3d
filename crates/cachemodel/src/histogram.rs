//! Reuse-distance histograms (Berg & Hagersten; Fedorova et al. 2005 §4.1).
//!
//! The reuse distance of a memory reference is the number of memory references the same thread
//! made since its previous reference to the same cache line (the *intervening* references, so a
//! line touched twice in a row has distance 0 — the StatCache convention: nothing can evict the
//! line in between). A histogram holds (distance, count) points and the number of *cold*
//! references, whose line was not referenced before in the collection window.
//!
//! Histograms are kept non-normalised, as in the paper (Fig. 6), so that the group estimators can
//! add counts of several threads. Distances are real numbers: COMB and COMB+IPC multiply them by
//! non-integer coefficients (Fig. 9: 1.5, 15, 30, 150).

use serde::{Deserialize, Serialize};

/// Buckets of the compressed form: distance classes `[0, 2]`, `[3, 6]`, `[7, 14]`, …, each twice
/// as wide as the one before, the last open-ended — 18 distance buckets plus the cold count, 19
/// numbers in all (the paper: "fewer than 20 buckets").
pub const COMPRESSED_BUCKETS: usize = 18;

/// A reuse-distance histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// `(distance, count)`, sorted by distance, distances distinct.
    pub points: Vec<(f64, f64)>,
    /// References whose line had not been referenced before in the window.
    pub cold: f64,
}

impl Histogram {
    /// A histogram from points in any order; counts at equal distances are added.
    pub fn new(points: impl IntoIterator<Item = (f64, f64)>, cold: f64) -> Self {
        let mut v: Vec<(f64, f64)> = points.into_iter().filter(|p| p.1 != 0.0).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
        for (d, c) in v {
            match out.last_mut() {
                Some(last) if last.0 == d => last.1 += c,
                _ => out.push((d, c)),
            }
        }
        Histogram { points: out, cold }
    }

    /// References the histogram covers (every count plus the cold ones).
    pub fn references(&self) -> f64 {
        self.points.iter().map(|p| p.1).sum::<f64>() + self.cold
    }

    /// The count at exactly `distance` (0 if none).
    pub fn count_at(&self, distance: f64) -> f64 {
        self.points
            .iter()
            .find(|p| p.0 == distance)
            .map_or(0.0, |p| p.1)
    }

    /// Every distance multiplied by `dist_coeff` and every count (cold ones included) by
    /// `refs_coeff`.
    pub fn scaled(&self, dist_coeff: f64, refs_coeff: f64) -> Histogram {
        Histogram {
            points: self
                .points
                .iter()
                .map(|&(d, c)| (d * dist_coeff, c * refs_coeff))
                .collect(),
            cold: self.cold * refs_coeff,
        }
    }

    /// The union of several histograms: counts at equal distances add (Fig. 7 step 1).
    pub fn merge<'a>(hists: impl IntoIterator<Item = &'a Histogram>) -> Histogram {
        let mut points = Vec::new();
        let mut cold = 0.0;
        for h in hists {
            points.extend_from_slice(&h.points);
            cold += h.cold;
        }
        Histogram::new(points, cold)
    }

    /// The compressed form: one point per distance bucket at the mean distance of the references
    /// in it, so the total count and the mean distance of each class are kept exactly.
    pub fn compressed(&self) -> Histogram {
        let mut count = [0.0f64; COMPRESSED_BUCKETS];
        let mut sum = [0.0f64; COMPRESSED_BUCKETS];
        for &(d, c) in &self.points {
            let b = bucket_of(d);
            count[b] += c;
            sum[b] += c * d;
        }
        Histogram::new(
            (0..COMPRESSED_BUCKETS)
                .filter(|&b| count[b] > 0.0)
                .map(|b| (sum[b] / count[b], count[b])),
            self.cold,
        )
    }

    /// Bytes the compressed form needs when stored as it would be in a kernel: a 32-bit count and
    /// a 32-bit mean distance per non-empty bucket, and the cold count.
    pub fn stored_bytes(&self) -> usize {
        8 * self.points.len() + 4
    }
}

/// The compressed bucket of a distance: `floor(log2(d + 1))`, with distances 0–2 together and
/// everything beyond the last bound in the last bucket.
pub fn bucket_of(distance: f64) -> usize {
    let x = (distance.max(0.0) + 1.0).log2().floor() as usize;
    x.saturating_sub(1).min(COMPRESSED_BUCKETS - 1)
}

/// A histogram being collected: exact counts for small distances, and for larger ones
/// logarithmic bins 1/16 of an octave wide that keep the count and the sum of distances — fine
/// enough that the model's answer does not depend on them (see the tests), small enough to keep
/// per thread.
#[derive(Clone, Debug)]
pub struct Accumulator {
    exact: Vec<f64>,
    bins_count: Vec<f64>,
    bins_sum: Vec<f64>,
    pub cold: f64,
}

const EXACT_UPTO: u64 = 256;
const BINS_PER_OCTAVE: f64 = 16.0;

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            exact: vec![0.0; EXACT_UPTO as usize],
            bins_count: Vec::new(),
            bins_sum: Vec::new(),
            cold: 0.0,
        }
    }
}

impl Accumulator {
    #[inline]
    pub fn add(&mut self, distance: u64) {
        if distance < EXACT_UPTO {
            self.exact[distance as usize] += 1.0;
            return;
        }
        let bin = ((distance as f64 / EXACT_UPTO as f64).log2() * BINS_PER_OCTAVE) as usize;
        if bin >= self.bins_count.len() {
            self.bins_count.resize(bin + 1, 0.0);
            self.bins_sum.resize(bin + 1, 0.0);
        }
        self.bins_count[bin] += 1.0;
        self.bins_sum[bin] += distance as f64;
    }

    pub fn add_cold(&mut self) {
        self.cold += 1.0;
    }

    pub fn histogram(&self) -> Histogram {
        let exact = self
            .exact
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0.0)
            .map(|(d, &c)| (d as f64, c));
        let bins = self
            .bins_count
            .iter()
            .zip(&self.bins_sum)
            .filter(|(&c, _)| c > 0.0)
            .map(|(&c, &s)| (s / c, c));
        Histogram::new(exact.chain(bins), self.cold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_double_in_width_and_stay_under_twenty() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(2.0), 0);
        assert_eq!(bucket_of(3.0), 1);
        assert_eq!(bucket_of(6.0), 1);
        assert_eq!(bucket_of(7.0), 2);
        assert_eq!(bucket_of(1e12), COMPRESSED_BUCKETS - 1);
        // 18 distance buckets + the cold count.
        const { assert!(COMPRESSED_BUCKETS < 20) };
    }

    #[test]
    fn compression_keeps_counts_and_mean_distance_per_bucket() {
        // 3 and 5 share bucket [3, 6]: count 4, mean (3*1 + 5*3) / 4 = 4.5.
        let h = Histogram::new([(0.0, 2.0), (3.0, 1.0), (5.0, 3.0), (100.0, 7.0)], 9.0);
        let c = h.compressed();
        assert_eq!(c.points, vec![(0.0, 2.0), (4.5, 4.0), (100.0, 7.0)]);
        assert_eq!(c.cold, 9.0);
        assert_eq!(c.references(), h.references());
        assert_eq!(c.stored_bytes(), 28);
    }

    #[test]
    fn accumulator_is_exact_below_256_and_keeps_means_above() {
        let mut a = Accumulator::default();
        for d in [0, 0, 5, 255, 1000, 1001] {
            a.add(d);
        }
        a.add_cold();
        let h = a.histogram();
        assert_eq!(h.count_at(0.0), 2.0);
        assert_eq!(h.count_at(5.0), 1.0);
        assert_eq!(h.count_at(255.0), 1.0);
        assert_eq!(h.count_at(1000.5), 2.0);
        assert_eq!(h.cold, 1.0);
        assert_eq!(h.references(), 7.0);
    }
}
